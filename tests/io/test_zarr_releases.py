"""Zarr release folders: written atomically, opened lazily, queried and exported a chunk at a time."""

from __future__ import annotations

import dataclasses
import hashlib
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("zarr")

from privelet_gui.engine import (
    Hierarchy,
    NominalAttribute,
    OrdinalAttribute,
    PriveletError,
    Release,
    ReleaseSpec,
    Schema,
)
from privelet_gui.io import (
    OutputExistsError,
    ReleaseFileError,
    answer_query,
    count_table,
    export_release,
    load_release,
    load_release_metadata,
    load_schema,
    parse_where,
    release_metadata,
    sample_schema_path,
    sample_table_path,
    save_release,
)
from privelet_gui.io.zarr_releases import (
    ZarrReleaseWriter,
    export_release_chunked,
    is_zarr_release,
    regular_chunks,
    save_zarr_release,
    write_zarr_chunk,
)

CHUNKS = (10, 2, 5, 16, 14, 41)  # 8 chunks along age


@pytest.fixture(scope="module")
def schema() -> Schema:
    return load_schema(sample_schema_path())


@pytest.fixture(scope="module")
def release(schema: Schema) -> Release:
    matrix, _ = count_table(sample_table_path(), schema)
    return ReleaseSpec(schema, 1.0, sa=("age", "sex")).run(matrix, rng=np.random.default_rng(4))


@pytest.fixture(scope="module")
def small() -> Release:
    """A release of 10,000 cells (exports of the sample's 6.8 million rows take minutes)."""
    schema = Schema([
        OrdinalAttribute.integer_range("age", 0, 999),
        NominalAttribute("sex", Hierarchy.flat(["F", "M"])),
        NominalAttribute("job", Hierarchy.from_nested({"*": {"A": ["a1", "a2"], "B": ["b1", "b2", "b3"]}})),
    ])
    matrix = np.random.default_rng(2).poisson(3.0, schema.shape).astype(np.float64)
    return ReleaseSpec(schema, 1.0, sa=("sex",)).run(matrix, rng=np.random.default_rng(4))


#: Slabs of 1,000 cells: the small release is exported in ten of them.
SMALL_SLABS = 1000


def test_round_trip_is_lazy_and_keeps_the_metadata(release: Release, tmp_path: Path) -> None:
    written = save_zarr_release(release, tmp_path / "r.zarr", chunks=CHUNKS, seed=4, metadata={"source": "test"})
    assert is_zarr_release(tmp_path / "r.zarr") and not is_zarr_release(tmp_path)
    opened = load_release(tmp_path / "r.zarr")
    assert not isinstance(opened.noisy, np.ndarray)  # a zarr array, read on demand
    assert opened.noisy.chunks == CHUNKS
    assert np.array_equal(np.asarray(opened.noisy), release.noisy)
    assert (opened.epsilon, opened.sa, opened.mechanism, opened.calibration) == (
        release.epsilon, release.sa, release.mechanism, release.calibration
    )
    assert load_release_metadata(tmp_path / "r.zarr") == written
    assert written["seed"] == 4 and written["extra"] == {"source": "test"}
    expected = release_metadata(release, seed=4, metadata={"source": "test"})
    assert {k: v for k, v in written.items() if k != "created"} == {k: v for k, v in expected.items() if k != "created"}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.zarr"]  # no temporary folder left


def test_a_query_reads_only_the_chunks_it_needs(release: Release, schema: Schema, tmp_path: Path) -> None:
    save_zarr_release(release, tmp_path / "r.zarr", chunks=CHUNKS)
    # Edit the chunks of ages 57 and more (index 40 on; their size kept: a truncated chunk is refused at
    # the opening): a query on younger ages never reads them.
    for chunk in (tmp_path / "r.zarr" / "noisy" / "c").iterdir():
        if int(chunk.name) >= 4:
            for file in chunk.rglob("*"):
                if file.is_file():
                    file.write_bytes(np.ones(file.stat().st_size // 8).tobytes())
    opened = load_release(tmp_path / "r.zarr")
    query = parse_where(schema, ["age=20..35", "sex=Female"])
    lazy, whole = answer_query(opened, query), answer_query(release, query)
    # the same cells and variance; the box's sum may differ in the last bits (a copy or a view is summed)
    assert (lazy.query, lazy.variance) == (whole.query, whole.variance)
    assert lazy.noisy_count == pytest.approx(whole.noisy_count, rel=1e-13)
    with pytest.raises(ReleaseFileError, match="chunk noisy/c/4/0/0/0/0/0 differs from the checksum recorded"):
        answer_query(opened, parse_where(schema, ["age=50..60"]))


@pytest.mark.parametrize("name", ["cells.csv", "cells.csv.gz", "cells.parquet"])
def test_export_in_slabs_equals_the_whole_export(small: Release, tmp_path: Path, name: str) -> None:
    release = small
    save_zarr_release(release, tmp_path / "r.zarr", chunks=(300, 2, 5))
    whole, slabs = tmp_path / "whole" / name, tmp_path / "slabs" / name
    whole.parent.mkdir()
    slabs.parent.mkdir()
    # a seeded (test) release: exported with allow_seeded, both marked the same way
    assert export_release(release, whole, allow_seeded=True) == release.noisy.size
    in_slabs = export_release(load_release(tmp_path / "r.zarr"), slabs, allow_seeded=True, slab_cells=SMALL_SLABS)
    assert in_slabs == release.noisy.size
    if name == "cells.csv":
        assert whole.read_bytes() == slabs.read_bytes()
    if name.endswith("parquet"):
        assert _same_frame(pd.read_parquet(whole), pd.read_parquet(slabs))
    else:
        assert _same_frame(pd.read_csv(whole, skiprows=1), pd.read_csv(slabs, skiprows=1))  # after the seeded mark


def _same_frame(a: pd.DataFrame, b: pd.DataFrame) -> bool:
    """Equal columns, labels and values (categoricals compared by categories and codes:
    pandas' own comparison of millions of categorical rows takes minutes)."""
    if list(a.columns) != list(b.columns):
        return False
    for name in a.columns:
        x, y = a[name], b[name]
        if isinstance(x.dtype, pd.CategoricalDtype) or isinstance(y.dtype, pd.CategoricalDtype):
            if not (isinstance(x.dtype, pd.CategoricalDtype) and isinstance(y.dtype, pd.CategoricalDtype)):
                return False
            if list(x.cat.categories) != list(y.cat.categories) or not np.array_equal(x.cat.codes, y.cat.codes):
                return False
        elif not x.equals(y):
            return False
    return True


def test_export_in_slabs_of_a_release_in_memory(small: Release, tmp_path: Path) -> None:
    release = small
    export_release(release, tmp_path / "a.csv", allow_seeded=True)
    assert export_release_chunked(release, tmp_path / "b.csv", slab_cells=SMALL_SLABS) == release.noisy.size  # allowed
    assert (tmp_path / "a.csv").read_bytes() == (tmp_path / "b.csv").read_bytes()
    with pytest.raises(OutputExistsError):
        export_release_chunked(release, tmp_path / "b.csv")


def test_existing_folders_are_replaced_only_when_they_are_releases(release: Release, tmp_path: Path) -> None:
    target = tmp_path / "r.zarr"
    save_zarr_release(release, target, chunks=CHUNKS)
    with pytest.raises(OutputExistsError):
        save_zarr_release(release, target)
    save_zarr_release(release, target, force=True)  # a release: replaced
    assert load_release(target).noisy.chunks == regular_chunks(release.noisy.shape)
    other = tmp_path / "photos.zarr"
    other.mkdir()
    (other / "holiday.jpg").write_bytes(b"...")
    with pytest.raises(ValueError, match=r"refusing to replace .*photos\.zarr: it is not a Privelet Zarr release"):
        save_zarr_release(release, other, force=True)
    assert (other / "holiday.jpg").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["photos.zarr", "r.zarr"]


def test_a_failed_write_leaves_nothing(tmp_path: Path) -> None:
    with pytest.raises(RuntimeError), ZarrReleaseWriter(tmp_path / "r.zarr", (4, 5), (2, 5)):
        raise RuntimeError("the cluster went away")
    assert list(tmp_path.iterdir()) == []


def test_damaged_or_foreign_folders_are_clear_errors(release: Release, tmp_path: Path) -> None:
    import zarr

    zarr.open_group(str(tmp_path / "plain.zarr"), mode="w")
    with pytest.raises(ReleaseFileError, match="a Zarr folder but not a Privelet release"):
        load_release(tmp_path / "plain.zarr")
    save_zarr_release(release, tmp_path / "r.zarr", chunks=CHUNKS)
    meta_file = tmp_path / "r.zarr" / "zarr.json"
    meta = json.loads(meta_file.read_text())
    meta["attributes"]["privelet"]["format_version"] = 99
    meta_file.write_text(json.dumps(meta))
    with pytest.raises(ReleaseFileError, match="release format version 99"):
        load_release(tmp_path / "r.zarr")
    meta["attributes"]["privelet"]["format_version"] = 1
    meta["attributes"]["privelet"]["shape"] = [1, 2]
    meta_file.write_text(json.dumps(meta))
    with pytest.raises(ReleaseFileError, match=r'"shape" is \[1, 2\], but the schema needs'):
        load_release(tmp_path / "r.zarr")


def test_a_npz_file_still_loads_in_memory(release: Release, tmp_path: Path) -> None:
    save_release(release, tmp_path / "r.npz")
    assert isinstance(load_release(tmp_path / "r.npz").noisy, np.ndarray)


def test_regular_chunks_cut_leading_axes_only() -> None:
    assert regular_chunks((74, 2, 5, 16, 14, 41), 1 << 20) == (11, 2, 5, 16, 14, 41)
    assert regular_chunks((100, 2, 512, 1001), 1 << 20) == (1, 2, 512, 1001)
    assert regular_chunks((3, 5_000_000), 1 << 20) == (1, 1 << 20)
    assert regular_chunks((7,), 100) == (7,)


# -- every chunk checked: presence, size, checksum, values; documents read safely ----------------------


SMALL_CHUNKS = (300, 2, 5)  # 4 chunks along age, the last one partial


def _group_document(folder: Path) -> dict:
    return json.loads((folder / "zarr.json").read_text())


def _as_older_version(folder: Path) -> None:
    """Make a folder as versions before checksums and signatures wrote it."""
    document = _group_document(folder)
    for name in ("privelet_checksums", "privelet_signature"):
        del document["attributes"][name]
    (folder / "zarr.json").write_text(json.dumps(document))


def _open(folder: Path) -> tuple[Release, list[str]]:
    said: list[str] = []
    return load_release(folder, warn=said.append), said


def test_every_chunk_is_stored_and_its_checksum_recorded_even_one_of_zeros(small: Release, tmp_path: Path) -> None:
    noisy = small.noisy.copy()
    noisy[300:600] = 0.0  # zarr leaves a chunk equal to its fill value out unless told to write it
    release = dataclasses.replace(small, noisy=noisy)
    folder = tmp_path / "r.zarr"
    save_zarr_release(release, folder, chunks=SMALL_CHUNKS)
    checksums = _group_document(folder)["attributes"]["privelet_checksums"]
    assert checksums["algorithm"] == "sha256" and checksums["chunk_shape"] == list(SMALL_CHUNKS)
    files = [folder / "noisy" / "c" / str(i) / "0" / "0" for i in range(4)]
    assert checksums["chunks"] == [hashlib.sha256(f.read_bytes()).hexdigest() for f in files]
    assert sorted(p.name for p in folder.iterdir()) == ["noisy", "zarr.json"]  # the digests' folder is gone
    opened, said = _open(folder)
    assert said == [] and np.array_equal(np.asarray(opened.noisy), noisy)


@pytest.mark.parametrize("older", [False, True])
def test_a_missing_or_truncated_chunk_is_refused_not_read_as_zeros(small: Release, tmp_path: Path, older: bool) -> None:
    folder = tmp_path / "r.zarr"
    save_zarr_release(small, folder, chunks=SMALL_CHUNKS)
    if older:
        _as_older_version(folder)
    chunk = folder / "noisy" / "c" / "1" / "0" / "0"
    data = chunk.read_bytes()
    chunk.write_bytes(data[:100])
    with pytest.raises(ReleaseFileError, match=r"the chunk noisy/c/1/0/0 holds 100 bytes, not 24,000: it is truncated"):
        load_release(folder)
    chunk.unlink()
    with pytest.raises(ReleaseFileError, match=r"the chunk noisy/c/1/0/0 of the noisy matrix is missing \(its cells "
                                               r"would read as zeros\)"):
        load_release(folder)


def test_an_edited_chunk_fails_its_checksum_when_read(small: Release, tmp_path: Path) -> None:
    folder = tmp_path / "r.zarr"
    save_zarr_release(small, folder, chunks=SMALL_CHUNKS)
    chunk = folder / "noisy" / "c" / "2" / "0" / "0"
    chunk.write_bytes(np.full(3000, np.inf).tobytes())  # the chunk of inf
    opened, said = _open(folder)  # opening reads no chunk
    assert said == []
    with pytest.raises(ReleaseFileError, match="the chunk noisy/c/2/0/0 differs from the checksum recorded when the "
                                               "release was written"):
        np.asarray(opened.noisy[600:900])
    assert float(np.sum(opened.noisy[0:300])) == pytest.approx(float(small.noisy[0:300].sum()))  # the others read
    with pytest.raises(ReleaseFileError, match="differs from the checksum"):
        export_release(opened, tmp_path / "cells.csv", allow_seeded=True)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.zarr"]  # no export, not even part of one


def test_a_folder_without_checksums_reads_with_a_warning_and_its_values_checked(small: Release, tmp_path: Path) -> None:
    folder = tmp_path / "r.zarr"
    save_zarr_release(small, folder, chunks=SMALL_CHUNKS)
    _as_older_version(folder)
    opened, said = _open(folder)
    assert np.array_equal(np.asarray(opened.noisy), small.noisy)  # still readable
    assert len(said) == 1 and "records no checksums of its chunks" in said[0]
    (folder / "noisy" / "c" / "2" / "0" / "0").write_bytes(np.full(3000, np.inf).tobytes())
    opened, _ = _open(folder)
    with pytest.raises(ReleaseFileError, match="the chunk noisy/c/2/0/0 holds NaN or infinite values"):
        export_release(opened, tmp_path / "cells.csv", allow_seeded=True)
    assert not (tmp_path / "cells.csv").exists()


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        ({"shape": [1000, "x", 5]}, r"\(shape in noisy/zarr.json\)"),
        ({"data_type": "int64"}, r"\(data_type in noisy/zarr.json\)"),
        ({"fill_value": 7.0}, r"\(fill_value in noisy/zarr.json\)"),
        ({"codecs": [{"name": "bytes", "configuration": {"endian": "little"}}, {"name": "gzip", "configuration": {"level": 1}}]},
         r"\(codecs in noisy/zarr.json\)"),
        ({"chunk_key_encoding": {"name": "v2", "configuration": {"separator": "."}}}, r"\(chunk_key_encoding in"),
        ({"chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [300, 2, 0]}}}, r"\(chunk_grid in"),
        ({"chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [600, 2, 5]}}},
         "privelet_checksums do not describe the 2 chunks"),
        ({"shape": [999, 2, 5]}, r'matrix has shape \(999, 2, 5\), the metadata says \(1000, 2, 5\)'),
    ],
)
def test_a_tampered_array_document_is_refused(small: Release, tmp_path: Path, change: dict, problem: str) -> None:
    folder = tmp_path / "r.zarr"
    save_zarr_release(small, folder, chunks=SMALL_CHUNKS)
    document = json.loads((folder / "noisy" / "zarr.json").read_text())
    document.update(change)
    (folder / "noisy" / "zarr.json").write_text(json.dumps(document))
    with pytest.raises(ReleaseFileError, match=problem):
        load_release(folder)


@pytest.mark.parametrize("document", ["zarr.json", "noisy/zarr.json"])
def test_a_deeply_nested_document_is_refused(small: Release, tmp_path: Path, document: str) -> None:
    folder = tmp_path / "r.zarr"
    save_zarr_release(small, folder, chunks=SMALL_CHUNKS)
    (folder / document).write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(ReleaseFileError, match="nested 100,000 levels deep"):
        load_release(folder)
    if document == "zarr.json":
        with pytest.raises(ReleaseFileError, match="nested 100,000 levels deep"):
            load_release_metadata(folder)
        with pytest.raises(ValueError, match="it is not a Privelet Zarr release"):  # not replaced, no traceback
            save_zarr_release(small, folder, force=True)


def test_edits_of_a_folder_fail_its_signature(small: Release, tmp_path: Path) -> None:
    folder, other = tmp_path / "r.zarr", tmp_path / "other.zarr"
    save_zarr_release(small, folder, chunks=SMALL_CHUNKS)
    assert _open(folder)[1] == []
    # the metadata of another release, every field consistent: epsilon relabelled
    save_zarr_release(small, other, chunks=SMALL_CHUNKS)
    relabelled = ReleaseSpec(small.schema, 0.25, sa=("sex",)).run(np.ones(small.schema.shape))
    document = _group_document(folder)
    document["attributes"]["privelet"] = release_metadata(relabelled)
    (folder / "zarr.json").write_text(json.dumps(document))
    opened, said = _open(folder)
    assert opened.epsilon == 0.25
    assert len(said) == 1 and "FAILED its signature check" in said[0]
    # a chunk edited with its checksum updated to match
    document = _group_document(other)
    chunk = other / "noisy" / "c" / "0" / "0" / "0"
    chunk.write_bytes(np.zeros(3000).tobytes())
    document["attributes"]["privelet_checksums"]["chunks"][0] = hashlib.sha256(chunk.read_bytes()).hexdigest()
    (other / "zarr.json").write_text(json.dumps(document))
    opened, said = _open(other)
    assert np.asarray(opened.noisy[0:300]).sum() == 0.0  # what the checksums now say
    assert len(said) == 1 and "FAILED its signature check" in said[0]


def test_a_chunk_never_written_stops_the_commit(tmp_path: Path) -> None:
    with ZarrReleaseWriter(tmp_path / "r.zarr", (4, 5), (2, 5)) as writer:
        write_zarr_chunk(writer.array_path, (slice(0, 2), slice(0, 5)), np.ones((2, 5)))
        with pytest.raises(PriveletError, match=r"the chunk c/1/0 of r.zarr was never written completely"):
            writer.commit({"format": "privelet-release"})
    assert list(tmp_path.iterdir()) == []
