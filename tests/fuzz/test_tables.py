"""Fuzz: tables in CSV, TSV, .csv.gz and Parquet, counted and checked against the oracle count."""

from __future__ import annotations

import gzip
import re
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

from privelet_gui.engine import DomainError
from privelet_gui.engine.model.schema import pandas_reads_text_exactly
from privelet_gui.io import TableError, TableOptions, count_table, read_table

from .support import fuzz, outcome
from .tables import FORMATS, OracleError, cases, oracle, write_case


@pytest.mark.parametrize("fmt", FORMATS)
@fuzz()
@given(data=st.data())
def test_counts_agree_with_the_oracle_or_the_table_is_refused(fmt, data):
    case = data.draw(cases(fmt), label="case")
    with tempfile.TemporaryDirectory() as folder:
        path, bad_line = write_case(case, Path(folder), fmt)
        options = TableOptions(format="parquet") if fmt == "parquet" else TableOptions(
            delimiter=case.delimiter, header=case.header, format="csv"
        )
        result, error = outcome(f"tables {fmt}", lambda: count_table(path, case.schema, options, invalid=case.invalid, chunksize=case.chunk_rows))
        if fmt != "parquet" and not case.header and not case.rows:  # no line at all: no columns either
            assert isinstance(error, TableError) and "is empty" in str(error), error
            return
        if fmt != "parquet" and not pandas_reads_text_exactly(pd.__version__):
            data = path.read_bytes()
            if b"\0" in (gzip.decompress(data) if fmt == "csv.gz" else data):  # pandas < 3.1 cuts values there
                assert isinstance(error, TableError), error  # refused: for the NUL, or a row's extra fields
                return
        if bad_line is not None:
            assert isinstance(error, TableError), (bad_line, error)
            fields = len(case.columns) + 2
            assert re.search(rf"line ({bad_line:,}|{bad_line}) has {fields} fields but the header has "
                             rf"{len(case.columns)}", str(error)), (bad_line, str(error))
            return
        try:
            expected, counted = oracle(case)
        except OracleError as refused:
            assert isinstance(error, DomainError), (refused.attribute, error)
            assert error.attribute == refused.attribute
            return
        assert error is None, error
        matrix, report = result
        np.testing.assert_array_equal(matrix, expected)
        assert report.rows_counted == counted and report.rows_read == case.rows + case.padding
        if fmt != "parquet":  # reading gives back every cell's text (only empty cells are missing)
            table = read_table(path, options)
            for i in range(len(case.columns)):
                cells = [case.text_cells(row)[i] for row in range(case.rows)]
                read = table.iloc[case.padding :, i].tolist()
                assert [None if c == "" else c for c in cells] == [None if v != v else v for v in read]
