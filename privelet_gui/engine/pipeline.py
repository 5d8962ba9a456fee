"""The release pipeline: Privelet+ on M, one S_A block (or slab, or tile) at a time.

Privelet+ transforms M along every attribute not in S_A, rounds the weighted
coefficients exactly to the noise grid, adds discrete Laplace noise and inverts
(mean subtraction along nominal axes). Attributes in S_A are never transformed, so
the work is done one S_A slice block at a time: memory stays a small multiple of one
block, and the blocks fit the CPU cache. :class:`~privelet_gui.engine.spec.ReleaseSpec`
decides what to run; this module runs it.
"""

from __future__ import annotations

import math
import os
from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor

import numpy as np

from . import _memory, bits
from ._memory import recycle_block_buffers, zeros
from .errors import PriveletError
from .hn import TransformPlan
from .noise import NoiseCalibration, NoiseSampler, Sampler, noise_sampler, round_to_grid
from .progress import Progress
from .transform import along

__all__ = [
    "EXACT_LIMIT",
    "BlockRelease",
    "block_indices",
    "check_counts",
    "check_memory",
    "is_tiled",
    "peak_bytes",
    "release_blocks",
    "spawn_streams",
    "tile_indices",
    "total_count",
    "worker_count",
]

# Block size (cells) for the S_A-sliced pipeline: small enough to stay in cache.
_BLOCK_CELLS = 1 << 19
#: Counts and intermediates must stay below this for exact rounding (float64 integers).
EXACT_LIMIT = 2.0**53


def release_blocks(
    matrix: np.ndarray,
    plan: TransformPlan,
    calibration: NoiseCalibration,
    sampler: NoiseSampler,
    generator: np.random.Generator,
    steps: Progress,
    threads: int,
) -> np.ndarray:
    """The noisy matrix: every block of M through :class:`_BlockPipeline`, on ``threads``
    threads, each block with its own noise stream spawned from ``generator`` (so the result
    does not depend on the number of threads), the noise drawn by ``sampler``."""
    blocks = list(_blocks(matrix.shape, plan.identity_axes, _BLOCK_CELLS))
    check_memory(_peak_bytes(plan, blocks, threads))
    recycle_block_buffers()
    pipeline = _BlockPipeline(plan, calibration, sampler)
    streams = _spawn(generator, len(blocks))
    if len(blocks) == 1:  # no S_A to split on: one block, whose own steps report progress
        _check_counts(matrix, steps)
        return np.ascontiguousarray(pipeline.run(matrix, streams[0], steps, workers=threads))
    noisy = zeros(matrix.shape)

    def fill(number: int) -> None:
        index = blocks[number]
        cells = matrix[index]
        _check_counts(cells)
        noisy[index] = pipeline.run(cells, streams[number])

    _run_parts(fill, len(blocks), threads, steps, "transform, noise and inverse", "block")
    return noisy


# -- the same work, one piece at a time, for callers that schedule it themselves ------------------
# (privelet_gui.distributed runs these on a cluster; the results equal release_blocks' piece for piece)


def block_indices(plan: TransformPlan) -> list[tuple[slice, ...]]:
    """The S_A blocks of a release with ``plan``, in the order :func:`release_blocks` gives
    them their noise streams (``spawn_streams(generator, len(blocks))``)."""
    return list(_blocks(plan.shape, plan.identity_axes, _BLOCK_CELLS))


def spawn_streams(generator: np.random.Generator, count: int) -> list[np.random.Generator]:
    """``count`` independent child generators of ``generator``, as the pipeline spawns them."""
    return _spawn(generator, count)


def is_tiled(plan: TransformPlan, shape: tuple[int, ...]) -> bool:
    """Whether a block of ``shape`` draws its noise one tile at a time, each tile with its own
    stream spawned from the block's (a block bigger than one slab, see :func:`tile_indices`);
    otherwise its tiles draw from the block's stream one after the other."""
    axes = plan.transformed_axes
    return bool(axes) and len(list(_slabs(shape, axes[-1]))) > 1


def tile_indices(plan: TransformPlan, shape: tuple[int, ...]) -> list[tuple[slice, ...]]:
    """The tiles of a block of ``shape``, in the order of their noise streams.

    Indices into the block after the forward transforms of every transformed axis but the
    last (those axes then hold coefficients); each tile holds whole lines of the last one.
    """
    axes = plan.transformed_axes
    if not axes:
        raise PriveletError("a release without transformed axes (Basic) has no tiles")
    *outer_axes, last = axes
    sizes = [plan.transforms[a].n_coefficients if a in outer_axes else n for a, n in enumerate(shape)]
    return list(_tiles(tuple(sizes), last, plan.transforms[last].n_coefficients))


def check_counts(cells: np.ndarray) -> None:
    """Refuse cells that are not non-negative integer counts (what privacy and exact rounding assume)."""
    _check_counts(cells)


class BlockRelease:
    """One block, or one tile of a big block, of a release: the work :func:`release_blocks`
    does, for callers that schedule the pieces themselves (one thread each)."""

    def __init__(self, plan: TransformPlan, calibration: NoiseCalibration, sampler: Sampler):
        self.plan = plan
        self._pipeline = _BlockPipeline(plan, calibration, noise_sampler(sampler, calibration))

    def block(self, cells: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """The noisy values of one block, drawn from the block's own stream ``rng``."""
        _check_counts(cells)
        return np.ascontiguousarray(self._pipeline.run(cells, rng))

    def tile(self, values: np.ndarray, index: tuple[slice, ...], rng: np.random.Generator) -> np.ndarray:
        """The noisy values of one tile of a big block (:func:`tile_indices`): ``values`` are
        the block's values there after the outer forward transforms, ``index`` is where the
        tile sits in the block, ``rng`` the tile's own stream. The last transformed axis is
        transformed, noised and inverted, as in the block pipeline."""
        last = self.plan.transformed_axes[-1]
        transform = self.plan.transforms[last]
        numerators = transform.numerators(values, last)
        return transform.inverse(self._pipeline._noisy_coefficients(numerators, index, rng), last)


def peak_bytes(plan: TransformPlan, threads: int) -> int:
    """About the most memory a release with ``plan`` holds at once besides M itself (bytes)."""
    return _peak_bytes(plan, list(_blocks(plan.shape, plan.identity_axes, _BLOCK_CELLS)), threads)


def _peak_bytes(plan: TransformPlan, blocks: list[tuple[slice, ...]], threads: int) -> int:
    """About the most memory a release holds at once besides M itself (bytes).

    Many blocks: the noisy output, and per running block its coefficients and one more
    array of their size. One big block (S_A empty): all its coefficients, the noisy
    output, and per thread a slab's intermediates. Plus each thread's tile buffers.
    """
    shape = plan.shape
    axes = plan.transformed_axes
    outer_axes = axes[:-1]

    def coefficient_cells(extent: tuple[int, ...]) -> int:
        return math.prod(plan.transforms[a].n_coefficients if a in outer_axes else n for a, n in enumerate(extent))

    def extent(index: tuple[slice, ...]) -> tuple[int, ...]:
        return tuple(len(range(n)[part]) for part, n in zip(index, shape, strict=True))

    cells = math.prod(shape)
    tile_buffers = threads * 8 * _TILE_CELLS * 8
    slabs = list(_slabs(shape, axes[-1])) if axes else []
    if len(blocks) > 1 or len(slabs) <= 1:
        largest = max((extent(index) for index in blocks), key=math.prod)
        running = min(threads, len(blocks))
        return 8 * (cells + running * 2 * coefficient_cells(largest)) + tile_buffers
    return 8 * (coefficient_cells(shape) + cells + threads * 3 * coefficient_cells(extent(slabs[0]))) + tile_buffers


def check_memory(needed: int) -> None:
    """Refuse, with what to do, a release that would not fit in the memory available now
    (instead of being killed by the operating system half way)."""
    available = _memory.available_memory()
    if available is not None and needed > available:
        raise PriveletError(
            f"this release needs about {_memory.byte_size(needed)} of memory besides the matrix, but only "
            f"{_memory.byte_size(available)} are available; put more attributes in S_A (the release then "
            "works block by block), exclude attributes, use coarser domains, or close other programs"
        )


def total_count(matrix: np.ndarray) -> int:
    total = float(matrix.sum())
    if not math.isfinite(total):
        raise PriveletError("the matrix holds NaN or infinite values; a frequency matrix holds counts")
    return max(round(total), 0)


def _check_counts(cells: np.ndarray, steps: Progress | None = None) -> None:
    """Privacy and exact rounding assume non-negative integer counts (checked a slab at a time)."""
    flat = cells.reshape(-1)
    for start in range(0, flat.size, _SLAB_CELLS):
        part = flat[start : start + _SLAB_CELLS]
        if part.min() < 0 or not np.array_equal(part, np.floor(part)):
            raise PriveletError(
                "the matrix holds negative or fractional values; Privelet releases a frequency matrix "
                "of non-negative integer counts (count the table with frequency_matrix)"
            )
        if steps is not None:
            steps.check()


class _BlockPipeline:
    """Privelet+ on one block of M: forward transform, exact rounding, noise, inverse.

    The last transformed axis is processed tile by tile together with the rounding and
    the noise (they are independent across the other axes), so that this, the bulk of
    the work, runs on tiles that fit the CPU cache.
    """

    def __init__(self, plan: TransformPlan, calibration: NoiseCalibration, sampler: NoiseSampler):
        self.plan = plan
        self.calibration = calibration
        self.sampler = sampler
        ndim = len(plan.transforms)
        self.denominators: list[np.ndarray] = []  # y = z / prod(d): per-axis, broadcastable
        factors: list[np.ndarray] = []
        for axis in plan.transformed_axes:
            t = plan.transforms[axis]
            if np.any(t.denominators != 1):
                self.denominators.append(along(t.denominators, axis, ndim))
            # Identically-zero coefficients (W = inf) get factor 0: they receive no noise.
            factors.append(along(1.0 / t.weights, axis, ndim))
        # c = (grid units) * g / prod(W), the grid folded into the first factor (one pass less)
        self.to_coefficients: list[np.ndarray] = (
            [factors[0] * calibration.grid, *factors[1:]] if factors else [np.array(calibration.grid)]
        )

    def run(
        self, cells: np.ndarray, rng: np.random.Generator, progress: Progress | None = None, workers: int = 1
    ) -> np.ndarray:
        """The noisy block (thread-safe: each call has its own generator and buffers).

        A big block (more than one slab, see :meth:`_outer_forward`) is cut into independent
        slabs and tiles, run on ``workers`` threads; each tile then draws from its own stream,
        spawned from ``rng``, so the result does not depend on ``workers``.
        """
        transforms = self.plan.transforms
        axes = self.plan.transformed_axes
        steps = progress or Progress()
        if not axes:  # Basic: the cells themselves are the weighted coefficients
            whole = tuple(slice(None) for _ in cells.shape)
            return self._noisy_coefficients(np.asarray(cells, dtype=np.float64), whole, rng)
        *outer_axes, last = axes
        big = len(list(_slabs(cells.shape, last))) > 1
        array = self._outer_forward(cells, outer_axes, last, steps.slice(0.0, 0.3), workers)
        # Each tile is read before its values are written back: when the array is this
        # block's own intermediate, the values can go back into it (less memory to touch).
        result = array if outer_axes else np.empty(array.shape)
        tiles = list(_tiles(array.shape, last, transforms[last].n_coefficients))
        streams = _spawn(rng, len(tiles)) if big else [rng] * len(tiles)

        def tile(number: int) -> None:
            index = tiles[number]
            z = transforms[last].numerators(array[index], last)
            transforms[last].inverse(self._noisy_coefficients(z, index, streams[number]), last, out=result[index])

        # With outer axes this is the second of three passes (see _outer_forward, _outer_inverse).
        stage = ("transform pass 2 of 3, " if outer_axes else "") + (
            f"transforming {self.plan.axis_name(last)}, adding noise, inverting")
        _run_parts(tile, len(tiles), workers if big else 1, steps.slice(0.3, 0.8), stage, "tile")
        return self._outer_inverse(result, outer_axes, last, steps.slice(0.8, 1.0), workers)

    def _outer_forward(
        self, cells: np.ndarray, outer_axes: list[int], last: int, steps: Progress, workers: int
    ) -> np.ndarray:
        """Numerators along every transformed axis but ``last``.

        They are independent across ``last``: a big block goes through all of them a slab
        of ``last``'s values at a time (slabs on ``workers`` threads), so that each slab's
        intermediates stay small and the block's coefficients are written once.
        """
        transforms = self.plan.transforms
        if not outer_axes:
            return cells

        def forward(index: tuple[slice, ...]) -> np.ndarray:
            z = cells[index]
            for axis in outer_axes:
                z = transforms[axis].numerators(z, axis)
            return z

        shape = list(cells.shape)
        for axis in outer_axes:
            shape[axis] = transforms[axis].n_coefficients
        stage = "transform pass 1 of 3, transforming " + ", ".join(self.plan.axis_name(axis) for axis in outer_axes)
        return _by_slabs(forward, cells.shape, tuple(shape), last, workers, steps, stage)

    def _outer_inverse(
        self, coefficients: np.ndarray, outer_axes: list[int], last: int, steps: Progress, workers: int
    ) -> np.ndarray:
        """Undo :meth:`_outer_forward` on the block's own buffer (the inverses may work in it)."""
        transforms = self.plan.transforms
        if not outer_axes:
            return coefficients

        def inverse(index: tuple[slice, ...]) -> np.ndarray:
            v = coefficients[index]
            for axis in reversed(outer_axes):
                v = transforms[axis].inverse(v, axis, overwrite_input=True)
            return v

        shape = list(coefficients.shape)
        for axis in outer_axes:
            shape[axis] = transforms[axis].size
        stage = "transform pass 3 of 3, inverting " + ", ".join(
            self.plan.axis_name(axis) for axis in reversed(outer_axes))
        return _by_slabs(inverse, coefficients.shape, tuple(shape), last, workers, steps, stage)

    def _noisy_coefficients(self, numerators: np.ndarray, index: tuple[slice, ...], rng: np.random.Generator) -> np.ndarray:
        """Noisy coefficients of a tile (``index``: where the tile sits on the other axes)."""
        denominators: np.ndarray = math.prod((_restrict(d, index) for d in self.denominators), start=np.array(1.0))
        # Exact grid units + integer noise, summed exactly (float64 or int64 limbs); only the
        # exact noisy integer is then converted and scaled (post-processing).
        units = round_to_grid(numerators, denominators, self.calibration.grid_exponent)
        noisy = self.sampler.add(units, rng)
        for factor in self.to_coefficients:
            noisy *= _restrict(factor, index)
        return noisy


def _spawn(generator: np.random.Generator, count: int) -> list[np.random.Generator]:
    """Independent child generators, one per block or tile (:func:`.bits.spawn`)."""
    return bits.spawn(generator, count)


def worker_count(workers: int | None) -> int:
    if workers is None:
        available = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
        return max(1, min(available, 8))
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise PriveletError(f"workers must be a positive integer, got {workers!r}")
    return workers


def _by_slabs(
    step: Callable[[tuple[slice, ...]], np.ndarray],
    shape: tuple[int, ...],
    out_shape: tuple[int, ...],
    axis: int,
    workers: int,
    steps: Progress,
    stage: str,
) -> np.ndarray:
    """``step`` applied to each slab of ``shape`` along ``axis`` (its result has the slab's
    extent on ``axis``), gathered into one array of ``out_shape``; one slab: its result."""
    slabs = list(_slabs(shape, axis))
    if len(slabs) == 1:
        return step(slabs[0])
    out = zeros(out_shape, populate=True)

    def fill(number: int) -> None:
        out[slabs[number]] = step(slabs[number])

    _run_parts(fill, len(slabs), workers, steps, stage, "slab")
    return out


def _run_parts(fill: Callable[[int], None], count: int, workers: int, steps: Progress, stage: str, part: str) -> None:
    """Run ``fill(0..count-1)`` (``part``: blocks, slabs or tiles) on ``workers`` threads,
    reporting progress and honouring cancel in order.

    Each report says how many parts of ``stage`` (which names its pass of the transform) are
    done, "...: 11 of 11 slabs done": it is shown beside the progress of the whole release,
    where "slab 11 of 11" at 52% read as a contradiction.
    """

    def label(done: int) -> str:
        return f"{stage}: {done:,} of {count:,} {part}{'s' if count != 1 else ''} done"

    if workers == 1:
        for number in range(count):
            fill(number)
            steps.report((number + 1) / count, label(number + 1))
        return
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="privelet") as pool:
        window: deque[Future[None]] = deque()
        submitted = 0
        try:
            for number in range(count):
                while submitted < count and len(window) < 2 * workers:
                    window.append(pool.submit(fill, submitted))
                    submitted += 1
                window.popleft().result()
                steps.report((number + 1) / count, label(number + 1))
        finally:  # on error or cancel: drop queued blocks; the pool waits for running ones
            for future in window:
                future.cancel()


def _restrict(vector: np.ndarray, index: tuple[slice, ...]) -> np.ndarray:
    """The part of a broadcastable per-axis vector that applies to the tile ``index``
    (a 0-d array applies whole)."""
    return vector[tuple(part if length > 1 else slice(None) for part, length in zip(index, vector.shape, strict=False))]


# Cells per tile of the last transformed axis: about 1 MiB, to stay in the L2 cache.
_TILE_CELLS = 1 << 17
# Cells per slab of a huge block for the transforms of its outer axes (about 32 MiB), and per
# slab of the counts checked at once.
_SLAB_CELLS = 1 << 22


def _tiles(shape: tuple[int, ...], axis: int, coefficients: int) -> Iterator[tuple[slice, ...]]:
    """Cut ``shape`` into tiles of about ``_TILE_CELLS`` cells (counting ``coefficients``
    along ``axis``, which is never cut), along its other axes, outermost first.

    Outermost first, so that each tile of a C-ordered array is one contiguous run of memory:
    writing a tile then touches only its own pages.
    """
    sizes = list(shape)
    sizes[axis] = coefficients
    others = tuple(a for a in range(len(shape)) if a != axis and shape[a] > 1)
    return _blocks(tuple(sizes), others, _TILE_CELLS)


def _slabs(shape: tuple[int, ...], axis: int) -> Iterator[tuple[slice, ...]]:
    """Cut ``shape`` along ``axis`` into slabs of about ``_SLAB_CELLS`` cells (one if it is smaller)."""
    per_index = math.prod(shape) // max(shape[axis], 1)
    step = max(1, _SLAB_CELLS // max(per_index, 1))
    index = [slice(None)] * len(shape)
    for start in range(0, max(shape[axis], 1), step):
        index[axis] = slice(start, start + step)
        yield tuple(index)


def _blocks(shape: tuple[int, ...], split_axes: tuple[int, ...], target: int) -> Iterator[tuple[slice, ...]]:
    """Index tuples cutting ``shape`` along ``split_axes`` into blocks of about ``target`` cells."""
    index = [slice(None)] * len(shape)

    def split(axes: tuple[int, ...], cells: int) -> Iterator[tuple[slice, ...]]:
        if cells <= target or not axes:
            yield tuple(index)
            return
        axis, rest = axes[0], axes[1:]
        per_index = cells // shape[axis]
        step = 1 if per_index >= target else max(1, target // per_index)
        for start in range(0, shape[axis], step):
            index[axis] = slice(start, min(start + step, shape[axis]))
            if per_index >= target:
                yield from split(rest, per_index)
            else:
                yield tuple(index)
        index[axis] = slice(None)

    yield from split(split_axes, math.prod(shape))
