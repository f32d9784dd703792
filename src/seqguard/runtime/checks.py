"""Argument checks for public runtime entry points; messages never print tensor contents."""

from __future__ import annotations

from typing import Optional, Sequence

import torch


def check_tensor(name: str, tensor: object, *, ndim: Optional[int] = None,
                 dtype: Optional[torch.dtype | Sequence[torch.dtype]] = None,
                 device: Optional[torch.device] = None, numel: Optional[int] = None,
                 shape: Optional[Sequence[Optional[int]]] = None) -> None:
    if not isinstance(tensor, torch.Tensor):
        raise TypeError(f"{name}: expected a torch.Tensor, got {type(tensor).__name__}")
    if ndim is not None and tensor.dim() != ndim:
        raise ValueError(f"{name}: expected {ndim} dimensions, got shape {tuple(tensor.shape)}")
    if dtype is not None:
        allowed = (dtype,) if isinstance(dtype, torch.dtype) else tuple(dtype)
        if tensor.dtype not in allowed:
            names = " or ".join(str(d) for d in allowed)
            raise TypeError(f"{name}: expected dtype {names}, got {tensor.dtype}; convert with .to()")
    if device is not None and tensor.device.type != torch.device(device).type:
        raise ValueError(f"{name}: expected a tensor on {torch.device(device).type}, got {tensor.device}; "
                         f"move it with .to(device)")
    if numel is not None and tensor.numel() != numel:
        raise ValueError(f"{name}: expected {numel} elements, got shape {tuple(tensor.shape)}")
    if shape is not None:
        if len(shape) != tensor.dim() or any(s is not None and s != t for s, t in zip(shape, tensor.shape)):
            expected = tuple("*" if s is None else s for s in shape)
            raise ValueError(f"{name}: expected shape {expected}, got {tuple(tensor.shape)}")
