"""Error previews drawn with pyqtgraph, each exportable as PNG, SVG and CSV.

Two kinds of views, labelled honestly:

- data-independent ones (expected error from the exact variances, per-attribute
  factors, the noisy release itself) cost no privacy;
- views that compare with the true data carry a visible banner saying so: they are
  for the custodian's own machine and nothing from them goes into a release export. Their
  export buttons ask first (:data:`TRUE_DATA_CHOICES`: the noisy side alone where the view
  has one, or everything), and a file with true data says so in itself: a first line
  ``# `` + :data:`TRUE_DATA_MARK` in CSV (as seeded exports are marked), the mark as a second
  title line in PNG and SVG.
"""

from __future__ import annotations

import contextlib
import csv
import html
import io
import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pyqtgraph as pg
import pyqtgraph.exporters as exporters
from PySide6.QtCore import QBuffer, QByteArray, QIODevice, QRect, Qt
from PySide6.QtGui import QImage, QPainter, QWheelEvent
from PySide6.QtSvg import QSvgGenerator
from PySide6.QtWidgets import QFileDialog, QHBoxLayout, QLabel, QMessageBox, QPushButton, QVBoxLayout, QWidget

from ..engine import AttributeFactors, QuintileRow, mechanism_name
from ..io import atomic_write
from ..io.releases import LABEL_SUFFIX
from .widgets import Banner

__all__ = [
    "COVERAGE_GROUPS_TIP",
    "TRUE_DATA_CHOICES",
    "TRUE_DATA_MARK",
    "TRUE_DATA_WARNING",
    "AttributeFactorPlot",
    "ChartWidget",
    "ErrorByCoveragePlot",
    "HeatmapPlot",
    "MarginalComparisonPlot",
    "PlotView",
    "TrueDataQuestion",
    "true_data_question_text",
]

#: Shown on every view that reads the true data.
TRUE_DATA_WARNING = (
    "Uses the true data: for checking on this machine only, not for publication. "
    "Nothing shown here goes into an exported release."
)

#: What an export of a view that reads the true data says in the file itself.
TRUE_DATA_MARK = "USES THE TRUE DATA - for the data custodian's machine only, NOT for publication"
#: The answers to "export a view that reads the true data?": (key, button text).
TRUE_DATA_CHOICES = {
    "noisy": "Export the noisy counts only",
    "true": "Export with the true data (marked)",
    "cancel": "Cancel",
}
#: Asks which export of a true-data view to write: (format, whether it has a noisy side) ->
#: a key of :data:`TRUE_DATA_CHOICES`. The app's asks through its dialogs (tests answer it).
TrueDataQuestion = Callable[[str, bool], str]

MARK_COLOUR = "#B00020"  # the true-data mark in an exported image: dark red, bold
MARKED_TITLE_HEIGHT = 58  # least pixels for the two lines of a marked title (one line has 30)
# Colour-blind-safe (Okabe-Ito): Basic in vermillion, Privelet+ in blue, plain Privelet in bluish green,
# per-axis strategies (the best strategy) in reddish purple.
MECHANISM_COLOURS = {
    "basic": "#D55E00", "privelet+": "#0072B2", "privelet": "#009E73", "strategies": "#CC79A7", "best": "#CC79A7",
    "true": "#7F7F7F", "noisy": "#0072B2",
}


#: How to zoom a chart, said where the reset button is.
ZOOM_HINT = (
    "Click the chart (or hold Ctrl) to zoom it with the mouse wheel; drag to move it. "
    "Otherwise the wheel scrolls the page."
)


class ChartWidget(pg.PlotWidget):
    """A plot widget whose mouse wheel zooms only while the chart has the keyboard focus
    (only a click on it gives it) or with Ctrl held.

    Otherwise the wheel event is left to the page around the chart: scrolling a long page
    must never zoom (to 10^200 on a log axis) every chart that passes under the pointer.
    """

    def __init__(self, parent: QWidget | None = None, **kwargs: Any):
        super().__init__(parent, **kwargs)
        # Click focus only: a chart that took the focus by Tab or as the first widget of a
        # page would zoom without the user having asked for it.
        self.setFocusPolicy(Qt.FocusPolicy.ClickFocus)
        # The focus that arms the wheel is shown, so that zooming never comes as a surprise.
        self.setStyleSheet("ChartWidget { border: 1px solid transparent; }"
                           " ChartWidget:focus { border: 1px solid palette(highlight); }")

    def wheelEvent(self, event: QWheelEvent) -> None:
        if self.hasFocus() or event.modifiers() & Qt.KeyboardModifier.ControlModifier:
            super().wheelEvent(event)
        else:
            event.ignore()  # Qt hands an ignored wheel event on to the parent: the page scrolls


class LogAwareAxis(pg.AxisItem):
    """An axis whose log-mode labels never crowd and share one style: every decade is
    labelled, 2 and 5 between them only where a decade has room (pyqtgraph labels all nine
    minor ticks, which overlap as "0.00030.00040.0005..."); plain numbers when the whole axis
    lies from 0.0001 to 99,999, else powers of ten ("10⁴", not "10000" beside "10⁵")."""

    #: Pixels a decade needs before its 2 and 5 are labelled too.
    ROOM_FOR_MINOR_LABELS = 160
    PLAIN_RANGE = (1e-4, 1e5)

    def __init__(self, orientation: str, **kwargs: Any):
        super().__init__(orientation, **kwargs)
        self._pixels_per_decade = 0.0
        self._plain = True

    def logTickValues(self, minVal: float, maxVal: float, size: float, stdTicks: list) -> list:
        if maxVal > minVal:
            self._pixels_per_decade = size / (maxVal - minVal)
            low, high = self.PLAIN_RANGE
            self._plain = 10.0**minVal >= low * (1 - 1e-9) and 10.0**maxVal < high
        return super().logTickValues(minVal, maxVal, size, stdTicks)

    def logTickStrings(self, values: list[float], scale: float, spacing: float) -> list[str]:
        labelled = (1, 2, 5) if self._pixels_per_decade >= self.ROOM_FOR_MINOR_LABELS else (1,)
        strings = []
        for exponent in values:
            value = 10.0 ** float(exponent) * scale
            power = math.floor(math.log10(value) + 1e-9) if value > 0 else 0
            mantissa = round(value / 10.0**power) if value > 0 else 0
            strings.append(log_tick_label(value, plain=self._plain) if mantissa in labelled else "")
        return strings


def log_tick_label(value: float, *, plain: bool) -> str:
    """A log axis's tick label: a plain number ("0.002", "5000"), or a power of ten ("10⁻⁵", "2·10⁶").

    >>> log_tick_label(0.002, plain=True), log_tick_label(2e6, plain=False), log_tick_label(1e-5, plain=False)
    ('0.002', '2·10⁶', '10⁻⁵')
    """
    if plain:
        return f"{value:.10g}"
    exponent = math.floor(math.log10(value) + 1e-9)
    mantissa = round(value / 10.0**exponent)
    power = "10" + str(exponent).translate(_SUPERSCRIPTS)
    return power if mantissa == 1 else f"{mantissa}·{power}"


_SUPERSCRIPTS = str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹")


class PlotView(QWidget):
    """A titled pyqtgraph plot with export buttons, "Reset view" and, if it uses true data,
    a warning banner.

    ``export_png``/``export_svg``/``export_csv`` take a path (tests, scripts) or, with
    none, ask with a file dialog (pyqtgraph's ``export(path=None)`` convention). The export
    buttons of a view that reads the true data ask first (:meth:`export_clicked`).
    The legend sits in a row under the chart, where it covers no data (the first bar, the
    first point of a line); ``legend_below=False`` puts it over the top-left corner instead,
    for a figure that keeps room there.
    """

    def __init__(self, title: str, *, uses_true_data: bool = False, legend_below: bool = True,
                 parent: QWidget | None = None):
        super().__init__(parent)
        self.uses_true_data = uses_true_data
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        self.banner = Banner("warning", TRUE_DATA_WARNING)
        self.banner.setVisible(uses_true_data)
        layout.addWidget(self.banner)
        self.plot_widget = ChartWidget(axisItems={"bottom": LogAwareAxis("bottom"), "left": LogAwareAxis("left")})
        self.plot_widget.setBackground(None)
        self.plot_item: pg.PlotItem = self.plot_widget.getPlotItem()
        self.plot_item.setTitle(title)
        self.plot_item.showGrid(x=True, y=True, alpha=0.25)
        for axis in ("bottom", "left"):  # plain numbers: a "(x0.001)" unit prefix confuses more than it helps
            self.plot_item.getAxis(axis).enableAutoSIPrefix(False)
        if legend_below:
            # A row of the plot's own layout under the bottom axis: the legend then takes no
            # room from the data, and items added with a name still appear in it.
            self.legend = pg.LegendItem(offset=None, colCount=4)
            self.plot_item.layout.addItem(self.legend, 4, 1)
            self.plot_item.legend = self.legend
        else:
            self.legend = self.plot_item.addLegend(offset=(10, 10))
        self.plot_item.getViewBox().sigRangeChangedManually.connect(self._moved_by_user)
        layout.addWidget(self.plot_widget, 1)
        buttons = QHBoxLayout()
        self.empty_label = QLabel("")
        buttons.addWidget(self.empty_label)
        buttons.addStretch(1)
        self.reset_button = QPushButton("Reset view")
        self.reset_button.setToolTip(ZOOM_HINT)
        self.reset_button.setEnabled(False)
        self.reset_button.clicked.connect(self.reset_view)
        buttons.addWidget(self.reset_button)
        self.export_buttons: dict[str, QPushButton] = {}
        for text, fmt in (("PNG…", "png"), ("SVG…", "svg"), ("Data (CSV)…", "csv")):
            button = QPushButton(text)
            button.setToolTip(f"Export this view as {text.rstrip('…')}")
            button.clicked.connect(lambda _=False, f=fmt: self.export_clicked(f))
            buttons.addWidget(button)
            self.export_buttons[fmt] = button
        layout.addLayout(buttons)
        self._header: list[str] = []
        self._rows: list[Sequence[object]] = []
        #: The columns of the table that come from the release alone (a true-data view's noisy
        #: side, exported on its own when asked), or None: every column reads the true data.
        self.noisy_columns: tuple[int, ...] | None = None
        #: Asks before a true-data export (None: a message box of its own).
        self.true_data_question: TrueDataQuestion | None = None

    @property
    def title(self) -> str:
        """The title shown above the chart."""
        return str(self.plot_item.titleLabel.text)

    def set_title(self, title: str) -> None:
        self.plot_item.setTitle(title)

    # -- data behind the plot ---------------------------------------------------------
    def set_table(self, header: Sequence[str], rows: Sequence[Sequence[object]]) -> None:
        """The numbers drawn, as exported by :meth:`export_csv`."""
        self._header = list(header)
        self._rows = [list(r) for r in rows]
        self.empty_label.setText("" if rows else "No data yet")

    @property
    def table(self) -> tuple[list[str], list[list[object]]]:
        return self._header, [list(r) for r in self._rows]

    # -- view -------------------------------------------------------------------------
    def reset_view(self) -> None:
        """Undo the user's zooming and panning: the view the chart first showed its data in."""
        self._show_home()
        self.reset_button.setEnabled(False)

    def _show_home(self) -> None:
        """The chart's own view of its data (both axes fitted; subclasses fix an axis)."""
        view_box = self.plot_item.getViewBox()
        view_box.enableAutoRange(enable=True)
        view_box.updateAutoRange()  # now, not at the next paint: an export may follow at once

    def _moved_by_user(self, _axes: object) -> None:
        self.reset_button.setEnabled(True)

    # -- exports ----------------------------------------------------------------------
    def export_clicked(self, fmt: str) -> Path | None:
        """An export button: for a view that reads the true data, ask first what to write (and
        nothing when cancelled); then the file dialog. The file written, or None."""
        if not self.uses_true_data:
            return self.export_png() if fmt == "png" else self.export_svg() if fmt == "svg" else self.export_csv()
        noisy_side = fmt == "csv" and self.noisy_columns is not None
        ask = self.true_data_question or self._ask_true_data
        choice = ask(fmt, noisy_side)
        if choice == "noisy" and noisy_side:
            return self.export_csv(noisy_only=True)
        if choice != "true":
            return None
        if fmt == "csv":
            return self.export_csv()
        return self.export_png(marked=True) if fmt == "png" else self.export_svg(marked=True)

    def _ask_true_data(self, fmt: str, noisy_side: bool) -> str:
        box = QMessageBox(QMessageBox.Icon.Warning, "Export data computed from the true table?",
                          true_data_question_text(fmt, noisy_side), QMessageBox.StandardButton.NoButton, self)
        keys = ("noisy", "true", "cancel") if noisy_side else ("true", "cancel")
        buttons = {box.addButton(TRUE_DATA_CHOICES[key], QMessageBox.ButtonRole.AcceptRole
                                 if key != "cancel" else QMessageBox.ButtonRole.RejectRole): key for key in keys}
        first = next(iter(buttons))
        box.setDefaultButton(first)
        box.setEscapeButton(list(buttons)[-1])
        box.exec()
        return buttons.get(box.clickedButton(), "cancel")  # type: ignore[call-overload]

    def export_png(self, path: str | Path | None = None, *, marked: bool = False) -> Path | None:
        """The plot as PNG; ``marked`` adds :data:`TRUE_DATA_MARK` to its title."""
        def render() -> bytes:
            with self._marked_title(marked):
                exporter = exporters.ImageExporter(self.plot_item)
                exporter.parameters()["width"] = max(800, int(self.plot_widget.width()))
                return _png_bytes(exporter.export(toBytes=True))

        return self._write(path, "PNG image (*.png)", render)

    def export_svg(self, path: str | Path | None = None, *, marked: bool = False) -> Path | None:
        """The plot as SVG; ``marked`` adds :data:`TRUE_DATA_MARK` to its title."""
        # pyqtgraph 0.14's SVGExporter cannot parse the closed paths ("... Z") that Qt 6.12
        # writes (pyqtgraph issue #3485), so the plot is drawn through Qt's own SVG generator.
        def render() -> bytes:
            with self._marked_title(marked):
                return self._svg_bytes()

        return self._write(path, "SVG image (*.svg)", render)

    @contextlib.contextmanager
    def _marked_title(self, marked: bool) -> Iterator[None]:
        """While an image is drawn: :data:`TRUE_DATA_MARK` as a second, red title line."""
        if not marked:
            yield
            return
        title = self.plot_item.titleLabel.text
        self.plot_item.setTitle(
            f"{title}<br><span style='color:{MARK_COLOUR}; font-weight:bold'>{html.escape(TRUE_DATA_MARK)}</span>"
        )
        # The title item is as tall as its row (pyqtgraph's setTitle caps it at one line, 30
        # pixels) and centres its text: two lines in one line's height lose their top.
        label = self.plot_item.titleLabel
        height = max(MARKED_TITLE_HEIGHT, math.ceil(label.item.boundingRect().height()) + 6)
        label.setMaximumHeight(height)
        self.plot_item.layout.setRowFixedHeight(0, height)
        self.plot_item.layout.activate()
        try:
            yield
        finally:
            self.plot_item.setTitle(title)
            self.plot_item.layout.activate()

    def _svg_bytes(self) -> bytes:
        data = QByteArray()
        buffer = QBuffer(data)
        buffer.open(QIODevice.OpenModeFlag.WriteOnly)
        generator = QSvgGenerator()
        generator.setOutputDevice(buffer)
        size = self.plot_widget.size()
        generator.setSize(size)
        generator.setViewBox(QRect(0, 0, size.width(), size.height()))
        generator.setTitle(self.plot_item.titleLabel.text or "Privelet Studio plot")
        painter = QPainter(generator)
        self.plot_widget.render(painter)
        painter.end()
        buffer.close()
        return bytes(data.data())

    def export_csv(self, path: str | Path | None = None, *, noisy_only: bool = False) -> Path | None:
        """The numbers drawn as CSV. A view that reads the true data writes them all, its first
        line ``# `` + :data:`TRUE_DATA_MARK`, or with ``noisy_only`` its noisy columns alone."""
        if noisy_only and self.noisy_columns is None:
            raise ValueError("this view has no noisy side to export alone")
        keep = self.noisy_columns if noisy_only else None

        def pick(row: Sequence[object]) -> list[object]:
            return list(row) if keep is None else [row[i] for i in keep]

        def table() -> bytes:
            text = io.StringIO()
            if self.uses_true_data and not noisy_only:
                text.write(f"# {TRUE_DATA_MARK}\n")
            writer = csv.writer(text, lineterminator="\n")
            writer.writerow(pick(self._header))
            writer.writerows(pick(row) for row in self._rows)
            return text.getvalue().encode("utf-8")

        return self._write(path, "CSV table (*.csv)", table)

    def _write(self, path: str | Path | None, pattern: str, render: Callable[[], bytes]) -> Path | None:
        target = self._target(path, pattern)
        if target is None:
            return None
        data = render()
        with atomic_write(target, force=True) as handle:  # never a half-written file
            handle.write(data)
        return target

    def _target(self, path: str | Path | None, pattern: str) -> Path | None:
        if path is None:
            chosen, _ = QFileDialog.getSaveFileName(self, "Export", "", pattern)
            if not chosen:
                return None
            path = chosen
        return Path(path)


def true_data_question_text(fmt: str, noisy_side: bool) -> str:
    """What the question before a true-data export says."""
    what = "chart" if fmt in ("png", "svg") else "table"
    text = (f"This {what} was computed from the true table, on this machine: it is not private. Exported, it says "
            "so in the file itself; keep such a file on this machine and never publish it.")
    if noisy_side:
        text += " The noisy counts alone come from the release: exported on their own, they may be published with it."
    return text


def _png_bytes(image: QImage) -> bytes:
    data = QByteArray()
    buffer = QBuffer(data)
    buffer.open(QIODevice.OpenModeFlag.WriteOnly)
    image.save(buffer, "PNG")  # type: ignore[call-overload]  # the stubs want bytes, PySide6 wants str
    buffer.close()
    return bytes(data.data())


#: What a point of a chart of error by coverage group stands for (expected or measured).
COVERAGE_GROUPS_TIP = ("Each point: the queries of one coverage group (at most five groups of about as many queries, "
                       "queries of the same coverage always together), their average coverage and average error")


class ErrorByCoveragePlot(PlotView):
    """Average error per coverage quintile, Basic against Privelet+ (Figures 8/9), log-log.

    Log coverage too: most random queries cover a tiny fraction of the matrix, and on a
    log-log plot Basic's error, linear in coverage, is a line of slope one.

    ``error`` is the :class:`QuintileRow` field drawn: ``"square_error"`` or ``"relative_error"``;
    ``group_column`` names the rows' group in the table and its CSV (the paper's quintiles, or
    the coverage groups of :func:`~privelet_gui.engine.coverage_summary`). The legend lists the
    lines of the last :meth:`set_rows`, in its order.
    """

    def __init__(self, title: str, *, error: str = "square_error", uses_true_data: bool = False,
                 legend_below: bool = True, group_column: str = "quintile", parent: QWidget | None = None):
        super().__init__(title, uses_true_data=uses_true_data, legend_below=legend_below, parent=parent)
        self.error = error
        self.group_column = group_column
        self._legend_entries: list[tuple[str, str]] = []
        self.plot_item.setLogMode(x=True, y=True)
        self.plot_item.setLabel("bottom", "average query coverage (fraction of the matrix, log scale)")
        label = "average square error" if error == "square_error" else "average relative error"
        label += " (log scale)"
        self.plot_item.setLabel("left", label)
        # Curves are made once and then only given new data: removing and re-adding plot
        # items on every update is slow, and crashed pyqtgraph 0.14 with PySide6 6.12 here.
        self._curves: dict[str, pg.PlotDataItem] = {}

    def _curve(self, mechanism: str) -> pg.PlotDataItem:
        if mechanism not in self._curves:
            colour = MECHANISM_COLOURS.get(mechanism, "#444444")
            # Made without a name (the plot item would list it in the legend for good): set_rows
            # names it and keeps the legend to the lines of its rows.
            self._curves[mechanism] = self.plot_item.plot(
                [], [], pen=pg.mkPen(colour, width=2), symbol="o", symbolBrush=colour, symbolPen=None,
            )
        return self._curves[mechanism]

    def set_rows(self, rows: Mapping[str, Sequence[QuintileRow]], *, epsilon: float | None = None,
                 names: Mapping[str, str] | None = None) -> None:
        """Draw one line per mechanism (``{"basic": rows, "privelet+": rows}``), named in the
        legend as people write them, or as ``names`` says (a mechanism with no rows yet is
        still named: "Best strategy: choosing..."). The first line is drawn over the others."""
        table = []
        for mechanism in self._curves.keys() - rows.keys():
            self._curves[mechanism].setData([], [])
        entries = [(mechanism, (names or {}).get(mechanism, mechanism_name(mechanism))) for mechanism in rows]
        if entries != self._legend_entries:
            self.legend.clear()
            for mechanism, name in entries:
                curve = self._curve(mechanism)
                curve.setData(name=name)
                self.legend.addItem(curve, html.escape(name))
            self._legend_entries = entries
        for order, (mechanism, quintiles) in enumerate(rows.items()):
            self._curve(mechanism).setZValue(len(rows) - order)
            xs = np.array([r.coverage for r in quintiles])
            ys = np.array([getattr(r, self.error) for r in quintiles])
            good = np.isfinite(xs) & np.isfinite(ys) & (ys > 0)
            self._curve(mechanism).setData(xs[good], ys[good])
            for r in quintiles:
                table.append([
                    "" if epsilon is None else epsilon, mechanism, r.quintile, r.coverage, getattr(r, self.error), r.queries,
                ])
        self.set_table(["epsilon", "mechanism", self.group_column, "average_coverage", self.error, "queries"], table)


class AttributeFactorPlot(PlotView):
    """Each attribute's worst-case variance factor, transformed versus left in S_A.

    Bars on a log scale: the taller bar of an attribute is what it multiplies the
    worst-case variance by; putting it in S_A swaps one bar for the other.
    """

    def __init__(self, parent: QWidget | None = None):
        super().__init__("Worst-case variance factor per attribute", parent=parent)
        self._y_range = (0.0, 1.0)
        # Log axis: bars are drawn with height log10(factor), the axis labels the factor itself.
        self.plot_item.setLogMode(x=False, y=True)
        self.plot_item.setLabel("left", "factor (log scale)")
        self.bars = {
            kind: pg.BarGraphItem(x=[], height=[], width=0.38, brush=MECHANISM_COLOURS[key], pen=None, name=name)
            for kind, key, name in (
                ("transformed", "privelet+", "wavelet (not in S_A)"),
                ("untransformed", "basic", "untransformed (in S_A)"),
            )
        }
        for bars in self.bars.values():
            self.plot_item.addItem(bars)

    def set_factors(self, factors: Sequence[AttributeFactors], sa: Sequence[str]) -> None:
        chosen = set(sa)
        xs = np.arange(len(factors), dtype=float)
        transformed = np.array([f.transformed for f in factors])
        untransformed = np.array([f.untransformed for f in factors])
        # The option an attribute does not use (transformed or in S_A) is drawn faint.
        for kind, offset, values, colour, in_use in (
            ("transformed", -0.2, transformed, MECHANISM_COLOURS["privelet+"], [f.name not in chosen for f in factors]),
            ("untransformed", 0.2, untransformed, MECHANISM_COLOURS["basic"], [f.name in chosen for f in factors]),
        ):
            brushes = [pg.mkBrush(colour if used else colour + "55") for used in in_use]
            self.bars[kind].setOpts(x=xs + offset, height=np.log10(np.maximum(values, 1e-12)), brushes=brushes)
        axis = self.plot_item.getAxis("bottom")
        axis.setTicks([[(i, f.name) for i, f in enumerate(factors)]])
        top = max(1.0, float(max(transformed.max(initial=1.0), untransformed.max(initial=1.0))))
        self._y_range = (0.0, math.log10(top) * 1.1 + 0.1)
        self.plot_item.setYRange(*self._y_range)
        self.set_table(
            ["attribute", "size", "transformed_factor", "untransformed_factor", "in_sa"],
            [[f.name, f.size, f.transformed, f.untransformed, f.name in chosen] for f in factors],
        )

    def _show_home(self) -> None:
        view_box = self.plot_item.getViewBox()
        view_box.enableAutoRange(axis=pg.ViewBox.XAxis, enable=True)
        view_box.updateAutoRange()
        self.plot_item.setYRange(*self._y_range)


class MarginalComparisonPlot(PlotView):
    """True and noisy one-attribute marginals side by side (uses the true data)."""

    def __init__(self, parent: QWidget | None = None):
        super().__init__("Marginal counts: true and noisy", uses_true_data=True, parent=parent)
        self.plot_item.setLabel("left", "count")
        self.bars = {
            key: pg.BarGraphItem(x=[], height=[], width=0.38, brush=MECHANISM_COLOURS[key], pen=None, name=name)
            for key, name in (("true", "true"), ("noisy", "noisy (released)"))
        }
        for bars in self.bars.values():
            self.plot_item.addItem(bars)
        self.noisy_columns = (0, 2)  # the values and their noisy counts: the release's alone

    def set_marginals(
        self, attribute: str, labels: Sequence[str], true: np.ndarray, noisy: np.ndarray,
        shown: Sequence[str] | None = None,
    ) -> None:
        """Draw an attribute's marginals: ``labels`` are its codes, ``shown`` their display
        labels (the axis shows these; the table has them beside the codes), if it has any."""
        xs = np.arange(len(labels), dtype=float)
        self.bars["true"].setOpts(x=xs - 0.2, height=np.asarray(true, dtype=float))
        self.bars["noisy"].setOpts(x=xs + 0.2, height=np.asarray(noisy, dtype=float))
        self.plot_item.setLabel("bottom", attribute)
        _label_axis(self.plot_item.getAxis("bottom"), shown or labels, 0.0)
        counts = [[float(t), float(n)] for t, n in zip(true, noisy)]
        if shown is None:
            self.noisy_columns = (0, 2)
            self.set_table([attribute, "true_count", "noisy_count"], [[code, *c] for code, c in zip(labels, counts)])
            return
        self.noisy_columns = (0, 1, 3)
        self.set_table(
            [attribute, attribute + LABEL_SUFFIX, "true_count", "noisy_count"],
            [[code, text, *c] for code, text, c in zip(labels, shown, counts)],
        )


class HeatmapPlot(PlotView):
    """A noisy two-attribute marginal as a heat map (the release only: no true data)."""

    def __init__(self, parent: QWidget | None = None):
        super().__init__("Noisy two-attribute marginal", parent=parent)
        self.image = pg.ImageItem()
        self.plot_item.addItem(self.image)
        self.colour_bar = pg.ColorBarItem(colorMap=pg.colormap.get("viridis"), label="noisy count")
        self.colour_bar.setImageItem(self.image, insert_in=self.plot_item)

    def set_marginal(
        self, rows: tuple[str, Sequence[str]], columns: tuple[str, Sequence[str]], values: np.ndarray,
        shown: tuple[Sequence[str] | None, Sequence[str] | None] = (None, None),
    ) -> None:
        """Draw a two-attribute marginal: ``rows`` and ``columns`` are (attribute, codes),
        ``shown`` their display labels where they have some (on the axes, and in the table
        beside the codes)."""
        values = np.asarray(values, dtype=float)
        self.image.setImage(values, autoLevels=False)
        low, high = float(values.min()), float(values.max())
        self.colour_bar.setLevels((low, high if high > low else low + 1))
        self.plot_item.setLabel("bottom", rows[0])
        self.plot_item.setLabel("left", columns[0])
        # Cell i spans [i, i + 1]: label its middle.
        for axis, labels, texts in (("bottom", rows[1], shown[0]), ("left", columns[1], shown[1])):
            _label_axis(self.plot_item.getAxis(axis), texts or labels, 0.5)
        header: list[str] = []
        keys: list[list[list[str]]] = []
        for (name, labels), texts in zip((rows, columns), shown, strict=True):
            header += [name] if texts is None else [name, name + LABEL_SUFFIX]
            keys.append([[code] if texts is None else [code, texts[i]] for i, code in enumerate(labels)])
        self.set_table(
            [*header, "noisy_count"],
            [[*r, *c, float(values[i, j])] for i, r in enumerate(keys[0]) for j, c in enumerate(keys[1])],
        )
        self.plot_item.getViewBox().autoRange()


def _label_axis(axis: pg.AxisItem, labels: Sequence[str], offset: float) -> None:
    """Label an axis of categories with ``labels`` (value ``i`` at ``i + offset``): about 20 at
    most, a long label cut to 24 characters (the table has it whole)."""
    step = max(1, len(labels) // 20)
    axis.setTicks([[(i + offset, _short_label(labels[i])) for i in range(0, len(labels), step)]])


def _short_label(text: str, most: int = 24) -> str:
    return text if len(text) <= most else text[: most - 1] + "…"
