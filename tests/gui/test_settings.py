"""Where the app keeps its settings: the user's place, or a folder named by PRIVELET_STUDIO_SETTINGS."""

from __future__ import annotations

import os
from pathlib import Path

from PySide6.QtCore import QByteArray

from privelet_gui.gui.settings import SETTINGS_ENV, Settings


def test_the_test_suite_never_uses_the_users_settings(fresh_settings):
    # set for the whole run by tests/conftest.py, and per test (fresh) by tests/gui/conftest.py
    assert os.environ[SETTINGS_ENV] == str(fresh_settings)
    settings = Settings()
    assert settings.location.parent == fresh_settings
    settings.add_recent_file(Path("/data/census.csv"))
    settings.set_geometry(QByteArray(b"geometry"))
    settings.sync()
    assert settings.location.is_file()
    assert Settings().recent_files() == [Path("/data/census.csv")]  # read back from that file


def test_settings_in_a_folder_of_their_own(tmp_path, fresh_settings):
    own = Settings.in_folder(tmp_path)
    own.add_recent_file(tmp_path / "t.csv")
    own.sync()
    assert own.location == tmp_path / "settings.ini" and own.location.is_file()
    assert Settings().recent_files() == []  # the test's settings saw nothing of it
    assert Settings.in_folder(tmp_path).recent_files() == [tmp_path / "t.csv"]


def test_the_main_window_reads_and_writes_the_given_settings(qtbot, tmp_path):
    from privelet_gui.gui.main_window import MainWindow

    settings = Settings.in_folder(tmp_path)
    window = MainWindow(settings)
    qtbot.addWidget(window)
    window.show()
    window.close()
    assert Settings.in_folder(tmp_path).geometry() is not None  # the geometry went to that folder
