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
from seqguard.runtime.checks import (
    INDEX_DTYPES, above_error, check_int, check_tensor, checks_values, describe, index_tensor_error, range_error,
    total_error,
)
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


@dataclasses.dataclass(frozen=True)
class _ArgNames:
    """What the caller calls a batch's size, rows and lengths, for error messages."""
    bs: str
    rows: str
    lens: str


_ARGS = _ArgNames("bs", "req_pool_indices", "seq_lens")
_BATCH = _ArgNames("forward_batch.batch_size", "forward_batch.req_pool_indices", "forward_batch.seq_lens")
_INT32_MAX = 2 ** 31 - 1
_TABLE_WIDTH = "the width of req_to_token"


def _checked_batch(names: _ArgNames, bs: Any, req_pool_indices: Any, seq_lens: Any, *, req_to_token: torch.Tensor,
                   max_bs: int, max_bs_is: str = "the backend's max_bs", min_len: int = 0, extra: int = 0,
                   lens_bound: str = _TABLE_WIDTH, capacity: Optional[int] = None) -> int:
    """The batch size, once `bs` requests' rows and lengths fit the request table: types,
    dtypes, devices and sizes always; rows inside the table and lengths in
    [min_len, width - extra] (and, when `capacity` is smaller than bs full rows, their
    total inside kv_indices) where value checks run (seqguard.runtime.checks). `extra`:
    tokens a caller adds to every length later (the draft backend's steps)."""
    bs = check_int(names.bs, bs, low=0, high=max_bs, bound=max_bs_is)
    for name, tensor in ((names.rows, req_pool_indices), (names.lens, seq_lens)):
        error = index_tensor_error(name, tensor, req_to_token.device, bs)
        if error is not None:
            raise error
    if bs == 0 or not checks_values(seq_lens):
        return bs
    num_rows, width = req_to_token.shape
    lens = seq_lens[:bs]
    error = range_error(names.rows, req_pool_indices[:bs], 0, num_rows - 1, "the rows of req_to_token",
                        "pass each request's row of req_to_token") or \
        range_error(names.lens, lens, min_len, width - extra, lens_bound,
                    "pass each request's token count (cached and new)")
    if error is None and capacity is not None and bs * width > capacity:
        error = total_error(names.lens, lens, capacity, "kv_indices_capacity", "raise kv_indices_capacity")
    if error is not None:
        raise error
    return bs


def _longest_extend(lengths: Any, bs: int, width: int) -> Optional[int]:
    """The longest of the host's new-token counts (`forward_batch.extend_seq_lens_cpu`),
    None when the host has none. Host values cost nothing to read, so they are always
    checked: the extend grid is sized from this number, so each is bounded by the table's
    `width` (a request holds no more tokens than its row), never wrapped later."""
    name = "forward_batch.extend_seq_lens_cpu"
    if lengths is None:
        return None
    if isinstance(lengths, torch.Tensor):
        if not lengths.is_cpu or lengths.dtype not in INDEX_DTYPES or lengths.dim() != 1:
            raise TypeError(f"{name}: expected host lengths (a list of ints or a 1-D int CPU tensor), got "
                            f"{describe(lengths)}; leave it None when the host does not know them")
        lengths = lengths.tolist()
    if not lengths:
        return None
    if len(lengths) < bs:
        raise ValueError(f"{name}: expected at least {bs} entries (one per request), got {len(lengths)}")
    longest = 0
    for index, value in enumerate(lengths[:bs]):
        value = check_int(f"{name}[{index}]", value, low=0, high=width, bound=_TABLE_WIDTH)
        longest = max(longest, value)
    return longest


class TritonAttnBackend(AttentionBackend):
    """Decode, extend, target-verify and draft-extend attention over `token_to_kv_pool`
    (any `KVPool`: an engine's own pool works unchanged) and the request table
    `req_to_token` ([rows, max_context_len] int32 slots on the device).

    Every public method refuses what would send a kernel outside its tables: wrong
    types, dtypes, devices and sizes always (a TypeError or ValueError naming the
    argument); out-of-range lengths and rows where value checks run
    (seqguard.runtime.checks: host tensors by default, device tensors only when switched
    on, since reading them is a sync). Unchecked, the kernels clamp and mask instead."""

    # All metadata, CUDA-graph replay included, is built from device tensors.
    needs_cpu_seq_lens = False

    def __init__(self, *, num_q_heads: int, num_kv_heads: int, head_dim: int, req_to_token: torch.Tensor,
                 token_to_kv_pool: KVPool, max_bs: int, head_dim_v: Optional[int] = None,
                 num_draft_tokens: int = 1, kv_indices_capacity: Optional[int] = None,
                 workspace: Optional[_SharedWorkspace] = None) -> None:
        num_q_heads = check_int("num_q_heads", num_q_heads, low=1)
        num_kv_heads = check_int("num_kv_heads", num_kv_heads, low=1)
        if num_q_heads % num_kv_heads:
            raise ValueError(f"num_q_heads: expected a multiple of num_kv_heads={num_kv_heads}, got {num_q_heads}")
        self.num_q_heads, self.num_kv_heads = num_q_heads, num_kv_heads
        self.head_dim = check_int("head_dim", head_dim, low=1)
        self.head_dim_v = self.head_dim if head_dim_v is None else check_int("head_dim_v", head_dim_v, low=1)
        check_tensor("req_to_token", req_to_token, ndim=2, dtype=INDEX_DTYPES)
        if req_to_token.stride(1) != 1:
            raise ValueError("req_to_token: expected contiguous rows; call .contiguous()")
        check_kv_pool("token_to_kv_pool", token_to_kv_pool)
        self.req_to_token = req_to_token
        self.pool = token_to_kv_pool
        self.device = req_to_token.device
        self.max_bs = check_int("max_bs", max_bs, low=1)
        self.num_draft_tokens = check_int("num_draft_tokens", num_draft_tokens, low=1)
        max_context_len = req_to_token.shape[1]
        # Without the host mirror the total is unknown on the host: size for the worst case.
        if kv_indices_capacity is None:
            capacity, capacity_is = self.max_bs * max_context_len, "max_bs * req_to_token.shape[1]"
        else:
            capacity = check_int("kv_indices_capacity", kv_indices_capacity, low=1)
            capacity_is = "kv_indices_capacity"
        if capacity > _INT32_MAX:  # kv_indptr holds offsets into kv_indices as int32
            raise ValueError(f"{capacity_is}: expected at most {_INT32_MAX} slots (kv_indptr is int32), got "
                             f"{capacity}; lower max_bs or pass a smaller kv_indices_capacity")
        self.kv_indptr = torch.zeros(self.max_bs + 1, dtype=torch.int32, device=self.device)
        self.qo_indptr = torch.zeros(self.max_bs + 1, dtype=torch.int32, device=self.device)
        self.kv_indices = torch.zeros(capacity, dtype=req_to_token.dtype, device=self.device)
        self.workspace = workspace or _SharedWorkspace(
            num_q_heads, self.head_dim_v, num_kv_heads, self.device, self.head_dim
        )
        self.forward_metadata: Optional[TritonMetadata] = None
        self._graph_max_bs = 0  # init_cuda_graph_state's max_bs; 0 before it

    # ---- metadata from device tensors ------------------------------------------------
    def _splits(self, bs: int) -> int:
        return default_max_kv_splits(bs, self.num_kv_heads, self.device, self.head_dim)

    def _checked(self, names: _ArgNames, bs: Any, req_pool_indices: Any, seq_lens: Any, **limits: Any) -> int:
        return _checked_batch(names, bs, req_pool_indices, seq_lens, req_to_token=self.req_to_token,
                              max_bs=self.max_bs, capacity=self.kv_indices.shape[0], **limits)

    def init_decode_metadata(self, bs: int, req_pool_indices: torch.Tensor, seq_lens: torch.Tensor) -> None:
        """Decode metadata for the first `bs` requests, each attending to `seq_lens[b]`
        tokens (device tensors): what `init_forward_metadata` builds for a decode batch,
        for callers that hold the lengths but no batch (`TritonMultiStepDraftBackend`
        gives each draft step its own lengths)."""
        bs = self._checked(_ARGS, bs, req_pool_indices, seq_lens)
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
        mode = forward_batch.forward_mode
        if not isinstance(mode, ForwardMode):
            raise TypeError(f"forward_batch.forward_mode: expected a seqguard.runtime.ForwardMode, got "
                            f"{describe(mode)}")
        rows, seq_lens = forward_batch.req_pool_indices, forward_batch.seq_lens
        if mode is ForwardMode.DECODE:
            bs = self._checked(_BATCH, forward_batch.batch_size, rows, seq_lens)
            self.forward_metadata = self._decode_metadata(bs, rows, seq_lens, use_workspace=False)
            return
        if mode is ForwardMode.TARGET_VERIFY:
            drafts = self.num_draft_tokens
            bs = self._checked(_BATCH, forward_batch.batch_size, rows, seq_lens, min_len=drafts,
                               lens_bound=f"at least the {drafts} draft tokens verified, at most {_TABLE_WIDTH}")
            extend_lens = torch.full((bs,), drafts, dtype=seq_lens.dtype, device=self.device)
            bound: Optional[int] = drafts
        else:
            bs = self._checked(_BATCH, forward_batch.batch_size, rows, seq_lens)
            extend_lens = forward_batch.extend_seq_lens
            if extend_lens is None:
                raise ValueError(f"forward_batch.extend_seq_lens: expected a device tensor for {mode.value}, got None")
            error = index_tensor_error("forward_batch.extend_seq_lens", extend_lens, self.device, bs)
            if error is not None:
                raise error
            # draft-extend adds at most the draft tokens; a prefill by its longest prompt when
            # the host knows the lengths (it scheduled them), else by all its tokens
            if mode is ForwardMode.DRAFT_EXTEND:
                bound, bound_is = self.num_draft_tokens, "the num_draft_tokens a draft-extend adds"
            else:
                bound = _longest_extend(forward_batch.extend_seq_lens_cpu, bs, self.req_to_token.shape[1])
                bound_is = "the longest of forward_batch.extend_seq_lens_cpu"
            if bs and checks_values(extend_lens):
                self._check_extend_values(extend_lens[:bs], seq_lens[:bs], bound, bound_is)
        self.forward_metadata = self._extend_metadata(bs, rows, seq_lens, extend_lens, bound)

    def _check_extend_values(self, extend_lens: torch.Tensor, seq_lens: torch.Tensor, bound: Optional[int],
                             bound_is: str) -> None:
        """New tokens per request within the grid's bound and within the request's length,
        the cached prefixes within kv_indices (reads the values)."""
        name = "forward_batch.extend_seq_lens"
        if bound is None:
            bound, bound_is = self.req_to_token.shape[1], _TABLE_WIDTH
        error = range_error(name, extend_lens, 0, bound, bound_is, "pass each request's new-token count") or \
            above_error(name, extend_lens, seq_lens, "at most forward_batch.seq_lens at each index (the new tokens are "
                        "part of the length)", "pass seq_lens as cached + new tokens") or \
            total_error("forward_batch.seq_lens", seq_lens - extend_lens, self.kv_indices.shape[0],
                        "cached tokens kv_indices_capacity holds", "raise kv_indices_capacity")
        if error is not None:
            raise error

    # ---- CUDA graphs -------------------------------------------------------------------
    def init_cuda_graph_state(self, max_bs: int, max_num_tokens: int) -> None:
        max_bs = check_int("max_bs", max_bs, low=1, high=self.max_bs, bound="the backend's max_bs")
        self.workspace.reserve(max_bs)
        self._graph_max_bs = max_bs

    def _graph_batch(self, hook: str, bs: Any, req_pool_indices: Any, seq_lens: Any) -> int:
        if not self._graph_max_bs:
            raise RuntimeError(f"{type(self).__name__}.{hook}: expected init_cuda_graph_state() first, got none")
        return _checked_batch(_ARGS, bs, req_pool_indices, seq_lens, req_to_token=self.req_to_token,
                              max_bs=self._graph_max_bs, max_bs_is="the max_bs given to init_cuda_graph_state",
                              capacity=self.kv_indices.shape[0])

    def init_forward_metadata_capture_cuda_graph(self, bs: int, num_tokens: int, req_pool_indices: torch.Tensor,
                                                 seq_lens: torch.Tensor, encoder_lens: Optional[torch.Tensor],
                                                 forward_mode: ForwardMode, spec_info: Optional[Any]) -> None:
        if forward_mode is not ForwardMode.DECODE:
            raise NotImplementedError(f"CUDA graphs: expected decode, got {describe(forward_mode)}")
        bs = self._graph_batch("init_forward_metadata_capture_cuda_graph", bs, req_pool_indices, seq_lens)
        self.forward_metadata = self._decode_metadata(bs, req_pool_indices, seq_lens, use_workspace=True)

    def init_forward_metadata_replay_cuda_graph(self, bs: int, req_pool_indices: torch.Tensor,
                                                seq_lens: torch.Tensor, seq_lens_sum: Optional[int],
                                                encoder_lens: Optional[torch.Tensor], forward_mode: ForwardMode,
                                                spec_info: Optional[Any], seq_lens_cpu: Optional[torch.Tensor]) -> None:
        # Rebuilds the captured buffers in place from device tensors; `seq_lens_sum` and
        # `seq_lens_cpu` are accepted for the interface and never read (they may be None).
        bs = self._graph_batch("init_forward_metadata_replay_cuda_graph", bs, req_pool_indices, seq_lens)
        self.forward_metadata = self._decode_metadata(bs, req_pool_indices, seq_lens, use_workspace=True)

    def get_cuda_graph_seq_len_fill_value(self) -> int:
        return 1

    # ---- compute -----------------------------------------------------------------------
    def _metadata_for(self, hook: str, q: Any, decode: bool) -> TritonMetadata:
        """This step's metadata, once it is of the kind `hook` runs on and `q` fits it."""
        meta = self.forward_metadata
        kind = "decode" if decode else "extend"
        if meta is None or (meta.qo_indptr is None) is not decode:
            got = "none" if meta is None else f"{'extend' if decode else 'decode'} metadata"
            raise RuntimeError(f"{type(self).__name__}.{hook}: expected {kind} metadata from init_forward_metadata() "
                               f"first, got {got}")
        if not isinstance(q, torch.Tensor):
            raise TypeError(f"q: expected a torch.Tensor, got {type(q).__name__}")
        if decode and q.shape[0] != meta.kv_indptr.shape[0] - 1:
            raise ValueError(f"q: expected {meta.kv_indptr.shape[0] - 1} rows (the batch of the last "
                             f"init_forward_metadata), got shape {tuple(q.shape)}")
        return meta

    def forward_decode(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, layer: AttentionLayer,
                       forward_batch: Any, save_kv_cache: bool = True) -> torch.Tensor:
        meta = self._metadata_for("forward_decode", q, decode=True)
        if save_kv_cache:
            self.pool.set_kv_buffer(layer, forward_batch.out_cache_loc, k, v)
        q3 = q.view(q.shape[0], self.num_q_heads, self.head_dim)
        out = torch.empty(q.shape[0], self.num_q_heads, self.head_dim_v, dtype=q.dtype, device=q.device)
        decode_attention_fwd(q3, self.pool.get_key_buffer(layer.layer_id), self.pool.get_value_buffer(layer.layer_id),
                             out,
                             meta.kv_indptr, meta.kv_indices, sm_scale=layer.scaling, logit_cap=layer.logit_cap,
                             max_kv_splits=meta.max_kv_splits, workspace=meta.workspace)
        return out.view(q.shape[0], self.num_q_heads * self.head_dim_v)

    def forward_extend(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, layer: AttentionLayer,
                       forward_batch: Any, save_kv_cache: bool = True) -> torch.Tensor:
        meta = self._metadata_for("forward_extend", q, decode=False)
        if save_kv_cache:
            self.pool.set_kv_buffer(layer, forward_batch.out_cache_loc, k, v)
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
        self.speculative_num_steps = check_int("speculative_num_steps", speculative_num_steps, low=1)
        shared = _SharedWorkspace(num_q_heads, head_dim_v or head_dim, num_kv_heads, req_to_token.device, head_dim)
        # Step i's lengths are at most max_context_len; a step never holds more than the
        # whole request table's worth of slots.
        self.draft_backends: List[TritonAttnBackend] = [
            TritonAttnBackend(num_q_heads=num_q_heads, num_kv_heads=num_kv_heads, head_dim=head_dim,
                              req_to_token=req_to_token, token_to_kv_pool=token_to_kv_pool, max_bs=max_bs,
                              head_dim_v=head_dim_v, workspace=shared)
            for _ in range(self.speculative_num_steps)
        ]
        self.req_to_token, self.max_bs = req_to_token, self.draft_backends[0].max_bs

    def _checked(self, names: _ArgNames, bs: Any, req_pool_indices: Any, seq_lens: Any) -> int:
        """The batch size, once the last step's lengths (seq_lens + steps - 1) fit the
        table too, so an error names the lengths the caller passed."""
        extra = self.speculative_num_steps - 1
        bound = _TABLE_WIDTH if not extra else f"{_TABLE_WIDTH}, less the {extra} tokens the last draft step adds"
        return _checked_batch(names, bs, req_pool_indices, seq_lens, req_to_token=self.req_to_token,
                              max_bs=self.max_bs, extra=extra, lens_bound=bound)

    def _each_step(self, seq_lens: torch.Tensor):
        for step, backend in enumerate(self.draft_backends):
            yield backend, seq_lens + step  # device add: no sync

    def init_forward_metadata(self, forward_batch: Any) -> None:
        bs = self._checked(_BATCH, forward_batch.batch_size, forward_batch.req_pool_indices, forward_batch.seq_lens)
        for backend, lens in self._each_step(forward_batch.seq_lens):
            backend.init_decode_metadata(bs, forward_batch.req_pool_indices, lens)

    def init_cuda_graph_state(self, max_bs: int, max_num_tokens: int) -> None:
        for backend in self.draft_backends:
            backend.init_cuda_graph_state(max_bs, max_num_tokens)

    def init_forward_metadata_capture_cuda_graph(self, bs: int, num_tokens: int, req_pool_indices: torch.Tensor,
                                                 seq_lens: torch.Tensor, encoder_lens: Optional[torch.Tensor],
                                                 forward_mode: ForwardMode, spec_info: Optional[Any]) -> None:
        bs = self._checked(_ARGS, bs, req_pool_indices, seq_lens)
        for backend, lens in self._each_step(seq_lens):
            backend.init_forward_metadata_capture_cuda_graph(bs, num_tokens, req_pool_indices, lens, encoder_lens,
                                                             ForwardMode.DECODE, spec_info)

    def init_forward_metadata_replay_cuda_graph(self, bs: int, req_pool_indices: torch.Tensor,
                                                seq_lens: torch.Tensor, seq_lens_sum: Optional[int],
                                                encoder_lens: Optional[torch.Tensor], forward_mode: ForwardMode,
                                                spec_info: Optional[Any], seq_lens_cpu: Optional[torch.Tensor]) -> None:
        bs = self._checked(_ARGS, bs, req_pool_indices, seq_lens)
        for backend, lens in self._each_step(seq_lens):
            backend.init_forward_metadata_replay_cuda_graph(bs, req_pool_indices, lens, None, encoder_lens,
                                                            ForwardMode.DECODE, spec_info, None)

    def forward_decode(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, layer: AttentionLayer,
                       forward_batch: Any, save_kv_cache: bool = True, step: int = 0) -> torch.Tensor:
        # a negative step would index from the end: another step's metadata, silently
        step = check_int("step", step, low=0, high=self.speculative_num_steps - 1,
                         bound="one of speculative_num_steps")
        return self.draft_backends[step].forward_decode(q, k, v, layer, forward_batch, save_kv_cache)

    def forward_extend(self, q, k, v, layer, forward_batch, save_kv_cache=True):
        raise NotImplementedError("TritonMultiStepDraftBackend: drafting only decodes; use TritonAttnBackend "
                                  "(draft-extend) for extends")


__all__ = ["AttentionLayer", "TritonAttnBackend", "TritonMultiStepDraftBackend", "TritonMetadata",
           "MAX_KV_SPLITS_CAP"]
