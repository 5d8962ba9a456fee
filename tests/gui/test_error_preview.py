"""Issue 5 in the app: the data-free error preview, the measured error (custodian only), the workbench."""

from __future__ import annotations

import numpy as np
import pytest
from PySide6.QtGui import QImage

from privelet_gui import io as pio
from privelet_gui.engine import ReleaseSpec, expected_errors, quintile_summary, random_workload, variance_model
from privelet_gui.gui.panels.privacy_panel import PREVIEW_QUERIES
from privelet_gui.qt.plots import TRUE_DATA_WARNING
from tests.gui.conftest import open_sample


def test_privacy_step_previews_the_expected_error_without_data(sample_window, qtbot):
    window = sample_window
    panel = window.privacy_panel
    window.go_to("privacy")
    schema = window.document.schema()
    qtbot.waitUntil(lambda: variance_model(schema).ready, timeout=10_000)
    qtbot.waitUntil(lambda: bool(panel.expected_plot.table[1]), timeout=10_000)
    window.document.set_sa(["age"])
    window.document.set_epsilon(0.5)
    _, rows = panel.expected_plot.table
    assert not panel.expected_plot.uses_true_data and panel.expected_plot.banner.isHidden()
    workload = random_workload(schema, PREVIEW_QUERIES, np.random.default_rng(0))
    # The release as published: shifted to the public number of rows (replace-one neighbours).
    coverage = workload.coverage(schema.shape)
    expected = {
        mechanism: quintile_summary(coverage, ReleaseSpec(schema, 0.5, mechanism, ("age",)).variances(workload))
        for mechanism in ("basic", "privelet+")
    }
    raw = expected_errors(schema, 0.5, ("age",), workload)
    drawn = {(r[1], r[2]): r[4] for r in rows}
    for mechanism, quintiles in expected.items():
        for q, r in zip(quintiles, raw[mechanism], strict=True):
            assert drawn[(mechanism, q.quintile)] == pytest.approx(q.square_error)
            assert q.square_error < r.square_error  # the shift lowers every quintile's error here
    assert "total equals the public number of rows" in panel.preview_note.text()
    window.document.set_privacy(neighbours="add-remove")  # n is private: the raw release
    raw = expected_errors(schema, 0.5, ("age",), workload, neighbours="add-remove")
    drawn_raw = {(r[1], r[2]): r[4] for r in panel.expected_plot.table[1]}
    for mechanism, quintiles in raw.items():
        for q in quintiles:
            assert drawn_raw[(mechanism, q.quintile)] == pytest.approx(q.square_error)
    assert "number of rows is private" in panel.preview_note.text()
    window.act_undo.trigger()
    # halving epsilon quadruples every variance: the preview follows live
    window.document.set_epsilon(0.25)
    again = {(r[1], r[2]): r[4] for r in panel.expected_plot.table[1]}
    assert again[("basic", 5)] == pytest.approx(4 * drawn[("basic", 5)])
    factors = {r[0]: r for r in panel.factor_plot.table[1]}
    assert factors["age"][4] is True and factors["sex"][4] is False
    assert factors["age"][2] == pytest.approx(variance_model(schema).factors[schema.index("age")].transformed)


def test_measured_error_marginals_and_workbench_after_a_release(sample_window, qtbot, tmp_path):
    window = sample_window
    window.document.set_epsilon(1.0)
    with qtbot.waitSignal(window.releaseFinished, timeout=120_000) as finished:
        assert window.run_release()
    outcome = finished.args[0]
    preview = outcome.preview
    assert preview is not None and set(preview.quintiles) >= {"basic", outcome.release.mechanism}
    panel = window.release_panel.preview
    # every view that reads the true data says so, visibly
    for view in (panel.square, panel.relative, panel.marginal):
        assert view.uses_true_data and view.banner.text() == TRUE_DATA_WARNING
        assert not view.banner.isHidden()
    assert panel.heatmap.banner.isHidden()  # the noisy release only
    assert len(panel.square.table[1]) == 5 * len(preview.quintiles)
    panel.tabs.setCurrentIndex(1)
    panel.marginal_attribute.setCurrentText("sex")
    # the noisy marginal of a release this size is summed in a task, off the GUI thread
    qtbot.waitUntil(lambda: panel.marginal.table[0][:1] == ["sex"], timeout=20_000)
    header, rows = panel.marginal.table
    assert header == ["sex", "true_count", "noisy_count"]
    schema = outcome.release.schema
    noisy_sex = outcome.release.noisy.sum(axis=tuple(i for i in range(len(schema)) if i != schema.index("sex")))
    assert [r[2] for r in rows] == pytest.approx(list(noisy_sex))
    assert sum(r[1] for r in rows) == outcome.report.rows_counted  # true counts: on screen only
    png = panel.square.export_png(tmp_path / "figure8.png")
    assert not QImage(str(png)).isNull()
    # exporting the release carries none of it
    target = tmp_path / "release.npz"
    assert window.export_release("release", target)
    qtbot.waitUntil(lambda: target.exists(), timeout=20_000)
    qtbot.waitUntil(lambda: not window.runner.busy, timeout=20_000)
    metadata = pio.load_release_metadata(target)
    assert not any("preview" in key or "true" in key.lower() for key in metadata)
    with np.load(target) as archive:
        assert sorted(archive.files) == ["metadata", "noisy", "signature"]  # the signature: a keyed hash only
    # the workbench queries this release (its prefix sums come from a task)
    bench = window.release_panel.workbench
    qtbot.waitUntil(lambda: bench.last_answer is not None, timeout=20_000)
    assert bench.release is outcome.release


def test_a_release_file_opens_in_the_workbench(window, qtbot, tmp_path):
    open_sample(window, qtbot)
    with qtbot.waitSignal(window.releaseFinished, timeout=120_000) as finished:
        assert window.run_release()
    path = tmp_path / "saved.npz"
    pio.save_release(finished.args[0].release, path)
    with qtbot.waitSignal(window.runner.succeeded, timeout=20_000):
        assert window.open_release(path)
    panel = window.release_panel
    assert panel.tabs.currentWidget() is panel.workbench
    loaded = panel.workbench.release
    np.testing.assert_array_equal(loaded.noisy, finished.args[0].release.noisy)
    assert panel.preview.preview is None  # no true data behind a file
    assert not panel.preview.tabs.isTabEnabled(0) and panel.preview.tabs.isTabEnabled(2)
    qtbot.waitUntil(lambda: panel.workbench.last_answer is not None, timeout=20_000)
    assert panel.workbench.last_answer.noisy_count == pytest.approx(loaded.noisy.sum())


def test_the_preview_names_the_mechanism_as_people_write_it(qtbot):
    from privelet_gui.engine import Hierarchy, NominalAttribute, OrdinalAttribute, Schema, privelet
    from privelet_gui.gui.panels.preview_panel import ErrorPreviewPanel
    from privelet_gui.gui.tasks import TaskService

    schema = Schema([OrdinalAttribute.integer_range("age", 0, 9),
                     NominalAttribute("job", Hierarchy.from_nested({"*": ["a", "b", "c"]}))])
    release = privelet(np.ones(schema.shape), schema, 1.0, np.random.default_rng(0))
    assert release.mechanism == "privelet"  # the release file's key
    host = TaskService()
    panel = ErrorPreviewPanel(host)
    qtbot.addWidget(panel)
    panel.set_release(release, None, "census-release.npz")
    assert panel.notice.text().startswith(
        "census-release.npz: Privelet at ε = 1; no measured errors: a release file holds noisy counts only, "
        "and measuring needs the true table. Its total"
    )


def test_a_zarr_release_folder_opens_in_the_workbench(window, qtbot, tmp_path):
    """Dropped (or chosen by its zarr.json): read into memory in the background, then queried."""
    pytest.importorskip("zarr")
    from privelet_gui.engine import Hierarchy, NominalAttribute, OrdinalAttribute, Schema
    from privelet_gui.io.zarr_releases import save_zarr_release

    schema = Schema([OrdinalAttribute.integer_range("age", 0, 49), NominalAttribute("sex", Hierarchy.flat(["F", "M"]))])
    release = ReleaseSpec(schema, 1.0, sa=("sex",)).run(np.random.default_rng(3).poisson(5.0, schema.shape).astype(float))
    folder = tmp_path / "census.zarr"
    save_zarr_release(release, folder, chunks=(10, 2))
    with qtbot.waitSignal(window.runner.succeeded, timeout=20_000):
        window.open_path(folder / "zarr.json")
    bench = window.release_panel.workbench
    assert isinstance(bench.release.noisy, np.ndarray)
    np.testing.assert_array_equal(bench.release.noisy, release.noisy)
    qtbot.waitUntil(lambda: bench.last_answer is not None, timeout=20_000)
    assert bench.last_answer.noisy_count == pytest.approx(release.noisy.sum())


def test_exporting_the_true_marginals_asks_and_marks_the_file(sample_window, qtbot, tmp_path, dialogs, monkeypatch):
    """Issue 39, item 2, in the app: Error preview -> Marginals -> "Data (CSV)..." asks first
    (Cancel by default), writes the noisy side alone or, when asked for, the true counts marked."""
    from PySide6.QtWidgets import QFileDialog

    from privelet_gui.qt.plots import TRUE_DATA_MARK

    window = sample_window
    targets = iter([tmp_path / "noisy.csv", tmp_path / "both.csv"])
    monkeypatch.setattr(QFileDialog, "getSaveFileName", staticmethod(lambda *args: (str(next(targets)), "")))
    assert window.document.measure_error
    with qtbot.waitSignal(window.releaseFinished, timeout=120_000):
        assert window.run_release()
    panel = window.release_panel.preview
    panel.tabs.setCurrentIndex(1)  # Marginals
    panel.marginal_attribute.setCurrentText("sex")
    qtbot.waitUntil(lambda: panel.marginal.table[0][:1] == ["sex"], timeout=20_000)
    button = panel.marginal.export_buttons["csv"]
    button.click()  # the fake's default answer: Cancel
    assert dialogs.asked[-1] == "export-true-data" and dialogs.warnings["export-true-data"]
    assert "computed from the true table" in dialogs.texts["export-true-data"]
    assert not list(tmp_path.glob("*.csv"))
    dialogs.choices["export-true-data"] = "noisy"
    button.click()
    noisy = (tmp_path / "noisy.csv").read_text(encoding="utf-8").splitlines()
    assert noisy[0] == "sex,noisy_count" and len(noisy) == 3 and "true" not in "".join(noisy).lower()
    dialogs.choices["export-true-data"] = "true"
    button.click()
    both = (tmp_path / "both.csv").read_text(encoding="utf-8").splitlines()
    assert both[:2] == [f"# {TRUE_DATA_MARK}", "sex,true_count,noisy_count"]
    assert sum(float(line.split(",")[1]) for line in both[2:]) == window.document.outcome.report.rows_counted


def test_a_reworded_label_keeps_the_preview_where_the_custodian_was(sample_window, qtbot):
    """A label reworded after the release (the release takes it, no new noise): the error
    preview shows the new label on the Marginals tab the custodian had open, for the attribute
    chosen there, instead of going back to the first tab and attribute (seen in a real window)."""
    window = sample_window
    with qtbot.waitSignal(window.releaseFinished, timeout=120_000):
        assert window.run_release()
    panel = window.release_panel.preview
    panel.tabs.setCurrentIndex(1)  # Marginals
    panel.marginal_attribute.setCurrentText("sex")
    qtbot.waitUntil(lambda: panel.marginal.table[0][:1] == ["sex"], timeout=20_000)
    window.go_to("hierarchies")
    hierarchies = window.hierarchy_panel
    assert hierarchies.set_attribute("sex")
    hierarchies.model.set_display_label(hierarchies.model.find("Male"), "Men")
    assert not window.document.release_is_stale()
    window.go_to("release")
    assert panel.tabs.currentIndex() == 1 and panel.marginal_attribute.currentText() == "sex"
    qtbot.waitUntil(lambda: "Men" in str(panel.marginal.table), timeout=20_000)
