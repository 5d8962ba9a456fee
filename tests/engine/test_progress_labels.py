"""The release's stage labels say how many parts of which pass are done, so that they agree
with the percentage of the whole release shown beside them."""

from __future__ import annotations

import re

import numpy as np

from privelet_gui.engine import (
    Hierarchy,
    NominalAttribute,
    OrdinalAttribute,
    ReleaseSpec,
    Schema,
    Sizing,
    privelet_plus,
)

JOBS = Hierarchy.from_nested({"*": {"T": ["t1", "t2", "t3"], "O": {"O1": ["o1"]}, "S": ["s1", "s2"]}})
PART = re.compile(r"^(?:transform pass (\d) of 3, )?(.+): (\d+) of (\d+) (block|slab|tile)s? done$")


def test_a_big_block_reports_three_passes_each_with_its_parts_done():
    sizing = Sizing(big_block_cells=200, pencil_cells=64)  # a block made "big": slabs and pencil tiles
    schema = Schema([OrdinalAttribute.integer_range("a", 0, 9), NominalAttribute("job", JOBS),
                     OrdinalAttribute.integer_range("o", 0, 30)])
    matrix = np.random.default_rng(2).integers(0, 9, schema.shape).astype(float)
    seen: list[tuple[float, str]] = []
    ReleaseSpec(schema, 1.0, "privelet").run(matrix, workers=2, sizing=sizing, progress=lambda f, stage: seen.append((f, stage)))
    parts = [(f, PART.match(stage)) for f, stage in seen if PART.match(stage)]
    assert parts, seen
    steps = [int(m.group(1)) for _, m in parts]
    assert steps == sorted(steps) and set(steps) == {1, 2, 3}  # the passes in order, each named
    first = [m for _, m in parts if m.group(1) == "1"]
    # the smallest intermediate here: slabs along o (the plane), pencils along a and job
    assert first[-1].group(2) == "transforming o" and first[-1].group(5) == "slab"
    assert first[-1].group(3) == first[-1].group(4)  # the first pass ends "N of N slabs done" ...
    last_of_first = max(f for f, m in parts if m.group(1) == "1")
    assert last_of_first < 0.9  # ... long before the release does: the label says which pass
    assert [m.group(2) for _, m in parts if m.group(1) == "3"][-1] == "inverting o"
    tiles = [m for _, m in parts if m.group(1) == "2"]
    assert len(tiles) > 1 and all(m.group(5) == "tile" for m in tiles)
    assert tiles[-1].group(2) == "transforming a, job, adding noise, inverting" and tiles[-1].group(3) == tiles[-1].group(4)


def test_blocks_count_the_whole_release():
    schema = Schema([OrdinalAttribute.integer_range("age", 0, 199), NominalAttribute("job", JOBS),
                     OrdinalAttribute.integer_range("o", 0, 2999)])
    matrix = np.zeros(schema.shape)
    seen: list[tuple[float, str]] = []
    privelet_plus(matrix, schema, 1.0, ["job"], progress=lambda f, stage: seen.append((f, stage)))
    blocks = [(f, PART.match(stage)) for f, stage in seen if "block" in stage]
    assert blocks and all(m is not None and m.group(1) is None for _, m in blocks)
    *_, (fraction, last) = blocks
    assert last.group(2) == "transform, noise and inverse" and last.group(3) == last.group(4) and fraction == 1.0
