"""Schema files: bin edges and open ends (version 3), every key documented, texts meaning
missing that are values, and display labels without control characters (issue 39)."""

from __future__ import annotations

import json
import re

import pytest

from privelet_gui.engine import HierarchyError, NumericBins, OrdinalAttribute, Schema, SchemaError
from privelet_gui.io import load_schema, read_display_labels, save_schema, schema_from_json, schema_to_json
from privelet_gui.io import schema as schema_module
from privelet_gui.io.schema import _BIN_KEYS, _NOMINAL_KEYS, _ORDINAL_KEYS

BRACKETS = {"name": "income", "type": "ordinal",
            "bins": {"edges": [0, 1, 10000, 50000, 150000], "open_below": True, "open_above": True}}


def _file(*attributes: dict, version: int = 3) -> dict:
    return {"version": version, "attributes": list(attributes)}


def test_bin_edges_and_open_ends_round_trip_through_a_schema_file(tmp_path):
    schema = schema_from_json(_file(
        BRACKETS,
        {"name": "age", "type": "ordinal", "bins": {"start": 0, "stop": 90, "width": 10, "open_above": True}},
        {"name": "wage", "type": "ordinal", "bins": {"start": 0, "stop": 200000, "width": 10000},
         "out_of_range": "clamp"},
    ))
    income = schema["income"]
    assert income.bins == NumericBins.from_edges([0, 1, 10000, 50000, 150000], open_below=True, open_above=True)
    assert list(income.labels) == ["(-inf, 0)", "[0, 1)", "[1, 10000)", "[10000, 50000)", "[50000, 150000)",
                                   "[150000, inf)"]
    assert schema["age"].labels[-1] == "[90, inf)" and schema["wage"].labels[-1] == "[190000, inf)"
    save_schema(schema, tmp_path / "s.json")
    written = json.loads((tmp_path / "s.json").read_text())
    assert written["version"] == 3
    assert written["attributes"][0]["bins"] == BRACKETS["bins"]  # whole edges written as integers
    assert written["attributes"][1]["bins"] == {"start": 0, "stop": 90, "width": 10, "open_above": True}
    assert written["attributes"][2]["bins"] == {"start": 0, "stop": 200000, "width": 10000}
    assert load_schema(tmp_path / "s.json") == schema


def test_files_without_edges_or_open_ends_keep_their_older_version():
    plain = Schema([OrdinalAttribute("wage", bins=NumericBins(0, 10, 1), out_of_range="clamp")])
    assert schema_to_json(plain)["version"] == 1
    missing = Schema([OrdinalAttribute("wage", bins=NumericBins(0, 10, 1), missing_values=["N"], drop_missing=True)])
    assert schema_to_json(missing)["version"] == 2
    fractional = Schema([OrdinalAttribute("w", bins=NumericBins.from_edges([0.5, 1.25, 2**60]))])
    assert schema_to_json(fractional)["attributes"][0]["bins"] == {"edges": [0.5, 1.25, 2.0**60]}


@pytest.mark.parametrize(
    ("bins", "message"),
    [
        ({"edges": [0, 10, 10]}, r"bins\.edges\[2\]: 10 is not greater than the edge before it \(10\); list the edges"),
        ({"edges": [0, "a"]}, r"bins\.edges\[1\]: must be a finite number, got 'a'"),
        ({"edges": [5]}, r"bins\.edges: must be a list of at least two numbers, got \[5\]"),
        ({"edges": [0, 1], "width": 1}, r"bins\.width: bins have either edges or start, stop and width"),
        ({"edges": [0, 1], "open_above": "yes"}, r"bins\.open_above: must be true or false"),
        ({"edges": [0, 1], "open": True}, r"bins\.open: unknown key; bins have start, stop and width, or edges"),
        ({"start": -1.7e308, "stop": 1.7e308, "width": 1e300}, r"at attributes\[0\]\.bins: bins from .* span more than "
                                                              r"float64 can hold"),
        ({"start": 0, "stop": 10}, r"bins\.width: missing"),
    ],
)
def test_bin_mistakes_name_the_attribute_the_path_and_the_fix(bins, message):
    with pytest.raises(SchemaError, match=message):
        schema_from_json(_file({"name": "w", "type": "ordinal", "bins": bins}))


def test_a_file_with_edges_is_refused_by_name_by_a_version_that_cannot_read_them():
    with pytest.raises(SchemaError, match="this file has version 4, newer"):
        schema_from_json(_file(BRACKETS, version=4))


def test_the_module_docstring_lists_every_key():
    doc = schema_module.__doc__
    assert doc is not None
    for key in {*_ORDINAL_KEYS, *_NOMINAL_KEYS, *_BIN_KEYS, "version", "attributes"}:
        assert re.search(rf'``"?{key}"?``|"{key}"', doc), key


def test_missing_values_naming_a_value_of_the_domain_are_refused_where_they_stand():
    entry = {"name": "age", "type": "ordinal", "range": [0, 99], "missing_values": ["NA", "99"], "drop_missing": True}
    with pytest.raises(SchemaError, match=r"'age' at attributes\[0\]: .*a cell holding '99' is one of its values"):
        schema_from_json(_file(entry))
    flag = {"name": "flag", "type": "nominal", "values": ["Y", "N"], "missing_values": ["N"]}
    with pytest.raises(SchemaError, match=r"'flag' at attributes\[0\]: .*'N' is one of its values"):
        schema_from_json(_file(flag))


@pytest.mark.parametrize(
    ("label", "what"),
    [("Tab\there", "a tab"), ("two\nlines", "a line break"), ("bell\x07", "a control character"),
     ("esc\x1b[31m", "a control character"), ("c1\x85", "a control character"),
     ("gnp\u202eLMTH.exe", "a bidirectional text control"), ("para\u2029", "a line break")],
)
def test_display_labels_with_control_characters_are_refused_at_import(label, what, tmp_path):
    entry = {"name": "job", "type": "nominal", "values": ["1", "2"], "display_labels": {"1": label}}
    with pytest.raises(HierarchyError, match=rf"'job' at attributes\[0\]\.display_labels: the display label of '1', "
                                             rf".* holds {what} .*remove that character"):
        schema_from_json(_file(entry, version=2))
    hierarchy = schema_from_json(_file({"name": "job", "type": "nominal", "values": ["1", "2"]}))["job"].hierarchy
    labels = tmp_path / "labels.json"
    labels.write_text(json.dumps({"1": label, "2": "fine"}))
    with pytest.raises(HierarchyError, match=rf"labels\.json: the display label of '1', .* holds {what}"):
        read_display_labels(labels, hierarchy)
    table = tmp_path / "labels.csv"
    table.write_text(f'code,label\n1,"{label}"\n2,fine\n', encoding="utf-8")
    if label.strip() == label:  # a CSV cell keeps inner control characters (its edges are trimmed)
        with pytest.raises(HierarchyError, match=f"holds {what}"):
            read_display_labels(table, hierarchy)


def test_formula_like_display_labels_are_accepted_and_kept_exactly():
    entry = {"name": "job", "type": "nominal", "values": ["1", "2"], "display_labels": {"1": "=SUM(A1)", "2": "-x"}}
    assert schema_from_json(_file(entry, version=2))["job"].display_labels == ("=SUM(A1)", "-x")
