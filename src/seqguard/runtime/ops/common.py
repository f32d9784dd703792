"""Shared launch facts: SM counts, block configs, argument checks."""

from __future__ import annotations

import functools

import torch
import triton
import triton.language as tl

from seqguard.runtime.checks import offsets_error, range_error

ATTENTION_DTYPES = (torch.float16, torch.bfloat16, torch.float32)
# A constexpr so jit-compiled kernels may read it (plain globals are refused).
LOG2E = tl.constexpr(1.4426950408889634)


@functools.lru_cache(maxsize=None)
def multiprocessor_count(device: torch.device) -> int:
    if device.type != "cuda":
        return 4  # the Triton interpreter runs programs one by one; keep grids small
    return torch.cuda.get_device_properties(device).multi_processor_count


def paged_values_error(kv_indptr: torch.Tensor, kv_indices: torch.Tensor, batch: int,
                       num_slots: int) -> "ValueError | None":
    """The value contract of a paged KV layout (see seqguard.runtime.checks for when it
    runs): kv_indptr[:batch + 1] offsets into kv_indices, the slots they cover inside a
    cache of `num_slots`."""
    error = offsets_error("kv_indptr", kv_indptr, batch, kv_indices.shape[0], "the length of kv_indices")
    if error is not None:
        return error
    first, last = int(kv_indptr[0]), int(kv_indptr[batch])
    return range_error("kv_indices", kv_indices[first:last], 0, num_slots - 1, "the slots of the KV cache",
                       "fill req_to_token with slots of the pool", offset=first)


def next_power_of_2(n: int) -> int:
    return 1 if n <= 1 else 1 << (n - 1).bit_length()


@triton.jit
def clamped_span(indptr_ptr, b, limit):
    """Request b's entries [start, start + length) of an array of `limit` entries indexed
    by `indptr`, clamped inside the array. Value checks on device tensors are off by
    default (they would sync), so an indptr built from bad lengths reaches the kernels
    unchecked; clamped, it makes them read and write nothing outside their buffers,
    for two min/max per program."""
    start = tl.load(indptr_ptr + b).to(tl.int64)
    end = tl.load(indptr_ptr + b + 1).to(tl.int64)
    start = tl.minimum(tl.maximum(start, 0), limit)
    end = tl.minimum(tl.maximum(end, start), limit)
    return start, (end - start).to(tl.int32)


@triton.jit
def soft_cap(x, cap):
    """cap * tanh(x / cap), written with a sigmoid so it also runs in the interpreter."""
    return cap * (2.0 * tl.sigmoid(2.0 * x / cap) - 1.0)


@triton.jit
def scaled_scores(q, k, sm_scale, logit_cap, HAS_CAP: tl.constexpr, DOT_F32: tl.constexpr):
    """The logits of a query tile against a key tile: q @ k times `sm_scale`, soft-capped
    when HAS_CAP (not yet masked, not yet times log2(e))."""
    qk = dot(q, k, DOT_F32) * sm_scale
    if HAS_CAP:
        qk = soft_cap(qk, logit_cap)
    return qk


@triton.jit
def online_softmax_step(qk, m_i, l_i):
    """One tile of a base-2 online softmax. `qk`: logits times log2(e), -inf where a key
    is hidden. Returns the tile's probabilities, the factor that rescales what was
    accumulated so far, and the new running max and sum. Rows with nothing visible yet
    (padded heads) keep a finite reference, so they stay at zero instead of NaN."""
    m_new = tl.maximum(m_i, tl.max(qk, 1))
    m_ref = tl.where(m_new == float("-inf"), 0.0, m_new)
    alpha = tl.exp2(m_i - m_ref)
    p = tl.exp2(qk - m_ref[:, None])
    return p, alpha, m_new, l_i * alpha + tl.sum(p, 1)


@triton.jit
def dot(a, b, IN_F32: tl.constexpr):
    """tl.dot, or a float32 one where low-precision dots are wrong: Triton's CPU
    interpreter (numpy has no bfloat16) returns garbage for bf16 operands."""
    if IN_F32:
        a = a.to(tl.float32)
        b = b.to(tl.float32)
    return tl.dot(a, b)
