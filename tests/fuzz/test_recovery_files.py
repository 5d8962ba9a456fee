"""Fuzz: copies of unsaved work in the recovery folder, generated valid and then damaged, read
by RecoveryStore.orphans at the app's start (which must never fail on them)."""

from __future__ import annotations

import tempfile
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from privelet_gui.engine import Hierarchy, NominalAttribute, OrdinalAttribute, PriveletError, ReleaseSpec, Schema
from privelet_gui.io.recovery import RecoveryStore
from privelet_gui.io.releases import save_release

from .mutations import dumped, mutated
from .projects import intact, project_objects
from .support import MAX_MESSAGE, TALLY, fuzz


@st.composite
def recovery_files(draw: Any) -> tuple[dict[str, Any], Any, bytes]:
    """(valid object, damaged object, file bytes) of a copy: a project, a release, or both."""
    parts = draw(st.sampled_from(["project", "release", "both"]))
    obj = {
        "format": "privelet-recovery",
        "version": 1,
        "saved_at": draw(st.sampled_from(["2026-12-01T10:00:00+00:00", "2026-12-01T10:00:00"])),
        "project_path": draw(st.sampled_from([None, "/work/census.privelet"])),
        "project": draw(project_objects()) if parts != "release" else None,
        "release": None if parts == "project" else {
            "file": "copy-1.npz", "epsilon": draw(st.sampled_from([0.5, 1.0])), "mechanism": "privelet+",
            "created": "2026-12-01T09:59:00+00:00", "ledger_entry": draw(st.sampled_from([None, 3])),
        },
    }
    damaged = mutated(draw, obj)
    return obj, damaged, dumped(draw, damaged)


@cache
def release_file(epsilon: float) -> bytes:
    """A release file of the copy's release, as the app keeps it (the description must agree with it)."""
    schema = Schema([OrdinalAttribute.integer_range("age", 0, 9), NominalAttribute("sex", Hierarchy.flat(["F", "M"]))])
    release = ReleaseSpec(schema, epsilon, "privelet+", ("sex",)).run(np.ones(schema.shape), rng=np.random.default_rng(1))
    with tempfile.TemporaryDirectory() as name:
        save_release(release, Path(name) / "r.npz")
        return (Path(name) / "r.npz").read_bytes()


@fuzz()
@given(files=recovery_files())
def test_recovery_files_are_offered_or_kept_with_a_reason(files):
    obj, damaged, data = files
    with tempfile.TemporaryDirectory() as name:
        folder = Path(name)
        (folder / "copy.json").write_bytes(data)
        kept = obj["release"]["epsilon"] if obj["release"] is not None else 0.5
        (folder / "copy-1.npz").write_bytes(release_file(kept))
        [orphan] = RecoveryStore(folder).orphans()  # any exception fails the test
        orphan.leave()
        if orphan.problem is None:
            assert orphan.holds_work
            TALLY.valid("recovery files")
        else:
            assert orphan.project is None and orphan.release is None
            assert orphan.problem.strip() and len(orphan.problem) <= MAX_MESSAGE, orphan.problem[:300]
            TALLY.refused("recovery files", PriveletError(orphan.problem))
            assert (folder / "copy.json").read_bytes() == data  # an unreadable copy is kept as it is
    assert orphan.problem is None or not intact(obj, damaged, data), orphan.problem
