"""Error-preview plots: fed with data, exported as PNG/SVG/CSV; true-data views are labelled."""

from __future__ import annotations

import csv

import numpy as np
import pytest
from PySide6.QtGui import QImage

from privelet_gui.bench import brazil_schema
from privelet_gui.engine import random_workload, variance_model
from privelet_gui.engine.evaluation import expected_errors
from privelet_gui.qt.plots import (
    TRUE_DATA_WARNING,
    AttributeFactorPlot,
    ErrorByCoveragePlot,
    HeatmapPlot,
    MarginalComparisonPlot,
)


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
