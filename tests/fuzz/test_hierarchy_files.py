"""Fuzz: hierarchy files in the ARX layout and in nested JSON, generated and then damaged."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from privelet_gui.io import hierarchy_to_arx_rows, read_arx_hierarchy, read_hierarchy, write_arx_hierarchy

from ..engine.strategies import hierarchies
from .mutations import dumped, mutated
from .support import fuzz, outcome

# Renamed labels are a warning, and a valid result: not what these tests look at.
pytestmark = pytest.mark.filterwarnings("ignore::privelet_gui.io.hierarchies.HierarchyLabelWarning")

_CELLS = st.one_of(st.text(max_size=6), st.sampled_from(["", " ", "*", '"', "a;b", "x\ny", "\ufeff", "\x00"]))


def _damaged_rows(draw: Any, rows: list[list[str]]) -> list[list[str]]:
    """ARX rows after a few edits: a cell changed or emptied, a cell or a column added or
    removed, a row repeated, removed or moved, a label given a second parent."""
    rows = [list(r) for r in rows]
    for _ in range(draw(st.integers(0, 3))):
        if not rows:
            break
        i = draw(st.integers(0, len(rows) - 1))
        action = draw(st.sampled_from(["cell", "add", "drop", "repeat", "remove", "move", "column"]))
        if action == "cell" and rows[i]:
            rows[i][draw(st.integers(0, len(rows[i]) - 1))] = draw(_CELLS)
        elif action == "add":
            rows[i].insert(draw(st.integers(0, len(rows[i]))), draw(_CELLS))
        elif action == "drop" and rows[i]:
            del rows[i][draw(st.integers(0, len(rows[i]) - 1))]
        elif action == "repeat":
            rows.insert(i, list(rows[i]))
        elif action == "remove":
            del rows[i]
        elif action == "move":
            rows.append(rows.pop(i))
        elif action == "column":
            for row in rows:
                row.insert(max(len(row) - 1, 0), draw(st.sampled_from(["G", "H", row[0] if row else "G"])))
    return rows


@fuzz()
@given(hierarchy=hierarchies(max_leaves=10), data=st.data())
def test_arx_hierarchies_read_or_are_refused(hierarchy, data):
    rows = hierarchy_to_arx_rows(hierarchy)
    damaged = _damaged_rows(data.draw, rows)
    delimiter = data.draw(st.sampled_from([";", ",", "\t", "|"]))
    newline = data.draw(st.sampled_from(["\n", "\r\n"]))
    text = newline.join(delimiter.join(row) for row in damaged) + newline
    raw = data.draw(st.sampled_from(["as is", "as is", "bom", "latin1", "cut"]))
    data_bytes = {"as is": text.encode("utf-8", "surrogatepass"), "bom": b"\xef\xbb\xbf" + text.encode(),
                  "latin1": text.encode("latin-1", "replace"), "cut": text.encode()[: len(text) // 2]}[raw]
    with tempfile.TemporaryDirectory() as name:
        path = Path(name) / "h.csv"
        path.write_bytes(data_bytes)
        given_delimiter = data.draw(st.sampled_from([None, delimiter]))
        read, error = outcome("ARX hierarchies", lambda: read_arx_hierarchy(path, delimiter=given_delimiter))
    if error is None:  # valid: written back, it reads the same
        assert read_arx_hierarchy(write_arx_hierarchy(read)) == read
    if damaged == rows and raw in ("as is", "bom") and given_delimiter == delimiter:
        assert error is None and read == hierarchy, error  # an undamaged file is the hierarchy


@fuzz()
@given(hierarchy=hierarchies(max_leaves=10), data=st.data())
def test_json_hierarchies_read_or_are_refused(hierarchy, data):
    nested = hierarchy.to_nested()
    damaged = mutated(data.draw, nested)
    text = dumped(data.draw, damaged)
    with tempfile.TemporaryDirectory() as name:
        path = Path(name) / "h.json"
        path.write_bytes(text)
        read, error = outcome("JSON hierarchies", lambda: read_hierarchy(path))
    if error is None:
        assert read.to_nested() is not None and read.size >= 1
    written = (json.dumps(nested, ensure_ascii=True).encode(), json.dumps(nested, ensure_ascii=False).encode())
    if damaged == nested and text.removeprefix(b"\xef\xbb\xbf") in written:
        assert error is None and read == hierarchy, error  # an undamaged file is the hierarchy
