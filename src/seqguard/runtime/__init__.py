"""The runtime an engine imports, and only that: the backend flag, the aggregator, the
flag-aware FutureMap, the forward modes and the KV-pool protocol the Triton backends
accept, the sync-free Triton attention backends, and totals computed without the
mirror. (The demo engine's requests and batches are `seqguard.bench.batch`.) The codemod's fallback helpers are
`seqguard.runtime.fallback`, the kernels `seqguard.runtime.ops`.

Every name is exported lazily (module `__getattr__`, PEP 562): `import seqguard.runtime`
imports neither torch nor triton; a name loads its module on first use (the Triton
backends load triton, the FutureMap and batch contracts torch). So a scheduler that only
needs the flag and the aggregator starts fast, and `seqguard.runtime.fallback` imports
where torch is absent. `seqguard lint` and `seqguard codemod` never import this package.
"""

import importlib

# name -> module that defines it, imported on first access.
_LAZY = {
    "AttentionBackend": "seqguard.runtime.attention.base",
    "UndeclaredFlagWarning": "seqguard.runtime.attention.base",
    "Decision": "seqguard.runtime.decision",
    "RankDecisionError": "seqguard.runtime.decision",
    "decide_needs_cpu_seq_lens": "seqguard.runtime.decision",
    "explain_needs_cpu_seq_lens": "seqguard.runtime.decision",
    "FutureMap": "seqguard.runtime.overlap",
    "StalePublishError": "seqguard.runtime.overlap",
    "ForwardMode": "seqguard.runtime.forward_mode",
    "decode_total_seq_lens": "seqguard.runtime.totals",
    "draft_seq_lens_sum": "seqguard.runtime.totals",
    "SpecWorkerBackends": "seqguard.runtime.worker",
    "KVPool": "seqguard.runtime.kv_pool",
    "AttentionLayer": "seqguard.runtime.attention.triton_backend",
    "TritonAttnBackend": "seqguard.runtime.attention.triton_backend",
    "TritonMultiStepDraftBackend": "seqguard.runtime.attention.triton_backend",
}

__all__ = list(_LAZY)


def __getattr__(name: str):
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list:
    return sorted(set(globals()) | set(_LAZY))
