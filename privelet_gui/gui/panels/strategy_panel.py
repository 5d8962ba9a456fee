"""The best strategy in the Privacy step: how each attribute is measured for the workload the
custodian expects, and its expected error beside the paper's mechanisms'.

The choice is the workspace's (:meth:`~privelet_gui.workspace.Workspace.best_strategy_result`,
kept by key at epsilon 1: moving epsilon only rescales it). Choosing takes seconds, so it runs
on this box's lane of the task service, with progress and cancel, while the step is shown or
while the release needs it ("Best strategy" selected). Each search first waits
:data:`SETTLE_SECONDS` on the worker, where a newer request cancels it: a burst of edits (a
spin box held down) starts one search, not one per step. Until the choice for the current
settings is known, nothing of an older one is shown and the release waits
(:meth:`~privelet_gui.workspace.Workspace.best_strategy_problem`). A search the custodian
cancels stays cancelled for those settings (the workspace's
:meth:`~privelet_gui.workspace.Workspace.cancel_best_strategy`: the release and the Privacy step
say so, and this box says that the advisor below waits for it) until "Search again" or new
settings start one.
"""

from __future__ import annotations

import time
from functools import partial

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QFont, QShowEvent
from PySide6.QtWidgets import (
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QProgressBar,
    QPushButton,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from ...engine import MARGINALS, Cancelled, PriveletError, StrategyChoice, margin95
from ...engine.descriptions import describe_axis_strategy
from ...io.project import BEST_STRATEGY
from ...qt.widgets import Banner, fmt_count
from ...workspace.model import STRATEGY_SEARCH_CANCELLED
from ...workspace.workload import SearchKey, find_best_strategy
from ..document import Document
from ..tasks import CancelFunction, ProgressFunction, TaskService
from .advisor_panel import fit_rows, rows_table

__all__ = ["SETTLE_SECONDS", "StrategyBox"]

#: A search waits this long on the worker before it starts, so that a newer request replaces it.
SETTLE_SECONDS = 0.25
#: The reference the summary compares with: what the app released by default before.
_REFERENCE = "Privelet+ (recommended S_A)"
#: The measurements table's title and columns for per-axis strategies, and for weighted marginals.
_AXES_TITLE, _AXES_COLUMNS = "How each attribute is measured:", ("Attribute", "Measured by")
_MARGINALS_TITLE = "The marginals measured (attributes counted together), each with its weight (more: less noise):"
_MARGINALS_COLUMNS = ("Marginal", "Weight")


def _strategy_job(key: SearchKey, progress: ProgressFunction, should_cancel: CancelFunction) -> StrategyChoice | str:
    settle = time.monotonic() + SETTLE_SECONDS
    while time.monotonic() < settle:
        if should_cancel():
            raise Cancelled("replaced by a newer request")
        time.sleep(0.02)
    try:
        return find_best_strategy(key, should_cancel, progress)
    except PriveletError as exc:  # the workload cannot be made on this schema: say why, in the box
        return str(exc)


def _item(text: str, *, number: bool = False, bold: bool = False, tip: str = "") -> QTableWidgetItem:
    item = QTableWidgetItem(text)
    if number:
        item.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
    if bold:
        font = QFont(item.font())
        font.setBold(True)
        item.setFont(font)
    if tip:
        item.setToolTip(tip)
    return item


class StrategyBox(QGroupBox):
    """The strategies chosen for the workload, per attribute in plain words, and their error
    against Privelet+, Privelet and Basic on the same workload (see the module docstring)."""

    strategyShown = Signal()  # after a choice, or why there is none, was shown (tests wait on it)

    def __init__(self, document: Document, tasks: TaskService, parent: QWidget | None = None):
        super().__init__("Best strategy: each attribute measured as suits the queries you expect", parent)
        self._doc = document
        document.strategy_search_inline = False  # chosen on this box's lane, never on the GUI thread
        self.lane = tasks.lane("best strategy")
        self._running: SearchKey | None = None  # the key being searched
        self.result: StrategyChoice | None = None  # as shown: at the current settings

        layout = QVBoxLayout(self)
        self.summary = QLabel()
        self.summary.setWordWrap(True)
        self.summary.setTextFormat(Qt.TextFormat.RichText)
        layout.addWidget(self.summary)
        working = QHBoxLayout()
        self.progress = QProgressBar()
        self.progress.setRange(0, 1000)
        self.progress.setAccessibleName("Choosing the best strategy")
        working.addWidget(self.progress, 1)
        self.cancel_button = QPushButton("Cancel")
        self.cancel_button.setToolTip("Stop choosing; a release with the best strategy and the advisor then wait "
                                      "until you search again")
        self.cancel_button.clicked.connect(self.cancel)
        working.addWidget(self.cancel_button)
        self.again_button = QPushButton("Search again")
        self.again_button.setToolTip("Choose the best strategy for the current settings")
        self.again_button.clicked.connect(self.choose_again)
        working.addWidget(self.again_button)
        layout.addLayout(working)
        self.problem = Banner("error")
        self.problem.hide()
        layout.addWidget(self.problem)
        columns = self.columns = QHBoxLayout()  # one under the other in a narrow window (the Privacy step)
        columns.setSpacing(16)
        left = QVBoxLayout()
        self.axes_title = QLabel(_AXES_TITLE)
        self.axes_title.setWordWrap(True)
        left.addWidget(self.axes_title)
        self.axes = rows_table(list(_AXES_COLUMNS))
        left.addWidget(self.axes)
        left.addStretch(1)
        columns.addLayout(left, 3)
        right = QVBoxLayout()
        right.addWidget(QLabel("Expected error on the workload, at this ε:"))
        self.errors = rows_table(["Release with", "Error at 95%", "× the best"])
        self.errors.setToolTip("The same workload's expected error under each mechanism (from the domains only)")
        right.addWidget(self.errors)
        right.addStretch(1)
        columns.addLayout(right, 2)
        layout.addLayout(columns)

        document.attributesChanged.connect(self.refresh)
        document.privacyChanged.connect(self.refresh)
        document.tableChanged.connect(self.refresh)
        self.refresh()

    def showEvent(self, event: QShowEvent) -> None:
        super().showEvent(event)
        self.refresh()  # a choice left for later (another mechanism selected) starts once the step is shown

    # -- state -----------------------------------------------------------------------------------
    def refresh(self) -> None:
        doc = self._doc
        key = doc.best_sa_key()  # what the best strategy depends on, as the best S_A does
        self.problem.hide()
        if key is None:
            self._show_waiting("Define the attributes first (Attributes step): the best strategy depends on the domains.")
            return
        result = doc.best_strategy_result()
        if result is None:
            needed = doc.mechanism == BEST_STRATEGY
            if doc.best_strategy_cancelled():
                waits = ", and the release and the advisor below wait until one is" if needed else ""
                self._show_waiting(f"Cancelled: no strategy is chosen for these settings{waits}. "
                                   f"{STRATEGY_SEARCH_CANCELLED[:1].upper()}{STRATEGY_SEARCH_CANCELLED[1:]}.",
                                   again=True)
            elif needed or self.isVisible():
                self._request(key)
                self._show_waiting("Choosing the best strategy for this workload...", working=True)
            else:
                self._show_waiting("Chosen when the Privacy step is shown.")
            return
        if isinstance(result, str):
            self._show_waiting("")
            self.problem.set_text(f"No best strategy: {result}")
            self.problem.show()
            self.strategyShown.emit()
            return
        self._show(result)

    def _request(self, key: SearchKey) -> None:
        if key == self._running:
            return
        self._running = key
        self.progress.setValue(0)
        self.lane.run(
            partial(_strategy_job, key), "best strategy",
            on_success=lambda result: self._finished(key, result),
            on_failure=lambda error: self._finished(key, f"cannot choose the strategy ({type(error).__name__}: {error})"),
            on_cancel=lambda: self._stopped(key),
            on_progress=self._progressed,
        )

    def _progressed(self, fraction: float, stage: str) -> None:
        self.progress.setValue(round(1000 * fraction))
        self.summary.setText(f"Choosing the best strategy for this workload: {stage}...")

    def _finished(self, key: SearchKey, result: StrategyChoice | str) -> None:
        self._running = None
        self._doc.store_best_strategy(key, result)  # announced (and so shown) when still current
        if key != self._doc.best_sa_key():
            self.refresh()  # the settings moved on meanwhile: choose for them

    def _stopped(self, key: SearchKey) -> None:
        self._running = None
        self._doc.cancel_best_strategy(key)  # announced: this box, the release and the Privacy step say so
        self.refresh()

    def cancel(self) -> None:
        """Stop choosing (at the search's next step)."""
        self.lane.cancel()

    def choose_again(self) -> None:
        """Choose the strategy for the current settings after a cancel ("Search again")."""
        self._doc.cancel_best_strategy(None)
        self.refresh()

    # -- views -----------------------------------------------------------------------------------
    def _show_waiting(self, text: str, *, working: bool = False, again: bool = False) -> None:
        """No choice for the current settings yet: ``text``, and empty tables (an older choice is
        never shown as the current one)."""
        self.result = None
        if not working or self._running is None or not self.summary.text().startswith("Choosing"):
            self.summary.setText(text)
        self.progress.setVisible(working)
        self.cancel_button.setVisible(working)
        self.again_button.setVisible(again)
        for table in (self.axes, self.errors):
            table.setRowCount(0)
            fit_rows(table)
        if not working:
            self.strategyShown.emit()

    def _show(self, result: StrategyChoice) -> None:
        doc = self._doc
        self.result = result
        spec = result.spec
        self.progress.hide()
        self.cancel_button.hide()
        self.again_button.hide()
        what = "its worst query" if result.objective == "worst" else "a typical query"
        use = ("Releases use it now." if doc.mechanism == BEST_STRATEGY
               else "Choose \u201cBest strategy\u201d above to release with it.")
        self.summary.setText(
            f"For the {result.workload}: {what} is within <b>± {fmt_count(margin95(result.error))}</b> at 95% "
            f"(ε = {doc.epsilon:g}), {result.gain_over(_REFERENCE):,.2f}× less expected square error than "
            f"{_REFERENCE}. {use}"
        )
        if spec.label == MARGINALS:  # not measured axis by axis: each marginal and its weight
            self.axes_title.setText(_MARGINALS_TITLE)
            self.axes.setHorizontalHeaderLabels(list(_MARGINALS_COLUMNS))
            self.axes.setRowCount(len(spec.marginals))
            for row, (names, weight) in enumerate(spec.marginals):
                self.axes.setItem(row, 0, _item(", ".join(names) or "the total"))
                self.axes.setItem(row, 1, _item(str(weight), number=True))
        else:
            self.axes_title.setText(_AXES_TITLE)
            self.axes.setHorizontalHeaderLabels(list(_AXES_COLUMNS))
            self.axes.setRowCount(len(spec.schema))
            for row, (attribute, strategy, name) in enumerate(zip(spec.schema, spec.plan.strategies,
                                                                   spec.axis_strategies)):
                self.axes.setItem(row, 0, _item(attribute.name))
                self.axes.setItem(row, 1, _item(describe_axis_strategy(strategy.kind, name), tip=f"strategy {name}"))
        fit_rows(self.axes)
        rows = [("Best strategy", result.error), *((label, error) for label, (_spec, error) in result.alternatives.items())]
        self.errors.setRowCount(len(rows))
        for row, (label, error) in enumerate(rows):
            best = row == 0
            ratio = error / result.error if result.error > 0 else 1.0
            cells = [_item(label, bold=best), _item(f"± {fmt_count(margin95(error))}", number=True, bold=best),
                     _item(f"{ratio:,.2f}×", number=True, bold=best)]
            for column, item in enumerate(cells):
                self.errors.setItem(row, column, item)
        fit_rows(self.errors, whole_width=True)
        self.strategyShown.emit()
