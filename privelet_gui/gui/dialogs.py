"""Every question the app asks the user, behind one replaceable object.

The main window calls ``window.dialogs.<method>``; tests install a fake with the same
methods (pyqtgraph's habit: a dialog only when the caller gave no answer), so no test
ever blocks on a modal dialog. :class:`WorkerQuestion` lets a task on a worker thread ask
one (the release asks before spending more of a table's budget, once the table is counted).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Literal

from PySide6.QtCore import QObject, Qt, Signal, Slot
from PySide6.QtWidgets import QFileDialog, QInputDialog, QLabel, QMessageBox, QWidget

from ..engine import Cancelled, PriveletError
from ..error_log import bug_report_text, is_unexpected, log_unexpected_error
from ..io.ledger import COMPOSITION_TEXT, BudgetCheck, spending_summary, table_keys_text
from ..io.releases import SEEDED_WARNING
from .settings import Settings
from .tasks import format_exception

__all__ = ["FILTERS", "Dialogs", "SaveChoice", "WorkerQuestion", "error_message", "problem_text"]

SaveChoice = Literal["save", "discard", "cancel"]

FILTERS = {
    "table": "Tables (*.csv *.tsv *.txt *.csv.gz *.tsv.gz *.gz *.parquet *.pq);;All files (*)",
    "project": "Privelet Studio projects (*.privelet);;All files (*)",
    "hierarchy": "Hierarchies (*.csv *.json);;ARX hierarchy CSV (*.csv);;JSON hierarchy (*.json);;All files (*)",
    "release": "Releases: .npz files, the zarr.json of a .zarr folder (*.npz zarr.json);;All files (*)",
    "schema": "Schema files (*.json);;All files (*)",
    "workload": "Workload files (*.csv *.tsv *.txt *.json);;All files (*)",
    "labels": (
        "Labels: a data dictionary, code,label CSV or labelled hierarchy (*.json *.csv);;Data dictionary or "
        "code -> label JSON (*.json);;Code,label CSV or labelled ARX hierarchy (*.csv);;All files (*)"
    ),
    "report": "Release report, one HTML page (*.html)",
    "script": "Shell script (*.sh)",
    "csv": "CSV, long format (*.csv)",
    "parquet": "Parquet, long format (*.parquet)",
    "any": "Projects, releases, tables and hierarchies (*.privelet *.npz *.csv *.tsv *.gz *.parquet *.json);;All files (*)",
}

SUFFIX = {"project": ".privelet", "release": ".npz", "csv": ".csv", "parquet": ".parquet", "hierarchy": ".csv", "schema": ".json",
          "report": ".html", "script": ".sh"}


class Dialogs:
    """Modal dialogs over a parent window (the real implementation).

    A file dialog opens in the last folder used for its kind of file, or the first time in
    the folder of the table being worked on (``table_path`` tells it; without it, the folder
    of the table read last), else in the home folder (see :meth:`start_folder`).
    """

    def __init__(self, parent: QWidget, settings: Settings, table_path: Callable[[], Path | None] | None = None):
        self.parent = parent
        self.settings = settings
        self._table_path = table_path

    def start_folder(self, kind: str) -> Path:
        """Where a file dialog for ``kind`` of file opens."""
        return self.settings.last_folder(kind) or self._table_folder() or Path.home()

    def _table_folder(self) -> Path | None:
        table = self._table_path() if self._table_path is not None else None
        folder = table.parent if table is not None else self.settings.last_folder("table")
        # The bundled sample lives inside the installed package: no place to open or save a user's file.
        if folder is None or not folder.is_dir() or folder == _sample_folder():
            return None
        return folder

    def error(self, title: str, error: BaseException | str) -> None:
        """Show what went wrong and how to fix it; the traceback only for unexpected errors."""
        box = QMessageBox(self.parent)
        box.setIcon(QMessageBox.Icon.Warning)
        box.setWindowTitle(title)
        box.setText(title)
        message, bug = error_message(error)
        if bug and isinstance(error, BaseException):
            box.setIcon(QMessageBox.Icon.Critical)
            box.setDetailedText(format_exception(error))
        box.setInformativeText(message)
        _widen_for(box)
        box.exec()

    def ask_save_changes(self, what: str) -> SaveChoice:
        answer = QMessageBox.question(
            self.parent,
            "Unsaved changes",
            f"The project has unsaved changes. Save them before {what}?",
            QMessageBox.StandardButton.Save | QMessageBox.StandardButton.Discard | QMessageBox.StandardButton.Cancel,
            QMessageBox.StandardButton.Save,
        )
        if answer == QMessageBox.StandardButton.Save:
            return "save"
        if answer == QMessageBox.StandardButton.Discard:
            return "discard"
        return "cancel"

    def confirm(self, title: str, text: str) -> bool:
        answer = QMessageBox.question(self.parent, title, text)
        return answer == QMessageBox.StandardButton.Yes

    def choose(
        self, kind: str, title: str, text: str, choices: Sequence[tuple[str, str]], *, warning: bool = False
    ) -> str:
        """Ask with named answers ``(key, button text)``, the first the default and the last the
        one Escape gives; returns the key chosen. ``kind`` names the question (for tests);
        ``warning`` shows the warning icon (an answer can cost privacy), not the question mark."""
        icon = QMessageBox.Icon.Warning if warning else QMessageBox.Icon.Question
        box = QMessageBox(icon, title, text, QMessageBox.StandardButton.NoButton, self.parent)
        buttons = {}
        for number, (key, label) in enumerate(choices):
            role = QMessageBox.ButtonRole.RejectRole if number == len(choices) - 1 else QMessageBox.ButtonRole.AcceptRole
            buttons[box.addButton(label, role)] = key
        first = next(iter(buttons))
        box.setDefaultButton(first)
        box.setEscapeButton(list(buttons)[-1])
        box.exec()
        return buttons.get(box.clickedButton(), choices[-1][0])  # type: ignore[call-overload]

    def get_text(self, title: str, label: str, text: str = "") -> str | None:
        value, ok = QInputDialog.getText(self.parent, title, label, text=text)
        return value if ok and value.strip() else None

    def choose_item(self, kind: str, title: str, label: str, items: Sequence[str], current: str | None = None) -> str | None:
        """One of ``items`` from a list (no free text), ``current`` chosen at first; None if
        cancelled. ``kind`` names the question (for tests)."""
        start = items.index(current) if current in items else 0
        value, ok = QInputDialog.getItem(self.parent, title, label, list(items), start, False)
        return value if ok and value in items else None

    def ask_spend_budget(self, check: BudgetCheck) -> bool:
        """Before a release's noise is drawn, when its table has spent some budget already:
        what was spent, what this release adds and the new total; True to spend it."""
        box = QMessageBox(QMessageBox.Icon.Warning, "Spend more of this table's privacy budget?",
                          f"This table has already spent {spending_summary(check.spent)}.",
                          QMessageBox.StandardButton.NoButton, self.parent)
        box.setInformativeText(
            f"This release spends epsilon {check.epsilon:g} more ({check.neighbours}). Afterwards the table will "
            f"have spent {check.total_after_text()}.\n\n{COMPOSITION_TEXT}"
        )
        box.setDetailedText(f"Privacy ledger: {check.ledger.path}\n{table_keys_text(check.keys)}")
        spend = box.addButton(f"Spend epsilon {check.epsilon:g} more", QMessageBox.ButtonRole.AcceptRole)
        cancel = box.addButton("Cancel", QMessageBox.ButtonRole.RejectRole)
        box.setDefaultButton(cancel)  # as the command line: spending more is never the default
        box.setEscapeButton(cancel)
        box.exec()
        return box.clickedButton() is spend

    def ask_export_seeded(self, name: str) -> bool:
        """Before exporting a seeded (test) release read from ``name``: True to export it anyway,
        marked in the file as not private."""
        box = QMessageBox(QMessageBox.Icon.Warning, "Export a seeded test release?",
                          f"{name} is a seeded test release: it is NOT private.",
                          QMessageBox.StandardButton.NoButton, self.parent)
        box.setInformativeText(f"{SEEDED_WARNING}\n\nThe exported file will say so in the file itself.")
        export = box.addButton("Export it for testing", QMessageBox.ButtonRole.AcceptRole)
        cancel = box.addButton("Cancel", QMessageBox.ButtonRole.RejectRole)
        box.setDefaultButton(cancel)
        box.setEscapeButton(cancel)
        box.exec()
        return box.clickedButton() is export

    def import_options(self, path: Path, current: object = None) -> object | None:
        """The import dialog: preview and reading options; None if cancelled."""
        from .panels.import_dialog import ImportDialog

        dialog = ImportDialog(path, current, self.parent)
        if dialog.exec() != ImportDialog.DialogCode.Accepted:
            return None
        try:
            return dialog.options()
        except PriveletError as exc:
            self.error("Invalid reading options", exc)
            return None

    def open_path(self, kind: str, title: str | None = None) -> Path | None:
        folder = str(self.start_folder(kind))
        path, _ = QFileDialog.getOpenFileName(self.parent, title or f"Open {kind}", folder, FILTERS.get(kind, FILTERS["any"]))
        if not path:
            return None
        self.settings.set_last_folder(kind, Path(path))
        return Path(path)

    def save_path(self, kind: str, title: str | None = None, suggested: str = "") -> Path | None:
        folder = self.start_folder(kind)
        start = str(folder / suggested if suggested else folder)
        filters = FILTERS.get(kind, FILTERS["any"])
        path, _ = QFileDialog.getSaveFileName(self.parent, title or f"Save {kind}", start, filters)
        if not path:
            return None
        target = Path(path)
        suffix = SUFFIX.get(kind)
        if suffix and not target.name.lower().endswith(suffix) and not (kind == "hierarchy" and target.suffix.lower() == ".json"):
            target = target.with_name(target.name + suffix)
        self.settings.set_last_folder(kind, target)
        return target


def _widen_for(box: QMessageBox) -> None:
    """Give ``box``'s explanation room for about 60 characters a line (less if it is shorter):
    Qt sizes a message box by its main text, and a short title ("Cannot write r.npz") wrapped
    the explanation a few words a line."""
    label = box.findChild(QLabel, "qt_msgbox_informativelabel")
    if label is not None:
        metrics = label.fontMetrics()
        label.setMinimumWidth(min(metrics.horizontalAdvance(label.text()), 60 * metrics.averageCharWidth()))


class _Pending:
    """One question from a worker: asked on the GUI thread, answered through ``done``."""

    def __init__(self, question: Callable[[], Any]):
        self.question = question
        self.answer: Any = None
        self.error: BaseException | None = None
        self.abandoned = False  # the worker stopped waiting (cancelled): do not ask any more
        self.done = threading.Event()


class WorkerQuestion(QObject):
    """Ask the user from a worker thread: the question runs on the GUI thread (which owns
    every dialog) while the worker waits for its answer, or for a cancel.

    Lives in the GUI thread; :meth:`ask` is called from the worker.
    """

    _asked = Signal(object)  # a _Pending, queued to the GUI thread

    #: How often a waiting worker checks for a cancel (seconds).
    POLL = 0.05

    def __init__(self, parent: QObject | None = None):
        super().__init__(parent)
        self._asked.connect(self._ask, Qt.ConnectionType.QueuedConnection)

    def ask(self, question: Callable[[], Any], should_cancel: Callable[[], bool]) -> Any:
        """``question()``'s answer, asked on the GUI thread; Cancelled if the task is
        cancelled first (closing the window cancels and waits: a worker never waits forever)."""
        pending = _Pending(question)
        self._asked.emit(pending)
        while not pending.done.wait(self.POLL):
            if should_cancel():
                pending.abandoned = True
                raise Cancelled("cancelled by the user")
        if pending.error is not None:
            raise pending.error
        return pending.answer

    @Slot(object)
    def _ask(self, pending: _Pending) -> None:
        if pending.abandoned:
            return
        try:
            pending.answer = pending.question()
        except BaseException as exc:  # handed to the worker, which raises it as the task's failure
            pending.error = exc
        finally:
            pending.done.set()


def _sample_folder() -> Path:
    from .. import io as pio

    return pio.sample_table_path().parent


def error_message(error: BaseException | str) -> tuple[str, bool]:
    """What the app tells the user about ``error``, and whether it is a bug.

    A problem with the input (a :class:`~privelet_gui.engine.PriveletError`, a file that cannot
    be read) is its message, which says what to fix. A bug (an
    :class:`~privelet_gui.engine.InternalError` or any other unexpected error) is said to be one,
    never a problem with the data: it is logged (once: a task's error is logged when it fails) and
    the text names the log and where to report it, then the error's own message.
    """
    if not isinstance(error, BaseException):
        return _sentence(error), False
    message = str(error) or type(error).__name__
    if not is_unexpected(error):
        return _sentence(message), False
    log = log_unexpected_error(error, where="an error shown in a dialog")
    return f"{bug_report_text(error, log)}\n\nThe error: {_sentence(message)}", True


def problem_text(error: BaseException) -> str:
    """``error`` in a line of the app (a step's status): its message, or for a bug that it is one."""
    message = str(error) or type(error).__name__
    return f"a bug in Privelet Studio ({type(error).__name__}: {message})" if is_unexpected(error) else message


def _sentence(text: str) -> str:
    text = text.strip()
    if not text:
        return text
    text = text[0].upper() + text[1:]
    return text if text.endswith((".", "!", "?")) else text + "."


class HeadlessDialogs:
    """Answers without asking (scripted runs such as ``--screenshots``): errors go to stderr."""

    def __init__(self) -> None:
        self.errors: list[str] = []

    def error(self, title: str, error: BaseException | str) -> None:
        import sys

        message = error_message(error)[0] if isinstance(error, BaseException) else error
        self.errors.append(f"{title}: {message}")
        print(f"{title}: {message}", file=sys.stderr)

    def ask_save_changes(self, what: str) -> SaveChoice:
        return "discard"

    def confirm(self, title: str, text: str) -> bool:
        return True

    def choose(
        self, kind: str, title: str, text: str, choices: Sequence[tuple[str, str]], *, warning: bool = False
    ) -> str:
        return choices[0][0]

    def get_text(self, title: str, label: str, text: str = "") -> str | None:
        return text or None

    def choose_item(self, kind: str, title: str, label: str, items: Sequence[str], current: str | None = None) -> str | None:
        return None  # a scripted run never picks for the custodian

    def ask_spend_budget(self, check: BudgetCheck) -> bool:
        return True  # a scripted tour releases the sample into its own temporary ledger

    def ask_export_seeded(self, name: str) -> bool:
        return False  # a seeded release is exported only when someone said so

    def import_options(self, path: Path, current: object = None) -> object | None:
        from .. import io as pio

        return current if current is not None else pio.sniff_table(path)

    def open_path(self, kind: str, title: str | None = None) -> Path | None:
        return None

    def save_path(self, kind: str, title: str | None = None, suggested: str = "") -> Path | None:
        return None
