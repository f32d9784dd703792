"""Numbers an engine takes from the host mirror, computed without it: no device sync,
and the same answer whenever the mirror would have been there."""

from __future__ import annotations

import operator
from typing import Any

from seqguard.runtime.attention.base import is_flag_value


def _host_count(name: str, value: Any) -> int:
    """`value` as a count, or a TypeError/ValueError naming `name`: a float would be
    truncated, and a tensor read here would be a device sync on a GPU."""
    kind = type(value)
    if kind is not int:
        if kind is bool or kind.__module__.startswith("torch") or not hasattr(kind, "__index__"):
            shown = f"a {kind.__name__}" if kind.__module__.startswith("torch") else f"{kind.__name__} {value!r:.60}"
            raise TypeError(f"{name}: expected an int, got {shown}")
        value = operator.index(value)  # numpy integers
    if value < 0:
        raise ValueError(f"{name}: expected a count of at least 0, got {value}")
    return value


def decode_total_seq_lens(batch: Any) -> int:
    """Tokens in the running batch, for metrics. Without the mirror, the requests'
    own host-side lengths give the same number with no device sync."""
    if batch.seq_lens_sum is not None:
        return _host_count("batch.seq_lens_sum", batch.seq_lens_sum)
    return sum(req.seqlen for req in batch.reqs)


def draft_seq_lens_sum(batch: Any, max_context_len: int, tree_mask_preallocated: bool) -> int:
    """The `seq_lens_sum` a speculative draft sizes its tree mask with.

    With the mirror: the exact sum. Without: 0 when the mask buffer is preallocated
    (the kernel then ignores the value), else the upper bound `batch_size * max_context_len`.
    """
    max_context_len = _host_count("max_context_len", max_context_len)
    if not is_flag_value(tree_mask_preallocated):
        raise TypeError(f"tree_mask_preallocated: expected True or False, got "
                        f"{type(tree_mask_preallocated).__name__} {tree_mask_preallocated!r:.60}")
    if batch.seq_lens_sum is not None:
        return _host_count("batch.seq_lens_sum", batch.seq_lens_sum)
    if tree_mask_preallocated:
        return 0
    return len(batch.reqs) * max_context_len
