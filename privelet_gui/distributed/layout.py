"""How a release's matrix is cut into the chunks that cluster tasks work on.

A measurement's noise depends on its global position and the release's key alone
(:mod:`privelet_gui.engine.pipeline`), so any cut gives the one-machine release, cell for cell.
The cuts here follow the engine's block API: chunks of whole S_A blocks
(:meth:`~privelet_gui.engine.pipeline.ReleasePipeline.blocks`), or, for big blocks, chunks of whole
slabs (their three passes: :class:`~privelet_gui.engine.pipeline.BigBlock`). Everything here is
plain numpy (no dask).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from ..engine import MARGINALS, BigBlock, InternalError, PriveletError, ReleasePipeline, ReleaseSpec
from ..io.zarr_releases import regular_chunks

__all__ = ["TASK_CELLS", "Box", "Grid", "ReleaseLayout", "release_layout", "slab_chunks"]

#: Cells a task works on at once (16 MiB of float64): a task then needs about four times
#: that, comfortably within a worker's memory (a few hundred MB at the least).
TASK_CELLS = 1 << 21

Index = tuple[slice, ...]
Chunks = tuple[tuple[int, ...], ...]


@dataclass(frozen=True)
class Box:
    """One block inside the chunk that holds it: where it sits in the chunk, and where in M."""

    local: Index
    region: Index


@dataclass(frozen=True)
class Grid:
    """Boxes that cut ``shape`` into a grid, grouped into chunks (``chunks`` in dask's form: the
    chunk sizes along each axis); :meth:`by_chunk` says which boxes each chunk holds."""

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
        """The boxes of every chunk (by chunk position)."""
        out: dict[tuple[int, ...], list[Box]] = {position: [] for position in self.positions}
        for position, box in self.boxes:
            out[position].append(box)
        return out


def grid(shape: tuple[int, ...], boxes: list[Index], cells: int) -> Grid:
    """Group ``boxes`` (a grid cutting ``shape``) into chunks of about ``cells`` cells: whole
    boxes, joined along the innermost cut axis first."""
    starts = [sorted({index[axis].start for index in boxes}) for axis in range(len(shape))]
    if math.prod(len(s) for s in starts) != len(boxes):
        raise InternalError("the blocks of this release do not form a grid")
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
    for index in boxes:
        position, local = [], []
        for axis, part in enumerate(index):
            chunk = int(np.searchsorted(chunk_starts[axis], part.start, side="right")) - 1
            offset = int(chunk_starts[axis][chunk])
            position.append(chunk)
            local.append(slice(part.start - offset, part.stop - offset))
        placed.append((tuple(position), Box(tuple(local), index)))
    return Grid(tuple(shape), tuple(tuple(sizes) for sizes in chunk_sizes), tuple(placed))


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
    """The chunks of a release of ``spec`` (see the module docstring).

    ``big`` says whether its blocks go through the three passes (S_A empty, or blocks of
    millions of cells); :attr:`chunks` is how the counted matrix should be chunked for it.
    """

    spec: ReleaseSpec
    blocks: Grid
    big: bool
    cells: int

    @cached_property
    def pipeline(self) -> ReleasePipeline:
        return ReleasePipeline(self.spec.plan, self.spec.calibration(1), self.spec.sampler)

    def big_blocks(self) -> list[BigBlock]:
        """Every big block, in the order of :attr:`blocks`."""
        return [self.pipeline.big_block(box.region) for _, box in self.blocks.boxes]

    @property
    def chunks(self) -> Chunks:
        if not self.big:
            return self.blocks.chunks
        # Chunks that never straddle two big blocks, each of whole slabs (passes 1 and 3).
        block = self.big_blocks()[0]
        inner = slab_chunks(block.shape, block.split, self.cells)
        return tuple(
            tuple(piece for _ in range(len(block_sizes)) for piece in pieces)
            for block_sizes, pieces in zip(self.blocks.chunks, inner, strict=True)
        )

    @property
    def task_bytes(self) -> int:
        """About the most memory one task of this release holds (bytes): its chunk of M and of the
        output, and its block's or pass's working copies (four times its measurements)."""
        chunk_cells = math.prod(max(sizes) for sizes in self.chunks)
        if self.big:  # a pass holds its chunk, its result and a transform's workspace
            return 8 * 4 * chunk_cells
        region = self.blocks.boxes[0][1].region  # the first block is one of the largest
        measured = math.prod(
            part.stop - part.start if s.separable else s.n_measurements
            for part, s in zip(region, self.spec.plan.strategies, strict=True)
        )
        return 8 * (2 * chunk_cells + 4 * measured)


def release_layout(spec: ReleaseSpec, cells: int = TASK_CELLS) -> ReleaseLayout:
    """The layout of a release of ``spec`` whose tasks work on about ``cells`` cells; a
    PriveletError for weighted marginals, which a cluster does not release."""
    if spec.mechanism == MARGINALS:
        # Marginals are measured over the whole matrix at once (no per-axis blocks to spread), and
        # their release is small and fast: one machine makes it.
        raise PriveletError(
            "a release of weighted marginals is not made on a Dask cluster: release the table on one machine "
            "(without --dask); the marginals are small and fast to release")
    pipeline = ReleasePipeline(spec.plan, spec.calibration(1), spec.sampler)
    blocks = pipeline.blocks()
    # Big blocks are whole along the transformed axes and one value along each S_A axis, so they
    # all have one shape: chunks of whole blocks are one block each.
    big = pipeline.is_big(blocks[0])
    return ReleaseLayout(spec, grid(spec.schema.shape, blocks, 1 if big else cells), big, cells)
