from seqguard.runtime.attention.base import AttentionBackend, UndeclaredFlagWarning

__all__ = ["AttentionBackend", "UndeclaredFlagWarning"]
