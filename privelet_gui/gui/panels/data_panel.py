"""Step 1, Data: open a table, see how it was read and what each column holds."""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QAbstractItemView,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QProgressBar,
    QPushButton,
    QStackedWidget,
    QTableView,
    QVBoxLayout,
    QWidget,
)

from ... import io as pio
from ...qt.widgets import Banner, StepHeader
from ..document import Document
from ..models.table_models import ColumnSummaryModel

__all__ = ["DataPanel"]

_DELIMITER_NAMES = {",": "comma", ";": "semicolon", "\t": "tab", "|": "pipe", " ": "space"}


class DataPanel(QWidget):
    openTableRequested = Signal()
    openSampleRequested = Signal()
    changeOptionsRequested = Signal()

    def __init__(self, document: Document, parent: QWidget | None = None):
        super().__init__(parent)
        self._doc = document
        layout = QVBoxLayout(self)
        layout.setSpacing(10)
        layout.addWidget(
            StepHeader(
                1,
                "Data",
                "Open the table you want to publish (CSV, TSV, .csv.gz or Parquet). It is read on this computer "
                "only; the true counts never leave it and are never saved.",
            )
        )
        self.pages = QStackedWidget()
        layout.addWidget(self.pages, 1)

        # Empty state.
        empty = QWidget()
        empty_layout = QVBoxLayout(empty)
        empty_layout.addStretch(1)
        hint = QLabel("No table yet. Open one, drop a file on this window, or try the bundled sample.")
        hint.setAlignment(Qt.AlignmentFlag.AlignCenter)
        hint.setWordWrap(True)
        empty_layout.addWidget(hint)
        buttons = QHBoxLayout()
        buttons.addStretch(1)
        self.open_button = QPushButton("Open table...")
        self.open_button.setDefault(True)
        self.open_button.clicked.connect(self.openTableRequested)
        self.sample_button = QPushButton("Open the sample (UCI Adult)")
        self.sample_button.clicked.connect(self.openSampleRequested)
        buttons.addWidget(self.open_button)
        buttons.addWidget(self.sample_button)
        buttons.addStretch(1)
        empty_layout.addLayout(buttons)
        self.empty_error = Banner("error")
        self.empty_error.hide()
        empty_layout.addWidget(self.empty_error)
        empty_layout.addStretch(2)
        self.pages.addWidget(empty)

        # Loaded state.
        loaded = QWidget()
        loaded_layout = QVBoxLayout(loaded)
        loaded_layout.setContentsMargins(0, 0, 0, 0)
        top = QHBoxLayout()
        self.file_label = QLabel()
        self.file_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.file_label.setWordWrap(True)
        top.addWidget(self.file_label, 1)
        self.options_button = QPushButton("Reading options...")
        self.options_button.clicked.connect(self.changeOptionsRequested)
        self.other_button = QPushButton("Open another table...")
        self.other_button.clicked.connect(self.openTableRequested)
        top.addWidget(self.options_button)
        top.addWidget(self.other_button)
        loaded_layout.addLayout(top)
        self.error = Banner("error")
        self.error.hide()
        loaded_layout.addWidget(self.error)
        # Columns of numbers that hold a few texts besides: those texts usually mean missing.
        self.missing_hint = Banner("info", "", "Reading options...")
        self.missing_hint.actionTriggered.connect(self.changeOptionsRequested)
        self.missing_hint.hide()
        loaded_layout.addWidget(self.missing_hint)
        self.columns_label = QLabel("Columns")
        loaded_layout.addWidget(self.columns_label)
        self.summary_model = ColumnSummaryModel(self)
        self.table = QTableView()
        self.table.setModel(self.summary_model)
        self.table.setAlternatingRowColors(True)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.verticalHeader().hide()
        self.table.verticalHeader().setDefaultSectionSize(self.fontMetrics().height() + 10)
        header = self.table.horizontalHeader()
        header.setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        header.setSectionResizeMode(ColumnSummaryModel.HEADERS.index("Range or values"), QHeaderView.ResizeMode.Stretch)
        self.table.setTextElideMode(Qt.TextElideMode.ElideRight)
        self.table.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAsNeeded)
        loaded_layout.addWidget(self.table, 1)
        self.pages.addWidget(loaded)

        # Progress while a table is read in the worker.
        self.progress = QProgressBar()
        self.progress.setTextVisible(True)
        self.progress.hide()
        layout.addWidget(self.progress)

        document.tableChanged.connect(self.refresh)
        document.stateChanged.connect(self._refresh_error)
        self.refresh()

    def refresh(self) -> None:
        summary = self._doc.summary
        self.summary_model.set_summary(summary)
        if summary is None:
            self.pages.setCurrentIndex(0)
            self._refresh_error()
            return
        self.pages.setCurrentIndex(1)
        options = summary.options
        if getattr(options, "format", None) == "parquet":
            how = "Parquet"
        else:
            delimiter = getattr(options, "delimiter", None) or ","
            name = _DELIMITER_NAMES.get(delimiter, repr(delimiter))
            header = "header row" if getattr(options, "header", True) else "no header row"
            how = f"{name}-separated, {getattr(options, 'encoding', 'utf-8')}, {header}"
        markers = getattr(options, "missing_values", ()) or ()
        how += ", missing: " + (", ".join(map(repr, markers)) + " and empty cells" if markers else "empty cells only")
        self.file_label.setText(
            f"<b>{summary.path.name}</b> &nbsp; {summary.rows:,} rows, {len(summary.columns)} columns "
            f"&nbsp;·&nbsp; {how}<br><span style='color:gray'>{summary.path.parent}</span>"
        )
        self.columns_label.setText(
            f"Columns (read in {summary.seconds:.1f} s). The suggested types are guesses; set them in the next step."
        )
        found = pio.suggest_missing_values(summary.columns)
        if found:
            text, columns = next(iter(found.items()))
            shown = ", ".join(columns[:5]) + (f" and {len(columns) - 5} more" if len(columns) > 5 else "")
            others = [t for t in found if t != text]
            self.missing_hint.set_text(
                (f"The columns {_html(shown)} hold" if len(columns) > 1 else f"The column {_html(shown)} holds")
                + f" numbers and <b>{_html(text)}</b>"
                + (f" (and other columns {', '.join(map(repr, others))})" if others else "")
                + ". If it means a missing value, name it in the reading options: "
                + ("those columns then stay numeric" if len(columns) > 1 else "that column then stays numeric")
                + ", and each attribute says what missing cells count as."
            )
        self.missing_hint.setVisible(bool(found))
        self._refresh_error()

    def _refresh_error(self) -> None:
        message = self._doc.table_error
        for banner in (self.error, self.empty_error):
            banner.set_text(message or "")
            banner.setVisible(bool(message))

    def set_progress(self, fraction: float | None, stage: str = "") -> None:
        """Show (fraction in 0..1) or hide (None) the reading progress."""
        if fraction is None:
            self.progress.hide()
            return
        self.progress.show()
        self.progress.setValue(round(fraction * 100))
        self.progress.setFormat(f"{stage}  %p%")


def _html(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
