"""Small shared widgets: step headers, banners; the number formatting of :mod:`privelet_gui.formatting`,
re-exported for the panels that import it from here."""

from __future__ import annotations

from typing import ClassVar

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QColor, QFont, QPalette
from PySide6.QtWidgets import (
    QBoxLayout,
    QFrame,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QSizePolicy,
    QVBoxLayout,
    QWidget,
)

from ..formatting import fmt_bytes, fmt_count, fmt_number
from . import icons

__all__ = ["Banner", "StepHeader", "fit_columns", "fmt_bytes", "fmt_count", "fmt_number", "hint_label", "section_label"]


def fit_columns(columns: QBoxLayout, width: int) -> None:
    """Lay ``columns`` side by side where ``width`` pixels hold their minimum widths, else one
    under the other (a narrow window scrolls down instead of cutting the right column off)."""
    widths = [item.minimumSize().width() for item in map(columns.itemAt, range(columns.count())) if item is not None]
    margins = columns.contentsMargins()
    needed = sum(widths) + columns.spacing() * max(len(widths) - 1, 0) + margins.left() + margins.right()
    direction = QBoxLayout.Direction.LeftToRight if width >= needed else QBoxLayout.Direction.TopToBottom
    if columns.direction() != direction:
        columns.setDirection(direction)


def section_label(text: str) -> QLabel:
    label = QLabel(text)
    font = label.font()
    font.setBold(True)
    label.setFont(font)
    return label


def hint_label(text: str) -> QLabel:
    """A wrapped sentence in the muted colour, saying more about the control above it."""
    label = QLabel(text)
    label.setWordWrap(True)
    label.setForegroundRole(QPalette.ColorRole.PlaceholderText)
    label.setIndent(label.fontMetrics().horizontalAdvance("M") * 2)
    return label


class StepHeader(QWidget):
    """A step's title and a sentence saying what to do here."""

    def __init__(self, number: int, title: str, text: str, parent: QWidget | None = None):
        super().__init__(parent)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 4)
        layout.setSpacing(2)
        self.title = QLabel(f"{number}. {title}")
        font = self.title.font()
        font.setPointSizeF(font.pointSizeF() * 1.45)
        font.setWeight(QFont.Weight.DemiBold)
        self.title.setFont(font)
        self.title.setAccessibleName(f"Step {number}: {title}")
        self.text = QLabel(text)
        self.text.setWordWrap(True)
        self.text.setForegroundRole(QPalette.ColorRole.PlaceholderText)
        layout.addWidget(self.title)
        layout.addWidget(self.text)


class Banner(QFrame):
    """A coloured strip with an icon, a message and an optional action button."""

    actionTriggered = Signal()

    COLOURS: ClassVar[dict[str, str]] = {"warning": icons.AMBER, "error": icons.RED, "info": icons.BLUE, "done": icons.GREEN}

    def __init__(self, kind: str = "warning", text: str = "", action: str | None = None, parent: QWidget | None = None):
        super().__init__(parent)
        self.setObjectName("banner")
        self.setFrameShape(QFrame.Shape.StyledPanel)
        layout = QHBoxLayout(self)
        layout.setContentsMargins(10, 6, 10, 6)
        layout.setSpacing(10)
        self.icon = QLabel()
        self.icon.setAlignment(Qt.AlignmentFlag.AlignTop)
        self.label = QLabel(text)
        self.label.setWordWrap(True)
        self.label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.label.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Preferred)
        layout.addWidget(self.icon)
        layout.addWidget(self.label, 1)
        self.button = QPushButton(action or "")
        self.button.setVisible(bool(action))
        self.button.clicked.connect(self.actionTriggered)
        layout.addWidget(self.button, 0, Qt.AlignmentFlag.AlignVCenter)
        self.set_kind(kind)

    def set_kind(self, kind: str) -> None:
        self._kind = kind
        name = {"info": "lock"}.get(kind, kind)
        size = self.fontMetrics().height() + 4
        self.icon.setPixmap(icons.icon(name).pixmap(size, size))
        colour = QColor(self.COLOURS.get(kind, icons.AMBER))
        fill = QColor(colour)
        fill.setAlpha(28)
        border = QColor(colour)
        border.setAlpha(150)
        self.setStyleSheet(
            f"QFrame#banner {{ background: rgba({fill.red()},{fill.green()},{fill.blue()},{fill.alpha()});"
            f" border: 1px solid rgba({border.red()},{border.green()},{border.blue()},{border.alpha()});"
            " border-radius: 6px; }"
        )

    def set_text(self, text: str) -> None:
        self.label.setText(text)

    def text(self) -> str:
        return self.label.text()

    def set_action(self, text: str | None) -> None:
        self.button.setText(text or "")
        self.button.setVisible(bool(text))


class SwitchBox(QWidget):
    """Like QStackedWidget, but only the visible page counts for the size (no empty gaps)."""

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self._layout = QVBoxLayout(self)
        self._layout.setContentsMargins(0, 0, 0, 0)
        self._pages: list[QWidget] = []
        self._current = -1

    def addWidget(self, widget: QWidget) -> int:
        self._pages.append(widget)
        self._layout.addWidget(widget)
        widget.setVisible(len(self._pages) == 1)
        if self._current < 0:
            self._current = 0
        return len(self._pages) - 1

    def setCurrentIndex(self, index: int) -> None:
        self._current = index
        for i, page in enumerate(self._pages):
            page.setVisible(i == index)

    def currentIndex(self) -> int:
        return self._current
