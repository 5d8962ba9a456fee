"""The advisor never makes a release worse: lossless suggestions only by default, lossy ones
apart with their bias, spreading's exact variance, no single-value domain, levels of an
attribute whose missing value has a group of its own."""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
import pytest

from privelet_gui.engine import (
    Hierarchy,
    NominalAttribute,
    NumericBins,
    OrdinalAttribute,
    QueryBatch,
    ReleaseSpec,
    Schema,
    Workload,
    advise,
    expected_error,
    marginals,
    paper_workload,
)
from privelet_gui.engine.accuracy.coarsening import BinsCoarsening, LevelCoarsening, coarsen
from privelet_gui.engine.accuracy.workloads import AxisPredicates, ProductPart, unit_variance


def _schema() -> Schema:
    country = Hierarchy.from_nested({"*": {"Europe": ["DE", "FR", "IT"], "Asia": ["CN", "JP"], "Other": ["US", "BR"]}})
    return Schema([OrdinalAttribute.integer_range("age", 0, 39), NominalAttribute("country", country),
                   NominalAttribute("sex", Hierarchy.flat(["F", "M"]))])


def test_bins_and_levels_are_lossless_exactly_when_every_predicate_is_whole_bins_or_groups():
    schema = _schema()
    bins = BinsCoarsening(5, 40)
    preds = AxisPredicates(np.array([0, 5, 0, 3, 35, 12]), np.array([4, 14, 39, 4, 39, 12]), np.full(6, -1))
    mapped = bins(preds)
    assert mapped.exact.tolist() == [True, True, True, False, True, False]
    assert mapped.lo.tolist() == [0, 1, 0, 0, 7, 2] and mapped.hi.tolist() == [0, 2, 7, 0, 7, 2]
    assert mapped.first[3] == pytest.approx(2 / 5) and mapped.first[5] == pytest.approx(1 / 5)
    # a last bin shorter than the others: 0..41 in bins of 5 ends with [40, 41]
    short = BinsCoarsening(5, 42)(AxisPredicates(np.array([38, 40]), np.array([41, 41]), np.full(2, -1)))
    assert short.exact.tolist() == [False, True] and short.last[0] == 1.0 and short.first[0] == pytest.approx(2 / 5)
    country = schema["country"]
    coarse = dataclasses.replace(country, level=2)
    level = LevelCoarsening(country, coarse, 2)
    nodes = np.arange(country.hierarchy.n_nodes)
    lay = country.hierarchy.layout
    mapped = level(AxisPredicates(lay.lo[nodes], lay.hi[nodes] - 1, nodes))
    assert mapped.exact.tolist() == (lay.depth <= 2).tolist()  # the root and the continents stay exact
    de = country.hierarchy.index_of("DE")
    assert mapped.first[de] == pytest.approx(1 / 3)
    advice = advise(ReleaseSpec(schema, 1.0), marginals(schema, (1, 2), grains={"age": 5, "country": 2}))
    assert {s.description.split(" (")[0] for s in advice.suggestions} >= {"age in bins of 5 values",
                                                                          "country at hierarchy level 2"}
    assert all(s.lossless and s.error < s.before for s in advice.suggestions)
    assert all(not s.lossless for s in advice.lossy)
    assert "age in bins of 2 values" in {s.description.split(" (")[0] for s in advice.lossy}


def test_an_only_child_chain_below_the_level_is_exact():
    h = Hierarchy.from_nested({"*": {"A": ["a1", "a2"], "N (group)": ["N"]}})
    attribute = NominalAttribute("x", h)
    coarse = dataclasses.replace(attribute, level=2)
    n = h.index_of("N")
    mapped = LevelCoarsening(attribute, coarse, 2)(AxisPredicates(np.array([2]), np.array([2]), np.array([n])))
    assert mapped.exact.tolist() == [True]


def test_no_suggestion_leaves_an_attribute_one_value():
    state = Hierarchy.from_nested({"*": {"MA": ["p1", "p2", "p3", "p4", "p5"]}})  # every PUMA in one state
    schema = Schema([NominalAttribute("PUMA", state), OrdinalAttribute.integer_range("age", 0, 15)])
    for workload in (paper_workload(schema), marginals(schema, (1, 2))):
        advice = advise(ReleaseSpec(schema, 1.0), workload)
        for s in (*advice.suggestions, *advice.lossy):
            assert all(a.size >= 2 for a in s.schema), s.description
    assert not any(s.attribute == "PUMA" and s.kind == "level" for s in advice.lossy)


def _dense_variance(spec: ReleaseSpec, weights: list[np.ndarray]) -> float:
    """``w' Sigma w`` from the strategies' dense covariances (public total shift included)."""
    strategies = spec.plan.strategies
    rho2 = np.prod([float(s.rho) ** 2 for s in strategies])
    sigma = rho2 * np.ones((1, 1))
    for s in strategies:
        sigma = np.kron(sigma, s.covariance)
    w = weights[0]
    for v in weights[1:]:
        w = np.kron(w, v)
    unit = unit_variance(spec.epsilon, spec.neighbours)
    own = w @ sigma @ w
    if not spec.uses_public_total:
        return unit * own
    ones = np.ones(len(w))
    share = w.sum() / len(w)
    return unit * (own - 2 * share * (w @ sigma @ ones) + share**2 * (ones @ sigma @ ones))


def _weight_vectors(lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A query ``lo..hi`` on (age 0..39, sex) answered on bins of 5 ages: its age weights spread
    over the bins, rounded out to whole bins, and its sex weights."""
    spread = np.zeros(8)
    for value in range(lo[0], hi[0] + 1):
        spread[value // 5] += 1 / 5
    rounded = np.zeros(8)
    rounded[lo[0] // 5:hi[0] // 5 + 1] = 1
    sex = np.zeros(2)
    sex[lo[1]:hi[1] + 1] = 1
    return spread, rounded, sex


@pytest.mark.parametrize("public_total", [True, False])
@pytest.mark.parametrize("sa", [(), ("age",)])
def test_spreading_has_the_exact_variance_of_its_linear_query(public_total, sa):
    schema = _schema()
    fine = Schema([schema["age"], schema["sex"]])
    coarse_age = OrdinalAttribute("age", bins=NumericBins(0, 40, 5))
    coarse = Schema([coarse_age, fine["sex"]])
    lo = np.array([[3, 0], [0, 0], [7, 1], [12, 0], [2, 1], [6, 0]])
    hi = np.array([[17, 1], [39, 1], [33, 1], [13, 0], [4, 1], [9, 0]])
    queries = QueryBatch(lo, hi, np.stack([np.full(6, -1), np.where(lo[:, 1] == hi[:, 1], lo[:, 1] + 1, 0)], axis=1))
    workload = Workload.of_queries(fine, queries)
    coarsened = coarsen(workload, coarse, 0, BinsCoarsening(5, 40))
    spec = ReleaseSpec(coarse, 1.0, sa=sa, public_total=public_total)
    for index in range(len(queries)):
        one = Workload.of_queries(fine, QueryBatch(lo[index:index + 1], hi[index:index + 1], queries.nodes[index:index + 1]))
        single = coarsen(one, coarse, 0, BinsCoarsening(5, 40))
        w_age, rounded, w_sex = _weight_vectors(lo[index], hi[index])
        dense = _dense_variance(spec, [w_age, w_sex])
        assert single.expected_error(spec) == pytest.approx(dense, rel=1e-9)
        assert single.expected_error(spec, answering="round-out") == pytest.approx(
            _dense_variance(spec, [rounded, w_sex]), rel=1e-9)
    assert coarsened.expected_error(spec, objective="worst") == pytest.approx(
        max(coarsen(Workload.of_queries(fine, QueryBatch(lo[i:i + 1], hi[i:i + 1], queries.nodes[i:i + 1])), coarse, 0,
                    BinsCoarsening(5, 40)).expected_error(spec) for i in range(len(queries))), rel=1e-9)
    # a product part averages the same way as its queries listed one by one
    product = Workload(fine, (ProductPart((AxisPredicates(lo[:, 0], hi[:, 0], np.full(6, -1)),
                                           AxisPredicates(np.array([0, 1]), np.array([0, 1]), np.array([1, 2])))),))
    listed = Workload.of_queries(fine, product.queries())
    assert coarsen(product, coarse, 0, BinsCoarsening(5, 40)).expected_error(spec) == pytest.approx(
        coarsen(listed, coarse, 0, BinsCoarsening(5, 40)).expected_error(spec), rel=1e-9)
    exact = marginals(fine, (1, 2), grains={"age": 5})
    assert coarsen(exact, coarse, 0, BinsCoarsening(5, 40)).expected_error(spec) == pytest.approx(
        expected_error(spec, coarsen(exact, coarse, 0, BinsCoarsening(5, 40)).workload), rel=1e-12)


def _dense_marginals_variance(spec: ReleaseSpec, weights: list[np.ndarray]) -> float:
    """``q' (A'A)^+ q`` of the linear query ``q`` (the per-axis weight vectors' Kronecker product)
    from the dense matrix ``A`` of ``spec``'s weighted marginals; inf when ``q`` is not in its row
    space (a biased answer)."""
    strategy = spec.marginals_strategy
    cells = np.indices(strategy.shape).reshape(len(strategy.shape), -1)
    rows = []
    for subset, weight in zip(strategy.subsets, strategy.weights, strict=True):
        shape = tuple(strategy.shape[a] for a in subset)
        target = np.ravel_multi_index(tuple(cells[a] for a in subset), shape) if subset else np.zeros(cells.shape[1], int)
        block = np.zeros((int(np.prod(shape)), cells.shape[1]))
        block[target, np.arange(cells.shape[1])] = weight
        rows.append(block)
    a = np.concatenate(rows)
    gram = a.T @ a
    inverse = np.linalg.pinv(gram)
    q = weights[0]
    for v in weights[1:]:
        q = np.kron(q, v)
    if not np.allclose(gram @ (inverse @ q), q):
        return np.inf
    if spec.uses_public_total:
        q = q - q.sum() / len(q)
    return unit_variance(spec.epsilon, spec.neighbours) * float(strategy.rho) ** 2 * float(q @ inverse @ q)


@pytest.mark.parametrize("public_total", [True, False])
@pytest.mark.parametrize("measured", [((("age", "sex"), 3), (("age",), 2)), ((("age",), 2), (("sex",), 1))])
def test_spreading_under_weighted_marginals_has_the_exact_variance_of_its_linear_query(public_total, measured):
    fine = Schema([_schema()["age"], _schema()["sex"]])
    coarse = Schema([OrdinalAttribute("age", bins=NumericBins(0, 40, 5)), fine["sex"]])
    spec = ReleaseSpec(coarse, 1.0, "marginals", marginals=measured, public_total=public_total)
    lo = np.array([[3, 0], [0, 0], [7, 1], [12, 0], [2, 0], [6, 0], [0, 0]])
    hi = np.array([[17, 1], [39, 1], [33, 1], [13, 0], [4, 1], [9, 1], [39, 0]])
    nodes = np.stack([np.full(len(lo), -1), np.where(lo[:, 1] == hi[:, 1], lo[:, 1] + 1, 0)], axis=1)
    figures = []
    for index in range(len(lo)):
        one = Workload.of_queries(fine, QueryBatch(lo[index:index + 1], hi[index:index + 1], nodes[index:index + 1]))
        single = coarsen(one, coarse, 0, BinsCoarsening(5, 40))
        w_age, rounded, w_sex = _weight_vectors(lo[index], hi[index])
        figures.append(single.expected_error(spec))
        assert figures[-1] == pytest.approx(_dense_marginals_variance(spec, [w_age, w_sex]), rel=1e-9)
        assert single.expected_error(spec, answering="round-out") == pytest.approx(
            _dense_marginals_variance(spec, [rounded, w_sex]), rel=1e-9)
    # with 2-way marginals measured every query is unbiased; with 1-way ones only those of one attribute
    assert np.isfinite(figures).all() == (len(measured[0][0]) == 2)
    listed = coarsen(Workload.of_queries(fine, QueryBatch(lo, hi, nodes)), coarse, 0, BinsCoarsening(5, 40))
    assert listed.expected_error(spec) == pytest.approx(np.mean(figures), rel=1e-9)
    assert listed.expected_error(spec, objective="worst") == pytest.approx(max(figures), rel=1e-9)
    # a product part averages the same way as its queries listed one by one
    product = Workload(fine, (ProductPart((AxisPredicates(lo[:, 0], hi[:, 0], np.full(len(lo), -1)),
                                           AxisPredicates(np.array([0, 0]), np.array([0, 1]), np.array([1, 0])))),))
    listed = Workload.of_queries(fine, product.queries())
    assert coarsen(product, coarse, 0, BinsCoarsening(5, 40)).expected_error(spec) == pytest.approx(
        coarsen(listed, coarse, 0, BinsCoarsening(5, 40)).expected_error(spec), rel=1e-9)


def test_a_missing_value_in_a_group_of_its_own_keeps_the_levels():
    h = Hierarchy.from_nested({"*": {"AGR": ["170", "180"], "MFG": ["3390", "3490"], "EDU": ["7860"],
                                     "N (group)": ["N"]}})
    indp = NominalAttribute("INDP", h, missing="N", missing_values=("N",))
    schema = Schema([indp, OrdinalAttribute.integer_range("age", 0, 15)])
    advice = advise(ReleaseSpec(schema, 1.0), marginals(schema, (1, 2), grains={"INDP": 2}))
    level = next(s for s in advice.suggestions if s.kind == "level")
    coarse = level.schema["INDP"]
    assert coarse.level == 2 and coarse.missing == "N" and coarse.size == 4
    codes = coarse.encode(pd.Series(["170", "N", "", "7860", "3490"], dtype=object)).codes
    assert [coarse.labels[c] for c in codes] == ["AGR", "N (group)", "N (group)", "EDU", "MFG"]
    # a missing value sharing its group with real values is never merged with them by the advisor
    shared = Hierarchy.from_nested({"*": {"AGR": ["170", "180"], "Other": ["7860", "N"]}})
    merged = Schema([NominalAttribute("INDP", shared, missing="N"), schema["age"]])
    advice = advise(ReleaseSpec(merged, 1.0), marginals(merged, (1, 2), grains={"INDP": 2}))
    assert not any(s.kind == "level" for s in (*advice.suggestions, *advice.lossy))


def test_a_suggestion_keeps_the_meaning_of_a_grain():
    schema = _schema()
    advice = advise(ReleaseSpec(schema, 1.0), marginals(schema, (1,), grains={"age": 10, "country": 2}))
    bins5 = next(s for s in advice.suggestions if s.width == 5)
    assert bins5.grain_after(10) == 2 and bins5.grain_after(5) == 1 and bins5.grain_after(None) is None
    level = next(s for s in advice.suggestions if s.kind == "level")
    assert level.grain_after(2) == 2 and level.grain_after(3) is None
