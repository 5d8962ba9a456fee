"""Fuzz: release files with damaged metadata, matrices and zip archives, read by load_release."""

from __future__ import annotations

import io
import json
import math
import tempfile
import zipfile
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from privelet_gui.engine import (
    Hierarchy,
    NominalAttribute,
    NumericBins,
    OrdinalAttribute,
    RangeQuery,
    Schema,
    privelet_plus,
)
from privelet_gui.io import load_release, load_release_metadata, save_release

from .mutations import json_values, mutated
from .support import MAX_MESSAGE, fuzz, outcome

SCHEMA = Schema([
    OrdinalAttribute.integer_range("age", 0, 9),
    NominalAttribute("job", Hierarchy.from_nested({"*": {"T": ["a", "b"], "O": ["c"]}})),
    OrdinalAttribute("wage", bins=NumericBins(0, 10, 3)),
])


@cache
def original() -> tuple[bytes, dict[str, Any], np.ndarray]:
    """A valid release file's bytes, its metadata and its matrix."""
    release = privelet_plus(np.ones(SCHEMA.shape), SCHEMA, 0.5, sa=["job"], rng=np.random.default_rng(1))
    with tempfile.TemporaryDirectory() as name:
        path = Path(name) / "r.npz"
        meta = save_release(release, path, seed=1)
        return path.read_bytes(), meta, release.noisy


def _npy(array: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, array, allow_pickle=True)
    return buffer.getvalue()


@st.composite
def matrices(draw: Any, noisy: np.ndarray) -> np.ndarray:
    action = draw(st.sampled_from(["same"] * 4 + ["dtype", "shape", "nan", "scalar", "object", "structured"]))
    if action == "dtype":
        return noisy.astype(draw(st.sampled_from([np.float32, np.int64, np.uint8, np.complex128, bool, np.float16, "U3", "M8[s]"])))
    if action == "shape":
        return np.ones(draw(st.sampled_from([(3,), (10, 3), (10, 3, 5), (10, 3, 4, 1), (0,)])))
    if action == "nan":
        out = noisy.copy()
        out.flat[draw(st.integers(0, out.size - 1))] = draw(st.sampled_from([math.nan, math.inf, -math.inf]))
        return out
    if action == "scalar":
        return np.array(1.5)
    if action == "object":
        return np.array([{"a": 1}] * 4, dtype=object)
    if action == "structured":
        return np.zeros(noisy.shape, dtype=[("x", "f8"), ("y", "i4")])
    return noisy


@fuzz()
@given(data=st.data())
def test_release_files_load_or_are_refused(data):
    good, meta, noisy = original()
    kind = data.draw(st.sampled_from(["metadata", "metadata", "matrix", "archive", "bytes"]))
    members = {"noisy.npy": _npy(noisy), "metadata.npy": _npy(np.array(json.dumps(meta)))}
    compression = zipfile.ZIP_STORED
    if kind == "metadata":
        changed = mutated(data.draw, meta, steps=2)
        text = data.draw(st.sampled_from(["json", "json", "json", "raw"]))
        members["metadata.npy"] = _npy(np.array(json.dumps(changed) if text == "json" else data.draw(st.text(max_size=40))))
    elif kind == "matrix":
        members["noisy.npy"] = _npy(data.draw(matrices(noisy)))
    elif kind == "archive":
        action = data.draw(st.sampled_from(["compress", "extra", "missing", "rename", "other meta"]))
        if action == "compress":
            compression = data.draw(st.sampled_from([zipfile.ZIP_DEFLATED, zipfile.ZIP_BZIP2, zipfile.ZIP_LZMA]))
        elif action == "extra":
            members["more.npy"] = _npy(np.zeros(3))
        elif action == "missing":
            del members[data.draw(st.sampled_from(sorted(members)))]
        elif action == "rename":
            members["noisy"] = members.pop("noisy.npy")
        else:
            members["metadata.npy"] = _npy(np.array(json.dumps(data.draw(json_values))))
    with tempfile.TemporaryDirectory() as name:
        path = Path(name) / "r.npz"
        with zipfile.ZipFile(path, "w", compression=compression) as archive:
            for member, content in members.items():
                archive.writestr(member, content)
        if kind == "bytes":  # damage anywhere: a header, the data, the directory
            raw = bytearray(good)
            for _ in range(data.draw(st.integers(1, 4))):
                at = data.draw(st.integers(0, len(raw) - 1))
                raw[at] = data.draw(st.integers(0, 255))
            if data.draw(st.booleans()):
                raw = raw[: data.draw(st.integers(0, len(raw)))]
            path.write_bytes(bytes(raw))
        if data.draw(st.booleans()):
            outcome("release metadata", lambda: load_release_metadata(path))
        said: list[str] = []
        release, error = outcome("release files", lambda: load_release(path, warn=said.append))
        changed = error is None and (not np.array_equal(release.noisy, noisy) or load_release_metadata(path) != meta)
    assert all(message.strip() and len(message) <= MAX_MESSAGE for message in said), said
    if error is not None:
        return
    # what the reader is told: a file rebuilt here has no signature; a damaged one that still
    # loads either means what it meant (damage to bytes that carry nothing) or fails its signature
    if kind != "bytes":
        assert any("carries no signature" in message for message in said), said
    else:
        assert not changed or any("FAILED its signature check" in message for message in said), said
    # a release that loads is a consistent one: every question about it has an answer
    assert release.noisy.dtype == np.float64 and np.isfinite(release.noisy).all()
    assert release.epsilon > 0 and release.calibration.epsilon == release.epsilon
    assert release.schema is not None and release.noisy.shape == release.schema.shape
    variance = release.variance(RangeQuery.build(release.schema, {"age": ("2", "7")}))
    assert math.isfinite(variance) and variance > 0
    assert math.isfinite(release.worst_case_variance)
