"""The marginals strategy (docs/math.md, "Marginals") against a dense reference on a small domain:
the weighted marginal operator A built cell by cell, least squares and variances from the
pseudo-inverse of A'A, and seeded releases against the exact expected error."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from privelet_gui.engine.errors import PriveletError, SchemaError
from privelet_gui.engine.noise.bits import release_key
from privelet_gui.engine.noise.calibration import calibrate
from privelet_gui.engine.strategies.marginals import MarginalsStrategy

SHAPE = (3, 4, 2)
# Two 2-way marginals, a 1-way one and the total, with unequal weights (the 3-way interaction is
# not measured: A'A is singular).
WEIGHTED = MarginalsStrategy(SHAPE, ((0, 1), (1, 2), (0,), ()), (2, 1, 3, 1))
# Axis 2 interacts with no other axis in a measured marginal.
SPARSE = MarginalsStrategy(SHAPE, ((0, 1), (2,)), (1, 4))
# M itself and a 1-way marginal: A has full column rank.
FULL = MarginalsStrategy(SHAPE, ((0, 1, 2), (0,)), (1, 2))
STRATEGIES = [WEIGHTED, SPARSE, FULL]


def dense_operator(strategy: MarginalsStrategy) -> np.ndarray:
    """A: one row per weighted marginal cell, in the strategy's order, built from cell coordinates."""
    cells = np.indices(strategy.shape).reshape(len(strategy.shape), -1)
    rows = []
    for subset, weight in zip(strategy.subsets, strategy.weights):
        marginal_shape = tuple(strategy.shape[a] for a in subset)
        target = np.ravel_multi_index(tuple(cells[a] for a in subset), marginal_shape) if subset else np.zeros(
            cells.shape[1], dtype=np.int64)
        block = np.zeros((math.prod(marginal_shape), cells.shape[1]))
        block[target, np.arange(cells.shape[1])] = weight
        rows.append(block)
    return np.concatenate(rows)


def all_boxes(shape: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
    per_axis = [list(zip(*np.triu_indices(n))) for n in shape]
    boxes = list(itertools.product(*per_axis))
    lo = np.array([[b[a][0] for a in range(len(shape))] for b in boxes])
    hi = np.array([[b[a][1] for a in range(len(shape))] for b in boxes])
    return lo, hi


def indicator(lo: np.ndarray, hi: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    q = np.zeros(shape)
    q[tuple(slice(a, b + 1) for a, b in zip(lo, hi))] = 1
    return q.reshape(-1)


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_sensitivity_influence_and_growth_are_the_dense_operator_s(strategy):
    a = dense_operator(strategy)
    assert strategy.rho == np.abs(a).sum(axis=0).max() == sum(strategy.weights)
    assert strategy.influence == (a != 0).sum(axis=0).max()
    assert strategy.growth == a.max() and strategy.n_measurements == len(a)
    counts = np.random.default_rng(1).integers(0, 40, SHAPE)
    np.testing.assert_array_equal(strategy.numerators(counts), a @ counts.reshape(-1))


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_eigenvalues_are_those_of_the_gram_matrix(strategy):
    a = dense_operator(strategy)
    expected = np.sort(np.linalg.eigvalsh(a.T @ a))
    d = len(SHAPE)
    closed = []
    for t in range(1 << d):
        multiplicity = math.prod(SHAPE[i] - 1 for i in range(d) if t >> i & 1)
        closed += [strategy.eigenvalues.get(t, 0.0)] * multiplicity
    np.testing.assert_allclose(np.sort(closed), expected, atol=1e-9)


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_the_reconstruction_is_the_pseudo_inverse_s_least_squares(strategy):
    a = dense_operator(strategy)
    y = np.random.default_rng(2).normal(size=len(a)) * 10
    expected = np.linalg.pinv(a.T @ a) @ a.T @ y
    np.testing.assert_allclose(strategy.reconstruct(y).reshape(-1), expected, atol=1e-9)
    # Noise-free measurements are consistent: the reconstruction has every measured marginal of M.
    counts = np.random.default_rng(3).integers(0, 40, SHAPE)
    exact = a @ counts.reshape(-1)
    np.testing.assert_allclose(a @ strategy.reconstruct(exact).reshape(-1), exact, atol=1e-9)
    if strategy is FULL:
        np.testing.assert_allclose(strategy.reconstruct(exact), counts, atol=1e-9)


@pytest.mark.parametrize("strategy", STRATEGIES)
@pytest.mark.parametrize("public_total", [False, True])
def test_query_variances_are_the_pseudo_inverse_s(strategy, public_total):
    a = dense_operator(strategy)
    gram = a.T @ a
    inverse = np.linalg.pinv(gram)
    lo, hi = all_boxes(SHAPE)
    got = strategy.query_variances(lo, hi, public_total=public_total)
    m = math.prod(SHAPE)
    for k in range(len(lo)):
        q = indicator(lo[k], hi[k], SHAPE)
        # Unbiased exactly when q is in A's row space; the public total answers q - (|q| / m) 1 + the exact total.
        estimable = np.allclose(gram @ (inverse @ q), q)
        if public_total:
            q = q - q.sum() / m
        if estimable:
            assert got[k] == pytest.approx(q @ inverse @ q, rel=1e-9, abs=1e-12)
        else:
            assert got[k] == np.inf
    assert np.isinf(got).any() == (strategy is not FULL) and np.isfinite(got).any()


def test_bad_strategies_are_refused():
    with pytest.raises(SchemaError, match="positive integers"):
        MarginalsStrategy(SHAPE, ((0,),), (0,))
    with pytest.raises(SchemaError, match="distinct axes"):
        MarginalsStrategy(SHAPE, ((0, 3),), (1,))
    with pytest.raises(SchemaError, match="measured once"):
        MarginalsStrategy(SHAPE, ((0, 1), (1, 0)), (1, 1))
    calibration = calibrate(1.0, 5, 2, neighbours="add-remove", rows=1)
    with pytest.raises(PriveletError, match="another strategy"):
        WEIGHTED.release(np.ones(SHAPE, dtype=np.int64), calibration, "exact", release_key(seed=1))


def test_a_release_at_a_huge_epsilon_gives_back_the_measured_marginals():
    counts = np.random.default_rng(4).integers(0, 50, SHAPE)
    strategy = WEIGHTED
    calibration = calibrate(1e9, strategy.rho, strategy.influence, neighbours="replace", rows=int(counts.sum()),
                            measurement_bound=strategy.growth)
    released = strategy.release(counts, calibration, "exact", release_key(seed=1))
    np.testing.assert_allclose(released.sum(axis=2), counts.sum(axis=2), atol=1e-4)
    np.testing.assert_allclose(released.sum(axis=0), counts.sum(axis=0), atol=1e-4)
    # The 3-way interaction is not measured: the release spreads it evenly (the least-norm answer).
    assert not np.allclose(released, counts, atol=1)


@pytest.mark.parametrize("sampler", ["exact", "standard"])
def test_seeded_releases_have_the_exact_expected_error(sampler):
    """The mean square error of every box query over 400 seeded releases against the exact figure
    (the grid's noise variance times q'(A'A)^-1 q): within 4 standard errors (a fixed seed: the
    outcome is fixed too)."""
    strategy = WEIGHTED
    counts = np.random.default_rng(5).integers(0, 30, SHAPE)
    lo, hi = all_boxes(SHAPE)
    answered = np.isfinite(strategy.query_variances(lo, hi))  # the others are biased by the unmeasured part
    lo, hi = lo[answered], hi[answered]
    queries = np.stack([indicator(lo[k], hi[k], SHAPE) for k in range(len(lo))])
    truth = queries @ counts.reshape(-1)
    calibration = calibrate(1.0, strategy.rho, strategy.influence, neighbours="add-remove", rows=int(counts.sum()),
                            measurement_bound=strategy.growth)
    exact = calibration.variance * strategy.query_variances(lo, hi).mean()
    errors = [((queries @ strategy.release(counts, calibration, sampler, release_key(seed=s)).reshape(-1) - truth) ** 2)
              .mean() for s in range(400)]
    assert abs(np.mean(errors) - exact) < 4 * np.std(errors) / np.sqrt(len(errors)), (np.mean(errors), exact)
    # The sensitivity is the weights' sum: the grid's noise is the Laplace noise of that scale.
    assert calibration.variance == pytest.approx(2 * float(strategy.rho) ** 2, rel=1e-5)


def test_a_spec_of_weighted_marginals_is_checked_and_releases_through_run():
    from privelet_gui.engine import OrdinalAttribute, ReleaseSpec, Schema, expected_error
    from privelet_gui.engine.accuracy.workloads import Workload, marginals
    from privelet_gui.engine.queries import QueryBatch

    schema = Schema([OrdinalAttribute.integer_range(name, 1, size) for name, size in zip("pqr", SHAPE)])
    chosen = ((("q", "p"), 2), (("r", "q"), 1), (("p",), 3), ((), 1))  # WEIGHTED, by attribute names
    spec = ReleaseSpec(schema, 1.0, "marginals", neighbours="add-remove", marginals=chosen)
    assert spec.marginals_strategy == WEIGHTED and spec.marginals[0] == (("p", "q"), 2)
    assert spec.rho == 7 and spec.name == "Weighted marginals" and spec.effective_sa == ()
    counts = np.random.default_rng(6).integers(0, 30, SHAPE)
    # The spec's release is the strategy's, with the spec's calibration and the seed's key.
    released = spec.run(counts, seed=4)
    np.testing.assert_array_equal(
        released.noisy, WEIGHTED.release(counts, spec.calibration(1), "exact", release_key(seed=4)))
    assert released.mechanism == "marginals" and released.spec.marginals == spec.marginals
    # Replace-one neighbours: twice the sensitivity, and the release is shifted to the exact total.
    shifted = spec.replace(neighbours="replace").run(counts, seed=4)
    assert shifted.total_shift is not None and shifted.noisy.sum() == pytest.approx(counts.sum())
    assert spec.replace(neighbours="replace").calibration(1).nominal_scale == 2 * spec.calibration(1).nominal_scale
    # Exact variances and expected errors are the strategy's.
    lo, hi = all_boxes(SHAPE)
    queries = QueryBatch(lo, hi, np.full(lo.shape, -1))
    np.testing.assert_allclose(spec.variances(queries), spec.unit_variance * WEIGHTED.query_variances(lo, hi))
    workload = marginals(schema, (1, 2), ["p", "q"])
    exact = spec.unit_variance * WEIGHTED.query_variances(workload.queries().lo, workload.queries().hi).mean()
    assert expected_error(spec, workload) == pytest.approx(exact)
    assert expected_error(spec, Workload.of_queries(schema, queries)) == np.inf  # 3-way boxes are biased
    # The worst box: infinite when a box is biased; with M measured, the largest over every box.
    assert spec.worst_factor() == np.inf
    full = spec.replace(marginals=((("p", "q", "r"), 1), (("p",), 2)))
    assert full.worst_factor() == pytest.approx(FULL.query_variances(lo, hi).max())
    with pytest.raises(PriveletError, match="mechanism 'marginals'"):
        ReleaseSpec(schema, 1.0, marginals=chosen)
    with pytest.raises(PriveletError, match="no S_A"):
        ReleaseSpec(schema, 1.0, "marginals", sa=("p",), marginals=chosen)
    with pytest.raises(SchemaError):
        ReleaseSpec(schema, 1.0, "marginals", marginals=((("p", "x"), 1),))
    with pytest.raises(SchemaError, match="positive integers"):
        ReleaseSpec(schema, 1.0, "marginals", marginals=((("p",), 0),))
    with pytest.raises(PriveletError, match="no per-axis plan"):
        _ = spec.plan


def test_a_release_file_keeps_its_marginals(tmp_path):
    from privelet_gui.engine import OrdinalAttribute, ReleaseSpec, Schema
    from privelet_gui.io import load_release, save_release

    schema = Schema([OrdinalAttribute.integer_range(name, 1, size) for name, size in zip("pqr", SHAPE)])
    spec = ReleaseSpec(schema, 0.5, "marginals", marginals=((("p", "q"), 2), (("r",), 1)))
    release = spec.run(np.ones(SHAPE), seed=2)
    meta = save_release(release, tmp_path / "r.npz", seed=2)
    # Boxes across p and r are answered with a bias: the file says the worst case is none.
    assert meta["marginals"] == [[["p", "q"], 2], [["r"], 1]] and meta["exact_worst_case_variance"] is None
    back = load_release(tmp_path / "r.npz")
    assert back.mechanism == "marginals" and back.marginals == release.marginals
    np.testing.assert_array_equal(back.noisy, release.noisy)
    assert back.spec.marginals_strategy == spec.marginals_strategy and back.calibration == release.calibration
