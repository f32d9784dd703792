"""Helpers the codemod's `--style helper` output calls: the mirror when it exists,
else the same value from the device tensor, counted and logged once per call site.

No torch import here (nor in `seqguard/runtime/__init__.py`, whose exports are lazy):
the helpers work on whatever the engine passes in, and the module imports where torch
is absent."""

from __future__ import annotations

import logging
import sys
import threading
from collections import Counter
from typing import Any, Optional

__all__ = ["host_seq_lens", "host_seq_lens_sum", "total_lazy_host_pulls", "lazy_host_pulls"]

logger = logging.getLogger("seqguard.runtime")
_lock = threading.Lock()
lazy_host_pulls: Counter = Counter()  # "file:line" -> number of fallback syncs


def _note(attribute: str) -> None:
    frame = sys._getframe(2)
    site = f"{frame.f_code.co_filename}:{frame.f_lineno}"
    with _lock:
        first = site not in lazy_host_pulls
        lazy_host_pulls[site] += 1
    if first:
        logger.warning("seqguard: %s is absent at %s; pulling it from the device (a sync)", attribute, site)


def host_seq_lens(mirror: Optional[Any], device_seq_lens: Any) -> Any:
    """`seq_lens_cpu`, or `seq_lens.cpu()` when the mirror is absent."""
    if mirror is not None:
        return mirror
    _note("seq_lens_cpu")
    return device_seq_lens.cpu()


def host_seq_lens_sum(mirror: Optional[int], device_seq_lens: Any) -> int:
    """`seq_lens_sum`, or `int(seq_lens.sum())` when the mirror is absent."""
    if mirror is not None:
        return mirror
    _note("seq_lens_sum")
    return int(device_seq_lens.sum())


def total_lazy_host_pulls() -> int:
    with _lock:
        return sum(lazy_host_pulls.values())
