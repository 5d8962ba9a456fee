"""Deliberately leaky tests, run by test_guards.py in a subprocess: the conftest must fail them."""

import threading

from PySide6.QtCore import QObject, QThread, QTimer


def test_leaves_a_timer_running(qtbot):
    timer = QTimer()
    timer.setInterval(1000)
    timer.start()
    test_leaves_a_timer_running.keep = timer


def test_leaves_a_thread_running(qtbot):
    gate = threading.Event()

    class Worker(QObject):
        def run(self):
            gate.wait(2)

    thread = QThread()
    worker = Worker()
    worker.moveToThread(thread)
    thread.started.connect(worker.run)
    thread.start()
    test_leaves_a_thread_running.keep = (thread, worker, gate)


def test_emits_a_qt_warning(qtbot):
    from PySide6.QtCore import qWarning

    qWarning("something went wrong in Qt")


def test_clean(qtbot):
    timer = QTimer()
    timer.start(10)
    timer.stop()
