"""Release files, exports, queries on releases, and atomic writes."""

from __future__ import annotations

import copy
import gzip
import io
import json
import math
import os
import re
import zipfile
from datetime import datetime

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
        assert sorted(z.namelist()) == ["metadata.npy", "noisy.npy", "signature.npy"]
    with np.load(path, allow_pickle=False) as npz:
        assert sorted(npz.files) == ["metadata", "noisy", "signature"]
        noisy = npz["noisy"]
        meta_text = str(npz["metadata"][()])
        signature = json.loads(str(npz["signature"][()]))
    assert sorted(signature) == ["algorithm", "key_id", "mac"]  # a keyed hash of the file, nothing of the table
    assert not np.array_equal(noisy, true_counts)
    assert np.mean(noisy == true_counts) < 0.01  # every cell is perturbed (on a fine grid)
    meta = json.loads(meta_text)
    # nothing in the metadata reveals the table: no counts, no number of rows
    total = int(true_counts.sum())
    # as a number of its own (the digits may occur inside a random float such as a total shift)
    assert not re.search(rf"(?<![0-9.]){total}(?![0-9])", meta_text)
    assert not any(key in meta for key in ("rows", "n", "rows_counted", "count", "counts"))
    # and the export is the noisy matrix only
    out = tmp_path / "r.csv"
    export_release(release, out)
    # the export writes every float exactly; read as text and parsed by numpy, it comes back exactly
    # (pandas before 3.0 parses CSV floats only to within an ulp by default)
    exported = pd.read_csv(out, dtype={"noisy_count": str})["noisy_count"].to_numpy(dtype=np.float64)
    np.testing.assert_array_equal(exported, release.noisy.reshape(-1))
    assert not np.array_equal(exported, true_counts.reshape(-1))


@pytest.mark.parametrize("suffix", ["csv", "csv.gz", "parquet"])
def test_export_long_format(tmp_path, release, suffix):
    path = tmp_path / f"r.{suffix}"
    rows = export_release(release, path)
    assert rows == SCHEMA.size
    if suffix == "parquet":
        frame = pd.read_parquet(path)
    else:  # the counts as text, parsed exactly (pandas before 3.0 parses CSV floats to within an ulp)
        frame = pd.read_csv(path, dtype={"age": str, "noisy_count": str})
        frame["noisy_count"] = frame["noisy_count"].to_numpy(dtype=np.float64)
    assert list(frame.columns) == ["age", "sex", "job", "wage", "noisy_count"]
    assert len(frame) == SCHEMA.size
    # one row per cell, in C order, with the labels of its cell
    for flat in (0, 1, 17, SCHEMA.size - 1):
        index = np.unravel_index(flat, SCHEMA.shape)
        expected = [SCHEMA[a].labels[i] for a, i in enumerate(index)]
        assert [str(v) for v in frame.iloc[flat, :4]] == expected
        assert frame["noisy_count"].iloc[flat] == release.noisy[index]  # full precision
    assert set(frame["wage"]) == set(SCHEMA["wage"].labels)


@pytest.mark.parametrize("suffix", ["csv", "csv.gz", "parquet"])
@pytest.mark.parametrize("counts", ["noisy", "nonnegative-integer"])
def test_an_export_written_slab_by_slab_holds_the_rows_of_the_whole_frame(tmp_path, release, suffix, counts):
    path = tmp_path / f"r.{suffix}"
    reports: list[tuple[float, str]] = []
    written = export_release(release, path, counts=counts, progress=lambda f, stage: reports.append((f, stage)),
                             slab_cells=7)  # slabs of one wage row (4 cells): 60 of them
    assert written == SCHEMA.size
    frame = release_frame(release, counts=counts)
    if suffix == "parquet":
        read = pd.read_parquet(path)
        assert list(read.columns) == list(frame.columns) and len(pq_row_groups(path)) == 60
        for name in frame.columns:
            assert read[name].astype(str).tolist() == frame[name].astype(str).tolist()
    else:
        data = path.read_bytes()
        text = (gzip.decompress(data) if suffix == "csv.gz" else data).decode()
        assert text == frame.to_csv(index=False, lineterminator="\n")  # one header, every row, in order
    # a report after each slab: the rows written so far
    assert len(reports) == 60 and reports[-1] == (1.0, f"writing rows: {SCHEMA.size} of {SCHEMA.size}")
    assert [f for f, _ in reports] == sorted({f for f, _ in reports})


def pq_row_groups(path):
    import pyarrow.parquet as pq

    metadata = pq.ParquetFile(path).metadata
    return [metadata.row_group(i).num_rows for i in range(metadata.num_row_groups)]


@pytest.mark.parametrize("suffix", ["csv", "parquet"])
def test_a_cancelled_export_leaves_no_file(tmp_path, release, suffix):
    asked = iter([False, False, True])  # after the first, second and third slab
    with pytest.raises(Cancelled):
        export_release(release, tmp_path / f"r.{suffix}", should_cancel=lambda: next(asked), slab_cells=7)
    assert list(tmp_path.iterdir()) == []  # neither the file nor its temporary


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
    with pytest.raises(OutputExistsError, match=r"exists already.*force") as info:
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
    with pytest.raises(FileNotFoundError, match="does not exist"), atomic_write(tmp_path / "no" / "such" / "dir.txt"):
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
    with pytest.raises(ReleaseFileError, match=r"not a Privelet release file .*holds a"):
        load_release(foreign)
    single = tmp_path / "s.npy"
    np.save(single, np.zeros(3))
    with pytest.raises(ReleaseFileError, match="single numpy array"):
        load_release(single)
    future = tmp_path / "future.npz"
    meta = json.dumps({"format": "privelet-release", "format_version": 99})
    np.savez(future, noisy=np.zeros(3), metadata=np.array(meta))
    with pytest.raises(ReleaseFileError, match=r"version 99.*update"):
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


# -- hostile release files --------------------------------------------------------------------------


def _rewrite(path, *, meta=None, noisy=None, raw_meta=None, compression=zipfile.ZIP_STORED):
    """A release file written by hand: its metadata and matrix as given."""
    entries = {"noisy": noisy, "metadata": raw_meta if raw_meta is not None else np.array(json.dumps(meta))}
    with zipfile.ZipFile(path, "w", compression=compression) as archive:
        for name, array in entries.items():
            buffer = io.BytesIO()
            np.save(buffer, array)
            archive.writestr(f"{name}.npy", buffer.getvalue())
    return path


def _changed(meta: dict, **changes) -> dict:
    out = copy.deepcopy(meta)
    for key, value in changes.items():
        section, _, field = key.partition("__")
        if field:
            out[section][field] = value
        else:
            out[key] = value
    return out


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"epsilon": -1.0}, '"epsilon" must be a positive finite number, got -1.0'),
        ({"epsilon": 10**400}, '"epsilon" must be a positive finite number'),
        ({"mechanism": "magic"}, '"mechanism" must be one of privelet\\+, privelet, basic'),
        ({"neighbours": "swap"}, '"neighbours" must be one of replace, add-remove'),
        ({"epsilon": 0.25}, "the calibration's epsilon 0.5 differs from the release's 0.25"),
        ({"calibration__epsilon": "0.5"}, '"epsilon" must be a number'),
        ({"calibration__units": "12"}, '"units" must be an integer'),
        ({"calibration__grid_exponent": 10**6}, '"grid_exponent" must be an integer from -1074 to 1023'),
        ({"calibration__influence": 1.5}, '"influence" must be an integer'),
        ({"calibration__units": 1}, "the calibration's noise is smaller than the sensitivity needs"),
        ({"calibration": []}, '"calibration" must be an object'),
        ({"shape": [True, 2, 3, 4]}, '"shape" must be a list of positive integers'),
        ({"shape": [10, 2, 3, 5]}, r'"shape" is \[10, 2, 3, 5\], but the schema needs \[10, 2, 3, 4\]'),
        ({"sa": ["age", "sex"]}, "rho is"),
        ({"sa": ["ghost"]}, "unknown attribute 'ghost'"),
        ({"rho": 7, "calibration__rho": 7}, "rho is 7.0, but this schema and S_A give"),
        ({"scale": 99.0}, '"scale" 99.0 differs from its calibration'),
        ({"sampler": "gaussian"}, '"sampler" must be one of exact, standard, discrete-laplace/geometric-difference, got .gaussian.'),
        ({"seeded": "yes"}, '"seeded" must be true or false'),
        ({"seed": -3}, '"seed" must be empty'),
        ({"schema": None}, "needs its schema, and the file holds none"),
        ({"paper_bound": "big"}, '"paper_bound" must be a number'),
        ({"format_version": True}, "release format version True"),
    ],
)
def test_release_metadata_that_does_not_make_a_consistent_release_is_refused(tmp_path, release, changes, message):
    path = tmp_path / "r.npz"
    meta = save_release(release, path)
    _rewrite(path, meta=_changed(meta, **changes), noisy=release.noisy)
    with pytest.raises(ReleaseFileError, match=message):
        load_release(path)


@pytest.mark.parametrize(
    ("noisy", "message"),
    [
        (np.full(SCHEMA.shape, np.nan), "holds NaN or infinite values"),
        (np.full(SCHEMA.shape, np.inf), "holds NaN or infinite values"),
        (np.ones(SCHEMA.shape) + 1j, "must hold real numbers, not values of type complex128"),
        (np.zeros(SCHEMA.shape, dtype=[("a", "f8")]), "must hold real numbers"),
        (np.zeros(SCHEMA.shape, dtype=bool), "must hold real numbers, not values of type bool"),
        (np.array(["x"] * math.prod(SCHEMA.shape)).reshape(SCHEMA.shape), "must hold real numbers"),
        (np.ones((3, 3)), r"has shape \(3, 3\), but its schema and metadata need \(10, 2, 3, 4\)"),
    ],
    ids=["nan", "inf", "complex", "structured", "bool", "text", "shape"],
)
def test_release_matrices_that_are_not_real_finite_numbers_of_the_schema_shape_are_refused(tmp_path, release, noisy, message):
    path = tmp_path / "r.npz"
    meta = save_release(release, path)
    _rewrite(path, meta=meta, noisy=noisy)
    with pytest.raises(ReleaseFileError, match=message):
        load_release(path)


def test_release_entries_are_checked_before_they_are_read(tmp_path, release):
    path = tmp_path / "r.npz"
    meta = save_release(release, path)
    for raw, message in [(np.array([json.dumps(meta)] * 2), "must be one text value"), (np.array(5), "must be one text value")]:
        _rewrite(path, raw_meta=raw, noisy=release.noisy)
        with pytest.raises(ReleaseFileError, match=message):
            load_release(path)
    # a header that announces more data than the entry holds
    buffer = io.BytesIO()
    np.save(buffer, release.noisy)
    lying = buffer.getvalue().replace(b"(10, 2, 3, 4)", b"(10, 2, 3, 4)".replace(b"4)", b"4)"), 1)
    header_end = lying.index(b"\n") + 1
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("noisy.npy", lying[:header_end] + lying[header_end : header_end + 80])
        meta_buffer = io.BytesIO()
        np.save(meta_buffer, np.array(json.dumps(meta)))
        archive.writestr("metadata.npy", meta_buffer.getvalue())
    with pytest.raises(ReleaseFileError, match="holds 80 bytes, not the 1,920 its header announces"):
        load_release(path)


def test_zip_compressions_the_reader_cannot_decode_are_a_release_file_error(tmp_path, release):
    path = tmp_path / "r.npz"
    meta = save_release(release, path)
    _rewrite(path, meta=meta, noisy=release.noisy, compression=zipfile.ZIP_LZMA)
    said: list[str] = []
    assert load_release(path, warn=said.append).epsilon == release.epsilon  # one zip supports: fine
    assert len(said) == 1 and "carries no signature" in said[0]  # rewritten here, without one
    data = bytearray(_rewrite(path, meta=meta, noisy=release.noisy, compression=zipfile.ZIP_DEFLATED).read_bytes())
    for header, offset in ((b"PK\x03\x04", 8), (b"PK\x01\x02", 10)):  # method 99 (AES): not in zipfile
        at = -1
        while (at := data.find(header, at + 1)) >= 0:
            data[at + offset : at + offset + 2] = (99).to_bytes(2, "little")
    path.write_bytes(bytes(data))
    with pytest.raises(ReleaseFileError, match="compression this reader does not support"):
        load_release(path)


@pytest.mark.parametrize("entry", ["metadata", "noisy"])
@pytest.mark.parametrize("character", [b"{", b"("])
def test_a_nul_in_an_entrys_header_is_a_release_file_error(tmp_path, release, entry, character):
    """Found by the fuzz mode: numpy's header parser raised tokenize.TokenError on a NUL byte."""
    path = tmp_path / "r.npz"
    save_release(release, path)
    with zipfile.ZipFile(path) as archive:
        members = {name: bytearray(archive.read(name)) for name in archive.namelist()}
    header = members[f"{entry}.npy"]
    at = header.index(character, 10)  # in the header's dictionary, after the magic and the length
    header[at] = 0
    with zipfile.ZipFile(path, "w") as archive:
        for name, data in members.items():
            archive.writestr(name, bytes(data))
    with pytest.raises(ReleaseFileError, match=f"the {entry} entry cannot be read"):
        load_release(path)


def test_a_basic_release_without_a_schema_loads(tmp_path):
    made = basic(np.ones((3, 4)), 1.0, np.random.default_rng(1))
    save_release(made, tmp_path / "b.npz", seed=1)
    loaded = load_release(tmp_path / "b.npz")
    assert loaded.schema is None and loaded.mechanism == "basic" and loaded.sa == ("axis_0", "axis_1")
