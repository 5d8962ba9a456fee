"""Releasing a chunked frequency matrix on a Dask cluster, into a Zarr release folder.

The rules are those of :meth:`~privelet_gui.engine.ReleaseSpec.run`, decided by the same
:class:`~privelet_gui.engine.ReleaseSpec`: the same calibration (``spec.calibration(rows)``), the
same exact-rounding limit, the same key-and-position noise. Only the scheduling differs, through
the engine's block API (:class:`~privelet_gui.engine.ReleasePipeline`):

- S_A blocks that fit in one task (the usual Privelet+ case): each chunk, a group of whole
  blocks (:mod:`privelet_gui.distributed.layout`), is released block by block and written to
  the Zarr folder by one task.
- Big blocks (S_A empty, or blocks of millions of cells): the three passes of
  :class:`~privelet_gui.engine.BigBlock`, each task a chunk of whole slabs (passes 1 and 3) or
  of columns (pass 2). Each pass is persisted on the cluster (spilled to the workers' disks when
  it does not fit in their memory), with progress and cancel.

Either way the noisy matrix equals ``spec.run(M, rng=...)`` cell for cell: it depends on the
seed only, never on the number of workers.
"""

from __future__ import annotations

import dataclasses
import math
import os
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from ..engine import BigBlock, PriveletError, Release, ReleasePipeline, ReleaseSpec, Scratch, byte_size
from ..engine.noise.bits import release_key
from ..engine.postprocess import sum_slabs
from ..engine.progress import CancelCallback, Progress, ProgressCallback
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
# What a task needs to rebuild the release's pipeline (the spec, its calibration) and its key.
Shared = tuple[ReleaseSpec, Any, bytes]


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
    The caller records the release in the privacy ledger before calling (its noise is drawn
    here). The folder appears only once complete;
    an error or a cancel leaves nothing behind.
    """
    require_dask()
    import dask.array as da

    started = time.perf_counter()
    layout = release_layout(spec, cells)
    chunked = matrix if isinstance(matrix, da.Array) else _scatter(client, matrix, layout.chunks)
    if tuple(chunked.shape) != spec.schema.shape:
        raise PriveletError(
            f"the matrix has shape {tuple(chunked.shape)} but the schema needs {spec.schema.shape}; "
            "count the table with this schema or fix the schema"
        )
    target = check_zarr_target(path, force=force)
    steps = Progress(progress, should_cancel)
    steps.report(0.0, "starting the release")
    total = _total(client, chunked) if rows is None else int(rows)
    spec.check_rows(total)
    calibration = spec.calibration(total)
    _check_worker_memory(client, layout)
    shared: Shared = (spec, calibration, release_key(rng, seed=seed if rng is None else None))
    storage = tuple(sizes[0] for sizes in layout.chunks)
    with ZarrReleaseWriter(target, spec.schema.shape, storage, force=force) as writer:
        written_to = steps.slice(0.0, 0.9 if spec.uses_public_total else 0.98)
        if layout.big:
            _release_big_blocks(client, chunked, layout, shared, writer.array_path, written_to)
        else:
            _release_by_blocks(client, chunked, layout, shared, writer.array_path, written_to)
        shift = None
        if spec.uses_public_total:  # as spec.run: the total becomes the public number of rows
            written = _written_sum(client, writer.array_path, spec.schema.shape, steps.slice(0.9, 0.94))
            shift = (total - written) / math.prod(spec.schema.shape)
            _shift_all(client, writer.array_path, spec.schema.shape, storage, shift, steps.slice(0.94, 0.98))
        import zarr

        noisy = cast(np.ndarray, zarr.open_array(writer.array_path, mode="r"))  # read for its shape only
        release = spec.release_of(noisy, calibration, seeded=rng is not None or seed is not None, total_shift=shift)
        meta = release_metadata(release, seed=seed, metadata=metadata)
        writer.commit(meta)
    steps.report(1.0, "release done")
    return dataclasses.replace(open_zarr_release(target), seconds=time.perf_counter() - started), meta


def _pipeline(shared: Shared) -> ReleasePipeline:
    spec, calibration, _ = shared
    return ReleasePipeline(spec.plan, calibration, spec.sampler)


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
    limits = [int(w.get("memory_limit") or 0) for w in client.scheduler_info().get("workers", {}).values()]
    limits = [limit for limit in limits if limit > 0]
    if limits and layout.task_bytes > min(limits) // 2:
        raise PriveletError(
            f"each task of this release needs about {byte_size(layout.task_bytes)} (an S_A block and its "
            f"measurements), more than half of the {byte_size(min(limits))} a Dask worker may use; give the workers "
            "more memory, or put more attributes in S_A (smaller blocks)"
        )


def _total(client: Client, matrix: da.Array) -> int:
    total = float(client.compute(matrix.sum()).result())
    if not math.isfinite(total):
        raise PriveletError("the matrix holds NaN or infinite values; a frequency matrix holds counts")
    return max(round(total), 0)


# -- blocks that fit in a task ---------------------------------------------------------------------


def _release_by_blocks(
    client: Client, matrix: da.Array, layout: ReleaseLayout, shared: Shared, array_path: str, steps: Progress,
) -> None:
    import dask

    chunks = layout.chunks
    if matrix.chunks != chunks:
        matrix = matrix.rechunk(chunks)
    parts = matrix.to_delayed()
    tasks = [
        dask.delayed(_release_chunk, pure=False)(
            parts[position], shared, [(box.local, box.region) for box in boxes], array_path,
            layout.blocks.region(position),
        )
        for position, boxes in layout.blocks.by_chunk().items()
    ]
    wait_for(client, client.compute(tasks), steps, "releasing blocks: chunk")


def _release_chunk(cells: np.ndarray, shared: Shared, boxes: list[tuple[Index, Index]], array_path: str,
                   region: Index) -> int:
    """On a worker: release the whole blocks of one chunk and write the chunk."""
    pipeline = _pipeline(shared)
    scratch = Scratch(shared[2])
    noisy = np.empty(cells.shape)
    for local, index in boxes:
        pipeline.release_block(cells[local], noisy[local], index, scratch)
    return write_zarr_chunk(array_path, region, noisy)


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


# -- big blocks: the engine's three passes ------------------------------------------------------------


def _release_big_blocks(
    client: Client, matrix: da.Array, layout: ReleaseLayout, shared: Shared, array_path: str, steps: Progress,
) -> None:
    """Big blocks in the engine's three passes (:class:`~privelet_gui.engine.BigBlock`), each pass
    persisted on the cluster: slabs measured along A into the intermediate, columns measured,
    noised and reconstructed along B, slabs reconstructed along A; then written."""
    import dask.array as da

    blocks = layout.big_blocks()
    first = blocks[0]
    lead, cells = first.split, layout.cells
    by_slabs = slab_chunks(first.shape, lead, cells)
    b_shape = first.shape[:lead]
    columns = max(1, cells // max(first.slabs, 1))
    by_columns = (*((n,) for n in b_shape), tuple(
        min(columns, first.slab_measurements - start) for start in range(0, first.slab_measurements, columns)))
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

    trailing = list(range(lead + 1, len(first.shape)))
    counts = [matrix[block.index].rechunk(by_slabs) for block in blocks]
    rows = run(
        [da.map_blocks(_measure_slabs, x, shared, block.index, chunks=(*by_slabs[:lead], (block.slab_measurements,)),
                       drop_axis=trailing, dtype=np.int64) for x, block in zip(counts, blocks, strict=True)],
        f"{first.pass_names[0]}: chunk",
    )
    noisy_rows = run(
        [da.map_blocks(_noise_columns, x.rechunk(by_columns), shared, block.index, dtype=np.float64)
         for x, block in zip(rows, blocks, strict=True)],
        f"{first.pass_names[1]}: chunk",
    )
    released = run(
        [da.map_blocks(_reconstruct_slabs, x.rechunk((*by_slabs[:lead], (block.slab_measurements,))), shared,
                       block.index, chunks=by_slabs, new_axis=trailing, dtype=np.float64)
         for x, block in zip(noisy_rows, blocks, strict=True)],
        f"{first.pass_names[2]}: chunk",
    )
    _write_blocks(client, released, [block.index for block in blocks], by_slabs, array_path,
                  steps.slice(done / stages, 1.0))


def _big_block(shared: Shared, index: Index) -> BigBlock:
    return _pipeline(shared).big_block(index)


def _measure_slabs(cells: np.ndarray, shared: Shared, index: Index) -> np.ndarray:
    """On a worker: pass 1 on a chunk of whole slabs (checked, then measured along A)."""
    block = _big_block(shared, index)
    lead = block.split
    slabs = math.prod(cells.shape[:lead])
    out = np.empty((slabs, block.slab_measurements), dtype=np.int64)
    block.measure_slabs(cells.reshape(slabs, *block.slab_shape), out, Scratch(shared[2]))
    return out.reshape(*cells.shape[:lead], block.slab_measurements)


def _noise_columns(columns: np.ndarray, shared: Shared, index: Index, block_info: dict[Any, Any] | None = None) -> np.ndarray:
    """On a worker: pass 2 on a chunk of columns of the intermediate (every B position)."""
    block = _big_block(shared, index)
    first = 0 if block_info is None else block_info[0]["array-location"][-1][0]
    flat = columns.reshape(block.slabs, columns.shape[-1])
    out = np.empty(flat.shape)
    block.noise_columns(flat, first, out, Scratch(shared[2]))
    return out.reshape(columns.shape)


def _reconstruct_slabs(rows: np.ndarray, shared: Shared, index: Index) -> np.ndarray:
    """On a worker: pass 3 on a chunk of whole slabs' noisy rows: their values."""
    block = _big_block(shared, index)
    lead = block.split
    slabs = math.prod(rows.shape[:lead])
    out = np.empty((slabs, *block.slab_shape))
    block.reconstruct_slabs(np.ascontiguousarray(rows.reshape(slabs, -1)), out, Scratch(shared[2]))
    return out.reshape(*rows.shape[:lead], *block.slab_shape)


def _write_blocks(
    client: Client, arrays: list[da.Array], blocks: list[Index], storage: Chunks, array_path: str, steps: Progress
) -> None:
    """Write each released block to its place in the Zarr array, a storage chunk per task."""
    import dask

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
