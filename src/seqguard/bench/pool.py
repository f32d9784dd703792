"""The demo engine's memory pools: request rows (`req_to_token`) and the token-slot KV
cache, filled with small random values (the bench's decoder has random weights too).
`TokenKVPool` is one `seqguard.runtime.KVPool` an engine could bring; the backends
never see more of it than that protocol.

Allocation bookkeeping lives on the host (free lists), so allocating never reads
the device; only host-to-device copies of the chosen slots happen."""

from __future__ import annotations

from typing import Any, List, Sequence

import torch


class PoolExhaustedError(RuntimeError):
    """A pool has no free rows or slots left."""


class ReqToTokenPool:
    """`req_to_token[row, i]` is the KV slot of token i of the request in `row`."""

    def __init__(self, size: int, max_context_len: int, device: torch.device | str) -> None:
        if size <= 0 or max_context_len <= 0:
            raise ValueError(f"ReqToTokenPool: expected positive size and max_context_len, got {size}, "
                             f"{max_context_len}")
        self.size = size
        self.max_context_len = max_context_len
        self.req_to_token = torch.zeros(size, max_context_len, dtype=torch.int32, device=device)
        self._free: List[int] = list(range(size - 1, -1, -1))

    def alloc(self) -> int:
        if not self._free:
            raise PoolExhaustedError(f"ReqToTokenPool: expected a free row, got none of {self.size}; "
                                     f"raise the pool size or admit fewer requests")
        return self._free.pop()

    def free(self, row: int) -> None:
        self._free.append(row)

    @property
    def available(self) -> int:
        return len(self._free)


class TokenKVPool:
    """K and V caches, [slots, kv_heads, head_dim] per layer. Slot 0 is a scratch slot
    that padded CUDA-graph rows write to; it is never handed out."""

    def __init__(self, size: int, num_layers: int, num_kv_heads: int, head_dim: int, dtype: torch.dtype,
                 device: torch.device | str, head_dim_v: int | None = None) -> None:
        self.size = size
        self.dtype = dtype
        self.device = torch.device(device)
        shape_v = (size + 1, num_kv_heads, head_dim_v or head_dim)
        self.k_buffer = [torch.randn(size + 1, num_kv_heads, head_dim, dtype=dtype, device=device) * 0.1
                         for _ in range(num_layers)]
        self.v_buffer = [torch.randn(*shape_v, dtype=dtype, device=device) * 0.1 for _ in range(num_layers)]
        self._free: List[int] = list(range(size, 0, -1))

    def alloc(self, count: int) -> List[int]:
        if count > len(self._free):
            raise PoolExhaustedError(f"TokenKVPool: expected {count} free slots, got {len(self._free)}; "
                                     f"raise the pool size or admit fewer tokens")
        taken = self._free[-count:] if count else []
        del self._free[len(self._free) - count:]
        return taken

    def free(self, slots: Sequence[int]) -> None:
        self._free.extend(slots)

    @property
    def available(self) -> int:
        return len(self._free)

    # ---- seqguard.runtime.KVPool (SGLang's signatures) ---------------------------------
    def get_key_buffer(self, layer_id: int) -> torch.Tensor:
        return self.k_buffer[layer_id]

    def get_value_buffer(self, layer_id: int) -> torch.Tensor:
        return self.v_buffer[layer_id]

    def set_kv_buffer(self, layer: Any, loc: torch.Tensor, cache_k: torch.Tensor, cache_v: torch.Tensor) -> None:
        self.k_buffer[layer.layer_id].index_copy_(0, loc.long(), cache_k.to(self.dtype))
        self.v_buffer[layer.layer_id].index_copy_(0, loc.long(), cache_v.to(self.dtype))
