from seqguard.runtime.attention.base import AttentionBackend, UndeclaredFlagWarning

__all__ = ["AttentionBackend", "UndeclaredFlagWarning", "TritonAttnBackend", "TritonMultiStepDraftBackend",
           "AttentionLayer"]


def __getattr__(name: str):
    # The Triton backends import triton; load them only when asked for.
    if name in ("TritonAttnBackend", "TritonMultiStepDraftBackend", "AttentionLayer"):
        from seqguard.runtime.attention import triton_backend
        return getattr(triton_backend, name)
    raise AttributeError(name)
