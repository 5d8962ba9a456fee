"""The chunk layout of a release and the sums of partition counts (plain numpy, no cluster)."""

from __future__ import annotations

import itertools
import math

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from privelet_gui.distributed.counting import _Codes, _dense, _merge
from privelet_gui.distributed.layout import grid, release_layout
from privelet_gui.engine import (
    Hierarchy,
    NominalAttribute,
    OrdinalAttribute,
    ReleasePipeline,
    ReleaseSpec,
    Schema,
    Sizing,
)


def _schema(sizes: list[int]) -> Schema:
    attributes = []
    for axis, size in enumerate(sizes):
        if axis % 2:
            attributes.append(NominalAttribute(f"n{axis}", Hierarchy.flat([f"v{i}" for i in range(size)])))
        else:
            attributes.append(OrdinalAttribute.integer_range(f"o{axis}", 0, size - 1))
    return Schema(attributes)


@given(st.lists(st.integers(1, 10), min_size=1, max_size=4), st.data(), st.integers(1, 2000), st.integers(1, 300))
def test_chunks_are_groups_of_whole_blocks(sizes: list[int], data: st.DataObject, cells: int, target: int) -> None:
    """The pipeline's blocks (cut here to ``target`` cells instead of half a million, for
    many of them) grouped into chunks: each block in one chunk, in its place."""
    schema = _schema(sizes)
    sa = tuple(name for name in schema.names if data.draw(st.booleans()))
    spec = ReleaseSpec(schema, 1.0, sa=sa)
    blocks = ReleasePipeline(spec.plan, spec.calibration(1), spec.sampler, Sizing(block_cells=target)).blocks()
    layout = grid(schema.shape, blocks, cells)
    assert tuple(sum(sizes) for sizes in layout.chunks) == schema.shape
    owner = np.full(schema.shape, -1)
    for position, boxes in layout.by_chunk().items():
        region = layout.region(position)
        for box in boxes:
            number = blocks.index(box.region)
            for axis, (span, local, chunk) in enumerate(zip(box.region, box.local, region, strict=True)):
                assert chunk.start + local.start == span.start and chunk.start + local.stop == span.stop
                assert local.stop <= chunk.stop - chunk.start, axis  # inside its chunk
            assert (owner[box.region] == -1).all()
            owner[box.region] = number
    assert (owner >= 0).all()  # every cell in exactly one block, of exactly one chunk
    numbers = [blocks.index(box.region) for boxes in layout.by_chunk().values() for box in boxes]
    assert sorted(numbers) == list(range(len(blocks)))


def test_release_layouts_of_the_brazil_shape() -> None:
    schema = Schema([
        OrdinalAttribute.integer_range("Age", 0, 100),
        NominalAttribute("Gender", Hierarchy.flat(["Male", "Female"])),
        NominalAttribute("Occupation", Hierarchy.flat([f"o{i}" for i in range(512)])),
        OrdinalAttribute.integer_range("Income", 0, 1000),
    ])
    plus = release_layout(ReleaseSpec(schema, 1.0, sa=("Age", "Gender")))
    assert not plus.big and len(plus.blocks.boxes) == 202  # as the one-machine pipeline cuts it
    assert plus.chunks == ((2,) * 50 + (1,), (2,), (512,), (1001,))  # two ages, both genders: 4 blocks a chunk
    privelet = release_layout(ReleaseSpec(schema, 1.0, "privelet"))
    assert privelet.big and len(privelet.blocks.boxes) == 1
    (big,) = privelet.big_blocks()
    assert big.slabs > 1 and len(big.pencils) > 1
    assert math.prod(max(s) for s in privelet.chunks) <= 1 << 21


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
