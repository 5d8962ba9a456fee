"""Black-box privacy audits: lower bounds on epsilon from many releases of neighbouring tables.

For two neighbouring tables D and D' and an event E on the output, any epsilon-DP
mechanism has ``P[M(D) in E] <= exp(epsilon) P[M(D') in E]``. Estimating both
probabilities from releases and taking Clopper-Pearson bounds (the upper bound of the
smaller, the lower bound of the larger) gives a lower bound on the mechanism's real
epsilon that holds with the stated confidence. Here the bounds of each configuration
hold simultaneously with 99% confidence (Bonferroni over its events).

The events: a cell above its true value, a box sum above its true value, and the
likelihood-ratio statistic of the wavelet coefficients recovered from the release
(the forward transform of the noisy matrix) at its largest value, where the ratio of
the two probabilities is ``exp(L)`` for the privacy loss L of the pair. A correct
mechanism must never be flagged (bound <= epsilon); the same audit, on the same
number of releases, must flag a mechanism whose noise is halved (bound > epsilon).

Many releases at once: the table is copied along an extra attribute in S_A. The
mechanism treats the copies independently, with the same rho, K and grid as the table
alone (asserted), so each copy is exactly a release of the table. D and D' are released
in one run. ``PRIVELET_AUDIT_COPIES`` sets the number of releases of each table
(default 50,000); ``python -m tests.engine.test_audit`` prints every bound.
"""

from __future__ import annotations

import dataclasses
import math
import os

import numpy as np
import pytest

from privelet_gui.engine import Hierarchy, NominalAttribute, OrdinalAttribute, ReleaseSpec, Schema

from .stats import clopper_pearson
from .strategies import measurement_matrix
from .test_marginals import dense_operator

COPIES = int(os.environ.get("PRIVELET_AUDIT_COPIES", "50000"))
EPSILON = 1.0
CONFIDENCE = 0.99

AGES = Schema([OrdinalAttribute.integer_range("age", 0, 7)])
AGES_BY_JOB = Schema(
    [OrdinalAttribute.integer_range("age", 0, 3), NominalAttribute("job", Hierarchy.flat(["a", "b", "c"]))]
)
JOBS = Hierarchy.from_nested({"*": {"A": ["a1", "a2"], "B": ["b1", "b2", "b3"]}})
AGES_BY_NOMINAL_JOB = Schema([OrdinalAttribute.integer_range("age", 0, 3), NominalAttribute("job", JOBS)])

ROW = np.array([3.0, 1, 4, 1, 5, 9, 2, 6])
GRID = np.stack([ROW[:4], ROW[4:], ROW[:4] + 1], axis=1)  # age x job
SMALL = np.arange(20.0).reshape(4, 5) % 6


def neighbour(table: np.ndarray, neighbours: str, take: tuple[int, ...], give: tuple[int, ...]) -> np.ndarray:
    """D': one tuple moved from cell ``take`` to ``give`` (replace) or removed from ``take`` (add/remove)."""
    other = table.copy()
    other[take] -= 1
    if neighbours == "replace":
        other[give] += 1
    return other


# (name, schema, mechanism, S_A, D, the cell a tuple leaves, the cell it joins)
CONFIGURATIONS = [
    ("Basic", AGES, "basic", (), ROW, (0,), (7,)),
    ("Privelet", AGES, "privelet", (), ROW, (0,), (7,)),
    ("Privelet+", AGES_BY_JOB, "privelet+", ("job",), GRID, (0, 0), (3, 2)),
]


@dataclasses.dataclass(frozen=True)
class AuditResult:
    loss: float  # the privacy loss of the pair, sum |W dc| / lambda (its largest LR)
    bounds: dict[str, float]  # event -> 99% lower bound on epsilon (simultaneous)

    @property
    def largest(self) -> float:
        return max(self.bounds.values())


def epsilon_lower_bound(hits: int, other_hits: int, trials: int, confidence: float) -> float:
    """``log(p_lo / p'_hi)``: a lower bound on epsilon at ``confidence`` (each side one-sided at half the risk)."""
    low = clopper_pearson(hits, trials, confidence)[0]
    high = clopper_pearson(other_hits, trials, confidence)[1]
    return math.log(low / high) if low > 0 else -math.inf


def audit(
    schema: Schema,
    mechanism: str,
    sa: tuple[str, ...],
    first: np.ndarray,
    second: np.ndarray,
    neighbours: str,
    *,
    copies: int = COPIES,
    sampler: str = "exact",
    seed: int = 2026,
    strategies: tuple[str, ...] = (),
    marginals: tuple[tuple[tuple[str, ...], int], ...] = (),
) -> AuditResult:
    single = ReleaseSpec(schema, EPSILON, mechanism, sa, neighbours, sampler=sampler,  # type: ignore[arg-type]
                         strategies=strategies, marginals=marginals)
    stacked = Schema([OrdinalAttribute.integer_range("copy", 0, 2 * copies - 1), *schema])
    if mechanism == "marginals":  # every marginal per copy: independent releases of the copies
        spec = ReleaseSpec(stacked, EPSILON, "marginals", (), neighbours, sampler=sampler,  # type: ignore[arg-type]
                           marginals=tuple((("copy", *names), weight) for names, weight in marginals))
    elif mechanism == "strategies":
        spec = ReleaseSpec(stacked, EPSILON, "strategies", (), neighbours, sampler=sampler,  # type: ignore[arg-type]
                           strategies=("identity", *strategies))
    elif mechanism == "basic":
        spec = ReleaseSpec(stacked, EPSILON, "basic", (), neighbours, sampler=sampler)  # type: ignore[arg-type]
    else:
        spec = ReleaseSpec(stacked, EPSILON, "privelet+", ("copy", *single.effective_sa), neighbours, sampler=sampler)  # type: ignore[arg-type]
    mine, alone = spec.calibration(1), single.calibration(1)
    assert (mine.grid_exponent, mine.units, spec.rho) == (alone.grid_exponent, alone.units, single.rho)
    both = np.concatenate([np.broadcast_to(first, (copies, *first.shape)), np.broadcast_to(second, (copies, *second.shape))])
    noisy = spec.run(both, rng=np.random.default_rng(seed)).noisy
    cells = noisy.reshape(2 * copies, -1)

    # the likelihood-ratio statistic of the recovered weighted measurements (the strategy's map
    # applied to the noisy matrix)
    lam = single.nominal_scale
    measure = dense_operator(single.marginals_strategy) if mechanism == "marginals" else measurement_matrix(single.plan)
    y_first, y_second = measure @ first.reshape(-1), measure @ second.reshape(-1)
    y = cells @ measure.T
    ratio = (np.abs(y - y_second) - np.abs(y - y_first)).sum(axis=1) / lam
    loss = float(np.abs(y_first - y_second).sum() / lam)

    changed = np.flatnonzero((first - second).reshape(-1))
    leave = int(np.flatnonzero((first - second).reshape(-1) > 0)[0])
    # the box over the first half of the first axis through the cell the tuple leaves (not the one it joins)
    where = np.unravel_index(leave, first.shape)
    box = np.zeros(first.shape, dtype=bool)
    box[(slice(0, max(1, first.shape[0] // 2)), *where[1:])] = True
    box = box.reshape(-1)
    statistics = {
        "likelihood ratio >= its largest value": (ratio >= loss * (1 - 1e-9), False),
        "likelihood ratio <= minus its largest value": (ratio <= -loss * (1 - 1e-9), True),
        "the cell a tuple leaves >= its true count": (cells[:, leave] >= first.reshape(-1)[leave], False),
        "the cell a tuple leaves >= its true count + lambda": (cells[:, leave] >= first.reshape(-1)[leave] + lam, False),
        "a box sum >= its true count": (cells[:, box].sum(axis=1) >= first.reshape(-1)[box].sum(), False),
    }
    if changed.size == 2:  # replace: the cell a tuple joins
        join = int(next(index for index in changed if index != leave))
        statistics["the cell a tuple joins <= its true count"] = (cells[:, join] <= first.reshape(-1)[join], False)
    per_event = 1 - (1 - CONFIDENCE) / len(statistics)  # simultaneous over the events
    bounds = {}
    for name, (event, reverse) in statistics.items():
        hits, other = int(event[:copies].sum()), int(event[copies:].sum())
        if reverse:
            hits, other = other, hits
        bounds[name] = epsilon_lower_bound(hits, other, copies, per_event)
    return AuditResult(loss=loss / EPSILON, bounds=bounds)


def halve_the_noise(monkeypatch: pytest.MonkeyPatch) -> None:
    """A broken mechanism: half the sensitivity in grid units, so half the noise (and twice the loss)."""
    calibration = ReleaseSpec.calibration

    def halved(self: ReleaseSpec, rows: int):  # type: ignore[no-untyped-def]
        right = calibration(self, rows)
        return dataclasses.replace(right, units=right.units // 2)

    monkeypatch.setattr(ReleaseSpec, "calibration", halved)


@pytest.mark.parametrize("neighbours", ["replace", "add-remove"])
@pytest.mark.parametrize("configuration", CONFIGURATIONS, ids=lambda c: c[0])
def test_the_audit_never_flags_a_mechanism_and_always_flags_it_with_halved_noise(configuration, neighbours, monkeypatch):
    _, schema, mechanism, sa, table, take, give = configuration
    other = neighbour(table, neighbours, take, give)
    right = audit(schema, mechanism, sa, table, other, neighbours)
    assert right.largest <= EPSILON, right.bounds
    likelihood = max(bound for event, bound in right.bounds.items() if event.startswith("likelihood"))
    assert likelihood > 0.5 * right.loss * EPSILON  # the audit has power
    halve_the_noise(monkeypatch)
    broken = audit(schema, mechanism, sa, table, other, neighbours)
    assert broken.largest > EPSILON, broken.bounds


def test_the_standard_sampler_and_nominal_transforms_pass_the_audit():
    other = neighbour(ROW, "add-remove", (0,), (7,))
    assert audit(AGES, "privelet", (), ROW, other, "add-remove", sampler="standard").largest <= EPSILON
    # a nominal attribute transformed (mean subtraction): never flagged either
    other = neighbour(SMALL, "replace", (1, 0), (3, 4))
    assert audit(AGES_BY_NOMINAL_JOB, "privelet+", ("age",), SMALL, other, "replace").largest <= EPSILON


def main() -> None:  # pragma: no cover - a by-hand run: python -m tests.engine.test_audit
    print(f"{COPIES:,} releases of each table, epsilon {EPSILON}, 99% simultaneous lower bounds per configuration")
    for name, schema, mechanism, sa, table, take, give in CONFIGURATIONS:
        for neighbours in ("replace", "add-remove"):
            other = neighbour(table, neighbours, take, give)
            right = audit(schema, mechanism, sa, table, other, neighbours)
            with pytest.MonkeyPatch.context() as patch:
                halve_the_noise(patch)
                broken = audit(schema, mechanism, sa, table, other, neighbours)
            print(f"{name:<10} {neighbours:<10} loss of the pair {right.loss:.2f} epsilon: correct "
                  f"{right.largest:.3f}, halved noise {broken.largest:.3f} ({'flagged' if broken.largest > EPSILON else 'MISSED'})")
            for event, bound in right.bounds.items():
                print(f"    {event:<52} {bound:7.3f} (halved: {broken.bounds[event]:.3f})")


if __name__ == "__main__":
    main()


# (name, schema, strategies, D, the cell a tuple leaves, the cell it joins)
STRATEGY_CONFIGURATIONS = [
    ("tree of branching 2", AGES, ("tree-2",), ROW, (0,), (7,)),
    ("tree without its root, by hierarchy", AGES_BY_NOMINAL_JOB, ("tree-2/0,1,1", "hierarchy"), SMALL, (1, 0), (3, 4)),
    ("stacked identity", AGES, ("stacked/12/1/eNpjYGGAQCgAAADQABE=",), ROW, (0,), (7,)),
]


@pytest.mark.parametrize("neighbours", ["replace", "add-remove"])
@pytest.mark.parametrize("configuration", STRATEGY_CONFIGURATIONS, ids=lambda c: c[0])
def test_the_strategies_beyond_the_paper_pass_the_audit_and_fail_it_with_halved_noise(configuration, neighbours,
                                                                                     monkeypatch):
    """Trees with least squares and the stacked identity. The release is a least-squares
    reconstruction, which keeps less than the noisy measurements themselves: the events here are
    not the optimal test, and a pair's privacy loss can be below epsilon (under replace-one the
    root of a tree never changes). So the audit must never flag them, and with half the noise it
    must see more loss than with the right noise, by a margin; where the pair's loss with half the
    noise is large (the stacked identity) it must flag it outright. Their sensitivity is checked exactly
    against their measurement matrices (tests/engine/test_trees.py, test_stacked.py)."""
    name, schema, strategies, table, take, give = configuration
    other = neighbour(table, neighbours, take, give)
    right = audit(schema, "strategies", (), table, other, neighbours, strategies=strategies)
    assert right.largest <= EPSILON, right.bounds
    halve_the_noise(monkeypatch)
    broken = audit(schema, "strategies", (), table, other, neighbours, strategies=strategies)
    assert broken.largest > right.largest + 0.2, (right.bounds, broken.bounds)
    if name == "stacked identity":
        assert broken.largest > EPSILON, broken.bounds


@pytest.mark.parametrize("neighbours", ["replace", "add-remove"])
def test_weighted_marginals_pass_the_audit_and_fail_it_with_halved_noise(neighbours, monkeypatch):
    """Weighted marginals with least squares (docs/math.md, "Marginals"): as for the strategies
    above, the release keeps less than the noisy marginals (the total is in both), so the audit must
    never flag it and must see clearly more loss with half the noise. Their sensitivity is checked
    exactly against the dense operator (tests/engine/test_marginals.py)."""
    chosen = ((("age",), 2), (("job",), 1), (("age", "job"), 1))
    other = neighbour(GRID, neighbours, (0, 0), (3, 2))
    right = audit(AGES_BY_JOB, "marginals", (), GRID, other, neighbours, marginals=chosen)
    assert right.largest <= EPSILON, right.bounds
    halve_the_noise(monkeypatch)
    broken = audit(AGES_BY_JOB, "marginals", (), GRID, other, neighbours, marginals=chosen)
    assert broken.largest > right.largest + 0.2, (right.bounds, broken.bounds)
