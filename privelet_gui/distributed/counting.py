"""Counting a table of many files (or a Dask DataFrame) on a Dask cluster.

Counting is a map and a sum. Each partition (one file, or one partition of a Dask
DataFrame) is read and encoded on a worker with the engine's own encoding
(:meth:`~privelet_gui.engine.FrequencyCounter.flat_codes`: the schema's domains, the same
out-of-domain rules and report), and reduced there to its counts, cut along the chunks of
the release (:mod:`privelet_gui.distributed.layout`): each piece sparse (cell, count) pairs
when that is smaller, else dense. The pieces of each chunk are then summed in a tree on
the workers, only when the release needs that chunk: no full matrix is ever built for a
partition, on the scheduler, or anywhere else.

Out-of-domain values stop the count with the same :class:`~privelet_gui.engine.DomainError`
as :func:`~privelet_gui.io.count_table` (that of the first partition, in file order, that
holds one); with ``invalid="drop"`` the rows are dropped and the report (the sum of the
partitions' reports) says how many, as on one machine.
"""

from __future__ import annotations

import glob
import math
import os
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from ..engine.counting import CountReport, FrequencyCounter
from ..engine.errors import DomainError
from ..engine.model.schema import Schema
from ..engine.progress import CancelCallback, Progress, ProgressCallback
from ..io.errors import TableError
from .cluster import require_dask, wait_for
from .layout import Chunks

if TYPE_CHECKING:
    import dask.array as da
    import pandas as pd
    from distributed import Client, Future

    from ..io.tables import TableOptions

__all__ = ["TABLE_SUFFIXES", "DistributedCounts", "count_dataset", "dataset_files"]

#: File names a folder's tables may have (a glob may name any files).
TABLE_SUFFIXES = (".parquet", ".pq", ".csv", ".tsv", ".txt", ".csv.gz", ".tsv.gz")

InvalidPolicy = Literal["error", "drop"]

# A partition's counts stay dense while the matrix has at most this many cells (32 MiB);
# beyond, its codes are kept and sorted into (cell, count) pairs.
_DENSE_CELLS = 1 << 22
# Codes buffered before they are folded into the partition's (cell, count) pairs.
_BUFFER_CODES = 1 << 22
# Pieces of one chunk summed by one task of the tree.
_FAN_IN = 8

# A chunk's counts: dense (the chunk's shape, float64), or (cells, counts) with the cells'
# flat C-order indices within the chunk, or None when the partition has no row there.
Piece = np.ndarray | tuple[np.ndarray, np.ndarray] | None


@dataclass
class _Outcome:
    """What one partition's task returns: its report, its first out-of-domain error (as
    plain values: the exception class does not cross processes), its counts per chunk."""

    report: CountReport
    error: tuple[str, str, tuple[object, ...], int] | None = None
    pieces: dict[tuple[int, ...], Piece] = field(default_factory=dict)


@dataclass
class DistributedCounts:
    """The frequency matrix of a table counted on a cluster (true counts: never publish them).

    ``matrix`` is a lazy dask array chunked for the release: computing a chunk sums its
    partitions' pieces. ``report`` is the sum of the partitions' reports; ``rows`` the
    rows counted (the total of M, which the noise calibration needs). The partitions'
    counts stay on the workers while this object (or ``matrix``) is alive.
    """

    matrix: da.Array
    report: CountReport
    partitions: list[Future]

    @property
    def rows(self) -> int:
        return self.report.rows_counted


def dataset_files(dataset: str | os.PathLike[str] | Sequence[str | os.PathLike[str]]) -> list[Path]:
    """The files of a dataset: a file, a folder (its table files, sorted by name; hidden
    files and Spark's ``_SUCCESS`` and the like are skipped), a glob pattern, or a list."""
    if isinstance(dataset, (list, tuple)):
        files = [Path(item) for item in dataset]
        missing = [str(f) for f in files if not f.is_file()]
        if missing:
            raise TableError(f"no such file: {missing[0]}")
        if not files:
            raise TableError("the dataset lists no file")
        return files
    path = Path(os.fspath(dataset))  # type: ignore[arg-type]
    if path.is_dir():
        files = sorted(
            p for p in path.iterdir()
            if p.is_file() and not p.name.startswith((".", "_")) and p.name.lower().endswith(TABLE_SUFFIXES)
        )
        if not files:
            raise TableError(
                f"the folder {path} holds no table file (names ending in {', '.join(TABLE_SUFFIXES)})"
            )
        return files
    if path.is_file():
        return [path]
    if glob.has_magic(str(path)):
        files = sorted(Path(p) for p in glob.glob(str(path)) if Path(p).is_file())
        if not files:
            raise TableError(f"no file matches {path}")
        return files
    raise TableError(f"no such file or folder: {path}")


def count_dataset(
    client: Client,
    dataset: str | os.PathLike[str] | Sequence[str | os.PathLike[str]] | Any,
    schema: Schema,
    chunks: Chunks,
    *,
    options: TableOptions | None = None,
    invalid: InvalidPolicy = "error",
    progress: ProgressCallback | None = None,
    should_cancel: CancelCallback | None = None,
) -> DistributedCounts:
    """Count a dataset on the cluster of ``client``: files (see :func:`dataset_files`), read
    with ``options`` as :func:`~privelet_gui.io.count_table` reads one, or a Dask DataFrame.

    ``chunks`` is how the matrix will be chunked (dask's form; for a release,
    ``release_layout(spec).chunks``). Reading and encoding happen here, with progress
    per partition and cancel between them; summing the pieces waits for the release.
    """
    require_dask()
    if invalid not in ("error", "drop"):
        raise TableError(f"invalid must be 'error' or 'drop', got {invalid!r}")
    chunks = tuple(tuple(int(n) for n in sizes) for sizes in chunks)
    if tuple(sum(sizes) for sizes in chunks) != schema.shape:
        raise TableError(f"the chunks cover {tuple(sum(s) for s in chunks)}, the schema's matrix is {schema.shape}")
    steps = Progress(progress, should_cancel)
    steps.report(0.0, "counting partitions")
    if options is not None:  # the table's texts meaning missing, for attributes that name none of their own
        schema = schema.with_default_missing_values(options.missing_values)
    partitions = _submit_partitions(client, dataset, schema, chunks, options, invalid)
    summaries = wait_for(client, client.map(_summary, partitions, pure=False), steps, "counting partitions")
    report = CountReport(dropped={a.name: 0 for a in schema}, clamped={a.name: 0 for a in schema},
                         missing_dropped={a.name: 0 for a in schema})
    for part_report, error in summaries:
        if error is not None:
            message, attribute, examples, count = error
            raise DomainError(message, attribute=attribute, examples=examples, count=count)
        report.add(part_report)
    matrix = _matrix(partitions, chunks)
    steps.report(1.0, "counting done")
    return DistributedCounts(matrix, report, partitions)


def _submit_partitions(
    client: Client,
    dataset: Any,
    schema: Schema,
    chunks: Chunks,
    options: TableOptions | None,
    invalid: InvalidPolicy,
) -> list[Future]:
    import dask
    import dask.dataframe as dd

    if isinstance(dataset, dd.DataFrame):
        columns = list(dict.fromkeys(a.source_column for a in schema))
        missing = [c for c in columns if c not in dataset.columns]
        if missing:
            raise TableError(
                f"the table has no column {', '.join(map(repr, missing))}; its columns are "
                f"{', '.join(map(repr, list(dataset.columns)[:30]))}. Rename the column or set the attribute's column"
            )
        parts = [dask.delayed(_count_frame)(part, schema, invalid, chunks) for part in dataset[columns].to_delayed()]
        return list(client.compute(parts))
    files = dataset_files(dataset)
    return [client.submit(_count_file, str(f), schema, options, invalid, chunks, pure=False) for f in files]


def _summary(outcome: _Outcome) -> tuple[CountReport, tuple[str, str, tuple[object, ...], int] | None]:
    return outcome.report, outcome.error




# -- on the workers: one partition -----------------------------------------------------------------


def _count_file(path: str, schema: Schema, options: TableOptions | None, invalid: InvalidPolicy, chunks: Chunks) -> _Outcome:
    """Read, encode and count one file, as :func:`~privelet_gui.io.count_table` reads it."""
    from ..io.tables import _check_columns, _CountingReaders, _QuoteInRange, _resolve, _schema_columns, read_ahead

    source = _resolve(path, options)
    usecols = _check_columns(source, _schema_columns(schema))

    def chunks_of(one_pass: bool) -> Callable[[], Iterator[pd.DataFrame]]:
        return lambda: read_ahead(*_CountingReaders(source, usecols, None, one_pass=one_pass).producers)

    try:
        return _count_chunks(chunks_of(False), schema, invalid, chunks)
    except _QuoteInRange:  # a quote after the sample: read the file again in one pass, as count_table does
        return _count_chunks(chunks_of(True), schema, invalid, chunks)


def _count_frame(frame: pd.DataFrame, schema: Schema, invalid: InvalidPolicy, chunks: Chunks) -> _Outcome:
    """Encode and count one partition of a Dask DataFrame."""
    return _count_chunks(lambda: iter([frame]), schema, invalid, chunks)


def _count_chunks(
    make_chunks: Callable[[], Iterator[pd.DataFrame]], schema: Schema, invalid: InvalidPolicy, chunks: Chunks
) -> _Outcome:
    counter = FrequencyCounter(schema, invalid=invalid, encode_only=True)
    codes = _Codes(schema.size)
    frames = make_chunks()
    try:
        for frame in frames:
            try:
                codes.add(counter.flat_codes(frame))
            except DomainError as error:
                return _Outcome(counter.report, (str(error), error.attribute, tuple(error.examples), error.count))
            del frame
    finally:
        close = getattr(frames, "close", None)
        if close is not None:
            close()  # stops read_ahead's reader threads on an error
    return _Outcome(counter.report, None, codes.pieces(schema.shape, chunks))


class _Codes:
    """The counts of one partition, from its rows' flat cell indices: dense for a small
    matrix, else sorted (cell, count) pairs folded from buffered codes."""

    def __init__(self, cells: int):
        self.cells = cells
        self.dense = np.zeros(cells) if cells <= _DENSE_CELLS else None
        self.keys = np.zeros(0, dtype=np.int64)
        self.counts = np.zeros(0)
        self.buffer: list[np.ndarray] = []
        self.buffered = 0

    def add(self, flat: np.ndarray) -> None:
        if self.dense is not None:
            self.dense += np.bincount(flat, minlength=self.cells)
            return
        self.buffer.append(flat)
        self.buffered += len(flat)
        if self.buffered >= _BUFFER_CODES:
            self._fold()

    def _fold(self) -> None:
        if not self.buffer:
            return
        keys, counts = np.unique(np.concatenate(self.buffer), return_counts=True)
        self.buffer, self.buffered = [], 0
        self.keys, self.counts = _sum_pairs([self.keys, keys.astype(np.int64)], [self.counts, counts.astype(np.float64)])

    def pieces(self, shape: tuple[int, ...], chunks: Chunks) -> dict[tuple[int, ...], Piece]:
        """The counts cut along ``chunks``: per chunk position, the smaller of dense or pairs."""
        if self.dense is not None:
            dense = self.dense.reshape(shape)
            out: dict[tuple[int, ...], Piece] = {}
            for position in np.ndindex(*(len(s) for s in chunks)):
                part = dense[_region(chunks, position)]
                out[position] = _smaller(np.ascontiguousarray(part))
            return out
        self._fold()
        return _split_pairs(self.keys, self.counts, shape, chunks)


def _region(chunks: Chunks, position: tuple[int, ...]) -> tuple[slice, ...]:
    return tuple(slice(sum(sizes[:i]), sum(sizes[: i + 1])) for i, sizes in zip(position, chunks, strict=True))


def _pair_bytes(cells: int) -> int:
    """Bytes of one (cell, count) pair for a chunk of ``cells`` cells."""
    return (4 if cells <= 1 << 32 else 8) + 8


def _smaller(dense: np.ndarray) -> Piece:
    """A dense piece as it is, or as pairs when they take less memory (None when empty)."""
    nonzero = np.flatnonzero(dense)
    if not len(nonzero):
        return None
    if len(nonzero) * _pair_bytes(dense.size) < dense.nbytes:
        return _pairs(nonzero, dense.reshape(-1)[nonzero], dense.size)
    return dense


def _pairs(keys: np.ndarray, counts: np.ndarray, cells: int) -> tuple[np.ndarray, np.ndarray]:
    return keys.astype(np.uint32 if cells <= 1 << 32 else np.int64), counts.astype(np.float64)


def _sum_pairs(keys: list[np.ndarray], counts: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """(cell, count) pairs summed over several lists of pairs (sorted by cell)."""
    every = np.concatenate(keys)
    unique, inverse = np.unique(every, return_inverse=True)
    return unique, np.bincount(inverse.reshape(-1), weights=np.concatenate(counts), minlength=len(unique))


def _split_pairs(
    keys: np.ndarray, counts: np.ndarray, shape: tuple[int, ...], chunks: Chunks
) -> dict[tuple[int, ...], Piece]:
    """Pairs over the whole matrix cut into pairs per chunk (cells renumbered within it)."""
    coordinates = np.unravel_index(keys, shape)
    positions, local_flat = [], np.zeros(len(keys), dtype=np.int64)
    for axis, (coordinate, sizes) in enumerate(zip(coordinates, chunks, strict=True)):
        starts = np.cumsum([0, *sizes[:-1]])
        chunk = np.searchsorted(starts, coordinate, side="right") - 1
        positions.append(chunk)
        local_flat *= np.asarray(sizes)[chunk] if axis else 1
        local_flat += coordinate - starts[chunk]
    grid = tuple(len(s) for s in chunks)
    chunk_number = np.ravel_multi_index(positions, grid) if keys.size else np.zeros(0, dtype=np.int64)
    order = np.argsort(chunk_number, kind="stable")
    chunk_number, local_flat, counts = chunk_number[order], local_flat[order], counts[order]
    bounds = np.searchsorted(chunk_number, np.arange(math.prod(grid) + 1))
    out: dict[tuple[int, ...], Piece] = {}
    for number, position in enumerate(np.ndindex(*grid)):
        start, stop = bounds[number], bounds[number + 1]
        if start == stop:
            out[position] = None
            continue
        cells = math.prod(sizes[i] for sizes, i in zip(chunks, position, strict=True))
        keys_here, counts_here = local_flat[start:stop], counts[start:stop]
        if (stop - start) * _pair_bytes(cells) < cells * 8:
            out[position] = _pairs(keys_here, counts_here, cells)
        else:
            dense = np.zeros(cells)
            dense[keys_here] = counts_here
            out[position] = dense
    return out


# -- on the workers: one chunk of M -----------------------------------------------------------------


def _piece(outcome: _Outcome, position: tuple[int, ...]) -> Piece:
    return outcome.pieces.get(position)


def _merge(*pieces: Piece, cells: int) -> Piece:
    """The sum of pieces of one chunk: pairs while they stay smaller than dense."""
    present = [p for p in pieces if p is not None]
    if not present:
        return None
    pairs = [p for p in present if isinstance(p, tuple)]
    dense = [p for p in present if not isinstance(p, tuple)]
    if not dense and sum(len(k) for k, _ in pairs) * _pair_bytes(cells) < cells * 8:
        keys, counts = _sum_pairs([k.astype(np.int64) for k, _ in pairs], [c for _, c in pairs])
        return _pairs(keys, counts, cells)
    total = np.zeros(cells)
    for part in dense:
        total += part.reshape(-1)
    for keys, counts in pairs:
        total[keys] += counts  # cells are unique within a piece
    return total


def _dense(piece: Piece, shape: tuple[int, ...]) -> np.ndarray:
    """A chunk of M from its summed piece."""
    cells = math.prod(shape)
    if piece is None:
        return np.zeros(shape)
    if isinstance(piece, tuple):
        out = np.zeros(cells)
        out[piece[0]] = piece[1]
        return out.reshape(shape)
    return piece.reshape(shape)


def _matrix(partitions: list[Future], chunks: Chunks) -> da.Array:
    """M as a lazy dask array: per chunk, its partitions' pieces summed in a tree."""
    import dask
    import dask.array as da

    def build(position: tuple[int, ...]) -> da.Array:
        shape = tuple(sizes[i] for sizes, i in zip(chunks, position, strict=True))
        cells = math.prod(shape)
        level = [dask.delayed(_piece, pure=True)(part, position) for part in partitions]
        while len(level) > 1:
            level = [
                dask.delayed(_merge, pure=True)(*level[i : i + _FAN_IN], cells=cells)
                for i in range(0, len(level), _FAN_IN)
            ]
        return da.from_delayed(dask.delayed(_dense, pure=True)(level[0], shape), shape=shape, dtype=np.float64)

    grid = tuple(len(s) for s in chunks)
    blocks = np.empty(grid, dtype=object)
    for position in np.ndindex(*grid):
        blocks[position] = build(position)
    return da.block(blocks.tolist())
