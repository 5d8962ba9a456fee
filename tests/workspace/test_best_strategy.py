"""The best strategy for the workload in the workspace (issue 40, item 2): the default, chosen
as the engine chooses it, the one rule behind the release, its file and its script, waiting for
the app's worker, and project files."""

from __future__ import annotations

import json

import pytest

from privelet_gui import io as pio
from privelet_gui.engine import ReleaseSpec, best_strategy, recommend_sa
from privelet_gui.io.choices import redo_script, release_choices
from privelet_gui.io.project import (
    Project,
    ProjectError,
    load_project,
    project_from_json,
    project_to_json,
    save_project,
)
from privelet_gui.workspace import Workspace, run_release
from privelet_gui.workspace.jobs import export_release_file
from privelet_gui.workspace.steps import release_blockers
from privelet_gui.workspace.workload import WorkloadChoice, build_workload, find_best_strategy

MARGINALS = WorkloadChoice(paper=None, ways=(1, 2), attributes=("age", "sex", "education"), grains=(("age", 5),))


def engine_choice(workspace: Workspace):
    """What the engine chooses for the workspace's settings and workload, directly."""
    spec = workspace.release_spec(mechanism="privelet+")
    return best_strategy(spec, build_workload(workspace.workload, spec.schema), objective=workspace.workload.objective,
                         marginals=True)


def never(check: object) -> bool:
    raise AssertionError("asked, though the table has spent nothing")


def test_a_new_workspace_releases_with_the_best_strategy_for_its_workload(workspace):
    assert Workspace().mechanism == "best"
    assert workspace.mechanism == "best" and workspace.mechanism_text() == "Best strategy"
    expected = engine_choice(workspace)
    spec = workspace.release_spec()
    assert spec.axis_strategies == expected.strategies
    assert spec == ReleaseSpec(workspace.schema(), 1.0, "strategies", strategies=expected.strategies)
    choice = workspace.best_strategy_result()
    assert choice.error == pytest.approx(expected.error, rel=1e-9)
    assert {k: e for k, (_s, e) in choice.alternatives.items()} == pytest.approx(
        {k: e for k, (_s, e) in expected.alternatives.items()}, rel=1e-9)
    assert workspace.step_status("privacy").complete and not release_blockers(workspace)


@pytest.mark.parametrize("epsilon", [0.1, 2.5])
def test_epsilon_rescales_the_choice_and_the_workload_chooses_again(workspace, epsilon):
    workspace.set_epsilon(epsilon)
    expected = engine_choice(workspace)
    choice = workspace.best_strategy_result()
    assert choice.strategies == expected.strategies and choice.spec.epsilon == epsilon
    assert choice.error == pytest.approx(expected.error, rel=1e-9)
    workspace.set_workload(MARGINALS)
    expected = engine_choice(workspace)
    choice = workspace.best_strategy_result()
    assert choice.workload == expected.workload and "marginals" in choice.workload
    spec = workspace.release_spec()
    assert (spec.label, spec.marginals, spec.epsilon) == (expected.spec.label, expected.spec.marginals, epsilon)
    assert choice.error == pytest.approx(expected.error, rel=1e-9)


def test_the_app_chooses_on_a_worker_and_the_release_waits_for_the_current_choice(workspace):
    workspace.strategy_search_inline = False  # as in the app
    workspace.set_workload(MARGINALS)
    key = workspace.best_sa_key()
    assert workspace.best_strategy_result() is None and workspace.release_spec() is None
    assert release_blockers(workspace) == ["the best strategy for the workload is not chosen yet (Privacy step)"]
    assert workspace.step_status("privacy").state == "todo"
    old = key
    workspace.set_workload(WorkloadChoice())  # the paper's again
    workspace.store_best_strategy(old, find_best_strategy(old))  # finished, but for other settings
    assert workspace.best_strategy_result() is None and release_blockers(workspace)
    workspace.store_best_strategy(workspace.best_sa_key(), find_best_strategy(workspace.best_sa_key()))
    assert workspace.release_spec().axis_strategies == engine_choice(workspace).strategies
    assert not release_blockers(workspace)
    workspace.set_privacy(mechanism="privelet+")  # the paper's mechanisms never wait for it
    workspace.set_workload(MARGINALS)
    assert not release_blockers(workspace)


def test_a_cancelled_search_blocks_the_release_saying_so_until_searched_again_or_chosen(workspace):
    workspace.strategy_search_inline = False  # as in the app
    workspace.set_workload(MARGINALS)
    key = workspace.best_sa_key()
    announced: list[bool] = []
    workspace.events.privacy_changed.connect(lambda: announced.append(True))
    workspace.cancel_best_strategy(key)
    assert announced and workspace.best_strategy_cancelled() and workspace.best_strategy_result() is None
    cancelled = ("the search for the best strategy was cancelled: choose Search again (Privacy step), "
                 "or release with Privelet+, Privelet or Basic")
    assert release_blockers(workspace) == [cancelled]
    assert workspace.step_status("privacy").message == cancelled
    workspace.set_workload(WorkloadChoice())  # other settings: not cancelled (the app searches them)
    assert not workspace.best_strategy_cancelled()
    assert release_blockers(workspace) == ["the best strategy for the workload is not chosen yet (Privacy step)"]
    workspace.set_workload(MARGINALS)  # back to the cancelled ones: still cancelled
    assert workspace.best_strategy_cancelled()
    workspace.cancel_best_strategy(None)  # Search again
    assert not workspace.best_strategy_cancelled() and "not chosen yet" in release_blockers(workspace)[0]
    workspace.cancel_best_strategy(key)
    workspace.store_best_strategy(key, find_best_strategy(key))  # chosen after all (a search finished)
    assert not workspace.best_strategy_cancelled() and not release_blockers(workspace)
    workspace.cancel_best_strategy(key)
    workspace.reset()  # a new project forgets it
    assert workspace._strategy_cancelled is None


def test_a_workload_of_marginals_releases_weighted_marginals_and_its_script_names_them(workspace, tmp_path):
    workspace.set_workload(MARGINALS)
    expected = engine_choice(workspace)
    assert expected.spec.label == "marginals"
    outcome = run_release(workspace.release_job(), ask=never)
    assert outcome.release.mechanism == "marginals" and outcome.release.marginals == expected.spec.marginals
    assert not workspace.release_is_stale(outcome)
    path = export_release_file(outcome, tmp_path / "marginals.npz")
    choices = release_choices(pio.load_release_metadata(path))
    assert (choices.mechanism, choices.marginals, choices.sa_rule) == ("marginals", expected.spec.marginals, None)
    written = ";".join(f"{','.join(names)}={weight}" for names, weight in expected.spec.marginals)
    script = redo_script(pio.load_release_metadata(path), path, choices=outcome.choices)
    assert f"--mechanism marginals --marginals '{written}'" in script
    assert "# The weighted marginals were chosen as the least expected error (mean) on the workload" in script


def test_a_workload_that_cannot_be_made_blocks_the_best_strategy_and_says_why(workspace):
    workspace.set_workload(WorkloadChoice(paper=None, ways=(2,), attributes=("age",)))
    [problem] = release_blockers(workspace)
    assert problem.startswith("no best strategy: 2-way marginals need at least 2 attributes")
    assert workspace.step_status("privacy").state == "error"


def test_a_release_with_the_best_strategy_records_the_choice_in_its_file_and_script(workspace, tmp_path):
    workspace.set_epsilon(0.5)
    job = workspace.release_job()
    expected = engine_choice(workspace)
    assert job.spec == workspace.release_spec() and job.strategy_choice is not None
    outcome = run_release(job, ask=never)
    assert outcome.release.strategies == expected.strategies and outcome.release.mechanism == "strategies"
    path = export_release_file(outcome, tmp_path / "best.npz")
    assert pio.load_release(path).strategies == expected.strategies
    meta = pio.load_release_metadata(path)
    recorded = meta["extra"]["strategy_choice"]
    assert recorded["workload"] == expected.workload and recorded["objective"] == "mean"
    assert recorded["expected_error"] == pytest.approx(expected.error, rel=1e-9)
    assert recorded["alternatives"] == pytest.approx({k: e for k, (_s, e) in expected.alternatives.items()}, rel=1e-9)
    choices = release_choices(meta)
    assert (choices.sa_rule, choices.strategies, choices.workload) == (None, expected.strategies,
                                                                       ("paper:10000",))
    assert choices.table is None  # never recorded without being asked
    script = redo_script(meta, path, choices=outcome.choices)
    assert "--strategies '" + ";".join(expected.strategies) + "'" in script
    assert "chosen as the least expected error (mean) on the workload paper:10000" in script


def test_privelet_plus_releases_exactly_as_before(workspace, tmp_path):
    workspace.set_privacy(mechanism="privelet+")
    job = workspace.release_job()
    schema = workspace.schema()
    assert job.spec == ReleaseSpec(schema, 1.0, "privelet+", recommend_sa(schema))
    assert job.strategy_choice is None and job.choices().sa_rule == "recommended"
    outcome = run_release(job, ask=never)
    assert outcome.release.mechanism == "privelet+" and outcome.release.strategies == ()
    meta = pio.load_release_metadata(export_release_file(outcome, tmp_path / "plus.npz"))
    assert "strategy_choice" not in meta["extra"] and release_choices(meta).strategies == ()


@pytest.mark.parametrize(("mechanism", "choose_sa", "recorded"), [
    ("privelet+", Workspace.use_recommended_sa, "recommended"),
    ("privelet+", Workspace.use_best_sa, "best"),
    ("privelet+", lambda workspace: workspace.set_sa(["sex", "race"]), "given"),
    ("basic", Workspace.use_best_sa, "given"),  # Basic is named: no S_A left to choose
    ("best", Workspace.use_best_sa, None),  # the best strategy chose every strategy, no S_A
])
def test_a_release_file_records_the_rule_that_chose_its_sa_as_the_command_line_does(
    workspace, tmp_path, mechanism, choose_sa, recorded
):
    workspace.set_privacy(mechanism=mechanism)
    choose_sa(workspace)
    job = workspace.release_job()
    outcome = run_release(job, ask=never)
    path = export_release_file(outcome, tmp_path / "release.npz")
    meta = pio.load_release_metadata(path)
    choices = release_choices(meta)
    assert choices.sa_rule == recorded
    chosen_for_workload = recorded in ("best", None)
    assert choices.workload == (("paper:10000",) if chosen_for_workload else ())
    script = redo_script(meta, path, choices=outcome.choices)
    assert ("S_A was chosen as the least expected error (mean) on the workload paper:10000" in script) == (
        recorded == "best")


def test_a_held_release_goes_stale_when_the_workload_changes_the_strategies(workspace):
    outcome = run_release(workspace.release_job(), ask=never)
    workspace.set_release_outcome(outcome)
    assert not workspace.release_is_stale()
    workspace.set_workload(MARGINALS)
    assert workspace.release_spec().axis_strategies != outcome.release.strategies
    assert workspace.release_is_stale()


def test_projects_store_the_best_strategy_and_what_it_chose(workspace, tmp_path):
    chosen = workspace.release_spec().axis_strategies
    project = workspace.to_project()
    assert (project.mechanism, project.strategies) == ("best", chosen)
    path = tmp_path / "p.privelet"
    save_project(project, path)
    stored = json.loads(path.read_text())
    assert stored["version"] >= 4 and stored["privacy"]["mechanism"] == "best"  # since version 4
    assert stored["privacy"]["strategies"] == list(chosen)
    reopened = Workspace()
    reopened.strategy_search_inline = False  # as in the app: what it last chose is kept until chosen again
    reopened.apply_project(load_project(path), path, workspace.summary)
    assert reopened.mechanism == "best" and reopened.to_project().strategies == chosen
    reopened.strategy_search_inline = True
    assert reopened.release_spec().axis_strategies == chosen


TWO_WAY = WorkloadChoice(paper=None, ways=(2,))


def test_projects_record_the_weighted_marginals_the_best_strategy_chose(workspace, tmp_path):
    workspace.set_workload(TWO_WAY)
    chosen = workspace.release_spec().marginals
    assert workspace.release_spec().label == "marginals" and chosen  # the best strategy chose weighted marginals
    project = workspace.to_project()
    assert (project.mechanism, project.strategies, project.marginals) == ("best", (), chosen)
    path = tmp_path / "p.privelet"
    save_project(project, path)
    stored = json.loads(path.read_text())
    assert stored["privacy"]["strategies"] == []
    assert stored["privacy"]["marginals"] == [{"attributes": list(names), "weight": weight} for names, weight in chosen]
    assert load_project(path) == project
    reopened = Workspace()
    reopened.strategy_search_inline = False  # as in the app: what it last chose is kept until chosen again
    reopened.apply_project(load_project(path), path, workspace.summary)
    assert reopened.to_project().marginals == chosen and reopened.to_project().strategies == ()
    reopened.strategy_search_inline = True
    assert reopened.release_spec().marginals == chosen
    reopened.set_workload(MARGINALS.with_grain("age", 10))  # per-axis strategies or other marginals: recorded instead
    again = reopened.best_strategy_result()
    assert (reopened.to_project().strategies, reopened.to_project().marginals) == (again.strategies, again.spec.marginals)
    assert reopened.to_project().marginals != chosen


@pytest.mark.parametrize(("marginals", "message"), [
    ({"age": 1}, r'"privacy.marginals" must be a list of weighted marginals'),
    ([["age"]], r'"privacy.marginals\[0\]" must be an object with "attributes" and "weight"'),
    ([{"attributes": ["age"], "weight": 1, "extra": 2}], r'"privacy.marginals\[0\]" must be an object'),
    ([{"attributes": ["age"], "weight": 2}, {"attributes": "age", "weight": 1}],
     r'"privacy.marginals\[1\].attributes" must be a list of distinct attribute names'),
    ([{"attributes": ["age", "age"], "weight": 1}], r'"privacy.marginals\[0\].attributes" must be a list of distinct'),
    ([{"attributes": ["age", ""], "weight": 1}], r'"privacy.marginals\[0\].attributes"'),
    ([{"attributes": ["age"], "weight": 0}], r'"privacy.marginals\[0\].weight" must be a positive whole number'),
    ([{"attributes": ["age"], "weight": 1.5}], r'"privacy.marginals\[0\].weight" must be a positive whole number'),
    ([{"attributes": ["age"], "weight": True}], r'"privacy.marginals\[0\].weight" must be a positive whole number'),
])
def test_a_malformed_record_of_weighted_marginals_is_refused_naming_it(workspace, marginals, message):
    workspace.set_workload(TWO_WAY)
    good = project_to_json(workspace.to_project())
    assert good["privacy"]["marginals"]
    with pytest.raises(ProjectError, match=message):
        project_from_json({**good, "privacy": {**good["privacy"], "marginals": marginals}})


def test_a_project_cannot_record_both_strategies_and_marginals(workspace):
    workspace.set_workload(TWO_WAY)
    good = project_to_json(workspace.to_project())
    both = {**good["privacy"], "strategies": ["identity"] * len(good["attribute_order"])}
    with pytest.raises(ProjectError, match=r'"privacy.strategies" and "privacy.marginals" are both given'):
        project_from_json({**good, "privacy": both})
    with pytest.raises(ProjectError, match="not both"):
        Project(strategies=("identity",), marginals=((("age",), 1),))
    with pytest.raises(ProjectError, match="weight is a positive whole number"):
        Project(marginals=((("age",), 0),))


def test_projects_saved_without_a_record_of_marginals_still_load(workspace):
    workspace.set_workload(TWO_WAY)
    current = project_to_json(workspace.to_project())
    del current["privacy"]["marginals"]  # saved before the record existed (same version)
    assert current["version"] == 5
    project = project_from_json(current)
    assert (project.mechanism, project.strategies, project.marginals) == ("best", (), ())
    for version in (3, 4):
        old = {**current, "version": version}
        assert project_from_json(old).marginals == ()


def test_projects_saved_before_keep_their_mechanism(workspace):
    workspace.set_privacy(mechanism="privelet")
    old = project_to_json(workspace.to_project())
    old["version"] = 3
    del old["privacy"]["strategies"]
    project = project_from_json(old)
    assert (project.mechanism, project.strategies) == ("privelet", ())
    fresh = Workspace()
    fresh.apply_project(project, None, workspace.summary)
    assert fresh.mechanism == "privelet" and fresh.release_spec().label == "privelet"
    with pytest.raises(ProjectError, match="mechanism\" must be one of best, privelet"):
        project_from_json({**old, "privacy": {**old["privacy"], "mechanism": "wavelets"}})
    assert Project().mechanism == "privelet+"  # a project file without a mechanism: the paper's, as before
