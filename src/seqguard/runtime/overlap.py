"""The relay of sequence lengths between overlapped scheduler steps.

After a forward, the worker publishes each request's new length (known only on the
device after speculative verify) into a buffer indexed by request-pool row. Before
the next forward, the scheduler resolves them: `batch.seq_lens` always advances on
the device; the host mirror (`seq_lens_cpu`, `seq_lens_sum`) is produced only when
some active backend needs it, and then without synchronising the scheduling stream.
"""

from __future__ import annotations

import os
from typing import Any, Optional

import torch

from seqguard.runtime.attention.base import is_flag_value
from seqguard.runtime.checks import INDEX_DTYPES, check_int, check_tensor, checks_values, describe, range_error
from seqguard.runtime.decision import Decision

DEBUG_ENV = "SEQGUARD_FUTURE_MAP_DEBUG"
POISON = -1  # a consumed row; a resolve that reads it had no fresh publish


class StalePublishError(RuntimeError):
    """Debug mode: a resolve read rows that no publish refreshed since the last resolve."""


def _available(device: torch.device) -> torch.device:
    """`device`, or one clear error when this torch cannot use it (a CPU-only build
    otherwise fails deep inside the first allocation with a bare AssertionError)."""
    if device.type == "cuda":
        if not torch.cuda.is_available():
            raise RuntimeError(f"FutureMap: expected an available device, got {str(device)!r} but "
                               f"torch.cuda.is_available() is False (a CPU-only torch build or no visible GPU); "
                               f"use FutureMap('cpu', ...) or run where a GPU is visible")
        if device.index is not None and device.index >= torch.cuda.device_count():
            raise RuntimeError(f"FutureMap: expected a visible device, got {str(device)!r} with "
                               f"{torch.cuda.device_count()} CUDA device(s) visible; pick an index below that")
    return device


def _future_indices(batch: Any, device: torch.device) -> Any:
    """`batch.spec_info.future_indices`, or one error naming what the batch lacks."""
    spec_info = getattr(batch, "spec_info", None)
    future_indices = getattr(spec_info, "future_indices", None)
    if future_indices is None:
        got = ("no batch.spec_info" if spec_info is None else
               f"batch.spec_info ({type(spec_info).__name__}) without future_indices")
        raise ValueError(f"FutureMap.resolve_seq_lens_cpu: expected batch.spec_info.future_indices (a 1-D int "
                         f"tensor on {device}: each request's FutureMap row, the indices given to publish()), "
                         f"got {got}; set batch.spec_info = SpecInfo(future_indices=...) when the batch is built")
    if getattr(batch, "req_pool_indices", None) is None:
        raise ValueError("FutureMap.resolve_seq_lens_cpu: expected batch.req_pool_indices (one row per "
                         "request), got none; resolve a ScheduleBatch-like object that carries it")
    return future_indices


class FutureMap:
    """Device buffer of published sequence lengths, one slot per request-pool row.

    `needs_cpu_seq_lens` comes from `decide_needs_cpu_seq_lens`. When False no pinned
    buffer or copy stream is allocated and no device-to-host copy ever happens.
    """

    def __init__(self, device: torch.device | str, req_pool_size: int, needs_cpu_seq_lens: bool = True,
                 *, dtype: torch.dtype = torch.int64, debug: Optional[bool] = None) -> None:
        req_pool_size = check_int("req_pool_size", req_pool_size)
        if req_pool_size <= 0:
            raise ValueError(f"req_pool_size: expected a positive pool size, got {req_pool_size}")
        if dtype not in (torch.int32, torch.int64):
            raise TypeError(f"dtype: expected torch.int32 or torch.int64, got {dtype}")
        if not (is_flag_value(needs_cpu_seq_lens) or isinstance(needs_cpu_seq_lens, Decision)):
            raise TypeError(f"FutureMap: needs_cpu_seq_lens: expected True or False (or the Decision of "
                            f"explain_needs_cpu_seq_lens), got {describe(needs_cpu_seq_lens)}; pass "
                            f"decide_needs_cpu_seq_lens(server_args, attn_backends)")
        if debug is not None and not is_flag_value(debug):
            raise TypeError(f"FutureMap: debug: expected True, False or None, got {describe(debug)}")
        self.device = _available(torch.device(device))
        self.req_pool_size = req_pool_size
        self.needs_cpu_seq_lens = bool(needs_cpu_seq_lens)
        self.debug = os.environ.get(DEBUG_ENV, "") not in ("", "0") if debug is None else bool(debug)
        self.seq_lens_buf = torch.zeros(req_pool_size, dtype=dtype, device=self.device)
        self.host_pulls = 0  # device-to-host copies of sequence lengths made by resolve
        self._ready: Optional[torch.cuda.Event] = None
        self._copy_stream: Optional[torch.cuda.Stream] = None
        self._pinned: Optional[torch.Tensor] = None
        self._publishes = 0
        self._resolved_publish = 0
        if self.needs_cpu_seq_lens and self.device.type == "cuda":
            self._copy_stream = torch.cuda.Stream(device=self.device)
            self._pinned = torch.empty(req_pool_size, dtype=dtype, pin_memory=True)
        if self.debug:
            self.seq_lens_buf.fill_(POISON)

    @property
    def has_host_buffers(self) -> bool:
        return self._pinned is not None or self._copy_stream is not None

    def publish(self, future_indices: torch.Tensor, new_seq_lens: torch.Tensor) -> None:
        """Store each row's next length (after a forward) and mark the buffer ready."""
        check_tensor("future_indices", future_indices, ndim=1, dtype=INDEX_DTYPES, device=self.device)
        check_tensor("new_seq_lens", new_seq_lens, ndim=1, dtype=INDEX_DTYPES, device=self.device,
                     numel=future_indices.numel())
        if checks_values(new_seq_lens):
            self._check_rows("future_indices", future_indices)
            # the buffer's dtype may be narrower than the lengths': a length it cannot hold
            # would be wrapped by the copy below
            top = torch.iinfo(self.seq_lens_buf.dtype).max
            error = range_error("new_seq_lens", new_seq_lens, 0, top, f"a length the {self.seq_lens_buf.dtype} "
                                f"buffer holds", "publish each request's token count")
            if error is not None:
                raise error
        self.seq_lens_buf.index_copy_(0, future_indices.long(), new_seq_lens.to(self.seq_lens_buf.dtype))
        if self.device.type == "cuda":
            self._ready = torch.cuda.Event()
            self._ready.record(torch.cuda.current_stream(self.device))
        self._publishes += 1

    def resolve_seq_lens_cpu(self, batch: Any) -> None:
        """Advance `batch.seq_lens` from the published buffer; set or clear the mirror.

        Reads only `batch.spec_info.future_indices` and `batch.req_pool_indices`; writes
        `seq_lens`, `seq_lens_cpu` and `seq_lens_sum`.
        """
        future_indices = _future_indices(batch, self.device)
        check_tensor("batch.spec_info.future_indices", future_indices, ndim=1, dtype=INDEX_DTYPES,
                     device=self.device)
        if checks_values(future_indices):
            self._check_rows("batch.spec_info.future_indices", future_indices)
        if future_indices.numel() != batch.req_pool_indices.numel():
            raise ValueError(f"batch.spec_info.future_indices: expected {batch.req_pool_indices.numel()} rows "
                             f"(one per request), got {future_indices.numel()}")
        if self.debug and self._publishes == self._resolved_publish:
            raise StalePublishError("FutureMap.resolve_seq_lens_cpu: expected a publish since the last resolve, "
                                    "got none; publish the new lengths after every forward")
        self._resolved_publish = self._publishes
        rows = future_indices.long()
        if self.device.type == "cuda" and self.needs_cpu_seq_lens:
            self._resolve_with_mirror_cuda(batch, rows)
            return
        if self._ready is not None:
            torch.cuda.current_stream(self.device).wait_event(self._ready)  # on the GPU, not the host
        seq_lens = self.seq_lens_buf.index_select(0, rows)
        self._check_and_poison(seq_lens, rows)
        batch.seq_lens = seq_lens
        if not self.needs_cpu_seq_lens:
            batch.seq_lens_cpu = None
            batch.seq_lens_sum = None
            return
        # CPU device: the "host mirror" is a copy of the same memory, no sync involved.
        batch.seq_lens_cpu = seq_lens.clone()
        batch.seq_lens_sum = int(batch.seq_lens_cpu.sum())
        self.host_pulls += 1

    def _check_rows(self, name: str, future_indices: torch.Tensor) -> None:
        """A ValueError unless every row is one of the buffer's (reads the values)."""
        error = range_error(name, future_indices, 0, self.req_pool_size - 1, "the FutureMap's req_pool_size rows",
                            "pass each request's FutureMap row")
        if error is not None:
            raise error

    def _resolve_with_mirror_cuda(self, batch: Any, future_indices: torch.Tensor) -> None:
        """Gather and copy on a private stream gated on the publish event: the host waits
        for this copy only, never for the work queued on the scheduling stream."""
        stream = self._copy_stream
        scheduling = torch.cuda.current_stream(self.device)
        n = future_indices.numel()
        with torch.cuda.stream(stream):
            if self._ready is not None:
                stream.wait_event(self._ready)
            future_indices.record_stream(stream)
            seq_lens = self.seq_lens_buf.index_select(0, future_indices)
            self._check_and_poison(seq_lens, future_indices)
            host = self._pinned[:n]
            host.copy_(seq_lens, non_blocking=True)
            copied = torch.cuda.Event()
            copied.record(stream)
        scheduling.wait_event(copied)  # later device work sees the gathered lengths
        seq_lens.record_stream(scheduling)
        copied.synchronize()
        batch.seq_lens = seq_lens
        batch.seq_lens_cpu = host.clone()  # the pinned buffer is reused next step
        batch.seq_lens_sum = int(batch.seq_lens_cpu.sum())
        self.host_pulls += 1

    def _check_and_poison(self, seq_lens: torch.Tensor, future_indices: torch.Tensor) -> None:
        """`future_indices`: int64 rows."""
        if not self.debug:
            return
        # Debug mode only: this check reads the gathered lengths on the host.
        if seq_lens.numel() and int(seq_lens.min()) < 0:
            raise StalePublishError("FutureMap.resolve_seq_lens_cpu: expected freshly published rows, got "
                                    "a consumed or never-published row; publish every request's row "
                                    "before resolving it")
        self.seq_lens_buf.index_fill_(0, future_indices, POISON)
