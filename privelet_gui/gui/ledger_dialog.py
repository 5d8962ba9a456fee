"""The privacy ledger's view (Release > Privacy ledger): what each table has spent, and every release.

The same data as ``privelet ledger``: :func:`~privelet_gui.io.ledger.ledger_report`, its
releases shown with :meth:`~privelet_gui.io.ledger.LedgerReport.rows`. Tables are known by
salted fingerprints of their rows and files, and by the datasets the custodian named (the
ledger holds no file name of a table); the open table's row is marked once it is looked up.
"""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QFont
from PySide6.QtWidgets import (
    QAbstractItemView,
    QDialog,
    QDialogButtonBox,
    QGroupBox,
    QHeaderView,
    QLabel,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from ..engine import PriveletError
from ..io.ledger import (
    COMPOSITION_TEXT,
    RELEASE_COLUMNS,
    LedgerReport,
    TableKeys,
    ledger_report,
    spending_summary,
    table_keys_text,
)
from ..qt.widgets import Banner

__all__ = ["LedgerDialog"]

#: The columns of the per-table totals.
TABLE_COLUMNS = ("Table (dataset or fingerprint)", "Epsilon spent (sequential composition)")


class LedgerDialog(QDialog):
    """Every release in the privacy ledger and the epsilon each table has spent.

    ``current`` is how the ledger knows the open table (its row is marked), if looked up.
    """

    def __init__(self, current: TableKeys | None = None, parent: QWidget | None = None):
        super().__init__(parent)
        self.setWindowTitle("Privacy ledger")
        self.resize(1000, 560)
        self._current = current
        layout = QVBoxLayout(self)
        self.where = QLabel()
        self.where.setWordWrap(True)
        self.where.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        layout.addWidget(self.where)
        self.problem = Banner("error")
        self.problem.hide()
        layout.addWidget(self.problem)

        tables_box = QGroupBox("Epsilon spent per table")
        tables_layout = QVBoxLayout(tables_box)
        composition = QLabel(COMPOSITION_TEXT)
        composition.setWordWrap(True)
        tables_layout.addWidget(composition)
        self.tables = _table(TABLE_COLUMNS)
        tables_layout.addWidget(self.tables)
        layout.addWidget(tables_box, 1)

        releases_box = QGroupBox("Releases made on this computer")
        releases_layout = QVBoxLayout(releases_box)
        self.releases = _table(tuple(column[:1].upper() + column[1:] for column in RELEASE_COLUMNS))
        releases_layout.addWidget(self.releases)
        layout.addWidget(releases_box, 2)

        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        self.refresh_button = buttons.addButton("Refresh", QDialogButtonBox.ButtonRole.ActionRole)
        self.refresh_button.clicked.connect(self.refresh)
        buttons.rejected.connect(self.reject)
        layout.addWidget(buttons)
        self.report: LedgerReport | None = None
        self.refresh()

    def refresh(self) -> None:
        """Read the ledger again (a release made since shows up)."""
        try:
            report = ledger_report()
        except PriveletError as exc:  # damaged, or a folder that cannot be written
            self.report = None
            self.problem.set_text(str(exc))
            self.problem.show()
            self.tables.setRowCount(0)
            self.releases.setRowCount(0)
            return
        self.report = report
        self.problem.hide()
        count = len(report.releases)
        self.where.setText(
            f"{count:,} release{'s' * (count != 1)} recorded in {report.path}. Tables are known by salted "
            "fingerprints of their rows (whatever their order or the file's format) and of their files, kept on "
            "this computer only, and by the datasets you named ('privelet ledger link')."
        )
        self.tables.setRowCount(len(report.tables))
        open_table = report.table_for(self._current) if self._current is not None else None
        for row, spending in enumerate(report.tables):
            current = spending is open_table
            name = spending.table + ("  (the open table)" if current else "")
            for column, text in enumerate((name, spending_summary(spending))):
                item = QTableWidgetItem(text)
                item.setToolTip("\n".join(spending.fingerprints))
                if current:
                    font = QFont(item.font())
                    font.setBold(True)
                    item.setFont(font)
                self.tables.setItem(row, column, item)
        self.releases.setRowCount(count)
        for row, (entry, cells) in enumerate(zip(report.releases, report.rows(), strict=True)):
            for column, text in enumerate(cells):
                item = QTableWidgetItem(text)
                if RELEASE_COLUMNS[column] == "table":
                    item.setToolTip(table_keys_text(entry.keys))
                self.releases.setItem(row, column, item)
        self.tables.resizeColumnsToContents()
        self.releases.resizeColumnsToContents()


def _table(columns: tuple[str, ...]) -> QTableWidget:
    table = QTableWidget(0, len(columns))
    table.setHorizontalHeaderLabels(list(columns))
    table.verticalHeader().hide()
    table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
    table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
    table.horizontalHeader().setStretchLastSection(True)
    table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
    return table
