"""Errors come back as a dialog that says what to fix, and the app stays usable."""

from __future__ import annotations

from PySide6.QtCore import QMimeData, QPointF, Qt
from PySide6.QtGui import QDropEvent
from PySide6.QtWidgets import QDialogButtonBox

from privelet_gui import io as pio
from privelet_gui.gui.panels.import_dialog import ImportDialog
from tests.gui.conftest import open_sample

BAD_TABLE = "a;b\n1;2\n3;4;5;6\n"
BAD_HIERARCHY = "Adm-clerical;Other;*\nSales;Other;*\nAdm-clerical;Technical;*\n"


def test_malformed_table_shows_an_error_and_the_app_stays_usable(window, qtbot, tmp_path, dialogs):
    bad = tmp_path / "broken.csv"
    bad.write_text(BAD_TABLE)
    with qtbot.waitSignal(window.tableFailed, timeout=10_000):
        assert window.open_table(bad, pio.TableOptions(delimiter=";"))
    assert len(dialogs.errors) == 1
    title, message = dialogs.errors[0]
    assert "broken.csv" in title
    assert "line 3 has 4 fields" in message and "delimiter" in message  # what to fix
    assert window.document.step_status("data").state == "error"
    assert window.data_panel.empty_error.isVisibleTo(window.data_panel)
    assert not window.runner.busy
    # Still usable: the sample opens and the Data step is complete again.
    open_sample(window, qtbot)
    assert window.document.step_status("data").state == "done"
    assert not window.data_panel.error.isVisibleTo(window.data_panel)


def test_a_picture_renamed_csv_is_reported_as_no_text_table(window, qtbot, tmp_path, dialogs):
    """Issue 39, item 6: the import dialog and the read both say "not a text table", and the
    import dialog offers nothing to read."""
    from tests.io.test_tables import _png_bytes

    picture = tmp_path / "chart.csv"
    picture.write_bytes(_png_bytes())
    dialog = ImportDialog(picture)
    qtbot.addWidget(dialog)
    dialog.show()
    assert dialog.banner.isVisibleTo(dialog) and "chart.csv is not a text table: it looks like a PNG image" in dialog.banner.text()
    assert "delimiter" not in dialog.banner.text()
    assert "with these options" not in dialog.banner.text()  # no option makes a picture a table
    assert not dialog.buttons.button(QDialogButtonBox.StandardButton.Ok).isEnabled()
    with qtbot.waitSignal(window.tableFailed, timeout=10_000):
        assert window.open_table(picture, pio.TableOptions())
    (title, message), = dialogs.errors
    assert "chart.csv" in title and "is not a text table: it looks like a PNG image" in message
    assert "delimiter" not in message


def test_an_unreadable_file_shows_no_empty_suggestion_button(qtbot, tmp_path):
    """The missing-values suggestion (a label and a button) belongs to a readable preview: on a
    file that cannot be read it was left showing, as an empty button (seen in a real window)."""
    bad = tmp_path / "broken.csv"
    bad.write_text("age,sex\n30,M\n40,F,extra\n")
    dialog = ImportDialog(bad)
    qtbot.addWidget(dialog)
    dialog.show()
    assert dialog.banner.isVisibleTo(dialog) and "line 3 has 3 fields" in dialog.banner.text()
    assert not dialog.use_suggestion.isVisibleTo(dialog) and not dialog.suggestion.isVisibleTo(dialog)
    bad.write_text("age,sex\n30,M\nN,F\n")  # readable now, and "N" among the numbers
    dialog.refresh()
    assert dialog.use_suggestion.isVisibleTo(dialog) and dialog.use_suggestion.text() == "Treat 'N' as missing"
    bad.write_text("age,sex\n30,M\n40,F,extra\n")
    dialog.refresh()
    assert not dialog.use_suggestion.isVisibleTo(dialog)


def test_import_dialog_previews_and_reports_bad_options(qtbot, tmp_path):
    good = tmp_path / "people.tsv"
    good.write_text("age\tsex\n30\tF\n41\tM\n")
    dialog = ImportDialog(good)
    qtbot.addWidget(dialog)
    assert dialog.delimiter_value() == "\t"  # detected
    assert dialog.header.isChecked()
    assert list(dialog.model.frame.columns) == ["age", "sex"]
    assert dialog.model.rowCount() == 2
    dialog.header.setChecked(False)  # every change re-reads the preview
    assert list(dialog.model.frame.columns) == ["column_1", "column_2"]
    assert dialog.model.rowCount() == 3
    dialog.encoding.setCurrentText("no-such-codec")
    assert dialog.banner.isVisibleTo(dialog)
    assert "encoding" in dialog.banner.text()
    assert not dialog.buttons.button(QDialogButtonBox.StandardButton.Ok).isEnabled()
    dialog.encoding.setCurrentText("utf-8")
    assert dialog.buttons.button(QDialogButtonBox.StandardButton.Ok).isEnabled()
    assert dialog.options() == pio.TableOptions(delimiter="\t", encoding="utf-8", header=False, format="csv")


def test_malformed_hierarchy_shows_an_error_and_the_app_stays_usable(sample_window, qtbot, tmp_path, dialogs):
    window = sample_window
    bad = tmp_path / "occupation_bad.csv"
    bad.write_text(BAD_HIERARCHY)
    hp = window.hierarchy_panel
    window.go_to("hierarchies")
    assert hp.set_attribute("occupation")
    before = hp.model.to_hierarchy()
    commands = window.document.undo_stack.count()
    assert not hp.import_hierarchy(bad)
    assert len(dialogs.errors) == 1
    assert "occupation_bad.csv" in dialogs.errors[0][0]
    assert "listed twice" in dialogs.errors[0][1]
    assert hp.model.to_hierarchy() == before  # unchanged
    assert window.document.undo_stack.count() == commands
    # Dropping the same file on the window reports it the same way.
    window.open_path(bad)
    assert len(dialogs.errors) == 2
    # Still usable: an edit works and can be undone.
    leaf = hp.model.root.leaves().__next__()
    group = hp.model.add_group([leaf], "Edited")
    assert group is not None and "Edited" in hp.model.to_hierarchy()
    window.act_undo.trigger()
    assert hp.model.to_hierarchy() == before


def test_a_release_error_is_explained_and_recoverable(sample_window, qtbot, tmp_path, dialogs):
    window = sample_window
    # The table disappears after it was read: counting fails with a clear message.
    copy = tmp_path / "adult.csv.gz"
    copy.write_bytes(pio.sample_table_path().read_bytes())
    with qtbot.waitSignal(window.tableLoaded, timeout=30_000):
        window.open_table(copy, pio.sniff_table(copy), keep_settings=True)
    copy.unlink()
    with qtbot.waitSignal(window.releaseFailed, timeout=30_000):
        assert window.run_release()
    assert len(dialogs.errors) == 1
    assert dialogs.errors[0][0] == "The release failed"
    assert "no such file" in dialogs.errors[0][1]
    assert window.document.outcome is None
    assert "Failed" in window.release_panel.progress.format()
    assert window.release_panel.run_button.isEnabled()  # can run again once fixed


def test_a_release_larger_than_the_free_memory_is_refused_and_the_app_stays_usable(
    sample_window, qtbot, dialogs, monkeypatch
):
    from privelet_gui.engine import memory

    window = sample_window
    matrix_bytes = 8 * window.document.schema().size
    # room for the matrix, not for the release's own buffers
    monkeypatch.setattr(memory, "available_memory", lambda: matrix_bytes + (1 << 20))
    with qtbot.waitSignal(window.releaseFailed, timeout=30_000):
        assert window.run_release()
    assert dialogs.errors[0][0] == "The release failed"
    assert "of memory besides the matrix" in dialogs.errors[0][1] and "S_A" in dialogs.errors[0][1]
    assert window.document.outcome is None
    monkeypatch.setattr(memory, "available_memory", lambda: None)
    with qtbot.waitSignal(window.releaseFinished, timeout=60_000):
        assert window.run_release()
    assert window.document.outcome is not None


def test_not_ready_to_release_says_what_is_missing(window, dialogs):
    assert not window.run_release()
    assert dialogs.errors and "open a table" in dialogs.errors[0][1]


def test_dropping_files_on_the_window(window, qtbot, tmp_path, dialogs):
    table = tmp_path / "people.csv"
    table.write_text("age,sex\n30,F\n41,M\n")
    mime = QMimeData()
    mime.setUrls(window.file_urls([table]))
    event = QDropEvent(QPointF(10, 10), Qt.DropAction.CopyAction, mime, Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier)
    with qtbot.waitSignal(window.tableLoaded, timeout=10_000):
        window.dropEvent(event)
    assert window.document.summary.path == table
    assert dialogs.errors == []
