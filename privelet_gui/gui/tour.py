"""A scripted walk through every step on the sample, saving one screenshot per step.

Used by ``privelet-gui --demo --screenshots DIR`` for documentation and as a smoke test.
Its release goes to a temporary privacy ledger (:func:`temporary_ledger`), never the user's.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from PySide6.QtCore import QEventLoop
from PySide6.QtWidgets import QApplication, QWidget

if TYPE_CHECKING:
    from .main_window import MainWindow

__all__ = ["run_tour", "temporary_ledger", "wait_until"]


@contextmanager
def temporary_ledger() -> Iterator[Path]:
    """Point ``PRIVELET_LEDGER`` at a temporary file, unless the user's environment names a
    ledger already (then that one); the temporary file is removed afterwards."""
    from ..io.ledger import LEDGER_ENVIRONMENT

    chosen = os.environ.get(LEDGER_ENVIRONMENT)
    if chosen:
        yield Path(chosen)
        return
    folder = tempfile.mkdtemp(prefix="privelet-tour-ledger-")
    os.environ[LEDGER_ENVIRONMENT] = path = os.path.join(folder, "ledger.sqlite3")
    try:
        yield Path(path)
    finally:
        os.environ.pop(LEDGER_ENVIRONMENT, None)
        shutil.rmtree(folder, ignore_errors=True)


def wait_until(predicate: Callable[[], bool], timeout: float = 60.0) -> bool:
    """Process events until ``predicate()`` is true or ``timeout`` seconds passed."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            return False
        QApplication.processEvents(QEventLoop.ProcessEventsFlag.AllEvents, 50)
        time.sleep(0.005)
    return True


def _settle() -> None:
    for _ in range(5):
        QApplication.processEvents()


def run_tour(window: MainWindow, folder: Path, timeout: float = 120.0) -> int:
    """Walk Data -> Attributes -> Hierarchies -> Privacy -> Release; 0 on success.

    Every ledger look-up and the release go to a :func:`temporary_ledger`: the ledger is
    opened by the worker that needs it, and the first (what the sample has spent) starts
    once the sample is read, when the event loop runs here, after the variable is set.
    """
    with temporary_ledger():
        return _walk(window, folder, timeout)


def _walk(window: MainWindow, folder: Path, timeout: float) -> int:
    from .panels.import_dialog import ImportDialog

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    doc = window.document
    saved: list[Path] = []

    def shoot(name: str, widget: QWidget | None = None) -> None:
        _settle()
        target = folder / f"{name}.png"
        pixmap = (widget or window).grab()
        if not pixmap.save(str(target), "PNG"):
            raise OSError(f"cannot write {target}")
        saved.append(target)

    def fail(message: str) -> int:
        print(f"privelet-gui --screenshots: {message}", file=sys.stderr)
        return 1

    if not wait_until(lambda: doc.summary is not None or doc.table_error is not None, timeout):
        return fail("the sample table did not load in time")
    if doc.summary is None:
        return fail(f"the sample table could not be read: {doc.table_error}")

    window.go_to("data")
    shoot("01-data")
    dialog = ImportDialog(doc.summary.path, doc.summary.options, window)
    dialog.resize(900, 560)
    dialog.show()
    shoot("01-data-import-dialog", dialog)
    dialog.close()
    dialog.deleteLater()

    window.go_to("attributes")
    nominal = [c for c in doc.included() if c.kind == "nominal"]
    ordinal = [c for c in doc.included() if c.kind == "ordinal"]
    if ordinal:
        window.attributes_panel.select(ordinal[0].column)
    shoot("02-attributes")

    window.go_to("hierarchies")
    if nominal:
        richest = max(nominal, key=lambda c: (c.hierarchy.to_hierarchy().height if c.hierarchy and c.hierarchy.is_valid() else 0,
                                              len(c.hierarchy.leaves()) if c.hierarchy else 0))
        panel = window.hierarchy_panel
        panel.set_attribute(richest.column)
        panel.view.expandAll()
        if panel.model is not None:
            first_leaf = next(panel.model.root.leaves(), None)
            if first_leaf is not None:
                panel.select_nodes([first_leaf])
    shoot("03-hierarchies")

    window.go_to("privacy")
    doc.set_sa(doc.recommended_sa())
    if not wait_until(lambda: all("exact" in b for b in window.privacy_panel.bounds.values()) and bool(window.privacy_panel.bounds), timeout):
        return fail("the bounds were not computed in time")
    if not wait_until(lambda: doc.release_spec() is not None, timeout):  # the best strategy is chosen by a task
        return fail("the best strategy was not chosen in time")
    shoot("04-privacy")

    outcome: list[object] = []
    failure: list[object] = []
    window.releaseFinished.connect(outcome.append)
    window.releaseFailed.connect(failure.append)
    if not window.run_release():
        return fail("the release could not start: " + "; ".join(s.message for s in doc.step_statuses().values()))
    if not wait_until(lambda: bool(outcome or failure), timeout):
        window.cancel_task()
        return fail("the release did not finish in time")
    if failure:
        return fail(f"the release failed: {failure[0]}")
    window.go_to("release")
    shoot("05-release")
    release_panel = window.release_panel
    release_panel.tabs.setCurrentWidget(release_panel.preview)
    shoot("05-release-error-preview")
    bench = release_panel.workbench
    release_panel.tabs.setCurrentWidget(bench)
    if not wait_until(lambda: bench.last_answer is not None, timeout):  # prefix sums come from a task
        return fail("the query workbench was not ready in time")
    bench.keep()
    shoot("05-release-query-workbench")
    release_panel.tabs.setCurrentIndex(0)
    print("\n".join(str(p) for p in saved))
    return 0
