"""The chunk layout of a release and the sums of partition counts (plain numpy, no cluster)."""

from __future__ import annotations

import itertools
import math

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from privelet_gui.distributed.counting import _Codes, _dense, _merge
from privelet_gui.distributed.layout import grid, line_chunks, release_layout
from privelet_gui.engine import Hierarchy, NominalAttribute, OrdinalAttribute, ReleaseSpec, Schema
from privelet_gui.engine.pipeline import _blocks, is_tiled, tile_indices


def _schema(sizes: list[int]) -> Schema:
    attributes = []
    for axis, size in enumerate(sizes):
        if axis % 2:
            attributes.append(NominalAttribute(f"n{axis}", Hierarchy.flat([f"v{i}" for i in range(size)])))
        else:
            attributes.append(OrdinalAttribute.integer_range(f"o{axis}", 0, size - 1))
    return Schema(attributes)


@given(st.lists(st.integers(1, 10), min_size=1, max_size=4), st.data(), st.integers(1, 2000), st.integers(1, 300))
def test_chunks_are_groups_of_whole_blocks_with_their_stream_numbers(
    sizes: list[int], data: st.DataObject, cells: int, target: int
) -> None:
    """The pipeline's blocks (cut here to ``target`` cells instead of half a million, for
    many of them) grouped into chunks: each block in one chunk, with its own number."""
    schema = _schema(sizes)
    sa = tuple(name for name in schema.names if data.draw(st.booleans()))
    plan = ReleaseSpec(schema, 1.0, sa=sa).plan
    blocks = list(_blocks(plan.shape, plan.identity_axes, target))
    layout = grid(schema.shape, blocks, cells)
    assert tuple(sum(sizes) for sizes in layout.chunks) == schema.shape
    owner = np.full(schema.shape, -1)
    for position, boxes in layout.by_chunk().items():
        region = layout.region(position)
        for box in boxes:
            block = [range(n)[part] for part, n in zip(blocks[box.number], schema.shape, strict=True)]
            for axis, (span, local, chunk) in enumerate(zip(block, box.local, region, strict=True)):
                assert chunk.start + local.start == span.start and chunk.start + local.stop == span.stop
                assert local.stop <= chunk.stop - chunk.start, axis  # inside its chunk
            assert (owner[blocks[box.number]] == -1).all()
            owner[blocks[box.number]] = box.number
    assert (owner >= 0).all()  # every cell in exactly one block, of exactly one chunk
    numbers = [box.number for boxes in layout.by_chunk().values() for box in boxes]
    assert sorted(numbers) == list(range(len(blocks)))


def test_release_layouts_of_the_brazil_shape() -> None:
    schema = Schema([
        OrdinalAttribute.integer_range("Age", 0, 100),
        NominalAttribute("Gender", Hierarchy.flat(["Male", "Female"])),
        NominalAttribute("Occupation", Hierarchy.flat([f"o{i}" for i in range(512)])),
        OrdinalAttribute.integer_range("Income", 0, 1000),
    ])
    plus = release_layout(ReleaseSpec(schema, 1.0, sa=("Age", "Gender")).plan)
    assert not plus.tiled and len(plus.blocks.boxes) == 202  # as the one-machine pipeline cuts it
    assert plus.chunks == ((2,) * 50 + (1,), (2,), (512,), (1001,))  # two ages, both genders: 4 blocks a chunk
    privelet = release_layout(ReleaseSpec(schema, 1.0, "privelet").plan)
    assert privelet.tiled and len(privelet.blocks.boxes) == 1
    assert is_tiled(privelet.plan, schema.shape) and len(tile_indices(privelet.plan, schema.shape)) > 1
    assert math.prod(max(s) for s in privelet.chunks) <= 1 << 21


def test_line_chunks_hold_whole_lines() -> None:
    chunks = line_chunks((101, 2, 512, 1001), 2, 1 << 20)
    assert chunks[2] == (512,)
    assert math.prod(max(s) for s in chunks) <= 1 << 20


@given(
    st.lists(st.integers(1, 6), min_size=1, max_size=3),
    st.lists(st.integers(0, 10_000), min_size=0, max_size=300),
    st.integers(1, 4),
    st.data(),
)
def test_pieces_of_partitions_sum_to_the_counts(
    sizes: list[int], seeds: list[int], partitions: int, data: st.DataObject
) -> None:
    """Counts cut along any chunks, sparse or dense, summed in any grouping, equal bincount."""
    shape = tuple(sizes)
    cells = math.prod(shape)
    codes = np.array([seed % cells for seed in seeds], dtype=np.int64)
    chunks = tuple(_cuts(data.draw(st.sets(st.integers(1, n - 1), max_size=n - 1)) if n > 1 else set(), n) for n in shape)
    split = np.array_split(codes, partitions)
    pieces = []
    for part in split:
        counter = _Codes(cells)
        if data.draw(st.booleans()):  # the sparse path, as for a matrix too big to count densely
            counter.dense = None
        counter.add(part)
        pieces.append(counter.pieces(shape, chunks))
    expected = np.bincount(codes, minlength=cells).astype(np.float64).reshape(shape)
    for position in np.ndindex(*(len(c) for c in chunks)):
        region = tuple(slice(sum(c[:i]), sum(c[: i + 1])) for i, c in zip(position, chunks, strict=True))
        extent = tuple(s.stop - s.start for s in region)
        merged = _merge(*(p[position] for p in pieces), cells=math.prod(extent))
        assert np.array_equal(_dense(merged, extent), expected[region])


def _cuts(points: set[int], n: int) -> tuple[int, ...]:
    """Chunk sizes along an axis of ``n`` cut at ``points``."""
    edges = [0, *sorted(points), n]
    return tuple(b - a for a, b in itertools.pairwise(edges))
