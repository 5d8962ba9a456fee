"""The command line with bin edges, open ends and clamped bins, and exports that describe
themselves with per-cell standard errors (issue 39, items 8 to 13)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd
import pytest

from privelet_gui.cli import main
from privelet_gui.engine import RangeQuery
from privelet_gui.io import load_release

SCHEMA = {
    "version": 3,
    "attributes": [
        {"name": "income", "type": "ordinal",
         "bins": {"edges": [0, 1, 10000, 50000, 150000], "open_below": True, "open_above": True}},
        {"name": "wage", "type": "ordinal", "bins": {"start": 0, "stop": 30, "width": 10}, "out_of_range": "clamp"},
        {"name": "job", "type": "nominal", "values": ["1", "2"],
         "display_labels": {"1": "=HYPERLINK(\"http://evil\")", "2": "@clerk"}},
    ],
}
TABLE = "income,wage,job\n-50,5,1\n0,15,2\n0.5,45,1\n9999,-3,2\n150000,25,1\n2000000,12,2\n"


@pytest.fixture
def released(tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PRIVELET_LEDGER", str(tmp_path / "ledger.sqlite3"))
    (tmp_path / "schema.json").write_text(json.dumps(SCHEMA))
    (tmp_path / "t.csv").write_text(TABLE)
    code = main(["release", "t.csv", "--schema", "schema.json", "--epsilon", "1", "--out", "r.npz", "--quiet", "--yes"])
    assert code == 0, capsys.readouterr().err
    capsys.readouterr()
    return tmp_path / "r.npz"


def test_export_names_its_description_and_writes_the_standard_errors(released: Path, capsys):
    code = main(["export", str(released), "--out", "cells.csv", "--standard-error"])
    out = capsys.readouterr().out
    assert code == 0
    assert out.strip() == ("wrote cells.csv (36 rows, one per cell, with each cell's noise standard deviation); "
                           "described in cells.csv.metadata.json")
    meta = json.loads(Path("cells.csv.metadata.json").read_text())
    release = load_release(released)
    assert (meta["epsilon"], meta["mechanism"], meta["neighbours"]) == (1.0, release.mechanism, "replace")
    assert meta["post_processing"]["total_shift"] == release.total_shift
    cells = pd.read_csv("cells.csv", dtype=str, keep_default_na=False)
    assert list(cells.columns) == ["income", "wage", "job", "job_label", "noisy_count", "noisy_count_standard_error"]
    assert cells["income"].unique().tolist() == ["(-inf, 0)", "[0, 1)", "[1, 10000)", "[10000, 50000)",
                                                  "[50000, 150000)", "[150000, inf)"]
    assert cells["wage"].unique().tolist() == ["(-inf, 10)", "[10, 20)", "[20, inf)"]  # clamped ends say so
    assert set(cells["job_label"]) == {"'=HYPERLINK(\"http://evil\")", "'@clerk"}
    first = RangeQuery.build(release.schema, {"income": "(-inf, 0)", "wage": "(-inf, 10)", "job": "1"})
    assert float(cells["noisy_count_standard_error"][0]) == pytest.approx(math.sqrt(release.variance(first)))


def test_export_to_parquet_says_where_its_description_is(released: Path, capsys):
    assert main(["export", str(released), "--out", "cells.parquet"]) == 0
    assert capsys.readouterr().out.strip().endswith("; described in its own metadata")
    assert sorted(p.name for p in Path().iterdir() if p.name.startswith("cells")) == ["cells.parquet"]


def test_a_standard_error_of_post_processed_counts_is_a_one_line_error(released: Path, capsys):
    code = main(["export", str(released), "--out", "cells.csv", "--counts", "nonnegative", "--standard-error"])
    err = capsys.readouterr().err
    assert code == 1 and "privelet: error:" in err and "not nonnegative counts" in err and "Traceback" not in err
    assert not Path("cells.csv").exists() and not Path("cells.csv.metadata.json").exists()


def test_an_existing_description_stops_the_export_before_it_starts(released: Path, capsys):
    Path("cells.csv.metadata.json").write_text("{}")
    code = main(["export", str(released), "--out", "cells.csv"])
    err = capsys.readouterr().err
    assert code == 1 and "cells.csv.metadata.json exists already" in err and not Path("cells.csv").exists()
    assert main(["export", str(released), "--out", "cells.csv", "--force"]) == 0


def test_csv_on_standard_output_says_it_has_no_description(released: Path, capsys):
    assert main(["export", str(released), "--out", "-", "--standard-error"]) == 0
    out, err = capsys.readouterr()
    assert out.splitlines()[0].endswith("noisy_count,noisy_count_standard_error")
    assert "has no description beside it (--out FILE.csv writes one)" in err


def test_queries_reach_the_open_and_clamped_bins(released: Path, capsys):
    code = main(["query", str(released), "--where", "income=3000000", "--where", "wage=99", "--json"])
    assert code == 0
    answer = json.loads(capsys.readouterr().out)
    release = load_release(released)
    top = RangeQuery.build(release.schema, {"income": "[150000, inf)", "wage": "[20, inf)"})
    assert answer["variance"] == pytest.approx(release.variance(top))


def test_a_schema_naming_a_value_as_missing_is_refused(tmp_path: Path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PRIVELET_LEDGER", str(tmp_path / "ledger.sqlite3"))
    bad = {"version": 2, "attributes": [{"name": "age", "type": "ordinal", "range": [0, 99],
                                         "missing_values": ["99"], "drop_missing": True}]}
    (tmp_path / "schema.json").write_text(json.dumps(bad))
    (tmp_path / "t.csv").write_text("age\n5\n99\n")
    code = main(["release", "t.csv", "--schema", "schema.json", "--epsilon", "1", "--out", "r.npz", "--yes"])
    err = capsys.readouterr().err
    assert code == 1 and "a cell holding '99' is one of its values" in err and not (tmp_path / "r.npz").exists()


def test_bins_wider_than_float64_can_hold_are_a_one_line_error(tmp_path: Path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    wide = {"version": 1, "attributes": [{"name": "x", "type": "ordinal",
                                          "bins": {"start": -1.7e308, "stop": 1.7e308, "width": 1e300}}]}
    (tmp_path / "schema.json").write_text(json.dumps(wide))
    code = main(["bounds", "--schema", "schema.json", "--epsilon", "1"])
    err = capsys.readouterr().err
    assert code == 1 and "span more than float64 can hold" in err and "OverflowError" not in err
