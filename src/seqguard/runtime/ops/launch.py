"""Launch compiled Triton kernels without paying `JITFunction.run` every decode step.

`kernel[grid](...)` binds the arguments, builds a string cache key from their
specialisation, wraps launch metadata for hooks and only then launches: tens of
microseconds of Python per call on a slow host, more than a small decode's GPU time.
`FastKernel` keeps the compiled kernel that call returns, under a key built from the
same facts Triton specialises on (constexpr values, dtypes, 16-byte pointer
alignment, integer values of 1, multiples of 16 and 64-bit range, launch options),
and calls its launcher directly. The first call of each key, every call while
launch hooks are attached (profilers), and every call under Triton's CPU interpreter
go through `kernel[grid]` unchanged. `SEQGUARD_FAST_LAUNCH=0` (read at import) turns
the shortcut off.

The kernels get their launcher from `launcher_for`: FastKernel only on the Triton
releases it is tested on, the kernel itself (`kernel[grid]`) on any other.
"""

from __future__ import annotations

import logging
import os
from typing import Any, Callable, Dict, Sequence, Tuple

import torch
import triton
from triton.runtime.jit import JITFunction

try:  # triton >= 3.4
    from triton import knobs as _knobs
except ImportError:  # pragma: no cover - older triton: the shortcut stays off
    _knobs = None

_INT32_RANGE = range(-(2 ** 31), 2 ** 31)


# Read once: a launch is too hot a path for an environment lookup.
ENABLED = _knobs is not None and os.environ.get("SEQGUARD_FAST_LAUNCH", "1") != "0"

# FastKernel copies Triton internals that change between releases without notice: the
# specialisation rules behind its cache key, `CompiledKernel.run`'s argument order,
# `packed_metadata`, the launch-hook knobs. These are the releases whose internals it
# was checked against (tests/test_fast_launch.py, and on a GPU
# tests/test_ops.py::test_gpu_fast_launch_matches_tritons_launch_path): 3.6, the GPU
# image's, and 3.9, CI's. Add a release here only after those tests pass on it.
TESTED_TRITON_RELEASES = ("3.6", "3.9")

logger = logging.getLogger("seqguard.runtime")
_untested_release_noted = False


def _hooks_attached() -> bool:
    runtime = _knobs.runtime
    for hook in (runtime.launch_enter_hook, runtime.launch_exit_hook):
        # A HookChain (triton >= 3.5) is attached when it holds calls; older knobs hold None or a callable.
        if hook is not None and getattr(hook, "calls", True):
            return True
    return False


def _cuda_device_index(arg: Any) -> "int | None":
    """The CUDA device a launch's first tensor lives on, None off CUDA."""
    return arg.get_device() if isinstance(arg, torch.Tensor) and arg.is_cuda else None


# torch.cuda.current_device() re-checks initialisation on every call; the launch path
# only runs after a CUDA tensor exists, so the raw query is enough.
_current_device = getattr(torch._C, "_cuda_getDevice", None) or torch.cuda.current_device


def _current_stream_handle(device: int) -> int:
    return torch.cuda.current_stream(device).cuda_stream


# The current stream's handle, as Triton's own launch path reads it (resolved once: hot path).
_current_raw_stream = getattr(torch._C, "_cuda_getCurrentRawStream", None) or _current_stream_handle


def _runtime_arg_key(arg: Any) -> Any:
    """What Triton specialises a non-constexpr argument on."""
    if isinstance(arg, torch.Tensor):
        return arg.dtype, arg.data_ptr() % 16 == 0
    if type(arg) is int:
        return arg == 1, arg % 16 == 0, arg in _INT32_RANGE
    if arg is None or isinstance(arg, (bool, float)):
        return type(arg), arg if arg is None or isinstance(arg, bool) else None
    return type(arg), arg  # anything else: by value, so a new value never reuses a binary


class FastKernel:
    """Wraps a `@triton.jit` kernel: `FastKernel(k)[grid](*args, **constexprs_and_options)`
    behaves like `k[grid](...)`."""

    def __init__(self, kernel: Any) -> None:
        self.kernel = kernel
        # Under TRITON_INTERPRET=1 `triton.jit` gives an interpreted function: nothing to cache.
        self._jit = isinstance(kernel, JITFunction)
        params = kernel.params if self._jit else ()
        self.arg_names: Tuple[str, ...] = tuple(p.name for p in params)
        self._constexpr = frozenset(i for i, p in enumerate(params) if p.is_constexpr)
        self._compiled: Dict[Tuple, Any] = {}

    def __getitem__(self, grid: Sequence[int]) -> Callable[..., None]:
        return lambda *args, **kwargs: self.launch(tuple(grid), args, kwargs)

    def launch(self, grid: Tuple[int, ...], args: tuple, kwargs: Dict[str, Any]) -> None:
        if not (ENABLED and self._jit) or _hooks_attached():
            self.kernel[grid](*args, **kwargs)
            return
        by_keyword = self.arg_names[len(args):]
        try:
            full = args + tuple(kwargs[name] for name in by_keyword)
        except KeyError:  # a parameter left to its default: Triton's binder applies it
            self.kernel[grid](*args, **kwargs)
            return
        device = _cuda_device_index(full[0])
        if device is None or device != _current_device():
            self.kernel[grid](*args, **kwargs)  # the JIT path owns unusual device setups
            return
        options = tuple(item for item in kwargs.items() if item[0] not in by_keyword)
        constexpr = self._constexpr
        key = (device, options,
               tuple(arg if i in constexpr else _runtime_arg_key(arg) for i, arg in enumerate(full)))
        compiled = self._compiled.get(key)
        if compiled is None:
            compiled = self.kernel[grid](*args, **kwargs)
            if getattr(compiled, "function", None) is not None and len(self._compiled) < 256:
                self._compiled[key] = compiled
            return
        grid_y = grid[1] if len(grid) > 1 else 1
        grid_z = grid[2] if len(grid) > 2 else 1
        compiled.run(grid[0], grid_y, grid_z, _current_raw_stream(device), compiled.function,
                     compiled.packed_metadata, None, None, None, *full)

    def cached_variants(self) -> int:
        """How many compiled kernels the shortcut holds (one per specialisation seen)."""
        return len(self._compiled)


def fast_launch_tested(version: str) -> bool:
    """Whether FastKernel was tested on Triton `version` ("3.6.0", "3.9.1+git...")."""
    return ".".join(version.split(".")[:2]) in TESTED_TRITON_RELEASES


def interpreter_required(kernel: Any, device_index: int) -> "RuntimeError | None":
    """The error for CPU tensors (`device_index` -1, as `Tensor.get_device()` gives it)
    handed to a kernel compiled for the GPU: Triton chose its interpreter, or not, when
    the kernel was defined, and without it fails deep inside with "0 active drivers"."""
    if device_index < 0 and isinstance(kernel, JITFunction):
        return RuntimeError(
            "expected CUDA tensors, got CPU tensors: Triton runs kernels on the CPU only in its "
            "interpreter; set TRITON_INTERPRET=1 before importing seqguard.runtime's kernels, or move "
            "the tensors to a GPU")
    return None


def launcher_for(kernel: Any) -> Any:
    """What a module launches `kernel` through, `launcher[grid](*args, **kwargs)`:
    a FastKernel on a tested Triton release, else the kernel itself (Triton's own
    `kernel[grid]`), noted once at debug level."""
    global _untested_release_noted
    version = triton.__version__
    if fast_launch_tested(version):
        return FastKernel(kernel)
    if not _untested_release_noted:
        _untested_release_noted = True
        logger.debug("seqguard: Triton %s is not among the releases the launch shortcut is tested on (%s); "
                     "kernels launch through kernel[grid]", version, ", ".join(TESTED_TRITON_RELEASES))
    return kernel
