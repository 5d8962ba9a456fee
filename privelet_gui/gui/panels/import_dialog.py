"""The table import dialog: detected reading options, all changeable, with a live preview.

The options include the texts that mean a missing value (the ACS writes ``N``): the preview
greys them out like empty cells, and the dialog proposes the texts that alone keep a column
of numbers from being numeric."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from PySide6.QtWidgets import (
    QAbstractItemView,
    QCheckBox,
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QFormLayout,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QPushButton,
    QTableView,
    QVBoxLayout,
    QWidget,
)

from ... import io as pio
from ...engine import PriveletError
from ...qt.widgets import Banner
from ..models.table_models import DataFrameModel

__all__ = ["PREVIEW_ROWS", "ImportDialog"]

PREVIEW_ROWS = 20

_DELIMITERS = [("Comma  ,", ","), ("Semicolon  ;", ";"), ("Tab", "\t"), ("Pipe  |", "|"), ("Space", " ")]
_ENCODINGS = ["utf-8", "utf-16", "latin-1", "cp1252", "iso-8859-15", "ascii"]


class ImportDialog(QDialog):
    """Shows the first rows of a table with the detected delimiter, encoding and header.

    Every change re-reads the preview (a few rows: fast). :meth:`options` gives the
    chosen :class:`~privelet_gui.io.TableOptions`.
    """

    def __init__(self, path: Path, options: Any = None, parent: QWidget | None = None):
        super().__init__(parent)
        self.path = Path(path)
        self.setWindowTitle(f"Open table: {self.path.name}")
        self.setMinimumSize(720, 480)
        self._error: str | None = None
        try:
            detected = options if options is not None else pio.sniff_table(self.path)
        except PriveletError as exc:
            detected = pio.TableOptions()
            self._error = str(exc)
        self._format = getattr(detected, "format", None)

        layout = QVBoxLayout(self)
        intro = QLabel(
            f"<b>{self.path.name}</b><br>Check that the columns below look right. The reading options were "
            "detected from the start of the file; change them if needed."
        )
        intro.setWordWrap(True)
        layout.addWidget(intro)

        form = QFormLayout()
        form.setFieldGrowthPolicy(QFormLayout.FieldGrowthPolicy.FieldsStayAtSizeHint)
        self.delimiter = QComboBox()
        self.delimiter.setEditable(True)
        self.delimiter.setAccessibleName("Delimiter")
        self.delimiter.setMinimumContentsLength(14)
        self.delimiter.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
        for text, value in _DELIMITERS:
            self.delimiter.addItem(text, value)
        self.encoding = QComboBox()
        self.encoding.setEditable(True)
        self.encoding.setAccessibleName("Encoding")
        self.encoding.setMinimumContentsLength(14)
        self.encoding.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
        self.encoding.addItems(_ENCODINGS)
        self.header = QCheckBox("The first row holds the column names")
        self.format_label = QLabel()
        self.missing = QLineEdit()
        self.missing.setAccessibleName("Values meaning missing")
        self.missing.setPlaceholderText("e.g. N, NA  (empty cells are always missing)")
        self.missing.setMinimumWidth(self.fontMetrics().horizontalAdvance("e.g. N, NA  (empty cells are always missing)") + 24)
        self.missing.setToolTip(
            "Texts that mean a missing value in every column, comma-separated. Each attribute then says what "
            "missing cells count as (Attributes step), and may name its own texts instead."
        )
        self.suggestion = QLabel()
        self.suggestion.setWordWrap(True)
        self.use_suggestion = QPushButton()
        self.use_suggestion.clicked.connect(self._use_suggestion)
        suggestion_row = QHBoxLayout()
        suggestion_row.addWidget(self.suggestion, 1)
        suggestion_row.addWidget(self.use_suggestion)
        self._suggested: tuple[str, ...] = ()
        form.addRow("Format:", self.format_label)
        form.addRow("Delimiter:", self.delimiter)
        form.addRow("Encoding:", self.encoding)
        form.addRow("", self.header)
        form.addRow("Values meaning missing:", self.missing)
        layout.addLayout(form)
        layout.addLayout(suggestion_row)  # the whole width: it names columns

        self.banner = Banner("error")
        self.banner.hide()
        layout.addWidget(self.banner)

        self.preview_label = QLabel(f"Preview (first {PREVIEW_ROWS} rows):")
        layout.addWidget(self.preview_label)
        self.model = DataFrameModel(parent=self)
        self.table = QTableView()
        self.table.setModel(self.model)
        self.table.setAlternatingRowColors(True)
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
        self.table.verticalHeader().setDefaultSectionSize(self.fontMetrics().height() + 8)
        layout.addWidget(self.table, 1)

        self.buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel)
        self.buttons.button(QDialogButtonBox.StandardButton.Ok).setText("Read table")
        self.buttons.accepted.connect(self.accept)
        self.buttons.rejected.connect(self.reject)
        row = QHBoxLayout()
        row.addStretch(1)
        row.addWidget(self.buttons)
        layout.addLayout(row)

        self._set_controls(detected)
        self.delimiter.currentIndexChanged.connect(self.refresh)
        self.delimiter.editTextChanged.connect(self.refresh)
        self.encoding.currentTextChanged.connect(self.refresh)
        self.header.toggled.connect(self.refresh)
        self.missing.textChanged.connect(self.refresh)
        self.refresh()

    def _set_controls(self, options: Any) -> None:
        delimiter = getattr(options, "delimiter", None) or ","
        index = self.delimiter.findData(delimiter)
        if index >= 0:
            self.delimiter.setCurrentIndex(index)
        else:
            self.delimiter.setEditText(delimiter)
        self.encoding.setCurrentText(getattr(options, "encoding", "utf-8") or "utf-8")
        self.header.setChecked(bool(getattr(options, "header", True)))
        self.missing.setText(", ".join(getattr(options, "missing_values", ()) or ()))
        parquet = self._format == "parquet"
        compressed = self.path.name.lower().endswith(".gz")
        self.format_label.setText("Parquet" if parquet else ("CSV, gzip-compressed" if compressed else "CSV / delimited text"))
        for widget in (self.delimiter, self.encoding, self.header):
            widget.setEnabled(not parquet)

    def delimiter_value(self) -> str:
        text = self.delimiter.currentText()
        index = self.delimiter.findText(text)
        if index >= 0:
            return str(self.delimiter.itemData(index))
        if text in ("\\t", "tab", "Tab"):
            return "\t"
        return text

    def options(self) -> Any:
        """The chosen TableOptions (raises PriveletError if they are invalid)."""
        missing = pio.parse_missing_values(self.missing.text())
        if self._format == "parquet":
            return pio.TableOptions(format="parquet", missing_values=missing)
        return pio.TableOptions(
            delimiter=self.delimiter_value(),
            encoding=self.encoding.currentText().strip() or "utf-8",
            header=self.header.isChecked(),
            format=self._format,
            missing_values=missing,
        )

    def refresh(self) -> None:
        """Re-read the preview with the current options."""
        ok = self.buttons.button(QDialogButtonBox.StandardButton.Ok)
        try:
            frame = pio.preview_table(self.path, self.options(), rows=PREVIEW_ROWS)
        except (PriveletError, OSError, UnicodeError) as exc:
            self._error = str(exc)
            # no option makes an image or a PDF a table: the banner does not blame them
            how = "" if isinstance(exc, pio.NotATextTableError) else " with these options"
            self.banner.set_text(f"Cannot read the file{how}: {exc}")
            self.banner.show()
            self.model.set_frame(None)
            self._suggest(None, ())
            ok.setEnabled(False)
            return
        self._error = None
        self.banner.hide()
        options = self.options()
        self.model.set_frame(frame, missing_values=options.missing_values)
        self.preview_label.setText(f"Preview (first {len(frame)} rows, {len(frame.columns)} columns):")
        self.table.resizeColumnsToContents()
        self._suggest(frame, options.missing_values)
        ok.setEnabled(len(frame.columns) > 0)

    def _suggest(self, frame: Any, named: tuple[str, ...]) -> None:
        """Propose the texts that alone keep columns of numbers from being numeric (in the preview;
        nothing without one)."""
        found = pio.suggest_missing_values(pio.summarize_frame(frame, named)) if frame is not None else {}
        self._suggested = tuple(found)
        if not found:
            self.suggestion.hide()
            self.use_suggestion.hide()
            return
        parts = []
        for text, columns in found.items():
            shown = ", ".join(columns[:4]) + (f" and {len(columns) - 4} more" if len(columns) > 4 else "")
            parts.append(f"<b>{_html(text)}</b> (in {_html(shown)})")
        self.suggestion.setText("Columns of numbers also hold " + "; ".join(parts) + ". Does it mean missing?")
        self.use_suggestion.setText("Treat " + ", ".join(map(repr, found)) + " as missing")
        self.suggestion.show()
        self.use_suggestion.show()

    def _use_suggestion(self) -> None:
        current = pio.parse_missing_values(self.missing.text())
        self.missing.setText(", ".join(dict.fromkeys((*current, *self._suggested))))

    @property
    def error(self) -> str | None:
        return self._error


def _html(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
