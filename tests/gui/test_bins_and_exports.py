"""The Attributes step's bin edges and open ends, and exports with their description and
per-cell standard errors, driven as a custodian would (issue 39, items 8 and 10)."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
from PySide6.QtCore import Qt

from privelet_gui import io as pio
from privelet_gui.engine import NumericBins, RangeQuery
from privelet_gui.io.releases import STANDARD_ERROR_COLUMN, cell_standard_errors

from .conftest import wait_for_best_strategy

SMALL = ("native-country", "education")  # excluded for quick releases and exports


def _type_edges(qtbot, editor, text: str) -> None:
    editor.bin_edges.setFocus()
    editor.bin_edges.selectAll()
    qtbot.keyClicks(editor.bin_edges, text)
    qtbot.keyClick(editor.bin_edges, Qt.Key.Key_Return)  # editingFinished


def test_bins_between_edges_with_an_open_end_and_undo(sample_window, qtbot):
    window = sample_window
    doc = window.document
    editor = window.attributes_panel.editor
    window.go_to("attributes")
    window.attributes_panel.select("age")
    editor.mode.setCurrentIndex(editor.mode.findData("bins"))
    editor.start.setValue(0)
    editor.stop.setValue(100)
    editor.bin_width.setValue(25)
    assert not editor.bin_edges.isEnabled() and editor.equal_bins.isChecked()

    editor.edge_bins.click()  # starts from the equal bins' own edges
    assert doc.config("age").bin_edges == (0, 25, 50, 75, 100)
    assert editor.bin_edges.isEnabled() and editor.bin_edges.text() == "0, 25, 50, 75, 100"
    assert not editor.start.isEnabled()

    _type_edges(qtbot, editor, "17, 25, 35, 50, 65")
    assert doc.config("age").bin_edges == (17, 25, 35, 50, 65)
    assert doc.schema()["age"].bins == NumericBins.from_edges([17, 25, 35, 50, 65])
    status = doc.step_status("attributes")
    assert status.state == "error" and "outside the domain" in status.message  # ages run to 90

    editor.open_above.click()
    age = doc.schema()["age"]
    assert age.bins == NumericBins.from_edges([17, 25, 35, 50, 65], open_above=True)
    assert list(age.labels) == ["[17, 25)", "[25, 35)", "[35, 50)", "[50, 65)", "[65, inf)"]
    assert editor.bins_count.text() == "= 5 bins: [17, 25), [25, 35), ..., [65, inf)"
    assert doc.step_status("attributes").state == "done"  # nothing is outside an open end
    assert "5 bins at edges 17, 25, 35, 50, 65, open above" in doc.config("age").domain_text()
    assert pio.schema_to_json(doc.schema())["version"] == 3  # a schema export keeps the edges

    _type_edges(qtbot, editor, "17, 10")  # refused where it is typed: nothing changes
    assert "the edges must increase, but 10 comes after 17" in editor.issues.text()
    assert doc.config("age").bin_edges == (17, 25, 35, 50, 65)
    _type_edges(qtbot, editor, "17, 2O")
    assert "'2O' is not a number" in editor.issues.text()

    window.act_undo.trigger()  # open above
    assert not doc.config("age").open_above and not editor.open_above.isChecked()
    window.act_undo.trigger()  # the typed edges
    assert doc.config("age").bin_edges == (0, 25, 50, 75, 100) and editor.bin_edges.text() == "0, 25, 50, 75, 100"
    editor.equal_bins.click()
    assert doc.config("age").bin_edges is None and doc.schema()["age"].bins == NumericBins(0, 100, 25)


def test_clamped_bins_say_so_in_the_attributes_step(sample_window):
    doc = sample_window.document
    editor = sample_window.attributes_panel.editor
    sample_window.attributes_panel.select("age")
    editor.mode.setCurrentIndex(editor.mode.findData("bins"))
    editor.start.setValue(20)
    editor.stop.setValue(80)
    editor.bin_width.setValue(20)
    editor.out_of_range.setCurrentIndex(editor.out_of_range.findData("clamp"))
    assert list(doc.schema()["age"].labels) == ["(-inf, 40)", "[40, 60)", "[60, inf)"]
    assert editor.bins_count.text() == "= 3 bins: (-inf, 40), [40, 60), [60, inf)"


def test_export_with_standard_errors_names_its_description(sample_window, qtbot, tmp_path, dialogs):
    window = sample_window
    doc = window.document
    for name in SMALL:
        doc.set_attribute(name, include=False)
    doc.measure_error = False
    with qtbot.waitSignal(window.releaseFinished, timeout=60_000) as finished:
        wait_for_best_strategy(window, qtbot)
        assert window.run_release()
    release = finished.args[0].release
    panel = window.release_panel
    panel.counts.setCurrentIndex(panel.counts.findData("nonnegative"))
    assert not panel.standard_errors.isEnabled()  # post-processed counts have no such error
    panel.counts.setCurrentIndex(panel.counts.findData("noisy"))
    assert panel.standard_errors.isEnabled()
    panel.standard_errors.click()
    assert panel.standard_error()

    target = tmp_path / "adult.csv"
    dialogs.save_path_answer = target
    with qtbot.waitSignal(window.exportFinished, timeout=60_000):
        panel.export_csv.click()
    assert dialogs.errors == []
    message = window.statusBar().currentMessage()
    assert message == "Wrote adult.csv and, beside it, adult.csv.metadata.json (epsilon, mechanism and noise scale)."
    meta = json.loads((tmp_path / "adult.csv.metadata.json").read_text())
    assert (meta["epsilon"], meta["mechanism"], meta["standard_error_column"]) == (
        release.epsilon, release.mechanism, STANDARD_ERROR_COLUMN)
    frame = pd.read_csv(target, dtype={STANDARD_ERROR_COLUMN: float}, usecols=[STANDARD_ERROR_COLUMN])
    assert np.allclose(frame[STANDARD_ERROR_COLUMN].to_numpy(), cell_standard_errors(release), rtol=1e-12)
    first = {a.name: a.labels[0] for a in release.schema}
    assert frame[STANDARD_ERROR_COLUMN][0] == np.sqrt(release.variance(RangeQuery.build(release.schema, first)))

    parquet = tmp_path / "adult.parquet"
    dialogs.save_path_answer = parquet
    with qtbot.waitSignal(window.exportFinished, timeout=60_000):
        panel.export_parquet.click()
    assert window.statusBar().currentMessage() == (
        "Wrote adult.parquet (epsilon, mechanism and noise scale are in its metadata).")
    assert STANDARD_ERROR_COLUMN in pd.read_parquet(parquet).columns
