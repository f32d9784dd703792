"""The runtime the transformed code targets: the backend flag, the aggregator, the
flag-aware FutureMap, the batch contracts and sync-free Triton attention backends.

Imports torch; `seqguard lint` and `seqguard codemod` never import this package.
"""

from seqguard.runtime.attention.base import AttentionBackend, UndeclaredFlagWarning
from seqguard.runtime.batch import (
    ForwardBatch, Req, ScheduleBatch, SpecInfo, decode_total_seq_lens, draft_seq_lens_sum,
)
from seqguard.runtime.decision import Decision, ServerArgs, decide_needs_cpu_seq_lens, explain_needs_cpu_seq_lens
from seqguard.runtime.overlap import FutureMap, StalePublishError
from seqguard.runtime.worker import SpecWorkerBackends

__all__ = [
    "AttentionBackend", "UndeclaredFlagWarning", "ServerArgs", "Decision", "decide_needs_cpu_seq_lens",
    "explain_needs_cpu_seq_lens", "FutureMap", "StalePublishError", "ScheduleBatch", "ForwardBatch", "Req",
    "SpecInfo", "decode_total_seq_lens", "draft_seq_lens_sum", "SpecWorkerBackends",
]
