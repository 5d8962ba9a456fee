"""Counting a table into its frequency matrix M, in O(n) and chunk by chunk."""

from __future__ import annotations

import math
import re
import warnings
from collections.abc import Callable, Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import nullcontext
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal, NamedTuple

import numpy as np

from ..formatting import counted
from .errors import DomainError, InternalError, SchemaError
from .kernels.counts import count_cells
from .memory import available_memory, byte_size
from .model.schema import Attribute, Schema
from .pipeline import thread_count, usable_cores
from .progress import CancelCallback, Progress, ProgressCallback

if TYPE_CHECKING:  # pandas is imported when a table is counted, not with the engine
    import pandas as pd

__all__ = ["INVALID_POLICIES", "CountReport", "DroppedRowsWarning", "FrequencyCounter", "InvalidPolicy", "frequency_matrix"]

InvalidPolicy = Literal["error", "drop"]
#: What counting may do with a row outside the domains: stop with an error, or drop it.
INVALID_POLICIES: tuple[InvalidPolicy, ...] = ("error", "drop")

# From this many rows on, a chunk's cell indices are computed on several threads (numpy
# releases the GIL in those loops). A file's chunks (at most 2**19 rows) stay serial.
_PARALLEL_ROWS = 1 << 20


class DroppedRowsWarning(UserWarning):
    """Rows were dropped while counting because their values were outside the domain."""


@dataclass
class CountReport:
    """What happened to the rows of a table while counting it.

    A dropped row is reported once, for the first attribute (in schema order) that rejected
    it: in ``missing_dropped`` when its cell was missing and the attribute drops such rows
    (``drop_missing``, or ``invalid="drop"``), else in ``dropped`` (a value outside the domain).

    Attributes
    ----------
    rows_read : int, default 0
        Rows of the table read.
    rows_counted : int, default 0
        Rows counted into M.
    dropped : dict of str to int
        Per attribute, rows dropped for a value outside its domain.
    clamped : dict of str to int
        Per attribute, out-of-range numbers clamped to the first or last value.
    missing_dropped : dict of str to int
        Per attribute, rows dropped for a missing cell.
    """

    rows_read: int = 0
    rows_counted: int = 0
    dropped: dict[str, int] = field(default_factory=dict)  # per attribute that rejected the row
    clamped: dict[str, int] = field(default_factory=dict)
    missing_dropped: dict[str, int] = field(default_factory=dict)  # rows dropped for a missing cell

    @property
    def rows_dropped(self) -> int:
        return self.rows_read - self.rows_counted

    def add(self, other: CountReport) -> None:
        """Add the rows of another part of the same table (e.g. one counted on a cluster).

        Parameters
        ----------
        other : CountReport
            The other part's report; its figures are added to this one's, in place.
        """
        self.rows_read += other.rows_read
        self.rows_counted += other.rows_counted
        for mine, theirs in ((self.dropped, other.dropped), (self.clamped, other.clamped),
                             (self.missing_dropped, other.missing_dropped)):
            for name, n in theirs.items():
                mine[name] = mine.get(name, 0) + n

    def custodian_summary(self, neighbours: str = "replace") -> str:
        """What to tell the custodian beside a release: row numbers only when rows were
        dropped or clamped, marked as true counts (n itself is not printed by default).

        Under add/remove neighbours the number of rows is private, and so are the numbers
        of rows dropped or clamped: only which attributes dropped or clamped rows is said.

        Parameters
        ----------
        neighbours : {"replace", "add-remove"}, default "replace"
            The release's neighbouring notion.

        Returns
        -------
        str
            One line.
        """
        if not self.rows_dropped and not any(self.clamped.values()):
            return "every row was counted"
        if neighbours == "add-remove":
            missing = [name for name, n in self.missing_dropped.items() if n]
            dropped = [name for name, n in self.dropped.items() if n]
            clamped = [name for name, n in self.clamped.items() if n]
            parts = (
                ([f"rows with a missing value dropped for {', '.join(map(repr, missing))}"] if missing else [])
                + ([f"rows dropped for {', '.join(map(repr, dropped))}"] if dropped else [])
                + ([f"values clamped in {', '.join(map(repr, clamped))}"] if clamped else [])
            )
            return (
                "; ".join(parts or ["rows were dropped"])
                + " (how many is not shown: under add/remove neighbours the number of rows is private)"
            )
        return self.summary() + " (true counts: for you only, do not publish them with the release)"

    def summary(self) -> str:
        """Rows counted of rows read, then the rows dropped and values clamped per attribute.

        Returns
        -------
        str
            One line of true counts (for the custodian only).
        """
        parts = [f"{self.rows_counted:,} of {self.rows_read:,} rows counted"]
        parts += [f"{n:,} dropped as missing in {name!r}" for name, n in self.missing_dropped.items() if n]
        parts += [f"{n:,} dropped for {name!r}" for name, n in self.dropped.items() if n]
        parts += [f"{n:,} clamped in {name!r}" for name, n in self.clamped.items() if n]
        return "; ".join(parts)


class FrequencyCounter:
    """Accumulates the frequency matrix of a table given in chunks.

    Memory is one float64 cell per matrix entry plus one chunk's codes, whatever
    the number of rows.

    ``invalid="error"`` (default) raises :class:`DomainError` on the first value
    outside an attribute's domain; ``invalid="drop"`` drops such rows and
    counts them in :attr:`report`. An attribute's own ``out_of_range="drop"``
    policy drops its out-of-range numbers in either mode.
    ``encode_only=True`` says that only :meth:`flat_codes` will be called (the counts are
    gathered elsewhere, e.g. on a cluster): the matrix need not fit in this machine's memory.
    A chunk of ``parallel_rows`` rows or more is indexed on ``workers`` threads (default: one per
    CPU core); the counts depend on neither.

    Parameters
    ----------
    schema : Schema
        The attributes; columns are matched by each attribute's ``source_column``.
    invalid : {"error", "drop"}, default "error", keyword-only
        See above.
    encode_only : bool, default False, keyword-only
        See above.
    workers : int, optional, keyword-only
        See above (a positive integer).
    parallel_rows : int, default 2**20, keyword-only
        From this many rows on, a chunk is indexed on threads (a speed choice; tests make it small).

    Raises
    ------
    SchemaError
        ``invalid`` is not ``"error"`` or ``"drop"``; the matrix would not fit in the memory
        available (unless ``encode_only``).
    PriveletError
        ``workers`` is not a positive integer.
    """

    def __init__(
        self,
        schema: Schema,
        *,
        invalid: InvalidPolicy = "error",
        encode_only: bool = False,
        workers: int | None = None,
        parallel_rows: int = _PARALLEL_ROWS,
    ):
        if invalid not in ("error", "drop"):
            raise SchemaError(f"invalid must be 'error' or 'drop', got {invalid!r}")
        needed, available = 8 * schema.size, available_memory()
        if not encode_only and available is not None and needed > available:
            raise SchemaError(
                f"the frequency matrix of this schema has {schema.size:,} cells ({byte_size(needed)}), more "
                f"than the {byte_size(available)} of memory available; exclude attributes or use coarser domains"
            )
        self.schema = schema
        self.invalid = invalid
        self.workers = usable_cores() if workers is None else thread_count(0, workers)
        self.parallel_rows = parallel_rows
        self.report = CountReport(
            dropped={a.name: 0 for a in schema}, clamped={a.name: 0 for a in schema},
            missing_dropped={a.name: 0 for a in schema},
        )
        self._counts: np.ndarray | None = None
        self._categories_memos: dict[str, dict[str, object]] = {a.name: {} for a in schema}

    def add(self, table: pd.DataFrame) -> None:
        """Count the rows of one chunk.

        Parameters
        ----------
        table : pandas.DataFrame
            One chunk of the table (any number of rows).

        Raises
        ------
        SchemaError
            ``table`` is not a pandas DataFrame, or lacks an attribute's source column.
        DomainError
            With ``invalid="error"``: a value outside an attribute's domain (not dropped by its own
            policy), or a missing cell the attribute does not drop; the error names the attribute,
            examples and how many.
        """
        _check_table(table)
        threads = self.workers if len(table) >= self.parallel_rows else 1
        with ThreadPoolExecutor(threads, thread_name_prefix="privelet-count") if threads > 1 else nullcontext() as executor:
            flat = self._flat_codes(table, None if executor is None else _Pool(executor, threads))
        if self._counts is None:
            self._counts = np.zeros(self.schema.size)
        if count_cells(flat, self._counts) != len(flat):  # float64 counts, exact below 2^53
            raise InternalError("a row's cell index fell outside the frequency matrix")

    def flat_codes(self, table: pd.DataFrame) -> np.ndarray:
        """Flat (C-order) cell index of every valid row of ``table``; updates the report.

        Parameters
        ----------
        table : pandas.DataFrame
            One chunk of the table.

        Returns
        -------
        numpy.ndarray
            Integer, one per row counted (dropped rows left out), each in ``0 .. schema.size - 1``.

        Raises
        ------
        SchemaError
            ``table`` is not a pandas DataFrame, or lacks an attribute's source column.
        DomainError
            With ``invalid="error"``: a value outside an attribute's domain (not dropped by its own
            policy), or a missing cell the attribute does not drop; the error names the attribute,
            examples and how many.
        """
        return self._flat_codes(table, None)

    def _flat_codes(self, table: pd.DataFrame, pool: _Pool | None) -> np.ndarray:
        _check_table(table)
        missing = [a.source_column for a in self.schema if a.source_column not in table.columns]
        if missing:
            raise SchemaError(
                f"the table has no column {', '.join(map(repr, missing))}; "
                f"its columns are {', '.join(map(repr, list(table.columns)[:20]))}. "
                "Rename the column or set the attribute's column"
            )
        n = len(table)
        keep: np.ndarray | None = None
        codes_per_axis: list[np.ndarray] = []
        for attribute in self.schema:
            column = table[attribute.source_column]
            encoded = attribute.encode(column, categories_memo=self._categories_memos[attribute.name])
            codes = encoded.codes
            self.report.clamped[attribute.name] += encoded.clamped
            if n and not encoded.all_valid and codes.min() < 0:
                rejected = codes < 0
                if keep is not None:
                    rejected &= keep
                missing_cells = encoded.missing_rows
                if missing_cells is not None:
                    missing_cells = missing_cells & rejected
                droppable = self._droppable(attribute, rejected, encoded.outside, missing_cells)
                errors = rejected & ~droppable
                if errors.any():
                    if missing_cells is not None and not (errors & ~missing_cells).any():
                        raise _missing_error(attribute, column, errors)
                    raise _domain_error(attribute, column, errors if missing_cells is None else errors & ~missing_cells)
                dropped_missing = 0 if missing_cells is None else int(missing_cells.sum())
                self.report.missing_dropped[attribute.name] += dropped_missing
                self.report.dropped[attribute.name] += int(rejected.sum()) - dropped_missing
                keep = ~rejected if keep is None else keep & ~rejected
            codes_per_axis.append(codes)
        flat = cell_indices(codes_per_axis, self.schema.shape, pool=pool)
        self.report.rows_read += n
        if keep is not None:
            flat = flat[keep]
        self.report.rows_counted += len(flat)
        return flat

    def _droppable(
        self, attribute: Attribute, rejected: np.ndarray, outside: np.ndarray | None, missing: np.ndarray | None
    ) -> np.ndarray:
        if self.invalid == "drop":
            return rejected
        droppable = np.zeros_like(rejected)
        if attribute.out_of_range == "drop" and outside is not None:
            droppable |= outside
        if attribute.drop_missing and missing is not None:
            droppable |= missing
        return droppable

    def matrix(self) -> np.ndarray:
        """The float64 frequency matrix, shape ``schema.shape`` (true counts: never publish
        it). Ends the counter; :attr:`report` says what happened to the rows.

        Returns
        -------
        numpy.ndarray
            float64 whole numbers, shape ``schema.shape`` (zeros when nothing was added).
        """
        counts = self._counts if self._counts is not None else np.zeros(self.schema.size)
        self._counts = None
        return counts.reshape(self.schema.shape)


def _check_table(table: object) -> None:
    import pandas as pd

    if not isinstance(table, pd.DataFrame):
        raise SchemaError(f"a table to count is a pandas DataFrame, got {type(table).__name__}")


# Rows per step of cell_indices: its few arrays stay in the CPU cache (2**18 measured
# faster than 2**16 and 2**14, as fast as 2**19).
_INDEX_ROWS = 1 << 18
# Matrices with fewer cells than this have every partial Horner sum of a valid row in int32.
_INT32_CELLS = 1 << 31


class _Pool(NamedTuple):
    """Threads that share one chunk's loops, a range of rows each."""

    executor: ThreadPoolExecutor
    threads: int


def _in_parts(task: Callable[[int, int], object], rows: int, pool: _Pool | None) -> None:
    """Run ``task(start, stop)`` over ``range(rows)``: with a ``pool``, one range per thread,
    waiting for them all (and raising what they raised); without, here and now."""
    if pool is None:
        task(0, rows)
        return
    parts: list[Future[object]] = [
        pool.executor.submit(task, rows * i // pool.threads, rows * (i + 1) // pool.threads) for i in range(pool.threads)
    ]
    for part in parts:
        part.result()


def cell_indices(codes: list[np.ndarray], shape: tuple[int, ...], *, pool: _Pool | None = None) -> np.ndarray:
    """Flat C-order cell index of every row, given each axis's codes (Horner's scheme).

    ``flat = (...(c0 * |A1| + c1) * |A2| + c2 ...)``, computed a block of rows at a time
    and written once in the platform's index type, which ``np.bincount`` uses without a
    copy. With a ``pool``, each of its threads computes one range of rows.

    Codes of -1 (rows to be dropped) give meaningless indices, never an error.
    """
    flat = np.empty(len(codes[0]), dtype=np.intp)
    # In int32 below 2**31 cells (codes arrive as int8/int16: narrower, faster arithmetic):
    # a valid row's partial sums are below the product of the axes so far, at most
    # 2**31 - 1. A row with a code of -1 may wrap around; it is dropped anyway.
    scratch = np.dtype(np.int32) if math.prod(shape) < _INT32_CELLS else flat.dtype
    _in_parts(lambda start, stop: _horner(codes, shape, flat, start, stop, scratch), len(flat), pool)
    return flat


def _horner(
    codes: list[np.ndarray], shape: tuple[int, ...], flat: np.ndarray, start: int, stop: int, scratch: np.dtype
) -> None:
    """Fill ``flat[start:stop]`` (see :func:`cell_indices`), computing in ``scratch`` integers."""
    # the output itself when no narrower type is used: intp is written once either way
    buffer = None if scratch == flat.dtype else np.empty(min(_INDEX_ROWS, stop - start), dtype=scratch)
    for first in range(start, stop, _INDEX_ROWS):
        last = min(first + _INDEX_ROWS, stop)
        part = flat[first:last] if buffer is None else buffer[: last - first]
        # unsafe casts: every valid code is below its axis size, which the scratch type holds
        np.copyto(part, codes[0][first:last], casting="unsafe")
        for column, size in zip(codes[1:], shape[1:], strict=True):
            np.multiply(part, size, out=part)
            np.add(part, column[first:last], out=part, casting="unsafe")
        if buffer is not None:
            flat[first:last] = part


def frequency_matrix(
    table: pd.DataFrame | Iterable[pd.DataFrame],
    schema: Schema,
    *,
    invalid: InvalidPolicy = "error",
    progress: ProgressCallback | None = None,
    should_cancel: CancelCallback | None = None,
    total_rows: int | None = None,
    workers: int | None = None,
    parallel_rows: int = _PARALLEL_ROWS,
) -> np.ndarray:
    """Count a table (a DataFrame or an iterable of DataFrame chunks) into M.

    Columns are matched to attributes by ``source_column``. Returns a float64
    array of shape ``schema.shape`` holding integer counts. The cell indices of a chunk of
    ``parallel_rows`` rows or more are computed on ``workers`` threads (default: one per usable CPU core).

    Parameters
    ----------
    table : pandas.DataFrame or iterable of pandas.DataFrame
        The table, whole or in chunks (each chunk with the same columns).
    schema : Schema
        The attributes.
    invalid : {"error", "drop"}, default "error", keyword-only
        Stop at the first value outside a domain (:class:`DomainError`), or drop such rows
        (with a :class:`DroppedRowsWarning`).
    progress : callable ``(fraction, stage)``, optional, keyword-only
        Called after each chunk.
    should_cancel : callable ``() -> bool``, optional, keyword-only
        Polled before each chunk.
    total_rows : int, optional, keyword-only
        The number of rows expected, for the progress fraction (None: 0 until done).
    workers : int, optional, keyword-only
        Threads for a chunk of ``parallel_rows`` rows or more (a positive integer); the counts do not depend on it.
    parallel_rows : int, default 2**20, keyword-only
        From this many rows on, a chunk's cell indices are computed on threads (a speed choice).

    Returns
    -------
    numpy.ndarray
        float64 whole numbers, shape ``schema.shape``: the true counts (never publish them).

    Raises
    ------
    SchemaError
        ``table`` is not a pandas DataFrame, or lacks an attribute's source column.
    DomainError
        With ``invalid="error"``: a value outside an attribute's domain (not dropped by its own
        policy), or a missing cell the attribute does not drop; the error names the attribute,
        examples and how many.
        Also SchemaError when ``invalid`` is neither, or the matrix would not fit in memory.
    Cancelled
        ``should_cancel()`` returned True.

    Warns
    -----
    DroppedRowsWarning
        Rows were dropped (by ``invalid="drop"`` or an attribute's own policy).

    Examples
    --------
    >>> import pandas as pd
    >>> from privelet_gui.engine import Hierarchy, NominalAttribute, OrdinalAttribute, Schema
    >>> schema = Schema([OrdinalAttribute.integer_range("age", 0, 2),
    ...                  NominalAttribute("sex", Hierarchy.flat(["F", "M"]))])
    >>> frequency_matrix(pd.DataFrame({"age": [0, 2, 2], "sex": ["F", "M", "M"]}), schema)
    array([[1., 0.],
           [0., 0.],
           [0., 2.]])
    """
    import pandas as pd

    counter = FrequencyCounter(schema, invalid=invalid, workers=workers, parallel_rows=parallel_rows)
    steps = Progress(progress, should_cancel)
    chunks: Iterable[pd.DataFrame] = [table] if isinstance(table, pd.DataFrame) else table
    for chunk in chunks:
        steps.check()
        counter.add(chunk)
        done = counter.report.rows_read
        steps.report(done / total_rows if total_rows else 0.0, "counting rows")
    matrix = counter.matrix()
    if counter.report.rows_dropped:
        warnings.warn(DroppedRowsWarning(counter.report.summary()), stacklevel=2)
    steps.report(1.0, "counting done")
    return matrix


def _missing_error(attribute: Attribute, column: pd.Series, rows: np.ndarray) -> DomainError:
    """Rows whose cell is missing (empty or a text meaning missing) and that no setting counts."""
    import pandas as pd

    count = int(rows.sum())
    examples = tuple(pd.unique(column[rows].astype(object))[:5])
    shown = ", ".join(_show_value(v) for v in examples)
    where = attribute.name if attribute.source_column == attribute.name else f"{attribute.name} (column {attribute.source_column!r})"
    own = "a leaf of its hierarchy" if attribute.kind == "nominal" else "a value of its own at the end of the domain"
    return DomainError(
        f"attribute {where}: {counted(count, 'row')} {'has' if count == 1 else 'have'} a missing value ({shown}). Choose what missing means for it: "
        f"count it as {own}, or drop those rows (the attribute's Missing setting; in a schema file, \"missing\" "
        "or \"drop_missing\": true)",
        attribute=attribute.name,
        examples=examples,
        count=count,
    )


def _domain_error(attribute: Attribute, column: pd.Series, rows: np.ndarray) -> DomainError:
    import pandas as pd

    count = int(rows.sum())
    bad = column[rows]
    examples = tuple(pd.unique(bad.astype(object))[:5])
    shown = ", ".join(_show_value(v) for v in examples)
    where = attribute.name if attribute.source_column == attribute.name else f"{attribute.name} (column {attribute.source_column!r})"
    hint = (
        "map empty cells with the attribute's 'missing' option, "
        if any(_is_empty(v) for v in examples)
        else ""
    )
    fix = "widen the domain, clean the data, " + hint
    if any(isinstance(v, str) and v.strip() and not _NUMBER_TEXT.fullmatch(v.strip()) for v in examples):
        fix += "name texts that mean a missing value (such as 'N') among the values meaning missing, "
    if attribute.kind == "ordinal" and attribute.is_numeric:
        fix += "set out_of_range to 'clamp' or 'drop', "
    elif attribute.kind == "nominal":
        fix += "add the values to the hierarchy, "
    fix += "or drop such rows explicitly"
    return DomainError(
        f"attribute {where}: {counted(count, 'row')} {'holds a value' if count == 1 else 'hold values'} outside its domain, e.g. {shown}. Fix: {fix}",
        attribute=attribute.name,
        examples=examples,
        count=count,
    )


_NUMBER_TEXT = re.compile(r"[+-]?[0-9]+(\.[0-9]*)?([eE][+-]?[0-9]+)?")


def _show_value(value: object) -> str:
    """A value as an error message shows it: numbers bare (a number read from a CSV file
    is text, 300 reads better than '300'), other text quoted, so that spaces show."""
    if _is_empty(value):
        return "(empty)"
    text = repr(value)
    if isinstance(value, str) and _NUMBER_TEXT.fullmatch(value):
        text = value
    return text if len(text) <= 60 else text[:57] + "..."


def _is_empty(value: object) -> bool:
    import pandas as pd

    return value is None or (isinstance(value, float) and np.isnan(value)) or value is pd.NA or (
        isinstance(value, str) and not value.strip()
    )
