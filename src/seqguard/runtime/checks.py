"""Argument checks for public runtime entry points; messages never print tensor contents."""

from __future__ import annotations

from typing import Optional, Sequence

import torch


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
