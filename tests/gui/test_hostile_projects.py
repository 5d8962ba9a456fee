"""Hostile project files opened in the app: a dialog that says what is wrong, never a traceback.

The fuzz target opens generated and damaged projects (tests/fuzz/projects.py) through the
public ``MainWindow.open_project(path)``, one window for all cases; ``PRIVELET_FUZZ=1`` runs
1,000 of them (see tests/fuzz/__init__.py). The other test starts the real entry point,
``privelet-gui FILE.privelet``, on bad files, with the message box answered at once.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings

from privelet_gui.io.project import PROJECT_FORMAT, PROJECT_VERSION, ProjectError, load_project

from ..fuzz.projects import intact, project_files
from ..fuzz.support import TALLY, fuzz_cases

_PROJECT = {"format": PROJECT_FORMAT, "version": PROJECT_VERSION}


@settings(max_examples=fuzz_cases(20), suppress_health_check=list(HealthCheck))
@given(files=project_files())
def test_damaged_projects_open_or_are_refused_in_the_app(window: Any, dialogs: Any, qtbot: Any, files: Any) -> None:
    obj, damaged, data = files
    with tempfile.TemporaryDirectory() as name:
        folder = Path(name)
        (folder / "table.csv").write_text("a,b\n1,2\n")
        path = folder / "p.privelet"
        path.write_bytes(data)
        try:
            load_project(path)
            loads = True
        except ProjectError:
            loads = False
        errors = len(dialogs.errors)
        opened = window.open_project(path)
        qtbot.waitUntil(lambda: not window.runner.busy and not window.runner.is_running(), timeout=30_000)
    assert opened == loads  # the app refuses exactly what the loader refuses
    if not opened:
        assert len(dialogs.errors) == errors + 1 and dialogs.errors[-1][0] == "Cannot open the project p.privelet"
        TALLY.refused("projects in the app", ProjectError(dialogs.errors[-1][1]))
    else:
        window.document.to_project()  # the opened state is a project again
        assert not window.document.modified
        TALLY.valid("projects in the app")
    assert opened or not intact(obj, damaged, data)


_DRIVER = textwrap.dedent(
    """
    import sys
    from PySide6.QtCore import QTimer
    from PySide6.QtWidgets import QApplication, QMessageBox

    def answered(box):  # the user reads the message and clicks OK
        print("DIALOG:", box.text(), "|", box.informativeText(), file=sys.stderr, flush=True)
        return 0

    def run_briefly(*_):  # the event loop runs until every file was opened, then the user quits
        QTimer.singleShot(1000, QApplication.quit)
        return loop()

    QMessageBox.exec = answered
    loop, QApplication.exec = QApplication.exec, run_briefly
    from privelet_gui.gui.app import main
    sys.exit(main(sys.argv[1:]))
    """
)


def test_privelet_gui_on_bad_project_files_shows_why_and_ends_without_a_traceback(tmp_path: Path) -> None:
    deep: dict[str, Any] = {"label": "*", "children": []}
    node = deep
    for level in range(120):
        node["children"].append({"label": f"g{level}", "children": []})
        node = node["children"][0]
    bad = {
        "no-label.privelet": {**_PROJECT, "attribute_order": ["job"],
                              "drafts": {"job": {"column": "job", "tree": {"label": "*", "children": [{"children": []}]}}}},
        "order.privelet": {**_PROJECT, "attribute_order": 5},
        "epsilon.privelet": {**_PROJECT, "privacy": {"epsilon": 10**400}},
        "deep.privelet": {**_PROJECT, "attribute_order": ["job"], "drafts": {"job": {"column": "job", "tree": deep}}},
    }
    paths = []
    for name, obj in bad.items():
        (tmp_path / name).write_text(json.dumps(obj))
        paths.append(str(tmp_path / name))
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen", "HOME": str(tmp_path), "XDG_CONFIG_HOME": str(tmp_path)}
    done = subprocess.run([sys.executable, "-c", _DRIVER, *paths], capture_output=True, text=True, env=env, timeout=120, check=False)
    assert "Traceback" not in done.stderr, done.stderr
    assert done.returncode == 0, done.stderr
    dialogs = [line for line in done.stderr.splitlines() if line.startswith("DIALOG:")]
    assert len(dialogs) == len(bad), done.stderr
    for name, line in zip(bad, dialogs, strict=True):
        assert f"Cannot open the project {name}" in line
    assert "must be a node" in dialogs[0] and "attribute_order" in dialogs[1]
    assert "privacy.epsilon" in dialogs[2] and "nested more than 100 levels deep" in dialogs[3]
