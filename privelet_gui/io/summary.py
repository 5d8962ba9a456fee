"""Summaries of a table's columns: what each holds, read chunk by chunk (never the whole table).

The desktop app shows them while the custodian sets up the attributes, and schema
inference (:mod:`privelet_gui.io.inference`) proposes domains from them. A summary
describes the *true* data (distinct values, empty cells, the number of rows): it is
for the custodian's own screen, never for publication.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pandas as pd

from ..engine.progress import Progress
from .tables import iter_table_chunks

__all__ = ["MAX_TRACKED_VALUES", "ColumnSummary", "TableSummary", "summarize_frame", "summarize_table"]

#: Distinct values of a column are remembered up to this many (for domains and checks).
MAX_TRACKED_VALUES = 20_000

ProgressFunction = Callable[[float, str], None]
CancelFunction = Callable[[], bool]


@dataclass(frozen=True)
class ColumnSummary:
    """What a column holds: distinct values, emptiness, whether it is numeric."""

    name: str
    distinct: int  # distinct non-empty values (a lower bound when ``values`` is None)
    values: tuple[str, ...] | None  # the distinct values in natural order; None when too many
    missing: int  # empty cells
    numeric: bool  # every non-empty value is a number
    integer: bool  # every non-empty value is an integer
    minimum: float | None
    maximum: float | None

    @property
    def type_guess(self) -> Literal["ordinal", "nominal"]:
        """Integers are ordinal (an ordered domain), numbers too (bins); text is nominal."""
        return "ordinal" if self.numeric and self.distinct > 0 else "nominal"

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


class _ColumnAccumulator:
    def __init__(self, name: str):
        self.name = name
        self.values: set[str] | None = set()
        self.distinct_floor = 0
        self.missing = 0
        self.numeric = True
        self.integer = True
        self.minimum: float | None = None
        self.maximum: float | None = None

    def add(self, column: pd.Series) -> None:
        empty = column.isna().to_numpy()
        text = column[~empty].astype(str)
        blank = (text.str.strip() == "").to_numpy()
        self.missing += int(empty.sum() + blank.sum())
        uniques = pd.unique(text[~blank].to_numpy(dtype=object))
        if self.values is not None:
            self.values.update(uniques)
            if len(self.values) > MAX_TRACKED_VALUES:
                self.distinct_floor = len(self.values)
                self.values = None
        else:
            self.distinct_floor = max(self.distinct_floor, len(uniques))
        if self.numeric and len(uniques):
            numbers = pd.to_numeric(pd.Series(uniques, dtype=object).str.strip(), errors="coerce").to_numpy(
                dtype=np.float64, na_value=np.nan
            )
            if np.isnan(numbers).any() or not np.isfinite(numbers).all():
                self.numeric = self.integer = False
                return
            self.integer = self.integer and bool(np.array_equal(numbers, np.floor(numbers)))
            lo, hi = float(numbers.min()), float(numbers.max())
            self.minimum = lo if self.minimum is None else min(self.minimum, lo)
            self.maximum = hi if self.maximum is None else max(self.maximum, hi)

    def result(self) -> ColumnSummary:
        values: tuple[str, ...] | None = None
        distinct = self.distinct_floor
        if self.values is not None:
            distinct = len(self.values)
            if self.numeric and self.values:
                values = tuple(sorted(self.values, key=lambda v: (float(v), v)))
            else:
                values = tuple(sorted(self.values))
        numeric = self.numeric and distinct > 0
        return ColumnSummary(
            name=self.name,
            distinct=distinct,
            values=values,
            missing=self.missing,
            numeric=numeric,
            integer=numeric and self.integer,
            minimum=self.minimum if numeric else None,
            maximum=self.maximum if numeric else None,
        )


def summarize_table(
    path: str | os.PathLike[str],
    options: Any = None,
    progress: ProgressFunction | None = None,
    should_cancel: CancelFunction | None = None,
) -> TableSummary:
    """Read a whole table chunk by chunk and summarise each column (never holds the table).

    ``progress(fraction, stage)`` gets the fraction of the file read; ``should_cancel()``
    is checked between chunks (:class:`~privelet_gui.engine.Cancelled`).
    """
    started = time.perf_counter()
    steps = Progress(progress, should_cancel)
    steps.report(0.0, "opening the table")
    accumulators: dict[str, _ColumnAccumulator] | None = None
    rows = 0

    def position(fraction: float, stage: str) -> None:
        steps.report(fraction, f"reading rows ({rows:,})")

    for chunk in iter_table_chunks(path, options, progress=position):
        steps.check()
        if accumulators is None:
            accumulators = _accumulators(chunk)
        _add(accumulators, chunk)
        rows += len(chunk)
    steps.report(1.0, f"read {rows:,} rows")
    columns = tuple(acc.result() for acc in (accumulators or {}).values())
    return TableSummary(Path(path), options, rows, columns, time.perf_counter() - started)


def summarize_frame(frame: pd.DataFrame) -> tuple[ColumnSummary, ...]:
    """The summary of every column of a table held in memory."""
    accumulators = _accumulators(frame)
    _add(accumulators, frame)
    return tuple(acc.result() for acc in accumulators.values())


def _accumulators(frame: pd.DataFrame) -> dict[str, _ColumnAccumulator]:
    return {str(name): _ColumnAccumulator(str(name)) for name in frame.columns}


def _add(accumulators: dict[str, _ColumnAccumulator], frame: pd.DataFrame) -> None:
    for name in frame.columns:
        accumulators[str(name)].add(frame[name])
