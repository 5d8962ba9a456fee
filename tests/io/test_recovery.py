"""Copies of unsaved work: a running app's copy is its own, a crashed app's is offered back once."""

from __future__ import annotations

import json
import os
import re
import signal
import stat
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


def _orphan_with_release(folder: Path, epsilon: float = 0.5, entry: int | None = None) -> Path:
    """A crashed app's copy holding a release (and its ledger entry); its description's path."""
    slot = RecoveryStore(folder).slot()
    slot.write(None, None, KeptRelease(_release(epsilon), {"created": "2026-12-01T10:00:00+00:00"}, entry))
    _crash(slot, folder)
    return slot.path


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="makes a FIFO")
@pytest.mark.parametrize("kind", ["folder", "fifo"])
def test_a_lock_that_is_not_a_file_leaves_its_copy_alone(tmp_path, kind):
    copy = _orphan_with_release(tmp_path)
    lock = copy.with_suffix(".lock")
    if kind == "folder":
        lock.mkdir()
    else:
        os.mkfifo(lock)
    before = sorted(p.name for p in tmp_path.iterdir())
    assert RecoveryStore(tmp_path).orphans() == []  # no exception: the copy cannot be claimed, so it is not offered
    assert sorted(p.name for p in tmp_path.iterdir()) == before
    assert (lock.is_dir() if kind == "folder" else stat.S_ISFIFO(lock.stat().st_mode))
    other = _orphan_with_release(tmp_path, 2.0)  # the other copies are offered as before
    [orphan] = RecoveryStore(tmp_path).orphans()
    assert orphan.path == other and orphan.release is not None and orphan.release.epsilon == 2.0
    orphan.leave()


@pytest.mark.parametrize(
    ("edit", "problem"),
    [
        ({"epsilon": 8.0}, r"its description \(epsilon 8.0, mechanism 'privelet'\) does not match its release file \(epsilon 0.5, "),
        ({"mechanism": "basic"}, "does not match its release file"),
        ({"file": "other-1.npz"}, r"its release file 'other-1.npz' is not one of this copy's \(.*-<n>.npz\)"),
        ({"file": "../elsewhere-1.npz"}, "is not one of this copy's"),
    ],
)
def test_an_edited_description_is_not_trusted(tmp_path, edit, problem):
    copy = _orphan_with_release(tmp_path)
    other = _orphan_with_release(tmp_path / "x", 8.0)  # a release file another copy holds
    (tmp_path / "other-1.npz").write_bytes(next(other.parent.glob("*.npz")).read_bytes())
    document = json.loads(copy.read_text(encoding="utf-8"))
    document["release"].update(edit)
    copy.write_text(json.dumps(document), encoding="utf-8")
    [orphan] = RecoveryStore(tmp_path).orphans()
    assert orphan.release is None and not orphan.holds_work
    assert re.search(problem, orphan.problem or ""), orphan.problem
    orphan.leave()
    assert json.loads(copy.read_text(encoding="utf-8")) == document  # kept as it is, for the user to look at


def test_the_release_facts_come_from_its_file(tmp_path):
    copy = _orphan_with_release(tmp_path)
    document = json.loads(copy.read_text(encoding="utf-8"))
    document["release"]["created"] = "1999-01-01T00:00:00+00:00"
    copy.write_text(json.dumps(document), encoding="utf-8")
    [orphan] = RecoveryStore(tmp_path).orphans()
    assert orphan.release is not None and orphan.release.created == "2026-12-01T10:00:00+00:00"
    orphan.leave()


def test_a_ledger_entry_of_another_release_is_left_as_it_was(tmp_path):
    from privelet_gui.engine import PriveletError
    from privelet_gui.io.ledger import Ledger, TableKeys

    ledger = Ledger()
    theirs = ledger.record(TableKeys("a" * 64), _release(3.0))  # another release, not yet written
    ours = ledger.record(TableKeys("b" * 64), _release(0.5))
    copy = _orphan_with_release(tmp_path, 0.5, ours)
    document = json.loads(copy.read_text(encoding="utf-8"))
    document["release"]["ledger_entry"] = theirs  # edited: saving would note this file as that release's
    copy.write_text(json.dumps(document), encoding="utf-8")
    [orphan] = RecoveryStore(tmp_path).orphans()
    assert orphan.release is not None and orphan.release.ledger_entry == theirs
    target = tmp_path / "saved.npz"
    with pytest.raises(PriveletError, match=rf"wrote saved.npz, but left the privacy ledger as it was: the copy names "
                                            rf"ledger entry {theirs}, which records another release \(epsilon 3"):
        orphan.save_release(target)
    assert target.is_file()  # the work is saved all the same
    assert [entry.output for entry in ledger.entries()] == [None, None]


@pytest.mark.parametrize("case", ["missing", "written"])
def test_a_ledger_entry_that_is_gone_or_already_written_is_left_as_it_was(tmp_path, case):
    from privelet_gui.engine import PriveletError
    from privelet_gui.io.ledger import Ledger, TableKeys

    ledger = Ledger()
    entry = ledger.record(TableKeys("b" * 64), _release(0.5))
    if case == "written":
        ledger.set_output(entry, tmp_path / "first.npz")
    _orphan_with_release(tmp_path, 0.5, entry if case == "written" else entry + 1)
    [orphan] = RecoveryStore(tmp_path).orphans()
    expected = f"notes this release as written to {tmp_path / 'first.npz'} already" if case == "written" else (
        f"names ledger entry {entry + 1}, which the ledger does not hold")
    with pytest.raises(PriveletError, match=re.escape(expected)):
        orphan.save_release(tmp_path / "saved.npz")
    assert [e.output for e in ledger.entries()] == [str(tmp_path / "first.npz") if case == "written" else None]


def test_save_goes_only_to_a_project_file_the_copy_names(tmp_path):
    from privelet_gui.io.project import save_project

    (tmp_path / "notes.txt").write_text("the user's notes", encoding="utf-8")
    save_project(PROJECT, tmp_path / "census.json")  # a project file under another name: still one
    cases = {
        str(tmp_path / "notes.txt"): None,  # edited to another file: Save would overwrite it
        str(tmp_path): None,  # a folder
        "census.privelet": None,  # relative: to where?
        str(tmp_path / "census.json"): tmp_path / "census.json",
        str(tmp_path / "new.privelet"): tmp_path / "new.privelet",  # saved, then moved or deleted
        str(tmp_path / "new.txt"): None,
    }
    for where, expected in cases.items():
        folder = tmp_path / "recovery"
        slot = RecoveryStore(folder).slot()
        slot.write(PROJECT, None)
        _crash(slot, folder)
        document = json.loads(slot.path.read_text(encoding="utf-8"))
        document["project_path"] = where
        slot.path.write_text(json.dumps(document), encoding="utf-8")
        [orphan] = RecoveryStore(folder).orphans()
        assert orphan.problem is None and orphan.project == PROJECT
        assert orphan.project_path == expected, where
        orphan.discard()
    assert (tmp_path / "notes.txt").read_text(encoding="utf-8") == "the user's notes"
