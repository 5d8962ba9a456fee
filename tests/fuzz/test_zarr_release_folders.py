"""Fuzz: Zarr release folders with damaged documents and chunks, opened by load_release and read
whole: a release whose every cell is the one written (or one the reader was warned about), or a
PriveletError; never zeros for a lost chunk, never another exception."""

from __future__ import annotations

import json
import math
import tempfile
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from privelet_gui.engine import Hierarchy, NominalAttribute, OrdinalAttribute, ReleaseSpec, Schema
from privelet_gui.io import load_release

from .mutations import dumped, mutated
from .support import MAX_MESSAGE, fuzz, outcome

pytest.importorskip("zarr")

SCHEMA = Schema([OrdinalAttribute.integer_range("age", 0, 9), NominalAttribute("sex", Hierarchy.flat(["F", "M"]))])
CHUNKS = (4, 2)  # 3 chunks, the last one partial
CHUNK_FILES = [f"noisy/c/{i}/0" for i in range(3)]


@cache
def original() -> tuple[dict[str, bytes], np.ndarray]:
    """A valid folder's files (path in the folder -> bytes) and its matrix."""
    from privelet_gui.io.zarr_releases import save_zarr_release

    release = ReleaseSpec(SCHEMA, 1.0).run(np.full(SCHEMA.shape, 2.0), rng=np.random.default_rng(3))
    with tempfile.TemporaryDirectory() as name:
        folder = Path(name) / "r.zarr"
        save_zarr_release(release, folder, chunks=CHUNKS, seed=3)
        files = {str(p.relative_to(folder)): p.read_bytes() for p in folder.rglob("*") if p.is_file()}
    return files, release.noisy


@st.composite
def chunk_damage(draw: Any, data: bytes) -> bytes | None:
    """A chunk file's bytes after damage (None: deleted)."""
    action = draw(st.sampled_from(["delete", "truncate", "byte", "inf", "nan", "zeros", "longer"]))
    if action == "delete":
        return None
    if action == "truncate":
        return data[: draw(st.integers(0, len(data) - 1))]
    if action == "byte":
        raw = bytearray(data)
        raw[draw(st.integers(0, len(raw) - 1))] ^= draw(st.integers(1, 255))
        return bytes(raw)
    if action in ("inf", "nan"):
        values = np.frombuffer(data, dtype="<f8").copy()
        values[draw(st.integers(0, values.size - 1))] = np.inf if action == "inf" else np.nan
        return values.tobytes()
    if action == "zeros":
        return bytes(len(data))
    return data + b"\0" * 8


@fuzz()
@given(data=st.data())
def test_zarr_release_folders_read_as_written_or_are_refused(data):
    files, noisy = original()
    files = dict(files)
    kind = data.draw(st.sampled_from(["group", "array", "chunk", "chunk", "unsigned chunk"]))
    if kind in ("group", "array"):
        name = "zarr.json" if kind == "group" else "noisy/zarr.json"
        files[name] = dumped(data.draw, mutated(data.draw, json.loads(files[name]), steps=2))
    else:
        if kind == "unsigned chunk":  # as versions before checksums wrote it
            group = json.loads(files["zarr.json"])
            for attribute in ("privelet_checksums", "privelet_signature"):
                del group["attributes"][attribute]
            files["zarr.json"] = json.dumps(group).encode()
        chunk = data.draw(st.sampled_from(CHUNK_FILES))
        damaged = data.draw(chunk_damage(files[chunk]))
        if damaged is None:
            del files[chunk]
        else:
            files[chunk] = damaged
    with tempfile.TemporaryDirectory() as name:
        folder = Path(name) / "r.zarr"
        for relative, content in files.items():
            (folder / relative).parent.mkdir(parents=True, exist_ok=True)
            (folder / relative).write_bytes(content)
        said: list[str] = []
        values, error = outcome("zarr release folders", lambda: np.asarray(load_release(folder, warn=said.append).noisy))
    assert all(message.strip() and len(message) <= MAX_MESSAGE for message in said), said
    if error is not None:
        return
    assert values.shape == noisy.shape and np.isfinite(values).all()
    if not np.array_equal(values, noisy):  # only a folder without checksums can change unnoticed, and it says so
        assert kind == "unsigned chunk" and any("records no checksums" in message for message in said), said
        assert math.isfinite(float(values.sum()))
