"""Under the best strategy (the release's default) the advisor weighs every change with the
strategy the release will use: the best strategy for the changed schema's workload."""

from __future__ import annotations

import pytest

from privelet_gui.engine import (
    Cancelled,
    PriveletError,
    ReleaseSpec,
    Schema,
    advise,
    best_strategy,
    expected_error,
    marginals,
)
from privelet_gui.engine.accuracy.advisor import _candidates
from privelet_gui.engine.accuracy.coarsening import coarsen
from privelet_gui.io import load_schema, sample_schema_path

SCHEMA = load_schema(sample_schema_path())
# Adult's 1- and 2-way marginals of three attributes: Privelet+ with the best S_A ranks dropping
# occupation first; the best strategy, weighted marginals, gains nothing from dropping an attribute
# no marginal holds, and ranks the workload's own bins of age first.
WORKLOAD = marginals(SCHEMA, (1, 2), ["age", "sex", "education"], grains={"age": 5})
SPEC = ReleaseSpec(SCHEMA, 1.0)


@pytest.fixture(scope="module")
def advice():
    return advise(SPEC, WORKLOAD, strategies="best")


def test_the_rankings_differ_here(advice):
    plus = advise(SPEC, WORKLOAD, sa_rule="best")
    assert [s.description for s in plus.suggestions] != [s.description for s in advice.suggestions]
    assert plus.suggestions[0].description.startswith("drop occupation")
    assert advice.spec.mechanism == "marginals"
    assert advice.suggestions[0].description.startswith("age in bins of 5 values")
    assert not any(s.kind == "drop" for s in advice.suggestions)


def test_every_figure_is_the_best_strategy_s_exact_error(advice):
    current = best_strategy(SPEC, WORKLOAD, marginals=True)
    assert advice.spec == current.spec
    assert advice.error == pytest.approx(expected_error(current.spec, WORKLOAD), rel=1e-9)
    assert advice.suggestions and advice.lossy
    for s in (*advice.suggestions, *advice.lossy):
        chosen = best_strategy(SPEC.replace(schema=s.schema), s.workload, marginals=True).spec
        assert (s.strategies, s.marginals, s.sa) == (chosen.axis_strategies, chosen.marginals, chosen.effective_sa)
        assert s.before == advice.error
        if s.lossless:
            assert s.error == pytest.approx(expected_error(chosen, s.workload), rel=1e-9)
    # a lossy one's noise: the fine queries spread over the coarse cells, with that same strategy
    lossy = advice.lossy[0]
    candidate = next(c for c in _candidates(SCHEMA, WORKLOAD) if c.description == lossy.description)
    coarsened = coarsen(WORKLOAD, lossy.schema, candidate.axis, candidate.coarsening)
    chosen = best_strategy(SPEC.replace(schema=lossy.schema), lossy.workload, marginals=True).spec
    assert lossy.error == pytest.approx(coarsened.expected_error(chosen), rel=1e-9)


def test_no_suggestion_makes_the_best_strategy_worse(advice):
    assert all(s.error < advice.error for s in advice.suggestions)
    assert [s.error for s in advice.suggestions] == sorted(s.error for s in advice.suggestions)


def test_the_current_strategy_chosen_already_is_taken_as_it_is(advice):
    # the app chooses it on a worker of its own: the advisor starts from it, with the same figures
    again = advise(SPEC, WORKLOAD, strategies="best", chosen=best_strategy(SPEC, WORKLOAD, marginals=True).spec)
    assert again.spec == advice.spec
    assert again.error == pytest.approx(advice.error, rel=1e-9)
    assert [(s.description, s.strategies, s.marginals) for s in again.suggestions] == [
        (s.description, s.strategies, s.marginals) for s in advice.suggestions]
    assert [s.error for s in again.suggestions] == pytest.approx([s.error for s in advice.suggestions], rel=1e-9)
    identity = advise(SPEC, WORKLOAD, strategies="best", chosen=SPEC.replace(mechanism="strategies", strategies=("identity",) * len(SCHEMA)))  # taken as given
    assert identity.spec.label == "basic" and identity.error > advice.error


def test_only_the_searched_changes_are_listed():
    few = advise(SPEC, WORKLOAD, strategies="best", searched=2)
    assert len(few.suggestions) <= 2 and len(few.lossy) <= 2
    for s in few.suggestions:
        chosen = best_strategy(SPEC.replace(schema=s.schema), s.workload, marginals=True).spec
        assert s.error == pytest.approx(expected_error(chosen, s.workload), rel=1e-9)


def test_progress_reaches_the_end_and_cancel_stops_it():
    seen: list[float] = []
    advise(SPEC, WORKLOAD, strategies="best", progress=lambda fraction, _stage: seen.append(fraction))
    assert seen[-1] == 1.0 and seen == sorted(seen)
    asked = []

    def after_a_few() -> bool:
        asked.append(True)
        return len(asked) > 20

    with pytest.raises(Cancelled):
        advise(SPEC, WORKLOAD, strategies="best", should_cancel=after_a_few)


def test_an_unknown_choice_is_refused():
    with pytest.raises(PriveletError, match="'spec' or 'best'"):
        advise(SPEC, WORKLOAD, strategies="named")  # type: ignore[arg-type]


def test_an_attribute_s_multiplier_keeps_every_query_with_its_other_conditions():
    one_way = marginals(SCHEMA, (1,))
    advice = advise(SPEC, one_way, strategies="best")
    assert advice.spec.mechanism == "marginals"
    for axis, m in enumerate(advice.multipliers):
        rest = coarsen(one_way, Schema([a for i, a in enumerate(SCHEMA) if i != axis]), axis, None).workload
        assert len(rest) == len(one_way)  # the attribute's queries become whole-table ones, one each
        # under replace-one neighbours the total is exact: without the attribute its queries cost nothing
        assert m.multiplier > 1, m
