"""Atomic writes leave nothing behind: a killed writer's temporary file goes with the next write."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from privelet_gui.io import atomic as atomic_module
from privelet_gui.io import atomic_write
from privelet_gui.io.atomic import remove_abandoned


def _temp(target, pid: int, *, host: str | None = None) -> object:
    path = target.with_name(f".{target.name}.{host or atomic_module._HOST}-{pid}-0123456789ab.tmp")
    path.write_bytes(b"half a release")
    return path


def _dead_pid() -> int:
    """The number of a process that has ended (and been reaped)."""
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def test_temporary_files_name_their_writer(tmp_path):
    target = tmp_path / "out.txt"
    with atomic_write(target, mode="w") as handle:
        seen = [p.name for p in tmp_path.iterdir()]
        handle.write("x")
    assert len(seen) == 1 and seen[0].startswith(".out.txt.") and f"-{os.getpid()}-" in seen[0]
    assert [p.name for p in tmp_path.iterdir()] == ["out.txt"]


def test_the_next_write_removes_what_a_killed_writer_left_and_keeps_running_writers_files(tmp_path):
    target = tmp_path / "release.npz"
    dead = _temp(target, _dead_pid())
    other_target = _temp(tmp_path / "other.npz", _dead_pid())
    with subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"]) as running:
        try:
            alive = _temp(target, running.pid)
            elsewhere = _temp(target, _dead_pid(), host="00000000")  # another machine's process
            mine = _temp(target, os.getpid())  # this process writes it right now (another thread)
            with atomic_write(target, mode="w") as handle:
                handle.write("complete")
            assert target.read_text() == "complete"
            assert not dead.exists()
            assert alive.exists() and elsewhere.exists() and mine.exists() and other_target.exists()
        finally:
            running.kill()
    running.wait()
    assert remove_abandoned(target) == [alive]  # its writer is gone now


def test_old_style_temporary_files_are_removed_once_untouched_for_an_hour(tmp_path):
    target = tmp_path / "export.csv"
    old = target.with_name(f".{target.name}.0123456789ab.tmp")
    recent = target.with_name(f".{target.name}.ba9876543210.tmp")
    for path in (old, recent):
        path.write_text("partial")
    an_hour_ago = time.time() - 3700
    os.utime(old, (an_hour_ago, an_hour_ago))
    unrelated = tmp_path / ".export.csv.notes.tmp"
    unrelated.write_text("not ours")
    assert remove_abandoned(target) == [old]
    assert recent.exists() and unrelated.exists()


@pytest.mark.skipif(os.name != "posix", reason="process numbers are checked on POSIX only")
def test_a_process_of_another_user_counts_as_running():
    assert atomic_module._process_alive(1)  # init: exists, whoever we are
    assert not atomic_module._process_alive(_dead_pid())
