"""Main window: projects, unsaved changes, settings, menus and shortcuts."""

from __future__ import annotations

from PySide6.QtCore import QSize
from PySide6.QtGui import QKeySequence

from privelet_gui import io as pio
from privelet_gui.engine import recommend_sa
from privelet_gui.gui.main_window import MainWindow
from privelet_gui.gui.models.hierarchy_model import tree_to_json
from privelet_gui.gui.settings import Settings
from tests.gui.conftest import FakeDialogs


def make_window(qtbot) -> tuple[MainWindow, FakeDialogs]:
    dialogs = FakeDialogs()
    win = MainWindow()
    win.dialogs = dialogs
    win.show()
    return win, dialogs


def close(win: MainWindow, qtbot) -> None:
    win.dialogs.save_answer = "discard"
    win.dialogs.choices["drop-release"] = "discard"
    win.close()
    win.deleteLater()
    qtbot.wait(1)


def test_project_save_and_reopen_is_identical(sample_window, qtbot, tmp_path):
    window = sample_window
    doc = window.document
    # A setup that touches everything a project stores.
    doc.set_attribute("marital-status", include=True)
    doc.set_epsilon(0.3)
    doc.set_sa(("sex", "race"))
    doc.set_privacy(neighbours="add-remove", invalid="drop")
    occupation = doc.config("occupation").hierarchy
    leaves = list(occupation.root.leaves())
    occupation.move_nodes([leaves[0]], occupation.root, 0)  # a hand-edited hierarchy
    education = doc.config("education").hierarchy
    education.add_empty_group(education.root, "Still empty")  # a draft: not valid yet
    assert doc.modified and window.isWindowModified()
    path = tmp_path / "adult-study.privelet"
    assert window.save_project(path)
    assert not doc.modified and not window.isWindowModified()
    assert "adult-study.privelet" in window.windowTitle()
    saved = doc.to_project()
    assert "education" in saved.drafts

    other, dialogs = make_window(qtbot)
    try:
        with qtbot.waitSignal(other.projectOpened, timeout=30_000):
            assert other.open_project(path)
        again = other.document
        assert again.to_project() == saved
        assert again.schema() == doc.schema()
        assert (again.epsilon, again.sa, again.neighbours, again.invalid) == (0.3, ("sex", "race"), "add-remove", "drop")
        for name in ("occupation", "education"):
            assert tree_to_json(again.config(name).hierarchy.root) == tree_to_json(doc.config(name).hierarchy.root)
        assert [c.column for c in again.included()] == [c.column for c in doc.included()]
        assert again.config("marital-status").domain_from_data  # the warning survives the round trip
        assert again.step_status("hierarchies").state == "error"  # the empty group is still to fix
        assert not again.modified
        assert again.summary is not None and again.summary.rows == 30162
        assert dialogs.errors == []
    finally:
        close(other, qtbot)


def test_project_with_a_missing_table_opens_with_a_clear_message(window, qtbot, tmp_path, dialogs):
    from privelet_gui.io.project import Project, save_project

    path = tmp_path / "p.privelet"
    save_project(Project(table_path=tmp_path / "gone.csv", schema=pio.load_schema(pio.sample_schema_path()), epsilon=2.0), path)
    with qtbot.waitSignal(window.projectOpened, timeout=10_000):
        assert window.open_project(path)
    assert window.document.epsilon == 2.0
    assert window.document.schema() == pio.load_schema(pio.sample_schema_path())
    status = window.document.step_status("data")
    assert status.state == "error" and "gone.csv" in status.message and "Open table" in status.message


def test_closing_with_unsaved_changes_asks(sample_window, qtbot, tmp_path, dialogs):
    window = sample_window
    window.document.set_epsilon(2.0)
    dialogs.save_answer = "cancel"
    assert not window.close()
    assert window.isVisible()
    assert dialogs.asked == ["closing"]
    # "Save" with no project file yet asks where (Save As); declining keeps the window open.
    dialogs.save_answer = "save"
    dialogs.save_path_answer = None
    assert not window.close()
    dialogs.save_path_answer = tmp_path / "saved.privelet"
    assert window.close()
    assert pio.__name__ and (tmp_path / "saved.privelet").is_file()


def test_a_window_changed_after_saving_is_deleted_without_an_error(sample_window, qtbot, tmp_path, dialogs):
    # Deleting the undo stack clears it, and the stack then announced "not clean any more" from
    # beyond its own deletion: an error in the Qt event loop (the window fixture fails on it).
    window = sample_window
    dialogs.save_path_answer = tmp_path / "saved.privelet"
    assert window.save_project_as()
    window.document.set_epsilon(2.0)
    assert window.document.has_unsaved_work


def test_opening_another_table_asks_about_unsaved_changes(sample_window, dialogs):
    window = sample_window
    window.document.set_epsilon(3.0)
    dialogs.save_answer = "cancel"
    assert not window.open_table(pio.sample_table_path(), pio.sniff_table(pio.sample_table_path()))
    assert dialogs.asked == ["opening another table"]
    assert window.document.epsilon == 3.0


def test_geometry_recent_files_and_folders_persist(qtbot):
    first, _ = make_window(qtbot)
    first.resize(761, 555)  # within the 800 x 800 offscreen screen
    with qtbot.waitSignal(first.tableLoaded, timeout=30_000):
        first.open_sample()
    close(first, qtbot)
    settings = Settings()
    assert settings.recent_files()[0] == pio.sample_table_path().absolute()
    assert settings.last_folder("table") == pio.sample_table_path().parent
    second, _ = make_window(qtbot)
    try:
        assert second.size() == QSize(761, 555)
        second._fill_recent()
        names = [a.text() for a in second.recent_menu.actions()]
        assert names[0] == pio.sample_table_path().name
    finally:
        close(second, qtbot)


def test_menus_use_standard_shortcuts(window):
    assert window.act_open_table.shortcut() == QKeySequence(QKeySequence.StandardKey.Open)
    assert window.act_save.shortcut() == QKeySequence(QKeySequence.StandardKey.Save)
    assert window.act_save_as.shortcut() == QKeySequence(QKeySequence.StandardKey.SaveAs)
    assert window.act_quit.shortcut() == QKeySequence(QKeySequence.StandardKey.Quit)
    assert QKeySequence("Ctrl+Z") in window.act_undo.shortcuts()
    assert QKeySequence("Ctrl+Shift+Z") in window.act_redo.shortcuts()
    titles = [a.text().replace("&", "") for a in window.menuBar().actions()]
    assert titles == ["File", "Edit", "Go", "Release", "Help"]
    # PySide6 6.6 invalidates the menu QAction.menu() returns once that action's wrapper is gone: keep it
    file_action = window.menuBar().actions()[0]
    file_menu = file_action.menu()
    texts = [a.text().replace("&", "") for a in file_menu.actions()]
    for expected in ("Open table...", "Open project...", "Recent files", "Save project", "Save project as...",
                     "Export release", "Quit"):
        assert expected in texts


def test_undo_redo_cover_every_kind_of_edit(sample_window):
    window = sample_window
    doc = window.document
    doc.set_epsilon(0.7)
    doc.set_attribute("age", lo=10)
    doc.set_sa(("sex",))
    assert (doc.epsilon, doc.config("age").lo, doc.sa) == (0.7, 10, ("sex",))
    window.act_undo.trigger()
    window.act_undo.trigger()
    window.act_undo.trigger()
    assert (doc.epsilon, doc.config("age").lo, doc.sa) == (1.0, 17, recommend_sa(doc.schema()))  # the default S_A
    assert doc.undo_stack.isClean()  # back to the state just after opening (an unsaved new project)
    assert doc.modified
    window.act_redo.trigger()
    assert doc.epsilon == 0.7


def test_steps_show_completeness(window, qtbot):
    from privelet_gui.gui.document import STEPS

    def states() -> list[str]:
        return [window.steps.item(i).toolTip().split(":")[0] for i in range(len(STEPS))]

    assert states() == ["Data", "Attributes", "Hierarchies", "Privacy", "Release"]
    assert window.document.step_status("data").state == "todo"
    with qtbot.waitSignal(window.tableLoaded, timeout=30_000):
        window.open_sample()
    statuses = window.document.step_statuses()
    assert [statuses[s].state for s in STEPS] == ["done", "done", "done", "todo", "todo"]  # choosing the strategy
    qtbot.waitUntil(lambda: window.document.step_status("privacy").state == "done", timeout=60_000)
    window.go_to("privacy")
    assert window.stack.currentWidget() is window.privacy_panel
    window.next_step()
    assert window.current_step() == "release"


def test_help_texts(window):
    from privelet_gui import __version__
    from privelet_gui.gui.guide import GUIDE_HTML, about_html

    about = about_html()
    assert __version__ in about and "LGPL" in about and "CC BY 4.0" in about
    assert "Ctrl+Shift+Z" in GUIDE_HTML
    window.show_guide()
    window._guide.close()


def test_the_window_loads_the_compiled_noise_loop_on_a_thread_of_its_own(qtbot, dialogs, monkeypatch):
    # Compiling (or loading the cached) numba loops when the first release started would stall
    # the window's thread: the window asks for them as it opens, off its own thread.
    import threading

    from privelet_gui.gui import main_window

    asked_on: list[str] = []
    monkeypatch.setattr(main_window, "prepare_kernels", lambda: asked_on.append(threading.current_thread().name))
    win = main_window.MainWindow()
    qtbot.addWidget(win)
    win.dialogs = dialogs
    qtbot.waitUntil(lambda: bool(asked_on), timeout=5_000)
    assert asked_on[0] != threading.main_thread().name
    win.tasks.shutdown()
