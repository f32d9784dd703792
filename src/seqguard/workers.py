"""The process pool lint and the codemod spread files over: forked where the platform
can (workers start with the parent's imports), and workers that never outlive the
run that made them."""

from __future__ import annotations

import multiprocessing
import os
import sys
import threading
import time
from concurrent.futures import ProcessPoolExecutor
from typing import Callable, Optional


def can_fork() -> bool:
    return "fork" in multiprocessing.get_all_start_methods()


def process_pool(workers: int, then: Optional[Callable[..., None]] = None, args: tuple = ()) -> ProcessPoolExecutor:
    """`workers` processes, each made to die with this one, then running `then(*args)`
    once as it starts (a forked worker's share of the parent's state)."""
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
