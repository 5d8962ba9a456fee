"""The release pipeline: Privelet+ on M, one S_A block (or slab, or tile) at a time.

Privelet+ transforms M along every attribute not in S_A, rounds the weighted
coefficients exactly to the noise grid, adds discrete Laplace noise and inverts
(mean subtraction along nominal axes). Attributes in S_A are never transformed, so
the work is done one S_A slice block at a time: memory stays a small multiple of one
block, and the blocks fit the CPU cache. :class:`~privelet_gui.engine.spec.ReleaseSpec`
decides what to run; this module runs it.

How a block is released (:class:`_BlockPipeline`):

- *Small blocks* (the usual Privelet+ case): the counts are checked (and summed), then
  transformed along every transformed axis but the last (the block's *plane*
  forward), then, tile by tile, along the last, rounded, noised and inverted there, and
  finally inverted along the others straight into the output. When the last axis is an
  ordinal (Haar) axis and the innermost one, its rows are padded to a power of two and
  transformed in a level-major layout (:meth:`HaarTransform.rows_numerators`), so that
  every numpy operation runs over one long evenly strided run of memory (strided
  lines cost twice as much, and powers of two as rows far more: cache-set conflicts).
  The tiles draw from the block's noise stream one after the other. A plane of a nominal
  axis and the rows axis skips the padded copy and the nominal plane: the counts are checked
  while the nominal axis's leaf-sums are taken, and each tile's numerators along both axes are
  formed from the counts in one compiled pass (:meth:`_Plane.rows_numerators`); on the way
  back each sibling group goes through the nominal inverse into the output as soon as the
  tiles have brought its lines back along the rows axis (:meth:`_Plane.grouped_inverse`).
- *Big blocks* (S_A empty, or a block of millions of cells): in three passes, over a
  split of the transformed axes into leading *pencil* axes B and the rest A, chosen so
  that the intermediate (values along B, coefficients along A) is the smallest. Pass 1
  transforms each slab (one index along every B axis) along A; pass 2 gathers *pencils*
  (every B index, a range of A positions), transforms them along B, rounds, adds noise
  and inverts along B, each pencil tile with its own stream spawned from the block's (B a
  Haar axis then a nominal one: both axes in one compiled pass each way,
  :meth:`_BigBlock._noisy_in_one_pass`);
  pass 3 inverts each slab along A into the output, freeing the intermediate's memory
  behind it. Where the big block is the whole release, the output is made in the
  intermediate's own memory instead (the kernel then zeroes no fresh page for it: 12% of the
  CPU of a two-thread release with S_A empty went to that, Brazil shape), each slab's values
  written once the rows under them have been read. Memory is then about one matrix for the intermediate (plus the output,
  where it has memory of its own).
- Basic (no transformed axis): each block is rounded, noised and scaled a tile at a time.

The input checks (non-negative integer counts) run inside each block, which also sums
its counts: the total needs no pass of its own. The output is allocated once and written
once, with huge pages where the kernel offers them (:func:`~._memory.output_array`), its
pages provided by a background thread ahead of the writers (:func:`~._memory.prefaulted`)
where a core is left for it, except for big blocks.
"""

from __future__ import annotations

import contextlib
import math
import threading
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future
from dataclasses import dataclass
from functools import cached_property, partial
from typing import NamedTuple

import numpy as np

from . import _compiled, _memory, bits
from ._memory import output_array, prefaulted, recycle_block_buffers, release_pages
from ._threads import kept_pool, settle, usable_cores
from .errors import PriveletError
from .haar import HaarTransform, loop_table
from .hn import TransformPlan
from .noise import (
    NoiseCalibration,
    NoiseSampler,
    Sampler,
    largest_magnitude,
    noise_sampler,
    one_division_limit,
    round_to_grid,
    rounds_by_one_division,
)
from .nominal import NominalTransform
from .progress import Progress

__all__ = [
    "EXACT_LIMIT",
    "BlockRelease",
    "block_indices",
    "check_counts",
    "check_memory",
    "is_tiled",
    "pass_stages",
    "peak_bytes",
    "release_blocks",
    "slab_layout",
    "spawn_streams",
    "tile_indices",
    "worker_count",
]

# Block size (cells) for the S_A-sliced pipeline: small enough to stay in cache.
_BLOCK_CELLS = 1 << 19
#: Counts and intermediates must stay below this for exact rounding (float64 integers).
EXACT_LIMIT = 2.0**53
# Coefficients per tile of a small block's last axis: big enough to spread numpy's call
# overhead (each call a GIL hand-over between the release's threads), small enough for the
# CPU's L2 cache (2 MiB: 1 to 2 MiB per core is common). Measured at Brazil scale in one
# process, alternating: Privelet+ on two threads 1.35 s at 2**17, 1.25 s here, 1.19 s at
# 2**19 (4 MiB); on one 1.79, 1.70, 1.73 s. The tiles fix which draw each coefficient gets.
_TILE_CELLS = 1 << 18
# A block with more cells than this is released in three passes (see the module docstring).
_SLAB_CELLS = 1 << 22
# Coefficients per pencil tile of a big block (a pencil holds every B index): each pencil makes
# some thirty numpy calls and sampler rounds that hold the GIL, so bigger pencils leave the
# threads less to wait for. Measured at Brazil scale with S_A empty, in one process: 2.33 s
# on two threads at 2**18, 2.10 s here, 2.06 s at 2**20 (one thread: 3.73, 3.66, 3.70 s).
# The pencils fix which draw each coefficient gets.
_PENCIL_CELLS = 1 << 19
# The pencil axes' kept coefficients may not pass this many (a pencil tile then holds at
# least 256 A positions: narrower tiles gather a few values per row and run numpy on
# lines of a few cells).
_PENCIL_AXES_CELLS = 1 << 10
# Cells checked at once: the check's temporaries stay in the L2 cache.
_CHECK_CELLS = 1 << 16
# What a sampler holds per thread besides its input: the exact sampler's round of 2**17 draws
# keeps its scratch arrays (9 MiB for the compiled loops, kept while the thread lives; 4.4 MiB for
# the numpy passes) and its add() peaks at 10.0 MiB (epsilon 1) to 10.5 MiB (epsilon 0.1), measured
# with tracemalloc on a new thread (the numpy passes: 5.4 to 5.9 MiB).
_SAMPLER_BYTES = 11 << 20


def release_blocks(
    matrix: np.ndarray,
    plan: TransformPlan,
    calibration: NoiseCalibration,
    sampler: NoiseSampler,
    generator: np.random.Generator,
    steps: Progress,
    threads: int,
    *,
    overwrite_input: bool = False,
) -> tuple[np.ndarray, int]:
    """The noisy matrix and the total of M: every block of M through :class:`_BlockPipeline`,
    on ``threads`` threads, each block with its own noise stream spawned from ``generator``
    (so the result does not depend on the number of threads), the noise drawn by ``sampler``.

    Each block checks its counts before it draws any noise: negative, fractional, not finite
    or too many for exact rounding, and the release is refused (PriveletError).

    ``overwrite_input`` writes the noisy matrix into ``matrix`` itself (C-contiguous and
    writable, else into a new array): the same values, without the memory of a second
    matrix. A block's counts are all read before its noisy values are written, and blocks
    are disjoint, so no count is read after it is overwritten; after an error or a cancel
    ``matrix`` holds neither the counts nor a release.
    """
    blocks = list(_blocks(matrix.shape, plan.identity_axes, _BLOCK_CELLS))
    in_place = overwrite_input and matrix.flags.c_contiguous and matrix.flags.writeable
    check_memory(_peak_bytes(plan, blocks, threads, output=not in_place))
    recycle_block_buffers()
    pipeline = _BlockPipeline(plan, calibration, sampler)
    streams = bits.spawn_lazily(generator, len(blocks))  # each made by the thread that uses it
    totals = [0] * len(blocks)
    if pipeline.is_big(_extent(blocks[0], matrix.shape), len(blocks)):
        if len(blocks) == 1 and not in_place:  # the output takes the intermediate's memory
            return pipeline.run_big(matrix, streams[0](), None, steps, threads)
        # Not prefaulted: the output must grow only as the intermediate is freed (peak memory),
        # and prefaulting the intermediate in pass 1 measured 2-4% slower (S_A empty, Brazil).
        noisy = matrix if in_place else output_array(matrix.shape)
        for number, index in enumerate(blocks):  # one big block at a time, on every thread
            part = steps.slice(number / len(blocks), (number + 1) / len(blocks))
            totals[number] = pipeline.run_big(matrix[index], streams[number](), noisy[index], part, threads)[1]
        return noisy, sum(totals)
    noisy = matrix if in_place else output_array(matrix.shape)
    # populating the output takes a core: with none idle it slows the writers instead (Privelet+,
    # Brazil shape, two threads on two cores: 0.640-0.643 s without against 0.651-0.658 s with)
    prefault = not in_place and threads < usable_cores()
    with prefaulted(noisy) if prefault else contextlib.nullcontext():
        if len(blocks) == 1:  # one small block: its tiles report progress
            totals[0] = pipeline.run(matrix, streams[0](), noisy, steps)
        else:

            def fill(number: int) -> None:
                index = blocks[number]
                totals[number] = pipeline.run(matrix[index], streams[number](), noisy[index])

            _run_parts(fill, len(blocks), threads, steps, "transform, noise and inverse", "block")
    return noisy, sum(totals)


# -- the same work, one piece at a time, for callers that schedule it themselves ------------------
# (privelet_gui.distributed runs these on a cluster; the results equal release_blocks' piece for piece)


def block_indices(plan: TransformPlan) -> list[tuple[slice, ...]]:
    """The S_A blocks of a release with ``plan``, in the order :func:`release_blocks` gives
    them their noise streams (``spawn_streams(generator, len(blocks))``)."""
    return list(_blocks(plan.shape, plan.identity_axes, _BLOCK_CELLS))


def spawn_streams(generator: np.random.Generator, count: int) -> list[np.random.Generator]:
    """``count`` independent child generators of ``generator``, as the pipeline spawns them."""
    return bits.spawn(generator, count)


def is_tiled(plan: TransformPlan, shape: tuple[int, ...]) -> bool:
    """Whether a block of ``shape`` of a release with ``plan`` is big: released in three passes
    (:class:`BlockRelease`), each pencil tile drawing from its own stream spawned from the
    block's (:func:`tile_indices`); otherwise its tiles draw from the block's stream in turn."""
    return _BigBlock.applies(plan, shape, len(block_indices(plan)))


def tile_indices(plan: TransformPlan, shape: tuple[int, ...]) -> list[slice]:
    """The pencil tiles of a big block of ``shape``, in the order of their noise streams:
    ranges of columns of the block's intermediate (:meth:`BlockRelease.forward`)."""
    if not is_tiled(plan, shape):
        raise PriveletError("a block released whole (not in three passes) has no pencil tiles")
    return _BigBlock(plan, shape).pencils


def pass_stages(plan: TransformPlan, shape: tuple[int, ...]) -> tuple[str, str, str]:
    """For a big block of ``shape`` (:func:`is_tiled`): its three passes as progress names them."""
    return _BigBlock(plan, shape).stages


def slab_layout(plan: TransformPlan, shape: tuple[int, ...]) -> tuple[int, int]:
    """For a big block of ``shape`` (:func:`is_tiled`): how many leading axes index its slabs
    (one row of the intermediate each, in C order), and the length of a row."""
    big = _BigBlock(plan, shape)
    return big.lead, big.plane.size


def check_counts(cells: np.ndarray) -> int:
    """Refuse cells that are not non-negative integer counts (what privacy and exact rounding
    assume), or too many for exact rounding; return their total."""
    return _checked_total(cells)


class BlockRelease:
    """One block, or one piece of a big block, of a release: the work :func:`release_blocks`
    does, for callers that schedule the pieces themselves (one thread each).

    A small block is released whole (:meth:`block`). A big block of ``shape``
    (:func:`is_tiled`) goes through :meth:`forward` (its slabs, some at a time), :meth:`pencil`
    (each pencil tile of its intermediate, :func:`tile_indices`, with the tile's own stream)
    and :meth:`inverse` (its slabs again): :meth:`layout` says how they are cut.
    """

    def __init__(self, plan: TransformPlan, calibration: NoiseCalibration, sampler: Sampler):
        self.plan = plan
        self._pipeline = _BlockPipeline(plan, calibration, noise_sampler(sampler, calibration))

    def block(self, cells: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """The noisy values of one small block, drawn from the block's own stream ``rng``."""
        out = np.empty(cells.shape)
        self._pipeline.run(cells, rng, out)
        return out

    def layout(self, shape: tuple[int, ...]) -> tuple[int, int]:
        """For a big block of ``shape``: how many leading axes index its slabs (one row of the
        intermediate each, in C order), and the length of a row."""
        big = self._pipeline.big(shape)
        return big.lead, big.plane.size

    def forward(self, cells: np.ndarray, shape: tuple[int, ...]) -> tuple[np.ndarray, int]:
        """Pass 1 of a big block of ``shape``: ``cells`` (whole slabs: every axis from the
        first of :meth:`layout` on whole) checked and transformed into their rows of the
        intermediate; returns the rows and the cells' total."""
        big = self._pipeline.big(shape)
        slabs = math.prod(cells.shape[: big.lead])
        rows = np.empty((slabs, big.plane.size))
        slab_cells = cells.reshape(slabs, *cells.shape[big.lead :])
        total = sum(big.forward_slab(slab_cells[number], rows[number]) for number in range(slabs))
        return rows, total

    def pencil(self, values: np.ndarray, shape: tuple[int, ...], tile: slice, rng: np.random.Generator,
               total: int) -> np.ndarray:
        """Pass 2: the noisy pencil tile ``tile`` of a big block of ``shape`` whose counts total
        ``total`` (``values``: every row of the intermediate at the tile's columns), drawn from
        the tile's own stream."""
        out = np.array(values, dtype=np.float64, order="C")
        self._pipeline.big(shape).noisy_pencil(self._pipeline, out, tile, rng, total * self.plan.growth)
        return out

    def inverse(self, rows: np.ndarray, shape: tuple[int, ...], extent: tuple[int, ...]) -> np.ndarray:
        """Pass 3: the values of whole slabs (of ``extent``) of a big block of ``shape`` from
        their rows of the noisy intermediate."""
        big = self._pipeline.big(shape)
        out = np.empty(extent)
        slabs = out.reshape(-1, *extent[big.lead :])
        for number in range(slabs.shape[0]):
            big.inverse_slab(np.ascontiguousarray(rows[number], dtype=np.float64), slabs[number])
        return out


def peak_bytes(plan: TransformPlan, threads: int) -> int:
    """About the most memory a release with ``plan`` holds at once besides M itself (bytes)."""
    return _peak_bytes(plan, list(_blocks(plan.shape, plan.identity_axes, _BLOCK_CELLS)), threads)


def _peak_bytes(plan: TransformPlan, blocks: list[tuple[slice, ...]], threads: int, *, output: bool = True) -> int:
    """About the most memory a release holds at once besides M itself (bytes).

    The noisy output (unless it is written into M: not ``output``), and per running small
    block about three times its coefficients (its padded copy or its nominal leaf-sums, its plane,
    a tile's buffers).
    A big block: its intermediate (freed behind pass 3 as the output fills, or, for the only
    block of a release, the output's own memory), and per thread a slab's buffers and a pencil
    tile's. Each running thread also holds a sampler's round of draws.
    """
    shape = plan.shape
    largest = max((_extent(index, shape) for index in blocks), key=math.prod)
    three_passes = _BigBlock.applies(plan, largest, len(blocks))
    cells = math.prod(shape) if output and not (three_passes and len(blocks) == 1) else 0
    if three_passes:
        big = _BigBlock(plan, largest)
        # a pencil tile: its values, their coefficients (and the transform's temporaries),
        # the divisors, the noisy copy and its inverse
        per_thread = 3 * big.plane.size + 6 * big.pencil_cells
        return 8 * (cells + big.rows * big.plane.size + threads * per_thread) + threads * _SAMPLER_BYTES
    running = min(threads, len(blocks))
    coefficients = math.prod(plan.transforms[a].n_coefficients if a in plan.transformed_axes else n
                             for a, n in enumerate(largest))
    return 8 * (cells + running * (3 * coefficients + 4 * _TILE_CELLS)) + running * _SAMPLER_BYTES


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


def _checked_total(cells: np.ndarray) -> int:
    """The total of ``cells`` after checking that they are non-negative integer counts (what
    privacy and exact rounding assume): in one compiled pass where numba is installed."""
    loops = _compiled.block_loops()
    if loops is not None and cells.dtype == np.float64 and cells.flags.c_contiguous:
        total = loops.checked_sum(cells.reshape(-1))
        if 0.0 <= total < EXACT_LIMIT:
            return int(total)
    return _checked_total_by_pieces(cells)  # also says what is wrong


def _checked_padding(cells: np.ndarray, padded: np.ndarray) -> int:
    """:func:`_checked_total` of ``cells``, copied into the first columns of ``padded`` (the
    same shape but longer lines), the rest zero: in one compiled pass where numba is installed."""
    loops = _compiled.block_loops()
    width = cells.shape[-1]
    if loops is not None and cells.dtype == np.float64 and cells.flags.c_contiguous:
        total = loops.checked_padding(cells.reshape(-1, width), padded.reshape(-1, padded.shape[-1]))
        if 0.0 <= total < EXACT_LIMIT:
            return int(total)
    total = _checked_total_by_pieces(cells)
    padded[..., width:] = 0.0
    padded[..., :width] = cells
    return total


def _checked_total_by_pieces(cells: np.ndarray) -> int:
    """:func:`_checked_total` in numpy, a cache-sized piece at a time; raises what is wrong."""
    flat = cells.reshape(-1)
    scratch = np.empty(min(flat.size, _CHECK_CELLS))
    total = 0.0
    for start in range(0, flat.size, _CHECK_CELLS):
        part = flat[start : start + _CHECK_CELLS]
        piece = float(part.sum())
        if not math.isfinite(piece):
            raise PriveletError("the matrix holds NaN or infinite values; a frequency matrix holds counts")
        floors = np.floor(part, out=scratch[: part.size])
        if part.min() < 0 or not np.array_equal(floors, part):
            raise PriveletError(
                "the matrix holds negative or fractional values; Privelet releases a frequency matrix "
                "of non-negative integer counts (count the table with frequency_matrix)"
            )
        total += piece  # integers: exact while below 2**53, and larger totals are refused
    if total >= EXACT_LIMIT:
        raise _too_large(total)
    return int(total)


def _too_large(total: float) -> PriveletError:
    return PriveletError(
        f"the table is too large for exact rounding with these hierarchies ({total:,.0f} rows); "
        "split the table or use hierarchies with smaller fan-outs"
    )


# A tile's numerators: (tile number, flat buffer of the tile's size, scaling or None) -> (flat, shaped).
_TileNumerators = Callable[[int, np.ndarray, "_Scaling | None"], tuple[np.ndarray, np.ndarray]]

# A run of a tile's flat coefficients, the shape to see it with, its divisor and its factor.
_Part = tuple[slice, tuple[int, ...], "np.ndarray | float", "np.ndarray | float"]


class _RowsLevels(NamedTuple):
    """What the Haar rows transforms apply as they write (:meth:`HaarTransform.rows_numerators`
    and ``rows_inverse``): the finer levels' divisors and factors, level by line, and the head's
    divisors, line by place in the head."""

    divisors: np.ndarray
    factors: np.ndarray
    head_divisors: np.ndarray


@dataclass(frozen=True)
class _Scaling:
    """How a tile's coefficients are divided by ``d 2**k`` and multiplied by ``g / W``: for
    each part of the tile's flat layout (a run, seen with ``shape``), a divisor and a factor
    that broadcast over it (a few numbers each, never a table of the tile's size).

    In the Haar rows layout the same numbers are also tables (``rows_levels``), which the rows
    transforms apply as they write: :meth:`divide` then has nothing left to do, and :meth:`scale`
    does the head alone (the rows inverse multiplies only the finer levels' details)."""

    parts: tuple[_Part, ...]
    integral: bool  # every d is 1 and k <= 0: numerators / divisors are integers already
    rows_levels: _RowsLevels | None = None

    def divide(self, flat: np.ndarray) -> None:
        """Grid units of the parts the rows transforms do not divide: each divided, and rounded
        unless :attr:`integral`."""
        for run, shape, divisor, _ in self.parts if self.rows_levels is None else ():
            view = flat[run].reshape(shape)
            np.divide(view, divisor, out=view)
            if not self.integral:
                np.rint(view, out=view)

    def scale(self, flat: np.ndarray) -> None:
        """The parts the rows transforms do not scale (in the rows layout, the head) multiplied by their factors."""
        for run, shape, _, factor in self.parts if self.rows_levels is None else self.parts[:1]:
            view = flat[run].reshape(shape)
            np.multiply(view, factor, out=view)

    def divisors(self, size: int) -> np.ndarray:
        """Every coefficient's divisor (flat): for the rare rounding of huge numerators."""
        out = np.empty(size)
        for run, shape, divisor, _ in self.parts:
            out[run].reshape(shape)[...] = divisor
        return out


class _Plane:
    """The transforms of one block (or slab) of ``shape`` along ``axes``: forward along all
    but the last, then tile by tile along the last (see the module docstring).

    When the last axis is a Haar axis and the innermost one (*rows*), its lines are padded
    to ``2**levels`` and a tile is a range of lines, its coefficients in the level-major
    layout. Otherwise a tile is an index tuple of the plane's array, its coefficients in the
    memory order of the transform's result (the axis first). Without axes (Basic) a tile is
    a run of cells.
    """

    def __init__(self, plan: TransformPlan, shape: tuple[int, ...], axes: tuple[int, ...]):
        self.plan = plan
        self.shape = shape
        self.axes = axes
        transforms = plan.transforms
        self.outer = axes[:-1]
        self.last = axes[-1] if axes else None
        last = self.last
        transform = transforms[last] if last is not None else None
        self.haar = transform if isinstance(transform, HaarTransform) and last == len(shape) - 1 else None
        sizes = [transforms[a].n_coefficients if a in self.outer else n for a, n in enumerate(shape)]
        if self.haar is not None:
            sizes[-1] = self.haar.n_coefficients  # the padded lines
        self.z_shape = tuple(sizes)
        self.tiles: list[tuple[slice, ...]]
        # a nominal axis just before the rows axis: both transforms' numerators in one pass
        first = transforms[axes[0]] if len(axes) == 2 else None
        self.rows_nominal = (first if self.haar is not None and isinstance(first, NominalTransform)
                             and axes[0] == len(shape) - 2 else None)
        if self.haar is not None:
            width = self.haar.n_coefficients
            lines = math.prod(sizes[:-1])
            step = max(1, _TILE_CELLS // width)
            self.tiles = [(slice(r, min(r + step, lines)),) for r in range(0, lines, step)]
            self.tile_sizes = [(t[0].stop - t[0].start) * width for t in self.tiles]
        elif last is not None:
            coefficients = tuple(transforms[last].n_coefficients if a == last else n for a, n in enumerate(sizes))
            self.tiles = list(_tiles(self.z_shape, last, transforms[last].n_coefficients))
            self.tile_sizes = [math.prod(_extent(t, coefficients)) for t in self.tiles]
        else:
            cells = math.prod(shape)
            self.tiles = [(slice(s, min(s + _TILE_CELLS, cells)),) for s in range(0, cells, _TILE_CELLS)]
            self.tile_sizes = [t[0].stop - t[0].start for t in self.tiles]
        self.offsets: list[int] = np.cumsum([0, *self.tile_sizes]).tolist()
        self.size = self.offsets[-1]

    @property
    def names(self) -> str:
        return ", ".join(self.plan.axis_name(a) for a in self.outer)

    @property
    def last_name(self) -> str:
        return self.plan.axis_name(self.last) if self.last is not None else ""

    # -- forward and inverse along the plane's outer axes -----------------------------------------
    def checked_forward(self, cells: np.ndarray) -> tuple[np.ndarray, int]:
        """The plane's array and the total of ``cells``, once they are checked (negative,
        fractional, not finite or too many counts: PriveletError): ``cells`` (padded along a
        rows axis, in the same read as the check) transformed along the outer axes; ``cells``
        themselves when there is nothing to do (never written to then)."""
        transforms = self.plan.transforms
        z = np.asarray(cells, dtype=np.float64)
        if self.haar is not None:
            z = np.empty((*self.shape[:-1], self.haar.n_coefficients))
            total = _checked_padding(cells, z)
        else:
            total = _checked_total(cells)
        for axis in self.outer:
            z = transforms[axis].count_numerators(z, axis)
        return (z if z is cells or z.flags.c_contiguous else np.ascontiguousarray(z)), total

    def checked_leaf_sums(self, cells: np.ndarray) -> tuple[np.ndarray, int] | None:
        """Where one compiled pass forms the tiles' numerators (:meth:`rows_numerators`: a plane
        of a nominal axis and the rows axis, numba installed, float64 counts in one run of
        memory): the nominal axis's leaf-sums and the total of ``cells``, checked as
        :meth:`checked_forward` checks them, in one read. None elsewhere."""
        nominal = self.rows_nominal
        if nominal is None or cells.dtype != np.float64 or not cells.flags.c_contiguous:
            return None
        assert self.haar is not None
        found = nominal.checked_leaf_sums(self._lines(cells), self.haar.n_coefficients)
        if found is None:
            return None
        sums, total = found
        if not 0.0 <= total < EXACT_LIMIT:
            return sums, _checked_total_by_pieces(cells)  # says what is wrong
        return sums, int(total)

    def rows_numerators(self, cells: np.ndarray, sums: np.ndarray, number: int, out: np.ndarray,
                        scaling: _Scaling | None = None) -> np.ndarray:
        """:meth:`tile_numerators` of tile ``number`` into ``out`` (flat, the tile's size) from the
        counts and :meth:`checked_leaf_sums`' ``sums``, in one pass: the padded copy and the
        nominal plane are never made. ``scaling`` as there."""
        assert self.rows_nominal is not None and self.haar is not None
        levels = scaling.rows_levels if scaling is not None else None
        self.rows_nominal.rows_numerators(self._lines(cells), sums, self.haar, self.tiles[number][0].start, out,
                                          None if levels is None else levels.divisors,
                                          None if levels is None else levels.head_divisors,
                                          rint=scaling is not None and not scaling.integral)
        return out

    def checked_tiles(self, cells: np.ndarray) -> tuple[_TileNumerators, np.ndarray | None, int]:
        """``cells`` checked (as :meth:`checked_forward`), and how each tile's numerators are then
        formed: ``numerators(number, out, scaling)`` gives :meth:`tile_numerators`' pair, in one
        pass from the counts where :meth:`checked_leaf_sums` serves the plane; also the plane's
        array the tiles are formed from (None when they come from the counts) and the total."""
        leaf_sums = self.checked_leaf_sums(cells)
        if leaf_sums is None:
            z, total = self.checked_forward(cells)
            return partial(self.tile_numerators, z), z, total
        sums, total = leaf_sums

        def numerators(number: int, out: np.ndarray, scaling: _Scaling | None = None) -> tuple[np.ndarray, np.ndarray]:
            flat = self.rows_numerators(cells, sums, number, out, scaling)
            return flat, flat

        return numerators, None, total

    def _lines(self, cells: np.ndarray) -> np.ndarray:
        """The counts as outer positions, then the nominal axis's leaves, then a line each."""
        assert self.rows_nominal is not None
        return cells.reshape(-1, self.rows_nominal.size, self.shape[-1])

    @property
    def in_place(self) -> bool:
        """Whether the plane's array is its own (padded or transformed), so that the tiles'
        values can go back into it; otherwise they go straight to the output."""
        return self.haar is not None or bool(self.outer)

    def inverse(self, z: np.ndarray, out: np.ndarray) -> None:
        """Undo :meth:`checked_forward` on the plane's own array ``z``, the values into ``out``
        (the last inverse writes them there, less a rows axis's padding, where it can)."""
        transforms = self.plan.transforms
        v = z
        for axis in reversed(self.outer[1:]):
            v = transforms[axis].inverse(v, axis, overwrite_input=True)
        if self.outer and isinstance(transforms[self.outer[0]], NominalTransform):
            transforms[self.outer[0]].inverse(v, self.outer[0], overwrite_input=True, out=out)
            return
        if self.outer:
            v = transforms[self.outer[0]].inverse(v, self.outer[0], overwrite_input=True)
        if self.haar is not None:
            v = v[..., : self.shape[-1]]
        np.copyto(out, v)

    # -- tiles along the last axis ------------------------------------------------------------------
    def tile_numerators(self, z: np.ndarray, number: int, out: np.ndarray,
                        scaling: _Scaling | None = None) -> tuple[np.ndarray, np.ndarray]:
        """The numerators of tile ``number`` of the plane's array: flat (the tile's layout),
        and as the array the inverse takes (the same memory). Written to ``out`` (flat, the
        tile's size) where the layout allows it. With the tile's ``scaling``, the rows layout's
        coefficients come as grid units already (its ``rows_levels``; other layouts stay numerators)."""
        tile = self.tiles[number]
        if self.haar is not None:
            levels = scaling.rows_levels if scaling is not None else None
            self.haar.rows_numerators(z.reshape(-1, self.haar.n_coefficients)[tile], out,
                                      divisors=None if levels is None else levels.divisors,
                                      head_divisors=None if levels is None else levels.head_divisors,
                                      rint=scaling is not None and not scaling.integral)
            return out, out
        if self.last is None:
            np.copyto(out, z.reshape(-1)[tile])
            return out, out
        numerators = self.plan.transforms[self.last].numerators(z[tile], self.last)
        return numerators.ravel(order="K"), numerators  # the flat view is the result's memory order

    def tile_inverse(self, shaped: np.ndarray, number: int, z: np.ndarray, out: np.ndarray,
                     scaling: _Scaling | None = None) -> None:
        """Undo :meth:`tile_numerators` on the noisy ``shaped`` coefficients of tile ``number``:
        the values back into the plane's array ``z`` (:attr:`in_place`) or into ``out``. With the
        tile's ``scaling``, the rows layout's finer levels are scaled here (its ``rows_levels``)."""
        tile = self.tiles[number]
        if self.haar is not None:
            levels = scaling.rows_levels if scaling is not None else None
            self.haar.rows_inverse(shaped, z.reshape(-1, self.haar.n_coefficients)[tile],
                                   factors=None if levels is None else levels.factors)
        elif self.last is None:
            out.reshape(-1)[tile] = shaped
        else:
            target = z if self.in_place else out
            self.plan.transforms[self.last].inverse(shaped, self.last, overwrite_input=True, out=target[tile])

    def grouped_inverse(self, out: np.ndarray, buffer: Callable[[str, int], np.ndarray]
                        ) -> Callable[[np.ndarray, int, _Scaling | None], None] | None:
        """Where the plane is a nominal axis and the rows axis, and the compiled loops run: each
        tile's inverse (``inverse(coefficients, number, scaling)``, in tile order) that takes the
        tile's lines through the Haar inverse and each sibling group through the nominal inverse
        into ``out`` as soon as its lines are there, in a few rows from ``buffer`` (name and
        size) that stay in the L2 cache (:func:`~._compiled._rows_nominal_inverse`) instead of
        the plane's array; after the last tile ``out`` holds the block's values, and
        :meth:`inverse` has nothing left to do. None elsewhere."""
        nominal, haar, slots = self.rows_nominal, self.haar, self._group_slots
        loops = _compiled.haar_rows_loops()
        if nominal is None or haar is None or slots is None or loops is None or not out.flags.c_contiguous:
            return None
        slot, count = slots
        rows = buffer("group rows", count * haar.n_coefficients).reshape(count, 1, haar.n_coefficients)
        group_parent, group_first, group_fanout, leaf_row = nominal.groups_arrays
        leaves = out.reshape(-1, nominal.size, self.shape[-1])
        done = 0

        def inverse(coefficients: np.ndarray, number: int, scaling: _Scaling | None) -> None:
            nonlocal done
            levels = scaling.rows_levels if scaling is not None else None
            done = loops.nominal_inverse(coefficients, self.tiles[number][0].start, rows, slot, leaves, haar.levels,
                                         haar.rows_head_levels, loop_table(None if levels is None else levels.factors),
                                         group_parent, group_first, group_fanout, leaf_row, done)

        return inverse

    @cached_property
    def _group_slots(self) -> tuple[np.ndarray, int] | None:
        """For :meth:`grouped_inverse`: each node's row of its buffer (every internal node its
        own; a leaf the row of its place in its sibling group) and their number; None where the
        nominal inverse does not visit the groups one by one (:meth:`NominalTransform.loops_groups`)
        or there is no group (the root alone)."""
        nominal, haar = self.rows_nominal, self.haar
        if nominal is None or haar is None:
            return None
        lines = math.prod(self.z_shape[:-1])
        group_parent, group_first, group_fanout, leaf_row = nominal.groups_arrays
        if not group_parent.size or not nominal.loops_groups(lines // nominal.n_coefficients * haar.n_coefficients):
            return None
        internal = leaf_row < 0
        internals = int(internal.sum())
        slot = np.cumsum(internal) - 1
        for start, fanout in zip(group_first.tolist(), group_fanout.tolist(), strict=True):
            places = np.arange(start, start + fanout)
            leaves = places[~internal[places]]
            slot[leaves] = internals + leaves - start
        return slot.astype(np.int64), internals + int(group_fanout.max())

    # -- divisors and factors ------------------------------------------------------------------------
    def scaling(self, divisors: list[np.ndarray], factors: list[np.ndarray], number: int, integral: bool) -> _Scaling:
        """Tile ``number``'s :class:`_Scaling` from per-axis ``divisors`` and ``factors`` (each
        shaped to broadcast along its axis of the plane's coefficient array, or 0-d)."""
        size = self.tile_sizes[number]
        tile = self.tiles[number]
        if self.haar is not None:
            lines = tile[0].stop - tile[0].start
            line_divisor, column_divisor = self._line_and_column(divisors, tile)
            line_factor, column_factor = self._line_and_column(factors, tile)
            coarse = self.haar.rows_head_levels
            width = 1 << coarse
            # the head: each line's base and coarse levels (their own weights); then one
            # level per run, one weight each
            divisor_head = _outer_or_number(line_divisor, column_divisor[:width])
            factor_head = _outer_or_number(line_factor, column_factor[:width])
            parts: list[_Part] = [(slice(0, lines * width), (lines, width), divisor_head, factor_head)]
            for level in range(coarse + 1, self.haar.levels + 1):
                half = 1 << (level - 1)
                divisor = _outer_or_number(line_divisor, column_divisor[half : half + 1])
                factor = _outer_or_number(line_factor, column_factor[half : half + 1])
                parts.append((slice(lines * half, 2 * lines * half), (lines, half), divisor, factor))
            # the same numbers, one per level and line (and one per place of each line's head), for
            # the rows transforms
            by_level = _RowsLevels(_per_line([d for _, _, d, _ in parts[1:]], lines),
                                   _per_line([f for _, _, _, f in parts[1:]], lines),
                                   np.ascontiguousarray(np.broadcast_to(divisor_head, (lines, width)), dtype=np.float64))
            return _Scaling(tuple(_merge_numbers(parts)), integral, by_level)
        if self.last is None:  # Basic: numbers
            divisor = float(math.prod(float(v) for v in divisors))
            factor = float(math.prod(float(v) for v in factors))
            return _Scaling(((slice(0, size), (size,), divisor, factor),), integral)
        shape = tuple(self.plan.transforms[self.last].n_coefficients if a == self.last else len(range(n)[part])
                      for a, (part, n) in enumerate(zip(tile, self.z_shape, strict=True)))
        divisor_product = math.prod((_restrict(v, tile) for v in divisors), start=np.ones(()))
        factor_product = math.prod((_restrict(v, tile) for v in factors), start=np.ones(()))
        # the transform's result has its axis first in memory: the flat run seen in that order
        front = (shape[self.last], *(n for a, n in enumerate(shape) if a != self.last))
        order = (self.last, *(a for a in range(len(shape)) if a != self.last))
        return _Scaling(((slice(0, size), front, _front(divisor_product, order), _front(factor_product, order)),), integral)

    def _line_and_column(self, vectors: list[np.ndarray], tile: tuple[slice, ...]) -> tuple[np.ndarray | float, np.ndarray]:
        """Per-axis vectors as the product of a per-line part (one number, or one per line of
        the tile) and a per-column part (in level order), for the rows layout."""
        assert self.haar is not None
        lines = np.arange(tile[0].start, tile[0].stop)
        # each line's index along the other axes (none for a one-axis plane)
        position = np.unravel_index(lines, self.z_shape[:-1]) if len(self.z_shape) > 1 else ()
        per_line: np.ndarray | float = 1.0
        per_column = np.ones(self.haar.n_coefficients)
        last = len(self.shape) - 1
        for vector in vectors:
            if vector.size == 1:
                per_line = per_line * float(vector.reshape(-1)[0])
            elif vector.shape[last] > 1:
                per_column = per_column * vector.reshape(-1)
            else:
                axis = int(np.argmax(vector.shape))
                per_line = per_line * vector.reshape(-1)[position[axis]]
        if isinstance(per_line, np.ndarray) and np.all(per_line == per_line[0]):
            per_line = float(per_line[0])
        return per_line, per_column

    def per_position(self, vectors: list[np.ndarray]) -> np.ndarray:
        """The product of per-axis ``vectors`` at every position of the plane's coefficients
        (flat, tile after tile in their layouts): a big block's plane tables."""
        parts = []
        for number, size in enumerate(self.tile_sizes):
            scaling = self.scaling(vectors, [np.ones(())], number, integral=False)
            parts.append(scaling.divisors(size))
        return np.concatenate(parts)


def _outer_or_number(per_line: np.ndarray | float, per_column: np.ndarray) -> np.ndarray | float:
    """``per_line[r] * per_column[c]`` as a small broadcasting array, or one number."""
    if np.all(per_column == per_column[0]):
        if isinstance(per_line, float):
            return per_line * float(per_column[0])
        return (per_line * float(per_column[0]))[:, None]
    line = per_line[:, None] if isinstance(per_line, np.ndarray) else per_line
    return line * per_column[None, :]


def _per_line(levels: list[np.ndarray | float], lines: int) -> np.ndarray:
    """Each level's number, or column of one number per line, as a row of ``lines`` numbers."""
    table = np.empty((len(levels), lines))
    for row, values in zip(table, levels, strict=True):
        row[...] = np.reshape(values, -1)
    return table


def _merge_numbers(parts: list[_Part]) -> list[_Part]:
    """Join consecutive runs whose divisor and factor are the same numbers: one numpy call each."""
    merged: list[_Part] = []
    for run, shape, divisor, factor in parts:
        if merged and isinstance(divisor, float) and isinstance(factor, float):
            last_run, _, last_divisor, last_factor = merged[-1]
            if isinstance(last_divisor, float) and isinstance(last_factor, float) and (
                    (last_divisor, last_factor) == (divisor, factor)):
                start = last_run.start
                merged[-1] = (slice(start, run.stop), (run.stop - start,), divisor, factor)
                continue
        merged.append((run, shape, divisor, factor))
    return merged


def _front(product: np.ndarray, order: tuple[int, ...]) -> np.ndarray:
    """A broadcasting product seen with the axes in ``order`` (the transform's memory order)."""
    return np.transpose(product, order) if product.ndim else product


class _BlockPipeline:
    """Privelet+ on one block of M (see the module docstring). Thread-safe: its planes and
    tables are built once and shared; each call has its own generator and buffers."""

    def __init__(self, plan: TransformPlan, calibration: NoiseCalibration, sampler: NoiseSampler):
        self.plan = plan
        self.calibration = calibration
        self.sampler = sampler
        self._planes: dict[tuple[tuple[int, ...], tuple[int, ...]], _Plane] = {}
        self._scalings: dict[tuple[tuple[int, ...], int], _Scaling] = {}
        self._bigs: dict[tuple[int, ...], _BigBlock] = {}
        self._integral: dict[tuple[int, ...], bool] = {}
        self._lock = threading.Lock()
        self._buffers = threading.local()  # each thread's block buffers, for the release's blocks

    def plane(self, shape: tuple[int, ...], axes: tuple[int, ...]) -> _Plane:
        plane = self._planes.get((shape, axes))
        if plane is None:
            with self._lock:
                plane = self._planes.setdefault((shape, axes), _Plane(self.plan, shape, axes))
        return plane

    def vectors(self, axes: tuple[int, ...], name: str) -> list[np.ndarray]:
        """Per-axis denominators (``"denominators"``) or ``1 / W`` (``"factors"``, 0 where W is
        infinite: identically zero coefficients get no noise) of ``axes``, shaped to broadcast."""
        ndim = len(self.plan.transforms)
        vectors = []
        for axis in axes:
            transform = self.plan.transforms[axis]
            values = transform.denominators if name == "denominators" else 1.0 / transform.weights
            vectors.append(_along(np.asarray(values, dtype=np.float64), axis, ndim))
        return vectors

    def scaling(self, plane: _Plane, number: int) -> _Scaling:
        """Tile ``number``'s divisors and factors (built once per plane and tile)."""
        key = (plane.shape, number)
        scaling = self._scalings.get(key)
        if scaling is None:
            axes = plane.axes
            divisors = [np.array(2.0**self.calibration.grid_exponent), *self.vectors(axes, "denominators")]
            factors = [np.array(self.calibration.grid), *self.vectors(axes, "factors")]
            scaling = plane.scaling(divisors, factors, number, self.integral(axes))
            with self._lock:
                scaling = self._scalings.setdefault(key, scaling)
        return scaling

    def integral(self, axes: tuple[int, ...]) -> bool:
        """Whether every d of ``axes``' coefficients is 1 and k <= 0: numerators divided by
        ``d 2**k`` are integers already (asked once per tile or pencil: kept)."""
        known = self._integral.get(axes)
        if known is None:
            known = self.calibration.grid_exponent <= 0 and all(
                bool(np.all(self.plan.transforms[a].denominators == 1)) for a in axes)
            self._integral[axes] = known
        return known

    # -- small blocks ----------------------------------------------------------------------------------
    def run(self, cells: np.ndarray, rng: np.random.Generator, out: np.ndarray, progress: Progress | None = None) -> int:
        """Release one small block into ``out``; returns the block's total."""
        plane = self.plane(cells.shape, self.plan.transformed_axes)
        numerators, formed_from, total = plane.checked_tiles(cells)
        grouped = plane.grouped_inverse(out, self.buffer)
        z = formed_from
        if z is None and grouped is None:  # the tiles come from the counts: the plane's array is the inverse's alone
            z = self.buffer("plane", math.prod(plane.z_shape)).reshape(plane.z_shape)
        bound = total * self.plan.growth
        steps = progress or Progress()
        scratch = self.buffer("tile", max(plane.tile_sizes))
        stage = (f"transforming {plane.last_name}, adding noise, inverting" if plane.last is not None else "adding noise")
        count = len(plane.tiles)
        divided = rounds_by_one_division(bound, self.calibration.grid_exponent)
        for number in range(count):
            scaling = self.scaling(plane, number)
            flat, shaped = numerators(number, scratch[: plane.tile_sizes[number]], scaling if divided else None)
            self.noisy(flat, scaling, rng, bound)
            if grouped is not None:
                grouped(shaped, number, scaling)
            else:
                assert z is not None
                plane.tile_inverse(shaped, number, z, out, scaling)
            if count > 1:  # "1 of 1 tiles done" says nothing (and reads like a count of rows)
                steps.report((number + 1) / count, f"{stage}: {number + 1:,} of {count:,} tiles done")
        if plane.in_place and z is not None and grouped is None:
            plane.inverse(z, out)
        return total

    def buffer(self, name: str, size: int) -> np.ndarray:
        """This thread's buffer ``name`` of ``size`` float64 values, kept for its next blocks.

        A new array of 4 MiB or more costs numpy's ``madvise(MADV_HUGEPAGE)``, which waits for
        the process's memory-map lock, held while the output is prefaulted (:func:`prefaulted`):
        two arrays a block took 24 ms a release on two threads and 71 ms on one (Privelet+,
        Brazil shape), against 2 ms for all of them reused."""
        buffers = self._buffers.__dict__
        array: np.ndarray | None = buffers.get(name)
        if array is None or array.size < size:
            array = buffers[name] = np.empty(size)
        return array[:size]

    def noisy(self, flat: np.ndarray, scaling: _Scaling, rng: np.random.Generator, bound: float) -> None:
        """Replace flat numerators z by noisy coefficients ``g (round(z / (d 2**k)) + Z) / W``:
        exact grid units, integer noise summed exactly (float64 or int64 limbs); only the exact
        noisy integer is then converted and scaled (post-processing). In the rows layout the
        coefficients come as grid units already and the finer levels are scaled by the inverse
        (``scaling``'s ``rows_levels``): here the head alone is scaled.

        ``bound`` bounds every ``|z|``: below 2**52 grid units (times ``2**-k``), one
        correctly rounded division and ``rint`` give the nearest integer exactly
        (:func:`~privelet_gui.engine.noise.round_to_grid`'s proof), with no pass to find the largest.
        """
        k = self.calibration.grid_exponent
        units = flat
        if rounds_by_one_division(bound, k):
            scaling.divide(flat)
        else:
            units = round_to_grid(flat, scaling.divisors(flat.size) * 2.0**-k, k)
        self.add_noise(units, flat, rng)
        scaling.scale(flat)

    def add_noise(self, units: np.ndarray, flat: np.ndarray, rng: np.random.Generator) -> None:
        """The noise drawn onto the grid ``units`` of coefficients into ``flat`` (their memory:
        the units' own, or where they were rounded into an array of their own)."""
        noisy = self.sampler.add(units, rng)
        if noisy is not flat:
            flat[...] = noisy

    # -- big blocks --------------------------------------------------------------------------------------
    def is_big(self, shape: tuple[int, ...], blocks: int) -> bool:
        return _BigBlock.applies(self.plan, shape, blocks)

    def big(self, shape: tuple[int, ...]) -> _BigBlock:
        big = self._bigs.get(shape)
        if big is None:
            with self._lock:
                big = self._bigs.setdefault(shape, _BigBlock(self.plan, shape))
        return big

    def run_big(self, cells: np.ndarray, rng: np.random.Generator, out: np.ndarray | None, steps: Progress,
                threads: int) -> tuple[np.ndarray, int]:
        """Release one big block into ``out`` in three passes on ``threads`` threads; returns ``out``
        and the block's total. Without ``out`` (the block is the whole release) the output is made in
        the intermediate's own memory (:class:`_RowsRead`), not in pages of its own."""
        big = self.big(cells.shape)
        plane = big.plane
        rows = output_array((big.rows, plane.size))
        totals = [0] * big.rows

        def forward(number: int) -> None:
            totals[number] = big.forward_slab(cells[big.slab(number)], rows[number])

        stages = big.stages
        _run_parts(forward, big.rows, threads, steps.slice(0.0, 0.3), stages[0], "slab")
        total = sum(totals)
        bound = total * self.plan.growth
        if bound >= EXACT_LIMIT:
            raise _too_large(total)
        pencils = big.pencils
        streams = bits.spawn_lazily(rng, len(pencils))  # each made by the thread that uses it

        in_place = big.pencils_in_place

        def pencil(number: int) -> None:
            tile = pencils[number]
            values = rows[:, tile] if in_place else np.ascontiguousarray(rows[:, tile])
            big.noisy_pencil(self, values, tile, streams[number](), bound)
            if not in_place:
                rows[:, tile] = values

        _run_parts(pencil, len(pencils), threads, steps.slice(0.3, 0.8), stages[1], "tile")
        overlaid = out is None
        flat = rows.reshape(-1)
        output = flat[: cells.size].reshape(cells.shape) if out is None else out
        read = _RowsRead(rows, release=not overlaid)
        slab_cells = math.prod(cells.shape[big.lead :])
        # every transform keeps a coefficient per value at least: slab s's output ends in row s
        assert slab_cells <= plane.size, "a slab's values outnumber its row's coefficients"

        def written_over(number: int) -> None:
            """Slab ``number``'s output covers the end of its own row and rows before it: it
            waits until they have been read."""
            read.done(number)
            read.wait_through(((number + 1) * slab_cells - 1) // plane.size)

        def inverse(number: int) -> None:
            try:
                big.inverse_slab(rows[number], output[big.slab(number)], partial(written_over, number) if overlaid else None)
            finally:  # after an error too: no slab waits for this row for ever
                read.done(number)

        _run_parts(inverse, big.rows, threads, steps.slice(0.8, 1.0), stages[2], "slab")
        if overlaid:
            release_pages(flat[cells.size :])  # the intermediate's memory past the output
        return output, total


class _BigBlock:
    """A big block of ``shape`` in three passes (see the module docstring): pencil axes B (a
    leading run of the transformed axes) and plane axes A (the rest); a slab is one index
    along every axis before the first plane axis, a row of the intermediate holds its plane."""

    def __init__(self, plan: TransformPlan, shape: tuple[int, ...]):
        self.plan = plan
        self.shape = shape
        axes = plan.transformed_axes
        self.pencil_axes = _pencil_axes(plan, shape)
        self.plane_axes = axes[len(self.pencil_axes) :]
        self.lead = self.plane_axes[0]  # the axes before it hold one index per slab
        self.slab_shape = tuple(1 if a < self.lead else n for a, n in enumerate(shape))
        self.rows = math.prod(shape[: self.lead])
        transforms = plan.transforms
        # A pencil: the kept coefficients along B (values along leading S_A axes), then positions.
        self.pencil_extent = tuple(transforms[a].n_kept if a in self.pencil_axes else shape[a] for a in range(self.lead))
        self.plane = _Plane(plan, self.slab_shape, self.plane_axes)
        step = max(1, _PENCIL_CELLS // max(math.prod(self.pencil_extent), 1))
        self.pencils = [slice(p, min(p + step, self.plane.size)) for p in range(0, self.plane.size, step)]
        self.pencil_cells = math.prod(self.pencil_extent) * step

    @property
    def pencils_in_place(self) -> bool:
        """Whether pass 2 reads and writes each pencil where it lies in the intermediate (rows
        of a stride), without gathering it into an array of its own and back: where the first
        pencil axis is a Haar axis and its compiled loops run (they take rows of any stride).
        The copies took 0.12-0.15 of 2.7 s of a release with S_A empty on one thread (Brazil shape)."""
        return isinstance(self.plan.transforms[self.pencil_axes[0]], HaarTransform) and _compiled.block_loops() is not None

    @staticmethod
    def applies(plan: TransformPlan, shape: tuple[int, ...], blocks: int) -> bool:
        """Three passes for the only block of a release or a block of many cells, given two
        transformed axes at least (one for the pencils, one for the plane)."""
        return len(plan.transformed_axes) >= 2 and (blocks == 1 or math.prod(shape) > _SLAB_CELLS)

    @property
    def stages(self) -> tuple[str, str, str]:
        """The three passes as progress names them, each with the axes it works along."""

        def names(axes: Iterable[int]) -> str:
            return ", ".join(self.plan.axis_name(a) for a in axes)

        return (
            f"transform pass 1 of 3, transforming {names(self.plane_axes)}",
            f"transform pass 2 of 3, transforming {names(self.pencil_axes)}, adding noise, inverting",
            f"transform pass 3 of 3, inverting {names(reversed(self.plane_axes))}",
        )

    def slab(self, number: int) -> tuple[int | slice, ...]:
        """The index of slab ``number`` (C order over the leading axes) in the block."""
        lead = tuple(int(i) for i in np.unravel_index(number, self.shape[: self.lead]))
        return (*lead, *(slice(None),) * (len(self.shape) - self.lead))

    # passes 1 and 3, a slab at a time
    def forward_slab(self, cells: np.ndarray, row: np.ndarray) -> int:
        """Check one slab's counts and transform them along A into its ``row``; their total."""
        plane = self.plane
        numerators, _, total = plane.checked_tiles(cells.reshape(self.slab_shape))
        for tile in range(len(plane.tiles)):
            part = row[plane.offsets[tile] : plane.offsets[tile + 1]]
            flat, _ = numerators(tile, part, None)
            if flat is not part:
                part[...] = flat
        return total

    def inverse_slab(self, row: np.ndarray, out: np.ndarray, before_writing: Callable[[], None] | None = None) -> None:
        """Undo :meth:`forward_slab`: the slab's values into ``out`` from its noisy ``row``, which
        is read whole before ``before_writing`` is called and ``out`` written."""
        plane = self.plane
        z = np.empty(plane.z_shape)
        for tile in range(len(plane.tiles)):
            coefficients = row[plane.offsets[tile] : plane.offsets[tile + 1]]
            if plane.haar is not None:
                plane.tile_inverse(coefficients, tile, z, z)
            else:
                shaped = self._shaped(coefficients, tile)
                plane.tile_inverse(shaped, tile, z, z)
        if before_writing is not None:
            before_writing()
        plane.inverse(z, out.reshape(self.slab_shape))

    def _shaped(self, coefficients: np.ndarray, tile: int) -> np.ndarray:
        """Flat coefficients of a general plane's tile as the array its transform's inverse takes."""
        plane = self.plane
        last = plane.last
        assert last is not None
        index = plane.tiles[tile]
        extent = [plane.plan.transforms[last].n_coefficients if a == last else len(range(n)[part])
                  for a, (part, n) in enumerate(zip(index, plane.z_shape, strict=True))]
        front = [extent[last], *(n for a, n in enumerate(extent) if a != last)]
        return np.moveaxis(coefficients.reshape(front), 0, last)

    # pass 2
    def noisy_pencil(self, pipeline: _BlockPipeline, values: np.ndarray, tile: slice, rng: np.random.Generator,
                     bound: float) -> None:
        """Pencil tile ``tile``: ``values`` (every row of the intermediate at the tile's positions:
        C-contiguous, or those rows in place where :attr:`pencils_in_place`) transformed along B,
        noised and inverted, in place."""
        if self._noisy_in_one_pass(pipeline, values, tile, rng, bound):
            return
        transforms = self.plan.transforms
        pencil = values.reshape(*self.shape[: self.lead], tile.stop - tile.start)
        *leading, last = self.pencil_axes
        z = pencil
        for axis in leading:
            z = transforms[axis].kept_numerators(z, axis)
        nominal = self._nominal_last(pipeline)
        divisors_a, factors_a = self._plane_vectors(pipeline)
        in_units = None
        if nominal is not None:  # taken to grid units as they are formed, in the cache
            divisors_rows, _ = self._last_rows_vectors(pipeline)
            in_units = nominal.count_units(z, last, divisors_rows, divisors_a[tile],
                                           _grid_limit(bound, pipeline.calibration.grid_exponent))
        if in_units is not None:
            z = in_units
            units = flat = z.ravel(order="K")
        else:
            z = transforms[last].kept_numerators(z, last)
            # The coefficients in their own memory order (the last pencil axis's transform puts
            # its axis first): flat is a view, and the noise is drawn along it, with no transposing copy.
            flat = z.ravel(order="K")
            if not np.shares_memory(flat, z):  # not one run of memory (the transforms give one)
                z = np.ascontiguousarray(z)
                flat = z.reshape(-1)
            units = self._units(pipeline, z, flat, tile, bound)
        pipeline.add_noise(units, flat, rng)
        inverted = None
        if nominal is not None and leading:  # scaled as it is inverted, in the cache
            _, factors_rows = self._last_rows_vectors(pipeline)
            inverted = nominal.scaled_inverse(z, last, factors_rows, factors_a[tile])
        if inverted is None:
            _, factors_b = self._pencil_vectors(pipeline)
            _scale(z, factors_b, factors_a[tile])
            if leading:
                z = transforms[last].kept_inverse(z, last)
        else:
            z = inverted
        first, *others = self.pencil_axes
        for axis in reversed(others[:-1]):
            z = transforms[axis].kept_inverse(z, axis)
        transforms[first].kept_inverse(z, first, out=pencil)  # the values straight into the pencil

    def _noisy_in_one_pass(self, pipeline: _BlockPipeline, values: np.ndarray, tile: slice, rng: np.random.Generator,
                           bound: float) -> bool:
        """:meth:`noisy_pencil` in two compiled calls, each through both pencil axes at once
        (:func:`~._compiled._pencil_units`, ``_pencil_inverse``: the Haar coefficients never
        written out and read back), the noise drawn between them in the same order: the same bits.
        Where the pencil axes are the block's first two, a Haar axis then a nominal one that
        :meth:`_nominal_last` takes to the grid in its loop, and numpy's nominal inverse visits
        the groups one by one; returns False elsewhere, or where a numerator is too large for
        one division (``values`` then unchanged)."""
        nominal = self._nominal_last(pipeline)
        haar = self.plan.transforms[0]
        if nominal is None or self.pencil_axes != (0, 1) or not isinstance(haar, HaarTransform) or not haar.levels:
            return False
        width = tile.stop - tile.start
        if not nominal.loops_groups(haar.n_kept * width):
            return False
        loops = _compiled.block_loops()
        assert loops is not None, "_nominal_last asks for the compiled loops"
        divisors_rows, factors_rows = self._last_rows_vectors(pipeline)
        divisors_a, factors_a = self._plane_vectors(pipeline)
        limit = _grid_limit(bound, pipeline.calibration.grid_exponent)
        level_counts, counts, starts = haar.kept_loop_tables
        units = np.empty((nominal.n_coefficients, haar.n_kept, width))
        if not loops.pencil_units(values, units, level_counts, nominal.size, *nominal.tree_arrays, divisors_rows,
                                  divisors_a[tile], _compiled.limit_bits(limit)):
            return False
        flat = units.reshape(-1)
        pipeline.add_noise(flat, flat, rng)
        loops.pencil_inverse(units, values, *nominal.groups_arrays, factors_rows, factors_a[tile], counts, starts,
                             nominal.size)
        return True

    def _nominal_last(self, pipeline: _BlockPipeline) -> NominalTransform | None:
        """The last pencil axis's transform where its compiled loops take a pencil to the grid
        and back (:meth:`NominalTransform.count_units` and :meth:`~NominalTransform.scaled_inverse`,
        one pass fewer each way: 5-6% of a release with S_A empty, Brazil shape):
        a nominal axis just before the plane's axes, numba installed, coefficients not all on the
        grid already. None elsewhere."""
        last = self.pencil_axes[-1]
        transform = self.plan.transforms[last]
        if (not isinstance(transform, NominalTransform) or last != self.lead - 1 or _compiled.block_loops() is None
                or pipeline.integral(self.plan.transformed_axes)):
            return None
        return transform

    def _last_rows_vectors(self, pipeline: _BlockPipeline) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`_pencil_vectors` in the order of the rows of the last pencil axis's result
        (its coefficients first, then the B indices before it), flat."""
        cached = self.__dict__.get("_last_rows")
        if cached is None:
            last = self.pencil_axes[-1]
            cached = self.__dict__.setdefault("_last_rows", tuple(
                np.ascontiguousarray(np.moveaxis(vector, last, 0)).reshape(-1) for vector in self._pencil_vectors(pipeline)))
        return cached

    def _units(self, pipeline: _BlockPipeline, z: np.ndarray, flat: np.ndarray, tile: slice, bound: float) -> np.ndarray:
        """A pencil's numerators ``z`` (``flat``: the same memory, in its order) in grid units:
        divided and rounded in place where one division rounds them exactly, else exactly by
        :func:`round_to_grid` (a new array). ``bound`` bounds every pencil's numerators; above
        :func:`one_division_limit` (a whole matrix of counts, S_A empty), the pencil's own largest
        decides, found in the same compiled call as the division (most pencils are far below)."""
        k = pipeline.calibration.grid_exponent
        divisors_b, _ = self._pencil_vectors(pipeline)
        divisors_a, _ = self._plane_vectors(pipeline)
        limit = _grid_limit(bound, k)
        integral = pipeline.integral(self.plan.transformed_axes)
        if integral:
            if limit is None or largest_magnitude(flat) < limit:
                np.divide(z, 2.0**k, out=z)
                return flat
        elif _grid_units(z, divisors_b, divisors_a[tile], limit):
            return flat
        every = np.empty_like(z)  # z's memory order, so that its flat view matches ``flat``
        every[...] = 2.0**k if integral else divisors_b[..., None] * divisors_a[tile]
        return round_to_grid(flat, every.ravel(order="K") * 2.0**-k, k)

    def _pencil_vectors(self, pipeline: _BlockPipeline) -> tuple[np.ndarray, np.ndarray]:
        """The pencil axes' divisors ``d 2**k`` and factors ``g / W`` over a pencil's B extent."""
        cached = self.__dict__.get("_pencil")
        if cached is None:
            lead = self.lead
            divisors = np.full(self.pencil_extent, 2.0**pipeline.calibration.grid_exponent)
            factors = np.full(self.pencil_extent, pipeline.calibration.grid)
            for axis in self.pencil_axes:
                t = self.plan.transforms[axis]
                divisors = divisors * _along(np.asarray(t.denominators, dtype=np.float64)[t.kept], axis, lead)
                factors = factors * _along(1.0 / np.asarray(t.weights, dtype=np.float64)[t.kept], axis, lead)
            cached = self.__dict__.setdefault("_pencil", (divisors, factors))
        return cached

    def _plane_vectors(self, pipeline: _BlockPipeline) -> tuple[np.ndarray, np.ndarray]:
        """The plane axes' denominators and ``1 / W`` at every position of a row (flat)."""
        cached = self.__dict__.get("_plane")
        if cached is None:
            plane = self.plane
            vectors = pipeline.vectors(self.plane_axes, "denominators"), pipeline.vectors(self.plane_axes, "factors")
            cached = self.__dict__.setdefault("_plane", (plane.per_position(vectors[0]), plane.per_position(vectors[1])))
        return cached


def _grid_limit(bound: float, grid_exponent: int) -> float | None:
    """What a pencil's numerators must stay below for one division to round them exactly: None
    where ``bound`` (on every pencil's) says they do."""
    return None if rounds_by_one_division(bound, grid_exponent) else one_division_limit(grid_exponent)


def _grid_units(z: np.ndarray, divisors_b: np.ndarray, divisors_a: np.ndarray, limit: float | None) -> bool:
    """A pencil's numerators ``z`` (B axes, then positions) divided by ``divisors_b[..., None]
    * divisors_a`` (one exact product per coefficient: small integers times 2**k, so one
    rounding) and rounded to the nearest integer, in place, if every ``|z|`` is below ``limit``
    (None: known to be); returns whether it did (else ``z`` is left as it was). One compiled
    call where numba is installed (a pass to check, one to divide), the same bits as numpy's
    passes."""
    loops = _compiled.grid_loops()
    rows = _pencil_rows(z, divisors_b) if loops is not None else None
    if loops is None or rows is None:
        if limit is not None and not largest_magnitude(z) < limit:
            return False
        np.divide(z, divisors_b[..., None] * divisors_a, out=z)
        np.rint(z, out=z)
        return True
    pencil, per_b = rows
    return bool(loops.units(pencil, pencil.view(np.uint64), per_b, divisors_a, _compiled.limit_bits(limit)))


def _scale(z: np.ndarray, factors_b: np.ndarray, factors_a: np.ndarray) -> None:
    """A pencil's noisy units ``z`` multiplied by ``factors_b[..., None]``, then by ``factors_a``
    (two roundings, in that order), in place: one compiled pass where numba is installed."""
    loops = _compiled.grid_loops()
    rows = _pencil_rows(z, factors_b) if loops is not None else None
    if loops is None or rows is None:
        z *= factors_b[..., None]
        z *= factors_a
    else:
        loops.scale(*rows, factors_a)


def _pencil_rows(z: np.ndarray, per_b: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """``z`` as rows of positions in its memory order (the B axes' transforms leave them
    permuted), and ``per_b`` (a number per B index) in the same order; None where ``z`` is
    not one C-ordered run of memory with the positions innermost."""
    order = sorted(range(z.ndim), key=lambda axis: -z.strides[axis])  # outermost first
    view = z.transpose(order)
    if order[-1] != z.ndim - 1 or not view.flags.c_contiguous or z.dtype != np.float64:
        return None
    return view.reshape(-1, z.shape[-1]), np.ascontiguousarray(per_b.transpose(order[:-1]), dtype=np.float64).reshape(-1)


class _RowsRead:
    """Pass 3's account of the rows of an intermediate read so far (rows are taken in order, a
    few at a time). Where the output has memory of its own (``release``), the rows' memory is
    given back as soon as they and every row before them have been read. Where the output lies
    over the intermediate's own memory (slab s's values on rows up to s: a slab's values are
    fewer than its row's coefficients), a slab waits to write its values until the rows under
    them have been read: those rows were taken before it, and reading waits for nothing."""

    def __init__(self, rows: np.ndarray, *, release: bool):
        self.rows = rows
        self.release = release
        self.finished: set[int] = set()
        self.next = 0  # every row before it has been read
        self.changed = threading.Condition()

    def done(self, number: int) -> None:
        """Row ``number`` has been read (again: no change)."""
        with self.changed:
            if number < self.next:
                return
            self.finished.add(number)
            start = self.next
            while self.next in self.finished:
                self.finished.discard(self.next)
                self.next += 1
            if self.next > start:
                if self.release:
                    release_pages(self.rows[start : self.next])
                self.changed.notify_all()

    def wait_through(self, last: int) -> None:
        """Return once rows 0 to ``last`` have all been read."""
        with self.changed:
            self.changed.wait_for(lambda: self.next > last)


def _pencil_axes(plan: TransformPlan, shape: tuple[int, ...]) -> tuple[int, ...]:
    """The pencil axes B of a big block: the leading run of its transformed axes, of those
    whose kept coefficients number at most ``_PENCIL_AXES_CELLS`` (at least one axis), whose
    intermediate (rows times the plane's coefficients) is the smallest."""
    axes = plan.transformed_axes
    transforms = plan.transforms
    best: tuple[int, ...] = axes[:1]
    best_size = math.inf
    for k in range(1, len(axes)):
        pencil = axes[:k]
        if k > 1 and math.prod(transforms[a].n_kept for a in pencil) > _PENCIL_AXES_CELLS:
            break
        lead = axes[k]
        plane = _Plane(plan, tuple(1 if a < lead else n for a, n in enumerate(shape)), axes[k:])
        size = math.prod(shape[:lead]) * plane.size
        if size < best_size:
            best, best_size = pencil, size
    return best


def worker_count(workers: int | None) -> int:
    if workers is None:
        return max(1, min(usable_cores(), 8))
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise PriveletError(f"workers must be a positive integer, got {workers!r}")
    return workers


def _run_parts(fill: Callable[[int], None], count: int, workers: int, steps: Progress, stage: str, part: str) -> None:
    """Run ``fill(0..count-1)`` (``part``: blocks, slabs or tiles) on ``workers`` threads,
    reporting progress and honouring cancel in order.

    Each report says how many parts of ``stage`` (which names its pass of the transform) are
    done, "...: 11 of 11 slabs done": it is shown beside the progress of the whole release,
    where "slab 11 of 11" at 52% read as a contradiction.
    """

    def label(done: int) -> str:
        return f"{stage}: {done:,} of {count:,} {part}{'s' if count != 1 else ''} done"

    if workers == 1 or count == 1:
        for number in range(count):
            fill(number)
            steps.report((number + 1) / count, label(number + 1))
        return
    pool = kept_pool(workers)
    window: deque[Future[None]] = deque()
    submitted = 0
    try:
        for number in range(count):
            while submitted < count and len(window) < 2 * workers:
                window.append(pool.submit(fill, submitted))
                submitted += 1
            window.popleft().result()
            steps.report((number + 1) / count, label(number + 1))
    finally:  # on error or cancel (a no-op once every part is done)
        settle(window)


def _along(vector: np.ndarray, axis: int, ndim: int) -> np.ndarray:
    shape = [1] * ndim
    shape[axis] = -1
    return np.reshape(vector, shape)


def _extent(index: tuple[slice, ...], shape: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(len(range(n)[part]) for part, n in zip(index, shape, strict=False))


def _restrict(vector: np.ndarray, index: tuple[slice, ...]) -> np.ndarray:
    """The part of a broadcastable per-axis vector that applies to the tile ``index``
    (a 0-d array applies whole)."""
    return vector[tuple(part if length > 1 else slice(None) for part, length in zip(index, vector.shape, strict=False))]


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
