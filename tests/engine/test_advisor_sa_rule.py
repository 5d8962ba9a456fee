"""The S_A rule: one type, one vocabulary, one resolver (issue 42, item 5)."""

from __future__ import annotations

import pytest

from privelet_gui.engine import (
    SA_RULE_ALIASES,
    SA_RULES,
    Hierarchy,
    NominalAttribute,
    OrdinalAttribute,
    PriveletError,
    ReleaseSpec,
    Schema,
    advise,
    best_sa,
    check_sa_rule,
    marginals,
    recommend_sa,
    resolve_sa,
)
from privelet_gui.engine.accuracy import advisor

SCHEMA = Schema([
    OrdinalAttribute.integer_range("age", 0, 63),
    NominalAttribute("sex", Hierarchy.flat(["F", "M"])),
    OrdinalAttribute.integer_range("hours", 0, 7),
])
WORKLOAD = marginals(SCHEMA, (1, 2), ["age", "sex"])


def test_the_rules_and_their_earlier_names():
    assert SA_RULES == ("recommended", "best", "given")
    assert [check_sa_rule(rule) for rule in SA_RULES] == list(SA_RULES)
    assert dict(SA_RULE_ALIASES) == {"auto": "recommended", "chosen": "given"}
    assert check_sa_rule("auto") == "recommended" and check_sa_rule("chosen") == "given"
    for other in ("kept", "best-strategy", "Recommended", None, 1):
        with pytest.raises(PriveletError, match="one of recommended, best, given"):
            check_sa_rule(other)


def test_each_rule_resolves_to_its_s_a():
    spec = ReleaseSpec(SCHEMA, 1.0, neighbours="add-remove")
    assert resolve_sa("recommended", spec) == recommend_sa(SCHEMA) == resolve_sa("auto", spec)
    assert resolve_sa("best", spec, WORKLOAD) == best_sa(spec, WORKLOAD).sa
    assert resolve_sa("best", spec, WORKLOAD, objective="worst") == best_sa(spec, WORKLOAD, objective="worst").sa
    assert resolve_sa("given", spec, WORKLOAD, given=["hours", "age"]) == ("hours", "age")  # as given
    assert resolve_sa("given", spec) == ()
    # a best S_A searched already (the app's worker) is taken as it is
    assert resolve_sa("best", spec, best=["sex"]) == ("sex",)
    with pytest.raises(PriveletError, match="chosen for a workload"):
        resolve_sa("best", spec)


def test_the_advisor_asks_the_resolver_for_every_s_a(monkeypatch):
    asked = []

    def spy(rule, spec, workload=None, **options):
        asked.append(rule)
        return resolve_sa(rule, spec, workload, **options)

    monkeypatch.setattr(advisor, "resolve_sa", spy)
    spec = ReleaseSpec(SCHEMA, 1.0, sa=("sex",))
    for rule, current in (("recommended", recommend_sa(SCHEMA)), ("best", best_sa(spec, WORKLOAD).sa),
                          ("given", ("sex",))):
        asked.clear()
        advice = advise(spec, WORKLOAD, sa_rule=rule)
        assert advice.spec.effective_sa == current
        assert asked and set(asked) == {rule}  # the current schema and each changed one
    with pytest.raises(PriveletError, match="S_A rule"):
        advise(spec, WORKLOAD, sa_rule="kept")  # type: ignore[arg-type]


def test_weighted_marginals_are_advised_as_privelet_plus_which_follows_a_change_of_the_schema():
    weighted = ReleaseSpec(SCHEMA, 1.0, "marginals", marginals=((("age", "sex"), 2), (("hours",), 1)))
    advice = advise(weighted, WORKLOAD, sa_rule="best")
    plus = advise(ReleaseSpec(SCHEMA, 1.0), WORKLOAD, sa_rule="best")
    assert advice.spec == plus.spec and advice.error == plus.error and advice.suggestions
    assert [(s.error, s.sa) for s in advice.suggestions] == [(s.error, s.sa) for s in plus.suggestions]
