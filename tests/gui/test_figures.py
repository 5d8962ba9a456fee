"""Figures of ``privelet evaluate``: drawn offscreen, log scale, the custodian-only label inside the image."""

from __future__ import annotations

import numpy as np
import pytest
from PySide6.QtGui import QImage
from PySide6.QtWidgets import QApplication

from privelet_gui.engine import QuintileRow
from privelet_gui.engine.accuracy.evaluation import EvaluationRow
from privelet_gui.io import OutputExistsError
from privelet_gui.qt.figures import (
    CUSTODIAN_LABEL,
    LABEL_COLOUR,
    ensure_application,
    error_figure,
    render_error_figure,
    rows_by_epsilon,
    write_error_figure,
)
from privelet_gui.qt.plots import MECHANISM_COLOURS, TRUE_DATA_WARNING, ErrorByCoveragePlot

COVERAGE = [4e-5, 2.3e-4, 1.1e-3, 6e-2, 0.43]
ROWS = {
    "basic": [QuintileRow(q + 1, c, 8e8 * c, 0.3 / (q + 1), 8000) for q, c in enumerate(COVERAGE)],
    "privelet+": [QuintileRow(q + 1, c, 2e6 * (1 + q % 2), 2.0 / (q + 1), 8000) for q, c in enumerate(COVERAGE)],
}


def rgb(image: QImage, step: int = 2) -> np.ndarray:
    pixels = np.array([[image.pixel(x, y) for x in range(0, image.width(), step)]
                       for y in range(0, image.height(), step)], dtype=np.uint32)
    return np.stack([(pixels >> 16) & 255, (pixels >> 8) & 255, pixels & 255], axis=-1).astype(int)


def near(area: np.ndarray, colour: str, tolerance: int = 25) -> int:
    target = np.array([int(colour[i:i + 2], 16) for i in (1, 3, 5)])
    return int((np.abs(area - target).max(axis=-1) <= tolerance).sum())


def test_ensure_application_reuses_the_running_one(qapp):
    assert ensure_application() is QApplication.instance() is qapp


def test_figure_is_log_log_labelled_and_holds_the_data(qtbot):
    view = error_figure(ROWS, epsilon=0.75)
    qtbot.addWidget(view)
    assert view.uses_true_data and view.banner.text() == TRUE_DATA_WARNING
    title = view.plot_item.titleLabel.text
    assert CUSTODIAN_LABEL.replace("'", "&#x27;") in title and "\u03b5 = 0.75" in title
    assert view.plot_item.ctrl.logYCheck.isChecked() and view.plot_item.ctrl.logXCheck.isChecked()
    header, table = view.table
    assert header == ["epsilon", "mechanism", "quintile", "average_coverage", "square_error", "queries"]
    assert [row[1] for row in table] == ["basic"] * 5 + ["privelet+"] * 5
    assert [row[4] for row in table[:5]] == [r.square_error for r in ROWS["basic"]]
    curves = view.plot_item.listDataItems()
    assert [c.name() for c in curves] == ["Basic", "Privelet+"]
    xs, ys = curves[0].getData()  # as drawn: log10 of the data
    np.testing.assert_allclose(10**xs, COVERAGE)
    np.testing.assert_allclose(10**ys, [r.square_error for r in ROWS["basic"]])
    relative = error_figure(ROWS, epsilon=0.75, error="relative_error")
    qtbot.addWidget(relative)
    assert relative.table[1][0][4] == ROWS["basic"][0].relative_error
    assert "relative error" in relative.plot_item.titleLabel.text
    with pytest.raises(ValueError, match="error must be one of"):
        error_figure(ROWS, epsilon=1.0, error="absolute")


@pytest.mark.parametrize("error", ["square_error", "relative_error"])
def test_exported_png_is_drawn_and_carries_the_label(qtbot, error):
    data = render_error_figure(ROWS, epsilon=1.0, error=error, width=1200)
    image = QImage.fromData(data, "PNG")
    assert not image.isNull() and image.width() == 1200 and image.height() > 400
    pixels = rgb(image)
    assert len(np.unique(pixels.reshape(-1, 3), axis=0)) > 10  # not blank
    assert near(pixels, MECHANISM_COLOURS["basic"]) > 20 and near(pixels, MECHANISM_COLOURS["privelet+"]) > 20
    # the custodian-only label: bold red text in the title strip, part of the exported image itself
    assert near(pixels[: 70 // 2], LABEL_COLOUR) > 100
    assert near(pixels[70 // 2:], LABEL_COLOUR) == 0  # nothing else is in that colour


def test_the_plain_plot_export_alone_would_lose_the_banner(qtbot, tmp_path):
    """Why figures.py writes the label into the plot: the app's banner is outside the exported item."""
    view = ErrorByCoveragePlot("plain", uses_true_data=True)
    qtbot.addWidget(view)
    view.set_rows(ROWS, epsilon=1.0)
    view.resize(900, 600)
    view.show()
    qtbot.waitExposed(view)
    image = QImage(str(view.export_png(tmp_path / "plain.png")))
    assert not image.isNull() and near(rgb(image), LABEL_COLOUR) == 0


def test_write_error_figure_is_atomic_and_never_overwrites_without_force(qtbot, tmp_path):
    path = tmp_path / "figure.png"
    assert write_error_figure(path, ROWS, epsilon=0.5) == path
    first = path.read_bytes()
    assert first.startswith(b"\x89PNG\r\n\x1a\n")
    with pytest.raises(OutputExistsError):
        write_error_figure(path, ROWS, epsilon=0.5)
    assert path.read_bytes() == first
    write_error_figure(path, ROWS, epsilon=0.5, error="relative_error", force=True)
    assert path.read_bytes() != first
    assert sorted(p.name for p in tmp_path.iterdir()) == ["figure.png"]  # no temporary file left


def test_rows_by_epsilon_groups_in_order():
    rows = [EvaluationRow(e, m, r) for e in (0.5, 1.0) for m in ("basic", "privelet+") for r in ROWS[m]]
    grouped = rows_by_epsilon(rows)
    assert list(grouped) == [0.5, 1.0]
    assert grouped[1.0] == ROWS
