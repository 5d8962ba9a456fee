"""Unsaved work survives a crash: the window keeps a copy, the next start offers it back."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from privelet_gui import io as pio
from privelet_gui.io.recovery import RecoveryStore, recovery_folder


def _copies(folder: Path) -> dict[str, dict[str, Any]]:
    return {p.stem: json.loads(p.read_text(encoding="utf-8")) for p in folder.glob("*.json")} if folder.is_dir() else {}


def _kept_epsilon(folder: Path) -> float | None:
    copies = list(_copies(folder).values())
    return copies[0]["project"]["privacy"]["epsilon"] if len(copies) == 1 else None


def test_the_window_keeps_a_copy_of_unsaved_work_until_it_is_saved(sample_window, dialogs, qtbot, tmp_path):
    folder = recovery_folder()
    window = sample_window
    window.document.set_epsilon(0.3)
    qtbot.waitUntil(lambda: _kept_epsilon(folder) == 0.3, timeout=10_000)
    window.document.set_epsilon(0.4)
    qtbot.waitUntil(lambda: _kept_epsilon(folder) == 0.4, timeout=10_000)  # the copy follows each change
    dialogs.save_path_answer = tmp_path / "census.privelet"
    assert window.save_project_as()
    qtbot.waitUntil(lambda: _copies(folder) == {}, timeout=10_000)  # saved: no copy
    window.document.set_epsilon(0.5)
    qtbot.waitUntil(lambda: _kept_epsilon(folder) == 0.5, timeout=10_000)
    [copy] = _copies(folder).values()
    assert copy["project_path"] == str(tmp_path / "census.privelet")
    window.close()  # the custodian discards the changes (FakeDialogs): no copy is left
    assert dialogs.asked[-1] == "closing"
    assert _copies(folder) == {}


def _crashing_app(work: str, kept: str) -> str:
    """A script: an app (offscreen) opens the sample, does ``work``, waits until the copy in the
    recovery folder (``folder``) passes ``kept``, says "kept" and is killed (a crash)."""
    return textwrap.dedent(
        """
        import os, signal, sys, time
        from pathlib import Path
        from PySide6.QtWidgets import QApplication
        from privelet_gui.gui.dialogs import HeadlessDialogs
        from privelet_gui.gui.main_window import MainWindow

        app = QApplication([])
        window = MainWindow()
        window.dialogs = HeadlessDialogs()
        window.show()
        loaded, finished = [], []
        window.tableLoaded.connect(loaded.append)
        window.releaseFinished.connect(finished.append)
        window.open_sample()
        while not loaded:
            app.processEvents(); time.sleep(0.01)
        folder = Path(sys.argv[1])

        def copy():
            files = list(folder.glob("*.json"))
            return files[0].read_text() if len(files) == 1 else ""
        """
    ) + textwrap.dedent(work) + textwrap.dedent(
        f"""
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not ({kept}):
            app.processEvents(); time.sleep(0.01)
        print("kept", flush=True)
        os.kill(os.getpid(), signal.SIGKILL)  # a crash: nothing runs after this
        """
    )


_CRASHING_APP = _crashing_app(
    """
    window.document.set_epsilon(0.37)
    window.document.set_sa(["sex"])
    """,
    '"0.37" in copy()',
)
_CRASHING_RELEASE = _crashing_app(
    """
    window.document.set_privacy(mechanism="privelet+")  # released at once, with no strategy to choose first
    window.document.set_epsilon(0.37)
    window.run_release()
    """,
    'finished and list(folder.glob("*.npz")) and \'"ledger_entry": 1\' in copy()',
)


@pytest.mark.skipif(os.name != "posix", reason="the app kills itself with SIGKILL")
def test_the_work_of_a_killed_app_is_offered_back_and_recovered(window, dialogs, qtbot):
    folder = recovery_folder()
    result = subprocess.run([sys.executable, "-c", _CRASHING_APP, str(folder)], capture_output=True, text=True,
                            timeout=180, env={**os.environ, "QT_QPA_PLATFORM": "offscreen"})
    assert result.stdout.strip() == "kept", result.stderr
    assert result.returncode == -9
    [orphan_name] = _copies(folder)

    dialogs.choices["recover"] = "recover"
    with qtbot.waitSignal(window.projectOpened, timeout=30_000):
        assert window.offer_recovery()
    assert "recover" in dialogs.asked
    document = window.document
    assert document.epsilon == 0.37
    assert document.sa == ("sex",)
    assert document.summary is not None and document.summary.path == pio.sample_table_path()
    assert document.has_unsaved_work and document.project_path is None
    assert window.isWindowModified()
    copies = _copies(folder)
    assert orphan_name not in copies  # the old copy is gone: this window's own copy holds the work
    assert [c["project"]["privacy"]["epsilon"] for c in copies.values()] == [0.37]
    assert not window.offer_recovery()  # nothing left to offer


def _orphan(folder: Path, workspace_epsilon: float, project_path: Path | None = None, name: str = "crash") -> Path:
    """A copy no running app holds (as a crashed app leaves it): a slot's file under another name."""
    from privelet_gui.io.project import Project

    slot = RecoveryStore(folder).slot()
    slot.write(Project(table_path=pio.sample_table_path(), schema=pio.load_schema(pio.sample_schema_path()),
                       epsilon=workspace_epsilon), project_path)
    orphan = folder / f"{name}.json"
    shutil.copyfile(slot.path, orphan)
    slot.discard()
    return orphan


def test_not_now_keeps_the_copy_and_discard_deletes_it(window, dialogs):
    folder = recovery_folder()
    orphan = _orphan(folder, 0.2)
    assert not window.offer_recovery()  # FakeDialogs answers the last choice: "Not now"
    assert "recover" in dialogs.asked
    assert orphan.is_file() and window.document.summary is None
    dialogs.choices["recover"] = "discard"
    assert not window.offer_recovery()
    assert not orphan.exists()
    assert window.document.summary is None
    dialogs.asked.clear()
    assert not window.offer_recovery()
    assert "recover" not in dialogs.asked  # nothing to offer: no question


def test_recovering_over_unsaved_work_asks_first(sample_window, dialogs, qtbot):
    folder = recovery_folder()
    window = sample_window
    window.document.set_epsilon(0.9)
    orphan = _orphan(folder, 0.2)
    dialogs.choices["recover"] = "recover"
    dialogs.save_answer = "cancel"
    assert not window.offer_recovery()
    assert window.document.epsilon == 0.9 and orphan.is_file()  # nothing replaced, nothing lost


def test_the_question_names_the_project_its_table_and_the_other_copies(window, dialogs, qtbot, tmp_path):
    folder = recovery_folder()
    _orphan(folder, 0.2, name="older")
    qtbot.wait(1100)  # copies are stamped to the second: this one is newer
    _orphan(folder, 0.3, tmp_path / "census.privelet", name="newer")
    assert not window.offer_recovery()  # "Not now"
    text = dialogs.texts["recover"]
    assert "unsaved changes to the project census.privelet (table adult.csv.gz)" in text
    assert f"1 other copy of unsaved work is kept in {folder}" in text
    dialogs.choices["recover"] = "recover"
    with qtbot.waitSignal(window.projectOpened, timeout=30_000):
        assert window.offer_recovery()
    assert window.document.epsilon == 0.3  # the newest
    assert window.document.project_path == tmp_path / "census.privelet"  # Save goes to the project's file
    assert window.document.has_unsaved_work


def test_a_copy_that_cannot_be_written_is_said_in_the_status_bar(sample_window, qtbot, tmp_path):
    from privelet_gui.workspace import RecoveryKeeper

    blocked = tmp_path / "recovery"
    blocked.write_text("a file where the folder should be", encoding="utf-8")
    window = sample_window
    window.recovery = RecoveryKeeper(window.document, RecoveryStore(blocked))
    window.document.set_epsilon(0.6)
    qtbot.waitUntil(lambda: "Cannot keep a copy of the unsaved work in" in window.statusBar().currentMessage(),
                    timeout=10_000)
    assert str(blocked) in window.statusBar().currentMessage()
    assert window.document.epsilon == 0.6 and window.document.has_unsaved_work


def _release_part(folder: Path) -> dict[str, Any] | None:
    copies = list(_copies(folder).values())
    return copies[0]["release"] if len(copies) == 1 else None


def test_a_release_no_file_holds_is_kept_until_it_is_exported(sample_window, dialogs, qtbot, tmp_path):
    folder = recovery_folder()
    window = sample_window
    dialogs.save_path_answer = tmp_path / "census.privelet"
    assert window.save_project_as()  # the project is saved: only the release will be at risk
    with qtbot.waitSignal(window.releaseFinished, timeout=60_000):
        assert window.run_release()
    qtbot.waitUntil(lambda: _release_part(folder) is not None, timeout=30_000)
    [copy] = _copies(folder).values()
    assert copy["project"] is None  # saved already
    kept = copy["release"]
    assert kept["epsilon"] == 1.0 and kept["mechanism"] == "strategies" and isinstance(kept["ledger_entry"], int)
    outcome = window.document.outcome
    copied = pio.load_release(folder / kept["file"])
    assert (copied.noisy == outcome.release.noisy).all() and copied.epsilon == outcome.release.epsilon
    window.document.set_epsilon(0.5)  # a change of settings does not write the release again
    written = (folder / kept["file"]).stat().st_mtime_ns
    qtbot.waitUntil(lambda: [c["project"] is not None for c in _copies(folder).values()] == [True], timeout=10_000)
    assert (folder / kept["file"]).stat().st_mtime_ns == written
    with qtbot.waitSignal(window.exportFinished, timeout=60_000):
        window.export_release("release", tmp_path / "release.npz")
    qtbot.waitUntil(lambda: _release_part(folder) is None and not list(folder.glob("*.npz")), timeout=10_000)
    assert _copies(folder)  # the unsaved epsilon change is still kept


@pytest.mark.skipif(os.name != "posix", reason="the app kills itself with SIGKILL")
def test_the_release_of_a_killed_app_is_saved_where_the_custodian_says(window, dialogs, qtbot, tmp_path):
    from privelet_gui.io.ledger import Ledger

    folder = recovery_folder()
    result = subprocess.run([sys.executable, "-c", _CRASHING_RELEASE, str(folder)], capture_output=True, text=True,
                            timeout=240, env={**os.environ, "QT_QPA_PLATFORM": "offscreen"})
    assert result.stdout.strip() == "kept" and result.returncode == -9, result.stderr
    [copy] = _copies(folder).values()
    released = pio.load_release(folder / copy["release"]["file"])
    [entry] = Ledger().entries()
    assert entry.output is None  # the ledger has it as spent, with no file

    # first start: the project is recovered, the release's save dialog is declined
    dialogs.choices["recover"] = "recover"
    dialogs.save_path_answer = None
    with qtbot.waitSignal(window.projectOpened, timeout=30_000):
        assert window.offer_recovery()
    assert "a release no file holds (Privelet+, epsilon 0.37, already spent)" in dialogs.texts["recover"]
    assert window.document.epsilon == 0.37 and window.document.has_unsaved_work
    assert "The release stays in the copy, offered again at the next start." in window.statusBar().currentMessage()
    qtbot.waitUntil(lambda: len(_copies(folder)) == 2, timeout=10_000)  # this window's copy, and the release's
    [left] = [c for c in _copies(folder).values() if c["release"] is not None]
    assert left["project"] is None  # the project part was recovered

    # next start: only the release is offered; saved where the custodian says, noted in the ledger
    target = tmp_path / "saved.npz"
    dialogs.save_path_answer = target
    with qtbot.waitSignal(window.tasks.lane("recovered release").succeeded, timeout=30_000):
        assert window.offer_recovery()
    assert "an unsaved project" not in dialogs.texts["recover"]
    saved = pio.load_release(target)
    assert (saved.noisy == released.noisy).all() and saved.epsilon == 0.37
    assert Ledger().entries()[0].output == str(target.resolve())
    assert not list(folder.glob("*.npz"))
    assert [c["release"] for c in _copies(folder).values()] == [None]  # only this window's own copy
    assert "Saved the recovered release to saved.npz" in window.statusBar().currentMessage()
