"""Proof that a decode step does not synchronise: on CUDA the step runs under
`torch.cuda.set_sync_debug_mode("error")`; everywhere, device-to-host pulls of
sequence lengths are counted (FutureMap and the codemod's fallback helpers)."""

from __future__ import annotations

import contextlib
from typing import Iterator

import torch

from seqguard.runtime import fallback


class SyncDetectedError(RuntimeError):
    """Something synchronised the host with the device inside a guarded step."""


class SyncSentinel:
    def __init__(self, enabled: bool, device: torch.device) -> None:
        self.enabled = enabled
        self.device = device
        self.checked_steps = 0

    @contextlib.contextmanager
    def step(self, number: int) -> Iterator[None]:
        if not self.enabled:
            yield
            return
        pulls_before = fallback.total_lazy_host_pulls()
        cuda = self.device.type == "cuda"
        if cuda:
            torch.cuda.set_sync_debug_mode("error")
        try:
            yield
        except RuntimeError as error:
            if cuda and "synchroniz" in str(error).lower():
                raise SyncDetectedError(f"decode step {number}: expected no device sync (no active backend needs "
                                        f"the host mirror), got one: {error}") from error
            raise
        finally:
            if cuda:
                torch.cuda.set_sync_debug_mode(0)
        pulled = fallback.total_lazy_host_pulls() - pulls_before
        if pulled:
            raise SyncDetectedError(f"decode step {number}: expected no host pull of sequence lengths, got {pulled} "
                                    f"through seqguard's fallback helpers")
        self.checked_steps += 1
