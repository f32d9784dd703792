"""A tiny decoder-only transformer with random weights. Attention goes through an
`AttentionBackend`; everything else is plain torch, so the model runs on any device."""

from __future__ import annotations

import dataclasses
from typing import Any, Callable, Optional

import torch
import torch.nn.functional as F

from seqguard.bench.tp import TensorParallel, check_divisible
from seqguard.runtime import AttentionLayer


@dataclasses.dataclass(frozen=True)
class ModelConfig:
    vocab_size: int = 512
    hidden_size: int = 128
    num_layers: int = 2
    num_q_heads: int = 4
    num_kv_heads: int = 2
    head_dim: int = 32
    intermediate_size: int = 256
    max_context_len: int = 512
    dtype: torch.dtype = torch.float16

    def check(self) -> None:
        problems = []
        if self.num_q_heads % self.num_kv_heads:
            problems.append(f"num_q_heads: expected a multiple of num_kv_heads={self.num_kv_heads}, "
                            f"got {self.num_q_heads}")
        for name in ("vocab_size", "hidden_size", "num_layers", "head_dim", "intermediate_size", "max_context_len"):
            if getattr(self, name) <= 0:
                problems.append(f"{name}: expected a positive number, got {getattr(self, name)}")
        if problems:
            raise ValueError("; ".join(problems))


class _Layer:
    """One block's weights, this rank's shard of them. Every rank draws the whole
    matrices from the same generator and keeps its slice, so N shards hold exactly the
    single-rank model's numbers."""

    def __init__(self, config: ModelConfig, generator: torch.Generator, device: torch.device, layer_id: int,
                 tp: TensorParallel) -> None:
        h, d = config.hidden_size, config.head_dim
        q_out, kv_out = config.num_q_heads * d, config.num_kv_heads * d

        def weight(rows: int, cols: int) -> torch.Tensor:
            return torch.randn(rows, cols, generator=generator) / cols ** 0.5

        def place(w: torch.Tensor) -> torch.Tensor:
            return w.to(device=device, dtype=config.dtype).contiguous()

        qkv, o = weight(q_out + 2 * kv_out, h), weight(h, q_out)
        up, down = weight(config.intermediate_size, h), weight(h, config.intermediate_size)
        if tp.size > 1:
            q, k, v = torch.split(qkv, (q_out, kv_out, kv_out))
            heads, kv_heads = tp.shard(config.num_q_heads), tp.kv_shard(config.num_kv_heads)
            rows = lambda w, part: w[part.start * d:part.stop * d]  # noqa: E731 - head slices of a projection
            qkv = torch.cat([rows(q, heads), rows(k, kv_heads), rows(v, kv_heads)])   # column parallel
            o = o[:, heads.start * d:heads.stop * d]                                    # row parallel
            columns = tp.shard(config.intermediate_size)
            up, down = up[columns], down[:, columns]
            q_out, kv_out = q_out // tp.size, tp.local_kv_heads(config.num_kv_heads) * d
        self.qkv, self.o, self.up, self.down = place(qkv), place(o), place(up), place(down)
        self.splits = (q_out, kv_out, kv_out)
        self.attention = AttentionLayer(layer_id, d ** -0.5)


class TinyDecoder:
    """Embedding + learned positions, `num_layers` pre-norm blocks, tied LM head.
    Under tensor parallelism each rank holds 1/N of the heads and of the MLP and
    all-reduces after attention and after the MLP; embeddings and the LM head are whole."""

    def __init__(self, config: ModelConfig, device: torch.device | str, seed: int,
                 share_from: Optional["TinyDecoder"] = None, tp: TensorParallel = TensorParallel()) -> None:
        config.check()
        check_divisible(tp.size, config.num_q_heads, config.num_kv_heads, config.intermediate_size)
        self.config = config
        self.tp = tp
        self.local_kv_heads = tp.local_kv_heads(config.num_kv_heads)
        self.device = torch.device(device)
        generator = torch.Generator().manual_seed(seed)
        if share_from is not None:
            # A draft that shares the target's embeddings and first layers agrees with it
            # often but not always: acceptance varies per request, as in real drafting.
            self.embed, self.positions = share_from.embed, share_from.positions
            self.layers = share_from.layers[: config.num_layers]
        else:
            self.embed = (torch.randn(config.vocab_size, config.hidden_size, generator=generator)
                          .to(self.device, config.dtype))
            self.positions = (torch.randn(config.max_context_len + 64, config.hidden_size, generator=generator) * 0.5
                              ).to(self.device, config.dtype)
            self.layers = [_Layer(config, generator, self.device, i, tp) for i in range(config.num_layers)]

    def forward(self, input_ids: torch.Tensor, positions: torch.Tensor, forward_batch: Any,
                attend: Callable[[torch.Tensor, torch.Tensor, torch.Tensor, AttentionLayer], torch.Tensor],
                logits_rows: Optional[torch.Tensor] = None) -> torch.Tensor:
        """Logits for each input token (or only `logits_rows`: a prefill needs the last
        token's, and a vocabulary-wide row per prompt token would not fit); `attend(q, k,
        v, layer)` runs the backend."""
        c = self.config
        x = self.embed[input_ids] + self.positions[positions]
        for layer in self.layers:
            h = F.rms_norm(x, (c.hidden_size,))
            q, k, v = torch.split(h @ layer.qkv.T, layer.splits, dim=-1)
            attn = attend(q.contiguous(), k.reshape(-1, self.local_kv_heads, c.head_dim),
                          v.reshape(-1, self.local_kv_heads, c.head_dim), layer.attention)
            x = x + self.tp.all_reduce(attn @ layer.o.T)
            h = F.rms_norm(x, (c.hidden_size,))
            x = x + self.tp.all_reduce(F.gelu(h @ layer.up.T) @ layer.down.T)
        if logits_rows is not None:
            x = x[logits_rows]
        return F.rms_norm(x, (c.hidden_size,)) @ self.embed.T
