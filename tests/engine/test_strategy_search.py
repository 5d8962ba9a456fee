"""best_strategy: brute force on small schemas, never worse than the paper's mechanisms, cancel,
and the DPBench figures of issue 40 (with ../shared/data)."""

import itertools

import numpy as np
import pytest

from privelet_gui.engine import (
    Cancelled,
    Hierarchy,
    NominalAttribute,
    OrdinalAttribute,
    QueryBatch,
    ReleaseSpec,
    Schema,
    Workload,
    axis_candidates,
    best_sa,
    best_strategy,
    expected_error,
    marginals,
    paper_workload,
    recommend_sa,
)
from privelet_gui.engine.accuracy import strategy_search

COUNTRY = Hierarchy.from_nested({"*": {"Europe": ["fr", "de", "nl", "pl"], "Asia": ["cn", "in", "jp"], "Other": ["au"]}})


def small_schema() -> Schema:
    return Schema([OrdinalAttribute.integer_range("age", 0, 39), NominalAttribute("country", COUNTRY),
                   OrdinalAttribute.integer_range("hours", 0, 5)])


def dpcomp_ranges(shape, count, seed=9001) -> QueryBatch:
    """DPBench's random range queries: per axis a width uniform in 1..n, placed uniformly."""
    rng = np.random.RandomState(seed)
    lo, hi = np.empty((count, len(shape)), dtype=np.int64), np.empty((count, len(shape)), dtype=np.int64)
    for q in range(count):
        for axis, n in enumerate(shape):
            width = rng.randint(1, n + 1)
            lo[q, axis] = rng.randint(0, n - width + 1)
            hi[q, axis] = lo[q, axis] + width - 1
    return QueryBatch(lo, hi, np.full(lo.shape, -1))


@pytest.mark.parametrize("neighbours", ["replace", "add-remove"])
@pytest.mark.parametrize("objective", ["mean", "worst"])
def test_the_choice_is_the_brute_force_minimum(neighbours, objective, monkeypatch):
    schema = small_schema()
    spec = ReleaseSpec(schema, 1.0, neighbours=neighbours)
    workload = paper_workload(schema, 300, seed=4).combine(marginals(schema, ways=(1,)))
    errors = {names: expected_error(spec.replace(mechanism="strategies", sa=(), strategies=names), workload,
                                    objective=objective)
              for names in itertools.product(*[axis_candidates(a) for a in schema])}
    # the learned strategies only ever lower the error further
    choice = best_strategy(spec, workload, objective=objective)
    assert choice.error <= min(errors.values()) * (1 + 1e-12)
    assert expected_error(choice.spec, workload, objective=objective) == pytest.approx(choice.error, rel=1e-9)
    monkeypatch.setattr(strategy_search, "STACKED_LIMIT", 0)
    choice = best_strategy(spec, workload, objective=objective)
    assert choice.exhaustive
    assert choice.error == pytest.approx(min(errors.values()), rel=1e-9)


def test_the_axis_by_axis_search_is_never_worse_than_the_paper_s_mechanisms(monkeypatch):
    monkeypatch.setattr(strategy_search, "EXHAUSTIVE_COMBINATIONS", 1)
    schema = small_schema()
    for workload in (paper_workload(schema, 500, seed=1), marginals(schema, ways=(1, 2))):
        spec = ReleaseSpec(schema, 1.0)
        choice = best_strategy(spec, workload)
        assert not choice.exhaustive
        rule = spec.replace(sa=recommend_sa(schema))
        for reference in (rule, spec.replace(mechanism="basic"), spec.replace(sa=best_sa(spec, workload).sa)):
            assert choice.error <= expected_error(reference, workload) * (1 + 1e-12)
        assert choice.alternatives["Privelet+ (recommended S_A)"][1] == pytest.approx(expected_error(rule, workload))


def test_trees_win_on_ranges_of_a_big_ordinal_axis_and_the_identity_on_a_tiny_one(monkeypatch):
    schema = Schema([OrdinalAttribute.integer_range("x", 0, 511), OrdinalAttribute.integer_range("y", 0, 2)])
    workload = Workload.of_queries(schema, dpcomp_ranges(schema.shape, 500))
    spec = ReleaseSpec(schema, 1.0, neighbours="add-remove")
    learned = best_strategy(spec, workload)
    monkeypatch.setattr(strategy_search, "STACKED_LIMIT", 0)  # the fixed candidates only
    choice = best_strategy(spec, workload)
    assert choice.strategies[0].startswith("tree-") and choice.strategies[1] == "identity"
    assert choice.gain_over("Privelet") > 1.5
    # the identity stacked on rows learned for the ranges does better still
    assert learned.strategies[0].startswith("stacked/") and learned.error < choice.error


def test_the_search_reports_progress_and_can_be_cancelled():
    schema = small_schema()
    seen = []
    best_strategy(ReleaseSpec(schema, 1.0), paper_workload(schema, 100), progress=lambda f, s: seen.append(f))
    assert seen[-1] == 1.0 and seen == sorted(seen)
    with pytest.raises(Cancelled):
        best_strategy(ReleaseSpec(schema, 1.0), paper_workload(schema, 100), should_cancel=lambda: True)


@pytest.mark.parametrize(
    ("shape", "workload_kind", "peer", "peer_error"),
    [((4096,), "ranges", "HB", 390.0), ((4096,), "prefixes", "HB", 222.0), ((256, 256), "ranges", "QuadTree", 11_039.0)],
)
def test_dpbench_figures_beat_the_data_independent_peers(shape, workload_kind, peer, peer_error):
    """Issue 40's table: DPBench's workloads, epsilon 1, add/remove, mean square error per query.
    The peers' figures are those the issue measured; ours is exact and data-free, so no data is read."""
    schema = Schema([OrdinalAttribute.integer_range(f"a{i}", 0, n - 1) for i, n in enumerate(shape)])
    if workload_kind == "prefixes":
        n = shape[0]
        queries = QueryBatch(np.zeros((n, 1), dtype=np.int64), np.arange(n).reshape(n, 1), np.full((n, 1), -1))
    else:
        queries = dpcomp_ranges(shape, 2000)
    choice = best_strategy(ReleaseSpec(schema, 1.0, neighbours="add-remove"), Workload.of_queries(schema, queries))
    assert choice.error <= peer_error, (peer, choice.strategies, choice.error)
    # the choice releases a table of ten million rows (its integer weights leave the arithmetic room)
    assert choice.spec.plan.growth <= strategy_search.GROWTH_LIMIT
    counts = np.zeros(schema.shape)
    counts.flat[::97] = 1
    counts *= 10_000_000 / counts.sum()
    choice.spec.check_rows(int(np.floor(counts).sum()))
