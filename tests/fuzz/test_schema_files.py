"""Fuzz: schema files, generated valid and then damaged, read by load_schema."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from privelet_gui.io import load_schema, schema_from_json, schema_to_json, write_arx_hierarchy

from ..engine.strategies import hierarchies
from .mutations import dumped, json_values, mutated
from .support import fuzz, outcome


@st.composite
def schema_objects(draw: Any, files: bool = True) -> dict[str, Any]:
    """A valid schema file's object (hierarchy files, if ``files``, referenced as h0.csv, h1.csv, ...)."""
    attributes = []
    for i in range(draw(st.integers(1, 4))):
        entry: dict[str, Any] = {"name": draw(st.sampled_from([f"a{i}", f"attribute {i}", f"é{i}"]))}
        kind = draw(st.sampled_from(["range", "bins", "values", "hierarchy", "flat"] + ["file"] * files))
        if kind in ("range", "bins", "values"):
            entry["type"] = "ordinal"
            if kind == "range":
                lo = draw(st.integers(-(2**40), 2**40))
                entry["range"] = [lo, lo + draw(st.integers(0, 200))]
            elif kind == "bins":
                width = draw(st.sampled_from([1, 0.5, 1000, 3]))
                start = draw(st.sampled_from([0, -10, 0.25]))
                entry["bins"] = {"start": start, "stop": start + width * draw(st.integers(1, 50)), "width": width}
            else:
                entry["values"] = draw(st.lists(st.text(min_size=1, max_size=5), min_size=1, max_size=5, unique=True))
            entry["out_of_range"] = draw(st.sampled_from(["error", "clamp", "drop"])) if kind != "values" else "error"
        else:
            entry["type"] = "nominal"
            if kind == "hierarchy":
                entry["hierarchy"] = draw(hierarchies(max_leaves=6)).to_nested()
            elif kind == "flat":
                entry["values"] = draw(st.lists(st.sampled_from(list("abcdefgh")), min_size=1, max_size=5, unique=True))
            else:
                entry["hierarchy_file"] = f"h{i}.csv"
        if draw(st.booleans()):
            entry["column"] = draw(st.sampled_from(["col", f"c{i}", "a b"]))
        attributes.append(entry)
    return {"version": 1, "attributes": attributes}


@fuzz()
@given(obj=schema_objects(), data=st.data())
def test_schema_files_load_or_are_refused(obj, data):
    damaged = mutated(data.draw, obj)
    text = dumped(data.draw, damaged)
    intact = damaged == obj and text.removeprefix(b"\xef\xbb\xbf") in (
        json.dumps(obj, ensure_ascii=True).encode(), json.dumps(obj, ensure_ascii=False).encode()
    )
    with tempfile.TemporaryDirectory() as name:
        folder = Path(name)
        for i in range(4):  # the files the schema may reference, sometimes missing or damaged
            if data.draw(st.integers(0, 5), label=f"h{i}.csv") == 0:
                intact = intact and f"h{i}.csv" not in text.decode("utf-8", "replace")
                continue
            content = write_arx_hierarchy(data.draw(hierarchies(max_leaves=5)))
            if data.draw(st.booleans()):
                content = data.draw(st.sampled_from(["", "a;b\nc\n", "x;*\nx;*\n", content[:-3]]))
                intact = intact and f"h{i}.csv" not in text.decode("utf-8", "replace")
            (folder / f"h{i}.csv").write_text(content)
        path = folder / "schema.json"
        path.write_bytes(text)
        schema, error = outcome("schema files", lambda: load_schema(path))
    if error is None:  # a valid schema: it is written and read back the same
        assert schema_from_json(schema_to_json(schema)) == schema
        assert all(size > 0 for size in schema.shape)
    assert error is None or not intact, error  # a valid file with valid hierarchy files loads


@fuzz()
@given(value=json_values)
def test_any_json_value_is_a_schema_or_refused(value):
    _, error = outcome("schema objects", lambda: schema_from_json(value))
    assert error is not None or isinstance(value, dict)
