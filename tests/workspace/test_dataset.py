"""The dataset a custodian names in the app: kept in the project, undoable, checked, and used by
the privacy ledger both when it looks up what the table has spent and when it records a release."""

from __future__ import annotations

import pytest

from privelet_gui import io as pio
from privelet_gui.io.ledger import Ledger, LedgerError
from privelet_gui.io.project import ProjectError, project_from_json, project_to_json
from privelet_gui.workspace import Workspace, run_release
from privelet_gui.workspace.jobs import check_table_budget


def test_a_named_dataset_is_checked_undoable_and_kept_in_the_project(workspace, tmp_path):
    assert workspace.dataset is None
    workspace.set_dataset("  Hospital visits 2024 ")
    assert workspace.dataset == "Hospital visits 2024"
    with pytest.raises(LedgerError, match="printable characters"):
        workspace.set_dataset("bad\x07name")
    assert workspace.dataset == "Hospital visits 2024"
    workspace.history.undo()
    assert workspace.dataset is None
    workspace.history.redo()
    stored = project_to_json(workspace.to_project(), tmp_path)
    assert stored["privacy"]["dataset"] == "Hospital visits 2024"
    assert project_from_json(stored, tmp_path).dataset == "Hospital visits 2024"
    stored["privacy"]["dataset"] = 7
    with pytest.raises(ProjectError, match=r"privacy\.dataset"):
        project_from_json(stored, tmp_path)
    workspace.set_dataset("")
    assert workspace.dataset is None


def test_the_ledger_counts_every_file_of_a_named_dataset_as_one_table(workspace, sample_summary, tmp_path):
    workspace.set_privacy(mechanism="privelet+")
    workspace.set_dataset("Census extract")
    job = workspace.release_job()
    assert job.dataset == "Census extract" and job.choices().dataset == "Census extract"
    first = run_release(job, ask=lambda check: True)
    assert Ledger().entries()[0].dataset == "Census extract" and first.ledger_entry is not None
    # another file with other rows, of the same dataset, has spent what the first did
    other = tmp_path / "other.csv"
    pio.read_table(sample_summary.path).head(100).to_csv(other, index=False)
    named = check_table_budget(other, 1.0, "replace", dataset="Census extract")
    assert named.spent.epsilon == {"replace": 1.0} and named.must_ask
    unnamed = check_table_budget(other, 1.0, "replace")
    assert unnamed.spent.epsilon == {} and not unnamed.must_ask
    # the workspace looks the budget up again when its dataset changes (an undo included)
    workspace.set_table_budget(workspace.table_path, named, "Census extract")
    assert not workspace.needs_budget_lookup()
    workspace.set_dataset("Another dataset")
    assert workspace.needs_budget_lookup()
    workspace.history.undo()
    assert not workspace.needs_budget_lookup()


def test_a_fresh_workspace_names_no_dataset():
    assert Workspace().dataset is None
