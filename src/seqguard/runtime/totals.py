"""Numbers an engine takes from the host mirror, computed without it: no device sync,
and the same answer whenever the mirror would have been there."""

from __future__ import annotations

from typing import Any


def decode_total_seq_lens(batch: Any) -> int:
    """Tokens in the running batch, for metrics. Without the mirror, the requests'
    own host-side lengths give the same number with no device sync."""
    if batch.seq_lens_sum is not None:
        return int(batch.seq_lens_sum)
    return sum(req.seqlen for req in batch.reqs)


def draft_seq_lens_sum(batch: Any, max_context_len: int, tree_mask_preallocated: bool) -> int:
    """The `seq_lens_sum` a speculative draft sizes its tree mask with.

    With the mirror: the exact sum. Without: 0 when the mask buffer is preallocated
    (the kernel then ignores the value), else the upper bound `batch_size * max_context_len`.
    """
    if batch.seq_lens_sum is not None:
        return int(batch.seq_lens_sum)
    if tree_mask_preallocated:
        return 0
    return len(batch.reqs) * max_context_len
