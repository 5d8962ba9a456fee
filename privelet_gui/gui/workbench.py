"""The range-query workbench: pick a box, read its noisy count and 95% interval at once.

It needs only a release (a fresh one or a file opened from disk): no true data, so
everything it shows may be published with the release.
"""

from __future__ import annotations

import csv
import html
import io
from pathlib import Path

from PySide6.QtCore import QEvent, QModelIndex, QObject, QPersistentModelIndex, Qt, Signal
from PySide6.QtGui import QMouseEvent, QStandardItem, QStandardItemModel, QValidator
from PySide6.QtWidgets import (
    QAbstractItemView,
    QComboBox,
    QFileDialog,
    QFormLayout,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QPushButton,
    QSpinBox,
    QTableWidget,
    QTableWidgetItem,
    QTreeView,
    QVBoxLayout,
    QWidget,
)

from ..engine import Hierarchy, NominalAttribute, OrdinalAttribute, PrefixSums, RangeQuery, Release, Workload
from ..formatting import fmt_number, fmt_numbers, table_is_scientific
from ..io import QueryAnswer, answer_query, atomic_write
from ..io.releases import spreadsheet_safe

__all__ = ["EXAMPLES", "INSTANT_PREFIX_CELLS", "MAX_LISTED_VALUES", "IntervalPicker", "NodePicker", "QueryWorkbench", "labelled_query"]

#: Releases up to this many cells get their prefix sums at once; bigger ones from the caller
#: (computed in a task: a cumulative sum over every cell).
INSTANT_PREFIX_CELLS = 4_000_000
#: An ordinal axis with more values than this is picked with spin boxes rather than lists.
MAX_LISTED_VALUES = 1000
#: Queries of the custodian's workload offered as examples.
EXAMPLES = 12


class _ExpandArrows(QObject):
    """On a drop-down tree's viewport: a click on a group's expand arrow opens or closes the
    group, and does nothing else (the combo box would choose the group and close the list)."""

    def __init__(self, view: QTreeView):
        super().__init__(view)
        self._view = view

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        kinds = (QEvent.Type.MouseButtonPress, QEvent.Type.MouseButtonRelease, QEvent.Type.MouseButtonDblClick)
        if event.type() not in kinds or not isinstance(event, QMouseEvent):
            return False
        view = self._view
        point = event.position().toPoint()
        index = view.indexAt(point)
        # The arrow is drawn in the indentation, left of the row's text.
        if not index.isValid() or not view.model().hasChildren(index) or point.x() >= view.visualRect(index).left():
            return False
        if event.type() == QEvent.Type.MouseButtonPress:
            view.setExpanded(index, not view.isExpanded(index))
        return True  # the press, and the release that would choose and close: both kept from the combo box


def labelled_query(query: RangeQuery) -> str:
    """A query as :meth:`~privelet_gui.engine.RangeQuery.describe` writes it (``age=20..29,
    job=4``), each node shown by its display label where it has one (``job=Manufacturing``)."""
    parts = []
    for axis, attribute in enumerate(query.schema):
        if isinstance(attribute, NominalAttribute):
            if query.nodes[axis] != 0:
                hierarchy = attribute.hierarchy
                parts.append(f"{attribute.name}={hierarchy.display_label(hierarchy.labels[query.nodes[axis]])}")
        elif (query.lo[axis], query.hi[axis]) != (0, attribute.size - 1):
            first, last = attribute.labels[query.lo[axis]], attribute.labels[query.hi[axis]]
            parts.append(f"{attribute.name}={first}" if first == last else f"{attribute.name}={first}..{last}")
    return ", ".join(parts) or "*"


def _shown(hierarchy: Hierarchy, code: str) -> str:
    """A node as the drop-down shows it: its display label and its code, or its code alone."""
    label = hierarchy.display_label(code)
    return code if label == code else f"{label}  [{code}]"


class NodePicker(QComboBox):
    """Choose one node of a hierarchy in a drop-down tree (the root means "any"), shown by its
    display label (and code) when it has one.

    A node is chosen by a click on its text or by Enter; a click on a group's arrow only
    opens or closes the group.
    """

    changed = Signal()

    def __init__(self, hierarchy: Hierarchy, parent: QWidget | None = None):
        super().__init__(parent)
        self.hierarchy = hierarchy
        model = QStandardItemModel(self)
        items: dict[int, QStandardItem] = {}
        for node in hierarchy.nodes():
            text = _shown(hierarchy, node.label)
            if node.index == 0:
                text += f"  (all {node.hi - node.lo})"
            item = QStandardItem(text)
            item.setToolTip(f"Code {node.label!r}" if node.label in hierarchy.display_labels else "")
            item.setData(node.index, Qt.ItemDataRole.UserRole)
            item.setEditable(False)
            items[node.index] = item
            if node.parent < 0:
                model.appendRow(item)
            else:
                items[node.parent].appendRow(item)
        view = QTreeView(self)
        view.setHeaderHidden(True)
        view.setMinimumHeight(260)
        self.setModel(model)
        self.setView(view)
        # After setView: the filter installed last sees the events first, before the combo box's own.
        view.viewport().installEventFilter(_ExpandArrows(view))
        view.expand(model.index(0, 0))
        self._node = 0
        self.setRootModelIndex(QModelIndex())
        self.setCurrentIndex(0)
        # The combo box chose the view's current row (mouse or keyboard): read the node from there.
        self.activated.connect(lambda _row: self._chosen(view.currentIndex()))

    def _chosen(self, index: QModelIndex | QPersistentModelIndex) -> None:
        self._node = int(index.data(Qt.ItemDataRole.UserRole))
        # A combo box shows rows of its root; show the chosen node wherever it sits.
        self.setRootModelIndex(index.parent())
        self.setCurrentIndex(index.row())
        self.setRootModelIndex(QModelIndex())
        self.changed.emit()

    def node(self) -> int:
        """Level-order index of the chosen node (0: the root, no constraint)."""
        return self._node

    def set_node(self, label: str) -> None:
        """Choose the node called ``label`` (as a user would in the tree)."""
        target = self.hierarchy.index_of(label)
        model = self.model()
        stack = [model.index(0, 0)]
        while stack:
            index = stack.pop()
            if int(index.data(Qt.ItemDataRole.UserRole)) == target:
                self._chosen(index)
                return
            stack.extend(model.index(r, 0, index) for r in range(model.rowCount(index)))


class _ValueBox(QSpinBox):
    """A position on a long ordinal axis, shown and typed as its value's label: a list of a
    million labels would take seconds to build on the GUI thread, a spin box takes nothing."""

    def __init__(self, attribute: OrdinalAttribute, parent: QWidget | None = None):
        super().__init__(parent)
        self._attribute = attribute
        self._labels = attribute.labels  # computed when asked for (ranges, bins): nothing is built
        self.setRange(0, len(self._labels) - 1)
        self.setAccelerated(True)
        self.setToolTip(f"Type a value of {attribute.name} or step with the arrows ({len(self._labels):,} values)")

    def textFromValue(self, value: int) -> str:
        return self._labels[value]

    def valueFromText(self, text: str) -> int:
        position = self._attribute.position_of(text.strip())
        return position if position is not None else self.value()

    def validate(self, text: str, pos: int) -> tuple[QValidator.State, str, int]:
        if self._attribute.position_of(text.strip()) is not None:
            return QValidator.State.Acceptable, text, pos
        return QValidator.State.Intermediate, text, pos


class IntervalPicker(QWidget):
    """Choose an inclusive interval of an ordinal attribute's values: from two lists, or from
    two spin boxes when the axis has more than :data:`MAX_LISTED_VALUES` values."""

    changed = Signal()

    def __init__(self, attribute: OrdinalAttribute, parent: QWidget | None = None):
        super().__init__(parent)
        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        size = attribute.size
        self.first: QComboBox | _ValueBox
        self.last: QComboBox | _ValueBox
        if size <= MAX_LISTED_VALUES:
            self.first, self.last = QComboBox(), QComboBox()
            for box in (self.first, self.last):
                box.addItems(list(attribute.labels))
                box.setMaxVisibleItems(20)
                box.currentIndexChanged.connect(self._changed)
        else:
            self.first, self.last = _ValueBox(attribute), _ValueBox(attribute)
            for spin in (self.first, self.last):
                spin.valueChanged.connect(self._changed)
        self.set_interval(0, size - 1)
        layout.addWidget(QLabel("from"))
        layout.addWidget(self.first, 1)
        layout.addWidget(QLabel("to"))
        layout.addWidget(self.last, 1)

    @staticmethod
    def _position(box: QComboBox | _ValueBox) -> int:
        return box.currentIndex() if isinstance(box, QComboBox) else box.value()

    @staticmethod
    def _move(box: QComboBox | _ValueBox, position: int) -> None:
        if isinstance(box, QComboBox):
            box.setCurrentIndex(position)
        else:
            box.setValue(position)

    def _changed(self) -> None:
        # Keep the interval non-empty: moving one end past the other drags it along.
        if self._position(self.last) < self._position(self.first):
            moved, other = (self.first, self.last) if self.sender() is self.first else (self.last, self.first)
            other.blockSignals(True)
            self._move(other, self._position(moved))
            other.blockSignals(False)
        self.changed.emit()

    def interval(self) -> tuple[int, int]:
        return self._position(self.first), self._position(self.last)

    def set_interval(self, first: int, last: int) -> None:
        self._move(self.first, first)
        self._move(self.last, last)


class QueryWorkbench(QWidget):
    """Per attribute an interval or a hierarchy node; the noisy count with its exact 95% interval."""

    answered = Signal(object)  # QueryAnswer

    COLUMNS = ("query", "noisy_count", "ci95_low", "ci95_high", "std_error", "query_labels")

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.release: Release | None = None
        self._prefix: PrefixSums | None = None
        self._pickers: dict[str, NodePicker | IntervalPicker] = {}
        self._answers: list[tuple[QueryAnswer, str]] = []  # each kept answer, and its query as shown
        self.last_answer: QueryAnswer | None = None
        self._last_shown = ""  # the last answer's query with display labels
        layout = QVBoxLayout(self)
        self.notice = QLabel("Open or make a release to query it.")
        self.notice.setWordWrap(True)
        layout.addWidget(self.notice)
        examples = QHBoxLayout()
        examples.addWidget(QLabel("Example:"))
        self.examples = QComboBox()
        self.examples.setToolTip("Queries of the workload you set in the Privacy step: choose one to ask it")
        self.examples.activated.connect(self._use_example)
        examples.addWidget(self.examples, 1)
        layout.addLayout(examples)
        self._examples: list[RangeQuery] = []
        self.form_host = QWidget()
        self.form = QFormLayout(self.form_host)
        layout.addWidget(self.form_host)
        self.answer_label = QLabel("")
        self.answer_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        font = self.answer_label.font()
        font.setPointSizeF(font.pointSizeF() * 1.3)
        self.answer_label.setFont(font)
        layout.addWidget(self.answer_label)
        buttons = QHBoxLayout()
        self.keep_button = QPushButton("Keep in list")
        self.keep_button.clicked.connect(self.keep)
        self.export_button = QPushButton("Export list as CSV…")
        self.export_button.clicked.connect(lambda: self.export_csv())
        self.clear_button = QPushButton("Clear list")
        self.clear_button.clicked.connect(self.clear_list)
        buttons.addWidget(self.keep_button)
        buttons.addStretch(1)
        buttons.addWidget(self.clear_button)
        buttons.addWidget(self.export_button)
        layout.addLayout(buttons)
        headers = ["Query", "Noisy count", "95% low", "95% high", "Std. error"]  # the query shown with its labels
        self.table = QTableWidget(0, len(headers))
        self.table.setHorizontalHeaderLabels(headers)
        self.table.horizontalHeader().setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        layout.addWidget(self.table, 1)
        self._update_enabled()

    # -- release ------------------------------------------------------------------------
    def set_release(self, release: Release | None, prefix: PrefixSums | None = None) -> None:
        """Query ``release``; small releases get their prefix sums here, big ones via
        :meth:`set_prefix_sums` (compute them in the task runner, not on the UI thread)."""
        self.release = release
        self._prefix = prefix
        if release is not None and prefix is None and release.noisy.size <= INSTANT_PREFIX_CELLS:
            self._prefix = PrefixSums(release.noisy)
        while self.form.rowCount():
            self.form.removeRow(0)
        self._pickers.clear()
        if release is None or release.schema is None:
            self.notice.setText("Open or make a release to query it." if release is None else
                                "This release has no schema, so its cells have no labels to query.")
            self.answer_label.clear()
            self._update_enabled()
            return
        self.notice.setText(
            "Choose an interval or a hierarchy node per attribute. Answers come from the released "
            "(noisy) matrix only; the interval is exact for this release's noise."
            + (" The release was shifted so that its total equals the public number of rows: the whole "
               "table's count is exact, and a query's noise includes its share of that shift."
               if release.public_total else "")
        )
        for attribute in release.schema:
            if isinstance(attribute, NominalAttribute):
                picker: NodePicker | IntervalPicker = NodePicker(attribute.hierarchy)
            else:
                picker = IntervalPicker(attribute)
            picker.changed.connect(self.update_answer)
            self._pickers[attribute.name] = picker
            self.form.addRow(attribute.name, picker)
        self.update_answer()

    def set_examples(self, workload: Workload | None) -> None:
        """Offer a few queries of ``workload`` (on the release's schema; None: the custodian has none here)."""
        self._examples = []
        if workload is not None and self.release is not None and workload.schema == self.release.schema:
            batch = workload.examples(EXAMPLES)
            self._examples = [batch.query(workload.schema, i) for i in range(len(batch))]
        self.examples.clear()
        if self._examples and workload is not None:
            self.examples.addItem(f"{len(self._examples)} queries of {workload.name}…")
            self.examples.addItems([labelled_query(q) for q in self._examples])
        else:
            self.examples.addItem("no workload for this release's attributes")
        self.examples.setEnabled(bool(self._examples))

    def use_example(self, number: int) -> None:
        """Ask example ``number`` (0: the first offered)."""
        query = self._examples[number]
        for axis, attribute in enumerate(query.schema):
            picker = self._pickers[attribute.name]
            if isinstance(picker, NodePicker):
                picker.set_node(attribute.hierarchy.labels[query.nodes[axis]])  # type: ignore[union-attr]
            else:
                picker.set_interval(query.lo[axis], query.hi[axis])
        self.update_answer()

    def _use_example(self, row: int) -> None:
        if row > 0:
            self.use_example(row - 1)

    def set_prefix_sums(self, prefix: PrefixSums) -> None:
        self._prefix = prefix
        self.update_answer()

    def picker(self, name: str) -> NodePicker | IntervalPicker:
        return self._pickers[name]

    # -- answers ------------------------------------------------------------------------
    def query(self) -> RangeQuery | None:
        if self.release is None or self.release.schema is None:
            return None
        bounds: dict[str, tuple[int, int] | int] = {}
        for name, picker in self._pickers.items():
            bounds[name] = picker.node() if isinstance(picker, NodePicker) else picker.interval()
        return RangeQuery.from_indices(self.release.schema, bounds)

    def update_answer(self) -> None:
        query = self.query()
        self._update_enabled()
        if query is None or self._prefix is None:
            self.answer_label.setText("Preparing the release for queries…" if query is not None else "")
            return
        answer = answer_query(self.release, query, prefix=self._prefix)  # type: ignore[arg-type]
        self.last_answer = answer
        self._last_shown = labelled_query(query)
        count, low, high, std = fmt_numbers(self._row(answer)[1:5])  # one style for the four
        self.answer_label.setText(
            f"<b>{count}</b> &nbsp; 95% interval [{low}, {high}]"
            f"<br><small>{html.escape(self._last_shown)} · {query.cells:,} cells · noise std. {std}</small>"
        )
        self.answered.emit(answer)

    def keep(self) -> None:
        if self.last_answer is None:
            return
        self._answers.append((self.last_answer, self._last_shown))
        self._fill_table()
        self._update_enabled()

    def _fill_table(self) -> None:
        """The kept answers, every number in the table's one style (a new huge one turns them all scientific)."""
        rows = [self._row(answer, shown) for answer, shown in self._answers]
        scientific = table_is_scientific(value for row in rows for value in row[1:5])
        self.table.setRowCount(len(rows))
        for row, values in enumerate(rows):
            item = QTableWidgetItem(values[5])  # the query with display labels; its codes in the tooltip
            item.setToolTip(f"Codes: {values[0]}" if values[5] != values[0] else "")
            self.table.setItem(row, 0, item)
            for column, value in enumerate(values[1:5], start=1):
                item = QTableWidgetItem(fmt_number(value, scientific_form=scientific))
                item.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
                self.table.setItem(row, column, item)

    def clear_list(self) -> None:
        self._answers.clear()
        self.table.setRowCount(0)
        self._update_enabled()

    @property
    def answers(self) -> list[QueryAnswer]:
        return [answer for answer, _ in self._answers]

    def export_csv(self, path: str | Path | None = None) -> Path | None:
        """Write the kept queries (noisy answers and intervals only) to CSV, atomically."""
        if path is None:
            chosen, _ = QFileDialog.getSaveFileName(self, "Export queries", "queries.csv", "CSV table (*.csv)")
            if not chosen:
                return None
            path = chosen
        text = io.StringIO()
        writer = csv.writer(text, lineterminator="\n")
        writer.writerow(self.COLUMNS)
        for answer, shown in self._answers:
            codes, *numbers, labelled = self._row(answer, shown)
            # the queries name attributes and values: text a spreadsheet must not run as a formula
            writer.writerow([spreadsheet_safe(codes), *numbers, spreadsheet_safe(labelled)])
        target = Path(path)
        with atomic_write(target, force=True, mode="w") as handle:
            handle.write(text.getvalue())
        return target

    @staticmethod
    def _row(answer: QueryAnswer, shown: str = "") -> tuple[str, float, float, float, float, str]:
        """A kept answer as exported: the query's codes, the numbers, the query with display labels."""
        return answer.query, answer.noisy_count, answer.ci95[0], answer.ci95[1], answer.variance**0.5, shown or answer.query

    def _update_enabled(self) -> None:
        ready = self.release is not None and self._prefix is not None and bool(self._pickers)
        self.keep_button.setEnabled(ready)
        self.export_button.setEnabled(bool(self._answers))
        self.clear_button.setEnabled(bool(self._answers))
