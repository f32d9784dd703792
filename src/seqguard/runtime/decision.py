"""Whether any active attention backend needs the host mirror of sequence lengths.

`decide_needs_cpu_seq_lens` is the one place the scheduler asks; its result is passed
into `FutureMap`. The decision also says why, so the server logs one line about it.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Iterable, Optional

from seqguard.runtime.attention.base import FLAG


@dataclasses.dataclass
class ServerArgs:
    """The settings the decision depends on (a subset of an engine's server args)."""

    attention_backend: str = "triton"
    speculative_algorithm: Optional[str] = None
    enable_two_batch_overlap: bool = False
    disable_piecewise_cuda_graph: bool = True
    disable_cuda_graph: bool = False
    disable_overlap_schedule: bool = False


@dataclasses.dataclass(frozen=True)
class Decision:
    needs_cpu_seq_lens: bool
    reasons: tuple[str, ...]

    def __bool__(self) -> bool:
        return self.needs_cpu_seq_lens

    def summary(self) -> str:
        """One log line: `host seq_lens mirror: off (...)` / `on (...)`."""
        state = "on" if self.needs_cpu_seq_lens else "off"
        return f"host seq_lens mirror: {state} ({'; '.join(self.reasons)})"


def explain_needs_cpu_seq_lens(server_args: ServerArgs, attn_backends: Iterable[Any],
                               group: Any = None) -> Decision:
    reasons: list[str] = []
    if server_args.enable_two_batch_overlap:
        reasons.append("two-batch overlap reads the host mirror")
    if not server_args.disable_piecewise_cuda_graph:
        reasons.append("piecewise CUDA graphs read the host mirror")
    names: list[str] = []
    for backend in attn_backends:
        if backend is None:
            continue  # an unset slot, e.g. no draft-extend backend in this spec config
        name = type(backend).__name__
        if not hasattr(backend, FLAG):
            reason = f"{name} does not declare {FLAG} (counted as True)"
        elif getattr(backend, FLAG):
            reason = f"{name} needs it"
        else:
            reason = None
        # Target and draft often share a class: name each (class, verdict) once.
        if name not in names:
            names.append(name)
        if reason is not None and reason not in reasons:
            reasons.append(reason)
    needs = bool(reasons)
    if not names and not needs:
        reasons.append("no attention backend is active")
    elif not needs:
        reasons.append(f"every backend opts out: {', '.join(names)}")
    reduced = _or_across_ranks(needs, group)
    if reduced and not needs:
        reasons = ["another tensor-parallel rank needs it"]
    return Decision(reduced, tuple(reasons))


def decide_needs_cpu_seq_lens(server_args: ServerArgs, attn_backends: Iterable[Any], group: Any = None) -> bool:
    """True if any active backend, or a feature, needs `seq_lens_cpu` / `seq_lens_sum`.

    `None` slots are skipped; a backend without the attribute counts as True; two-batch
    overlap and piecewise CUDA graphs force True. Under `torch.distributed` the answer
    is OR-reduced over `group` so every rank takes the same path.
    """
    return explain_needs_cpu_seq_lens(server_args, attn_backends, group).needs_cpu_seq_lens


def _or_across_ranks(needs: bool, group: Any) -> bool:
    try:
        import torch
        import torch.distributed as dist
    except ImportError:  # pragma: no cover - the runtime extra installs torch
        return needs
    if not (dist.is_available() and dist.is_initialized()):
        return needs
    device = torch.device("cpu")
    if dist.get_backend(group) == "nccl":
        device = torch.device("cuda", torch.cuda.current_device())
    flag = torch.tensor([int(needs)], dtype=torch.int32, device=device)
    dist.all_reduce(flag, op=dist.ReduceOp.MAX, group=group)
    # Start-up only: reading the reduced flag back is the one sync this decision costs.
    return bool(flag.item())
