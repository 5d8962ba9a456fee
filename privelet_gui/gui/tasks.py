"""The task runner: long work on a worker thread, with progress, cancel and errors.

A task is a plain function ``run(progress, should_cancel) -> result`` (Orange3 style):
``progress(fraction, stage)`` reports 0..1 with a stage label and ``should_cancel()``
says whether the user asked to stop. Task functions never touch a widget; they
return plain data, which reaches the GUI thread through queued signals.

Each submitted task gets a *generation* number. Starting a new task cancels the
previous one, and results, errors and progress of an older generation are dropped
(ndv style), so a slow stale task can never overwrite a fresh result.

Exceptions raised by a task are emitted (:attr:`TaskRunner.failed`), never
swallowed; :class:`~privelet_gui.engine.Cancelled` becomes :attr:`TaskRunner.cancelled`.
"""

from __future__ import annotations

import gc
import threading
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from PySide6.QtCore import QObject, Qt, QThread, Signal, Slot

from ..engine import Cancelled

__all__ = ["CancelFunction", "ProgressFunction", "TaskFunction", "TaskRunner", "format_exception"]

ProgressFunction = Callable[[float, str], None]
CancelFunction = Callable[[], bool]
TaskFunction = Callable[[ProgressFunction, CancelFunction], Any]

#: Progress signals are throttled to at most one per this many seconds (and per stage change).
PROGRESS_INTERVAL = 0.05


def format_exception(exc: BaseException) -> str:
    """The traceback of an exception raised in a worker, as text (for "Details")."""
    return "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))


class _Worker(QObject):
    """Runs one task function in the worker thread and emits what happened, tagged with its generation."""

    progressed = Signal(int, float, str)
    succeeded = Signal(int, object)
    failed = Signal(int, object)
    cancelled = Signal(int)
    done = Signal(int)

    def __init__(self, fn: TaskFunction, cancel: threading.Event, generation: int):
        super().__init__()
        self._fn = fn
        self._cancel = cancel
        self._generation = generation
        self._last_emit = 0.0
        self._last_stage = ""

    @Slot()
    def run(self) -> None:
        generation = self._generation
        try:
            result = self._fn(self._progress, self._cancel.is_set)
            if self._cancel.is_set():
                raise Cancelled("cancelled by the user")
        except Cancelled:
            self.cancelled.emit(generation)
        except BaseException as exc:
            self.failed.emit(generation, exc)
        else:
            self.succeeded.emit(generation, result)
        finally:
            self.done.emit(generation)

    def _progress(self, fraction: float, stage: str) -> None:
        now = time.monotonic()
        if stage != self._last_stage or fraction >= 1.0 or now - self._last_emit >= PROGRESS_INTERVAL:
            self._last_emit = now
            self._last_stage = stage
            self.progressed.emit(self._generation, float(fraction), str(stage))


class _GuiThreadCollection:
    """Keep Python's cyclic garbage collector off worker threads.

    A collection runs in whichever thread happens to allocate; run in a worker, it can
    destroy Qt objects away from their thread and crash the app (seen in the tests as a
    segmentation fault inside a worker). While any task runs, automatic collection is
    off; when the last one ends, it is switched back on and run here, on the GUI thread.
    Both methods are called on the GUI thread only.
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


@dataclass
class _Task:
    name: str
    thread: QThread
    worker: _Worker
    cancel: threading.Event


class TaskRunner(QObject):
    """One worker thread per task, results delivered on the GUI thread.

    Signals carry the task's generation first; only the current generation's
    signals are emitted (stale ones are dropped).
    """

    started = Signal(int, str)  # generation, task name
    progressed = Signal(int, float, str)  # generation, fraction 0..1, stage
    succeeded = Signal(int, object)  # generation, result
    failed = Signal(int, object)  # generation, exception (with __traceback__)
    cancelled = Signal(int)  # generation
    finished = Signal(int)  # generation; after succeeded / failed / cancelled
    busyChanged = Signal(bool)

    def __init__(self, parent: QObject | None = None):
        super().__init__(parent)
        self._generation = 0
        self._tasks: dict[int, _Task] = {}
        self._busy = False

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
    def current_name(self) -> str:
        task = self._tasks.get(self._generation)
        return task.name if task is not None else ""

    def submit(self, fn: TaskFunction, name: str = "") -> int:
        """Start ``fn(progress, should_cancel)`` on a worker thread; return its generation.

        A task still running is asked to cancel; its results will be dropped.
        """
        self.cancel()
        self._generation += 1
        generation = self._generation
        cancel = threading.Event()
        thread = QThread()
        thread.setObjectName(f"privelet-task-{generation}")
        worker = _Worker(fn, cancel, generation)
        worker.moveToThread(thread)
        thread.started.connect(worker.run)
        # The runner lives in the GUI thread: these are queued connections to its slots.
        worker.progressed.connect(self._on_progress)
        worker.succeeded.connect(self._on_success)
        worker.failed.connect(self._on_failure)
        worker.cancelled.connect(self._on_cancelled)
        worker.done.connect(self._on_done)
        # Direct: quit from the worker thread itself, so that wait() on the GUI thread cannot deadlock.
        worker.done.connect(thread.quit, Qt.ConnectionType.DirectConnection)
        self._tasks[generation] = _Task(name, thread, worker, cancel)
        _GuiThreadCollection.task_started()
        self._set_busy(True)
        self.started.emit(generation, name)
        thread.start()
        return generation

    def cancel(self) -> None:
        """Ask every running task to stop (cooperatively, at its next check)."""
        for task in self._tasks.values():
            task.cancel.set()

    def wait(self, timeout_ms: int | None = None) -> bool:
        """Block until every worker thread has ended; True if they all did."""
        deadline = None if timeout_ms is None else time.monotonic() + timeout_ms / 1000
        for task in list(self._tasks.values()):
            if deadline is None:
                task.thread.wait()
            else:
                remaining = max(0, int((deadline - time.monotonic()) * 1000))
                if not task.thread.wait(remaining):
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
        return any(task.thread.isRunning() for task in self._tasks.values())

    # -- worker signals, queued to the GUI thread ---------------------------------------------
    @Slot(int, float, str)
    def _on_progress(self, generation: int, fraction: float, stage: str) -> None:
        if generation == self._generation:
            self.progressed.emit(generation, fraction, stage)

    @Slot(int, object)
    def _on_success(self, generation: int, result: object) -> None:
        if generation == self._generation:
            self._set_busy(False)
            self.succeeded.emit(generation, result)
            self.finished.emit(generation)

    @Slot(int, object)
    def _on_failure(self, generation: int, error: object) -> None:
        if generation == self._generation:
            self._set_busy(False)
            self.failed.emit(generation, error)
            self.finished.emit(generation)

    @Slot(int)
    def _on_cancelled(self, generation: int) -> None:
        if generation == self._generation:
            self._set_busy(False)
            self.cancelled.emit(generation)
            self.finished.emit(generation)

    @Slot(int)
    def _on_done(self, generation: int) -> None:
        self._forget(generation)

    def _forget(self, generation: int) -> None:
        task = self._tasks.pop(generation, None)
        if task is None:
            return
        # The worker quits its thread right after ``done``: wait for the end, then let Python
        # delete the finished thread and its worker (nothing is deleteLater'd, so nothing is
        # deleted twice, by Qt and by its Python owner).
        task.thread.wait()
        _GuiThreadCollection.task_ended()

    def _set_busy(self, busy: bool) -> None:
        if busy != self._busy:
            self._busy = busy
            self.busyChanged.emit(busy)
