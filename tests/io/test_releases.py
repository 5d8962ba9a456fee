"""Release files, exports, queries on releases, and atomic writes."""

from __future__ import annotations

import json
import math
import os
import zipfile
from datetime import datetime

import numpy as np
import pandas as pd
import pytest

import privelet_gui
from privelet_gui.engine import (
    Hierarchy,
    NominalAttribute,
    NumericBins,
    OrdinalAttribute,
    PriveletError,
    RangeQuery,
    Schema,
    SchemaError,
    basic,
    paper_bound,
    privelet_plus,
    worst_case_variance,
)
from privelet_gui.io import (
    OutputExistsError,
    ReleaseFileError,
    answer_query,
    atomic_write,
    export_release,
    load_release,
    load_release_metadata,
    parse_where,
    release_frame,
    save_release,
)
from privelet_gui.io import releases as releases_module

SCHEMA = Schema(
    [
        OrdinalAttribute.integer_range("age", 0, 9),
        NominalAttribute("sex", Hierarchy.flat(["F", "M"])),
        NominalAttribute(
            "job",
            Hierarchy.from_nested({"*": {"Technical": ["Tech-support", "Craft-repair"], "Other": ["Sales"]}}),
            domain_from_data=True,
        ),
        OrdinalAttribute("wage", bins=NumericBins(0, 100, 25)),
    ]
)


@pytest.fixture
def true_counts():
    rng = np.random.default_rng(5)
    return rng.integers(0, 50, SCHEMA.shape).astype(np.float64)


@pytest.fixture
def release(true_counts):
    return privelet_plus(true_counts, SCHEMA, 0.5, sa=["sex"])  # unseeded: only these can be exported


def test_save_and_load_round_trip(tmp_path, true_counts):
    release = privelet_plus(true_counts, SCHEMA, 0.5, sa=["sex"], rng=np.random.default_rng(11))
    path = tmp_path / "r.npz"
    meta = save_release(release, path, seed=11, metadata={"note": "test"})
    loaded = load_release(path)
    np.testing.assert_array_equal(loaded.noisy, release.noisy)
    for field in ("epsilon", "sa", "rho", "scale", "mechanism", "neighbours", "calibration", "schema", "seeded", "sampler"):
        assert getattr(loaded, field) == getattr(release, field), field
    assert loaded.worst_case_variance == release.worst_case_variance
    query = RangeQuery.build(SCHEMA, {"age": ("2", "7"), "job": "Technical"})
    assert loaded.variance(query) == release.variance(query)
    assert load_release_metadata(path) == meta
    assert meta["software_version"] == privelet_gui.__version__
    assert meta["seed"] == 11 and meta["seeded"] is True
    assert meta["domain_from_data"] == ["job"]
    assert meta["extra"] == {"note": "test"}
    assert meta["paper_bound"] == paper_bound(SCHEMA, 0.5, ["sex"])
    assert meta["exact_worst_case_variance"] == pytest.approx(worst_case_variance(SCHEMA, 0.5, ["sex"]), rel=2**-19)  # the scale exceeds lambda by < 2^-20
    assert meta["calibration"]["grid_exponent"] == release.calibration.grid_exponent
    assert meta["calibration"]["units"] == release.calibration.units
    assert meta["sampler"] == release.sampler
    assert meta["schema"]["attributes"][2]["domain_from_data"] is True
    created = datetime.fromisoformat(meta["created"].replace("Z", "+00:00"))
    assert created.utcoffset().total_seconds() == 0


def test_basic_and_unseeded_releases(tmp_path, true_counts):
    r = basic(true_counts, 1.0, schema=SCHEMA, neighbours="add-remove")
    path = tmp_path / "b.npz"
    meta = save_release(r, path)
    assert (meta["mechanism"], meta["neighbours"], meta["seeded"], meta["seed"]) == ("basic", "add-remove", False, None)
    assert meta["paper_bound"] == paper_bound(SCHEMA, 1.0, SCHEMA.names, neighbours="add-remove")
    loaded = load_release(path)
    assert loaded.calibration == r.calibration and loaded.sa == SCHEMA.names
    with pytest.raises(PriveletError, match="a seed was given"):
        save_release(r, tmp_path / "c.npz", seed=3)


def test_release_files_hold_no_true_counts(tmp_path, release, true_counts):
    path = tmp_path / "r.npz"
    save_release(release, path)
    with zipfile.ZipFile(path) as z:
        assert sorted(z.namelist()) == ["metadata.npy", "noisy.npy"]
    with np.load(path, allow_pickle=False) as npz:
        assert sorted(npz.files) == ["metadata", "noisy"]
        noisy = npz["noisy"]
        meta_text = str(npz["metadata"][()])
    assert not np.array_equal(noisy, true_counts)
    assert np.mean(noisy == true_counts) < 0.01  # every cell is perturbed (on a fine grid)
    meta = json.loads(meta_text)
    # nothing in the metadata reveals the table: no counts, no number of rows
    total = int(true_counts.sum())
    assert str(total) not in meta_text
    assert not any(key in meta for key in ("rows", "n", "rows_counted", "count", "counts"))
    # and the export is the noisy matrix only
    out = tmp_path / "r.csv"
    export_release(release, out)
    exported = pd.read_csv(out)["noisy_count"].to_numpy()
    np.testing.assert_array_equal(exported, release.noisy.reshape(-1))
    assert not np.array_equal(exported, true_counts.reshape(-1))


@pytest.mark.parametrize("suffix", ["csv", "csv.gz", "parquet"])
def test_export_long_format(tmp_path, release, suffix):
    path = tmp_path / f"r.{suffix}"
    rows = export_release(release, path)
    assert rows == SCHEMA.size
    frame = pd.read_parquet(path) if suffix == "parquet" else pd.read_csv(path, dtype={"age": str})
    assert list(frame.columns) == ["age", "sex", "job", "wage", "noisy_count"]
    assert len(frame) == SCHEMA.size
    # one row per cell, in C order, with the labels of its cell
    for flat in (0, 1, 17, SCHEMA.size - 1):
        index = np.unravel_index(flat, SCHEMA.shape)
        expected = [SCHEMA[a].labels[i] for a, i in enumerate(index)]
        assert [str(v) for v in frame.iloc[flat, :4]] == expected
        assert frame["noisy_count"].iloc[flat] == release.noisy[index]  # full precision
    assert set(frame["wage"]) == set(SCHEMA["wage"].labels)


def test_export_format_checks(tmp_path, release):
    with pytest.raises(PriveletError, match="cannot tell the export format"):
        export_release(release, tmp_path / "r.xlsx")
    export_release(release, tmp_path / "r.dat", format="csv")
    assert (tmp_path / "r.dat").read_text().startswith("age,sex,job,wage,noisy_count\n")
    renamed = Schema([OrdinalAttribute.integer_range("noisy_count", 0, 3)])
    r = privelet_plus(np.zeros(4), renamed, 1.0)
    with pytest.raises(SchemaError, match="rename it"):
        release_frame(r)


def test_existing_files_are_not_overwritten(tmp_path, release):
    path = tmp_path / "r.npz"
    save_release(release, path)
    before = path.read_bytes()
    with pytest.raises(OutputExistsError, match="exists already.*force") as info:
        save_release(release, path)
    assert isinstance(info.value, FileExistsError) and isinstance(info.value, PriveletError)
    assert path.read_bytes() == before
    export_release(release, tmp_path / "r.csv")
    with pytest.raises(OutputExistsError):
        export_release(release, tmp_path / "r.csv")
    save_release(release, path, force=True, metadata={"v": 2})
    assert load_release_metadata(path)["extra"] == {"v": 2}


def test_interrupted_writes_leave_no_partial_file(tmp_path, release, monkeypatch):
    target = tmp_path / "r.npz"

    def broken_savez(f, **arrays):
        f.write(b"PK\x03\x04 half a zip file")
        raise KeyboardInterrupt  # e.g. Ctrl-C half way

    monkeypatch.setattr(releases_module.np, "savez", broken_savez)
    with pytest.raises(KeyboardInterrupt):
        save_release(release, target)
    assert os.listdir(tmp_path) == []
    # an existing file survives a failed overwrite untouched
    monkeypatch.undo()
    save_release(release, target)
    before = target.read_bytes()
    monkeypatch.setattr(releases_module.np, "savez", broken_savez)
    with pytest.raises(KeyboardInterrupt):
        save_release(release, target, force=True)
    assert target.read_bytes() == before
    assert os.listdir(tmp_path) == ["r.npz"]


def test_interrupted_export_leaves_no_partial_file(tmp_path, release, monkeypatch):
    original = pd.DataFrame.to_csv

    def to_csv_then_fail(self, handle, **kwargs):
        original(self.head(10), handle, **kwargs)
        raise OSError("disk full")

    monkeypatch.setattr(pd.DataFrame, "to_csv", to_csv_then_fail)
    with pytest.raises(OSError, match="disk full"):
        export_release(release, tmp_path / "r.csv")
    assert os.listdir(tmp_path) == []


def test_atomic_write_helper(tmp_path):
    path = tmp_path / "p.json"
    with atomic_write(path, mode="w") as f:
        f.write("{}")
        assert not path.exists()  # nothing visible until the block ends
    assert path.read_text() == "{}"
    with pytest.raises(ValueError, match="boom"), atomic_write(path, mode="w", force=True) as f:
        f.write("partial")
        raise ValueError("boom")
    assert path.read_text() == "{}"
    assert os.listdir(tmp_path) == ["p.json"]
    with pytest.raises(FileNotFoundError, match="does not exist"):
        with atomic_write(tmp_path / "no" / "such" / "dir.txt"):
            pass
    if hasattr(os, "umask"):
        mode = path.stat().st_mode & 0o777
        umask = os.umask(0)
        os.umask(umask)
        assert mode == 0o666 & ~umask  # like any new file, not the 0600 of a temp file


def test_damaged_or_foreign_files_are_refused(tmp_path, release):
    text = tmp_path / "r.npz"
    text.write_text("hello")
    with pytest.raises(ReleaseFileError, match="not a Privelet release file"):
        load_release(text)
    foreign = tmp_path / "f.npz"
    np.savez(foreign, a=np.zeros(3))
    with pytest.raises(ReleaseFileError, match="not a Privelet release file .*holds a"):
        load_release(foreign)
    single = tmp_path / "s.npy"
    np.save(single, np.zeros(3))
    with pytest.raises(ReleaseFileError, match="single numpy array"):
        load_release(single)
    future = tmp_path / "future.npz"
    meta = json.dumps({"format": "privelet-release", "format_version": 99})
    np.savez(future, noisy=np.zeros(3), metadata=np.array(meta))
    with pytest.raises(ReleaseFileError, match="version 99.*update"):
        load_release(future)
    with pytest.raises(ReleaseFileError, match="no such release file"):
        load_release(tmp_path / "missing.npz")
    good = tmp_path / "good.npz"
    save_release(release, good)
    truncated = tmp_path / "cut.npz"
    truncated.write_bytes(good.read_bytes()[:200])
    with pytest.raises(ReleaseFileError):
        load_release(truncated)


def test_queries_on_a_release(release):
    q = parse_where(SCHEMA, ["age=2..7", "job=Technical", "wage=30"])
    assert (q.lo, q.hi) == ((2, 0, 0, 1), (7, 1, 1, 1))
    answer = answer_query(release, q)
    assert answer.noisy_count == pytest.approx(release.noisy[2:8, :, 0:2, 1:2].sum())
    assert answer.variance == release.variance(q)
    lo, hi = answer.ci95
    assert hi - answer.noisy_count == pytest.approx(1.959963984540054 * math.sqrt(answer.variance))
    assert answer.noisy_count - lo == pytest.approx(hi - answer.noisy_count)
    assert answer.to_json() == {"noisy_count": answer.noisy_count, "variance": answer.variance, "ci95": [lo, hi]}
    assert parse_where(SCHEMA, ["age=..3"]).hi[0] == 3
    assert parse_where(SCHEMA, ["age=6.."]).lo[0] == 6
    assert parse_where(SCHEMA, ["wage=[25, 50)..99"]).lo[3:] == (1,)
    assert parse_where(SCHEMA, []).cells == SCHEMA.size


@pytest.mark.parametrize(
    ("clauses", "message"),
    [
        (["age"], r"name=value"),
        (["height=3"], r"unknown attribute 'height'"),
        (["job=Plumber"], r"no node called 'Plumber'"),
        (["age=12"], r"'12' is not a value of attribute 'age'"),
        (["age=7..2"], r"is empty"),
        (["wage=500"], r"500 is outside attribute 'wage'"),
        (["age=1", "age=2"], r"constrained twice"),
    ],
)
def test_query_errors(clauses, message):
    with pytest.raises(SchemaError, match=message):
        parse_where(SCHEMA, clauses)
