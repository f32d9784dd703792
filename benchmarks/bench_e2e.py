"""`seqguard bench` presets beside the synthetic loop (bench_synthetic.py), in one run.
Each preset runs `--repeat` times (mirror forced on vs the decision); then, from the
decided runs, the synthetic loop is timed two ways:

- at the preset's mean split (host ms before the decode launch, after it, device ms
  per step), with all device work at the launch: the loop the issue quotes, which
  idles the device through the whole pre-launch window when the mirror is on;
- replaying the decided run's recorded steps one by one (each step's host time
  before and after the launch, its prefill device time queued at the window's
  start as the scheduler queues it, its decode device time at the launch).

Usage (CUDA only):

    python benchmarks/bench_e2e.py                     # gpu-bound and cpu-bound, 3 repeats
    python benchmarks/bench_e2e.py --preset cpu-bound --repeat 5
    python benchmarks/bench_e2e.py --decode-only       # the control: no prefill in the window
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_synthetic import cycles_per_ms_of_sleep, replay_mean, run_loop  # noqa: E402

from seqguard.bench.runner import PRESETS, render_table, run_bench  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--preset", action="append", choices=sorted(set(PRESETS) - {"tiny"}))
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--no-cuda-graphs", action="store_true", help="launch decode steps eagerly")
    parser.add_argument("--decode-only", action="store_true",
                        help="admit every request at the first step, so no prefill runs in a timed step")
    args = parser.parse_args()
    device = torch.device("cuda")
    presets = []
    for name in args.preset or ["gpu-bound", "cpu-bound"]:
        workload = dataclasses.replace(PRESETS[name], cuda_graphs=not args.no_cuda_graphs)
        if args.decode_only:
            workload = dataclasses.replace(workload, requests=workload.max_running)
        reports = []
        for i in range(args.repeat):
            report = run_bench(workload, device, with_trace=True)
            print(f"{name}, repeat {i + 1}:\n{render_table(report)}\n")
            sys.stdout.flush()
            reports.append(report)
        presets.append((name, reports))
    cycles = cycles_per_ms_of_sleep()
    print("| preset | CPU-only ms | GPU-only ms | CPU/GPU | speedup, each repeat | syncs/step (decided) | "
          "identical tokens | mean split: prep / post / GPU ms | synthetic speedup at the mean split | "
          "synthetic speedup replaying each repeat's steps | mirror / decided step ms, each repeat: real (replayed) |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for name, reports in presets:
        decided = [r["runs"][1] for r in reports]
        cpu_ms = statistics.median(r["cpu_only_ms"] for r in decided)
        gpu_ms = statistics.median(r["gpu_only_ms"] for r in decided)
        prep = statistics.median(r["host_pre_launch_ms"] for r in decided)
        post = max(cpu_ms - prep, 0.0)
        at_split = run_loop(prep, post, gpu_ms, True, cycles) / run_loop(prep, post, gpu_ms, False, cycles)
        replayed = [(replay_mean(r["step_trace"], True, cycles), replay_mean(r["step_trace"], False, cycles))
                    for r in decided]
        steps_ms = ", ".join(f"{m['step_ms_mean']:.2f} ({rm:.2f}) / {d['step_ms_mean']:.2f} ({rd:.2f})"
                             for (m, d), (rm, rd) in zip((r["runs"] for r in reports), replayed))
        speedups = ", ".join(f"{r['speedup']:.2f}x" for r in reports)
        syncs = max(r["host_pulls_per_step"] for r in decided)
        identical = all(r["identical_tokens"] for r in reports)
        print(f"| {name} | {cpu_ms:.2f} | {gpu_ms:.2f} | {cpu_ms / gpu_ms:.2f} | {speedups} | {syncs:.2f} | "
              f"{identical} | {prep:.2f} / {post:.2f} / {gpu_ms:.2f} | {at_split:.2f}x | "
              f"{', '.join(f'{rm / rd:.2f}x' for rm, rd in replayed)} | {steps_ms} |")


if __name__ == "__main__":
    main()
