"""Unexpected errors in the app: logged without data, and Help > Report a problem points at the log."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from PySide6.QtGui import QDesktopServices
from PySide6.QtWidgets import QMessageBox

from privelet_gui import io as pio
from privelet_gui.error_log import ERROR_LOG_ENVIRONMENT, issue_tracker
from privelet_gui.gui import main_window as main_window_module
from privelet_gui.gui.app import error_hook

#: A cell value and a file name no code contains.
PLANTED = "ZQX-planted-cell-7731"
PLANTED_NAME = "QJV-secret-survey"


@pytest.fixture
def log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "state" / "errors.log"
    monkeypatch.setenv(ERROR_LOG_ENVIRONMENT, str(path))
    return path


@pytest.fixture
def planted_table(tmp_path: Path) -> Path:
    path = tmp_path / f"{PLANTED_NAME}.csv"
    path.write_text("age,job\n" + "".join(f"{20 + i % 30},{PLANTED if i == 7 else 'Sales'}\n" for i in range(50)))
    return path


def _assert_clean(text: str, table: Path) -> None:
    for secret in (PLANTED, PLANTED_NAME, str(table.parent), "Sales"):
        assert secret not in text


def test_an_unexpected_error_in_a_task_is_logged_without_the_data(window: Any, qtbot: Any, log: Path,
                                                                  planted_table: Path, monkeypatch: pytest.MonkeyPatch):
    real_summarize = main_window_module.summarize_table

    def summarize_then_fail(path: Path, options: Any, progress: Any, should_cancel: Any) -> Any:
        summary = real_summarize(path, options, progress, should_cancel)  # the table was really read
        content = Path(path).read_text()
        raise KeyError(f"a bug while holding {summary!r} and {content}")

    monkeypatch.setattr(main_window_module, "summarize_table", summarize_then_fail)
    with qtbot.waitSignal(window.tableFailed, timeout=30_000):
        assert window.open_table(planted_table, pio.sniff_table(planted_table))
    assert window.dialogs.errors and PLANTED in window.dialogs.errors[0][1]  # the user still sees it all
    text = log.read_text()
    assert "KeyError" in text and "in the background task test_an_unexpected_error_in_a_task" in text
    assert "tests/gui/test_error_log.py" not in text and "test_error_log.py:" in text  # the frame, by file name
    _assert_clean(text, planted_table)


def test_a_problem_with_the_input_is_not_logged(window: Any, qtbot: Any, log: Path, tmp_path: Path):
    broken = tmp_path / "broken.csv.gz"
    broken.write_bytes(b"\x1f\x8b not gzip at all")
    with qtbot.waitSignal(window.tableFailed, timeout=30_000):
        assert window.open_table(broken, pio.TableOptions())
    assert window.dialogs.errors  # explained to the user, with what to do
    assert not log.exists()


@pytest.mark.qt_no_exception_capture  # the app's hook, not pytest-qt's, must see the error
def test_an_error_in_a_slot_goes_to_the_app_hook_and_the_window_says_so(window: Any, qtbot: Any, log: Path,
                                                                       planted_table: Path):
    with qtbot.waitSignal(window.tableLoaded, timeout=30_000):
        assert window.open_table(planted_table, pio.sniff_table(planted_table))

    def broken_slot() -> None:
        values = window.document.summary.columns  # the data, in a local variable
        raise RuntimeError(f"a bug in a slot, holding {values!r} {PLANTED}")

    with error_hook(window.unexpected_error_logged):
        window.act_about.triggered.disconnect()
        window.act_about.triggered.connect(broken_slot)
        window.act_about.trigger()  # PySide6 passes the slot's exception to sys.excepthook
    text = log.read_text()
    assert "RuntimeError" in text and "in broken_slot" in text
    _assert_clean(text, planted_table)
    assert "Help > Report a problem" in window.statusBar().currentMessage()


def test_report_a_problem_shows_the_log_and_opens_its_folder(window: Any, log: Path, monkeypatch: pytest.MonkeyPatch):
    assert window.act_report.text().replace("&", "") == "Report a problem..."
    help_action = window.menuBar().actions()[-1]  # kept: see test_menus_use_standard_shortcuts
    assert window.act_report in help_action.menu().actions()

    box = window.report_problem()
    try:
        assert "No unexpected error has been logged" in box.informativeText() and str(log) in box.informativeText()
        assert "never holds your data" in box.informativeText()
    finally:
        box.close()

    log.parent.mkdir(parents=True)
    log.write_text("--- a record\n")
    opened: list[str] = []
    monkeypatch.setattr(QDesktopServices, "openUrl", staticmethod(lambda url: opened.append(url.toLocalFile()) or True))
    box = window.report_problem()
    assert not box.isModal()  # the window stays usable
    assert "Attach the log of unexpected errors" in box.informativeText() and str(log) in box.informativeText()
    tracker = issue_tracker()
    assert tracker is not None and tracker in box.informativeText()  # from pyproject's project.urls
    opener = next(b for b in box.buttons() if box.buttonRole(b) == QMessageBox.ButtonRole.ActionRole)
    opener.click()
    assert opened == [str(log.parent)]


def test_a_bug_is_shown_as_a_bug_with_the_log_and_the_tracker_and_logged_once(log: Path):
    from privelet_gui.engine import InternalError, SchemaError
    from privelet_gui.gui.dialogs import HeadlessDialogs, error_message, problem_text

    bug = InternalError(f"an invariant failed near {PLANTED}")
    text, is_bug = error_message(bug)
    assert is_bug and text.startswith("This is a bug in Privelet Studio (InternalError), not a problem with your data")
    assert str(log) in text and PLANTED in text  # the user sees the message; the log never does
    tracker = issue_tracker()
    assert tracker is None or tracker in text
    assert error_message(bug)[0] == text and log.read_text().count("--- ") == 1  # logged once
    assert PLANTED not in log.read_text()
    assert problem_text(bug).startswith("a bug in Privelet Studio (InternalError")

    user = SchemaError("age: the minimum 5 is above the maximum 2")
    assert error_message(user) == ("Age: the minimum 5 is above the maximum 2.", False)
    assert problem_text(user) == str(user) and log.read_text().count("--- ") == 1  # a user error is not logged
    headless = HeadlessDialogs()
    headless.error("The release failed", KeyError("x"))
    assert "This is a bug in Privelet Studio (KeyError)" in headless.errors[0]
