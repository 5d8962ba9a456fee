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

import pytest

from privelet_gui.engine import OrdinalAttribute, Schema
from privelet_gui.io.project import Project, project_to_json
from privelet_gui.io.recovery import RECOVERY_ENVIRONMENT, RecoveryStore, recovery_folder

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
    assert orphan.project == PROJECT
    assert orphan.project_path == Path("/work/census.privelet")
    assert orphan.problem is None
    assert orphan.saved_at is not None and abs(datetime.now(UTC) - orphan.saved_at) < timedelta(minutes=5)
    # claimed: a second app starting meanwhile does not offer it too
    assert RecoveryStore(tmp_path).orphans() == []
    orphan.release()
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
    orphan.release()
    assert (tmp_path / "0123.json").read_text(encoding="utf-8") == text


def test_orphans_come_newest_first(tmp_path):
    for name, hour in (("a", 9), ("b", 11), ("c", 10)):
        document = {"format": "privelet-recovery", "version": 1, "saved_at": f"2026-12-01T{hour:02d}:00:00+00:00",
                    "project_path": None, "project": project_to_json(PROJECT)}
        (tmp_path / f"{name}.json").write_text(json.dumps(document), encoding="utf-8")
    orphans = RecoveryStore(tmp_path).orphans()
    assert [o.path.stem for o in orphans] == ["b", "c", "a"], [o.problem for o in orphans]
    for orphan in orphans:
        orphan.release()


def test_the_folder_is_the_environments_or_the_users_data_folder(tmp_path, monkeypatch):
    monkeypatch.setenv(RECOVERY_ENVIRONMENT, str(tmp_path / "elsewhere"))
    assert recovery_folder() == tmp_path / "elsewhere"
    assert RecoveryStore().folder == tmp_path / "elsewhere"
    monkeypatch.delenv(RECOVERY_ENVIRONMENT)
    import platformdirs

    assert recovery_folder() == platformdirs.user_data_path("privelet-studio", appauthor=False) / "recovery"
