"""Starting the app: the window fits its screen, and a platform plugin that cannot load says what to install."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from PySide6.QtCore import QMargins, QRect, QSize

from privelet_gui.gui.app import open_main_window, parse_args
from privelet_gui.gui.screen import fit_to_screen, fitted_geometry
from privelet_gui.gui.settings import SETTINGS_ENV, Settings
from privelet_gui.gui.system_libraries import (
    PACKAGES,
    README_PACKAGES,
    advice,
    missing_libraries,
    platform_failure_handler,
    xcb_plugin,
)

ROOT = Path(__file__).resolve().parents[2]


class FakeScreen:
    def __init__(self, x: int, y: int, width: int, height: int):
        self.area = QRect(x, y, width, height)

    def availableGeometry(self) -> QRect:
        return self.area


# -- fitting the screen ------------------------------------------------------------------------------


def rect(r: QRect) -> tuple[int, int, int, int]:
    return r.x(), r.y(), r.width(), r.height()


def test_a_window_larger_than_the_screen_shrinks_into_it():
    # 1600 x 1000 at a scale factor of 1.5 is 1067 x 667; a title bar of 30 on top
    title = QMargins(0, 30, 0, 0)
    assert rect(fitted_geometry(QRect(0, 0, 1200, 820), title, QRect(0, 0, 1067, 667))) == (0, 30, 1067, 637)
    # a window that fits keeps its size and place
    assert rect(fitted_geometry(QRect(100, 80, 800, 500), title, QRect(0, 0, 1067, 667))) == (100, 80, 800, 500)
    # saved on a screen to the right that is gone: back onto this one, size kept
    assert rect(fitted_geometry(QRect(2500, 300, 800, 500), title, QRect(0, 0, 1600, 1000))) == (800, 300, 800, 500)
    # a second screen left of the first, with a panel on top (available area starts at y = 40)
    assert rect(fitted_geometry(QRect(-1800, 0, 1900, 1200), QMargins(4, 24, 4, 4), QRect(-1920, 40, 1920, 1040))) == (
        -1904, 64, 1900, 1012)


def test_fit_to_screen_shrinks_the_main_window_and_its_minimum_when_needed(qtbot):
    from privelet_gui.gui.main_window import MainWindow

    window = MainWindow()
    qtbot.addWidget(window)
    assert window.size() == QSize(1200, 820)  # the default size
    tiny = FakeScreen(0, 0, 700, 500)  # smaller than the window's minimum (720 x 540)
    assert fit_to_screen(window, tiny)
    # not shown yet, so no frame: room is kept for a title bar (Qt's style says how high)
    assert window.width() <= 700 and 500 - 60 <= window.height() < 500
    assert window.minimumWidth() <= 700 and window.minimumHeight() <= 500
    assert not fit_to_screen(window, tiny)  # fitted: nothing more to do


def test_a_geometry_restored_from_another_screen_comes_back_onto_this_one(qtbot, tmp_path, monkeypatch):
    from privelet_gui.gui.main_window import MainWindow

    monkeypatch.setenv(SETTINGS_ENV, str(tmp_path))
    first = MainWindow()
    qtbot.addWidget(first)
    first.setGeometry(3000, 1500, 1000, 700)  # on a bigger screen, far to the right and below
    first.close()  # saves the geometry
    assert Settings().geometry() is not None
    window = open_main_window(parse_args([]))
    qtbot.addWidget(window)
    screen = window.screen().availableGeometry()
    assert screen.contains(window.geometry())
    assert window.frameGeometry().width() <= screen.width() and window.frameGeometry().height() <= screen.height()


def test_at_a_scale_factor_of_1_5_the_window_opens_inside_the_screen(tmp_path):
    # a fake 1600 x 1000 screen (Qt's offscreen platform takes screens from a JSON file)
    config = tmp_path / "screens.json"
    config.write_text(json.dumps({"screens": [{"name": "desk", "x": 0, "y": 0, "width": 1600, "height": 1000,
                                               "logicalDpi": 96, "logicalBaseDpi": 96, "dpr": 1}]}))
    script = (
        "from privelet_gui.gui.app import create_application, open_main_window, parse_args\n"
        "app = create_application()\n"
        "w = open_main_window(parse_args([]))\n"
        "a, g = w.screen().availableGeometry(), w.geometry()\n"
        "print(a.width(), a.height(), g.width(), g.height(), w.frameGeometry().bottom())\n"
    )
    env = dict(os.environ, QT_SCALE_FACTOR="1.5", QT_QPA_PLATFORM=f"offscreen:configfile={config}",
               **{SETTINGS_ENV: str(tmp_path)})
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=120)
    assert result.returncode == 0, result.stderr
    screen_w, screen_h, width, height, bottom = map(int, result.stdout.split())
    assert (screen_w, screen_h) == (1067, 667)  # the scale factor is in force
    assert width <= 1067 and height < 667 and bottom < 667  # was 1200 x 820


# -- a platform plugin that cannot load -------------------------------------------------------------

LDD_OF_A_FRESH_DESKTOP = """\
\tlinux-vdso.so.1 (0x00007ffd0b5f2000)
\tlibQt6XcbQpa.so.6 => /opt/venv/PySide6/Qt/lib/libQt6XcbQpa.so.6 (0x00007f30a1a00000)
\tlibxcb-cursor.so.0 => /lib/x86_64-linux-gnu/libxcb-cursor.so.0 (0x00007f30a19f0000)
\tlibxcb-icccm.so.4 => not found
\tlibxcb-keysyms.so.1 => not found
\tlibxcb-icccm.so.4 => not found
\tlibfoo-new.so.2 => not found
"""


def test_missing_libraries_are_read_from_the_loaders_report():
    plugin = Path("/opt/venv/PySide6/Qt/plugins/platforms/libqxcb.so")
    seen = []
    missing = missing_libraries(plugin, lookup=lambda path: seen.append(path) or LDD_OF_A_FRESH_DESKTOP)
    assert seen == [plugin]
    assert missing == ["libxcb-icccm.so.4", "libxcb-keysyms.so.1", "libfoo-new.so.2"]  # once each, in order
    broken = "ldd: error while loading shared libraries: /usr/lib/libxcb-xkb.so.1: file too short"
    assert missing_libraries(plugin, lookup=lambda _: broken) == ["libxcb-xkb.so.1"]
    assert missing_libraries(plugin, lookup=lambda _: "") == []


def test_the_advice_names_the_packages_to_install():
    text = advice(["libxcb-icccm.so.4", "libxcb-keysyms.so.1", "libfoo-new.so.2"], {"DISPLAY": ":0"})
    assert "needs libxcb-icccm.so.4, libxcb-keysyms.so.1, libfoo-new.so.2" in text
    assert "sudo apt install libxcb-icccm4 libxcb-keysyms1   (Debian, Ubuntu)" in text
    assert "sudo dnf install xcb-util-wm xcb-util-keysyms   (Fedora)" in text
    assert "there is no display" in advice([], {})
    assert "QT_DEBUG_PLUGINS=1" in advice([], {"DISPLAY": ":0"})


def test_the_handler_turns_only_the_fatal_platform_message_into_advice(capsys):
    from PySide6.QtCore import QMessageLogContext, QtMsgType

    passed, exits = [], []
    handler = platform_failure_handler(lambda *message: passed.append(message[2]),
                                       diagnose=lambda: ["libxcb-icccm.so.4"], exit_process=exits.append)
    context = QMessageLogContext()
    handler(QtMsgType.QtWarningMsg, context, "Could not load the Qt platform plugin")
    assert passed == ["Could not load the Qt platform plugin"] and exits == []
    handler(QtMsgType.QtFatalMsg, context, "no Qt platform plugin could be initialized")
    assert exits == [1]
    err = capsys.readouterr().err
    assert "no Qt platform plugin could be initialized" in err and "sudo apt install libxcb-icccm4" in err


def fake_ldd(folder: Path) -> Path:
    """An ``ldd`` on PATH that reports two libraries missing, as on a fresh desktop."""
    folder.mkdir()
    script = folder / "ldd"
    script.write_text("#!/bin/sh\nprintf '\\tlibxcb-icccm.so.4 => not found\\n\\tlibxcb-keysyms.so.1 => not found\\n'\n")
    script.chmod(0o755)
    return folder


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the xcb platform plugin is Linux's")
def test_the_app_prints_what_to_install_and_exits_1_instead_of_aborting(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY")}
    env.update({"QT_QPA_PLATFORM": "xcb", SETTINGS_ENV: str(tmp_path)})
    command = [sys.executable, "-m", "privelet_gui"]
    plain = subprocess.run(command, capture_output=True, text=True, env=env, timeout=120)
    assert plain.returncode == 1, plain.stderr  # not -6: no abort, no core dump
    missing = missing_libraries(xcb_plugin())  # a fresh machine (CI's) lacks some; a desktop none
    if missing:
        assert f"needs {', '.join(missing)}, which the system does not have" in plain.stderr
        assert "sudo apt install libxcb-" in plain.stderr
    else:
        assert "there is no display" in plain.stderr and "QT_QPA_PLATFORM=offscreen" in plain.stderr
    env["PATH"] = f"{fake_ldd(tmp_path / 'bin')}{os.pathsep}{env['PATH']}"
    fresh = subprocess.run(command, capture_output=True, text=True, env=env, timeout=120)
    assert fresh.returncode == 1, fresh.stderr
    assert "no Qt platform plugin could be initialized" in fresh.stderr  # Qt's own message, kept
    assert "sudo apt install libxcb-icccm4 libxcb-keysyms1" in fresh.stderr


def test_the_readme_lists_the_system_packages():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("## System packages (Linux)", 1)[1].split("\n## ", 1)[0]
    assert all(package in section for package in README_PACKAGES)
    assert all(fedora in section for _, fedora in PACKAGES.values())
