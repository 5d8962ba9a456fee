"""The main window: the step flow, menus, status bar, files, projects and the task runner."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from functools import partial
from pathlib import Path
from typing import Any, Literal

from PySide6.QtCore import QSize, Qt, QTimer, QUrl, Signal
from PySide6.QtGui import (
    QAction,
    QCloseEvent,
    QDesktopServices,
    QDragEnterEvent,
    QDropEvent,
    QGuiApplication,
    QKeySequence,
    QPalette,
)
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QDockWidget,
    QFrame,
    QHBoxLayout,
    QLabel,
    QListWidget,
    QListWidgetItem,
    QMainWindow,
    QMessageBox,
    QProgressBar,
    QPushButton,
    QStackedWidget,
    QTextBrowser,
    QUndoView,
    QVBoxLayout,
    QWidget,
)

from .. import __version__
from .. import io as pio
from ..engine import PriveletError, Release, mechanism_name, prepare_kernels
from ..error_log import error_log_path, is_unexpected, issue_tracker, log_unexpected_error
from ..formatting import counted
from ..io import TableSummary, summarize_table
from ..io.choices import write_redo_script
from ..io.ledger import BudgetCheck
from ..io.project import BEST_STRATEGY, PROJECT_SUFFIX, Project, load_project, save_project
from ..io.recovery import Orphan, RecoveryStore
from ..io.releases import SLAB_CELLS
from ..io.report import write_release_report
from ..io.zarr_releases import is_zarr_release
from ..qt import icons
from ..qt.plots import TRUE_DATA_CHOICES, true_data_question_text
from ..workspace.jobs import (
    ExportFormat,
    ReleaseControl,
    ReleaseOutcome,
    classify_file,
    export_format,
    export_opened_release,
    export_release_file,
    export_written_text,
    open_release_file,
    release_location,
    run_release,
)
from ..workspace.recovery import RecoveryKeeper, Snapshot
from .dialogs import Dialogs, WorkerQuestion, problem_text
from .document import STEPS, Document
from .guide import GUIDE_HTML, about_html
from .panels.attributes_panel import AttributesPanel
from .panels.data_panel import DataPanel
from .panels.hierarchy_panel import HierarchyPanel
from .panels.privacy_panel import PrivacyPanel
from .panels.release_panel import ReleasePanel
from .settings import Settings
from .tasks import TaskHandle, TaskService

__all__ = ["MainWindow"]

#: The export menu's kinds of file, as the export job names them.
_EXPORT_FORMATS: dict[str, ExportFormat] = {"release": "release", "csv": "csv", "parquet": "parquet"}

#: How long after the last change the copy of the unsaved work is written (ms): edits in a row write once.
RECOVERY_DELAY_MS = 1500
STEP_TITLES = {"data": "Data", "attributes": "Attributes", "hierarchies": "Hierarchies", "privacy": "Privacy", "release": "Release"}


class MainWindow(QMainWindow):
    """Privelet Studio's single window.

    Signals report the end of background work (tests wait on them with ``qtbot.waitSignal``).
    """

    tableLoaded = Signal(object)  # TableSummary
    tableFailed = Signal(str)
    projectOpened = Signal(object)  # Path
    releaseStarted = Signal()
    releaseFinished = Signal(object)  # ReleaseOutcome
    releaseFailed = Signal(object)  # exception
    releaseCancelled = Signal()
    exportFinished = Signal(object)  # Path
    exportFailed = Signal(object)

    def __init__(self, settings: Settings | None = None, parent: QWidget | None = None, *,
                 recovery: RecoveryStore | None = None):
        super().__init__(parent)
        self.settings = settings or Settings()
        self.dialogs: Any = Dialogs(self, self.settings)
        self.document = Document(self)
        # A copy of the unsaved work, kept a moment after each change (the user's recovery folder by default).
        self.recovery = RecoveryKeeper(self.document, recovery if recovery is not None else RecoveryStore())
        self._recovery_timer = QTimer(self)
        self._recovery_timer.setSingleShot(True)
        self._recovery_timer.setInterval(RECOVERY_DELAY_MS)
        self._recovery_timer.timeout.connect(self._keep_recovery)
        for changed in (self.document.stateChanged, self.document.modifiedChanged, self.document.releaseChanged,
                        self.document.undo_stack.indexChanged):
            changed.connect(lambda *_: self._recovery_timer.start())
        self.tasks = TaskService(self)
        self.runner = self.tasks.lane("work")  # tables, releases, exports: one at a time
        # written on a lane of its own (a slow disk never holds up the window), newest snapshot last
        self._recovery_lane = self.tasks.lane("recovery")
        self._recovery_lane.busyChanged.connect(self._recovery_lane_busy)
        self._recovery_pending: list[Snapshot] = []  # the snapshot still to write (at most one)
        self._cancelling: Callable[[], None] | None = None
        self._release_control: ReleaseControl | None = None  # the release being made
        # Closing waits for the release export it asked for: the edit state at which the
        # custodian then chose to discard changes (not asked again unless edited since).
        self._close_discarded_at: int | None = None
        self._edits = 0  # see _edit_state
        for changed in (self.document.undo_stack.indexChanged, self.document.tableChanged):
            changed.connect(self._count_edit)
        self._questions = WorkerQuestion(self)  # the release's question, asked from its worker
        # CSV and Parquet exports write this many cells at a time, reporting progress and
        # checking for a cancel after each slab
        self.export_slab_cells = SLAB_CELLS
        # the engine's compiled loops compiled (first run) or loaded from numba's cache now, in
        # the background, not when the first release starts
        self.tasks.lane("prepare").run(lambda _progress, _cancel: prepare_kernels(),
                                       "Preparing the engine (first run only: compiling its loops)")

        self.setWindowTitle("Privelet Studio[*]")
        self.setWindowIcon(icons.app_icon())
        self.setAcceptDrops(True)
        self.setMinimumSize(QSize(720, 540))
        self._build_ui()
        self._build_menus()
        self._build_status_bar()
        self.steps.setCurrentRow(0)

        self.runner.busyChanged.connect(self._busy_changed)
        self.document.stateChanged.connect(self._refresh_steps)
        self.document.modifiedChanged.connect(self.setWindowModified)
        self.document.projectPathChanged.connect(self._update_title)
        self.document.tableChanged.connect(self._update_title)
        hints = QGuiApplication.styleHints()
        if hasattr(hints, "colorSchemeChanged"):
            hints.colorSchemeChanged.connect(self._scheme_changed)

        geometry = self.settings.geometry()
        if geometry is not None:
            self.restoreGeometry(geometry)
        else:
            self.resize(1200, 820)
        state = self.settings.window_state()
        if state is not None:
            self.restoreState(state)
        self._refresh_steps()
        self._update_title()

    # -- construction ---------------------------------------------------------------------------------
    def _build_ui(self) -> None:
        central = QWidget()
        layout = QHBoxLayout(central)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(0)

        sidebar = QFrame()
        sidebar.setObjectName("sidebar")
        sidebar.setFrameShape(QFrame.Shape.NoFrame)
        side = QVBoxLayout(sidebar)
        side.setContentsMargins(12, 16, 12, 12)
        side.setSpacing(8)
        brand = QLabel("Privelet Studio")
        font = brand.font()
        font.setPointSizeF(font.pointSizeF() * 1.2)
        font.setBold(True)
        brand.setFont(font)
        side.addWidget(brand)
        self.steps = QListWidget()
        self.steps.setAccessibleName("Steps")
        self.steps.setFrameShape(QFrame.Shape.NoFrame)
        self.steps.setIconSize(QSize(20, 20))
        self.steps.setSpacing(2)
        self.steps.setVerticalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.steps.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.steps.setStyleSheet(
            "QListWidget { background: transparent; outline: 0; }"
            " QListWidget::item { padding: 6px 6px; border-radius: 6px; }"
            " QListWidget::item:selected { background: palette(highlight); color: palette(highlighted-text); }"
            " QListWidget::item:hover:!selected { background: palette(midlight); }"
        )
        for number, key in enumerate(STEPS, 1):
            item = QListWidgetItem(f"{number}   {STEP_TITLES[key]}")
            item.setData(Qt.ItemDataRole.UserRole, key)
            self.steps.addItem(item)
        metrics = self.steps.fontMetrics()
        self.steps.setFixedWidth(metrics.horizontalAdvance("5   Hierarchies") + 90)
        row = max(self.steps.sizeHintForRow(0), metrics.height() + 16) + 2 * self.steps.spacing() + 6
        self.steps.setFixedHeight(row * len(STEPS) + 8)
        side.addWidget(self.steps)
        self.step_status = QLabel()
        self.step_status.setWordWrap(True)
        self.step_status.setFixedWidth(self.steps.width())
        self.step_status.setAlignment(Qt.AlignmentFlag.AlignTop | Qt.AlignmentFlag.AlignLeft)
        side.addWidget(self.step_status)
        side.addStretch(1)
        self.next_button = QPushButton("Next step")
        self.next_button.clicked.connect(self.next_step)
        side.addWidget(self.next_button)
        layout.addWidget(sidebar)

        line = QFrame()
        line.setFrameShape(QFrame.Shape.VLine)
        line.setFrameShadow(QFrame.Shadow.Plain)
        line.setForegroundRole(QPalette.ColorRole.Mid)
        layout.addWidget(line)

        self.stack = QStackedWidget()
        content = QWidget()
        content_layout = QVBoxLayout(content)
        content_layout.setContentsMargins(20, 16, 20, 12)
        content_layout.addWidget(self.stack)
        layout.addWidget(content, 1)
        self.setCentralWidget(central)

        self.data_panel = DataPanel(self.document)
        self.attributes_panel = AttributesPanel(self.document)
        self.hierarchy_panel = HierarchyPanel(self.document, lambda: self.dialogs)
        self.privacy_panel = PrivacyPanel(self.document, self.tasks)
        self.release_panel = ReleasePanel(self.document, self.tasks)
        self.release_panel.preview.set_true_data_question(self._ask_true_data_export)
        self.panels = {
            "data": self.data_panel,
            "attributes": self.attributes_panel,
            "hierarchies": self.hierarchy_panel,
            "privacy": self.privacy_panel,
            "release": self.release_panel,
        }
        for key in STEPS:
            self.stack.addWidget(self.panels[key])
        self.steps.currentRowChanged.connect(self._step_changed)

        self.data_panel.openTableRequested.connect(lambda: self.open_table())
        self.data_panel.openSampleRequested.connect(self.open_sample)
        self.data_panel.changeOptionsRequested.connect(self.change_table_options)
        self.attributes_panel.editHierarchyRequested.connect(self._edit_hierarchy)
        self.attributes_panel.importSchemaRequested.connect(lambda: self.import_schema())
        self.attributes_panel.exportSchemaRequested.connect(lambda: self.export_schema())
        self.privacy_panel.boundsUpdated.connect(self.release_panel.refresh_bound)
        self.release_panel.runRequested.connect(self.run_release)
        self.release_panel.cancelRequested.connect(self.cancel_task)
        self.release_panel.exportRequested.connect(lambda kind: self.export_release(kind))
        self.release_panel.exportOpenedRequested.connect(lambda kind: self.export_opened_release(kind))
        self.release_panel.documentRequested.connect(lambda kind: self.save_release_document(kind))

        self.undo_dock = QDockWidget("Undo history", self)
        self.undo_dock.setObjectName("undo-history")
        self.undo_dock.setWidget(QUndoView(self.document.undo_stack))
        self.undo_dock.hide()
        self.addDockWidget(Qt.DockWidgetArea.RightDockWidgetArea, self.undo_dock)

    def _action(self, menu: Any, text: str, slot: Callable[[], object], shortcut: Any = None, tip: str = "") -> QAction:
        action = QAction(text, self)
        if shortcut is not None:
            if isinstance(shortcut, list):
                action.setShortcuts(shortcut)
            else:
                action.setShortcut(QKeySequence(shortcut))
        if tip:
            action.setStatusTip(tip)
        action.triggered.connect(lambda _=False: slot())
        menu.addAction(action)
        return action

    def _build_menus(self) -> None:
        bar = self.menuBar()
        file_menu = bar.addMenu("&File")
        self.act_open_table = self._action(file_menu, "Open &table...", lambda: self.open_table(), QKeySequence.StandardKey.Open,
                                           "Open a CSV, TSV, .csv.gz or Parquet table")
        self.act_open_next = self._action(
            file_menu, "Open a table with these &settings...", lambda: self.open_table(reuse_settings=True),
            tip="Next year's table: this project's attribute settings and hierarchies for its columns of the same name",
        )
        self.act_open_sample = self._action(file_menu, "Open the sample (UCI Adult)", self.open_sample)
        self.act_open_project = self._action(file_menu, "Open &project...", lambda: self.open_project(), "Ctrl+Shift+O")
        self.act_open_release = self._action(file_menu, "Open release &file...", lambda: self.open_release(), "Ctrl+Shift+L",
                                             "Open a release (.npz) to query it and look at its noisy marginals")
        self.recent_menu = file_menu.addMenu("Recent files")
        self.recent_menu.aboutToShow.connect(self._fill_recent)
        file_menu.addSeparator()
        self.act_save = self._action(file_menu, "&Save project", lambda: self.save_project(), QKeySequence.StandardKey.Save)
        self.act_save_as = self._action(file_menu, "Save project &as...", lambda: self.save_project_as(), QKeySequence.StandardKey.SaveAs)
        file_menu.addSeparator()
        export_menu = file_menu.addMenu("&Export release")
        self.act_export_release = self._action(export_menu, "Release file (.npz)...", lambda: self.export_release("release"), "Ctrl+Shift+E")
        self.act_export_csv = self._action(export_menu, "CSV, long format...", lambda: self.export_release("csv"))
        self.act_export_parquet = self._action(export_menu, "Parquet, long format...", lambda: self.export_release("parquet"))
        file_menu.addSeparator()
        self.act_quit = self._action(file_menu, "&Quit", self.close, QKeySequence.StandardKey.Quit)
        self.act_quit.setMenuRole(QAction.MenuRole.QuitRole)

        edit_menu = bar.addMenu("&Edit")
        stack = self.document.undo_stack
        self.act_undo = stack.createUndoAction(self, "&Undo")
        self.act_undo.setShortcuts(QKeySequence.keyBindings(QKeySequence.StandardKey.Undo))
        self.act_redo = stack.createRedoAction(self, "&Redo")
        redo_keys = list(QKeySequence.keyBindings(QKeySequence.StandardKey.Redo))
        if QKeySequence("Ctrl+Shift+Z") not in redo_keys:
            redo_keys.append(QKeySequence("Ctrl+Shift+Z"))
        self.act_redo.setShortcuts(redo_keys)
        edit_menu.addAction(self.act_undo)
        edit_menu.addAction(self.act_redo)
        edit_menu.addSeparator()
        edit_menu.addAction(self.undo_dock.toggleViewAction())

        go_menu = bar.addMenu("&Go")
        for number, key in enumerate(STEPS, 1):
            self._action(go_menu, f"&{number} {STEP_TITLES[key]}", partial(self.go_to, key), f"Ctrl+{number}")
        go_menu.addSeparator()
        self._action(go_menu, "Next step", self.next_step, "Ctrl+PgDown")
        self._action(go_menu, "Previous step", self.previous_step, "Ctrl+PgUp")

        release_menu = bar.addMenu("&Release")
        self.act_run = self._action(release_menu, "&Run release", self.run_release, "Ctrl+R")
        self.act_cancel = self._action(release_menu, "&Cancel", self.cancel_task, "Ctrl+.")
        self.act_cancel.setEnabled(False)
        release_menu.addSeparator()
        self.act_ledger = self._action(release_menu, "Privacy &ledger...", self.show_ledger,
                                       tip="What each table has spent, and every release made on this computer")

        help_menu = bar.addMenu("&Help")
        self._action(help_menu, "&User guide", self.show_guide, QKeySequence.StandardKey.HelpContents)
        self.act_report = self._action(help_menu, "&Report a problem...", self.report_problem,
                                       tip="Where the log of unexpected errors is, and what it holds (never your data)")
        self.act_about = self._action(help_menu, "&About Privelet Studio", self.show_about)
        self.act_about.setMenuRole(QAction.MenuRole.AboutRole)

    def _build_status_bar(self) -> None:
        status = self.statusBar()
        self.task_label = QLabel()
        self.task_progress = QProgressBar()
        self.task_progress.setRange(0, 1000)
        self.task_progress.setMaximumWidth(220)
        self.task_progress.setTextVisible(False)
        self.task_label.hide()
        self.task_progress.hide()
        self.settings_label = QLabel()
        status.addPermanentWidget(self.task_label)
        status.addPermanentWidget(self.task_progress)
        status.addPermanentWidget(self.settings_label)
        self.document.privacyChanged.connect(self._update_settings_label)
        self.document.attributesChanged.connect(self._update_settings_label)
        self._update_settings_label()
        status.showMessage("Open a table to start (File > Open table), or drop a file here.")

    # -- steps ---------------------------------------------------------------------------------------
    def go_to(self, step: str) -> None:
        self.steps.setCurrentRow(STEPS.index(step))

    def current_step(self) -> str:
        return STEPS[self.stack.currentIndex()]

    def next_step(self) -> None:
        self.steps.setCurrentRow(min(self.steps.currentRow() + 1, len(STEPS) - 1))

    def previous_step(self) -> None:
        self.steps.setCurrentRow(max(self.steps.currentRow() - 1, 0))

    def _step_changed(self, row: int) -> None:
        if row < 0:
            return
        self.stack.setCurrentIndex(row)
        self._refresh_steps()

    def _refresh_steps(self) -> None:
        statuses = self.document.step_statuses()
        for row, key in enumerate(STEPS):
            status = statuses[key]
            item = self.steps.item(row)
            item.setIcon(icons.icon(status.state))
            item.setToolTip(f"{STEP_TITLES[key]}: {status.message}")
            item.setData(Qt.ItemDataRole.AccessibleDescriptionRole, status.message)
        current = STEPS[max(self.steps.currentRow(), 0)]
        status = statuses[current]
        state_text = {"done": "Complete", "todo": "To do", "warning": "Complete, with a warning", "error": "Needs attention"}
        self.step_status.setText(f"<b>{state_text[status.state]}</b><br>{_escape(status.message)}")
        self.next_button.setEnabled(self.steps.currentRow() < len(STEPS) - 1)
        self.act_run.setEnabled(not self.runner.busy)
        has_release = self.document.outcome is not None
        for action in (self.act_export_release, self.act_export_csv, self.act_export_parquet):
            action.setEnabled(has_release and not self.runner.busy)

    def _update_title(self) -> None:
        path = self.document.project_path
        if path is not None:
            name = path.name
        elif self.document.summary is not None:
            name = f"{self.document.summary.path.name} (unsaved project)"
        else:
            name = "New project"
        self.setWindowTitle(f"{name}[*] - Privelet Studio")

    def _update_settings_label(self) -> None:
        doc = self.document
        if doc.mechanism == BEST_STRATEGY:
            spec = doc.release_spec()
            if spec is not None:
                chosen = spec.name
            else:  # a problem (an empty workload) chooses nothing: not "choosing"
                chosen = "none (Privacy step)" if isinstance(doc.best_strategy_result(), str) else "choosing..."
            self.settings_label.setText(f"ε = {doc.epsilon:g} · {doc.mechanism_text()}: {chosen}")
        else:
            self.settings_label.setText(f"ε = {doc.epsilon:g} · {doc.mechanism_text()} · S_A = {{{', '.join(doc.effective_sa())}}}")

    def _edit_hierarchy(self, column: str) -> None:
        self.go_to("hierarchies")
        self.hierarchy_panel.set_attribute(column)

    def _scheme_changed(self, *_: object) -> None:
        icons.clear_cache()
        self._refresh_steps()
        for panel in self.panels.values():
            panel.update()

    # -- tasks -----------------------------------------------------------------------------------------
    def _start(
        self,
        fn: Any,
        name: str,
        *,
        success: Callable[[Any], None],
        failure: Callable[[BaseException], None] | None = None,
        cancelled: Callable[[], None] | None = None,
        progress: Callable[[float, str], None] | None = None,
        finished: Callable[[], None] | None = None,
        cancelling: Callable[[], None] | None = None,
    ) -> TaskHandle:
        """Run ``fn`` on the work lane, its progress in the status bar; ``finished`` runs
        before whichever of ``success``, ``failure`` or ``cancelled`` ends it, and
        ``cancelling`` when the user asks it to stop."""

        def ended(then: Callable[..., None] | None) -> Callable[..., None]:
            def call(*args: Any) -> None:
                self._finish_task()
                if finished is not None:
                    finished()
                if then is not None:
                    then(*args)

            return call

        def failed(error: BaseException) -> None:
            if is_unexpected(error):
                # The task's code name, not its title: a title may name the user's file.
                code = getattr(fn, "func", fn)
                log_unexpected_error(error, where=f"the background task {getattr(code, '__qualname__', 'unknown')}")
            ended(failure)(error)

        def on_progress(fraction: float, stage: str) -> None:
            self.task_progress.setValue(int(fraction * 1000))
            self.task_label.setText(stage[:1].upper() + stage[1:])
            if progress is not None:
                progress(fraction, stage)

        def on_cancel() -> None:
            self.statusBar().showMessage("Cancelled.", 5000)
            if cancelled is not None:
                cancelled()

        self._cancelling = cancelling
        handle = self.runner.run(
            fn, name, on_success=ended(success), on_failure=failed, on_cancel=ended(on_cancel),
            on_progress=on_progress,
        )
        self.task_label.setText(name)
        self.task_label.show()
        self.task_progress.setValue(0)
        self.task_progress.show()
        self.act_cancel.setEnabled(True)
        return handle

    def _finish_task(self) -> None:
        self.task_label.hide()
        self.task_progress.hide()
        self.act_cancel.setEnabled(False)
        self._cancelling = None
        self._refresh_steps()

    def _busy_changed(self, busy: bool) -> None:
        for action in (self.act_open_table, self.act_open_next, self.act_open_sample, self.act_open_project):
            action.setEnabled(not busy)
        self._refresh_steps()

    def cancel_task(self) -> None:
        """Stop the running task (cooperatively: the engine stops at its next check). A
        release whose noise is drawn is kept: the cancel only skips measuring its error."""
        if self.runner.busy:
            control = self._release_control
            if control is not None and not control.cancel():
                self.statusBar().showMessage(
                    "The noise is drawn and recorded in the privacy ledger: the release is kept "
                    "(measuring its error is skipped).", 8000)
                return
            self.runner.cancel()
            self.statusBar().showMessage("Cancelling...")
            if self._cancelling is not None:
                self._cancelling()

    def _refuse_if_busy(self) -> bool:
        if self.runner.busy:
            self.statusBar().showMessage(f"Wait for '{self.runner.current_name}' to finish, or cancel it.", 5000)
            return True
        return False

    # -- files -------------------------------------------------------------------------------------------
    def open_path(self, path: str | Path) -> None:
        """Open a dropped or command-line file: project, table or hierarchy (by its content)."""
        path = Path(path)
        if not path.is_file() and not is_zarr_release(path):
            self.dialogs.error(f"Cannot open {path.name}", f"no such file: {path}")
            return
        kind = classify_file(path)
        if kind == "project":
            self.open_project(path)
        elif kind == "schema":
            self.import_schema(path)
        elif kind == "release":
            self.open_release(path)
        elif kind == "hierarchy":
            if self.hierarchy_panel.model is None:
                self.dialogs.error(
                    f"Cannot import the hierarchy {path.name}",
                    "open a table and make an attribute nominal first; the hierarchy is then imported for it",
                )
                return
            self.go_to("hierarchies")
            self.hierarchy_panel.import_hierarchy(path)
        else:
            self.open_table(path)

    def _confirm_discard(
        self, what: str, *, discarded: bool = False, resume: Callable[[int | None], object] | None = None,
    ) -> bool:
        """Ask about unsaved changes (unless the custodian ``discarded`` them already), then about
        a release no file holds yet; True if the caller may go on (every path that drops the
        settings or the release comes here). When the custodian chooses to export the release
        first, ``resume`` runs once it is written, given the edit state at which changes were
        discarded (None: none were)."""
        discarded_at: int | None = None
        if self.document.has_unsaved_work and not discarded:
            choice = self.dialogs.ask_save_changes(what)
            if choice == "cancel" or (choice == "save" and not self.save_project()):
                return False
            discarded_at = self._edit_state() if choice == "discard" else None
        return self._confirm_drop_release(what, resume=None if resume is None else partial(resume, discarded_at))

    def _confirm_drop_release(self, what: str, *, resume: Callable[[], object] | None = None) -> bool:
        """A release that spent epsilon is never dropped without asking; True if the caller may go
        on. "Export it..." writes it in the background; then ``resume`` (if given) goes on."""
        if not self.document.release_at_risk():
            return True
        choice = self.dialogs.choose(
            "drop-release", "The release is not saved",
            f"The last release has not been exported. {what[:1].upper()}{what[1:]} discards it; the privacy "
            "budget it spent stays spent (the ledger counts it). Export it first?",
            [("export", "Export it..."), ("discard", "Discard the release"), ("cancel", "Cancel")],
        )
        if choice == "export":
            self.export_release("release", then=resume)
            return False
        return choice == "discard"

    def _ask_true_data_export(self, fmt: str, noisy_side: bool) -> str:
        """Before a view of the error preview (computed from the true table) is exported: a key
        of TRUE_DATA_CHOICES (the noisy side alone, everything marked, or cancel)."""
        keys = ("noisy", "true", "cancel") if noisy_side else ("true", "cancel")
        return self.dialogs.choose(
            "export-true-data", "Export data computed from the true table?", true_data_question_text(fmt, noisy_side),
            [(key, TRUE_DATA_CHOICES[key]) for key in keys], warning=True,
        )

    def _edit_state(self) -> int:
        """How many times the settings have changed (an edit merged into the last one included)."""
        return self._edits

    def open_table(self, path: str | Path | None = None, options: Any = None, *, schema: Any = None,
                   keep_settings: bool = False, reuse_settings: bool | None = None) -> bool:
        """Read a table in the worker; the import dialog asks for options unless given.

        ``keep_settings``: the same table read again (e.g. other reading options) in the same
        project. ``reuse_settings``: a new table with this project's attribute settings and
        hierarchies for its columns of the same name (next year's table); None asks, when there
        are settings to reuse.
        """
        if self._refuse_if_busy():
            return False
        if not keep_settings and not self._confirm_discard("opening another table"):
            return False
        if path is None:
            path = self.dialogs.open_path("table", "Open table")
            if path is None:
                return False
        path = Path(path)
        if not keep_settings and schema is None and reuse_settings is None and self.document.included():
            choice = self.dialogs.choose(
                "reuse-settings", "Use these settings?",
                f"Open {path.name} with this project's attribute settings and hierarchies (for its columns of "
                "the same name; values new to them show up as problems to fix), or start afresh?",
                [("reuse", "Use these settings"), ("fresh", "Start afresh"), ("cancel", "Cancel")],
            )
            if choice == "cancel":
                return False
            reuse_settings = choice == "reuse"
        if options is None:
            options = self.dialogs.import_options(path)
            if options is None:
                return False
        project = self.document.to_project() if keep_settings or reuse_settings else None
        self.go_to("data")
        self.statusBar().showMessage(f"Reading {path.name}...")

        def success(summary: TableSummary) -> None:
            self.document.set_table(summary, schema=schema, project=project, same_project=keep_settings)
            self.settings.add_recent_file(path)
            self.settings.set_last_folder("table", path)
            self.statusBar().showMessage(f"Read {summary.rows:,} rows from {path.name} in {summary.seconds:.1f} s.", 8000)
            self.tableLoaded.emit(summary)

        def failure(error: BaseException) -> None:
            self.document.set_table_error(path, f"Cannot read {path.name}: {problem_text(error)}")
            self.statusBar().showMessage(f"Cannot read {path.name}.", 8000)
            self.dialogs.error(f"Cannot read the table {path.name}", error)
            self.tableFailed.emit(str(error))

        self._start_reading(path, options, success, failure)
        return True

    def _start_reading(self, path: Path, options: Any, success: Callable[[Any], None],
                       failure: Callable[[BaseException], None]) -> None:
        """Summarise a table on the work lane, its progress shown in the Data step."""
        name = f"Reading {path.name}"
        self.data_panel.set_progress(0.0, name)
        self._start(partial(summarize_table, path, options), name, success=success, failure=failure,
                    progress=self.data_panel.set_progress, finished=lambda: self.data_panel.set_progress(None))

    def change_table_options(self) -> None:
        summary = self.document.summary
        if summary is None:
            return
        options = self.dialogs.import_options(summary.path, summary.options)
        if options is not None:
            self.open_table(summary.path, options, keep_settings=True)

    def open_sample(self) -> bool:
        """The bundled UCI Adult sample with its schema (public ARX hierarchies)."""
        try:
            table = pio.sample_table_path()
            schema = pio.load_schema(pio.sample_schema_path())
            options = pio.sniff_table(table)
        except (PriveletError, OSError) as exc:
            self.dialogs.error("Cannot open the sample", exc)
            return False
        return self.open_table(table, options, schema=schema)

    def open_project(self, path: str | Path | None = None) -> bool:
        if self._refuse_if_busy() or not self._confirm_discard("opening a project"):
            return False
        if path is None:
            path = self.dialogs.open_path("project", "Open project")
            if path is None:
                return False
        path = Path(path)
        try:
            project = load_project(path)
        except (PriveletError, OSError) as exc:
            self.dialogs.error(f"Cannot open the project {path.name}", exc)
            return False
        self.settings.add_recent_file(path)
        self.settings.set_last_folder("project", path)
        self._apply_opened(project, path, f"Opened {path.name}.")
        return True

    def _apply_opened(self, project: Project, path: Path | None, message: str,
                      then: Callable[[], None] | None = None) -> None:
        """Make ``project`` (from the file ``path``, or None) the document once its table is
        read (or found unreadable: the settings are kept all the same); then ``then()``."""

        def applied(summary: TableSummary | None) -> None:
            self.document.apply_project(project, path, summary)
            if then is not None:
                then()
            self.projectOpened.emit(path)

        table = project.table_path
        if table is None or not table.is_file():
            applied(None)
            if table is not None:
                self.document.set_table_error(table, f"The project's table {table} is missing; open it with File > Open table")
            self.go_to("data")
            return

        def success(summary: TableSummary) -> None:
            applied(summary)
            self.statusBar().showMessage(message, 8000)

        def failure(error: BaseException) -> None:
            applied(None)
            self.document.set_table_error(table, f"Cannot read {table.name}: {problem_text(error)}")
            self.dialogs.error(f"Cannot read the project's table {table.name}", error)

        self._start_reading(table, project.table_options, success, failure)

    # -- unsaved work kept against a crash -------------------------------------------------------------
    def _keep_recovery(self) -> None:
        """Bring the copy of the unsaved work up to date (a snapshot now, written in the background)."""
        self._recovery_timer.stop()
        self._recovery_pending[:] = [self.recovery.snapshot()]
        self._write_recovery()

    def _recovery_lane_busy(self, busy: bool) -> None:
        if not busy:
            self._write_recovery()

    def _write_recovery(self) -> None:
        if self._recovery_lane.busy or not self._recovery_pending:
            return  # the lane writes the pending snapshot when its current write ends
        snapshot = self._recovery_pending.pop()
        self._recovery_lane.run(lambda _progress, _cancel: self.recovery.keep(snapshot), "keeping a copy of the unsaved work",
                                on_success=self._say_recovery_problem)

    def _say_recovery_problem(self, problem: str | None) -> None:
        """Say why the copy could not be written (None: it was)."""
        if problem is not None:
            self.statusBar().showMessage(f"{problem[:1].upper()}{problem[1:]}.", 10000)

    def offer_recovery(self) -> bool:
        """Offer back the newest copy of unsaved work that an earlier run left behind (it crashed,
        was killed or lost power): its project and its release; True if it is being recovered.
        Copies not recovered now stay for the next start unless the custodian discards them."""
        orphans = self.recovery.store.orphans()
        offered = next((orphan for orphan in orphans if orphan.holds_work), None)
        for other in orphans:
            if other is not offered:
                other.leave()  # for the next start
        if offered is None:
            return False
        orphan = offered
        choice = self.dialogs.choose("recover", "Recover unsaved work?", _recovery_question(orphan, len(orphans) - 1), [
            ("recover", "Recover"), ("discard", "Discard it"), ("later", "Not now")])
        if choice == "discard":
            orphan.discard()
            return False
        if choice != "recover" or self._refuse_if_busy() or not self._confirm_discard("recovering unsaved work"):
            orphan.leave()
            return False
        self._recover_release(orphan, lambda note: self._recover_project(orphan, note))
        return True

    def _recover_release(self, orphan: Orphan, then: Callable[[str], None]) -> None:
        """Save the orphan's release where the custodian says (in the background), then
        ``then(note)`` (what became of it, for the status bar). Without an answer the copy keeps
        it, for the next start."""
        kept = orphan.release
        target = None if kept is None else self.dialogs.save_path("release", "Save the recovered release",
                                                                  f"recovered-release{kept.path.suffix}")
        if kept is None or target is None:
            then("" if kept is None else "The release stays in the copy, offered again at the next start.")
            return

        def saved(_result: object) -> None:
            then(f"Saved the recovered release to {target.name}; File > Open release shows it.")

        def failed(error: BaseException) -> None:
            self.dialogs.error(f"Cannot save the recovered release to {target.name}", error)
            then("")

        self.tasks.lane("recovered release").run(lambda _progress, _cancel: orphan.save_release(Path(target)),
                                                 f"Saving {target.name}", on_success=saved, on_failure=failed)

    def _recover_project(self, orphan: Orphan, note: str) -> None:
        """Open the orphan's project as the document, its changes unsaved; the orphan keeps only
        what is not recovered (a release not saved), for the next start. ``note`` says what
        became of the release."""
        project = orphan.project
        if project is None:
            if orphan.holds_work:
                orphan.leave()
            if note:
                self.statusBar().showMessage(note, 10000)
            return

        def recovered() -> None:  # the copy becomes this window's (written now), then the old one goes
            self.document.mark_dirty()
            self._recovery_timer.stop()
            self._recovery_lane.wait()
            self._recovery_pending.clear()
            problem = self.recovery.update()
            self._say_recovery_problem(problem)
            if problem is None:
                orphan.forget_project()
            if orphan.holds_work:
                orphan.leave()

        self._apply_opened(project, orphan.project_path,
                           " ".join(filter(None, [f"Recovered the unsaved work kept at {_local_time(orphan.saved_at)}.",
                                                  note])), recovered)

    def save_project(self, path: str | Path | None = None) -> bool:
        """Save to ``path``, or to the current project file, or ask (Save As)."""
        target = Path(path) if path is not None else self.document.project_path
        if target is None:
            return self.save_project_as()
        try:
            save_project(self.document.to_project(), target)
        except (PriveletError, OSError) as exc:
            self.dialogs.error(f"Cannot save the project {target.name}", exc)
            return False
        self.document.mark_saved(target)
        self._keep_recovery()  # saved: the copy goes
        self.settings.add_recent_file(target)
        self.statusBar().showMessage(f"Saved {target.name}.", 5000)
        return True

    def save_project_as(self, path: str | Path | None = None) -> bool:
        if path is None:
            suggested = (self.document.summary.path.stem if self.document.summary else "project") + PROJECT_SUFFIX
            path = self.dialogs.save_path("project", "Save project as", suggested)
            if path is None:
                return False
        return self.save_project(path)

    def _fill_recent(self) -> None:
        self.recent_menu.clear()
        recent = self.settings.recent_files()
        for path in recent:
            action = self.recent_menu.addAction(path.name, partial(self.open_path, path))
            action.setStatusTip(str(path))
            action.setToolTip(str(path))
            action.setEnabled(path.is_file())
        if recent:
            self.recent_menu.addSeparator()
            self.recent_menu.addAction("Clear the list", self.settings.clear_recent_files)
        else:
            self.recent_menu.addAction("(none yet)").setEnabled(False)

    # -- release ----------------------------------------------------------------------------------------
    def run_release(self) -> bool:
        """Count and release the table in the worker (one task, one progress bar), as
        ``privelet release`` does: once counted, the privacy ledger says what the table has
        spent and, if anything, the custodian is asked before its noise is drawn; the release
        is recorded as soon as it is drawn."""
        if self._refuse_if_busy() or not self._confirm_drop_release("running a new release"):
            return False
        try:
            job = self.document.release_job()
        except PriveletError as exc:
            self.dialogs.error("Not ready to release", exc)
            return False
        if not self._confirm_domains_from_data(job.spec.epsilon):
            return False
        self.go_to("release")
        self.releaseStarted.emit()
        control = self._release_control = ReleaseControl()

        def ask(check: BudgetCheck) -> bool:  # on the GUI thread, while the worker waits
            self.document.set_table_budget(job.table_path, check)
            return bool(self.dialogs.ask_spend_budget(check))

        def release(progress: Callable[[float, str], None], should_cancel: Callable[[], bool]) -> ReleaseOutcome:
            return run_release(job, progress, should_cancel, control=control,
                               ask=lambda check: self._questions.ask(partial(ask, check), should_cancel))

        def success(outcome: ReleaseOutcome) -> None:
            self.document.set_release_outcome(outcome)
            self.release_panel.set_finished(f"Released in {outcome.seconds:.1f} s", True)
            self.statusBar().showMessage(f"Release finished in {outcome.seconds:.1f} s. Export it from the Release step.", 10000)
            self.releaseFinished.emit(outcome)

        def failure(error: BaseException) -> None:
            self.release_panel.set_finished("Failed: nothing was released", False)
            self.dialogs.error("The release failed", error)
            self.releaseFailed.emit(error)

        def cancelled() -> None:
            self.release_panel.set_finished("Cancelled: no noise was drawn, nothing was recorded", False)
            self.releaseCancelled.emit()

        self._start(release, "Releasing", success=success, failure=failure, cancelled=cancelled,
                    progress=self.release_panel.set_progress, finished=self._release_ended,
                    cancelling=lambda: self.release_panel.set_finished("Cancelling...", False))
        self.release_panel.set_running(True)
        self.data_panel.setEnabled(False)
        return True

    def _confirm_domains_from_data(self, epsilon: float) -> bool:
        """Before a release whose domains were taken from the data (not private), ask; "Review
        the domains" opens the Attributes step. True to release."""
        if not self.document.domains_from_data():
            return True
        choice = self.dialogs.choose(
            "domains-from-data", "Release with domains taken from the data?",
            f"{self.document.domains_text()}\n\nReleasing anyway spends epsilon {epsilon:g}; the release file "
            "records which domains came from the data.",
            [("review", "Review the domains"), ("release", "Release anyway"), ("cancel", "Cancel")], warning=True)
        if choice == "review":
            self.go_to("attributes")
        if choice != "release":
            self.statusBar().showMessage("Not released: no epsilon was spent.", 8000)
        return choice == "release"

    def _release_ended(self) -> None:
        self._release_control = None
        self.release_panel.set_running(False)
        self.data_panel.setEnabled(True)

    def show_ledger(self) -> None:
        """The privacy ledger: what each table has spent and every release (as ``privelet ledger``)."""
        from .ledger_dialog import LedgerDialog

        check = self.document.budget_check()
        dialog = LedgerDialog(check.keys if check is not None else None, self)
        dialog.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        dialog.show()
        self.ledger_dialog = dialog

    def open_release(self, path: str | Path | None = None) -> bool:
        """Load a release file in the worker and show it in the error preview and the workbench."""
        if self._refuse_if_busy():
            return False
        if path is None:
            path = self.dialogs.open_path("release", "Open release file")
            if path is None:
                return False
        path = release_location(path)
        warnings: list[str] = []  # filled by the worker, read once it is done

        def success(release: Release) -> None:
            self.go_to("release")
            self.release_panel.show_opened_release(path, release, warnings)
            self.release_panel.tabs.setCurrentWidget(self.release_panel.workbench)
            checked = " Read the warning above it." if warnings else ""
            self.statusBar().showMessage(f"Opened the release {path.name}: noisy counts only.{checked}", 8000)

        def failure(error: BaseException) -> None:
            self.dialogs.error(f"Cannot open the release {path.name}", error)

        self._start(lambda progress, cancel: open_release_file(path, progress, cancel, warnings.append),
                    f"Opening {path.name}", success=success, failure=failure)
        return True

    def export_release(
        self, kind: str = "release", path: str | Path | None = None, *, force: bool = False, counts: str | None = None,
        then: Callable[[], object] | None = None,
    ) -> bool:
        """Write the last release (dialog only when no path is given). CSV and Parquet hold the
        count kind ``counts`` (default: the one chosen in the Release step); a release file
        always the release's own counts. ``then`` runs once it is written (not if it fails)."""
        outcome = self.document.outcome
        if outcome is None:
            self.dialogs.error("Nothing to export", "run a release first (Release step)")
            return False
        if self._refuse_if_busy():
            return False
        if path is None:
            stem = Path(outcome.table_name).stem.removesuffix(".csv") or "release"
            path = self.dialogs.save_path(kind, "Export release", f"{stem}-release")
            if path is None:
                return False
            force = True  # the file dialog asked before overwriting
        target = Path(path)

        def saved() -> None:
            if self.document.outcome is outcome:
                self.document.mark_release_saved(target)
            if then is not None:
                QTimer.singleShot(0, then)  # once the export task has wound up

        fmt = _EXPORT_FORMATS[kind]
        if counts is None:
            counts = "noisy" if fmt == "release" else self.release_panel.counts_kind()
        standard_error = fmt != "release" and self.release_panel.standard_error()
        self._start_export(partial(export_release_file, outcome, target, fmt, force=force, counts=counts,
                                   standard_error=standard_error, slab_cells=self.export_slab_cells),
                           target, fmt, saved)
        return True

    def _start_export(
        self, write: Callable[..., Any], target: Path, fmt: ExportFormat, saved: Callable[[], None] | None = None
    ) -> None:
        """Write an export in the background; then remember its folder and say so, naming what
        describes it (or show why not)."""

        def success(written: Path) -> None:
            if saved is not None:
                saved()
            self.settings.set_last_folder("export", target)
            self.statusBar().showMessage(export_written_text(target, fmt), 15000)
            self.exportFinished.emit(target)

        def failure(error: BaseException) -> None:
            self.dialogs.error(f"Cannot write {target.name}", error)
            self.exportFailed.emit(error)

        def cancelled() -> None:
            self.statusBar().showMessage(f"Export cancelled: {target.name} was not written.", 8000)

        self._start(write, f"Writing {target.name}", success=success, failure=failure, cancelled=cancelled)

    def save_release_document(
        self, kind: Literal["report", "script"] = "report", path: str | Path | None = None, *, force: bool = False,
        name: str | None = None,
    ) -> bool:
        """Write the last release's report (one HTML page) or the script that makes it again
        (dialogs only for what is not given). Both are made from its release file (the report
        gives the file's checksum): a release not saved to one yet is saved first."""
        outcome = self.document.outcome
        if outcome is None:
            self.dialogs.error("Nothing to describe", "run a release first (Release step)")
            return False
        if self._refuse_if_busy():
            return False
        source = self.document.outcome_output
        if source is None or export_format(source) != "release":
            self.statusBar().showMessage(f"Save the release file first: the {kind} is made from it.", 8000)
            return self.export_release(
                "release", then=lambda: self.save_release_document(kind, path, force=force, name=name)
            )
        stem = Path(outcome.table_name).stem.removesuffix(".csv") or "release"
        if kind == "report" and name is None:
            name = self.dialogs.get_text("Release report", "The table's name, as the report calls it:", stem)
            if name is None:
                return False
        if path is None:
            title = "Save the release report" if kind == "report" else "Save the script that redoes the release"
            path = self.dialogs.save_path(kind, title, f"{stem}-{'report' if kind == 'report' else 'redo'}")
            if path is None:
                return False
            force = True  # the file dialog asked before overwriting
        target = Path(path)
        if kind == "report":
            def write(progress: Any, cancel: Any) -> Path:
                return write_release_report(source, target, force=force, name=name, progress=progress,
                                            should_cancel=cancel)
        else:
            def write(progress: Any, cancel: Any) -> Path:
                return write_redo_script(source, target, force=force, choices=outcome.choices)

        def success(written: Path) -> None:
            self.settings.set_last_folder(kind, target)
            said = ("Its figures need no data: it can go with the release." if kind == "report" else
                    "Running it makes a NEW release and spends epsilon again.")
            self.statusBar().showMessage(f"Wrote {target.name}. {said}", 15000)
            self.exportFinished.emit(target)

        def failure(error: BaseException) -> None:
            self.dialogs.error(f"Cannot write {target.name}", error)
            self.exportFailed.emit(error)

        self._start(write, f"Writing {target.name}", success=success, failure=failure)
        return True

    def export_opened_release(
        self, kind: str = "csv", path: str | Path | None = None, *, force: bool = False, counts: str | None = None
    ) -> bool:
        """Export the release file opened from disk as CSV or Parquet; a seeded (test) release
        only once the custodian confirms it (the export then says in the file that it is not private)."""
        opened = self.release_panel.opened
        if opened is None:
            self.dialogs.error("Nothing to export", "open a release file first (File > Open release file)")
            return False
        if self._refuse_if_busy():
            return False
        source, release = opened
        if release.seeded and not self.dialogs.ask_export_seeded(source.name):
            self.statusBar().showMessage(f"Not exported: {source.name} is a seeded test release.", 8000)
            return False
        if path is None:
            path = self.dialogs.save_path(kind, "Export the release file", f"{source.stem}-{kind}")
            if path is None:
                return False
            force = True  # the file dialog asked before overwriting
        target = Path(path)
        fmt: Literal["csv", "parquet"] = "parquet" if kind == "parquet" else "csv"
        self._start_export(partial(export_opened_release, release, target, fmt, force=force,
                                   counts=counts or self.release_panel.counts_kind(), allow_seeded=release.seeded,
                                   standard_error=self.release_panel.standard_error(),
                                   slab_cells=self.export_slab_cells),
                           target, fmt)
        return True

    # -- schema files -----------------------------------------------------------------------------------
    def import_schema(self, path: str | Path | None = None) -> bool:
        """Take the attributes from a schema file (the command line's format); undoable."""
        if path is None:
            path = self.dialogs.open_path("schema", "Import a schema")
            if path is None:
                return False
        path = Path(path)
        if not self.document.configs:
            self.dialogs.error(f"Cannot import the schema {path.name}", "open the table it describes first")
            return False
        try:
            schema = pio.load_schema(path)
        except (PriveletError, OSError) as exc:
            self.dialogs.error(f"Cannot import the schema {path.name}", exc)
            return False
        self.document.import_schema(schema, f"Import the schema {path.name}")
        self.settings.set_last_folder("schema", path)
        self.go_to("attributes")
        self.statusBar().showMessage(f"Imported {counted(len(schema), 'attribute')} from {path.name}.", 8000)
        return True

    def export_schema(self, path: str | Path | None = None) -> bool:
        """Write the included attributes as a schema file (hierarchies inlined)."""
        schema = self.document.schema()
        if schema is None:
            self.dialogs.error("Nothing to export", self.document.schema_error() or "define the attributes first")
            return False
        if path is None:
            path = self.dialogs.save_path("schema", "Export the schema", "schema.json")
            if path is None:
                return False
        path = Path(path)
        try:
            pio.save_schema(schema, path, force=True)  # the file dialog asked before overwriting
        except (PriveletError, OSError) as exc:
            self.dialogs.error(f"Cannot write {path.name}", exc)
            return False
        self.settings.set_last_folder("schema", path)
        self.statusBar().showMessage(f"Wrote {path.name}.", 8000)
        return True

    # -- help ------------------------------------------------------------------------------------------
    def show_guide(self) -> None:
        dialog = QDialog(self)
        dialog.setWindowTitle("Privelet Studio user guide")
        dialog.resize(720, 640)
        layout = QVBoxLayout(dialog)
        browser = QTextBrowser()
        browser.setOpenExternalLinks(True)
        browser.setHtml(GUIDE_HTML)
        layout.addWidget(browser)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        buttons.rejected.connect(dialog.reject)
        layout.addWidget(buttons)
        dialog.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        dialog.show()
        self._guide = dialog

    def show_about(self) -> None:
        QMessageBox.about(self, f"About Privelet Studio {__version__}", about_html())

    def report_problem(self) -> QMessageBox:
        """Help > Report a problem: where the log of unexpected errors is and what it holds.

        Not modal (the window stays usable while the user finds the file); "Open the folder"
        shows the log's folder in the file manager. Returns the box (tests read and press it).
        """
        path = error_log_path()
        logged = path.is_file() and path.stat().st_size > 0
        box = QMessageBox(QMessageBox.Icon.Information, "Report a problem", "Report a problem",
                          QMessageBox.StandardButton.NoButton, self)
        tracker = issue_tracker()
        where = f'at <a href="{tracker}">{_escape(tracker)}</a>' if tracker else "to the people who gave you the app"
        state = (f"Attach the log of unexpected errors:<br><code>{_escape(str(path))}</code>" if logged
                 else f"No unexpected error has been logged on this computer (the log would be "
                      f"<code>{_escape(str(path))}</code>).")
        box.setTextFormat(Qt.TextFormat.RichText)
        box.setInformativeText(
            f"Describe what you did and what happened, {where}. {state}<br><br>"
            "For each unexpected error the log holds its time, the kind of error, the lines of the program "
            "it went through and the versions of Privelet Studio, Python, Qt and the system. It never holds "
            "your data: no values, labels, counts or file names (read it before you send it)."
        )
        opener = box.addButton("Open the folder", QMessageBox.ButtonRole.ActionRole)
        box.addButton(QMessageBox.StandardButton.Close)
        opener.clicked.connect(lambda: self._open_log_folder(path))
        box.setWindowModality(Qt.WindowModality.NonModal)  # a message box over a window is modal by default
        box.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        box.show()
        self._report_box = box
        return box

    def _open_log_folder(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)  # before the first error, the folder may not exist
        if not QDesktopServices.openUrl(QUrl.fromLocalFile(str(path.parent))):
            self.statusBar().showMessage(f"Could not open a file manager; the log is {path}", 10000)

    def unexpected_error_logged(self, path: Path | None) -> None:
        """Say that something went wrong and was logged (the app's error hook calls this)."""
        where = "logged; Help > Report a problem says how to report it" if path else "not logged (the log cannot be written)"
        self.statusBar().showMessage(f"An unexpected error occurred and was {where}.", 15000)

    # -- drag and drop ------------------------------------------------------------------------------------
    def dragEnterEvent(self, event: QDragEnterEvent) -> None:
        urls = event.mimeData().urls() if event.mimeData().hasUrls() else []
        if urls and all(url.isLocalFile() for url in urls):
            event.acceptProposedAction()
        else:
            event.ignore()

    def dropEvent(self, event: QDropEvent) -> None:
        paths = [Path(url.toLocalFile()) for url in event.mimeData().urls() if url.isLocalFile()]
        if not paths:
            event.ignore()
            return
        event.acceptProposedAction()
        # Projects first, then tables, then hierarchies (which need the table's attributes).
        order = {"project": 0, "table": 1, "hierarchy": 2}
        def kind(p: Path) -> str:
            return classify_file(p) if p.is_file() or is_zarr_release(p) else "table"

        for path in sorted(paths, key=lambda p: order.get(kind(p), 1))[:1]:
            self.open_path(path)

    @staticmethod
    def file_urls(paths: list[Path]) -> list[QUrl]:
        return [QUrl.fromLocalFile(str(p)) for p in paths]

    # -- closing ---------------------------------------------------------------------------------------
    def closeEvent(self, event: QCloseEvent) -> None:
        discarded_at, self._close_discarded_at = self._close_discarded_at, None
        discarded = discarded_at is not None and discarded_at == self._edit_state()
        if not self._confirm_discard("closing", discarded=discarded, resume=self._close_once_exported):
            event.ignore()
            return
        # Close = cancel + wait: no worker outlives the window.
        self.tasks.shutdown()  # a copy being written is finished first
        self._recovery_timer.stop()
        self.recovery.close()  # the work is saved or the custodian discarded it
        self.settings.set_geometry(self.saveGeometry())
        self.settings.set_window_state(self.saveState())
        self.settings.sync()
        event.accept()


    def _count_edit(self, *_: object) -> None:
        self._edits += 1

    def _close_once_exported(self, discarded_at: int | None) -> None:
        """Closing asked to export the release first and it is written: close, without asking
        again about changes the custodian chose to discard (unless edited since)."""
        self._close_discarded_at = discarded_at
        self.close()


def _recovery_question(orphan: Orphan, others: int) -> str:
    """What the recovery question says about ``orphan`` (and the ``others`` copies left for later)."""
    parts = []
    if orphan.project is not None:
        table = orphan.project.table_path
        work = (f"unsaved changes to the project {orphan.project_path.name}" if orphan.project_path is not None
                else "an unsaved project")
        parts.append(f"{work}{f' (table {table.name})' if table is not None else ''}")
    if orphan.release is not None:
        kept = orphan.release
        parts.append(f"a release no file holds ({mechanism_name(kept.mechanism)}, epsilon {kept.epsilon:g}, already "
                     "spent)")
    text = (f"Privelet Studio closed unexpectedly with {' and '.join(parts)}, last kept at {_local_time(orphan.saved_at)}. "
            "Recover it?")
    if orphan.project is not None:
        text += " The project opens as it was then, with its changes not yet saved."
    if orphan.release is not None:
        text += " You choose where to save the release."
    if others:
        text += (f" {others} other cop{'ies' if others > 1 else 'y'} of unsaved work "
                 f"{'are' if others > 1 else 'is'} kept in {orphan.path.parent} for the next start.")
    return text


def _local_time(moment: datetime | None) -> str:
    return moment.astimezone().strftime("%H:%M on %d %b %Y") if moment is not None else "an unknown time"


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
