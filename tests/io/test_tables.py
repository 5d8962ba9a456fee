"""Reading tables: sniffing, encodings, compression, Parquet, chunked counting."""

from __future__ import annotations

import gzip
import itertools
import re
import threading
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from privelet_gui.engine import (
    Cancelled,
    DomainError,
    Hierarchy,
    NominalAttribute,
    NumericBins,
    OrdinalAttribute,
    Schema,
    frequency_matrix,
)
from privelet_gui.io import (
    TableError,
    TableOptions,
    count_table,
    iter_table_chunks,
    preview_table,
    read_table,
    sniff_table,
    table_columns,
)
from privelet_gui.io import tables as tables_module
from privelet_gui.io.summary import summarize_table
from privelet_gui.io.tables import read_ahead

ROWS = [
    ("age", "sex", "job", "income"),
    ("30", "F", "Tech-support", "1200.5"),
    ("41", "M", "Sales", "80"),
    ("30", "M", "Tech-support", "99999"),
    ("17", "F", "Craft-repair", "0"),
]

SCHEMA = Schema(
    [
        OrdinalAttribute.integer_range("age", 0, 99),
        NominalAttribute("sex", Hierarchy.flat(["F", "M"])),
        NominalAttribute(
            "job",
            Hierarchy.from_nested({"*": {"Technical": ["Tech-support", "Craft-repair"], "Other": ["Sales"]}}),
        ),
        OrdinalAttribute("income", bins=NumericBins(0, 100000, 1000)),
    ]
)


def write(path: Path, rows=ROWS, *, sep=",", newline="\n", encoding="utf-8", bom=False, gz=False) -> Path:
    text = newline.join(sep.join(r) for r in rows) + newline
    data = text.encode(encoding)
    if bom:
        data = b"\xef\xbb\xbf" + data
    if gz:
        data = gzip.compress(data)
    path.write_bytes(data)
    return path


def expected_matrix(rows=ROWS, schema=SCHEMA) -> np.ndarray:
    frame = pd.DataFrame(rows[1:], columns=rows[0])
    return frequency_matrix(frame, schema)


@pytest.mark.parametrize("sep", [",", ";", "|", "\t"])
def test_sniffs_each_delimiter_and_reads_the_table(tmp_path, sep):
    path = write(tmp_path / "t.csv", sep=sep)
    options = sniff_table(path)
    assert options.delimiter == sep
    assert options.header is True
    table = read_table(path)
    assert list(table.columns) == list(ROWS[0])
    assert table["job"].tolist() == [r[2] for r in ROWS[1:]]
    matrix, report = count_table(path, SCHEMA)
    np.testing.assert_array_equal(matrix, expected_matrix())
    assert report.rows_counted == 4


def test_sniffing_prefers_the_consistent_delimiter_over_commas_inside_values(tmp_path):
    rows = [("country", "region"), ("Korea, Republic of", "Asia"), ("France", "Europe")]
    path = write(tmp_path / "t.csv", rows, sep=";")
    assert sniff_table(path).delimiter == ";"
    assert read_table(path)["country"].tolist() == ["Korea, Republic of", "France"]


def test_bom_crlf_and_gzip_are_handled(tmp_path):
    path = write(tmp_path / "t.csv.gz", sep=";", newline="\r\n", bom=True, gz=True)
    options = sniff_table(path)
    assert (options.delimiter, options.encoding, options.format) == (";", "utf-8", "csv")
    table = read_table(path)
    assert list(table.columns) == list(ROWS[0])  # no BOM glued to the first name
    assert table["income"].tolist()[-1] == "0"  # no stray \r
    matrix, _ = count_table(path, SCHEMA)
    np.testing.assert_array_equal(matrix, expected_matrix())


def test_gzip_is_detected_by_content_not_name(tmp_path):
    path = write(tmp_path / "t.csv", gz=True)
    np.testing.assert_array_equal(count_table(path, SCHEMA)[0], expected_matrix())


@pytest.mark.parametrize("gz", [False, True])
def test_a_nul_byte_is_read_as_text_or_refused_naming_its_line(tmp_path, monkeypatch: pytest.MonkeyPatch, gz):
    rows = [*ROWS[:3], ("30", "F", "Sales\0Tech-support", "0"), ROWS[4]]
    path = write(tmp_path / ("t.csv.gz" if gz else "t.csv"), rows, gz=gz)
    if tables_module.pandas_reads_text_exactly(pd.__version__):  # pandas 3.1 keeps the value whole
        assert read_table(path)["job"].tolist()[2] == "Sales\0Tech-support"
        with pytest.raises(DomainError, match="Sales"):
            count_table(path, SCHEMA)
    # pandas before 3.1 reads "Sales\0Tech-support" as "Sales": the file is refused rather than miscounted
    monkeypatch.setattr(tables_module, "pandas_reads_text_exactly", lambda version: False)
    for read in (lambda: count_table(path, SCHEMA), lambda: read_table(path)):
        with pytest.raises(TableError, match=r"line 4 holds a NUL byte .*remove the NUL bytes, or upgrade pandas to 3\.1"):
            read()
    # a NUL in the second half of a file read by two threads: the line counts from the file's start
    long = write(tmp_path / "long.csv", [*ROWS, *([ROWS[1]] * 40_000), ("30", "F", "Sales\0", "0")])
    assert len(tables_module._byte_ranges(tables_module._resolve(long, None), parallel_min_bytes=1 << 16)) == 2
    with pytest.raises(TableError, match=f"line {len(ROWS) + 40_001:,} holds a NUL byte"):
        count_table(long, SCHEMA, parallel_min_bytes=1 << 16)


def test_other_encodings(tmp_path):
    rows = [("name", "city"), ("José", "Zürich"), ("Åsa", "Malmö")]
    path = write(tmp_path / "t.csv", rows, encoding="latin-1")
    assert sniff_table(path).encoding == "cp1252"
    with pytest.raises(TableError, match=r"not valid utf-8 text.*encoding"):
        read_table(path)
    table = read_table(path, TableOptions(encoding="latin-1"))
    assert table["city"].tolist() == ["Zürich", "Malmö"]
    utf16 = write(tmp_path / "u.csv", rows, encoding="utf-16")
    assert sniff_table(utf16).encoding == "utf-16"
    assert read_table(utf16, TableOptions(encoding="utf-16"))["name"].tolist() == ["José", "Åsa"]


def test_parquet(tmp_path):
    frame = pd.DataFrame(ROWS[1:], columns=ROWS[0])
    frame["age"] = frame["age"].astype(int)  # typed columns, as Parquet files usually have
    frame["income"] = frame["income"].astype(float)
    path = tmp_path / "t.parquet"
    frame.to_parquet(path)
    assert sniff_table(path).format == "parquet"
    text = read_table(path)
    assert text["age"].tolist() == ["30", "41", "30", "17"]  # as a CSV would read
    assert text["income"].tolist() == ["1200.5", "80", "99999", "0"]  # whole floats read as integers
    np.testing.assert_array_equal(count_table(path, SCHEMA)[0], expected_matrix())
    # Parquet without the extension: detected by its magic bytes.
    other = tmp_path / "data.bin"
    other.write_bytes(path.read_bytes())
    np.testing.assert_array_equal(count_table(other, SCHEMA)[0], expected_matrix())


def test_a_float_has_one_text_in_every_chunk_of_a_parquet_file(tmp_path, monkeypatch: pytest.MonkeyPatch):
    """20.0 reads as "20" in a chunk of whole numbers and in one holding 2.5: its rows are
    counted under one label and the summary lists each number once (a chunk's text used to
    depend on whether the chunk held a fraction, which split 20.0's rows between "20" and "20.0")."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = tmp_path / "codes.parquet"
    pq.write_table(pa.table({"code": [20.0, 30.0, 20.0, 30.0, 2.5, 20.0]}), path)
    chunks = [chunk["code"].tolist() for chunk in iter_table_chunks(path, chunksize=4)]
    assert chunks == [["20", "30", "20", "30"], ["2.5", "20"]]
    schema = Schema([NominalAttribute("code", Hierarchy.flat(["2.5", "20", "30"]))])
    matrix, report = count_table(path, schema, chunksize=4)
    assert matrix.tolist() == [1.0, 3.0, 2.0] and report.rows_counted == 6
    monkeypatch.setattr(tables_module, "_chunk_rows", lambda source, chunksize: 4)  # the summary's chunks
    column = summarize_table(path).columns[0]
    assert (column.values, column.distinct) == (("2.5", "20", "30"), 3)
    # a table held in memory, counted chunk by chunk: the same labels
    frames = [pd.DataFrame({"code": [20.0, 30.0]}), pd.DataFrame({"code": [2.5, 20.0]})]
    assert frequency_matrix(iter(frames), schema).tolist() == [1.0, 2.0, 1.0]


def test_header_guess_and_headerless_files(tmp_path):
    path = write(tmp_path / "t.csv", ROWS[1:])
    options = sniff_table(path)
    assert options.header is False
    assert table_columns(path, options) == ("column_1", "column_2", "column_3", "column_4")
    assert len(read_table(path, options)) == 4
    schema = Schema([OrdinalAttribute.integer_range("age", 0, 99, column="column_1")])
    matrix, _ = count_table(path, schema, options)
    assert matrix[30] == 2 and matrix.sum() == 4


def test_text_stays_text_and_only_empty_cells_are_missing(tmp_path):
    rows = [("code", "label"), ("007", "NA"), ("1", "None"), ("2", ""), ("3", "?")]
    path = write(tmp_path / "t.csv", rows)
    table = read_table(path)
    assert table["code"].tolist()[0] == "007"
    assert table["label"].tolist()[:2] == ["NA", "None"]
    assert table["label"].isna().tolist() == [False, False, True, False]


def test_preview_and_nrows(tmp_path):
    path = write(tmp_path / "t.csv", [ROWS[0]] + [ROWS[1]] * 50)
    assert len(preview_table(path, rows=20)) == 20
    assert len(read_table(path, nrows=7)) == 7
    assert len(preview_table(path, rows=0)) == 0
    assert list(preview_table(path, rows=0).columns) == list(ROWS[0])


def test_columns_subset_and_missing_column(tmp_path):
    path = write(tmp_path / "t.csv")
    assert list(read_table(path, columns=["job", "age"]).columns) == ["age", "job"]
    with pytest.raises(TableError, match=r"has no column 'salary'; its columns are 'age', 'sex'"):
        read_table(path, columns=["salary"])
    schema = Schema([OrdinalAttribute.integer_range("wage", 0, 9, column="salary")])
    with pytest.raises(TableError, match="no column 'salary'"):
        count_table(path, schema)


def test_malformed_tables(tmp_path):
    with pytest.raises(TableError, match="no such file"):
        read_table(tmp_path / "nope.csv")
    empty = tmp_path / "empty.csv"
    empty.write_bytes(b"")
    with pytest.raises(TableError, match="empty"):
        read_table(empty)
    ragged = write(tmp_path / "ragged.csv", [*ROWS, ("1", "F", "Sales", "3", "extra")])
    with pytest.raises(TableError, match="line 6 has 5 fields but the header has 4; check the delimiter"):
        count_table(ragged, SCHEMA)
    bad_gz = tmp_path / "bad.csv.gz"
    body = "".join(f"{i % 10},{i * 7919 % 1000}\n" for i in range(200_000))
    whole = gzip.compress(("a,b\n" + body).encode())
    bad_gz.write_bytes(whole[: len(whole) // 2])  # cut off half way
    with pytest.raises(TableError, match=r"cannot decompress the file .* is it a complete, valid \.gz file"):
        count_table(bad_gz, Schema([OrdinalAttribute.integer_range("a", 0, 9)]))
    not_gz = tmp_path / "fake.csv.gz"
    not_gz.write_bytes(b"\x1f\x8b" + b"garbage" * 10)
    with pytest.raises(TableError, match="cannot decompress"):
        read_table(not_gz)
    with pytest.raises(TableError, match="one character"):
        TableOptions(delimiter=";;")
    with pytest.raises(TableError, match="unknown encoding"):
        TableOptions(encoding="klingon")


def test_chunks_give_the_same_matrix_and_report(tmp_path):
    rng = np.random.default_rng(3)
    n = 5_000
    frame = pd.DataFrame(
        {
            "age": rng.integers(0, 100, n).astype(str),
            "sex": rng.choice(["F", "M"], n),
            "job": rng.choice(["Tech-support", "Craft-repair", "Sales"], n),
            "income": rng.integers(0, 100000, n).astype(str),
        }
    )
    path = tmp_path / "big.csv"
    frame.to_csv(path, index=False)
    whole = frequency_matrix(frame, SCHEMA)
    for chunksize in (333, 1000, 10_000):
        matrix, report = count_table(path, SCHEMA, chunksize=chunksize)
        np.testing.assert_array_equal(matrix, whole)
        assert report.rows_read == report.rows_counted == n
    chunks = list(iter_table_chunks(path, chunksize=1000))
    assert [len(c) for c in chunks] == [1000] * 5


def test_policies_match_the_engine(tmp_path):
    """Rows outside the domain, empty cells, clamp and drop: same matrix and report as the engine."""
    rows = [
        ("age", "sex", "job", "income"),
        ("30", "F", "Tech-support", "10"),
        ("31", "M", "Sales", "11"),
        ("130", "F", "Sales", "20"),  # age outside 0..99
        ("", "M", "Sales", "30"),  # missing age
        ("32", "F", "Sales", "12"),
        ("33", "F", "Sales", "13"),
        ("40", "X", "Sales", "40"),  # unknown sex
        ("50", "M", "", "-5"),  # missing job, negative income
        ("60", "M", "Sales", "abc"),  # unparsable income
    ]
    path = write(tmp_path / "t.csv", rows)
    frame = pd.DataFrame(rows[1:], columns=rows[0]).replace("", None)
    schema = Schema(
        [
            OrdinalAttribute.integer_range("age", 0, 99, out_of_range="clamp"),
            NominalAttribute("sex", Hierarchy.flat(["F", "M"])),
            NominalAttribute("job", Hierarchy.flat(["Tech-support", "Sales", "Unknown"]), missing="Unknown"),
            OrdinalAttribute("income", bins=NumericBins(0, 100, 10), out_of_range="drop"),
        ]
    )
    with pytest.raises(DomainError, match="attribute age"):
        count_table(path, schema)
    matrix, report = count_table(path, schema, invalid="drop")
    with pytest.warns(UserWarning):
        engine = frequency_matrix(frame, schema, invalid="drop")
    np.testing.assert_array_equal(matrix, engine)
    assert report.rows_read == 9
    assert report.rows_counted == 5  # four plain rows, and the clamped 130
    assert report.clamped["age"] == 1
    # the empty age is reported as a missing value, the others as values outside the domain
    assert report.missing_dropped == {"age": 1, "sex": 0, "job": 0, "income": 0}
    assert report.dropped == {"age": 0, "sex": 1, "job": 0, "income": 2}
    # chunks of two rows: some take the fast categorical path, some the engine's; same result
    chunked, chunked_report = count_table(path, schema, invalid="drop", chunksize=2)
    np.testing.assert_array_equal(chunked, engine)
    assert chunked_report == report


def test_progress_follows_bytes_and_cancel_stops(tmp_path):
    # 3 MB: the parser reads 256 KiB at a time, so the byte position moves a dozen times.
    path = write(tmp_path / "t.csv", [ROWS[0]] + [ROWS[1]] * 120_000)
    seen: list[tuple[float, str]] = []
    count_table(path, SCHEMA, progress=lambda f, stage: seen.append((f, stage)), chunksize=10_000)
    fractions = [f for f, _ in seen]
    assert fractions == sorted(fractions)
    assert fractions[-1] == 1.0
    assert len({round(f, 3) for f in fractions if 0 < f < 1}) >= 5  # the bar moves with the bytes
    assert any("counting rows" in stage for _, stage in seen)
    calls = []

    def cancel() -> bool:
        calls.append(1)
        return len(calls) > 3

    with pytest.raises(Cancelled):
        count_table(path, SCHEMA, should_cancel=cancel, chunksize=2_000)
    assert not _reader_threads()  # the background reader stopped with the count


def _reader_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "privelet-table-reader"]


def test_read_ahead_yields_every_chunk_in_order_and_reraises_reader_errors():
    assert list(read_ahead(lambda: (n for n in range(7)))) == list(range(7))

    def failing():
        yield "first"
        raise TableError("t.csv: expected 4 fields in line 9, saw 5")

    chunks = read_ahead(failing)
    assert next(chunks) == "first"
    with pytest.raises(TableError, match="line 9"):
        next(chunks)
    assert not _reader_threads()


def test_read_ahead_stops_and_closes_the_reader_when_the_caller_stops():
    closed = threading.Event()

    def endless():
        try:
            while True:
                yield "chunk"
        finally:
            closed.set()  # the file would be closed here

    chunks = read_ahead(endless)
    assert next(chunks) == "chunk"
    chunks.close()
    assert closed.is_set() and not _reader_threads()


def test_a_file_broken_midway_stops_the_count_and_its_reader(tmp_path):
    broken = tmp_path / "broken.csv.gz"
    body = "".join(f"{i % 10},{i * 7919 % 1000}\n" for i in range(200_000))
    whole = gzip.compress(("a,b\n" + body).encode())
    broken.write_bytes(whole[: len(whole) // 2])  # several chunks read fine, then the stream ends
    with pytest.raises(TableError, match="cannot decompress the file"):
        count_table(broken, Schema([OrdinalAttribute.integer_range("a", 0, 9)]), chunksize=5_000)
    assert not _reader_threads()


def test_large_sparse_matrix_is_scattered(tmp_path):
    """Many more cells than rows per chunk: counts are scattered (np.add.at), same result."""
    schema = Schema(
        [
            OrdinalAttribute.integer_range("a", 0, 4095),
            OrdinalAttribute.integer_range("b", 0, 1023),
        ]
    )
    rng = np.random.default_rng(0)
    frame = pd.DataFrame({"a": rng.integers(0, 4096, 20_000), "b": rng.integers(0, 1024, 20_000)})
    path = tmp_path / "t.csv"
    frame.to_csv(path, index=False)
    matrix, report = count_table(path, schema, chunksize=1_000)
    np.testing.assert_array_equal(matrix, frequency_matrix(frame, schema))
    assert matrix.dtype == np.float64 and report.rows_counted == 20_000


def test_census_income_counts_match_pandas(shared_data):
    """The real 199,523-row census file (gzip, 42 columns) against a plain pandas count."""
    path = shared_data / "census_income_kdd" / "census_income_kdd_train.csv.gz"
    options = sniff_table(path)
    assert (options.delimiter, options.header) == (",", True)
    schema = Schema(
        [
            OrdinalAttribute.integer_range("age", 0, 90),
            NominalAttribute("sex", Hierarchy.flat(["Female", "Male"])),
            OrdinalAttribute("wage", bins=NumericBins(0, 10000, 100), column="wage_per_hour"),
        ]
    )
    matrix, report = count_table(path, schema)
    frame = pd.read_csv(path, dtype=str, keep_default_na=False, usecols=["age", "sex", "wage_per_hour"])
    assert report.rows_counted == len(frame) == 199_523
    np.testing.assert_array_equal(matrix, frequency_matrix(frame, schema))
    assert matrix[:, :, 0].sum() == (frame["wage_per_hour"].astype(int) < 100).sum()


# -- big plain CSV files: byte ranges parsed in parallel ----------------------------------


def _random_rows(count: int, seed: int = 7) -> list[tuple[str, ...]]:
    rng = np.random.default_rng(seed)
    jobs = ("Tech-support", "Craft-repair", "Sales")
    return [
        (str(rng.integers(0, 100)), "FM"[rng.integers(0, 2)], jobs[rng.integers(0, 3)], str(rng.integers(0, 100000)))
        for _ in range(count)
    ]


#: Every file big enough to be cut, in three ranges.
THREE_RANGES = {"parallel_ranges": 3, "parallel_min_bytes": 0}


def test_byte_ranges_cut_only_after_newlines_and_only_when_safe(tmp_path):
    from privelet_gui.io.tables import _byte_ranges, _resolve

    path = write(tmp_path / "t.csv", [ROWS[0], *_random_rows(300)])
    data = path.read_bytes()
    ranges = _byte_ranges(_resolve(path, None), **THREE_RANGES)
    assert len(ranges) == 3 and ranges[0][0] == 0 and ranges[-1][1] == len(data)
    assert all(stop == start for (_, stop), (start, _) in itertools.pairwise(ranges))  # no gap, no overlap
    assert all(data[start - 1 : start] == b"\n" for start, _ in ranges[1:])
    quoted = write(tmp_path / "q.csv", [ROWS[0], *_random_rows(300)[:-1], ("30", "F", '"Sales"', "5")])
    utf16 = write(tmp_path / "u.csv", [ROWS[0], *_random_rows(300)], encoding="utf-16")
    compressed = write(tmp_path / "g.csv", [ROWS[0], *_random_rows(300)], gz=True)
    one_line = write(tmp_path / "h.csv", [ROWS[0]])
    for path, options in ((quoted, None), (utf16, TableOptions(encoding="utf-16")), (compressed, None), (one_line, None)):
        source = _resolve(path, options)
        assert _byte_ranges(source, **THREE_RANGES) == [(0, path.stat().st_size)], path.name


@pytest.mark.parametrize(
    "layout",
    [{}, {"newline": "\r\n", "bom": True}, {"sep": ";", "encoding": "latin-1"}, {"header": False}],
    ids=["lf", "crlf-bom", "latin-1", "no-header"],
)
def test_counting_in_parallel_ranges_equals_counting_in_one_pass(tmp_path, layout):
    header = layout.pop("header", True)
    rows = _random_rows(3000)
    rows[1500:1500] = [("",) * 0]  # a blank line in the middle
    path = write(tmp_path / "t.csv", ([ROWS[0]] if header else []) + rows, **layout)
    options = TableOptions(header=header, encoding=layout.get("encoding", "utf-8"))
    schema = SCHEMA if header else Schema([replace(a, column=f"column_{i + 1}") for i, a in enumerate(SCHEMA)])
    assert len(tables_module._byte_ranges(tables_module._resolve(path, options), **THREE_RANGES)) == 3
    seen: list[float] = []
    matrix, report = count_table(path, schema, options, chunksize=250, progress=lambda f, _: seen.append(f),
                                 **THREE_RANGES)
    one_pass, one_report = count_table(path, schema, options, chunksize=250, **{**THREE_RANGES, "parallel_ranges": 1})
    np.testing.assert_array_equal(matrix, one_pass)
    assert report == one_report and report.rows_counted == 3000
    assert seen == sorted(seen) and seen[-1] == 1.0


def test_an_error_in_a_later_range_stops_every_reader(tmp_path):
    rows = _random_rows(3000)
    rows[-1] = ("30", "X", "Sales", "5")  # not a leaf of sex, in the last range
    path = write(tmp_path / "t.csv", [ROWS[0], *rows])
    with pytest.raises(DomainError, match="'X'"):
        count_table(path, SCHEMA, chunksize=250, **THREE_RANGES)
    assert not _reader_threads()
    broken = tmp_path / "b.csv"
    broken.write_bytes(write(tmp_path / "ok.csv", [ROWS[0], *_random_rows(3000)]).read_bytes() + b"30,F,Sales\xe9,5\n")
    with pytest.raises(TableError, match="not valid utf-8"):
        count_table(broken, SCHEMA, chunksize=250, **THREE_RANGES)
    assert not _reader_threads()


def test_a_quote_past_the_sample_sends_the_count_back_to_one_pass(tmp_path, monkeypatch):
    # Quoted notes with line breaks only after the first 64 KiB: the file is cut, a range
    # meets a quote (maybe right where a cut split a note) and the count starts again.
    rows = [(*row, "plain") for row in _random_rows(8000)]
    rows[4000:] = [(*row[:4], f'"note {i}\nsecond line"') for i, row in enumerate(rows[4000:])]
    path = write(tmp_path / "t.csv", [(*ROWS[0], "note"), *rows])
    assert path.read_bytes().find(b'"') > 1 << 16
    assert len(tables_module._byte_ranges(tables_module._resolve(path, None), **THREE_RANGES)) == 3
    passes: list[bool] = []
    readers = tables_module._CountingReaders

    def spy(*args, one_pass=False, **kwargs):
        passes.append(one_pass)
        return readers(*args, one_pass=one_pass, **kwargs)

    monkeypatch.setattr(tables_module, "_CountingReaders", spy)
    seen: list[float] = []
    matrix, report = count_table(path, SCHEMA, chunksize=500, progress=lambda f, _: seen.append(f), **THREE_RANGES)
    assert passes == [False, True]  # cut in ranges, then once more in one pass
    frame = pd.read_csv(path, dtype=str, keep_default_na=False)
    assert report.rows_counted == len(frame) == 8000
    np.testing.assert_array_equal(matrix, frequency_matrix(frame, SCHEMA))
    assert seen == sorted(seen) and not _reader_threads()


# -- hostile tables: no traceback, no silent miscount ----------------------------------------------

SEX_AGE = Schema([OrdinalAttribute.integer_range("age", 0, 99), NominalAttribute("sex", Hierarchy.flat(["F", "M"]))])


def _padded(extra_row: str, *, rows: int = 20_000, newline: str = "\n") -> str:
    """A table with a row of extra fields after its first 64 KiB (line rows + 2)."""
    body = "".join(f"{i % 90},{'FM'[i % 2]},Sales\n" for i in range(rows))
    return ("age,sex,job\n" + body + extra_row + "\n" + body).replace("\n", newline)


@pytest.mark.parametrize("newline", ["\n", "\r\n", "\r"], ids=["LF", "CRLF", "CR"])
@pytest.mark.parametrize("gz", [False, True], ids=["plain", "gzip"])
@pytest.mark.parametrize("schema", [SEX_AGE, Schema([*SEX_AGE, NominalAttribute("job", Hierarchy.flat(["Sales"]))])],
                         ids=["some columns", "every column"])
def test_a_row_with_extra_fields_past_the_sample_is_refused_with_its_line(tmp_path, newline, gz, schema):
    text = _padded("30,F,Sales,4,5,6", newline=newline)
    assert len(text) > 1 << 17
    path = tmp_path / ("t.csv.gz" if gz else "t.csv")
    path.write_bytes(gzip.compress(text.encode()) if gz else text.encode())
    with pytest.raises(TableError, match=r"line 20,002 has 6 fields but the header has 3; check the delimiter \(comma\)"):
        count_table(path, schema)
    with pytest.raises(TableError, match="line 20,002 has 6 fields"):
        read_table(path, columns=["age"])


@pytest.mark.parametrize("extra_row", ['30,"F",Sales,4', "30,F,Sales,"], ids=["quoted file", "empty extra field"])
def test_extra_fields_are_found_in_files_with_quotes_and_when_the_extra_field_is_empty(tmp_path, extra_row):
    path = tmp_path / "t.csv"
    path.write_text(_padded(extra_row))
    with pytest.raises(TableError, match="line 20,002 has 4 fields but the header has 3"):
        count_table(path, SEX_AGE)


def test_extra_fields_in_a_later_byte_range_name_the_line_of_the_file(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text(_padded("30,F,Sales,4", rows=30_000))
    with pytest.raises(TableError, match="line 30,002 has 4 fields"):
        count_table(path, SEX_AGE, **THREE_RANGES)
    good = tmp_path / "good.csv"
    good.write_text(_padded("30,F,Sales", rows=30_000))
    matrix, report = count_table(good, SEX_AGE, **THREE_RANGES)
    assert report.rows_counted == 60_001 and matrix[30, 0] == 60_000 // 90 + 1


def test_categories_stay_the_text_of_the_file(tmp_path):
    # pandas 3 reads numeric-looking categories as numbers ("007" and "7" become one) and
    # boolean-looking ones as booleans ("true" and "TRUE" become one): neither may merge labels.
    path = tmp_path / "t.csv"
    path.write_text("code,flag,n\n007,true,9007199254740993\n7,TRUE,1.5\n7,true,2\n")
    schema = Schema([
        NominalAttribute("code", Hierarchy.flat(["007", "7"])),
        NominalAttribute("flag", Hierarchy.flat(["true", "TRUE"])),
    ])
    matrix, _ = count_table(path, schema)
    np.testing.assert_array_equal(matrix, [[1, 0], [1, 1]])
    exact = Schema([OrdinalAttribute.integer_range("n", 9007199254740992, 9007199254740993, out_of_range="drop")])
    with pytest.raises(DomainError, match=r"1\.5"):  # not whole: never rounded to fit
        count_table(path, exact)
    (tmp_path / "n.csv").write_text("n\n9007199254740993\n9007199254740992.5\n2\n")
    matrix, _ = count_table(tmp_path / "n.csv", exact, invalid="drop")
    np.testing.assert_array_equal(matrix, [0, 1])  # beside a fraction, 2**53 + 1 is still 2**53 + 1


def test_a_corrupt_gzip_file_is_a_table_error(tmp_path):
    rng = np.random.default_rng(3)
    whole = gzip.compress(("a,b\n" + "".join(f"{x},{y}\n" for x, y in rng.random((20_000, 2)))).encode())
    damaged = whole[:2000] + bytes(len(whole) - 4000) + whole[-2000:]
    (tmp_path / "t.csv.gz").write_bytes(damaged)
    with pytest.raises(TableError, match="cannot decompress the file"):
        read_table(tmp_path / "t.csv.gz")
    with pytest.raises(TableError, match="cannot decompress the file"):
        count_table(tmp_path / "t.csv.gz", Schema([NominalAttribute("a", Hierarchy.flat(["x"]))]))


@pytest.mark.parametrize("char", ["\u2028", "\f", "\v", "\x85"])
def test_a_header_holding_a_unicode_line_separator_or_a_form_feed_is_one_name(tmp_path, char):
    path = tmp_path / "t.csv"
    path.write_text(f"a{char}b,c\n1,2\n", encoding="utf-8")
    assert table_columns(path) == (f"a{char}b", "c")
    assert read_table(path).to_dict("list") == {f"a{char}b": ["1"], "c": ["2"]}


def test_utf16_without_a_byte_order_mark_says_which_encoding_to_choose(tmp_path):
    path = tmp_path / "t.csv"
    path.write_bytes("a,b\n1,2\n".encode("utf-16-le"))
    with pytest.raises(TableError, match="utf-16-le or utf-16-be"):
        read_table(path, TableOptions(encoding="utf-16"))
    assert read_table(path, TableOptions(encoding="utf-16-le")).to_dict("list") == {"a": ["1"], "b": ["2"]}


def test_duplicate_column_names_and_a_non_boolean_header_option_are_refused(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("a,b,a\n1,2,3\n")
    with pytest.raises(TableError, match="columns 1 and 3 are both called 'a'"):
        read_table(path)
    with pytest.raises(TableError, match="header must be true or false"):
        TableOptions(header="yes")  # type: ignore[arg-type]


def test_parquet_columns_without_a_text_form_are_refused_naming_them(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = tmp_path / "t.parquet"
    pq.write_table(pa.table({"l": [[1, 2], [3]], "s": [{"a": 1}, {"a": 2}], "sex": ["F", "M"]}), path)
    for name in ("l", "s"):
        with pytest.raises(TableError, match=f"column '{name}' holds values of type .*no text form"):
            count_table(path, Schema([NominalAttribute(name, Hierarchy.flat(["1"]))]))
    with pytest.raises(TableError, match="column 'l'"):
        read_table(path)
    matrix, _ = count_table(path, Schema([NominalAttribute("sex", Hierarchy.flat(["F", "M"]))]))
    np.testing.assert_array_equal(matrix, [1, 1])  # the other columns are not read


def test_parquet_bytes_dates_infinities_and_empty_files(tmp_path):
    import datetime

    import pyarrow as pa
    import pyarrow.parquet as pq

    bad = tmp_path / "bad.parquet"
    pq.write_table(pa.table({"b": pa.array([b"\xff\xfe", b"ok"], pa.binary())}), bad)
    with pytest.raises(TableError, match="column 'b' holds bytes that are not UTF-8 text"):
        read_table(bad)
    with pytest.raises(TableError, match="column 'b' holds bytes"):
        count_table(bad, Schema([NominalAttribute("b", Hierarchy.flat(["ok"]))]))
    text = tmp_path / "text.parquet"
    pq.write_table(pa.table({"b": pa.array([b"ok", "é".encode()], pa.binary())}), text)
    np.testing.assert_array_equal(count_table(text, Schema([NominalAttribute("b", Hierarchy.flat(["ok", "é"]))]))[0], [1, 1])
    dates = tmp_path / "dates.parquet"
    pq.write_table(pa.table({
        "d": pa.array([datetime.date(9999, 12, 31), datetime.date(2020, 1, 1)], pa.date32()),
        "t": pa.array([-(10**15), 0], pa.timestamp("s")),  # far outside pandas' and Python's years
    }), dates)
    assert read_table(dates)["d"].tolist() == ["9999-12-31", "2020-01-01"]
    with pytest.raises(DomainError, match="outside its domain"):
        count_table(dates, Schema([NominalAttribute("t", Hierarchy.flat(["1970-01-01 00:00:00"]))]))
    infinite = tmp_path / "inf.parquet"
    pq.write_table(pa.table({"f": [1.0, float("inf"), None]}), infinite)
    assert read_table(infinite)["f"].tolist()[:2] == ["1", "inf"]
    with pytest.raises(DomainError, match=r"e\.g\. inf"):
        count_table(infinite, Schema([OrdinalAttribute.integer_range("f", 0, 3, missing="0")]))
    clamped = Schema([OrdinalAttribute.integer_range("f", 0, 3, missing="0", out_of_range="clamp")])
    np.testing.assert_array_equal(count_table(infinite, clamped)[0], [1, 1, 0, 1])
    empty = tmp_path / "empty.parquet"
    pq.write_table(pa.table({"f": pa.array([], pa.int64())}), empty)
    assert read_table(empty).columns.tolist() == ["f"] and len(read_table(empty)) == 0
    assert count_table(empty, Schema([OrdinalAttribute.integer_range("f", 0, 3)]))[1].rows_read == 0


def test_parquet_uint64_never_wraps(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = tmp_path / "u.parquet"
    pq.write_table(pa.table({"x": pa.array([2**64 - 1, 0, 3], pa.uint64())}), path)
    with pytest.raises(DomainError, match="18446744073709551615"):  # was counted as -1
        count_table(path, Schema([OrdinalAttribute.integer_range("x", -1, 1)]))
    matrix, report = count_table(path, Schema([OrdinalAttribute.integer_range("x", -5, 5)]), invalid="drop")
    np.testing.assert_array_equal(np.flatnonzero(matrix), [5, 8])
    assert report.rows_dropped == 1


def test_parquet_integers_with_empty_cells_are_not_rounded_through_float64(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = tmp_path / "n.parquet"  # found by the fuzz tests: pandas makes such columns float64
    pq.write_table(pa.table({"n": pa.array([2**53 + 1, None, 2**53], pa.int64())}), path)
    schema = Schema([OrdinalAttribute.integer_range("n", 2**53, 2**53 + 1, missing=str(2**53))])
    np.testing.assert_array_equal(count_table(path, schema)[0], [2, 1])
    assert read_table(path)["n"].tolist()[0] == "9007199254740993"


def _png_bytes() -> bytes:
    """A small real PNG image (1x1 pixel, as every PNG encoder writes one)."""
    import struct
    import zlib

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    header = struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(b"\x00\xff\x00\x00")) + chunk(b"IEND", b"")


@pytest.mark.parametrize(("content", "kind"), [
    (_png_bytes(), "a PNG image"),
    (b"PK\x03\x04\x14\x00\x06\x00" + bytes(200), "a ZIP archive, or a spreadsheet saved as .xlsx"),
    (bytes(range(256)) * 8, "binary data"),
])
def test_a_file_that_is_no_text_table_is_reported_as_such(tmp_path, content, kind):
    """Issue 39, item 6: a PNG renamed .csv is "not a text table", not a delimiter problem."""
    path = tmp_path / "picture.csv"
    path.write_bytes(content)
    packed = tmp_path / "picture.csv.gz"
    packed.write_bytes(gzip.compress(content))
    for target in (path, packed):
        for read in (sniff_table, read_table, lambda p: summarize_table(p, TableOptions())):
            with pytest.raises(TableError, match=rf"picture\.csv(\.gz)? is not a text table: it looks like {re.escape(kind)}"):
                read(target)


def test_utf16_text_without_a_byte_order_mark_is_still_text(tmp_path):
    path = tmp_path / "u.csv"
    path.write_bytes("a,b\n1,2\n".encode("utf-16-le"))
    assert read_table(path, TableOptions(encoding="utf-16-le")).to_dict("list") == {"a": ["1"], "b": ["2"]}
    with pytest.raises(TableError, match="utf-16-le or utf-16-be"):  # the wrong UTF-16: the encoding's message
        read_table(path, TableOptions(encoding="utf-16"))
    sniff_table(path)  # no "not a text table"


def test_a_small_table_whose_values_hold_nul_bytes_is_read_not_called_binary(tmp_path):
    """Found by the fuzz mode: three rows of ``nul\\x00`` are a fifth NUL bytes, yet text."""
    path = tmp_path / "t.csv.gz"
    path.write_bytes(gzip.compress(b"nul\x00\nnul\x00\nnul\x00\n"))
    assert read_table(path, TableOptions(header=False)).iloc[:, 0].tolist() == ["nul\x00"] * 3
