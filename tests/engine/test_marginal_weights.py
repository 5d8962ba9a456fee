"""Choosing a marginals strategy for a workload (docs/math.md, "Choosing marginals"): the expected
error against the dense pseudo-inverse, the descent's gradient, and the learned weights."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from privelet_gui.engine import Hierarchy, NominalAttribute, OrdinalAttribute, ReleaseSpec, Schema, expected_error
from privelet_gui.engine.accuracy.marginal_weights import (
    WEIGHT_SCALE,
    _below,
    _supports,
    _WeightedError,
    optimised_marginals,
)
from privelet_gui.engine.accuracy.workloads import Workload, marginals, marginals_expected_error, workload_components
from privelet_gui.engine.strategies.marginals import MarginalsStrategy

from .test_marginals import dense_operator, indicator

SCHEMA = Schema([OrdinalAttribute.integer_range("a", 0, 2), NominalAttribute("b", Hierarchy.flat(list("wxyz"))),
                 OrdinalAttribute.integer_range("c", 0, 1)])


def dense_error(strategy: MarginalsStrategy, workload: Workload, public_total: bool) -> float:
    """2 (rho / epsilon)^2 times the mean q' (A'A)^+ q over the listed queries, epsilon 1, add/remove."""
    a = dense_operator(strategy)
    inverse = np.linalg.pinv(a.T @ a)
    queries = workload.queries()
    m = a.shape[1]
    total = 0.0
    for lo, hi in zip(queries.lo, queries.hi):
        q = indicator(lo, hi, SCHEMA.shape)
        if public_total:
            q = q - q.sum() / m
        total += q @ inverse @ q
    return 2.0 * float(strategy.rho) ** 2 * total / len(queries)


@pytest.mark.parametrize("public_total", [False, True])
def test_the_expected_error_is_the_dense_one_and_averages_products_exactly(public_total):
    workload = marginals(SCHEMA, (1, 2)).combine(marginals(SCHEMA, (2,), grains={"a": 2}))
    strategy = MarginalsStrategy(SCHEMA.shape, ((0, 1), (0, 2), (1, 2), (1,)), (3, 1, 2, 5))
    error = marginals_expected_error(strategy, workload, epsilon=1.0, neighbours="add-remove", public_total=public_total)
    assert error == pytest.approx(dense_error(strategy, workload, public_total), rel=1e-9)
    listed = Workload.of_queries(SCHEMA, workload.queries())
    assert marginals_expected_error(strategy, listed, epsilon=1.0, neighbours="add-remove",
                                    public_total=public_total) == pytest.approx(error, rel=1e-9)
    # Replace-one neighbours double the sensitivity: four times the variance at the same epsilon.
    assert marginals_expected_error(strategy, workload, epsilon=1.0, neighbours="replace",
                                    public_total=public_total) == pytest.approx(4 * error, rel=1e-12)
    worst = marginals_expected_error(strategy, workload, epsilon=1.0, neighbours="add-remove",
                                     public_total=public_total, objective="worst")
    assert error < worst < np.inf


def test_a_query_no_marginal_holds_has_an_infinite_error():
    strategy = MarginalsStrategy(SCHEMA.shape, ((0, 1),), (1,))
    for ways in ((1,), (2,)):
        error = marginals_expected_error(strategy, marginals(SCHEMA, ways), epsilon=1.0, neighbours="add-remove",
                                         public_total=False)
        assert error == np.inf  # c alone, and the 2-way marginals with c, are not measured


def test_the_gradient_is_the_objective_s():
    workload = marginals(SCHEMA, (1, 2))
    weights, mean, contrast = workload_components(workload)
    candidates = _below(set(_supports(contrast).tolist()))
    objective = _WeightedError(SCHEMA.shape, candidates, weights, mean, contrast, public_total=False)
    w = np.random.default_rng(1).uniform(0.5, 2.0, len(candidates))
    _, gradient = objective(w)
    for j in range(len(w)):
        step = np.zeros_like(w)
        step[j] = 1e-6
        numeric = (objective(w + step)[0] - objective(w - step)[0]) / 2e-6
        assert gradient[j] == pytest.approx(numeric, rel=1e-5)


# Domains outside a 2-way marginal of 50 to 100 cells: measuring marginals beats Basic.
LARGER = Schema([OrdinalAttribute.integer_range(name, 1, size) for name, size in zip("pqrs", (10, 12, 8, 9))])


@pytest.mark.parametrize("public_total", [False, True])
def test_learned_weights_beat_equal_weights_basic_and_every_nearby_weighting(public_total):
    workload = marginals(LARGER, (1, 2))
    strategy = optimised_marginals(workload, public_total=public_total)

    def error(s: MarginalsStrategy) -> float:
        return marginals_expected_error(s, workload, epsilon=1.0, neighbours="add-remove", public_total=public_total)

    learned = error(strategy)
    assert max(strategy.weights) <= WEIGHT_SCALE and all(w > 0 for w in strategy.weights)
    pairs = tuple(itertools.combinations(range(4), 2))
    assert learned < 0.9 * error(MarginalsStrategy(LARGER.shape, (*pairs, (0,), (1,), (2,), (3,)), (1,) * 10))
    basic = ReleaseSpec(LARGER, 1.0, "basic", neighbours="replace" if public_total else "add-remove")
    assert learned < 0.5 * expected_error(basic, workload) / basic.multiplicity**2
    # A local minimum up to the rounding: moving one weight by 5% either way gains at most 0.1%.
    for j in range(len(strategy.weights)):
        for factor in (0.95, 1.05):
            moved = list(strategy.weights)
            moved[j] = max(1, round(moved[j] * factor))
            assert error(MarginalsStrategy(LARGER.shape, strategy.subsets, tuple(moved))) > learned * (1 - 1e-3)
    # Under the public total the total is exact: measuring it is wasted.
    if public_total:
        assert () not in strategy.subsets


def test_on_a_small_domain_basic_is_chosen_where_it_wins():
    """A marginal of 3 x 4 x 2 sums 2 to 8 cells: Basic's few cells beat marginals whose sensitivity
    adds up; M itself is a candidate, so the choice is Basic's."""
    workload = marginals(SCHEMA, (1, 2))
    strategy = optimised_marginals(workload, public_total=False)
    assert strategy.subsets == ((0, 1, 2),)
    assert marginals_expected_error(strategy, workload, epsilon=1.0, neighbours="add-remove", public_total=False) \
        == pytest.approx(expected_error(ReleaseSpec(SCHEMA, 1.0, "basic", neighbours="add-remove"), workload))


def test_on_a_census_domain_the_learned_marginals_beat_basic_by_far():
    """The bundled Adult sample's 2-way marginals (6 attributes, 6.8 million cells): a marginal's
    cell sums thousands of M's cells under Basic, one noisy count (of a larger noise) here."""
    from privelet_gui.io import load_schema, sample_schema_path

    schema = load_schema(sample_schema_path())
    workload = marginals(schema, (2,))
    strategy = optimised_marginals(workload, public_total=False)
    error = marginals_expected_error(strategy, workload, epsilon=1.0, neighbours="add-remove", public_total=False)
    basic = expected_error(ReleaseSpec(schema, 1.0, "basic", neighbours="add-remove"), workload)
    assert basic / error > 100


def test_best_strategy_chooses_weighted_marginals_when_asked_and_they_win():
    from privelet_gui.engine import best_strategy

    spec = ReleaseSpec(LARGER, 1.0, neighbours="add-remove")
    workload = marginals(LARGER, (1, 2))
    per_axis = best_strategy(spec, workload)
    choice = best_strategy(spec, workload, marginals=True)
    assert per_axis.spec.label != "marginals" and choice.spec.label == "marginals"
    learned = optimised_marginals(workload, public_total=False)
    assert choice.spec.marginals_strategy == learned
    assert choice.error == pytest.approx(expected_error(choice.spec, workload)) and choice.error < 0.5 * per_axis.error
    assert choice.gain_over("Basic") > 2
    counts = np.random.default_rng(7).integers(0, 5, LARGER.shape)
    release = choice.spec.run(counts, seed=1)
    assert release.mechanism == "marginals" and release.noisy.shape == LARGER.shape
    # On 3 x 4 x 2 the marginals lose (they are Basic at best there): the per-axis choice stays.
    small = best_strategy(ReleaseSpec(SCHEMA, 1.0), marginals(SCHEMA, (1, 2)), marginals=True)
    assert small.spec.label != "marginals"
