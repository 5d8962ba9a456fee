"""Step 4, Privacy: epsilon, the neighbouring notion, the mechanism (the best strategy for the
workload by default, or one of the paper's), S_A, live noise bounds, the workload the
custodian expects with the best strategy and the best S_A for it, and the domain advisor.

The bounds are the engine's (paper_bound, VarianceModel.worst_case). The exact
variances need each attribute's factors once per schema (up to ~50 ms for big domains):
that first computation runs in a worker (stale results dropped by generation);
every later update is a few multiplications on the GUI thread. The chart of expected
error by query size lists the custodian's workload (the workspace's
:meth:`~privelet_gui.workspace.Workspace.coverage_key`) and each compared release's exact
variances on it on the panel's "expected error" lane, at epsilon 1 and kept by key: moving
epsilon only rescales it. The best S_A for the
workload is searched on the GUI thread only when that is estimated to take under
:data:`INLINE_SEARCH_SECONDS`; longer searches (big schemas, workload files) run on the
panel's "best S_A" lane, and the best strategy and the advisor always on their own lanes
(:mod:`~privelet_gui.gui.panels.strategy_panel`, :mod:`~privelet_gui.gui.panels.advisor_panel`). Expected errors describe the release as
published: shifted to the public number of rows when the settings allow it.
"""

from __future__ import annotations

import dataclasses
import math
from functools import partial
from pathlib import Path
from typing import Any

from PySide6.QtCore import QEvent, QObject, QSignalBlocker, Qt, Signal
from PySide6.QtGui import QFont, QResizeEvent, QShowEvent
from PySide6.QtWidgets import (
    QAbstractItemView,
    QButtonGroup,
    QCheckBox,
    QComboBox,
    QDoubleSpinBox,
    QGridLayout,
    QGroupBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QListWidget,
    QPushButton,
    QRadioButton,
    QScrollArea,
    QSizePolicy,
    QSlider,
    QSpinBox,
    QTableWidget,
    QTableWidgetItem,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from ...engine import (
    MECHANISMS as PAPER_MECHANISMS,
)
from ...engine import (
    SAMPLERS,
    Z95,
    InternalError,
    NominalAttribute,
    PriveletError,
    ReleaseSpec,
    Sampler,
    Schema,
    epsilon_for_variance,
    margin95,
    variance_for_margin95,
    variance_model,
)
from ...engine.accuracy.workloads import PAPER_QUERIES, level_nodes
from ...formatting import table_is_scientific
from ...io.project import BEST_STRATEGY, MechanismChoice, WorkloadChoice
from ...qt import icons
from ...qt.plots import COVERAGE_GROUPS_TIP, AttributeFactorPlot, ErrorByCoveragePlot
from ...qt.widgets import Banner, StepHeader, fit_columns, fmt_count, fmt_number, hint_label
from ...workspace.model import (
    EPSILON_FORMAT_TEXT,
    MECHANISM_CHOICE_NAMES,
    SAMPLER_TEXT,
    STRATEGY_SEARCH_CANCELLED,
    epsilon_text,
    parse_epsilon,
)
from ...workspace.workload import (
    REFERENCE_NAMES,
    BestSa,
    CoverageErrors,
    CoverageKey,
    ResultCache,
    SearchKey,
    find_best_sa,
    find_coverage_errors,
)
from ..document import Document
from ..tasks import CancelFunction, ProgressFunction, TaskService
from .advisor_panel import AdvisorBox, KeyedLane, RowsTable, fit_rows
from .strategy_panel import StrategyBox

__all__ = [
    "INLINE_SEARCH_SECONDS",
    "SLIDER_EPSILON_MAX",
    "SLIDER_EPSILON_MIN",
    "Z95",
    "PrivacyPanel",
    "WorkloadBox",
    "epsilon_to_slider",
    "slider_to_epsilon",
]

#: The longest workload name the title of the chart of expected error holds (the title's width
#: is the chart's least width: a longer name is given in the note under it).
CHART_TITLE_NAME = 48
#: The slider's ends; the field beside it takes any epsilon the engine accepts (EPSILON_FORMAT_TEXT).
SLIDER_EPSILON_MIN = 0.01
SLIDER_EPSILON_MAX = 10.0
SLIDER_STEPS = 1000
#: Best-S_A searches estimated to take longer than this run on a worker, not on the GUI thread.
INLINE_SEARCH_SECONDS = 0.03

_MECHANISM_TIPS: tuple[tuple[MechanismChoice, str], ...] = (
    (BEST_STRATEGY, "measure each attribute the way that gives the queries you expect the least error (chosen below)"),
    ("privelet+", "transform every attribute except those in S_A"),
    ("privelet", "transform every attribute (S_A empty)"),
    ("basic", "noise on every cell, no transform (S_A = all)"),
)
MECHANISMS = tuple((key, MECHANISM_CHOICE_NAMES[key], tip) for key, tip in _MECHANISM_TIPS)


def slider_to_epsilon(position: int) -> float:
    """Logarithmic slider: 0 -> 0.01, SLIDER_STEPS -> 10."""
    lo, hi = math.log10(SLIDER_EPSILON_MIN), math.log10(SLIDER_EPSILON_MAX)
    return 10 ** (lo + (hi - lo) * position / SLIDER_STEPS)


def epsilon_to_slider(epsilon: float) -> int:
    lo, hi = math.log10(SLIDER_EPSILON_MIN), math.log10(SLIDER_EPSILON_MAX)
    value = (math.log10(min(max(epsilon, SLIDER_EPSILON_MIN), SLIDER_EPSILON_MAX)) - lo) / (hi - lo)
    return round(value * SLIDER_STEPS)


def round_up(x: float, decimals: int = 4) -> float:
    factor = 10**decimals
    return math.ceil(x * factor - 1e-9) / factor


def public_total_text(spec: ReleaseSpec | None) -> str:
    """What the expected errors describe: the release shifted to the public total, or the raw one."""
    if spec is None:
        return ""
    if spec.uses_public_total:
        return ("Errors of the release as published: shifted so that its total equals the public number of rows "
                "(this costs no privacy; the whole table's count is then exact).")
    if spec.neighbours != "replace":
        return "Errors of the raw release: under add/remove neighbours the number of rows is private, nothing is shifted."
    return ("Errors of the raw release: rows outside a domain may be dropped, so the number counted is private "
            "and nothing is shifted.")


def workload_text(name: str, queries: int) -> str:
    """A workload's name with its number of queries (unless the name says it already)."""
    return name if f"{queries:,} queries" in name else f"{name} ({queries:,} queries)"


def _coverage_job(key: CoverageKey, _progress: ProgressFunction, should_cancel: CancelFunction) -> CoverageErrors | str:
    try:
        return find_coverage_errors(key, should_cancel)
    except PriveletError as exc:  # say why on the chart
        return str(exc)


def _best_job(key: SearchKey, _progress: ProgressFunction, should_cancel: CancelFunction) -> BestSa | str:
    try:
        return find_best_sa(key, should_cancel)
    except PriveletError as exc:  # the workload cannot be made on this schema: say why
        return str(exc)


def _table_item(text: str, *, numeric: bool, bold: bool) -> QTableWidgetItem:
    """A cell of this step's tables: numbers right-aligned, the current choice in bold."""
    item = QTableWidgetItem(text)
    if numeric:
        item.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
    if bold:
        font = QFont(item.font())
        font.setBold(True)
        item.setFont(font)
    return item


class WorkloadBox(QGroupBox):
    """Pick or combine the queries the custodian expects, and see the best S_A for them.

    Every edit is one undoable change of the workspace's workload. The best S_A comes from
    the workspace (:meth:`~privelet_gui.workspace.Workspace.best_sa_result`), which searches
    it at once when that is quick; otherwise this box runs the search on its lane.
    """

    bestShown = Signal()  # after the best S_A (or why there is none) was shown (tests wait on it)

    def __init__(self, document: Document, tasks: TaskService, parent: QWidget | None = None):
        super().__init__("The queries you expect (the workload), and the best S_A for them", parent)
        self._doc = document
        self._jobs = KeyedLane(tasks.lane("best S_A"), self._computed)
        self.grain_widgets: dict[str, QSpinBox | QComboBox] = {}
        self._grain_labels: list[dict[str, str] | None] = []  # the display labels the level lists show
        self.result: BestSa | None = None  # as shown

        columns = self.columns = QHBoxLayout(self)
        columns.setSpacing(16)
        pick = QVBoxLayout()
        columns.addLayout(pick, 1)
        self.paper = QCheckBox(f"The paper's random workload ({PAPER_QUERIES:,} random range queries)")
        self.paper.setToolTip("Random boxes over every attribute, as in the paper's experiments (seeded: the same every time)")
        pick.addWidget(self.paper)
        ways_row = QHBoxLayout()
        self.ways = {k: QCheckBox(f"{k}-way marginals") for k in (1, 2)}
        for k, box in self.ways.items():
            box.setToolTip(f"Every cell of every {k}-attribute marginal of the attributes ticked below, each at its grain")
            ways_row.addWidget(box)
        ways_row.addWidget(QLabel("of the attributes ticked below:"))
        ways_row.addStretch(1)
        pick.addLayout(ways_row)
        self.attributes = QTableWidget(0, 2)
        self.attributes.setHorizontalHeaderLabels(["Attribute", "Queried at"])
        self.attributes.verticalHeader().hide()
        self.attributes.setSelectionMode(QAbstractItemView.SelectionMode.NoSelection)
        self.attributes.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.attributes.horizontalHeader().setSectionResizeMode(0, QHeaderView.ResizeMode.ResizeToContents)
        self.attributes.horizontalHeader().setStretchLastSection(True)
        self.attributes.setMinimumHeight(self.fontMetrics().height() * 8)
        self.attributes.itemChanged.connect(self._attribute_ticked)
        pick.addWidget(self.attributes)
        files_row = QHBoxLayout()
        files_row.addWidget(QLabel("Workload files:"))
        self.files = QListWidget()
        self.files.setMaximumHeight(self.fontMetrics().height() * 4)
        self.files.setToolTip("CSV or JSON files of range queries, in the syntax of privelet query --where")
        files_row.addWidget(self.files, 1)
        file_buttons = QVBoxLayout()
        self.add_file = QPushButton("Add file...")
        self.add_file.clicked.connect(lambda: self.add_workload_file())
        self.remove_file = QPushButton("Remove")
        self.remove_file.clicked.connect(self._remove_file)
        file_buttons.addWidget(self.add_file)
        file_buttons.addWidget(self.remove_file)
        file_buttons.addStretch(1)
        files_row.addLayout(file_buttons)
        pick.addLayout(files_row)
        objective_row = QHBoxLayout()
        objective_row.addWidget(QLabel("Error of the workload:"))
        self.objective = {
            "mean": QRadioButton("average square error (a typical query)"),
            "worst": QRadioButton("its worst query"),
        }
        self.objective_group = QButtonGroup(self)
        for button in self.objective.values():
            self.objective_group.addButton(button)
            objective_row.addWidget(button)
        objective_row.addStretch(1)
        pick.addLayout(objective_row)

        show = QVBoxLayout()
        columns.addLayout(show, 1)
        self.summary = QLabel()
        self.summary.setWordWrap(True)
        show.addWidget(self.summary)
        self.problem = Banner("error")
        self.problem.hide()
        show.addWidget(self.problem)
        self.table = RowsTable(len(REFERENCE_NAMES), 3)  # as tall as its rows, also when they rewrap
        self.table.setHorizontalHeaderLabels(["S_A", "Error at 95%", "× the best"])
        # the choice and its set share the wide column: a row header would leave the set no room
        self.table.verticalHeader().hide()
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.NoSelection)
        self.table.setFocusPolicy(Qt.FocusPolicy.NoFocus)
        self.table.setWordWrap(True)
        header = self.table.horizontalHeader()
        header.setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
        header.setSectionResizeMode(1, QHeaderView.ResizeMode.ResizeToContents)
        header.setSectionResizeMode(2, QHeaderView.ResizeMode.ResizeToContents)
        self.table.verticalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        self.table.setVerticalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        show.addWidget(self.table)
        use_row = QHBoxLayout()
        self.use_best = QPushButton("Use the best S_A")
        self.use_best.setToolTip("S_A then follows the best subset for this workload as the schema changes")
        self.use_best.clicked.connect(self._doc.use_best_sa)
        use_row.addWidget(self.use_best)
        use_row.addStretch(1)
        show.addLayout(use_row)
        show.addStretch(1)

        self.paper.toggled.connect(self._paper_toggled)
        for k, box in self.ways.items():
            box.toggled.connect(lambda checked, k=k: self._way_toggled(k, checked))
        self.objective_group.buttonToggled.connect(self._objective_toggled)

    def showEvent(self, event: QShowEvent) -> None:
        super().showEvent(event)
        self.refresh()  # a search left for the worker starts once the step is shown

    # -- from the document ---------------------------------------------------------------------
    def refresh(self) -> None:
        choice = self._doc.workload
        blockers = [QSignalBlocker(w) for w in (self.paper, *self.ways.values(), self.objective_group, self.attributes)]
        self.paper.setChecked(choice.paper is not None)
        for k, box in self.ways.items():
            box.setChecked(k in choice.ways)
        self.objective[choice.objective].setChecked(True)
        self._refresh_attributes(choice)
        del blockers
        self.files.clear()
        for path in choice.files:
            self.files.addItem(path.name)
            self.files.item(self.files.count() - 1).setToolTip(str(path))
        self.remove_file.setEnabled(bool(choice.files))
        self.refresh_best()

    def _refresh_attributes(self, choice: WorkloadChoice) -> None:
        schema = self._doc.schema()
        attributes = list(schema) if schema is not None else []
        marginals = bool(choice.ways)
        shown = [dict(a.hierarchy.display_labels) if isinstance(a, NominalAttribute) else None for a in attributes]
        if self._attribute_names() != [a.name for a in attributes] or shown != self._grain_labels:
            self._grain_labels = shown
            self.attributes.setRowCount(0)
            self.grain_widgets = {}
            self.attributes.setRowCount(len(attributes))
            for row, attribute in enumerate(attributes):
                item = QTableWidgetItem(attribute.name)
                item.setFlags(Qt.ItemFlag.ItemIsUserCheckable | Qt.ItemFlag.ItemIsEnabled)
                self.attributes.setItem(row, 0, item)
                widget = self._grain_widget(attribute)
                self.attributes.setCellWidget(row, 1, widget)
                self.grain_widgets[attribute.name] = widget
        for row, attribute in enumerate(attributes):
            ticked = not choice.attributes or attribute.name in choice.attributes
            self._name_item(row).setCheckState(Qt.CheckState.Checked if ticked else Qt.CheckState.Unchecked)
            widget = self.grain_widgets[attribute.name]
            blocker = QSignalBlocker(widget)
            grain = choice.grain(attribute.name)
            if isinstance(widget, QComboBox):
                index = widget.findData(grain)
                if index < 0:  # a level this hierarchy lacks (the workload reports it)
                    widget.addItem(f"level {grain} (not in the hierarchy)", grain)
                    index = widget.count() - 1
                widget.setCurrentIndex(index)
            else:
                widget.setValue(grain or 1)
            widget.setEnabled(marginals and ticked and (not isinstance(widget, QComboBox) or widget.count() > 1))
            del blocker
        self.attributes.setEnabled(marginals)

    def _name_item(self, row: int) -> QTableWidgetItem:
        item = self.attributes.item(row, 0)
        if item is None:
            raise InternalError(f"the attributes table has no name in row {row}")
        return item

    def _attribute_names(self) -> list[str]:
        return [self._name_item(row).text() for row in range(self.attributes.rowCount())]

    def _grain_widget(self, attribute: Any) -> QSpinBox | QComboBox:
        name = attribute.name
        if isinstance(attribute, NominalAttribute):
            combo = QComboBox()
            height = attribute.hierarchy.height
            combo.addItem(f"its {attribute.size:,} values", None)
            for level in range(height - 1, 1, -1):
                nodes = level_nodes(attribute, level)
                hierarchy = attribute.hierarchy
                example = ", ".join(hierarchy.display_label(hierarchy.labels[n]) for n in nodes[:2])
                combo.addItem(f"hierarchy level {level}: {len(nodes):,} groups ({example}, ...)", level)
            combo.currentIndexChanged.connect(lambda _i, n=name, c=combo: self._grain_changed(n, c.currentData()))
            return combo
        spin = QSpinBox()
        spin.setRange(1, max(attribute.size, 1))
        spin.setPrefix("blocks of ")
        spin.setSuffix(" values")
        spin.setSpecialValueText("each value")
        spin.valueChanged.connect(lambda value, n=name: self._grain_changed(n, None if value == 1 else value))
        return spin

    def refresh_best(self) -> None:
        doc = self._doc
        key = doc.best_sa_key()
        self.result = None
        self.problem.hide()
        plus = doc.mechanism == "privelet+"
        if key is None:
            self.summary.setText("Define the attributes first (Attributes step): the best S_A depends on the domains.")
            self._fill_table(None)
            self.use_best.setEnabled(False)
            self.bestShown.emit()
            return
        if not self.isVisible() and doc.sa_rule != "best":
            return  # nothing needs the search while the step is hidden (showEvent refreshes)
        result = doc.best_sa_result()
        if result is None:
            self._jobs.request(key, partial(_best_job, key), "best S_A")
            self.summary.setText("Searching the best S_A for this workload...")
            self.table.setEnabled(False)
            self.use_best.setEnabled(False)
            return
        if isinstance(result, str):
            self.summary.setText("")
            self.problem.set_text(f"No workload: {result}")
            self.problem.show()
            self._fill_table(None)
            self.use_best.setEnabled(False)
            self.bestShown.emit()
            return
        self.result = result
        worst = result.objective == "worst"
        what = "its worst query" if worst else "a typical query (root of the average square error)"
        search = "every subset tried" if result.exhaustive else "local search (more than 12 attributes)"
        now = doc.effective_sa()
        rule = "follows this best S_A" if doc.sa_rule == "best" and plus else f"is {{{', '.join(now)}}}"
        name = workload_text(result.workload[:1].upper() + result.workload[1:], result.queries)
        self.summary.setText(f"{name}. Errors of {what} at ε = {doc.epsilon:g}; {search}. Your S_A {rule}.")
        self._fill_table(result)
        self.use_best.setEnabled(plus and doc.sa_rule != "best")
        self.use_best.setToolTip(
            "S_A then follows the best subset for this workload as the schema changes" if plus
            else "S_A applies to Privelet+ only (Release with: Privelet+)"
        )
        self.bestShown.emit()

    def _fill_table(self, result: BestSa | None) -> None:
        self.table.setEnabled(result is not None)
        current = self._doc.effective_sa() if self._doc.mechanism == "privelet+" else None
        for row, which in enumerate(REFERENCE_NAMES):
            if result is None:
                cells = [REFERENCE_NAMES[which], "—", "—"]
                mark = False
            else:
                sa, _error = result.errors[which]
                margin = margin95(result.error(which, self._doc.epsilon))
                cells = [f"{REFERENCE_NAMES[which]}: {{{', '.join(sa)}}}", f"± {fmt_count(margin)}",
                         f"{result.ratio(which):,.2f}×"]
                mark = current is not None and tuple(sa) == tuple(current)
            for column, text in enumerate(cells):
                item = _table_item(text, numeric=column > 0, bold=mark)
                if mark:
                    item.setToolTip("Your S_A now")
                self.table.setItem(row, column, item)
        fit_rows(self.table)

    def _computed(self, key: SearchKey, result: BestSa | str | BaseException) -> None:
        if isinstance(result, BaseException):
            result = f"cannot search the best S_A ({type(result).__name__}: {result})"
        self._doc.store_best_sa(key, result)  # announces it (and so refreshes) when still current

    # -- edits -----------------------------------------------------------------------------------
    def _change(self, text: str, merge: str | None = None, **changes: Any) -> None:
        self._doc.set_workload(dataclasses.replace(self._doc.workload, **changes), text, merge=merge)

    def _paper_toggled(self, checked: bool) -> None:
        self._change(("Add" if checked else "Remove") + " the paper's random workload",
                     paper=PAPER_QUERIES if checked else None)

    def _way_toggled(self, k: int, checked: bool) -> None:
        ways = set(self._doc.workload.ways)
        ways = ways | {k} if checked else ways - {k}
        self._change(("Add" if checked else "Remove") + f" the {k}-way marginals", ways=tuple(ways))

    def _attribute_ticked(self, item: QTableWidgetItem) -> None:
        schema = self._doc.schema()
        if schema is None or item.column() != 0:
            return
        rows = range(self.attributes.rowCount())
        ticked = [self._name_item(r).text() for r in rows if self._name_item(r).checkState() == Qt.CheckState.Checked]
        elsewhere = [n for n in self._doc.workload.attributes if n not in schema.names]
        # Every attribute ticked (and none chosen beyond the schema): all, so that newly included ones join.
        attributes = () if len(ticked) == len(schema) and not elsewhere else (*ticked, *elsewhere)
        state = "Query" if item.checkState() == Qt.CheckState.Checked else "Do not query"
        self._change(f"{state} {item.text()} in the marginals", attributes=tuple(attributes))

    def _grain_changed(self, name: str, grain: int | None) -> None:
        self._doc.set_workload(self._doc.workload.with_grain(name, grain), f"Query {name} at another grain",
                               merge=f"grain {name}")

    def _objective_toggled(self, button: QRadioButton, checked: bool) -> None:
        if checked:
            objective = next(key for key, b in self.objective.items() if b is button)
            self._change(f"Workload error: {objective}", objective=objective)

    def add_workload_file(self, path: str | Path | None = None) -> bool:
        """Add a workload file (asked for when no path is given) to the workload."""
        if path is None:
            dialogs = getattr(self.window(), "dialogs", None)
            path = dialogs.open_path("workload", "Add a workload file") if dialogs is not None else None
            if path is None:
                return False
        path = Path(path).absolute()
        if path in self._doc.workload.files:
            return False
        self._change(f"Add the workload file {path.name}", files=(*self._doc.workload.files, path))
        return True

    def _remove_file(self) -> None:
        files = self._doc.workload.files
        row = self.files.currentRow()
        if not files:
            return
        row = row if 0 <= row < len(files) else len(files) - 1
        self._change(f"Remove the workload file {files[row].name}", files=files[:row] + files[row + 1:])


class PrivacyPanel(QWidget):
    """Choose epsilon and S_A and see what they mean for accuracy, before any release."""

    boundsUpdated = Signal()  # after the table of bounds was refreshed (tests wait on it)

    def __init__(self, document: Document, tasks: TaskService, parent: QWidget | None = None):
        super().__init__(parent)
        self._doc = document
        self.runner = tasks.lane("variance factors")  # the first factor computation of a schema
        document.best_sa_inline_seconds = INLINE_SEARCH_SECONDS  # longer searches: this panel's lane
        self._pending: Schema | None = None
        self.bounds: dict[str, dict[str, Any]] = {}

        outer = QVBoxLayout(self)
        outer.setContentsMargins(0, 0, 0, 0)
        scroll = QScrollArea()
        scroll.setWidgetResizable(True)
        scroll.setFrameShape(QScrollArea.Shape.NoFrame)
        scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        outer.addWidget(scroll)
        body = QWidget()
        scroll.setWidget(body)
        layout = QVBoxLayout(body)
        layout.setSpacing(12)
        layout.addWidget(
            StepHeader(
                4,
                "Privacy",
                "Choose the privacy budget epsilon and which attributes to leave untransformed (S_A), for the "
                "queries you expect. Everything below depends only on these choices and the domains, never on "
                "the data: looking at it costs no privacy.",
            )
        )
        columns = self.columns = QHBoxLayout()
        columns.setSpacing(16)
        layout.addLayout(columns, 1)
        self.page, self._page_layout = scroll, layout
        body.installEventFilter(self)  # new contents can widen a column: fit them again
        left = QVBoxLayout()
        right = QVBoxLayout()
        columns.addLayout(left, 1)
        columns.addLayout(right, 1)

        # -- epsilon
        eps_box = QGroupBox("Privacy budget epsilon")
        eps_layout = QGridLayout(eps_box)
        self.slider = QSlider(Qt.Orientation.Horizontal)
        self.slider.setRange(0, SLIDER_STEPS)
        self.slider.setPageStep(SLIDER_STEPS // 12)
        self.slider.setAccessibleName("Epsilon (logarithmic)")
        self.slider.setTickPosition(QSlider.TickPosition.TicksBelow)
        self.slider.setTickInterval(SLIDER_STEPS // 3)
        # A text field, not a spin box: a spin box rounds and clamps what is typed (1e-3 read as
        # 13, 0,5 as 5); this one takes exactly the number typed, or says why not.
        self.epsilon_field = QLineEdit()
        self.epsilon_field.setAccessibleName("Epsilon")
        self.epsilon_field.setToolTip(f"Type epsilon: {EPSILON_FORMAT_TEXT}. Enter applies it.")
        self.epsilon_field.setMaxLength(40)
        self.epsilon_field.setFixedWidth(self.fontMetrics().horizontalAdvance("0") * 14)
        self._shown_epsilon: float | None = None  # what the field shows, until the custodian types
        field = QHBoxLayout()
        field.addWidget(QLabel("ε ="))
        field.addWidget(self.epsilon_field)
        eps_layout.addWidget(QLabel("more private"), 0, 0)
        eps_layout.addWidget(self.slider, 0, 1)
        eps_layout.addWidget(QLabel("more accurate"), 0, 2)
        eps_layout.addLayout(field, 0, 3)
        ticks = QHBoxLayout()
        for text in ("0.01", "0.1", "1", "10"):
            label = QLabel(text)
            label.setForegroundRole(label.foregroundRole())
            ticks.addWidget(label)
            ticks.addStretch(1)
        ticks.takeAt(ticks.count() - 1)
        eps_layout.addLayout(ticks, 1, 1)
        self.epsilon_problem = QLabel()  # why a typed epsilon was refused
        self.epsilon_problem.setWordWrap(True)
        self.epsilon_problem.setStyleSheet("color: #c62828;")
        self.epsilon_problem.hide()
        eps_layout.addWidget(self.epsilon_problem, 2, 0, 1, 4)
        hint = QLabel("A smaller epsilon means stronger privacy and more noise. Every release spends its epsilon.")
        hint.setWordWrap(True)
        eps_layout.addWidget(hint, 3, 0, 1, 4)
        self.spending = QLabel()  # what the privacy ledger says this table has spent
        self.spending.setWordWrap(True)
        self.spending.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        eps_layout.addWidget(self.spending, 4, 0, 1, 4)
        eps_layout.setColumnStretch(1, 1)
        left.addWidget(eps_box)

        # -- neighbours
        nb_box = QGroupBox("Neighbouring tables (what is protected)")
        nb_layout = QVBoxLayout(nb_box)
        self.replace = QRadioButton("Replace one record (as in the paper): hides any one person's values")
        self.add_remove = QRadioButton("Add or remove one record: also hides whether a person is in the table")
        self.replace.setToolTip("Neighbouring tables differ in one record's values; n is treated as public")
        self.add_remove.setToolTip("Neighbouring tables differ by one record: half the noise for the same epsilon")
        self.nb_group = QButtonGroup(self)
        self.nb_group.addButton(self.replace)
        self.nb_group.addButton(self.add_remove)
        nb_layout.addWidget(self.replace)
        nb_layout.addWidget(self.add_remove)
        left.addWidget(nb_box)

        # -- noise sampler
        sampler_box = QGroupBox("Noise sampler")
        sampler_layout = QVBoxLayout(sampler_box)
        self.sampler_group = QButtonGroup(self)
        self.sampler_buttons: dict[Sampler, QRadioButton] = {}
        for sampler in SAMPLERS:
            title, description = SAMPLER_TEXT[sampler]
            button = QRadioButton(title)
            self.sampler_group.addButton(button)
            self.sampler_buttons[sampler] = button
            sampler_layout.addWidget(button)
            sampler_layout.addWidget(hint_label(description))
        self.sampler_buttons["exact"].setToolTip(
            "No floating-point step decides a sample: the privacy guarantee holds exactly as stated"
        )
        self.sampler_buttons["standard"].setToolTip("Faster on some machines; the same distribution to about 1e-16")
        left.addWidget(sampler_box)

        # -- S_A
        sa_box = QGroupBox("S_A: attributes released without a transform")
        sa_layout = QVBoxLayout(sa_box)
        sa_hint = QLabel(
            "Small domains are often better left untransformed. Recommended attributes are marked ✓ and in bold."
        )
        sa_hint.setWordWrap(True)
        sa_layout.addWidget(sa_hint)
        self.sa_rule_label = QLabel()
        self.sa_rule_label.setWordWrap(True)
        sa_layout.addWidget(self.sa_rule_label)
        self.sa_grid = QGridLayout()
        sa_layout.addLayout(self.sa_grid)
        self.sa_boxes: dict[str, QCheckBox] = {}
        sa_buttons = QHBoxLayout()
        self.use_recommended = QPushButton("Use recommended")
        self.use_recommended.clicked.connect(self._use_recommended)
        self.clear_sa = QPushButton("None")
        self.clear_sa.clicked.connect(lambda: self._doc.set_sa(()))
        sa_buttons.addWidget(self.use_recommended)
        sa_buttons.addWidget(self.clear_sa)
        sa_buttons.addStretch(1)
        sa_layout.addLayout(sa_buttons)
        left.addWidget(sa_box)
        left.addStretch(1)

        # -- mechanism and bounds
        bounds_box = QGroupBox("Noise on the worst range-count query")
        bounds_layout = QVBoxLayout(bounds_box)
        mech_row = QHBoxLayout()
        mech_row.addWidget(QLabel("Release with:"))
        self.mech_group = QButtonGroup(self)
        self.mech_buttons: dict[str, QRadioButton] = {}
        for key, title, tip in MECHANISMS:
            button = QRadioButton(title)
            button.setToolTip(tip)
            self.mech_group.addButton(button)
            self.mech_buttons[key] = button
            mech_row.addWidget(button)
        mech_row.addStretch(1)
        bounds_layout.addLayout(mech_row)
        self.table = QTableWidget(len(MECHANISMS), 4)
        self.table.setHorizontalHeaderLabels(["Mechanism", "Paper bound\n(variance)", "Exact worst case\n(variance)", "Error at 95%\n(± count)"])
        self.table.verticalHeader().hide()
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.NoSelection)
        self.table.setFocusPolicy(Qt.FocusPolicy.NoFocus)
        header = self.table.horizontalHeader()
        header.setSectionResizeMode(QHeaderView.ResizeMode.Stretch)
        header.setSectionResizeMode(0, QHeaderView.ResizeMode.ResizeToContents)
        self.table.verticalHeader().setDefaultSectionSize(self.fontMetrics().height() + 12)
        self.table.setVerticalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.table.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.table.setWordWrap(False)
        self.table.setMinimumWidth(self.fontMetrics().horizontalAdvance("M") * 24)
        self.table.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)
        header.setMinimumSectionSize(self.fontMetrics().horizontalAdvance("9,999,999,999") + 8)
        bounds_layout.addWidget(self.table)
        self.bounds_note = QLabel()
        self.bounds_note.setWordWrap(True)
        bounds_layout.addWidget(self.bounds_note)
        right.addWidget(bounds_box)

        # -- target accuracy
        target_box = QGroupBox("Target accuracy")
        target_layout = QGridLayout(target_box)
        target_layout.addWidget(QLabel("I can accept an error of ±"), 0, 0)
        self.target = QDoubleSpinBox()
        self.target.setRange(1.0, 1e12)
        self.target.setDecimals(0)
        self.target.setValue(500.0)
        self.target.setGroupSeparatorShown(True)
        self.target.setAccessibleName("Acceptable error")
        target_layout.addWidget(self.target, 0, 1)
        tail = QLabel("on the worst query, 95% of the time.")
        tail.setWordWrap(True)
        target_layout.addWidget(tail, 0, 2)
        self.target_result = QLabel()
        self.target_result.setWordWrap(True)
        target_layout.addWidget(self.target_result, 1, 0, 1, 3)
        self.use_target = QPushButton("Use this epsilon")
        self.use_target.clicked.connect(self.apply_target)
        target_layout.addWidget(self.use_target, 2, 0, 1, 2, Qt.AlignmentFlag.AlignLeft)
        target_layout.setColumnStretch(2, 1)
        right.addWidget(target_box)
        right.addStretch(1)

        # -- the best strategy, the workload (and the best S_A for it), and the advisor
        self.strategy_box = StrategyBox(document, tasks)
        layout.addWidget(self.strategy_box)
        self.workload_box = WorkloadBox(document, tasks)
        layout.addWidget(self.workload_box)
        self.advisor = AdvisorBox(document, tasks)
        layout.addWidget(self.advisor)

        # -- expected error of every query size (data-independent: exact variances)
        preview_box = QGroupBox("Expected error by query size (from the domains only: costs no privacy)")
        preview_layout = QVBoxLayout(preview_box)
        self.preview_note = QLabel()
        self.preview_note.setWordWrap(True)
        preview_layout.addWidget(self.preview_note)
        self.preview_tabs = QTabWidget()
        self.expected_plot = ErrorByCoveragePlot("Expected square error by query coverage", group_column="coverage_group")
        self.expected_plot.setToolTip(COVERAGE_GROUPS_TIP)
        self.factor_plot = AttributeFactorPlot()
        self.preview_tabs.addTab(self.expected_plot, "By query coverage")
        self.preview_tabs.addTab(self.factor_plot, "Per attribute")
        self.preview_tabs.setMinimumHeight(self.fontMetrics().height() * 22)
        preview_layout.addWidget(self.preview_tabs)
        layout.addWidget(preview_box)
        # The chart's errors at epsilon 1 by key (a result, or why there is none), computed on a lane.
        self._coverage: ResultCache[CoverageKey, CoverageErrors | str] = ResultCache()
        self._coverage_jobs = KeyedLane(tasks.lane("expected error"), self._coverage_computed)
        self.coverage_result: CoverageErrors | None = None  # as drawn
        self.target_epsilon: float | None = None
        self._target_set_by_user = False
        self._target_schema: Schema | None = None

        self.slider.valueChanged.connect(self._slider_moved)
        self.epsilon_field.editingFinished.connect(self.apply_typed_epsilon)
        self.replace.toggled.connect(self._neighbours_changed)
        self.mech_group.buttonToggled.connect(self._mechanism_changed)
        self.sampler_group.buttonToggled.connect(self._sampler_changed)
        self.target.valueChanged.connect(self._target_edited)
        document.attributesChanged.connect(self.refresh)
        document.privacyChanged.connect(self.refresh)
        document.tableChanged.connect(self.refresh)
        document.stateChanged.connect(self._refresh_spending)  # the ledger's answer comes on its own
        self.refresh()

    # -- from the document ---------------------------------------------------------------------
    def resizeEvent(self, event: QResizeEvent) -> None:
        super().resizeEvent(event)
        self._fit_columns()

    def showEvent(self, event: QShowEvent) -> None:
        super().showEvent(event)
        self._fit_columns()

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if watched is self.page.widget() and event.type() == QEvent.Type.LayoutRequest:
            self._fit_columns()
        return super().eventFilter(watched, event)

    def _fit_columns(self) -> None:
        """Each pair of columns side by side where the page's width holds them, else one under the
        other (decided from the width there is: a page never gets narrower than its widest row)."""
        margins = self._page_layout.contentsMargins()
        width = self.page.viewport().width() - margins.left() - margins.right()
        fit_columns(self.columns, width)
        for box in (self.strategy_box, self.workload_box, self.advisor):
            frame, inner = box.contentsMargins(), box.layout()
            padding = inner.contentsMargins() if inner is not None else frame
            fit_columns(box.columns, width - frame.left() - frame.right() - padding.left() - padding.right())

    def refresh(self) -> None:
        doc = self._doc
        blockers = [QSignalBlocker(w) for w in (self.slider, self.replace, self.add_remove, self.mech_group,
                                                self.sampler_group)]
        if doc.epsilon != self._shown_epsilon:  # set elsewhere (the slider, undo, a project): shown as it is
            self._shown_epsilon = doc.epsilon
            self.epsilon_field.setText(epsilon_text(doc.epsilon))
            self.epsilon_problem.hide()
        self.slider.setValue(epsilon_to_slider(doc.epsilon))
        self.replace.setChecked(doc.neighbours == "replace")
        self.add_remove.setChecked(doc.neighbours == "add-remove")
        for key, button in self.mech_buttons.items():
            button.setChecked(doc.mechanism == key)
        for key, button in self.sampler_buttons.items():
            button.setChecked(doc.sampler == key)
        del blockers
        self._refresh_spending()
        self._refresh_sa()
        self.refresh_bounds()
        self.workload_box.refresh()

    def _refresh_sa(self) -> None:
        schema = self._doc.schema()
        names = schema.names if schema is not None else ()
        recommended = set(self._doc.recommended_sa())
        if tuple(self.sa_boxes) != names:
            for box in self.sa_boxes.values():
                self.sa_grid.removeWidget(box)
                box.deleteLater()
            self.sa_boxes = {}
            for i, name in enumerate(names):
                box = QCheckBox(name)
                box.toggled.connect(lambda _checked, n=name: self._sa_toggled())
                self.sa_grid.addWidget(box, i // 2, i % 2)
                self.sa_boxes[name] = box
        chosen = set(self._doc.sa)
        enabled = self._doc.mechanism == "privelet+"
        for name, box in self.sa_boxes.items():
            with_blocker = QSignalBlocker(box)
            box.setChecked(name in chosen)
            box.setEnabled(enabled)
            attribute = schema[name] if schema is not None else None
            size = f"|A| = {attribute.size:,}" if attribute is not None else ""
            box.setText(f"{name}  ({size.removeprefix('|A| = ')} values)" if size else name)
            font = box.font()
            font.setBold(name in recommended)
            box.setFont(font)
            box.setIcon(icons.icon("done") if name in recommended else icons.icon("todo"))
            box.setToolTip("Recommended: leaving it untransformed does not raise the bound" if name in recommended else "")
            del with_blocker
        self.sa_rule_label.setText(f"S_A now: {self._doc.sa_rule_text()}.")
        if self._doc.mechanism == BEST_STRATEGY:
            self.sa_rule_label.setText("S_A is for Privelet+: the best strategy chooses how to measure each attribute "
                                       "(below), the identity among its choices.")
        elif self._doc.sa_rule == "best" and self._doc.best_sa_result() is None:
            self.sa_rule_label.setText("S_A now: best for the workload (searching...).")
        self.use_recommended.setEnabled(bool(names) and enabled and self._doc.sa_rule != "recommended")
        self.clear_sa.setEnabled(bool(names) and enabled)

    # -- bounds ---------------------------------------------------------------------------------------
    def refresh_bounds(self) -> None:
        """Recompute the table of bounds (instant once the schema's factors are known)."""
        schema = self._doc.schema()
        specs = {key: self._doc.release_spec(mechanism=key) for key, _title, _tip in MECHANISMS}
        self.bounds = {}
        if schema is None or any(spec is None for key, spec in specs.items() if key != BEST_STRATEGY):
            for row, (_key, title, _tip) in enumerate(MECHANISMS):
                for col in range(4):
                    self.table.setItem(row, col, QTableWidgetItem(title if col == 0 else "—"))
            self.bounds_note.setText("Define the attributes first (Attributes step).")
            self._fit_table()
            self._update_target()
            self.boundsUpdated.emit()
            return
        model = variance_model(schema)
        ready = model.ready
        if not ready and self._pending != schema:
            self._pending = schema
            self.runner.run(lambda _progress, _cancel: model.prepare(), "variance factors",
                            on_success=lambda _model: self.refresh_bounds(), on_failure=self._factors_failed)
        for key, spec in specs.items():
            if spec is None:
                continue  # the best strategy, not chosen yet
            # The paper's bound (Theorem 3) is of its own mechanisms' transforms.
            entry: dict[str, Any] = {"sa": spec.effective_sa,
                                     "paper": spec.paper_bound() if spec.label in PAPER_MECHANISMS else None}
            if ready:
                entry["exact"] = spec.worst_case_variance()
                entry["margin"] = spec.margin95(entry["exact"])
            self.bounds[key] = entry
        # One style per column: all grouped digits, or all powers of ten.
        styles = {column: table_is_scientific(entry[column] for entry in self.bounds.values()
                                              if entry.get(column) is not None)
                  for column in ("paper", "exact", "margin")}
        no_choice = ("no workload" if isinstance(self._doc.best_strategy_result(), str)
                     else "cancelled" if self._doc.best_strategy_cancelled() else "choosing...")
        for row, (key, title, tip) in enumerate(MECHANISMS):
            spec = specs[key]
            entry = self.bounds.get(key, {})
            if spec is None:
                cells = [title, "—", no_choice, "..."]
            else:
                biased = ready and not math.isfinite(entry["exact"])  # weighted marginals: some counts biased
                cells = [
                    title,
                    fmt_number(entry["paper"], scientific_form=styles["paper"]) if entry["paper"] is not None else "—",
                    ("none (bias)" if biased else fmt_number(entry["exact"], scientific_form=styles["exact"]))
                    if ready else "computing...",
                    ("—" if biased else "± " + fmt_count(entry["margin"], scientific_form=styles["margin"]))
                    if ready else "...",
                ]
            selected = key == self._doc.mechanism
            for col, text in enumerate(cells):
                item = _table_item(text, numeric=col > 0, bold=selected)
                if col == 0:
                    item.setIcon(icons.icon("done" if selected else "todo"))
                    item.setToolTip(tip + (f"; S_A = {{{', '.join(spec.effective_sa)}}}"
                                           if key == "privelet+" and spec is not None else ""))
                self.table.setItem(row, col, item)
        plus_sa = self.bounds["privelet+"]["sa"]
        self.bounds_note.setText(
            f"Privelet+ with S_A = {{{', '.join(plus_sa)}}}; m = {schema.size:,} cells. Variances are those of the "
            "noise on one range-count query; the error is ± 1.96 standard deviations. The paper's bound "
            "(Theorem 3) is an upper bound for the paper's mechanisms; the exact worst case follows from the weights "
            "of each release's measurements."
            + (" Weighted marginals answer a range count over attributes that no marginal holds together with a "
               "bias: they have no worst case." if any(spec is not None and spec.label == "marginals"
                                                       for spec in specs.values()) else "")
        )
        if not self._target_set_by_user and ready and self._target_schema != schema:
            # A starting point for a new schema: half the current worst-case error.
            self._target_schema = schema
            margin = self.bounds.get(self._doc.mechanism, self.bounds["privelet+"])["margin"]
            if not math.isfinite(margin):  # weighted marginals have no worst case: start from Privelet+'s
                margin = self.bounds["privelet+"]["margin"]
            blocker = QSignalBlocker(self.target)
            self.target.setValue(float(f"{margin / 2:.2g}"))
            del blocker
        self._pending = None if ready else self._pending
        self._fit_table()
        self._update_target()
        if ready:
            self._update_plots(schema, plus_sa)
        self.boundsUpdated.emit()

    def _update_plots(self, schema: Schema, sa: tuple[str, ...]) -> None:
        """The expected error by query size of the release these settings make, Privelet+
        (current S_A) and Basic on the custodian's workload (the workspace's
        :meth:`~privelet_gui.workspace.Workspace.coverage_key`), for the release as published;
        its variances at epsilon 1 come from the "expected error" lane once per key."""
        self.factor_plot.set_factors(variance_model(schema).factors, sa)
        key = self._doc.coverage_key()
        plot = self.expected_plot
        self.coverage_result = None
        if key is None:
            plot.set_title("Expected square error by query coverage")
            plot.set_rows({})
            self.preview_note.setText("")
            return
        result = self._coverage.get(key)
        if result is None:
            self._coverage_jobs.request(key, partial(_coverage_job, key), "expected error by query size")
            plot.set_title("Expected square error by query coverage: computing...")
            plot.set_rows({})
            self.preview_note.setText("Listing the queries of your workload and their exact variances...")
            return
        if isinstance(result, str):
            plot.set_title("Expected square error by query coverage")
            plot.set_rows({})
            self.preview_note.setText(f"Cannot compute the expected errors: {result}")
            return
        self.coverage_result = result
        workload = workload_text(result.workload, result.queries)
        notes = []
        if result.stand_in is not None:
            plot.set_title(f"Expected square error on the {workload}, in place of yours")
            notes.append(f"The paper's random workload stands in for yours: {result.stand_in}.")
        elif len(workload) <= CHART_TITLE_NAME:
            plot.set_title(f"Expected square error on your workload: {workload}")
        else:  # a long name would widen the chart beyond the page: said in full below it
            plot.set_title(f"Expected square error on your workload ({result.queries:,} queries)")
            notes.append(f"Your workload: {workload}.")
        rows: dict[str, list[Any]] = {}
        names: dict[str, str] = {}
        drawn = result.at(self._doc.epsilon)
        for name, spec in key.releases:
            rows[name] = drawn.get(name, [])
            names[name] = MECHANISM_CHOICE_NAMES.get(name, name)
            if name == "privelet+" and spec is not None:
                notes.append(f"Privelet+ with your S_A = {{{', '.join(spec.effective_sa)}}}.")
            if name == BEST_STRATEGY and spec is not None and spec.label in PAPER_MECHANISMS:
                names[name] += f" ({spec.name})"  # drawn over that mechanism's line when it is the same
            if spec is None:
                choice = self._doc.best_strategy_result()
                if isinstance(choice, str):
                    names[name] += ": none"
                    notes.append(f"No best strategy: {choice}.")
                elif self._doc.best_strategy_cancelled():
                    names[name] += ": cancelled"
                    notes.append(f"No best strategy: {STRATEGY_SEARCH_CANCELLED} (above) to draw its line.")
                else:
                    names[name] += ": choosing..."
                    notes.append("The best strategy is being chosen (above); its line follows.")
        plot.set_rows(rows, epsilon=self._doc.epsilon, names=names)
        notes.append(public_total_text(self._doc.release_spec(mechanism="privelet+")))  # the same shift for every mechanism
        self.preview_note.setText(" ".join(notes))

    def _coverage_computed(self, key: CoverageKey, result: CoverageErrors | str | BaseException) -> None:
        if isinstance(result, BaseException):
            result = f"{type(result).__name__}: {result}"
        self._coverage.put(key, result)
        if key == self._doc.coverage_key():
            self.refresh_bounds()

    def _fit_table(self) -> None:
        height = self.table.horizontalHeader().sizeHint().height() + 2 * self.table.frameWidth()
        height += sum(self.table.rowHeight(r) for r in range(self.table.rowCount()))
        self.table.setFixedHeight(height)

    def _factors_failed(self, error: object) -> None:
        self._pending = None
        self.bounds_note.setText(f"Cannot compute the exact variances: {error}")

    def displayed(self, mechanism: MechanismChoice, column: int) -> str:
        """The text shown in the table (tests compare it with the engine)."""
        row = [m[0] for m in MECHANISMS].index(mechanism)
        item = self.table.item(row, column)
        return item.text() if item is not None else ""

    # -- target accuracy -------------------------------------------------------------------------------
    def _update_target(self) -> None:
        schema = self._doc.schema()
        self.target_epsilon = None
        self.use_target.setEnabled(False)
        if schema is None:
            self.target_result.setText("Define the attributes first.")
            return
        spec = self._doc.release_spec()
        if spec is None or not variance_model(schema).ready:
            self.target_result.setText("Computing...")
            return
        at_one = spec.replace(epsilon=1.0).worst_case_variance()
        if not math.isfinite(at_one):  # weighted marginals answer some range counts with a bias
            self.target_result.setText(
                f"With {spec.name}, range counts over attributes that no marginal holds together are answered "
                "with a bias: no epsilon bounds every range count's error. Choose a mechanism above to aim at one.")
            return
        target_variance = variance_for_margin95(self.target.value())
        epsilon = round_up(epsilon_for_variance(at_one, target_variance))
        self.target_epsilon = epsilon
        name = spec.name
        achieved = spec.replace(epsilon=epsilon).worst_case_margin95()
        text = (
            f"With {name}, the smallest epsilon giving ± {fmt_count(self.target.value())} is "
            f"<b>ε = {epsilon:g}</b> (± {fmt_count(achieved)})."
        )
        if epsilon > SLIDER_EPSILON_MAX:
            text += " That is a weak privacy guarantee: consider coarser domains or fewer attributes."
        self.target_result.setText(text)
        self.use_target.setText(f"Use ε = {epsilon:g}")
        self.use_target.setEnabled(abs(epsilon - self._doc.epsilon) > 1e-12)

    def _target_edited(self) -> None:
        self._target_set_by_user = True
        self._update_target()

    def apply_target(self) -> None:
        if self.target_epsilon is not None:
            self._doc.set_privacy(f"Set epsilon to {self.target_epsilon:g} (target accuracy)", epsilon=self.target_epsilon)

    # -- edits -------------------------------------------------------------------------------------
    def _slider_moved(self, position: int) -> None:
        epsilon = float(f"{slider_to_epsilon(position):.3g}")
        self._doc.set_epsilon(epsilon)

    def apply_typed_epsilon(self) -> bool:
        """Set epsilon to exactly the number typed in the field, or say why it is refused (the
        engine's range, the decimal separator) and keep the epsilon as it was."""
        try:
            epsilon = parse_epsilon(self.epsilon_field.text())
        except PriveletError as exc:
            self.epsilon_problem.setText(f"{exc}. Epsilon stays {epsilon_text(self._doc.epsilon)}.")
            self.epsilon_problem.show()
            return False
        self.epsilon_problem.hide()
        self._doc.set_epsilon(epsilon)
        return True

    def _neighbours_changed(self) -> None:
        value = "replace" if self.replace.isChecked() else "add-remove"
        self._doc.set_privacy(f"Neighbours: {value}", neighbours=value)

    def _mechanism_changed(self, button: QRadioButton, checked: bool) -> None:
        if not checked:
            return
        for key, candidate in self.mech_buttons.items():
            if candidate is button:
                self._doc.set_privacy(f"Mechanism: {key}", mechanism=key)

    def _sampler_changed(self, button: QRadioButton, checked: bool) -> None:
        if not checked:
            return
        for key, candidate in self.sampler_buttons.items():
            if candidate is button:
                self._doc.set_sampler(key)

    def _refresh_spending(self) -> None:
        text = self._doc.spending_text()
        self.spending.setText(f"Privacy ledger: {text}")
        self.spending.setVisible(bool(text))

    def _sa_toggled(self) -> None:
        self._doc.set_sa([name for name, box in self.sa_boxes.items() if box.isChecked()])

    def _use_recommended(self) -> None:
        self._doc.use_recommended_sa()
