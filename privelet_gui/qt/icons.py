"""Small vector icons drawn with QPainter, crisp at any device pixel ratio.

They are drawn from the application palette, so they follow the light/dark scheme;
:func:`clear_cache` is called when the scheme changes.
"""

from __future__ import annotations

from collections.abc import Callable
from importlib import resources

from PySide6.QtCore import QPointF, QRectF, Qt
from PySide6.QtGui import QBrush, QColor, QGuiApplication, QIcon, QPainter, QPainterPath, QPalette, QPen, QPixmap

__all__ = ["AMBER", "GREEN", "RED", "app_icon", "clear_cache", "icon"]

GREEN = "#2e7d32"
AMBER = "#ef8f00"
RED = "#c62828"
BLUE = "#1f6feb"

_cache: dict[str, QIcon] = {}
_SIZES = (16, 20, 24, 32, 48, 64)


def clear_cache() -> None:
    _cache.clear()


def _text_colour() -> QColor:
    app = QGuiApplication.instance()
    if app is None:
        return QColor("#444444")
    return QGuiApplication.palette().color(QPalette.ColorRole.WindowText)


def _mid_colour() -> QColor:
    colour = _text_colour()
    colour.setAlphaF(0.45)
    return colour


def _draw_check(p: QPainter, s: float) -> None:
    p.setPen(Qt.PenStyle.NoPen)
    p.setBrush(QColor(GREEN))
    p.drawEllipse(QRectF(1, 1, s - 2, s - 2))
    pen = QPen(QColor("white"), s * 0.12, Qt.PenStyle.SolidLine, Qt.PenCapStyle.RoundCap, Qt.PenJoinStyle.RoundJoin)
    p.setPen(pen)
    path = QPainterPath(QPointF(s * 0.28, s * 0.52))
    path.lineTo(s * 0.44, s * 0.68)
    path.lineTo(s * 0.73, s * 0.36)
    p.setBrush(Qt.BrushStyle.NoBrush)
    p.drawPath(path)


def _draw_todo(p: QPainter, s: float) -> None:
    p.setPen(QPen(_mid_colour(), s * 0.1))
    p.setBrush(Qt.BrushStyle.NoBrush)
    p.drawEllipse(QRectF(s * 0.12, s * 0.12, s * 0.76, s * 0.76))


def _draw_badge(colour: str, mark: str) -> Callable[[QPainter, float], None]:
    def draw(p: QPainter, s: float) -> None:
        p.setPen(Qt.PenStyle.NoPen)
        p.setBrush(QColor(colour))
        if mark == "!":
            path = QPainterPath(QPointF(s / 2, s * 0.06))
            path.lineTo(s * 0.96, s * 0.92)
            path.lineTo(s * 0.04, s * 0.92)
            path.closeSubpath()
            p.drawPath(path)
            p.setBrush(QColor("white"))
            p.drawRoundedRect(QRectF(s * 0.45, s * 0.32, s * 0.1, s * 0.34), s * 0.04, s * 0.04)
            p.drawEllipse(QRectF(s * 0.44, s * 0.72, s * 0.12, s * 0.12))
        else:  # "x": an error
            p.drawEllipse(QRectF(1, 1, s - 2, s - 2))
            pen = QPen(QColor("white"), s * 0.12, Qt.PenStyle.SolidLine, Qt.PenCapStyle.RoundCap)
            p.setPen(pen)
            p.drawLine(QPointF(s * 0.34, s * 0.34), QPointF(s * 0.66, s * 0.66))
            p.drawLine(QPointF(s * 0.66, s * 0.34), QPointF(s * 0.34, s * 0.66))

    return draw


def _draw_group(p: QPainter, s: float) -> None:
    p.setPen(QPen(QColor("#b07a12"), max(1.0, s * 0.06)))
    p.setBrush(QColor("#f2c45a"))
    path = QPainterPath(QPointF(s * 0.08, s * 0.25))
    path.lineTo(s * 0.40, s * 0.25)
    path.lineTo(s * 0.48, s * 0.34)
    path.lineTo(s * 0.92, s * 0.34)
    path.lineTo(s * 0.92, s * 0.82)
    path.lineTo(s * 0.08, s * 0.82)
    path.closeSubpath()
    p.drawPath(path)


def _draw_leaf(p: QPainter, s: float) -> None:
    p.setPen(Qt.PenStyle.NoPen)
    p.setBrush(QColor(BLUE))
    p.drawEllipse(QRectF(s * 0.34, s * 0.34, s * 0.32, s * 0.32))


def _draw_lock(p: QPainter, s: float) -> None:
    colour = QColor(BLUE)
    p.setPen(QPen(colour, s * 0.1))
    p.setBrush(Qt.BrushStyle.NoBrush)
    p.drawArc(QRectF(s * 0.3, s * 0.1, s * 0.4, s * 0.5), 0, 180 * 16)
    p.drawLine(QPointF(s * 0.3, s * 0.35), QPointF(s * 0.3, s * 0.45))
    p.drawLine(QPointF(s * 0.7, s * 0.35), QPointF(s * 0.7, s * 0.45))
    p.setPen(Qt.PenStyle.NoPen)
    p.setBrush(colour)
    p.drawRoundedRect(QRectF(s * 0.18, s * 0.42, s * 0.64, s * 0.48), s * 0.08, s * 0.08)


_DRAWERS: dict[str, Callable[[QPainter, float], None]] = {
    "done": _draw_check,
    "todo": _draw_todo,
    "warning": _draw_badge(AMBER, "!"),
    "error": _draw_badge(RED, "x"),
    "group": _draw_group,
    "leaf": _draw_leaf,
    "lock": _draw_lock,
}


def icon(name: str) -> QIcon:
    """A named icon: done, todo, warning, error, group, leaf, lock."""
    cached = _cache.get(name)
    if cached is not None:
        return cached
    draw = _DRAWERS[name]
    result = QIcon()
    for size in _SIZES:
        for ratio in (1.0, 2.0):
            pixmap = QPixmap(int(size * ratio), int(size * ratio))
            pixmap.setDevicePixelRatio(ratio)
            pixmap.fill(Qt.GlobalColor.transparent)
            painter = QPainter(pixmap)
            painter.setRenderHint(QPainter.RenderHint.Antialiasing)
            painter.setBrush(QBrush())
            draw(painter, float(size))
            painter.end()
            result.addPixmap(pixmap)
    _cache[name] = result
    return result


def app_icon() -> QIcon:
    """The application icon (resources/icons/privelet-studio.svg)."""
    cached = _cache.get("app")
    if cached is not None:
        return cached
    try:
        path = resources.files("privelet_gui.resources") / "icons" / "privelet-studio.svg"
        result = QIcon(str(path)) if path.is_file() else QIcon()
    except (ModuleNotFoundError, FileNotFoundError):  # pragma: no cover - broken install
        result = QIcon()
    if result.isNull():
        result = icon("lock")
    _cache["app"] = result
    return result
