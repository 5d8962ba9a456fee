"""After a release: its error measured on the true data (custodian only) and its noisy marginals.

The measured views come from :func:`privelet_gui.engine.measure_release`, computed in
the release task while the true matrix still exists, on the release as published (shifted
to the public number of rows when it was); they carry the true-data banner,
nothing from them is exported with the release, and exporting one of them asks first. The heat map shows the noisy
release only. Sums over big releases run in a task, never on the GUI thread.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from PySide6.QtWidgets import QComboBox, QHBoxLayout, QLabel, QSplitter, QTabWidget, QVBoxLayout, QWidget

from ...engine import ErrorPreview, Release, marginal, mechanism_name
from ...qt.plots import (
    COVERAGE_GROUPS_TIP,
    ErrorByCoveragePlot,
    HeatmapPlot,
    MarginalComparisonPlot,
    TrueDataQuestion,
)
from ..tasks import TaskService

__all__ = ["ErrorPreviewPanel", "total_text"]

# Releases up to this many cells are summed on the GUI thread (a few milliseconds).
_INSTANT_CELLS = 4_000_000

# Why a release file shows no measured errors.
_FILE_UNMEASURED = "a release file holds noisy counts only, and measuring needs the true table"


def total_text(release: Release) -> str:
    """Whether the release's total is the public number of rows, for people."""
    if release.public_total:
        return ("Its total equals the public number of rows (every cell shifted by "
                f"{release.total_shift:+.4g}; the raw release is the noisy counts minus that shift).")
    if release.neighbours != "replace":
        return "Not shifted to a total: under add/remove neighbours the number of rows is private."
    return "Not shifted to a total: the number of rows counted was private (rows may have been dropped)."


class ErrorPreviewPanel(QWidget):
    """Figure 8 of the paper on the custodian's data, true vs noisy marginals, a noisy 2-D marginal."""

    def __init__(self, tasks: TaskService, parent: QWidget | None = None):
        super().__init__(parent)
        self.release: Release | None = None
        self.preview: ErrorPreview | None = None
        # One lane per view: a new sum for one view must not cancel the other's.
        self.runners = {view: tasks.lane(f"preview {view}") for view in ("marginal", "heatmap")}

        layout = QVBoxLayout(self)
        self.notice = QLabel("Run a release (or open a release file) to see its error here.")
        self.notice.setWordWrap(True)
        layout.addWidget(self.notice)
        self.tabs = QTabWidget()
        layout.addWidget(self.tabs, 1)

        errors = QSplitter()
        # Grouped as the Privacy step's chart of expected error groups the same workload: they line up.
        self.square = ErrorByCoveragePlot("Measured square error by query coverage", uses_true_data=True,
                                          group_column="coverage_group")
        self.relative = ErrorByCoveragePlot(
            "Measured relative error by query coverage (sanity bound 0.1% of n)", error="relative_error",
            uses_true_data=True, group_column="coverage_group",
        )
        for plot in (self.square, self.relative):
            plot.setToolTip(COVERAGE_GROUPS_TIP)
        errors.addWidget(self.square)
        errors.addWidget(self.relative)
        self.tabs.addTab(errors, "Error by query size")

        marginals = QWidget()
        marginal_layout = QVBoxLayout(marginals)
        chooser = QHBoxLayout()
        chooser.addWidget(QLabel("Attribute:"))
        self.marginal_attribute = QComboBox()
        self.marginal_attribute.currentIndexChanged.connect(self._show_marginal)
        chooser.addWidget(self.marginal_attribute)
        chooser.addStretch(1)
        marginal_layout.addLayout(chooser)
        self.marginal = MarginalComparisonPlot()
        marginal_layout.addWidget(self.marginal, 1)
        self.tabs.addTab(marginals, "Marginals")

        heat = QWidget()
        heat_layout = QVBoxLayout(heat)
        pair = QHBoxLayout()
        self.heat_rows = QComboBox()
        self.heat_columns = QComboBox()
        pair.addWidget(QLabel("Rows:"))
        pair.addWidget(self.heat_rows)
        pair.addWidget(QLabel("Columns:"))
        pair.addWidget(self.heat_columns)
        pair.addStretch(1)
        heat_layout.addLayout(pair)
        self.heatmap = HeatmapPlot()
        heat_layout.addWidget(self.heatmap, 1)
        self.heat_rows.currentIndexChanged.connect(self._show_heatmap)
        self.heat_columns.currentIndexChanged.connect(self._show_heatmap)
        self.tabs.addTab(heat, "Noisy two-attribute marginal")
        self._set_enabled()

    def set_true_data_question(self, ask: TrueDataQuestion) -> None:
        """Who asks before a view that reads the true data is exported (the app's dialogs)."""
        for view in (self.square, self.relative, self.marginal):
            view.true_data_question = ask

    # -- data -------------------------------------------------------------------------------------
    def set_release(
        self, release: Release | None, preview: ErrorPreview | None, source: str = "", unmeasured_reason: str | None = None
    ) -> None:
        """Show ``release`` (and, when it was measured on the true data here, ``preview``; else
        ``unmeasured_reason`` says why not, by default that a file has no true data)."""
        for runner in self.runners.values():
            runner.cancel()
        # The same measurement again (the release took reworded labels): the custodian's tab
        # and attributes stay; a fresh one starts from the error by query size.
        fresh = preview is not self.preview
        boxes = (self.marginal_attribute, self.heat_rows, self.heat_columns)
        chosen = [box.currentText() for box in boxes]
        self.release, self.preview = release, preview
        names = list(release.schema.names) if release is not None and release.schema is not None else []
        for box in boxes:
            box.blockSignals(True)
            box.clear()
            box.addItems(names)
            box.blockSignals(False)
        if len(names) > 1:
            self.heat_columns.setCurrentIndex(1)
        if not fresh and all(name in names for name in chosen):
            for box, name in zip(boxes, chosen, strict=True):
                box.blockSignals(True)
                box.setCurrentText(name)
                box.blockSignals(False)
        if release is None:
            self.notice.setText("Run a release (or open a release file) to see its error here.")
        else:
            what = f"{source}: " if source else ""
            if preview is None:
                measured = f"no measured errors: {unmeasured_reason or _FILE_UNMEASURED}"
            elif preview.workload.endswith(f"({preview.queries:,} queries)"):  # its name says how many
                measured = f"errors of the release as published, measured on the {preview.workload}"
            else:
                measured = (f"errors of the release as published, measured on {preview.queries:,} queries of "
                            f"{preview.workload}")
            self.notice.setText(
                f"{what}{mechanism_name(release.mechanism)} at ε = {release.epsilon:g}; {measured}. "
                + total_text(release)
            )
        if preview is not None:
            self.square.set_rows(preview.by_coverage, epsilon=preview.epsilon)
            self.relative.set_rows(preview.by_coverage, epsilon=preview.epsilon)
        else:
            self.square.set_rows({})
            self.relative.set_rows({})
        self._set_enabled()
        if preview is not None and fresh:
            self.tabs.setCurrentIndex(0)  # a fresh measurement: show it first
        self._show_marginal()
        self._show_heatmap()

    def _set_enabled(self) -> None:
        measured = self.preview is not None
        self.tabs.setTabEnabled(0, measured)
        self.tabs.setTabEnabled(1, measured)
        self.tabs.setTabEnabled(2, self.release is not None and self.release.schema is not None)
        if not self.tabs.isTabEnabled(self.tabs.currentIndex()):
            self.tabs.setCurrentIndex(2)

    def _show_marginal(self) -> None:
        name = self.marginal_attribute.currentText()
        if self.release is None or self.preview is None or not name or self.release.schema is None:
            return
        schema = self.release.schema
        axis = schema.index(name)
        true = self.preview.true_marginals[name]
        noisy_matrix = self.release.noisy
        self._compute(
            "marginal",
            lambda: marginal(noisy_matrix, [axis]),
            lambda noisy: self.marginal.set_marginals(name, schema[name].labels, true, noisy, schema[name].display_labels),
        )

    def _show_heatmap(self) -> None:
        release = self.release
        rows, columns = self.heat_rows.currentText(), self.heat_columns.currentText()
        if release is None or release.schema is None or not rows or not columns or rows == columns:
            return
        schema = release.schema
        axes = [schema.index(rows), schema.index(columns)]
        self._compute(
            "heatmap",
            lambda: marginal(release.noisy, axes),
            lambda values: self.heatmap.set_marginal(
                (rows, schema[rows].labels), (columns, schema[columns].labels), values,
                (schema[rows].display_labels, schema[columns].display_labels),
            ),
        )

    def _compute(self, view: str, work: Callable[[], np.ndarray], show: Callable[[np.ndarray], None]) -> None:
        """Run ``work`` here if the release is small, else in the view's task runner; then ``show``."""
        if self.release is not None and self.release.noisy.size <= _INSTANT_CELLS:
            show(work())
            return
        # Only the latest request of a view is shown (its lane drops stale results).
        self.runners[view].run(lambda _progress, _cancel: work(), f"summing the release ({view})", on_success=show)
