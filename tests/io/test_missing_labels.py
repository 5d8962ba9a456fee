"""Real tables in io: texts meaning missing in reading options, summaries and inference; missing
settings and display labels in schema and project files; label columns in exports; labels
read from data dictionaries, CSV files and labelled twins."""

from __future__ import annotations

import copy
import dataclasses
import json

import numpy as np
import pandas as pd
import pytest

from privelet_gui import io as pio
from privelet_gui.engine import (
    DomainError,
    Hierarchy,
    HierarchyError,
    NominalAttribute,
    OrdinalAttribute,
    PriveletError,
    ReleaseSpec,
    Schema,
    SchemaError,
)
from privelet_gui.io import summary as summary_module
from privelet_gui.io.project import (
    PROJECT_VERSION,
    Project,
    ProjectError,
    load_project,
    project_from_json,
    save_project,
)
from tests.acs_like import ACS_ROWS, INDP_CATEGORY, write_acs_like

N = pio.TableOptions(missing_values=("N",))


@pytest.fixture
def acs(tmp_path):
    return write_acs_like(tmp_path / "acs")


def acs_schema(files) -> Schema:
    indp = pio.read_hierarchy(files.hierarchy)
    return Schema([
        NominalAttribute("PUMA", Hierarchy.flat(sorted({r[0] for r in ACS_ROWS}))),
        OrdinalAttribute.integer_range("AGEP", 0, 99),
        NominalAttribute("SEX", Hierarchy.flat(["1", "2"])),
        NominalAttribute("INDP", indp, drop_missing=True),
        OrdinalAttribute.integer_range("NOC", 0, 19, missing="N", missing_at_end=True),
    ])


# -- reading and counting -----------------------------------------------------------------------------


def test_tables_are_counted_with_the_table_texts_meaning_missing(acs, tmp_path):
    schema = acs_schema(acs)
    matrix, report = pio.count_table(acs.table, schema, N)
    assert report.rows_read == 12 and report.rows_counted == 8  # the four children have no industry
    assert report.missing_dropped == {"PUMA": 0, "AGEP": 0, "SEX": 0, "INDP": 4, "NOC": 0}
    assert matrix.sum(axis=(0, 1, 2, 3)).tolist()[:4] == [4, 2, 1, 1] and matrix[..., 20].sum() == 0
    # the same table as Parquet, and gzip-compressed: the same counts
    frame = pd.read_csv(acs.table, dtype=str, keep_default_na=False)
    frame.to_parquet(tmp_path / "acs.parquet")
    frame.to_csv(tmp_path / "acs.csv.gz", index=False)
    for other in (tmp_path / "acs.parquet", tmp_path / "acs.csv.gz"):
        again, again_report = pio.count_table(other, schema, N)
        np.testing.assert_array_equal(again, matrix)
        assert again_report == report
    # without the reading options, N is no industry code: the count says what to do
    with pytest.raises(DomainError, match=r"INDP.*'N'.*name texts that mean a missing value"):
        pio.count_table(acs.table, schema)


def test_a_column_list_of_its_own_replaces_the_table_list(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("wind,age\nN,30\nS,N\nN,41\n")
    schema = Schema([
        NominalAttribute("wind", Hierarchy.flat(["N", "S"]), missing_values=[]),  # N is north here
        OrdinalAttribute.integer_range("age", 0, 99, drop_missing=True),
    ])
    matrix, report = pio.count_table(path, schema, N)
    assert matrix.sum(axis=1).tolist() == [2, 0] and report.missing_dropped == {"wind": 0, "age": 1}


def test_reading_options_check_their_texts():
    assert pio.TableOptions(missing_values=["N", "NA"]).missing_values == ("N", "NA")  # a list, as JSON gives
    for bad, message in (("N", "a list of texts"), (["N", 1], "must be text"), ([""], "always missing")):
        with pytest.raises(pio.TableError, match=message):
            pio.TableOptions(missing_values=bad)
    assert pio.parse_missing_values(" N ,NA,, N") == ("N", "NA")


# -- summaries and inference ----------------------------------------------------------------------------


def test_the_summary_counts_missing_cells_by_text(acs):
    summary = pio.summarize_table(acs.table, N)
    pincp, indp, puma = summary.column("PINCP"), summary.column("INDP"), summary.column("PUMA")
    assert (pincp.missing, pincp.numeric, pincp.minimum, pincp.maximum) == (3, True, 0.0, 74000.0)
    assert pincp.missing_text() == "3, all 'N'" and pincp.missing_counts == (("N", 3),)
    assert (indp.numeric, indp.integer, indp.distinct) == (True, True, 6)
    assert puma.missing == 0 and not puma.numeric
    # the same column when nothing but empty cells is missing: text, and N is why
    raw = pio.summarize_table(acs.table)
    assert not raw.column("PINCP").numeric and raw.column("PINCP").non_numbers() == ("N",)
    assert pio.suggest_missing_values(raw.columns) == {"N": ("INDP", "INDP_CAT", "PINCP", "NOC")}
    assert raw.column("PINCP").with_missing_values(["N"]) == pincp
    assert pincp.with_missing_values([]) == raw.column("PINCP")


def test_a_column_of_too_many_values_keeps_its_texts_and_range(monkeypatch):
    monkeypatch.setattr(summary_module, "MAX_TRACKED_VALUES", 10)
    frame = pd.DataFrame({"income": [str(i * 100) for i in range(40)] + ["N", "N", "-1"]})
    column = pio.summarize_frame(frame, ["-1"])[0]
    assert column.values is None and not column.numeric  # N is text
    numbers = column.with_missing_values(["N", "-1"])
    assert (numbers.numeric, numbers.missing, numbers.minimum, numbers.maximum, numbers.approximate) == (
        True, 3, 0.0, 3900.0, False
    )
    # -1 was a text meaning missing when the table was read: as a value again it widens the range
    assert column.with_missing_values(["N"]).minimum == -1.0
    # a number-like text only now said to mean missing cannot be taken out of what was counted
    guessed = column.with_missing_values(["N", "-1", "3900"])
    assert guessed.approximate and guessed.missing_text() == "3 or more: 'N' 2, '-1' 1"


def test_inference_gives_missing_cells_a_value_of_their_own(acs):
    summary = pio.summarize_table(acs.table, N)
    agep, noc, indp_cat = (pio.infer_attribute(summary.column(c)) for c in ("AGEP", "NOC", "INDP_CAT"))
    assert agep.missing is None and agep.size == 69  # 3..71, nothing missing
    assert (noc.missing, noc.missing_at_end, list(noc.labels)) == ("N", True, ["0", "1", "2", "3", "N"])
    assert indp_cat.missing == "N" and indp_cat.labels[-1] == "N"
    assert pio.infer_schema(pd.DataFrame({"a": ["1", "", "N"]}), ["N"])["a"].missing == "(missing)"  # two kinds


# -- schema files ----------------------------------------------------------------------------------------


def test_schema_files_keep_the_missing_settings_and_the_labels(tmp_path):
    indp = Hierarchy.from_nested({"*": {"0": ["170", "180"], "4": ["3390"]}}).with_display_labels(
        {"0": "AGR", "4": "MFG", "170": "Crop production"})
    schema = Schema([
        OrdinalAttribute.integer_range("AGEP", 0, 99, missing="N", missing_at_end=True, missing_values=["N"]),
        OrdinalAttribute.integer_range("NOC", 0, 19, drop_missing=True),
        NominalAttribute("INDP", indp, drop_missing=True, missing_values=[]),
    ])
    for files in (False, True):
        path = tmp_path / f"s{files}.json"
        pio.save_schema(schema, path, hierarchy_files=files, force=True)
        loaded = pio.load_schema(path)
        assert loaded == schema
        assert dict(loaded["INDP"].hierarchy.display_labels) == {"0": "AGR", "4": "MFG", "170": "Crop production"}
        assert (loaded["AGEP"].missing_at_end, loaded["NOC"].drop_missing, loaded["INDP"].missing_values) == (True, True, ())
    text = pio.schema_to_json(schema)
    assert text["version"] == 2
    assert text["attributes"][0] == {"name": "AGEP", "type": "ordinal", "range": [0, 99], "missing_values": ["N"],
                                     "missing": "N", "missing_at_end": True}
    assert text["attributes"][2]["display_labels"] == {"0": "AGR", "4": "MFG", "170": "Crop production"}
    # a schema using none of it is still version 1, which older versions read
    assert pio.schema_to_json(Schema([OrdinalAttribute.integer_range("a", 0, 9)]))["version"] == 1


BASE = {"version": 2, "attributes": [
    {"name": "AGEP", "type": "ordinal", "range": [0, 99]},
    {"name": "INDP", "type": "nominal", "hierarchy": {"*": {"0": ["170"], "4": ["3390"]}}},
]}


def _with(path: str, value: object) -> dict:
    obj = copy.deepcopy(BASE)
    *where, key = path.split(".")
    target = obj["attributes"][int(where[0])]
    target[key] = value
    return obj


@pytest.mark.parametrize(
    ("obj", "message"),
    [
        (_with("0.missing_values", "N"), r"attributes\[0\]\.missing_values: must be a list of texts"),
        (_with("0.missing_values", ["N", 5]), r"attributes\[0\]\.missing_values: a value meaning missing must be text"),
        (_with("0.missing_values", [""]), r"missing_values: empty cells are always missing"),
        (_with("0.drop_missing", "yes"), r"attributes\[0\]\.drop_missing: must be true or false"),
        (_with("0.missing_at_end", True), r"attributes\[0\]\.missing_at_end: needs the label"),
        (_with("1.missing_at_end", True), r"attributes\[1\]\.missing_at_end: unknown key for a nominal attribute"),
        (_with("1.display_labels", ["AGR"]), r"attributes\[1\]\.display_labels: must map codes to labels"),
        (_with("1.display_labels", {"9": "Nine"}), r"display_labels: .*'9', which is not a value or group"),
        (_with("1.display_labels", {"0": "a\nb"}), r"display_labels: .*line break"),
        (_with("0.display_labels", {"1": "one"}), r"unknown key for a ordinal attribute"),
    ],
)
def test_schema_files_are_checked(obj, message):
    with pytest.raises((SchemaError, HierarchyError), match=message):
        pio.schema_from_json(obj)


def test_drop_and_a_value_are_refused_together():
    obj = _with("0.drop_missing", True)
    obj["attributes"][0]["missing"] = "5"
    with pytest.raises(SchemaError, match=r"drop_missing: missing cells cannot both count as '5' and be dropped"):
        pio.schema_from_json(obj)
    obj["attributes"][0].update({"drop_missing": False, "missing": "5", "missing_at_end": True})
    with pytest.raises(SchemaError, match=r"missing: '5' is already one of the attribute's values"):
        pio.schema_from_json(obj)


# -- projects ---------------------------------------------------------------------------------------------


def test_projects_keep_the_reading_texts_and_draft_labels(tmp_path):
    project = Project(
        table_path=tmp_path / "acs.csv", table_options=pio.TableOptions(delimiter=",", missing_values=("N", "NA")),
        schema=Schema([OrdinalAttribute.integer_range("AGEP", 0, 99, drop_missing=True)]),
        drafts={"INDP": {"column": "INDP", "tree": {"label": "*", "children": [
            {"label": "0", "display": "AGR", "children": []}, {"label": "170", "display": "Crop production"}]}}},
        attribute_order=("AGEP", "INDP"),
    )
    path = tmp_path / "p.privelet"
    save_project(project, path)
    stored = json.loads(path.read_text())
    assert stored["version"] == PROJECT_VERSION == 5 and stored["table"]["options"]["missing_values"] == ["N", "NA"]
    assert load_project(path) == project
    # a version 2 project (before texts meaning missing and the sampler) opens with none, and exact noise
    stored["version"] = 2
    del stored["table"]["options"]["missing_values"], stored["privacy"]["sampler"]
    old = project_from_json(stored, tmp_path)
    assert old.table_options.missing_values == () and old.sampler == "exact"


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda o: o["table"]["options"].update(missing_values="N"), "table.options.*a list of texts"),
        (lambda o: o["table"]["options"].update(missing_values=[1]), "table.options.*must be text"),
        (lambda o: o["drafts"]["X"]["tree"].update(display=7), r"tree\.display must be a display label"),
        (lambda o: o["drafts"]["X"]["tree"].update(display=""), r"tree\.display must be a display label"),
    ],
)
def test_hostile_projects_are_refused(tmp_path, change, message):
    obj = {"format": "privelet-studio-project", "version": 3,
           "table": {"path": "t.csv", "options": {"delimiter": ",", "missing_values": ["N"]}},
           "drafts": {"X": {"column": "X", "tree": {"label": "*", "children": [{"label": "a"}]}}},
           "attribute_order": ["X"]}
    change(obj)
    with pytest.raises(ProjectError, match=message):
        project_from_json(obj, tmp_path)


# -- exports ------------------------------------------------------------------------------------------------


def _labelled_release() -> object:
    indp_cat = Hierarchy.flat(["0", "4", "N"]).with_display_labels({"0": "AGR", "4": "MFG"})
    schema = Schema([NominalAttribute("SEX", Hierarchy.flat(["1", "2"]).with_display_labels({"1": "Male", "2": "Female"})),
                     NominalAttribute("INDP_CAT", indp_cat), OrdinalAttribute.integer_range("NOC", 0, 1)])
    return ReleaseSpec(schema, 1.0).run(np.zeros(schema.shape), rng=np.random.default_rng(0))


def test_exports_put_a_label_column_beside_labelled_codes(tmp_path):
    release = _labelled_release()
    frame = pio.release_frame(release)
    assert list(frame.columns) == ["SEX", "SEX_label", "INDP_CAT", "INDP_CAT_label", "NOC", "noisy_count"]
    assert frame[["SEX", "SEX_label", "INDP_CAT", "INDP_CAT_label"]].drop_duplicates().head(3).values.tolist() == [
        ["1", "Male", "0", "AGR"], ["1", "Male", "4", "MFG"], ["1", "Male", "N", "N"]]
    assert pio.export_release(release, tmp_path / "r.csv", allow_seeded=True) == 12
    read = pd.read_csv(tmp_path / "r.csv", comment="#", dtype=str)
    assert read["INDP_CAT_label"].tolist()[:6:2] == ["AGR", "MFG", "N"]  # NOC varies fastest
    # the labels travel in the release file: its export is the same
    pio.save_release(release, tmp_path / "r.npz", seed=0)
    again = pio.release_frame(pio.load_release(tmp_path / "r.npz"))
    pd.testing.assert_frame_equal(again, frame)


def test_codes_sharing_a_label_and_clashing_names():
    schema = Schema([NominalAttribute("a", Hierarchy.flat(["x", "y", "z"]).with_display_labels({"x": "Other", "y": "Other"}))])
    release = ReleaseSpec(schema, 1.0).run(np.zeros(3), rng=np.random.default_rng(0))
    assert pio.release_frame(release)["a_label"].tolist() == ["Other", "Other", "z"]
    clash = Schema([NominalAttribute("a", Hierarchy.flat(["x"]).with_display_labels({"x": "X"})),
                    OrdinalAttribute.integer_range("a_label", 0, 1)])
    release = ReleaseSpec(clash, 1.0).run(np.zeros((1, 2)), rng=np.random.default_rng(0))
    with pytest.raises(SchemaError, match="an attribute's column would be called 'a_label' in the export, like the label"):
        pio.release_frame(release)


def test_chunked_exports_have_the_label_columns_too(tmp_path):
    pytest.importorskip("zarr")
    from privelet_gui.io.zarr_releases import export_release_chunked, save_zarr_release

    release = _labelled_release()
    save_zarr_release(release, tmp_path / "r.zarr", seed=0)
    lazy = pio.load_release(tmp_path / "r.zarr")
    export_release_chunked(lazy, tmp_path / "chunked.csv")
    pio.export_release(release, tmp_path / "whole.csv", allow_seeded=True)
    assert (tmp_path / "chunked.csv").read_text() == (tmp_path / "whole.csv").read_text()


# -- label files -------------------------------------------------------------------------------------------


def test_labels_from_a_data_dictionary_a_twin_and_csv(acs, tmp_path):
    indp = pio.read_hierarchy(acs.hierarchy)
    assert pio.label_dictionary_entries(acs.dictionary) == ("PUMA", "SEX", "INDP_CAT")
    found = pio.read_display_labels(acs.dictionary, indp, entry="INDP_CAT")
    assert found.source == "data dictionary" and found.labels["4"] == "MFG: Manufacturing" and found.unknown == ("N",)
    twin = pio.read_display_labels(acs.labelled, indp)
    assert twin.source == "labelled twin" and twin.labels == {"0": "AGR", "3": "CON", "4": "MFG", "11": "EDU", "14": "ENT"}
    # the tree gained a value for missing cells (in a group of its own) since: still its twin, by leaf
    grown = Hierarchy.from_nested({"*": {**indp.to_nested()["*"], "N (group)": ["N"]}})
    assert pio.read_display_labels(acs.labelled, grown).labels == twin.labels  # not every leaf named "AGR"
    table = tmp_path / "labels.csv"
    table.write_text("code,label\n170,Crop production\n9999,Not in the tree\n")
    found = pio.read_display_labels(table, indp)
    assert (found.source, found.labels, found.unknown) == ("CSV", {"170": "Crop production"}, ("9999",))
    flat = tmp_path / "flat.json"
    flat.write_text(json.dumps({"170": "Crop production", "0": "AGR"}))
    assert pio.read_display_labels(flat, indp).labels == {"170": "Crop production", "0": "AGR"}
    assert set(INDP_CATEGORY) <= set(indp.leaves)


@pytest.mark.parametrize(
    ("content", "entry", "message"),
    [
        ('{"INDP": {"link": "x"}, "SEX": {"values": {"1": "M"}}}', None, "is a data dictionary: choose one of its entries"),
        ('{"INDP": {"link": "x"}, "SEX": {"values": {"1": "M"}}}', "INDP", "has no code labels"),
        ('{"INDP": {"link": "x"}}', "AGEP", "has no entry 'AGEP'"),
        ('["170", "Crop"]', None, "is a JSON object"),
        ('{"170": 5}', None, "some values are not text"),
        ('{"170": "two\\nlines"}', None, "line break"),
    ],
)
def test_label_files_are_checked(tmp_path, content, entry, message):
    path = tmp_path / "labels.json"
    path.write_text(content)
    with pytest.raises(PriveletError, match=message):
        pio.read_display_labels(path, Hierarchy.flat(["170", "180"]), entry=entry)


# -- the real ACS extract -----------------------------------------------------------------------------------


def test_the_massachusetts_extract(shared_data):
    folder = shared_data / "nist_acs_ma"
    table = folder / "ma2019.csv"
    summary = pio.summarize_table(table, N)
    for name in ("INDP", "NOC", "NPF", "PINCP", "POVPIP"):
        column = summary.column(name)
        assert column.numeric and column.missing > 0, name
    raw = pio.summarize_table(table)
    assert not raw.column("PINCP").numeric and raw.column("PINCP").with_missing_values(["N"]) == summary.column("PINCP")
    indp = pio.read_hierarchy(folder / "hierarchy_INDP.csv")
    labels = pio.read_display_labels(folder / "data_dictionary.json", indp, entry="INDP_CAT")
    assert len(labels.labels) == 19 and labels.labels["4"].startswith("MFG")
    twin = pio.read_display_labels(folder / "hierarchy_INDP_labelled.csv", indp)
    assert twin.labels["4"] == "MFG"
    schema = Schema([NominalAttribute("INDP", indp.with_display_labels(labels.labels), drop_missing=True),
                     OrdinalAttribute.integer_range("AGEP", 0, 99)])
    matrix, report = pio.count_table(table, schema, N)
    assert report.missing_dropped["INDP"] == summary.column("INDP").missing
    assert matrix.sum() == report.rows_counted == summary.rows - summary.column("INDP").missing
    assert dataclasses.replace(N).missing_values == ("N",)
