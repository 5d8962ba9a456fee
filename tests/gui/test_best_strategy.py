"""The best strategy in the app (issue 40, item 2): the default of a new project, chosen on a
worker for the custodian's workload, shown per attribute beside the alternatives, chosen again
when the settings change, cancellable, released and recorded, and kept in project files."""

from __future__ import annotations

import pytest

from privelet_gui import io as pio
from privelet_gui.engine import ReleaseSpec, best_strategy, margin95, recommend_sa, short_strategy_name
from privelet_gui.engine.descriptions import describe_axis_strategy
from privelet_gui.io.choices import release_choices
from privelet_gui.io.project import load_project
from privelet_gui.qt.widgets import fmt_count
from privelet_gui.workspace.workload import WorkloadChoice, build_workload
from tests.gui.conftest import wait_for_best_strategy

MARGINALS = WorkloadChoice(paper=None, ways=(1, 2), attributes=("age", "sex", "education"), grains=(("age", 5),))
TWO_WAY = WorkloadChoice(paper=None, ways=(2,), attributes=("age", "sex", "race"))
PAPER_AND_MARGINALS = WorkloadChoice(paper=1000, ways=(2,), attributes=("age", "sex", "race"))


def engine_choice(doc):
    spec = doc.release_spec(mechanism="privelet+")
    return best_strategy(spec, build_workload(doc.workload, spec.schema), objective=doc.workload.objective,
                         marginals=True)


def shown(box):
    """The box's tables as text: (attribute, measured by) rows and (release with, error) rows."""
    axes = [(box.axes.item(r, 0).text(), box.axes.item(r, 1).text()) for r in range(box.axes.rowCount())]
    errors = [(box.errors.item(r, 0).text(), box.errors.item(r, 1).text()) for r in range(box.errors.rowCount())]
    return axes, errors


def expected_rows(choice):
    spec = choice.spec
    if spec.label == "marginals":
        axes = [(", ".join(names), str(weight)) for names, weight in spec.marginals]
    else:
        axes = [(a.name, describe_axis_strategy(s.kind, name))
                for a, s, name in zip(spec.schema, spec.plan.strategies, spec.axis_strategies)]
    errors = [("Best strategy", f"± {fmt_count(margin95(choice.error))}")]
    errors += [(label, f"± {fmt_count(margin95(error))}") for label, (_s, error) in choice.alternatives.items()]
    return axes, errors


def wait_shown(window, qtbot):
    box = window.privacy_panel.strategy_box
    wait_for_best_strategy(window, qtbot)
    qtbot.waitUntil(lambda: box.result is not None, timeout=10_000)
    return box


def test_a_new_project_releases_with_the_best_strategy_shown_per_attribute(sample_window, qtbot):
    window = sample_window
    doc = window.document
    panel = window.privacy_panel
    window.go_to("privacy")
    assert doc.mechanism == "best" and panel.mech_buttons["best"].isChecked()
    assert [panel.mech_buttons[k].text() for k in ("best", "privelet+", "privelet", "basic")] == [
        "Best strategy", "Privelet+", "Privelet", "Basic"]
    box = wait_shown(window, qtbot)
    expected = engine_choice(doc)
    assert doc.release_spec().axis_strategies == expected.strategies
    assert shown(box) == expected_rows(expected)
    assert "paper's random workload" in box.summary.text() and "Releases use it now" in box.summary.text()
    assert panel.table.item(0, 0).text() == "Best strategy" and panel.table.item(0, 0).font().bold()
    assert panel.displayed("best", 2) != "choosing..."
    assert "Best strategy" in window.settings_label.text()


def test_epsilon_rescales_and_the_workload_chooses_again_with_nothing_stale_shown(sample_window, qtbot):
    window = sample_window
    doc = window.document
    window.go_to("privacy")
    box = wait_shown(window, qtbot)
    doc.set_epsilon(0.25)
    assert box.result is not None  # the same choice, at the new epsilon: nothing to search
    assert shown(box) == expected_rows(engine_choice(doc))
    before = box.result.strategies
    doc.set_workload(MARGINALS)
    assert box.result is None and box.axes.rowCount() == 0 and box.errors.rowCount() == 0  # nothing stale
    assert box.progress.isVisible() and box.cancel_button.isVisible()
    assert doc.release_spec() is None
    window.go_to("release")
    assert not window.release_panel.run_button.isEnabled()
    assert "best strategy for the workload is not chosen yet" in window.release_panel.blockers.text()
    window.go_to("privacy")
    box = wait_shown(window, qtbot)
    expected = engine_choice(doc)
    assert shown(box) == expected_rows(expected) and "marginals" in box.summary.text()
    assert box.result.strategies == expected.strategies != before
    assert window.release_panel.run_button.isEnabled()
    assert window.settings_label.text().endswith(f"Best strategy: {doc.release_spec().name}")
    doc.set_workload(WorkloadChoice(paper=None))  # no queries: nothing is being chosen, and the status bar says so
    qtbot.waitUntil(lambda: isinstance(doc.best_strategy_result(), str), timeout=10_000)
    assert window.settings_label.text().endswith("Best strategy: none (Privacy step)")


def test_a_burst_of_edits_searches_once(sample_window, qtbot):
    window = sample_window
    doc = window.document
    box = wait_shown(window, qtbot)
    started: list[int] = []
    box.lane.started.connect(lambda generation, _name: started.append(generation))
    for grain in (2, 3, 4, 5, 6):
        doc.set_workload(MARGINALS.with_grain("age", grain))
    box = wait_shown(window, qtbot)
    assert len(started) == 5  # each edit asked...
    assert doc.best_strategy_result().strategies == engine_choice(doc).strategies  # ...the last one was chosen


def test_cancelling_leaves_no_choice_and_the_release_waits_until_chosen_again(sample_window, qtbot):
    window = sample_window
    doc = window.document
    window.go_to("privacy")
    box = wait_shown(window, qtbot)
    doc.set_workload(MARGINALS)
    assert box.cancel_button.isVisible()
    with qtbot.waitSignal(box.lane.cancelled, timeout=10_000):
        box.cancel_button.click()
    assert box.again_button.isVisible() and not box.cancel_button.isVisible()
    assert "Cancelled" in box.summary.text() and "the release and the advisor below wait" in box.summary.text()
    assert doc.best_strategy_result() is None and box.axes.rowCount() == 0
    assert not window.run_release()  # says why, draws nothing
    assert window.dialogs.errors[-1][0] == "Not ready to release"
    box.again_button.click()
    box = wait_shown(window, qtbot)
    assert box.result.strategies == engine_choice(doc).strategies


def test_a_cancelled_search_is_said_so_everywhere_and_the_advisor_resumes_on_search_again(sample_window, qtbot):
    window = sample_window
    doc = window.document
    panel = window.privacy_panel
    advisor = panel.advisor
    window.go_to("privacy")
    box = wait_shown(window, qtbot)
    doc.set_workload(MARGINALS)
    with qtbot.waitSignal(box.lane.cancelled, timeout=10_000):
        box.cancel_button.click()
    assert doc.best_strategy_result() is None and doc.best_strategy_cancelled()
    assert "The search for the best strategy was cancelled: choose Search again." in box.summary.text()
    assert box.again_button.isVisible() and box.again_button.text() == "Search again"
    assert panel.displayed("best", 2) == "cancelled"  # not "choosing...": nothing is being chosen
    # the advisor waits for the search above (it does not run one of its own, which nothing could
    # cancel), and says it was cancelled
    cancelled = "the search for the best strategy was cancelled: choose Search again"
    qtbot.waitUntil(lambda: advisor.status.text() == f"No advice yet: {cancelled} (above).", timeout=5_000)
    assert doc.best_strategy_problem().startswith(cancelled)
    assert doc.step_status("privacy").message.startswith(cancelled)
    window.go_to("release")
    assert cancelled in window.release_panel.blockers.text() and not window.release_panel.run_button.isEnabled()
    assert "its search was cancelled" in window.release_panel.setup_labels["mechanism"].text()
    window.go_to("privacy")  # coming back does not undo the cancel: still said, nothing searched
    assert box.again_button.isVisible() and not box.lane.busy and doc.best_strategy_cancelled()
    box.again_button.click()
    assert not doc.best_strategy_cancelled() and box.progress.isVisible()
    box = wait_shown(window, qtbot)
    assert box.result.strategies == engine_choice(doc).strategies
    assert panel.displayed("best", 2) != "cancelled" and doc.best_strategy_problem() is None
    # the advisor, which waited for the search, computes its advice from the chosen strategy
    qtbot.waitUntil(lambda: not advisor.status.text().startswith(("Waiting for the best strategy", "No advice yet")),
                    timeout=30_000)
    doc.set_workload(TWO_WAY)  # other settings: searched anew, not cancelled
    assert not doc.best_strategy_cancelled() and box.cancel_button.isVisible()


def test_a_release_from_the_app_writes_the_chosen_strategies_and_the_choice(sample_window, qtbot, tmp_path):
    window = sample_window
    doc = window.document
    choice = wait_for_best_strategy(window, qtbot)
    with qtbot.waitSignal(window.releaseFinished, timeout=120_000) as finished:
        assert window.run_release()
    outcome = finished.args[0]
    assert outcome.release.strategies == choice.strategies == engine_choice(doc).strategies
    path = tmp_path / "best.npz"
    with qtbot.waitSignal(window.exportFinished, timeout=60_000):
        assert window.export_release("release", path)
    assert pio.load_release(path).strategies == choice.strategies
    meta = pio.load_release_metadata(path)
    assert meta["extra"]["strategy_choice"]["expected_error"] == pytest.approx(choice.error, rel=1e-9)
    assert meta["extra"]["strategy_choice"]["workload"] == choice.workload
    recorded = release_choices(meta)
    assert (recorded.sa_rule, recorded.strategies, recorded.mechanism) == (None, choice.strategies,
                                                                           "strategies")
    assert not doc.release_is_stale()


def test_privelet_plus_still_releases_privelet_plus(sample_window, qtbot):
    window = sample_window
    doc = window.document
    window.privacy_panel.mech_buttons["privelet+"].setChecked(True)
    assert doc.mechanism == "privelet+"
    with qtbot.waitSignal(window.releaseFinished, timeout=120_000) as finished:
        assert window.run_release()  # never waits for the best strategy
    outcome = finished.args[0]
    schema = doc.schema()
    assert outcome.spec == ReleaseSpec(schema, 1.0, "privelet+", recommend_sa(schema))
    assert outcome.release.mechanism == "privelet+" and outcome.release.strategies == ()
    assert outcome.strategy_choice is None and outcome.choices.sa_rule == "recommended"


def test_a_project_with_the_best_strategy_reopens_with_it_selected(sample_window, qtbot, tmp_path):
    window = sample_window
    doc = window.document
    chosen = wait_for_best_strategy(window, qtbot).strategies
    path = tmp_path / "best.privelet"
    assert window.save_project(path)
    assert load_project(path).strategies == chosen
    doc.set_privacy(mechanism="basic")
    window.dialogs.save_answer = "discard"
    with qtbot.waitSignal(window.projectOpened, timeout=30_000):
        assert window.open_project(path)
    qtbot.waitUntil(lambda: window.document.summary is not None, timeout=30_000)
    doc = window.document
    assert doc.mechanism == "best" and window.privacy_panel.mech_buttons["best"].isChecked()
    wait_for_best_strategy(window, qtbot)
    assert doc.release_spec().axis_strategies == chosen


def test_the_release_step_names_each_attribute_s_strategy_shortly(sample_window, qtbot):
    """A learned strategy's name holds its whole matrix: the Release step shows its short form."""
    choice = wait_for_best_strategy(sample_window, qtbot)
    sample_window.go_to("release")
    qtbot.waitUntil(lambda: "for the workload" in sample_window.release_panel.setup_labels["mechanism"].text())
    text = sample_window.release_panel.setup_labels["mechanism"].text()
    for attribute, name in zip(choice.spec.schema, choice.strategies, strict=True):
        assert f"{attribute.name} {short_strategy_name(name)}" in text
    assert "stacked/" not in text


def test_a_release_of_biased_weighted_marginals_offers_no_standard_error(sample_window, qtbot, tmp_path):
    window = sample_window
    doc = window.document
    panel = window.release_panel
    doc.set_workload(TWO_WAY)
    assert wait_for_best_strategy(window, qtbot).spec.label == "marginals"
    window.go_to("release")
    panel.standard_errors.setChecked(True)
    with qtbot.waitSignal(window.releaseFinished, timeout=120_000) as finished:
        assert window.run_release()
    assert finished.args[0].release.mechanism == "marginals"
    box = panel.standard_errors
    assert not box.isEnabled() and not panel.standard_error()
    assert "weighted marginals answers single cells with a bias" in box.toolTip()
    assert "export it without the standard error, or query the marginals it measured" in box.toolTip()
    panel.counts.setCurrentIndex(panel.counts.findData("integer"))
    panel.counts.setCurrentIndex(panel.counts.findData("noisy"))
    assert not box.isEnabled()  # the counts kind does not turn it back on
    path = tmp_path / "cells.csv"
    with qtbot.waitSignal(window.exportFinished, timeout=60_000):
        assert window.export_release("csv", path)
    header = path.read_text().splitlines()[0]
    assert header.endswith("noisy_count") and "standard_error" not in header  # every cell, no inf
    doc.set_workload(PAPER_AND_MARGINALS)  # per-axis strategies: every cell has its standard error
    wait_for_best_strategy(window, qtbot)
    with qtbot.waitSignal(window.releaseFinished, timeout=120_000):
        assert window.run_release()
    assert box.isEnabled() and panel.standard_error() and "exact standard deviation" in box.toolTip()


def test_a_workload_of_marginals_is_released_with_the_weighted_marginals_shown(sample_window, qtbot, tmp_path):
    window = sample_window
    doc = window.document
    window.go_to("privacy")
    doc.set_workload(TWO_WAY)
    box = wait_shown(window, qtbot)
    expected = engine_choice(doc)
    assert expected.spec.label == "marginals" and doc.release_spec().marginals == expected.spec.marginals
    assert box.axes_title.text().startswith("The marginals measured")
    assert [box.axes.horizontalHeaderItem(c).text() for c in range(2)] == ["Marginal", "Weight"]
    assert shown(box) == expected_rows(expected)
    assert box.result.gain_over("Privelet+ (recommended S_A)") > 1
    panel = window.privacy_panel
    qtbot.waitUntil(lambda: panel.displayed("best", 2) not in ("computing...", "choosing..."), timeout=30_000)
    assert (panel.displayed("best", 2), panel.displayed("best", 3)) == ("none (bias)", "—")
    assert "no worst case" in panel.bounds_note.text() and "no epsilon bounds" in panel.target_result.text()
    window.go_to("release")
    assert "weighted marginals age x sex (weight" in window.release_panel.setup_labels["mechanism"].text()
    with qtbot.waitSignal(window.releaseFinished, timeout=120_000) as finished:
        assert window.run_release()
    outcome = finished.args[0]
    assert outcome.release.mechanism == "marginals" and outcome.release.marginals == expected.spec.marginals
    assert not doc.release_is_stale()
    path = tmp_path / "marginals.npz"
    with qtbot.waitSignal(window.exportFinished, timeout=60_000):
        assert window.export_release("release", path)
    recorded = release_choices(pio.load_release_metadata(path))
    assert (recorded.mechanism, recorded.marginals) == ("marginals", expected.spec.marginals)
    doc.set_workload(PAPER_AND_MARGINALS)  # no longer only marginals: per-axis strategies again
    box = wait_shown(window, qtbot)
    assert box.result.spec.label == "strategies" and box.axes_title.text() == "How each attribute is measured:"
    assert [box.axes.horizontalHeaderItem(c).text() for c in range(2)] == ["Attribute", "Measured by"]
    assert doc.release_is_stale()
