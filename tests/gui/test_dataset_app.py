"""The Release step's dataset field: a name typed there is the workspace's (undoable, saved with
the project); a name the ledger refuses is not kept and the field says why."""

from __future__ import annotations


def test_typing_a_dataset_names_it_and_a_bad_name_says_why(sample_window, qtbot):
    panel = sample_window.release_panel
    field = panel.dataset
    field.setText("Hospital visits 2024")
    field.editingFinished.emit()
    assert sample_window.document.dataset == "Hospital visits 2024"
    assert panel.dataset_note.isHidden()
    field.setText("x" * 500)
    field.editingFinished.emit()
    assert sample_window.document.dataset == "Hospital visits 2024"
    assert not panel.dataset_note.isHidden() and "Not kept" in panel.dataset_note.text()
    sample_window.document.history.undo()
    qtbot.waitUntil(lambda: field.text() == "")
    assert sample_window.document.dataset is None
