"""Workload files and descriptions; release metadata and exports of the post-processing."""

import json

import numpy as np
import pytest

from privelet_gui.engine import Hierarchy, NominalAttribute, OrdinalAttribute, PriveletError, ReleaseSpec, Schema
from privelet_gui.io import (
    export_release,
    load_release,
    parse_where,
    read_workload,
    release_frame,
    save_release,
    workload_from_description,
    workloads_from_descriptions,
)

SCHEMA = Schema(
    [
        OrdinalAttribute.integer_range("age", 0, 99),
        NominalAttribute("job", Hierarchy.from_nested({"*": {"Tech": ["dev", "ops"], "Other": ["cook"]}})),
    ]
)


def test_csv_and_json_workload_files_use_the_where_syntax(tmp_path):
    csv_file = tmp_path / "queries.csv"
    csv_file.write_text("age,job\n20..29,Tech\n65..,\n,cook\n\n", encoding="utf-8")
    json_file = tmp_path / "queries.json"
    json_file.write_text(json.dumps({"queries": [["age=20..29", "job=Tech"], {"age": "65.."}, {"job": "cook"}]}))
    expected = [parse_where(SCHEMA, c) for c in (["age=20..29", "job=Tech"], ["age=65.."], ["job=cook"])]
    for path in (csv_file, json_file):
        batch = read_workload(path, SCHEMA).queries()
        assert batch.lo.tolist() == [list(q.lo) for q in expected]
        assert batch.hi.tolist() == [list(q.hi) for q in expected]
        assert batch.nodes.tolist() == [list(q.nodes) for q in expected]


@pytest.mark.parametrize(
    ("name", "text", "message"),
    [
        ("bad.csv", "age,job\n20..29,Nope\n", "bad.csv, query 1: .*no node called 'Nope'"),
        ("wide.csv", "age\n1,2\n", "line 2: 2 cells but the header names 1"),
        ("empty.csv", "", "is empty"),
        ("header.csv", "age,job\n", "lists no query"),
        ("bad.json", "{", "not valid JSON"),
        ("shape.json", '{"a": 1}', "a JSON workload is a list"),
        ("item.json", "[3]", "query 1 must be a list"),
    ],
)
def test_bad_workload_files_say_where_and_what(tmp_path, name, text, message):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    with pytest.raises(PriveletError, match=message):
        read_workload(path, SCHEMA)


def test_workload_descriptions(tmp_path):
    assert len(workload_from_description("paper:50", SCHEMA)) == 50
    assert len(workload_from_description("marginals:1", SCHEMA)) == 100 + 3
    banded = workload_from_description("marginals:1,2:age/10,job/2", SCHEMA)
    assert len(banded) == 10 + 2 + 10 * 2
    (tmp_path / "q.csv").write_text("age\n1..5\n")
    both = workloads_from_descriptions(["marginals:1", str(tmp_path / "q.csv")], SCHEMA)
    assert len(both) == 104
    assert len(workloads_from_descriptions([], SCHEMA)) == 10_000
    for text, message in [("paper:x", "whole number"), ("marginals:", "say which"), ("marginals:a", "whole numbers"),
                          ("marginals:1:age/x", "grain"), ("nothing", "neither a workload")]:
        with pytest.raises(PriveletError, match=message):
            workload_from_description(text, SCHEMA)


def test_release_files_record_the_shift_and_give_the_raw_release_back(tmp_path):
    truth = np.arange(300.0).reshape(100, 3) % 4
    release = ReleaseSpec(SCHEMA, 1.0).run(truth, rng=np.random.default_rng(2))
    meta = save_release(release, tmp_path / "r.npz")
    assert meta["post_processing"]["public_total"] is True
    loaded = load_release(tmp_path / "r.npz")
    assert loaded.total_shift == release.total_shift
    np.testing.assert_array_equal(loaded.raw, release.raw)
    q = parse_where(SCHEMA, ["age=10..40"])
    assert loaded.variance(q) == pytest.approx(release.variance(q)) and loaded.variance(q) < loaded.variance(q, raw=True)
    raw = ReleaseSpec(SCHEMA, 1.0, neighbours="add-remove").run(truth, rng=np.random.default_rng(2))
    assert save_release(raw, tmp_path / "a.npz")["post_processing"] == {"public_total": False, "total_shift": None}
    assert load_release(tmp_path / "a.npz").total_shift is None


def test_exports_offer_nonnegative_and_whole_counts_in_named_columns(tmp_path):
    truth = np.arange(300.0).reshape(100, 3) % 4
    release = ReleaseSpec(SCHEMA, 0.5).run(truth, rng=np.random.default_rng(4))
    plain = release_frame(release)
    assert "noisy_count" in plain and (plain["noisy_count"] < 0).any()
    both = release_frame(release, counts="nonnegative-integer")["noisy_count_nonnegative_integer"]
    assert both.dtype == np.int64 and (both >= 0).all() and both.sum() == round(truth.sum())
    nonneg = release_frame(release, counts="nonnegative")["noisy_count_nonnegative"]
    assert nonneg.sum() == pytest.approx(truth.sum())
    rows = export_release(release, tmp_path / "out.csv", counts="integer", allow_seeded=True)
    mark, header = (tmp_path / "out.csv").read_text().splitlines()[:2]  # a seeded (test) release says so first
    assert rows == 300 and mark.startswith("# SEEDED") and "noisy_count_integer" in header
    with pytest.raises(PriveletError, match="counts must be one of"):
        export_release(release, tmp_path / "bad.csv", counts="rounded", allow_seeded=True)
    assert not (tmp_path / "bad.csv").exists()
