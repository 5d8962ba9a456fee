"""Reading tables: sniffing, encodings, compression, Parquet, chunked counting."""

from __future__ import annotations

import gzip
import itertools
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
    assert text["income"].tolist() == ["1200.5", "80.0", "99999.0", "0.0"]
    np.testing.assert_array_equal(count_table(path, SCHEMA)[0], expected_matrix())
    # Parquet without the extension: detected by its magic bytes.
    other = tmp_path / "data.bin"
    other.write_bytes(path.read_bytes())
    np.testing.assert_array_equal(count_table(other, SCHEMA)[0], expected_matrix())


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
    assert report.dropped == {"age": 1, "sex": 1, "job": 0, "income": 2}
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


@pytest.fixture
def parallel(monkeypatch):
    """Every file big enough to be cut, in three ranges."""
    from privelet_gui.io import tables

    monkeypatch.setattr(tables, "_PARALLEL_MIN_BYTES", 0)
    monkeypatch.setattr(tables, "_PARALLEL_RANGES", 3)
    return tables


def test_byte_ranges_cut_only_after_newlines_and_only_when_safe(tmp_path, parallel):
    from privelet_gui.io.tables import _byte_ranges, _resolve

    path = write(tmp_path / "t.csv", [ROWS[0], *_random_rows(300)])
    data = path.read_bytes()
    ranges = _byte_ranges(_resolve(path, None))
    assert len(ranges) == 3 and ranges[0][0] == 0 and ranges[-1][1] == len(data)
    assert all(stop == start for (_, stop), (start, _) in itertools.pairwise(ranges))  # no gap, no overlap
    assert all(data[start - 1 : start] == b"\n" for start, _ in ranges[1:])
    quoted = write(tmp_path / "q.csv", [ROWS[0], *_random_rows(300)[:-1], ("30", "F", '"Sales"', "5")])
    utf16 = write(tmp_path / "u.csv", [ROWS[0], *_random_rows(300)], encoding="utf-16")
    compressed = write(tmp_path / "g.csv", [ROWS[0], *_random_rows(300)], gz=True)
    one_line = write(tmp_path / "h.csv", [ROWS[0]])
    for path, options in ((quoted, None), (utf16, TableOptions(encoding="utf-16")), (compressed, None), (one_line, None)):
        source = _resolve(path, options)
        assert _byte_ranges(source) == [(0, path.stat().st_size)], path.name


@pytest.mark.parametrize(
    "layout",
    [{}, {"newline": "\r\n", "bom": True}, {"sep": ";", "encoding": "latin-1"}, {"header": False}],
    ids=["lf", "crlf-bom", "latin-1", "no-header"],
)
def test_counting_in_parallel_ranges_equals_counting_in_one_pass(tmp_path, parallel, monkeypatch, layout):
    header = layout.pop("header", True)
    rows = _random_rows(3000)
    rows[1500:1500] = [("",) * 0]  # a blank line in the middle
    path = write(tmp_path / "t.csv", ([ROWS[0]] if header else []) + rows, **layout)
    options = TableOptions(header=header, encoding=layout.get("encoding", "utf-8"))
    schema = SCHEMA if header else Schema([replace(a, column=f"column_{i + 1}") for i, a in enumerate(SCHEMA)])
    assert len(parallel._byte_ranges(parallel._resolve(path, options))) == 3
    seen: list[float] = []
    matrix, report = count_table(path, schema, options, chunksize=250, progress=lambda f, _: seen.append(f))
    monkeypatch.setattr(parallel, "_PARALLEL_RANGES", 1)
    one_pass, one_report = count_table(path, schema, options, chunksize=250)
    np.testing.assert_array_equal(matrix, one_pass)
    assert report == one_report and report.rows_counted == 3000
    assert seen == sorted(seen) and seen[-1] == 1.0


def test_an_error_in_a_later_range_stops_every_reader(tmp_path, parallel):
    rows = _random_rows(3000)
    rows[-1] = ("30", "X", "Sales", "5")  # not a leaf of sex, in the last range
    path = write(tmp_path / "t.csv", [ROWS[0], *rows])
    with pytest.raises(DomainError, match="'X'"):
        count_table(path, SCHEMA, chunksize=250)
    assert not _reader_threads()
    broken = tmp_path / "b.csv"
    broken.write_bytes(write(tmp_path / "ok.csv", [ROWS[0], *_random_rows(3000)]).read_bytes() + b"30,F,Sales\xe9,5\n")
    with pytest.raises(TableError, match="not valid utf-8"):
        count_table(broken, SCHEMA, chunksize=250)
    assert not _reader_threads()


def test_a_quote_past_the_sample_sends_the_count_back_to_one_pass(tmp_path, parallel, monkeypatch):
    # Quoted notes with line breaks only after the first 64 KiB: the file is cut, a range
    # meets a quote (maybe right where a cut split a note) and the count starts again.
    rows = [(*row, "plain") for row in _random_rows(8000)]
    rows[4000:] = [(*row[:4], f'"note {i}\nsecond line"') for i, row in enumerate(rows[4000:])]
    path = write(tmp_path / "t.csv", [(*ROWS[0], "note"), *rows])
    assert path.read_bytes().find(b'"') > 1 << 16
    assert len(parallel._byte_ranges(parallel._resolve(path, None))) == 3
    passes: list[bool] = []
    readers = parallel._CountingReaders

    def spy(*args, one_pass=False, **kwargs):
        passes.append(one_pass)
        return readers(*args, one_pass=one_pass, **kwargs)

    monkeypatch.setattr(parallel, "_CountingReaders", spy)
    seen: list[float] = []
    matrix, report = count_table(path, SCHEMA, chunksize=500, progress=lambda f, _: seen.append(f))
    assert passes == [False, True]  # cut in ranges, then once more in one pass
    frame = pd.read_csv(path, dtype=str, keep_default_na=False)
    assert report.rows_counted == len(frame) == 8000
    np.testing.assert_array_equal(matrix, frequency_matrix(frame, SCHEMA))
    assert seen == sorted(seen) and not _reader_threads()
