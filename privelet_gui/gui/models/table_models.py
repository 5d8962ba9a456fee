"""Read-only table models: a DataFrame preview and the per-column summary of a table."""

from __future__ import annotations

from typing import Any

import pandas as pd
from PySide6.QtCore import QAbstractTableModel, QModelIndex, QPersistentModelIndex, Qt

from ...io import ColumnSummary, TableSummary
from ...io.inference import guess_kind

__all__ = ["ColumnSummaryModel", "DataFrameModel"]

ModelIndex = QModelIndex | QPersistentModelIndex


class DataFrameModel(QAbstractTableModel):
    """The cells of a (small) DataFrame as text; empty cells, and cells holding a text meaning
    missing, shown greyed."""

    def __init__(self, frame: pd.DataFrame | None = None, parent: Any = None):
        super().__init__(parent)
        self._frame = frame if frame is not None else pd.DataFrame()
        self._missing: frozenset[str] = frozenset()

    def set_frame(self, frame: pd.DataFrame | None, *, missing_values: tuple[str, ...] = ()) -> None:
        self.beginResetModel()
        self._frame = frame if frame is not None else pd.DataFrame()
        self._missing = frozenset(missing_values)
        self.endResetModel()

    @property
    def frame(self) -> pd.DataFrame:
        return self._frame

    def rowCount(self, parent: ModelIndex = QModelIndex()) -> int:
        return 0 if parent.isValid() else len(self._frame)

    def columnCount(self, parent: ModelIndex = QModelIndex()) -> int:
        return 0 if parent.isValid() else len(self._frame.columns)

    def data(self, index: ModelIndex, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if not index.isValid():
            return None
        value = self._frame.iat[index.row(), index.column()]
        empty = value is None or (isinstance(value, float) and value != value) or value is pd.NA
        if role == Qt.ItemDataRole.DisplayRole:
            return "(empty)" if empty else str(value)
        if role == Qt.ItemDataRole.ToolTipRole and not empty and str(value) in self._missing:
            return f"{value!s}: means missing"
        if role == Qt.ItemDataRole.ForegroundRole and (empty or str(value) in self._missing):
            from PySide6.QtGui import QColor

            return QColor(128, 128, 128)
        return None

    def headerData(self, section: int, orientation: Qt.Orientation, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if role != Qt.ItemDataRole.DisplayRole:
            return None
        if orientation == Qt.Orientation.Horizontal:
            return str(self._frame.columns[section]) if section < len(self._frame.columns) else None
        return str(section + 1)


class ColumnSummaryModel(QAbstractTableModel):
    """One row per column of the table: type guess, distinct values, missing cells, values."""

    HEADERS = ("Column", "Looks like", "Suggested type", "Distinct values", "Missing", "Range or values")

    def __init__(self, parent: Any = None):
        super().__init__(parent)
        self._columns: tuple[ColumnSummary, ...] = ()

    def set_summary(self, summary: TableSummary | None) -> None:
        self.beginResetModel()
        self._columns = summary.columns if summary is not None else ()
        self.endResetModel()

    def rowCount(self, parent: ModelIndex = QModelIndex()) -> int:
        return 0 if parent.isValid() else len(self._columns)

    def columnCount(self, parent: ModelIndex = QModelIndex()) -> int:
        return 0 if parent.isValid() else len(self.HEADERS)

    def data(self, index: ModelIndex, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if not index.isValid():
            return None
        column = self._columns[index.row()]
        c = index.column()
        if role == Qt.ItemDataRole.DisplayRole:
            if c == 0:
                return column.name
            if c == 1:
                texts = column.non_numbers()
                return f"numbers and {', '.join(map(repr, texts))}" if texts else column.kind_text
            if c == 2:
                return guess_kind(column)
            if c == 3:
                return f"{column.distinct:,}" + ("+" if column.values is None else "")
            if c == 4:
                return column.missing_text()
            if c == 5:
                if column.numeric and column.minimum is not None:
                    return f"{column.minimum:g} to {column.maximum:g}"
                return column.examples()
        if role == Qt.ItemDataRole.TextAlignmentRole and c in (3, 4):
            return int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        if role == Qt.ItemDataRole.ToolTipRole and c == 5:
            return column.examples(30)
        if role == Qt.ItemDataRole.ToolTipRole and c == 1 and column.non_numbers():
            return "If these texts mean a missing value, name them in the reading options (Values meaning missing)"
        if role == Qt.ItemDataRole.ToolTipRole and c == 4:
            return "Empty cells, and cells holding a text the reading options say means missing"
        return None

    def headerData(self, section: int, orientation: Qt.Orientation, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if role == Qt.ItemDataRole.DisplayRole and orientation == Qt.Orientation.Horizontal:
            return self.HEADERS[section]
        return None
