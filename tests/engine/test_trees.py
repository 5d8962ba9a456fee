"""Trees of counts with least squares: the reconstruction against dense least squares, the worked
numbers of docs/math.md, exact variances against brute force and seeded releases, and names."""

import itertools

import numpy as np
import pytest

from privelet_gui.engine import (
    Hierarchy,
    NominalAttribute,
    OrdinalAttribute,
    PrefixSums,
    PriveletError,
    QueryBatch,
    ReleaseSpec,
    Schema,
    SchemaError,
    TreeStrategy,
    Workload,
    axis_strategy,
    expected_error,
)
from privelet_gui.engine.strategies.plan import forward_along, reconstruct_along
from privelet_gui.io import load_release, save_release

HIERARCHY = Hierarchy.from_nested(
    {"*": {"a": ["v1", "v2", "v3"], "b": {"bb": ["v4", "v5"]}, "c": ["v6"], "d": {"dd": {"ddd": ["v7", "v8", "v9", "v10"]}}}}
)

TREES = [
    TreeStrategy.branching(8, 2),
    TreeStrategy.branching(13, 3),
    TreeStrategy.branching(10, 4, [1, 0, 3]),
    TreeStrategy.branching(37, 5, [2, 0, 1, 3]),
    TreeStrategy.branching(2, 16),
    TreeStrategy.of_hierarchy(HIERARCHY),
    TreeStrategy.of_hierarchy(HIERARCHY, [0, 1, 2, 1, 3]),
]


@pytest.mark.parametrize("tree", TREES, ids=repr)
def test_the_reconstruction_is_least_squares_and_inverts_the_measurements(tree):
    f = tree.measurement_matrix()
    r = tree.reconstruction_matrix()
    # every weighted measurement has the same noise: least squares is the pseudo-inverse of F
    np.testing.assert_allclose(r, np.linalg.pinv(f), atol=1e-12)
    np.testing.assert_allclose(r @ f, np.eye(tree.size), atol=1e-12)


@pytest.mark.parametrize("tree", TREES, ids=repr)
def test_the_last_axis_row_by_row_gives_the_numbers_of_any_other_axis(tree):
    # the last axis has kernels of its own (rows); the numbers must be the same to the bit
    rng = np.random.default_rng(tree.size)
    x = rng.integers(0, 50, (tree.size, 7))
    across = forward_along(tree, x, 0)
    by_rows = forward_along(tree, x.T, 1)
    np.testing.assert_array_equal(by_rows, across.T)
    np.testing.assert_array_equal(across, tree.measurement_matrix() @ x)
    noisy = across + rng.normal(size=across.shape)
    values = reconstruct_along(tree, noisy, 0)
    np.testing.assert_array_equal(reconstruct_along(tree, noisy.T, 1), values.T)
    np.testing.assert_allclose(values, tree.reconstruction_matrix() @ noisy, atol=1e-9)


@pytest.mark.parametrize("tree", TREES, ids=repr)
def test_sensitivity_influence_and_growth_are_the_measurement_matrix_s(tree):
    f = tree.measurement_matrix()
    assert tree.rho == np.abs(f).sum(axis=0).max()
    assert tree.influence == (f != 0).sum(axis=0).max()
    assert tree.growth == np.abs(f).max()
    assert tree.weights.tolist() == sorted(tree.weights.tolist(), key=lambda w: 0) and (tree.weights >= 1).all()


@pytest.mark.parametrize("tree", TREES, ids=repr)
def test_exact_variances_are_the_dense_ones(tree):
    r = tree.reconstruction_matrix()
    covariance = r @ r.T
    lo, hi = np.triu_indices(tree.size)
    dense = np.array([covariance[a:b + 1, a:b + 1].sum() for a, b in zip(lo, hi)])
    np.testing.assert_allclose(tree.interval_variances(lo, hi), dense, rtol=1e-10)
    np.testing.assert_allclose(tree.interval_total_covariances(lo, hi),
                               [covariance[a:b + 1].sum() for a, b in zip(lo, hi)], rtol=1e-10)
    assert tree.total_variance() == pytest.approx(covariance.sum())
    assert tree.worst_interval_variance() == pytest.approx(dense.max())


def test_the_sensitivities_of_math_md():
    two = TreeStrategy.branching(8, 2)
    assert (two.rho, two.influence, two.n_measurements) == (4, 4, 15)
    weighted = TreeStrategy.branching(10, 4, [1, 0, 3])
    assert (weighted.rho, weighted.influence, weighted.growth) == (4, 2, 3)


def test_the_worked_numbers_of_math_md():
    """docs/math.md, "Beyond the paper": epsilon 1, add/remove, the mean over every range."""
    one = Schema([OrdinalAttribute.integer_range("x", 0, 7)])
    lo, hi = np.triu_indices(8)
    ranges = Workload.of_queries(one, QueryBatch(lo[:, None], hi[:, None], np.full((36, 1), -1)))

    def error(schema, names, workload):
        return expected_error(ReleaseSpec(schema, 1.0, "strategies", neighbours="add-remove", strategies=names), workload)

    assert error(one, ("identity",), ranges) == pytest.approx(6.6667, abs=1e-4)
    assert error(one, ("tree-2",), ranges) == pytest.approx(26.0741, abs=1e-4)
    assert error(one, ("tree-8",), ranges) == pytest.approx(13.3333, abs=1e-4)
    two = Schema([OrdinalAttribute.integer_range("x", 0, 7), OrdinalAttribute.integer_range("y", 0, 7)])
    pairs = list(itertools.product(range(36), repeat=2))
    boxes = QueryBatch(np.array([[lo[i], lo[j]] for i, j in pairs]), np.array([[hi[i], hi[j]] for i, j in pairs]),
                       np.full((len(pairs), 2), -1))
    boxes_workload = Workload.of_queries(two, boxes)
    assert error(two, ("identity", "identity"), boxes_workload) == pytest.approx(22.2222, abs=1e-4)
    assert error(two, ("tree-2", "tree-2"), boxes_workload) == pytest.approx(339.9287, abs=1e-4)


def test_a_hierarchy_tree_keeps_the_top_of_each_chain_and_measures_groups():
    tree = TreeStrategy.of_hierarchy(HIERARCHY)
    runs = sorted(zip(tree._low.tolist(), tree._high.tolist()))
    # b -> bb and d -> dd -> ddd are chains: one node each; c -> v6 too
    assert runs == sorted([(0, 10), (0, 3), (3, 5), (5, 6), (6, 10)] + [(i, i + 1) for i in range(10) if i != 5])
    assert len(set(runs)) == len(runs)
    assert tree.level_weights == (1, 1, 1, 1, 1)  # the levels are the hierarchy's depths


def test_names_build_strategies_and_bad_names_are_refused_with_the_forms():
    age = OrdinalAttribute.integer_range("age", 0, 99)
    country = NominalAttribute("country", HIERARCHY)
    assert axis_strategy(age, "tree-8/0,1,1,1").level_weights == (0, 1, 1, 1)
    assert axis_strategy(country, "hierarchy").size == 10
    assert axis_strategy(age, "wavelet").kind == "haar" and axis_strategy(age, "identity").separable
    for attribute, name in ((age, "hierarchy"), (country, "tree-4"), (age, "tree-x"), (age, "tree-1"), (age, "quad")):
        with pytest.raises(SchemaError, match=r"identity|branching"):
            axis_strategy(attribute, name)
    with pytest.raises(SchemaError, match="whole numbers"):
        axis_strategy(age, "tree-8/1,a")
    with pytest.raises(SchemaError, match="measure its leaves"):
        axis_strategy(age, "tree-10/1,1,0")
    with pytest.raises(SchemaError, match="3 levels needs 3 weights"):
        axis_strategy(age, "tree-10/1,1")


def test_a_spec_of_named_strategies_is_checked_and_labelled():
    schema = Schema([OrdinalAttribute.integer_range("age", 0, 99), NominalAttribute("country", HIERARCHY)])
    spec = ReleaseSpec(schema, 1.0, "strategies", strategies=("tree-4", "identity"))
    assert spec.label == "strategies" and spec.effective_sa == ("country",) and spec.name == "Per-axis strategies"
    assert spec.rho == 5  # four levels of 1 on age, the identity on country
    paper = ReleaseSpec(schema, 1.0, "strategies", strategies=("wavelet", "identity"))
    assert paper.label == "privelet+" and paper.plan.rho == ReleaseSpec(schema, 1.0, sa=("country",)).plan.rho
    with pytest.raises(PriveletError, match="a strategy per attribute"):
        ReleaseSpec(schema, 1.0, strategies=("tree-4", "identity"))
    with pytest.raises(PriveletError, match="name a strategy per attribute"):
        ReleaseSpec(schema, 1.0, "strategies")
    with pytest.raises(SchemaError, match="2 attributes, 1 strategy"):
        ReleaseSpec(schema, 1.0, "strategies", strategies=("tree-4",))


def test_a_release_with_trees_gives_back_the_counts_at_a_huge_epsilon():
    schema = Schema([OrdinalAttribute.integer_range("age", 0, 20), NominalAttribute("country", HIERARCHY),
                     OrdinalAttribute.integer_range("hours", 0, 4)])
    counts = np.random.default_rng(3).integers(0, 50, schema.shape).astype(float)
    for names in (("tree-4", "hierarchy", "identity"), ("tree-2/0,1,1,1,1,1", "hierarchy/0,1,2,1,1", "tree-3")):
        spec = ReleaseSpec(schema, 1e9, "strategies", strategies=names, neighbours="add-remove")
        np.testing.assert_allclose(spec.run(counts, seed=1).noisy, counts, atol=1e-4)


def test_seeded_releases_have_the_exact_expected_error():
    """The mean square error over 400 seeded releases of a 64-value axis against the exact
    figure: within 4 standard errors of the mean (a fixed seed: the outcome is fixed too)."""
    schema = Schema([OrdinalAttribute.integer_range("x", 0, 63)])
    lo, hi = np.triu_indices(64)
    queries = QueryBatch(lo[:, None], hi[:, None], np.full((len(lo), 1), -1))
    counts = np.random.default_rng(5).integers(0, 30, 64).astype(float)
    truth = PrefixSums(counts).answer_batch(queries)
    for names in (("tree-4/0,1,1,1",), ("tree-8",)):
        spec = ReleaseSpec(schema, 1.0, "strategies", strategies=names, neighbours="add-remove")
        errors = [((PrefixSums(spec.run(counts, seed=s).noisy).answer_batch(queries) - truth) ** 2).mean()
                  for s in range(400)]
        exact = expected_error(spec, Workload.of_queries(schema, queries))
        assert abs(np.mean(errors) - exact) < 4 * np.std(errors) / np.sqrt(len(errors)), (names, np.mean(errors), exact)


def test_a_release_file_keeps_its_strategies(tmp_path):
    schema = Schema([OrdinalAttribute.integer_range("age", 0, 20), NominalAttribute("country", HIERARCHY)])
    spec = ReleaseSpec(schema, 0.5, "strategies", strategies=("tree-4/0,1,1,1", "hierarchy"))
    release = spec.run(np.ones(schema.shape), seed=2)
    assert release.strategies == ("tree-4/0,1,1,1", "hierarchy") and release.mechanism == "strategies"
    save_release(release, tmp_path / "r.npz", seed=2)
    back = load_release(tmp_path / "r.npz")
    assert back.strategies == release.strategies and back.spec.plan.rho == spec.plan.rho
    assert back.worst_case_variance == pytest.approx(release.worst_case_variance)
    # a paper mechanism written as named strategies is the paper's mechanism, as before
    plain = ReleaseSpec(schema, 0.5, "strategies", strategies=("wavelet", "identity")).run(np.ones(schema.shape), seed=2)
    assert plain.mechanism == "privelet+" and plain.strategies == () and plain.sa == ("country",)
