r"""Figures of ``privelet evaluate``: the paper's Figures 8/9 as PNG files, drawn headless.

The command line imports this module only when it writes figures (``--no-figures``
never loads Qt). It draws with the app's own :class:`~privelet_gui.qt.plots.ErrorByCoveragePlot`
(log scale, Basic against Privelet+), on a white background for printing, and writes
the custodian-only warning *into the exported image* (a second title line): the
app's warning banner is a separate widget that a PNG export of the plot would leave out.

Works without a display: :func:`ensure_application` creates a ``QApplication`` if the
process has none, on the ``offscreen`` platform unless ``QT_QPA_PLATFORM`` says otherwise
(and always when there is no display).

>>> from privelet_gui.engine import QuintileRow
>>> rows = {m: [QuintileRow(q, q / 10, s * q, 0.1, 8) for q in range(1, 6)]
...         for m, s in (("basic", 100.0), ("privelet+", 5.0))}
>>> render_error_figure(rows, epsilon=1.0)[:8] == b"\x89PNG\r\n\x1a\n"
True
"""

from __future__ import annotations

import html
import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from ..engine import QuintileRow
from ..engine.accuracy.evaluation import EVALUATED_MECHANISMS, EvaluationRow
from ..io import atomic_write

if TYPE_CHECKING:
    from .plots import ErrorByCoveragePlot

__all__ = [
    "CUSTODIAN_LABEL",
    "ERROR_NAMES",
    "ensure_application",
    "error_figure",
    "render_error_figure",
    "rows_by_epsilon",
    "write_error_figure",
]

#: The line every evaluation figure carries: it was computed from the true data.
CUSTODIAN_LABEL = "USES THE TRUE DATA \u2014 for the data custodian's machine only, NOT for publication"

#: Axis and title wording for the two errors drawn.
ERROR_NAMES = {"square_error": "average square error", "relative_error": "average relative error"}

LABEL_COLOUR = "#B00020"  # the warning line: dark red, bold
INK = "#202020"  # axes, ticks, legend and title on the white background
TITLE_HEIGHT = 58  # two title lines (pyqtgraph's default title row is 30 px)

_app = None  # keeps the QApplication this module created alive


def _has_display() -> bool:
    if sys.platform in ("win32", "darwin"):
        return True
    return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))


def ensure_application(*, headless: bool = False):  # type: ignore[no-untyped-def]
    """The running ``QApplication``, or a new one.

    A new one uses the ``offscreen`` platform when there is no display, or when
    ``headless`` is true (figures need no screen; a broken remote display would abort
    the process), unless ``QT_QPA_PLATFORM`` is set. Raises :class:`RuntimeError` if a
    non-widget ``QCoreApplication`` already runs (widgets need a ``QApplication``).
    """
    global _app
    from PySide6.QtCore import QCoreApplication
    from PySide6.QtWidgets import QApplication

    existing = QCoreApplication.instance()
    if existing is not None:
        if not isinstance(existing, QApplication):
            raise RuntimeError("a QCoreApplication without widgets is running; figures need a QApplication")
        return existing
    if headless or not _has_display():
        os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    _quiet_platform_notes()
    _app = QApplication([sys.argv[0] if sys.argv and sys.argv[0] else "privelet"])
    return _app


#: Notes of the offscreen platform that say nothing about the figure.
_PLATFORM_NOISE = ("does not support propagateSizeHints", "does not support raise()")


def _quiet_platform_notes() -> None:
    """Drop the offscreen platform's harmless notes; other Qt messages still go to stderr."""
    from PySide6.QtCore import qInstallMessageHandler

    def handler(_kind, _context, message: str) -> None:  # type: ignore[no-untyped-def]
        if not any(noise in message for noise in _PLATFORM_NOISE):
            print(message, file=sys.stderr)

    qInstallMessageHandler(handler)


def _fmt_epsilon(epsilon: float) -> str:
    return np.format_float_positional(float(epsilon), trim="-")


def error_figure(
    rows: Mapping[str, Sequence[QuintileRow]],
    *,
    epsilon: float,
    error: str = "square_error",
    title: str | None = None,
    size: tuple[int, int] = (960, 600),
) -> ErrorByCoveragePlot:
    """An :class:`ErrorByCoveragePlot` of ``rows`` (``{"basic": [...], "privelet+": [...]}``).

    Marked as using the true data (the banner of the widget) and with
    :data:`CUSTODIAN_LABEL` as a second, bold red title line, so the label is part of
    any export of the plot. Laid out at ``size`` without being shown on a screen.
    """
    if error not in ERROR_NAMES:
        raise ValueError(f"error must be one of {', '.join(ERROR_NAMES)}, got {error!r}")
    ensure_application()
    import pyqtgraph as pg
    from PySide6.QtCore import Qt
    from PySide6.QtWidgets import QApplication

    from .plots import ErrorByCoveragePlot

    heading = title or (
        f"{ERROR_NAMES[error].capitalize()} per query-coverage quintile, \u03b5 = {_fmt_epsilon(epsilon)}"
        + (" (sanity bound 0.1% of n)" if error == "relative_error" else "")
    )
    view = ErrorByCoveragePlot(heading, error=error, uses_true_data=True)
    view.setAttribute(Qt.WidgetAttribute.WA_DontShowOnScreen, True)
    plot = view.plot_item
    # Log-log: the quintiles' coverages span orders of magnitude (most are tiny), and
    # Basic's error, linear in coverage, becomes a straight line of slope 1.
    plot.setLogMode(x=True, y=True)
    plot.setLabel("bottom", "average query coverage (fraction of the matrix's cells, log scale)")
    plot.setLabel("left", f"{ERROR_NAMES[error]} (log scale)")
    view.plot_widget.setBackground("w")
    for name in ("left", "bottom"):
        axis = plot.getAxis(name)
        axis.setPen(pg.mkPen(INK))
        axis.setTextPen(pg.mkPen(INK))
        axis.enableAutoSIPrefix(False)  # plain powers of ten, no "(x0.001)"
    view.legend.setLabelTextColor(INK)
    view.legend.setBrush(pg.mkBrush(255, 255, 255, 220))
    view.legend.setPen(pg.mkPen("#BBBBBB"))
    # The label inside the plot item itself: exports of the plot item carry it.
    plot.setTitle(
        f"<span style='color:{INK}; font-size:12pt'>{html.escape(heading)}</span><br>"
        f"<span style='color:{LABEL_COLOUR}; font-size:11pt; font-weight:bold'>{html.escape(CUSTODIAN_LABEL)}</span>"
    )
    plot.titleLabel.setMaximumHeight(TITLE_HEIGHT)
    plot.layout.setRowFixedHeight(0, TITLE_HEIGHT)
    view.set_rows({m: rows[m] for m in (*EVALUATED_MECHANISMS, *rows) if m in rows}, epsilon=epsilon)
    _fit_log_axes(plot, rows, error)
    view.resize(*size)
    view.show()  # not on screen (WA_DontShowOnScreen): only lays the plot out
    QApplication.processEvents()
    return view


def _fit_log_axes(plot, rows: Mapping[str, Sequence[QuintileRow]], error: str) -> None:  # type: ignore[no-untyped-def]
    """The data with a margin on every side (the legend has its own row under the plot; the
    axes label themselves: :class:`~privelet_gui.qt.plots.LogAwareAxis`)."""
    xs = np.array([r.coverage for quintiles in rows.values() for r in quintiles], dtype=float)
    ys = np.array([getattr(r, error) for quintiles in rows.values() for r in quintiles], dtype=float)
    good = np.isfinite(xs) & np.isfinite(ys) & (xs > 0) & (ys > 0)
    if not good.any():
        return
    x_lo, x_hi = np.log10(xs[good].min()), np.log10(xs[good].max())
    y_lo, y_hi = np.log10(ys[good].min()), np.log10(ys[good].max())
    x_pad = max(x_hi - x_lo, 0.2) * 0.06
    y_pad = max(y_hi - y_lo, 0.2) * 0.06
    plot.setXRange(x_lo - x_pad, x_hi + x_pad, padding=0)
    plot.setYRange(y_lo - y_pad, y_hi + y_pad, padding=0)


def _dispose(view) -> None:  # type: ignore[no-untyped-def]
    """Free the widget now: signal connections to its own methods keep it alive otherwise."""
    from PySide6.QtCore import QCoreApplication, QEvent

    view.close()
    view.deleteLater()
    QCoreApplication.sendPostedEvents(view, QEvent.Type.DeferredDelete)


def render_error_figure(
    rows: Mapping[str, Sequence[QuintileRow]],
    *,
    epsilon: float,
    error: str = "square_error",
    title: str | None = None,
    width: int = 1200,
) -> bytes:
    """The figure as PNG bytes, ``width`` pixels wide, white background."""
    from pyqtgraph import exporters
    from PySide6.QtCore import QBuffer, QByteArray, QIODevice

    view = error_figure(rows, epsilon=epsilon, error=error, title=title)
    try:
        exporter = exporters.ImageExporter(view.plot_item)
        exporter.parameters()["width"] = int(width)
        exporter.parameters()["background"] = "w"
        exporter.parameters()["antialias"] = True
        image = exporter.export(toBytes=True)
        data = QByteArray()
        buffer = QBuffer(data)
        buffer.open(QIODevice.OpenModeFlag.WriteOnly)
        if not image.save(buffer, "PNG"):
            raise RuntimeError("Qt could not encode the figure as PNG")
        buffer.close()
        return bytes(data.data())
    finally:
        _dispose(view)


def write_error_figure(
    path: str | os.PathLike[str],
    rows: Mapping[str, Sequence[QuintileRow]],
    *,
    epsilon: float,
    error: str = "square_error",
    title: str | None = None,
    width: int = 1200,
    force: bool = False,
) -> Path:
    """Write the figure to ``path`` (PNG) atomically; an existing file only with ``force``."""
    data = render_error_figure(rows, epsilon=epsilon, error=error, title=title, width=width)
    target = Path(path)
    with atomic_write(target, force=force) as handle:
        handle.write(data)
    return target


def rows_by_epsilon(rows: Sequence[EvaluationRow]) -> dict[float, dict[str, list[QuintileRow]]]:
    """``evaluate()``'s rows grouped as ``{epsilon: {mechanism: [QuintileRow, ...]}}``, in order."""
    grouped: dict[float, dict[str, list[QuintileRow]]] = {}
    for r in rows:
        grouped.setdefault(r.epsilon, {}).setdefault(r.mechanism, []).append(r.row)
    return grouped
