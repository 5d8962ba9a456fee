"""Workloads, best S_A and the granularity advisor against brute force and worked figures."""

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from privelet_gui.engine import (
    Hierarchy,
    NominalAttribute,
    OrdinalAttribute,
    PriveletError,
    ReleaseSpec,
    Schema,
    SchemaError,
    Workload,
    advise,
    best_sa,
    expected_error,
    marginals,
    paper_workload,
    recommend_sa,
)
from privelet_gui.engine.accuracy.advisor import _bin_widths

from .strategies import schemas

CONTINENTS = Hierarchy.from_nested(
    {"*": {"Europe": {"West": ["fr", "de", "nl"], "East": ["pl", "cz"]}, "Asia": ["cn", "in", "jp", "kr"], "Other": ["au"]}}
)


def small_schema() -> Schema:
    return Schema(
        [
            OrdinalAttribute.integer_range("age", 0, 49),
            NominalAttribute("sex", Hierarchy.flat(["F", "M"])),
            NominalAttribute("country", CONTINENTS),
            OrdinalAttribute.integer_range("hours", 0, 7),
        ]
    )


def brute_force(spec: ReleaseSpec, workload: Workload, objective: str) -> tuple[tuple[str, ...], float]:
    """Every subset, each evaluated on the listed queries with the spec's exact variances."""
    queries = workload.queries()
    best: tuple[tuple[str, ...], float] | None = None
    for r in range(len(spec.schema) + 1):
        for sa in itertools.combinations(spec.schema.names, r):
            variances = spec.replace(mechanism="privelet+", sa=sa).variances(queries)
            value = float(variances.mean() if objective == "mean" else variances.max())
            if best is None or value < best[1] * (1 - 1e-12):
                best = (sa, value)
    assert best is not None
    return best


WORKLOADS = {
    "paper": lambda s: paper_workload(s, 400, seed=3),
    "1-way": lambda s: marginals(s, (1,)),
    "2-way": lambda s: marginals(s, (2,)),
    "continents": lambda s: marginals(s, (1, 2), ["country", "sex"], grains={"country": 2}),
}


@pytest.mark.parametrize("public_total", [False, True])
@pytest.mark.parametrize("objective", ["mean", "worst"])
@pytest.mark.parametrize("name", list(WORKLOADS))
def test_best_sa_matches_brute_force(name, objective, public_total):
    schema = small_schema()
    workload = WORKLOADS[name](schema)
    spec = ReleaseSpec(schema, 0.8, public_total=public_total)
    choice = best_sa(spec, workload, objective=objective)
    _, value = brute_force(spec, workload, objective)
    assert choice.exhaustive
    assert choice.error == pytest.approx(value, rel=1e-9)
    chosen = spec.replace(sa=choice.sa).variances(workload.queries())
    assert float(chosen.mean() if objective == "mean" else chosen.max()) == pytest.approx(value, rel=1e-9)
    # never worse than Basic, Privelet or the paper's rule
    assert all(choice.error <= ref * (1 + 1e-12) for _, ref in choice.references.values())
    assert choice.references["rule"][0] == recommend_sa(schema)


def test_the_greedy_search_beyond_the_exhaustive_limit_is_never_worse_than_the_references():
    schema = small_schema()
    spec = ReleaseSpec(schema, 1.0)
    for workload in (marginals(schema, (2,)), paper_workload(schema, 300)):
        greedy = best_sa(spec, workload, exhaustive_up_to=2)
        exhaustive = best_sa(spec, workload)
        assert not greedy.exhaustive
        assert greedy.error >= exhaustive.error * (1 - 1e-12)
        assert all(greedy.error <= ref * (1 + 1e-12) for _, ref in greedy.references.values())


@settings(max_examples=20, deadline=None)
@given(schemas(max_dims=3, max_cells=200), st.booleans(), st.sampled_from(["mean", "worst"]))
def test_best_sa_matches_brute_force_on_random_schemas(schema, public_total, objective):
    workload = marginals(schema, range(1, len(schema) + 1))
    spec = ReleaseSpec(schema, 1.0, public_total=public_total)
    choice = best_sa(spec, workload, objective=objective)
    assert choice.error == pytest.approx(brute_force(spec, workload, objective)[1], rel=1e-9, abs=1e-9)


def test_expected_error_is_the_mean_and_worst_of_the_exact_variances():
    schema = small_schema()
    for workload in (marginals(schema, (1, 2)), paper_workload(schema, 300), marginals(schema, (2,), grains={"age": 5})):
        for sa in [(), ("age", "sex"), schema.names]:
            for public in (False, True):
                spec = ReleaseSpec(schema, 1.3, sa=sa, public_total=public)
                variances = spec.variances(workload.queries())
                assert expected_error(spec, workload) == pytest.approx(variances.mean(), rel=1e-12)
                assert expected_error(spec, workload, objective="worst") == pytest.approx(variances.max(), rel=1e-12)


def test_marginal_workloads_list_their_queries():
    schema = small_schema()
    two_way = marginals(schema, (2,))
    sizes = schema.shape
    assert len(two_way) == sum(a * b for a, b in itertools.combinations(sizes, 2))
    assert len(two_way.queries()) == len(two_way)
    # continents: the level-2 nodes (and no leaf of a deeper group)
    by_continent = marginals(schema, (1,), ["country"], grains={"country": 2})
    labels = {CONTINENTS.labels[n] for n in by_continent.queries().nodes[:, 2]}
    assert labels == {"Europe", "Asia", "Other"}
    bands = marginals(schema, (1,), ["age"], grains={"age": 5}).queries()
    assert bands.lo[:, 0].tolist() == list(range(0, 50, 5)) and bands.hi[:, 0].tolist() == list(range(4, 50, 5))
    assert two_way.constrained_axes() == frozenset(range(4))
    assert marginals(schema, (1,), ["age"]).constrained_axes() == frozenset({0})
    combined = marginals(schema, (1,), ["age"]).combine(paper_workload(schema, 10))
    assert len(combined) == 60 and "+" in combined.name


def test_workload_errors_say_what_to_fix():
    schema = small_schema()
    with pytest.raises(SchemaError, match="1- to 2-way"):
        marginals(schema, (3,), ["age", "sex"])
    with pytest.raises(SchemaError, match=r"levels 1\.\.4"):
        marginals(schema, (1,), grains={"country": 5})
    with pytest.raises(SchemaError, match="unknown attribute"):
        marginals(schema, (1,), grains={"nope": 2})
    with pytest.raises(SchemaError, match="more than 10"):
        marginals(schema, (2,)).queries(limit=10)
    with pytest.raises(PriveletError, match="objective"):
        best_sa(ReleaseSpec(schema, 1.0), marginals(schema, (1,)), objective="median")
    other = Schema([OrdinalAttribute.integer_range("x", 0, 3)])
    with pytest.raises(SchemaError, match="another schema"):
        expected_error(ReleaseSpec(other, 1.0), marginals(schema, (1,)))


def test_best_sa_over_twelve_attributes_is_exhaustive_and_no_worse_than_a_greedy_search():
    # its time is a benchmark figure: python -m privelet_gui.accuracy_bench
    schema = Schema([OrdinalAttribute.integer_range(f"a{i}", 0, 2 + i % 5) for i in range(12)])
    workload = paper_workload(schema, 2_000, seed=1)
    spec = ReleaseSpec(schema, 1.0, public_total=True)
    choice = best_sa(spec, workload)
    greedy = best_sa(spec, workload, exhaustive_up_to=0)
    assert choice.exhaustive and not greedy.exhaustive
    assert choice.error <= greedy.error * (1 + 1e-12)


@pytest.mark.parametrize("search", ["exhaustive", "greedy", "advise"])
def test_searches_stop_when_cancelled(search):
    """The app cancels a search when its inputs change: the search asks between its steps."""
    from privelet_gui.engine import Cancelled

    schema = small_schema()
    workload = marginals(schema, (2,))
    spec = ReleaseSpec(schema, 1.0)
    asked = []

    def should_cancel() -> bool:
        asked.append(1)
        return len(asked) > 1

    with pytest.raises(Cancelled):
        if search == "advise":
            advise(spec, workload, should_cancel=should_cancel)
        else:
            best_sa(spec, workload, exhaustive_up_to=10 if search == "exhaustive" else 0, should_cancel=should_cancel)
    assert len(asked) == 2  # it stopped at the first check that said so
    # and without a cancel it runs to the end, asking at every step
    asked.clear()
    if search == "advise":
        advise(spec, workload, should_cancel=lambda: bool(asked.append(1)))
    else:
        best_sa(spec, workload, exhaustive_up_to=10 if search == "exhaustive" else 0,
                should_cancel=lambda: bool(asked.append(1)))
    assert len(asked) > 2


def test_adult_two_way_marginals_gain_over_the_rule(adult_schema):
    spec = ReleaseSpec(adult_schema, 1.0)
    choice = best_sa(spec, marginals(adult_schema, (2,)))
    assert choice.gain_over_rule >= 2.5
    paper = best_sa(spec.replace(public_total=False), paper_workload(adult_schema, 10_000))
    assert paper.sa == recommend_sa(adult_schema)  # the rule is already the best on the paper's workload


# -- the advisor ------------------------------------------------------------------------------
def test_dropping_an_unqueried_attribute_is_predicted_exactly():
    schema = small_schema()
    workload = marginals(schema, (1, 2), ["age", "sex"])
    advice = advise(ReleaseSpec(schema, 1.0, sa=("sex",)), workload, sa_rule="given")
    drops = {s.attribute: s for s in advice.suggestions if s.kind == "drop"}
    assert set(drops) == {"country", "hours"}
    for name, suggestion in drops.items():
        assert suggestion.exact_share == 1.0 and name not in suggestion.schema.names
        # the prediction is the error of the same queries on the schema without the attribute
        rest = suggestion.schema
        spec = ReleaseSpec(rest, 1.0, sa=tuple(n for n in ("sex",) if n in rest.names))
        direct = marginals(rest, (1, 2), ["age", "sex"])
        assert suggestion.error == pytest.approx(expected_error(spec, direct), rel=1e-12)
    # an unconstrained transformed attribute multiplies the error by rho^2 (hours: 8 values, rho 4)
    multipliers = {m.name: m for m in advice.multipliers}
    assert multipliers["hours"].multiplier == pytest.approx(16.0) and not multipliers["hours"].constrained
    assert multipliers["country"].multiplier == pytest.approx(16.0)  # 4 levels
    assert advice.suggestions[0].kind == "drop"  # lossless suggestions first
    assert "off by +/- " in advice.sentence() and "of 1,000 rows" in advice.sentence(1000)


def test_bins_and_levels_map_the_queries_to_the_coarser_domain():
    schema = small_schema()
    workload = marginals(schema, (1,), ["age", "country"], grains={"age": 5, "country": 2})
    advice = advise(ReleaseSpec(schema, 1.0), workload, sa_rule="given")
    bins5 = next(s for s in advice.suggestions if s.kind == "bins" and "of 5 values" in s.description)
    assert bins5.exact_share == 1.0 and bins5.schema["age"].size == 10
    assert bins5.schema["age"].labels[0] == "[0, 5)"
    level2 = next(s for s in advice.suggestions if s.kind == "level")
    assert level2.exact_share == 1.0 and level2.schema["country"].labels == ("Europe", "Asia", "Other")
    # the mapped workload is the same queries on the new domain
    direct = marginals(bins5.schema, (1,), ["age", "country"], grains={"country": 2})
    spec = ReleaseSpec(bins5.schema, 1.0, sa=bins5.sa)
    assert bins5.error == pytest.approx(expected_error(spec, direct), rel=1e-12)
    # queries finer than the bins are rounded out and counted as not exact
    fine = advise(ReleaseSpec(schema, 1.0), marginals(schema, (1,), ["age"]), sa_rule="given")
    bins2 = next(s for s in fine.lossy if s.kind == "bins" and "of 2 values" in s.description)
    assert bins2.exact_share == pytest.approx(0.0)
    assert bins2.factor > 1


def test_bin_widths_are_friendly_and_leave_enough_bins():
    assert _bin_widths(74) == [2, 5, 10]
    assert _bin_widths(1001) == [2, 5, 10, 20, 50, 100]
    assert _bin_widths(10) == []


def test_adult_band_level_workload_gains_from_dropping_and_bands(adult_schema):
    workload = marginals(adult_schema, (1, 2), ["age", "sex", "education"], grains={"age": 5})
    advice = advise(ReleaseSpec(adult_schema, 1.0), workload)
    kinds = {s.description.split(" (")[0]: s for s in advice.suggestions}
    assert kinds["drop native-country"].factor == pytest.approx(9.0, rel=0.05)
    bands = kinds["age in bins of 5 values"]
    assert bands.exact_share == 1.0 and bands.factor > 4


@pytest.fixture
def adult_schema():
    from privelet_gui.io import load_schema, sample_schema_path

    return load_schema(sample_schema_path())


def test_a_nominal_attribute_at_a_level_counts_its_finer_values():
    import dataclasses

    import pandas as pd

    coarse = NominalAttribute("country", CONTINENTS, level=2)
    assert coarse.labels == ("Europe", "Asia", "Other") and coarse.finest == CONTINENTS
    codes = coarse.encode(pd.Series(["fr", "West", "Asia", "au", "nowhere", None])).codes
    assert codes.tolist() == [0, 0, 1, 2, -1, -1]  # a group above the level or an unknown value: outside
    copy = dataclasses.replace(coarse, column="land")
    assert copy.finest == CONTINENTS and copy.labels == coarse.labels and copy.column == "land"
    for level in (1, 5, True):
        with pytest.raises(SchemaError, match="level must be a whole number from 2 to 4"):
            NominalAttribute("country", CONTINENTS, level=level)
