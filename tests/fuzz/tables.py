"""Generated tables for the fuzz tests, their files in four formats, and the oracle count.

A :class:`Case` is a schema, the rows of a table (cells of text, or typed values for
Parquet columns) and how to count it. :func:`oracle` counts the rows the straightforward
way, one cell at a time, from the rules the engine documents:

- a text attribute (nominal, or ordinal with listed values) matches a cell's text exactly;
  a Parquet float cell's text is the whole number below 2**53 it holds ("20" for 20.0 and
  "0" for -0.0, in every chunk) or else Python's text of the float ("2.5", "inf");
- an integer range reads a cell as the exact number it writes (``7``, ``+7``, `` 7 ``,
  ``7.0``, ``0.7e1``; ``inf`` lies beyond every range; a number that is not whole, ``nan``
  or other text is unparsable); a typed integer or float is its exact value;
- bins read a cell as the float64 it writes and hold it when ``edge(i) <= x < edge(i + 1)``;
- an empty or blank cell is missing: the attribute's ``missing`` value if it has one;
- outside numbers follow ``out_of_range``; rows with unparsable or missing values raise a
  DomainError unless ``invalid="drop"`` (rows already dropped by an earlier attribute are
  not looked at again, as in the engine).
"""

from __future__ import annotations

import gzip
import math
import string
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
from hypothesis import strategies as st

from privelet_gui.engine import (
    Hierarchy,
    NominalAttribute,
    NumericBins,
    OrdinalAttribute,
    Schema,
    SchemaError,
)
from privelet_gui.engine.model.schema import Attribute

FORMATS = ("csv", "tsv", "csv.gz", "parquet")

# Text that tends to break readers: separators, quotes, line breaks, numbers that are text,
# words pandas likes to convert, non-ASCII letters, a NUL.
_TRICKY = ["007", "7", "7.0", "1e3", "true", "TRUE", "False", "NA", "nan", "None", "?", "*", "(all)",
           "a,b", "a;b", 'say "hi"', "two\nlines", "cr\rhere", " lead", "trail ", "tab\there", "é", "日本",
           "😀", "nul\x00", "-", "0", "1"]
_ALPHABET = string.ascii_letters + string.digits + " ,;|\t\"'-_.()*é€\u2028"


def labels(draw: Any, count: int) -> list[str]:
    """``count`` distinct labels that are not blank (a blank cell is a missing one)."""
    text = st.one_of(st.sampled_from(_TRICKY), st.text(_ALPHABET, min_size=1, max_size=8))
    chosen = draw(st.lists(text.filter(lambda t: t.strip()), min_size=count, max_size=count, unique=True))
    return chosen


@dataclass
class Column:
    """One attribute's column: its cells and, for Parquet, its type."""

    attribute: Attribute
    name: str
    kind: str = "text"  # text, int64, uint64 or float64 (Parquet only)
    cells: list[Any] = field(default_factory=list)


@dataclass
class Case:
    """A generated table and how to count it."""

    schema: Schema
    columns: list[Column]  # the schema's columns, then unused ones
    rows: int
    invalid: str
    delimiter: str = ","
    header: bool = True
    quote_all: bool = False
    newline: str = "\n"
    bom: bool = False
    blank_lines: frozenset[int] = frozenset()  # a blank line is written before these rows
    extra_field_row: int | None = None  # this row gets two more fields than the header
    padding: int = 0  # rows of the first valid row written first (to pass the 64 KiB sample)
    chunk_rows: int | None = None  # rows per chunk the table is counted in (None: the reader's default)

    def text_cells(self, row: int) -> list[str]:
        return [_as_text(column.cells[row]) for column in self.columns]


def _as_text(cell: Any) -> str:
    if cell is None:
        return ""
    if isinstance(cell, float):
        return repr(cell)
    return str(cell)


# -- attributes and their cells ------------------------------------------------------------------------

_RANGE_STARTS = [0, 1, -5, 17, 2**53 - 2, 2**63 - 12, -(2**63), 10**15]


@st.composite
def integer_range(draw: Any, name: str) -> OrdinalAttribute:
    start = draw(st.sampled_from(_RANGE_STARTS)) + draw(st.integers(0, 3))
    size = draw(st.integers(1, 10))
    start = min(start, 2**63 - size)
    values = OrdinalAttribute.integer_range(name, start, start + size - 1)
    return _with_options(draw, name, values)


@st.composite
def bins(draw: Any, name: str) -> OrdinalAttribute:
    start = draw(st.sampled_from([0, -10, 0.5, 1e6, -0.25, 100]))
    width = draw(st.sampled_from([1, 3, 0.1, 2.5, 1000, 0.3]))
    count = draw(st.integers(1, 6))
    stop = start + count * width - draw(st.sampled_from([0, 0, width / 2]))
    try:
        spec = NumericBins(start, stop, width)
    except SchemaError:
        spec = NumericBins(0, 10, 3)
    return _with_options(draw, name, OrdinalAttribute(name, bins=spec))


def _with_options(draw: Any, name: str, attribute: OrdinalAttribute) -> OrdinalAttribute:
    out = draw(st.sampled_from(["error", "clamp", "drop"]))
    missing = draw(st.one_of(st.none(), st.sampled_from(list(attribute.labels[:3]))))
    if attribute.bins is not None:
        return OrdinalAttribute(name, bins=attribute.bins, out_of_range=out, missing=missing)
    return OrdinalAttribute(name, attribute.values, out_of_range=out, missing=missing)


@st.composite
def text_attribute(draw: Any, name: str) -> Attribute:
    return _listed(draw, name, labels(draw, draw(st.integers(1, 6))))


# Floats whose texts a nominal attribute of a Parquet float column lists: whole ones read as
# integers ("20", and "0" for -0.0 too), others as Python writes them ("2.5", "1e+16").
_FLOAT_VALUES = [20.0, 2.5, 0.0, -3.0, 0.1, 1e16, 2.0**53, 2.0**53 - 1, math.inf, -math.inf, 1e-300]


def float_text(value: float) -> str:
    """The text of a Parquet float cell (the oracle's own statement of the rule)."""
    whole = math.isfinite(value) and value.is_integer() and abs(value) < 2.0**53
    return str(int(value)) if whole else str(value)


@st.composite
def float_attribute(draw: Any, name: str) -> Attribute:
    values = draw(st.lists(st.sampled_from(_FLOAT_VALUES), min_size=1, max_size=5, unique=True))
    return _listed(draw, name, [float_text(v) for v in values])


def _listed(draw: Any, name: str, words: list[str]) -> Attribute:
    """A nominal attribute (flat, or two groups) or an ordinal one listing ``words``."""
    missing = draw(st.one_of(st.none(), st.sampled_from(words)))
    if draw(st.booleans()):
        return OrdinalAttribute(name, words, missing=missing)
    root = next(r for r in ("*", "(all)", "(root)", "(every value)") if r not in words)
    if len(words) >= 3 and draw(st.booleans()):
        groups = {f"{root} group {i}": words[i::2] for i in range(2)}
        if not set(groups) & set(words):
            return NominalAttribute(name, Hierarchy.from_nested({root: groups}), missing=missing)
    return NominalAttribute(name, Hierarchy.flat(words, root=root), missing=missing)


def _range_cells(draw: Any, attribute: OrdinalAttribute, kind: str, rows: int) -> list[Any]:
    lo = attribute.integer_start
    assert lo is not None
    hi = lo + attribute.size - 1

    def one() -> Any:
        choice = draw(st.sampled_from(["in"] * 6 + ["out", "out", "missing", "bad"]))
        if choice == "missing":
            return None if kind != "text" else draw(st.sampled_from(["", "  "]))
        if choice == "in":
            value = draw(st.integers(lo, hi))
        else:
            value = draw(st.sampled_from([lo - 1, hi + 1, lo - 1000, hi + 10**6, -(2**63) - 1, 2**64 - 1, 2**70]))
        if kind in ("int64", "uint64"):
            low, high = (-(2**63), 2**63 - 1) if kind == "int64" else (0, 2**64 - 1)
            return value if low <= value <= high else draw(st.sampled_from([low, high]))
        if kind == "float64":
            if choice == "bad":
                return draw(st.sampled_from([0.5, float(lo) + 0.25, -1.5]))
            return draw(st.sampled_from([float(value), math.inf, -math.inf]))
        if choice == "bad":
            return draw(st.sampled_from(["abc", "1.5", "nan", f"{lo}.5", "0x10", "1,0", str(lo) + "e-1", "--1"]))
        return draw(st.sampled_from(_integer_texts(value)))

    return [one() for _ in range(rows)]


def _integer_texts(value: int) -> list[str]:
    texts = [str(value), str(value), f"{value}.0", f" {value} ", f"{value}e0"]
    if value >= 0:
        texts += [f"+{value}", f"00{value}"]
    if abs(value) > 10:
        texts.append(f"{Fraction(value) / 10}e1" if value % 10 == 0 else f"{value}.000")
    texts.append(str(Fraction(value)))
    return texts


def _bin_cells(draw: Any, attribute: OrdinalAttribute, kind: str, rows: int) -> list[Any]:
    spec = attribute.bins
    assert spec is not None

    def one() -> Any:
        choice = draw(st.sampled_from(["in"] * 6 + ["edge", "out", "missing", "bad"]))
        if choice == "missing":
            return None if kind != "text" else draw(st.sampled_from(["", " "]))
        if choice == "in":
            i = draw(st.integers(0, spec.count - 1))
            low, high = spec.edge(i), spec.edge(i + 1)
            value = low + draw(st.floats(0, 1, exclude_max=True)) * (high - low)
        elif choice == "edge":
            value = spec.edge(draw(st.integers(0, spec.count)))
        else:
            value = draw(st.sampled_from([float(spec.start) - 1, float(spec.stop), float(spec.stop) + 5, -math.inf, math.inf]))
        if choice == "bad" and kind == "text":
            return draw(st.sampled_from(["abc", "nan", "1..5", "--2"]))
        if kind == "float64":
            return float(value)
        if kind in ("int64", "uint64"):
            whole = math.floor(value) if math.isfinite(value) else 0
            return max(whole, 0) if kind == "uint64" else whole
        return repr(float(value)) if not float(value).is_integer() or abs(value) > 1e15 else str(int(value))

    return [one() for _ in range(rows)]


def _float_cells(draw: Any, rows: int) -> list[float | None]:
    """Floats of the pool (those the attribute does not list fall outside it), -0.0, a
    fraction, NaN and empty cells (both missing)."""
    pool = [*_FLOAT_VALUES, -0.0, 7.25, math.nan, None]
    return [draw(st.sampled_from(pool)) for _ in range(rows)]


def _text_cells(draw: Any, attribute: Attribute, rows: int) -> list[str]:
    words = list(attribute.labels)

    def one() -> str:
        choice = draw(st.sampled_from(["label"] * 6 + ["missing", "other"]))
        if choice == "missing":
            return draw(st.sampled_from(["", "   "]))
        if choice == "other":
            return draw(st.one_of(st.sampled_from(_TRICKY), st.text(_ALPHABET, min_size=1, max_size=6)))
        return draw(st.sampled_from(words))

    return [one() for _ in range(rows)]


@st.composite
def cases(draw: Any, fmt: str) -> Case:
    """A table in format ``fmt``: one to three attributes, unused columns, hostile cells."""
    rows = draw(st.integers(0, 25))
    names = labels(draw, draw(st.integers(1, 3)) + draw(st.integers(0, 2)))
    attributes = len(names) - draw(st.integers(0, len(names) - 1))
    columns: list[Column] = []
    for i, name in enumerate(names):
        if i >= attributes:  # unused columns
            columns.append(Column(OrdinalAttribute(f"unused {i}", ["x"]), name, "text", _text_cells(draw, NominalAttribute("u", Hierarchy.flat(["x", "y"])), rows)))
            continue
        kind = draw(st.sampled_from(["range", "bins", "text"] + (["floats"] if fmt == "parquet" else [])))
        strategy = {"range": integer_range, "bins": bins, "text": text_attribute, "floats": float_attribute}[kind]
        attribute = _read_from(draw(strategy(f"a{i}")), name)
        column_kind = "float64" if kind == "floats" else "text"
        if fmt == "parquet" and kind in ("range", "bins"):
            column_kind = draw(st.sampled_from(["text", "int64", "uint64", "float64"]))
        if kind == "floats":
            cells: list[Any] = _float_cells(draw, rows)
        elif kind == "range":
            cells = _range_cells(draw, attribute, column_kind, rows)  # type: ignore[arg-type]
        elif kind == "bins":
            cells = _bin_cells(draw, attribute, column_kind, rows)  # type: ignore[arg-type]
        else:
            cells = _text_cells(draw, attribute, rows)
        columns.append(Column(attribute, name, column_kind, cells))
    header = fmt == "parquet" or draw(st.booleans())
    if not header:  # the columns are then column_1, column_2, ...
        for i, column in enumerate(columns):
            column.name = f"column_{i + 1}"
            if i < attributes:
                column.attribute = _read_from(column.attribute, column.name)
    extra_field_row = None
    first = 0 if header else 1  # without a header, the first row says how many fields there are
    if fmt != "parquet" and rows > first and draw(st.sampled_from([False] * 5 + [True])):
        extra_field_row = draw(st.integers(first, rows - 1))
        _single_lines(columns)  # so that the line of the row is plain to count
    schema = Schema([c.attribute for c in columns[:attributes]])
    case = Case(schema, columns, rows, draw(st.sampled_from(["error", "drop"])), header=header,
                extra_field_row=extra_field_row)
    if fmt == "parquet":  # read in chunks of a few rows, or in one
        case.chunk_rows = draw(st.sampled_from([None, 1, 3]))
    if fmt != "parquet":
        case.delimiter = "\t" if fmt == "tsv" else draw(st.sampled_from([",", ";", "|"]))
        case.quote_all = draw(st.booleans())
        case.newline = draw(st.sampled_from(["\n", "\r\n"]))
        case.bom = draw(st.booleans())
        if len(columns) > 1 and rows:
            case.blank_lines = frozenset(draw(st.lists(st.integers(0, rows - 1), max_size=2)))
        if rows and draw(st.sampled_from([False] * 5 + [True])):
            case.padding = 4000  # past the 64 KiB sample: the field check and the parser's own
    return case


def _single_lines(columns: list[Column]) -> None:
    """Take line breaks out of every cell and name (labels keep theirs: a cell that loses
    one no longer matches, which the oracle sees too)."""
    used: set[str] = set()
    for i, column in enumerate(columns):
        name = column.name.replace("\r", " ").replace("\n", " ")
        column.name = name if name not in used else f"{name} {i}"
        used.add(column.name)
        column.attribute = _read_from(column.attribute, column.name) if column.attribute.column else column.attribute
        column.cells = [c.replace("\r", " ").replace("\n", " ") if isinstance(c, str) else c for c in column.cells]


def _read_from(attribute: Attribute, column: str) -> Attribute:
    if isinstance(attribute, NominalAttribute):
        return NominalAttribute(attribute.name, attribute.hierarchy, missing=attribute.missing, column=column)
    if attribute.bins is not None:
        return OrdinalAttribute(attribute.name, bins=attribute.bins, out_of_range=attribute.out_of_range,
                                missing=attribute.missing, column=column)
    return OrdinalAttribute(attribute.name, attribute.values, out_of_range=attribute.out_of_range,
                            missing=attribute.missing, column=column)


# -- files -----------------------------------------------------------------------------------------------


def _quoted(text: str, delimiter: str, always: bool, alone: bool) -> str:
    special = delimiter in text or any(c in text for c in '"\r\n') or (alone and not text.strip())
    if always or special:
        return '"' + text.replace('"', '""') + '"'
    return text


def csv_text(case: Case) -> tuple[str, int | None]:
    """The file's text, and the line on which the row with extra fields lands (if any)."""
    lines: list[str] = []
    alone = len(case.columns) == 1

    def record(cells: list[str]) -> str:
        return case.delimiter.join(_quoted(c, case.delimiter, case.quote_all, alone) for c in cells)

    def physical(text: str) -> int:  # lines a record takes (quoted values may hold line breaks)
        return 1 + text.count("\n") + text.replace("\r\n", "\n").count("\r")

    line = 1
    if case.header:
        lines.append(record([c.name for c in case.columns]))
        line += physical(lines[-1])
    bad_line = None
    for _ in range(case.padding):
        lines.append(record(case.text_cells(_first_valid_row(case))))
        line += physical(lines[-1])
    for row in range(case.rows):
        if row in case.blank_lines:
            lines.append("")
            line += 1
        cells = case.text_cells(row)
        if row == case.extra_field_row:
            cells = [*cells, "extra", "fields"]
            bad_line = line
        lines.append(record(cells))
        line += physical(lines[-1])
    return "".join(text + case.newline for text in lines), bad_line


def _first_valid_row(case: Case) -> int:
    """A row the oracle counts whatever the policy (padding repeats it), else row 0."""
    for row in range(case.rows):
        if all(_judge(c.attribute, c.kind, c.cells[row])[0] == "ok" for c in case.columns[: len(case.schema)]):
            return row
    return 0


def write_case(case: Case, folder: Path, fmt: str) -> tuple[Path, int | None]:
    """The file of ``case`` in ``fmt`` in ``folder``, and the line of the row with extra fields."""
    if fmt == "parquet":
        import pyarrow as pa
        import pyarrow.parquet as pq

        arrays = {}
        for column in case.columns:
            kind = {"text": pa.string(), "int64": pa.int64(), "uint64": pa.uint64(), "float64": pa.float64()}[column.kind]
            arrays[column.name] = pa.array(column.cells, type=kind)
        path = folder / "table.parquet"
        pq.write_table(pa.table(arrays), path)
        return path, None
    text, bad_line = csv_text(case)
    data = text.encode("utf-8")
    if case.bom:
        data = b"\xef\xbb\xbf" + data
    path = folder / {"csv": "table.csv", "tsv": "table.tsv", "csv.gz": "table.csv.gz"}[fmt]
    path.write_bytes(gzip.compress(data) if fmt == "csv.gz" else data)
    return path, bad_line


# -- the oracle ------------------------------------------------------------------------------------------


class OracleError(Exception):
    """The oracle's count: a value outside the domain that the policy does not drop."""

    def __init__(self, attribute: str):
        super().__init__(attribute)
        self.attribute = attribute


def _judge(attribute: Attribute, kind: str, cell: Any) -> tuple[str, int]:
    """("ok", code) | ("missing", 0) | ("below" | "above", 0) | ("bad", 0) for one cell."""
    if cell is None or (isinstance(cell, float) and math.isnan(cell)):
        return "missing", 0
    if isinstance(cell, str) and not cell.strip():
        return "missing", 0
    if isinstance(attribute, NominalAttribute) or not attribute.is_numeric:
        text = cell if isinstance(cell, str) else float_text(cell) if isinstance(cell, float) else str(cell)
        labels = list(attribute.labels)
        return ("ok", labels.index(text)) if text in labels else ("bad", 0)
    if attribute.bins is not None:
        try:
            value = float(cell.strip()) if isinstance(cell, str) else float(cell)
        except ValueError:
            return "bad", 0
        if math.isnan(value):
            return "bad", 0
        spec = attribute.bins
        if value < spec.edge(0):
            return "below", 0
        if value >= spec.edge(spec.count):
            return "above", 0
        return "ok", next(i for i in range(spec.count) if spec.edge(i) <= value < spec.edge(i + 1))
    number = _exact(cell)
    if number is None:
        return "bad", 0
    lo = attribute.integer_start
    assert lo is not None
    if number < lo:
        return "below", 0
    if number > lo + attribute.size - 1:
        return "above", 0
    return "ok", int(number) - lo


def _exact(cell: Any) -> Fraction | float | None:
    """The whole number a cell holds (infinities as floats), or None."""
    if isinstance(cell, int):
        return Fraction(cell)
    if isinstance(cell, float):
        if math.isinf(cell):
            return cell
        return Fraction(cell) if cell.is_integer() else None
    text = cell.strip()
    if text.lower() in ("inf", "+inf", "infinity", "+infinity", "-inf", "-infinity"):
        return -math.inf if text.startswith("-") else math.inf
    if not text or any(c not in "0123456789+-.eE" for c in text):
        return None
    try:
        value = Fraction(text)
    except (ValueError, ZeroDivisionError):
        return None
    return value if value.denominator == 1 else None


def oracle(case: Case) -> tuple[np.ndarray, int]:
    """The frequency matrix of ``case`` counted row by row, and the number of rows counted.

    Raises :class:`OracleError` naming the attribute whose value the engine must refuse: the
    first attribute with a value to refuse in the first chunk holding one (a table counted in
    chunks is refused at the first chunk that has a bad value, whatever later chunks hold).
    """
    schema = case.schema
    matrix = np.zeros(schema.shape)
    rows = [_first_valid_row(case)] * case.padding + list(range(case.rows))
    kept = [True] * len(rows)
    codes = [[0] * len(schema) for _ in rows]
    size = case.chunk_rows or max(len(rows), 1)
    for start in range(0, len(rows), size):
        _judge_chunk(case, rows, range(start, min(start + size, len(rows))), kept, codes)
    for i in range(len(rows)):
        if kept[i]:
            matrix[tuple(codes[i])] += 1
    return matrix, sum(kept)


def _judge_chunk(case: Case, rows: list[int], chunk: range, kept: list[bool], codes: list[list[int]]) -> None:
    """:func:`oracle` on the rows ``chunk`` of ``rows``: attribute by attribute, as the engine
    checks a chunk."""
    for axis, attribute in enumerate(case.schema):
        column = case.columns[axis]
        for i in chunk:
            row = rows[i]
            if not kept[i]:
                continue
            verdict, code = _judge(attribute, column.kind, column.cells[row])
            if verdict == "missing" and attribute.missing is not None:
                verdict, code = "ok", attribute.index_of(attribute.missing)
            if verdict in ("below", "above"):
                if attribute.out_of_range == "clamp":
                    verdict, code = "ok", 0 if verdict == "below" else attribute.size - 1
                elif attribute.out_of_range == "drop":
                    kept[i] = False
                    continue
            if verdict != "ok":
                if case.invalid == "drop":
                    kept[i] = False
                    continue
                raise OracleError(attribute.name)
            codes[i][axis] = code
