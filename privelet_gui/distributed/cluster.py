"""Connecting to a Dask cluster (or starting one on this machine), and waiting for its work.

Dask and dask.distributed are imported when a client is made, never with this module.
"""

from __future__ import annotations

import contextlib
import logging
import shutil
import tempfile
import time
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

from ..engine import thread_count, usable_cores
from ..engine.errors import PriveletError
from ..engine.progress import Progress

if TYPE_CHECKING:
    from distributed import Client, Future

__all__ = ["INSTALL_HINT", "dask_client", "require_dask", "wait_for"]

INSTALL_HINT = "install the optional part with: pip install 'privelet-gui[dask]'"

# Worker processes give the memory of freed arrays of 1 MiB or more back at once (glibc
# otherwise keeps much of it, and a worker that looks full pauses although it holds no data).
_WORKER_ENVIRONMENT = {"MALLOC_MMAP_THRESHOLD_": str(1 << 20), "ARROW_DEFAULT_MEMORY_POOL": "system"}
# How often a wait for cluster work checks for a cancel request (seconds).
_POLL_SECONDS = 0.2
# How long no task may finish before the workers are checked for a pause (seconds).
_STALL_SECONDS = 30.0
# How long a cancelled run waits for the tasks already running to end (seconds).
_DRAIN_SECONDS = 60.0


def require_dask() -> None:
    """Refuse, with what to install, when dask, dask.distributed or zarr is missing."""
    try:
        import dask.array  # noqa: F401
        import distributed  # noqa: F401
        import zarr  # noqa: F401
    except ImportError as exc:
        raise PriveletError(f"running on a Dask cluster needs {exc.name or 'dask'}, which is not installed; {INSTALL_HINT}") from None


@contextlib.contextmanager
def dask_client(
    address: str | None = None,
    *,
    workers: int | None = None,
    memory_limit: str | int | None = "auto",
    timeout: float = 10.0,
) -> Iterator[Client]:
    """A client of the Dask scheduler at ``address``, or of a new local cluster.

    Without ``address``: a cluster of ``workers`` processes on this machine (default: one
    per core, at most 8), one thread each, each allowed ``memory_limit`` (bytes or text such
    as ``"4GB"``; ``"auto"``: the machine's memory shared out), listening on loopback only
    (free ports),
    spilling to a temporary folder that is deleted with the cluster. The cluster and its
    processes end when the block ends. ``timeout``: seconds to wait for the scheduler at ``address``.
    """
    require_dask()
    from distributed import Client, LocalCluster

    if address:
        try:
            client = Client(address, timeout=f"{timeout}s")
        except (OSError, TimeoutError, ValueError) as exc:
            raise PriveletError(
                f"cannot reach the Dask scheduler at {address} ({_first_line(exc)}); check the address "
                "(e.g. tcp://10.0.0.5:8786) and that the scheduler runs, or give no address for a cluster on this machine"
            ) from None
        with client:
            yield client
        return
    import dask

    spill = tempfile.mkdtemp(prefix="privelet-dask-")
    environment = {**dask.config.get("distributed.nanny.pre-spawn-environ", {}), **_WORKER_ENVIRONMENT}
    try:
        with dask.config.set({"distributed.nanny.pre-spawn-environ": environment}), LocalCluster(
            n_workers=usable_cores() if workers is None else thread_count(0, workers),
            threads_per_worker=1,
            processes=True,
            memory_limit=memory_limit,
            host="127.0.0.1",
            dashboard_address="127.0.0.1:0",  # its status pages, on loopback and a free port
            local_directory=spill,
            silence_logs=logging.ERROR,
        ) as cluster, Client(cluster) as client:
            yield client
    finally:
        shutil.rmtree(spill, ignore_errors=True)


def wait_for(client: Client, futures: Sequence[Future], steps: Progress, stage: str) -> list[Any]:
    """The results of ``futures``, reporting their completion to ``steps`` and honouring a
    cancel request; on an error or a cancel, the outstanding work is cancelled (and the
    tasks already running are waited for, so that none writes anything afterwards)."""
    from distributed import wait

    pending = set(futures)
    total = max(len(futures), 1)
    progressed = time.monotonic()
    try:
        while pending:
            before = len(pending)
            with contextlib.suppress(TimeoutError):  # nothing finished: check for a cancel below
                _, pending = wait(pending, timeout=_POLL_SECONDS, return_when="FIRST_COMPLETED")
            for future in futures:
                if future.status == "error":
                    future.result()  # raises the task's error here
            done = len(futures) - len(pending)
            steps.report(done / total, f"{stage} {done:,} of {len(futures):,}")
            if len(pending) < before:
                progressed = time.monotonic()
            elif time.monotonic() - progressed > _STALL_SECONDS:
                _check_not_paused(client, stage)
                progressed = time.monotonic()
        return client.gather(list(futures))
    except BaseException as exc:
        drain(client, futures)
        if _is_lost_work(exc):
            raise PriveletError(
                f"a Dask worker died or lost its data while {stage.split(':')[0]} (most often: it ran out of memory); "
                "give the workers more memory, or start more of them"
            ) from None
        raise


def _check_not_paused(client: Client, stage: str) -> None:
    """Refuse to wait on workers that all paused for lack of memory (Dask pauses a worker at
    80% of its limit, and one that holds no data it could spill never resumes)."""
    workers = client.scheduler_info().get("workers", {}).values()
    if workers and all(str(w.get("status", "")).endswith("paused") for w in workers):
        raise PriveletError(
            f"the Dask workers paused while {stage.split(':')[0]}: they are out of memory; give each worker more "
            "memory (a worker needs about 250 MB for itself, with numba's compiled loops), or put more attributes "
            "in S_A (smaller tasks)"
        )


def drain(client: Client, futures: Sequence[Future]) -> None:
    """Stop the work behind ``futures``: cancel the tasks that have not started, and wait (a
    bounded time) for those on a worker to end. Dask cannot stop a task that runs (a thread),
    and once cancelled the scheduler no longer lists it: it is waited for first, so that no
    task writes anything after the caller has cleaned up."""
    from distributed import wait

    try:
        assigned = {key for tasks in client.processing().values() for key in tasks}
    except (OSError, TimeoutError):  # the scheduler is gone: nothing runs any more
        return
    started = [future for future in futures if future.key in assigned]
    client.cancel([future for future in futures if future.key not in assigned])
    with contextlib.suppress(TimeoutError):
        wait(started, timeout=_DRAIN_SECONDS)
    client.cancel(started)


def _is_lost_work(exc: BaseException) -> bool:
    """Whether ``exc`` says that a worker died (or its results were lost with it)."""
    from distributed.client import FuturesCancelledError
    from distributed.scheduler import KilledWorker

    return isinstance(exc, (KilledWorker, FuturesCancelledError))


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().split("\n")[0]
    return text[:160] if text else type(exc).__name__
