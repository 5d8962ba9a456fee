"""Keep a window on its screen: no bigger than the screen's free area, and inside it.

A default size that suits a 1600 x 1000 screen is larger than the same screen at a scale
factor of 1.5 (1067 x 667 device-independent pixels), and a geometry saved on another,
bigger or now absent, screen may not fit the one the window opens on.
:func:`fit_to_screen` shrinks and moves the window, frame included, into the available
geometry of its screen (the screen minus panels and docks); :func:`keep_on_screen` does it
before the window is shown and again when the window manager has framed it.
"""

from __future__ import annotations

from typing import Protocol

from PySide6.QtCore import QEvent, QMargins, QObject, QRect, QSize, Qt
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import QApplication, QStyle, QWidget

__all__ = ["fit_to_screen", "fitted_geometry", "keep_on_screen"]


class _Screen(Protocol):
    def availableGeometry(self) -> QRect: ...


def fitted_geometry(geometry: QRect, frame: QMargins, available: QRect) -> QRect:
    """``geometry`` (a window's inside) shrunk and moved so that it and its ``frame`` fit ``available``.

    A window that fits keeps its size, and its place unless it pokes out of ``available``.

    >>> r = fitted_geometry(QRect(0, 0, 1200, 820), QMargins(0, 30, 0, 0), QRect(0, 0, 1067, 667))
    >>> (r.x(), r.y(), r.width(), r.height())
    (0, 30, 1067, 637)
    """
    width = max(min(geometry.width(), available.width() - frame.left() - frame.right()), 1)
    height = max(min(geometry.height(), available.height() - frame.top() - frame.bottom()), 1)
    outer_width = width + frame.left() + frame.right()
    outer_height = height + frame.top() + frame.bottom()
    left = min(max(geometry.x() - frame.left(), available.left()), available.left() + available.width() - outer_width)
    top = min(max(geometry.y() - frame.top(), available.top()), available.top() + available.height() - outer_height)
    return QRect(left + frame.left(), top + frame.top(), width, height)


def _frame_margins(window: QWidget) -> QMargins:
    """The window's frame, or before the window manager drew one, room for a title bar."""
    inside, outside = window.geometry(), window.frameGeometry()
    if outside != inside:
        return QMargins(inside.left() - outside.left(), inside.top() - outside.top(),
                        outside.right() - inside.right(), outside.bottom() - inside.bottom())
    # Qt's own fit of a restored geometry reserves a title bar's height the same way.
    style = QApplication.style()
    title = style.pixelMetric(QStyle.PixelMetric.PM_TitleBarHeight) + 2
    border = style.pixelMetric(QStyle.PixelMetric.PM_DefaultFrameWidth)
    return QMargins(border, title, border, border)


def _screen_of(window: QWidget) -> _Screen | None:
    """The screen under the window's centre; the window's own (the primary) if there is none
    there, as for a geometry saved on a screen that is gone."""
    return QGuiApplication.screenAt(window.frameGeometry().center()) or window.screen() or QGuiApplication.primaryScreen()


def fit_to_screen(window: QWidget, screen: _Screen | None = None, *, move: bool | None = None) -> bool:
    """Shrink and move ``window`` into the available geometry of ``screen`` (default: its own).

    ``move`` says whether the window may be moved; by default only if it has a place of its
    own (a restored geometry), else only its size changes and the window manager places it.
    On a screen smaller than the window's minimum size, the minimum gives way: a window that
    cannot be made small enough to fit would open with its buttons out of reach. Returns
    whether the window changed.
    """
    screen = screen or _screen_of(window)
    if screen is None:  # no screen at all: nothing to fit
        return False
    frame = _frame_margins(window)
    target = fitted_geometry(window.geometry(), frame, screen.availableGeometry())
    if move is None:
        move = window.testAttribute(Qt.WidgetAttribute.WA_Moved)
    if target.size() == window.size() and (target.topLeft() == window.geometry().topLeft() or not move):
        return False
    minimum = window.minimumSize()
    if minimum.width() > target.width() or minimum.height() > target.height():
        window.setMinimumSize(QSize(min(minimum.width(), target.width()), min(minimum.height(), target.height())))
    if move:
        window.setGeometry(target)
    else:
        window.resize(target.size())
    return True


class _RefitWhenFramed(QObject):
    """Fits the window once more when the window manager has put its frame around it (a Move
    event then tells the real frame, which :func:`fit_to_screen` before showing could only guess)."""

    def __init__(self, window: QWidget):
        super().__init__(window)
        self._window = window

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        window = self._window
        if event.type() == QEvent.Type.Move and window.frameGeometry() != window.geometry():
            window.removeEventFilter(self)
            fit_to_screen(window, move=True)  # placed by now: keep the whole frame inside
            self.deleteLater()
        return False


def keep_on_screen(window: QWidget) -> None:
    """Fit ``window`` to its screen now (before it is shown) and again once it has its frame."""
    fit_to_screen(window)
    window.installEventFilter(_RefitWhenFramed(window))
