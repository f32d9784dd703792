"""What the Triton attention backends need from an engine's KV pool.

A structural type (`typing.Protocol`): any object with these three methods works,
SGLang's `MHATokenToKVPool` unchanged (its `set_kv_buffer` takes optional scale and
layer-override arguments after these four, which the backends never pass). Buffers are
[slots, kv_heads, head_dim] per layer, contiguous; `loc` holds one slot per new token.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:  # the protocol itself needs no torch: `import seqguard.runtime` stays light
    import torch


@runtime_checkable
class KVPool(Protocol):
    def get_key_buffer(self, layer_id: int) -> "torch.Tensor":
        """Layer `layer_id`'s key cache, [slots, kv_heads, head_dim]."""

    def get_value_buffer(self, layer_id: int) -> "torch.Tensor":
        """Layer `layer_id`'s value cache, [slots, kv_heads, head_dim_v]."""

    def set_kv_buffer(self, layer: Any, loc: "torch.Tensor", cache_k: "torch.Tensor",
                      cache_v: "torch.Tensor") -> None:
        """Write the new tokens' keys and values at slots `loc` of layer `layer.layer_id`."""


def check_kv_pool(name: str, pool: object) -> None:
    """TypeError naming what `pool` lacks, unless it has the KVPool methods."""
    missing = [
        m for m in ("get_key_buffer", "get_value_buffer", "set_kv_buffer") if not callable(getattr(pool, m, None))
    ]
    if missing:
        raise TypeError(f"{name}: expected a KV pool with get_key_buffer, get_value_buffer and set_kv_buffer "
                        f"(seqguard.runtime.KVPool), got {type(pool).__name__} without {', '.join(missing)}")


__all__ = ["KVPool", "check_kv_pool"]
