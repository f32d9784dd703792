"""Triton kernels for paged attention over a token-slot KV cache.

Three tiers per op: the `@triton.jit` kernel, a private launcher that picks grid and
block sizes, and a public entry point that validates its arguments."""

from seqguard.runtime.ops.decode_attention import decode_attention_fwd, default_max_kv_splits, DecodeWorkspace
from seqguard.runtime.ops.extend_attention import extend_attention_fwd
from seqguard.runtime.ops.kv_indices import build_kv_indices

__all__ = ["decode_attention_fwd", "default_max_kv_splits", "DecodeWorkspace", "extend_attention_fwd",
           "build_kv_indices"]
