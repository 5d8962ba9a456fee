"""Releases the app opens: .npz files and Zarr release folders (read into memory when they fit)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from privelet_gui import io as pio
from privelet_gui.engine import Hierarchy, NominalAttribute, OrdinalAttribute, PriveletError, ReleaseSpec, Schema
from privelet_gui.workspace import jobs
from privelet_gui.workspace.jobs import classify_file, open_release_file, release_location

zarr = pytest.importorskip("zarr")
from privelet_gui.io.zarr_releases import save_zarr_release  # noqa: E402

SCHEMA = Schema([
    OrdinalAttribute.integer_range("age", 0, 299),
    NominalAttribute("sex", Hierarchy.flat(["F", "M"])),
])


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    matrix = np.random.default_rng(1).poisson(4.0, SCHEMA.shape).astype(float)
    release = ReleaseSpec(SCHEMA, 1.0, sa=("sex",)).run(matrix)
    path = tmp_path / "r.zarr"
    save_zarr_release(release, path, chunks=(7, 2))  # chunks that do not divide the reads
    return path


def test_a_zarr_folder_and_its_zarr_json_are_releases(folder: Path) -> None:
    assert classify_file(folder) == "release" and classify_file(folder / "zarr.json") == "release"
    assert release_location(folder / "zarr.json") == folder and release_location(folder) == folder
    (folder.parent / "notes.json").write_text("{}")  # a JSON file beside it stays what it was
    assert classify_file(folder.parent / "notes.json") == "hierarchy"
    plain = folder.parent / "plain"
    plain.mkdir()
    (plain / "zarr.json").write_text('{"zarr_format": 3, "node_type": "group", "attributes": {}}')
    with pytest.raises(pio.ReleaseFileError, match="not a Privelet release"):
        open_release_file(plain)


def test_a_zarr_release_is_read_into_memory_with_progress(folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    lazy = pio.load_release(folder)
    assert not isinstance(lazy.noisy, np.ndarray)
    steps: list[float] = []
    release = open_release_file(folder / "zarr.json", progress=lambda f, _s: steps.append(f))
    assert isinstance(release.noisy, np.ndarray)
    np.testing.assert_array_equal(release.noisy, np.asarray(lazy.noisy[:]))
    assert release.calibration == lazy.calibration and release.schema == SCHEMA and release.public_total
    assert steps[-1] == 1.0 and len(steps) >= 2


def test_a_zarr_release_too_big_for_the_app_is_refused_with_the_commands_that_read_it(
    folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(jobs, "available_memory", lambda: 8 * SCHEMA.size)  # four times too little
    with pytest.raises(PriveletError, match=r"r\.zarr holds 600 cells .*'privelet query r\.zarr --where"):
        open_release_file(folder)
