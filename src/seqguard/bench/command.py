"""What `seqguard bench` does, outside the command line: check the options against
the machine, then run in this process (`--tp 1`), start the ranks (`--tp N`: the
launcher), or run as one rank (under torchrun or the launcher). The CLI parses the
options into `BenchOptions`, calls `run_command` and prints the `BenchOutcome`."""

from __future__ import annotations

import dataclasses
import os
from typing import Optional, Sequence

# What to install when torch is missing (the bench is the only command that needs it).
NEEDS_TORCH = ("seqguard bench needs torch and triton; install the runtime extra: from a checkout, "
               "pip install torch==2.13.0 && pip install -e '.[runtime]' (once seqguard is on PyPI: "
               "pip install 'seqguard[runtime]')")


@dataclasses.dataclass(frozen=True)
class BenchOptions:
    device: Optional[str] = None          # cpu | cuda | None (the GPU when there is one)
    preset: Optional[str] = None          # tiny | cpu-bound | gpu-bound | None (by device)
    model_changes: tuple = ()             # (field, value) pairs for the model
    workload_changes: tuple = ()          # (field, value) pairs for the workload
    repeats: Optional[int] = None
    tp: int = 1
    force_mirror_rank: Optional[int] = None
    tp_timeout: float = 300.0
    inject_fault: Optional[str] = None    # "R:raise" | "R:hang": rank R fails (the no-hang tests)
    rank_argv: Sequence[str] = ()         # the command each spawned rank runs (device appended)


@dataclasses.dataclass(frozen=True)
class BenchOutcome:
    """What to print and the exit code. `report` (with `outputs`, every request's
    tokens) is rank 0's or the single process's; `passthrough` is rank 0's output when
    this process launched the ranks; `abort` means exit at once, without destructors
    (after a failed collective, tearing down gloo or NCCL can abort or block)."""
    exit_code: int
    report: Optional[dict] = None
    passthrough: str = ""
    error: Optional[str] = None           # what went wrong, without `error: ` (the CLI words it)
    abort: bool = False
    # the failure, kept alive until the process exits: freeing its traceback would run
    # the destructors of the rank's tensors and process group, which can block after a
    # failed collective (os._exit skips them only while nothing has freed them yet)
    cause: Optional[BaseException] = None


def run_command(options: BenchOptions) -> BenchOutcome:
    try:
        import torch
    except ImportError:
        return BenchOutcome(2, error=NEEDS_TORCH)
    device = options.device
    if device is None:
        device = "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cuda" and not torch.cuda.is_available():
        return BenchOutcome(2, error="--device cuda: no CUDA device is visible; use --device cpu")
    if device == "cpu":
        # Triton picks the interpreter when kernels are defined: set it before importing them.
        os.environ.setdefault("TRITON_INTERPRET", "1")
    from seqguard.bench.footprint import check_fits
    from seqguard.bench.launch import LAUNCHER_ENV, RankFailure, run_rank, spawn
    from seqguard.bench.runner import PRESETS, MirrorReadingBackend, run_bench
    from seqguard.bench.tp import check_divisible

    tp = options.tp
    fault, problem = parse_fault(options.inject_fault, tp)
    if problem is not None:
        return BenchOutcome(2, error=problem)
    if options.force_mirror_rank is not None and options.force_mirror_rank >= tp:
        return BenchOutcome(2, error=f"--force-mirror-rank: expected a rank below --tp {tp}, "
                                     f"got {options.force_mirror_rank}")
    workload = PRESETS[options.preset or ("tiny" if device == "cpu" else "gpu-bound")]
    distributed = tp > 1 or os.environ.get("WORLD_SIZE", "1") != "1"
    joining = distributed and "WORLD_SIZE" in os.environ
    rank = int(os.environ.get("RANK", "0")) if joining else 0
    try:
        model = dataclasses.replace(workload.model, **dict(options.model_changes))
        model.check()
        check_divisible(tp, model.num_q_heads, model.num_kv_heads, model.intermediate_size)
        workload = dataclasses.replace(workload, model=model, **dict(options.workload_changes))
        if device == "cpu" and not (joining and (rank or os.environ.get(LAUNCHER_ENV))):
            # The ranks share the host: the launcher (or rank 0 under torchrun) checks for all of them.
            check_fits(workload, torch.device("cpu"), tp, ranks_sharing_device=tp)
    except ValueError as error:
        return BenchOutcome(2, error=str(error))
    if distributed and not joining:
        if device == "cuda" and tp > torch.cuda.device_count():
            return BenchOutcome(2, error=f"--tp: expected at most the {torch.cuda.device_count()} visible "
                                         f"GPUs (one rank per GPU), got {tp}")
        result = spawn(["bench", "--device", device, *options.rank_argv], tp)
        failed = not (result.ok or result.tokens_differ)
        return BenchOutcome(result.exit_code, passthrough=result.stdout,
                            error=result.failure_message(tp).removeprefix("error: ") if failed else None)
    repeats = options.repeats or (3 if device == "cpu" else 1)
    if not distributed:
        try:
            if device == "cuda":
                check_fits(workload, torch.device("cuda"))
            report = run_bench(workload, torch.device(device), repeats=repeats,
                               extra_backends=[MirrorReadingBackend()] if options.force_mirror_rank == 0 else [])
        except ValueError as error:
            return BenchOutcome(2, error=str(error))
    else:
        try:
            rank, report = run_rank(workload, device, tp, options.tp_timeout, repeats, options.force_mirror_rank,
                                    fault)
        except RankFailure as failure:
            return BenchOutcome(2, error=str(failure), abort=True, cause=failure)
        if rank != 0:  # rank 0 prints for every rank
            return BenchOutcome(0 if report["identical_tokens"] else 1)
    return BenchOutcome(0 if report["identical_tokens"] else 1, report=report)


def parse_fault(spec: Optional[str], tp: int) -> tuple[Optional[tuple[int, str]], Optional[str]]:
    """`--inject-fault R:raise|R:hang` as (rank, kind), or the error saying what it expects."""
    if spec is None:
        return None, None
    rank, _, kind = spec.partition(":")
    if not rank.isdigit() or kind not in ("raise", "hang") or int(rank) >= max(tp, 1):
        return None, f"--inject-fault: expected R:raise or R:hang with R a rank below --tp {tp}, got {spec!r}"
    return (int(rank), kind), None
