"""Decode steps replayed from CUDA graphs, as a serving engine runs them.

A speculative step is a few hundred small launches (draft, verify, draft-extend over
every layer). Launched one by one they cost the host more than the device spends on
them, and the device then waits for launches whatever the scheduler does. Engines
capture the step once per padded batch size at start-up and replay it, so the host
pays one launch per step; this module does the same for `SpecWorker.decode_step`.

Everything a step reads lives in static buffers: pool rows, committed lengths and
last tokens are copied in before each replay, and rows past the batch are pointed at
a reserved padding row whose few KV slots absorb their writes. The attention
metadata is rebuilt inside the graph from those device tensors (no host lengths:
that is what lets the whole step be captured at all).
"""

from __future__ import annotations

import dataclasses
from typing import Callable, Dict, List, Tuple

import torch


def capture_sizes(max_bs: int) -> List[int]:
    """Padded batch sizes to capture: 1, 2, 4, 8, then every 8 (engines' usual ladder)."""
    sizes = [s for s in (1, 2, 4) if s < max_bs] + list(range(8, max_bs, 8))
    return sizes + [max_bs]


@dataclasses.dataclass
class _StaticSpecInfo:
    last_tokens: torch.Tensor


@dataclasses.dataclass
class _StaticBatch:
    """The slice of a ScheduleBatch a decode step reads, over static buffers."""
    req_pool_indices: torch.Tensor
    seq_lens: torch.Tensor
    spec_info: _StaticSpecInfo

    def batch_size(self) -> int:
        return self.req_pool_indices.shape[0]


@dataclasses.dataclass
class _Captured:
    graph: torch.cuda.CUDAGraph
    output: object                 # the worker's StepOutput, over graph-owned memory
    last_tokens: torch.Tensor


class StepGraphs:
    """`replay(batch)` runs a captured decode step. It keeps no reference to the worker
    (the worker holds it), so dropping the worker frees the KV pools at once."""

    def __init__(self, device: torch.device, padding_row: int, max_bs: int) -> None:
        self.sizes = capture_sizes(max_bs)
        self.padding_row = padding_row
        size = self.sizes[-1]
        self._rows = torch.full((size,), self.padding_row, dtype=torch.int64, device=device)
        self._seq_lens = torch.ones(size, dtype=torch.int64, device=device)
        self._last_tokens = torch.zeros(size, dtype=torch.int64, device=device)
        self._graphs: Dict[int, _Captured] = {}

    @property
    def max_bs(self) -> int:
        return self.sizes[-1]

    def capture(self, step: Callable[[_StaticBatch], object]) -> None:
        """Capture `step` (an eager decode step) at every size, largest first so the
        shared memory pool is sized once. Call before serving: capturing synchronises."""
        pool = torch.cuda.graph_pool_handle()
        for size in reversed(self.sizes):
            batch = self._static(size)
            side = torch.cuda.Stream()
            side.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(side):  # compile kernels and settle the allocator outside the capture
                step(batch)
            torch.cuda.current_stream().wait_stream(side)
            batch = self._static(size)
            graph = torch.cuda.CUDAGraph()
            # thread_local: a sync or other unsafe call from this thread still fails the
            # capture, but another thread's allocation (a pinned staging buffer, a
            # compile worker) no longer invalidates it, as global mode would.
            with torch.cuda.graph(graph, pool=pool, capture_error_mode="thread_local"):
                output = step(batch)
            self._graphs[size] = _Captured(graph, output, batch.spec_info.last_tokens)
        torch.cuda.synchronize()

    def replay(self, batch) -> Tuple[object, torch.Tensor]:
        """Returns the step's output views (valid until the next replay: the scheduler
        consumes them in stream order before that) and the batch's next last tokens."""
        bs = batch.batch_size()
        size = next(s for s in self.sizes if s >= bs)
        captured = self._graphs[size]
        self._rows[:bs].copy_(batch.req_pool_indices)
        self._seq_lens[:bs].copy_(batch.seq_lens)
        self._last_tokens[:bs].copy_(batch.spec_info.last_tokens)
        if bs < size:  # rows a larger batch left behind point back at the padding row
            self._rows[bs:size].fill_(self.padding_row)
            self._seq_lens[bs:size].fill_(1)
        captured.graph.replay()
        out = captured.output
        step = type(out)(out.tokens[:bs], out.accepted[:bs], out.new_seq_lens[:bs])
        return step, captured.last_tokens[:bs].clone()  # the batch keeps this past the next replay

    def _static(self, size: int) -> _StaticBatch:
        return _StaticBatch(self._rows[:size], self._seq_lens[:size], _StaticSpecInfo(self._last_tokens[:size]))
