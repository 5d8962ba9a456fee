"""The granularity advisor in the Privacy step: how much each attribute multiplies the
workload's error, and concrete coarser domains with their predicted error, one click to apply.

The advice is the engine's (:func:`~privelet_gui.engine.advise`, through
:func:`~privelet_gui.workspace.workload.find_advice`): data-independent, so looking costs no
privacy. It takes from a tenth of a second to seconds (under the best strategy, a strategy search
per change: up to half a minute for an axis of 4,096 values), so it runs on the panel's own lane
of the task service, with its progress in the status line, one search at a time
(:class:`KeyedLane`: a newer one cancels it), and only while the Privacy step is shown. Results
are kept by key and computed at epsilon 1: moving the epsilon slider only rescales them.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from functools import partial
from typing import Any

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QResizeEvent, QShowEvent
from PySide6.QtWidgets import (
    QAbstractItemView,
    QGroupBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QPushButton,
    QSizePolicy,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from ...engine import Advice, PriveletError, SaRule, Suggestion, margin95, mechanism_name
from ...io.project import BEST_STRATEGY
from ...qt.widgets import Banner, fmt_count, fmt_number
from ...workspace.model import STRATEGY_SEARCH_CANCELLED
from ...workspace.workload import AdviceKey, ResultCache, find_advice, scaled_advice
from ..document import Document
from ..tasks import CancelFunction, ProgressFunction, TaskFunction, TaskRunner, TaskService

__all__ = ["SHOWN_SUGGESTIONS", "AdvisorBox", "KeyedLane", "RowsTable", "fit_rows", "rows_table"]

#: Suggestions listed (best first; the command line's ``privelet advise --top`` shows more).
SHOWN_SUGGESTIONS = 8

_RULE_WORDS: dict[SaRule, str] = {
    "best": "the best S_A for each changed schema",
    "recommended": "the recommended S_A of each changed schema",
    "given": "your S_A (less a dropped attribute)",
}


class KeyedLane:
    """One search at a time on a lane, by key: asking for another key cancels the running
    search (the engine's searches check for it between steps) and starts the new one.

    ``done(key, result)`` receives the job's result, or the exception it raised;
    ``progressed(fraction, stage)``, if given, the running job's progress.
    """

    def __init__(self, lane: TaskRunner, done: Callable[[Any, Any], None],
                 progressed: Callable[[float, str], None] | None = None):
        self.lane = lane
        self._done = done
        self._progressed = progressed
        self._running: Hashable | None = None

    @property
    def running(self) -> Hashable | None:
        """The key being searched (None: idle)."""
        return self._running

    def request(self, key: Hashable, job: TaskFunction, name: str) -> None:
        """Search ``key`` with ``job(progress, should_cancel)`` now (unless it is the one running)."""
        if key == self._running:
            return
        self._running = key
        self.lane.run(
            job, name,
            on_success=lambda result: self._finished(key, result),
            on_failure=lambda error: self._finished(key, error),
            on_progress=self._progressed,
        )

    def _finished(self, key: Hashable, result: Any) -> None:
        self._running = None
        self._done(key, result)


def _advice_job(key: AdviceKey, progress: ProgressFunction, should_cancel: CancelFunction) -> Advice | str:
    try:
        return find_advice(key, should_cancel, progress)
    except PriveletError as exc:  # the workload cannot be made: say why, in the box
        return str(exc)


class RowsTable(QTableWidget):
    """A table that stays as tall as its rows when a new width rewraps them (it never
    scrolls inside, so the mouse wheel scrolls the page)."""

    def resizeEvent(self, event: QResizeEvent) -> None:
        super().resizeEvent(event)
        if event.size().width() != event.oldSize().width():
            self.resizeRowsToContents()
            fit_rows(self)


def rows_table(columns: list[str]) -> QTableWidget:
    """A read-only table sized to its rows; the last column stretches and wraps."""
    table = RowsTable(0, len(columns))
    table.setHorizontalHeaderLabels(columns)
    table.verticalHeader().hide()
    table.verticalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
    table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
    table.setSelectionMode(QAbstractItemView.SelectionMode.NoSelection)
    table.setFocusPolicy(Qt.FocusPolicy.NoFocus)
    table.setWordWrap(True)
    table.setVerticalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
    table.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
    table.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)
    header = table.horizontalHeader()
    header.setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
    header.setSectionResizeMode(len(columns) - 1, QHeaderView.ResizeMode.Stretch)
    return table


def _item(text: str, *, number: bool = False, tip: str = "") -> QTableWidgetItem:
    item = QTableWidgetItem(text)
    if number:
        item.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
    if tip:
        item.setToolTip(tip)
    return item


def fit_rows(table: QTableWidget, *, whole_width: bool = False) -> None:
    """The table as tall as its rows (and, with ``whole_width``, at least as wide as all its
    columns: a short table whose last column would otherwise be cut)."""
    header = table.horizontalHeader()
    table.resizeRowsToContents()
    height = header.sizeHint().height() + 2 * table.frameWidth()
    height += sum(table.rowHeight(r) for r in range(table.rowCount()))
    table.setFixedHeight(height)
    if whole_width:
        columns = range(table.columnCount())
        table.setMinimumWidth(sum(max(table.sizeHintForColumn(c), header.sectionSizeHint(c)) for c in columns)
                              + 2 * table.frameWidth())


def exact_text(suggestion: Suggestion) -> str:
    """How many of the workload's queries the changed domain answers exactly, for people."""
    if suggestion.exact_share >= 1.0:
        return "every query"
    return f"{suggestion.exact_share:.0%}"


class AdvisorBox(QGroupBox):
    """Each attribute's multiplier and the advisor's suggestions for the Privacy step's workload."""

    adviceShown = Signal()  # after new advice (or its absence) was shown (tests wait on it)

    def __init__(self, document: Document, tasks: TaskService, parent: QWidget | None = None):
        super().__init__("Domain advisor: coarser domains for these queries (predicted from the domains only)", parent)
        self._doc = document
        self._jobs = KeyedLane(tasks.lane("advisor"), self._computed, self._progressed)
        self._results: ResultCache[AdviceKey, Advice | str] = ResultCache()
        self.advice: Advice | None = None  # as shown: at the current epsilon
        self.suggestions: tuple[Suggestion, ...] = ()  # lossless
        self.lossy: tuple[Suggestion, ...] = ()
        self.apply_buttons: list[QPushButton] = []  # the lossless ones' rows, then the lossy ones'

        layout = QVBoxLayout(self)
        self.status = QLabel()
        self.status.setWordWrap(True)
        self.status.setTextFormat(Qt.TextFormat.RichText)
        layout.addWidget(self.status)
        self.problem = Banner("error")
        self.problem.hide()
        layout.addWidget(self.problem)
        columns = self.columns = QHBoxLayout()  # one under the other in a narrow window (the Privacy step)
        columns.setSpacing(16)
        layout.addLayout(columns)
        left = QVBoxLayout()
        left.addWidget(QLabel("How much each attribute multiplies the error:"))
        self.multipliers = rows_table(["Attribute", "Released", "Multiplies by", "Queried"])
        left.addWidget(self.multipliers)
        left.addStretch(1)
        columns.addLayout(left, 1)
        right = QVBoxLayout()
        suggestions_title = QLabel("Suggestions that keep every query exact, best first (one click applies one; "
                                   "Edit > Undo takes it back):")
        suggestions_title.setWordWrap(True)
        right.addWidget(suggestions_title)
        self.table = rows_table(["", "Smaller by", "Error at 95%", "Change"])
        right.addWidget(self.table)
        self.lossy_label = QLabel()
        self.lossy_label.setWordWrap(True)
        right.addWidget(self.lossy_label)
        self.lossy_table = rows_table(["", "Noise smaller by", "Noise at 95%", "Exact answers", "Change, and the bias it risks"])
        right.addWidget(self.lossy_table)
        self.caveat = QLabel()
        self.caveat.setWordWrap(True)
        self.caveat.setForegroundRole(self.caveat.foregroundRole())
        right.addWidget(self.caveat)
        right.addStretch(1)
        columns.addLayout(right, 2)

        document.attributesChanged.connect(self.refresh)
        document.privacyChanged.connect(self.refresh)
        document.tableChanged.connect(self.refresh)
        self.refresh()

    def showEvent(self, event: QShowEvent) -> None:
        super().showEvent(event)
        self.refresh()  # searches only run while the step is shown

    # -- state ---------------------------------------------------------------------------------
    def refresh(self) -> None:
        key = self._doc.advice_key()
        if key is None:
            self._clear("Define the attributes first (Attributes step): the advisor reads the domains.")
            return
        found = self._results.get(key)
        if found is None and self._doc.mechanism == BEST_STRATEGY and self._doc.best_strategy_result() is None:
            # The advice starts from the current schema's best strategy: wait for its search (above).
            if self._doc.best_strategy_cancelled():
                self._clear(f"No advice yet: {STRATEGY_SEARCH_CANCELLED} (above).", keep=True)
            else:
                self._clear("Waiting for the best strategy for this workload (above)...", keep=True)
            return
        if found is None:
            if self._jobs.running != key:  # a search under way keeps showing its progress
                self._clear("Computing suggestions for this workload...", keep=True)
                if self.isVisible():
                    self._jobs.request(key, partial(_advice_job, key), "advisor")
            return
        if isinstance(found, str):
            self._clear("")
            self.problem.set_text(f"No advice for this workload: {found}")
            self.problem.show()
            self.adviceShown.emit()
            return
        try:
            scaled = scaled_advice(found, self._doc.epsilon)
        except PriveletError as exc:  # an epsilon the best strategy's weights cannot serve: say why
            self._clear("")
            self.problem.set_text(f"No advice at this ε: {exc}")
            self.problem.show()
            return
        self._show(scaled)

    def _progressed(self, fraction: float, stage: str) -> None:
        self.status.setText(f"Computing suggestions for this workload ({fraction:.0%}): {stage}...")

    def _computed(self, key: AdviceKey, result: Advice | str | BaseException) -> None:
        if isinstance(result, BaseException):
            result = f"cannot compute the advice ({type(result).__name__}: {result})"
        self._results.put(key, result)
        self.refresh()

    def _clear(self, text: str, *, keep: bool = False) -> None:
        """Show ``text``; with ``keep`` the last tables stay (greyed) until the new advice."""
        self.status.setText(text)
        self.problem.hide()
        for table in (self.multipliers, self.table, self.lossy_table):
            table.setEnabled(not keep)
        if not keep:
            self.advice, self.suggestions, self.lossy = None, (), ()
            self.apply_buttons = []
            self.caveat.setText("")
            self.lossy_label.setText("")
            for table in (self.multipliers, self.table, self.lossy_table):
                table.setRowCount(0)
                fit_rows(table)
            self.adviceShown.emit()

    def _show(self, advice: Advice) -> None:
        doc = self._doc
        self.advice = advice
        self.problem.hide()
        for table in (self.multipliers, self.table, self.lossy_table):
            table.setEnabled(True)
        # n is public under replace-one-tuple neighbours only: it sizes a typical count there.
        rows = doc.summary.rows if doc.summary is not None and doc.neighbours == "replace" else None
        what = "the worst query" if advice.objective == "worst" else "a typical query (root of the average square error)"
        best = advice.under_best_strategy
        released = ("the best strategy" if best
                    else f"{advice.spec.name} with S_A = {{{', '.join(advice.spec.effective_sa)}}}")
        self.status.setText(
            f"<b>{_capital(advice.sentence(rows))}</b> ({what} of {advice.workload.name}, {len(advice.workload):,} "
            f"queries; {released})."
        )
        self.multipliers.setToolTip(
            "The workload's expected error divided by its error on the table without the attribute (queries keep "
            "their other conditions" + ("; the other attributes keep their strategies)" if best else ")"))
        self.multipliers.setRowCount(len(advice.multipliers))
        for row, m in enumerate(advice.multipliers):
            cells = [
                _item(m.name),
                _item(m.measured),
                _item(f"× {m.multiplier:,.2f}", number=True),
                _item("yes" if m.constrained else "no",
                      tip="" if m.constrained else "No query of the workload constrains it: dropping it is lossless"),
            ]
            for column, item in enumerate(cells):
                self.multipliers.setItem(row, column, item)
        fit_rows(self.multipliers, whole_width=True)
        self.suggestions = advice.suggestions[:SHOWN_SUGGESTIONS]
        self.lossy = advice.lossy[:SHOWN_SUGGESTIONS]
        self.apply_buttons = []
        self.table.setRowCount(len(self.suggestions))
        for row, s in enumerate(self.suggestions):
            self._fill_row(self.table, row, s, [
                _item(f"{s.factor:,.2f}×", number=True),
                _item(f"± {fmt_count(margin95(s.error))}", number=True,
                      tip=f"expected square error {fmt_number(s.error)} (now {fmt_number(s.before)})"),
                _item(s.description, tip=_after_text(s)),
            ])
        self.lossy_table.setRowCount(len(self.lossy))
        for row, s in enumerate(self.lossy):
            self._fill_row(self.lossy_table, row, s, [
                _item(f"{s.factor:,.2f}×", number=True),
                _item(f"± {fmt_count(margin95(s.error))}", number=True,
                      tip=f"expected square error of the noise {fmt_number(s.error)} (now {fmt_number(s.before)})"),
                _item(exact_text(s), number=True),
                _item(f"{s.description}; {s.bias_text()}", tip=_after_text(s)),
            ])
        fit_rows(self.table)
        fit_rows(self.lossy_table)
        self.lossy_table.setVisible(bool(self.lossy))
        self.lossy_label.setText(
            "Changes that leave some queries inexact (not suggested: their bias depends on the data and is not "
            "in these figures, so they can make the release worse):" if self.lossy else "")
        if best:
            with_sa = "the best strategy for each changed schema, as the release chooses it"
        elif doc.mechanism == "privelet+":
            with_sa = _RULE_WORDS[doc.sa_rule]
        else:
            with_sa = f"{mechanism_name(doc.mechanism)} (S_A does not apply)"
        across = ("spreading a coarse cell's count evenly over its values" if advice.answering == "spread"
                  else "rounding out to whole bins or groups")
        self.caveat.setText(
            (f"Predicted errors are of the noise, with {with_sa}. " if self.suggestions or self.lossy else "")
            + ("" if self.suggestions else "No change keeps every query exact and makes the error smaller. ")
            + (f"An inexact query is answered by {across}." if self.lossy else "")
        )
        self.adviceShown.emit()

    def _fill_row(self, table: QTableWidget, row: int, suggestion: Suggestion, cells: list[QTableWidgetItem]) -> None:
        for column, item in enumerate(cells, start=1):
            table.setItem(row, column, item)
        button = QPushButton("Apply")
        button.setToolTip(f"{suggestion.description}: one undoable change of {suggestion.attribute}")
        index = len(self.apply_buttons)
        button.clicked.connect(lambda _checked=False: self.apply(index))
        table.setCellWidget(row, 0, button)
        self.apply_buttons.append(button)

    # -- edits ---------------------------------------------------------------------------------
    def apply(self, index: int) -> None:
        """Take suggestion ``index`` (as listed: the lossless ones, then the lossy ones): one
        undoable change of one attribute."""
        try:
            self._doc.apply_suggestion((*self.suggestions, *self.lossy)[index])
        except PriveletError as exc:
            self.problem.set_text(f"Cannot apply the suggestion: {exc}")
            self.problem.show()


def _after_text(suggestion: Suggestion) -> str:
    """How the release measures each attribute after ``suggestion``, for people."""
    if suggestion.measured:
        return f"Measured after the change: {suggestion.measured}"
    return f"S_A after the change: {{{', '.join(suggestion.sa)}}}"


def _capital(text: str) -> str:
    return text[:1].upper() + text[1:]
