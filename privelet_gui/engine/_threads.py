"""The release's worker threads, kept from one release to the next.

Starting a pool's threads for every release cost about 3 ms of a 2**21-cell Privelet+ release
(some 21 ms on two threads, measured here): a new thread waits for the GIL to say it has
started, while the threads already running hold it. Each process keeps one pool per number
of threads (a forked child starts its own: its parent's threads are not in it); the threads
idle between releases and end with the interpreter.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterable
from concurrent.futures import Future, ThreadPoolExecutor, wait
from typing import Any

__all__ = ["kept_pool", "settle", "usable_cores"]

_POOLS: dict[tuple[int, int], ThreadPoolExecutor] = {}
_LOCK = threading.Lock()


def usable_cores() -> int:
    """The CPUs this process may run on (its affinity where the platform says, else all)."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def kept_pool(workers: int) -> ThreadPoolExecutor:
    """This process's pool of ``workers`` threads (made on first use). Its users wait for the
    work they submit (a pool is shared, so nobody shuts it down), and never submit from inside
    it (work that waits for work in the same pool could wait for ever)."""
    key = (os.getpid(), workers)
    with _LOCK:
        pool = _POOLS.get(key)
        if pool is None:
            pool = _POOLS[key] = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="privelet")
        return pool


def settle(futures: Iterable[Future[Any]]) -> None:
    """After an error or a cancel: drop the parts not started and wait for the running ones, so
    that nothing still writes the output (or a slab) when the caller returns."""
    futures = list(futures)
    for future in futures:
        future.cancel()
    wait(futures)
