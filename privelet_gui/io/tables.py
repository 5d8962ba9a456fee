"""Reading tables: CSV/TSV (plain or gzip-compressed) and Parquet, whole or in chunks.

CSV is read with the pandas C parser. Cells are text unless a schema asks for
numbers; only empty cells are missing (``NA``, ``None``, ``?`` ... are ordinary
values, as they are in many census files) unless the reading options name texts
meaning missing (``TableOptions(missing_values=("N",))``: the ACS writes ``N``), which
every attribute without a list of its own then treats as missing. Counting streams the file chunk by chunk
into the engine's :class:`~privelet_gui.engine.FrequencyCounter`, so memory depends on
the chunk size and the matrix, never on the number of rows.
"""

from __future__ import annotations

import codecs
import contextlib
import csv
import gzip
import io
import mmap
import os
import queue
import re
import threading
import zlib
from collections.abc import Callable, Generator, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pandas as pd

from ..engine import CountReport, FrequencyCounter, Schema, SchemaError
from ..engine.model.schema import cell_text, check_missing_values, pandas_reads_text_exactly
from ..engine.progress import CancelCallback, Progress, ProgressCallback
from .errors import NotATextTableError, TableError
from .row_fingerprint import RowFingerprint

__all__ = [
    "DEFAULT_CHUNK_BYTES",
    "DELIMITERS",
    "PARALLEL_MIN_BYTES",
    "PARALLEL_RANGES",
    "TableOptions",
    "count_table",
    "iter_table_chunks",
    "parse_missing_values",
    "preview_table",
    "read_ahead",
    "read_table",
    "sniff_table",
    "table_columns",
]

#: The delimiters :func:`sniff_table` chooses among.
DELIMITERS: tuple[str, ...] = (",", ";", "\t", "|")

#: Chunks hold about this many bytes of CSV text (between 10,000 and 524,288 rows): large
#: enough that per-chunk overheads vanish, small enough to keep memory low (about 50 MB).
DEFAULT_CHUNK_BYTES = 32 << 20
_MIN_CHUNK_ROWS = 10_000
_MAX_CHUNK_ROWS = 1 << 19

#: Counting reads a plain CSV file of at least PARALLEL_MIN_BYTES as this many byte ranges,
#: each with its own parser in its own thread (the parsers release the GIL while they tokenise).
#: Each range's chunks hold half the usual rows, so that the parsers together need little more
#: memory than one.
PARALLEL_RANGES = 2
PARALLEL_MIN_BYTES = 16 << 20
_PARALLEL_CHUNK_DIVISOR = 2
# Encodings in which the byte b"\n" is always a line break (codecs.lookup(...).name).
_NEWLINE_SAFE_ENCODINGS = frozenset({"utf-8", "utf-8-sig", "ascii", "iso8859-1", "iso8859-15", "cp1252"})

_SAMPLE_BYTES = 1 << 16
_SAMPLE_LINES = 100
_PARQUET_MAGIC = b"PAR1"
_GZIP_MAGIC = b"\x1f\x8b"
# The first bytes of files that are no text table, and what to call them in a message.
_BINARY_SIGNATURES: tuple[tuple[bytes, str], ...] = (
    (b"\x89PNG\r\n\x1a\n", "a PNG image"),
    (b"\xff\xd8\xff", "a JPEG image"),
    (b"GIF87a", "a GIF image"),
    (b"GIF89a", "a GIF image"),
    (b"%PDF-", "a PDF document"),
    (b"PK\x03\x04", "a ZIP archive, or a spreadsheet saved as .xlsx or .ods (save it as CSV)"),
    (b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1", "an old Excel (.xls) or Office file (save it as CSV)"),
    (b"SQLite format 3\x00", "an SQLite database"),
    (b"7z\xbc\xaf\x27\x1c", "a 7-Zip archive"),
    (b"\xfd7zXZ\x00", "an xz archive (decompress it first)"),
    (b"\x28\xb5\x2f\xfd", "a Zstandard archive (decompress it first)"),
    (b"\x7fELF", "a program"),
)
# Bytes that no text table holds (control characters but tab, line breaks, form feed and escape).
# NUL is not among them: a value may hold it (the table is then read, and judged by its domains),
# and UTF-16 text is told apart by where its NULs sit (_looks_wide).
_CONTROL_BYTES = bytes([*range(0x01, 0x09), 0x0B, *range(0x0E, 0x1B), *range(0x1C, 0x20)])
_NUMBER = re.compile(r"^\s*[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?\s*$")
_LINE_BREAK = re.compile(r"\r\n|\r|\n")

TableFormat = Literal["csv", "parquet"]


@dataclass(frozen=True)
class TableOptions:
    """How to read a table file.

    ``delimiter`` is one character, or ``None`` to sniff it among ``, ; TAB |``.
    ``encoding`` is any Python codec name (a UTF-8 byte-order mark is skipped).
    ``header`` says whether the first row names the columns; without one, columns are
    called ``column_1``, ``column_2``, ... ``format`` is ``"csv"`` or ``"parquet"``, or
    ``None`` to decide from the file's content (gzip-compressed CSV is detected too).
    ``missing_values`` lists texts that mean a missing value in every column (``("N",
    "NA")``), besides empty cells, which are always missing; a schema's attribute may name
    its own instead (its ``missing_values``).

    Examples
    --------
    >>> TableOptions(delimiter=";").delimiter
    ';'
    >>> TableOptions(delimiter="::")
    Traceback (most recent call last):
    ...
    privelet_gui.io.errors.TableError: the delimiter must be one character (e.g. ',', ';', '|' or a tab), got '::'
    """

    delimiter: str | None = None
    encoding: str = "utf-8"
    header: bool = True
    format: TableFormat | None = None
    missing_values: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        try:
            markers = check_missing_values(self.missing_values, "reading options")
        except SchemaError as exc:
            raise TableError(str(exc)) from None
        object.__setattr__(self, "missing_values", markers)
        if self.delimiter is not None and (not isinstance(self.delimiter, str) or len(self.delimiter) != 1):
            raise TableError(
                f"the delimiter must be one character (e.g. ',', ';', '|' or a tab), got {self.delimiter!r}"
            )
        if self.delimiter in ('"', "\n", "\r"):
            raise TableError(f"{self.delimiter!r} cannot be a delimiter; use ',', ';', '|' or a tab")
        try:
            codecs.lookup(self.encoding)
        except (LookupError, TypeError):
            raise TableError(
                f"unknown encoding {self.encoding!r}; use a Python codec name such as 'utf-8', 'latin-1' or 'cp1252'"
            ) from None
        if self.format not in (None, "csv", "parquet"):
            raise TableError(f"format must be 'csv', 'parquet' or None (detect), got {self.format!r}")
        if not isinstance(self.header, bool):
            raise TableError(f"header must be true or false, got {self.header!r}")


def parse_missing_values(text: str) -> tuple[str, ...]:
    """Texts meaning missing as people type them: comma-separated, spaces around each ignored
    (``"N, NA"``), each once; checked as :class:`TableOptions` checks them (TableError).

    >>> parse_missing_values("N, NA,, N")
    ('N', 'NA')
    """
    values = tuple(dict.fromkeys(part.strip() for part in text.split(",") if part.strip()))
    return TableOptions(missing_values=values).missing_values


# -- file access ------------------------------------------------------------------------


def _check_file(path: str | os.PathLike[str]) -> Path:
    p = Path(path)
    if not p.exists():
        raise TableError(f"no such file: {p}")
    if p.is_dir():
        raise TableError(f"{p} is a folder, not a table file")
    return p


def _detect_format(path: Path, options: TableOptions) -> tuple[TableFormat, bool]:
    """(format, gzip-compressed), from the options or the file's first bytes."""
    with open(path, "rb") as f:
        head = f.read(4)
    gz = head[:2] == _GZIP_MAGIC
    if options.format is not None:
        return options.format, gz and options.format == "csv"
    if head == _PARQUET_MAGIC or path.suffix.lower() in (".parquet", ".pq"):
        return "parquet", False
    return "csv", gz


@contextlib.contextmanager
def _open_csv(path: Path, gz: bool) -> Iterator[tuple[io.BufferedReader, io.BufferedIOBase]]:
    """(raw file, byte stream to parse): the raw file's position measures progress."""
    with open(path, "rb") as raw:
        stream: io.BufferedIOBase = gzip.GzipFile(fileobj=raw, mode="rb") if gz else raw
        yield raw, stream


def _read_sample(path: Path, gz: bool, size: int = _SAMPLE_BYTES) -> tuple[bytes, bool]:
    """The first ``size`` bytes of the (decompressed) file, and whether that is all of it."""
    with _open_csv(path, gz) as (_, stream):
        try:
            data = stream.read(size + 1)
        except (OSError, EOFError, zlib.error) as exc:
            raise _gzip_error(path, exc) from None
    return data[:size], len(data) <= size


def _gzip_error(path: Path, exc: BaseException) -> TableError:
    return TableError(f"{path}: cannot decompress the file ({_short(exc)}); is it a complete, valid .gz file?")


def _check_text(path: Path, data: bytes, encoding: str | None = None) -> None:
    """Refuse a file that is no text table (an image, a PDF, a spreadsheet renamed .csv) with a
    message that says so, before its bytes are taken for rows with a delimiter problem. Text in
    UTF-16 or UTF-32 (whose ASCII characters come with NUL bytes) is text."""
    kind = next((name for magic, name in _BINARY_SIGNATURES if data.startswith(magic)), None)
    if kind is None:
        head = data[:4096]
        wide = (encoding or "").lower().replace("_", "-").startswith(("utf-16", "utf-32"))
        controls = len(head) - len(head.translate(None, _CONTROL_BYTES))
        if head and not wide and not _looks_wide(head) and controls > len(head) // 10:
            kind = "binary data"
    if kind is not None:
        raise NotATextTableError(
            f"{path} is not a text table: it looks like {kind}. Open a CSV or TSV file (or gzip-compressed "
            "CSV), or a Parquet file"
        )


def _looks_wide(head: bytes) -> bool:
    """Whether ``head`` reads as UTF-16 text without a byte-order mark: a NUL byte beside most
    characters, all on the same side (the encoding is then chosen by hand)."""
    even, odd = head[0::2].count(0), head[1::2].count(0)
    return max(even, odd) > len(head) // 4 and min(even, odd) <= max(even, odd) // 10


def _decode_sample(path: Path, data: bytes, complete: bool, encoding: str) -> str:
    decoder = codecs.getincrementaldecoder(_python_encoding(encoding))()
    try:
        return decoder.decode(data, final=complete)
    except UnicodeError as exc:
        raise _decode_error(path, encoding, exc) from None


def _python_encoding(encoding: str) -> str:
    """UTF-8 read with BOM skipping."""
    return "utf-8-sig" if codecs.lookup(encoding).name == "utf-8" else encoding


def _decode_error(path: Path, encoding: str, exc: UnicodeError) -> TableError:
    if not isinstance(exc, UnicodeDecodeError):  # e.g. UTF-16 without a byte-order mark
        return TableError(
            f"{path} cannot be read as {encoding} ({exc}); choose the exact encoding "
            "(e.g. utf-16-le or utf-16-be for UTF-16 without a byte-order mark)"
        )
    return TableError(
        f"{path}: the bytes at offset {exc.start} are not valid {encoding} text; "
        "choose the file's encoding (e.g. latin-1 or cp1252 for older Windows exports)"
    )


def _lines(text: str) -> list[str]:
    """``text`` cut at line breaks as CSV parsers see them: CR, LF or CRLF only (not
    str.splitlines, which also cuts at form feeds, vertical tabs and U+2028)."""
    return _LINE_BREAK.split(text.removesuffix("\r\n").removesuffix("\n").removesuffix("\r"))


def _sample_lines(text: str, complete: bool) -> list[str]:
    lines = _lines(text) if text else []
    if not complete and len(lines) > 1:
        lines = lines[:-1]  # the last line may be cut off
    return [line for line in lines if line.strip()][:_SAMPLE_LINES]


def _split(line: str, delimiter: str) -> list[str]:
    return next(csv.reader([line], delimiter=delimiter), [])


def sniff_delimiter(lines: Sequence[str], candidates: Sequence[str] = DELIMITERS) -> str:
    """The candidate that splits every line into the same number (> 1) of fields.

    Among consistent candidates the one giving the most fields wins (ties: the
    earlier candidate). With none consistent, the one most lines agree on; a file
    with no candidate at all is one column (``","``).

    Examples
    --------
    >>> sniff_delimiter(["a;b;c", "1;2,5;3"])
    ';'
    >>> sniff_delimiter(["a|b", "x|y"])
    '|'
    """
    best: tuple[tuple[int, int, int], str] | None = None
    for rank, d in enumerate(candidates):
        counts = [len(_split(line, d)) for line in lines]
        if not counts or max(counts) < 2:
            continue
        mode = max(set(counts), key=counts.count)
        agree = counts.count(mode)
        score = (1 if agree == len(counts) else 0, agree if agree != len(counts) else mode, -rank)
        if mode > 1 and (best is None or score > best[0]):
            best = (score, d)
    return best[1] if best else ","


def _guess_header(rows: list[list[str]]) -> bool:
    """Whether the first row looks like column names rather than data."""
    if not rows:
        return True
    first, rest = rows[0], rows[1:]
    if any(_NUMBER.match(v) for v in first):
        return False
    if not rest:
        return True
    width = len(first)
    for col in range(width):
        values = [r[col] for r in rest if col < len(r) and r[col] != ""]
        if values and all(_NUMBER.match(v) for v in values):
            return True  # a text name over a numeric column
    # Every first-row value also occurs further down its column: it looks like data.
    columns = [{r[col] for r in rest if col < len(r)} for col in range(width)]
    return not all(first[col] in columns[col] for col in range(width))


def _guess_encoding(data: bytes) -> str:
    if data.startswith(codecs.BOM_UTF8):
        return "utf-8"
    if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return "utf-16"
    try:
        codecs.getincrementaldecoder("utf-8")().decode(data, final=False)
        return "utf-8"
    except UnicodeDecodeError:
        pass
    try:
        data.decode("cp1252")
        return "cp1252"
    except UnicodeDecodeError:
        return "latin-1"


def sniff_table(path: str | os.PathLike[str]) -> TableOptions:
    """Guess how to read a table: its format, delimiter, encoding and header.

    Looks at the first 64 KiB only. The result is a guess: show it to the user and
    let them override it.
    """
    p = _check_file(path)
    fmt, gz = _detect_format(p, TableOptions())
    if fmt == "parquet":
        return TableOptions(format="parquet")
    data, complete = _read_sample(p, gz)
    _check_text(p, data)
    encoding = _guess_encoding(data)
    lines = _sample_lines(_decode_sample(p, data, complete, encoding), complete)
    delimiter = sniff_delimiter(lines)
    rows = [_split(line, delimiter) for line in lines]
    return TableOptions(delimiter=delimiter, encoding=encoding, header=_guess_header(rows), format="csv")


@dataclass(frozen=True)
class _Source:
    """A table file resolved for reading: format, compression, delimiter and columns."""

    path: Path
    options: TableOptions
    format: TableFormat
    gzip: bool
    columns: tuple[str, ...]
    row_bytes: float  # average bytes per row in the sample (CSV), for the chunk size
    unreadable: Mapping[str, str] = field(default_factory=dict)  # Parquet columns of types with no text form
    line_break: str = "\n"  # "\r" for a CSV file whose sample has no "\n" (old Mac files)


def _resolve(path: str | os.PathLike[str], options: TableOptions | None) -> _Source:
    p = _check_file(path)
    options = options or TableOptions()
    fmt, gz = _detect_format(p, options)
    if fmt == "parquet":
        columns, unreadable = _parquet_columns(p)
        return _Source(p, replace(options, format="parquet"), "parquet", False, columns, 0.0, unreadable)
    data, complete = _read_sample(p, gz)
    _check_text(p, data, options.encoding)
    text = _decode_sample(p, data, complete, options.encoding)
    lines = _sample_lines(text, complete)
    if not lines:
        raise TableError(f"{p} is empty: a table needs at least a header row" if options.header else f"{p} is empty")
    delimiter = options.delimiter or sniff_delimiter(lines)
    first = _first_record(text, delimiter) or _split(lines[0], delimiter)
    if options.header:
        columns = tuple(first)
        blank = [i + 1 for i, name in enumerate(columns) if not name.strip()]
        if blank:
            raise TableError(
                f"{p}: column {blank[0]} of the header row has no name; name every column "
                "(or read the file without a header)"
            )
        _check_unique_names(p, columns)
    else:
        columns = tuple(f"column_{i + 1}" for i in range(len(first)))
    _check_sample_rows(p, text, complete, delimiter, len(columns))
    row_bytes = max(len(data) / max(len(_lines(text)), 1), 1.0)
    line_break = "\r" if "\n" not in text and "\r" in text else "\n"
    return _Source(
        p, replace(options, delimiter=delimiter, format="csv"), "csv", gz, columns, row_bytes, line_break=line_break
    )


def _first_record(text: str, delimiter: str) -> list[str] | None:
    """The first non-blank record of ``text`` as the parser reads it (a quoted name may hold a
    line break), or None when the sample cannot be parsed (the parser then says why)."""
    try:
        return next((row for row in csv.reader(io.StringIO(text, newline=""), delimiter=delimiter) if row), None)
    except csv.Error:
        return None


def _check_unique_names(path: Path, columns: Sequence[str]) -> None:
    first: dict[str, int] = {}
    for i, name in enumerate(columns):
        if name in first:
            raise TableError(
                f"{path}: columns {first[name] + 1} and {i + 1} are both called {name!r}; "
                "give every column its own name"
            )
        first[name] = i


def _check_sample_rows(path: Path, text: str, complete: bool, delimiter: str, width: int) -> None:
    """Report rows of the first 64 KiB whose number of fields differs from the header's.

    The parser itself only reports rows with extra fields when it reads every column
    (reading a subset, it ignores them), and it pads short rows with empty cells; this
    check catches a wrong delimiter or broken quoting early, with the line number.
    """
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter)
    rows = []
    try:
        for row in reader:
            rows.append((reader.line_num, row))
    except csv.Error:
        return  # let the parser report it
    if not complete and rows:
        rows = rows[:-1]  # the last row may be cut off
    for line, row in rows:
        if not row or (len(row) == 1 and not row[0].strip()):
            continue  # blank lines are skipped
        if len(row) != width:
            raise TableError(
                f"{path}: line {line} has {len(row)} fields but the {'header' if line > 1 else 'table'} has "
                f"{width}; check the delimiter ({_show_delimiter(delimiter)}) and the quoting of values that "
                "contain it"
            )


def _show_delimiter(delimiter: str) -> str:
    return {"\t": "tab", ",": "comma", ";": "semicolon", "|": "pipe"}.get(delimiter, repr(delimiter))


def _parquet_columns(path: Path) -> tuple[tuple[str, ...], dict[str, str]]:
    """The column names of a Parquet file, and those of its columns whose values have no
    text form (lists, structs, maps...), with their types."""
    import pyarrow.parquet as pq

    try:
        schema = pq.ParquetFile(path).schema_arrow
    except Exception as exc:  # pyarrow raises several types for damaged files
        raise TableError(f"{path}: not a readable Parquet file ({_short(exc)})") from None
    columns = tuple(str(name) for name in schema.names)
    _check_unique_names(path, columns)
    unreadable = {name: str(kind) for name, kind in zip(columns, schema.types, strict=True) if not _has_text(kind)}
    return columns, unreadable


def _has_text(kind: Any) -> bool:
    """Whether the values of an Arrow type read as table cells: numbers, booleans, text,
    bytes (as UTF-8 text), dates and times, decimals, or a dictionary of those."""
    import pyarrow as pa

    if pa.types.is_dictionary(kind):
        return _has_text(kind.value_type)
    if isinstance(kind, pa.ExtensionType):
        return False
    return bool(
        pa.types.is_integer(kind) or pa.types.is_floating(kind) or pa.types.is_boolean(kind)
        or pa.types.is_null(kind) or _is_binary(kind) or _is_string(kind) or pa.types.is_decimal(kind)
        or pa.types.is_temporal(kind)
    )


def _is_string(kind: Any) -> bool:
    import pyarrow as pa

    return bool(pa.types.is_string(kind) or pa.types.is_large_string(kind) or _is_view(kind, "is_string_view"))


def _is_binary(kind: Any) -> bool:
    import pyarrow as pa

    return bool(
        pa.types.is_binary(kind) or pa.types.is_large_binary(kind) or pa.types.is_fixed_size_binary(kind)
        or _is_view(kind, "is_binary_view")
    )


def _is_view(kind: Any, test: str) -> bool:
    """pyarrow's view types (string and binary views) came with pyarrow 16; before, no column has them."""
    import pyarrow as pa

    check = getattr(pa.types, test, None)
    return bool(check is not None and check(kind))


def table_columns(path: str | os.PathLike[str], options: TableOptions | None = None) -> tuple[str, ...]:
    """The column names of a table (from its header; ``column_1, ...`` without one)."""
    return _resolve(path, options).columns


def _check_columns(source: _Source, wanted: Sequence[str] | None) -> list[str] | None:
    unreadable = [name for name in (source.columns if wanted is None else wanted) if name in source.unreadable]
    if unreadable:
        name = unreadable[0]
        raise TableError(
            f"{source.path}: column {name!r} holds values of type {source.unreadable[name]}, which have no text "
            "form to count; store it as text or numbers, or leave it out of the schema"
        )
    if wanted is None:
        return None
    wanted = list(dict.fromkeys(wanted))
    missing = [c for c in wanted if c not in source.columns]
    if missing:
        shown = ", ".join(map(repr, source.columns[:30])) + (", ..." if len(source.columns) > 30 else "")
        raise TableError(
            f"{source.path} has no column {', '.join(map(repr, missing))}; its columns are {shown}. "
            "Rename the column in the file, or set the attribute's \"column\" in the schema"
            + ("" if source.options.header else " (without a header, columns are column_1, column_2, ...)")
        )
    return wanted


def _chunk_rows(source: _Source, chunksize: int | None) -> int:
    if chunksize is not None:
        if isinstance(chunksize, bool) or not isinstance(chunksize, int) or chunksize < 1:
            raise TableError(f"chunksize must be a positive number of rows, got {chunksize!r}")
        return chunksize
    if source.format == "parquet":
        return 1 << 18
    return int(min(max(DEFAULT_CHUNK_BYTES / source.row_bytes, _MIN_CHUNK_ROWS), _MAX_CHUNK_ROWS))


# -- reading ------------------------------------------------------------------------------

DtypeArg = Any  # a pandas dtype, or a mapping column -> dtype
Chunks = Generator["pd.DataFrame", None, None]  # a table's chunks, one by one; close() stops reading

# pandas 3 turns categories that read as numbers into numbers ("007" and "7" become one
# category 7; "9007199254740993" beside "1.5" becomes a float, 2**53), except when a
# thousands separator is set: one that never occurs keeps every category the text it was.
_NO_THOUSANDS = ("\x01", "\x02")
_TOO_MANY_FIELDS = re.compile(r"Expected (\d+) fields in line (\d+), saw (\d+)")


def _csv_kwargs(source: _Source, usecols: list[str] | None, dtype: DtypeArg) -> dict[str, Any]:
    options = source.options
    return {
        "sep": options.delimiter,
        "encoding": options.encoding,
        "engine": "c",
        "dtype": dtype,
        "keep_default_na": False,  # "NA", "None", "?" are values; only empty cells are missing
        "na_values": [""],
        "usecols": usecols,
        "names": list(source.columns),
        "header": 0 if options.header else None,
        "index_col": False,
        "thousands": next(c for c in _NO_THOUSANDS if c != options.delimiter),
    }


class _CategoriesNotText(Exception):
    """The parser returned a categorical column whose categories are not text (every value
    of the chunk read as a boolean: "true" and "TRUE" are then one category): count it again
    with that column read as text."""

    def __init__(self, column: str):
        super().__init__(column)
        self.column = column


class _QuoteInCheckedFields(Exception):
    """A quote reached :class:`_FieldCheck`, which cannot count fields past one: count the file
    again reading every column (the parser then checks every row itself)."""


class _ExtraFields(Exception):
    """Line ``line`` (1-based, of the bytes checked) has ``fields`` fields, more than the header."""

    def __init__(self, line: int, fields: int):
        super().__init__(line, fields)
        self.line = line
        self.fields = fields


class _FieldCheck(io.RawIOBase):
    """The bytes of a stream on their way to the parser, with every line's fields counted.

    The parser checks that no row has more fields than the header only when it reads every
    column; reading some of them, it drops the extra fields and counts the row. So when
    counting reads a subset, the delimiters of each line are counted here (numpy, about
    1 GB/s here) and a line with too many raises :class:`_ExtraFields`. Valid only without
    quotes (a quoted value may hold delimiters and line breaks): a quote raises
    :class:`_QuoteInCheckedFields`.
    """

    def __init__(self, stream: io.BufferedIOBase, width: int, delimiter: int, newline: int):
        self._stream = stream
        self._most = width - 1  # delimiters on a line of the header's width
        self._delimiter = delimiter
        self._newline = newline
        self._lines = 0  # line breaks read so far
        self._open = 0  # delimiters of the line that has not ended yet

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        read = self._stream.readinto(buffer)
        if not read:
            if self._open > self._most:
                raise _ExtraFields(self._lines + 1, self._open + 1)
            return 0
        view = memoryview(buffer)[:read]
        if view.tobytes().find(b'"') >= 0:
            raise _QuoteInCheckedFields()
        data = np.frombuffer(view, dtype=np.uint8)
        # One pass finds delimiters and line breaks; a line's fields are the delimiters
        # between two line breaks (plus those of the line still open from the last read).
        marks = np.flatnonzero((data == self._delimiter) | (data == self._newline))
        ends = np.flatnonzero(data[marks] == self._newline)
        if not len(ends):
            self._open += len(marks)
            return read
        per_line = np.diff(ends, prepend=-1) - 1
        per_line[0] += self._open
        wrong = np.flatnonzero(per_line > self._most)
        if len(wrong):
            raise _ExtraFields(self._lines + int(wrong[0]) + 1, int(per_line[wrong[0]]) + 1)
        self._lines += len(ends)
        self._open = len(marks) - int(ends[-1]) - 1
        return read


class _NulByte(Exception):
    """Line ``line`` (1-based, of the bytes checked) holds a NUL byte."""

    def __init__(self, line: int):
        super().__init__(line)
        self.line = line


class _NulCheck(io.RawIOBase):
    """The bytes of a stream on their way to a parser that ends a value at a NUL byte (pandas
    before 3.1 reads "7\\0x" as "7"): a NUL raises :class:`_NulByte` rather than be miscounted.
    Only for encodings in which the byte 0 is the character U+0000 and b"\\n" ends a line."""

    def __init__(self, stream: io.BufferedIOBase):
        self._stream = stream
        self._lines = 0  # line breaks read so far

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        read = self._stream.readinto(buffer)
        data = np.frombuffer(memoryview(buffer)[:read], dtype=np.uint8)
        nul = np.flatnonzero(data == 0)
        if len(nul):
            raise _NulByte(self._lines + int(np.count_nonzero(data[: nul[0]] == ord("\n"))) + 1)
        self._lines += int(np.count_nonzero(data == ord("\n")))
        return read


def _checks_nul(source: _Source) -> bool:
    """Whether the parser needs :class:`_NulCheck` to keep it from cutting values at a NUL byte."""
    encoding = codecs.lookup(source.options.encoding).name
    return not pandas_reads_text_exactly(pd.__version__) and encoding in _NEWLINE_SAFE_ENCODINGS


def _field_check(source: _Source) -> tuple[int, int] | None:
    """(delimiter byte, line-break byte) when :class:`_FieldCheck` can count the file's fields:
    the delimiter is one byte and the byte b"\n" (b"\r" in a file with no b"\n") always ends
    a line in its encoding. None otherwise."""
    encoding = codecs.lookup(source.options.encoding).name
    delimiter = (source.options.delimiter or ",").encode(encoding, errors="replace")
    if encoding not in _NEWLINE_SAFE_ENCODINGS or len(delimiter) != 1:
        return None
    newline = b"\n" if source.line_break == "\n" else b"\r"
    return delimiter[0], newline[0]


def _iter_csv(
    source: _Source,
    usecols: list[str] | None,
    dtype: DtypeArg,
    chunksize: int,
    nrows: int | None,
    position: Callable[[int], None] | None,
    byte_range: tuple[int, int] | None = None,
    *,
    every_column: bool = False,
) -> Generator[pd.DataFrame, None, None]:
    """Chunks of the file, or of the rows in ``byte_range`` (see :func:`_byte_ranges`);
    ``position`` gets how many bytes of the file (compressed, if it is) or of the range
    have been read so far.

    A row with more fields than the header is refused with its line number: by the parser
    when it reads every column, else by :class:`_FieldCheck`. ``every_column=True`` reads
    every column (then keeps ``usecols``): for files whose fields cannot be counted here.
    """
    start = 0 if byte_range is None else byte_range[0]
    subset = usecols is not None and len(usecols) < len(source.columns)
    check = _field_check(source) if subset and not every_column else None
    kwargs = _csv_kwargs(source, usecols if check is not None else None, dtype)
    keep = [name for name in source.columns if name in set(usecols or ())]  # in the file's order, as usecols
    if start > 0:  # a range after the first starts with a data row
        kwargs["header"] = None
    with _open_csv(source.path, source.gzip) as (raw, stream):
        if byte_range is not None:
            raw.seek(start)
            stream = io.BufferedReader(_ByteRange(raw, byte_range[1]))
        if check is not None:
            stream = io.BufferedReader(_FieldCheck(stream, len(source.columns), *check))
        if _checks_nul(source):
            stream = io.BufferedReader(_NulCheck(stream))
        try:
            reader = pd.read_csv(stream, chunksize=chunksize, nrows=nrows, **kwargs)
            with reader:
                for chunk in reader:
                    if subset and check is None:
                        chunk = chunk[keep]
                    _check_text_categories(chunk)
                    if position is not None:
                        position(raw.tell() - start)
                    yield chunk
                    del chunk  # not alive while the next chunk is parsed
        except _ExtraFields as exc:
            raise _extra_fields_error(source, start, exc.line, exc.fields) from None
        except _NulByte as exc:
            raise TableError(
                f"{source.path}: line {_file_line(source, start, exc.line):,} holds a NUL byte (\\0), which this "
                f"version of pandas ({pd.__version__}) cannot read correctly; remove the NUL bytes, or upgrade "
                "pandas to 3.1 or later (pip install 'pandas>=3.1')"
            ) from None
        except UnicodeError as exc:
            raise _decode_error(source.path, source.options.encoding, exc) from None
        except zlib.error as exc:
            raise _gzip_error(source.path, exc) from None
        except pd.errors.EmptyDataError:
            if start > 0:
                return  # the range held only blank lines
            raise TableError(f"{source.path} is empty: a table needs at least a header row") from None
        except pd.errors.ParserError as exc:
            extra = _TOO_MANY_FIELDS.search(str(exc))
            if extra is not None:
                raise _extra_fields_error(source, start, int(extra.group(2)), int(extra.group(3))) from None
            where = f" (in the part of the file from byte {start:,})" if start else ""
            raise TableError(f"{source.path}: {_short(exc)}{where}; check the delimiter and the quoting") from None
        except (OSError, EOFError) as exc:
            if isinstance(exc, FileNotFoundError):
                raise
            if source.gzip:
                raise _gzip_error(source.path, exc) from None
            raise TableError(f"{source.path}: cannot read the file ({exc})") from None


def _check_text_categories(chunk: pd.DataFrame) -> None:
    for name, dtype in chunk.dtypes.items():
        categories = dtype.categories if isinstance(dtype, pd.CategoricalDtype) else None
        if categories is not None and len(categories) and not pd.api.types.is_string_dtype(categories.dtype):
            raise _CategoriesNotText(str(name))


def _extra_fields_error(source: _Source, start: int, line: int, fields: int) -> TableError:
    """A row with more fields than the header: ``line`` counts from byte ``start``, where a
    byte range begins (only in files where b"\n" ends every line)."""
    return TableError(
        f"{source.path}: line {_file_line(source, start, line):,} has {fields} fields but the header has "
        f"{len(source.columns)}; check the delimiter ({_show_delimiter(source.options.delimiter or ',')}) "
        "and the quoting of values that contain it"
    )


def _file_line(source: _Source, start: int, line: int) -> int:
    """The line of the file that is line ``line`` of the bytes from ``start`` (where a byte range begins)."""
    if start:
        with open(source.path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as data:
            line += data[:start].count(b"\n")
    return line


class _QuoteInRange(Exception):
    """A byte range holds a quote: a quoted value might hold the newline it was cut at."""


class _ByteRange(io.RawIOBase):
    """The bytes of an open file from its current position up to ``stop``; raises
    :class:`_QuoteInRange` on reading a quote, before the parser sees it."""

    def __init__(self, raw: io.BufferedReader, stop: int):
        self._raw = raw
        self._stop = stop

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        wanted = min(len(buffer), self._stop - self._raw.tell())
        if wanted <= 0:
            return 0
        view = memoryview(buffer)[:wanted]
        read = self._raw.readinto(view)
        if view[:read].tobytes().find(b'"') >= 0:
            raise _QuoteInRange()
        return read


def _byte_ranges(
    source: _Source, *, parallel_ranges: int = PARALLEL_RANGES, parallel_min_bytes: int = PARALLEL_MIN_BYTES
) -> list[tuple[int, int]]:
    """Up to ``parallel_ranges`` byte ranges of a CSV file that parse independently into its rows.

    A cut goes right after a newline, which ends a row unless a quoted value holds it.
    So the file is cut only if it is not compressed, its encoding keeps the byte b"\n" a
    line break, and its first 64 KiB hold no quote; a range that then meets a quote stops
    with :class:`_QuoteInRange` and the caller reads the file again in one pass.
    Otherwise, or for files of fewer than ``parallel_min_bytes`` (too small to be worth it), the
    whole file is one range.
    """
    size = source.path.stat().st_size
    whole = [(0, size)]
    encoding = codecs.lookup(source.options.encoding).name
    if source.gzip or size < parallel_min_bytes or encoding not in _NEWLINE_SAFE_ENCODINGS:
        return whole
    with open(source.path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as data:
        if data.find(b'"', 0, _SAMPLE_BYTES) >= 0:
            return whole
        cuts = [0]
        for part in range(1, parallel_ranges):
            newline = data.find(b"\n", max(size * part // parallel_ranges, cuts[-1]))
            if newline < 0 or newline + 1 >= size:
                break
            cuts.append(newline + 1)
    return list(zip(cuts, [*cuts[1:], size], strict=True))


def _short(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return text.removeprefix("Error tokenizing data. C error: ")


def _iter_parquet(
    source: _Source,
    usecols: list[str] | None,
    chunksize: int,
    nrows: int | None,
    position: Callable[[float], None] | None,
    categorical: bool,
) -> Generator[pd.DataFrame, None, None]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        pf = pq.ParquetFile(source.path)
        if categorical:  # text columns come as dictionaries: each distinct value is encoded once
            kinds = dict(zip(pf.schema_arrow.names, pf.schema_arrow.types, strict=True))
            text = [name for name in (usecols or source.columns) if _is_string(kinds[name]) or _is_binary(kinds[name])]
            pf = pq.ParquetFile(source.path, read_dictionary=text)
        total = max(pf.metadata.num_rows, 1)
        done = 0
        for batch in pf.iter_batches(batch_size=chunksize, columns=usecols):
            if nrows is not None and done >= nrows:
                return
            if nrows is not None and done + batch.num_rows > nrows:
                batch = batch.slice(0, nrows - done)
            done += batch.num_rows
            frame = _as_frame(_as_cells(batch, source.path))
            del batch
            if position is not None:
                position(min(done / total, 1.0))
            yield frame
            del frame
    except (pa.ArrowException, OSError) as exc:
        if isinstance(exc, FileNotFoundError):
            raise
        raise TableError(f"{source.path}: cannot read the Parquet file ({exc})") from None


def _as_cells(batch: Any, path: Path) -> Any:
    """An Arrow record batch with every column in a type pandas holds as table cells: bytes
    decoded as UTF-8 text (refused, naming the column, if they are not), dates, times and
    decimals as their text (any year, where pandas stops at 2262 and Python at 9999)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    arrays = []
    for name, array in zip(batch.schema.names, batch.columns, strict=True):
        kind = array.type
        value = kind.value_type if pa.types.is_dictionary(kind) else kind
        if _is_binary(value) or pa.types.is_temporal(value) or pa.types.is_decimal(value):
            target = pa.dictionary(kind.index_type, pa.string()) if pa.types.is_dictionary(kind) else pa.string()
            try:
                array = pc.cast(array, target)
            except pa.ArrowInvalid as exc:
                raise TableError(
                    f"{path}: column {name!r} holds bytes that are not UTF-8 text ({_short(exc)}); "
                    "store it as text (UTF-8)"
                ) from None
        arrays.append(array)
    return pa.RecordBatch.from_arrays(arrays, names=batch.schema.names)


def _as_frame(batch: Any) -> pd.DataFrame:
    """A record batch as a DataFrame, integer columns with empty cells as pandas' nullable
    integers: the default, float64, would round 2**53 + 1 to 2**53."""
    import pyarrow as pa

    frame = batch.to_pandas()
    for name, array in zip(batch.schema.names, batch.columns, strict=True):
        if pa.types.is_integer(array.type) and array.null_count:
            nullable = pd.api.types.pandas_dtype(str(array.type).replace("int", "Int").replace("uInt", "UInt"))
            frame[name] = array.to_pandas(types_mapper={array.type: nullable}.get).array
    return frame


def _as_text(frame: pd.DataFrame) -> pd.DataFrame:
    """Parquet columns as text, the way they would read from a CSV file (:func:`cell_text`)."""
    return pd.DataFrame({name: cell_text(frame[name]) for name in frame.columns}, index=frame.index)


def read_table(
    path: str | os.PathLike[str],
    options: TableOptions | None = None,
    *,
    columns: Sequence[str] | None = None,
    nrows: int | None = None,
) -> pd.DataFrame:
    """Read a whole table (or its first ``nrows`` rows), every column as text
    (empty cells are missing).

    Examples
    --------
    >>> import tempfile, pathlib
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "t.csv"
    >>> _ = path.write_text("age;sex\\n30;F\\n41;M\\n")
    >>> read_table(path)
      age sex
    0  30   F
    1  41   M
    """
    chunks = list(iter_table_chunks(path, options, columns=columns, nrows=nrows, chunksize=None))
    if len(chunks) == 1:
        return chunks[0].reset_index(drop=True)
    return pd.concat(chunks, ignore_index=True)


def preview_table(path: str | os.PathLike[str], options: TableOptions | None = None, rows: int = 20) -> pd.DataFrame:
    """The first ``rows`` rows, every column as text (for a data preview)."""
    if isinstance(rows, bool) or not isinstance(rows, int) or rows < 0:
        raise TableError(f"rows must be a non-negative integer, got {rows!r}")
    return read_table(path, options, nrows=rows)


def iter_table_chunks(
    path: str | os.PathLike[str],
    options: TableOptions | None = None,
    *,
    columns: Sequence[str] | None = None,
    chunksize: int | None = None,
    nrows: int | None = None,
    progress: ProgressCallback | None = None,
    typed: bool = False,
) -> Iterator[pd.DataFrame]:
    """Read a table chunk by chunk (``chunksize`` rows; by default about 32 MiB of text).

    Columns are text, as in :func:`read_table`; with ``typed``, a Parquet file's columns
    keep their types (text ones as categoricals), for callers that turn each distinct value
    into its text (:func:`~privelet_gui.engine.model.schema.cell_text`) rather than every cell (a
    CSV file's columns are text either way). ``progress(fraction, stage)`` receives the
    fraction of the file's bytes read so far.
    """
    source = _resolve(path, options)
    usecols = _check_columns(source, columns)
    rows = _chunk_rows(source, chunksize)
    if nrows is not None and (isinstance(nrows, bool) or not isinstance(nrows, int) or nrows < 0):
        raise TableError(f"nrows must be a non-negative integer, got {nrows!r}")
    if nrows == 0:
        yield _empty_frame(source, usecols)
        return
    if source.format == "parquet":
        fraction = None if progress is None else (lambda f: progress(f, "reading table"))
        produced = False
        for frame in _iter_parquet(source, usecols, rows, nrows, fraction, categorical=typed):
            produced = True
            yield frame if typed else _as_text(frame)
        if not produced:  # a file with columns but no rows
            yield _empty_frame(source, usecols)
        return
    size = max(source.path.stat().st_size, 1)
    position = None if progress is None else (lambda done: progress(min(done / size, 1.0), "reading table"))
    produced = False
    for chunk in _iter_csv(source, usecols, str, rows, nrows, position, every_column=True):
        produced = True
        yield chunk
    if not produced:
        yield _empty_frame(source, usecols)


def _empty_frame(source: _Source, usecols: list[str] | None) -> pd.DataFrame:
    names = usecols if usecols is not None else list(source.columns)
    return pd.DataFrame({name: pd.Series([], dtype="str") for name in names})


def _schema_columns(schema: Schema) -> list[str]:
    return list(dict.fromkeys(a.source_column for a in schema))


# -- counting -------------------------------------------------------------------------------


class _CountingReaders:
    """The producers of a file's raw chunks for counting (categoricals from CSV, native
    types from Parquet): one per byte range of a big plain CSV file (see
    :func:`_byte_ranges`, sized by ``parallel_ranges`` and ``parallel_min_bytes``), else one;
    and the fraction of the file they have read."""

    def __init__(
        self,
        source: _Source,
        usecols: list[str] | None,
        chunksize: int | None,
        *,
        one_pass: bool = False,
        text_columns: frozenset[str] = frozenset(),
        every_column: bool = False,
        parallel_ranges: int = PARALLEL_RANGES,
        parallel_min_bytes: int = PARALLEL_MIN_BYTES,
    ):
        rows = _chunk_rows(source, chunksize)
        # Categories, except for the columns whose values must be read as text one by one.
        dtype: DtypeArg = "category"
        if text_columns:
            dtype = {name: "str" if name in text_columns else "category" for name in source.columns}
        self._size = max(source.path.stat().st_size, 1)
        self.producers: list[Callable[[], Chunks]]
        if source.format == "parquet":
            self._done = [0.0]
            self.producers = [lambda: _iter_parquet(source, usecols, rows, None, self._parquet_at, categorical=True)]
            return
        ranges = [(0, self._size)] if one_pass else _byte_ranges(
            source, parallel_ranges=parallel_ranges, parallel_min_bytes=parallel_min_bytes
        )
        self._done = [0.0] * len(ranges)
        if len(ranges) == 1:
            self.producers = [
                lambda: _iter_csv(source, usecols, dtype, rows, None, self._reached(0), every_column=every_column)
            ]
            return
        if chunksize is None:
            rows = max(rows // _PARALLEL_CHUNK_DIVISOR, _MIN_CHUNK_ROWS)
        self.producers = [
            partial(
                _iter_csv, source, usecols, dtype, rows, None, self._reached(part), byte_range,
                every_column=every_column,
            )
            for part, byte_range in enumerate(ranges)
        ]

    def _parquet_at(self, fraction: float) -> None:
        self._done[0] = fraction * self._size

    def _reached(self, part: int) -> Callable[[int], None]:
        def record(done: int) -> None:
            self._done[part] = done

        return record

    @property
    def fraction(self) -> float:
        return min(sum(self._done) / self._size, 1.0)


def read_ahead(*producers: Callable[[], Chunks]) -> Chunks:
    """The chunks of every ``producer()``, each producer read in its own background thread
    while the caller works on earlier chunks.

    The parsers (pandas' C tokenizer, pyarrow) release the GIL, so reading and counting
    overlap. Chunks of one producer keep their order; those of different producers
    interleave. At most one parsed chunk per producer waits. An error while reading is
    raised here, in the caller's thread; closing this generator (an error or a cancel in
    the caller) stops the readers after their current chunk and waits for them, so no
    thread outlives the call.
    """
    handoff: queue.Queue[tuple[Any, BaseException | None]] = queue.Queue(maxsize=len(producers))
    stop = threading.Event()
    finished = object()

    def offer(item: Any, error: BaseException | None = None) -> bool:
        while not stop.is_set():
            try:
                handoff.put((item, error), timeout=0.05)
                return True
            except queue.Full:
                continue
        return False

    def read(make_chunks: Callable[[], Chunks]) -> None:
        try:
            with contextlib.closing(make_chunks()) as chunks:
                for chunk in chunks:
                    if not offer(chunk):
                        return
                    del chunk
        except BaseException as exc:
            offer(None, exc)
            return
        offer(finished)

    readers = [
        threading.Thread(target=read, args=(producer,), name="privelet-table-reader", daemon=True)
        for producer in producers
    ]
    for reader in readers:
        reader.start()
    try:
        running = len(readers)
        while running:
            item, error = handoff.get()
            if error is not None:
                raise error
            if item is finished:
                running -= 1
                continue
            yield item
            del item
    finally:
        stop.set()
        for reader in readers:
            reader.join()


def count_table(
    path: str | os.PathLike[str],
    schema: Schema,
    options: TableOptions | None = None,
    *,
    invalid: Literal["error", "drop"] = "error",
    progress: ProgressCallback | None = None,
    should_cancel: CancelCallback | None = None,
    chunksize: int | None = None,
    rows: RowFingerprint | None = None,
    parallel_ranges: int = PARALLEL_RANGES,
    parallel_min_bytes: int = PARALLEL_MIN_BYTES,
) -> tuple[np.ndarray, CountReport]:
    """Count a table file into its frequency matrix, one chunk at a time.

    Returns ``(M, report)``: M is float64 of shape ``schema.shape`` holding the true
    counts (never publish it), ``report`` says how many rows were read, counted,
    dropped and clamped. ``invalid="drop"`` drops rows with values outside the domain
    instead of raising :class:`~privelet_gui.engine.DomainError`. ``progress`` gets the
    fraction of the file's bytes read; ``should_cancel`` is checked between chunks
    (raising :class:`~privelet_gui.engine.Cancelled`). Chunks are parsed in background
    threads (``parallel_ranges`` of them, each reading its part of a plain CSV file of at least
    ``parallel_min_bytes``) while earlier ones are counted. Memory: the matrix plus a few
    chunks (about two per reader).

    Examples
    --------
    >>> import tempfile, pathlib
    >>> from privelet_gui.engine import Hierarchy, NominalAttribute, OrdinalAttribute, Schema
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "t.csv"
    >>> _ = path.write_text("age,sex\\n0,F\\n2,M\\n2,M\\n")
    >>> schema = Schema([OrdinalAttribute.integer_range("age", 0, 2),
    ...                  NominalAttribute("sex", Hierarchy.flat(["F", "M"]))])
    >>> m, report = count_table(path, schema)
    >>> m.tolist(), report.rows_counted
    ([[1.0, 0.0], [0.0, 0.0], [0.0, 2.0]], 3)
    """
    steps = Progress(progress, should_cancel)
    steps.report(0.0, "reading table")
    source = _resolve(path, options)
    usecols = _check_columns(source, _schema_columns(schema))
    # The table's texts meaning missing, for every attribute that names none of its own.
    schema = schema.with_default_missing_values(source.options.missing_values)
    shown = [0.0]  # progress never moves back, even when counting starts again
    # Counting starts again (at most once for each reason, once per column for the last) when
    # the file turns out to need a slower way: a quote past the sample (no byte ranges, and
    # every column read so that the parser counts the fields), or a column read as booleans.
    one_pass, every_column, text_columns = False, False, frozenset[str]()
    while True:
        readers = _CountingReaders(
            source, usecols, chunksize, one_pass=one_pass, text_columns=text_columns, every_column=every_column,
            parallel_ranges=parallel_ranges, parallel_min_bytes=parallel_min_bytes,
        )
        producers = readers.producers
        if rows is not None:
            rows.reset()
            producers = [partial(_fingerprinted, producer, rows) for producer in producers]
        try:
            counter = _count(producers, readers, schema, invalid, steps, shown)
            break
        except _QuoteInRange:
            one_pass = every_column = True
        except _QuoteInCheckedFields:
            every_column = True
        except _CategoriesNotText as exc:
            text_columns |= {exc.column}
    matrix = counter.matrix()
    steps.report(1.0, "counting done")
    return matrix, counter.report


def _fingerprinted(producer: Callable[[], Chunks], rows: RowFingerprint) -> Chunks:
    """The chunks of ``producer()``, each added to ``rows`` first (in the reader's thread,
    while the counter works on earlier chunks)."""
    with contextlib.closing(producer()) as chunks:
        for chunk in chunks:
            rows.add(chunk)
            yield chunk


def _count(
    producers: Sequence[Callable[[], Chunks]],
    readers: _CountingReaders,
    schema: Schema,
    invalid: Literal["error", "drop"],
    steps: Progress,
    shown: list[float],
) -> FrequencyCounter:
    counter = FrequencyCounter(schema, invalid=invalid)
    # Categorical chunks: the engine encodes each distinct value once and gathers the rows.
    chunks = read_ahead(*producers)
    try:
        for chunk in chunks:
            counter.add(chunk)
            del chunk  # not alive while the next one is handed over
            shown[0] = max(shown[0], readers.fraction)
            steps.report(shown[0], "counting rows")
    finally:
        chunks.close()  # on error or cancel: stop the reader threads too
    return counter
