"""`seqguard bench --tp N`: one rank's run (`run_rank`, under torchrun or this
launcher), and the launcher (`spawn`) that starts N copies of the same command with
torchrun's environment variables, passes rank 0's output through, and when one rank
exits with an error stops the others and says which rank failed and why.

The ranks run exactly what `torchrun --nproc-per-node N -m seqguard bench --tp N ...`
runs; the launcher is only the part of torchrun the bench needs, so a failure never
leaves a rank waiting in a collective.
"""

from __future__ import annotations

import dataclasses
import os
import socket
import subprocess
import sys
import tempfile
import time
from typing import Any, List, Optional, Sequence, Tuple

# Set in every rank this launcher starts: the parent already checked host memory for all of them.
LAUNCHER_ENV = "SEQGUARD_TP_LAUNCHER"
# How a rank's error line starts when it stops because of another rank (not its own fault).
PEER_FAILED = "stopped because of another rank: "
# How long the other ranks get, after one fails, to stop on their own (their process
# group reports the failure) before the launcher ends them.
GRACE_S = 3.0


# How gloo and NCCL word a peer that is gone or late (not every one is a DistError).
_COLLECTIVE_FAILURES = ("timed out", "connection closed", "connection reset", "broken pipe", "gloo", "nccl")


class RankFailure(Exception):
    """This rank cannot go on; str() is its one error line (without `error: `). One
    that stops because of a peer starts with PEER_FAILED, so the launcher names the
    rank at fault rather than the first one to exit."""

    def __init__(self, message: str, caused_by_peer: bool = False) -> None:
        super().__init__((PEER_FAILED if caused_by_peer else "") + message)


def run_rank(workload, device: str, tp: int, timeout_s: float, repeats: int, force_mirror_rank: Optional[int],
             fault: Optional[Tuple[int, str]]) -> Tuple[int, dict]:
    """One tensor-parallel rank: join, run the bench in step with the others, leave;
    (rank, report). A failure raises RankFailure naming this rank; the peers stop too
    (their collectives fail within `timeout_s`, or the launcher ends them).
    `fault` = (rank, "raise" | "hang") makes that rank fail inside the decision or
    never reach it: what the no-hang tests run."""
    import torch.distributed as dist

    from seqguard.bench.footprint import check_fits
    from seqguard.bench.runner import MirrorReadingBackend, UnreadableFlagBackend, run_bench
    from seqguard.bench.tp import join_from_env, leave
    from seqguard.runtime import RankDecisionError

    rank: Any = os.environ.get("RANK", "?")
    try:
        group, dev = join_from_env(tp, device, timeout_s)
        rank = group.rank
        if dev.type == "cuda":
            check_fits(workload, dev, tp)
        extra: List[object] = [MirrorReadingBackend()] if force_mirror_rank == rank else []
        if fault == (rank, "raise"):
            extra.append(UnreadableFlagBackend())
        if fault == (rank, "hang"):
            time.sleep(10 * timeout_s)  # never reaches the decision: the peers' OR-reduce times out
        report = run_bench(workload, dev, repeats=repeats, tp=group, extra_backends=extra)
    except RankDecisionError as error:
        raise RankFailure(str(error), caused_by_peer=error.caused_by_peer) from error
    except ValueError as error:
        raise RankFailure(f"rank {rank}: {error}") from error
    except RuntimeError as error:
        text = str(error)
        if not (isinstance(error, dist.DistError) or any(w in text.lower() for w in _COLLECTIVE_FAILURES)):
            raise
        first = (text.strip().splitlines() or [type(error).__name__])[0]
        raise RankFailure(f"rank {rank}: a collective across the {tp} ranks failed ({first}); another rank "
                          f"crashed, hangs or was stopped (its own error says why; --tp-timeout {timeout_s:g} s)",
                          caused_by_peer=True) from error
    # Only after success: tearing down a group whose collective failed can itself block.
    leave()
    return rank, report


@dataclasses.dataclass
class RankExit:
    rank: int
    code: Optional[int]          # None: still running when the launcher stopped it
    last_error: str              # the rank's last line on stderr
    order: int = 0               # 0 for the first rank seen failing, then 1, 2, ...

    @property
    def at_fault(self) -> bool:
        return self.code not in (0, None) and not self.last_error.startswith("error: " + PEER_FAILED)


@dataclasses.dataclass
class LaunchResult:
    stdout: str                  # rank 0's
    stderr: str                  # rank 0's, on success
    ranks: List[RankExit]

    @property
    def ok(self) -> bool:
        return all(r.code == 0 for r in self.ranks)

    @property
    def tokens_differ(self) -> bool:
        """Every rank finished its report and exited 1: the tokens disagree, which the
        report (rank 0's output) says; no rank failed."""
        return all(r.code == 1 for r in self.ranks)

    @property
    def exit_code(self) -> int:
        if self.ok:
            return 0
        codes = [r.code for r in self.ranks if r.code not in (0, None)]
        return codes[0] if codes and codes[0] in (1, 2) else 2

    def failure_message(self, tp: int) -> str:
        """One line naming the rank that failed first and why, then one per other rank."""
        # The rank at fault first (one whose error is its own), then by when each exited.
        failed = sorted((r for r in self.ranks if r.code not in (0, None)), key=lambda r: (not r.at_fault, r.order))
        hung = [r for r in self.ranks if r.code is None]
        lines = []
        if failed and (failed[0].at_fault or not hung):
            first = failed[0]
            lines.append(f"error: --tp {tp}: rank {first.rank} failed (exit code {first.code}): "
                         f"{_strip(first.last_error)}")
            rest = [r for r in self.ranks if r is not first and r.code != 0]
            cause = f"rank {first.rank} failed"
        else:
            # Every rank that exited did so because of a peer, and some rank never exited:
            # it is the one that never reached the collective the others gave up on.
            names = ", ".join(str(r.rank) for r in hung)
            lines.append(f"error: --tp {tp}: rank {names} never reached a collective that the other ranks "
                         f"waited --tp-timeout for (hung or too slow); stopped by the launcher")
            rest = [r for r in self.ranks if r.code not in (0, None)]
            cause = "that"
        for r in rest:
            if r.code is None:
                lines.append(f"  rank {r.rank}: stopped by the launcher after {cause}")
            else:
                lines.append(f"  rank {r.rank} (exit code {r.code}): {_strip(r.last_error)}")
        return "\n".join(lines)


def _strip(line: str) -> str:
    return line[len("error: "):] if line.startswith("error: ") else (line or "(no message on stderr)")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def spawn(argv: Sequence[str], tp: int, poll_s: float = 0.05) -> LaunchResult:
    """Run `python -m seqguard <argv>` as ranks 0..tp-1 of one process group on this
    host and wait for all of them (or stop them all once one fails)."""
    port = free_port()
    procs, outs, errs = [], [], []
    for rank in range(tp):
        env = dict(os.environ, RANK=str(rank), WORLD_SIZE=str(tp), LOCAL_RANK=str(rank), LOCAL_WORLD_SIZE=str(tp),
                   MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), **{LAUNCHER_ENV: "1"})
        out, err = tempfile.TemporaryFile(), tempfile.TemporaryFile()
        procs.append(subprocess.Popen([sys.executable, "-m", "seqguard", *argv], env=env, stdout=out, stderr=err,
                                      stdin=subprocess.DEVNULL))
        outs.append(out)
        errs.append(err)
    order: dict[int, int] = {}
    stopped: set[int] = set()
    try:
        deadline = None
        while True:
            codes = [p.poll() for p in procs]
            for rank, code in enumerate(codes):
                if code not in (None, 0) and rank not in order:
                    order[rank] = len(order)
            if all(c is not None for c in codes):
                break
            if order and deadline is None:
                deadline = time.monotonic() + GRACE_S
            if deadline is not None and time.monotonic() > deadline:
                for rank, proc in enumerate(procs):
                    if proc.poll() is None:
                        proc.kill()
                        stopped.add(rank)
                for proc in procs:
                    proc.wait()
                break
            time.sleep(poll_s)
    finally:
        for proc in procs:  # an interrupted launcher leaves no rank behind
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    ranks = []
    texts = [_read(err) for err in errs]
    for rank, proc in enumerate(procs):
        text = texts[rank]
        lines = [line for line in text.splitlines() if line.strip()]
        error_lines = [line for line in lines if line.startswith("error:")]
        last = (error_lines or lines or [""])[-1]
        ranks.append(RankExit(rank, None if rank in stopped else proc.returncode, last, order.get(rank, len(procs))))
    stdout = _read(outs[0])
    for out in outs[1:]:
        out.close()
    return LaunchResult(stdout=stdout, stderr=texts[0], ranks=ranks)


def _read(handle) -> str:
    handle.seek(0)
    text = handle.read().decode(errors="replace")
    handle.close()
    return text
