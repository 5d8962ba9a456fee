"""Release files are signed with a key kept beside the ledger; a file that fails or lacks its
signature, or whose flags disagree, still loads, and the reader is told what that means."""

from __future__ import annotations

import io
import json
import os
import stat
import zipfile
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from privelet_gui.engine import (
    Hierarchy,
    NominalAttribute,
    OrdinalAttribute,
    PriveletError,
    RangeQuery,
    ReleaseSpec,
    Schema,
)
from privelet_gui.io import (
    ReleaseFileError,
    UnverifiedReleaseWarning,
    export_release,
    load_release,
    save_release,
)
from privelet_gui.io.signing import signing_key, signing_key_path

SCHEMA = Schema([
    OrdinalAttribute.integer_range("age", 0, 15),
    NominalAttribute("job", Hierarchy.from_nested({"*": {"T": ["a", "b"], "O": ["c", "d"]}})),
])
MATRIX = np.random.default_rng(5).poisson(4.0, SCHEMA.shape).astype(np.float64)


def _release(epsilon: float = 8.0, **options: Any) -> Any:
    seed = options.pop("seed", None)
    rng = np.random.default_rng(seed) if seed is not None else None
    return ReleaseSpec(SCHEMA, epsilon, sa=("job",), **options).run(MATRIX.copy(), rng=rng)


def _members(path: Path) -> dict[str, bytes]:
    with zipfile.ZipFile(path) as archive:
        return {name: archive.read(name) for name in archive.namelist()}


def _npy(array: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, array, allow_pickle=False)
    return buffer.getvalue()


def release_file_metadata(path: Path) -> dict[str, Any]:
    with np.load(path) as npz:
        return json.loads(str(npz["metadata"][()]))


def rewrite_release_file(path: Path, *, meta: dict[str, Any] | None = None, noisy: np.ndarray | None = None,
             signature: bool = True) -> None:
    """Rewrite a release file with other metadata or another matrix (its signature kept, or dropped)."""
    members = _members(path)
    if meta is not None:
        members["metadata.npy"] = _npy(np.array(json.dumps(meta)))
    if noisy is not None:
        members["noisy.npy"] = _npy(noisy)
    if not signature:
        del members["signature.npy"]
    with zipfile.ZipFile(path, "w") as archive:
        for name, data in members.items():
            archive.writestr(name, data)


def _load(path: Path) -> tuple[Any, list[str]]:
    said: list[str] = []
    return load_release(path, warn=said.append), said


def test_a_file_written_here_loads_without_a_warning(tmp_path):
    save_release(_release(), tmp_path / "r.npz")
    release, said = _load(tmp_path / "r.npz")
    assert said == [] and release.epsilon == 8.0


def test_the_key_is_made_on_first_use_beside_the_ledger_for_its_owner_only(tmp_path, private_ledger):
    key_path = signing_key_path()
    assert key_path == private_ledger.with_name("release-signing.key")
    assert not key_path.exists()
    save_release(_release(), tmp_path / "r.npz")
    assert key_path.is_file()
    if os.name == "posix":
        assert stat.S_IMODE(key_path.stat().st_mode) == 0o600
    key = signing_key()
    assert len(key) == 32 and signing_key() == key  # made once, then read
    save_release(_release(), tmp_path / "s.npz")
    assert key_path.read_text(encoding="ascii").strip() == key.hex()


def test_reading_makes_no_key(tmp_path, monkeypatch):
    save_release(_release(), tmp_path / "r.npz")
    monkeypatch.setenv("PRIVELET_LEDGER", str(tmp_path / "elsewhere" / "ledger.sqlite3"))
    _, said = _load(tmp_path / "r.npz")
    assert not (tmp_path / "elsewhere").exists()
    assert len(said) == 1 and "signed on another machine" in said[0]


def test_an_epsilon_relabelled_with_its_scale_recomputed_fails_the_signature(tmp_path):
    """The issue's case: epsilon 8 relabelled 0.5, every field consistent (the metadata of a real
    epsilon 0.5 release of the same table), so that queries claim +/-68 where the noise is +/-4.3."""
    path, other = tmp_path / "r.npz", tmp_path / "other.npz"
    save_release(_release(8.0), path)
    save_release(_release(0.5), other)
    rewrite_release_file(path, meta=release_file_metadata(other))
    release, said = _load(path)  # consistent: it loads
    assert release.epsilon == 0.5
    assert len(said) == 1 and "FAILED its signature check" in said[0] and str(path) in said[0]
    assert "changed after Privelet Studio wrote it" in said[0] and "Do not publish it" in said[0]


def test_a_total_shift_added_to_a_raw_release_fails_the_signature(tmp_path):
    path = tmp_path / "r.npz"
    raw = _release(public_total=False)
    save_release(raw, path)
    total = RangeQuery.build(SCHEMA, {})
    assert load_release(path).variance(total) > 0
    meta = release_file_metadata(path)
    meta["post_processing"] = {"public_total": True, "total_shift": 1.08}
    rewrite_release_file(path, meta=meta)
    release, said = _load(path)
    assert release.variance(total) == 0  # what the edit makes it claim
    assert len(said) == 1 and "FAILED its signature check" in said[0]


def test_an_edited_cell_fails_the_signature(tmp_path):
    path = tmp_path / "r.npz"
    release = _release()
    save_release(release, path)
    noisy = release.noisy.copy()
    noisy[3, 1] += 1.0
    rewrite_release_file(path, noisy=noisy)
    loaded, said = _load(path)
    assert loaded.noisy[3, 1] == noisy[3, 1]
    assert len(said) == 1 and "FAILED its signature check" in said[0]


def test_a_file_without_a_signature_still_loads_and_says_what_that_means(tmp_path):
    path = tmp_path / "old.npz"
    release = _release()
    save_release(release, path)
    rewrite_release_file(path, signature=False)  # as versions before signatures wrote it
    loaded, said = _load(path)
    assert np.array_equal(loaded.noisy, release.noisy)
    assert len(said) == 1 and "carries no signature" in said[0] and "older than signatures" in said[0]
    with pytest.warns(UnverifiedReleaseWarning, match="carries no signature"):  # no warn function: a Python warning
        load_release(path)


def test_a_file_from_another_machine_cannot_be_checked_here(tmp_path, monkeypatch):
    path = tmp_path / "r.npz"
    monkeypatch.setenv("PRIVELET_LEDGER", str(tmp_path / "there" / "ledger.sqlite3"))
    save_release(_release(), path)
    monkeypatch.setenv("PRIVELET_LEDGER", str(tmp_path / "here" / "ledger.sqlite3"))
    signing_key()  # this machine has a key of its own
    _, said = _load(path)
    assert len(said) == 1 and "signed on another machine" in said[0] and "cannot check it" in said[0]


@pytest.mark.parametrize("signature", ['{"algorithm": "HMAC-SHA256"}', "not json", '["a"]'])
def test_a_damaged_signature_fails(tmp_path, signature):
    path = tmp_path / "r.npz"
    save_release(_release(), path)
    members = _members(path)
    members["signature.npy"] = _npy(np.array(signature))
    with zipfile.ZipFile(path, "w") as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    _, said = _load(path)
    assert len(said) == 1 and "FAILED its signature check (its signature is damaged)" in said[0]


def test_a_damaged_key_refuses_to_sign_and_cannot_check(tmp_path):
    path = tmp_path / "r.npz"
    save_release(_release(), path)
    signing_key_path().write_text("not a key", encoding="ascii")
    with pytest.raises(PriveletError, match=r"release signing key .* is damaged .* move it away"):
        save_release(_release(), tmp_path / "s.npz")
    assert not (tmp_path / "s.npz").exists()
    _, said = _load(path)
    assert len(said) == 1 and "cannot be checked" in said[0] and "is damaged" in said[0]


def test_a_seeded_flag_cleared_is_read_as_seeded(tmp_path):
    """The issue's case: a seeded release whose flag (and seed) were cleared, its bit source
    still saying seeded: read as seeded, so that exports still need allow_seeded and are marked."""
    path = tmp_path / "r.npz"
    save_release(_release(seed=3), path, seed=3)
    meta = release_file_metadata(path)
    assert meta["bit_source"] == "seeded generator (tests only)"
    meta["seeded"], meta["seed"] = False, None
    rewrite_release_file(path, meta=meta)
    release, said = _load(path)
    assert release.seeded
    assert any("seeded flag (false) and its bit source ('seeded generator (tests only)') disagree" in s for s in said)
    assert any("FAILED its signature check" in s for s in said)
    with pytest.raises(PriveletError, match="fixed seed"):
        export_release(release, tmp_path / "cells.csv")
    assert not (tmp_path / "cells.csv").exists()
    export_release(release, tmp_path / "cells.csv", allow_seeded=True)
    assert (tmp_path / "cells.csv").read_text().startswith("# SEEDED TEST RELEASE")


def test_a_seeded_flag_set_on_the_os_bit_source_stays_seeded(tmp_path):
    path = tmp_path / "r.npz"
    save_release(_release(), path)
    meta = release_file_metadata(path)
    meta["seeded"] = True
    rewrite_release_file(path, meta=meta, signature=False)
    release, said = _load(path)
    assert release.seeded
    assert any("disagree" in s for s in said) and any("carries no signature" in s for s in said)


def test_agreeing_flags_and_files_without_a_bit_source_read_as_they_say(tmp_path):
    path = tmp_path / "r.npz"
    save_release(_release(seed=3), path, seed=3)
    release, said = _load(path)
    assert release.seeded and said == []
    meta = release_file_metadata(path)
    del meta["bit_source"]
    meta["seeded"], meta["seed"] = False, None
    rewrite_release_file(path, meta=meta, signature=False)
    release, said = _load(path)
    assert not release.seeded and not any("disagree" in s for s in said)
    meta["bit_source"] = 7
    rewrite_release_file(path, meta=meta)
    with pytest.raises(ReleaseFileError, match='"bit_source" must be text'):
        load_release(path)


def test_a_key_removed_as_soon_as_it_is_made_is_a_clear_error(private_ledger, monkeypatch):
    # Another program removing the key between its making and its reading: an error saying so, not an assert.
    monkeypatch.setattr(os, "link", lambda source, target: None)
    with pytest.raises(PriveletError, match="was removed as soon as it was made"):
        signing_key()
