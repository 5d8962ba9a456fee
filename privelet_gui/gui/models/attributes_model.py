"""The attributes table: one row per column of the table, with live |A|, h, P(A), H(A)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QAbstractTableModel, QModelIndex, QPersistentModelIndex, Qt

from ...engine import NominalAttribute, PriveletError, paper_factors
from ...qt import icons

if TYPE_CHECKING:
    from ..document import AttributeConfig, Document

__all__ = ["AttributesModel"]

ModelIndex = QModelIndex | QPersistentModelIndex


class AttributesModel(QAbstractTableModel):
    """A view-model over :attr:`Document.configs`; edits go to the document (undoable)."""

    INCLUDE, NAME, TYPE, DOMAIN, SIZE, HEIGHT, P, H, PRIVACY = range(9)
    HEADERS = ("Include", "Attribute", "Type", "Domain", "|A|", "h", "P(A)", "H(A)", "Domain source")
    TOOLTIPS = (
        "Include the column as an attribute of the frequency table",
        "Attribute name (the table column)",
        "Ordinal: ordered values (Haar wavelet). Nominal: unordered values with a hierarchy",
        "The attribute's public domain",
        "|A|: number of values in the domain",
        "h: height of the hierarchy (levels, root = 1); nominal attributes only",
        "P(A): the attribute's factor in the noise bound (1 + ceil(log2 |A|) ordinal; h* nominal)",
        "H(A): the attribute's variance factor ((2 + ceil(log2 |A|)) / 2 ordinal; 4 nominal)",
        "Whether the domain is public knowledge or was taken from the data (not private)",
    )

    def __init__(self, document: Document, parent: Any = None):
        super().__init__(parent)
        self._doc = document
        self._stats: list[dict[str, Any]] = []
        self._count = 0
        document.attributesChanged.connect(self.refresh)
        document.tableChanged.connect(self.refresh)
        self.refresh()

    def config(self, row: int) -> AttributeConfig:
        return self._doc.configs[row]

    def refresh(self) -> None:
        configs = self._doc.configs
        stats = [self._compute(c) for c in configs]
        if len(configs) != self._count:
            self.beginResetModel()
            self._stats = stats
            self._count = len(configs)
            self.endResetModel()
            return
        self._stats = stats
        if self._count:
            self.dataChanged.emit(self.index(0, 0), self.index(self._count - 1, len(self.HEADERS) - 1))

    @staticmethod
    def _compute(config: AttributeConfig) -> dict[str, Any]:
        try:
            attribute = config.to_attribute()
        except PriveletError as exc:
            return {"error": str(exc)}
        p, h = paper_factors(attribute)
        height = attribute.hierarchy.height if isinstance(attribute, NominalAttribute) else None
        return {"size": attribute.size, "height": height, "p": p, "h": h}

    def rowCount(self, parent: ModelIndex = QModelIndex()) -> int:
        return 0 if parent.isValid() else self._count

    def columnCount(self, parent: ModelIndex = QModelIndex()) -> int:
        return 0 if parent.isValid() else len(self.HEADERS)

    def flags(self, index: ModelIndex) -> Qt.ItemFlag:
        if not index.isValid():
            return Qt.ItemFlag.NoItemFlags
        flags = Qt.ItemFlag.ItemIsEnabled | Qt.ItemFlag.ItemIsSelectable
        if index.column() == self.INCLUDE:
            flags |= Qt.ItemFlag.ItemIsUserCheckable
        if index.column() == self.TYPE:
            flags |= Qt.ItemFlag.ItemIsEditable
        return flags

    def data(self, index: ModelIndex, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if not index.isValid() or index.row() >= self._count:
            return None
        config = self._doc.configs[index.row()]
        stats = self._stats[index.row()]
        c = index.column()
        muted = not config.include
        if role == Qt.ItemDataRole.CheckStateRole and c == self.INCLUDE:
            return Qt.CheckState.Checked if config.include else Qt.CheckState.Unchecked
        if role in (Qt.ItemDataRole.DisplayRole, Qt.ItemDataRole.EditRole):
            if c == self.NAME:
                return config.name
            if c == self.TYPE:
                return config.kind
            if c == self.DOMAIN:
                return config.note if config.note and not config.include else config.domain_text()
            if "error" in stats:
                return "?" if c in (self.SIZE, self.P, self.H) else ("" if c == self.HEIGHT else None)
            if c == self.SIZE:
                return f"{stats['size']:,}"
            if c == self.HEIGHT:
                return "—" if stats["height"] is None else str(stats["height"])
            if c == self.P:
                return str(stats["p"])
            if c == self.H:
                return f"{stats['h']:g}"
            if c == self.PRIVACY:
                return "from the data: not private" if config.domain_from_data else "public"
        if role == Qt.ItemDataRole.DecorationRole:
            if c == self.PRIVACY:
                return icons.icon("warning" if config.domain_from_data else "lock")
            if c == self.DOMAIN and "error" in stats and config.include:
                return icons.icon("error")
        if role == Qt.ItemDataRole.ToolTipRole:
            if "error" in stats and c in (self.DOMAIN, self.SIZE):
                return stats["error"]
            if c == self.PRIVACY and config.domain_from_data:
                return (
                    "This domain lists the values found in the table. The presence of a rare value is itself "
                    "a disclosure: replace it with a public code list or range, or confirm it is public."
                )
            return self.TOOLTIPS[c]
        if role == Qt.ItemDataRole.ForegroundRole:
            if c == self.PRIVACY and config.domain_from_data:
                from PySide6.QtGui import QColor

                return QColor(icons.AMBER)
            if muted and c != self.INCLUDE:
                from PySide6.QtGui import QColor, QGuiApplication, QPalette

                colour = QColor(QGuiApplication.palette().color(QPalette.ColorRole.PlaceholderText))
                return colour
        if role == Qt.ItemDataRole.TextAlignmentRole and c in (self.SIZE, self.HEIGHT, self.P, self.H):
            return int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        return None

    def setData(self, index: ModelIndex, value: Any, role: int = Qt.ItemDataRole.EditRole) -> bool:
        if not index.isValid():
            return False
        config = self._doc.configs[index.row()]
        if index.column() == self.INCLUDE and role == Qt.ItemDataRole.CheckStateRole:
            checked = Qt.CheckState(value) == Qt.CheckState.Checked if not isinstance(value, bool) else value
            verb = "Include" if checked else "Exclude"
            self._doc.set_attribute(config.column, f"{verb} {config.name}", include=bool(checked))
            return True
        if index.column() == self.TYPE and role == Qt.ItemDataRole.EditRole and value in ("ordinal", "nominal"):
            self._doc.set_attribute(config.column, f"Make {config.name} {value}", kind=value)
            return True
        return False

    def headerData(self, section: int, orientation: Qt.Orientation, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if orientation != Qt.Orientation.Horizontal:
            return None
        if role == Qt.ItemDataRole.DisplayRole:
            return self.HEADERS[section]
        if role == Qt.ItemDataRole.ToolTipRole:
            return self.TOOLTIPS[section]
        return None
