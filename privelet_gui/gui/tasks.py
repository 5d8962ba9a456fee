"""The task service: long work on worker threads, with progress, cancel and errors.

A task is a plain function ``run(progress, should_cancel) -> result`` (Orange3 style):
``progress(fraction, stage)`` reports 0..1 with a stage label and ``should_cancel()``
says whether the user asked to stop. Task functions never touch a widget; they return
plain data, which reaches the GUI thread through a queued signal.

:class:`TaskService` has named *lanes* (:class:`TaskRunner`), each running one task at a
time: the window's main work (reading a table, releasing, exporting), the privacy
preview, the workbench's prefix sums... Starting a task on a lane cancels the lane's
previous one, and whatever an older task still reports is dropped (a generation counter,
ndv style), so a slow stale task can never overwrite a fresh result. Each task is a
:class:`TaskHandle` carrying its own callbacks (superqt's ``create_worker``): on success,
on failure (errors are always delivered, with their traceback), on cancel, on progress.

Worker threads are plain Python threads and hold no Qt object. They still must not run
Python's cyclic garbage collector: a collection runs in whichever thread allocates and
frees *every* unreachable cycle, including Qt objects the GUI thread dropped, which Qt
then destroys in the wrong thread (``tests/gui/test_tasks.py`` shows it). So automatic
collection is off while any task runs, and runs on the GUI thread once the last ends.
"""

from __future__ import annotations

import gc
import threading
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from PySide6.QtCore import QObject, Signal, Slot

from ..engine import Cancelled

__all__ = [
    "CancelFunction",
    "ProgressFunction",
    "TaskFunction",
    "TaskHandle",
    "TaskRunner",
    "TaskService",
    "format_exception",
]

ProgressFunction = Callable[[float, str], None]
CancelFunction = Callable[[], bool]
TaskFunction = Callable[[ProgressFunction, CancelFunction], Any]

#: Progress is reported at most once per this many seconds (and at every stage change).
PROGRESS_INTERVAL = 0.05


def format_exception(exc: BaseException) -> str:
    """The traceback of an exception raised in a worker, as text (for "Details")."""
    return "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))


class _GuiThreadCollection:
    """Keep Python's cyclic garbage collector off worker threads (see the module docstring).

    While any task runs, automatic collection is off; when the last one ends, it is
    switched back on and run here, on the GUI thread. Both methods run on the GUI thread.
    """

    running = 0

    @classmethod
    def task_started(cls) -> None:
        if cls.running == 0:
            gc.disable()
        cls.running += 1

    @classmethod
    def task_ended(cls) -> None:
        cls.running -= 1
        if cls.running == 0:
            gc.enable()
            gc.collect()


@dataclass(eq=False)
class TaskHandle:
    """One submitted task: its lane, generation, callbacks and cancel flag."""

    name: str
    generation: int
    on_success: Callable[[Any], None] | None = None
    on_failure: Callable[[BaseException], None] | None = None
    on_cancel: Callable[[], None] | None = None
    on_progress: Callable[[float, str], None] | None = None
    cancel_event: threading.Event = field(default_factory=threading.Event)
    thread: threading.Thread | None = None

    def cancel(self) -> None:
        """Ask the task to stop (cooperatively, at its next check)."""
        self.cancel_event.set()

    @property
    def cancelled(self) -> bool:
        return self.cancel_event.is_set()

    def running(self) -> bool:
        return self.thread is not None and self.thread.is_alive()


class _Worker:
    """Runs one task function on a plain thread; reports through the lane's queued signals."""

    def __init__(self, fn: TaskFunction, handle: TaskHandle, relay: _Relay):
        self._fn = fn
        self._handle = handle
        self._relay = relay
        self._last_emit = 0.0
        self._last_stage = ""

    def run(self) -> None:
        handle, relay = self._handle, self._relay
        try:
            result = self._fn(self._progress, handle.cancel_event.is_set)
            if handle.cancelled:
                raise Cancelled("cancelled by the user")
        except Cancelled:
            relay.cancelled.emit(handle.generation)
        except BaseException as exc:
            relay.failed.emit(handle.generation, exc)
        else:
            relay.succeeded.emit(handle.generation, result)
        finally:
            relay.done.emit(handle.generation)

    def _progress(self, fraction: float, stage: str) -> None:
        now = time.monotonic()
        if stage != self._last_stage or fraction >= 1.0 or now - self._last_emit >= PROGRESS_INTERVAL:
            self._last_emit = now
            self._last_stage = stage
            self._relay.progressed.emit(self._handle.generation, float(fraction), str(stage))


class _Relay(QObject):
    """Lives in the GUI thread: signals emitted from a worker thread are queued to it."""

    progressed = Signal(int, float, str)
    succeeded = Signal(int, object)
    failed = Signal(int, object)
    cancelled = Signal(int)
    done = Signal(int)


class TaskRunner(QObject):
    """One lane: tasks on worker threads, results delivered on the GUI thread.

    Signals carry the task's generation first; only the current generation's are emitted
    (stale ones are dropped), and so are the current task's callbacks.
    """

    started = Signal(int, str)  # generation, task name
    progressed = Signal(int, float, str)  # generation, fraction 0..1, stage
    succeeded = Signal(int, object)  # generation, result
    failed = Signal(int, object)  # generation, exception (with __traceback__)
    cancelled = Signal(int)  # generation
    finished = Signal(int)  # generation; after succeeded / failed / cancelled
    busyChanged = Signal(bool)

    def __init__(self, parent: QObject | None = None, *, name: str = ""):
        super().__init__(parent)
        self.name = name
        self._generation = 0
        self._tasks: dict[int, TaskHandle] = {}
        self._busy = False
        self._relay = _Relay(self)
        self._relay.progressed.connect(self._on_progress)
        self._relay.succeeded.connect(self._on_success)
        self._relay.failed.connect(self._on_failure)
        self._relay.cancelled.connect(self._on_cancelled)
        self._relay.done.connect(self._on_done)

    # -- public API ----------------------------------------------------------------
    @property
    def generation(self) -> int:
        """The generation of the most recently submitted task."""
        return self._generation

    @property
    def busy(self) -> bool:
        """True while the current task has not finished."""
        return self._busy

    @property
    def current(self) -> TaskHandle | None:
        """The current task, while it has not finished."""
        return self._tasks.get(self._generation) if self._busy else None

    @property
    def current_name(self) -> str:
        task = self._tasks.get(self._generation)
        return task.name if task is not None else ""

    def run(
        self,
        fn: TaskFunction,
        name: str = "",
        *,
        on_success: Callable[[Any], None] | None = None,
        on_failure: Callable[[BaseException], None] | None = None,
        on_cancel: Callable[[], None] | None = None,
        on_progress: Callable[[float, str], None] | None = None,
    ) -> TaskHandle:
        """Start ``fn(progress, should_cancel)`` on a worker thread, with its own callbacks.

        A task still running on this lane is asked to cancel; its results will be dropped.
        """
        self.cancel()
        self._generation += 1
        handle = TaskHandle(name, self._generation, on_success, on_failure, on_cancel, on_progress)
        worker = _Worker(fn, handle, self._relay)
        handle.thread = threading.Thread(target=worker.run, name=f"privelet-{self.name or 'task'}-{handle.generation}", daemon=True)
        self._tasks[handle.generation] = handle
        _GuiThreadCollection.task_started()
        self._set_busy(True)
        self.started.emit(handle.generation, name)
        handle.thread.start()
        return handle

    def submit(self, fn: TaskFunction, name: str = "") -> int:
        """:meth:`run` without callbacks; returns the task's generation."""
        return self.run(fn, name).generation

    def cancel(self) -> None:
        """Ask every running task of this lane to stop (cooperatively, at its next check)."""
        for task in self._tasks.values():
            task.cancel()

    def wait(self, timeout_ms: int | None = None) -> bool:
        """Block until every worker thread has ended; True if they all did."""
        deadline = None if timeout_ms is None else time.monotonic() + timeout_ms / 1000
        for task in list(self._tasks.values()):
            if task.thread is None:
                continue
            task.thread.join(None if deadline is None else max(0.0, deadline - time.monotonic()))
            if task.thread.is_alive():
                return False
        return True

    def shutdown(self, timeout_ms: int | None = None) -> bool:
        """Close = cancel + wait. Pending results are dropped."""
        self._generation += 1  # everything still in flight is now stale
        self.cancel()
        ok = self.wait(timeout_ms)
        if ok:  # their "done" signals may never be delivered now: account for them here
            for generation in list(self._tasks):
                self._forget(generation)
        self._set_busy(False)
        return ok

    def is_running(self) -> bool:
        """True while any worker thread (current or stale) is alive."""
        return any(task.running() for task in self._tasks.values())

    # -- worker signals, queued to the GUI thread ---------------------------------------------
    def _current(self, generation: int) -> TaskHandle | None:
        return self._tasks.get(generation) if generation == self._generation else None

    @Slot(int, float, str)
    def _on_progress(self, generation: int, fraction: float, stage: str) -> None:
        task = self._current(generation)
        if task is None:
            return
        self.progressed.emit(generation, fraction, stage)
        if task.on_progress is not None:
            task.on_progress(fraction, stage)

    @Slot(int, object)
    def _on_success(self, generation: int, result: object) -> None:
        task = self._current(generation)
        if task is None:
            return
        self._set_busy(False)
        if task.on_success is not None:
            task.on_success(result)
        self.succeeded.emit(generation, result)
        self.finished.emit(generation)

    @Slot(int, object)
    def _on_failure(self, generation: int, error: object) -> None:
        task = self._current(generation)
        if task is None:
            return
        self._set_busy(False)
        if task.on_failure is not None:
            task.on_failure(error)  # type: ignore[arg-type]
        self.failed.emit(generation, error)
        self.finished.emit(generation)

    @Slot(int)
    def _on_cancelled(self, generation: int) -> None:
        task = self._current(generation)
        if task is None:
            return
        self._set_busy(False)
        if task.on_cancel is not None:
            task.on_cancel()
        self.cancelled.emit(generation)
        self.finished.emit(generation)

    @Slot(int)
    def _on_done(self, generation: int) -> None:
        self._forget(generation)

    def _forget(self, generation: int) -> None:
        task = self._tasks.pop(generation, None)
        if task is None:
            return
        if task.thread is not None:
            task.thread.join()  # it ends right after "done"
        _GuiThreadCollection.task_ended()

    def _set_busy(self, busy: bool) -> None:
        if busy != self._busy:
            self._busy = busy
            self.busyChanged.emit(busy)


class TaskService(QObject):
    """Named lanes of background work (see the module docstring); ``busyChanged`` says
    whether any lane runs a task."""

    busyChanged = Signal(bool)

    def __init__(self, parent: QObject | None = None):
        super().__init__(parent)
        self._lanes: dict[str, TaskRunner] = {}
        self._busy = False

    def lane(self, name: str) -> TaskRunner:
        """The lane called ``name`` (made on first use)."""
        runner = self._lanes.get(name)
        if runner is None:
            runner = self._lanes[name] = TaskRunner(self, name=name)
            runner.busyChanged.connect(self._lane_busy)
        return runner

    @property
    def busy(self) -> bool:
        return any(runner.busy for runner in self._lanes.values())

    def is_running(self) -> bool:
        return any(runner.is_running() for runner in self._lanes.values())

    def shutdown(self, timeout_ms: int | None = None) -> bool:
        """Cancel and wait for every lane."""
        return all(runner.shutdown(timeout_ms) for runner in self._lanes.values())

    def _lane_busy(self, _busy: bool) -> None:
        busy = self.busy
        if busy != self._busy:
            self._busy = busy
            self.busyChanged.emit(busy)
