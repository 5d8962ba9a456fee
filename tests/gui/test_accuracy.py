"""Issue 13 in the app: picking workloads and the best S_A, the rule in project files, the
advisor's suggestions applied and undone, the post-processed release and export counts."""

from __future__ import annotations

import threading
import time

import numpy as np
import pandas as pd
import pytest
from PySide6.QtCore import Qt

from privelet_gui import io as pio
from privelet_gui.engine import (
    ReleaseSpec,
    best_sa,
    best_strategy,
    margin95,
    marginals,
    mechanism_name,
    paper_workload,
)
from privelet_gui.engine.postprocess import post_processed_counts
from privelet_gui.engine.spec import MARGINALS
from privelet_gui.gui.panels import privacy_panel
from privelet_gui.io.project import BEST_STRATEGY, WorkloadChoice
from privelet_gui.io.releases import count_column
from privelet_gui.qt.widgets import fmt_count
from privelet_gui.workspace.workload import build_workload
from tests.gui.conftest import wait_for_best_strategy

SMALL = ("native-country", "education")  # excluded for quick releases and exports: 10,360 cells


def _privacy(window, qtbot):
    window.document.set_privacy(mechanism="privelet+")  # the best S_A is Privelet+'s
    window.go_to("privacy")
    panel = window.privacy_panel
    qtbot.waitUntil(lambda: panel.workload_box.result is not None, timeout=20_000)
    return panel


def test_picking_workloads_shows_the_best_sa_and_one_click_uses_it(sample_window, qtbot):
    doc = sample_window.document
    box = _privacy(sample_window, qtbot).workload_box
    schema = doc.schema()
    assert box.paper.isChecked() and not box.ways[2].isChecked()  # the paper's workload by default
    engine = best_sa(ReleaseSpec(schema, 1.0), paper_workload(schema))
    assert box.result.sa == engine.sa
    assert box.table.item(0, 1).text() == f"± {fmt_count(margin95(engine.error))}"
    rule_row = box.table.item(1, 2).text()
    assert rule_row == f"{engine.references['rule'][1] / engine.error:,.2f}×"
    assert box.table.item(1, 0).font().bold()  # the rule's S_A is the one in use

    done = doc.undo_stack.count()
    box.paper.setChecked(False)
    box.ways[2].setChecked(True)
    assert doc.workload == WorkloadChoice(paper=None, ways=(2,))
    assert doc.undo_stack.count() == done + 2  # one undoable change per click
    qtbot.waitUntil(lambda: box.result is not None and box.result.queries == len(marginals(schema, (2,))), timeout=20_000)
    assert box.result.ratio("rule") >= 2.5  # Adult's 2-way marginals: the target
    assert box.use_best.isEnabled() and doc.sa_rule == "recommended"
    box.use_best.click()
    assert doc.sa_rule == "best" and doc.sa == box.result.sa
    assert not box.use_best.isEnabled()
    assert "best for the workload" in sample_window.privacy_panel.sa_rule_label.text()

    box.grain_widgets["age"].setValue(5)  # age in five-year bands
    combo = box.grain_widgets["native-country"]
    combo.setCurrentIndex(combo.findData(2))  # continents
    assert doc.workload.grains == (("age", 5), ("native-country", 2))
    box.objective["worst"].setChecked(True)
    assert doc.workload.objective == "worst"
    box.attributes.item(schema.index("race"), 0).setCheckState(Qt.CheckState.Unchecked)
    assert doc.workload.attributes == tuple(n for n in schema.names if n != "race")
    qtbot.waitUntil(lambda: box.result is not None and box.result.objective == "worst", timeout=20_000)
    expected = best_sa(ReleaseSpec(schema, 1.0), marginals(schema, (2,), doc.workload.attributes,
                                                            grains={"age": 5, "native-country": 2}), objective="worst")
    assert doc.sa == expected.sa and box.result.errors["best"][1] == pytest.approx(expected.error)
    for _ in range(5):  # the rule, two grains, the objective, the attributes: one step each
        sample_window.act_undo.trigger()
    assert doc.workload == WorkloadChoice(paper=None, ways=(2,)) and doc.sa_rule == "recommended"
    assert not box.ways[1].isChecked() and box.ways[2].isChecked() and not box.paper.isChecked()


def test_long_searches_run_on_the_panels_lane_and_the_release_waits(sample_window, qtbot, monkeypatch):
    doc = sample_window.document
    box = _privacy(sample_window, qtbot).workload_box
    doc.best_sa_inline_seconds = 0.0  # every search is "long"
    gate = threading.Event()
    threads: list[threading.Thread] = []
    cancelled: list[bool] = []  # whether each search was asked to stop while it waited
    search = privacy_panel.find_best_sa

    def slow_search(key, should_cancel):
        threads.append(threading.current_thread())
        while not gate.is_set() and not should_cancel():
            time.sleep(0.01)
        cancelled.append(should_cancel())
        return search(key, should_cancel)

    monkeypatch.setattr(privacy_panel, "find_best_sa", slow_search)
    doc.use_best_sa()
    doc.set_workload(WorkloadChoice(paper=None, ways=(1,)))
    assert box.summary.text() == "Searching the best S_A for this workload..."
    assert "still being computed" in sample_window.release_panel.blockers.text()
    assert not sample_window.release_panel.run_button.isEnabled()
    doc.set_workload(WorkloadChoice(paper=None, ways=(1, 2)))  # asked for while the first runs: it is cancelled
    qtbot.waitUntil(lambda: len(cancelled) == 1, timeout=10_000)
    assert cancelled == [True] and not sample_window.release_panel.run_button.isEnabled()
    gate.set()
    qtbot.waitUntil(lambda: box.result is not None and box.result.queries == len(marginals(doc.schema(), (1, 2))),
                    timeout=20_000)
    assert len(threads) == 2 and all(t is not threading.main_thread() for t in threads)
    assert cancelled == [True, False]  # the first stopped at once; the second ran to its end
    assert doc.sa == box.result.sa and sample_window.release_panel.run_button.isEnabled()


def test_workload_files_are_read_and_a_bad_one_is_reported(sample_window, qtbot, tmp_path, dialogs):
    doc = sample_window.document
    box = _privacy(sample_window, qtbot).workload_box
    good = tmp_path / "queries.csv"
    good.write_text("age,native-country\n20..29,Europe\n30..39,\n,Asia\n")
    dialogs.open_answer = good
    box.add_file.click()
    assert doc.workload.files == (good,) and box.files.item(0).text() == "queries.csv"
    qtbot.waitUntil(lambda: box.result is not None and "queries.csv" in box.result.workload, timeout=20_000)
    assert box.result.queries == 10_000 + 3
    bad = tmp_path / "bad.csv"
    bad.write_text("age,planet\n20..29,Mars\n")
    assert box.add_workload_file(bad)
    qtbot.waitUntil(lambda: box.problem.isVisible(), timeout=20_000)
    assert "bad.csv, query 1" in box.problem.text() and "planet" in box.problem.text()
    assert dialogs.errors == []  # said in the step, no dialog, no traceback
    box.files.setCurrentRow(1)
    box.remove_file.click()
    assert doc.workload.files == (good,)


def test_the_rule_and_the_workload_persist_through_a_project_file(sample_window, qtbot, tmp_path):
    doc = sample_window.document
    box = _privacy(sample_window, qtbot).workload_box
    choice = WorkloadChoice(paper=None, ways=(1, 2), grains=(("age", 10),), objective="worst")
    doc.set_workload(choice)
    doc.use_best_sa()
    qtbot.waitUntil(lambda: box.result is not None and box.result.objective == "worst", timeout=20_000)
    sa = doc.sa
    path = tmp_path / "adult.privelet"
    assert sample_window.save_project(path)
    doc.reset()
    assert doc.workload == WorkloadChoice() and doc.sa_rule == "recommended"
    with qtbot.waitSignal(sample_window.projectOpened, timeout=30_000):
        assert sample_window.open_project(path)
    assert doc.workload == choice and doc.sa_rule == "best"
    qtbot.waitUntil(lambda: box.result is not None and box.result.objective == "worst", timeout=20_000)
    assert doc.sa == sa and not doc.modified
    assert box.ways[1].isChecked() and box.ways[2].isChecked() and not box.paper.isChecked()
    assert box.objective["worst"].isChecked() and box.grain_widgets["age"].value() == 10


def test_applying_a_suggestion_and_undoing_it(sample_window, qtbot):
    doc = sample_window.document
    panel = _privacy(sample_window, qtbot)
    advisor = panel.advisor
    doc.set_workload(WorkloadChoice(paper=None, ways=(1,), attributes=("age", "sex")))
    qtbot.waitUntil(lambda: advisor.advice is not None and advisor.advice.workload.name.startswith("1-way"),
                    timeout=30_000)
    rows = doc.summary.rows
    assert f"of {rows:,} rows) will be off by +/- " in advisor.status.text()  # n is public under replace
    assert advisor.multipliers.rowCount() == len(doc.schema())
    first = advisor.suggestions[0]
    assert first.kind == "drop" and first.exact_share == 1.0  # lossless ones first
    assert advisor.table.item(0, 3).text() == first.description  # every suggestion keeps every query exact
    assert advisor.table.item(0, 1).text() == f"{first.factor:,.2f}×"
    before = doc.schema()
    done = doc.undo_stack.count()
    advisor.apply_buttons[0].click()
    assert doc.schema() == first.schema and doc.undo_stack.count() == done + 1
    assert doc.undo_stack.undoText().startswith("Advisor: drop")
    qtbot.waitUntil(lambda: advisor.advice is not None and advisor.advice.spec.schema == first.schema, timeout=30_000)
    sample_window.act_undo.trigger()
    assert doc.schema() == before
    qtbot.waitUntil(lambda: advisor.advice is not None and advisor.advice.spec.schema == before, timeout=30_000)
    doc.set_privacy(neighbours="add-remove")  # n is private: no count of rows in the sentence
    qtbot.waitUntil(lambda: advisor.advice is not None and advisor.advice.spec.neighbours == "add-remove",
                    timeout=30_000)
    assert "rows" not in advisor.status.text() and "a count of this workload will be off" in advisor.status.text().lower()


def test_under_the_best_strategy_the_advice_is_weighed_with_it(sample_window, qtbot, monkeypatch):
    from privelet_gui.gui.panels import strategy_panel

    doc = sample_window.document
    advisor = _privacy(sample_window, qtbot).advisor
    gate = threading.Event()
    real_job = strategy_panel._strategy_job

    def held_job(key, progress, should_cancel):
        gate.wait(60)
        return real_job(key, progress, should_cancel)

    monkeypatch.setattr(strategy_panel, "_strategy_job", held_job)
    doc.set_privacy(mechanism=BEST_STRATEGY)
    doc.set_workload(WorkloadChoice(paper=None, ways=(1, 2), attributes=("age", "sex", "education"),
                                    grains=(("age", 5),)))
    # the advice starts from the current schema's best strategy: it waits for that search, searching nothing twice
    assert doc.best_strategy_result() is None
    waiting = advisor.status.text().startswith("Waiting for the best strategy")
    started = advisor._jobs.running == doc.advice_key()
    gate.set()
    assert waiting and not started
    # a workload of marginals: the best strategy, as the release chooses it, is weighted marginals
    qtbot.waitUntil(lambda: advisor.advice is not None and advisor.advice.spec.mechanism == MARGINALS
                    and advisor.advice.workload.name.startswith("1- and 2-way"), timeout=60_000)
    workload = build_workload(doc.workload, doc.schema())
    chosen = best_strategy(ReleaseSpec(doc.schema(), doc.epsilon), workload, marginals=True)
    assert advisor.advice.spec.marginals == chosen.spec.marginals
    assert advisor.advice.error == pytest.approx(chosen.error, rel=1e-9)
    first = advisor.suggestions[0]
    assert first.description.startswith("age in bins of 5 values")  # Privelet+ would drop occupation first
    assert first.marginals == best_strategy(ReleaseSpec(first.schema, doc.epsilon), first.workload,
                                            marginals=True).spec.marginals
    assert "the best strategy for each changed schema" in advisor.caveat.text()
    assert advisor.table.item(0, 3).toolTip().startswith("Measured after the change: weighted marginals age x sex")
    assert advisor.multipliers.item(0, 1).text() == "weighted marginals"
    assert "the best strategy)" in advisor.status.text()


def test_epsilon_rescales_the_advice_without_a_new_search(sample_window, qtbot):
    doc = sample_window.document
    advisor = _privacy(sample_window, qtbot).advisor
    qtbot.waitUntil(lambda: advisor.advice is not None, timeout=30_000)
    error = advisor.advice.error
    runs = advisor._jobs.lane.generation
    doc.set_epsilon(0.5)
    assert advisor.advice.error == pytest.approx(4 * error) and advisor._jobs.lane.generation == runs


def _small_release(window, qtbot):
    doc = window.document
    for name in SMALL:
        doc.set_attribute(name, include=False)
    doc.measure_error = False
    wait_for_best_strategy(window, qtbot)
    with qtbot.waitSignal(window.releaseFinished, timeout=60_000) as finished:
        assert window.run_release()
    return finished.args[0]


def test_the_release_step_describes_the_post_processed_release(sample_window, qtbot):
    panel = sample_window.release_panel
    assert "total equals the public number of rows" in panel.setup_labels["post"].text()
    outcome = _small_release(sample_window, qtbot)
    release = outcome.release
    assert release.public_total and float(release.noisy.sum()) == pytest.approx(sample_window.document.summary.rows)
    assert panel.result_labels["total"].text().startswith("Its total equals the public number of rows")
    assert f"{release.total_shift:+.4g}" in panel.result_labels["total"].text()
    assert "raw release, before the shift" in panel.result_labels["exact"].text()
    assert "total equals the public number of rows" in panel.preview.notice.text()
    # measuring was off: the notice says so, in one sentence
    assert panel.preview.notice.text().startswith(
        f'This release: {mechanism_name(release.mechanism)} at ε = 1; no measured errors: "Measure the error" was off. '
        "Its total equals"
    )
    assert outcome.unmeasured_reason == '"Measure the error" was off'
    sample_window.document.set_privacy(neighbours="add-remove")
    assert "number of rows is private" in panel.setup_labels["post"].text()


def test_the_measure_box_says_when_the_matrix_is_too_large_to_measure(sample_window, qtbot):
    """Ticked, the box promised a measurement that a matrix of more than MEASURE_MAX_CELLS
    never gets: a note under it says so before the release, with the workspace's reason,
    wrapped (the page must not grow wider than the window)."""
    window = sample_window
    window.resize(1200, 800)
    window.show()
    window.go_to("release")
    doc = window.document
    panel = window.release_panel
    assert panel.measure.isChecked() and panel.measure_note.isHidden()
    doc.set_privacy(mechanism="privelet+")  # its job at once, with no strategy to choose first
    doc.set_attribute("age", lo=0, hi=199)  # 200 ages: 18.4 million cells
    job = doc.release_job()
    assert job.spec.schema.size > 1 << 24 and not job.measures_error
    assert not panel.measure_note.isHidden()
    assert panel.measure_note.text() == f"Not for this release: {job.unmeasured_reason}."
    assert f"this one has {job.spec.schema.size:,}" in panel.measure_note.text()
    qtbot.wait(50)
    assert panel.width() <= window.width()
    assert panel.measure_note.width() < panel.width()
    assert panel.measure_note.wordWrap()
    panel.measure.setChecked(False)  # not promised any more: no note
    assert panel.measure_note.isHidden()
    panel.measure.setChecked(True)
    doc.set_attribute("age", lo=17, hi=90)
    assert panel.measure_note.isHidden()


@pytest.mark.parametrize("kind", ["nonnegative", "nonnegative-integer"])
def test_export_counts_from_the_app(sample_window, qtbot, tmp_path, dialogs, kind):
    outcome = _small_release(sample_window, qtbot)
    panel = sample_window.release_panel
    panel.counts.setCurrentIndex(panel.counts.findData(kind))
    column = count_column(kind)
    assert column in panel.counts_note.text() and "biased" in panel.counts_note.text()
    csv = tmp_path / "adult.csv"
    dialogs.save_path_answer = csv
    with qtbot.waitSignal(sample_window.exportFinished, timeout=30_000):
        sample_window.act_export_csv.trigger()  # the File menu's export uses the chosen count kind too
    frame = pd.read_csv(csv)
    assert list(frame.columns)[-1] == column
    expected = post_processed_counts(outcome.release.noisy, kind).reshape(-1)
    assert np.allclose(frame[column].to_numpy(), expected)
    assert (frame[column] >= 0).all() and frame[column].sum() == pytest.approx(outcome.release.noisy.sum(), abs=1)
    npz = tmp_path / "adult.npz"
    with qtbot.waitSignal(sample_window.exportFinished, timeout=30_000):
        assert sample_window.export_release("release", npz)  # a release file keeps the release's own counts
    assert np.array_equal(pio.load_release(npz).noisy, outcome.release.noisy)
    assert dialogs.errors == []
