"""Error-preview plots: fed with data, exported as PNG/SVG/CSV; true-data views are labelled."""

from __future__ import annotations

import csv

import numpy as np
import pytest
from PySide6.QtCore import QPoint, QPointF, Qt
from PySide6.QtGui import QImage, QWheelEvent
from PySide6.QtWidgets import QApplication, QFileDialog, QScrollArea, QVBoxLayout, QWidget

from privelet_gui.bench import brazil_schema
from privelet_gui.engine import random_workload, variance_model
from privelet_gui.engine.accuracy.evaluation import expected_errors
from privelet_gui.qt.plots import (
    MARK_COLOUR,
    TRUE_DATA_MARK,
    TRUE_DATA_WARNING,
    AttributeFactorPlot,
    ErrorByCoveragePlot,
    HeatmapPlot,
    MarginalComparisonPlot,
)
from tests.gui.test_figures import near, rgb


@pytest.fixture
def preview_rows():
    schema = brazil_schema()
    workload = random_workload(schema, 2000, np.random.default_rng(0))
    return expected_errors(schema, 1.0, ["Age", "Gender"], workload)


def check_exports(view, tmp_path, qtbot):
    view.resize(700, 450)
    view.show()
    qtbot.waitExposed(view)
    png = view.export_png(tmp_path / "plot.png")
    svg = view.export_svg(tmp_path / "plot.svg")
    table = view.export_csv(tmp_path / "plot.csv")
    image = QImage(str(png))
    assert not image.isNull() and image.width() >= 800 and image.height() > 100
    # not a blank image: the plot drew something in more than one colour
    colours = {image.pixel(x, y) for x in range(0, image.width(), 7) for y in range(0, image.height(), 7)}
    assert len(colours) > 3
    assert svg.read_text(encoding="utf-8").lstrip().startswith("<?xml") and "<svg" in svg.read_text(encoding="utf-8")
    with table.open(newline="", encoding="utf-8") as handle:
        if view.uses_true_data:  # the file says so in itself
            assert handle.readline() == f"# {TRUE_DATA_MARK}\n"
        rows = list(csv.reader(handle))
    header, data = view.table
    assert rows[0] == header and len(rows) == len(data) + 1
    return rows


def test_expected_error_plot_is_data_free_and_exports(qtbot, tmp_path, preview_rows):
    view = ErrorByCoveragePlot("Expected error")
    qtbot.addWidget(view)
    view.set_rows(preview_rows, epsilon=1.0)
    assert not view.uses_true_data and view.banner.isHidden()
    rows = check_exports(view, tmp_path, qtbot)
    assert len(rows) == 1 + 10  # 5 quintiles x (Basic, Privelet+)
    by_mechanism = {m: [float(r[4]) for r in rows[1:] if r[1] == m] for m in ("basic", "privelet+")}
    assert by_mechanism["basic"][-1] > 10 * by_mechanism["privelet+"][-1]
    assert view.plot_item.ctrl.logYCheck.isChecked()  # log scale


def test_true_data_views_carry_the_custodian_only_label(qtbot, tmp_path, preview_rows):
    figure8 = ErrorByCoveragePlot("Measured error", uses_true_data=True)
    marginal = MarginalComparisonPlot()
    for view in (figure8, marginal):
        qtbot.addWidget(view)
        view.show()
        assert view.uses_true_data
        assert view.banner.isVisible() and view.banner.text() == TRUE_DATA_WARNING
    figure8.set_rows(preview_rows)
    marginal.set_marginals("sex", ["F", "M"], np.array([10.0, 12.0]), np.array([9.4, 13.1]))
    rows = check_exports(marginal, tmp_path, qtbot)
    assert rows[1] == ["F", "10.0", "9.4"]


@pytest.fixture
def saved_to(monkeypatch, tmp_path):
    """The file dialog answers with paths of a temporary folder, and records being asked."""
    asked: list[str] = []

    def answer(parent, title, start, pattern):
        asked.append(pattern)
        return str(tmp_path / f"export-{len(asked)}.{pattern.split('*.')[1][:3]}"), pattern

    monkeypatch.setattr(QFileDialog, "getSaveFileName", staticmethod(answer))
    return asked


def test_exporting_a_true_data_view_asks_first_and_marks_the_file(qtbot, tmp_path, saved_to):
    """Issue 39, item 2: "Data (CSV)..." of the true and noisy marginals asks; the noisy side
    alone has no true count; the whole table (and an image) says it holds true data."""
    marginal = MarginalComparisonPlot()
    qtbot.addWidget(marginal)
    marginal.resize(800, 500)
    marginal.show()
    qtbot.waitExposed(marginal)
    marginal.set_marginals("sex", ["F", "M"], np.array([10.0, 12.0]), np.array([9.4, 13.1]))
    questions: list[tuple[str, bool]] = []
    answer = "cancel"
    marginal.true_data_question = lambda fmt, noisy_side: questions.append((fmt, noisy_side)) or answer
    marginal.export_buttons["csv"].click()
    assert questions == [("csv", True)] and saved_to == []  # cancelled: not even the file dialog
    answer = "noisy"
    marginal.export_buttons["csv"].click()
    noisy = tmp_path / "export-1.csv"
    assert noisy.read_text(encoding="utf-8") == "sex,noisy_count\nF,9.4\nM,13.1\n"
    answer = "true"
    marginal.export_buttons["csv"].click()
    assert (tmp_path / "export-2.csv").read_text(encoding="utf-8") == (
        f"# {TRUE_DATA_MARK}\nsex,true_count,noisy_count\nF,10.0,9.4\nM,12.0,13.1\n")
    marginal.export_buttons["png"].click()
    image = QImage(str(tmp_path / "export-3.png"))
    assert not image.isNull() and near(rgb(image), MARK_COLOUR) > 100  # the red mark line
    assert questions[-1] == ("png", False) and marginal.plot_item.titleLabel.text == "Marginal counts: true and noisy"
    marginal.export_buttons["svg"].click()
    assert "USES THE TRUE DATA" in (tmp_path / "export-4.svg").read_text(encoding="utf-8")
    plain = QImage(str(marginal.export_png(tmp_path / "plain.png")))  # the title is back: no mark
    assert near(rgb(plain), MARK_COLOUR) == 0
    # a view with no noisy side offers none
    figure8 = ErrorByCoveragePlot("Measured error", uses_true_data=True)
    qtbot.addWidget(figure8)
    figure8.true_data_question = marginal.true_data_question
    answer = "noisy"  # not on offer: nothing written
    figure8.export_buttons["csv"].click()
    assert questions[-1] == ("csv", False) and len(saved_to) == 4
    # a view of the release alone asks nothing
    heat = HeatmapPlot()
    qtbot.addWidget(heat)
    heat.set_marginal(("age", ["0", "1"]), ("sex", ["F", "M"]), np.arange(4.0).reshape(2, 2))
    heat.export_buttons["csv"].click()
    assert len(questions) == 6 and (tmp_path / "export-5.csv").read_text(encoding="utf-8").startswith("age,sex,noisy_count")


def test_a_marked_image_keeps_its_whole_title(qtbot, tmp_path):
    """The exported image's two title lines (the view's title, then the red mark) are both
    whole: the title item used to stay one line tall (pyqtgraph caps it at 30 pixels) and the
    centred two lines lost their top, cut at the image's edge (seen in a real window)."""
    marginal = MarginalComparisonPlot()
    qtbot.addWidget(marginal)
    marginal.resize(800, 500)
    marginal.show()
    qtbot.waitExposed(marginal)
    marginal.set_marginals("sex", ["F", "M"], np.array([10.0, 12.0]), np.array([9.4, 13.1]))
    image = QImage(str(marginal.export_png(tmp_path / "marked.png", marked=True)))
    background = image.pixel(image.width() - 1, 0)
    assert all(image.pixel(x, y) == background for y in range(3) for x in range(image.width()))  # nothing cut
    assert near(rgb(image), MARK_COLOUR) > 100
    assert marginal.plot_item.titleLabel.maximumHeight() == 30  # on screen: one line again


def test_factor_bars_and_heatmap(qtbot, tmp_path):
    schema = brazil_schema()
    bars = AttributeFactorPlot()
    qtbot.addWidget(bars)
    bars.set_factors(variance_model(schema).factors, ["Age", "Gender"])
    rows = check_exports(bars, tmp_path, qtbot)
    assert [r[0] for r in rows[1:]] == list(schema.names)
    assert [r[4] for r in rows[1:]] == ["True", "True", "False", "False"]
    heat = HeatmapPlot()
    qtbot.addWidget(heat)
    heat.set_marginal(("age", ["0", "1", "2"]), ("sex", ["F", "M"]), np.arange(6.0).reshape(3, 2))
    assert not heat.uses_true_data and heat.banner.isHidden()
    (tmp_path / "heat").mkdir()
    rows = check_exports(heat, tmp_path / "heat", qtbot)
    assert rows[1:3] == [["0", "F", "0.0"], ["0", "M", "1.0"]]


# -- the mouse wheel, reset view, the legend -------------------------------------------------------


def wheel(widget, *, modifiers=Qt.KeyboardModifier.NoModifier, notches=-3):
    """Turn the mouse wheel over the middle of ``widget`` (negative: towards the user, scroll down).

    QApplication hands a real (spontaneous) wheel event that a widget ignored on to its
    parent, and so on up to the window; an event made by a test is delivered to its receiver
    alone. So this walks the chain as ``QApplication::notify`` does for a real one: each
    widget gets the event, accepted by default, until one keeps it accepted.
    """
    position = QPointF(widget.width() / 2, widget.height() / 2)
    target = widget
    while target is not None:
        event = QWheelEvent(position, widget.mapToGlobal(QPointF(widget.width() / 2, widget.height() / 2)),
                            QPoint(0, 0), QPoint(0, 120 * notches), Qt.MouseButton.NoButton, modifiers,
                            Qt.ScrollPhase.NoScrollPhase, False)
        if QApplication.sendEvent(target, event) and event.isAccepted():
            return target
        if target.isWindow():
            return None
        position += QPointF(target.pos())
        target = target.parentWidget()
    return None


def flat(view_range):
    return [value for axis in view_range for value in axis]


@pytest.fixture
def scrolled_page(qtbot):
    """A page taller than its scroll area, with a chart in the middle of it (the Privacy step's layout)."""
    area = QScrollArea()
    area.setWidgetResizable(True)
    page = QWidget()
    layout = QVBoxLayout(page)
    layout.addSpacing(600)
    chart = ErrorByCoveragePlot("Expected error")
    chart.setMinimumHeight(300)
    layout.addWidget(chart)
    layout.addSpacing(900)
    area.setWidget(page)
    area.resize(600, 500)
    qtbot.addWidget(area)
    area.show()
    qtbot.waitExposed(area)
    area.verticalScrollBar().setValue(300)  # the chart is under the pointer
    return area, chart


def test_the_wheel_over_an_unfocused_chart_scrolls_the_page(scrolled_page, preview_rows, qtbot):
    area, chart = scrolled_page
    chart.set_rows(preview_rows)
    qtbot.wait(10)
    before = chart.plot_item.viewRange()
    assert not chart.plot_widget.hasFocus()
    taker = wheel(chart.plot_widget.viewport())
    assert taker is area.viewport()  # the chart, its view and the page let the event through
    assert area.verticalScrollBar().value() > 300  # the page moved
    assert chart.plot_item.viewRange() == before  # the chart did not zoom
    assert not chart.reset_button.isEnabled()


@pytest.mark.parametrize("how", ["ctrl", "focus"])
def test_ctrl_or_focus_zooms_the_chart_and_reset_view_brings_it_back(scrolled_page, preview_rows, qtbot, how):
    area, chart = scrolled_page
    chart.set_rows(preview_rows)
    qtbot.wait(10)
    home = chart.plot_item.viewRange()
    modifiers = Qt.KeyboardModifier.NoModifier
    if how == "ctrl":
        modifiers = Qt.KeyboardModifier.ControlModifier
    else:
        # only a click gives the focus (never Tab, nor being the first widget of a page)
        assert chart.plot_widget.focusPolicy() == Qt.FocusPolicy.ClickFocus
        chart.plot_widget.setFocus(Qt.FocusReason.MouseFocusReason)
        assert chart.plot_widget.hasFocus()
    for _ in range(5):  # away from the user: zoom in
        assert wheel(chart.plot_widget.viewport(), modifiers=modifiers, notches=3) is chart.plot_widget.viewport()
    zoomed = chart.plot_item.viewRange()
    assert area.verticalScrollBar().value() == 300  # the page stayed where it was
    width = lambda r: r[0][1] - r[0][0]  # noqa: E731
    assert width(zoomed) < 0.5 * width(home)
    assert chart.reset_button.isEnabled()
    chart.reset_button.click()
    # the fit pads by the symbols' size in pixels, measured at the zoom it starts from: 1% of the width
    assert flat(chart.plot_item.viewRange()) == pytest.approx(flat(home), abs=0.01 * width(home))
    assert not chart.reset_button.isEnabled()


def test_reset_view_keeps_the_factor_charts_own_range(qtbot):
    bars = AttributeFactorPlot()
    qtbot.addWidget(bars)
    bars.resize(600, 400)
    bars.show()
    bars.set_factors(variance_model(brazil_schema()).factors, ["Age"])
    qtbot.wait(10)
    home = bars.plot_item.viewRange()
    wheel(bars.plot_widget.viewport(), modifiers=Qt.KeyboardModifier.ControlModifier, notches=-10)
    assert flat(bars.plot_item.viewRange()) != pytest.approx(flat(home))
    bars.reset_view()
    # pyqtgraph's axes never give back the width long labels took while zoomed out: the bars'
    # padding, measured in pixels, then differs by a hair
    assert flat(bars.plot_item.viewRange()) == pytest.approx(flat(home), rel=1e-3)


def test_the_marginals_legend_sits_below_the_bars(qtbot):
    plot = MarginalComparisonPlot()
    qtbot.addWidget(plot)
    plot.resize(600, 450)
    plot.show()
    plot.set_marginals("sex", ["F", "M"], np.array([10.0, 12.0]), np.array([9.4, 13.1]))
    qtbot.waitExposed(plot)
    qtbot.wait(10)
    view_box = plot.plot_item.getViewBox()
    legend = plot.legend.mapRectToScene(plot.legend.boundingRect())
    data = view_box.mapRectToScene(view_box.boundingRect())
    assert legend.top() >= data.bottom()  # under the plotting area: it covers no bar
    assert [label.text for _, label in plot.legend.items] == ["true", "noisy (released)"]


def test_legends_name_mechanisms_as_people_write_them(qtbot, preview_rows):
    plot = ErrorByCoveragePlot("Measured error")
    qtbot.addWidget(plot)
    rows = {"privelet": preview_rows["privelet+"], **preview_rows}
    plot.set_rows(rows)
    assert [label.text for _, label in plot.legend.items] == ["Privelet", "Basic", "Privelet+"]
    colours = {plot._curves[m].opts["pen"].color().name() for m in rows}
    assert len(colours) == 3  # each mechanism its own colour


def test_log_axes_label_decades_in_one_style_and_minor_ticks_only_with_room(qtbot):
    import numpy as np

    from privelet_gui.qt.plots import LogAwareAxis

    axis = LogAwareAxis("bottom")
    minor = list(np.log10([2e-4, 3e-4, 5e-4, 1e-3, 2e-3]))
    # 4 decades over 400 pixels: only the decades are labelled
    axis.logTickValues(-4.0, 0.0, 400, [])
    assert axis.logTickStrings(minor, 1.0, 1.0) == ["", "", "", "0.001", ""]
    # 2 decades over 800 pixels: 2 and 5 too, never 3
    axis.logTickValues(-4.0, -2.0, 800, [])
    assert axis.logTickStrings(minor, 1.0, 1.0) == ["0.0002", "", "0.0005", "0.001", "0.002"]
    # an axis reaching 10^7: powers of ten throughout, 10^4 included
    axis.logTickValues(4.0, 7.0, 300, [])
    assert axis.logTickStrings([4.0, 5.0, 6.0, 7.0], 1.0, 1.0) == ["10⁴", "10⁵", "10⁶", "10⁷"]


def test_every_plot_view_uses_the_log_aware_axes(qtbot):
    from privelet_gui.qt.plots import ErrorByCoveragePlot, LogAwareAxis

    view = ErrorByCoveragePlot("t")
    qtbot.addWidget(view)
    assert all(isinstance(view.plot_item.getAxis(name), LogAwareAxis) for name in ("bottom", "left"))
