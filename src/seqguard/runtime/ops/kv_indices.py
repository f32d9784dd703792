"""Flatten each request's token slots into `kv_indices`, from device tensors only."""

from __future__ import annotations

from typing import Optional

import torch
import triton
import triton.language as tl

from seqguard.runtime.checks import check_tensor
from seqguard.runtime.ops.launch import interpreter_required, launcher_for
from seqguard.runtime.ops.common import INDEX_DTYPES

BLOCK = 512


@triton.jit
def _build_kv_indices_kernel(
    req_to_token_ptr, req_pool_indices_ptr, lengths_ptr, kv_indptr_ptr, start_ptr, kv_indices_ptr,
    stride_req, HAS_START: tl.constexpr, BLOCK: tl.constexpr,
):
    b = tl.program_id(0)
    row = tl.load(req_pool_indices_ptr + b).to(tl.int64)
    out_start = tl.load(kv_indptr_ptr + b).to(tl.int64)
    length = tl.load(lengths_ptr + b).to(tl.int32)
    first = 0
    if HAS_START:
        first = tl.load(start_ptr + b).to(tl.int32)
    src = req_to_token_ptr + row * stride_req + first
    for i in range(0, length, BLOCK):
        offs = i + tl.arange(0, BLOCK)
        mask = offs < length
        slots = tl.load(src + offs, mask=mask)
        tl.store(kv_indices_ptr + out_start + offs, slots, mask=mask)


_BUILD_KV_INDICES = launcher_for(_build_kv_indices_kernel)


def build_kv_indices(req_to_token: torch.Tensor, req_pool_indices: torch.Tensor, lengths: torch.Tensor,
                     kv_indptr: torch.Tensor, kv_indices: torch.Tensor,
                     start: Optional[torch.Tensor] = None) -> torch.Tensor:
    """kv_indices[kv_indptr[b] + i] = req_to_token[req_pool_indices[b], start[b] + i]
    for i < lengths[b]. `kv_indices` must be large enough for the total (it is never
    sized from the lengths on the host: that would be a sync)."""
    check_tensor("req_to_token", req_to_token, ndim=2, dtype=INDEX_DTYPES)
    device = req_to_token.device
    check_tensor("req_pool_indices", req_pool_indices, ndim=1, dtype=INDEX_DTYPES, device=device)
    batch = req_pool_indices.numel()
    check_tensor("lengths", lengths, ndim=1, dtype=INDEX_DTYPES, device=device, numel=batch)
    check_tensor("kv_indptr", kv_indptr, ndim=1, dtype=INDEX_DTYPES, device=device)
    if kv_indptr.numel() < batch + 1:
        raise ValueError(f"kv_indptr: expected at least {batch + 1} elements, got {kv_indptr.numel()}")
    check_tensor("kv_indices", kv_indices, ndim=1, dtype=req_to_token.dtype, device=device)
    if start is not None:
        check_tensor("start", start, ndim=1, dtype=INDEX_DTYPES, device=device, numel=batch)
    if req_to_token.stride(1) != 1:
        raise ValueError("req_to_token: expected contiguous rows; call .contiguous()")
    error = interpreter_required(_build_kv_indices_kernel, req_to_token.get_device())
    if error is not None:
        raise error
    if batch:
        _BUILD_KV_INDICES[(batch,)](
            req_to_token, req_pool_indices, lengths, kv_indptr, start if start is not None else lengths,
            kv_indices, req_to_token.stride(0), HAS_START=start is not None, BLOCK=BLOCK,
        )
    return kv_indices
