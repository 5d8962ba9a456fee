"""The long format of a release (one row per cell) and its export files, shared by a release
file (:mod:`~privelet_gui.io.releases`) and a Zarr release folder
(:mod:`~privelet_gui.io.zarr_releases`), which export the same rows a slab at a time.

See :mod:`~privelet_gui.io.releases` for what an export holds and says about itself.
"""

from __future__ import annotations

import gzip
import io
import json
import math
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any, Literal

import numpy as np
import pandas as pd

from .. import __version__
from ..engine import InternalError, NominalAttribute, PriveletError, QueryBatch, Release, SchemaError
from ..engine.postprocess import post_processed_counts
from ..engine.progress import Progress
from .atomic import atomic_files, check_writable
from .metadata import post_processing

__all__ = [
    "COUNT_COLUMN",
    "EXPORT_FORMAT",
    "EXPORT_FORMAT_VERSION",
    "LABEL_SUFFIX",
    "METADATA_SUFFIX",
    "PARQUET_METADATA_KEY",
    "SEEDED_WARNING",
    "SLAB_CELLS",
    "STANDARD_ERROR_COLUMN",
    "ExportAxis",
    "ExportFormat",
    "cell_standard_error_problem",
    "cell_standard_errors",
    "chunk_grid",
    "count_column",
    "export_axes",
    "export_format",
    "export_metadata",
    "export_metadata_path",
    "regular_chunks",
    "release_frame",
    "seeded_marks",
    "spreadsheet_safe",
    "write_export_file",
    "write_long_format",
]

ExportFormat = Literal["csv", "parquet"]


COUNT_COLUMN = "noisy_count"


def count_column(counts: str = "noisy") -> str:
    """The export's count column: ``noisy_count``, or e.g. ``noisy_count_nonnegative`` so
    that post-processed counts are never mistaken for the release's own."""
    post_processed_counts(np.zeros(1), counts)  # refuses an unknown kind
    return COUNT_COLUMN if counts == "noisy" else f"{COUNT_COLUMN}_{counts.replace('-', '_')}"


#: The column beside an attribute's codes that holds their display labels (when it has some).
LABEL_SUFFIX = "_label"


# A spreadsheet opening a CSV file runs a cell starting with one of these as a formula
# (=HYPERLINK(...), +cmd|...), unless the cell is a plain number.
_FORMULA_START = re.compile(r"[=+\-@\t\r]")
_PLAIN_NUMBER = re.compile(r"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?")


def spreadsheet_safe(text: str) -> str:
    """``text`` as a CSV export writes it: with an apostrophe before it when a spreadsheet
    would take it for a formula (it starts with ``=``, ``+``, ``-``, ``@``, a tab or a carriage
    return and is not a plain number such as ``-5``), else as it is.

    >>> spreadsheet_safe("=SUM(A1:A9)"), spreadsheet_safe("-5"), spreadsheet_safe("[0, 10)")
    ("'=SUM(A1:A9)", '-5', '[0, 10)')
    """
    if _FORMULA_START.match(text) and not _PLAIN_NUMBER.fullmatch(text):
        return "'" + text
    return text


def _spreadsheet_safe_index(texts: pd.Index) -> pd.Index:
    """:func:`spreadsheet_safe` of every text of an index, at pandas' speed (ranges are long)."""
    column = pd.Series(texts, dtype=object).astype(str)
    risky = column.str.match(_FORMULA_START.pattern) & ~column.str.fullmatch(_PLAIN_NUMBER.pattern)
    if not risky.any():
        return texts
    return pd.Index(column.mask(risky, "'" + column), dtype=object)


@dataclass(frozen=True)
class ExportAxis:
    """One attribute's columns in the long format: its codes, and (when it has display
    labels) a ``<name>_label`` column beside them; each column categorical, every text once."""

    name: str
    codes: pd.Index  # the values in axis order (the categories of the code column)
    label_name: str | None = None  # the label column, or None
    labels: pd.Index | None = None  # the distinct display labels (two codes may share one)
    label_of: np.ndarray | None = None  # axis position -> index into ``labels``

    def spreadsheet_safe(self) -> ExportAxis:
        """This axis with its column names and texts as :func:`spreadsheet_safe` writes them
        (for CSV; two texts never become one, since only texts that are not numbers change)."""
        return replace(
            self,
            name=spreadsheet_safe(self.name),
            codes=_spreadsheet_safe_index(self.codes),
            label_name=None if self.label_name is None else spreadsheet_safe(self.label_name),
            labels=None if self.labels is None else _spreadsheet_safe_index(self.labels),
        )

    def columns(self, positions: np.ndarray) -> dict[str, pd.Categorical]:
        """The columns of cells at axis ``positions`` (integers)."""
        out = {self.name: pd.Categorical.from_codes(positions, categories=self.codes)}
        if self.label_name is not None:
            if self.labels is None or self.label_of is None:
                raise InternalError(f"the axis {self.name!r} has a label column but no labels")
            out[self.label_name] = pd.Categorical.from_codes(self.label_of[positions], categories=self.labels)
        return out


def export_axes(release: Release, shape: tuple[int, ...]) -> list[ExportAxis]:
    """The export's attribute columns (see :class:`ExportAxis`), names checked to be unique."""
    schema = release.schema
    axes: list[ExportAxis] = []
    if schema is None:
        axes = [ExportAxis(f"axis_{i}", pd.Index([str(j) for j in range(n)], dtype=object)) for i, n in enumerate(shape)]
    for attribute in schema or ():
        codes = pd.Index(list(attribute.labels), dtype=object)
        display = attribute.display_labels
        if display is None:
            axes.append(ExportAxis(attribute.name, codes))
            continue
        labels, label_of = np.unique(np.asarray(display, dtype=object), return_inverse=True)
        axes.append(ExportAxis(attribute.name, codes, attribute.name + LABEL_SUFFIX, pd.Index(labels, dtype=object),
                               label_of.astype(np.min_scalar_type(max(len(labels) - 1, 0)))))
    taken: dict[str, str] = {}
    for axis in axes:
        for column, what in ((axis.name, "an attribute's column"), (axis.label_name, f"the label column of {axis.name!r}")):
            if column is None:
                continue
            if column in taken or column.startswith(COUNT_COLUMN):
                other = taken.get(column, "the count column")
                raise SchemaError(f"{what} would be called {column!r} in the export, like {other}: rename it")
            taken[column] = "an attribute" if column == axis.name else what
    return axes


def release_frame(release: Release, *, counts: str = "noisy") -> pd.DataFrame:
    """The long format: one row per cell, a code column per attribute (and a ``<name>_label``
    column beside it when the attribute has display labels), then the counts.

    Rows follow the matrix in C order (the last attribute varies fastest). Code and label
    columns are categorical (each text stored once). ``counts`` (one of
    :data:`~privelet_gui.engine.postprocess.COUNT_KINDS`) projects the counts onto
    non-negative ones with the same total and/or rounds them to whole counts; the
    column is then named after it (:func:`count_column`). Exports write the same rows a
    slab at a time (:func:`write_long_format`).
    """
    noisy = post_processed_counts(release.noisy, counts)
    shape = noisy.shape
    return _cells_frame(noisy, tuple(slice(0, n) for n in shape), shape, export_axes(release, shape), counts)


def _cells_frame(
    noisy: Any, index: tuple[slice, ...], shape: tuple[int, ...], axes: list[ExportAxis], counts: str,
    errors_of: Release | None = None,
) -> pd.DataFrame:
    """The long-format rows of the box ``index`` of ``noisy`` (counts of kind ``counts``
    already), with categorical code (and label) columns over all the values, and with
    ``errors_of`` that release's noise standard deviation of each cell (:func:`cell_standard_errors`)."""
    values = np.asarray(noisy[index], dtype=np.float64)
    extents = values.shape
    columns: dict[str, Any] = {}
    for axis, export in enumerate(axes):
        start = range(shape[axis])[index[axis]].start
        inner = math.prod(extents[axis + 1 :])
        outer = math.prod(extents[:axis])
        dtype = np.min_scalar_type(max(shape[axis] - 1, 0))
        columns.update(export.columns(np.tile(np.repeat(np.arange(start, start + extents[axis], dtype=dtype), inner), outer)))
    flat = values.reshape(-1)
    columns[count_column(counts)] = flat.astype(np.int64) if counts.endswith("integer") else flat
    if errors_of is not None:
        columns[STANDARD_ERROR_COLUMN] = cell_standard_errors(errors_of, index)
    return pd.DataFrame(columns, copy=False)


#: The column of each cell's exact noise standard deviation (``standard_error=True``).
STANDARD_ERROR_COLUMN = f"{COUNT_COLUMN}_standard_error"
# Single-cell queries whose variances are computed at once (three int64 arrays of this many rows per axis).
_ERROR_BATCH = 1 << 16


#: Why a release of weighted marginals has no standard error for its cells (its exports refuse one).
BIASED_CELLS = ("a release of weighted marginals answers single cells with a bias that depends on the data (no "
                "marginal it measured holds every attribute), so they have no standard error: export it without "
                "the standard error, or query the marginals it measured")


def cell_standard_error_problem(release: Release) -> str | None:
    """Why the cells of ``release`` have no standard error (None: each has one,
    :func:`cell_standard_errors`): it has no schema, or it answers them with a bias that
    depends on the data (weighted marginals none of which holds every attribute of more than
    one value), whose variance is ``inf``. Every single cell has the same support (each such
    attribute), so its first cell answers for all of them: an export refuses the standard
    error before writing anything, rather than write ``inf`` or leave cells without one."""
    if release.schema is None:
        return ("this release has no schema, so the noise of its cells cannot be worked out: "
                "export it without the standard error")
    first = cell_standard_errors(release, tuple(slice(0, 1) for _ in release.schema.shape), check=False)
    if not np.isfinite(first).all():
        return BIASED_CELLS if release.mechanism == "marginals" else (
            "this release answers its single cells with a bias that depends on the data, so they have no "
            "standard error: export it without the standard error")
    return None


def cell_standard_errors(release: Release, box: tuple[slice, ...] | None = None, *, check: bool = True) -> np.ndarray:
    """The exact standard deviation of the noise in each cell of ``box`` (default: the whole
    matrix), flat in C order: the square root of :meth:`~privelet_gui.engine.Release.variances`
    of the single-cell queries (of the release as it is, shifted to the public total or not).

    It depends on the schema, epsilon, S_A, the mechanism and the neighbours only: never on
    the data, and never on the noisy counts themselves. A cell answered with a bias (its
    variance ``inf``, :func:`cell_standard_error_problem`) is refused with a PriveletError
    unless ``check`` is False: a standard error is never ``inf``.
    """
    schema = release.schema
    if schema is None:
        raise PriveletError("this release has no schema, so the noise of its cells cannot be worked out: "
                            "export it without the standard error")
    box = box or tuple(slice(0, n) for n in schema.shape)
    positions, nodes = [], []
    for attribute, part in zip(schema, box, strict=True):
        axis = np.arange(*part.indices(attribute.size), dtype=np.int64)
        positions.append(axis)
        # a nominal cell is the query of its leaf's node; an ordinal one has none (-1)
        leaves = attribute.hierarchy.layout.leaf_nodes if isinstance(attribute, NominalAttribute) else None
        nodes.append(np.full(len(axis), -1, dtype=np.int64) if leaves is None else leaves[axis].astype(np.int64))
    extents = tuple(len(axis) for axis in positions)
    total = math.prod(extents)
    out = np.empty(total)
    for begin in range(0, total, _ERROR_BATCH):
        cells = np.unravel_index(np.arange(begin, min(begin + _ERROR_BATCH, total)), extents)
        lo = np.stack([axis[cell] for axis, cell in zip(positions, cells, strict=True)], axis=1)
        node = np.stack([axis[cell] for axis, cell in zip(nodes, cells, strict=True)], axis=1)
        out[begin : begin + len(lo)] = release.variances(QueryBatch(lo, lo, node))
    if check and not np.isfinite(out).all():
        raise PriveletError(cell_standard_error_problem(release) or BIASED_CELLS)
    return np.sqrt(out)


#: Cells per slab of an export (8 MiB of counts): its rows are made, written and dropped, and
#: progress is reported and a cancel checked after each.
SLAB_CELLS = 1 << 20


def regular_chunks(shape: tuple[int, ...], cells: int = SLAB_CELLS) -> tuple[int, ...]:
    """A chunk shape of at most about ``cells`` cells, cut along the leading axes only, so
    that each chunk is one contiguous run of the C-ordered matrix.

    >>> regular_chunks((100, 2, 512, 1001), 1 << 20)
    (1, 2, 512, 1001)
    >>> regular_chunks((10, 30), 100)
    (3, 30)
    """
    if math.prod(shape) <= cells:
        return tuple(shape)
    for axis in range(len(shape)):
        inner = math.prod(shape[axis + 1 :])
        if inner <= cells:
            return (1,) * axis + (min(shape[axis], max(1, cells // inner)),) + tuple(shape[axis + 1 :])
    return tuple(shape)  # not reached: the last axis has inner size 1


def chunk_grid(shape: tuple[int, ...], chunks: tuple[int, ...]) -> Iterator[tuple[slice, ...]]:
    """The chunks of ``shape`` (regular ``chunks``, smaller at the ends) in C order."""
    counts = [max(1, -(-n // c)) for n, c in zip(shape, chunks, strict=True)]
    for position in np.ndindex(*counts):
        yield tuple(slice(i * c, min((i + 1) * c, n)) for i, c, n in zip(position, chunks, shape, strict=True))


def write_long_format(
    release: Release,
    noisy: Any,
    handle: IO[bytes],
    fmt: ExportFormat,
    *,
    gz: bool = False,
    counts: str = "noisy",
    steps: Progress | None = None,
    standard_error: bool = False,
    slab_cells: int = SLAB_CELLS,
) -> int:
    """The long format (:func:`release_frame`) of ``noisy`` (the release's counts of kind
    ``counts``: a numpy array, or a Zarr array read a slab at a time) into the binary
    ``handle``, as CSV (gzip-compressed if ``gz``) or Parquet; returns the rows.

    One slab of about ``slab_cells`` cells (a million) at a time: memory stays that of one slab
    whatever the size of the release. ``steps`` hears how many rows are written after each slab, and
    a cancel there stops the export (an atomic file is then removed). A seeded release is
    marked in the file (see :mod:`~privelet_gui.io.releases`); a Parquet file holds its
    :func:`export_metadata`, and with ``standard_error`` every row its cell's noise standard
    deviation (:data:`STANDARD_ERROR_COLUMN`). CSV text is :func:`spreadsheet_safe`.
    """
    steps = steps or Progress()
    shape = tuple(int(n) for n in noisy.shape)
    axes = export_axes(release, shape)
    errors_of = release if standard_error else None
    total, rows = math.prod(shape), 0
    slabs = chunk_grid(shape, regular_chunks(shape, slab_cells))

    def written(count: int) -> None:
        nonlocal rows
        rows += count
        steps.report(rows / total, f"writing rows: {rows:,} of {total:,}")

    if fmt == "csv":
        binary: Any = gzip.GzipFile(fileobj=handle, mode="wb") if gz else handle
        text = io.TextIOWrapper(binary, encoding="utf-8", newline="")
        try:
            if release.seeded:
                text.write(f"# {SEEDED_WARNING}\n")
            safe = [axis.spreadsheet_safe() for axis in axes]
            for index in slabs:
                frame = _cells_frame(noisy, index, shape, safe, counts, errors_of)
                frame.to_csv(text, index=False, header=rows == 0, lineterminator="\n")
                written(len(frame))
            text.flush()
        finally:
            text.detach()  # the caller's file stays open: atomic_write syncs and renames it
            if gz:
                binary.close()  # writes the gzip trailer (the file itself stays open)
        return rows
    import pyarrow as pa
    import pyarrow.parquet as pq

    marks = {
        **seeded_marks(release.seeded),
        PARQUET_METADATA_KEY: json.dumps(
            export_metadata(release, counts=counts, standard_error=standard_error), allow_nan=False
        ).encode(),
    }
    writer: Any = None
    try:
        for index in slabs:
            frame = _cells_frame(noisy, index, shape, axes, counts, errors_of)
            table = pa.Table.from_pandas(frame, preserve_index=False)
            table = table.replace_schema_metadata({**(table.schema.metadata or {}), **marks})
            if writer is None:
                writer = pq.ParquetWriter(handle, table.schema)
            writer.write_table(table)
            written(table.num_rows)
    finally:
        if writer is not None:
            writer.close()
    return rows


def export_format(path: Path, given: str | None) -> tuple[ExportFormat, bool]:
    name = path.name.lower()
    gz = name.endswith(".gz")
    if given is not None:
        if given not in ("csv", "parquet"):
            raise PriveletError(f"export format must be 'csv' or 'parquet', got {given!r}")
        return given, gz and given == "csv"  # type: ignore[return-value]
    if name.endswith((".csv", ".csv.gz", ".txt")):
        return "csv", gz
    if name.endswith((".parquet", ".pq")):
        return "parquet", False
    raise PriveletError(f"cannot tell the export format from {path.name!r}; use a .csv or .parquet name, or give the format")


#: The JSON file beside a CSV export that describes it: ``cells.csv`` -> ``cells.csv.metadata.json``.
METADATA_SUFFIX = ".metadata.json"
#: The Parquet key-value metadata holding the same description.
PARQUET_METADATA_KEY = b"privelet.metadata"
EXPORT_FORMAT = "privelet-export"
EXPORT_FORMAT_VERSION = 1


def export_metadata_path(path: str | os.PathLike[str], format: ExportFormat | None = None) -> Path | None:
    """The JSON file that describes an export to ``path`` (CSV), or None (Parquet holds its
    description itself)."""
    p = Path(path)
    fmt, _ = export_format(p, format)
    return p.with_name(p.name + METADATA_SUFFIX) if fmt == "csv" else None


def export_metadata(release: Release, *, counts: str = "noisy", standard_error: bool = False) -> dict[str, Any]:
    """What an export says about itself (plain JSON): how its counts were made (mechanism,
    epsilon, neighbours, S_A, the noise scale, the shift to the public total), which column
    holds which counts, and the software. Never a count, nor the number of rows under
    add/remove neighbours (the shift is there only when the number of rows is public)."""
    described = {"noisy": "the release's own noisy counts: unbiased, may be negative or fractional"}
    meta: dict[str, Any] = {
        "format": EXPORT_FORMAT,
        "format_version": EXPORT_FORMAT_VERSION,
        "software": "privelet-gui",
        "software_version": __version__,
        "exported": datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z"),
        "mechanism": release.mechanism,
        "epsilon": float(release.epsilon),
        "neighbours": release.neighbours,
        "sa": list(release.sa),
        "strategies": list(release.strategies),
        "marginals": [[list(names), weight] for names, weight in release.marginals],
        "noise_scale": float(release.scale),
        "nominal_scale": float(release.nominal_scale),
        "rho": release.rho,
        "sampler": release.sampler,
        "post_processing": post_processing(release),
        "count_column": count_column(counts),
        "counts": counts,
        "counts_description": described.get(
            counts, f"{counts} counts post-processed from the noisy ones (biased for big sums)"
        ),
        "standard_error_column": STANDARD_ERROR_COLUMN if standard_error else None,
        "seeded": bool(release.seeded),
        "domain_from_data": [] if release.schema is None else list(release.schema.domain_from_data),
    }
    if standard_error:
        meta["standard_error_description"] = (
            "the exact standard deviation of the noise in each cell's noisy count, computed from epsilon, S_A, "
            "the mechanism and the schema alone (never from the data)"
        )
    if release.seeded:
        meta["warning"] = SEEDED_WARNING
    return meta


#: What every export of a seeded release says, in the file itself.
SEEDED_WARNING = (
    "SEEDED TEST RELEASE - NOT PRIVATE: its noise was made with a fixed seed, and anyone who knows "
    "or guesses the seed can remove it. For tests only: never publish this file."
)


def write_export_file(
    release: Release,
    noisy: Any,
    path: str | os.PathLike[str],
    *,
    format: ExportFormat | None = None,
    force: bool = False,
    counts: str = "noisy",
    steps: Progress | None = None,
    standard_error: bool = False,
    slab_cells: int = SLAB_CELLS,
) -> int:
    """:func:`write_long_format` of ``noisy`` (the release's counts of kind ``counts``, a numpy
    or Zarr array) into the file ``path``, ``slab_cells`` at a time, atomically, with a CSV
    file's description beside it (written with it: both or neither); returns the rows."""
    p = Path(path)
    fmt, gz = export_format(p, format)
    sidecar = export_metadata_path(p, fmt)
    targets = [p] if sidecar is None else [p, sidecar]
    for target in targets:
        check_writable(target, force=force)
    with atomic_files(targets, force=force) as handles:
        rows = write_long_format(release, noisy, handles[0], fmt, gz=gz, counts=counts, steps=steps,
                                 standard_error=standard_error, slab_cells=slab_cells)
        if sidecar is not None:
            meta = {**export_metadata(release, counts=counts, standard_error=standard_error), "file": p.name,
                    "rows": rows}
            handles[1].write((json.dumps(meta, indent=2, ensure_ascii=False, allow_nan=False) + "\n").encode())
    return rows


def seeded_marks(seeded: bool) -> dict[bytes, bytes]:
    """The Parquet key-value metadata that says whether a release is seeded (and, if so, why not to publish it)."""
    marks = {b"privelet.seeded": b"true" if seeded else b"false"}
    if seeded:
        marks[b"privelet.warning"] = SEEDED_WARNING.encode()
    return marks
