"""Step 4, Privacy: epsilon, the neighbouring notion, S_A, and live noise bounds.

The bounds are the engine's (paper_bound, VarianceModel.worst_case). The exact
variances need each attribute's factors once per schema (up to ~50 ms for big domains):
that first computation runs in a worker (stale results dropped by generation);
every later update is a few multiplications on the GUI thread.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from PySide6.QtCore import QSignalBlocker, Qt, Signal
from PySide6.QtGui import QFont
from PySide6.QtWidgets import (
    QAbstractItemView,
    QButtonGroup,
    QCheckBox,
    QDoubleSpinBox,
    QGridLayout,
    QGroupBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QPushButton,
    QRadioButton,
    QScrollArea,
    QSizePolicy,
    QSlider,
    QTableWidget,
    QTableWidgetItem,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from ...engine import (
    MECHANISM_NAMES,
    Z95,
    QueryBatch,
    Schema,
    epsilon_for_variance,
    expected_errors,
    random_workload,
    variance_model,
)
from ...qt import icons
from ...qt.plots import AttributeFactorPlot, ErrorByCoveragePlot
from ...qt.widgets import StepHeader, fmt_count, fmt_number
from ..document import Document
from ..tasks import TaskService

__all__ = ["EPSILON_MAX", "EPSILON_MIN", "Z95", "PrivacyPanel", "epsilon_to_slider", "slider_to_epsilon"]

#: Random queries behind the expected-error preview (enough for smooth quintile averages).
PREVIEW_QUERIES = 2000
EPSILON_MIN = 0.01
EPSILON_MAX = 10.0
SLIDER_STEPS = 1000

MECHANISMS = tuple(
    (key, MECHANISM_NAMES[key], tip)
    for key, tip in (
        ("privelet+", "transform every attribute except those in S_A"),
        ("privelet", "transform every attribute (S_A empty)"),
        ("basic", "noise on every cell, no transform (S_A = all)"),
    )
)


def slider_to_epsilon(position: int) -> float:
    """Logarithmic slider: 0 -> 0.01, SLIDER_STEPS -> 10."""
    lo, hi = math.log10(EPSILON_MIN), math.log10(EPSILON_MAX)
    return 10 ** (lo + (hi - lo) * position / SLIDER_STEPS)


def epsilon_to_slider(epsilon: float) -> int:
    lo, hi = math.log10(EPSILON_MIN), math.log10(EPSILON_MAX)
    value = (math.log10(min(max(epsilon, EPSILON_MIN), EPSILON_MAX)) - lo) / (hi - lo)
    return round(value * SLIDER_STEPS)


def round_up(x: float, decimals: int = 4) -> float:
    factor = 10**decimals
    return math.ceil(x * factor - 1e-9) / factor


class PrivacyPanel(QWidget):
    """Choose epsilon and S_A and see what they mean for accuracy, before any release."""

    boundsUpdated = Signal()  # after the table of bounds was refreshed (tests wait on it)

    def __init__(self, document: Document, tasks: TaskService, parent: QWidget | None = None):
        super().__init__(parent)
        self._doc = document
        self.runner = tasks.lane("variance factors")  # the first factor computation of a schema
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
                "Choose the privacy budget epsilon and which attributes to leave untransformed (S_A). The bounds "
                "below depend only on these choices and the domains, never on the data: looking at them costs "
                "no privacy.",
            )
        )
        columns = QHBoxLayout()
        columns.setSpacing(16)
        layout.addLayout(columns, 1)
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
        self.spin = QDoubleSpinBox()
        self.spin.setDecimals(4)
        self.spin.setRange(0.0001, 100.0)
        self.spin.setStepType(QDoubleSpinBox.StepType.AdaptiveDecimalStepType)
        self.spin.setAccessibleName("Epsilon")
        self.spin.setPrefix("ε = ")
        eps_layout.addWidget(QLabel("more private"), 0, 0)
        eps_layout.addWidget(self.slider, 0, 1)
        eps_layout.addWidget(QLabel("more accurate"), 0, 2)
        eps_layout.addWidget(self.spin, 0, 3)
        ticks = QHBoxLayout()
        for text in ("0.01", "0.1", "1", "10"):
            label = QLabel(text)
            label.setForegroundRole(label.foregroundRole())
            ticks.addWidget(label)
            ticks.addStretch(1)
        ticks.takeAt(ticks.count() - 1)
        eps_layout.addLayout(ticks, 1, 1)
        hint = QLabel("A smaller epsilon means stronger privacy and more noise. Every release spends its epsilon.")
        hint.setWordWrap(True)
        eps_layout.addWidget(hint, 2, 0, 1, 4)
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

        # -- S_A
        sa_box = QGroupBox("S_A: attributes released without a transform")
        sa_layout = QVBoxLayout(sa_box)
        sa_hint = QLabel(
            "Small domains are often better left untransformed. Recommended attributes (marked ✓, in bold) "
            "never make the paper's bound worse: |A| ≤ P(A)² H(A)."
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
        self.table = QTableWidget(3, 4)
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

        # -- expected error of every query size (data-independent: exact variances)
        preview_box = QGroupBox("Expected error by query size (from the domains only: costs no privacy)")
        preview_layout = QVBoxLayout(preview_box)
        self.preview_tabs = QTabWidget()
        self.expected_plot = ErrorByCoveragePlot("Expected square error per coverage quintile (paper's random workload)")
        self.factor_plot = AttributeFactorPlot()
        self.preview_tabs.addTab(self.expected_plot, "By query coverage")
        self.preview_tabs.addTab(self.factor_plot, "Per attribute")
        self.preview_tabs.setMinimumHeight(self.fontMetrics().height() * 22)
        preview_layout.addWidget(self.preview_tabs)
        layout.addWidget(preview_box)
        self._workloads: dict[Schema, QueryBatch] = {}
        self.target_epsilon: float | None = None
        self._target_set_by_user = False
        self._target_schema: Schema | None = None

        self.slider.valueChanged.connect(self._slider_moved)
        self.spin.valueChanged.connect(self._spin_changed)
        self.replace.toggled.connect(self._neighbours_changed)
        self.mech_group.buttonToggled.connect(self._mechanism_changed)
        self.target.valueChanged.connect(self._target_edited)
        document.attributesChanged.connect(self.refresh)
        document.privacyChanged.connect(self.refresh)
        document.tableChanged.connect(self.refresh)
        self.refresh()

    # -- from the document ---------------------------------------------------------------------
    def refresh(self) -> None:
        doc = self._doc
        blockers = [QSignalBlocker(w) for w in (self.slider, self.spin, self.replace, self.add_remove, self.mech_group)]
        self.spin.setValue(doc.epsilon)
        self.slider.setValue(epsilon_to_slider(doc.epsilon))
        self.replace.setChecked(doc.neighbours == "replace")
        self.add_remove.setChecked(doc.neighbours == "add-remove")
        for key, button in self.mech_buttons.items():
            button.setChecked(doc.mechanism == key)
        del blockers
        self._refresh_sa()
        self.refresh_bounds()

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
        self.use_recommended.setEnabled(bool(names) and enabled and self._doc.sa_rule != "recommended")
        self.clear_sa.setEnabled(bool(names) and enabled)

    # -- bounds ---------------------------------------------------------------------------------------
    def refresh_bounds(self) -> None:
        """Recompute the table of bounds (instant once the schema's factors are known)."""
        schema = self._doc.schema()
        specs = {key: self._doc.release_spec(mechanism=key) for key, _title, _tip in MECHANISMS}
        self.bounds = {}
        if schema is None or any(spec is None for spec in specs.values()):
            for row in range(3):
                for col in range(4):
                    self.table.setItem(row, col, QTableWidgetItem(MECHANISMS[row][1] if col == 0 else "—"))
            self.bounds_note.setText("Define the attributes first (Attributes step).")
            self._fit_table()
            self._update_target()
            self.boundsUpdated.emit()
            return
        model = variance_model(schema)
        ready = model.ready
        if not ready and self._pending != schema:
            self._pending = schema
            self.runner.run(lambda progress, cancel, m=model: m.prepare(), "variance factors",
                            on_success=lambda _model: self.refresh_bounds(), on_failure=self._factors_failed)
        for row, (key, title, _tip) in enumerate(MECHANISMS):
            spec = specs[key]
            assert spec is not None
            entry: dict[str, Any] = {"sa": spec.effective_sa, "paper": spec.paper_bound()}
            if ready:
                entry["exact"] = spec.worst_case_variance()
                entry["margin"] = spec.margin95(entry["exact"])
            self.bounds[key] = entry
            cells = [
                title,
                fmt_number(entry["paper"]),
                fmt_number(entry["exact"]) if ready else "computing...",
                ("± " + fmt_count(entry["margin"])) if ready else "...",
            ]
            selected = key == self._doc.mechanism
            for col, text in enumerate(cells):
                item = QTableWidgetItem(text)
                if col:
                    item.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
                if selected:
                    font = QFont(item.font())
                    font.setBold(True)
                    item.setFont(font)
                if col == 0:
                    item.setIcon(icons.icon("done" if selected else "todo"))
                    item.setToolTip(_tip + (f"; S_A = {{{', '.join(spec.effective_sa)}}}" if key == "privelet+" else ""))
                self.table.setItem(row, col, item)
        plus_sa = self.bounds["privelet+"]["sa"]
        self.bounds_note.setText(
            f"Privelet+ with S_A = {{{', '.join(plus_sa)}}}; m = {schema.size:,} cells. Variances are those of the "
            "noise on one range-count query; the error is ± 1.96 standard deviations. The paper's bound "
            "(Theorem 3) is an upper bound; the exact worst case follows from the wavelet weights."
        )
        if not self._target_set_by_user and ready and self._target_schema != schema:
            # A starting point for a new schema: half the current worst-case error.
            self._target_schema = schema
            margin = self.bounds[self._doc.mechanism]["margin"]
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
        """Basic against Privelet+ (current epsilon and S_A) on the paper's random workload."""
        workload = self._workloads.get(schema)
        if workload is None:
            # A fixed seed: the preview depends on the domains only, and redraws identically.
            workload = self._workloads[schema] = random_workload(schema, PREVIEW_QUERIES, np.random.default_rng(0))
        rows = expected_errors(schema, self._doc.epsilon, sa, workload, neighbours=self._doc.neighbours)
        self.expected_plot.set_rows(rows, epsilon=self._doc.epsilon)
        self.factor_plot.set_factors(variance_model(schema).factors, sa)

    def _fit_table(self) -> None:
        height = self.table.horizontalHeader().sizeHint().height() + 2 * self.table.frameWidth()
        height += sum(self.table.rowHeight(r) for r in range(self.table.rowCount()))
        self.table.setFixedHeight(height)

    def _factors_failed(self, error: object) -> None:
        self._pending = None
        self.bounds_note.setText(f"Cannot compute the exact variances: {error}")

    def displayed(self, mechanism: str, column: int) -> str:
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
        target_variance = (self.target.value() / Z95) ** 2
        epsilon = round_up(epsilon_for_variance(at_one, target_variance))
        self.target_epsilon = epsilon
        name = spec.name
        achieved = spec.replace(epsilon=epsilon).worst_case_margin95()
        text = (
            f"With {name}, the smallest epsilon giving ± {fmt_count(self.target.value())} is "
            f"<b>ε = {epsilon:g}</b> (± {fmt_count(achieved)})."
        )
        if epsilon > EPSILON_MAX:
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

    def _spin_changed(self, value: float) -> None:
        if value > 0:
            self._doc.set_epsilon(value)

    def _neighbours_changed(self) -> None:
        value = "replace" if self.replace.isChecked() else "add-remove"
        self._doc.set_privacy(f"Neighbours: {value}", neighbours=value)

    def _mechanism_changed(self, button: QRadioButton, checked: bool) -> None:
        if not checked:
            return
        for key, candidate in self.mech_buttons.items():
            if candidate is button:
                self._doc.set_privacy(f"Mechanism: {key}", mechanism=key)

    def _sa_toggled(self) -> None:
        self._doc.set_sa([name for name, box in self.sa_boxes.items() if box.isChecked()])

    def _use_recommended(self) -> None:
        self._doc.use_recommended_sa()
