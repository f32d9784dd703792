"""Paged decode attention on the GPU: seqguard's Triton kernel vs PyTorch SDPA on a
contiguous, unpaged cache, measured in the same run; SGLang's numbers (measured by
the team on the same H200 with the same setting) are printed beside them.

Setting: bf16, 32 query heads, 8 KV heads, head dim 128, page size 1, KV slots
randomly permuted. Median kernel time via triton.testing.do_bench (which flushes
L2 between runs). Usage:

    python benchmarks/bench_decode.py            # the table
    python benchmarks/bench_decode.py --sweep    # also try block configs, print the best per row
"""

from __future__ import annotations

import argparse
import itertools
import sys
import time

import torch
import torch.nn.functional as F
import triton

from seqguard.runtime.ops import decode_attention as decode_module
from seqguard.runtime.ops import launch
from seqguard.runtime.ops.decode_attention import DecodeWorkspace, decode_attention_fwd, default_max_kv_splits

HQ, HKV, D = 32, 8, 128
ROWS = [(1, 4096), (8, 4096), (32, 4096), (64, 8192), (128, 4096), (16, 32768), (256, 2048)]
# µs, from the issue (SGLang 0.4.6.post5 best of 8/16 splits; SGLang 0.5.23 own heuristic; SDPA)
GIVEN = {(1, 4096): (30.8, 31.4, 16.8), (8, 4096): (59.8, 54.8, 49.2), (32, 4096): (163.8, 200.1, 136.0),
         (64, 8192): (545.2, 755.4, 494.8), (128, 4096): (549.3, 776.6, 500.3),
         (16, 32768): (615.4, 634.7, 484.7), (256, 2048): (577.7, 629.8, 492.4)}


def make_case(batch, context, seed=0):
    g = torch.Generator(device="cuda").manual_seed(seed)
    total = batch * context
    slots = total + 1024
    k_cache = torch.randn(slots, HKV, D, dtype=torch.bfloat16, device="cuda", generator=g)
    v_cache = torch.randn(slots, HKV, D, dtype=torch.bfloat16, device="cuda", generator=g)
    indices = torch.randperm(slots, device="cuda", generator=g)[:total].to(torch.int32)
    indptr = torch.arange(0, total + 1, context, dtype=torch.int32, device="cuda")
    q = torch.randn(batch, HQ, D, dtype=torch.bfloat16, device="cuda", generator=g)
    return q, k_cache, v_cache, indptr, indices


def time_us(fn):
    return triton.testing.do_bench(fn, warmup=25, rep=200, return_mode="median") * 1000


def graph_time_us(fn):
    """The same call replayed from a CUDA graph: GPU time without Python launch cost."""
    return triton.testing.do_bench_cudagraph(fn, rep=200, return_mode="median") * 1000


def launch_cost_us(fn, calls=300):
    """Host time per call when the GPU is not the bottleneck (queued, not waited for)."""
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(calls):
        fn()
    host = (time.perf_counter() - start) / calls * 1e6
    torch.cuda.synchronize()
    return host


def run_ours(q, k_cache, v_cache, indptr, indices, detail=False):
    batch = q.shape[0]
    splits = default_max_kv_splits(batch, HKV, q.device, D)
    workspace = DecodeWorkspace.allocate(batch, HQ, splits, D, q.device, HKV)
    out = torch.empty_like(q)
    def fn():
        return decode_attention_fwd(q, k_cache, v_cache, out, indptr, indices, sm_scale=D ** -0.5,
                                    max_kv_splits=splits, workspace=workspace)

    fn()
    if not detail:
        return out, time_us(fn), splits
    eager, host = time_us(fn), launch_cost_us(fn)
    launch.ENABLED = False  # the same call through Triton's own launch path, in the same run
    try:
        fn()
        eager_jit, host_jit = time_us(fn), launch_cost_us(fn)
    finally:
        launch.ENABLED = True
    return out, eager, splits, graph_time_us(fn), host, eager_jit, host_jit


def run_sdpa(q, k_cache, v_cache, indices, batch, context):
    rows = indices.long().view(batch, context)
    k = k_cache[rows].permute(0, 2, 1, 3).contiguous()  # [B, Hkv, L, D], unpaged
    v = v_cache[rows].permute(0, 2, 1, 3).contiguous()
    q4 = q.unsqueeze(2)
    def fn():
        return F.scaled_dot_product_attention(q4, k, v, enable_gqa=True)

    out = fn()
    return out.squeeze(2), time_us(fn)


def warm_up(seconds: float = 1.0) -> None:
    """Run the smallest case untimed first: the first row otherwise pays for a cold
    host (its launch cost measured twice the later rows' in earlier runs)."""
    q, k_cache, v_cache, indptr, indices = make_case(*ROWS[0])
    out = torch.empty_like(q)
    until = time.perf_counter() + seconds
    while time.perf_counter() < until:
        decode_attention_fwd(q, k_cache, v_cache, out, indptr, indices, sm_scale=D ** -0.5)
    torch.cuda.synchronize()


def table(sweep: bool) -> None:
    warm_up()
    name = torch.cuda.get_device_name()
    print(f"device: {name}; torch {torch.__version__}; triton {triton.__version__}")
    print("| batch x context | seqguard (µs) | in a CUDA graph (µs) | host launch (µs) | "
          "via Triton's launch path (µs) | its host launch (µs) | splits | TB/s | "
          "SDPA here (µs) | seqguard/SDPA | SGLang 0.4.6.post5 (given) | SGLang 0.5.23 (given) | rel. err vs SDPA |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for batch, context in ROWS:
        q, k_cache, v_cache, indptr, indices = make_case(batch, context)
        ours, t_ours, splits, t_graph, t_host, t_jit, t_host_jit = run_ours(q, k_cache, v_cache, indptr, indices,
                                                                            detail=True)
        ref, t_sdpa = run_sdpa(q, k_cache, v_cache, indices, batch, context)
        err = ((ours.float() - ref.float()).norm() / ref.float().norm()).item()
        tbps = batch * context * HKV * D * 2 * 2 / (t_ours * 1e-6) / 1e12
        s1, s2, _ = GIVEN[(batch, context)]
        print(f"| {batch} x {context} | {t_ours:.1f} | {t_graph:.1f} | {t_host:.1f} | {t_jit:.1f} | "
              f"{t_host_jit:.1f} | {splits} | {tbps:.2f} | "
              f"{t_sdpa:.1f} | {t_ours / t_sdpa:.2f} | {s1} | {s2} | {err:.1e} |")
        sys.stdout.flush()
        if sweep and batch * HKV <= 256:
            sweep_row(q, k_cache, v_cache, indptr, indices, t_ours)
        del q, k_cache, v_cache, indptr, indices, ours, ref
        torch.cuda.empty_cache()


def _clear_plan_caches():
    """The launch plan and the split cap are cached per shape; a sweep changes what they derive from."""
    decode_module._launch_plan.cache_clear()
    decode_module.default_max_kv_splits.cache_clear()


def sweep_row(q, k_cache, v_cache, indptr, indices, baseline):
    original = decode_module.decode_config
    results = []
    try:
        for block_n, min_tiles, warps, stages, pps, fuse in itertools.product(
                (32, 64), (1, 2, 4, 8), (2, 4), (2,), (8, 16), (True, False)):
            config = decode_module.DecodeConfig(block_n=block_n, min_tiles=min_tiles, num_warps=warps,
                                                num_stages=stages, programs_per_sm=pps, fuse_reduce=fuse)
            decode_module.decode_config = lambda *a, c=config: c
            _clear_plan_caches()
            try:
                _, t, splits = run_ours(q, k_cache, v_cache, indptr, indices)
            except Exception:  # a config that does not fit
                continue
            results.append((t, config, splits))
    finally:
        decode_module.decode_config = original
        _clear_plan_caches()
    results.sort(key=lambda r: r[0])
    for t, config, splits in results[:3]:
        print(f"|   sweep: {config} splits={splits} | {t:.1f} | | | | | | | | {t / baseline:.2f} of default | | | |")
    sys.stdout.flush()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--sweep", action="store_true")
    table(parser.parse_args().sweep)
