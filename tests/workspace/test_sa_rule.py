"""One S_A rule, interpreted once (issue 42, item 5): the command line, the workspace and the
advisor ask the engine's resolver, and agree on the S_A of the same schema and workload."""

from __future__ import annotations

import json

import pytest

import privelet_gui.engine as engine
from privelet_gui.cli import main
from privelet_gui.engine import ReleaseSpec, advise, best_sa, recommend_sa, resolve_sa
from privelet_gui.engine.accuracy import advisor
from privelet_gui.io import save_schema
from privelet_gui.io.project import WorkloadChoice
from privelet_gui.workspace import model
from privelet_gui.workspace.workload import build_workload, workload_descriptions

TWO_WAY = WorkloadChoice(paper=None, ways=(2,))
GIVEN = ("sex", "race")


def test_there_is_one_resolver():
    assert engine.resolve_sa is advisor.resolve_sa and model.resolve_sa is advisor.resolve_sa


@pytest.fixture
def asked(monkeypatch):
    """Every answer of the resolver, as (rule, S_A), whichever module asks it."""
    answers: list[tuple[str, tuple[str, ...]]] = []

    def spy(rule, spec, workload=None, **options):
        sa = resolve_sa(rule, spec, workload, **options)
        answers.append((rule, sa))
        return sa

    for module in (engine, advisor, model):  # the command line imports it from the engine when run
        monkeypatch.setattr(module, "resolve_sa", spy)
    return answers


@pytest.mark.parametrize(("word", "rule"), [("recommended", "recommended"), ("auto", "recommended"),
                                            ("best", "best"), (",".join(GIVEN), "given")])
def test_the_command_line_the_workspace_and_the_advisor_agree(workspace, asked, capsys, tmp_path, word, rule):
    schema = workspace.schema()
    workload = build_workload(TWO_WAY, schema)
    expected = {"recommended": recommend_sa(schema), "best": best_sa(ReleaseSpec(schema, 1.0), workload).sa,
                "given": GIVEN}[rule]
    assert recommend_sa(schema) != best_sa(ReleaseSpec(schema, 1.0), workload).sa  # the rules differ here

    save_schema(schema, tmp_path / "schema.json")
    descriptions = [arg for text in workload_descriptions(TWO_WAY, schema) for arg in ("--workload", text)]
    assert main(["bounds", "--schema", str(tmp_path / "schema.json"), "--epsilon", "1", "--sa", word,
                 *descriptions, "--json"]) == 0
    command_line = tuple(json.loads(capsys.readouterr().out)["sa"])
    assert (rule, command_line) in asked
    asked.clear()

    workspace.set_privacy(mechanism="privelet+", workload=TWO_WAY)
    {"recommended": workspace.use_recommended_sa, "best": workspace.use_best_sa,
     "given": lambda: workspace.set_sa(GIVEN)}[rule]()
    assert workspace.sa_rule == rule
    in_the_workspace = workspace.sa
    assert (rule, in_the_workspace) in asked
    asked.clear()

    advice = advise(ReleaseSpec(schema, 1.0, sa=GIVEN if rule == "given" else ()), workload, sa_rule=rule)
    assert (rule, advice.spec.effective_sa) in asked

    assert command_line == in_the_workspace == advice.spec.effective_sa == expected
