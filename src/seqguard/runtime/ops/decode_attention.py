"""Paged decode attention: one new query token per request against its whole KV.

Each request's KV is split into chunks processed in parallel (split-KV); one program
handles every query head that shares a KV head, so each K/V row is read once per KV
head (grouped-query attention). The reduction stage runs in the same launch: the last
program of a request's chunks to finish (an acquire-release counter) merges the
partial results by log-sum-exp and resets the counter, so a decode step is a single
kernel launch and the workspace is ready for the next launch or graph replay.

The number of chunks a request uses is computed in the kernel from `kv_indptr`
(device) and a host cap that depends only on the batch shape: no launch needs
lengths on the host, so CUDA-graph replay works unchanged.

Adapted from the split-KV "grouped" decode kernel of SGLang's Triton backend (after
LightLLM). Changed: device-computed per-request split counts, the fused last-program
reduction, exp2 online softmax, one path for MHA and GQA, int64 slot offsets,
contiguous caches so strides are compile-time constants (fewer launch arguments).
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Optional

import torch
import triton
import triton.language as tl

from seqguard.runtime.checks import INDEX_DTYPES, checks_values, tensor_error
from seqguard.runtime.ops.common import (
    ATTENTION_DTYPES, LOG2E, clamped_span, dot as _dot, multiprocessor_count, next_power_of_2,
    online_softmax_step, paged_values_error, scaled_scores,
)
from seqguard.runtime.ops.launch import interpreter_required, launcher_for

MAX_KV_SPLITS_CAP = 64
# Past this many KV-head programs the fused merge's registers cost the streaming loop
# more than a second launch costs (H200, 64 x 8192: 549 us fused vs 513 two-stage).
FUSED_MERGE_MAX_PROGRAMS = 256


@dataclasses.dataclass(frozen=True, kw_only=True)
class DecodeConfig:
    block_n: int            # KV tokens per tile
    min_tiles: int          # tiles a chunk gets before another chunk is worth it
    num_warps: int
    num_stages: int
    programs_per_sm: int    # aim for the split cap
    fuse_reduce: bool = True  # merge in the last program (one launch) instead of a second kernel


@functools.lru_cache(maxsize=1024)
def decode_config(batch: int, num_kv_heads: int, head_dim: int, device: torch.device) -> DecodeConfig:
    """Block sizes by batch shape, from sweeps on the H200 (bf16, 32/8 heads, dim 128,
    BLOCK_N 16-128, 2-8 warps, 2-4 stages; BENCHMARKS.md):
    - one request: 64-token tiles, 2 tiles per chunk, 64 chunks, 4 warps, fused merge
      (1 x 4096: 18.7 us; 19.0 with a separate merge launch, which also costs a second
      host launch; with the earlier split-by-split merge the fused tail made it 22.0);
    - up to 64 KV-head programs: 64-token tiles, 8 tiles per chunk, 2 warps, fused merge
      (8 x 4096: 49.9 us vs 55.6 with 4 tiles per chunk);
    - up to 128 KV-head programs: 32-token tiles, 2 warps (16 x 32768: 510 us vs 549);
    - up to 256: 128-token tiles, 3 stages, still fused (32 x 4096: 144 us vs 148 two-stage);
    - more: two launches; the fused merge costs registers that streaming needs
      (64 x 8192: 513 us two-stage vs 549 fused).
    Off the GPU (Triton's interpreter runs programs one after another) small tiles keep
    it quick, and the merge follows the GPU's rule. `decode_attention_fwd(fuse_reduce=)`
    overrides the merge choice (tests cover both paths that way).
    """
    programs = batch * num_kv_heads
    if device.type != "cuda":
        return DecodeConfig(block_n=16, min_tiles=1, num_warps=4, num_stages=1, programs_per_sm=4,
                            fuse_reduce=programs <= FUSED_MERGE_MAX_PROGRAMS)
    if head_dim > 128:
        return DecodeConfig(block_n=32, min_tiles=2, num_warps=4, num_stages=2, programs_per_sm=8,
                            fuse_reduce=programs <= 64)
    if programs <= 8:
        return DecodeConfig(block_n=64, min_tiles=2, num_warps=4, num_stages=2, programs_per_sm=16)
    if programs <= 64:
        return DecodeConfig(block_n=64, min_tiles=8, num_warps=2, num_stages=2, programs_per_sm=8)
    if programs <= 128:
        return DecodeConfig(block_n=32, min_tiles=2, num_warps=2, num_stages=2, programs_per_sm=8)
    return DecodeConfig(block_n=128, min_tiles=1, num_warps=4, num_stages=3, programs_per_sm=4,
                        fuse_reduce=programs <= FUSED_MERGE_MAX_PROGRAMS)


@functools.lru_cache(maxsize=1024)
def default_max_kv_splits(batch_size: int, num_kv_heads: int, device: torch.device, head_dim: int = 128) -> int:
    """Host-side cap on chunks per request, from the batch shape only (never lengths)."""
    config = decode_config(batch_size, num_kv_heads, head_dim, device)
    target_programs = config.programs_per_sm * multiprocessor_count(device)
    wanted = triton.cdiv(target_programs, max(1, batch_size * num_kv_heads))
    return max(1, min(MAX_KV_SPLITS_CAP, next_power_of_2(wanted)))


@triton.jit
def _chunking(seq_len, max_splits, BLOCK_N: tl.constexpr, MIN_TILES: tl.constexpr):
    """How a request's KV is cut into chunks: tiles per chunk, and how many chunks hold
    a tile (trailing chunks can be empty). The decode kernel and the separate merge
    launch must agree on this, so both call it."""
    tiles = tl.cdiv(seq_len, BLOCK_N)
    num_splits = tl.maximum(tl.minimum(tl.cdiv(seq_len, BLOCK_N * MIN_TILES), max_splits), 1)
    tiles_per_split = tl.maximum(tl.cdiv(tiles, num_splits), 1)
    return tiles_per_split, tl.cdiv(tiles, tiles_per_split)


@triton.jit
def _merge_partials(part_out_ptr, part_lse_ptr, rows, used, mask_h, offs_dv, mask_dv,
                    HEAD_DIM_V: tl.constexpr, BLOCK_H: tl.constexpr, BLOCK_DV: tl.constexpr,
                    SPLIT_BLOCK: tl.constexpr, MERGE_CHUNK: tl.constexpr):
    """Log-sum-exp merge of `used` normalised partials per head row. The maximum comes
    first from one load of every split's lse, so the chunks that follow are
    independent loads the GPU keeps in flight together, not a chain of rescalings.
    .cg: read the other programs' partials from L2, never a stale L1 line."""
    offs_s = tl.arange(0, SPLIT_BLOCK)
    lse = tl.load(part_lse_ptr + rows[:, None] + offs_s[None, :],
                  mask=mask_h[:, None] & (offs_s[None, :] < used), other=float("-inf"), cache_modifier=".cg")
    m = tl.max(lse, 1)
    m = tl.where(m == float("-inf"), 0.0, m)  # padded head rows: nothing to merge
    total = tl.sum(tl.exp2(lse - m[:, None]), 1)
    merged = tl.zeros([BLOCK_H, BLOCK_DV], dtype=tl.float32)
    offs_c = tl.arange(0, MERGE_CHUNK)
    for first in range(0, used, MERGE_CHUNK):
        splits = first + offs_c
        mask_hs = mask_h[:, None] & (splits[None, :] < used)
        weight = tl.exp2(tl.load(part_lse_ptr + rows[:, None] + splits[None, :], mask=mask_hs,
                                 other=float("-inf"), cache_modifier=".cg") - m[:, None])
        part = tl.load(part_out_ptr + ((rows[:, None] + splits[None, :]) * HEAD_DIM_V)[:, :, None]
                       + offs_dv[None, None, :], mask=mask_hs[:, :, None] & mask_dv[None, None, :], other=0.0,
                       cache_modifier=".cg")
        merged += tl.sum(weight[:, :, None] * part, 1)
    total = tl.where(total == 0.0, 1.0, total)
    return merged / total[:, None]


# kv_capacity only bounds accesses: a specialisation on its value would compile a kernel
# per pool size and buy nothing.
@triton.jit(do_not_specialize=["kv_capacity"])
def _decode_kernel(
    q_ptr, k_ptr, v_ptr, kv_indptr_ptr, kv_indices_ptr, out_ptr, part_out_ptr, part_lse_ptr, counter_ptr,
    sm_scale, logit_cap, max_splits, split_stride, stride_q_b, stride_o_b, kv_capacity,
    NUM_KV_HEADS: tl.constexpr, GROUP: tl.constexpr, BLOCK_H: tl.constexpr,
    HEAD_DIM: tl.constexpr, BLOCK_D: tl.constexpr, HEAD_DIM_V: tl.constexpr, BLOCK_DV: tl.constexpr,
    BLOCK_N: tl.constexpr, MIN_TILES: tl.constexpr, HAS_CAP: tl.constexpr, DOT_F32: tl.constexpr,
    FUSE_REDUCE: tl.constexpr, SPLIT_BLOCK: tl.constexpr, MERGE_CHUNK: tl.constexpr,
):
    b = tl.program_id(0)
    kv_head = tl.program_id(1)
    split = tl.program_id(2)
    NUM_Q_HEADS: tl.constexpr = NUM_KV_HEADS * GROUP

    kv_start, seq_len = clamped_span(kv_indptr_ptr, b, kv_capacity)
    tiles_per_split, used = _chunking(seq_len, max_splits, BLOCK_N, MIN_TILES)

    offs_h = tl.arange(0, BLOCK_H)
    heads = kv_head * GROUP + offs_h
    mask_h = offs_h < GROUP
    offs_d = tl.arange(0, BLOCK_D)
    offs_dv = tl.arange(0, BLOCK_DV)
    mask_d = offs_d < HEAD_DIM
    mask_dv = offs_dv < HEAD_DIM_V
    mask_out = mask_h[:, None] & mask_dv[None, :]
    out_ptrs = out_ptr + b * stride_o_b + heads[:, None] * HEAD_DIM_V + offs_dv[None, :]

    if split < used:
        lo = split * tiles_per_split * BLOCK_N
        hi = tl.minimum(lo + tiles_per_split * BLOCK_N, seq_len)
        q = tl.load(q_ptr + b * stride_q_b + heads[:, None] * HEAD_DIM + offs_d[None, :],
                    mask=mask_h[:, None] & mask_d[None, :], other=0.0)
        m_i = tl.full([BLOCK_H], float("-inf"), dtype=tl.float32)
        l_i = tl.zeros([BLOCK_H], dtype=tl.float32)
        acc = tl.zeros([BLOCK_H, BLOCK_DV], dtype=tl.float32)
        k_base = k_ptr + kv_head * HEAD_DIM
        v_base = v_ptr + kv_head * HEAD_DIM_V
        for start_n in range(lo, hi, BLOCK_N):
            offs_n = start_n + tl.arange(0, BLOCK_N)
            mask_n = offs_n < hi
            slots = tl.load(kv_indices_ptr + kv_start + offs_n, mask=mask_n, other=0).to(tl.int64)
            # Slots are not masked against the cache's size: the mask cost 12-17% at every
            # bandwidth-bound shape of benchmarks/bench_decode.py (H200, 2026-12-04), and a
            # slot is the engine's own allocation, checked where value checks run.
            k = tl.load(k_base + slots[None, :] * (NUM_KV_HEADS * HEAD_DIM) + offs_d[:, None],
                        mask=mask_n[None, :] & mask_d[:, None], other=0.0)
            qk = scaled_scores(q, k, sm_scale, logit_cap, HAS_CAP, DOT_F32)
            qk = tl.where(mask_h[:, None] & mask_n[None, :], qk * LOG2E, float("-inf"))
            p, alpha, m_i, l_i = online_softmax_step(qk, m_i, l_i)
            v = tl.load(v_base + slots[:, None] * (NUM_KV_HEADS * HEAD_DIM_V) + offs_dv[None, :],
                        mask=mask_n[:, None] & mask_dv[None, :], other=0.0)
            acc = acc * alpha[:, None] + _dot(p.to(v.dtype), v, DOT_F32)
        l_safe = tl.where(l_i == 0.0, 1.0, l_i)
        rows = (b * NUM_Q_HEADS + heads).to(tl.int64) * split_stride
        if used == 1:
            tl.store(out_ptrs, (acc / l_safe[:, None]).to(out_ptr.dtype.element_ty), mask=mask_out)
        else:
            tl.store(part_out_ptr + (rows + split)[:, None] * HEAD_DIM_V + offs_dv[None, :],
                     acc / l_safe[:, None], mask=mask_out)
            tl.store(part_lse_ptr + rows + split, m_i + tl.log2(l_safe), mask=mask_h)  # base-2 log-sum-exp
        if FUSE_REDUCE:
            if used > 1:
                # Publish the partials, then count; the program that counts last merges.
                tl.debug_barrier()
                arrived = tl.atomic_add(counter_ptr + b * NUM_KV_HEADS + kv_head, 1, sem="acq_rel", scope="gpu")
                if arrived == used - 1:
                    merged = _merge_partials(part_out_ptr, part_lse_ptr, rows, used, mask_h, offs_dv, mask_dv,
                                             HEAD_DIM_V, BLOCK_H, BLOCK_DV, SPLIT_BLOCK, MERGE_CHUNK)
                    tl.store(out_ptrs, merged.to(out_ptr.dtype.element_ty), mask=mask_out)
                    tl.atomic_xchg(counter_ptr + b * NUM_KV_HEADS + kv_head, 0)  # ready for the next launch
    elif (split == 0) & (seq_len <= 0):
        tl.store(out_ptrs, tl.zeros([BLOCK_H, BLOCK_DV], dtype=out_ptr.dtype.element_ty), mask=mask_out)


@triton.jit(do_not_specialize=["kv_capacity"])
def _merge_kernel(
    part_out_ptr, part_lse_ptr, out_ptr, kv_indptr_ptr, max_splits, split_stride, stride_o_b, kv_capacity,
    NUM_KV_HEADS: tl.constexpr, GROUP: tl.constexpr, BLOCK_H: tl.constexpr, HEAD_DIM_V: tl.constexpr,
    BLOCK_DV: tl.constexpr, BLOCK_N: tl.constexpr, MIN_TILES: tl.constexpr, SPLIT_BLOCK: tl.constexpr,
    MERGE_CHUNK: tl.constexpr,
):
    """The reduction stage as its own launch, for large batches (see decode_config): the
    fused path's merge over the same rows, one program per request and KV head."""
    b = tl.program_id(0)
    kv_head = tl.program_id(1)
    NUM_Q_HEADS: tl.constexpr = NUM_KV_HEADS * GROUP
    _, seq_len = clamped_span(kv_indptr_ptr, b, kv_capacity)  # as the decode kernel saw it
    _, used = _chunking(seq_len, max_splits, BLOCK_N, MIN_TILES)
    if used > 1:  # a single chunk wrote the output itself
        offs_h = tl.arange(0, BLOCK_H)
        heads = kv_head * GROUP + offs_h
        mask_h = offs_h < GROUP
        offs_dv = tl.arange(0, BLOCK_DV)
        mask_dv = offs_dv < HEAD_DIM_V
        rows = (b * NUM_Q_HEADS + heads).to(tl.int64) * split_stride
        merged = _merge_partials(part_out_ptr, part_lse_ptr, rows, used, mask_h, offs_dv, mask_dv,
                                 HEAD_DIM_V, BLOCK_H, BLOCK_DV, SPLIT_BLOCK, MERGE_CHUNK)
        tl.store(out_ptr + b * stride_o_b + heads[:, None] * HEAD_DIM_V + offs_dv[None, :],
                 merged.to(out_ptr.dtype.element_ty), mask=mask_h[:, None] & mask_dv[None, :])


@dataclasses.dataclass
class DecodeWorkspace:
    """Per-chunk partial results and arrival counters; preallocate for CUDA graphs.
    The counters start at zero and the kernel leaves them at zero."""
    part_out: torch.Tensor   # [bs, Hq, max_splits, Dv] float32, contiguous
    part_lse: torch.Tensor   # [bs, Hq, max_splits] float32, contiguous
    counters: torch.Tensor   # [bs * Hkv] int32, zeros

    @classmethod
    def allocate(cls, max_bs: int, num_q_heads: int, max_splits: int, head_dim_v: int,
                 device: torch.device | str, num_kv_heads: Optional[int] = None) -> "DecodeWorkspace":
        return cls(torch.empty(max_bs, num_q_heads, max_splits, head_dim_v, dtype=torch.float32, device=device),
                   torch.empty(max_bs, num_q_heads, max_splits, dtype=torch.float32, device=device),
                   torch.zeros(max_bs * (num_kv_heads or num_q_heads), dtype=torch.int32, device=device))

    @property
    def max_splits(self) -> int:
        return self.part_lse.shape[2]


def _arguments_error(q, k_cache, v_cache, out, kv_indptr, kv_indices) -> Optional[Exception]:
    """The launcher's argument contract: None when the arguments fit, else the error
    naming the first that does not. It runs on every decode step, so the happy path is
    plain comparisons (devices as get_device() ints, cheaper than torch.device objects);
    messages are built only for a failure."""
    try:
        if q.dim() != 3 or q.dtype not in ATTENTION_DTYPES:
            return tensor_error("q", q, ndim=3, dtype=ATTENTION_DTYPES)
        dtype, device = q.dtype, q.get_device()
        if k_cache.dim() != 3 or k_cache.dtype != dtype or k_cache.get_device() != device:
            return _tensor_mismatch("k_cache", k_cache, 3, (dtype,), q)
        if v_cache.dim() != 3 or v_cache.dtype != dtype or v_cache.get_device() != device:
            return _tensor_mismatch("v_cache", v_cache, 3, (dtype,), q)
        if out.dim() != 3 or out.dtype != dtype or out.get_device() != device:
            return _tensor_mismatch("out", out, 3, (dtype,), q)
        if kv_indptr.dim() != 1 or kv_indptr.dtype not in INDEX_DTYPES or kv_indptr.get_device() != device:
            return _tensor_mismatch("kv_indptr", kv_indptr, 1, INDEX_DTYPES, q)
        if kv_indices.dim() != 1 or kv_indices.dtype not in INDEX_DTYPES or kv_indices.get_device() != device:
            return _tensor_mismatch("kv_indices", kv_indices, 1, INDEX_DTYPES, q)
    except AttributeError:  # an argument that is not a tensor
        for name, value in (("q", q), ("k_cache", k_cache), ("v_cache", v_cache), ("out", out),
                            ("kv_indptr", kv_indptr), ("kv_indices", kv_indices)):
            if not isinstance(value, torch.Tensor):
                return TypeError(f"{name}: expected a torch.Tensor, got {type(value).__name__}")
        raise
    batch, num_q_heads, head_dim = q.shape
    slots, num_kv_heads, k_dim = k_cache.shape
    if k_dim != head_dim:
        return tensor_error("k_cache", k_cache, shape=(None, None, head_dim))
    if num_q_heads % num_kv_heads:
        return ValueError(f"q: expected a multiple of the {num_kv_heads} KV heads, got {num_q_heads} query heads")
    v_slots, v_heads, head_dim_v = v_cache.shape
    if v_slots != slots or v_heads != num_kv_heads:
        return tensor_error("v_cache", v_cache, shape=(slots, num_kv_heads, None))
    if out.shape != (batch, num_q_heads, head_dim_v):
        return tensor_error("out", out, shape=(batch, num_q_heads, head_dim_v))
    if kv_indptr.shape[0] < batch + 1:
        return ValueError(f"kv_indptr: expected at least {batch + 1} elements (batch + 1), got {kv_indptr.shape[0]}")
    if not (k_cache.is_contiguous() and v_cache.is_contiguous()):
        return ValueError("k_cache, v_cache: expected contiguous caches; call .contiguous()")
    if q.stride(2) != 1 or q.stride(1) != head_dim or out.stride(2) != 1 or out.stride(1) != head_dim_v:
        return ValueError(f"q, out: expected contiguous heads and head dims, got strides {q.stride()} and "
                          f"{out.stride()}; call .contiguous()")
    return interpreter_required(_decode_kernel, device) if device < 0 else None


def _tensor_mismatch(name: str, tensor: torch.Tensor, ndim: int, dtypes: tuple, q: torch.Tensor) -> Exception:
    return tensor_error(name, tensor, ndim=ndim, dtype=dtypes, device=q.device) or ValueError(
        f"{name}: expected a tensor on {q.device}, got {tensor.device}; move it with .to(device)")


def decode_attention_fwd(q: torch.Tensor, k_cache: torch.Tensor, v_cache: torch.Tensor, out: torch.Tensor,
                         kv_indptr: torch.Tensor, kv_indices: torch.Tensor, *, sm_scale: float,
                         logit_cap: float = 0.0, max_kv_splits: Optional[int] = None,
                         workspace: Optional[DecodeWorkspace] = None,
                         fuse_reduce: Optional[bool] = None) -> torch.Tensor:
    """Paged decode. q, out: [B, Hq, D] (heads and dim contiguous); k_cache: [T, Hkv, D]
    and v_cache: [T, Hkv, Dv], contiguous; kv_indptr: [>= B+1] (request b reads
    kv_indices[kv_indptr[b]:kv_indptr[b+1]]); kv_indices: token slots. Returns `out`.
    Offsets past kv_indices and slots past the cache are a ValueError where value checks
    run (seqguard.runtime.checks); elsewhere the kernel clamps each request's span inside
    kv_indices, and trusts the slots (the engine's own allocation).
    `fuse_reduce`: merge the split partials in the decode launch (True) or in a second
    launch (False); None lets `decode_config` choose by batch shape."""
    error = _arguments_error(q, k_cache, v_cache, out, kv_indptr, kv_indices)
    if error is not None:
        raise error
    batch, num_q_heads, head_dim = q.shape
    if batch == 0:
        return out
    if checks_values(kv_indptr):
        error = paged_values_error(kv_indptr, kv_indices, batch, k_cache.shape[0])
        if error is not None:
            raise error
    num_kv_heads, head_dim_v = k_cache.shape[1], v_cache.shape[2]
    if workspace is None:
        if max_kv_splits is None:
            max_kv_splits = default_max_kv_splits(batch, num_kv_heads, q.device, head_dim)
        workspace = DecodeWorkspace.allocate(batch, num_q_heads, max_kv_splits, head_dim_v, q.device, num_kv_heads)
    else:
        if max_kv_splits is None:
            max_kv_splits = workspace.max_splits
        part_shape = workspace.part_out.shape
        if part_shape[0] < batch or part_shape[2] < max_kv_splits or part_shape[1] != num_q_heads \
                or part_shape[3] != head_dim_v or workspace.counters.shape[0] < batch * num_kv_heads:
            raise ValueError(f"workspace: expected room for {batch} x {num_q_heads} heads x {max_kv_splits} "
                             f"splits x {head_dim_v}, got {tuple(part_shape)}")
    plan = _launch_plan(batch, num_q_heads, num_kv_heads, head_dim, head_dim_v, max_kv_splits, q.device,
                        logit_cap > 0, fuse_reduce)
    split_stride = workspace.part_out.shape[2]  # the allocation may hold more splits than this launch's cap
    kv_capacity = kv_indices.shape[0]
    _DECODE[(batch, num_kv_heads, max_kv_splits)](
        q, k_cache, v_cache, kv_indptr, kv_indices, out, workspace.part_out, workspace.part_lse,
        workspace.counters, sm_scale, logit_cap, max_kv_splits, split_stride, q.stride(0), out.stride(0),
        kv_capacity, **plan.decode_args)
    if plan.merge_args is not None and max_kv_splits > 1:
        _MERGE[(batch, num_kv_heads)](
            workspace.part_out, workspace.part_lse, out, kv_indptr, max_kv_splits, split_stride, out.stride(0),
            kv_capacity, **plan.merge_args)
    return out


@dataclasses.dataclass(frozen=True)
class _LaunchPlan:
    decode_args: dict            # constexprs and launch options of the split-KV kernel
    merge_args: Optional[dict]   # those of the separate merge launch, None when fused


@functools.lru_cache(maxsize=1024)
def _launch_plan(batch: int, num_q_heads: int, num_kv_heads: int, head_dim: int, head_dim_v: int,
                 max_kv_splits: int, device: torch.device, has_cap: bool,
                 fuse_reduce: Optional[bool] = None) -> _LaunchPlan:
    """Everything about a launch that follows from the batch shape, computed once per shape."""
    config = decode_config(batch, num_kv_heads, head_dim, device)
    fused = config.fuse_reduce if fuse_reduce is None else fuse_reduce
    group = num_q_heads // num_kv_heads
    block_h = max(16, next_power_of_2(group))  # tl.dot needs 16 rows
    decode_args = dict(
        NUM_KV_HEADS=num_kv_heads, GROUP=group, BLOCK_H=block_h,
        HEAD_DIM=head_dim, BLOCK_D=next_power_of_2(head_dim), HEAD_DIM_V=head_dim_v,
        BLOCK_DV=next_power_of_2(head_dim_v), BLOCK_N=config.block_n, MIN_TILES=config.min_tiles,
        HAS_CAP=has_cap, DOT_F32=device.type != "cuda", FUSE_REDUCE=fused,
        SPLIT_BLOCK=next_power_of_2(max_kv_splits),
        # split chunks per merge step: a [BLOCK_H, chunk, BLOCK_DV] float32 tile of at most 8K values
        MERGE_CHUNK=max(1, min(next_power_of_2(max_kv_splits), 8192 // (block_h * next_power_of_2(head_dim_v)))),
        num_warps=config.num_warps, num_stages=config.num_stages)
    # the separate merge runs the fused path's merge over the same rows and tiles
    shared = ("NUM_KV_HEADS", "GROUP", "BLOCK_H", "HEAD_DIM_V", "BLOCK_DV", "BLOCK_N", "MIN_TILES", "SPLIT_BLOCK",
              "MERGE_CHUNK")
    merge_args = None if fused else dict({name: decode_args[name] for name in shared}, num_warps=4, num_stages=1)
    return _LaunchPlan(decode_args, merge_args)


_DECODE = launcher_for(_decode_kernel)
_MERGE = launcher_for(_merge_kernel)
