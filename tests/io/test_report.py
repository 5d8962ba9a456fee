"""The release report: every item the issue asks for, for each mechanism and neighbouring notion,
and never a true count (planted values are searched for, as the leak tests do)."""

from __future__ import annotations

import hashlib
import html
import re
from pathlib import Path

import pandas as pd
import pytest

from privelet_gui import __version__
from privelet_gui.cli import main
from privelet_gui.engine import (
    Hierarchy,
    NominalAttribute,
    OrdinalAttribute,
    QuintileRow,
    Schema,
    expected_error,
    margin95,
    paper_workload,
)
from privelet_gui.engine.accuracy.evaluation import EvaluationRow
from privelet_gui.engine.descriptions import (
    AXIS_STRATEGY_DESCRIPTIONS,
    MECHANISM_DESCRIPTIONS,
    NEIGHBOUR_MEANINGS,
    SAMPLER_DESCRIPTIONS,
    describe_axis_strategy,
    describe_mechanism,
)
from privelet_gui.io import load_release, load_release_metadata, save_schema
from privelet_gui.io.choices import release_choices
from privelet_gui.io.report import CONFIDENTIAL_TEXT, evaluation_report, release_report

from .test_release_trust import release_file_metadata, rewrite_release_file

#: The table's true number of rows and its three non-empty cells: numbers no report has a
#: reason to print, so finding one means a true count leaked.
PLANTED_CELLS = {(3, "F", "north"): 4817, (7, "M", "south"): 2609, (0, "F", "south"): 1493}
PLANTED_ROWS = sum(PLANTED_CELLS.values())  # 8919
PLANTED = [PLANTED_ROWS, *PLANTED_CELLS.values()]


@pytest.fixture(scope="module")
def planted(tmp_path_factory):
    """A table whose true counts are the planted numbers, and its schema file."""
    folder = tmp_path_factory.mktemp("planted")
    schema = Schema([OrdinalAttribute.integer_range("age", 0, 9), NominalAttribute("sex", Hierarchy.flat(["F", "M"])),
                     NominalAttribute("place", Hierarchy.flat(["north", "south"]))])
    save_schema(schema, folder / "schema.json")
    rows = [cell for cell, count in PLANTED_CELLS.items() for _ in range(count)]
    pd.DataFrame(rows, columns=["age", "sex", "place"]).to_csv(folder / "visits.csv", index=False)
    return folder / "visits.csv", folder / "schema.json", schema


MECHANISMS = {
    "privelet+": ["--sa", "sex,place"],
    "privelet": ["--sa", "none"],
    "basic": ["--mechanism", "basic"],
    "strategies": ["--strategies", "tree-4/0,1,1;hierarchy;identity"],
}


def make_release(planted, out: Path, mechanism: str, neighbours: str, *extra: str) -> Path:
    table, schema_file, _ = planted
    code = main(["release", str(table), "--schema", str(schema_file), "--epsilon", "0.5", "--neighbours", neighbours,
                 "--out", str(out), "--quiet", "--yes", *MECHANISMS[mechanism], *extra])
    assert code == 0
    return out


def assert_no_true_count(text: str) -> None:
    for value in PLANTED:
        for shown in (str(value), f"{value:,}"):
            assert not re.search(rf"(?<![\w.,]){re.escape(shown)}(?![\w,]|\.\d)", text), f"true count {shown} in the report"


def words(text: str) -> str:
    """The report's text as a reader sees it: no tags, no escapes, one space between words."""
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", text)).split()).replace(" .", ".").replace(" ,", ",")


def figure(value: float) -> str:
    """A +/- figure as the report writes it."""
    return f"{value:,.0f}" if value >= 100 else f"{value:.3g}"


@pytest.mark.parametrize("neighbours", ["replace", "add-remove"])
@pytest.mark.parametrize("mechanism", list(MECHANISMS))
def test_the_report_says_every_item_and_no_true_count(planted, tmp_path, mechanism, neighbours):
    path = make_release(planted, tmp_path / "visits.npz", mechanism, neighbours)
    text = release_report(path, name="Clinic visits 2024")
    release = load_release(path)
    spec = release.spec
    assert spec.label == mechanism
    plain = words(text)

    # what was released: the custodian's name, attributes, domains and where they came from, cells, policy
    assert "Release report: Clinic visits 2024" in plain
    for name in ("age", "sex", "place"):
        assert f"<tr><td>{name}</td>" in text
    assert "10 ordered values from 0 to 9" in plain and "2 values in a hierarchy of 2 levels: F, M" in plain
    assert plain.count("declared in the schema (public)") == 3
    assert "10 x 2 x 2 = 40 cells" in plain
    assert "Every row of the table had a value in every domain" in plain
    # the guarantee
    assert "epsilon = 0.5" in plain and NEIGHBOUR_MEANINGS[neighbours] in plain
    assert "What it covers" in plain and "What it does not cover" in plain
    assert SAMPLER_DESCRIPTIONS["exact"] in plain and "AES-128 in counter mode" in plain
    assert "Seeded: no." in plain
    # the mechanism, why, and the alternatives' expected errors on the same workload
    assert describe_mechanism(mechanism) in plain
    for strategy in spec.plan.strategies:
        assert describe_axis_strategy(strategy.kind) in plain
    assert "Why:" in plain and "The custodian chose" in plain
    workload = paper_workload(spec.schema)
    for other in ("basic", "privelet"):
        alternative = spec.replace(mechanism=other, sa=(), strategies=())
        assert f"±{figure(margin95(expected_error(alternative, workload)))}" in plain
    # the expected error: typical, by size (a chart), worst, and how to get one's own interval
    typical = margin95(expected_error(spec, workload))
    assert f"within ±{figure(typical)} of the true answer" in plain
    assert "<svg" in text and "by query size" in text and "queries by size" in plain
    assert f"±{figure(spec.worst_case_margin95())}" in plain
    assert "A confidence interval for your own query" in plain and "privelet query visits.npz" in plain
    # the ledger, the version, the checksum, the dates
    assert "This release is entry 1 of the privacy ledger" in plain
    assert f"epsilon 0.5 ({neighbours})" in plain
    assert hashlib.sha256(path.read_bytes()).hexdigest() in text
    assert f"privelet-gui {__version__}" in plain and "Its signature checks out" in plain
    # self-contained: nothing loaded from elsewhere
    assert not re.search(r"""(src|href)\s*=|@import|url\(""", text)
    assert_no_true_count(text)
    # nor the table's path: the report names the table as the custodian does
    assert "visits.csv" not in text


def test_a_report_says_where_domains_came_from_and_the_seeded_flag(planted, tmp_path):
    table, _, schema = planted
    learned = Schema([schema[0], schema[1], NominalAttribute("place", schema[2].hierarchy, domain_from_data=True)])
    save_schema(learned, tmp_path / "learned.json")
    code = main(["release", str(table), "--schema", str(tmp_path / "learned.json"), "--epsilon", "1", "--seed", "3",
                 "--out", str(tmp_path / "r.npz"), "--quiet", "--yes"])
    assert code == 0
    text = words(release_report(tmp_path / "r.npz"))
    assert "taken from the data (NOT private)" in text and "NOT PRIVATE until fixed: the domains of place" in text
    assert "SEEDED TEST RELEASE: NOT PRIVATE" in text
    assert "Release report: r.npz" in text  # no name given and no dataset: the file's name
    assert_no_true_count(text)


def test_a_report_for_a_workload_and_a_dataset(planted, tmp_path):
    path = make_release(planted, tmp_path / "w.npz", "privelet+", "replace", "--dataset", "Clinic visits")
    text = words(release_report(path, workload=["marginals:1"]))
    assert "Release report: Clinic visits" in text  # the dataset recorded names the table
    assert "1-way marginals" in text
    assert_no_true_count(text)


def test_the_ledger_section_says_when_the_ledger_has_no_record(planted, tmp_path, private_ledger):
    path = make_release(planted, tmp_path / "x.npz", "basic", "replace")
    moved = path.rename(tmp_path / "moved.npz")
    text = release_report(moved)
    assert "has no release written to this file" in text


def test_a_best_strategy_report_says_why_and_what_each_axis_is(planted, tmp_path):
    table, schema_file, _ = planted
    path = tmp_path / "best.npz"
    assert main(["release", str(table), "--schema", str(schema_file), "--epsilon", "0.5", "--out", str(path),
                 "--quiet", "--yes", "--workload", "marginals:1,2"]) == 0
    text = release_report(path)
    plain = words(text)
    spec = load_release(path).spec
    assert "Each attribute's strategy was chosen as the one with the least expected error" in plain
    assert "marginals:1,2" in plain and "never worse than them on that workload" in plain
    for strategy, name in zip(spec.plan.strategies, spec.axis_strategies):
        assert describe_axis_strategy(strategy.kind, name) in plain
    assert_no_true_count(text)


#: Why a release's S_A is what it is, by how it was chosen (None: the best strategy chose no S_A).
WHY = {
    "recommended": "S_A is the recommended one, by the paper's rule",
    "best": "S_A was chosen as the best one for the workload",
    "given": "The custodian chose this mechanism and S_A.",
    None: "Each attribute's strategy was chosen as the one with the least expected error",
}


@pytest.mark.parametrize(
    ("options", "rule"),
    [(["--mechanism", "privelet"], "recommended"), (["--sa", "auto"], "recommended"),
     (["--sa", "best", "--workload", "marginals:1"], "best"), (["--sa", "sex"], "given"), ([], None)],
)
def test_a_report_says_how_s_a_was_chosen_in_the_rules_words(planted, tmp_path, options, rule):
    table, schema_file, _ = planted
    path = tmp_path / "r.npz"
    assert main(["release", str(table), "--schema", str(schema_file), "--epsilon", "0.5", "--out", str(path),
                 "--quiet", "--yes", *options]) == 0
    assert release_choices(load_release_metadata(path)).sa_rule == rule
    assert release_file_metadata(path)["extra"]["choices"]["sa_rule"] == rule  # written by today's name
    assert WHY[rule] in words(release_report(path))


@pytest.mark.parametrize(("recorded", "rule"), [("auto", "recommended"), ("best-strategy", None)])
def test_a_release_file_with_an_earlier_s_a_rule_name_still_loads_and_reports(planted, tmp_path, recorded, rule):
    table, schema_file, _ = planted
    path = tmp_path / "old.npz"
    options = ["--mechanism", "privelet"] if rule == "recommended" else []
    assert main(["release", str(table), "--schema", str(schema_file), "--epsilon", "0.5", "--out", str(path),
                 "--quiet", "--yes", *options]) == 0
    meta = release_file_metadata(path)
    meta["extra"]["choices"]["sa_rule"] = recorded  # as files written before the one vocabulary say it
    rewrite_release_file(path, meta=meta, signature=False)
    assert release_choices(load_release_metadata(path)).sa_rule == rule
    assert WHY[rule] in words(release_report(path))


def test_every_mechanism_and_axis_strategy_has_words():
    assert set(MECHANISM_DESCRIPTIONS) == {"privelet+", "privelet", "basic", "strategies", "marginals"}
    assert set(AXIS_STRATEGY_DESCRIPTIONS) >= {"identity", "haar", "nominal", "tree"}
    assert describe_axis_strategy("tree", "tree-8/0,1,1").endswith("(groups of 8 at each level, levels weighted 0, 1, 1 from the top)")
    # one not described yet is still named, so a new strategy never breaks a report
    assert "tree-8" in describe_axis_strategy("tree-8") and "later" in describe_mechanism("later")


def test_the_evaluation_report_is_marked_confidential():
    schema = Schema([OrdinalAttribute.integer_range("age", 0, 9)])
    rows = [EvaluationRow(1.0, mechanism, QuintileRow(q, q / 10, 100.0 * q, 0.01 * q, 20))
            for mechanism in ("basic", "privelet+") for q in range(1, 6)]
    text = evaluation_report(rows, table_name="visits.csv", schema=schema, sa=(), neighbours="replace", queries=100)
    assert html.escape(CONFIDENTIAL_TEXT, quote=True) in text
    assert 'class="banner confidential"' in text and "position: fixed" in text  # on every printed page
    assert "<title>CONFIDENTIAL" in text and "<svg" in text


def test_a_report_of_weighted_marginals_lists_them_and_no_true_count(planted, tmp_path):
    from privelet_gui.engine import ReleaseSpec
    from privelet_gui.io import count_table, save_release

    table, _, schema = planted
    matrix, _ = count_table(table, schema)
    spec = ReleaseSpec(schema, 0.5, "marginals", marginals=((("age", "sex"), 3), (("place",), 1)))
    save_release(spec.run(matrix, seed=1), tmp_path / "m.npz", seed=1)
    text = release_report(tmp_path / "m.npz", name="Clinic visits 2024")
    plain = words(text)
    assert "Weighted marginals" in plain and "age, sex 3" in plain and "place 1" in plain
    assert describe_mechanism("marginals") in plain
    assert_no_true_count(text)
