"""Where file dialogs open: the last folder of their kind of file, the first time the table's folder."""

from __future__ import annotations

import pytest
from PySide6.QtWidgets import QFileDialog, QLabel, QMessageBox, QWidget

from privelet_gui import io as pio
from privelet_gui.gui.dialogs import Dialogs
from privelet_gui.gui.settings import Settings


class FileDialogs:
    """Stands in for QFileDialog's static functions: records where each dialog opened, answers ``answer``."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch):
        self.opened_in: list[str] = []
        self.answer = ""
        monkeypatch.setattr(QFileDialog, "getOpenFileName", self._ask)
        monkeypatch.setattr(QFileDialog, "getSaveFileName", self._ask)

    def _ask(self, parent: QWidget, title: str, start: str, filters: str) -> tuple[str, str]:
        self.opened_in.append(start)
        return self.answer, ""


@pytest.fixture
def files(monkeypatch):
    return FileDialogs(monkeypatch)


@pytest.fixture
def folders(tmp_path):
    for name in ("census", "hierarchies", "releases", "home"):
        (tmp_path / name).mkdir()
    return tmp_path


def test_each_kind_starts_in_the_tables_folder_then_its_own_last_folder(qtbot, files, folders, monkeypatch):
    monkeypatch.setenv("HOME", str(folders / "home"))
    parent = QWidget()
    qtbot.addWidget(parent)
    table = folders / "census" / "acs.csv"
    dialogs = Dialogs(parent, Settings(), table_path=lambda: table)
    # the first time for each kind: the table's folder (not the home folder)
    files.answer = str(folders / "hierarchies" / "puma.csv")
    assert dialogs.open_path("hierarchy") == folders / "hierarchies" / "puma.csv"
    files.answer = ""
    assert dialogs.save_path("project", suggested="acs.privelet") is None  # cancelled
    assert files.opened_in == [str(folders / "census"), str(folders / "census" / "acs.privelet")]
    # then the last folder of that kind; other kinds still start at the table
    files.answer = str(folders / "releases" / "acs-release")
    assert dialogs.save_path("release", suggested="acs-release") == folders / "releases" / "acs-release.npz"
    files.answer = ""
    dialogs.open_path("hierarchy")
    dialogs.save_path("release", suggested="acs-release")
    dialogs.save_path("csv", suggested="acs-release")
    assert files.opened_in[3:] == [str(folders / "hierarchies"), str(folders / "releases" / "acs-release"),
                                   str(folders / "census" / "acs-release")]
    # remembered across sessions (the settings file), and forgotten when the folder is gone
    again = Dialogs(parent, Settings(), table_path=lambda: table)
    assert again.start_folder("hierarchy") == folders / "hierarchies"
    (folders / "hierarchies").rmdir()
    assert again.start_folder("hierarchy") == folders / "census"


def test_without_a_table_the_folder_of_the_last_table_read_then_home(qtbot, files, folders, monkeypatch):
    monkeypatch.setenv("HOME", str(folders / "home"))
    parent = QWidget()
    qtbot.addWidget(parent)
    settings = Settings()
    dialogs = Dialogs(parent, settings)
    assert dialogs.start_folder("project") == folders / "home"
    settings.set_last_folder("table", folders / "census" / "acs.csv")  # the main window does this on reading a table
    assert dialogs.start_folder("project") == folders / "census"


def test_the_bundled_samples_folder_is_never_offered(qtbot, files, folders, monkeypatch):
    monkeypatch.setenv("HOME", str(folders / "home"))
    parent = QWidget()
    qtbot.addWidget(parent)
    sample = pio.sample_table_path()
    dialogs = Dialogs(parent, Settings(), table_path=lambda: sample)
    assert dialogs.start_folder("project") == folders / "home"  # not inside the installed package


def test_the_main_windows_dialogs_start_where_its_table_is(sample_window, qtbot, tmp_path):
    # the main window records the folder of each table it reads; its file dialogs start there
    copy = tmp_path / "mine" / "adult.csv.gz"
    copy.parent.mkdir()
    copy.write_bytes(pio.sample_table_path().read_bytes())
    with qtbot.waitSignal(sample_window.tableLoaded, timeout=30_000):
        assert sample_window.open_table(copy, pio.sniff_table(copy))
    dialogs = Dialogs(sample_window, sample_window.settings)
    assert dialogs.start_folder("project") == copy.parent
    assert dialogs.start_folder("hierarchy") == copy.parent


def test_every_kind_of_file_the_app_asks_for_has_its_own_filter():
    """A kind without an entry would fall back to the catch-all filter, which hides schema
    and workload files among tables and releases."""
    import re
    from pathlib import Path

    import privelet_gui.gui as gui
    from privelet_gui.gui.dialogs import FILTERS

    asked = set()
    for source in Path(gui.__file__).parent.rglob("*.py"):
        asked |= set(re.findall(r'(?:open_path|save_path)\(\s*"([a-z-]+)"', source.read_text(encoding="utf-8")))
    assert {"table", "project", "hierarchy", "schema", "workload"} <= asked  # the scan finds the calls
    assert sorted(asked - set(FILTERS)) == []


def test_an_error_with_a_short_title_is_wide_enough_to_read(qtbot, tmp_path, monkeypatch):
    # Seen in a real window: Qt sizes a message box by its main text, so "Cannot write r.npz"
    # wrapped the explanation at a few words a line ("Cannot write /tmp/" | "x1/nodir/r.npz: the").
    parent = QWidget()
    qtbot.addWidget(parent)
    shown: list[QMessageBox] = []

    def show_instead(box: QMessageBox) -> int:
        box.show()
        shown.append(box)
        return 0

    monkeypatch.setattr(QMessageBox, "exec", show_instead)
    target = tmp_path / "no-such-folder" / "r.npz"
    try:
        pio.check_writable(target)
    except FileNotFoundError as error:
        Dialogs(parent, Settings()).error(f"Cannot write {target.name}", error)
    (box,) = shown
    label = box.findChild(QLabel, "qt_msgbox_informativelabel")
    metrics = label.fontMetrics()
    assert "create it or choose another folder" in label.text()
    assert label.width() >= 45 * metrics.averageCharWidth()
    # a short explanation keeps a short box
    shown.clear()
    Dialogs(parent, Settings()).error("Cannot open", "no such file")
    short = shown[0].findChild(QLabel, "qt_msgbox_informativelabel")
    assert short.width() < 30 * metrics.averageCharWidth()
