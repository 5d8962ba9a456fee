"""The release job and the privacy ledger without Qt: asked once counted, recorded as the noise
is drawn, a point of no return for cancel; the workspace's ledger lines and its sampler."""

from __future__ import annotations

import pytest

from privelet_gui.engine import Cancelled, ReleaseSpec
from privelet_gui.io.ledger import BudgetCheck, Ledger, Reservation
from privelet_gui.io.project import project_from_json, project_to_json
from privelet_gui.workspace import Workspace, run_release
from privelet_gui.workspace.jobs import ReleaseControl, check_table_budget


def never(check: BudgetCheck) -> bool:
    raise AssertionError(f"asked, though the table has spent {check.spent}")


def test_a_release_is_recorded_as_its_noise_is_drawn_and_asked_about_once_spent(workspace):
    job = workspace.release_job()
    first = run_release(job, ask=never)  # a fresh ledger: nothing to ask
    entries = Ledger().entries()
    assert [(e.id, e.epsilon, e.output) for e in entries] == [(first.ledger_entry, 1.0, None)]
    assert entries[0].row_fingerprint is not None  # its rows were fingerprinted as they were counted
    assert first.spent_after == Ledger().spent(entries[0].keys)
    assert first.budget is not None and not first.budget.must_ask
    asked: list[BudgetCheck] = []
    second = run_release(job, ask=lambda check: asked.append(check) or True)
    assert [check.spent.epsilon for check in asked] == [{"replace": 1.0}]
    assert second.spent_after.epsilon == {"replace": 2.0} and len(Ledger().entries()) == 2


def test_refusing_draws_no_noise(workspace, monkeypatch):
    job = workspace.release_job()
    run_release(job, ask=never)
    drawn: list[object] = []
    run = ReleaseSpec.run
    monkeypatch.setattr(ReleaseSpec, "run", lambda self, *a, **k: drawn.append(self) or run(self, *a, **k))
    with pytest.raises(Cancelled):
        run_release(job, ask=lambda check: False)
    assert drawn == [] and len(Ledger().entries()) == 1


def test_a_cancel_before_the_noise_is_drawn_records_nothing(workspace):
    control = ReleaseControl()
    assert control.cancel()  # the release will stop
    with pytest.raises(Cancelled):
        run_release(workspace.release_job(), ask=never, control=control)
    assert Ledger().entries() == [] and not control.committed


def test_a_cancel_after_the_noise_is_drawn_only_skips_measuring(workspace, monkeypatch):
    control = ReleaseControl()
    mark_drawn = Reservation.mark_drawn

    def drawn_then_cancel(self: Reservation) -> None:
        mark_drawn(self)
        assert not control.cancel()  # too late: the release goes on

    monkeypatch.setattr(Reservation, "mark_drawn", drawn_then_cancel)
    outcome = run_release(workspace.release_job(), ask=never, control=control)
    assert control.committed and outcome.preview is None  # measuring the error was skipped
    assert [e.id for e in Ledger().entries()] == [outcome.ledger_entry]
    measured = run_release(workspace.release_job(), ask=lambda check: True, control=ReleaseControl())
    assert measured.preview is not None  # without a cancel it is measured


def test_the_workspace_says_what_the_table_has_spent(workspace, sample_summary):
    assert workspace.needs_budget_lookup()
    assert workspace.spending_text() == "looking up what this table has spent..."
    path = sample_summary.path
    workspace.set_table_budget(path, check_table_budget(path, 0.3, "add-remove"))
    assert not workspace.needs_budget_lookup()
    check = workspace.budget_check()
    assert (check.epsilon, check.neighbours) == (1.0, "replace")  # follows the settings, not the lookup's
    assert workspace.spending_text() == "first release of this table: afterwards it will have spent epsilon 1 (replace)."
    workspace.set_release_outcome(run_release(workspace.release_job(), ask=never))
    workspace.set_epsilon(0.5)
    assert workspace.spending_text() == (
        "this table has already spent epsilon 1 (replace) in 1 release; a release at these settings brings it to "
        "epsilon 1.5 (replace) (you are asked before its noise is drawn)."
    )
    assert "not saved yet" in workspace.release_ledger_text()
    workspace.mark_release_saved(path.parent / "r.npz")
    assert f"saved to {path.parent / 'r.npz'}" in workspace.release_ledger_text()
    workspace.set_table_budget(path.parent / "another.csv", "ignored")  # not the open table
    assert "already spent" in workspace.spending_text()
    workspace.set_table_budget(path, "the ledger is damaged")
    assert workspace.spending_text() == "cannot look up what this table has spent (the ledger is damaged)."
    workspace.set_table(sample_summary)
    assert workspace.needs_budget_lookup()  # a table read anew is looked up again


def test_the_sampler_is_an_undoable_privacy_setting_saved_with_the_project(workspace):
    workspace.set_sampler("standard")
    assert workspace.release_spec().sampler == "standard" and workspace.release_job().spec.sampler == "standard"
    workspace.history.undo()
    assert workspace.sampler == "exact"
    workspace.history.redo()
    project = project_from_json(project_to_json(workspace.to_project()))
    assert project.sampler == "standard"
    again = Workspace()
    again.apply_project(project, None, None)
    assert again.sampler == "standard"
    workspace.set_sampler("fast")
    assert workspace.release_spec() is None  # refused by the spec, like any invalid setting
