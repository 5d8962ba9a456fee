"""The task runner: results, progress, errors and cancellation reach the GUI thread; stale ones do not."""

from __future__ import annotations

import threading
import time

import pytest
from PySide6.QtCore import QThread

from privelet_gui.engine import Cancelled, PriveletError
from privelet_gui.gui.tasks import TaskRunner


@pytest.fixture
def runner(qtbot):
    r = TaskRunner()
    yield r
    r.shutdown()
    qtbot.wait(1)


def test_result_and_progress_arrive_on_the_gui_thread(runner, qtbot):
    gui_thread = QThread.currentThread()
    seen: list[tuple[float, str, bool]] = []
    runner.progressed.connect(lambda g, f, s: seen.append((f, s, QThread.currentThread() is gui_thread)))
    worker_threads: list[object] = []

    def task(progress, should_cancel):
        worker_threads.append(threading.current_thread())
        progress(0.0, "start")
        progress(0.5, "half")
        progress(1.0, "done")
        return 42

    with qtbot.waitSignal(runner.succeeded, timeout=5000) as blocker:
        generation = runner.submit(task, "answer")
    assert blocker.args == [generation, 42]
    assert worker_threads[0] is not threading.main_thread()
    assert [s for _, s, _ in seen] == ["start", "half", "done"]
    assert all(on_gui for _, _, on_gui in seen)
    assert not runner.busy


def test_worker_exceptions_are_emitted_not_swallowed(runner, qtbot):
    def task(progress, should_cancel):
        raise PriveletError("the delimiter is wrong: choose ';'")

    with qtbot.waitSignal(runner.failed, timeout=5000) as blocker:
        runner.submit(task)
    error = blocker.args[1]
    assert isinstance(error, PriveletError)
    assert "choose ';'" in str(error)
    assert error.__traceback__ is not None  # the details dialog can show it


def test_cancel_is_cooperative_and_reported(runner, qtbot):
    started = threading.Event()

    def task(progress, should_cancel):
        started.set()
        while True:
            if should_cancel():
                raise Cancelled("stop")
            time.sleep(0.005)

    with qtbot.waitSignal(runner.cancelled, timeout=5000):
        runner.submit(task)
        assert started.wait(5)
        t = time.perf_counter()
        runner.cancel()
    assert time.perf_counter() - t < 1.0
    assert runner.wait(2000)


def test_a_task_that_ignores_cancel_still_counts_as_cancelled(runner, qtbot):
    gate = threading.Event()

    def task(progress, should_cancel):
        gate.wait(5)
        return "finished anyway"

    results = []
    runner.succeeded.connect(lambda g, r: results.append(r))
    with qtbot.waitSignal(runner.cancelled, timeout=5000):
        runner.submit(task)
        runner.cancel()
        gate.set()
    assert results == []  # a result computed after cancel is never delivered


def test_stale_results_are_dropped_by_generation(runner, qtbot):
    release_first = threading.Event()

    def slow(progress, should_cancel):
        release_first.wait(5)  # ignores cancel on purpose: finishes late
        return "stale"

    def fast(progress, should_cancel):
        return "fresh"

    results: list[object] = []
    runner.succeeded.connect(lambda g, r: results.append(r))
    first = runner.submit(slow)
    with qtbot.waitSignal(runner.succeeded, timeout=5000):
        second = runner.submit(fast)
    release_first.set()
    assert runner.wait(5000)
    qtbot.wait(50)
    assert second == first + 1
    assert results == ["fresh"]


def test_shutdown_cancels_and_waits(qtbot):
    runner = TaskRunner()
    started = threading.Event()

    def task(progress, should_cancel):
        started.set()
        while not should_cancel():
            time.sleep(0.002)
        raise Cancelled("stop")

    runner.submit(task)
    assert started.wait(5)
    assert runner.shutdown(5000)
    assert not runner.is_running()


def test_garbage_is_never_collected_on_a_worker_thread(runner, qtbot):
    """A cyclic collection in a worker could destroy Qt objects there and crash the app."""
    import gc

    seen_in_worker: list[bool] = []

    def task(progress, should_cancel):
        seen_in_worker.append(gc.isenabled())
        return 1

    assert gc.isenabled()
    with qtbot.waitSignal(runner.finished, timeout=5000):
        runner.submit(task)
    qtbot.waitUntil(lambda: not runner.is_running() and gc.isenabled(), timeout=5000)
    assert seen_in_worker == [False]
    # two overlapping tasks: collection stays off until the last one has ended
    release = threading.Event()
    other = TaskRunner()
    try:
        runner.submit(lambda p, c: release.wait(5))
        other.submit(lambda p, c: 2)
        qtbot.waitUntil(lambda: not other.is_running(), timeout=5000)
        qtbot.wait(20)
        assert not gc.isenabled()
        release.set()
        qtbot.waitUntil(lambda: gc.isenabled(), timeout=5000)
    finally:
        release.set()
        other.shutdown()
