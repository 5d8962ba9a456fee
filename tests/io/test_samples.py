"""The bundled sample: the UCI Adult table, its schema, the ARX hierarchies and their licences."""

from __future__ import annotations

import numpy as np
import pandas as pd

from privelet_gui.engine import frequency_matrix
from privelet_gui.io import (
    count_table,
    load_schema,
    read_hierarchy,
    sample_hierarchy_paths,
    sample_schema_path,
    sample_table_path,
    sniff_table,
)


def test_sample_table_and_schema_count_every_row():
    table, schema_path = sample_table_path(), sample_schema_path()
    assert table.name == "adult.csv.gz" and table.is_file()
    options = sniff_table(table)
    assert (options.delimiter, options.header) == (";", True)
    schema = load_schema(schema_path)
    assert schema.names == ("age", "sex", "race", "education", "occupation", "native-country")
    assert schema.domain_from_data == ()  # public domains only
    assert schema["age"].labels[0] == "17" and schema["age"].labels[-1] == "90"
    matrix, report = count_table(table, schema)
    assert report.rows_read == report.rows_counted == 30_162
    frame = pd.read_csv(table, sep=";", dtype=str)
    np.testing.assert_array_equal(matrix, frequency_matrix(frame, schema))


def test_sample_is_the_shared_adult_table(shared_data):
    import gzip

    with gzip.open(sample_table_path(), "rb") as f:
        assert f.read() == (shared_data / "adult_arx" / "adult.csv").read_bytes()


def test_every_bundled_hierarchy_reads():
    paths = sample_hierarchy_paths()
    assert set(paths) == {"age", "education", "marital-status", "native-country", "occupation", "race",
                          "salary-class", "sex", "workclass"}
    sizes = {name: read_hierarchy(path).size for name, path in paths.items()}
    assert sizes["occupation"] == 14 and sizes["native-country"] == 41 and sizes["age"] == 100


def test_licences_and_attributions_ship_with_the_data():
    folder = sample_table_path().parent.parent
    licences = (folder / "LICENSES.md").read_text(encoding="utf-8")
    for needle in ("CC BY 4.0", "Kohavi", "Becker", "Apache License 2.0", "arx-deidentifier/arx", "LICENSE.ARX.txt"):
        assert needle in licences
    assert "Apache License" in (folder / "LICENSE.ARX.txt").read_text(encoding="utf-8")
    # never any dpbench data in the package
    assert not [p for p in folder.rglob("*") if "dpbench" in str(p).lower()]
