"""Fuzz: project files, generated valid and then damaged, read by load_project."""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import given

from privelet_gui.io.project import load_project, save_project

from .projects import intact, project_files
from .support import fuzz, outcome


@fuzz()
@given(files=project_files())
def test_project_files_load_or_are_refused(files):
    obj, damaged, data = files
    with tempfile.TemporaryDirectory() as name:
        folder = Path(name)
        (folder / "table.csv").write_text("a,b\n1,2\n")
        path = folder / "p.privelet"
        path.write_bytes(data)
        project, error = outcome("project files", lambda: load_project(path))
        if error is None:  # a project that loads is saved and read back the same
            save_project(project, folder / "again.privelet")
            assert load_project(folder / "again.privelet") == project
    assert error is None or not intact(obj, damaged, data), error
