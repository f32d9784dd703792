"""`seqguard bench` presets beside the synthetic loop at the same CPU/GPU split, in
one run: each preset runs `--repeat` times (mirror forced on vs the decision), then
the synthetic loop (bench_synthetic.py) is timed with that preset's measured host
work between the length sync and the decode launch, after the launch, and device
time per step (medians over the repeats' decided runs). Usage (CUDA only):

    python benchmarks/bench_e2e.py                     # gpu-bound and cpu-bound, 3 repeats
    python benchmarks/bench_e2e.py --preset cpu-bound --repeat 5
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_synthetic import cycles_per_ms_of_sleep, run_loop  # noqa: E402

from seqguard.runtime.serving.bench import PRESETS, render_table, run_bench  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--preset", action="append", choices=sorted(set(PRESETS) - {"tiny"}))
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--no-cuda-graphs", action="store_true", help="launch decode steps eagerly")
    args = parser.parse_args()
    device = torch.device("cuda")
    rows = []
    for name in args.preset or ["gpu-bound", "cpu-bound"]:
        workload = dataclasses.replace(PRESETS[name], cuda_graphs=not args.no_cuda_graphs)
        reports = []
        for i in range(args.repeat):
            report = run_bench(workload, device)
            print(f"{name}, repeat {i + 1}:\n{render_table(report)}\n")
            sys.stdout.flush()
            reports.append(report)
        decided = [r["runs"][1] for r in reports]
        cpu_ms = statistics.median(r["cpu_only_ms"] for r in decided)
        gpu_ms = statistics.median(r["gpu_only_ms"] for r in decided)
        pre_ms = statistics.median(r["host_pre_launch_ms"] for r in decided)
        prefill_ms = statistics.median(r["prefill_gpu_ms"] for r in decided)
        rows.append((name, reports, cpu_ms, gpu_ms, pre_ms, prefill_ms))
    cycles = cycles_per_ms_of_sleep()
    print("| preset | CPU-only ms | GPU-only ms | CPU/GPU | speedup, each repeat | syncs/step (decided) | "
          "identical tokens | synthetic split: prep / post / GPU (of it prefill) ms | synthetic speedup, "
          "device idle through the window | synthetic speedup, prefill queued at its start |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for name, reports, cpu_ms, gpu_ms, prep, prefill in rows:
        post = max(cpu_ms - prep, 0.0)  # measured: host work between the length sync and the launch, and after

        def speedup(prefill_ms):
            return (run_loop(prep, post, gpu_ms, True, cycles, prefill_ms)
                    / run_loop(prep, post, gpu_ms, False, cycles, prefill_ms))

        speedups = ", ".join(f"{r['speedup']:.2f}x" for r in reports)
        syncs = max(r["runs"][1]["host_pulls_per_step"] for r in reports)
        identical = all(r["identical_tokens"] for r in reports)
        print(f"| {name} | {cpu_ms:.2f} | {gpu_ms:.2f} | {cpu_ms / gpu_ms:.2f} | {speedups} | {syncs:.2f} | "
              f"{identical} | {prep:.2f} / {post:.2f} / {gpu_ms:.2f} ({prefill:.2f}) | {speedup(0.0):.2f}x | "
              f"{speedup(prefill):.2f}x |")


if __name__ == "__main__":
    main()
