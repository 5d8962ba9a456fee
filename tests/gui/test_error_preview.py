"""Issue 5 in the app: the data-free error preview, the measured error (custodian only), the workbench."""

from __future__ import annotations

import numpy as np
import pytest
from PySide6.QtGui import QImage

from privelet_gui import io as pio
from privelet_gui.engine import ReleaseSpec, coverage_summary, paper_workload, variance_model
from privelet_gui.io.project import WorkloadChoice
from privelet_gui.qt.plots import TRUE_DATA_WARNING
from privelet_gui.workspace.workload import build_workload
from tests.gui.conftest import open_sample


def _drawn(panel):
    """The chart's rows as {(mechanism, group): square error}."""
    return {(r[1], r[2]): r[4] for r in panel.expected_plot.table[1]}


def _legend(plot):
    return [label.text for _, label in plot.legend.items]


def _expected(workload, specs):
    """What the chart must show: each release's exact variances on every query of the workload
    (the engine's), averaged per coverage group."""
    queries = workload.queries()
    coverage = queries.coverage(workload.schema.shape)
    return {name: coverage_summary(coverage, spec.variances(queries)) for name, spec in specs.items()}


def _chart_ready(panel, key):
    return panel.coverage_result is not None and panel._doc.coverage_key() == key


def test_privacy_step_previews_the_expected_error_without_data(sample_window, qtbot):
    window = sample_window
    panel = window.privacy_panel
    doc = window.document
    window.go_to("privacy")
    schema = doc.schema()
    qtbot.waitUntil(lambda: variance_model(schema).ready, timeout=10_000)
    doc.set_sa(["age"])
    doc.set_epsilon(0.5)
    qtbot.waitUntil(lambda: doc.best_strategy_result() is not None, timeout=60_000)
    qtbot.waitUntil(lambda: _chart_ready(panel, doc.coverage_key()), timeout=30_000)
    assert not panel.expected_plot.uses_true_data and panel.expected_plot.banner.isHidden()
    # The custodian's workload by default: the paper's random workload (seeded).
    workload = paper_workload(schema)
    # The release as published: shifted to the public number of rows (replace-one neighbours).
    specs = {m: ReleaseSpec(schema, 0.5, m, ("age",)) for m in ("privelet+", "basic")}
    expected = _expected(workload, specs)
    raw = {m: coverage_summary(workload.queries().coverage(schema.shape), s.variances(workload.queries(), raw=True))
           for m, s in specs.items()}
    drawn = _drawn(panel)
    for mechanism, groups in expected.items():
        for q, r in zip(groups, raw[mechanism], strict=True):
            assert drawn[(mechanism, q.quintile)] == pytest.approx(q.square_error)
            assert q.square_error < r.square_error  # the shift lowers every group's error here
    assert "total equals the public number of rows" in panel.preview_note.text()
    doc.set_privacy(neighbours="add-remove")  # n is private: the raw release
    qtbot.waitUntil(lambda: _chart_ready(panel, doc.coverage_key()), timeout=30_000)
    raw = _expected(workload, {m: ReleaseSpec(schema, 0.5, m, ("age",), "add-remove") for m in ("privelet+", "basic")})
    drawn_raw = _drawn(panel)
    for mechanism, groups in raw.items():
        for q in groups:
            assert drawn_raw[(mechanism, q.quintile)] == pytest.approx(q.square_error)
    assert "number of rows is private" in panel.preview_note.text()
    window.act_undo.trigger()
    qtbot.waitUntil(lambda: _chart_ready(panel, doc.coverage_key()), timeout=30_000)  # found again: kept by key
    # halving epsilon quadruples every variance: the preview follows live, without a new computation
    doc.set_epsilon(0.25)
    assert panel.coverage_result is not None
    again = _drawn(panel)
    last = len(expected["basic"])
    assert again[("basic", last)] == pytest.approx(4 * drawn[("basic", last)])
    factors = {r[0]: r for r in panel.factor_plot.table[1]}
    assert factors["age"][4] is True and factors["sex"][4] is False
    assert factors["age"][2] == pytest.approx(variance_model(schema).factors[schema.index("age")].transformed)


def test_the_expected_error_chart_is_of_the_custodians_workload_and_the_release_made(
    sample_window, qtbot, monkeypatch
):
    """Issue 40, item 4: the Privacy step's chart shows the workload the custodian set, and
    compares the release the app will make (the best strategy, once chosen) with Privelet+
    (the current S_A) and Basic, with the engine's exact variances."""
    import threading

    from privelet_gui.gui.panels import strategy_panel

    window = sample_window
    panel = window.privacy_panel
    doc = window.document
    window.go_to("privacy")
    schema = doc.schema()
    assert doc.mechanism == "best"
    qtbot.waitUntil(lambda: _chart_ready(panel, doc.coverage_key()), timeout=30_000)
    plot = panel.expected_plot
    assert list(dict.fromkeys(r[1] for r in plot.table[1])) == ["best", "privelet+", "basic"]
    assert plot.title == "Expected square error on your workload: paper's random workload (10,000 queries)"
    expected = _expected(paper_workload(schema), {
        "best": doc.release_spec(), "privelet+": doc.release_spec(mechanism="privelet+"),
        "basic": doc.release_spec(mechanism="basic"),
    })
    drawn = _drawn(panel)
    assert set(drawn) == {(m, q.quintile) for m, groups in expected.items() for q in groups}
    for mechanism, groups in expected.items():
        for q in groups:
            assert drawn[(mechanism, q.quintile)] == pytest.approx(q.square_error, rel=1e-9)
    sa = ", ".join(doc.release_spec(mechanism="privelet+").effective_sa)
    assert _legend(plot) == ["Best strategy", "Privelet+", "Basic"]
    assert f"Privelet+ with your S_A = {{{sa}}}." in panel.preview_note.text()
    assert panel.coverage_result.stand_in is None

    # Switching the workload: the chart follows it; until the best strategy for it is chosen it says so.
    gate = threading.Event()
    real_job = strategy_panel._strategy_job

    def held_job(key, progress, should_cancel):
        gate.wait(60)
        return real_job(key, progress, should_cancel)

    monkeypatch.setattr(strategy_panel, "_strategy_job", held_job)
    marginals_only = WorkloadChoice(paper=None, ways=(1, 2), attributes=("age", "sex", "race"), grains=(("age", 10),))
    doc.set_workload(marginals_only)
    qtbot.waitUntil(lambda: _chart_ready(panel, doc.coverage_key()), timeout=30_000)
    workload = build_workload(marginals_only, schema)
    assert workload.name.startswith("1- and 2-way marginals")
    # a long name: the title gives the number of queries, the note under it the whole name
    assert plot.title == f"Expected square error on your workload ({len(workload):,} queries)"
    assert f"Your workload: {workload.name} ({len(workload):,} queries)." in panel.preview_note.text()
    assert _legend(plot)[0] == "Best strategy: choosing..."
    assert {r[1] for r in plot.table[1]} == {"privelet+", "basic"}  # nothing drawn for it yet
    assert "being chosen" in panel.preview_note.text()
    gate.set()
    qtbot.waitUntil(lambda: doc.best_strategy_result() is not None, timeout=60_000)
    qtbot.waitUntil(lambda: _chart_ready(panel, doc.coverage_key()), timeout=30_000)
    assert _legend(plot)[0] == "Best strategy"
    expected = _expected(workload, {
        "best": doc.release_spec(), "privelet+": doc.release_spec(mechanism="privelet+"),
        "basic": doc.release_spec(mechanism="basic"),
    })
    drawn = _drawn(panel)
    assert set(drawn) == {(m, q.quintile) for m, groups in expected.items() for q in groups}
    for mechanism, groups in expected.items():
        for q in groups:
            assert drawn[(mechanism, q.quintile)] == pytest.approx(q.square_error, rel=1e-9)
    # marginals: few coverages, each group one of them (no two points of a line at one coverage)
    coverages = [r[3] for r in plot.table[1] if r[1] == "basic"]
    assert len(set(coverages)) == len(coverages) and sum(r[5] for r in plot.table[1] if r[1] == "basic") == len(workload)
    assert plot.table[0][2] == "coverage_group"


def test_with_no_workload_the_chart_is_the_papers(sample_window, qtbot):
    window = sample_window
    panel = window.privacy_panel
    doc = window.document
    window.go_to("privacy")
    schema = doc.schema()
    doc.set_workload(WorkloadChoice(paper=None))  # the custodian ticks nothing
    qtbot.waitUntil(lambda: isinstance(doc.best_strategy_result(), str), timeout=30_000)
    qtbot.waitUntil(lambda: _chart_ready(panel, doc.coverage_key()), timeout=30_000)
    plot = panel.expected_plot
    assert plot.title == "Expected square error on the paper's random workload (10,000 queries), in place of yours"
    assert "you chose no queries" in panel.preview_note.text()
    assert _legend(plot)[0] == "Best strategy: none"
    expected = _expected(paper_workload(schema), {
        "privelet+": doc.release_spec(mechanism="privelet+"), "basic": doc.release_spec(mechanism="basic"),
    })
    drawn = _drawn(panel)
    assert set(drawn) == {(m, q.quintile) for m, groups in expected.items() for q in groups}
    for mechanism, groups in expected.items():
        for q in groups:
            assert drawn[(mechanism, q.quintile)] == pytest.approx(q.square_error, rel=1e-9)
    # Released with Privelet+: two lines, no best strategy
    doc.set_privacy(mechanism="privelet+")
    qtbot.waitUntil(lambda: _chart_ready(panel, doc.coverage_key()), timeout=30_000)
    assert _legend(plot)[1:] == ["Basic"]
    assert {r[1] for r in plot.table[1]} == {"privelet+", "basic"}


def test_measured_error_marginals_and_workbench_after_a_release(sample_window, qtbot, tmp_path):
    window = sample_window
    window.document.set_epsilon(1.0)
    with qtbot.waitSignal(window.releaseFinished, timeout=120_000) as finished:
        assert window.run_release()
    outcome = finished.args[0]
    preview = outcome.preview
    assert preview is not None and set(preview.by_coverage) >= {"basic", outcome.release.mechanism}
    panel = window.release_panel.preview
    # the paper's workload, whose name says how many queries: said once
    assert "measured on the paper's random workload (10,000 queries)." in panel.notice.text()
    # every view that reads the true data says so, visibly
    for view in (panel.square, panel.relative, panel.marginal):
        assert view.uses_true_data and view.banner.text() == TRUE_DATA_WARNING
        assert not view.banner.isHidden()
    assert panel.heatmap.banner.isHidden()  # the noisy release only
    assert len(panel.square.table[1]) == sum(len(rows) for rows in preview.by_coverage.values())
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


def test_the_measured_error_is_grouped_as_the_expected_one_on_the_same_workload(sample_window, qtbot):
    """The Release step's measured error and the Privacy step's expected error list the same
    workload (the custodian's) in the same coverage groups, so that their points line up."""
    from privelet_gui.engine import PrefixSums

    window = sample_window
    doc = window.document
    choice = WorkloadChoice(paper=None, ways=(1, 2), attributes=("age", "sex", "race"), grains=(("age", 10),))
    doc.set_workload(choice)
    window.go_to("privacy")
    qtbot.waitUntil(lambda: doc.best_strategy_result() is not None, timeout=60_000)
    qtbot.waitUntil(lambda: _chart_ready(window.privacy_panel, doc.coverage_key()), timeout=30_000)

    def groups(plot, mechanism):
        return [(r[2], pytest.approx(r[3], rel=1e-12), r[5]) for r in plot.table[1] if r[1] == mechanism]

    expected = groups(window.privacy_panel.expected_plot, "basic")
    with qtbot.waitSignal(window.releaseFinished, timeout=120_000) as finished:
        assert window.run_release()
    outcome = finished.args[0]
    preview = outcome.preview
    workload = build_workload(choice, outcome.release.schema)
    assert preview is not None and preview.workload == workload.name and preview.queries == len(workload)
    panel = window.release_panel.preview
    assert f"measured on {len(workload):,} queries of {workload.name}." in panel.notice.text()
    assert panel.square.uses_true_data and not panel.square.banner.isHidden()  # the true data, said so
    assert panel.square.table[0][2] == "coverage_group" == panel.relative.table[0][2]
    # marginals: a group per coverage (8 here, not the paper's five quintiles), as in the Privacy step
    coverages = set(workload.queries().coverage(outcome.release.schema.shape).tolist())
    assert groups(panel.square, "basic") == expected and len(expected) == len(coverages) != 5
    # the release's own line: its errors on the true table, averaged per coverage group
    queries = workload.queries()
    matrix, _ = pio.count_table(pio.sample_table_path(), outcome.release.schema, doc.table_options)
    errors = (PrefixSums(outcome.release.noisy).answer_batch(queries) - PrefixSums(matrix).answer_batch(queries)) ** 2
    own = coverage_summary(queries.coverage(outcome.release.schema.shape), errors)
    drawn = [r[4] for r in panel.square.table[1] if r[1] == outcome.release.mechanism]
    assert drawn == pytest.approx([r.square_error for r in own], rel=1e-9)


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
