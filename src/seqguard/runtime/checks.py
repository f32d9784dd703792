"""Argument checks for public runtime entry points; messages never print tensor contents.

Two kinds. Cheap checks (types, dtypes, shapes, devices, host-side ints) run on every
call: plain comparisons, no allocation. Value checks (a length inside its table, a row
inside the pool) read the values, which for a tensor on a GPU is a device-to-host
sync, the very thing the runtime exists to avoid; so they run by the switch
`SEQGUARD_RUNTIME_CHECKS` (read once, at import) or `set_value_checks()`:

- `auto` (the default; unset or empty): values of host tensors are checked, those of
  device tensors are not (no sync on the hot path);
- `on` (`1`): device tensors too, each checked argument one sync, for debugging; never
  inside a CUDA-graph capture, where a sync would break the capture;
- `off` (`0`): no value checks at all.

Unchecked, bad values still never move a kernel's access outside its tables (the
kernels clamp and mask: see `seqguard.runtime.ops`); they give wrong numbers instead.
"""

from __future__ import annotations

import operator
import os
from typing import Any, Optional, Sequence

import torch

VALUE_CHECKS_ENV = "SEQGUARD_RUNTIME_CHECKS"
VALUE_CHECK_MODES = ("auto", "on", "off")
_SPELLINGS = {"": "auto", "auto": "auto", "1": "on", "on": "on", "0": "off", "off": "off"}
# What lengths, rows, offsets and slots may be: a float would be truncated on the way in.
INDEX_DTYPES = (torch.int32, torch.int64)


def value_checks_mode(setting: Optional[str]) -> str:
    """The mode a value of `SEQGUARD_RUNTIME_CHECKS` (None: unset) selects."""
    mode = _SPELLINGS.get((setting or "").strip().lower())
    if mode is None:
        raise ValueError(f"{VALUE_CHECKS_ENV}: expected 1, 0 or auto, got {setting!r}; unset it for the default "
                         f"(auto: check host tensors, never sync on device ones)")
    return mode


# Read once: the checks sit on the hot path, an environment lookup per call does not belong there.
_mode = value_checks_mode(os.environ.get(VALUE_CHECKS_ENV))


def value_checks() -> str:
    """The current mode: 'auto', 'on' or 'off'."""
    return _mode


def set_value_checks(mode: str) -> str:
    """Switch value checks to `mode` ('auto', 'on' or 'off') for this process; returns
    the previous mode, so a test or a debugging session can restore it."""
    global _mode
    if mode not in VALUE_CHECK_MODES:
        raise ValueError(f"mode: expected one of {', '.join(VALUE_CHECK_MODES)}, got {mode!r}")
    previous, _mode = _mode, mode
    return previous


def checks_values(tensor: torch.Tensor) -> bool:
    """Whether the values of `tensor` are checked now (see the module docstring)."""
    mode = _mode
    if mode == "auto":
        return tensor.is_cpu
    if mode == "off":
        return False
    return not (tensor.is_cuda and torch.cuda.is_current_stream_capturing())


def describe(value: Any) -> str:
    """`value` for an error message: its type and, for a tensor, shape, dtype and device;
    a short repr of anything else (never a tensor's contents)."""
    if isinstance(value, torch.Tensor):
        return f"a tensor of shape {tuple(value.shape)}, {value.dtype}, on {value.device}"
    text = repr(value)
    if len(text) > 60:
        text = text[:57] + "..."
    return f"{type(value).__name__} {text}"


def check_int(name: str, value: Any, *, low: Optional[int] = None, high: Optional[int] = None,
              bound: str = "") -> int:
    """`value` as an int, or a TypeError (not an integer: a float, a bool, a tensor, whose
    truth on a GPU would be a sync) or a ValueError (outside [low, high]) naming `name`."""
    if type(value) is not int:
        if isinstance(value, (bool, torch.Tensor)) or not hasattr(type(value), "__index__"):
            raise TypeError(f"{name}: expected an int, got {describe(value)}")
        value = operator.index(value)  # numpy integers
    if (low is not None and value < low) or (high is not None and value > high):
        span = f"in [{low}, {high}]" if low is not None and high is not None else \
            f"of at least {low}" if low is not None else f"of at most {high}"
        where = f" ({bound})" if bound else ""
        raise ValueError(f"{name}: expected an int {span}{where}, got {value}")
    return value


def check_tensor(name: str, tensor: object, *, ndim: Optional[int] = None,
                 dtype: Optional[torch.dtype | Sequence[torch.dtype]] = None,
                 device: Optional[torch.device] = None, numel: Optional[int] = None,
                 shape: Optional[Sequence[Optional[int]]] = None) -> None:
    """Raise TypeError/ValueError naming `name` unless `tensor` fits. Cheap on the
    happy path (it runs on every kernel launch): plain comparisons, no allocation."""
    error = tensor_error(name, tensor, ndim=ndim, dtype=dtype, device=device, numel=numel, shape=shape)
    if error is not None:
        raise error


def tensor_error(name: str, tensor: object, *, ndim: Optional[int] = None,
                 dtype: Optional[torch.dtype | Sequence[torch.dtype]] = None,
                 device: Optional[torch.device] = None, numel: Optional[int] = None,
                 shape: Optional[Sequence[Optional[int]]] = None) -> Optional[Exception]:
    """The error `check_tensor` raises, returned instead (None when `tensor` fits), for
    contracts that check several arguments and raise once."""
    if not isinstance(tensor, torch.Tensor):
        return TypeError(f"{name}: expected a torch.Tensor, got {type(tensor).__name__}")
    if ndim is not None and tensor.dim() != ndim:
        return ValueError(f"{name}: expected {ndim} dimensions, got shape {tuple(tensor.shape)}")
    if dtype is not None:
        if isinstance(dtype, torch.dtype):
            ok = tensor.dtype == dtype
        else:
            ok = tensor.dtype in dtype
        if not ok:
            allowed = (dtype,) if isinstance(dtype, torch.dtype) else tuple(dtype)
            names = " or ".join(str(d) for d in allowed)
            return TypeError(f"{name}: expected dtype {names}, got {tensor.dtype}; convert with .to()")
    if device is not None and tensor.device != device:
        wanted = torch.device(device)
        if tensor.device.type != wanted.type or (wanted.index is not None and tensor.device.index != wanted.index):
            return ValueError(f"{name}: expected a tensor on {wanted}, got {tensor.device}; move it with .to(device)")
    if numel is not None and tensor.numel() != numel:
        return ValueError(f"{name}: expected {numel} elements, got shape {tuple(tensor.shape)}")
    if shape is not None:
        actual = tensor.shape
        bad = len(shape) != len(actual)
        if not bad:
            for want, got in zip(shape, actual):
                if want is not None and want != got:
                    bad = True
                    break
        if bad:
            expected = tuple("*" if s is None else s for s in shape)
            return ValueError(f"{name}: expected shape {expected}, got {tuple(actual)}")
    return None


def index_tensor_error(name: str, tensor: object, device: torch.device, min_numel: int) -> Optional[Exception]:
    """The cheap contract of a per-request index tensor (lengths, pool rows): 1-D, int32
    or int64 (a float length would be truncated), on `device`, at least `min_numel`
    entries. None when it fits; the happy path is four comparisons."""
    if isinstance(tensor, torch.Tensor) and tensor.dim() == 1 and tensor.dtype in INDEX_DTYPES \
            and tensor.device == device and tensor.shape[0] >= min_numel:
        return None
    error = tensor_error(name, tensor, ndim=1, dtype=INDEX_DTYPES)
    if error is not None:
        return error
    if tensor.device != device:
        return ValueError(f"{name}: expected a tensor on {device}, got {tensor.device}; move it with .to(device)")
    return ValueError(f"{name}: expected at least {min_numel} elements (one per request), got shape "
                      f"{tuple(tensor.shape)}")


def first_true(mask: torch.Tensor) -> Optional[int]:
    """The first index where `mask` holds, None where it holds nowhere (on a GPU: one
    device-to-host read; call only where `checks_values` allows it)."""
    hits = torch.nonzero(mask.reshape(-1))
    return int(hits[0, 0]) if hits.numel() else None


def range_error(name: str, tensor: torch.Tensor, low: int, high: int, bound: str, fix: str,
                offset: int = 0) -> Optional[ValueError]:
    """The ValueError for the first value of `tensor` outside [low, high], None when all
    fit: `name: expected values in [low, high] (bound), got V at index I; fix`. `offset`
    is added to the index reported (for a slice of a larger tensor). Reads the values:
    call only where `checks_values` allows it."""
    if tensor.numel() == 0:
        return None
    flat = tensor.reshape(-1)
    info = torch.iinfo(flat.dtype)
    if low > high or high < info.min or low > info.max:
        index: Optional[int] = 0  # no value of this dtype fits
    else:
        # Compare only against bounds the dtype holds: torch wraps a Python int outside it.
        bad = flat < low if low > info.min else None
        if high < info.max:
            bad = flat > high if bad is None else bad | (flat > high)
        index = None if bad is None else first_true(bad)
    if index is None:
        return None
    where = f" ({bound})" if bound else ""
    return ValueError(f"{name}: expected values in [{low}, {high}]{where}, got {int(flat[index])} at index "
                      f"{index + offset}; {fix}")


def offsets_error(name: str, indptr: torch.Tensor, count: int, limit: int, bound: str) -> Optional[ValueError]:
    """The ValueError unless `indptr[:count + 1]` are offsets into an array of `limit`
    entries: each in [0, limit], none below the one before. Reads the values."""
    head = indptr[: count + 1]
    fix = "build it as a cumsum of the lengths, starting at 0"
    error = range_error(name, head, 0, limit, bound, fix)
    if error is not None or count == 0:
        return error
    index = first_true(head[1:] < head[:-1])
    if index is None:
        return None
    return ValueError(f"{name}: expected non-decreasing offsets, got {int(head[index + 1])} after "
                      f"{int(head[index])} at index {index + 1}; {fix}")


def above_error(name: str, values: torch.Tensor, limits: Any, expected: str, fix: str) -> Optional[ValueError]:
    """The ValueError for the first index where `values` exceeds `limits` (a tensor of
    the same shape, or an int): `name: expected {expected}, got V > L at index I; fix`.
    Reads the values."""
    index = first_true(values > limits)
    if index is None:
        return None
    limit = int(limits[index]) if isinstance(limits, torch.Tensor) else limits
    return ValueError(f"{name}: expected {expected}, got {int(values[index])} > {limit} at index {index}; {fix}")


def total_error(name: str, values: torch.Tensor, limit: int, bound: str, fix: str) -> Optional[ValueError]:
    """The ValueError unless `values` sum to at most `limit`. Reads the values."""
    total = int(values.sum())
    if total <= limit:
        return None
    return ValueError(f"{name}: expected at most {limit} in all ({bound}), got {total}; {fix}")
