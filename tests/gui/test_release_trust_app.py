"""What the app says about a release file it opens: a failed or missing signature, flags that
disagree, a damaged Zarr folder; and a recovery folder with odd lock files at the app's start."""

from __future__ import annotations

import os
import shutil

import numpy as np
import pytest

from privelet_gui import io as pio
from privelet_gui.engine import Hierarchy, NominalAttribute, OrdinalAttribute, ReleaseSpec, Schema
from privelet_gui.io.recovery import RecoveryStore, recovery_folder
from tests.io.test_release_trust import release_file_metadata, rewrite_release_file

SCHEMA = Schema([OrdinalAttribute.integer_range("age", 0, 9), NominalAttribute("sex", Hierarchy.flat(["F", "M"]))])


def _save(path, epsilon=1.0, seed=None):
    rng = np.random.default_rng(seed) if seed is not None else None
    pio.save_release(ReleaseSpec(SCHEMA, epsilon).run(np.full(SCHEMA.shape, 3.0), rng=rng), path, seed=seed)
    return path


def _open(window, qtbot, path):
    assert window.open_release(path)
    qtbot.waitUntil(lambda: window.release_panel.opened is not None and window.release_panel.opened[0] == path,
                    timeout=20_000)


def test_a_changed_release_file_opens_under_a_warning_and_a_good_one_without(window, qtbot, tmp_path):
    changed, other, good = _save(tmp_path / "changed.npz"), _save(tmp_path / "other.npz", 8.0), _save(tmp_path / "good.npz")
    rewrite_release_file(changed, meta=release_file_metadata(other))  # epsilon relabelled, everything consistent
    panel = window.release_panel
    _open(window, qtbot, changed)
    assert panel.opened_warning.isVisible()
    assert panel.opened_warning.text().startswith(f"{changed} FAILED its signature check")
    assert "Do not publish it" in panel.opened_warning.text()
    assert "Read the warning above it." in window.statusBar().currentMessage()
    _open(window, qtbot, good)
    assert not panel.opened_warning.isVisible() and panel.opened_bar.isVisible()
    rewrite_release_file(good, signature=False)
    _open(window, qtbot, good)
    qtbot.waitUntil(lambda: panel.opened_warning.isVisible(), timeout=5_000)  # the same file, read again
    assert "carries no signature" in panel.opened_warning.text()


def test_a_seeded_file_whose_flag_was_cleared_asks_before_it_is_exported(window, qtbot, dialogs, tmp_path):
    path = _save(tmp_path / "seeded.npz", seed=7)
    meta = release_file_metadata(path)
    meta["seeded"], meta["seed"] = False, None
    rewrite_release_file(path, meta=meta)
    _open(window, qtbot, path)
    panel = window.release_panel
    assert "SEEDED TEST RELEASE" in panel.opened_label.text()
    assert "disagree" in panel.opened_warning.text() and "FAILED its signature check" in panel.opened_warning.text()
    dialogs.seeded_answer = False
    assert not window.export_opened_release("csv", tmp_path / "cells.csv")
    assert dialogs.seeded_asked == ["seeded.npz"] and not (tmp_path / "cells.csv").exists()


def test_a_zarr_release_with_a_missing_chunk_is_a_clear_error(window, qtbot, dialogs, tmp_path):
    pytest.importorskip("zarr")
    from privelet_gui.io.zarr_releases import save_zarr_release

    folder = tmp_path / "r.zarr"
    save_zarr_release(ReleaseSpec(SCHEMA, 1.0).run(np.ones(SCHEMA.shape)), folder, chunks=(5, 2))
    (folder / "noisy" / "c" / "1" / "0").unlink()
    assert window.open_release(folder / "zarr.json")
    qtbot.waitUntil(lambda: bool(dialogs.errors), timeout=20_000)
    [(title, message)] = dialogs.errors
    assert title == "Cannot open the release r.zarr"
    assert "the chunk noisy/c/1/0 of the noisy matrix is missing" in message
    assert window.release_panel.opened is None


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="makes a FIFO")
def test_the_app_starts_when_lock_files_of_the_recovery_folder_are_a_folder_and_a_fifo(qtbot):
    from privelet_gui.gui.app import open_main_window, parse_args
    from privelet_gui.io.project import Project

    folder = recovery_folder()
    for name in ("folder", "fifo"):
        slot = RecoveryStore(folder).slot()
        slot.write(Project(table_path=pio.sample_table_path(), schema=SCHEMA, epsilon=0.2), None)
        shutil.copyfile(slot.path, folder / f"{name}.json")
        slot.discard()
    (folder / "folder.lock").mkdir()
    os.mkfifo(folder / "fifo.lock")
    window = open_main_window(parse_args([]))  # offers the copies it can claim: none
    qtbot.addWidget(window)
    assert window.isVisible() and window.document.summary is None
    assert sorted(p.name for p in folder.iterdir()) == ["fifo.json", "fifo.lock", "folder.json", "folder.lock"]


def _crashed_copy_with_release(folder, epsilon, entry=None):
    """A crashed app's copy holding a release (the slot's lock given up, as a kill leaves it)."""
    from privelet_gui.io.recovery import KeptRelease

    slot = RecoveryStore(folder).slot()
    slot.write(None, None, KeptRelease(ReleaseSpec(SCHEMA, epsilon).run(np.ones(SCHEMA.shape)), {}, entry))
    slot._lock.release()
    slot._lock.path.unlink()
    return slot.path


def test_a_copy_whose_description_was_edited_is_not_offered(window, dialogs, tmp_path):
    import json

    copy = _crashed_copy_with_release(recovery_folder(), 0.5)
    document = json.loads(copy.read_text(encoding="utf-8"))
    document["release"]["epsilon"] = 8.0  # the question would say epsilon 8 for a release of 0.5
    copy.write_text(json.dumps(document), encoding="utf-8")
    assert not window.offer_recovery()
    assert "recover" not in dialogs.asked and copy.is_file()  # not offered, kept as it is


def test_recovering_a_release_whose_ledger_entry_was_edited_leaves_the_ledger_alone(window, dialogs, qtbot, tmp_path):
    import json

    from privelet_gui.io.ledger import Ledger, TableKeys

    ledger = Ledger()
    theirs = ledger.record(TableKeys("a" * 64), ReleaseSpec(SCHEMA, 3.0).run(np.ones(SCHEMA.shape)))
    ours = ledger.record(TableKeys("b" * 64), ReleaseSpec(SCHEMA, 0.5).run(np.ones(SCHEMA.shape)))
    copy = _crashed_copy_with_release(recovery_folder(), 0.5, ours)
    document = json.loads(copy.read_text(encoding="utf-8"))
    document["release"]["ledger_entry"] = theirs
    copy.write_text(json.dumps(document), encoding="utf-8")
    dialogs.choices["recover"] = "recover"
    dialogs.save_path_answer = tmp_path / "recovered.npz"
    assert window.offer_recovery()
    qtbot.waitUntil(lambda: bool(dialogs.errors), timeout=20_000)
    [(title, message)] = dialogs.errors
    assert title == "Cannot save the recovered release to recovered.npz"
    assert f"left the privacy ledger as it was: the copy names ledger entry {theirs}, which records another" in message
    assert (tmp_path / "recovered.npz").is_file()  # the release is saved all the same
    assert [entry.output for entry in ledger.entries()] == [None, None]
