"""Triton attention backends whose metadata comes from device tensors alone.

Every metadata path (decode, extend, target-verify, draft-extend, CUDA-graph capture
and replay) derives `kv_indptr` by a device cumsum and `kv_indices` with a kernel
from `req_to_token` and device `seq_lens`; split counts are computed inside the
decode kernels. Nothing reads `seq_lens_cpu` / `seq_lens_sum` or copies to the host,
so the scheduler can skip the host mirror entirely.
"""

from __future__ import annotations

import dataclasses
from typing import Any, List, Optional

import torch

from seqguard.runtime.attention.base import AttentionBackend
from seqguard.runtime.forward_mode import ForwardMode
from seqguard.runtime.kv_pool import KVPool, check_kv_pool
from seqguard.runtime.ops import build_kv_indices, decode_attention_fwd, default_max_kv_splits, extend_attention_fwd
from seqguard.runtime.ops.decode_attention import DecodeWorkspace, MAX_KV_SPLITS_CAP


@dataclasses.dataclass(frozen=True)
class AttentionLayer:
    layer_id: int
    scaling: float
    logit_cap: float = 0.0


@dataclasses.dataclass
class TritonMetadata:
    kv_indptr: torch.Tensor
    kv_indices: torch.Tensor
    qo_indptr: Optional[torch.Tensor] = None
    max_extend_len: Optional[int] = None   # host-known bound (draft tokens), None: all new tokens
    max_kv_splits: int = 1
    workspace: Optional[DecodeWorkspace] = None


class _SharedWorkspace:
    """One flat float32 buffer viewed per batch size: bs x splits(bs) is about constant,
    and graphs replay one at a time, so every captured size can share it."""

    def __init__(self, num_q_heads: int, head_dim_v: int, num_kv_heads: int, device: torch.device,
                 head_dim: int = 128) -> None:
        self.num_q_heads, self.head_dim_v, self.num_kv_heads, self.device = (
            num_q_heads,
            head_dim_v,
            num_kv_heads,
            device,
        )
        self.head_dim = head_dim
        self._out: Optional[torch.Tensor] = None
        self._lse: Optional[torch.Tensor] = None
        self._counters: Optional[torch.Tensor] = None

    def reserve(self, max_bs: int) -> None:
        need_lse = max(bs * default_max_kv_splits(bs, self.num_kv_heads, self.device, self.head_dim)
                       for bs in range(1, max_bs + 1)) * self.num_q_heads
        if self._lse is None or self._lse.numel() < need_lse:
            self._lse = torch.empty(need_lse, dtype=torch.float32, device=self.device)
            self._out = torch.empty(need_lse * self.head_dim_v, dtype=torch.float32, device=self.device)
        if self._counters is None or self._counters.numel() < max_bs * self.num_kv_heads:
            self._counters = torch.zeros(max_bs * self.num_kv_heads, dtype=torch.int32, device=self.device)

    def view(self, bs: int, splits: int) -> DecodeWorkspace:
        n = bs * self.num_q_heads * splits
        assert self._lse is not None and n <= self._lse.numel(), "reserve() a workspace for this batch size first"
        return DecodeWorkspace(self._out[: n * self.head_dim_v].view(bs, self.num_q_heads, splits, self.head_dim_v),
                               self._lse[:n].view(bs, self.num_q_heads, splits),
                               self._counters[: bs * self.num_kv_heads])


class TritonAttnBackend(AttentionBackend):
    """Decode, extend, target-verify and draft-extend attention over `token_to_kv_pool`
    (any `KVPool`: an engine's own pool works unchanged) and the request table
    `req_to_token` ([rows, max_context_len] int32 slots on the device)."""

    # All metadata, CUDA-graph replay included, is built from device tensors.
    needs_cpu_seq_lens = False

    def __init__(self, *, num_q_heads: int, num_kv_heads: int, head_dim: int, req_to_token: torch.Tensor,
                 token_to_kv_pool: KVPool, max_bs: int, head_dim_v: Optional[int] = None,
                 num_draft_tokens: int = 1, kv_indices_capacity: Optional[int] = None,
                 workspace: Optional[_SharedWorkspace] = None) -> None:
        if num_q_heads % num_kv_heads:
            raise ValueError(f"num_q_heads: expected a multiple of num_kv_heads={num_kv_heads}, got {num_q_heads}")
        self.num_q_heads, self.num_kv_heads = num_q_heads, num_kv_heads
        self.head_dim, self.head_dim_v = head_dim, head_dim_v or head_dim
        check_kv_pool("token_to_kv_pool", token_to_kv_pool)
        self.req_to_token = req_to_token
        self.pool = token_to_kv_pool
        self.device = req_to_token.device
        self.max_bs = max_bs
        self.num_draft_tokens = num_draft_tokens
        max_context_len = req_to_token.shape[1]
        # Without the host mirror the total is unknown on the host: size for the worst case.
        capacity = kv_indices_capacity or max_bs * max_context_len
        self.kv_indptr = torch.zeros(max_bs + 1, dtype=torch.int32, device=self.device)
        self.qo_indptr = torch.zeros(max_bs + 1, dtype=torch.int32, device=self.device)
        self.kv_indices = torch.zeros(capacity, dtype=torch.int32, device=self.device)
        self.workspace = workspace or _SharedWorkspace(
            num_q_heads, self.head_dim_v, num_kv_heads, self.device, head_dim
        )
        self.forward_metadata: Optional[TritonMetadata] = None
        self._graph_ready = False

    # ---- metadata from device tensors ------------------------------------------------
    def _splits(self, bs: int) -> int:
        return default_max_kv_splits(bs, self.num_kv_heads, self.device, self.head_dim)

    def init_decode_metadata(self, bs: int, req_pool_indices: torch.Tensor, seq_lens: torch.Tensor) -> None:
        """Decode metadata for the first `bs` requests, each attending to `seq_lens[b]`
        tokens (device tensors): what `init_forward_metadata` builds for a decode batch,
        for callers that hold the lengths but no batch (`TritonMultiStepDraftBackend`
        gives each draft step its own lengths)."""
        self.forward_metadata = self._decode_metadata(bs, req_pool_indices, seq_lens, use_workspace=False)

    def _decode_metadata(self, bs: int, req_pool_indices: torch.Tensor, seq_lens: torch.Tensor,
                         use_workspace: bool) -> TritonMetadata:
        kv_indptr = self.kv_indptr[: bs + 1]
        torch.cumsum(seq_lens[:bs], dim=0, out=kv_indptr[1:])
        build_kv_indices(self.req_to_token, req_pool_indices[:bs], seq_lens[:bs], kv_indptr, self.kv_indices)
        splits = self._splits(bs)
        workspace = self.workspace.view(bs, splits) if use_workspace else None
        return TritonMetadata(kv_indptr, self.kv_indices, max_kv_splits=splits, workspace=workspace)

    def _extend_metadata(self, bs: int, req_pool_indices: torch.Tensor, seq_lens: torch.Tensor,
                         extend_lens: torch.Tensor, max_extend_len: Optional[int]) -> TritonMetadata:
        prefix_lens = seq_lens[:bs] - extend_lens[:bs]
        kv_indptr = self.kv_indptr[: bs + 1]
        torch.cumsum(prefix_lens, dim=0, out=kv_indptr[1:])
        build_kv_indices(self.req_to_token, req_pool_indices[:bs], prefix_lens, kv_indptr, self.kv_indices)
        qo_indptr = self.qo_indptr[: bs + 1]
        torch.cumsum(extend_lens[:bs], dim=0, out=qo_indptr[1:])
        return TritonMetadata(kv_indptr, self.kv_indices, qo_indptr, max_extend_len)

    def init_forward_metadata(self, forward_batch: Any) -> None:
        """`forward_batch.seq_lens` counts every token the step attends to (cached +
        new); extend-like modes also give `extend_seq_lens` on the device."""
        bs = forward_batch.batch_size
        if bs > self.max_bs:
            raise ValueError(f"batch_size: expected at most max_bs={self.max_bs}, got {bs}")
        mode = forward_batch.forward_mode
        if mode is ForwardMode.DECODE:
            self.init_decode_metadata(bs, forward_batch.req_pool_indices, forward_batch.seq_lens)
            return
        if mode is ForwardMode.TARGET_VERIFY:
            extend_lens = torch.full((bs,), self.num_draft_tokens, dtype=forward_batch.seq_lens.dtype,
                                     device=self.device)
            bound = self.num_draft_tokens
        else:
            if forward_batch.extend_seq_lens is None:
                raise ValueError(f"forward_batch.extend_seq_lens: expected a device tensor for {mode.value}, got None")
            extend_lens = forward_batch.extend_seq_lens
            # draft-extend adds at most the draft tokens; a prefill by its longest prompt when
            # the host knows the lengths (it scheduled them), else by all its tokens
            if mode is ForwardMode.DRAFT_EXTEND:
                bound = self.num_draft_tokens
            elif forward_batch.extend_seq_lens_cpu:
                bound = max(forward_batch.extend_seq_lens_cpu)
            else:
                bound = None
        self.forward_metadata = self._extend_metadata(bs, forward_batch.req_pool_indices, forward_batch.seq_lens,
                                                      extend_lens, bound)

    # ---- CUDA graphs -------------------------------------------------------------------
    def init_cuda_graph_state(self, max_bs: int, max_num_tokens: int) -> None:
        if max_bs > self.max_bs:
            raise ValueError(f"max_bs: expected at most the backend's max_bs={self.max_bs}, got {max_bs}")
        self.workspace.reserve(max_bs)
        self._graph_ready = True

    def init_forward_metadata_capture_cuda_graph(self, bs: int, num_tokens: int, req_pool_indices: torch.Tensor,
                                                 seq_lens: torch.Tensor, encoder_lens: Optional[torch.Tensor],
                                                 forward_mode: ForwardMode, spec_info: Optional[Any]) -> None:
        if not self._graph_ready:
            raise RuntimeError("TritonAttnBackend: expected init_cuda_graph_state() before capture, got none")
        if forward_mode is not ForwardMode.DECODE:
            raise NotImplementedError(f"CUDA graphs: expected decode, got {forward_mode.value}")
        self.forward_metadata = self._decode_metadata(bs, req_pool_indices, seq_lens, use_workspace=True)

    def init_forward_metadata_replay_cuda_graph(self, bs: int, req_pool_indices: torch.Tensor,
                                                seq_lens: torch.Tensor, seq_lens_sum: Optional[int],
                                                encoder_lens: Optional[torch.Tensor], forward_mode: ForwardMode,
                                                spec_info: Optional[Any], seq_lens_cpu: Optional[torch.Tensor]) -> None:
        # Rebuilds the captured buffers in place from device tensors; `seq_lens_sum` and
        # `seq_lens_cpu` are accepted for the interface and never read (they may be None).
        self.forward_metadata = self._decode_metadata(bs, req_pool_indices, seq_lens, use_workspace=True)

    def get_cuda_graph_seq_len_fill_value(self) -> int:
        return 1

    # ---- compute -----------------------------------------------------------------------
    def forward_decode(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, layer: AttentionLayer,
                       forward_batch: Any, save_kv_cache: bool = True) -> torch.Tensor:
        if save_kv_cache:
            self.pool.set_kv_buffer(layer, forward_batch.out_cache_loc, k, v)
        meta = self.forward_metadata
        q3 = q.view(q.shape[0], self.num_q_heads, self.head_dim)
        out = torch.empty(q.shape[0], self.num_q_heads, self.head_dim_v, dtype=q.dtype, device=q.device)
        decode_attention_fwd(q3, self.pool.get_key_buffer(layer.layer_id), self.pool.get_value_buffer(layer.layer_id),
                             out,
                             meta.kv_indptr, meta.kv_indices, sm_scale=layer.scaling, logit_cap=layer.logit_cap,
                             max_kv_splits=meta.max_kv_splits, workspace=meta.workspace)
        return out.view(q.shape[0], self.num_q_heads * self.head_dim_v)

    def forward_extend(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, layer: AttentionLayer,
                       forward_batch: Any, save_kv_cache: bool = True) -> torch.Tensor:
        if save_kv_cache:
            self.pool.set_kv_buffer(layer, forward_batch.out_cache_loc, k, v)
        meta = self.forward_metadata
        tokens = q.shape[0]
        q3 = q.view(tokens, self.num_q_heads, self.head_dim)
        k3 = k.view(tokens, self.num_kv_heads, self.head_dim)
        v3 = v.view(tokens, self.num_kv_heads, self.head_dim_v)
        out = torch.empty(tokens, self.num_q_heads, self.head_dim_v, dtype=q.dtype, device=q.device)
        extend_attention_fwd(
            q3,
            k3,
            v3,
            out,
            self.pool.get_key_buffer(layer.layer_id),
            self.pool.get_value_buffer(layer.layer_id),
            meta.qo_indptr,
            meta.kv_indptr,
            meta.kv_indices,
            sm_scale=layer.scaling,
            max_extend_len=meta.max_extend_len,
            logit_cap=layer.logit_cap,
        )
        return out.view(tokens, self.num_q_heads * self.head_dim_v)


class TritonMultiStepDraftBackend(AttentionBackend):
    """One decode backend per draft step (step i attends to the committed tokens plus
    i draft tokens). The steps share the request table, the KV pool and the decode
    workspace (they run one after another); each keeps its own indptr and indices,
    all built before the first step so drafting needs no metadata work in between."""

    # Each step's metadata comes from device seq_lens + i.
    needs_cpu_seq_lens = False

    def __init__(self, *, speculative_num_steps: int, num_q_heads: int, num_kv_heads: int, head_dim: int,
                 req_to_token: torch.Tensor, token_to_kv_pool: KVPool, max_bs: int,
                 head_dim_v: Optional[int] = None) -> None:
        if speculative_num_steps < 1:
            raise ValueError(f"speculative_num_steps: expected at least 1, got {speculative_num_steps}")
        self.speculative_num_steps = speculative_num_steps
        shared = _SharedWorkspace(num_q_heads, head_dim_v or head_dim, num_kv_heads, req_to_token.device, head_dim)
        # Step i's lengths are at most max_context_len; a step never holds more than the
        # whole request table's worth of slots.
        self.draft_backends: List[TritonAttnBackend] = [
            TritonAttnBackend(num_q_heads=num_q_heads, num_kv_heads=num_kv_heads, head_dim=head_dim,
                              req_to_token=req_to_token, token_to_kv_pool=token_to_kv_pool, max_bs=max_bs,
                              head_dim_v=head_dim_v, workspace=shared)
            for _ in range(speculative_num_steps)
        ]

    def _each_step(self, seq_lens: torch.Tensor):
        for step, backend in enumerate(self.draft_backends):
            yield backend, seq_lens + step  # device add: no sync

    def init_forward_metadata(self, forward_batch: Any) -> None:
        bs = forward_batch.batch_size
        for backend, lens in self._each_step(forward_batch.seq_lens):
            backend.init_decode_metadata(bs, forward_batch.req_pool_indices, lens)

    def init_cuda_graph_state(self, max_bs: int, max_num_tokens: int) -> None:
        for backend in self.draft_backends:
            backend.init_cuda_graph_state(max_bs, max_num_tokens)

    def init_forward_metadata_capture_cuda_graph(self, bs: int, num_tokens: int, req_pool_indices: torch.Tensor,
                                                 seq_lens: torch.Tensor, encoder_lens: Optional[torch.Tensor],
                                                 forward_mode: ForwardMode, spec_info: Optional[Any]) -> None:
        for backend, lens in self._each_step(seq_lens):
            backend.init_forward_metadata_capture_cuda_graph(bs, num_tokens, req_pool_indices, lens, encoder_lens,
                                                             ForwardMode.DECODE, spec_info)

    def init_forward_metadata_replay_cuda_graph(self, bs: int, req_pool_indices: torch.Tensor,
                                                seq_lens: torch.Tensor, seq_lens_sum: Optional[int],
                                                encoder_lens: Optional[torch.Tensor], forward_mode: ForwardMode,
                                                spec_info: Optional[Any], seq_lens_cpu: Optional[torch.Tensor]) -> None:
        for backend, lens in self._each_step(seq_lens):
            backend.init_forward_metadata_replay_cuda_graph(bs, req_pool_indices, lens, None, encoder_lens,
                                                            ForwardMode.DECODE, spec_info, None)

    def forward_decode(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, layer: AttentionLayer,
                       forward_batch: Any, save_kv_cache: bool = True, step: int = 0) -> torch.Tensor:
        return self.draft_backends[step].forward_decode(q, k, v, layer, forward_batch, save_kv_cache)

    def forward_extend(self, q, k, v, layer, forward_batch, save_kv_cache=True):
        raise NotImplementedError("TritonMultiStepDraftBackend: drafting only decodes; use TritonAttnBackend "
                                  "(draft-extend) for extends")


__all__ = ["AttentionLayer", "TritonAttnBackend", "TritonMultiStepDraftBackend", "TritonMetadata",
           "MAX_KV_SPLITS_CAP"]
