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


def test_why_collection_stays_off_worker_threads():
    """A collection in any thread frees every unreachable cycle, Qt objects of the GUI thread
    included, and Qt then destroys them in the wrong thread: this is what the task runner's
    guard prevents (workers that hold no Qt object are not enough)."""
    import subprocess
    import sys
    import textwrap

    script = textwrap.dedent(
        """
        import gc, threading
        from PySide6.QtCore import QTimer
        from PySide6.QtWidgets import QApplication
        app = QApplication([])
        gc.disable()
        for _ in range(5):
            timer = QTimer()
            timer.start(1000)
            timer.me = timer  # a cycle: only the collector frees it
            del timer
        worker = threading.Thread(target=gc.collect)
        worker.start()
        worker.join()
        print("collected on a worker thread")
        """
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60,
                            env={**__import__("os").environ, "QT_QPA_PLATFORM": "offscreen"})
    assert "collected on a worker thread" in result.stdout
    assert "cannot be stopped from another thread" in result.stderr


def test_each_task_has_its_own_callbacks_and_stale_ones_never_run(runner, qtbot):
    gui_thread = QThread.currentThread()
    calls: list[tuple[str, object, bool]] = []
    gate = threading.Event()

    def record(kind):
        return lambda *args: calls.append((kind, args[0] if args else None, QThread.currentThread() is gui_thread))

    stale = runner.run(lambda p, c: gate.wait(5) and "stale", "first", on_success=record("stale success"),
                       on_cancel=record("stale cancel"))
    fresh = runner.run(lambda p, c: (p(0.5, "half"), "fresh")[1], "second", on_success=record("success"),
                       on_progress=record("progress"))
    assert stale.cancelled and not fresh.cancelled
    qtbot.waitUntil(lambda: ("success", "fresh", True) in calls, timeout=5000)
    gate.set()
    assert runner.wait(5000)
    qtbot.wait(50)
    assert calls == [("progress", 0.5, True), ("success", "fresh", True)]


def test_failures_reach_the_handles_callback_with_their_traceback(runner, qtbot):
    errors: list[BaseException] = []

    def task(progress, should_cancel):
        raise PriveletError("bad column")

    runner.run(task, on_failure=errors.append)
    qtbot.waitUntil(lambda: bool(errors), timeout=5000)
    assert isinstance(errors[0], PriveletError) and errors[0].__traceback__ is not None


def test_lanes_of_the_service_run_side_by_side(qtbot):
    from privelet_gui.gui.tasks import TaskService

    service = TaskService()
    gate = threading.Event()
    results: list[object] = []
    try:
        busy = []
        service.busyChanged.connect(busy.append)
        slow = service.lane("work").run(lambda p, c: gate.wait(5) and "work done", on_success=results.append)
        service.lane("preview").run(lambda p, c: "preview done", on_success=results.append)
        qtbot.waitUntil(lambda: results == ["preview done"], timeout=5000)
        assert not slow.cancelled and service.busy  # another lane's task does not cancel this one
        gate.set()
        qtbot.waitUntil(lambda: results == ["preview done", "work done"], timeout=5000)
        assert service.lane("work") is service.lane("work")
        qtbot.waitUntil(lambda: not service.busy, timeout=5000)
        assert busy == [True, False]
    finally:
        gate.set()
        assert service.shutdown(5000)
    assert not service.is_running()
