"""Qt fixtures: fresh settings per test, no leftover threads or timers, Qt warnings fail tests.

Modelled on napari's conftest (dangling QThreads / QTimers fail the test) and
pyqtgraph's habit of failing on Qt warnings.
"""

from __future__ import annotations

import contextlib
import traceback
import uuid
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("PySide6")
pytest.importorskip("pytestqt")

from PySide6.QtCore import QSettings, QThread, QTimer

from privelet_gui import io as pio
from privelet_gui.gui.settings import SETTINGS_ENV
from privelet_gui.io.recovery import RECOVERY_ENVIRONMENT

# Qt messages of the offscreen platform that say nothing about our code.
QT_LOG_IGNORE = [
    r"This plugin does not support propagateSizeHints\(\)",
    r"This plugin does not support raise\(\)",
    r"This plugin does not support grabbing the keyboard",
    r"QFont::setPointSizeF: Point size <= 0",
]


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    here = Path(__file__).parent
    for item in items:
        if Path(str(item.fspath)).is_relative_to(here):
            item.add_marker(pytest.mark.qt_log_level_fail("WARNING"))
            item.add_marker(pytest.mark.qt_log_ignore(*QT_LOG_IGNORE))


@pytest.fixture(autouse=True)
def fresh_settings(qapp: Any, tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Any:
    """Every test gets its own empty settings: the app's (:data:`SETTINGS_ENV`) and any other
    QSettings, such as Qt's own file dialog state (INI files in a temporary folder); and its
    own empty recovery folder (:data:`RECOVERY_ENVIRONMENT`)."""
    folder = tmp_path_factory.mktemp("settings")
    monkeypatch.setenv(SETTINGS_ENV, str(folder))
    monkeypatch.setenv(RECOVERY_ENVIRONMENT, str(tmp_path_factory.mktemp("recovery")))
    QSettings.setDefaultFormat(QSettings.Format.IniFormat)
    QSettings.setPath(QSettings.Format.IniFormat, QSettings.Scope.UserScope, str(folder))
    old = (qapp.organizationName(), qapp.applicationName())
    qapp.setOrganizationName("PriveletStudioTests")
    qapp.setApplicationName(f"test-{uuid.uuid4().hex[:8]}")
    yield folder
    qapp.setOrganizationName(old[0])
    qapp.setApplicationName(old[1])


def _where() -> str:
    stack = traceback.extract_stack()[:-2]
    frames = [f for f in stack if "site-packages" not in f.filename and "conftest" not in f.filename]
    return "".join(traceback.format_list(frames[-3:]))


@pytest.fixture(autouse=True)
def no_dangling_threads_or_timers(qtbot: Any, monkeypatch: pytest.MonkeyPatch, fresh_settings: Any) -> Any:
    """Fail a test that leaves a QThread running or a QTimer active (napari style)."""
    threads: list[tuple[QThread, str]] = []
    timers: list[tuple[QTimer, str]] = []
    pending_single_shots: list[str] = []

    original_thread_start = QThread.start
    original_timer_start = QTimer.start
    original_single_shot = QTimer.singleShot

    def thread_start(self: QThread, *args: Any) -> None:
        threads.append((self, _where()))
        original_thread_start(self, *args)

    def timer_start(self: QTimer, *args: Any) -> None:
        timers.append((self, _where()))
        original_timer_start(self, *args)

    def single_shot(*args: Any) -> None:
        args = list(args)
        where = _where()
        for i, arg in enumerate(args):
            if callable(arg) and not hasattr(arg, "metaObject"):
                pending_single_shots.append(where)

                def fire(fn: Any = arg, tag: str = where) -> None:
                    pending_single_shots.remove(tag)
                    fn()

                args[i] = fire
                break
        original_single_shot(*args)

    monkeypatch.setattr(QThread, "start", thread_start)
    monkeypatch.setattr(QTimer, "start", timer_start)
    monkeypatch.setattr(QTimer, "singleShot", staticmethod(single_shot))
    yield
    problems = []
    for thread, where in threads:
        try:
            running = thread.isRunning()
        except RuntimeError:  # already deleted: it finished
            continue
        if running:
            problems.append(f"a QThread is still running, started at:\n{where}")
            thread.quit()
            thread.wait(5000)
    for timer, where in timers:
        try:
            active = timer.isActive()
        except RuntimeError:
            continue
        if active:
            problems.append(f"a QTimer is still active, started at:\n{where}")
            timer.stop()
    if pending_single_shots:
        with contextlib.suppress(AssertionError):  # a single shot due any moment is not a leak
            qtbot.waitUntil(lambda: not pending_single_shots, timeout=1000)
        problems.extend(f"a QTimer.singleShot has not fired, set at:\n{w}" for w in pending_single_shots)
    if problems:
        pytest.fail("\n".join(problems), pytrace=False)


class FakeDialogs:
    """Answers the app's questions without showing anything, and records what was asked."""

    def __init__(self) -> None:
        self.errors: list[tuple[str, str]] = []
        self.save_answer = "discard"
        self.confirm_answer = True
        self.text_answer: str | None = None
        self.open_answer: Path | None = None
        self.save_path_answer: Path | None = None
        self.asked: list[str] = []
        self.texts: dict[str, str] = {}  # the text of the last choose(kind, ...) question of each kind
        self.warnings: dict[str, bool] = {}  # whether the last question of each kind showed the warning icon
        # answers to choose(kind, ...): the key per kind of question (default: the last choice, Cancel)
        self.choices: dict[str, str] = {"reuse-settings": "fresh", "drop-release": "discard"}
        self.spend_answer = True  # spend more of a table's budget (a fresh ledger per test: asked on a second release)
        self.budget_checks: list[Any] = []  # the BudgetCheck of each such question
        self.seeded_answer = False  # export a seeded release
        self.seeded_asked: list[str] = []  # the release files asked about
        self.item_answers: dict[str, str] = {}  # answers to choose_item(kind, ...) (default: cancelled)
        self.items: dict[str, list[str]] = {}  # the items of the last choose_item question of each kind
        self.item_current: dict[str, str | None] = {}  # the item it offered first

    def error(self, title: str, error: BaseException | str) -> None:
        self.errors.append((title, str(error)))

    def ask_save_changes(self, what: str) -> str:
        self.asked.append(what)
        return self.save_answer

    def confirm(self, title: str, text: str) -> bool:
        self.asked.append(title)
        return self.confirm_answer

    def choose(self, kind: str, title: str, text: str, choices: list[tuple[str, str]], *, warning: bool = False) -> str:
        self.asked.append(kind)
        self.texts[kind] = text
        self.warnings[kind] = warning
        return self.choices.get(kind, choices[-1][0])

    def get_text(self, title: str, label: str, text: str = "") -> str | None:
        return self.text_answer

    def choose_item(self, kind: str, title: str, label: str, items: list[str], current: str | None = None) -> str | None:
        self.asked.append(kind)
        self.texts[kind] = label
        self.items[kind] = list(items)
        self.item_current[kind] = current
        answer = self.item_answers.get(kind)
        assert answer is None or answer in items, f"{answer!r} is not among the choices {items}"
        return answer

    def ask_spend_budget(self, check: Any) -> bool:
        self.asked.append("spend-budget")
        self.budget_checks.append(check)
        return self.spend_answer

    def ask_export_seeded(self, name: str) -> bool:
        self.asked.append("export-seeded")
        self.seeded_asked.append(name)
        return self.seeded_answer

    def import_options(self, path: Path, current: object = None) -> object | None:
        return current if current is not None else pio.sniff_table(path)

    def open_path(self, kind: str, title: str | None = None) -> Path | None:
        return self.open_answer

    def save_path(self, kind: str, title: str | None = None, suggested: str = "") -> Path | None:
        return self.save_path_answer


@pytest.fixture
def dialogs() -> FakeDialogs:
    return FakeDialogs()


@pytest.fixture
def window(qtbot: Any, dialogs: FakeDialogs, no_dangling_threads_or_timers: Any) -> Any:
    """A main window whose dialogs are answered by :class:`FakeDialogs`; closed (cancel + wait) after the test."""
    from privelet_gui.gui.main_window import MainWindow

    win = MainWindow()
    win.dialogs = dialogs
    win.resize(1200, 800)
    win.show()
    yield win
    dialogs.save_answer = "discard"
    dialogs.choices["drop-release"] = "discard"
    win.close()
    assert not win.tasks.is_running()  # every lane: no worker outlives the window
    win.deleteLater()
    qtbot.wait(1)


def open_sample(win: Any, qtbot: Any, *, with_schema: bool = True) -> Any:
    """Open the bundled sample in ``win`` and wait until it is read (with its schema, also
    until the best strategy, the default mechanism, is chosen: it is then ready to release)."""
    path = pio.sample_table_path()
    schema = pio.load_schema(pio.sample_schema_path()) if with_schema else None
    with qtbot.waitSignal(win.tableLoaded, timeout=30_000):
        assert win.open_table(path, pio.sniff_table(path), schema=schema)
    if with_schema:
        wait_for_best_strategy(win, qtbot)
    return win.document.summary


def wait_for_best_strategy(win: Any, qtbot: Any) -> Any:
    """Wait until the window's worker has chosen the best strategy for the current settings
    (when it releases with it)."""
    if win.document.mechanism != "best":
        return None
    qtbot.waitUntil(lambda: win.document.best_strategy_result() is not None, timeout=60_000)
    return win.document.best_strategy_result()


@pytest.fixture
def sample_window(window: Any, qtbot: Any) -> Any:
    open_sample(window, qtbot)
    return window
