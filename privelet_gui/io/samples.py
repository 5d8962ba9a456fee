"""The bundled sample: the UCI Adult table, its ARX hierarchies and a schema (see resources/LICENSES.md)."""

from __future__ import annotations

import atexit
import contextlib
from importlib.resources import as_file, files
from pathlib import Path

__all__ = ["resource_path", "sample_hierarchy_paths", "sample_schema_path", "sample_table_path"]

_SAMPLE_DIR = "adult"
_stack = contextlib.ExitStack()
atexit.register(_stack.close)


def resource_path(*parts: str) -> Path:
    """A real file path for a bundled resource (extracted once if the package is zipped)."""
    resource = files("privelet_gui.resources")
    for part in parts:  # one at a time: some resource readers (frozen apps) take one name per call
        resource = resource.joinpath(part)
    if isinstance(resource, Path):
        return resource
    return _stack.enter_context(as_file(resource))


def sample_table_path() -> Path:
    """The UCI Adult sample table (30,162 rows, ``;``-separated, gzip-compressed CSV)."""
    return resource_path(_SAMPLE_DIR, "adult.csv.gz")


def sample_schema_path() -> Path:
    """The sample's schema (age 17..90; sex, race, education, occupation, native-country).

    Its hierarchy files sit beside it, so load it with
    :func:`privelet_gui.io.load_schema`.
    """
    return resource_path(_SAMPLE_DIR, "schema.json")


def sample_hierarchy_paths() -> dict[str, Path]:
    """The bundled ARX hierarchies of the Adult data, by attribute name."""
    folder = files("privelet_gui.resources").joinpath(_SAMPLE_DIR)
    out: dict[str, Path] = {}
    for entry in sorted(folder.iterdir(), key=lambda e: e.name):
        name = entry.name
        if name.startswith("adult_hierarchy_") and name.endswith(".csv"):
            out[name.removeprefix("adult_hierarchy_").removesuffix(".csv")] = resource_path(_SAMPLE_DIR, name)
    return out
