"""The long-running work of the desktop app, as plain functions with no Qt.

Each job is ``run(inputs..., progress, should_cancel)`` (Orange3 style) and returns
plain data. The GUI hands them to :class:`~privelet_gui.gui.tasks.TaskRunner`; tests
call them directly. They call the engine and io functions and re-implement nothing.
"""

from __future__ import annotations

import datetime as _dt
import json
import math
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pandas as pd

from .. import __version__
from .. import io as pio
from ..engine import (
    Z95,
    CountReport,
    ErrorPreview,
    Progress,
    Release,
    Schema,
    measure_release,
    paper_bound,
    privelet_plus,
    variance_model,
)

__all__ = [
    "MAX_CELLS",
    "MAX_TRACKED_VALUES",
    "PROJECT_SUFFIX",
    "ColumnSummary",
    "ReleaseJob",
    "ReleaseOutcome",
    "TableSummary",
    "classify_file",
    "export_release_file",
    "extra_metadata",
    "run_release",
    "summarize_table",
]

#: Distinct values of a column are remembered up to this many (for domains and checks).
MAX_TRACKED_VALUES = 20_000
#: The largest frequency matrix a release is started for (8 bytes a cell, a few copies).
MAX_CELLS = 1 << 27
PROJECT_SUFFIX = ".privelet"
#: The error of releases up to this many cells is measured on the true data (memory: 4 x M).
MEASURE_MAX_CELLS = 1 << 24

ProgressFunction = Callable[[float, str], None]
CancelFunction = Callable[[], bool]


# -- table summary ---------------------------------------------------------------------------


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

    for chunk in pio.iter_table_chunks(path, options, progress=position):
        steps.check()
        if accumulators is None:
            accumulators = {str(name): _ColumnAccumulator(str(name)) for name in chunk.columns}
        for name in chunk.columns:
            accumulators[str(name)].add(chunk[name])
        rows += len(chunk)
    steps.report(1.0, f"read {rows:,} rows")
    columns = tuple(acc.result() for acc in (accumulators or {}).values())
    return TableSummary(Path(path), options, rows, columns, time.perf_counter() - started)


# -- release ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class ReleaseJob:
    """Everything a release needs; frozen so the worker sees a consistent snapshot."""

    table_path: Path
    options: Any  # io.TableOptions
    schema: Schema
    epsilon: float
    sa: tuple[str, ...]
    neighbours: Literal["replace", "add-remove"] = "replace"
    mechanism: Literal["privelet+", "privelet", "basic"] = "privelet+"
    invalid: Literal["error", "drop"] = "error"
    measure_error: bool = True  # measure the release's error on the true data (custodian only)

    @property
    def measures_error(self) -> bool:
        """Measuring keeps three more matrices of M's size: only for matrices up to MEASURE_MAX_CELLS."""
        return self.measure_error and self.schema.size <= MEASURE_MAX_CELLS

    @property
    def effective_sa(self) -> tuple[str, ...]:
        """S_A as used: empty for Privelet, every attribute for Basic."""
        if self.mechanism == "privelet":
            return ()
        if self.mechanism == "basic":
            return self.schema.names
        return self.sa


@dataclass(frozen=True)
class ReleaseOutcome:
    """A finished release and what the custodian should see about it (no true counts)."""

    release: Release
    report: CountReport  # rows read / counted / dropped: shown to the custodian, never exported
    table_name: str
    paper_bound: float
    worst_case_variance: float
    seconds: float
    counting_seconds: float
    preview: ErrorPreview | None = None  # errors on the true data: shown here only, never exported
    finished_at: str = field(default_factory=lambda: _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"))

    @property
    def margin95(self) -> float:
        """+/- count that the worst query's noise stays within with 95% probability (normal approx.)."""
        return Z95 * math.sqrt(self.worst_case_variance)


def _counting_share(path: Path, cells: int) -> float:
    """The part of the progress bar for counting, from the file size and the matrix size."""
    try:
        size = path.stat().st_size
    except OSError:
        size = 0
    share = size / (size + 16.0 * cells) if size + cells else 0.5
    return min(max(share, 0.05), 0.9)


def run_release(job: ReleaseJob, progress: ProgressFunction | None = None, should_cancel: CancelFunction | None = None) -> ReleaseOutcome:
    """Count the table into M, then Privelet+ (transform, noise, inverse); M is dropped at once."""
    started = time.perf_counter()
    steps = Progress(progress, should_cancel)
    share = _counting_share(Path(job.table_path), job.schema.size)
    counting = steps.slice(0.0, share)
    counting.report(0.0, "counting rows")
    matrix, report = pio.count_table(
        job.table_path,
        job.schema,
        job.options,
        invalid=job.invalid,
        progress=lambda f, stage: counting.report(f, _stage("counting", stage)),
        should_cancel=should_cancel,
    )
    counted = time.perf_counter()
    # Measuring the error releases Basic for comparison and answers queries: about as long again.
    end = share + (1.0 - share) * (0.5 if job.measures_error else 1.0)
    releasing = steps.slice(share, end)
    sa = job.effective_sa
    try:
        release = privelet_plus(
            matrix,
            job.schema,
            job.epsilon,
            sa,
            neighbours=job.neighbours,
            progress=lambda f, stage: releasing.report(f, stage),
            should_cancel=should_cancel,
            # Privelet+ is labelled by the engine (S_A empty is Privelet, S_A = all is Basic).
            mechanism=None if job.mechanism == "privelet+" else job.mechanism,
        )
        measuring = steps.slice(end, 1.0)
        preview = (
            measure_release(matrix, release, progress=measuring.report, should_cancel=should_cancel)
            if job.measures_error
            else None
        )
    finally:
        del matrix  # the true counts never leave this function (only error statistics and marginals)
    model = variance_model(job.schema)
    outcome = ReleaseOutcome(
        release=release,
        report=report,
        table_name=Path(job.table_path).name,
        paper_bound=paper_bound(job.schema, job.epsilon, sa, neighbours=job.neighbours),
        worst_case_variance=model.worst_case(job.epsilon, sa, neighbours=job.neighbours),
        seconds=time.perf_counter() - started,
        counting_seconds=counted - started,
        preview=preview,
    )
    steps.report(1.0, "done")
    return outcome


def _stage(prefix: str, stage: str) -> str:
    return stage if stage.startswith(prefix) else f"{prefix}: {stage}"


# -- export -------------------------------------------------------------------------------------

ExportFormat = Literal["release", "csv", "parquet"]


def extra_metadata(outcome: ReleaseOutcome) -> dict[str, Any]:
    """Descriptive metadata stored with a release file (nothing computed from the data)."""
    return {
        "created_by": f"Privelet Studio {__version__}",
        "created": outcome.finished_at,
        "table": outcome.table_name,
    }


def export_format(path: str | os.PathLike[str]) -> ExportFormat:
    """The export format a file name asks for: .npz release file, .csv(.gz) or .parquet."""
    name = str(path).lower()
    if name.endswith((".parquet", ".pq")):
        return "parquet"
    if name.endswith((".csv", ".csv.gz", ".tsv")):
        return "csv"
    return "release"


def export_release_file(
    outcome: ReleaseOutcome,
    path: str | os.PathLike[str],
    fmt: ExportFormat | None = None,
    progress: ProgressFunction | None = None,
    should_cancel: CancelFunction | None = None,
    *,
    force: bool = False,
) -> Path:
    """Write a release: the release file (.npz, with metadata) or a long-format CSV / Parquet.

    The io writers are atomic (a temporary file renamed into place). Only noisy counts
    are written.
    """
    steps = Progress(progress, should_cancel)
    fmt = fmt or export_format(path)
    steps.report(0.0, f"writing {Path(path).name}")
    if fmt == "release":
        pio.save_release(outcome.release, path, force=force, metadata=extra_metadata(outcome))
    else:
        pio.export_release(outcome.release, path, format=fmt, force=force)
    steps.report(1.0, f"wrote {Path(path).name}")
    return Path(path)


# -- dropped files -----------------------------------------------------------------------------

FileKind = Literal["project", "table", "hierarchy", "release"]


def classify_file(path: str | os.PathLike[str]) -> FileKind:
    """What a file dropped on the window probably is: a project, a release, a table or a hierarchy.

    ``.privelet`` and JSON with the project marker are projects; other JSON files are
    hierarchies; a headerless delimited file whose rows all end with the same value (the
    root, ``*`` in ARX files) is a hierarchy; anything else is a table.
    """
    p = Path(path)
    name = p.name.lower()
    if name.endswith(PROJECT_SUFFIX):
        return "project"
    if name.endswith(".npz"):
        return "release"
    if name.endswith(".json"):
        try:
            with open(p, encoding="utf-8") as f:
                obj = json.load(f)
        except (OSError, ValueError):
            return "hierarchy"
        if isinstance(obj, dict) and obj.get("format") == "privelet-studio-project":
            return "project"
        return "hierarchy"
    if name.endswith((".parquet", ".pq", ".gz")):
        return "table"
    try:
        with open(p, encoding="utf-8", errors="replace") as f:
            lines = [line.rstrip("\r\n") for _, line in zip(range(200), f) if line.strip()]
    except OSError:
        return "table"
    if not lines:
        return "table"
    for delimiter in (";", ",", "\t", "|"):
        rows = [line.split(delimiter) for line in lines]
        if all(len(r) >= 2 for r in rows) and len({r[-1] for r in rows}) == 1 and (len(rows) > 1 or rows[0][-1] == "*"):
            return "hierarchy"
    return "table"


def natural_sorted(values: Sequence[str]) -> list[str]:
    """Numbers by value, then text."""

    def key(v: str) -> tuple[int, float, str]:
        try:
            return (0, float(v), v)
        except ValueError:
            return (1, 0.0, v)

    return sorted(values, key=key)
