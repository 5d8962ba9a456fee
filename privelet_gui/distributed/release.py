"""Releasing a chunked frequency matrix on a Dask cluster, into a Zarr release folder.

The rules are those of :meth:`~privelet_gui.engine.ReleaseSpec.run`, decided by the same
:class:`~privelet_gui.engine.ReleaseSpec`: the same calibration (``spec.calibration(rows)``),
the same exact-rounding limit, the same noise streams. Only the scheduling differs:

- S_A blocks that fit in one task (the usual Privelet+ case): each chunk, a group of whole
  blocks (:mod:`privelet_gui.distributed.layout`), is transformed, noised, inverted and
  written to the Zarr folder by one task, each block with the stream the one-machine
  pipeline gives it. The noisy matrix then equals ``spec.run(M, rng=...)`` cell for cell.
- Big blocks (S_A empty, or blocks of millions of cells): the one-machine pipeline's three
  passes (:class:`~privelet_gui.engine.pipeline.BlockRelease`), each task a chunk of whole
  slabs (passes 1 and 3) or of whole pencil tiles (pass 2, each tile with its own stream, as
  on one machine). Each pass is persisted on the cluster (it holds the whole matrix, spilled
  to the workers' disks when it does not fit in their memory), with progress and cancel.

Either way the result depends on the seed only, never on the number of workers.
"""

from __future__ import annotations

import dataclasses
import math
import os
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from ..engine.errors import PriveletError
from ..engine.hn import TransformPlan
from ..engine.noise import NoiseCalibration, Sampler, default_rng
from ..engine.pipeline import BlockRelease, pass_stages, slab_layout, spawn_streams, tile_indices
from ..engine.postprocess import sum_slabs
from ..engine.progress import CancelCallback, Progress, ProgressCallback
from ..engine.release import Release
from ..engine.spec import ReleaseSpec
from ..io.releases import release_metadata
from ..io.zarr_releases import (
    ZarrReleaseWriter,
    check_zarr_target,
    open_zarr_release,
    shift_zarr_chunk,
    write_zarr_chunk,
)
from .cluster import require_dask, wait_for
from .layout import TASK_CELLS, Chunks, ReleaseLayout, release_layout, slab_chunks

if TYPE_CHECKING:
    import dask.array as da
    from distributed import Client

__all__ = ["release_to_zarr"]

Index = tuple[slice, ...]
Shared = tuple[TransformPlan, NoiseCalibration, Sampler]  # BlockRelease's arguments


def release_to_zarr(
    client: Client,
    matrix: da.Array | np.ndarray,
    spec: ReleaseSpec,
    path: str | os.PathLike[str],
    *,
    rows: int | None = None,
    rng: np.random.Generator | None = None,
    progress: ProgressCallback | None = None,
    should_cancel: CancelCallback | None = None,
    force: bool = False,
    metadata: Mapping[str, Any] | None = None,
    seed: int | None = None,
    cells: int = TASK_CELLS,
) -> tuple[Release, dict[str, Any]]:
    """Release ``matrix`` (M, chunked or not) with ``spec`` on the cluster of ``client`` and
    write it as a Zarr release folder at ``path``; returns the release (opened lazily from
    the folder) and the metadata written.

    ``rows`` is the total of M when it is known (:attr:`DistributedCounts.rows`): otherwise
    it is computed on the cluster. ``rng``, ``seed`` and ``metadata`` are as for
    :meth:`~privelet_gui.engine.ReleaseSpec.run` and :func:`~privelet_gui.io.save_release`
    (a seeded release is for tests only). ``cells``: about how many cells one task works on.
    The folder appears only once complete; an error or a cancel leaves nothing behind.
    """
    require_dask()
    import dask.array as da

    started = time.perf_counter()
    chunked = matrix if isinstance(matrix, da.Array) else _scatter(client, matrix, release_layout(spec.plan, cells).chunks)
    if tuple(chunked.shape) != spec.schema.shape:
        raise PriveletError(
            f"the matrix has shape {tuple(chunked.shape)} but the schema needs {spec.schema.shape}; "
            "count the table with this schema or fix the schema"
        )
    target = check_zarr_target(path, force=force)
    steps = Progress(progress, should_cancel)
    steps.report(0.0, "starting the release")
    total = _total(client, chunked) if rows is None else int(rows)
    plan = spec.plan
    spec.check_rows(total)
    calibration = spec.calibration(total)
    layout = release_layout(plan, cells)
    streams = spawn_streams(default_rng(rng), len(layout.blocks.boxes))
    _check_worker_memory(client, layout)
    shared = (plan, calibration, spec.sampler)
    storage = tuple(sizes[0] for sizes in layout.chunks)
    with ZarrReleaseWriter(target, spec.schema.shape, storage, force=force) as writer:
        written_to = steps.slice(0.0, 0.9 if spec.uses_public_total else 0.98)
        if layout.tiled:
            _release_by_axes(client, chunked, layout, shared, streams, writer.array_path, written_to)
        else:
            _release_by_blocks(client, chunked, layout, shared, streams, writer.array_path, written_to)
        shift = None
        if spec.uses_public_total:  # as spec.run: the total becomes the public number of rows
            written = _written_sum(client, writer.array_path, spec.schema.shape, steps.slice(0.9, 0.94))
            shift = (total - written) / math.prod(spec.schema.shape)
            _shift_all(client, writer.array_path, spec.schema.shape, storage, shift, steps.slice(0.94, 0.98))
        import zarr

        noisy = cast(np.ndarray, zarr.open_array(writer.array_path, mode="r"))  # read for its shape only
        release = spec.release_of(noisy, calibration, seeded=rng is not None, total_shift=shift)
        meta = release_metadata(release, seed=seed, metadata=metadata)
        writer.commit(meta)
    steps.report(1.0, "release done")
    return dataclasses.replace(open_zarr_release(target), seconds=time.perf_counter() - started), meta


def _scatter(client: Client, matrix: np.ndarray, chunks: Chunks) -> da.Array:
    """A matrix held here as a dask array whose chunks were sent to the workers once each
    (a numpy array inside a graph would travel with every task that reads it)."""
    import dask
    import dask.array as da

    matrix = np.asarray(matrix, dtype=np.float64)
    if tuple(sum(sizes) for sizes in chunks) != matrix.shape:
        return da.from_array(matrix)  # the shape check that follows reports it
    grid = tuple(len(sizes) for sizes in chunks)
    positions = list(np.ndindex(*grid))
    regions = [
        tuple(slice(sum(sizes[:i]), sum(sizes[: i + 1])) for i, sizes in zip(position, chunks, strict=True))
        for position in positions
    ]
    futures = client.scatter([np.ascontiguousarray(matrix[region]) for region in regions])
    blocks = np.empty(grid, dtype=object)
    for position, region, future in zip(positions, regions, futures, strict=True):
        shape = tuple(part.stop - part.start for part in region)
        blocks[position] = da.from_delayed(dask.delayed(future), shape=shape, dtype=np.float64)
    return da.block(blocks.tolist())


def _check_worker_memory(client: Client, layout: ReleaseLayout) -> None:
    """Refuse, before any work, a release whose tasks would not fit in the workers' memory
    (a task may take half of a worker's limit; the other half is the worker's own and the
    data it holds)."""
    from ..engine._memory import byte_size

    limits = [int(w.get("memory_limit") or 0) for w in client.scheduler_info().get("workers", {}).values()]
    limits = [limit for limit in limits if limit > 0]
    if limits and layout.task_bytes > min(limits) // 2:
        raise PriveletError(
            f"each task of this release needs about {byte_size(layout.task_bytes)} (an S_A block and its wavelet "
            f"coefficients), more than half of the {byte_size(min(limits))} a Dask worker may use; give the workers "
            "more memory, or put more attributes in S_A (smaller blocks)"
        )


def _total(client: Client, matrix: da.Array) -> int:
    total = float(client.compute(matrix.sum()).result())
    if not math.isfinite(total):
        raise PriveletError("the matrix holds NaN or infinite values; a frequency matrix holds counts")
    return max(round(total), 0)


# -- blocks that fit in a task ---------------------------------------------------------------------


def _release_by_blocks(
    client: Client,
    matrix: da.Array,
    layout: ReleaseLayout,
    shared: Shared,
    streams: list[np.random.Generator],
    array_path: str,
    steps: Progress,
) -> None:
    import dask

    chunks = layout.chunks
    if matrix.chunks != chunks:
        matrix = matrix.rechunk(chunks)
    parts = matrix.to_delayed()
    tasks = [
        dask.delayed(_release_chunk, pure=False)(
            parts[position], shared, [(box.local, streams[box.number]) for box in boxes], array_path,
            layout.blocks.region(position),
        )
        for position, boxes in layout.blocks.by_chunk().items()
    ]
    wait_for(client, client.compute(tasks), steps, "releasing blocks: chunk")


def _written_sum(client: Client, array_path: str, shape: tuple[int, ...], steps: Progress) -> float:
    """The written release's sum, slab by slab on the workers, exactly as :func:`matrix_sum`
    takes it on one machine (so both shift by the same amount, to the last bit)."""
    import dask

    tasks = [dask.delayed(_slab_sum, pure=False)(array_path, index) for index in np.ndindex(*sum_slabs(shape))]
    return math.fsum(wait_for(client, client.compute(tasks), steps, "adding up the release: slab"))


def _slab_sum(array_path: str, index: tuple[int, ...]) -> float:
    """On a worker: numpy's sum of one slab of the written release (see :func:`matrix_sum`)."""
    import zarr

    return float(np.sum(np.asarray(zarr.open_array(array_path, mode="r")[index], dtype=np.float64)))


def _shift_all(
    client: Client, array_path: str, shape: tuple[int, ...], storage: tuple[int, ...], shift: float, steps: Progress
) -> None:
    """Add ``shift`` to every cell of the written release, a storage chunk per task."""
    import dask

    counts = [math.ceil(n / size) for n, size in zip(shape, storage, strict=True)]
    regions = [
        tuple(slice(i * size, min((i + 1) * size, n)) for i, size, n in zip(position, storage, shape, strict=True))
        for position in np.ndindex(*counts)
    ]
    tasks = [dask.delayed(shift_zarr_chunk, pure=False)(array_path, region, shift) for region in regions]
    wait_for(client, client.compute(tasks), steps, "shifting to the public total: chunk")


def _release_chunk(
    cells: np.ndarray, shared: Shared, jobs: list[tuple[Index, np.random.Generator]], array_path: str, region: Index
) -> int:
    """On a worker: release the whole blocks of one chunk and write the chunk."""
    runner = BlockRelease(*shared)
    noisy = np.empty(cells.shape)
    for local, rng in jobs:
        noisy[local] = runner.block(cells[local], rng)
    return write_zarr_chunk(array_path, region, noisy)


# -- big blocks: the pipeline's three passes ------------------------------------------------------------


def _release_by_axes(
    client: Client,
    matrix: da.Array,
    layout: ReleaseLayout,
    shared: Shared,
    streams: list[np.random.Generator],
    array_path: str,
    steps: Progress,
) -> None:
    """Big blocks in the one-machine pipeline's three passes (:class:`BlockRelease`), each pass
    persisted on the cluster: slabs transformed along the plane axes into the intermediate,
    pencil tiles (groups of whole tiles per task, each tile with its one-machine stream), the
    slabs inverted; then written."""
    import dask
    import dask.array as da

    plan, cells = layout.plan, layout.cells
    blocks = [box.region for _, box in layout.blocks.boxes]  # in stream order; all of one shape
    extent = tuple(part.stop - part.start for part in blocks[0])
    lead, width = slab_layout(plan, extent)
    by_slabs = slab_chunks(extent, lead, cells)
    tiles = tile_indices(plan, extent)
    groups = _tile_groups(tiles, math.prod(extent[:lead]), cells)
    tile_streams = [spawn_streams(stream, len(tiles)) for stream in streams]
    names = pass_stages(plan, extent)
    stages = 3
    done = 0

    def run(arrays: list[da.Array], stage: str) -> list[da.Array]:
        """Persist one pass of every block on the cluster, with progress and cancel."""
        nonlocal done
        from distributed import futures_of

        persisted = client.persist(arrays)
        wait_for(client, futures_of(persisted), steps.slice(done / stages, (done + 1) / stages), stage)
        done += 1
        return list(persisted)

    ndim = len(extent)
    trailing = list(range(lead + 1, ndim))
    counts = [matrix[index].rechunk(by_slabs) for index in blocks]
    rows = run(
        [da.map_blocks(_forward_slabs, x, shared, extent, chunks=(*by_slabs[:lead], (width,)), drop_axis=trailing,
                       dtype=np.float64) for x in counts],
        f"{names[0]}: chunk",
    )
    # the slabs were checked in pass 1: their sums are exact integers
    totals = [round(float(total)) for total in client.compute([x.sum() for x in counts], sync=True)]
    noisy_rows = []
    for number, (intermediate, total) in enumerate(zip(rows, totals, strict=True)):
        whole = intermediate.rechunk((*((n,) for n in extent[:lead]), tuple(_group_width(tiles, g) for g in groups)))
        parts = whole.to_delayed().reshape(-1)
        pieces = []
        for part, group in zip(parts, groups, strict=True):
            first = tiles[group[0]].start
            jobs = [(slice(tiles[t].start - first, tiles[t].stop - first), tiles[t], tile_streams[number][t]) for t in group]
            task = dask.delayed(_noisy_pencils, pure=False)(part, shared, extent, jobs, total)
            pieces.append(da.from_delayed(task, shape=(*extent[:lead], _group_width(tiles, group)), dtype=np.float64))
        noisy_rows.append(da.concatenate(pieces, axis=lead))
    noisy_rows = run(noisy_rows, f"{names[1]}: chunk")
    released = run(
        [da.map_blocks(_inverse_slabs, x.rechunk((*by_slabs[:lead], (width,))), shared, extent, chunks=by_slabs,
                       new_axis=trailing, dtype=np.float64) for x in noisy_rows],
        f"{names[2]}: chunk",
    )
    _write_blocks(client, released, blocks, layout, array_path, steps.slice(done / stages, 1.0))


def _tile_groups(tiles: list[slice], rows: int, cells: int) -> list[list[int]]:
    """Consecutive pencil tiles grouped so that each group (every row, its columns) holds about
    ``cells`` cells, one tile at least."""
    groups: list[list[int]] = [[]]
    for number, tile in enumerate(tiles):
        if groups[-1] and rows * (_group_width(tiles, groups[-1]) + tile.stop - tile.start) > cells:
            groups.append([])
        groups[-1].append(number)
    return groups


def _group_width(tiles: list[slice], group: list[int]) -> int:
    return tiles[group[-1]].stop - tiles[group[0]].start


def _forward_slabs(cells: np.ndarray, shared: Shared, extent: tuple[int, ...]) -> np.ndarray:
    """On a worker: pass 1 on a chunk of whole slabs (checked, then transformed along the plane)."""
    runner = BlockRelease(*shared)
    lead, width = runner.layout(extent)
    rows, _ = runner.forward(np.ascontiguousarray(cells, dtype=np.float64), extent)
    return rows.reshape(*cells.shape[:lead], width)


def _noisy_pencils(
    values: np.ndarray, shared: Shared, extent: tuple[int, ...], jobs: list[tuple[slice, slice, np.random.Generator]],
    total: int,
) -> np.ndarray:
    """On a worker: pass 2 on a group of whole pencil tiles (every row of the intermediate)."""
    runner = BlockRelease(*shared)
    flat = values.reshape(-1, values.shape[-1])
    noisy = np.empty(flat.shape)
    for local, tile, rng in jobs:
        noisy[:, local] = runner.pencil(flat[:, local], extent, tile, rng, total)
    return noisy.reshape(values.shape)


def _inverse_slabs(rows: np.ndarray, shared: Shared, extent: tuple[int, ...]) -> np.ndarray:
    """On a worker: pass 3 on a chunk of whole slabs' noisy rows: their values."""
    runner = BlockRelease(*shared)
    lead, width = runner.layout(extent)
    return runner.inverse(rows.reshape(-1, width), extent, (*rows.shape[:lead], *extent[lead:]))


def _write_blocks(
    client: Client, arrays: list[da.Array], blocks: list[Index], layout: ReleaseLayout, array_path: str, steps: Progress
) -> None:
    """Write each released block to its place in the Zarr array, a storage chunk per task."""
    import dask

    extent = tuple(part.stop - part.start for part in blocks[0])
    storage = slab_chunks(extent, slab_layout(layout.plan, extent)[0], layout.cells)
    tasks = []
    for x, index in zip(arrays, blocks, strict=True):
        x = x.rechunk(storage)
        parts = x.to_delayed()
        for position in np.ndindex(*parts.shape):
            region = tuple(
                slice(part.start + sum(sizes[:i]), part.start + sum(sizes[: i + 1]))
                for part, sizes, i in zip(index, x.chunks, position, strict=True)
            )
            tasks.append(dask.delayed(write_zarr_chunk, pure=False)(array_path, region, parts[position]))
    wait_for(client, client.compute(tasks), steps, "writing the release: chunk")

