"""Summaries of a table's columns: what each holds, read chunk by chunk (never the whole table).

The desktop app shows them while the custodian sets up the attributes, and schema
inference (:mod:`privelet_gui.io.inference`) proposes domains from them. A summary
describes the *true* data (distinct values, empty cells, the number of rows): it is
for the custodian's own screen, never for publication.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..engine.model.schema import cell_text
from ..engine.progress import Progress
from .tables import iter_table_chunks

__all__ = [
    "MAX_TRACKED_VALUES",
    "ColumnSummary",
    "TableSummary",
    "suggest_missing_values",
    "summarize_frame",
    "summarize_table",
]

#: Distinct values of a column are remembered up to this many (for domains and checks).
MAX_TRACKED_VALUES = 20_000

ProgressFunction = Callable[[float, str], None]
CancelFunction = Callable[[], bool]


@dataclass(frozen=True)
class ColumnSummary:
    """What a column holds: distinct values, missing cells, whether it is numeric.

    Missing cells are the empty ones and those holding one of :attr:`missing_values`; every
    other field describes the values left (a column of numbers and ``N`` is numeric when
    ``N`` means missing). :meth:`with_missing_values` gives the summary under another list
    of texts meaning missing, without reading the table again.
    """

    name: str
    distinct: int  # distinct non-missing values (a lower bound when ``values`` is None)
    values: tuple[str, ...] | None  # the distinct values in natural order; None when too many
    missing: int  # missing cells: empty ones and those holding a text of ``missing_values``
    numeric: bool  # every value (missing cells aside) is a number
    integer: bool  # every value is an integer
    minimum: float | None
    maximum: float | None
    empty: int = 0  # empty cells (always missing)
    missing_values: tuple[str, ...] = ()  # the texts meaning missing this summary counts as missing
    missing_counts: tuple[tuple[str, int], ...] = ()  # (text, cells) for each of them that occurs
    approximate: bool = False  # see with_missing_values
    counted: int | None = None  # cells holding a value (missing ones aside); None when too many values to tell
    most_common: int | None = None  # cells holding the most common value (missing ones aside); None: too many values
    _raw: _RawColumn | None = field(default=None, compare=False, repr=False)

    @property
    def kind_text(self) -> str:
        if self.integer and self.distinct:
            return "integer"
        if self.numeric and self.distinct:
            return "number"
        return "text"

    def examples(self, n: int = 5) -> str:
        if self.values is None:
            return f"more than {MAX_TRACKED_VALUES:,} values"
        shown = ", ".join(self.values[:n])
        return shown + (", ..." if len(self.values) > n else "")

    def missing_text(self) -> str:
        """How many cells are missing, and why: ``"2,703, all 'N'"``, ``"14, all empty"`` or
        ``"3,714: 'N' 3,700, empty 14"``."""
        total = f"{self.missing:,}" + (" or more" if self.approximate else "")
        parts = [f"{text!r} {count:,}" for text, count in self.missing_counts]
        if self.empty:
            parts.append(f"empty {self.empty:,}")
        if not self.missing or not parts:
            return total
        if len(parts) == 1:
            return f"{total}, all " + (repr(self.missing_counts[0][0]) if self.missing_counts else "empty")
        return f"{total}: {', '.join(parts)}"

    def non_numbers(self, most: int = 3) -> tuple[str, ...] | None:
        """The few texts (at most ``most``) that keep this column from being numeric, or None
        when there are none or more: in a column of numbers they usually mean missing."""
        if self._raw is None or self.numeric:
            return None
        texts = self._raw.texts_left(self.missing_values)
        return tuple(sorted(texts)) if texts is not None and 0 < len(texts) <= most and self._raw.has_numbers else None

    def with_missing_values(self, values: Sequence[str]) -> ColumnSummary:
        """This column's summary with ``values`` (texts) meaning missing instead.

        Exact for columns whose distinct values are all remembered (up to
        :data:`MAX_TRACKED_VALUES`); for wider ones it is exact for the texts meaning missing
        that the table was summarised with and for texts that are not numbers. A number-like
        text (``-1``) only now said to mean missing in such a column cannot be taken out of
        what was counted: :attr:`approximate` is then true (the missing count is a lower
        bound, the range may include it).
        """
        values = tuple(values)
        if values == self.missing_values or self._raw is None:
            return self
        return self._raw.summary(values)


@dataclass(frozen=True)
class TableSummary:
    """A table file and its per-column summary."""

    path: Path
    options: Any  # io.TableOptions
    rows: int
    columns: tuple[ColumnSummary, ...]
    seconds: float = 0.0

    def column(self, name: str) -> ColumnSummary | None:
        return next((c for c in self.columns if c.name == name), None)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.columns)


def _parse_numbers(texts: np.ndarray) -> np.ndarray:
    """Each text as a float64 (NaN for text that is not a finite number)."""
    return _numbers_of_stripped(pd.Series(texts, dtype=object).str.strip())


def _numbers_of_stripped(stripped: pd.Series) -> np.ndarray:
    """:func:`_parse_numbers` of texts already stripped of surrounding whitespace."""
    numbers = pd.to_numeric(stripped, errors="coerce").to_numpy(dtype=np.float64, na_value=np.nan)
    return np.where(np.isfinite(numbers), numbers, np.nan)  # "inf" is no number a domain holds


@dataclass
class _RawColumn:
    """What a column's cells hold before any text is taken to mean missing: the counts of its
    values while they are few enough, the counts of its texts that are not numbers, and the
    range of its numbers (the table's texts meaning missing left out)."""

    name: str
    markers: tuple[str, ...]  # the table's texts meaning missing when it was read
    empty: int = 0
    tally: dict[str, int] | None = None  # the count of every value (None: too many to remember)
    numbers: dict[str, float] = field(default_factory=dict)  # the values of the tally that are numbers
    texts: dict[str, int] | None = None  # values that are not numbers, once the tally is gone (None: too many)
    marked: dict[str, int] = field(default_factory=dict)  # cells holding each of ``markers``
    distinct_floor: int = 0
    minimum: float | None = None  # over the numbers that are not among ``markers``
    maximum: float | None = None
    integer: bool = True
    has_numbers: bool = False

    def add(self, column: pd.Series) -> None:
        """Count a chunk's cells, typed (a Parquet file's, a frame's) or text: each distinct
        value is turned into its text (:func:`cell_text`) once, not every cell."""
        counts = column.value_counts(sort=False)
        counts = counts[counts.to_numpy() > 0]  # a categorical's unused categories
        tally = pd.Series(counts.to_numpy(dtype=np.int64), index=pd.Index(cell_text(pd.Series(counts.index)), dtype=object))
        if tally.index.has_duplicates:  # values of several types with one text (20 and "20")
            tally = tally.groupby(level=0, sort=False).sum()
        stripped = pd.Series(tally.index.to_numpy(dtype=object), dtype=object).str.strip()  # once: blank? number?
        blank = (stripped == "").to_numpy(dtype=bool)
        self.empty += int(len(column) - counts.sum() + tally.to_numpy()[blank].sum())
        tally = tally[~blank]
        uniques = tally.index.to_numpy(dtype=object)
        numbers = _numbers_of_stripped(stripped[~blank])
        plain = np.isnan(numbers)
        marker = np.isin(uniques, np.asarray(self.markers, dtype=object)) if self.markers else np.zeros(len(uniques), bool)
        for value, n in zip(uniques[marker], tally.to_numpy()[marker], strict=True):
            self.marked[value] = self.marked.get(value, 0) + int(n)
        counted = ~plain & ~marker
        if counted.any():
            found = numbers[counted]
            self.integer = self.integer and bool(np.array_equal(found, np.floor(found)))
            lo, hi = float(found.min()), float(found.max())
            self.minimum = lo if self.minimum is None else min(self.minimum, lo)
            self.maximum = hi if self.maximum is None else max(self.maximum, hi)
        self.has_numbers = self.has_numbers or not plain.all()
        if self.distinct_floor == 0 and self.texts is None:  # still remembering every value
            if self.tally is None:
                self.tally = dict(zip(uniques.tolist(), tally.to_numpy().tolist(), strict=True))
            else:  # a dict merge: aligning two Series' indexes cost more than the counting
                kept_tally = self.tally
                for value, n in zip(uniques.tolist(), tally.to_numpy().tolist(), strict=True):
                    kept_tally[value] = kept_tally.get(value, 0) + n
            self.numbers.update(zip(uniques[~plain].tolist(), numbers[~plain].tolist(), strict=True))
            if len(self.tally) <= MAX_TRACKED_VALUES:
                return
            # Too many values: keep only the texts that are not numbers (few, in a column of numbers).
            numbers_seen = self.numbers
            self.texts = {value: n for value, n in self.tally.items() if value not in numbers_seen}
            self.distinct_floor, self.tally, self.numbers = len(self.tally), None, {}
        else:
            self.distinct_floor = max(self.distinct_floor, len(uniques))
            if self.texts is not None:
                for value, n in zip(uniques[plain], tally.to_numpy()[plain], strict=True):
                    self.texts[value] = self.texts.get(value, 0) + int(n)
        if self.texts is not None and len(self.texts) > MAX_TRACKED_VALUES:
            self.texts = None

    def texts_left(self, markers: Sequence[str]) -> set[str] | None:
        """The texts that are not numbers and do not mean missing (None: too many to know)."""
        if self.tally is not None or self.distinct_floor == 0:
            texts: set[str] = {v for v in self.tally if v not in self.numbers} if self.tally is not None else set()
        elif self.texts is None:
            return None
        else:
            texts = set(self.texts)
        return texts - set(markers)

    def summary(self, markers: tuple[str, ...]) -> ColumnSummary:
        """The column's summary when ``markers`` mean missing."""
        if self.distinct_floor == 0:  # every value remembered (or none at all)
            return self._exact(markers)
        return self._estimated(markers)

    def _exact(self, markers: tuple[str, ...]) -> ColumnSummary:
        counts = self.tally if self.tally is not None else {}
        known = self.numbers
        marked = set(markers)
        occurring = tuple((m, counts[m]) for m in markers if counts.get(m))
        left = [v for v in counts if v not in marked]
        numbers = [known[v] for v in left if v in known]
        numeric = bool(left) and len(numbers) == len(left)
        values = tuple(sorted(left, key=lambda v: (known[v], v))) if numeric else tuple(sorted(left))
        return ColumnSummary(
            name=self.name,
            distinct=len(left),
            values=values,
            missing=self.empty + sum(n for _, n in occurring),
            numeric=numeric,
            integer=numeric and all(float(x).is_integer() for x in numbers),
            minimum=min(numbers) if numeric else None,
            maximum=max(numbers) if numeric else None,
            empty=self.empty,
            missing_values=markers,
            missing_counts=occurring,
            counted=sum(counts[v] for v in left),
            most_common=max((counts[v] for v in left), default=0),
            _raw=self,
        )

    def _estimated(self, markers: tuple[str, ...]) -> ColumnSummary:
        """Too many distinct values to remember each: the numbers' range and the non-number texts."""
        known = {**(self.texts or {}), **self.marked}
        occurring = tuple((m, known[m]) for m in markers if known.get(m))
        unknown = [m for m in markers if m not in known and m not in self.markers and _is_number(m)]
        texts = self.texts_left(markers)
        numeric = texts is not None and not texts and self.has_numbers
        lo, hi, integer = self.minimum, self.maximum, self.integer
        # the table's own number-like texts meaning missing that are values again
        for text in set(self.marked) - set(markers):
            number = float(_parse_numbers(np.array([text], dtype=object))[0])
            if not np.isnan(number):
                lo = number if lo is None else min(lo, number)
                hi = number if hi is None else max(hi, number)
                integer = integer and number.is_integer()
        return ColumnSummary(
            name=self.name,
            distinct=self.distinct_floor,
            values=None,
            missing=self.empty + sum(n for _, n in occurring),
            numeric=numeric and lo is not None,
            integer=numeric and lo is not None and integer,
            minimum=lo if numeric else None,
            maximum=hi if numeric else None,
            empty=self.empty,
            missing_values=markers,
            missing_counts=occurring,
            approximate=bool(unknown),
            _raw=self,
        )


def _is_number(text: str) -> bool:
    return not np.isnan(_parse_numbers(np.array([text], dtype=object))[0])


def summarize_table(
    path: str | os.PathLike[str],
    options: Any = None,
    progress: ProgressFunction | None = None,
    should_cancel: CancelFunction | None = None,
    *,
    columns: Sequence[str] | None = None,
) -> TableSummary:
    """Read a whole table chunk by chunk and summarise each column (never holds the table).

    The texts meaning missing of ``options`` (:class:`~privelet_gui.io.TableOptions`) count
    as missing cells; ``columns`` reads only those. ``progress(fraction, stage)`` gets the
    fraction of the file read; ``should_cancel()`` is checked between chunks
    (:class:`~privelet_gui.engine.Cancelled`).
    """
    started = time.perf_counter()
    steps = Progress(progress, should_cancel)
    steps.report(0.0, "opening the table")
    markers = tuple(getattr(options, "missing_values", ()) or ())
    raw: dict[str, _RawColumn] | None = None
    rows = 0

    def position(fraction: float, stage: str) -> None:
        steps.report(fraction, f"reading rows ({rows:,})")

    for chunk in iter_table_chunks(path, options, columns=columns, progress=position, typed=True):
        steps.check()
        if raw is None:
            raw = _columns(chunk, markers)
        _add(raw, chunk)
        rows += len(chunk)
    steps.report(1.0, f"read {rows:,} rows")
    summaries = tuple(column.summary(markers) for column in (raw or {}).values())
    return TableSummary(Path(path), options, rows, summaries, time.perf_counter() - started)


def summarize_frame(frame: pd.DataFrame, missing_values: Sequence[str] = ()) -> tuple[ColumnSummary, ...]:
    """The summary of every column of a table held in memory (``missing_values``: texts
    meaning missing, besides empty cells)."""
    markers = tuple(missing_values)
    columns = _columns(frame, markers)
    _add(columns, frame)
    return tuple(column.summary(markers) for column in columns.values())


def suggest_missing_values(columns: Sequence[ColumnSummary]) -> dict[str, tuple[str, ...]]:
    """Texts that probably mean missing: those that alone keep a column of numbers from being
    numeric (``N`` among ages), each with the columns where it does, the most widespread first."""
    where: dict[str, list[str]] = {}
    for column in columns:
        for text in column.non_numbers() or ():
            where.setdefault(text, []).append(column.name)
    return {text: tuple(names) for text, names in sorted(where.items(), key=lambda item: (-len(item[1]), item[0]))}


def _columns(frame: pd.DataFrame, markers: tuple[str, ...]) -> dict[str, _RawColumn]:
    return {str(name): _RawColumn(str(name), markers) for name in frame.columns}


def _add(columns: dict[str, _RawColumn], frame: pd.DataFrame) -> None:
    for name in frame.columns:
        columns[str(name)].add(frame[name])
