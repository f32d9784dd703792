"""The overlapped scheduler: while the GPU runs step N, the CPU resolves lengths,
filters finished requests, admits new ones and launches step N+1; step N's tokens
are read back one step later. Whether resolving lengths stalls that pipeline is
exactly what `needs_cpu_seq_lens` decides."""

from __future__ import annotations

import dataclasses
import time
from typing import Dict, List, Optional, Tuple

import torch

from seqguard.bench.sentinel import SyncSentinel
from seqguard.bench.worker import SpecWorker
from seqguard.bench.batch import Req, ScheduleBatch, SpecInfo
from seqguard.runtime import FutureMap, decode_total_seq_lens


@dataclasses.dataclass
class StepRecord:
    wall_s: float
    host_s: float                       # host time not spent blocked on the device
    pre_launch_s: float = 0.0           # of it, the part before the decode launch starts
    tokens: int = 0
    # (start, end) events around each piece of the step's device work (prefill, decode):
    # recorded as the work is queued, so a start waits for earlier work and the span is
    # the device's own time on that piece, never host time spent before it
    gpu_spans: List[Tuple[str, torch.cuda.Event, torch.cuda.Event]] = dataclasses.field(default_factory=list)

    def gpu_ms(self, kind: Optional[str] = None) -> float:
        """Device time of the step's work, or of one kind of it ("prefill", "decode")."""
        return sum(start.elapsed_time(end) for what, start, end in self.gpu_spans if kind in (None, what))


@dataclasses.dataclass
class _InFlight:
    """A launched step whose results are read back on the next iteration."""
    reqs: List[Req]
    tokens: torch.Tensor
    accepted: torch.Tensor
    first_tokens: Optional[torch.Tensor]
    first_reqs: List[Req]
    ready: Optional[torch.cuda.Event]


def _to_host(tensor: torch.Tensor) -> torch.Tensor:
    """Start an asynchronous copy into pinned memory (read after the step's event)."""
    if tensor.device.type != "cuda":
        return tensor.clone()
    host = torch.empty(tensor.shape, dtype=tensor.dtype, pin_memory=True)
    host.copy_(tensor, non_blocking=True)
    return host


class OverlapScheduler:
    def __init__(self, worker: SpecWorker, future_map: FutureMap, max_running: int,
                 arrivals: Dict[int, List[Req]], sentinel: SyncSentinel, host_work_s: float = 0.0,
                 prep_work_s: float = 0.0) -> None:
        self.worker = worker
        self.future_map = future_map
        self.max_running = max_running
        self.arrivals = arrivals
        self.sentinel = sentinel
        self.host_work_s = host_work_s
        self.prep_work_s = prep_work_s
        self.device = worker.device
        self.batch: Optional[ScheduleBatch] = None
        self.waiting: List[Req] = []
        self.finished: List[Req] = []
        self.records: List[StepRecord] = []
        self.metrics: List[int] = []      # decode_total_seq_lens per step, as a server would log it
        self._in_flight: Optional[_InFlight] = None
        self._pending_in_flight: Optional[_InFlight] = None
        self._new: Optional[Tuple[List[Req], torch.Tensor]] = None
        self._needs_mirror = future_map.needs_cpu_seq_lens

    def run(self, max_steps: int) -> List[Req]:
        for step in range(max_steps):
            if self._idle(step):
                break
            self._iteration(step)
        blocked = self._process_results()
        if self.records and blocked is not None:
            self.records[-1].host_s -= blocked
        return sorted(self.finished + (self.batch.reqs if self.batch else []) + self.waiting, key=lambda r: r.rid)

    def _idle(self, step: int) -> bool:
        pending_arrivals = any(s >= step for s in self.arrivals)
        running = self.batch is not None and not self.batch.is_empty()
        return not (pending_arrivals or running or self.waiting or self._in_flight)

    def _iteration(self, step: int) -> None:
        start = time.perf_counter()
        blocked = 0.0
        with self.sentinel.step(step):
            blocked += self._resolve()
            self._drop_finished()
            spans: List[Tuple[str, torch.cuda.Event, torch.cuda.Event]] = []
            self._admit(step, spans)
            _busy_wait(self.prep_work_s)  # scheduling work that needs this step's lengths
            # The device can start the decode while the host is still launching it, so
            # the launch's own host time counts as after the launch, not before.
            pre_launch = time.perf_counter() - start - blocked
            self._launch(step, spans)
        blocked += self._process_results() or 0.0
        _busy_wait(self.host_work_s)  # work on the previous step's tokens
        wall = time.perf_counter() - start
        self.records.append(StepRecord(wall, wall - blocked, pre_launch, gpu_spans=spans))

    # ---- the step's host work ----------------------------------------------------------
    def _resolve(self) -> float:
        """Advance lengths from the previous step's publish; with the mirror this waits
        for that step to finish on the device (the stall being measured)."""
        if self.batch is None or self.batch.is_empty() or self.batch.spec_info.future_indices is None:
            return 0.0
        started = time.perf_counter()
        self.future_map.resolve_seq_lens_cpu(self.batch)
        return time.perf_counter() - started if self._needs_mirror else 0.0

    def _drop_finished(self) -> None:
        if self.batch is None:
            return
        done = [r for r in self.batch.reqs if r.finished]
        if not done:
            return
        keep = [i for i, r in enumerate(self.batch.reqs) if not r.finished]
        self.finished.extend(done)
        # Stream order protects the slots: work queued later reuses them only after
        # the in-flight step that may still write them.
        self.worker.release(done)
        self.batch.filter_batch(keep)

    def _admit(self, step: int, spans: list) -> None:
        self.waiting.extend(self.arrivals.pop(step, []))
        room = self.max_running - (self.batch.batch_size() if self.batch else 0)
        new, self.waiting = self.waiting[:room], self.waiting[room:]
        if not new:
            self._new = None
            return
        self.worker.admit(new)
        start = self._record_event()
        first = self.worker.prefill(new)
        self._add_span(spans, "prefill", start)
        fresh = ScheduleBatch.init_new(new, self.device, with_mirror=self._needs_mirror)
        fresh.spec_info = SpecInfo(future_indices=fresh.req_pool_indices.clone(),
                                   num_draft_tokens=self.worker.draft_steps + 1, last_tokens=first)
        self._new = (new, first)
        if self.batch is None or self.batch.is_empty():
            self.batch = fresh
        else:
            self.batch.merge_batch(fresh)

    def _record_event(self) -> Optional[torch.cuda.Event]:
        if self.device.type != "cuda":
            return None
        event = torch.cuda.Event(enable_timing=True)
        event.record()
        return event

    def _add_span(self, spans: list, kind: str, start: Optional[torch.cuda.Event]) -> None:
        if start is not None:
            spans.append((kind, start, self._record_event()))

    def _launch(self, step: int, spans: list) -> None:
        """Queue the step's decode work and its read-back."""
        batch = self.batch
        if batch is None or batch.is_empty():
            return
        self.metrics.append(decode_total_seq_lens(batch))
        start = self._record_event()
        output = self.worker.decode_step(batch)
        self.future_map.publish(batch.spec_info.future_indices, output.new_seq_lens)
        self._add_span(spans, "decode", start)
        new_reqs, first = self._new if self._new else ([], None)
        ready = None
        copies = (_to_host(output.tokens), _to_host(output.accepted), _to_host(first) if first is not None else None)
        if self.device.type == "cuda":
            ready = torch.cuda.Event()
            ready.record()
        self._pending_in_flight = _InFlight(list(batch.reqs), copies[0], copies[1], copies[2], list(new_reqs), ready)

    def _process_results(self) -> Optional[float]:
        """Read back the previous step's tokens (its GPU work is done or nearly, since
        the device is already busy with the step just launched)."""
        previous, self._in_flight = self._in_flight, self._pending_in_flight
        self._pending_in_flight = None
        if previous is None:
            return None
        started = time.perf_counter()
        if previous.ready is not None:
            previous.ready.synchronize()
        blocked = time.perf_counter() - started
        if previous.first_tokens is not None:
            for req, token in zip(previous.first_reqs, previous.first_tokens.tolist()):
                req.output_ids.append(int(token))
        tokens, accepted = previous.tokens.tolist(), previous.accepted.tolist()
        count = 0
        for req, row, a in zip(previous.reqs, tokens, accepted):
            room = req.max_new_tokens - len(req.output_ids)
            kept = row[: a + 1][: max(room, 0)]
            req.output_ids.extend(kept)
            count += len(kept)
        if self.records:
            self.records[-1].tokens += count
        return blocked



def _busy_wait(seconds: float) -> None:
    """Stand-in for a real scheduler's host work (policy, metadata, detokenizing)."""
    if seconds <= 0:
        return
    until = time.perf_counter() + seconds
    while time.perf_counter() < until:
        pass
