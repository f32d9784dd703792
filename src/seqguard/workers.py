"""The process pools lint and the codemod spread files over: forked where the platform
can (workers start with the parent's imports), made on first need (`Pool`), and
workers that never outlive the run that made them."""

from __future__ import annotations

import contextlib
import gc
import os
import sys
import threading
import time
from typing import TYPE_CHECKING, Callable, Optional

# multiprocessing and concurrent.futures load when a pool starts: a pre-commit run on a
# few files never starts one, and they cost it 20 ms of imports.
if TYPE_CHECKING:
    from concurrent.futures import ProcessPoolExecutor


def can_fork() -> bool:
    import multiprocessing

    return "fork" in multiprocessing.get_all_start_methods()


def process_pool(workers: int, then: Optional[Callable[..., None]] = None, args: tuple = ()) -> "ProcessPoolExecutor":
    """`workers` processes, each made to die with this one, then running `then(*args)`
    once as it starts (a forked worker's share of the parent's state)."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    method = "fork" if can_fork() else "spawn"
    return ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context(method),
                               initializer=_start, initargs=(os.getpid(), then, args))


def _start(parent_pid: int, then: Optional[Callable[..., None]], args: tuple) -> None:
    die_with_parent(parent_pid)
    if then is not None:
        then(*args)


def die_with_parent(parent_pid: int) -> None:
    """Pool worker initializer: a worker must not outlive the run (a `kill -9` of
    seqguard once left workers blocked on the task queue forever). On Linux the kernel
    does it (PR_SET_PDEATHSIG); elsewhere a watchdog thread polls the parent's pid."""
    if sys.platform.startswith("linux"):
        try:
            import ctypes
            import signal

            libc = ctypes.CDLL(None, use_errno=True)
            pr_set_pdeathsig = 1
            if libc.prctl(pr_set_pdeathsig, signal.SIGKILL, 0, 0, 0) == 0:
                if os.getppid() != parent_pid:  # the parent died before prctl took hold
                    os._exit(1)
                return
        except (OSError, AttributeError):
            pass

    def watch() -> None:
        while os.getppid() == parent_pid:
            time.sleep(1.0)
        os._exit(1)
    threading.Thread(target=watch, daemon=True, name="seqguard-parent-watch").start()


@contextlib.contextmanager
def collector_paused():
    """Parsing allocates millions of nodes, and each burst of allocations makes the
    cycle collector walk every live object (10-15% of parse time). Syntax trees hold
    no cycles, so reference counting frees them without it."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _chunks(items: list, pieces: int) -> list[list]:
    size = max(1, -(-len(items) // pieces))
    return [items[i:i + size] for i in range(0, len(items), size)]


class Pool:
    """A process pool made on first need (a small run never forks) and shared by every
    phase of a run."""

    def __init__(self, jobs: int) -> None:
        self.jobs = jobs
        self._executor: Optional["ProcessPoolExecutor"] = None

    def map(self, fn, batch: list, threshold: int, *args, chunk_size: Optional[int] = None) -> list:
        """`fn(chunk, *args)` over chunks of `batch`, in this process below `threshold`
        items; small chunks balance uneven work (callers put the largest items first)."""
        if self.jobs <= 1 or len(batch) < threshold:
            return fn(batch, *args)
        if self._executor is None:
            self._executor = process_pool(self.jobs)
        chunks = (_chunks(batch, self.jobs * 4) if chunk_size is None
                  else [batch[i:i + chunk_size] for i in range(0, len(batch), chunk_size)])
        futures = [self._executor.submit(fn, chunk, *args) for chunk in chunks]
        return [row for future in futures for row in future.result()]

    def close(self) -> None:
        if self._executor is not None:
            self._executor.shutdown()
