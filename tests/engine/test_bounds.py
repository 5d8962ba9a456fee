"""Paper bounds (math.md worked numbers) and exact variances against explicit matrices."""

import itertools
import math
import time

import numpy as np
import pytest
from hypothesis import given, settings

from privelet_gui.engine import (
    HaarTransform,
    Hierarchy,
    NominalAttribute,
    NominalTransform,
    OrdinalAttribute,
    RangeQuery,
    Schema,
    StrategyPlan,
    VarianceModel,
    epsilon_for_variance,
    paper_bound,
    query_variance,
    recommend_sa,
    worst_case_variance,
)

from .strategies import explicit_variance_factor, hierarchies


def occupation_hierarchy(leaves: int = 512, groups: int = 16) -> Hierarchy:
    per = leaves // groups
    return Hierarchy.from_nested({"*": {f"major{g}": [f"occ{g * per + i}" for i in range(per)] for g in range(groups)}})


def brazil_schema() -> Schema:
    return Schema(
        [
            OrdinalAttribute.integer_range("Age", 0, 100),
            NominalAttribute("Gender", Hierarchy.flat(["M", "F"])),
            NominalAttribute("Occupation", occupation_hierarchy()),
            OrdinalAttribute.integer_range("Income", 0, 1000),
        ]
    )


# -- math.md worked numbers ----------------------------------------------------------------
def test_one_ordinal_attribute_of_16_values():
    s = Schema([OrdinalAttribute.integer_range("a", 0, 15)])
    assert paper_bound(s, 1.0) == 600
    assert paper_bound(s, 1.0, sa=["a"]) == 128
    assert paper_bound(s, 0.5) == 600 / 0.25


def test_occupation_haar_versus_nominal():
    h = occupation_hierarchy()
    assert h.size == 512 and h.rho == 3
    as_ordinal = Schema([OrdinalAttribute("occ", h.leaves)])
    as_nominal = Schema([NominalAttribute("occ", h)])
    assert paper_bound(as_ordinal, 1.0) == 4400
    assert paper_bound(as_nominal, 1.0) == 288
    assert paper_bound(as_ordinal, 1.0) / paper_bound(as_nominal, 1.0) == pytest.approx(15.28, abs=0.01)


def test_brazil_figures():
    s = brazil_schema()
    assert paper_bound(s, 1.0, sa=["Age", "Gender"]) == 42_235_776
    assert paper_bound(s, 1.0, sa=s.names) == 828_219_392
    assert recommend_sa(s) == ("Age", "Gender")


def test_add_remove_quarters_the_bound():
    s = brazil_schema()
    assert paper_bound(s, 1.0, sa=["Age", "Gender"], neighbours="add-remove") == 42_235_776 / 4


def test_exact_worst_case_checked_values():
    assert HaarTransform(16).worst_interval_variance() == pytest.approx(1.42, abs=0.005)  # math.md


def test_exact_worst_case_of_1001_values_by_brute_force():
    # math.md quotes 2.62 for |A| = 1001; brute force over all 501,501 intervals with the
    # explicit inverse matrix gives 2.7501 (interval 85..938), as does the closed form.
    t = HaarTransform(1001)
    r = t.reconstruction_matrix()  # values from unit weighted measurements
    prefix = np.vstack([np.zeros(t.n_measurements), np.cumsum(r, axis=0)])
    best = max(float((((prefix[a + 1 :] - prefix[a]) ** 2).sum(axis=1)).max()) for a in range(1001))
    assert best == pytest.approx(2.750072479, rel=1e-9)
    assert t.worst_interval_variance() == pytest.approx(best, rel=1e-12)
    assert t.interval_variances(np.array([85]), np.array([938]))[0] == pytest.approx(best, rel=1e-12)


@settings(max_examples=40, deadline=None)
@given(hierarchies(max_leaves=20, max_depth=5))
def test_nominal_worst_case_stays_below_four(h):
    assert NominalTransform(h).node_variances.max() < 4


def test_basic_variance_is_8k_over_epsilon_squared():
    s = brazil_schema()
    q = RangeQuery.build(s, {"Age": ("20", "29"), "Occupation": "major3"})
    cells = 10 * 2 * 32 * 1001
    assert query_variance(s, 2.0, s.names, q) == pytest.approx(8 * cells / 4)
    assert worst_case_variance(s, 1.0, s.names) == pytest.approx(8 * s.size)


# -- exact variance against explicit transform matrices ------------------------------------
@pytest.mark.parametrize("size", [*list(range(1, 20)), 31, 40])
def test_haar_interval_factors_match_explicit_matrices(size):
    schema = Schema([OrdinalAttribute.integer_range("a", 0, size - 1)])
    plan = StrategyPlan.paper(schema)
    t = HaarTransform(size)
    pairs = [(a, b) for a in range(size) for b in range(a, size)]
    expected = [explicit_variance_factor(plan, (a,), (b,)) for a, b in pairs]
    got = t.interval_variances(np.array([p[0] for p in pairs]), np.array([p[1] for p in pairs]))
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-15)
    assert t.worst_interval_variance() == pytest.approx(max(expected))


@settings(max_examples=30, deadline=None)
@given(hierarchies(max_leaves=10))
def test_nominal_node_factors_match_explicit_matrices(h):
    schema = Schema([NominalAttribute("n", h)])
    plan = StrategyPlan.paper(schema)
    t = NominalTransform(h)
    for node in h.nodes():
        expected = explicit_variance_factor(plan, (node.lo,), (node.hi - 1,))
        assert t.node_variances[node.index] == pytest.approx(expected, rel=1e-12, abs=1e-15)


def test_query_variance_matches_explicit_matrices_for_every_box_and_sa():
    h = Hierarchy.from_nested({"*": {"T": ["t1", "t2", "t3"], "O": {"O1": ["o1"]}, "S": ["s1", "s2"]}})
    schema = Schema([OrdinalAttribute.integer_range("age", 0, 5), NominalAttribute("job", h)])
    model = VarianceModel(schema)
    for r in range(3):
        for sa in itertools.combinations(schema.names, r):
            plan = StrategyPlan.paper(schema, sa)
            lam = 2 * float(plan.rho) / 0.7
            worst = 0.0
            for a, b in itertools.combinations_with_replacement(range(6), 2):
                for node in h.nodes():
                    q = RangeQuery.from_indices(schema, {"age": (a, b), "job": node.index})
                    expected = 2 * lam**2 * explicit_variance_factor(plan, q.lo, q.hi)
                    assert model.query(q, 0.7, sa) == pytest.approx(expected, rel=1e-10)
                    worst = max(worst, expected)
            assert model.worst_case(0.7, sa) == pytest.approx(worst, rel=1e-10)


def test_brazil_worst_case_is_fast_and_updates_in_microseconds():
    model = VarianceModel(brazil_schema())
    model.worst_case(1.0)  # first computation: per-axis factors (benchmarked, not timed here)
    started = time.perf_counter()
    for epsilon in np.linspace(0.1, 2, 200):
        for sa in [(), ("Age",), ("Age", "Gender")]:
            model.worst_case(epsilon, sa)
    per_update = (time.perf_counter() - started) / 600
    assert per_update < 1e-3  # cached factors: no transform is recomputed
    assert model.worst_case(1.0, ("Age", "Gender")) < paper_bound(model.schema, 1.0, ("Age", "Gender"))


def test_epsilon_for_target_accuracy():
    s = brazil_schema()
    at_one = worst_case_variance(s, 1.0, ["Age", "Gender"])
    eps = epsilon_for_variance(at_one, 1e6)
    assert worst_case_variance(s, eps, ["Age", "Gender"]) == pytest.approx(1e6)
    assert eps == pytest.approx(math.sqrt(at_one / 1e6))
    with pytest.raises(ValueError, match="positive"):
        epsilon_for_variance(at_one, 0)


@pytest.mark.parametrize("size", [2, 3, 5, 17, 64, 100, 129, 333, 1001, 2049, 3000])
def test_envelope_worst_case_equals_every_interval(size):
    # The O(m log m) search used for big domains must find exactly the all-intervals maximum.
    t = HaarTransform(size)
    assert t._worst_by_envelopes() == pytest.approx(t._worst_over_all_intervals(), rel=1e-12)


def test_big_ordinal_domains_get_their_worst_case():
    t = HaarTransform(50_000)
    worst = t.worst_interval_variance()
    # it is attained by some interval, and is below the paper's H(A) = (2 + 16) / 2
    assert 3.5 < worst < 9
    best_of_sample = t.interval_variances(np.array([0, 3000, 10_007]), np.array([49_999, 40_000, 31_234])).max()
    assert worst >= best_of_sample
