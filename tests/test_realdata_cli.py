"""The command line on a table with texts meaning missing and labelled codes: ``--missing``,
the count report, and label columns in ``privelet export``."""

from __future__ import annotations

import json
import re

import pandas as pd

from privelet_gui import io as pio
from privelet_gui.cli import main
from privelet_gui.engine import Hierarchy, NominalAttribute, OrdinalAttribute, Schema
from tests.acs_like import write_acs_like


def call(capsys, *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def test_missing_values_from_inference_to_export(capsys, tmp_path):
    files = write_acs_like(tmp_path)
    code, out, _ = call(capsys, "schema", "infer", str(files.table), "--missing", "N", "--columns", "NOC,PINCP")
    inferred = json.loads(out)
    assert code == 0 and inferred["attributes"][0]["missing_at_end"] and inferred["attributes"][1]["type"] == "ordinal"

    labels = pio.read_display_labels(files.dictionary, pio.read_hierarchy(files.hierarchy), entry="INDP_CAT").labels
    schema = Schema([
        NominalAttribute("INDP", pio.read_hierarchy(files.hierarchy).with_display_labels(labels), drop_missing=True),
        OrdinalAttribute.integer_range("NOC", 0, 19, missing="N", missing_at_end=True),
        NominalAttribute("SEX", Hierarchy.flat(["1", "2"]).with_display_labels({"1": "Male", "2": "Female"})),
    ])
    pio.save_schema(schema, tmp_path / "schema.json")
    release = tmp_path / "r.npz"
    args = ("release", str(files.table), "--schema", str(tmp_path / "schema.json"), "--epsilon", "1",
            "--out", str(release), "--seed", "3")
    code, _, err = call(capsys, *args)
    assert code == 1 and "INDP" in err and "name texts that mean a missing value" in err  # N is no industry code
    code, out, err = call(capsys, *args, "--missing", "N")
    assert code == 0, err
    assert "8 of 12 rows counted; 4 dropped as missing in 'INDP'" in err and "true counts" in err
    code, out, err = call(capsys, *args, "--missing", "N", "--neighbours", "add-remove", "--force", "--yes")
    assert code == 0, err
    counted = next(line for line in err.splitlines() if line.startswith("counted:"))
    assert "'INDP'" in counted and not re.search(r"\d", counted)  # n is private under add/remove

    code, _, err = call(capsys, "export", str(release), "--out", str(tmp_path / "r.csv"), "--allow-seeded")
    assert code == 0, err
    frame = pd.read_csv(tmp_path / "r.csv", comment="#", dtype=str)
    # INDP's labels are its categories' (groups): its values, the rows of the export, have none
    assert list(frame.columns) == ["INDP", "NOC", "SEX", "SEX_label", "noisy_count"]
    assert frame["SEX_label"].tolist()[:2] == ["Male", "Female"] and frame["NOC"].iloc[40] == "N"


def test_missing_option_is_checked(capsys, tmp_path):
    files = write_acs_like(tmp_path)
    code, _, err = call(capsys, "schema", "infer", str(files.table), "--missing", ",".join(str(i) for i in range(101)))
    assert code == 2
    assert "argument --missing" in err and "more than 100" in err
