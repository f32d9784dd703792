"""The runtime the transformed code targets: the backend flag, the aggregator, the
flag-aware FutureMap, the batch contracts and sync-free Triton attention backends.

Imports torch; `seqguard lint` and `seqguard codemod` never import this package.
The Triton backends are exported lazily (module `__getattr__`, PEP 562): importing
`seqguard.runtime` does not import triton, so a scheduler that only needs the flag,
the aggregator and the FutureMap starts fast.
"""

import importlib

from seqguard.runtime.attention.base import AttentionBackend, UndeclaredFlagWarning
from seqguard.runtime.batch import (
    ForwardBatch, Req, ScheduleBatch, SpecInfo, decode_total_seq_lens, draft_seq_lens_sum,
)
from seqguard.runtime.decision import Decision, ServerArgs, decide_needs_cpu_seq_lens, explain_needs_cpu_seq_lens
from seqguard.runtime.overlap import FutureMap, StalePublishError
from seqguard.runtime.worker import SpecWorkerBackends

# name -> module that defines it, imported on first access.
_LAZY = {
    "TritonAttnBackend": "seqguard.runtime.attention.triton_backend",
    "TritonMultiStepDraftBackend": "seqguard.runtime.attention.triton_backend",
}

__all__ = [
    "AttentionBackend", "UndeclaredFlagWarning", "ServerArgs", "Decision", "decide_needs_cpu_seq_lens",
    "explain_needs_cpu_seq_lens", "FutureMap", "StalePublishError", "ScheduleBatch", "ForwardBatch", "Req",
    "SpecInfo", "decode_total_seq_lens", "draft_seq_lens_sum", "SpecWorkerBackends", *_LAZY,
]


def __getattr__(name: str):
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list:
    return sorted(set(globals()) | set(_LAZY))
