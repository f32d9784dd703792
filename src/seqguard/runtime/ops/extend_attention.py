"""Extend (prefill) attention with a cached prefix: new tokens attend to their
request's cached KV (through kv_indices) and causally to the new tokens.

Used for prefill, speculative target-verify (a chain of draft tokens) and
draft-extend. The grid's token dimension is a host-known bound (`max_extend_len`),
never read from device lengths; programs past a request's length exit at once.
"""

from __future__ import annotations

from typing import Optional

import torch
import triton
import triton.language as tl

from seqguard.runtime.checks import INDEX_DTYPES, above_error, check_int, check_tensor, checks_values, offsets_error
from seqguard.runtime.ops.common import (
    ATTENTION_DTYPES, LOG2E, clamped_span, dot as _dot, next_power_of_2, online_softmax_step,
    paged_values_error, scaled_scores,
)
from seqguard.runtime.ops.launch import interpreter_required, launcher_for


# tokens and kv_capacity only bound accesses; `tokens` changes every call, and a
# specialisation on it would compile a new kernel mid-serving.
@triton.jit(do_not_specialize=["tokens", "kv_capacity"])
def _extend_kernel(
    q_ptr, k_ext_ptr, v_ext_ptr, out_ptr, k_cache_ptr, v_cache_ptr,
    qo_indptr_ptr, kv_indptr_ptr, kv_indices_ptr, sm_scale, logit_cap, tokens, kv_capacity,
    stride_q_t, stride_q_h, stride_ke_t, stride_ke_h, stride_ve_t, stride_ve_h,
    stride_o_t, stride_o_h, stride_kc_t, stride_kc_h, stride_vc_t, stride_vc_h,
    GROUP: tl.constexpr, HEAD_DIM: tl.constexpr, BLOCK_D: tl.constexpr,
    HEAD_DIM_V: tl.constexpr, BLOCK_DV: tl.constexpr,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, HAS_CAP: tl.constexpr, DOT_F32: tl.constexpr,
):
    b = tl.program_id(0)
    head = tl.program_id(1)
    block_m = tl.program_id(2)
    kv_head = head // GROUP
    qo_start, extend_len = clamped_span(qo_indptr_ptr, b, tokens)
    if block_m * BLOCK_M < extend_len:
        kv_start, prefix_len = clamped_span(kv_indptr_ptr, b, kv_capacity)
        offs_m = block_m * BLOCK_M + tl.arange(0, BLOCK_M)
        mask_m = offs_m < extend_len
        offs_d = tl.arange(0, BLOCK_D)
        offs_dv = tl.arange(0, BLOCK_DV)
        mask_d = offs_d < HEAD_DIM
        mask_dv = offs_dv < HEAD_DIM_V
        q = tl.load(q_ptr + (qo_start + offs_m[:, None]) * stride_q_t + head * stride_q_h + offs_d[None, :],
                    mask=mask_m[:, None] & mask_d[None, :], other=0.0)
        m_i = tl.full([BLOCK_M], float("-inf"), dtype=tl.float32)
        l_i = tl.zeros([BLOCK_M], dtype=tl.float32)
        acc = tl.zeros([BLOCK_M, BLOCK_DV], dtype=tl.float32)

        # the cached prefix: every new token sees all of it
        for start_n in range(0, prefix_len, BLOCK_N):
            offs_n = start_n + tl.arange(0, BLOCK_N)
            mask_n = offs_n < prefix_len
            slots = tl.load(kv_indices_ptr + kv_start + offs_n, mask=mask_n, other=0).to(tl.int64)
            # slots are not masked against the cache's size (see the decode kernel): the
            # engine's own allocation, checked where value checks run
            k = tl.load(k_cache_ptr + slots[None, :] * stride_kc_t + kv_head * stride_kc_h + offs_d[:, None],
                        mask=mask_n[None, :] & mask_d[:, None], other=0.0)
            qk = scaled_scores(q, k, sm_scale, logit_cap, HAS_CAP, DOT_F32)
            qk = tl.where(mask_m[:, None] & mask_n[None, :], qk * LOG2E, float("-inf"))
            p, alpha, m_i, l_i = online_softmax_step(qk, m_i, l_i)
            v = tl.load(v_cache_ptr + slots[:, None] * stride_vc_t + kv_head * stride_vc_h + offs_dv[None, :],
                        mask=mask_n[:, None] & mask_dv[None, :], other=0.0)
            acc = acc * alpha[:, None] + _dot(p.to(v.dtype), v, DOT_F32)

        # the new tokens, causally
        end_n = tl.minimum((block_m + 1) * BLOCK_M, extend_len)
        for start_n in range(0, end_n, BLOCK_N):
            offs_n = start_n + tl.arange(0, BLOCK_N)
            mask_n = offs_n < extend_len
            k = tl.load(k_ext_ptr + (qo_start + offs_n[None, :]) * stride_ke_t + kv_head * stride_ke_h
                        + offs_d[:, None], mask=mask_n[None, :] & mask_d[:, None], other=0.0)
            qk = scaled_scores(q, k, sm_scale, logit_cap, HAS_CAP, DOT_F32)
            causal = offs_m[:, None] >= offs_n[None, :]
            qk = tl.where(mask_m[:, None] & mask_n[None, :] & causal, qk * LOG2E, float("-inf"))
            p, alpha, m_i, l_i = online_softmax_step(qk, m_i, l_i)
            v = tl.load(v_ext_ptr + (qo_start + offs_n[:, None]) * stride_ve_t + kv_head * stride_ve_h
                        + offs_dv[None, :], mask=mask_n[:, None] & mask_dv[None, :], other=0.0)
            acc = acc * alpha[:, None] + _dot(p.to(v.dtype), v, DOT_F32)

        out = acc / tl.where(l_i == 0.0, 1.0, l_i)[:, None]
        tl.store(out_ptr + (qo_start + offs_m[:, None]) * stride_o_t + head * stride_o_h + offs_dv[None, :],
                 out.to(out_ptr.dtype.element_ty), mask=mask_m[:, None] & mask_dv[None, :])


_EXTEND = launcher_for(_extend_kernel)


def _block_config(head_dim: int, device: torch.device) -> tuple[int, int, int, int]:
    """(BLOCK_M, BLOCK_N, num_warps, num_stages)."""
    if device.type != "cuda":
        return 16, 16, 4, 1
    if head_dim > 128:
        return 64, 32, 8, 1
    return 64, 64, 4, 2


def extend_attention_fwd(q: torch.Tensor, k_extend: torch.Tensor, v_extend: torch.Tensor, out: torch.Tensor,
                         k_cache: torch.Tensor, v_cache: torch.Tensor, qo_indptr: torch.Tensor,
                         kv_indptr: torch.Tensor, kv_indices: torch.Tensor, *, sm_scale: float,
                         max_extend_len: Optional[int] = None, logit_cap: float = 0.0) -> torch.Tensor:
    """q, out: [N, Hq, D] new tokens of all requests (request b owns rows
    qo_indptr[b]:qo_indptr[b+1]); k_extend, v_extend: [N, Hkv, D] their keys and
    values; k_cache, v_cache: [T, Hkv, D]; kv_indptr/kv_indices: the cached prefix.
    `max_extend_len`: a host-known bound on any request's new tokens (default N).
    Offsets past q or kv_indices, slots past the cache and requests longer than
    `max_extend_len` are a ValueError where value checks run (seqguard.runtime.checks);
    elsewhere the kernel clamps each request's spans inside q and kv_indices, and trusts
    the slots (the engine's own allocation)."""
    check_tensor("q", q, ndim=3, dtype=ATTENTION_DTYPES)
    tokens, num_q_heads, head_dim = q.shape
    device = q.device
    check_tensor("k_extend", k_extend, ndim=3, dtype=q.dtype, device=device, shape=(tokens, None, head_dim))
    num_kv_heads = k_extend.shape[1]
    check_tensor("v_extend", v_extend, ndim=3, dtype=q.dtype, device=device, shape=(tokens, num_kv_heads, None))
    head_dim_v = v_extend.shape[2]
    check_tensor("out", out, ndim=3, dtype=q.dtype, device=device, shape=(tokens, num_q_heads, head_dim_v))
    check_tensor("k_cache", k_cache, ndim=3, dtype=q.dtype, device=device, shape=(None, num_kv_heads, head_dim))
    check_tensor("v_cache", v_cache, ndim=3, dtype=q.dtype, device=device,
                 shape=(k_cache.shape[0], num_kv_heads, head_dim_v))
    check_tensor("qo_indptr", qo_indptr, ndim=1, dtype=INDEX_DTYPES, device=device)
    batch = qo_indptr.numel() - 1
    check_tensor("kv_indptr", kv_indptr, ndim=1, dtype=INDEX_DTYPES, device=device)
    if kv_indptr.numel() < batch + 1:
        raise ValueError(f"kv_indptr: expected at least {batch + 1} elements, got {kv_indptr.numel()}")
    check_tensor("kv_indices", kv_indices, ndim=1, dtype=INDEX_DTYPES, device=device)
    if num_q_heads % num_kv_heads:
        raise ValueError(f"q: expected a multiple of the {num_kv_heads} KV heads, got {num_q_heads} query heads")
    error = interpreter_required(_extend_kernel, q.get_device())
    if error is not None:
        raise error
    if max_extend_len is not None:
        max_extend_len = check_int("max_extend_len", max_extend_len, low=0)
    if batch <= 0 or tokens == 0:
        return out
    if checks_values(qo_indptr):
        error = _values_error(qo_indptr, kv_indptr, kv_indices, batch, tokens, k_cache.shape[0], max_extend_len)
        if error is not None:
            raise error
    bound = tokens if max_extend_len is None else max_extend_len
    block_m, block_n, num_warps, num_stages = _block_config(head_dim, device)
    grid = (batch, num_q_heads, triton.cdiv(bound, block_m))
    _EXTEND[grid](
        q, k_extend, v_extend, out, k_cache, v_cache, qo_indptr, kv_indptr, kv_indices, sm_scale, logit_cap,
        tokens, kv_indices.shape[0],
        q.stride(0), q.stride(1), k_extend.stride(0), k_extend.stride(1), v_extend.stride(0), v_extend.stride(1),
        out.stride(0), out.stride(1), k_cache.stride(0), k_cache.stride(1), v_cache.stride(0), v_cache.stride(1),
        GROUP=num_q_heads // num_kv_heads, HEAD_DIM=head_dim, BLOCK_D=next_power_of_2(head_dim),
        HEAD_DIM_V=head_dim_v, BLOCK_DV=next_power_of_2(head_dim_v), BLOCK_M=block_m, BLOCK_N=block_n,
        HAS_CAP=logit_cap > 0, DOT_F32=q.device.type != "cuda", num_warps=num_warps, num_stages=num_stages,
    )
    return out


def _values_error(qo_indptr: torch.Tensor, kv_indptr: torch.Tensor, kv_indices: torch.Tensor, batch: int,
                  tokens: int, num_slots: int, max_extend_len: Optional[int]) -> Optional[ValueError]:
    """The value contract (see seqguard.runtime.checks for when it runs): qo_indptr
    offsets into q's rows, none longer than the grid's bound, and the cached prefix."""
    error = offsets_error("qo_indptr", qo_indptr, batch, tokens, "the rows of q")
    if error is None and max_extend_len is not None:
        error = above_error("qo_indptr", qo_indptr[1:batch + 1] - qo_indptr[:batch], max_extend_len,
                            f"at most max_extend_len={max_extend_len} new tokens per request",
                            "raise max_extend_len or leave it None")
    return error or paged_values_error(kv_indptr, kv_indices, batch, num_slots)
