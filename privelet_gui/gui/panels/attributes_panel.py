"""Step 2, Attributes: which columns to release, their type and their public domain.

Each attribute also says what its missing cells count as (empty cells, and cells holding a
text meaning missing: the table's reading options name them, or the attribute names its
own): stop with an error, drop their rows, a value of their own, or one of its values."""

from __future__ import annotations

import html
from typing import Any

from PySide6.QtCore import QAbstractItemModel, QModelIndex, QPersistentModelIndex, QSignalBlocker, Qt, Signal
from PySide6.QtWidgets import (
    QAbstractItemView,
    QButtonGroup,
    QCheckBox,
    QComboBox,
    QDoubleSpinBox,
    QFormLayout,
    QGroupBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QPlainTextEdit,
    QPushButton,
    QRadioButton,
    QSizePolicy,
    QSpinBox,
    QSplitter,
    QStyledItemDelegate,
    QStyleOptionViewItem,
    QTableView,
    QVBoxLayout,
    QWidget,
)

from ... import io as pio
from ...engine import Hierarchy, HierarchyError, InternalError, PriveletError
from ...qt.widgets import Banner, StepHeader, SwitchBox, fmt_bytes
from ...workspace.model import MAX_CELLS, parse_bin_edges
from ..document import AttributeConfig, Document
from ..models.attributes_model import AttributesModel

__all__ = ["AttributeEditor", "AttributesPanel"]

_OUT_OF_RANGE = [
    ("Stop with an error", "error"),
    ("Clamp to the first or last value", "clamp"),
    ("Drop the row", "drop"),
]
ModelIndex = QModelIndex | QPersistentModelIndex

_MODES = [("Integer range", "range"), ("Numeric bins", "bins"), ("Explicit values (in order)", "values")]
# The Missing drop-down's items: the choice as their data, the value (if any) under this role.
_VALUE_ROLE = Qt.ItemDataRole.UserRole + 1


#: The values box lists at most this many values (a longer domain is a range or bins, not typed).
MAX_LISTED_VALUES = 10_000

class _TypeDelegate(QStyledItemDelegate):
    """A combo box for the Type column."""

    def createEditor(self, parent: QWidget, option: QStyleOptionViewItem, index: ModelIndex) -> QWidget:
        combo = QComboBox(parent)
        combo.addItems(["ordinal", "nominal"])
        combo.activated.connect(lambda _=0: self.commitData.emit(combo))
        return combo

    def setEditorData(self, editor: QWidget, index: ModelIndex) -> None:
        if not isinstance(editor, QComboBox):
            raise InternalError(f"the kind column's editor is a {type(editor).__name__}, not the combo box made for it")
        editor.setCurrentText(str(index.data(Qt.ItemDataRole.EditRole)))

    def setModelData(self, editor: QWidget, model: QAbstractItemModel, index: ModelIndex) -> None:
        if not isinstance(editor, QComboBox):
            raise InternalError(f"the kind column's editor is a {type(editor).__name__}, not the combo box made for it")
        model.setData(index, editor.currentText(), Qt.ItemDataRole.EditRole)


class AttributeEditor(QGroupBox):
    """The domain of the selected attribute. Every change is an undoable document edit."""

    editHierarchyRequested = Signal(str)  # column

    def __init__(self, document: Document, parent: QWidget | None = None):
        super().__init__("Attribute", parent)
        self._doc = document
        self._column: str | None = None
        layout = QVBoxLayout(self)
        layout.setSpacing(8)

        type_row = QHBoxLayout()
        type_row.addWidget(QLabel("Type:"))
        self.ordinal = QRadioButton("Ordinal (ordered values)")
        self.nominal = QRadioButton("Nominal (a hierarchy of groups)")
        self.kind_group = QButtonGroup(self)
        self.kind_group.addButton(self.ordinal)
        self.kind_group.addButton(self.nominal)
        type_row.addWidget(self.ordinal)
        type_row.addWidget(self.nominal)
        type_row.addStretch(1)
        layout.addLayout(type_row)

        self.pages = SwitchBox()
        layout.addWidget(self.pages)

        # -- ordinal page
        ordinal_page = QWidget()
        form = QFormLayout(ordinal_page)
        form.setContentsMargins(0, 0, 0, 0)
        form.setFieldGrowthPolicy(QFormLayout.FieldGrowthPolicy.FieldsStayAtSizeHint)
        self.mode = QComboBox()
        for text, value in _MODES:
            self.mode.addItem(text, value)
        form.addRow("Domain:", self.mode)
        self.mode_pages = SwitchBox()
        form.addRow(self.mode_pages)

        range_page = QWidget()
        range_layout = QHBoxLayout(range_page)
        range_layout.setContentsMargins(0, 0, 0, 0)
        self.lo = QSpinBox()
        self.hi = QSpinBox()
        for spin in (self.lo, self.hi):
            spin.setRange(-(10**9), 10**9)
            spin.setKeyboardTracking(False)
            spin.setGroupSeparatorShown(False)
        self.lo.setAccessibleName("Range from")
        self.hi.setAccessibleName("Range to")
        range_layout.addWidget(QLabel("From"))
        range_layout.addWidget(self.lo)
        range_layout.addWidget(QLabel("to"))
        range_layout.addWidget(self.hi)
        range_layout.addWidget(QLabel("(inclusive)"))
        range_layout.addStretch(1)
        self.mode_pages.addWidget(range_page)

        bins_page = QWidget()
        bins_layout = QVBoxLayout(bins_page)
        bins_layout.setContentsMargins(0, 0, 0, 0)
        self.bins_kind = QButtonGroup(self)
        equal_row = QHBoxLayout()
        self.equal_bins = QRadioButton("Equal width:")
        self.bins_kind.addButton(self.equal_bins)
        equal_row.addWidget(self.equal_bins)
        self.start = QDoubleSpinBox()
        self.stop = QDoubleSpinBox()
        self.bin_width = QDoubleSpinBox()
        for edge, name in ((self.start, "Start"), (self.stop, "Stop"), (self.bin_width, "Width")):
            edge.setRange(-1e12, 1e12)
            edge.setDecimals(4)
            edge.setKeyboardTracking(False)
            edge.setAccessibleName(f"Bins {name.lower()}")
            equal_row.addWidget(QLabel(name))
            equal_row.addWidget(edge)
        self.bin_width.setMinimum(1e-4)
        equal_row.addStretch(1)
        bins_layout.addLayout(equal_row)
        edges_row = QHBoxLayout()
        self.edge_bins = QRadioButton("Between edges:")
        self.edge_bins.setToolTip("Bins of any widths: [first, second), [second, third), ...")
        self.bins_kind.addButton(self.edge_bins)
        edges_row.addWidget(self.edge_bins)
        self.bin_edges = QLineEdit()
        self.bin_edges.setAccessibleName("Bin edges")
        self.bin_edges.setPlaceholderText("increasing numbers, e.g. 0, 1, 10000, 50000, 150000")
        edges_row.addWidget(self.bin_edges, 1)
        bins_layout.addLayout(edges_row)
        ends_row = QHBoxLayout()
        self.open_below = QCheckBox("Open below")
        self.open_below.setToolTip("A first bin (-inf, start) for every number below the bins")
        self.open_above = QCheckBox("Open above")
        self.open_above.setToolTip("A last bin [stop, inf) for every number from the end of the bins on")
        ends_row.addWidget(self.open_below)
        ends_row.addWidget(self.open_above)
        self.bins_count = QLabel()
        self.bins_count.setWordWrap(True)
        ends_row.addWidget(self.bins_count, 1)
        bins_layout.addLayout(ends_row)
        self.mode_pages.addWidget(bins_page)

        values_page = QWidget()
        values_layout = QVBoxLayout(values_page)
        values_layout.setContentsMargins(0, 0, 0, 0)
        self.values = QPlainTextEdit()
        self.values.setPlaceholderText("One value per line, in order")
        self.values.setMaximumHeight(self.fontMetrics().height() * 7)
        values_layout.addWidget(self.values)
        values_buttons = QHBoxLayout()
        self.apply_values = QPushButton("Apply values")
        self.apply_values.clicked.connect(self._apply_values)
        values_buttons.addWidget(self.apply_values)
        values_buttons.addStretch(1)
        values_layout.addLayout(values_buttons)
        self.mode_pages.addWidget(values_page)

        self.out_of_range = QComboBox()
        for text, value in _OUT_OF_RANGE:
            self.out_of_range.addItem(text, value)
        form.addRow("Out of range:", self.out_of_range)
        self.pages.addWidget(ordinal_page)

        # -- nominal page
        nominal_page = QWidget()
        nominal_layout = QHBoxLayout(nominal_page)
        nominal_layout.setContentsMargins(0, 0, 0, 0)
        self.hierarchy_label = QLabel()
        self.hierarchy_label.setWordWrap(True)
        nominal_layout.addWidget(self.hierarchy_label, 1)
        self.edit_hierarchy = QPushButton("Edit hierarchy...")
        self.edit_hierarchy.clicked.connect(lambda: self._column and self.editHierarchyRequested.emit(self._column))
        self.flat_hierarchy = QPushButton("Reset to flat")
        self.flat_hierarchy.setToolTip("Every value directly under the root (height 2)")
        self.flat_hierarchy.clicked.connect(self._reset_flat)
        nominal_layout.addWidget(self.edit_hierarchy)
        nominal_layout.addWidget(self.flat_hierarchy)
        self.pages.addWidget(nominal_page)

        missing_row = QHBoxLayout()
        self.missing_label = QLabel("Missing:")
        self.missing = QComboBox()
        self.missing.setAccessibleName("Missing")
        self.missing.setToolTip("What the column's missing cells (empty, or holding a text meaning missing) count as")
        missing_row.addWidget(self.missing_label)
        # the row's width: a choice's text depends on the type ("a leaf of its own in the
        # hierarchy"), a width fitted to the first one shown cut the longer ones
        missing_row.addWidget(self.missing, 1)
        layout.addLayout(missing_row)
        markers_row = QHBoxLayout()
        self.own_markers = QCheckBox("Its own texts meaning missing:")
        self.own_markers.setToolTip(
            "Name the texts that mean missing in this column, instead of the table's (Data step, Reading options)"
        )
        self.markers = QLineEdit()
        self.markers.setAccessibleName("Texts meaning missing in this column")
        self.markers.setPlaceholderText("e.g. N, NA (empty cells are always missing)")
        markers_row.addWidget(self.own_markers)
        markers_row.addWidget(self.markers, 1)
        layout.addLayout(markers_row)

        self.private_banner = Banner(
            "warning",
            "<b>Not private:</b> this domain was taken from the data. The mere presence of a rare value can "
            "reveal a person. Editing it keeps this warning: import a public code list (Hierarchies step), or "
            "confirm that the domain (as typed, for a range or list) is public knowledge.",
            "It is public knowledge",
        )
        self.private_banner.actionTriggered.connect(self._confirm_public)
        layout.addWidget(self.private_banner)
        self.issues = QLabel()
        self.issues.setWordWrap(True)
        self.issues.setTextFormat(Qt.TextFormat.RichText)
        layout.addWidget(self.issues)
        layout.addStretch(1)

        self.ordinal.toggled.connect(self._kind_changed)
        self.mode.currentIndexChanged.connect(self._mode_changed)
        self.lo.valueChanged.connect(self._range_changed)
        self.hi.valueChanged.connect(self._range_changed)
        for edge in (self.start, self.stop, self.bin_width):
            edge.valueChanged.connect(self._bins_changed)
        self.edge_bins.toggled.connect(self._bins_kind_changed)
        self.bin_edges.editingFinished.connect(self._edges_edited)
        self.open_below.toggled.connect(lambda on: self._open_end_changed("open_below", on))
        self.open_above.toggled.connect(lambda on: self._open_end_changed("open_above", on))
        self.out_of_range.currentIndexChanged.connect(self._out_of_range_changed)
        self.missing.activated.connect(self._missing_changed)
        self.own_markers.toggled.connect(self._own_markers_toggled)
        self.markers.editingFinished.connect(self._markers_edited)
        document.attributesChanged.connect(self.refresh)
        document.privacyChanged.connect(self.refresh)
        self.set_column(None)

    # -- binding --------------------------------------------------------------------------------
    def set_column(self, column: str | None) -> None:
        self._column = column
        self.refresh()

    def _config(self) -> AttributeConfig | None:
        if self._column is None:
            return None
        try:
            return self._doc.config(self._column)
        except KeyError:
            return None

    def refresh(self) -> None:
        config = self._config()
        self.setEnabled(config is not None)
        if config is None:
            self.setTitle("Attribute (select one in the table)")
            self.private_banner.hide()
            self.issues.clear()
            return
        self.setTitle(f"Attribute {config.name!r}" + ("" if config.include else " (not included)"))
        blockers = [QSignalBlocker(w) for w in (self.ordinal, self.nominal, self.mode, self.lo, self.hi, self.start,
                                                 self.stop, self.bin_width, self.out_of_range, self.missing,
                                                 self.own_markers, self.equal_bins, self.edge_bins, self.open_below,
                                                 self.open_above)]
        self.ordinal.setChecked(config.kind == "ordinal")
        self.nominal.setChecked(config.kind == "nominal")
        self.pages.setCurrentIndex(0 if config.kind == "ordinal" else 1)
        self.mode.setCurrentIndex(self.mode.findData(config.mode))
        self.mode_pages.setCurrentIndex(self.mode.currentIndex())
        self.lo.setValue(int(config.lo))
        self.hi.setValue(int(config.hi))
        start, stop, width = config.bins
        self.start.setValue(float(start))
        self.stop.setValue(float(stop))
        self.bin_width.setValue(float(width))
        edges = config.bin_edges is not None
        self.equal_bins.setChecked(not edges)
        self.edge_bins.setChecked(edges)
        for widget in (self.start, self.stop, self.bin_width):
            widget.setEnabled(not edges)
        self.bin_edges.setEnabled(edges)
        # the edges the document holds (after an edit, an undo): what is typed is applied at once, or refused
        # with the reason shown and the document unchanged (it then stays, to be corrected)
        shown = ", ".join(map(_edge_text, config.bin_edges or ()))
        if self.bin_edges.text() != shown:
            self.bin_edges.setText(shown)
        self.open_below.setChecked(config.open_below)
        self.open_above.setChecked(config.open_above)
        self.bins_count.setText(config.bins_summary())
        if not self.values.hasFocus():
            # the box lists the values only in its own mode, and only as many as anyone edits by hand
            listed = config.values if config.mode == "values" else ()
            too_many = len(listed) > MAX_LISTED_VALUES
            self.values.setReadOnly(too_many)
            self.values.setPlainText("\n".join(map(str, listed[:MAX_LISTED_VALUES])) + ("\n..." if too_many else ""))
        self.out_of_range.setCurrentIndex(max(self.out_of_range.findData(config.out_of_range), 0))
        self._fill_missing(config)
        del blockers
        if config.hierarchy is not None:
            try:
                h = config.hierarchy.to_hierarchy()
                self.hierarchy_label.setText(
                    f"Hierarchy with <b>{h.size:,}</b> values, height <b>{h.height}</b>. "
                    "Edit its groups in the Hierarchies step."
                )
            except HierarchyError as exc:
                self.hierarchy_label.setText(f"The hierarchy has problems: {exc}")
        else:
            self.hierarchy_label.setText("No hierarchy yet.")
        self.private_banner.setVisible(config.domain_from_data)
        issues = [(state, text) for state, text in self._doc.attribute_issues(config) if "not private" not in text]
        if issues:
            colours = {"error": "#c62828", "warning": "#b26a00"}
            self.issues.setText(
                "<br>".join(f"<span style='color:{colours.get(s, 'gray')}'>&#9679;</span> {_html(t)}" for s, t in issues)
            )
        else:
            self.issues.clear()

    def _fill_missing(self, config: AttributeConfig) -> None:
        summary = self._doc.column_summary(config.column)
        own_list = config.missing_values is not None
        self.own_markers.setChecked(own_list)
        if not self.markers.hasFocus():
            self.markers.setText(", ".join(self._doc.missing_values_of(config)))
        self.markers.setEnabled(own_list)
        choice = self._doc.missing_choice(config)
        missing = summary.missing if summary is not None else 0
        show = bool(missing) or choice != "refuse"
        self.missing_label.setVisible(show)
        self.missing.setVisible(show)
        if not show:
            return
        counted = summary.missing_text() if summary is not None else "0"
        self.missing_label.setText(f"Missing ({counted}):")
        self.missing.clear()
        own = self._doc.own_missing_code(config)
        where = "after the last value" if config.kind == "ordinal" else "a leaf of its own in the hierarchy"
        options = [
            ("Not allowed (stop with an error)", "refuse", None),
            ("Drop those rows (the count report says how many)", "drop", None),
            (f"A value of their own: {own!r}, {where}", "own", own),
        ]
        try:
            labels = config.to_attribute().labels
        except PriveletError:
            labels = ()
        options += [(f"Count as {label!r}", "value", label) for label in labels[:2000] if not (choice == "own" and label == own)]
        for text, key, value in options:
            self.missing.addItem(text, key)
            self.missing.setItemData(self.missing.count() - 1, value, _VALUE_ROLE)
        self.missing.setCurrentIndex(self.missing_index(choice, config.missing if choice in ("own", "value") else None))

    def missing_index(self, choice: str, value: str | None = None) -> int:
        """The row of the Missing drop-down that means ``choice`` (with ``value``), or 0."""
        for i in range(self.missing.count()):
            if self.missing.itemData(i) == choice and (value is None or self.missing.itemData(i, _VALUE_ROLE) == value):
                return i
        return 0

    # -- edits ---------------------------------------------------------------------------------
    def _kind_changed(self, ordinal: bool) -> None:
        config = self._config()
        if config is None:
            return
        kind = "ordinal" if ordinal else "nominal"
        self._doc.set_attribute(config.column, f"Make {config.name} {kind}", kind=kind)

    def _mode_changed(self) -> None:
        config = self._config()
        if config is None:
            return
        mode = self.mode.currentData()
        changes: dict[str, Any] = {"mode": mode}
        summary = self._doc.column_summary(config.column)
        if mode == "values" and not config.values and summary is not None and summary.values:
            changes["values"] = summary.values
        self._doc.set_attribute(config.column, f"{config.name}: domain as {self.mode.currentText().lower()}", **changes)

    def _range_changed(self) -> None:
        config = self._config()
        if config is not None:
            self._doc.set_attribute(config.column, f"{config.name}: range {self.lo.value()}..{self.hi.value()}",
                                    merge="range", lo=self.lo.value(), hi=self.hi.value())

    def _bins_changed(self) -> None:
        config = self._config()
        if config is not None:
            bins = (self.start.value(), self.stop.value(), self.bin_width.value())
            self._doc.set_attribute(config.column, f"{config.name}: bins", merge="bins", bins=bins)

    def _bins_kind_changed(self, edges: bool) -> None:
        config = self._config()
        if config is None:
            return
        if edges:
            self._doc.use_bin_edges(config.column)
        else:
            self._doc.set_bin_edges(config.column, None)

    def _edges_edited(self) -> None:
        config = self._config()
        if config is None or config.bin_edges is None:
            return
        try:
            self._doc.set_bin_edges(config.column, parse_bin_edges(self.bin_edges.text()))
        except PriveletError as exc:
            self.issues.setText(f"<span style='color:#c62828'>&#9679;</span> {_html(str(exc))}")

    def _open_end_changed(self, end: str, on: bool) -> None:
        config = self._config()
        if config is not None:
            where = "below" if end == "open_below" else "above"
            change: dict[str, Any] = {end: on}
            self._doc.set_attribute(config.column, f"{config.name}: bins {'open' if on else 'closed'} {where}", **change)

    def _apply_values(self) -> None:
        config = self._config()
        if config is None:
            return
        values = tuple(line.strip() for line in self.values.toPlainText().splitlines() if line.strip())
        self._doc.set_attribute(config.column, f"{config.name}: {len(values)} values", values=values)
        self.values.clearFocus()
        self.refresh()

    def _out_of_range_changed(self) -> None:
        config = self._config()
        if config is not None:
            self._doc.set_attribute(config.column, f"{config.name}: out of range -> {self.out_of_range.currentData()}",
                                    out_of_range=self.out_of_range.currentData())

    def _missing_changed(self) -> None:
        config = self._config()
        if config is None or not self.missing.count():
            return
        index = self.missing.currentIndex()
        self._doc.set_missing(config.column, self.missing.itemData(index), self.missing.itemData(index, _VALUE_ROLE))

    def _own_markers_toggled(self, own: bool) -> None:
        config = self._config()
        if config is not None:
            # An own list starts from the table's, which the custodian then edits.
            self._doc.set_missing_values(config.column, self._doc.table_missing_values() if own else None)

    def _markers_edited(self) -> None:
        config = self._config()
        if config is None or config.missing_values is None:
            return
        try:
            values = pio.parse_missing_values(self.markers.text())
        except PriveletError as exc:
            self.issues.setText(f"<span style='color:#c62828'>&#9679;</span> {_html(str(exc))}")
            return
        self._doc.set_missing_values(config.column, values)

    def _confirm_public(self) -> None:
        config = self._config()
        if config is not None:
            self._doc.confirm_domain_public(config.column)

    def _reset_flat(self) -> None:
        config = self._config()
        if config is None or config.hierarchy is None:
            return
        leaves = config.hierarchy.leaves()
        try:
            config.hierarchy.replace(Hierarchy.flat(list(leaves), root=config.hierarchy.root.label), "Flat hierarchy")
        except HierarchyError as exc:
            self.issues.setText(_html(str(exc)))


def _edge_text(edge: float) -> str:
    """An edge as people type it: ``10000``, not ``10000.0``; other numbers exactly."""
    return str(int(edge)) if edge.is_integer() and abs(edge) < 2.0**53 else repr(edge)


def _html(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


class AttributesPanel(QWidget):
    editHierarchyRequested = Signal(str)
    importSchemaRequested = Signal()
    exportSchemaRequested = Signal()

    def __init__(self, document: Document, parent: QWidget | None = None):
        super().__init__(parent)
        self._doc = document
        layout = QVBoxLayout(self)
        layout.setSpacing(10)
        layout.addWidget(
            StepHeader(
                2,
                "Attributes",
                "Choose the columns to release and give each a public domain: the values it can take, known "
                "without looking at the data (a code list, an age range). Ordinal attributes have ordered values; "
                "nominal ones are grouped by a hierarchy.",
            )
        )
        tools = QHBoxLayout()
        self.select_all = QPushButton("Include all")
        self.select_all.clicked.connect(lambda: self._include_all(True))
        self.select_none = QPushButton("Include none")
        self.select_none.clicked.connect(lambda: self._include_all(False))
        self.import_schema = QPushButton("Import schema...")
        self.import_schema.setToolTip("Take every attribute's domain from a schema file (the privelet command's JSON)")
        self.import_schema.clicked.connect(self.importSchemaRequested)
        self.export_schema = QPushButton("Export schema...")
        self.export_schema.setToolTip("Write the included attributes as a schema file for the privelet command")
        self.export_schema.clicked.connect(self.exportSchemaRequested)
        for button in (self.select_all, self.select_none):
            tools.addWidget(button)
        tools.addStretch(1)
        for button in (self.import_schema, self.export_schema):
            tools.addWidget(button)
        layout.addLayout(tools)
        self.size_label = QLabel()
        self.size_label.setWordWrap(True)
        layout.addWidget(self.size_label)
        self.banner = Banner("warning")
        # The banner comes and goes as domains become public: it keeps its room (two lines at
        # most), so that the table below never moves under the cursor.
        self.banner.setSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Fixed)
        policy = self.banner.sizePolicy()
        policy.setRetainSizeWhenHidden(True)
        self.banner.setSizePolicy(policy)
        self.banner.hide()
        layout.addWidget(self.banner)

        splitter = QSplitter(Qt.Orientation.Vertical)
        self.model = AttributesModel(document, self)
        self.table = QTableView()
        self.table.setModel(self.model)
        self.table.setAlternatingRowColors(True)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.table.setEditTriggers(
            QAbstractItemView.EditTrigger.DoubleClicked
            | QAbstractItemView.EditTrigger.SelectedClicked
            | QAbstractItemView.EditTrigger.EditKeyPressed
        )
        self.table.setItemDelegateForColumn(AttributesModel.TYPE, _TypeDelegate(self.table))
        self.table.verticalHeader().hide()
        self.table.verticalHeader().setDefaultSectionSize(self.fontMetrics().height() + 10)
        header = self.table.horizontalHeader()
        header.setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        header.setSectionResizeMode(AttributesModel.DOMAIN, QHeaderView.ResizeMode.Stretch)
        splitter.addWidget(self.table)
        self.editor = AttributeEditor(document)
        self.editor.editHierarchyRequested.connect(self.editHierarchyRequested)
        splitter.addWidget(self.editor)
        splitter.setStretchFactor(0, 1)
        splitter.setStretchFactor(1, 0)
        splitter.setChildrenCollapsible(False)
        layout.addWidget(splitter, 1)

        self.table.selectionModel().currentRowChanged.connect(self._current_changed)
        self.model.modelReset.connect(self._after_reset)
        document.stateChanged.connect(self.refresh)
        self.refresh()

    def _after_reset(self) -> None:
        if self.model.rowCount():
            self.table.selectRow(0)
        else:
            self.editor.set_column(None)

    def _current_changed(self, current: QModelIndex, _previous: QModelIndex) -> None:
        self.editor.set_column(self.model.config(current.row()).column if current.isValid() else None)

    def select(self, column: str) -> None:
        for row, config in enumerate(self._doc.configs):
            if config.column == column:
                self.table.selectRow(row)
                return

    def refresh(self) -> None:
        included = self._doc.included()
        schema = self._doc.schema()
        if not self._doc.configs:
            self.size_label.setText("Open a table first.")
        elif schema is None:
            self.size_label.setText(f"{len(included)} of {len(self._doc.configs)} columns included.")
        else:
            cells = schema.size
            shape = " x ".join(f"{n:,}" for n in schema.shape)
            too_big = cells > MAX_CELLS
            self.size_label.setText(
                f"{len(included)} of {len(self._doc.configs)} columns included. Frequency matrix: {shape} = "
                f"<b>{cells:,}</b> cells ({fmt_bytes(cells * 8)} in memory)"
                + (" <span style='color:#c62828'>too large: exclude attributes or coarsen domains</span>" if too_big else "")
            )
        derived = self._doc.domains_from_data()
        if derived:
            self.banner.set_text("<b>Not private:</b> " + html.escape(self._doc.domains_warning()))
            self.banner.setToolTip("Taken from the data: " + ", ".join(derived))
        self.banner.setVisible(bool(derived))
        self.banner.setFixedHeight(self._banner_height())
        self.select_all.setEnabled(any(not c.include for c in self._doc.configs))
        self.select_none.setEnabled(bool(included))
        self.export_schema.setEnabled(schema is not None)
        self.import_schema.setEnabled(bool(self._doc.configs))

    def _banner_height(self) -> int:
        """Room for two lines of the banner's text: the same whatever it says."""
        return 2 * self.fontMetrics().lineSpacing() + 22

    def _include_all(self, include: bool) -> None:
        self._doc.include_every_column(include)
