"""Whether any active attention backend needs the host mirror of sequence lengths.

`decide_needs_cpu_seq_lens` is the one place the scheduler asks; its result is passed
into `FutureMap`. The decision also says why, so the server logs one line about it.
`server_args` is the engine's own: the decision reads `enable_two_batch_overlap` and
`disable_piecewise_cuda_graph` from it. Under tensor parallelism every rank must take
the same path; `across_ranks=True` OR-reduces the answer over `group`, and nothing
reduces unless asked (a rank that decides alone never waits for the others).
"""

from __future__ import annotations

import dataclasses
from typing import Any, Iterable, Optional

from seqguard.runtime.attention.base import FLAG, flag_error


class RankDecisionError(RuntimeError):
    """The tensor-parallel ranks could not agree: a rank failed while deciding, or the
    OR-reduce did not complete (a rank crashed, hangs, or never reached it).
    `caused_by_peer`: this rank is fine and stops because of another one."""

    def __init__(self, message: str, caused_by_peer: bool = False) -> None:
        super().__init__(message)
        self.caused_by_peer = caused_by_peer


@dataclasses.dataclass(frozen=True)
class Decision:
    needs_cpu_seq_lens: bool
    reasons: tuple[str, ...]
    # What each rank decided from its own backends before the OR-reduce (empty when
    # not distributed); rank i's answer is per_rank[i].
    per_rank: tuple[bool, ...] = ()

    def __bool__(self) -> bool:
        return self.needs_cpu_seq_lens

    def summary(self) -> str:
        """One log line: `host seq_lens mirror: off (...)` / `on (...)`."""
        state = "on" if self.needs_cpu_seq_lens else "off"
        return f"host seq_lens mirror: {state} ({'; '.join(self.reasons)})"


def explain_needs_cpu_seq_lens(server_args: Any, attn_backends: Iterable[Any], group: Any = None, *,
                               across_ranks: bool = False) -> Decision:
    """The decision and why. `across_ranks`: OR-reduce it over `group` (the default
    process group when None) so every rank takes the same path; it needs
    `torch.distributed` initialised and every rank of the group to call it."""
    if across_ranks and _rank(group) is None:
        raise ValueError("across_ranks=True: expected torch.distributed to be initialised (init_process_group), "
                         "got none; decide per process with across_ranks=False")
    if not across_ranks:
        needs, reasons = _local_decision(server_args, attn_backends)
        return Decision(needs, tuple(reasons))
    try:
        needs, reasons = _local_decision(server_args, attn_backends)
    except Exception as error:
        # Tell the other ranks before failing, so they stop at the reduce instead of
        # waiting there for the whole process-group timeout.
        _gather_across_ranks(_FAILED, group, swallow=True)
        rank = _rank(group)
        if rank is None:
            raise
        raise RankDecisionError(f"rank {rank}: the {FLAG} decision failed: {type(error).__name__}: {error}") \
            from error
    per_rank = _gather_across_ranks(_NEEDS if needs else _OPTS_OUT, group)
    if per_rank is None:
        return Decision(needs, tuple(reasons))
    reduced = any(per_rank)
    if reduced and not needs:
        others = ", ".join(str(r) for r, rank_needs in enumerate(per_rank) if rank_needs)
        reasons = [f"another tensor-parallel rank needs it (rank {others})"]
    return Decision(reduced, tuple(reasons), per_rank)


def _local_decision(server_args: Any, attn_backends: Iterable[Any]) -> tuple[bool, list[str]]:
    reasons: list[str] = []
    if server_args.enable_two_batch_overlap:
        reasons.append("two-batch overlap reads the host mirror")
    if not server_args.disable_piecewise_cuda_graph:
        reasons.append("piecewise CUDA graphs read the host mirror")
    names: dict[str, None] = {}  # each class once: a target and a draft-extend backend often share one
    for backend in attn_backends:
        if backend is None:
            continue  # an unset slot, e.g. no draft-extend backend in this spec config
        name = type(backend).__name__
        names[name] = None
        if not hasattr(backend, FLAG):
            reason = f"{name} does not declare {FLAG} (counted as True)"
        else:
            value = getattr(backend, FLAG)
            error = flag_error(name, value)
            if error is not None:
                raise error
            if not value:
                continue
            reason = f"{name} needs it"
        if reason not in reasons:
            reasons.append(reason)
    needs = bool(reasons)
    if not names and not needs:
        reasons.append("no attention backend is active")
    elif not needs:
        reasons.append(f"every backend opts out: {', '.join(names)}")
    return needs, reasons


def decide_needs_cpu_seq_lens(server_args: Any, attn_backends: Iterable[Any], group: Any = None, *,
                              across_ranks: bool = False) -> bool:
    """True if any active backend, or a feature, needs `seq_lens_cpu` / `seq_lens_sum`.

    `None` slots are skipped; a backend without the attribute counts as True, one whose
    flag is not True or False (a string, an int, a tensor) is a TypeError naming its
    class; two-batch overlap and piecewise CUDA graphs force True. With
    `across_ranks=True` the answer is OR-reduced over `group` so every tensor-parallel
    rank takes the same path.
    """
    return explain_needs_cpu_seq_lens(server_args, attn_backends, group, across_ranks=across_ranks).needs_cpu_seq_lens


# Each rank's slot in the gathered vector: 0 means the rank never wrote it (cannot
# happen once the reduce completes), so a missing answer is never read as "off".
_OPTS_OUT, _NEEDS, _FAILED = 1, 2, 3


def _rank(group: Any) -> Optional[int]:
    try:
        import torch.distributed as dist
    except ImportError:  # pragma: no cover - the runtime extra installs torch
        return None
    if not (dist.is_available() and dist.is_initialized()):
        return None
    return dist.get_rank(group)


def _gather_across_ranks(status: int, group: Any, swallow: bool = False) -> Optional[tuple[bool, ...]]:
    """Every rank's answer (True: needs the mirror), or None when not distributed.

    One MAX all-reduce of a vector with a slot per rank: the OR of the answers and what
    each rank decided, in the same collective. A rank that failed writes _FAILED, and
    every rank raises RankDecisionError naming it; a reduce that does not complete
    within the process group's timeout raises one too (gloo raises on its own; NCCL's
    watchdog aborts the communicator)."""
    rank = _rank(group)
    if rank is None:
        return None
    import torch
    import torch.distributed as dist

    world = dist.get_world_size(group)
    device = torch.device("cpu")
    if dist.get_backend(group) == "nccl":
        device = torch.device("cuda", torch.cuda.current_device())
    slots = torch.zeros(world, dtype=torch.int32, device=device)
    slots[rank] = status
    try:
        dist.all_reduce(slots, op=dist.ReduceOp.MAX, group=group)
        # Start-up only: reading the reduced vector back is the one sync this decision costs.
        values = slots.tolist()
    except Exception as error:  # noqa: BLE001 - any backend's timeout or abort
        if swallow:
            return None
        first_line = (str(error).strip().splitlines() or [type(error).__name__])[0]
        raise RankDecisionError(
            f"rank {rank}: the {FLAG} OR-reduce across {world} ranks did not complete ({first_line}); "
            f"expected every rank to reach the decision at start-up, got a rank that crashed, hangs or "
            f"never called it; see that rank's own error", caused_by_peer=True) from error
    failed = [r for r, v in enumerate(values) if v == _FAILED]
    if failed and not swallow:
        raise RankDecisionError(f"rank {rank}: rank(s) {', '.join(map(str, failed))} failed during the {FLAG} "
                                f"decision; every rank stops (see rank {failed[0]}'s own error)",
                                caused_by_peer=True)
    return tuple(v == _NEEDS for v in values)
