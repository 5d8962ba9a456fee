"""The recovery rule: a copy exactly while closing would ask about unsaved work."""

from __future__ import annotations

import json

from privelet_gui.io.project import project_from_json
from privelet_gui.io.recovery import RecoveryStore
from privelet_gui.workspace import RecoveryKeeper, Workspace


def _kept(keeper: RecoveryKeeper) -> dict | None:
    return json.loads(keeper.slot.path.read_text(encoding="utf-8")) if keeper.slot.exists else None


def test_a_copy_is_kept_exactly_while_there_is_unsaved_work(workspace, tmp_path):
    keeper = RecoveryKeeper(workspace, RecoveryStore(tmp_path))
    assert workspace.has_unsaved_work  # a table just read: closing would ask
    assert keeper.update() is None
    kept = _kept(keeper)
    assert kept is not None
    assert project_from_json(kept["project"]) == workspace.to_project()

    workspace.mark_saved(tmp_path / "census.privelet")
    assert not workspace.has_unsaved_work
    assert keeper.update() is None
    assert _kept(keeper) is None  # saved: no copy

    workspace.set_epsilon(0.25)
    assert keeper.update() is None
    kept = _kept(keeper)
    assert kept is not None
    assert kept["project"]["privacy"]["epsilon"] == 0.25
    assert kept["project_path"] == str(tmp_path / "census.privelet")

    workspace.history.undo()  # back to what the file holds
    assert not workspace.has_unsaved_work
    keeper.update()
    assert _kept(keeper) is None

    workspace.set_epsilon(0.5)
    keeper.update()
    assert _kept(keeper) is not None
    keeper.close()
    assert _kept(keeper) is None
    assert list(tmp_path.iterdir()) == []


def test_no_table_no_copy(tmp_path):
    workspace = Workspace()
    workspace.mark_dirty()
    keeper = RecoveryKeeper(workspace, RecoveryStore(tmp_path / "recovery"))
    assert keeper.update() is None
    assert not (tmp_path / "recovery").exists()


def test_a_folder_that_cannot_be_written_is_reported_not_raised(workspace, tmp_path):
    blocked = tmp_path / "recovery"
    blocked.write_text("a file where the folder should be", encoding="utf-8")
    keeper = RecoveryKeeper(workspace, RecoveryStore(blocked))
    problem = keeper.update()
    assert problem is not None and str(blocked) in problem
    assert workspace.has_unsaved_work  # the work itself is untouched
    keeper.close()


def test_a_release_no_file_holds_is_in_the_copy_until_it_is_saved(workspace, tmp_path):
    from privelet_gui.workspace import run_release

    keeper = RecoveryKeeper(workspace, RecoveryStore(tmp_path))
    workspace.mark_saved(tmp_path / "census.privelet")
    assert keeper.snapshot() is None
    outcome = run_release(workspace.release_job(), ask=lambda check: False)  # a fresh ledger: nothing to ask
    workspace.set_release_outcome(outcome)
    snapshot = keeper.snapshot()
    assert snapshot is not None
    project, path, kept = snapshot
    assert project is None and path == tmp_path / "census.privelet"  # the project is saved
    assert kept is not None and kept.release is outcome.release and kept.ledger_entry == outcome.ledger_entry
    assert kept.metadata["created"] == outcome.finished_at
    keeper.keep(snapshot)
    assert _kept(keeper)["release"]["ledger_entry"] == outcome.ledger_entry
    workspace.mark_release_saved(tmp_path / "release.npz")
    assert keeper.snapshot() is None
    keeper.update()
    assert list(tmp_path.iterdir()) == []


def test_a_release_that_cannot_be_signed_is_reported_not_raised(workspace, tmp_path):
    from privelet_gui.io.signing import signing_key_path
    from privelet_gui.workspace import run_release

    keeper = RecoveryKeeper(workspace, RecoveryStore(tmp_path))
    workspace.set_release_outcome(run_release(workspace.release_job(), ask=lambda check: False))
    signing_key_path().write_text("damaged", encoding="ascii")  # the ledger (and the key beside it) exist now
    problem = keeper.update()
    assert problem is not None and "release signing key" in problem and "move it away" in problem
    assert workspace.outcome is not None  # the release in the window is untouched
    keeper.close()
