"""The workload in the workspace without Qt: the "best" S_A rule, searches left for the app,
the advisor's suggestions applied and undone, and the workload in project files."""

from __future__ import annotations

import dataclasses
import itertools
import json

import numpy as np
import pytest

from privelet_gui.engine import (
    Hierarchy,
    NominalAttribute,
    OrdinalAttribute,
    PriveletError,
    ReleaseSpec,
    Schema,
    best_sa,
    expected_error,
    marginals,
    paper_workload,
    recommend_sa,
)
from privelet_gui.io.project import (
    BEST_STRATEGY,
    PROJECT_FORMAT,
    PROJECT_VERSION,
    ProjectError,
    WorkloadChoice,
    load_project,
    save_project,
)
from privelet_gui.workspace import Workspace, release_blockers
from privelet_gui.workspace.model import MEASURED_QUERIES
from privelet_gui.workspace.workload import (
    SearchKey,
    build_workload,
    chart_workload,
    find_advice,
    find_best_sa,
    scaled_advice,
    search_seconds,
)

TWO_WAY = WorkloadChoice(paper=None, ways=(2,))


def test_a_new_table_starts_with_the_recommended_sa_and_the_papers_workload(workspace):
    assert workspace.sa_rule == "recommended" and workspace.workload == WorkloadChoice()
    assert workspace.workload.paper == 10_000 and workspace.workload.objective == "mean"


def test_best_follows_the_workload_and_the_schema(workspace):
    workspace.use_best_sa()
    schema = workspace.schema()
    spec = ReleaseSpec(schema, 1.0)
    assert workspace.sa == best_sa(spec, paper_workload(schema)).sa
    assert workspace.sa_rule_text().startswith("best for the workload")
    workspace.set_workload(TWO_WAY, "Expect 2-way marginals")
    assert workspace.sa == best_sa(spec, marginals(schema, (2,))).sa
    result = workspace.best_sa_result()
    # Adult's 2-way marginals: the target is >= 2.5x better than the rule.
    assert result.ratio("rule") >= 2.5 and result.ratio("basic") >= 1.0 and result.ratio("privelet") >= 1.0
    assert result.error("best", 0.5) == pytest.approx(4 * result.error("best", 1.0))
    workspace.set_attribute("native-country", include=False)  # S_A follows the schema
    smaller = workspace.schema()
    assert workspace.sa == best_sa(ReleaseSpec(smaller, 1.0), marginals(smaller, (2,))).sa
    assert workspace.release_spec(mechanism="privelet+").effective_sa == workspace.sa
    workspace.history.undo()
    workspace.history.undo()
    assert workspace.workload == WorkloadChoice()
    workspace.history.undo()
    assert workspace.sa_rule == "recommended" and workspace.sa == recommend_sa(schema)


def test_the_best_search_is_the_engines_under_the_settings(workspace):
    """Neighbours and the counting policy decide the public total, and with it the best S_A."""
    workspace.set_workload(WorkloadChoice(paper=2000, objective="worst"))
    for neighbours, invalid in (("replace", "error"), ("add-remove", "error"), ("replace", "drop")):
        workspace.set_privacy(neighbours=neighbours, invalid=invalid)
        spec = ReleaseSpec(workspace.schema(), 1.0, neighbours=neighbours, invalid=invalid)
        engine = best_sa(spec, paper_workload(workspace.schema(), 2000), objective="worst")
        result = workspace.best_sa_result()
        assert result.sa == engine.sa and result.errors["best"][1] == pytest.approx(engine.error)
        assert workspace.best_sa_key().public_total == (neighbours == "replace" and invalid == "error")


def test_a_workload_that_cannot_be_made_blocks_a_best_release_only(workspace):
    workspace.set_privacy(mechanism="privelet+")  # S_A is Privelet+'s
    workspace.set_workload(WorkloadChoice(paper=None, ways=(2,), attributes=("age",)))
    assert workspace.best_sa_problem() is None  # the recommended rule does not need it
    assert not release_blockers(workspace)
    workspace.use_best_sa()
    problem = workspace.best_sa_problem()
    assert "2-way marginals need at least 2 attributes" in problem and "choose more attributes" in problem
    assert release_blockers(workspace) == [problem]
    assert workspace.step_status("privacy").state == "error"
    assert workspace.sa == recommend_sa(workspace.schema())  # a stand-in; the release waits
    with pytest.raises(PriveletError, match="2-way marginals"):
        workspace.release_job()
    workspace.set_privacy(mechanism="basic")  # S_A does not apply: nothing to wait for
    assert not release_blockers(workspace)


@pytest.mark.parametrize(
    "choice",
    [WorkloadChoice(), WorkloadChoice(paper=None, ways=(1,), attributes=("age", "sex")),
     WorkloadChoice(paper=None, ways=(1,), attributes=("ghost",))],
    ids=["paper", "marginals", "cannot-be-made"],
)
def test_a_release_is_measured_on_the_workload_its_expected_error_chart_lists(workspace, choice):
    workspace.set_privacy(mechanism="basic")  # nothing to choose first
    workspace.set_workload(choice)
    listed, stand_in = chart_workload(choice, workspace.schema(), MEASURED_QUERIES)
    assert workspace.coverage_key().choice == choice and workspace.coverage_key().limit == MEASURED_QUERIES
    measured = workspace.release_job().error_workload
    assert measured is not None and measured.name == listed.name
    for field in ("lo", "hi", "nodes"):  # the very same queries, a stand-in (seeded) included
        assert np.array_equal(getattr(measured.queries(), field), getattr(listed.queries(), field))
    assert (stand_in is None) == (choice != WorkloadChoice(paper=None, ways=(1,), attributes=("ghost",)))


@pytest.mark.parametrize(
    ("choice", "message"),
    [
        (WorkloadChoice(paper=None), "the workload is empty"),
        (WorkloadChoice(paper=None, ways=(1,), attributes=("ghost",)), "none of the marginals' attributes"),
        (WorkloadChoice(paper=None, ways=(1,), grains=(("native-country", 7),)), "hierarchy levels 1..3, got level 7"),
    ],
)
def test_workloads_that_cannot_be_made_say_why(workspace, choice, message):
    with pytest.raises(PriveletError, match=message):
        build_workload(choice, workspace.schema())


def test_a_missing_workload_file_is_reported_not_raised(workspace, tmp_path):
    workspace.use_best_sa()
    workspace.set_workload(WorkloadChoice(files=(tmp_path / "gone.csv",)))
    assert "no such workload file" in workspace.best_sa_result()
    assert search_seconds(workspace.best_sa_key()) == float("inf")  # files are read on the app's worker


def test_searches_left_for_the_app_wait_for_its_result(workspace):
    workspace.set_privacy(mechanism="privelet+")  # S_A is Privelet+'s
    workspace.best_sa_inline_seconds = 0.0  # as in the app, for a search that would take long
    workspace.use_best_sa()
    workspace.set_workload(TWO_WAY)
    key = workspace.best_sa_key()
    assert workspace.best_sa_result() is None
    assert workspace.best_sa_problem() == "the best S_A for the workload is still being computed"
    assert workspace.step_status("privacy").state == "todo"
    announced: list[bool] = []
    workspace.events.privacy_changed.connect(lambda: announced.append(True))
    stale = find_best_sa(dataclasses.replace(key, choice=WorkloadChoice()))
    workspace.store_best_sa(dataclasses.replace(key, choice=WorkloadChoice()), stale)
    assert not announced  # a result for other settings is kept, not announced
    result = find_best_sa(key)
    workspace.store_best_sa(key, result)
    assert announced and workspace.sa == result.sa and not release_blockers(workspace)


def _error_after(workspace: Workspace, suggestion) -> float:
    spec = workspace.release_spec().replace(epsilon=1.0)
    return expected_error(spec, suggestion.workload, objective=workspace.workload.objective)


@pytest.mark.parametrize("rule", ["recommended", "best", "given"])
def test_suggestions_predict_the_error_that_applying_them_gives(workspace, rule):
    workspace.set_privacy(mechanism="privelet+")  # the advisor weighs S_A rules of Privelet+
    workspace.set_workload(WorkloadChoice(paper=None, ways=(1, 2), attributes=("age", "sex", "native-country"),
                                          grains=(("age", 5), ("native-country", 2))))
    if rule == "best":
        workspace.use_best_sa()
    elif rule == "given":
        workspace.set_sa(["sex", "race"])
    advice = find_advice(workspace.advice_key())
    kinds = {s.kind for s in advice.suggestions}
    assert kinds == {"drop", "bins", "level"}
    for kind in ("drop", "bins", "level"):
        suggestion = next(s for s in advice.suggestions if s.kind == kind)
        before = workspace.schema()
        done = list(workspace.history.texts)
        workspace.apply_suggestion(suggestion)
        assert workspace.history.texts == [*done, "Advisor: " + suggestion.description.split(" (")[0]]  # one change
        assert workspace.schema() == suggestion.schema
        assert workspace.effective_sa() == suggestion.sa
        assert _error_after(workspace, suggestion) == pytest.approx(suggestion.error, rel=1e-9)
        workspace.history.undo()
        assert workspace.schema() == before
    scaled = scaled_advice(advice, 0.5)
    assert scaled.error == pytest.approx(4 * advice.error)
    assert [s.factor for s in scaled.suggestions] == pytest.approx([s.factor for s in advice.suggestions])


def test_under_the_best_strategy_the_release_gets_the_error_the_advisor_predicts(workspace):
    assert workspace.mechanism == BEST_STRATEGY  # the default
    workspace.set_workload(WorkloadChoice(paper=None, ways=(1, 2), attributes=("age", "sex", "native-country"),
                                          grains=(("age", 5), ("native-country", 2))))
    advice = find_advice(workspace.advice_key())
    assert advice.spec.axis_strategies == workspace.release_spec().axis_strategies
    assert advice.error == pytest.approx(workspace.best_strategy_result().error, rel=1e-9)
    # weighted marginals: dropping an attribute no marginal holds gains nothing, and is not suggested
    assert advice.spec.mechanism == "marginals" and workspace.release_spec().marginals == advice.spec.marginals
    assert {s.kind for s in advice.suggestions} == {"bins", "level"}
    for suggestion in advice.suggestions:
        workspace.apply_suggestion(suggestion)
        released = workspace.release_spec()  # the best strategy the release chooses for the changed schema
        assert (released.axis_strategies, released.marginals) == (suggestion.strategies, suggestion.marginals)
        assert _error_after(workspace, suggestion) == pytest.approx(suggestion.error, rel=1e-9)
        assert suggestion.error < advice.error
        workspace.history.undo()


def test_a_suggestion_for_other_settings_is_refused(workspace):
    workspace.set_workload(WorkloadChoice(paper=None, ways=(1,)))
    advice = find_advice(workspace.advice_key())
    bins = next(s for s in advice.lossy if s.kind == "bins")  # lossy ones are listed apart, and can be applied
    workspace.set_attribute("sex", include=False)
    with pytest.raises(PriveletError, match="other attribute settings"):
        workspace.apply_suggestion(bins)
    workspace.history.undo()
    workspace.set_attribute("age", include=False)
    with pytest.raises(PriveletError, match="not included now"):
        workspace.apply_suggestion(bins)


def test_binning_an_inferred_range_keeps_its_data_warning(sample_summary):
    ws = Workspace()
    ws.set_table(sample_summary)  # inferred: age is the range of the data's values
    assert ws.config("age").domain_from_data
    ws.set_workload(WorkloadChoice(paper=None, ways=(1,)))
    bins = next(s for s in find_advice(ws.advice_key()).lossy if s.kind == "bins")
    ws.apply_suggestion(bins)
    config = ws.config("age")
    assert config.mode == "bins" and config.domain_from_data  # the bin edges still come from the data
    assert ws.schema() == bins.schema


def test_a_hierarchy_level_round_trips_through_the_workspace(workspace, tmp_path):
    schema = workspace.schema()
    country = schema["native-country"]
    coarse = NominalAttribute(country.name, country.hierarchy, level=2)
    workspace.import_schema(Schema([coarse if a.name == coarse.name else a for a in schema]))
    config = workspace.config("native-country")
    assert config.level == 2 and config.hierarchy.to_hierarchy() == country.hierarchy  # the finest tree is kept
    assert workspace.schema()["native-country"] == coarse and "counted at level 2" in config.domain_text()
    path = tmp_path / "p.privelet"
    save_project(workspace.to_project(), path)
    again = Workspace()
    again.apply_project(load_project(path), path, None)
    assert again.schema()["native-country"] == coarse


def test_the_workload_and_the_rule_persist_in_a_project(workspace, sample_summary, tmp_path):
    queries = tmp_path / "queries.csv"
    queries.write_text("age,sex\n20..29,Female\n,Male\n")
    choice = WorkloadChoice(paper=500, ways=(1, 2), attributes=("age", "sex", "native-country"),
                            grains=(("native-country", 2), ("age", 5)), files=(queries,), objective="worst")
    workspace.set_workload(choice)
    workspace.use_best_sa()
    sa = workspace.sa
    path = tmp_path / "study.privelet"
    save_project(workspace.to_project(), path)
    stored = json.loads(path.read_text())
    assert stored["version"] == PROJECT_VERSION and stored["privacy"]["sa_rule"] == "best"
    assert stored["workload"] == {
        "paper": 500, "marginals": [1, 2], "attributes": ["age", "sex", "native-country"],
        "grains": {"age": 5, "native-country": 2}, "files": ["queries.csv"], "objective": "worst",
    }
    moved = tmp_path / "moved"
    moved.mkdir()
    (moved / "study.privelet").write_text(path.read_text())
    (moved / "queries.csv").write_text(queries.read_text())
    again = Workspace()
    again.apply_project(load_project(moved / "study.privelet"), moved / "study.privelet", sample_summary)
    assert again.workload == dataclasses.replace(choice, files=(moved / "queries.csv",))  # relative to the project
    assert again.sa_rule == "best" and again.sa == sa and not again.modified
    assert again.best_sa_result().workload.endswith("queries.csv")


def test_version_1_projects_load_with_the_papers_workload(tmp_path):
    path = tmp_path / "old.privelet"
    path.write_text(json.dumps({
        "format": PROJECT_FORMAT, "version": 1,
        "schema": {"version": 1, "attributes": [{"name": "age", "type": "ordinal", "range": [0, 9]}]},
        "privacy": {"epsilon": 0.5, "sa": ["age"], "sa_rule": "chosen"},
    }))
    project = load_project(path)
    assert project.workload == WorkloadChoice() and project.sa == ("age",) and project.epsilon == 0.5
    assert project.sa_rule == "given"  # "chosen" before version 5


@pytest.mark.parametrize(
    ("workload", "message"),
    [
        ([], '"workload" must be a JSON object'),
        ({"marginals": 2}, '"workload.marginals" must be a list'),
        ({"marginals": [0]}, "marginals are 1-way, 2-way"),
        ({"paper": 0}, "whole number of queries"),
        ({"paper": True}, "whole number of queries"),
        ({"grains": {"age": 0}}, "a grain is an attribute name and a whole number"),
        ({"grains": ["age"]}, '"workload.grains" must map'),
        ({"attributes": ["age", "age"]}, "distinct attribute names"),
        ({"files": [3]}, '"workload.files" must list file paths'),
        ({"objective": "median"}, "the objective is 'mean'"),
    ],
)
def test_bad_workloads_in_project_files_are_refused(tmp_path, workload, message):
    path = tmp_path / "bad.privelet"
    path.write_text(json.dumps({"format": PROJECT_FORMAT, "version": 2, "workload": workload}))
    with pytest.raises(ProjectError, match=message):
        load_project(path)


def test_the_search_finds_the_brute_force_minimum_on_a_small_schema():
    schema = Schema([
        OrdinalAttribute.integer_range("a", 0, 30),
        NominalAttribute("b", Hierarchy.from_nested({"*": {"x": ["1", "2", "3"], "y": ["4", "5"]}})),
        OrdinalAttribute.integer_range("c", 0, 3),
    ])
    choice = WorkloadChoice(paper=300, ways=(1,), grains=(("b", 2),))
    spec = ReleaseSpec(schema, 1.0)
    workload = build_workload(choice, schema)
    errors = {
        sa: expected_error(spec.replace(sa=sa), workload)
        for k in range(len(schema) + 1) for sa in itertools.combinations(schema.names, k)
    }
    result = find_best_sa(SearchKey.of(spec, choice))
    assert result.errors["best"][1] == pytest.approx(min(errors.values()), rel=1e-12)
    assert errors[result.sa] == pytest.approx(min(errors.values()), rel=1e-12)
    assert result.queries == 300 + 31 + 2 + 4  # paper + each value of a, the groups of b, each value of c


def test_applying_bins_keeps_the_workloads_blocks_in_real_units(workspace):
    workspace.set_workload(WorkloadChoice(paper=None, ways=(1,), attributes=("age",), grains=(("age", 5),)))
    before = build_workload(workspace.workload, workspace.schema())
    bins = next(s for s in find_advice(workspace.advice_key()).suggestions if s.width == 5)
    workspace.apply_suggestion(bins)
    assert workspace.workload.grain("age") == 1  # one bin of 5 years, not 5 bins of 5
    after = build_workload(workspace.workload, workspace.schema())
    age = workspace.schema()["age"]
    assert len(after) == len(before) and [age.labels[i] for i in after.queries().lo[:, 0][:2]] == ["[17, 22)", "[22, 27)"]
    assert workspace.history.texts[-1] == "Advisor: age in bins of 5 values"  # one undoable step
    workspace.history.undo()
    assert workspace.workload.grain("age") == 5 and workspace.schema() == before.schema
