"""Step 5, Release: run Privelet in the worker, follow its progress, see and export the result.

Tabs: "Run and export"; "Error preview" (the release's error on the true data, custodian
only, and its noisy marginals); "Query workbench" (range queries on the noisy release).
A release file opened from disk shows in the last two, with a bar to export it (a seeded
one only after the custodian confirms it; the main window asks).

Before a release, the privacy ledger's line says what the table has spent (looked up on
this panel's "ledger" lane when a table is read: fingerprinting reads the whole file);
after it, that the release was recorded and what the table has spent now. What counting
dropped or clamped is shown for the custodian's eyes only, in the neighbouring notion's
terms (:meth:`~privelet_gui.engine.CountReport.custodian_summary`: no row numbers under
add/remove), and never exported.

Everything shown describes the release as published: under replace-one-tuple neighbours
(every row counted) it is shifted so that its total is the public number of rows; bounds
that are of the raw release (before that shift) say so. CSV and Parquet exports offer the
count kinds of :func:`~privelet_gui.io.export_release` (non-negative and/or whole counts,
biased, in a column named after them); a release file always keeps the release's own.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial
from pathlib import Path

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QFormLayout,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QProgressBar,
    QPushButton,
    QScrollArea,
    QSizePolicy,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from ...engine import (
    NEIGHBOUR_NAMES,
    Z95,
    ErrorPreview,
    PrefixSums,
    PriveletError,
    Release,
    ReleaseSpec,
    mechanism_name,
)
from ...engine.descriptions import describe_measurements
from ...io.project import BEST_STRATEGY
from ...io.releases import STANDARD_ERROR_COLUMN, cell_standard_error_problem, count_column, standard_error_fits
from ...qt import icons
from ...qt.widgets import Banner, StepHeader, fmt_count, fmt_number
from ...workspace.jobs import MEASURE_MAX_CELLS, ReleaseJob, ReleaseOutcome, check_table_budget
from ..document import Document
from ..tasks import TaskService
from ..workbench import INSTANT_PREFIX_CELLS, QueryWorkbench
from .preview_panel import ErrorPreviewPanel, total_text

__all__ = ["COUNT_TEXTS", "ReleasePanel", "post_processing_text"]

#: The count kinds of CSV and Parquet exports, for people, with what each does to the error.
COUNT_TEXTS = {
    "noisy": ("Noisy counts as released",
              "Unbiased: sums of cells keep the release's exact error. Counts may be negative or fractional: "
              "that is the noise."),
    "nonnegative": ("Non-negative counts, same total",
                    "Projected onto non-negative counts with the same total: better for small counts and "
                    "relative errors, but biased: big sums come out too low (the large counts pay for the small)."),
    "integer": ("Whole counts, same total",
                "Rounded to whole counts that keep the total: a little more error than the release's own counts."),
    "nonnegative-integer": ("Non-negative whole counts, same total",
                            "Non-negative and rounded, keeping the total: for users who need both; biased as the "
                            "non-negative counts are (big sums too low)."),
}

#: The standard error box's tip (a release whose cells have none says why instead).
_STANDARD_ERROR_TIP = (
    f"Add the column {STANDARD_ERROR_COLUMN}: the exact standard deviation of each cell's noise, worked out "
    "from epsilon, S_A, the mechanism and the domains alone (never from the data). For noisy counts only."
)


def post_processing_text(spec: ReleaseSpec) -> str:
    """What post-processing a release with these settings gets, for people."""
    if spec.uses_public_total:
        return ("shifted so that the total equals the public number of rows (under replace-one-record neighbours n "
                "is public: no privacy cost; the whole table's count is exact)")
    if spec.neighbours != "replace":
        return "none: under add/remove neighbours the number of rows is private"
    return "none: rows outside a domain may be dropped, so the number counted is private"



def _amber_note() -> QLabel:
    """A hidden, wrapping warning line, shown under a field when it has something to say."""
    note = QLabel()
    note.setWordWrap(True)
    note.setStyleSheet(f"color: {icons.AMBER};")
    note.hide()
    return note


def _stacked(*widgets: QWidget) -> QWidget:
    """``widgets`` one under the other, without margins (one row of a form)."""
    box = QWidget()
    layout = QVBoxLayout(box)
    layout.setContentsMargins(0, 0, 0, 0)
    for widget in widgets:
        layout.addWidget(widget)
    return box

class ReleasePanel(QWidget):
    runRequested = Signal()
    cancelRequested = Signal()
    exportRequested = Signal(str)  # "release", "csv" or "parquet"
    exportOpenedRequested = Signal(str)  # "csv" or "parquet": the release file opened from disk
    documentRequested = Signal(str)  # "report" (HTML) or "script" (redoes the release)

    def __init__(self, document: Document, tasks: TaskService, parent: QWidget | None = None):
        super().__init__(parent)
        self._doc = document
        self._running = False
        layout = QVBoxLayout(self)
        layout.setSpacing(10)
        layout.addWidget(
            StepHeader(
                5,
                "Release",
                "Count the table and add calibrated noise with the mechanism chosen in the Privacy step. Only the noisy table is kept and can be "
                "exported; the true counts are discarded as soon as the noise is added.",
            )
        )
        self.opened_bar = QWidget()
        opened = QHBoxLayout(self.opened_bar)
        opened.setContentsMargins(0, 0, 0, 0)
        self.opened_label = QLabel()
        self.opened_label.setWordWrap(True)
        opened.addWidget(self.opened_label, 1)
        self.export_opened_csv = QPushButton("Export CSV...")
        self.export_opened_parquet = QPushButton("Export Parquet...")
        self.export_opened_csv.clicked.connect(lambda: self.exportOpenedRequested.emit("csv"))
        self.export_opened_parquet.clicked.connect(lambda: self.exportOpenedRequested.emit("parquet"))
        opened.addWidget(self.export_opened_csv)
        opened.addWidget(self.export_opened_parquet)
        self.opened_bar.hide()
        layout.addWidget(self.opened_bar)
        self.opened_warning = Banner("warning")  # what the file's signature or flags say about trusting it
        self.opened_warning.hide()
        layout.addWidget(self.opened_warning)
        self.tabs = QTabWidget()
        self.tabs.setDocumentMode(True)
        layout.addWidget(self.tabs, 1)

        run_tab = QWidget()
        scroll = QScrollArea()
        scroll.setWidgetResizable(True)
        scroll.setFrameShape(QScrollArea.Shape.NoFrame)
        scroll.setWidget(run_tab)
        self.tabs.addTab(scroll, "Run and export")
        run = QVBoxLayout(run_tab)
        run.setSpacing(12)

        setup = QGroupBox("What will be released")
        self.setup_form = QFormLayout(setup)
        self.setup_form.setLabelAlignment(Qt.AlignmentFlag.AlignRight)
        self.setup_labels: dict[str, QLabel] = {}
        for key, title in (("table", "Table"), ("attributes", "Attributes"), ("domains", "Domains"), ("mechanism", "Mechanism"),
                           ("epsilon", "Epsilon"), ("ledger", "Privacy ledger"), ("bound", "Worst-case error"),
                           ("post", "Post-processing")):
            label = QLabel()
            label.setWordWrap(True)
            label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
            self.setup_labels[key] = label
            self.setup_form.addRow(f"{title}:", label)
        self.invalid = QComboBox()
        self.invalid.addItem("Stop with an error (recommended)", "error")
        self.invalid.addItem("Drop them and report how many", "drop")
        self.invalid.setToolTip("What to do with rows whose values are outside the declared domains")
        self.invalid.setSizePolicy(QSizePolicy.Policy.Fixed, QSizePolicy.Policy.Fixed)
        self.setup_form.addRow("Rows outside the domains:", self.invalid)
        self.dataset = QLineEdit()
        self.dataset.setPlaceholderText("optional: e.g. Hospital visits 2024")
        self.dataset.setToolTip(
            "The dataset this table belongs to, in your own words. The privacy ledger counts the releases of "
            "every file you give the same name (this year's file, a corrected copy, another format) as one "
            "table, so their epsilons add up.")
        self.dataset.editingFinished.connect(self._dataset_edited)
        self.dataset_note = _amber_note()  # a name the ledger refuses: why, under the field
        self.setup_form.addRow("Dataset:", _stacked(self.dataset, self.dataset_note))
        self.measure = QCheckBox("Measure the error on the true data (shown on this computer only)")
        self.measure.setToolTip(
            "After the release, answer the paper's random workload on the true table and on the release "
            f"(and on Basic for comparison): about doubles the time; tables up to {MEASURE_MAX_CELLS:,} cells. "
            "Never exported."
        )
        self.measure.setChecked(document.measure_error)
        self.measure.toggled.connect(self._measure_toggled)
        # ticked, yet not measured (the matrix is too large): why, under the box
        self.measure_note = _amber_note()
        self.setup_form.addRow("After the release:", _stacked(self.measure, self.measure_note))
        run.addWidget(setup)

        self.blockers = Banner("error")
        self.blockers.hide()
        run.addWidget(self.blockers)

        controls = QHBoxLayout()
        self.run_button = QPushButton("Run release")
        self.run_button.setDefault(True)
        self.run_button.setMinimumWidth(self.fontMetrics().horizontalAdvance("Run release") + 48)
        self.run_button.clicked.connect(self.runRequested)
        self.cancel_button = QPushButton("Cancel")
        self.cancel_button.setEnabled(False)
        self.cancel_button.clicked.connect(self.cancelRequested)
        controls.addWidget(self.run_button)
        controls.addWidget(self.cancel_button)
        self.progress = QProgressBar()
        self.progress.setRange(0, 1000)
        self.progress.setValue(0)
        self.progress.setFormat("Ready")
        self.progress.setTextVisible(True)
        controls.addWidget(self.progress, 1)
        run.addLayout(controls)
        self.stage = QLabel(" ")
        self.stage.setAccessibleName("Stage")
        run.addWidget(self.stage)

        self.result_box = QGroupBox("Last release")
        result_layout = QVBoxLayout(self.result_box)
        self.result_form = QFormLayout()
        self.result_form.setLabelAlignment(Qt.AlignmentFlag.AlignRight)
        self.result_labels: dict[str, QLabel] = {}
        for key, title in (
            ("mechanism", "Mechanism"),
            ("epsilon", "Epsilon"),
            ("sa", "S_A"),
            ("neighbours", "Neighbours"),
            ("sampler", "Noise sampler"),
            ("rho", "Generalized sensitivity ρ"),
            ("lambda", "Noise scale λ"),
            ("total", "Total"),
            ("paper", "Paper bound (variance)"),
            ("exact", "Exact worst-case variance"),
            ("margin", "Worst query, 95%"),
            ("rows", "Rows"),
            ("ledger", "Privacy ledger"),
            ("time", "Time taken"),
            ("shape", "Released table"),
        ):
            label = QLabel()
            label.setWordWrap(True)
            label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
            self.result_labels[key] = label
            self.result_form.addRow(f"{title}:", label)
        result_layout.addLayout(self.result_form)
        self.stale = Banner("info", "The settings changed since this release; run again to release with them.")
        self.stale.hide()
        result_layout.addWidget(self.stale)
        exports = QHBoxLayout()
        self.export_release = QPushButton("Save release file (.npz)...")
        self.export_csv = QPushButton("Export CSV...")
        self.export_parquet = QPushButton("Export Parquet...")
        self.export_release.clicked.connect(lambda: self.exportRequested.emit("release"))
        self.export_csv.clicked.connect(lambda: self.exportRequested.emit("csv"))
        self.export_parquet.clicked.connect(lambda: self.exportRequested.emit("parquet"))
        self.save_report = QPushButton("Save report...")
        self.save_report.setToolTip("One HTML page for a review board and the table's users: what was released, the "
                                    "guarantee, the expected error, the ledger's record (no true count)")
        self.save_script = QPushButton("Save script...")
        self.save_script.setToolTip("A shell script that makes this release again from the table: a NEW release, "
                                    "with fresh noise, that spends epsilon again")
        self.save_report.clicked.connect(lambda: self.documentRequested.emit("report"))
        self.save_script.clicked.connect(lambda: self.documentRequested.emit("script"))
        for button in self._result_buttons():
            exports.addWidget(button)
        exports.addStretch(1)
        result_layout.addLayout(exports)
        counts_row = QHBoxLayout()
        counts_row.addWidget(QLabel("Counts in CSV and Parquet:"))
        self.counts = QComboBox()
        for kind, (title, tip) in COUNT_TEXTS.items():
            self.counts.addItem(title, kind)
            self.counts.setItemData(self.counts.count() - 1, tip, Qt.ItemDataRole.ToolTipRole)
        self.counts.setSizePolicy(QSizePolicy.Policy.Fixed, QSizePolicy.Policy.Fixed)
        self.counts.currentIndexChanged.connect(self._counts_changed)
        counts_row.addWidget(self.counts)
        self.standard_errors = QCheckBox("With each cell's standard error")
        self.standard_errors.setToolTip(_STANDARD_ERROR_TIP)
        self._no_standard_error: tuple[Release, str | None] | None = None  # why the release held has none
        counts_row.addWidget(self.standard_errors)
        counts_row.addStretch(1)
        result_layout.addLayout(counts_row)
        self.counts_note = QLabel()
        self.counts_note.setWordWrap(True)
        result_layout.addWidget(self.counts_note)
        note = QLabel("Exports hold only noisy counts (long format: one row per cell). Files are written atomically. "
                      "Each export says how it was made (epsilon, mechanism, noise scale): a CSV file in a "
                      ".metadata.json file beside it, a Parquet file in its own metadata. "
                      "A release file (.npz) always keeps the release's own counts.")
        note.setWordWrap(True)
        result_layout.addWidget(note)
        self._counts_changed()
        run.addWidget(self.result_box)
        run.addStretch(1)

        self.preview = ErrorPreviewPanel(tasks)
        self.add_tab(self.preview, "Error preview")
        self.workbench = QueryWorkbench()
        self.add_tab(self.workbench, "Query workbench")
        self.prefix_runner = tasks.lane("prefix sums")  # prefix sums of big releases, for the workbench
        self.ledger_runner = tasks.lane("ledger")  # what the open table has spent
        self._shown: Release | None = None
        self._outcome_shown: ReleaseOutcome | None = None
        self.opened: tuple[Path, Release] | None = None  # a release file opened from disk, as shown

        self.invalid.currentIndexChanged.connect(self._invalid_changed)
        document.stateChanged.connect(self.refresh)
        document.releaseChanged.connect(self.refresh)
        document.tableChanged.connect(self.look_up_budget)
        document.privacyChanged.connect(self.look_up_budget)  # a dataset named: spent by other releases
        self.refresh()

    def add_tab(self, widget: QWidget, title: str) -> int:
        """Add a view of the release (e.g. the error preview of a later issue)."""
        return self.tabs.addTab(widget, title)

    # -- the privacy ledger -------------------------------------------------------------------------
    def look_up_budget(self) -> None:
        """Look up what the open table has spent (on the "ledger" lane), unless known."""
        doc = self._doc
        if not doc.needs_budget_lookup() or doc.table_path is None:
            return
        path, dataset = doc.table_path, doc.dataset
        self.ledger_runner.run(
            partial(check_table_budget, path, doc.epsilon, doc.neighbours, dataset=dataset), "privacy ledger",
            on_success=lambda check: doc.set_table_budget(path, check, dataset),
            on_failure=lambda error: doc.set_table_budget(path, str(error), dataset),
        )

    # -- state ------------------------------------------------------------------------------------
    def refresh(self) -> None:
        doc = self._doc
        if not self.dataset.hasFocus():
            self.dataset.setText(doc.dataset or "")
        index = self.invalid.findData(doc.invalid)
        self.invalid.blockSignals(True)
        self.invalid.setCurrentIndex(max(index, 0))
        self.invalid.blockSignals(False)
        schema = doc.schema()
        labels = self.setup_labels
        if doc.summary is not None:
            # under add/remove neighbours the number of rows is private: not shown beside a release
            rows = f" ({doc.summary.rows:,} rows)" if doc.neighbours == "replace" else ""
            labels["table"].setText(f"{doc.summary.path.name}{rows}")
        else:
            labels["table"].setText(str(doc.table_path.name) if doc.table_path else "none")
        if schema is not None:
            labels["attributes"].setText(
                ", ".join(f"{a.name} ({a.size:,})" for a in schema) + f" = {schema.size:,} cells"
            )
            sa = doc.effective_sa()
            same = ""
            if doc.mechanism == "privelet+" and len(sa) == len(schema):
                same = " (every attribute in S_A: this is Basic)"
            elif doc.mechanism == "privelet+" and not sa:
                same = " (S_A empty: this is Privelet)"
            if doc.mechanism == BEST_STRATEGY:
                spec = doc.release_spec()
                chosen = ("not chosen: its search was cancelled (Privacy step: Search again)"
                          if spec is None and doc.best_strategy_cancelled()
                          else "not chosen yet (Privacy step)" if spec is None else describe_measurements(spec))
                what = f"{doc.mechanism_text()} for the workload: {chosen}"
            else:
                what = f"{doc.mechanism_text()}, S_A = {{{', '.join(sa)}}}{same}"
            labels["mechanism"].setText(
                f"{what}; neighbours: {NEIGHBOUR_NAMES[doc.neighbours]}; {doc.sampler} noise sampler"
            )
        else:
            labels["attributes"].setText("—")
            labels["mechanism"].setText(doc.mechanism_text())
        labels["domains"].setText(doc.domains_text() or "—")
        labels["domains"].setStyleSheet(f"color: {icons.AMBER};" if doc.domains_from_data() else "")
        labels["epsilon"].setText(f"{doc.epsilon:g}")
        labels["ledger"].setText(doc.spending_text() or "—")
        labels["bound"].setText(self._bound_text())
        spec = doc.release_spec(mechanism="privelet+")  # the shift to the public total is the same for every mechanism
        labels["post"].setText(post_processing_text(spec) if spec is not None else "—")
        try:
            job: ReleaseJob | None = doc.release_job()
            blocked = None
        except PriveletError as exc:
            job, blocked = None, str(exc)
        skipped = job.unmeasured_reason if job is not None and job.measure_error else None
        self.measure_note.setText(f"Not for this release: {skipped}." if skipped else "")
        self.measure_note.setVisible(bool(skipped))
        self.blockers.set_text(f"Not ready: {blocked}" if blocked else "")
        self.blockers.setVisible(bool(blocked))
        self.run_button.setEnabled(blocked is None and not self._running)
        self._show_outcome(doc.outcome)

    def _measure_toggled(self, checked: bool) -> None:
        self._doc.measure_error = checked
        self.refresh()  # the note under the box follows it

    def refresh_bound(self) -> None:
        """Show the worst case again: its factors are computed in the background (the
        Privacy step starts them), after the summary was last drawn."""
        self.setup_labels["bound"].setText(self._bound_text())

    def _bound_text(self) -> str:
        spec = self._doc.release_spec()
        if spec is None:
            return "once the best strategy is chosen (Privacy step)" if self._doc.best_strategy_problem() else "—"
        if not spec.model.ready:
            return "computing..."
        variance = spec.worst_case_variance()
        raw = " (of the raw release, before the shift to the public total)" if spec.uses_public_total else ""
        return f"variance {fmt_number(variance)}, about ± {fmt_count(spec.margin95(variance))} at 95%{raw}"

    def show_opened_release(self, path: Path, release: Release, warnings: Sequence[str] = ()) -> None:
        """Show a release file opened from disk, with the bar that exports it and the
        ``warnings`` its reader gave (its signature, its flags)."""
        self.opened = (path, release)
        self.opened_warning.set_text("\n\n".join(warnings))
        self.opened_warning.setVisible(bool(warnings))
        seeded = ": a SEEDED TEST RELEASE, not private (exporting it asks first)" if release.seeded else ""
        self.opened_label.setText(
            f"Showing the release file {path.name}{seeded}: {mechanism_name(release.mechanism)}, epsilon "
            f"{release.epsilon:g}, {NEIGHBOUR_NAMES.get(release.neighbours, release.neighbours)}."
        )
        self.opened_bar.show()
        self.show_release(release, None, path.name)
        self._refresh_opened()

    def _refresh_opened(self) -> None:
        for button in (self.export_opened_csv, self.export_opened_parquet):
            button.setEnabled(not self._running)

    def show_release(
        self, release: Release | None, preview: ErrorPreview | None = None, source: str = "", unmeasured_reason: str | None = None
    ) -> None:
        """Show a release in the error preview and the query workbench (a fresh one, or a file)."""
        if release is self._shown:
            return
        if self.opened is not None and release is not self.opened[1]:
            self.opened = None
            self.opened_bar.hide()
            self.opened_warning.hide()
        self._shown = release
        self.preview.set_release(release, preview, source, unmeasured_reason)
        if release is not None and release.noisy.size > INSTANT_PREFIX_CELLS:
            self.workbench.set_release(release, prefix=None)
            noisy = release.noisy
            self.prefix_runner.run(lambda _progress, _cancel: PrefixSums(noisy), "preparing queries",
                                   on_success=self.workbench.set_prefix_sums)
        else:
            self.workbench.set_release(release)
        schema = release.schema if release is not None else None
        self.workbench.set_examples(self._doc.measured_workload(schema) if schema is not None else None)

    def _show_outcome(self, outcome: ReleaseOutcome | None) -> None:
        self.result_box.setVisible(outcome is not None)
        self._sync_standard_errors()
        self._refresh_opened()
        if outcome is None:
            return
        if outcome is not self._outcome_shown:  # a release file opened since stays shown until the next release
            self._outcome_shown = outcome
            self.show_release(outcome.release, outcome.preview, "This release", outcome.unmeasured_reason)
        r = outcome.release
        labels = self.result_labels
        labels["mechanism"].setText(mechanism_name(r.mechanism) + ("  (seeded: for tests only)" if r.seeded else ""))
        labels["epsilon"].setText(f"{r.epsilon:g}")
        labels["sa"].setText("{" + ", ".join(r.sa) + "}")
        labels["neighbours"].setText(NEIGHBOUR_NAMES.get(r.neighbours, r.neighbours))
        labels["sampler"].setText(r.sampler)
        labels["rho"].setText(f"{r.rho:g}")
        labels["lambda"].setText(f"{r.nominal_scale:.6g} (effective scale on the exact grid: {r.scale:.9g})")
        raw = " (raw release, before the shift)" if r.public_total else ""
        labels["total"].setText(total_text(r) + (" No privacy cost: n is public under replace-one-record neighbours; "
                                                   "the release file records the shift." if r.public_total else ""))
        labels["paper"].setText(fmt_number(outcome.paper_bound) + raw)
        labels["exact"].setText(fmt_number(outcome.worst_case_variance) + raw)
        labels["margin"].setText(f"± {fmt_count(outcome.margin95)} ({Z95:.2f} standard deviations){raw}")
        labels["rows"].setText(outcome.report.custodian_summary(r.neighbours) + "; for you only, never exported")
        labels["ledger"].setText(self._doc.release_ledger_text())
        labels["time"].setText(
            f"{outcome.seconds:.2f} s (counting {outcome.counting_seconds:.2f} s, noise {r.seconds:.2f} s), "
            f"finished {outcome.finished_at}"
        )
        labels["shape"].setText(" x ".join(f"{n:,}" for n in r.noisy.shape) + f" noisy counts from {outcome.table_name}")
        self.stale.setVisible(self._doc.release_is_stale(outcome))
        for button in self._result_buttons():
            button.setEnabled(not self._running)

    def _result_buttons(self) -> tuple[QPushButton, ...]:
        """What writes the release held: its file, its exports, its report and its script."""
        return (self.export_release, self.export_csv, self.export_parquet, self.save_report, self.save_script)

    def counts_kind(self) -> str:
        """The count kind chosen for CSV and Parquet exports (one of COUNT_KINDS)."""
        return str(self.counts.currentData())

    def standard_error(self) -> bool:
        """Whether CSV and Parquet exports get each cell's noise standard deviation."""
        return self.standard_errors.isEnabled() and self.standard_errors.isChecked()

    def _counts_changed(self) -> None:
        kind = self.counts_kind()
        column = count_column(kind)
        self.counts_note.setText(f"{COUNT_TEXTS[kind][1]} Column: {column}.")
        self._sync_standard_errors()

    def _sync_standard_errors(self) -> None:
        """The standard error box: for noisy counts, of a release whose cells have one (a release
        of weighted marginals may answer them with a bias: the box is then off and says why)."""
        outcome = self._doc.outcome
        problem = None
        if outcome is not None:
            if self._no_standard_error is None or self._no_standard_error[0] is not outcome.release:
                try:
                    found = cell_standard_error_problem(outcome.release)
                except PriveletError as exc:
                    found = str(exc)
                self._no_standard_error = (outcome.release, found)
            problem = self._no_standard_error[1]
        self.standard_errors.setEnabled(standard_error_fits(self.counts_kind()) and problem is None)
        self.standard_errors.setToolTip(_STANDARD_ERROR_TIP if problem is None
                                        else f"No standard error: {problem}.")

    def _dataset_edited(self) -> None:
        try:
            self._doc.set_dataset(self.dataset.text())
        except PriveletError as exc:
            self.dataset_note.setText(f"Not kept: {exc}")
            self.dataset_note.show()
            return
        self.dataset_note.hide()

    def _invalid_changed(self) -> None:
        self._doc.set_privacy("Rows outside the domains: " + str(self.invalid.currentData()), invalid=self.invalid.currentData())

    # -- progress ---------------------------------------------------------------------------------
    def set_running(self, running: bool) -> None:
        self._running = running
        self.cancel_button.setEnabled(running)
        if running:
            self.progress.setValue(0)
            self.progress.setFormat("Starting... %p%")
            self.stage.setText("Starting")
        self.refresh()

    def set_progress(self, fraction: float, stage: str) -> None:
        self.progress.setValue(round(fraction * 1000))
        self.progress.setFormat(f"{stage[:1].upper()}{stage[1:]}  %p%")
        self.stage.setText(stage[:1].upper() + stage[1:])

    def set_finished(self, text: str, ok: bool) -> None:
        self.progress.setValue(1000 if ok else 0)
        self.progress.setFormat(text)
        self.stage.setText(text)
