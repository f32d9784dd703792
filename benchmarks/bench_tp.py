"""`seqguard bench --tp 1` and `--tp 2` on one preset, in one call, and everything
BENCHMARKS.md's tensor-parallel section needs: each run's table (the per-rank rows
included), a summary row per run, and how the tp=2 tokens compare with tp=1's.

Why two comparisons: within one run the mirror and the decided runs execute the same
program on the same shards, so their tokens must be identical (the bench exits 1
otherwise). Across tp=1 and tp=2 the all-reduce adds the ranks' partial products in a
different order than the unsharded matmul, so low bits can differ; greedy argmax hides
that unless two logits nearly tie, and one flipped token changes the rest of that
request. That rate is measured here, not assumed.

Usage (on the GPU machine, CUDA graphs on as in serving; one call):

    PYTHONPATH=src python3 benchmarks/bench_tp.py --preset gpu-bound --out "$OUT"
    PYTHONPATH=src python3 benchmarks/bench_tp.py --preset gpu-bound --no-cuda-graphs   # fallback
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import List, Optional


def run(tp: int, args, out: Path) -> Optional[dict]:
    tokens = out / f"tokens_tp{tp}.json"
    command = [sys.executable, "-m", "seqguard", "bench", "--preset", args.preset, "--tp", str(tp), "--format", "json",
               "--tokens-out", str(tokens), "--tp-timeout", str(args.tp_timeout)]
    if args.no_cuda_graphs:
        command.append("--no-cuda-graphs")
    if args.device:
        command += ["--device", args.device]
    command += args.extra
    print(f"$ {' '.join(command[1:])}", flush=True)
    started = time.monotonic()
    # Its own session, so a timeout stops the launcher and the ranks it started together.
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    try:
        stdout, stderr = proc.communicate(timeout=args.run_timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        print(f"tp={tp}: did not finish within --run-timeout {args.run_timeout:g} s (stopped with its ranks)\n",
              flush=True)
        return None
    done = subprocess.CompletedProcess(command, proc.returncode, stdout, stderr)
    wall = time.monotonic() - started
    (out / f"report_tp{tp}.json").write_text(done.stdout)
    (out / f"stderr_tp{tp}.txt").write_text(done.stderr)
    if done.returncode not in (0, 1) or not done.stdout.strip():
        print(f"tp={tp}: exit code {done.returncode} after {wall:.0f} s; stderr:\n{done.stderr}", flush=True)
        return None
    report = json.loads(done.stdout)
    report["_wall_s"], report["_exit"] = wall, done.returncode
    report["_tokens"] = json.loads(tokens.read_text())
    from seqguard.bench.runner import render_table
    print(f"tp={tp} (exit code {done.returncode}, {wall:.0f} s including start-up):\n{render_table(report)}\n",
          flush=True)
    return report


def compare(reference: List[List[int]], other: List[List[int]]) -> str:
    same_requests = sum(a == b for a, b in zip(reference, other))
    positions = sum(min(len(a), len(b)) for a, b in zip(reference, other))
    equal = sum(x == y for a, b in zip(reference, other) for x, y in zip(a, b))
    firsts = [next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), None) for a, b in zip(reference, other)]
    diverged = [(rid, i) for rid, i in enumerate(firsts) if i is not None]
    where = ", ".join(f"request {rid} at token {i}" for rid, i in diverged[:5])
    return (f"{same_requests}/{len(reference)} requests identical; {equal}/{positions} tokens equal position by "
            f"position" + (f"; first divergences: {where}" if diverged else ""))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--preset", default="gpu-bound", choices=["tiny", "cpu-bound", "gpu-bound"])
    parser.add_argument("--tp", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--device", choices=["cpu", "cuda"])
    parser.add_argument("--no-cuda-graphs", action="store_true", help="launch every kernel eagerly (fallback)")
    parser.add_argument("--tp-timeout", type=float, default=300.0, help="seconds a collective may wait for a rank")
    parser.add_argument("--run-timeout", type=float, default=280.0, help="seconds each bench run may take in all")
    parser.add_argument("--out", type=Path, default=Path(os.environ.get("OUT", ".")),
                        help="where the reports, tokens and stderr go (default $OUT, else .)")
    parser.add_argument("extra", nargs="*", help="more `seqguard bench` options, after --")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    import torch
    print(f"torch {torch.__version__}; triton {_version('triton')}; GPUs: "
          f"{[torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]}; "
          f"NCCL_NVLS_ENABLE={os.environ.get('NCCL_NVLS_ENABLE', '(unset)')}\n", flush=True)
    reports = {tp: run(tp, args, args.out) for tp in args.tp}
    print("| tp | device | CUDA graphs | decision per rank (before OR) | mirror step ms | decided step ms | "
          "speedup (rank 0) | speedup per rank | overlap ratio per rank | D2H syncs/step decided, per rank | "
          "sentinel-checked steps | identical tokens (mirror vs decided, all ranks) | tokens vs tp=1 | wall s |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    reference = reports.get(1)
    for tp, report in reports.items():
        if report is None:
            print(f"| {tp} | (failed or timed out: see above) |")
            continue
        mirror, decided = report["runs"]
        ranks = report.get("ranks") or [{"speedup": report["speedup"], "overlap_ratio": report["overlap_ratio"],
                                         "host_pulls_per_step": {"decided": decided["host_pulls_per_step"]},
                                         "sentinel_checked_steps": decided["sentinel_checked_steps"],
                                         "decision_before_reduce": decided["needs_cpu_seq_lens"]}]
        versus = "(reference)" if tp == 1 else (compare(reference["_tokens"], report["_tokens"])
                                                if reference else "(no tp=1 run)")
        print(f"| {tp} | {report['device']} | {mirror['cuda_graphs']} | "
              f"{report.get('decision_per_rank', [ranks[0]['decision_before_reduce']])} | "
              f"{mirror['step_ms_mean']:.2f} | {decided['step_ms_mean']:.2f} | {_x(report['speedup'])} | "
              f"{', '.join(_x(r['speedup']) for r in ranks)} | "
              f"{', '.join(_f(r['overlap_ratio']) for r in ranks)} | "
              f"{', '.join(format(r['host_pulls_per_step']['decided'], '.2f') for r in ranks)} | "
              f"{', '.join(str(r['sentinel_checked_steps']) for r in ranks)} | {report['identical_tokens']} | "
              f"{versus} | {report['_wall_s']:.0f} |")


def _x(value) -> str:
    return "-" if value is None else f"{value:.2f}x"


def _f(value) -> str:
    return "-" if value is None else f"{value:.2f}"


def _version(name: str) -> str:
    try:
        return __import__(name).__version__
    except ImportError:
        return "(not installed)"


if __name__ == "__main__":
    main()
