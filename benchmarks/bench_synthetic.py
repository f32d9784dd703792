"""The synthetic overlap loop: what removing the per-step length sync can buy at a
given CPU/GPU ratio, with nothing but busy-waits on the host and a sleep kernel on
the device. It has the scheduler's shape (seqguard.bench.scheduler):

    [mirror: wait for the previous step]  prep (needs the lengths)  launch G  post

and, like the scheduler, reads step N-1's tokens after launching step N (so the host
runs at most one step ahead). With the mirror a step costs about prep + max(G, post)
(the device idles during prep); without it max(prep + post, G). bench_e2e.py
compares `seqguard bench` presets against this loop at their mean split and against
a replay of their recorded per-step work. Usage (CUDA only):

    python benchmarks/bench_synthetic.py
"""

from __future__ import annotations

import statistics
import time
from typing import List, Sequence, Tuple

import torch

STEPS = 60
WARMUP = 5
# (prep ms, post ms, GPU ms): GPU-bound rows first, then CPU-bound rows
ROWS = [(0.5, 0.0, 8.0), (2.0, 0.0, 8.0), (2.0, 2.0, 8.0), (4.0, 2.0, 8.0), (6.0, 1.0, 8.0),
        (5.0, 0.5, 4.0), (4.0, 2.0, 4.0), (2.0, 4.0, 4.0), (8.0, 0.5, 2.0), (10.0, 0.5, 0.5)]


def _busy(ms: float) -> None:
    until = time.perf_counter() + ms / 1000
    while time.perf_counter() < until:
        pass


def cycles_per_ms_of_sleep() -> float:
    """Calibrate torch.cuda._sleep (it spins for a number of GPU clock cycles)."""
    torch.cuda._sleep(1_000_000)
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    torch.cuda._sleep(20_000_000)
    end.record()
    end.synchronize()
    return 20_000_000 / start.elapsed_time(end)


def replay(steps: Sequence[Tuple[float, float, float, float]], mirror: bool, cycles_per_ms: float) -> List[float]:
    """Run the scheduler's shape once per step (prep ms, post ms, prefill ms, decode ms)
    and return each step's wall time in ms. Like the scheduler, the host reads step
    N-1's tokens after launching step N, so it runs at most one step ahead of the
    device; a step's prefill is queued at the start of its pre-launch window (the
    scheduler admits requests right after the length sync), its decode at the launch."""
    lengths = torch.zeros(64, dtype=torch.int32, device="cuda")
    previous = None
    wall = []
    torch.cuda.synchronize()
    for prep_ms, post_ms, prefill_ms, decode_ms in steps:
        start = time.perf_counter()
        if mirror and previous is not None:
            lengths.to("cpu")  # the mirror: copy step N-1's lengths to the host before preparing step N
        if prefill_ms > 0:
            torch.cuda._sleep(int(prefill_ms * cycles_per_ms))
        _busy(prep_ms)
        torch.cuda._sleep(int(decode_ms * cycles_per_ms))
        lengths.add_(1)
        done = torch.cuda.Event()
        done.record()
        if previous is not None:
            previous.synchronize()  # step N-1's tokens (both modes)
        previous = done
        _busy(post_ms)
        wall.append((time.perf_counter() - start) * 1000)
    torch.cuda.synchronize()
    return wall


def run_loop(prep_ms: float, post_ms: float, gpu_ms: float, mirror: bool, cycles_per_ms: float) -> float:
    """Median step time in ms of STEPS identical steps, all device work at the launch."""
    wall = replay([(prep_ms, post_ms, 0.0, gpu_ms)] * (STEPS + WARMUP), mirror, cycles_per_ms)
    return statistics.median(wall[WARMUP:])


def replay_mean(trace: Sequence[Tuple[float, float, float, float]], mirror: bool, cycles_per_ms: float) -> float:
    """Mean step time in ms of a recorded trace (seqguard bench's per-step work, which
    is heavy-tailed: a prefill lands on some steps), after replaying its first steps
    once to warm up."""
    replay(trace[:WARMUP], mirror, cycles_per_ms)
    return statistics.fmean(replay(trace, mirror, cycles_per_ms))


def main() -> None:
    cycles = cycles_per_ms_of_sleep()
    print(f"device: {torch.cuda.get_device_name()}; torch {torch.__version__}")
    print("| prep ms (needs lengths) | post ms | GPU ms | CPU/GPU | mirror step ms | decided step ms | speedup |")
    print("|---|---|---|---|---|---|---|")
    for prep, post, gpu in ROWS:
        mirror = run_loop(prep, post, gpu, True, cycles)
        decided = run_loop(prep, post, gpu, False, cycles)
        print(f"| {prep} | {post} | {gpu} | {(prep + post) / gpu:.2f} | {mirror:.2f} | {decided:.2f} | "
              f"{mirror / decided:.2f}x |")


if __name__ == "__main__":
    main()
