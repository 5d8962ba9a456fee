"""The paper's per-axis strategies: Haar, the nominal wavelet, the identity, and their product."""

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from privelet_gui.engine import (
    AxisStrategy,
    HaarTransform,
    Hierarchy,
    IdentityTransform,
    NominalAttribute,
    NominalTransform,
    OrdinalAttribute,
    Schema,
    SchemaError,
    StrategyPlan,
)
from privelet_gui.engine.strategies.plan import forward_along, reconstruct_along

from .strategies import hierarchies, measurement_matrix, schemas

FIG3 = Hierarchy.from_nested({"root": {"a": ["v1", "v2", "v3"], "b": ["v4", "v5", "v6"]}})


def subsets(names):
    return [combo for r in range(len(names) + 1) for combo in itertools.combinations(names, r)]


def weighted(t: AxisStrategy, x: np.ndarray, axis: int = 0) -> np.ndarray:
    """The weighted measurements of integer counts ``x`` along ``axis`` (numerators over denominators)."""
    z = forward_along(t, np.asarray(x, dtype=np.int64), axis)
    shape = [1] * z.ndim
    shape[axis] = -1
    return z / t.denominators.reshape(shape)


def coefficients(t: AxisStrategy, x: np.ndarray) -> np.ndarray:
    """The plain coefficients (weighted measurements over their weights) of a 1-D ``x``."""
    return weighted(t, x) / t.weights


# -- Haar ------------------------------------------------------------------------------
def test_haar_weights_match_the_paper_example():
    w = HaarTransform(8).weights
    assert (w[0], w[1], w[2], w[4]) == (8, 8, 4, 2)  # c0, c1, c2, c4


def test_haar_coefficients_are_means_and_half_differences():
    x = np.array([9, 3, 5, 7, 1, 1, 4, 2])
    t = HaarTransform(8)
    c = coefficients(t, x)
    assert c[0] == x.mean()
    assert c[1] == (x[:4].mean() - x[4:].mean()) / 2
    assert c[4] == (x[0] - x[1]) / 2
    np.testing.assert_array_equal(reconstruct_along(t, weighted(t, x), 0), x)


def test_haar_pads_to_a_power_of_two_and_measures_no_node_wholly_in_the_padding():
    x = np.arange(1, 6)  # 5 values, padded to 8
    t = HaarTransform(5)
    assert t.padded == 8 and t.n_measurements == 7  # the total, 1 + 2 + 3 nodes; (6, 7) is padding only
    c = coefficients(t, x)
    assert c[0] == x.sum() / 8
    assert c[-1] == (5 - 0) / 2  # the node (4, 5) holds 5 and a padded zero
    np.testing.assert_allclose(reconstruct_along(t, weighted(t, x), 0), x)
    assert t.rho == 4  # 1 + ceil(log2 5)


@pytest.mark.parametrize("size", [1, 2, 3, 7, 16, 33])
@pytest.mark.parametrize("axis", [0, 1, -1])
def test_haar_round_trip_every_axis(size, axis):
    rng = np.random.default_rng(size)
    shape = [3, 4, 2]
    shape[axis] = size
    x = rng.integers(0, 50, shape)
    t = HaarTransform(size)
    np.testing.assert_allclose(reconstruct_along(t, weighted(t, x, axis % 3), axis % 3), x, atol=1e-9)


@pytest.mark.parametrize("size", [2, 33, 101, 1001])
@pytest.mark.parametrize("columns", [1, 20, 200])
def test_haar_gives_the_same_numbers_however_many_positions_share_its_axis(size, columns):
    # One kernel for every line: a column alone gives the numbers it gives among many.
    t = HaarTransform(size)
    x = np.random.default_rng(size + columns).integers(0, 50, (size, columns))
    full = forward_along(t, x, 0)
    noisy = full + np.random.default_rng(7).normal(size=full.shape)
    values = reconstruct_along(t, noisy, 0)
    for j in sorted({0, columns // 3, columns - 1}):
        np.testing.assert_array_equal(full[:, j], forward_along(t, x[:, j : j + 1], 0)[:, 0])
        np.testing.assert_array_equal(values[:, j], reconstruct_along(t, noisy[:, j : j + 1], 0)[:, 0])


# -- nominal ---------------------------------------------------------------------------
def test_nominal_figure_3_weights_groups_and_values():
    t = NominalTransform(FIG3)
    np.testing.assert_array_equal(t.weights, [1, 1, 1] + [0.75] * 6)
    x = np.arange(1, 7)
    c = coefficients(t, x)
    assert c[0] == 21  # leaf-sum of the root
    assert c[1] == 6 - 21 / 2  # leafsum(a) - leafsum(root) / 2
    assert c[3] == 1 - 6 / 3  # v1: leafsum(v1) - leafsum(a) / 3
    np.testing.assert_allclose(reconstruct_along(t, weighted(t, x), 0), x)
    assert t.rho == 3
    assert t.n_measurements == 6 + 3  # over-complete: one more per internal node


def test_only_children_are_not_measured():
    # B1 and z are only children: their coefficients are 0 for every input
    h = Hierarchy.from_nested({"*": {"A": ["x", "y"], "B": {"B1": ["z"]}}})
    t = NominalTransform(h)
    measured = [h.labels[node] for node in t.nodes]
    assert measured == ["*", "A", "B", "x", "y"]
    np.testing.assert_allclose(reconstruct_along(t, weighted(t, np.array([3, 5, 7])), 0), [3, 5, 7])
    assert t.rho == 3 and h.height == 4


def test_mean_subtraction_changes_nothing_on_exact_measurements_but_fixes_noisy_ones():
    rng = np.random.default_rng(0)
    t = NominalTransform(FIG3)
    x = rng.integers(0, 9, 6)
    exact = weighted(t, x)
    np.testing.assert_allclose(reconstruct_along(t, exact, 0), x)
    noisy = exact + rng.normal(0, 1, exact.shape)
    # after mean subtraction every sibling group sums to zero, so the leaf sums are consistent:
    assert reconstruct_along(t, noisy, 0).sum() == pytest.approx(noisy[0])


def counts_along(h: Hierarchy, axis: int, rng: np.random.Generator) -> np.ndarray:
    """Random counts of shape (2, 3, 2) but with the hierarchy's leaves along ``axis``."""
    shape = [2, 3, 2]
    shape[axis] = h.size
    return rng.integers(0, 100, shape)


@settings(max_examples=60, deadline=None)
@given(hierarchies(), st.integers(0, 2), st.integers(0, 2**32 - 1))
def test_nominal_round_trip_random_hierarchies_every_axis(h, axis, seed):
    x = counts_along(h, axis, np.random.default_rng(seed))
    t = NominalTransform(h)
    np.testing.assert_allclose(reconstruct_along(t, weighted(t, x, axis), axis), x, atol=1e-9)


@pytest.mark.parametrize(
    "strategy",
    [HaarTransform(37), HaarTransform(20), NominalTransform(FIG3), IdentityTransform(5)],
    ids=["haar", "haar-20", "nominal", "identity"],
)
def test_reconstruction_inverts_the_measurements_exactly(strategy):
    np.testing.assert_allclose(strategy.reconstruction_matrix() @ strategy.measurement_matrix(), np.eye(strategy.size),
                               atol=1e-12)


# -- the product of the axes -----------------------------------------------------------
@settings(max_examples=40, deadline=None)
@given(schemas(), st.integers(0, 2**32 - 1))
def test_the_product_round_trips_for_every_sa(schema, seed):
    rng = np.random.default_rng(seed)
    m = rng.integers(0, 20, schema.shape)
    for sa in subsets(schema.names):
        plan = StrategyPlan.paper(schema, sa)
        z = plan.numerators(m)
        assert z.shape == plan.measurement_shape
        np.testing.assert_allclose(plan.reconstruct(z / plan.denominators()), m, atol=1e-8)


def test_weights_are_products_of_axis_weights_and_identity_is_weight_one():
    schema = Schema([OrdinalAttribute.integer_range("age", 0, 3), NominalAttribute("g", FIG3)])
    plan = StrategyPlan.paper(schema)
    assert measurement_matrix(plan).shape == (4 * 9, 4 * 6)
    np.testing.assert_array_equal(np.outer(plan.strategies[0].weights, plan.strategies[1].weights).shape, (4, 9))
    assert StrategyPlan.paper(schema, ["age"]).strategies[0].weights.tolist() == [1, 1, 1, 1]


def test_the_product_equals_the_axes_in_turn():
    schema = Schema([OrdinalAttribute.integer_range("age", 0, 2), NominalAttribute("g", FIG3)])
    rng = np.random.default_rng(3)
    m = rng.integers(0, 9, schema.shape)
    plan = StrategyPlan.paper(schema)
    along_age = forward_along(plan.strategies[0], m, 0)
    np.testing.assert_array_equal(plan.numerators(m), forward_along(plan.strategies[1], along_age, 1))
    np.testing.assert_allclose((plan.numerators(m) / plan.denominators()).ravel(), measurement_matrix(plan) @ m.ravel())


def test_numerators_are_exact_integers_for_counts():
    schema = Schema([OrdinalAttribute.integer_range("a", 0, 6), NominalAttribute("g", FIG3)])
    plan = StrategyPlan.paper(schema)
    m = np.random.default_rng(1).integers(0, 10**6, schema.shape)
    z = plan.numerators(m)
    assert z.dtype == np.int64
    exact = np.array([[int(v) for v in row] for row in m], dtype=object)
    along_a = np.array([[sum(int(f) * int(c) for f, c in zip(row, exact[:, g])) for g in range(6)]
                        for row in plan.strategies[0].measurement_matrix().astype(np.int64)], dtype=object)
    np.testing.assert_array_equal(z, forward_along(plan.strategies[1], along_a.astype(np.int64), 1))


def test_a_plan_says_what_to_fix():
    schema = Schema([OrdinalAttribute.integer_range("a", 0, 3)])
    with pytest.raises(SchemaError, match="unknown attribute 'b'"):
        StrategyPlan.paper(schema, ["b"])
    with pytest.raises(SchemaError, match="measures 5 values, the attribute has 4"):
        StrategyPlan(schema, [HaarTransform(5)])
    with pytest.raises(SchemaError, match="a strategy per attribute"):
        StrategyPlan(schema, [])


def test_round_trip_with_leaves_at_several_depths():
    # level order puts the deep leaf "o1" after "s1", "s2": the leaves are not one block
    h = Hierarchy.from_nested({"*": {"T": ["t1", "t2", "t3"], "O": {"O1": ["o1"]}, "S": ["s1", "s2"]}})
    t = NominalTransform(h)
    x = np.array([[1, 2, 3, 4, 5, 6], [6, 0, 2, 9, 1, 1]])
    c = weighted(t, x, 1) / t.weights
    row = list(t.nodes).index(h.index_of("O"))
    assert c[0, row] == 4 - 21 / 3
    np.testing.assert_allclose(reconstruct_along(t, weighted(t, x, 1), 1), x)
