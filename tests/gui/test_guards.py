"""The test fixtures themselves: leftover threads/timers and Qt warnings fail a test."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from privelet_gui.gui.settings import SETTINGS_ENV
from privelet_gui.io.ledger import LEDGER_ENVIRONMENT

HERE = Path(__file__).parent


def test_leftover_threads_timers_and_qt_warnings_fail_the_test():
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen")
    result = subprocess.run(
        [sys.executable, "-m", "pytest", str(HERE / "leaky_examples.py"), "-q", "-p", "no:cacheprovider",
         "-o", "addopts=", "-rA"],
        capture_output=True, text=True, cwd=HERE.parents[1], env=env, timeout=120,
    )
    out = result.stdout
    assert result.returncode == 1, out
    assert "a QTimer is still active" in out
    assert "a QThread is still running" in out
    assert "something went wrong in Qt" in out
    assert "PASSED tests/gui/leaky_examples.py::test_clean" in out


@pytest.mark.parametrize("args", [["--help"], ["--version"]])
def test_command_line_help(args):
    from privelet_gui.gui.app import parse_args

    with pytest.raises(SystemExit) as info:
        parse_args(args)
    assert info.value.code == 0


def snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_screenshots_walk_every_step_and_exit_0_without_touching_the_users_settings(tmp_path):
    # A user's home with settings of their own (a recent file), and no test settings folder
    # and no PRIVELET_LEDGER: the tour must use temporary settings and a temporary privacy
    # ledger of its own, and leave the home (where the user's ledger lives) as it was.
    home, config = tmp_path / "home", tmp_path / "home" / ".config"
    users = config / "Privelet" / "Privelet Studio.conf"
    users.parent.mkdir(parents=True)
    users.write_text("[files]\nrecent=/somewhere/census.csv\n", encoding="utf-8")
    before = snapshot(home)
    env = {k: v for k, v in os.environ.items() if k not in (SETTINGS_ENV, LEDGER_ENVIRONMENT)}
    data = home / ".local" / "share"
    env.update(QT_QPA_PLATFORM="offscreen", HOME=str(home), XDG_CONFIG_HOME=str(config), XDG_DATA_HOME=str(data))
    folder = tmp_path / "shots"
    result = subprocess.run(
        [sys.executable, "-m", "privelet_gui", "--demo", "--screenshots", str(folder)],
        capture_output=True, text=True, env=env, timeout=180,
    )
    assert result.returncode == 0, result.stderr
    assert snapshot(home) == before  # nothing written, nothing changed, no new file
    names = sorted(p.name for p in folder.glob("*.png"))
    assert names == ["01-data-import-dialog.png", "01-data.png", "02-attributes.png", "03-hierarchies.png",
                     "04-privacy.png", "05-release-error-preview.png", "05-release-query-workbench.png",
                     "05-release.png"]
    from PySide6.QtGui import QImage

    for path in folder.glob("*.png"):
        image = QImage(str(path))
        assert image.width() >= 640 and image.height() >= 400, path.name
