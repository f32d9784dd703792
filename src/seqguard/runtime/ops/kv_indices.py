"""Flatten each request's token slots into `kv_indices`, from device tensors only."""

from __future__ import annotations

from typing import Optional

import torch
import triton
import triton.language as tl

from seqguard.runtime.checks import INDEX_DTYPES, above_error, check_tensor, checks_values, range_error
from seqguard.runtime.ops.launch import interpreter_required, launcher_for

BLOCK = 512


# num_rows, width and capacity only bound accesses: a specialisation on their values
# would compile a kernel per table size and buy nothing.
@triton.jit(do_not_specialize=["num_rows", "width", "capacity"])
def _build_kv_indices_kernel(
    req_to_token_ptr, req_pool_indices_ptr, lengths_ptr, kv_indptr_ptr, start_ptr, kv_indices_ptr,
    stride_req, num_rows, width, capacity, HAS_START: tl.constexpr, BLOCK: tl.constexpr,
):
    b = tl.program_id(0)
    row = tl.load(req_pool_indices_ptr + b).to(tl.int64)
    out_start = tl.load(kv_indptr_ptr + b).to(tl.int64)
    length = tl.load(lengths_ptr + b).to(tl.int64)
    # Value checks on device tensors are off by default (they would sync), so a row past
    # the table, a length past its width or below zero, or an indptr past kv_indices can
    # reach this kernel: clamped here they read and write nothing outside the tables.
    if HAS_START:
        first = tl.minimum(tl.maximum(tl.load(start_ptr + b).to(tl.int64), 0), width)
        length = tl.minimum(tl.maximum(length, 0), width - first)
    else:
        first = 0
        length = tl.minimum(tl.maximum(length, 0), width)
    length = tl.where((row >= 0) & (row < num_rows), length, 0).to(tl.int32)
    src = req_to_token_ptr + row * stride_req + first
    for i in range(0, length, BLOCK):
        offs = i + tl.arange(0, BLOCK)
        dst = out_start + offs
        mask = (offs < length) & (dst >= 0) & (dst < capacity)
        slots = tl.load(src + offs, mask=mask)
        tl.store(kv_indices_ptr + dst, slots, mask=mask)


_BUILD_KV_INDICES = launcher_for(_build_kv_indices_kernel)


def build_kv_indices(req_to_token: torch.Tensor, req_pool_indices: torch.Tensor, lengths: torch.Tensor,
                     kv_indptr: torch.Tensor, kv_indices: torch.Tensor,
                     start: Optional[torch.Tensor] = None) -> torch.Tensor:
    """kv_indices[kv_indptr[b] + i] = req_to_token[req_pool_indices[b], start[b] + i]
    for i < lengths[b]. `kv_indices` must be large enough for the total (it is never
    sized from the lengths on the host: that would be a sync). Values outside the
    tables are a ValueError where value checks run (seqguard.runtime.checks); elsewhere
    the kernel reads and writes nothing outside them."""
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
    if not batch:
        return kv_indices
    num_rows, width = req_to_token.shape
    capacity = kv_indices.numel()
    if checks_values(lengths):
        error = _values_error(req_pool_indices, lengths, kv_indptr, start, batch, num_rows, width, capacity)
        if error is not None:
            raise error
    _BUILD_KV_INDICES[(batch,)](
        req_to_token, req_pool_indices, lengths, kv_indptr, start if start is not None else lengths,
        kv_indices, req_to_token.stride(0), num_rows, width, capacity, HAS_START=start is not None, BLOCK=BLOCK,
    )
    return kv_indices


def _values_error(req_pool_indices: torch.Tensor, lengths: torch.Tensor, kv_indptr: torch.Tensor,
                  start: Optional[torch.Tensor], batch: int, num_rows: int, width: int,
                  capacity: int) -> Optional[ValueError]:
    """The value contract (see seqguard.runtime.checks for when it runs): every row in the
    table, every span [start, start + length) in its row, every output span in kv_indices."""
    table = "the width of req_to_token"
    error = range_error("req_pool_indices", req_pool_indices, 0, num_rows - 1, "the rows of req_to_token",
                        "pass each request's row of req_to_token")
    if error is None and start is not None:
        error = range_error("start", start, 0, width, table, "pass each request's first token in its row")
    if error is None:
        error = range_error("lengths", lengths, 0, width, table, "pass each request's token count")
    if error is None and start is not None:
        error = above_error("lengths", start + lengths, width, f"start + lengths at most {width} ({table})",
                            "pass spans that end inside the row")
    if error is None:
        error = range_error("kv_indptr", kv_indptr[:batch], 0, capacity, "the length of kv_indices",
                            "pass each request's first position in kv_indices")
    if error is None:
        error = above_error("kv_indices", kv_indptr[:batch] + lengths, capacity,
                            f"room for kv_indptr + lengths in its {capacity} entries",
                            "allocate it for the total length")
    return error
