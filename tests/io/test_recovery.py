"""Copies of unsaved work: a running app's copy is its own, a crashed app's is offered back once."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from privelet_gui.engine import OrdinalAttribute, Schema
from privelet_gui.io.project import Project, project_to_json
from privelet_gui.io.recovery import RECOVERY_ENVIRONMENT, KeptRelease, RecoveryStore, recovery_folder

PROJECT = Project(
    table_path=Path("/data/census.csv"),
    schema=Schema([OrdinalAttribute.integer_range("age", 0, 99)]),
    epsilon=0.37,
)

# A process that keeps a copy of PROJECT in FOLDER, says "kept", then waits to be killed.
_KEEPER = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from privelet_gui.engine import OrdinalAttribute, Schema
    from privelet_gui.io.project import Project
    from privelet_gui.io.recovery import RecoveryStore

    project = Project(table_path=Path("/data/census.csv"),
                      schema=Schema([OrdinalAttribute.integer_range("age", 0, 99)]), epsilon=0.37)
    slot = RecoveryStore(sys.argv[1]).slot()
    slot.write(project, Path("/work/census.privelet"))
    print("kept", flush=True)
    sys.stdin.readline()
    """
)


def _start_keeper(folder: Path) -> subprocess.Popen[str]:
    process = subprocess.Popen([sys.executable, "-c", _KEEPER, str(folder)], stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, text=True)
    assert process.stdout is not None
    assert process.stdout.readline().strip() == "kept"
    return process


@pytest.mark.skipif(os.name != "posix", reason="kills the keeping process with SIGKILL")
def test_a_copy_is_offered_only_once_its_app_is_killed(tmp_path):
    process = _start_keeper(tmp_path)
    try:
        assert RecoveryStore(tmp_path).orphans() == []  # its app runs: not offered
        assert len(list(tmp_path.glob("*.json"))) == 1
    finally:
        process.send_signal(signal.SIGKILL)  # a crash: nothing is cleaned up
        process.wait(timeout=30)
    [orphan] = RecoveryStore(tmp_path).orphans()
    # what a write killed half way leaves: a temporary file named after the dead process
    from privelet_gui.io.atomic import _HOST

    for name in (orphan.path.name, f"{orphan.path.stem}-1.npz"):
        (tmp_path / f".{name}.{_HOST}-{process.pid}-{'0' * 12}.tmp").write_text("{", encoding="utf-8")
    assert orphan.project == PROJECT
    assert orphan.project_path == Path("/work/census.privelet")
    assert orphan.problem is None
    assert orphan.saved_at is not None and abs(datetime.now(UTC) - orphan.saved_at) < timedelta(minutes=5)
    # claimed: a second app starting meanwhile does not offer it too
    assert RecoveryStore(tmp_path).orphans() == []
    orphan.leave()
    [again] = RecoveryStore(tmp_path).orphans()  # "not now": kept for the next start
    again.discard()
    assert list(tmp_path.iterdir()) == []  # the copy and its lock file are gone
    assert RecoveryStore(tmp_path).orphans() == []


def test_this_apps_own_copy_is_not_an_orphan_and_goes_when_discarded(tmp_path):
    slot = RecoveryStore(tmp_path / "recovery").slot()
    assert not slot.exists
    slot.discard()  # nothing written yet: nothing to do, no folder made
    assert not (tmp_path / "recovery").exists()
    slot.write(PROJECT, None)
    assert slot.exists
    assert RecoveryStore(tmp_path / "recovery").orphans() == []
    saved = json.loads(slot.path.read_text(encoding="utf-8"))
    assert saved["project"]["privacy"]["epsilon"] == 0.37
    assert saved["project_path"] is None
    assert "counts" not in slot.path.read_text(encoding="utf-8")
    slot.write(Project(table_path=PROJECT.table_path, schema=PROJECT.schema, epsilon=2.0), None)
    assert json.loads(slot.path.read_text(encoding="utf-8"))["project"]["privacy"]["epsilon"] == 2.0
    slot.discard()
    assert not slot.exists
    assert list((tmp_path / "recovery").iterdir()) == []


def test_a_relative_table_path_is_kept_absolute(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    slot = RecoveryStore(tmp_path / "recovery").slot()
    slot.write(Project(table_path=Path("table.csv"), schema=PROJECT.schema), Path("p.privelet"))
    saved = json.loads(slot.path.read_text(encoding="utf-8"))
    assert saved["project"]["table"]["path"] == str(tmp_path / "table.csv")
    assert saved["project_path"] == str(tmp_path / "p.privelet")
    slot.discard()


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("{not json", "JSON"),
        ('{"format": "privelet-recovery", "version": 99}', "another version"),
        ('{"format": "something else"}', "not a copy of unsaved work"),
        ('{"format": "privelet-recovery", "version": 1, "saved_at": "2026-01-01T00:00:00+00:00", "project": 3}',
         "project"),
    ],
)
def test_an_unreadable_copy_says_why_and_is_never_deleted_unasked(tmp_path, text, problem):
    (tmp_path / "0123.json").write_text(text, encoding="utf-8")
    [orphan] = RecoveryStore(tmp_path).orphans()
    assert orphan.project is None
    assert problem.lower() in (orphan.problem or "").lower()
    orphan.leave()
    assert (tmp_path / "0123.json").read_text(encoding="utf-8") == text


def test_orphans_come_newest_first(tmp_path):
    for name, hour in (("a", 9), ("b", 11), ("c", 10)):
        document = {"format": "privelet-recovery", "version": 1, "saved_at": f"2026-12-01T{hour:02d}:00:00+00:00",
                    "project_path": None, "project": project_to_json(PROJECT)}
        (tmp_path / f"{name}.json").write_text(json.dumps(document), encoding="utf-8")
    orphans = RecoveryStore(tmp_path).orphans()
    assert [o.path.stem for o in orphans] == ["b", "c", "a"], [o.problem for o in orphans]
    for orphan in orphans:
        orphan.leave()


def test_the_folder_is_the_environments_or_the_users_data_folder(tmp_path, monkeypatch):
    monkeypatch.setenv(RECOVERY_ENVIRONMENT, str(tmp_path / "elsewhere"))
    assert recovery_folder() == tmp_path / "elsewhere"
    assert RecoveryStore().folder == tmp_path / "elsewhere"
    monkeypatch.delenv(RECOVERY_ENVIRONMENT)
    import platformdirs

    assert recovery_folder() == platformdirs.user_data_path("privelet-studio", appauthor=False) / "recovery"


def _release(epsilon: float = 0.5) -> Any:
    import numpy as np

    from privelet_gui.engine import ReleaseSpec

    spec = ReleaseSpec(PROJECT.schema, epsilon, "privelet+", ())
    return spec.run(np.arange(100, dtype=np.float64) % 7, rng=np.random.default_rng(3))


def _crash(slot: Any, folder: Path) -> None:
    """Leave the slot's files as a killed app leaves them: unlocked (the lock file gone too)."""
    slot._lock.release()
    (folder / slot._lock.path.name).unlink()


def test_a_release_is_kept_beside_the_project_and_saved_where_asked(tmp_path, private_ledger):
    from privelet_gui.io.ledger import Ledger, TableKeys
    from privelet_gui.io.releases import load_release

    release = _release()
    entry = Ledger().record(TableKeys("f" * 64), release)
    slot = RecoveryStore(tmp_path).slot()
    slot.write(None, None, KeptRelease(release, {"created": "2026-12-01T10:00:00+00:00"}, entry))
    written = slot.release_path.stat().st_mtime_ns
    slot.write(PROJECT, None, KeptRelease(release, {"created": "2026-12-01T10:00:00+00:00"}, entry))
    assert slot.release_path.stat().st_mtime_ns == written  # the same release: not written again
    _crash(slot, tmp_path)

    [orphan] = RecoveryStore(tmp_path).orphans()
    assert orphan.project == PROJECT
    assert orphan.release is not None
    assert (orphan.release.epsilon, orphan.release.mechanism, orphan.release.ledger_entry) == (0.5, release.mechanism, entry)
    assert orphan.release.created == "2026-12-01T10:00:00+00:00"
    orphan.forget_project()  # recovered elsewhere: the copy keeps the release
    orphan.leave()
    [orphan] = RecoveryStore(tmp_path).orphans()
    assert orphan.project is None and orphan.release is not None
    with pytest.raises(OSError, match="the recovery copy itself"):
        orphan.save_release(orphan.release.path)
    assert orphan.release.path.is_file()
    target = tmp_path / "out" / "saved.npz"
    target.parent.mkdir()
    orphan.save_release(target)
    saved = load_release(target)
    assert (saved.noisy == release.noisy).all() and saved.epsilon == release.epsilon
    assert Ledger().entries()[0].output == str(target.resolve())
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]  # nothing left to offer


def test_a_dropped_or_replaced_release_leaves_the_copy(tmp_path):
    slot = RecoveryStore(tmp_path).slot()
    slot.write(PROJECT, None, KeptRelease(_release()))
    first = slot.release_path
    assert first is not None and first.is_file()
    slot.write(PROJECT, None, None)  # exported, or dropped
    assert slot.release_path is None and not first.exists()
    assert json.loads(slot.path.read_text(encoding="utf-8"))["release"] is None
    slot.write(PROJECT, None, KeptRelease(_release(2.0)))
    second = slot.release_path
    slot.write(PROJECT, None, KeptRelease(_release(3.0)))  # another release: a file of its own, the old one goes
    third = slot.release_path
    assert second is not None and third is not None and third != second and not second.exists()
    described = json.loads(slot.path.read_text(encoding="utf-8"))["release"]
    assert (described["file"], described["epsilon"]) == (third.name, 3.0)
    slot.discard()
    assert list(tmp_path.iterdir()) == []


def test_a_copy_whose_release_file_is_missing_says_so(tmp_path):
    slot = RecoveryStore(tmp_path).slot()
    slot.write(PROJECT, None, KeptRelease(_release()))
    slot.release_path.unlink()
    _crash(slot, tmp_path)
    [orphan] = RecoveryStore(tmp_path).orphans()
    assert orphan.project is None and orphan.release is None and not orphan.holds_work
    assert "release file" in (orphan.problem or "") and "missing" in (orphan.problem or "")
    orphan.leave()
    assert slot.path.is_file()  # kept: never deleted without the user's word
