"""How a release's matrix is cut into the chunks that cluster tasks work on.

The one-machine pipeline cuts M into S_A blocks and gives each its own noise stream,
spawned in block order (:func:`~privelet_gui.engine.pipeline.block_indices`); a block
bigger than one slab cuts its last transformed axis's work into tiles, each with a stream
spawned from the block's (:func:`~privelet_gui.engine.pipeline.tile_indices`). A chunk here
is a group of whole blocks, or of whole tiles, so that a task draws exactly the noise the
one-machine release draws there: the release depends on the seed only, never on the number
of workers or on which worker ran what. Everything here is plain numpy (no dask).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..engine.errors import PriveletError
from ..engine.hn import TransformPlan
from ..engine.pipeline import block_indices, is_tiled, slab_layout
from ..io.zarr_releases import regular_chunks

__all__ = ["TASK_CELLS", "Box", "Grid", "ReleaseLayout", "line_chunks", "release_layout", "slab_chunks"]

#: Cells a task works on at once (16 MiB of float64): a task then needs about four times
#: that, comfortably within a worker's memory (a few hundred MB at the least).
TASK_CELLS = 1 << 21
# The block pipeline's buffers for the tiles of its last transformed axis (8 MiB).
_TILE_BUFFER_BYTES = 8 << 20

Index = tuple[slice, ...]
Chunks = tuple[tuple[int, ...], ...]


@dataclass(frozen=True)
class Box:
    """One block (or tile) inside the chunk that holds it: its number (which noise stream),
    where it sits in the chunk, and its index in the whole array as the pipeline gives it
    (``slice(None)`` along an axis it does not cut)."""

    number: int
    local: Index
    index: Index
    region: Index  # the same index with explicit starts and stops


@dataclass(frozen=True)
class Grid:
    """Boxes that cut ``shape`` into a grid, grouped into chunks of about ``cells`` cells.

    ``chunks`` is in dask's form (the chunk sizes along each axis); :meth:`by_chunk` says
    which boxes each chunk holds.
    """

    shape: tuple[int, ...]
    chunks: Chunks
    boxes: tuple[tuple[tuple[int, ...], Box], ...]  # (chunk position, box)

    @property
    def positions(self) -> list[tuple[int, ...]]:
        """Every chunk's position in the chunk grid, in C order."""
        return list(np.ndindex(*(len(sizes) for sizes in self.chunks)))

    def region(self, position: tuple[int, ...]) -> Index:
        """Where the chunk at ``position`` sits in the array."""
        return tuple(
            slice(sum(sizes[:i]), sum(sizes[: i + 1])) for i, sizes in zip(position, self.chunks, strict=True)
        )

    def by_chunk(self) -> dict[tuple[int, ...], list[Box]]:
        """The boxes of every chunk (by chunk position), in the order of their numbers."""
        out: dict[tuple[int, ...], list[Box]] = {position: [] for position in self.positions}
        for position, box in self.boxes:
            out[position].append(box)
        return out


def grid(shape: tuple[int, ...], boxes: list[Index], cells: int) -> Grid:
    """Group ``boxes`` (a grid cutting ``shape``, numbered in list order) into chunks of
    about ``cells`` cells: whole boxes, joined along the innermost cut axis first."""
    starts = [sorted({range(n)[index[axis]].start for index in boxes}) for axis, n in enumerate(shape)]
    if math.prod(len(s) for s in starts) != len(boxes):
        raise PriveletError("internal error: the blocks of this release do not form a grid")  # never expected
    box_sizes = [
        [stop - start for start, stop in zip(s, [*s[1:], n], strict=True)] for s, n in zip(starts, shape, strict=True)
    ]
    chunk_sizes = [list(sizes) for sizes in box_sizes]
    chunk_cells = math.prod(max(sizes) for sizes in box_sizes)
    for axis in reversed(range(len(shape))):
        count = len(box_sizes[axis])
        if count == 1:
            continue
        group = max(1, min(count, cells // max(chunk_cells, 1)))
        chunk_sizes[axis] = [sum(box_sizes[axis][i : i + group]) for i in range(0, count, group)]
        chunk_cells *= group
        if group < count:
            break
    chunk_starts = [np.cumsum([0, *sizes[:-1]]) for sizes in chunk_sizes]
    placed = []
    for number, index in enumerate(boxes):
        position, local = [], []
        for axis, part in enumerate(index):
            span = range(shape[axis])[part]
            chunk = int(np.searchsorted(chunk_starts[axis], span.start, side="right")) - 1
            offset = int(chunk_starts[axis][chunk])
            position.append(chunk)
            local.append(slice(span.start - offset, span.stop - offset))
        region = tuple(slice(range(n)[part].start, range(n)[part].stop) for part, n in zip(index, shape, strict=True))
        placed.append((tuple(position), Box(number, tuple(local), index, region)))
    return Grid(tuple(shape), tuple(tuple(sizes) for sizes in chunk_sizes), tuple(placed))


def line_chunks(shape: tuple[int, ...], axis: int, cells: int) -> Chunks:
    """Chunks holding whole lines along ``axis`` (about ``cells`` cells each, cut along the
    other axes, outermost first): what a pass along ``axis`` needs.

    >>> line_chunks((4, 6, 10), 1, 120)
    ((2, 2), (6,), (10,))
    """
    others = [a for a in range(len(shape)) if a != axis]
    steps = dict(zip(others, regular_chunks(tuple(shape[a] for a in others), max(1, cells // max(shape[axis], 1))), strict=True))
    return tuple(
        (n,) if a == axis or n == 0 else tuple(min(steps[a], n - start) for start in range(0, n, steps[a]))
        for a, n in enumerate(shape)
    )


def slab_chunks(extent: tuple[int, ...], lead: int, cells: int) -> Chunks:
    """Chunks of a big block of ``extent`` holding whole slabs (every axis from ``lead`` on
    whole), about ``cells`` cells each (one slab at least), cut along the leading axes.

    >>> slab_chunks((4, 6, 10), 2, 120)
    ((2, 2), (6,), (10,))
    """
    slab = math.prod(extent[lead:])
    steps = regular_chunks(extent[:lead], max(1, cells // max(slab, 1))) if lead else ()
    return tuple(
        (n,) if a >= lead or n == 0 else tuple(min(steps[a], n - start) for start in range(0, n, steps[a]))
        for a, n in enumerate(extent)
    )


@dataclass(frozen=True)
class ReleaseLayout:
    """The chunks of a release with ``plan``.

    ``tiled`` is false when every S_A block fits in one task: the release is then one task
    per chunk of :attr:`blocks` (whole blocks). It is true when the blocks are bigger than
    one slab (S_A empty, or blocks of tens of millions of cells): each block then goes
    through axis passes whose noise is drawn tile by tile (:mod:`privelet_gui.distributed.release`).
    :attr:`chunks` is how the counted matrix should be chunked for it.
    """

    plan: TransformPlan
    blocks: Grid
    tiled: bool
    cells: int

    @property
    def chunks(self) -> Chunks:
        if not self.tiled:
            return self.blocks.chunks
        # Big blocks are released one by one: chunks that never straddle two of them, each of
        # whole slabs (the pipeline's passes 1 and 3).
        first = self.blocks.boxes[0][1].region
        extent = tuple(part.stop - part.start for part in first)
        inner = slab_chunks(extent, slab_layout(self.plan, extent)[0], self.cells)
        return tuple(
            tuple(piece for _ in range(len(block_sizes)) for piece in pieces)
            for block_sizes, pieces in zip(self.blocks.chunks, inner, strict=True)
        )

    @property
    def task_bytes(self) -> int:
        """About the most memory one task of this release holds (bytes): its chunk of M and
        of the output and, per block it releases, the block's coefficients twice over (the
        block pipeline's forward and inverse buffers), plus the pipeline's tile buffers."""
        chunk_cells = math.prod(max(sizes) for sizes in self.chunks)
        if self.tiled:  # a pass holds its chunk, its result and a transform's workspace
            return 8 * 4 * chunk_cells
        outer_axes = self.plan.transformed_axes[:-1]
        block = self.blocks.boxes[0][1].region  # the first block is one of the largest
        coefficients = math.prod(
            self.plan.transforms[a].n_coefficients if a in outer_axes else part.stop - part.start
            for a, part in enumerate(block)
        )
        return 8 * (2 * chunk_cells + 2 * coefficients) + _TILE_BUFFER_BYTES


def release_layout(plan: TransformPlan, cells: int = TASK_CELLS) -> ReleaseLayout:
    """The layout of a release with ``plan`` whose tasks work on about ``cells`` cells."""
    shape = plan.shape
    blocks = block_indices(plan)
    tiled = any(is_tiled(plan, tuple(len(range(n)[part]) for part, n in zip(index, shape, strict=True))) for index in blocks)
    # Blocks of a tiled release all have one shape (each is one index along every S_A axis,
    # or the whole matrix), so chunks of whole blocks are one block each.
    return ReleaseLayout(plan, grid(shape, blocks, 1 if tiled else cells), tiled, cells)
