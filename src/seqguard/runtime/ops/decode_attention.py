"""Paged decode attention: one new query token per request against its whole KV.

Stage 1 splits each request's KV into chunks processed in parallel; all query heads
that share a KV head are handled by one program, so each K/V row is read once per
KV head (grouped-query attention). Stage 2 merges the chunks with their
log-sum-exp. The number of chunks a request uses is computed inside the kernels from
`kv_indptr` (device) and a host-side cap that depends only on the batch shape, so
no launch needs the lengths on the host and CUDA-graph replay works unchanged.

Adapted from the split-KV "grouped" decode kernel design of SGLang's Triton backend
(itself after LightLLM); changed: device-computed per-request split counts, exp2
online softmax, one code path for MHA and GQA, int64 slot offsets.
"""

from __future__ import annotations

import dataclasses
from typing import Optional

import torch
import triton
import triton.language as tl

from seqguard.runtime.checks import check_tensor
from seqguard.runtime.ops.common import (
    ATTENTION_DTYPES, INDEX_DTYPES, LOG2E, dot as _dot, multiprocessor_count, next_power_of_2, soft_cap,
)

MAX_KV_SPLITS_CAP = 64
# Stage-1 programs to aim for per multiprocessor when choosing the split cap.
PROGRAMS_PER_SM = 8


@triton.jit
def _num_splits(seq_len, max_splits, BLOCK_N: tl.constexpr, MIN_TILES: tl.constexpr):
    """Chunks for one request: never more than its KV tiles, never more than the cap."""
    wanted = tl.cdiv(seq_len, BLOCK_N * MIN_TILES)
    return tl.maximum(tl.minimum(wanted, max_splits), 1)


@triton.jit
def _decode_stage1_kernel(
    q_ptr, k_ptr, v_ptr, kv_indptr_ptr, kv_indices_ptr, part_out_ptr, part_lse_ptr,
    sm_scale, logit_cap, max_splits,
    stride_q_b, stride_q_h,
    stride_k_t, stride_k_h,
    stride_v_t, stride_v_h,
    stride_po_b, stride_po_h, stride_po_s,
    stride_pl_b, stride_pl_h,
    GROUP: tl.constexpr, BLOCK_H: tl.constexpr,
    HEAD_DIM: tl.constexpr, BLOCK_D: tl.constexpr, HEAD_DIM_V: tl.constexpr, BLOCK_DV: tl.constexpr,
    BLOCK_N: tl.constexpr, MIN_TILES: tl.constexpr, HAS_CAP: tl.constexpr, DOT_F32: tl.constexpr,
):
    b = tl.program_id(0)
    kv_head = tl.program_id(1)
    split = tl.program_id(2)

    kv_start = tl.load(kv_indptr_ptr + b).to(tl.int64)
    seq_len = (tl.load(kv_indptr_ptr + b + 1) - kv_start).to(tl.int32)
    num_splits = _num_splits(seq_len, max_splits, BLOCK_N, MIN_TILES)
    tiles_per_split = tl.cdiv(tl.cdiv(seq_len, BLOCK_N), num_splits)
    lo = split * tiles_per_split * BLOCK_N
    hi = tl.minimum(lo + tiles_per_split * BLOCK_N, seq_len)
    if (split < num_splits) & (lo < hi):
        offs_h = tl.arange(0, BLOCK_H)
        heads = kv_head * GROUP + offs_h
        mask_h = offs_h < GROUP
        offs_d = tl.arange(0, BLOCK_D)
        offs_dv = tl.arange(0, BLOCK_DV)
        mask_d = offs_d < HEAD_DIM
        mask_dv = offs_dv < HEAD_DIM_V

        q = tl.load(q_ptr + b * stride_q_b + heads[:, None] * stride_q_h + offs_d[None, :],
                    mask=mask_h[:, None] & mask_d[None, :], other=0.0)
        m_i = tl.full([BLOCK_H], float("-inf"), dtype=tl.float32)
        l_i = tl.zeros([BLOCK_H], dtype=tl.float32)
        acc = tl.zeros([BLOCK_H, BLOCK_DV], dtype=tl.float32)
        k_base = k_ptr + kv_head * stride_k_h
        v_base = v_ptr + kv_head * stride_v_h
        for start_n in range(lo, hi, BLOCK_N):
            offs_n = start_n + tl.arange(0, BLOCK_N)
            mask_n = offs_n < hi
            slots = tl.load(kv_indices_ptr + kv_start + offs_n, mask=mask_n, other=0).to(tl.int64)
            k = tl.load(k_base + slots[None, :] * stride_k_t + offs_d[:, None],
                        mask=mask_n[None, :] & mask_d[:, None], other=0.0)
            qk = _dot(q, k, DOT_F32) * sm_scale
            if HAS_CAP:
                qk = soft_cap(qk, logit_cap)
            qk = qk * LOG2E
            qk = tl.where(mask_h[:, None] & mask_n[None, :], qk, float("-inf"))
            # rows with nothing visible yet (padded heads) keep a finite reference
            m_new = tl.maximum(m_i, tl.max(qk, 1))
            m_ref = tl.where(m_new == float("-inf"), 0.0, m_new)
            alpha = tl.exp2(m_i - m_ref)
            p = tl.exp2(qk - m_ref[:, None])
            l_i = l_i * alpha + tl.sum(p, 1)
            v = tl.load(v_base + slots[:, None] * stride_v_t + offs_dv[None, :],
                        mask=mask_n[:, None] & mask_dv[None, :], other=0.0)
            acc = acc * alpha[:, None] + _dot(p.to(v.dtype), v, DOT_F32)
            m_i = m_new
        out = acc / tl.where(l_i == 0.0, 1.0, l_i)[:, None]
        tl.store(part_out_ptr + b * stride_po_b + heads[:, None] * stride_po_h + split * stride_po_s
                 + offs_dv[None, :], out, mask=mask_h[:, None] & mask_dv[None, :])
        # log-sum-exp in base 2, the unit stage 2 merges in
        tl.store(part_lse_ptr + b * stride_pl_b + heads * stride_pl_h + split, m_i + tl.log2(tl.where(l_i == 0.0, 1.0, l_i)), mask=mask_h)


@triton.jit
def _decode_stage2_kernel(
    part_out_ptr, part_lse_ptr, out_ptr, kv_indptr_ptr, max_splits,
    stride_po_b, stride_po_h, stride_po_s,
    stride_pl_b, stride_pl_h,
    stride_o_b, stride_o_h,
    HEAD_DIM_V: tl.constexpr, BLOCK_DV: tl.constexpr,
    BLOCK_N: tl.constexpr, MIN_TILES: tl.constexpr,
):
    b = tl.program_id(0)
    head = tl.program_id(1)
    seq_len = (tl.load(kv_indptr_ptr + b + 1) - tl.load(kv_indptr_ptr + b)).to(tl.int32)
    num_splits = _num_splits(seq_len, max_splits, BLOCK_N, MIN_TILES)
    tiles_per_split = tl.cdiv(tl.cdiv(seq_len, BLOCK_N), num_splits)
    used = tl.cdiv(tl.cdiv(seq_len, BLOCK_N), tiles_per_split)  # trailing chunks can be empty
    offs_dv = tl.arange(0, BLOCK_DV)
    mask_dv = offs_dv < HEAD_DIM_V
    m = float("-inf")
    total = 0.0
    acc = tl.zeros([BLOCK_DV], dtype=tl.float32)
    lse_base = part_lse_ptr + b * stride_pl_b + head * stride_pl_h
    out_base = part_out_ptr + b * stride_po_b + head * stride_po_h
    for s in range(0, used):
        lse = tl.load(lse_base + s)
        part = tl.load(out_base + s * stride_po_s + offs_dv, mask=mask_dv, other=0.0)
        m_new = tl.maximum(m, lse)
        scale_old = tl.exp2(m - m_new)
        weight = tl.exp2(lse - m_new)
        acc = acc * scale_old + weight * part
        total = total * scale_old + weight
        m = m_new
    result = tl.where(seq_len > 0, acc / total, 0.0)
    tl.store(out_ptr + b * stride_o_b + head * stride_o_h + offs_dv, result.to(out_ptr.dtype.element_ty),
             mask=mask_dv)


@dataclasses.dataclass
class DecodeWorkspace:
    """Per-chunk partial results; preallocate once for CUDA graphs."""
    part_out: torch.Tensor   # [max_bs, Hq, max_splits, Dv] float32
    part_lse: torch.Tensor   # [max_bs, Hq, max_splits] float32

    @classmethod
    def allocate(cls, max_bs: int, num_q_heads: int, max_splits: int, head_dim_v: int,
                 device: torch.device | str) -> "DecodeWorkspace":
        return cls(torch.empty(max_bs, num_q_heads, max_splits, head_dim_v, dtype=torch.float32, device=device),
                   torch.empty(max_bs, num_q_heads, max_splits, dtype=torch.float32, device=device))

    @property
    def max_splits(self) -> int:
        return self.part_lse.shape[2]


def default_max_kv_splits(batch_size: int, num_kv_heads: int, device: torch.device) -> int:
    """Host-side cap on chunks per request, from the batch shape only (never lengths).

    Aims at ~8 stage-1 programs per multiprocessor: on the H200 (132 SMs) 1 x 4096
    gets 64 chunks, 8 x 4096 16, 128 x 4096 a single one (BENCHMARKS.md)."""
    target_programs = PROGRAMS_PER_SM * multiprocessor_count(device)
    wanted = triton.cdiv(target_programs, max(1, batch_size * num_kv_heads))
    return max(1, min(MAX_KV_SPLITS_CAP, next_power_of_2(wanted)))


def _block_config(head_dim: int, device: torch.device) -> tuple[int, int, int, int]:
    """(BLOCK_N, MIN_TILES, num_warps, num_stages). 64-token tiles keep a 128-dim K
    tile at 16 KB; 256-dim heads halve the tile to stay within registers."""
    if device.type != "cuda":
        return 16, 1, 4, 1
    if head_dim > 128:
        return 32, 2, 4, 2
    return 64, 1, 4, 2


def decode_attention_fwd(q: torch.Tensor, k_cache: torch.Tensor, v_cache: torch.Tensor, out: torch.Tensor,
                         kv_indptr: torch.Tensor, kv_indices: torch.Tensor, *, sm_scale: float,
                         logit_cap: float = 0.0, max_kv_splits: Optional[int] = None,
                         workspace: Optional[DecodeWorkspace] = None) -> torch.Tensor:
    """Paged decode. q, out: [B, Hq, D]; k_cache: [T, Hkv, D]; v_cache: [T, Hkv, Dv];
    kv_indptr: [B+1] (request b reads kv_indices[kv_indptr[b]:kv_indptr[b+1]]);
    kv_indices: token slots. Returns `out`."""
    check_tensor("q", q, ndim=3, dtype=ATTENTION_DTYPES)
    batch, num_q_heads, head_dim = q.shape
    device = q.device
    check_tensor("k_cache", k_cache, ndim=3, dtype=q.dtype, device=device, shape=(None, None, head_dim))
    num_kv_heads = k_cache.shape[1]
    if num_q_heads % num_kv_heads:
        raise ValueError(f"q: expected a multiple of the {num_kv_heads} KV heads, got {num_q_heads} query heads")
    check_tensor("v_cache", v_cache, ndim=3, dtype=q.dtype, device=device,
                 shape=(k_cache.shape[0], num_kv_heads, None))
    head_dim_v = v_cache.shape[2]
    check_tensor("out", out, ndim=3, dtype=q.dtype, device=device, shape=(batch, num_q_heads, head_dim_v))
    check_tensor("kv_indptr", kv_indptr, ndim=1, dtype=INDEX_DTYPES, device=device)
    if kv_indptr.numel() < batch + 1:
        raise ValueError(f"kv_indptr: expected at least {batch + 1} elements (batch + 1), got {kv_indptr.numel()}")
    check_tensor("kv_indices", kv_indices, ndim=1, dtype=INDEX_DTYPES, device=device)
    for name, t in (("q", q), ("k_cache", k_cache), ("v_cache", v_cache), ("out", out)):
        if t.stride(-1) != 1:
            raise ValueError(f"{name}: expected a contiguous last dimension, got strides {t.stride()}; "
                             f"call .contiguous()")
    if batch == 0:
        return out
    if max_kv_splits is None:
        max_kv_splits = workspace.max_splits if workspace is not None else \
            default_max_kv_splits(batch, num_kv_heads, device)
    if workspace is None:
        workspace = DecodeWorkspace.allocate(batch, num_q_heads, max_kv_splits, head_dim_v, device)
    elif workspace.part_out.shape[0] < batch or workspace.max_splits < max_kv_splits \
            or workspace.part_out.shape[1] != num_q_heads or workspace.part_out.shape[3] != head_dim_v:
        raise ValueError(f"workspace: expected room for {batch} x {num_q_heads} heads x {max_kv_splits} "
                         f"splits x {head_dim_v}, got {tuple(workspace.part_out.shape)}")
    _launch_decode(q, k_cache, v_cache, out, kv_indptr, kv_indices, workspace, sm_scale, logit_cap,
                   max_kv_splits)
    return out


def _launch_decode(q, k_cache, v_cache, out, kv_indptr, kv_indices, workspace, sm_scale, logit_cap,
                   max_kv_splits) -> None:
    batch, num_q_heads, head_dim = q.shape
    num_kv_heads, head_dim_v = k_cache.shape[1], v_cache.shape[2]
    group = num_q_heads // num_kv_heads
    block_n, min_tiles, num_warps, num_stages = _block_config(head_dim, q.device)
    part_out, part_lse = workspace.part_out, workspace.part_lse
    block_d, block_dv = next_power_of_2(head_dim), next_power_of_2(head_dim_v)
    # tl.dot needs at least 16 rows: pad the head group.
    block_h = max(16, next_power_of_2(group))
    _decode_stage1_kernel[(batch, num_kv_heads, max_kv_splits)](
        q, k_cache, v_cache, kv_indptr, kv_indices, part_out, part_lse,
        sm_scale, logit_cap, max_kv_splits,
        q.stride(0), q.stride(1), k_cache.stride(0), k_cache.stride(1), v_cache.stride(0), v_cache.stride(1),
        part_out.stride(0), part_out.stride(1), part_out.stride(2), part_lse.stride(0), part_lse.stride(1),
        GROUP=group, BLOCK_H=block_h, HEAD_DIM=head_dim, BLOCK_D=block_d, HEAD_DIM_V=head_dim_v,
        BLOCK_DV=block_dv, BLOCK_N=block_n, MIN_TILES=min_tiles,
        HAS_CAP=logit_cap > 0, DOT_F32=q.device.type != "cuda", num_warps=num_warps, num_stages=num_stages,
    )
    _decode_stage2_kernel[(batch, num_q_heads)](
        part_out, part_lse, out, kv_indptr, max_kv_splits,
        part_out.stride(0), part_out.stride(1), part_out.stride(2), part_lse.stride(0), part_lse.stride(1),
        out.stride(0), out.stride(1),
        HEAD_DIM_V=head_dim_v, BLOCK_DV=block_dv, BLOCK_N=block_n,
        MIN_TILES=min_tiles, num_warps=4 if head_dim_v <= 128 else 8, num_stages=1,
    )
