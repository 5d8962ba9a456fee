"""Exports that describe themselves, per-cell standard errors, labels that cannot become
spreadsheet formulas, and clamped or open bins in exports (issue 39, items 9, 10 and 11)."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import privelet_gui
from privelet_gui.engine import (
    Cancelled,
    Hierarchy,
    NominalAttribute,
    NumericBins,
    OrdinalAttribute,
    PriveletError,
    RangeQuery,
    ReleaseSpec,
    Schema,
    privelet_plus,
)
from privelet_gui.io import (
    OutputExistsError,
    export_metadata,
    export_metadata_path,
    export_release,
    parse_where,
    write_export,
)
from privelet_gui.io.atomic import atomic_files
from privelet_gui.io.releases import (
    STANDARD_ERROR_COLUMN,
    cell_standard_error_problem,
    cell_standard_errors,
    spreadsheet_safe,
)

JOBS = Hierarchy.from_nested({"*": {"Office": ["=HYPERLINK(\"http://x\")", "clerk"], "Field": ["@farmer"]}})
SCHEMA = Schema([
    OrdinalAttribute("income", bins=NumericBins(0, 30_000, 10_000), out_of_range="clamp"),
    NominalAttribute("job", JOBS.with_display_labels({"clerk": "+Clerk", "@farmer": "-Farmer"})),
    OrdinalAttribute.integer_range("delta", -2, 1),
    OrdinalAttribute("wage", bins=NumericBins.from_edges([0, 1, 10_000], open_below=True, open_above=True)),
])


@pytest.fixture(scope="module")
def release():
    counts = np.random.default_rng(3).integers(0, 20, SCHEMA.shape).astype(np.float64)
    return privelet_plus(counts, SCHEMA, 0.8, sa=["delta"])  # unseeded: exports allowed


def _cells(path: Path) -> list[list[str]]:
    with open(path, newline="", encoding="utf-8") as f:
        return list(csv.reader(f))


# -- item 10: the export says how it was made ----------------------------------------------------------


def test_a_csv_export_has_its_description_beside_it_and_never_a_count(release, tmp_path):
    out = tmp_path / "cells.csv"
    rows = export_release(release, out)
    described = export_metadata_path(out)
    assert described == tmp_path / "cells.csv.metadata.json"
    meta = json.loads(described.read_text())
    assert meta["format"] == "privelet-export" and meta["file"] == "cells.csv" and meta["rows"] == rows
    assert (meta["epsilon"], meta["neighbours"], meta["mechanism"], meta["sa"]) == (0.8, "replace", "privelet+", ["delta"])
    assert meta["noise_scale"] == release.scale and meta["nominal_scale"] == release.nominal_scale
    assert meta["post_processing"]["total_shift"] == release.total_shift and meta["post_processing"]["public_total"]
    assert meta["software_version"] == privelet_gui.__version__
    assert meta["count_column"] == "noisy_count" and meta["standard_error_column"] is None and not meta["seeded"]
    # nothing in it is a count: no number of it equals a cell, a sum of cells, or the table's rows
    numbers = [v for v in _flat_values(meta) if isinstance(v, float)]
    assert not set(numbers) & {*release.noisy.reshape(-1).tolist(), float(release.noisy.sum())}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cells.csv", "cells.csv.metadata.json"]


def _flat_values(obj):
    if isinstance(obj, dict):
        for value in obj.values():
            yield from _flat_values(value)
    elif isinstance(obj, list):
        for value in obj:
            yield from _flat_values(value)
    else:
        yield obj


def test_add_remove_exports_carry_no_shift_and_parquet_carries_the_description_itself(tmp_path):
    counts = np.ones(SCHEMA.shape)
    release = privelet_plus(counts, SCHEMA, 1.0, neighbours="add-remove")
    out = tmp_path / "cells.parquet"
    export_release(release, out)
    assert export_metadata_path(out) is None and sorted(p.name for p in tmp_path.iterdir()) == ["cells.parquet"]
    import pyarrow.parquet as pq

    stored = json.loads(pq.read_schema(out).metadata[b"privelet.metadata"])
    expected = export_metadata(release)
    assert {k: v for k, v in stored.items() if k != "exported"} == {k: v for k, v in expected.items() if k != "exported"}
    assert stored["neighbours"] == "add-remove" and stored["post_processing"]["total_shift"] is None


def test_the_description_is_written_with_the_export_or_not_at_all(release, tmp_path):
    taken = tmp_path / "a.csv.metadata.json"
    taken.write_text("someone else's")
    with pytest.raises(OutputExistsError):
        export_release(release, tmp_path / "a.csv")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.csv.metadata.json"] and taken.read_text() == "someone else's"
    asked = iter([False, False, True])
    with pytest.raises(Cancelled):
        export_release(release, tmp_path / "b.csv", should_cancel=lambda: next(asked, True), slab_cells=8)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.csv.metadata.json"]  # neither b nor its description
    export_release(release, tmp_path / "a.csv", force=True)  # forced: both replaced
    assert json.loads(taken.read_text())["file"] == "a.csv"


def test_atomic_files_rename_all_or_remove_the_ones_already_in_place(tmp_path, monkeypatch):
    with pytest.raises(RuntimeError), atomic_files([tmp_path / "x", tmp_path / "y"]) as (x, y):
        x.write(b"1")
        raise RuntimeError("a full disk")
    assert list(tmp_path.iterdir()) == []
    from privelet_gui.io import atomic as atomic_module

    commit = atomic_module._commit

    def second_fails(temp: Path, target: Path, force: bool) -> None:
        if target.name == "y":
            raise OutputExistsError(target)  # another writer made it meanwhile
        commit(temp, target, force)

    monkeypatch.setattr(atomic_module, "_commit", second_fails)
    with pytest.raises(OutputExistsError), atomic_files([tmp_path / "x", tmp_path / "y"]) as (x, y):
        x.write(b"1")
        y.write(b"2")
    assert list(tmp_path.iterdir()) == []  # x was renamed into place, then removed: not left without y


def test_a_csv_stream_has_no_description_but_parquet_on_a_stream_holds_it(release):
    import io

    import pyarrow.parquet as pq

    stream = io.BytesIO()
    write_export(release, stream, format="parquet", standard_error=True)
    stream.seek(0)
    table = pq.read_table(stream)
    assert json.loads(table.schema.metadata[b"privelet.metadata"])["standard_error_column"] == STANDARD_ERROR_COLUMN
    assert table.column(STANDARD_ERROR_COLUMN).to_pylist() == pytest.approx(cell_standard_errors(release).tolist())


# -- item 10: per-cell standard errors --------------------------------------------------------------


def test_each_cells_standard_error_is_its_exact_noise_deviation(release, tmp_path):
    out = tmp_path / "cells.csv"
    export_release(release, out, standard_error=True)
    frame = pd.read_csv(out, keep_default_na=False)
    assert list(frame.columns)[-2:] == ["noisy_count", STANDARD_ERROR_COLUMN]
    errors = frame[STANDARD_ERROR_COLUMN].to_numpy()
    for flat in (0, 7, 29, len(frame) - 1):
        cell = np.unravel_index(flat, SCHEMA.shape)
        labels = {a.name: a.labels[i] for a, i in zip(SCHEMA, cell, strict=True)}
        single = RangeQuery.build(SCHEMA, labels)
        assert errors[flat] == pytest.approx(np.sqrt(release.variance(single)), rel=1e-12)
    assert len(set(np.round(errors, 9))) > 1  # nominal leaves at different depths: not one number for all
    # data-free: another release of other counts at the same settings has the same errors
    other = privelet_plus(np.zeros(SCHEMA.shape), SCHEMA, 0.8, sa=["delta"])
    assert np.array_equal(cell_standard_errors(other), cell_standard_errors(release))
    assert json.loads(export_metadata_path(out).read_text())["standard_error_column"] == STANDARD_ERROR_COLUMN


def test_a_standard_error_is_refused_for_post_processed_counts(release, tmp_path):
    with pytest.raises(PriveletError, match="not nonnegative counts"):
        export_release(release, tmp_path / "c.csv", counts="nonnegative", standard_error=True)
    assert list(tmp_path.iterdir()) == []


def _marginals_release(marginals):
    counts = np.random.default_rng(5).integers(0, 20, SCHEMA.shape).astype(np.float64)
    return ReleaseSpec(SCHEMA, 0.8, "marginals", marginals=marginals).run(counts)  # unseeded: exports allowed


def test_a_release_of_weighted_marginals_answering_cells_with_a_bias_exports_no_standard_error(tmp_path):
    release = _marginals_release(((("income", "job"), 2), (("delta", "wage"), 1)))  # no marginal holds a cell
    problem = cell_standard_error_problem(release)
    assert problem is not None and problem.startswith("a release of weighted marginals answers single cells with a bias")
    assert "export it without the standard error, or query the marginals it measured" in problem
    out = tmp_path / "cells.csv"
    for fmt, path in (("csv", out), ("parquet", tmp_path / "cells.parquet")):
        with pytest.raises(PriveletError, match="answers single cells with a bias"):
            export_release(release, path, format=fmt, standard_error=True)
    assert list(tmp_path.iterdir()) == []  # nothing written, not even a description
    stream = io.BytesIO()
    with pytest.raises(PriveletError, match="answers single cells with a bias"):
        write_export(release, stream, standard_error=True)
    assert stream.getvalue() == b""  # refused before the first row
    with pytest.raises(PriveletError, match="answers single cells with a bias"):
        cell_standard_errors(release)  # never inf
    assert export_release(release, out) == SCHEMA.size  # without the standard error: every cell
    assert STANDARD_ERROR_COLUMN not in pd.read_csv(out).columns


def test_a_release_of_weighted_marginals_holding_every_attribute_exports_its_standard_errors(tmp_path):
    release = _marginals_release(((("income", "job", "delta", "wage"), 1), (("income",), 3)))
    assert cell_standard_error_problem(release) is None
    out = tmp_path / "cells.csv"
    export_release(release, out, standard_error=True)
    errors = pd.read_csv(out, keep_default_na=False)[STANDARD_ERROR_COLUMN].to_numpy()
    assert np.isfinite(errors).all() and (errors > 0).all()
    assert errors == pytest.approx(cell_standard_errors(release), rel=1e-12)


def test_cell_standard_errors_of_a_box_follow_the_whole_matrix(release):
    whole = cell_standard_errors(release).reshape(SCHEMA.shape)
    box = (slice(1, 3), slice(0, 3), slice(2, 4), slice(0, 4))
    assert np.array_equal(cell_standard_errors(release, box).reshape(2, 3, 2, 4), whole[box])


# -- item 11: labels cannot become formulas ----------------------------------------------------------------


def test_csv_cells_that_a_spreadsheet_would_run_begin_with_an_apostrophe(release, tmp_path):
    out = tmp_path / "cells.csv"
    export_release(release, out)
    rows = _cells(out)
    header, body = rows[0], rows[1:]
    assert header == ["income", "job", "job_label", "delta", "wage", "noisy_count"]
    codes = {row[1] for row in body}
    labels = {row[2] for row in body}
    assert codes == {"'=HYPERLINK(\"http://x\")", "clerk", "'@farmer"}
    assert labels == {"'=HYPERLINK(\"http://x\")", "'+Clerk", "'-Farmer"}
    assert {row[3] for row in body} == {"-2", "-1", "0", "1"}  # negative numbers stay numbers
    for row in body:
        assert not row[1].startswith(("=", "+", "-", "@")) and not row[2].startswith(("=", "+", "-", "@"))


def test_parquet_keeps_the_labels_exactly(release, tmp_path):
    out = tmp_path / "cells.parquet"
    export_release(release, out)
    frame = pd.read_parquet(out)
    assert set(frame["job"].astype(str)) == {"=HYPERLINK(\"http://x\")", "clerk", "@farmer"}
    assert set(frame["job_label"].astype(str)) == {"=HYPERLINK(\"http://x\")", "+Clerk", "-Farmer"}


@pytest.mark.parametrize(
    ("text", "written"),
    [("=1+2", "'=1+2"), ("+cmd|' /C calc'!A0", "'+cmd|' /C calc'!A0"), ("-2+3", "'-2+3"), ("@SUM(A1)", "'@SUM(A1)"),
     ("\tx", "'\tx"), ("-5", "-5"), ("+3.5", "+3.5"), ("-1e5", "-1e5"), ("[0, 10)", "[0, 10)"), ("a=b", "a=b"), ("", "")],
)
def test_spreadsheet_safe(text, written):
    assert spreadsheet_safe(text) == written


def test_an_attribute_named_like_a_formula_is_a_safe_header(tmp_path):
    schema = Schema([NominalAttribute("=cmd", Hierarchy.flat(["a"])), OrdinalAttribute.integer_range("n", 0, 1)])
    release = privelet_plus(np.ones(schema.shape), schema, 1.0)
    export_release(release, tmp_path / "c.csv")
    assert _cells(tmp_path / "c.csv")[0] == ["'=cmd", "n", "noisy_count"]


# -- item 9: clamped and open bins in exports and queries ----------------------------------------------------


def test_the_clamped_top_bin_of_incomes_is_exported_open(release, tmp_path):
    out = tmp_path / "cells.csv"
    export_release(release, out)
    body = _cells(out)[1:]
    assert {row[0] for row in body} == {"(-inf, 10000)", "[10000, 20000)", "[20000, inf)"}
    assert {row[4] for row in body} == {"(-inf, 0)", "[0, 1)", "[1, 10000)", "[10000, inf)"}


def test_queries_take_numbers_into_clamped_and_open_bins():
    top = parse_where(SCHEMA, ["income=250000"])  # clamped: counted in the last bin, so asked there
    assert (top.lo[0], top.hi[0]) == (2, 2) and top.describe() == "income=[20000, inf)"
    assert parse_where(SCHEMA, ["income=[20000, 30000)"]).lo[0] == 2  # the closed label of files written before
    assert parse_where(SCHEMA, ["wage=-3"]).lo[3] == 0 and parse_where(SCHEMA, ["wage=1e9"]).lo[3] == 3
    ages = Schema([OrdinalAttribute.integer_range("age", 0, 99, out_of_range="clamp")])
    ranged = parse_where(ages, ["age=65..120"])
    assert (ranged.lo, ranged.hi) == ((65,), (99,)) and ranged.describe() == "age=65..>=99"
    unclamped = Schema([OrdinalAttribute("income", bins=NumericBins(0, 30_000, 10_000))])
    with pytest.raises(PriveletError, match="outside attribute 'income'"):
        parse_where(unclamped, ["income=250000"])


def test_a_zarr_release_exports_in_slabs_with_the_same_description_and_errors(release, tmp_path):
    pytest.importorskip("zarr")
    from privelet_gui.io import load_release
    from privelet_gui.io.zarr_releases import save_zarr_release

    save_zarr_release(release, tmp_path / "r.zarr", chunks=(1, 3, 4, 4))
    (tmp_path / "whole").mkdir()
    (tmp_path / "slabs").mkdir()
    export_release(release, tmp_path / "whole" / "c.csv", standard_error=True)
    export_release(load_release(tmp_path / "r.zarr"), tmp_path / "slabs" / "c.csv", standard_error=True, slab_cells=16)
    assert (tmp_path / "whole" / "c.csv").read_bytes() == (tmp_path / "slabs" / "c.csv").read_bytes()
    whole, slabs = (json.loads((tmp_path / part / "c.csv.metadata.json").read_text()) for part in ("whole", "slabs"))
    assert {k: v for k, v in whole.items() if k != "exported"} == {k: v for k, v in slabs.items() if k != "exported"}
