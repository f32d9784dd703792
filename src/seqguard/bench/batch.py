"""The demo engine's batches: requests, the scheduler's batch and the forward batch
a backend sees, built the way SGLang builds its own, against the contract the
runtime's backends and FutureMap expect.

Invariant: `seq_lens` (device) is always right; `seq_lens_cpu` / `seq_lens_sum` are
either both present and equal to it, or both `None`, and every operation here keeps
an absent mirror absent without a device-to-host copy.
"""

from __future__ import annotations

import dataclasses
from typing import List, Optional, Sequence, Union

import torch

from seqguard.runtime import ForwardMode


@dataclasses.dataclass
class ServerArgs:
    """The settings the decision depends on (a subset of an engine's server args)."""

    attention_backend: str = "triton"
    speculative_algorithm: Optional[str] = None
    enable_two_batch_overlap: bool = False
    disable_piecewise_cuda_graph: bool = True
    disable_cuda_graph: bool = False
    disable_overlap_schedule: bool = False


@dataclasses.dataclass
class Req:
    rid: int
    origin_input_ids: List[int]
    output_ids: List[int] = dataclasses.field(default_factory=list)
    max_new_tokens: int = 16
    req_pool_idx: int = -1
    kv_slots: List[int] = dataclasses.field(default_factory=list)  # every slot reserved for it

    @property
    def seqlen(self) -> int:
        """Tokens in the KV cache for this request, tracked on the host for free."""
        return len(self.origin_input_ids) + len(self.output_ids)

    @property
    def finished(self) -> bool:
        return len(self.output_ids) >= self.max_new_tokens


def host_to_device(values: Sequence[int], device: torch.device | str, dtype: torch.dtype = torch.int64) -> torch.Tensor:
    """A host list on the device without a sync: staged through pinned memory and copied
    asynchronously (a copy from pageable memory would block on the stream)."""
    device = torch.device(device)
    if device.type != "cuda":
        return torch.tensor(list(values), dtype=dtype)
    return torch.tensor(list(values), dtype=dtype, pin_memory=True).to(device, non_blocking=True)


@dataclasses.dataclass
class SpecInfo:
    """Speculative state carried between overlapped steps: each request's pool row in
    the FutureMap and, on the device, the last token the target produced."""
    future_indices: Optional[torch.Tensor] = None
    num_draft_tokens: int = 1
    last_tokens: Optional[torch.Tensor] = None

    def filter(self, keep: torch.Tensor) -> None:
        if self.future_indices is not None:
            self.future_indices = self.future_indices[keep]
        if self.last_tokens is not None:
            self.last_tokens = self.last_tokens[keep]

    def merge(self, other: "SpecInfo") -> None:
        for name in ("future_indices", "last_tokens"):
            mine, theirs = getattr(self, name), getattr(other, name)
            if mine is not None and theirs is not None:
                setattr(self, name, torch.cat([mine, theirs]))


@dataclasses.dataclass
class ScheduleBatch:
    reqs: List[Req]
    req_pool_indices: torch.Tensor
    seq_lens: torch.Tensor
    seq_lens_cpu: Optional[torch.Tensor] = None
    seq_lens_sum: Optional[int] = None
    spec_info: Optional[SpecInfo] = None

    @classmethod
    def init_new(cls, reqs: Sequence[Req], device: torch.device | str, with_mirror: bool) -> "ScheduleBatch":
        lens = [r.seqlen for r in reqs]
        seq_lens_cpu = torch.tensor(lens, dtype=torch.int64)
        return cls(
            reqs=list(reqs),
            req_pool_indices=host_to_device([r.req_pool_idx for r in reqs], device),
            seq_lens=host_to_device(lens, device),
            seq_lens_cpu=seq_lens_cpu if with_mirror else None,
            seq_lens_sum=sum(lens) if with_mirror else None,
        )

    def batch_size(self) -> int:
        return len(self.reqs)

    def is_empty(self) -> bool:
        return not self.reqs

    def prepare_for_decode(self, num_new_tokens: int = 1) -> None:
        self.seq_lens = self.seq_lens + num_new_tokens
        if self.seq_lens_cpu is not None and self.seq_lens_sum is not None:
            self.seq_lens_cpu = self.seq_lens_cpu + num_new_tokens
            self.seq_lens_sum = self.seq_lens_sum + num_new_tokens * len(self.reqs)

    def filter_batch(self, keep_indices: Sequence[int]) -> None:
        keep = host_to_device(keep_indices, self.seq_lens.device)
        self.reqs = [self.reqs[i] for i in keep_indices]
        self.req_pool_indices = self.req_pool_indices[keep]
        self.seq_lens = self.seq_lens[keep]
        if self.spec_info is not None:
            self.spec_info.filter(keep)
        if self.seq_lens_cpu is not None:
            self.seq_lens_cpu = self.seq_lens_cpu[torch.tensor(list(keep_indices), dtype=torch.int64)]
            self.seq_lens_sum = int(self.seq_lens_cpu.sum())
        else:
            self.seq_lens_sum = None

    def merge_batch(self, other: "ScheduleBatch") -> None:
        self.reqs = self.reqs + other.reqs
        self.req_pool_indices = torch.cat([self.req_pool_indices, other.req_pool_indices])
        self.seq_lens = torch.cat([self.seq_lens, other.seq_lens])
        if self.spec_info is not None and other.spec_info is not None:
            self.spec_info.merge(other.spec_info)
        elif self.spec_info is None:
            self.spec_info = other.spec_info
        if (self.seq_lens_cpu is not None and other.seq_lens_cpu is not None
                and self.seq_lens_sum is not None and other.seq_lens_sum is not None):
            self.seq_lens_cpu = torch.cat([self.seq_lens_cpu, other.seq_lens_cpu])
            self.seq_lens_sum = self.seq_lens_sum + other.seq_lens_sum
        else:
            # A half-present mirror would lie about the merged batch: drop it.
            self.seq_lens_cpu = None
            self.seq_lens_sum = None


@dataclasses.dataclass
class ForwardBatch:
    batch_size: int
    req_pool_indices: torch.Tensor
    seq_lens: torch.Tensor
    seq_lens_cpu: Optional[torch.Tensor] = None
    seq_lens_sum: Optional[int] = None
    extend_seq_lens: Optional[torch.Tensor] = None
    extend_seq_lens_cpu: Optional[List[int]] = None
    extend_num_tokens: Optional[int] = None
    spec_info: Optional[SpecInfo] = None
    forward_mode: ForwardMode = ForwardMode.DECODE
    out_cache_loc: Optional[torch.Tensor] = None

    @classmethod
    def init_new(cls, batch: ScheduleBatch,
                 extend_seq_lens: Optional[Union[Sequence[int], torch.Tensor]] = None) -> "ForwardBatch":
        """`extend_seq_lens` may be a host list or a device tensor; the host sum is
        computed only when the mirror exists (otherwise it would cost a sync)."""
        device = batch.seq_lens.device
        extend_tensor, extend_list, extend_tokens = None, None, None
        if extend_seq_lens is not None:
            if isinstance(extend_seq_lens, torch.Tensor):
                extend_tensor = extend_seq_lens.to(device=device, dtype=torch.int64)
                if extend_seq_lens.device.type == "cpu":
                    extend_list = extend_seq_lens.tolist()
            else:
                extend_list = [int(x) for x in extend_seq_lens]
                extend_tensor = host_to_device(extend_list, device)  # a blocking copy would sync the stream
            if extend_list is not None:
                extend_tokens = sum(extend_list)
        seq_lens_sum = None
        if batch.seq_lens_cpu is not None:
            seq_lens_sum = batch.seq_lens_sum if batch.seq_lens_sum is not None else int(batch.seq_lens_cpu.sum())
        return cls(
            batch_size=batch.batch_size(),
            req_pool_indices=batch.req_pool_indices,
            seq_lens=batch.seq_lens,
            seq_lens_cpu=batch.seq_lens_cpu,
            seq_lens_sum=seq_lens_sum,
            extend_seq_lens=extend_tensor,
            extend_seq_lens_cpu=extend_list,
            extend_num_tokens=extend_tokens,
            spec_info=batch.spec_info,
        )
