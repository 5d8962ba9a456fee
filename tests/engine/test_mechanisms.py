"""Releases: calibration, exact rounding, the noise distribution, statistics, errors."""

import math
from fractions import Fraction

import numpy as np
import pytest

from privelet_gui.engine import (
    Cancelled,
    Hierarchy,
    NominalAttribute,
    OrdinalAttribute,
    PriveletError,
    QueryBatch,
    RangeQuery,
    ReleasePipeline,
    ReleaseSpec,
    Schema,
    SchemaError,
    Sizing,
    StrategyPlan,
    VarianceModel,
    basic,
    privelet,
    privelet_plus,
    query_variance,
)
from privelet_gui.engine.kernels.noise import round_to_units
from privelet_gui.engine.noise.calibration import calibrate, discrete_laplace_variance

from .sampling import draw

JOBS = Hierarchy.from_nested({"*": {"T": ["t1", "t2", "t3"], "O": {"O1": ["o1"]}, "S": ["s1", "s2"]}})
SCHEMA = Schema([OrdinalAttribute.integer_range("age", 0, 5), NominalAttribute("job", JOBS)])
TRUTH = np.arange(36, dtype=float).reshape(6, 6) % 7 * 3


def releases(count, sa, epsilon=1.0, seed=20261129, **options):
    rng = np.random.default_rng(seed)
    return np.stack([privelet_plus(TRUTH, SCHEMA, epsilon, sa, rng, **options).noisy for _ in range(count)])


@pytest.mark.parametrize("public_total", [False, True])
@pytest.mark.parametrize("sa", [(), ("age",), ("job",)])
def test_unbiased_and_variance_matches_the_exact_formula(sa, public_total):
    # raw: the mechanism's own noise; shifted to the public total: the derived variances
    count = 3000
    samples = releases(count, sa, public_total=public_total)
    if public_total:
        np.testing.assert_allclose(samples.sum(axis=(1, 2)), TRUTH.sum(), rtol=1e-12)
    # every cell's mean within 5 standard errors of the truth
    standard_error = samples.std(axis=0, ddof=1) / math.sqrt(count)
    assert (np.abs(samples.mean(axis=0) - TRUTH) <= 5 * standard_error).all()
    # the empirical variance of box queries within 15% of query_variance
    boxes = [
        {},
        {"age": ("1", "4")},
        {"age": ("2", "2"), "job": "t2"},
        {"job": "T"},
        {"age": ("0", "3"), "job": "S"},
        {"job": "O1"},
    ]
    for constraints in boxes:
        q = RangeQuery.build(SCHEMA, constraints)
        answers = samples[:, q.lo[0] : q.hi[0] + 1, q.lo[1] : q.hi[1] + 1].sum(axis=(1, 2))
        expected = VarianceModel(SCHEMA).batch(QueryBatch.of([q]), 1.0, sa, public_total=public_total)[0]
        if not constraints and public_total:
            assert expected == 0.0 and answers.var() < 1e-18  # the total is exact
            continue
        assert answers.var(ddof=1) == pytest.approx(expected, rel=0.15), constraints


def test_only_child_subtree_gets_the_same_noise_as_its_parent():
    # "O" has the single leaf o1 (through the only child O1): its count is estimated once.
    samples = releases(200, ())
    o1 = JOBS.leaves.index("o1")
    q_o = RangeQuery.build(SCHEMA, {"job": "O"})
    q_o1 = RangeQuery.build(SCHEMA, {"job": "o1"})
    assert query_variance(SCHEMA, 1.0, (), q_o) == pytest.approx(query_variance(SCHEMA, 1.0, (), q_o1))
    assert samples[:, :, o1].shape == (200, 6)


def test_basic_cell_variance_is_8_over_epsilon_squared():
    rng = np.random.default_rng(5)
    epsilon = 0.5
    noise = np.stack([basic(TRUTH, epsilon, rng, public_total=False).noisy - TRUTH for _ in range(2000)])
    assert noise.var() == pytest.approx(8 / epsilon**2, rel=0.03)
    assert abs(noise.mean()) < 5 * math.sqrt(8 / epsilon**2 / noise.size)


def test_add_remove_halves_the_noise_scale():
    rng = np.random.default_rng(9)
    replace = basic(TRUTH, 1.0, rng)
    add_remove = basic(TRUTH, 1.0, rng, neighbours="add-remove")
    assert add_remove.scale == pytest.approx(replace.scale / 2, rel=1e-5)
    assert add_remove.neighbours == "add-remove"
    noise = np.stack([basic(TRUTH, 1.0, rng, neighbours="add-remove").noisy - TRUTH for _ in range(2000)])
    assert noise.var() == pytest.approx(2.0, rel=0.03)  # 2 (1 / epsilon)^2


def test_mechanism_names_and_equivalences():
    seeded = lambda: np.random.default_rng(11)  # noqa: E731
    a = privelet(TRUTH, SCHEMA, 1.0, seeded())
    b = privelet_plus(TRUTH, SCHEMA, 1.0, (), seeded())
    np.testing.assert_array_equal(a.noisy, b.noisy)
    assert (a.mechanism, privelet_plus(TRUTH, SCHEMA, 1.0, ["age"]).mechanism) == ("privelet", "privelet+")
    c = basic(TRUTH, 1.0, seeded(), schema=SCHEMA)
    d = privelet_plus(TRUTH, SCHEMA, 1.0, SCHEMA.names, seeded())
    np.testing.assert_array_equal(c.noisy, d.noisy)
    assert c.mechanism == d.mechanism == "basic" and c.rho == 1 and c.sa == ("age", "job")
    assert basic(TRUTH, 1.0).schema is None


def test_seeded_releases_are_reproducible_and_flagged():
    r1 = privelet_plus(TRUTH, SCHEMA, 1.0, ["age"], np.random.default_rng(1))
    r2 = privelet_plus(TRUTH, SCHEMA, 1.0, ["age"], np.random.default_rng(1))
    np.testing.assert_array_equal(r1.noisy, r2.noisy)
    assert r1.seeded
    unseeded = [privelet_plus(TRUTH, SCHEMA, 1.0, ["age"]) for _ in range(2)]
    assert not unseeded[0].seeded
    assert not np.array_equal(unseeded[0].noisy, unseeded[1].noisy)


def test_the_input_is_left_untouched():
    m = TRUTH.copy()
    release = privelet_plus(m, SCHEMA, 1.0, ["job"], np.random.default_rng(2))
    np.testing.assert_array_equal(m, TRUTH)
    assert not np.shares_memory(release.noisy, m)


# -- the noise -------------------------------------------------------------------------------
def test_round_to_the_grid_is_exact_near_ties_too():
    rng = np.random.default_rng(3)
    d = rng.choice([1, 2, 4, 6, 10, 34, 106], 3000)
    # magnitudes keep |numerator| 2^-k below 2^62, as check_rows guarantees
    z = rng.integers(-(2**31), 2**31, 3000)
    # near ties on purpose: z / d within a hair of a half-integer
    half = rng.integers(-(2**22), 2**22, 3000) * 2 + 1
    near = (half * d) // 2 + rng.integers(-1, 2, 3000)
    for numerators in (z, near):
        for k in (-20, -3, 0, 2):
            for zi, di in zip(numerators.tolist(), d.tolist(), strict=True):
                got = int(round_to_units(np.int64(zi), np.int64(di), 1.0 / (di * 2.0**k), np.int64(k)))
                exact = Fraction(zi, di) / Fraction(2) ** k
                assert abs(Fraction(got) - exact) <= Fraction(1, 2)
    assert [int(round_to_units(np.int64(v), np.int64(1), 1.0, np.int64(0))) for v in (5, -5)] == [5, -5]
    assert [int(round_to_units(np.int64(v), np.int64(1), 0.5, np.int64(1))) for v in (5, -6)] == [3, -3]


def test_discrete_laplace_has_the_right_distribution():
    t = 0.7
    z = draw("standard", Fraction(t), 400_000)
    np.testing.assert_array_equal(z, np.round(z))  # integer-valued
    normaliser = (1 - math.exp(-t)) / (1 + math.exp(-t))
    for value in range(-4, 5):
        p = normaliser * math.exp(-t * abs(value))
        observed = np.mean(z == value)
        assert abs(observed - p) < 5 * math.sqrt(p * (1 - p) / len(z)), value
    assert z.var() == pytest.approx(discrete_laplace_variance(t), rel=0.02)


def test_grid_follows_the_sensitivity_not_epsilon():
    # g is the largest power of two with s rho / g >= 2^20 (1 + s K), whatever epsilon and n
    cal = calibrate(1.0, 33, 561, neighbours="replace", rows=1_000_000)
    assert 66 / cal.grid >= 2**20 * (1 + 2 * 561) > 66 / (2 * cal.grid)
    assert cal.units == math.ceil(66 / cal.grid) + 2 * 561
    assert cal.nominal_scale == 66
    assert 0 < cal.excess < 2**-20 and cal.scale == pytest.approx(66 * (1 + cal.excess), rel=1e-15)
    for epsilon, rows in ((1e-9, 10), (0.5, 10_000_000), (1e6, 1)):
        other = calibrate(epsilon, 33, 561, neighbours="replace", rows=rows)
        assert (other.grid_exponent, other.units) == (cal.grid_exponent, cal.units)
    # add/remove: the grid depends on the public row cap, never on n
    a = calibrate(1.0, 33, 561, neighbours="add-remove", rows=10)
    b = calibrate(1.0, 33, 561, neighbours="add-remove", rows=10**9)
    assert a == b
    # past 2^62 grid units of measurements (exact int64 arithmetic) a release is refused
    limit = calibrate(1.0, 1, 1, neighbours="replace", rows=1)
    calibrate(1.0, 1, 1, neighbours="replace", rows=int(2**62 * limit.grid) - 1)
    with pytest.raises(PriveletError, match=r"too large for an exact release.*put more attributes in S_A"):
        calibrate(1.0, 1, 1, neighbours="replace", rows=int(2**62 * limit.grid))


def test_releases_from_the_same_input_share_the_output_grid():
    # Basic: outputs are multiples of the grid g for every input, so no output value is
    # impossible under a neighbouring input (the Mironov attack on floating-point Laplace).
    m0 = np.zeros((50,))
    m1 = m0.copy()
    m1[3] = 1
    for m in (m0, m1):
        release = basic(m, 1.0, np.random.default_rng(0), public_total=False)  # the mechanism's own output
        units = release.noisy / release.calibration.grid
        np.testing.assert_array_equal(units, np.round(units))


# -- progress, cancel, errors ----------------------------------------------------------------
def test_progress_is_monotone_and_cancel_stops():
    seen = []
    privelet_plus(TRUTH, SCHEMA, 1.0, (), np.random.default_rng(0), progress=lambda f, s: seen.append((f, s)))
    fractions = [f for f, _ in seen]
    assert fractions == sorted(fractions) and fractions[-1] == 1.0
    assert any("noise" in s for _, s in seen) and any("invers" in s for _, s in seen)
    with pytest.raises(Cancelled):
        privelet_plus(TRUTH, SCHEMA, 1.0, (), should_cancel=lambda: True)


@pytest.mark.parametrize("epsilon", [0, -1, float("nan"), float("inf"), "1", None])
def test_bad_epsilon_says_what_to_fix(epsilon):
    with pytest.raises(PriveletError, match="epsilon must be a"):
        privelet_plus(TRUTH, SCHEMA, epsilon)
    with pytest.raises(PriveletError, match="epsilon must be a"):
        basic(TRUTH, epsilon)


def test_bad_matrices_and_sa_say_what_to_fix():
    with pytest.raises(PriveletError, match=r"shape \(5, 6\) but the schema needs \(6, 6\)"):
        privelet_plus(TRUTH[:5], SCHEMA, 1.0)
    with pytest.raises(SchemaError, match=r"unknown attribute 'sex'.*'age', 'job'"):
        privelet_plus(TRUTH, SCHEMA, 1.0, ["sex"])
    with pytest.raises(PriveletError, match="negative or fractional"):
        privelet_plus(TRUTH - 1, SCHEMA, 1.0)
    with pytest.raises(PriveletError, match="negative or fractional"):
        privelet_plus(TRUTH + 0.5, SCHEMA, 1.0)
    with pytest.raises(PriveletError, match="NaN"):
        privelet_plus(np.full(SCHEMA.shape, np.nan), SCHEMA, 1.0)
    with pytest.raises(PriveletError, match="neighbours"):
        privelet_plus(TRUTH, SCHEMA, 1.0, neighbours="swap")
    with pytest.raises(PriveletError, match="Generator"):
        privelet_plus(TRUTH, SCHEMA, 1.0, rng=42)


@pytest.mark.parametrize(
    "shape, sa, target",
    [((101, 2, 16, 8), (0, 1), 200), ((7, 5, 3), (0, 2), 4), ((7, 5), (), 4), ((9, 4), (0, 1), 10**6), ((3, 3, 3), (0, 1, 2), 1)],
)
def test_blocks_cover_every_cell_exactly_once(shape, sa, target):
    schema = Schema([OrdinalAttribute.integer_range(f"x{axis}", 0, size - 1) for axis, size in enumerate(shape)])
    plan = StrategyPlan.paper(schema, [schema.names[axis] for axis in sa])
    pipeline = ReleasePipeline(plan, ReleaseSpec(schema, 1.0).calibration(1), "exact", Sizing(block_cells=target))
    hits = np.zeros(shape, dtype=int)
    for index in pipeline.blocks():
        hits[index] += 1
        for axis, part in enumerate(index):
            if axis not in sa:
                assert part == slice(0, shape[axis])
    assert (hits == 1).all()


def test_release_reports_exact_variances_with_its_own_scale():
    release = privelet_plus(TRUTH, SCHEMA, 0.8, ["age"], np.random.default_rng(0))
    q = RangeQuery.build(SCHEMA, {"age": ("1", "3"), "job": "T"})
    # the effective scale exceeds lambda by less than 2^-20, so variances by less than 2^-19
    ratio = release.variance(q, raw=True) / query_variance(SCHEMA, 0.8, ["age"], q)
    assert 1 <= ratio < 1 + 2**-19
    assert ratio == pytest.approx((1 + release.calibration.excess) ** 2, rel=1e-12)
    # shifted to the public total, its variance is that of the shifted release (the same excess)
    shifted = VarianceModel(SCHEMA).batch(QueryBatch.of([q]), 0.8, ["age"], public_total=True)[0]
    assert release.public_total and release.variance(q) == pytest.approx(shifted * ratio, rel=1e-12)
    assert release.spec.uses_public_total
    from privelet_gui.engine import worst_case_variance

    assert release.worst_case_variance == pytest.approx(worst_case_variance(SCHEMA, 0.8, ["age"]), rel=2**-19)
    plain = basic(TRUTH, 1.0, np.random.default_rng(0))
    assert plain.worst_case_variance == pytest.approx(8 * TRUTH.size, rel=2**-19)
    with pytest.raises(PriveletError, match="no schema"):
        plain.variance(q)


def test_data_derived_domains_are_flagged_on_the_schema():
    flagged = Schema([OrdinalAttribute.integer_range("age", 0, 5, domain_from_data=True), NominalAttribute("job", JOBS)])
    assert flagged.domain_from_data == ("age",)
    assert SCHEMA.domain_from_data == ()
    assert flagged != SCHEMA


WIDE = Schema(
    [
        OrdinalAttribute.integer_range("a", 0, 2),
        NominalAttribute("n", Hierarchy.from_nested({"*": {f"g{g}": [f"v{g}-{i}" for i in range(1 + g % 7)] for g in range(60)}})),
        OrdinalAttribute.integer_range("o", 0, 300),
    ]
)


@pytest.mark.parametrize("sizing", [Sizing(), Sizing(block_cells=300, big_block_cells=2000, pencil_cells=500)],
                         ids=["default", "small blocks and big ones"])
def test_the_pipeline_reconstructs_the_matrix_when_noise_is_negligible(sizing):
    m = np.random.default_rng(0).integers(0, 50, WIDE.shape).astype(float)
    for sa in [("a",), (), ("a", "o"), ("n",)]:
        release = ReleaseSpec(WIDE, 1e7, "privelet+", sa).run(m, rng=np.random.default_rng(1), sizing=sizing)
        np.testing.assert_allclose(release.noisy, m, atol=1e-3)


def test_threads_do_not_change_the_result_and_cancel_stops_them():
    h = Hierarchy.from_nested({"*": {f"g{g}": [f"v{g}-{i}" for i in range(5)] for g in range(20)}})
    schema = Schema([OrdinalAttribute.integer_range("a", 0, 39), NominalAttribute("n", h), OrdinalAttribute.integer_range("o", 0, 99)])
    m = np.random.default_rng(3).integers(0, 4, schema.shape).astype(float)
    one = privelet_plus(m, schema, 1.0, ["a"], np.random.default_rng(5), workers=1)
    two = privelet_plus(m, schema, 1.0, ["a"], np.random.default_rng(5), workers=2)
    np.testing.assert_array_equal(one.noisy, two.noisy)
    calls = []

    def cancel_after_three() -> bool:
        calls.append(1)
        return len(calls) > 3

    with pytest.raises(Cancelled):
        privelet_plus(m, schema, 1.0, ["a"], workers=2, should_cancel=cancel_after_three)
    with pytest.raises(PriveletError, match="workers must be a positive integer"):
        privelet_plus(m, schema, 1.0, ["a"], workers=0)


BIG = Schema(
    [OrdinalAttribute.integer_range("a", 0, 9), NominalAttribute("job", JOBS), OrdinalAttribute.integer_range("o", 0, 30)]
)
SMALL_PENCILS = Sizing(big_block_cells=500, pencil_cells=200)


def test_a_big_single_block_runs_in_slabs_and_tiles_on_threads():
    # S_A empty: one block, in three passes; small pencils make many of them
    m = np.random.default_rng(2).integers(0, 9, BIG.shape).astype(float)
    spec = ReleaseSpec(BIG, 1.0, "privelet")
    pipeline = ReleasePipeline(spec.plan, spec.calibration(1), spec.sampler, SMALL_PENCILS)
    (index,) = pipeline.blocks()
    big = pipeline.big_block(index)
    assert pipeline.is_big(index) and big.slabs > 5 and len(big.pencils) > 5
    # slabs and pencils put the strategy back together
    np.testing.assert_allclose(spec.replace(epsilon=1e7).run(m, seed=1, sizing=SMALL_PENCILS).noisy, m, atol=1e-3)
    one = spec.run(m, rng=np.random.default_rng(5), workers=1, sizing=SMALL_PENCILS)
    three = spec.run(m, rng=np.random.default_rng(5), workers=3, sizing=SMALL_PENCILS)
    whole = spec.run(m, rng=np.random.default_rng(5))  # one small block: no passes at all
    np.testing.assert_array_equal(one.noisy, three.noisy)  # each measurement's noise from its position
    np.testing.assert_array_equal(one.noisy, whole.noisy)
    seen: list[tuple[float, str]] = []
    spec.run(m, workers=2, sizing=SMALL_PENCILS, progress=lambda f, stage: seen.append((f, stage)))
    assert [f for f, _ in seen] == sorted(f for f, _ in seen) and seen[-1][0] == 1.0
    assert any("slab" in stage for _, stage in seen) and any("tile" in stage for _, stage in seen)
    calls = []

    def cancel_after_five() -> bool:
        calls.append(1)
        return len(calls) > 5

    with pytest.raises(Cancelled):
        spec.run(m, workers=2, sizing=SMALL_PENCILS, should_cancel=cancel_after_five)


def test_a_big_single_blocks_output_lies_over_its_intermediate_and_waits_for_the_slabs_under_it(monkeypatch):
    # S_A empty: pass 3 writes slab s's values over the end of slab s - 1's row of the intermediate
    # (a slab has fewer values than its row has measurements). A slab whose predecessors are
    # slow to be read must wait for them, whatever the threads' timing.
    import time

    from privelet_gui.engine.pipeline import BigBlock

    m = np.random.default_rng(2).integers(0, 9, BIG.shape).astype(float)
    spec = ReleaseSpec(BIG, 1.0, "privelet")
    alone = spec.run(m, rng=np.random.default_rng(5), workers=1, sizing=SMALL_PENCILS).noisy
    reconstruct = BigBlock.reconstruct_slabs
    calls = []

    def odd_slabs_late(self, rows, out, scratch):
        calls.append(1)
        if len(calls) % 2:
            time.sleep(0.01)
        return reconstruct(self, rows, out, scratch)

    monkeypatch.setattr(BigBlock, "reconstruct_slabs", odd_slabs_late)
    noisy = spec.run(m, rng=np.random.default_rng(5), workers=3, sizing=SMALL_PENCILS).noisy
    np.testing.assert_array_equal(noisy, alone)
    root = noisy
    while isinstance(root.base, np.ndarray):
        root = root.base
    pipeline = ReleasePipeline(spec.plan, spec.calibration(1), spec.sampler, SMALL_PENCILS)
    big = pipeline.big_block(pipeline.blocks()[0])
    assert root.size == big.slabs * big.slab_measurements > m.size  # the intermediate's memory, not a matrix of its own


def test_huge_counts_round_exactly_in_every_pass():
    m = np.random.default_rng(2).integers(0, 9, BIG.shape).astype(float)
    m[3, 2, 7] = 2.0**34  # large numerators: the exact integer rounding must hold them
    spec = ReleaseSpec(BIG, 1e7, "privelet")
    np.testing.assert_allclose(spec.run(m, seed=1, sizing=SMALL_PENCILS).noisy, m, rtol=1e-12, atol=1e-3)
    np.testing.assert_allclose(spec.run(m, seed=1).noisy, m, rtol=1e-12, atol=1e-3)


@pytest.mark.parametrize("sa", [("a",), (), ("a", "o"), ("n",)], ids=["blocks", "one-big-block", "basic-like", "few-big-blocks"])
def test_the_memory_estimate_covers_what_a_release_holds(sa):
    import tracemalloc

    sizing = Sizing(big_block_cells=1 << 14)  # small enough for S_A empty to take slabs
    schema = Schema([OrdinalAttribute.integer_range("a", 0, 19), *list(WIDE)[1:]])
    m = np.random.default_rng(0).integers(0, 5, schema.shape).astype(float)
    spec = ReleaseSpec(schema, 1.0, "privelet+", sa)
    estimate = spec.peak_bytes(1, sizing)
    tracemalloc.start()
    try:
        release = spec.run(m, rng=np.random.default_rng(1), workers=1, sizing=sizing)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    del release
    assert peak <= estimate <= 2 * peak + (4 << 20), (peak / m.nbytes, estimate / m.nbytes)


def test_a_release_that_would_not_fit_in_memory_is_refused_up_front(monkeypatch):
    from privelet_gui.engine import memory

    monkeypatch.setattr(memory, "available_memory", lambda: 1 << 20)
    with pytest.raises(PriveletError, match=r"needs about .* of memory besides the matrix, but only 1.0 MiB .* put more attributes in S_A"):
        privelet_plus(TRUTH, SCHEMA, 1.0, ())
    monkeypatch.setattr(memory, "available_memory", lambda: None)  # unknown: no check
    assert privelet_plus(TRUTH, SCHEMA, 1.0, ()).noisy.shape == TRUTH.shape


def test_a_seeded_release_has_the_same_bits_whatever_blas_threads(tmp_path):
    # A Dask worker process runs BLAS on one thread; the one-machine release must not depend
    # on that.
    import os
    import subprocess
    import sys

    script = (
        "import sys, numpy as np\n"
        "from privelet_gui.engine import Hierarchy, NominalAttribute, OrdinalAttribute, ReleaseSpec, Schema\n"
        "schema = Schema([OrdinalAttribute.integer_range('a', 0, 99), NominalAttribute('b', Hierarchy.flat(['x', 'y', 'z'])),\n"
        "                 OrdinalAttribute.integer_range('c', 0, 14_999)])\n"
        "matrix = np.random.default_rng(0).poisson(0.05, schema.shape).astype(np.float64)\n"
        "for mechanism, sa in (('privelet', ()), ('privelet+', ('b',))):\n"
        "    noisy = ReleaseSpec(schema, 0.5, mechanism, sa).run(matrix, rng=np.random.default_rng(7), workers=2).noisy\n"
        "    np.save(sys.argv[1] + mechanism + '.npy', noisy)\n"
    )
    results = {}
    for threads in ("1", "2"):
        env = {**os.environ, "OPENBLAS_NUM_THREADS": threads, "OMP_NUM_THREADS": threads, "MKL_NUM_THREADS": threads}
        prefix = str(tmp_path / threads)
        subprocess.run([sys.executable, "-c", script, prefix], check=True, env=env)
        results[threads] = [np.load(prefix + name + ".npy") for name in ("privelet", "privelet+")]
    for one, two in zip(results["1"], results["2"], strict=True):
        assert np.array_equal(one, two)


@pytest.mark.parametrize(
    "sa, mechanism",
    [(("a",), "privelet+"), ((), "privelet+"), (("a", "o"), "privelet+"), (("n",), "privelet+"), ((), "basic"),
     (("a", "n"), "privelet+")],
    ids=["blocks", "one-big-block", "last-axis-nominal", "blocks-along-the-nominal", "basic", "rows-only"],
)
def test_a_release_written_into_its_input_has_the_same_bits(sa, mechanism):
    """``overwrite_input``: the noisy matrix in M's own memory, bit for bit the release made
    beside it, in every layout (blocks, one big block in three passes, Basic)."""
    sizing = Sizing(block_cells=1 << 10, big_block_cells=1 << 12, pencil_cells=1 << 8)
    groups = {f"g{g}": [f"v{g}-{i}" for i in range(1 + g % 4)] for g in range(12)}
    schema = Schema([OrdinalAttribute.integer_range("a", 0, 19), NominalAttribute("n", Hierarchy.from_nested({"*": groups})),
                     OrdinalAttribute.integer_range("o", 0, 40)])
    m = np.random.default_rng(0).integers(0, 5, schema.shape).astype(float)
    spec = ReleaseSpec(schema, 1.0, mechanism, sa)
    beside = spec.run(m.copy(), rng=np.random.default_rng(7), workers=2, sizing=sizing)
    counts = m.copy()
    inside = spec.run(counts, rng=np.random.default_rng(7), workers=2, overwrite_input=True, sizing=sizing)
    assert inside.noisy is counts or np.shares_memory(inside.noisy, counts)  # no second matrix
    np.testing.assert_array_equal(inside.noisy, beside.noisy)
    assert inside.total_shift == beside.total_shift
    # an array it cannot write into is left as it is (the release goes to a new one)
    frozen = m.copy()
    frozen.flags.writeable = False
    kept = spec.run(frozen, rng=np.random.default_rng(7), overwrite_input=True, sizing=sizing)
    np.testing.assert_array_equal(frozen, m)
    np.testing.assert_array_equal(kept.noisy, beside.noisy)
    assert not np.shares_memory(kept.noisy, frozen)
