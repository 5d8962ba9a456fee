"""Column summaries of typed chunks (a Parquet file's) equal those of the same cells as text."""

from __future__ import annotations

import math
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given
from hypothesis import strategies as st

from privelet_gui import io as pio
from privelet_gui.io import tables as tables_module

_FLOATS = st.one_of(
    st.sampled_from([0.0, -0.0, 20.0, 2.5, -3.0, math.inf, -math.inf, 2.0**53, 2.0**53 - 1, 1e16, 0.1]),
    st.floats(allow_nan=False, width=64),
)
_TEXTS = st.sampled_from(["a", "b", "N", "-1", "20", "20.0", "2.5", "", "  ", " a", "é"])
_CELLS: dict[str, tuple[pa.DataType, Any]] = {
    "int64": (pa.int64(), st.integers(-(2**63), 2**63 - 1) | st.sampled_from([-1, 0, 20])),
    "float64": (pa.float64(), _FLOATS),
    "string": (pa.string(), _TEXTS),
    "bool": (pa.bool_(), st.booleans()),
}


@st.composite
def columns(draw: Any) -> tuple[pa.DataType, list[Any]]:
    kind, cells = _CELLS[draw(st.sampled_from(sorted(_CELLS)))]
    values = draw(st.lists(st.none() | cells, min_size=1, max_size=12))
    return kind, values


@given(st.lists(columns(), min_size=1, max_size=3), st.sampled_from([(), ("N",), ("-1", "20")]))
def test_a_parquet_files_summary_read_typed_equals_its_text(tmp_path_factory: pytest.TempPathFactory, drawn, markers):
    """Every column kind, empty and blank cells, texts meaning missing, chunks of 3 rows: the
    summary made from typed chunks (each distinct value turned into text once) equals the one
    made from the text of every cell, as the file reads."""
    rows = min(len(values) for _, values in drawn)
    table = pa.table({f"c{i}": pa.array(values[:rows], type=kind) for i, (kind, values) in enumerate(drawn)})
    path = tmp_path_factory.mktemp("summary") / "t.parquet"
    pq.write_table(table, path, row_group_size=3)
    options = pio.TableOptions(missing_values=markers)
    text = pd.concat(list(pio.iter_table_chunks(path, options)), ignore_index=True)
    expected = pio.summarize_frame(text, markers)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(tables_module, "_chunk_rows", lambda source, chunksize: 3)
        summary = pio.summarize_table(path, options)
    assert summary.rows == rows
    assert summary.columns == expected


def test_a_schema_inferred_from_a_file_in_chunks_equals_the_one_from_the_whole_table(tmp_path, monkeypatch):
    """``privelet schema infer`` reads the file as the app does, a chunk at a time: the same
    schema as from the whole table in memory, for the columns asked, with progress."""
    rows = [("age", "sex", "job", "wage")] + [
        (str(20 + i % 50), "FM"[i % 2], ["Sales", "Tech", "N"][i % 3], f"{i * 12.5:.1f}") for i in range(40)
    ]
    path = tmp_path / "t.csv"
    path.write_text("".join(",".join(r) + "\n" for r in rows))
    options = pio.TableOptions(missing_values=("N",))
    monkeypatch.setattr(tables_module, "_chunk_rows", lambda source, chunksize: 7)
    reports: list[float] = []
    schema = pio.infer_table_schema(path, options, progress=lambda f, stage: reports.append(f))
    assert schema == pio.infer_schema(pio.read_table(path, options), options.missing_values)
    assert reports[-1] == 1.0 and len(reports) > 6  # a report per chunk
    assert pio.infer_table_schema(path, options, columns=["sex", "wage"]).names == ("sex", "wage")


def test_every_parquet_type_summarises_typed_as_its_text(tmp_path):
    """Dates, timestamps, decimals, bytes, dictionary-encoded, narrow, unsigned and extreme
    integers, booleans: the typed summary equals the text one, column for column."""
    import datetime
    import decimal

    table = pa.table({
        "date": pa.array([datetime.date(2020, 1, 1), None, datetime.date(1, 1, 1)]),
        "time": pa.array([datetime.datetime(2020, 1, 1, 5), None, datetime.datetime(2020, 1, 1, 5)]),
        "decimal": pa.array([decimal.Decimal("1.50"), None, decimal.Decimal("2")]),
        "bytes": pa.array([b"x", b"y", None]),
        "coded numbers": pa.array([1, 2, 1]).dictionary_encode(),
        "coded texts": pa.array(["a", " ", "a"]).dictionary_encode(),
        "float32": pa.array([1.0, 2.5, None], type=pa.float32()),
        "uint8": pa.array([1, None, 255], type=pa.uint8()),
        "bool": pa.array([True, None, False]),
        "int64": pa.array([2**63 - 1, -(2**63), None], type=pa.int64()),
        "large text": pa.array(["x", "y", "x"], type=pa.large_string()),
    })
    path = tmp_path / "typed.parquet"
    pq.write_table(table, path)
    summary = pio.summarize_table(path)
    assert summary.columns == pio.summarize_frame(pio.read_table(path))
    assert summary.column("coded texts").empty == 1 and summary.column("float32").values == ("1", "2.5")
