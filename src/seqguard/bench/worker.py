"""The speculative worker: a target and a draft model, their KV pools, and the GPU
work of one spec-v2 step (draft K tokens, verify them, re-extend the draft), all
from device tensors. Accepted counts stay on the device; new lengths go to FutureMap."""

from __future__ import annotations

import dataclasses
from typing import List, Optional, Sequence, Tuple

import torch

from seqguard.bench.model import ModelConfig, TinyDecoder
from seqguard.bench.pool import ReqToTokenPool, TokenKVPool
from seqguard.bench.tp import TensorParallel
from seqguard.bench.batch import ForwardBatch, Req, ScheduleBatch, host_to_device
from seqguard.runtime import ForwardMode, SpecWorkerBackends, TritonAttnBackend, TritonMultiStepDraftBackend


@dataclasses.dataclass
class StepOutput:
    tokens: torch.Tensor        # [bs, K+1] target tokens; the first accepted+1 are kept
    accepted: torch.Tensor      # [bs] accepted draft tokens (0..K), device-only
    new_seq_lens: torch.Tensor  # [bs] committed tokens after the step


class SpecWorker:
    def __init__(self, target: ModelConfig, draft_layers: int, draft_steps: int, max_running: int,
                 pool_rows: int, device: torch.device | str, seed: int, tp: TensorParallel = TensorParallel()) -> None:
        self.device = torch.device(device)
        self.config = target
        self.draft_steps = draft_steps
        self.tp = tp
        self.target = TinyDecoder(target, self.device, seed, tp=tp)
        draft_config = dataclasses.replace(target, num_layers=draft_layers)
        self.draft = TinyDecoder(draft_config, self.device, seed, share_from=self.target, tp=tp)
        self.req_pool = ReqToTokenPool(pool_rows, target.max_context_len, self.device)
        slots = pool_rows * target.max_context_len
        # This rank's heads only: the KV cache and the backends see 1/tp of them.
        q_heads, kv_heads = target.num_q_heads // tp.size, tp.local_kv_heads(target.num_kv_heads)
        self.target_kv = TokenKVPool(slots, target.num_layers, kv_heads, target.head_dim, target.dtype, self.device)
        self.draft_kv = TokenKVPool(slots, draft_layers, kv_heads, target.head_dim, target.dtype, self.device)
        common = dict(num_q_heads=q_heads, num_kv_heads=kv_heads, head_dim=target.head_dim,
                      req_to_token=self.req_pool.req_to_token, max_bs=max_running)
        verify_tokens = draft_steps + 1
        # The runtime's own record of a speculative worker's backends: the bench's decision
        # reads `backends.attn_backends`, as an engine's scheduler would.
        self.backends = SpecWorkerBackends(
            target=TritonAttnBackend(token_to_kv_pool=self.target_kv, num_draft_tokens=verify_tokens,
                                     kv_indices_capacity=max_running * target.max_context_len, **common),
            draft=TritonMultiStepDraftBackend(speculative_num_steps=draft_steps, token_to_kv_pool=self.draft_kv,
                                              **common),
            draft_extend=TritonAttnBackend(token_to_kv_pool=self.draft_kv, num_draft_tokens=verify_tokens, **common))
        self._offsets = torch.arange(verify_tokens, device=self.device)
        self._graphs = None

    # ---- admission -------------------------------------------------------------------
    def admit(self, reqs: Sequence[Req]) -> None:
        """Give each request a pool row and all the KV slots it can ever need, in a
        random order (a paged cache in earnest); host-side bookkeeping only."""
        for req in reqs:
            need = len(req.origin_input_ids) + req.max_new_tokens + 2 * (self.draft_steps + 1)
            if need > self.config.max_context_len:
                raise ValueError(f"request {req.rid}: expected at most {self.config.max_context_len} tokens "
                                 f"(max_context_len), got {need}")
            order = torch.randperm(need, generator=torch.Generator().manual_seed(req.rid)).tolist()
            req.req_pool_idx, req.kv_slots = self._claim_row(need, order)

    def release(self, reqs: Sequence[Req]) -> None:
        for req in reqs:
            self.target_kv.free(req.kv_slots)
            self.draft_kv.free(req.kv_slots)
            self.req_pool.free(req.req_pool_idx)

    def prefill(self, reqs: Sequence[Req]) -> torch.Tensor:
        """Run the prompts through target and draft; returns each request's first token."""
        lengths = [len(r.origin_input_ids) for r in reqs]
        ids = host_to_device([t for r in reqs for t in r.origin_input_ids], self.device)
        positions = host_to_device([p for n in lengths for p in range(n)], self.device)
        rows = host_to_device([r.req_pool_idx for r in reqs], self.device)
        token_rows = host_to_device([r.req_pool_idx for r, n in zip(reqs, lengths) for _ in range(n)], self.device)
        seq_lens = host_to_device(lengths, self.device)
        fb = ForwardBatch(batch_size=len(reqs), req_pool_indices=rows, seq_lens=seq_lens,
                          extend_seq_lens=seq_lens, extend_seq_lens_cpu=lengths, forward_mode=ForwardMode.EXTEND,
                          out_cache_loc=self.req_pool.req_to_token[token_rows, positions].long())
        last = torch.cumsum(seq_lens, 0) - 1
        logits = self._run(self.target, self.backends.target, ids, positions, fb, last)
        self._run(self.draft, self.backends.draft_extend, ids, positions, fb, last)
        return logits.argmax(-1)

    def reserve_padding_row(self) -> int:
        """A pool row with a few KV slots of its own, for the padded rows of a captured
        step to read and write (never a live request's slots)."""
        row, _ = self._claim_row(2 * (self.draft_steps + 1) + 2)
        return row

    def _claim_row(self, need: int, order: Optional[List[int]] = None) -> Tuple[int, List[int]]:
        """A pool row and `need` KV slots in both caches (the draft cache mirrors the
        target's slot numbers), written into `req_to_token` in `order` if given."""
        row = self.req_pool.alloc()
        slots = self.target_kv.alloc(need)
        self.draft_kv.alloc(need)
        if order is not None:
            slots = [slots[i] for i in order]
        self.req_pool.req_to_token[row, :need] = host_to_device(slots, self.device, torch.int32)
        return row, slots

    # ---- one speculative step ----------------------------------------------------------
    def use_cuda_graphs(self, max_bs: int) -> None:
        """Capture the decode step for every padded batch size up to `max_bs` (CUDA only)."""
        from seqguard.bench.graphs import StepGraphs

        graphs = StepGraphs(self.device, self.reserve_padding_row(), max_bs)
        graphs.capture(self.eager_decode_step)
        self._graphs = graphs

    def decode_step(self, batch: ScheduleBatch) -> StepOutput:
        graphs = self._graphs
        if graphs is None or batch.batch_size() > graphs.max_bs:
            return self.eager_decode_step(batch)
        output, batch.spec_info.last_tokens = graphs.replay(batch)
        return output

    def eager_decode_step(self, batch: ScheduleBatch) -> StepOutput:
        k = self.draft_steps
        bs = batch.batch_size()
        rows = batch.req_pool_indices
        committed = batch.seq_lens
        table = self.req_pool.req_to_token
        # Draft: K autoregressive steps; step i attends to committed + i + 1 tokens.
        draft_fb = ForwardBatch(batch_size=bs, req_pool_indices=rows, seq_lens=committed + 1)
        self.backends.draft.init_forward_metadata(draft_fb)
        token = batch.spec_info.last_tokens
        drafts = []
        for step in range(k):
            positions = committed + step
            draft_fb.out_cache_loc = table[rows, positions].long()
            logits = self.draft.forward(
                token, positions, draft_fb,
                lambda q, key, value, layer, s=step: self.backends.draft.forward_decode(
                    q, key, value, layer, draft_fb, step=s))
            token = logits.argmax(-1)
            drafts.append(token)
        draft_tokens = torch.stack(drafts, 1)                                # [bs, K]
        # Verify the chain [last, d1..dK] with the target.
        inputs = torch.cat([batch.spec_info.last_tokens[:, None], draft_tokens], 1)
        positions = committed[:, None] + self._offsets                      # [bs, K+1]
        verify_fb = ForwardBatch(batch_size=bs, req_pool_indices=rows, seq_lens=committed + k + 1,
                                 forward_mode=ForwardMode.TARGET_VERIFY,
                                 out_cache_loc=table[rows[:, None], positions].reshape(-1).long())
        logits = self._run(self.target, self.backends.target, inputs.reshape(-1), positions.reshape(-1), verify_fb)
        target_tokens = logits.argmax(-1).view(bs, k + 1)
        matches = (draft_tokens == target_tokens[:, :k]).to(torch.int64)
        accepted = torch.cumprod(matches, 1).sum(1)                          # device-only, varies per request
        # Re-extend the draft over the same chain so its cache holds every accepted token.
        extend_fb = dataclasses.replace(verify_fb, forward_mode=ForwardMode.DRAFT_EXTEND,
                                        extend_seq_lens=torch.full_like(committed, k + 1))
        self._run(self.draft, self.backends.draft_extend, inputs.reshape(-1), positions.reshape(-1), extend_fb)
        batch.spec_info.last_tokens = target_tokens.gather(1, accepted[:, None]).squeeze(1)
        return StepOutput(target_tokens, accepted, committed + accepted + 1)

    def _run(self, model: TinyDecoder, backend: TritonAttnBackend, ids: torch.Tensor, positions: torch.Tensor,
             fb: ForwardBatch, logits_rows: Optional[torch.Tensor] = None) -> torch.Tensor:
        backend.init_forward_metadata(fb)
        return model.forward(ids, positions, fb,
                             lambda q, key, value, layer: backend.forward_extend(q, key, value, layer, fb),
                             logits_rows)
