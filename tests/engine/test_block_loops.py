"""The compiled loops over a block's counts (privelet_gui/engine/_compiled.py): the check and sum,
the check fused with the rows layout's padding, and the nominal transform's numerators; and a
big block's pencils to and from the noise grid. Each must give what numpy's passes give, to the
bit, and refuse the same counts with the same words."""

from __future__ import annotations

import dataclasses
import hashlib
import math

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from privelet_gui.engine import (
    Hierarchy,
    HierarchyNode,
    NominalAttribute,
    OrdinalAttribute,
    PriveletError,
    Schema,
    TransformPlan,
    _compiled,
    basic,
    privelet,
    privelet_plus,
)
from privelet_gui.engine import nominal as nominal_module
from privelet_gui.engine import pipeline as pipeline_module
from privelet_gui.engine.haar import HaarTransform
from privelet_gui.engine.nominal import NominalTransform

from .loops import counting_loops
from .strategies import hierarchies


def _require_compiled() -> None:
    if _compiled.block_loops() is None:
        pytest.skip("numba is not installed (the fast extra): only the numpy path runs here")


@pytest.fixture(params=["numpy", "compiled"])
def counts_path(request, monkeypatch):
    """Each path of the loops over counts: numpy's passes, or the compiled loops."""
    if request.param == "numpy":
        monkeypatch.setattr(_compiled, "block_loops", lambda: None)
    else:
        _require_compiled()
    return request.param


def _counts(shape: tuple[int, ...], seed: int) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 1_000, shape).astype(np.float64)


# -- the check and sum ------------------------------------------------------------------------------
@pytest.mark.parametrize("shape", [(1,), (7,), (3, 1001), (2, 5, 64), (1 << 17,)])
def test_the_checked_total_is_the_exact_sum(shape, counts_path):
    cells = _counts(shape, seed=len(shape))
    assert pipeline_module._checked_total(cells) == int(cells.astype(np.int64).sum())


@pytest.mark.parametrize("shape", [(1, 1), (4, 1001), (37, 7)])
@pytest.mark.parametrize("width", [0, 1, 23])
def test_the_checked_padding_copies_the_counts_and_zeroes_the_rest(shape, width, counts_path):
    cells = _counts(shape, seed=shape[0] + width)
    padded = np.full((*shape[:-1], shape[-1] + width), np.nan)
    assert pipeline_module._checked_padding(cells, padded) == int(cells.astype(np.int64).sum())
    np.testing.assert_array_equal(padded[..., : shape[-1]], cells)
    np.testing.assert_array_equal(padded[..., shape[-1] :], 0.0)


BAD_COUNTS = [
    (-1.0, "negative or fractional"),
    (0.5, "negative or fractional"),
    (2.0**60, "too large for exact rounding"),
    (np.nan, "NaN or infinite"),
    (np.inf, "NaN or infinite"),
    (-np.inf, "NaN or infinite"),
]


@pytest.mark.parametrize("value, words", BAD_COUNTS)
@pytest.mark.parametrize("position", [0, 1000, -1])
def test_both_checks_refuse_what_numpys_refuses_with_its_words(value, words, position, counts_path):
    cells = _counts((3, 1001), seed=5)
    cells.reshape(-1)[position] = value
    with pytest.raises(PriveletError, match=words):
        pipeline_module._checked_total(cells)
    with pytest.raises(PriveletError, match=words):
        pipeline_module._checked_padding(cells, np.empty((3, 1024)))


def test_negative_zero_is_a_count_on_both_paths(counts_path):
    cells = np.array([[-0.0, 3.0], [2.0, 0.0]])
    assert pipeline_module._checked_total(cells) == 5
    assert pipeline_module._checked_padding(cells, np.empty((2, 4))) == 5


def test_a_total_of_2_to_the_53_is_refused_in_any_order_of_summing():
    """The compiled sum adds in another order than numpy's: it must still refuse exactly the
    totals that reach 2**53 (and accept those just below), where rounding could hide them."""
    _require_compiled()
    below = np.full(1 << 12, 2.0**41)  # sums to 2**53 exactly
    below[-1] -= 1.0
    assert pipeline_module._checked_total(below) == 2**53 - 1
    with pytest.raises(PriveletError, match="too large for exact rounding"):
        pipeline_module._checked_total(np.full(1 << 12, 2.0**41))
    with pytest.raises(PriveletError, match="too large for exact rounding"):
        pipeline_module._checked_padding(np.full((1 << 6, 1 << 6), 2.0**41), np.empty((1 << 6, 1 << 7)))


def test_counts_that_are_not_one_run_of_memory_are_checked_by_numpy():
    _require_compiled()
    cells = _counts((6, 8), seed=1)
    view = cells[:, ::2]
    assert pipeline_module._checked_total(view) == int(view.sum())
    cells[2, 2] = 0.25
    with pytest.raises(PriveletError, match="negative or fractional"):
        pipeline_module._checked_total(view)


# -- the nominal numerators ---------------------------------------------------------------------------
def _uneven_hierarchy() -> Hierarchy:
    """Leaves at depths 2 to 4, only children, and a group of one leaf."""
    return Hierarchy(HierarchyNode("root", (
        HierarchyNode("a", (HierarchyNode("a1"), HierarchyNode("a2"), HierarchyNode("a3"))),
        HierarchyNode("b", (HierarchyNode("b1", (HierarchyNode("b1x"), HierarchyNode("b1y"))),)),
        HierarchyNode("c"),
        HierarchyNode("d", (HierarchyNode("d1"),)),
    )))


HIERARCHIES = {
    "one node": Hierarchy(HierarchyNode("only")),
    "flat": Hierarchy.flat([f"v{i}" for i in range(9)]),
    "uneven": _uneven_hierarchy(),
    "brazil occupations": None,  # built from the benchmark's generator below
}


def _hierarchy(name: str) -> Hierarchy:
    if name == "brazil occupations":
        from privelet_gui.bench import occupation_hierarchy

        return occupation_hierarchy(np.random.default_rng(0))
    return HIERARCHIES[name]


@pytest.mark.parametrize("name", list(HIERARCHIES))
@pytest.mark.parametrize("axis, others", [(0, (1,)), (0, (1024,)), (1, (3, 5)), (2, (2, 1, 33)), (-1, (4,))])
def test_count_numerators_are_numpys_numerators_to_the_bit(name, axis, others):
    _require_compiled()
    transform = NominalTransform(_hierarchy(name))
    shape = list(others)
    shape.insert(axis if axis >= 0 else len(shape), transform.size)
    counts = _counts(tuple(shape), seed=transform.size)
    ours = transform.count_numerators(counts, axis)
    np.testing.assert_array_equal(ours.view(np.uint64), transform.numerators(counts, axis).view(np.uint64))


@settings(max_examples=60, deadline=None)
@given(hierarchy=hierarchies(max_leaves=20, max_depth=5), columns=st.integers(1, 40), seed=st.integers(0, 2**32 - 1))
def test_count_numerators_of_any_hierarchy_are_numpys(hierarchy, columns, seed):
    _require_compiled()
    transform = NominalTransform(hierarchy)
    counts = np.random.default_rng(seed).integers(0, 2**20, (transform.size, columns)).astype(np.float64)
    np.testing.assert_array_equal(transform.count_numerators(counts, 0), transform.numerators(counts, 0))


# -- a rows plane's numerators in one pass ------------------------------------------------------------
def _rows_plane(hierarchy: Hierarchy, outer: int, width: int) -> pipeline_module._Plane:
    """The plane of a block (outer S_A positions, a nominal axis, an ordinal rows axis)."""
    schema = Schema([OrdinalAttribute.integer_range("a", 0, outer - 1), NominalAttribute("n", hierarchy),
                     OrdinalAttribute.integer_range("o", 0, width - 1)])
    plan = TransformPlan(schema, ("a",))
    return pipeline_module._Plane(plan, schema.shape, plan.transformed_axes)


def _numpys_tiles(plane: pipeline_module._Plane, cells: np.ndarray, table: np.ndarray | None, rint: bool,
                  monkeypatch, head: np.ndarray | None = None) -> tuple[np.ndarray, int]:
    """Every tile's numerators by numpy's passes (check and padding, the nominal plane, each
    tile's Haar levels; the finer levels divided by ``table``, the heads by ``head``), tile after
    tile, and the total."""
    with monkeypatch.context() as numpy_only:
        numpy_only.setattr(_compiled, "block_loops", lambda: None)
        numpy_only.setattr(_compiled, "haar_rows_loops", lambda: None)
        z, total = plane.checked_forward(cells)
        lines = z.reshape(-1, plane.haar.n_coefficients)
        out = np.empty(plane.size)
        for number, (tile,) in enumerate(plane.tiles):
            part = out[plane.offsets[number] : plane.offsets[number + 1]]
            plane.haar.rows_numerators(lines[tile], part, divisors=None if table is None else table[:, tile],
                                       head_divisors=None if head is None else head[tile], rint=rint)
    return out, total


@settings(max_examples=80, deadline=None)
@given(hierarchy=hierarchies(max_leaves=20, max_depth=5), outer=st.integers(1, 3),
       width=st.sampled_from([1, 2, 3, 31, 32, 33, 64, 100, 1001]), divided=st.booleans(), rint=st.booleans(),
       seed=st.integers(0, 2**32 - 1))
def test_a_rows_planes_numerators_in_one_pass_are_numpys_to_the_bit(hierarchy, outer, width, divided, rint, seed):
    _require_compiled()
    if NominalTransform(hierarchy).n_coefficients < 2:
        return  # a hierarchy of one node: the passes of old (no internal node to sum)
    plane = _rows_plane(hierarchy, outer, width)
    assert plane.rows_nominal is not None
    rng = np.random.default_rng(seed)
    cells = rng.integers(0, 2**20, plane.shape).astype(np.float64)
    lines = math.prod(plane.z_shape[:-1])
    levels = plane.haar.levels - plane.haar.rows_head_levels
    # divisors d 2**k as the pipeline makes them: small integers times powers of two
    table = (rng.integers(1, 40, (levels, lines)) * 2.0 ** rng.integers(-3, 4, (levels, lines))) if divided else None
    head_shape = (lines, 1 << plane.haar.rows_head_levels)
    head = (rng.integers(1, 40, head_shape) * 2.0 ** rng.integers(-3, 4, head_shape)) if divided else None
    with pytest.MonkeyPatch.context() as patch:
        expected, expected_total = _numpys_tiles(plane, cells, table, divided and rint, patch, head)
    found = plane.checked_leaf_sums(cells)
    assert found is not None
    sums, total = found
    assert total == expected_total == int(cells.astype(np.int64).sum())
    out = np.full(plane.size, np.nan)
    for number, (tile,) in enumerate(plane.tiles):
        part = out[plane.offsets[number] : plane.offsets[number + 1]]
        scaling = None if table is None or head is None else pipeline_module._Scaling(
            (), not rint, pipeline_module._RowsLevels(table[:, tile], table[:, tile], np.ascontiguousarray(head[tile])))
        assert plane.rows_numerators(cells, sums, number, part, scaling) is part
    np.testing.assert_array_equal(out.view(np.uint64), expected.view(np.uint64))


def test_many_tiles_and_negative_zero_counts_give_numpys_bits(monkeypatch):
    """Lines spread over several tiles (the last one short), and -0.0 counts (a count of zero
    whose sign the numerators carry): the same bits as numpy's passes."""
    _require_compiled()
    monkeypatch.setattr(pipeline_module, "_TILE_CELLS", 1 << 12)
    plane = _rows_plane(_uneven_hierarchy(), 3, 300)
    assert len(plane.tiles) > 3 and plane.tile_sizes[-1] < plane.tile_sizes[0]
    cells = _counts(plane.shape, seed=9)
    cells[cells < 200] = -0.0
    expected, total = _numpys_tiles(plane, cells, None, False, monkeypatch)
    sums, found_total = plane.checked_leaf_sums(cells)
    out = np.full(plane.size, np.nan)
    for number in range(len(plane.tiles)):
        plane.rows_numerators(cells, sums, number, out[plane.offsets[number] : plane.offsets[number + 1]])
    assert found_total == total
    np.testing.assert_array_equal(out.view(np.uint64), expected.view(np.uint64))


@pytest.mark.parametrize("value, words", BAD_COUNTS)
@pytest.mark.parametrize("position", [0, 1000, -1])
def test_the_one_pass_check_refuses_what_numpys_refuses_with_its_words(value, words, position):
    _require_compiled()
    plane = _rows_plane(_uneven_hierarchy(), 2, 101)
    cells = _counts(plane.shape, seed=5)
    cells.reshape(-1)[position] = value
    with pytest.raises(PriveletError, match=words):
        plane.checked_leaf_sums(cells)


def test_the_one_pass_check_refuses_a_total_of_2_to_the_53():
    _require_compiled()
    plane = _rows_plane(Hierarchy.flat(["x", "y"]), 1, 1 << 11)
    cells = np.full(plane.shape, 2.0**41)  # 2**12 counts: a total of 2**53
    with pytest.raises(PriveletError, match="too large for exact rounding"):
        plane.checked_leaf_sums(cells)
    cells[0, 0, 0] -= 1.0
    assert plane.checked_leaf_sums(cells)[1] == 2**53 - 1


def test_planes_the_one_pass_does_not_serve_keep_their_passes():
    """A nominal axis not next to the rows axis, two axes before it, no rows axis, one node,
    or counts not in one run of memory: the passes of old."""
    _require_compiled()
    schema = _schema()  # age, job (nominal), sector (nominal), income (ordinal)
    for sa in [("age",), ("age", "sector"), ("income",)]:
        plan = TransformPlan(schema, sa)
        shape = tuple(1 if a in plan.identity_axes else n for a, n in enumerate(schema.shape))
        assert pipeline_module._Plane(plan, shape, plan.transformed_axes).rows_nominal is None
    one = _rows_plane(Hierarchy(HierarchyNode("only")), 1, 9)
    assert one.rows_nominal is not None and one.checked_leaf_sums(np.ones(one.shape)) is None
    plane = _rows_plane(_uneven_hierarchy(), 2, 40)
    assert plane.checked_leaf_sums(np.ones((2, plane.shape[1], 80))[..., ::2]) is None


# -- the nominal inverse --------------------------------------------------------------------------------
def _inverse_both_ways(transform: NominalTransform, coefficients: np.ndarray, axis: int, monkeypatch,
                       out_shape: tuple[int, ...] | None = None) -> tuple[np.ndarray, np.ndarray, int]:
    """The inverse on the compiled path, on numpy's, and how often the compiled loop ran."""
    calls = counting_loops(monkeypatch, "block_loops", "nominal_inverse")

    def run() -> np.ndarray:
        out = None if out_shape is None else np.full(out_shape, np.nan)
        return transform.inverse(coefficients.copy(), axis, overwrite_input=True, out=out)

    compiled = run()
    monkeypatch.setattr(_compiled, "block_loops", lambda: None)
    return compiled, run(), len(calls)


@pytest.mark.parametrize("name", list(HIERARCHIES))
@pytest.mark.parametrize("axis, others", [(0, (4096,)), (0, (2, 3000)), (1, (3, 5000)), (2, (1, 1, 8192))])
def test_the_nominal_inverse_is_numpys_to_the_bit(name, axis, others, monkeypatch):
    """Noisy coefficients (fractions of every size), rows long enough for numpy to sum each
    sibling group child after child: the compiled loop runs and gives numpy's bits."""
    _require_compiled()
    transform = NominalTransform(_hierarchy(name))
    shape = list(others)
    shape.insert(axis, transform.n_coefficients)
    rng = np.random.default_rng(transform.size)
    coefficients = rng.laplace(0.0, 1.0, shape) * 10.0 ** rng.integers(-6, 9, shape)
    compiled, numpys, calls = _inverse_both_ways(transform, coefficients, axis, monkeypatch)
    assert calls == 1
    np.testing.assert_array_equal(compiled.view(np.uint64), numpys.view(np.uint64))


@settings(max_examples=60, deadline=None)
@given(hierarchy=hierarchies(max_leaves=20, max_depth=5), columns=st.integers(1, 6000), seed=st.integers(0, 2**32 - 1))
def test_the_nominal_inverse_of_any_hierarchy_is_numpys(hierarchy, columns, seed):
    """Where the compiled loop applies, and where it leaves the work to numpy (rows of one
    value, groups numpy sums by reduceat), the bits are numpy's."""
    _require_compiled()
    transform = NominalTransform(hierarchy)
    rng = np.random.default_rng(seed)
    coefficients = rng.laplace(0.0, 1e3, (transform.n_coefficients, columns))
    with pytest.MonkeyPatch.context() as patch:
        compiled, numpys, _ = _inverse_both_ways(transform, coefficients, 0, patch)
    np.testing.assert_array_equal(compiled.view(np.uint64), numpys.view(np.uint64))


def test_a_narrower_out_receives_the_first_positions_on_either_path(monkeypatch):
    """The pipeline's rows layout: lines padded to 1024, the output 1001 wide."""
    _require_compiled()
    transform = NominalTransform(_hierarchy("brazil occupations"))
    coefficients = np.random.default_rng(3).laplace(0.0, 1e4, (1, transform.n_coefficients, 1024))
    full = transform.inverse(coefficients.copy(), 1)
    compiled, numpys, calls = _inverse_both_ways(transform, coefficients, 1, monkeypatch, out_shape=(1, transform.size, 1001))
    assert calls == 1
    np.testing.assert_array_equal(compiled.view(np.uint64), numpys.view(np.uint64))
    np.testing.assert_array_equal(numpys, full[..., :1001])


def test_a_release_inverts_its_nominal_plane_with_the_compiled_loop(monkeypatch):
    _require_compiled()
    calls = counting_loops(monkeypatch, "block_loops", "nominal_inverse")
    occupations = _hierarchy("brazil occupations")
    schema = Schema([NominalAttribute("Occupation", occupations), OrdinalAttribute.integer_range("Income", 0, 1000)])
    privelet_plus(_counts(schema.shape, seed=8), schema, 1.0, (), np.random.default_rng(1))
    assert calls


# -- the Haar kept numerators (a big block's pencils) ----------------------------------------------------
@pytest.mark.parametrize("size", [1, 2, 3, 7, 32, 33, 101, 1001, 1024])
@pytest.mark.parametrize("shape, axis", [((5,), 0), ((2, 9), 0), ((3,), 1), ((4, 3), 1)])
def test_haar_kept_numerators_are_numpys_to_the_bit(size, shape, axis, monkeypatch):
    """The compiled loop runs every level (the numpy code does the coarse ones as a matrix
    product): on counts both give the same exact integers. An axis that is not outermost in
    memory goes to numpy."""
    _require_compiled()
    transform = HaarTransform(size)
    full = list(shape)
    full.insert(axis, size)
    counts = np.random.default_rng(size).integers(0, 2**30, full).astype(np.float64)
    compiled = transform.kept_numerators(counts, axis)
    monkeypatch.setattr(_compiled, "block_loops", lambda: None)
    numpys = transform.kept_numerators(counts, axis)
    np.testing.assert_array_equal(compiled.view(np.uint64), numpys.view(np.uint64))
    np.testing.assert_array_equal(numpys, np.take(transform.numerators(counts, axis), transform.kept, axis=axis))


@pytest.mark.parametrize("size", [1, 2, 3, 7, 32, 33, 101, 1001, 1024])
@pytest.mark.parametrize("shape, axis", [((5,), 0), ((2, 3000), 0), ((3,), 1), ((4, 3), 1), ((), 0)])
@pytest.mark.parametrize("into", [False, True])
def test_haar_kept_inverse_is_numpys_to_the_bit(size, shape, axis, into, monkeypatch):
    """Noisy kept coefficients: the compiled levels give numpy's bits, into a new array
    or into ``out``."""
    _require_compiled()
    transform = HaarTransform(size)
    full = list(shape)
    full.insert(axis, transform.n_kept)
    coefficients = np.random.default_rng(size).laplace(0.0, 1e5, full)
    values_shape = tuple(size if a == axis else n for a, n in enumerate(full))

    def run() -> np.ndarray:
        out = np.full(values_shape, np.nan) if into else None
        return transform.kept_inverse(coefficients, axis, out=out)

    compiled = run()
    monkeypatch.setattr(_compiled, "block_loops", lambda: None)
    numpys = run()
    np.testing.assert_array_equal(compiled.view(np.uint64), numpys.view(np.uint64))
    np.testing.assert_allclose(numpys, transform.inverse(_padded_kept(transform, coefficients, axis), axis)
                               .take(range(size), axis=axis), rtol=1e-9, atol=1e-6)


@pytest.mark.parametrize("size", [1, 2, 3, 33, 101])
@pytest.mark.parametrize("lines", [1, 2, 3])
def test_haar_kept_loops_read_and_write_a_pencil_in_place_to_the_bit(size, lines, monkeypatch):
    """A big block's pencil as it lies in the intermediate: the rows of ``lines`` values per
    Haar value (another axis of the pencil), each a run of a wider row. The compiled loops read
    and write it in place and give numpy's bits; values beside the pencil are left alone."""
    _require_compiled()
    transform = HaarTransform(size)
    rng = np.random.default_rng(size + lines)
    width, stride = 37, 50
    counts = rng.integers(0, 2**30, (size * lines, stride)).astype(np.float64)
    pencil = counts[:, 5 : 5 + width].reshape(size, lines, width)  # rows 50 apart: not C-contiguous
    coefficients = rng.laplace(0.0, 1e5, (transform.n_kept, lines, width))
    intermediate = np.full((size * lines, stride), np.nan)
    into = intermediate[:, 5 : 5 + width].reshape(size, lines, width)
    calls = counting_loops(monkeypatch, "block_loops", "haar_kept_numerators", "haar_kept_inverse")
    compiled = transform.kept_numerators(pencil, 0)
    transform.kept_inverse(coefficients, 0, out=into)
    assert calls == ["haar_kept_numerators"] + (["haar_kept_inverse"] if transform.levels else [])
    assert np.isnan(np.delete(intermediate, np.s_[5 : 5 + width], axis=1)).all()
    monkeypatch.setattr(_compiled, "block_loops", lambda: None)
    np.testing.assert_array_equal(compiled.view(np.uint64), transform.kept_numerators(np.ascontiguousarray(pencil), 0).view(np.uint64))
    numpys = transform.kept_inverse(coefficients, 0)
    np.testing.assert_array_equal(into.view(np.uint64), numpys.view(np.uint64))


def test_a_big_block_reads_and_writes_its_pencils_in_place(monkeypatch):
    """S_A empty with a Haar axis first: pass 2 gives the compiled loops the intermediate's own
    rows (no gathered copy), and the release is what the gathered copies give."""
    _require_compiled()
    schema = Schema([OrdinalAttribute.integer_range("age", 0, 40), NominalAttribute("sex", Hierarchy.flat(["f", "m"])),
                     OrdinalAttribute.integer_range("income", 0, 300)])
    counts = _counts(schema.shape, seed=4)
    monkeypatch.setattr(pipeline_module, "_PENCIL_CELLS", 2000)  # pencils narrower than the rows
    seen: list[bool] = []
    loops = _compiled.block_loops()

    def recorded(values, *rest):
        seen.append(values.flags.c_contiguous)
        return loops.haar_kept_numerators(values, *rest)

    monkeypatch.setattr(_compiled, "block_loops", lambda: dataclasses.replace(loops, haar_kept_numerators=recorded))
    in_place = privelet(counts, schema, 1.0, np.random.default_rng(3), workers=2).noisy
    assert seen and not any(seen)  # every pencil read where it lies
    monkeypatch.setattr(pipeline_module._BigBlock, "pencils_in_place", property(lambda self: False))
    seen.clear()
    gathered = privelet(counts, schema, 1.0, np.random.default_rng(3), workers=2).noisy
    assert seen and all(seen)
    np.testing.assert_array_equal(in_place.view(np.uint64), gathered.view(np.uint64))


def _padded_kept(transform: HaarTransform, kept: np.ndarray, axis: int) -> np.ndarray:
    """Kept coefficients with zeros for the padding-only ones: every coefficient, in level order."""
    full = np.zeros(tuple(transform.n_coefficients if a == axis else n for a, n in enumerate(kept.shape)))
    index = [slice(None)] * kept.ndim
    index[axis] = transform.kept
    full[tuple(index)] = kept
    return full


# -- a pencil to and from the noise grid ------------------------------------------------------------------
def _pencil(seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A pencil's numerators as the B axes' transforms leave them (the last B axis outermost in
    memory, the positions innermost), with per-B and per-position divisors as the pipeline's."""
    rng = np.random.default_rng(seed)
    memory = rng.integers(-(2**40), 2**40, (3, 105, 67)).astype(np.float64)  # (B1, B0, positions)
    z = memory.transpose(1, 0, 2)  # seen as (B0, B1, positions)
    per_b = rng.integers(1, 9, (105, 3)) * 2.0**-20
    per_position = rng.integers(1, 9, 67) * 2.0
    return z, per_b, per_position


def _both_paths(work, monkeypatch):
    """``work()``'s result with the compiled grid loops, then with numpy's passes."""
    _require_compiled()
    compiled = work()
    monkeypatch.setattr(_compiled, "grid_loops", lambda: None)
    return compiled, work()


@pytest.mark.parametrize("limit", ["known", "above the largest"])
def test_a_pencil_is_divided_and_rounded_the_same_on_either_path(limit, monkeypatch):
    def work() -> np.ndarray:
        z, per_b, per_position = _pencil(seed=1)
        largest = float(np.abs(z).max())
        assert pipeline_module._grid_units(z, per_b, per_position, None if limit == "known" else np.nextafter(largest, np.inf))
        return z

    compiled, numpys = _both_paths(work, monkeypatch)
    np.testing.assert_array_equal(compiled.view(np.uint64), numpys.view(np.uint64))
    z, per_b, per_position = _pencil(seed=1)
    np.testing.assert_array_equal(compiled, np.rint(z / (per_b[..., None] * per_position)))


def test_a_pencil_at_or_above_the_limit_is_left_as_it_was_on_either_path(monkeypatch):
    # One division would not round it exactly: round_to_grid's correction does it instead.
    def work() -> tuple[bool, np.ndarray]:
        z, per_b, per_position = _pencil(seed=6)
        z[40, 1, 33] = -(2.0**40)  # the largest magnitude, negative, mid-pencil
        return pipeline_module._grid_units(z, per_b, per_position, 2.0**40), z

    (compiled_done, compiled), (numpy_done, numpys) = _both_paths(work, monkeypatch)
    z, _, _ = _pencil(seed=6)
    z[40, 1, 33] = -(2.0**40)
    assert not compiled_done and not numpy_done
    np.testing.assert_array_equal(compiled, z)
    np.testing.assert_array_equal(numpys, z)


def test_a_pencil_is_scaled_the_same_on_either_path(monkeypatch):
    def work() -> np.ndarray:
        z, per_b, per_position = _pencil(seed=2)
        pipeline_module._scale(z, per_b * np.pi, per_position / 3.0)
        return z

    compiled, numpys = _both_paths(work, monkeypatch)
    np.testing.assert_array_equal(compiled.view(np.uint64), numpys.view(np.uint64))
    z, per_b, per_position = _pencil(seed=2)
    np.testing.assert_array_equal(compiled, z * (per_b * np.pi)[..., None] * (per_position / 3.0))


def test_a_pencil_whose_positions_are_not_innermost_goes_to_numpy():
    _require_compiled()
    z, per_b, per_position = _pencil(seed=3)
    assert pipeline_module._pencil_rows(z, per_b) is not None
    across = np.ascontiguousarray(np.moveaxis(z, 2, 0))  # positions outermost in memory
    assert pipeline_module._pencil_rows(np.moveaxis(across, 0, 2), per_b) is None
    expected = np.rint(z / (per_b[..., None] * per_position))
    z_moved = np.moveaxis(across, 0, 2)
    assert pipeline_module._grid_units(z_moved, per_b, per_position, None)
    np.testing.assert_array_equal(z_moved, expected)


def test_a_big_block_release_runs_the_compiled_grid_loops(monkeypatch):
    # The comparisons above prove the paths equal only if the pipeline takes the compiled one
    # (where the last pencil axis is not a nominal axis whose loops do the same: below).
    _require_compiled()
    monkeypatch.setattr(pipeline_module._BigBlock, "_nominal_last", lambda self, pipeline: None)
    calls = counting_loops(monkeypatch, "grid_loops", "units", "scale")
    schema = _schema()
    privelet(_counts(schema.shape, seed=4), schema, 0.5, np.random.default_rng(1))
    assert calls and calls.count("units") == calls.count("scale")


@pytest.mark.parametrize("big", [False, True], ids=["below-the-limit", "some-pencils-at-the-limit"])
def test_a_pencil_whose_last_axis_is_nominal_goes_to_the_grid_and_back_in_its_loops_to_the_bit(big, monkeypatch):
    """The nominal numerators divided as they are formed and the nominal inverse scaling as it
    goes give the bits of the grid loops' passes after and before them. Pencils with a
    numerator at the limit of one division start again without (round_to_grid then)."""
    _require_compiled()
    monkeypatch.setattr(pipeline_module, "_PENCIL_CELLS", 20_000)  # several pencils, wide enough for the loops
    schema = _schema()
    counts = _counts(schema.shape, seed=4)
    if big:
        counts[2, 1, 0, :5] = 2.0**33  # some coefficients pass 2**52 grid units
    assert pipeline_module._BigBlock(TransformPlan(schema), schema.shape).pencil_axes == (0, 1, 2)  # sector last
    calls = counting_loops(monkeypatch, "block_loops", "nominal_numerators", "nominal_inverse")
    grid = counting_loops(monkeypatch, "grid_loops", "units", "scale")
    fused = privelet(counts, schema, 0.5, np.random.default_rng(1)).noisy
    assert "nominal_numerators" in calls and "nominal_inverse" in calls
    assert ("units" in grid) == big  # only the pencils that start again
    monkeypatch.setattr(pipeline_module._BigBlock, "_nominal_last", lambda self, pipeline: None)
    passes = privelet(counts, schema, 0.5, np.random.default_rng(1)).noisy
    np.testing.assert_array_equal(fused.view(np.uint64), passes.view(np.uint64))


def _haar_nominal_pencils_schema(size: int, hierarchy: Hierarchy) -> Schema:
    """A table whose big block's pencils are an ordinal axis of ``size`` values, then a nominal
    one (``hierarchy``), its slabs a wide nominal axis and an ordinal one."""
    wide = NominalAttribute("product", Hierarchy.from_nested({"all": {f"g{g}": [f"p{g}.{i}" for i in range(30)]
                                                                      for g in range(5)}}))
    return Schema([OrdinalAttribute.integer_range("age", 0, size - 1), NominalAttribute("n", hierarchy), wide,
                   OrdinalAttribute.integer_range("income", 0, 59)])


def _numpy_only(patch: pytest.MonkeyPatch) -> None:
    for accessor in ("block_loops", "haar_rows_loops", "grid_loops"):
        patch.setattr(_compiled, accessor, lambda: None)


@settings(max_examples=40, deadline=None)
@given(size=st.integers(2, 40), hierarchy=hierarchies(max_leaves=8, max_depth=4),
       pencil_cells=st.sampled_from([2_000, 20_000, 1 << 19]), group_cells=st.sampled_from([1, 1, 1, 1 << 20]),
       seed=st.integers(0, 2**32 - 1))
def test_a_haar_and_nominal_pencil_in_one_pass_gives_numpys_bits(size, hierarchy, pencil_cells, group_cells, seed):
    """A pencil of a Haar axis then a nominal one goes through both axes in one compiled call each
    way (the Haar coefficients never stored whole): the release has numpy's passes' bits, pencils
    of any width (the last one narrower) and any hierarchy; and the one pass runs exactly where
    numpy's nominal inverse visits the groups one by one (its order of summing)."""
    _require_compiled()
    schema = _haar_nominal_pencils_schema(size, hierarchy)
    counts = _counts(schema.shape, seed=seed % 1000)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(pipeline_module, "_PENCIL_CELLS", pencil_cells)
        patch.setattr(nominal_module, "_GROUP_LOOP_CELLS", group_cells)
        big = pipeline_module._BigBlock(TransformPlan(schema), schema.shape)
        assume(big.pencil_axes == (0, 1))
        calls = counting_loops(patch, "block_loops", "pencil_units", "pencil_inverse", "haar_kept_numerators")
        one_pass = privelet(counts, schema, 0.5, np.random.default_rng(seed)).noisy
        widths = [tile.stop - tile.start for tile in big.pencils]
        kept = HaarTransform(size).n_kept
        grouped = [NominalTransform(hierarchy).loops_groups(kept * width) for width in widths]
        _numpy_only(patch)
        expected = privelet(counts, schema, 0.5, np.random.default_rng(seed)).noisy
    np.testing.assert_array_equal(one_pass.view(np.uint64), expected.view(np.uint64))
    assert calls.count("pencil_units") == sum(grouped)
    # a pencil past one division's limit starts again in the four loops (the next test)
    assert calls.count("pencil_inverse") + calls.count("haar_kept_numerators") == len(widths)


def test_a_pencil_with_a_numerator_past_one_division_leaves_the_one_pass_to_the_bit(monkeypatch):
    """Pencils holding a coefficient of 2**52 grid units or more start again in the four loops
    (which round exactly), the others stay in the one pass: numpy's bits either way."""
    _require_compiled()
    monkeypatch.setattr(pipeline_module, "_PENCIL_CELLS", 20_000)
    schema = _haar_nominal_pencils_schema(10, Hierarchy.flat(["x", "y", "z"]))
    counts = _counts(schema.shape, seed=8)
    counts[2, 1, 0, :5] = 2.0**33
    with monkeypatch.context() as numpy_only:
        _numpy_only(numpy_only)
        expected = privelet(counts, schema, 0.5, np.random.default_rng(4)).noisy
    pencils = len(pipeline_module._BigBlock(TransformPlan(schema), schema.shape).pencils)
    calls = counting_loops(monkeypatch, "block_loops", "pencil_units", "pencil_inverse", "haar_kept_numerators")
    noisy = privelet(counts, schema, 0.5, np.random.default_rng(4)).noisy
    np.testing.assert_array_equal(noisy.view(np.uint64), expected.view(np.uint64))
    assert calls.count("pencil_units") == pencils
    assert 0 < calls.count("haar_kept_numerators") == pencils - calls.count("pencil_inverse")


# -- whole releases ------------------------------------------------------------------------------------
def _schema() -> Schema:
    return Schema([
        OrdinalAttribute.integer_range("age", 0, 9),
        NominalAttribute("job", _uneven_hierarchy()),
        NominalAttribute("sector", Hierarchy.flat(["x", "y", "z"])),
        OrdinalAttribute.integer_range("income", 0, 99),
    ])


# Digests of seeded releases: both paths must give them. Basic's was made before these loops
# were compiled; the others since the Haar rows inverse does its head level by level (its
# values moved by a few units in the last place: at most 4.5e-13 here), on either path.
# (The matrix is small enough for one pencil whatever _PENCIL_CELLS.)
PINNED_RELEASES = {
    ("privelet+", ("age",)): "624ad006772df1f1da2c",  # blocks: the rows layout after a nominal plane
    ("privelet+", ("age", "sector")): "d842ef75a559c56f3656",
    ("privelet", ()): "cfe35292803caeec173b",  # one big block in three passes (M = 24: a byte of L)
    ("basic", ()): "c852f0f899bae04ad4ce",
}


@pytest.mark.parametrize("mechanism, sa", list(PINNED_RELEASES))
@pytest.mark.parametrize("path", ["numpy", "compiled"])
def test_a_seeded_release_keeps_its_bits_on_either_path(mechanism, sa, path, monkeypatch):
    if path == "numpy":
        monkeypatch.setattr(_compiled, "block_loops", lambda: None)
        monkeypatch.setattr(_compiled, "haar_rows_loops", lambda: None)
        monkeypatch.setattr(_compiled, "grid_loops", lambda: None)
    else:
        _require_compiled()
    schema = _schema()
    counts = np.random.default_rng(11).integers(0, 1000, schema.shape).astype(np.float64)
    rng = np.random.default_rng(2026)
    if mechanism == "privelet":
        noisy = privelet(counts, schema, 0.5, rng).noisy
    elif mechanism == "basic":
        noisy = basic(counts, 0.5, rng).noisy
    else:
        noisy = privelet_plus(counts, schema, 0.5, sa, rng).noisy
    digest = hashlib.sha256(np.ascontiguousarray(noisy, dtype="<f8").tobytes()).hexdigest()[:20]
    assert digest == PINNED_RELEASES[mechanism, sa]


@pytest.mark.parametrize("sa, block_cells", [(("age", "job"), 1 << 11), ((), 1 << 19)])
def test_a_release_of_a_nominal_and_a_rows_axis_takes_the_one_pass(sa, block_cells, monkeypatch):
    """Small blocks whose plane is a nominal and the rows axis, and a big block whose slabs are
    (S_A empty): the one pass runs, and the release has numpy's passes' bits."""
    _require_compiled()
    monkeypatch.setattr(pipeline_module, "_BLOCK_CELLS", block_cells)
    schema = _schema()
    if not sa:  # pencils along age and sector (their coefficients fit a pencil), slabs along the rest
        wide = NominalAttribute("product", Hierarchy.from_nested({"all": {f"g{g}": [f"p{g}.{i}" for i in range(30)]
                                                                          for g in range(5)}}))
        schema = Schema([schema["age"], schema["sector"], wide, OrdinalAttribute.integer_range("income", 0, 59)])
    counts = _counts(schema.shape, seed=3)

    def release() -> np.ndarray:
        return privelet_plus(counts, schema, 0.5, sa, np.random.default_rng(1)).noisy

    with monkeypatch.context() as numpy_only:
        for accessor in ("block_loops", "haar_rows_loops", "grid_loops"):
            numpy_only.setattr(_compiled, accessor, lambda: None)
        expected = release()
    calls = counting_loops(monkeypatch, "block_loops", "nominal_leaf_sums", "nominal_haar_numerators",
                           "checked_padding", "nominal_numerators")
    np.testing.assert_array_equal(release().view(np.uint64), expected.view(np.uint64))
    passes = calls.count("nominal_haar_numerators")
    assert passes > 1 and calls.count("nominal_leaf_sums") == passes
    assert "checked_padding" not in calls
    # (a big block's pencils take the nominal numerators of their own axis: not the plane's)
    assert "nominal_numerators" not in calls or not sa


def _rows_plane_release(hierarchy: Hierarchy, outer: int, width: int, seed: int) -> np.ndarray:
    """A seeded Privelet+ release of a table whose blocks' planes are a nominal and the rows axis."""
    schema = Schema([OrdinalAttribute.integer_range("a", 0, outer - 1), NominalAttribute("n", hierarchy),
                     OrdinalAttribute.integer_range("o", 0, width - 1)])
    counts = _counts(schema.shape, seed=seed)
    return privelet_plus(counts, schema, 0.3, ("a",), np.random.default_rng(seed)).noisy


@settings(max_examples=60, deadline=None)
@given(hierarchy=hierarchies(max_leaves=20, max_depth=5), outer=st.integers(2, 4), per_block=st.integers(1, 2),
       width=st.sampled_from([2, 3, 33, 100, 1001]), tile_cells=st.sampled_from([64, 1000, 1 << 18]),
       group_cells=st.sampled_from([1, 1, 1, 4096]), seed=st.integers(0, 2**32 - 1))
def test_the_grouped_inverse_of_a_rows_plane_gives_numpys_bits(hierarchy, outer, per_block, width, tile_cells,
                                                                group_cells, seed):
    """Each sibling group inverted as soon as its lines are (across tiles, outer positions and
    groups of leaves and internal nodes) gives the bits of numpy's passes, which invert the
    whole plane along the rows axis first."""
    _require_compiled()
    assume(per_block < outer)  # small blocks (one block would be released in three passes)
    transform = NominalTransform(hierarchy)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(nominal_module, "_GROUP_LOOP_CELLS", group_cells)  # numpy's choice of summing order
        patch.setattr(pipeline_module, "_TILE_CELLS", tile_cells)  # groups across tiles
        patch.setattr(pipeline_module, "_BLOCK_CELLS", per_block * transform.size * width)  # outer positions a block
        calls = counting_loops(patch, "haar_rows_loops", "nominal_inverse")
        grouped = _rows_plane_release(hierarchy, outer, width, seed)
        for accessor in ("block_loops", "haar_rows_loops", "grid_loops"):
            patch.setattr(_compiled, accessor, lambda: None)
        expected = _rows_plane_release(hierarchy, outer, width, seed)
    np.testing.assert_array_equal(grouped.view(np.uint64), expected.view(np.uint64))
    # the grouped loop wherever numpy visits the groups one by one (its order of summing)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(nominal_module, "_GROUP_LOOP_CELLS", group_cells)
        padded = HaarTransform(width).n_coefficients
        if transform.loops_groups(padded):
            assert "nominal_inverse" in calls
        if not transform.loops_groups(per_block * padded):
            assert "nominal_inverse" not in calls


def test_a_release_inverts_a_rows_plane_by_groups_without_the_planes_array(monkeypatch):
    """The Brazil-like plane (nominal then rows axis) takes the grouped inverse: neither the
    plane's nominal inverse nor its rows inverse runs, and the values are the plane loops' bits."""
    _require_compiled()
    jobs = _groups_of_eight()
    schema = Schema([OrdinalAttribute.integer_range("age", 0, 2), NominalAttribute("job", jobs),
                     OrdinalAttribute.integer_range("income", 0, 299)])
    counts = _counts(schema.shape, seed=5)
    monkeypatch.setattr(pipeline_module, "_TILE_CELLS", 1 << 13)  # several tiles a block
    monkeypatch.setattr(pipeline_module, "_BLOCK_CELLS", jobs.size * 300)  # a block an age

    def release() -> np.ndarray:
        return privelet_plus(counts, schema, 0.5, ("age",), np.random.default_rng(3)).noisy

    with monkeypatch.context() as plane_loops:
        plane_loops.setattr(pipeline_module._Plane, "grouped_inverse", lambda self, out, buffer: None)
        expected = release()
    rows = counting_loops(monkeypatch, "haar_rows_loops", "inverse", "nominal_inverse")
    plane = counting_loops(monkeypatch, "block_loops", "nominal_inverse")
    np.testing.assert_array_equal(release().view(np.uint64), expected.view(np.uint64))
    assert rows.count("nominal_inverse") > 10 and "inverse" not in rows and not plane


def test_a_plane_with_no_group_or_with_groups_numpy_sums_otherwise_has_no_grouped_inverse():
    _require_compiled()
    out = np.empty((1, 1, 7))
    assert _rows_plane(Hierarchy(HierarchyNode("only")), 1, 7).grouped_inverse(out, _buffer) is None
    # 40 groups of one leaf on rows of 2 values: numpy adds the groups by reduceat (another order)
    many = Hierarchy.from_nested({"*": {f"g{g}": [f"v{g}"] for g in range(40)}})
    plane = _rows_plane(many, 1, 2)
    assert not NominalTransform(many).loops_groups(plane.haar.n_coefficients)
    assert plane.grouped_inverse(np.empty((1, 40, 2)), _buffer) is None
    plane = _rows_plane(_groups_of_eight(), 2, 300)
    assert plane.grouped_inverse(np.empty((2, 64, 300)), _buffer) is not None
    # an output block that is not one run of memory (its values go through the plane's array)
    assert plane.grouped_inverse(np.empty((2, 64, 600))[..., :300], _buffer) is None


def _groups_of_eight() -> Hierarchy:
    """Groups of 8: on rows of 512 coefficients numpy visits them one by one."""
    return Hierarchy.from_nested({"*": {f"g{g}": [f"j{g}.{i}" for i in range(8)] for g in range(8)}})


def _buffer(name: str, size: int) -> np.ndarray:
    return np.empty(size)


def test_read_only_counts_take_the_compiled_loops(monkeypatch):
    """A frozen or memory-mapped matrix is read by the compiled loops as it is (no copy, no
    fallback): numba's read-only array type."""
    _require_compiled()
    counts = _counts((4, 33), seed=3)
    counts.flags.writeable = False
    loops = _compiled.block_loops()
    assert loops.checked_sum(counts.reshape(-1)) == counts.sum()
    padded = np.empty((4, 64))
    assert loops.checked_padding(counts, padded) == counts.sum()
    transform = NominalTransform(Hierarchy.flat([f"v{i}" for i in range(33)]))
    np.testing.assert_array_equal(transform.count_numerators(counts, 1), transform.numerators(counts, 1))


@pytest.mark.parametrize("path", ["numpy", "compiled"])
def test_small_blocks_round_the_same_by_either_exact_path(path, monkeypatch):
    """A block whose bound passes 2**52 grid units rounds by round_to_grid's correction on every
    coefficient instead of the rows loops' fused division; the rows loops still scale the
    finer levels on the way back. Both roundings are exact: the same bits."""
    if path == "numpy":
        monkeypatch.setattr(_compiled, "block_loops", lambda: None)
        monkeypatch.setattr(_compiled, "haar_rows_loops", lambda: None)
    else:
        _require_compiled()
    monkeypatch.setattr(pipeline_module, "_BLOCK_CELLS", 1 << 11)  # one age a block: small blocks
    schema = _schema()
    counts = _counts(schema.shape, seed=12)
    assert not pipeline_module.is_tiled(TransformPlan(schema, ("age",)), (1, *schema.shape[1:]))
    fused = privelet_plus(counts, schema, 0.5, ("age",), np.random.default_rng(7)).noisy
    calls: list[int] = []
    real = pipeline_module.round_to_grid

    def counted(*arguments, **options):
        calls.append(1)
        return real(*arguments, **options)

    monkeypatch.setattr(pipeline_module, "round_to_grid", counted)
    monkeypatch.setattr(pipeline_module, "rounds_by_one_division", lambda largest, grid_exponent: False)
    corrected = privelet_plus(counts, schema, 0.5, ("age",), np.random.default_rng(7)).noisy
    assert calls
    np.testing.assert_array_equal(corrected.view(np.uint64), fused.view(np.uint64))
