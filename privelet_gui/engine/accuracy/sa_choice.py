"""The S_A that suits a workload, and the rule that gives a release its S_A.

Both are data-independent (they read the schema and the workload, never the table), so they
cost no privacy and can run live while the custodian edits the schema.

- :func:`best_sa`: the S_A that minimises the workload's expected error (average square
  error, or its worst query). Exhaustive over all ``2^d`` subsets up to
  :data:`EXHAUSTIVE_UP_TO` attributes: the error of a subset is, per workload row, a
  product over the axes of one of two numbers (transformed or in S_A), so the products of
  every subset of each half of the axes are built by doubling and the halves are joined by
  one matrix product. Beyond that, a local search from the best of the paper's rule,
  Basic and Privelet. Basic (every attribute in S_A) and Privelet (none) are always
  candidates, so the choice is never worse than either.
- :func:`resolve_sa`: the S_A an :data:`SaRule` gives a release: the paper's rule
  (``"recommended"``), the best S_A for the workload (``"best"``) or the custodian's own list
  (``"given"``). The command line, the app's workspace and the advisor all ask it, so that
  each rule is interpreted here only.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from ..bounds import recommend_sa
from ..errors import PriveletError, SchemaError
from ..progress import CancelCallback, Progress
from ..spec import ReleaseSpec
from .workloads import (
    Objective,
    Workload,
    check_objective,
    combine_products,
    unit_variance,
    workload_factors,
)

__all__ = [
    "EXHAUSTIVE_UP_TO",
    "SA_RULES",
    "SA_RULE_ALIASES",
    "SaChoice",
    "SaRule",
    "best_sa",
    "check_sa_rule",
    "resolve_sa",
]

#: Schemas with at most this many attributes get the exhaustive search (4096 subsets).
EXHAUSTIVE_UP_TO = 12
# Cells of one block of subset x query products in the worst-case search (memory bound).
_BLOCK = 1 << 22


@dataclass(frozen=True)
class SaChoice:
    """The chosen S_A and the errors it was compared with (all in squared counts).

    ``references`` maps ``"rule"`` (the paper's |A| <= P(A)^2 H(A)), ``"basic"`` and
    ``"privelet"`` to ``(S_A, error)``.

    Attributes
    ----------
    sa : tuple of str
        The chosen S_A, in axis order.
    error : float
        The workload's expected error under it.
    objective : {"mean", "worst"}
        What the error is: the average square error, or the worst query's.
    exhaustive : bool
        Whether every subset was tried (at most :data:`EXHAUSTIVE_UP_TO` attributes).
    references : dict of str to (tuple of str, float)
        See above.
    """

    sa: tuple[str, ...]
    error: float
    objective: Objective
    exhaustive: bool
    references: dict[str, tuple[tuple[str, ...], float]]

    @property
    def gain_over_rule(self) -> float:
        """How many times smaller the error is than under the paper's rule."""
        rule = self.references["rule"][1]
        return rule / self.error if self.error > 0 else math.inf


def _half_products(columns: tuple[np.ndarray, np.ndarray], axes: range) -> np.ndarray:
    """For every subset of ``axes`` (bit k set: the k-th axis in S_A), the per-row product
    of the transformed (``columns[0]``) or S_A (``columns[1]``) factors: (2^len, rows)."""
    transformed, untransformed = columns
    out = np.ones((1, transformed.shape[0]))
    for axis in axes:
        out = np.concatenate([out * transformed[:, axis], out * untransformed[:, axis]])
    return out


def _all_subsets(factors_columns: list[tuple[np.ndarray, np.ndarray]], signs: list[float], d: int,
                 weights: np.ndarray | None, check: Callable[[], None]) -> np.ndarray:
    """The objective of every subset, indexed by its bit mask: the weighted mean over rows
    (``weights``) or, with ``weights=None``, the maximum over rows. ``check()`` is called
    between blocks of work (it raises to cancel)."""
    low, high = range(d // 2), range(d // 2, d)
    lows = [_half_products(c, low) for c in factors_columns]
    highs = [_half_products(c, high) for c in factors_columns]
    if weights is not None:
        total = np.zeros((lows[0].shape[0], highs[0].shape[0]))
        for sign, a, b in zip(signs, lows, highs, strict=False):
            check()
            total += sign * (a * weights) @ b.T
        result = total / weights.sum()
    else:
        result = np.empty((lows[0].shape[0], highs[0].shape[0]))
        rows = highs[0].shape[1]
        step = max(1, _BLOCK // max(highs[0].shape[0], 1))
        for i in range(lows[0].shape[0]):
            best = np.full(highs[0].shape[0], -np.inf)
            for start in range(0, rows, step):
                check()
                part = slice(start, start + step)
                value = sum(sign * a[i, part] * b[:, part] for sign, a, b in zip(signs, lows, highs, strict=False))
                best = np.maximum(best, np.asarray(value).max(axis=1))
            result[i] = best
    # result[i_low, i_high]: the subset's mask is i_low + (i_high << len(low))
    return np.maximum(result.T.reshape(-1), 0.0)


def best_sa(
    spec: ReleaseSpec,
    workload: Workload,
    *,
    objective: Objective = "mean",
    exhaustive_up_to: int = EXHAUSTIVE_UP_TO,
    should_cancel: CancelCallback | None = None,
) -> SaChoice:
    """The S_A minimising ``workload``'s expected error under ``spec``'s epsilon, neighbours
    and public total (its mechanism and S_A are ignored). ``should_cancel()`` is asked
    between steps of the search (:class:`~privelet_gui.engine.Cancelled` when it says so).

    Parameters
    ----------
    spec : ReleaseSpec
        The release; its epsilon, neighbours and public total are used.
    workload : Workload
        Queries on ``spec.schema``.
    objective : {"mean", "worst"}, default "mean", keyword-only
        Minimise the average square error, or the worst query's.
    exhaustive_up_to : int, default 12, keyword-only
        Try all ``2^d`` subsets when ``d`` is at most this; a local search beyond.
    should_cancel : callable ``() -> bool``, optional, keyword-only
        Polled between steps.

    Returns
    -------
    SaChoice

    Raises
    ------
    SchemaError
        The workload is on another schema, or (``"worst"``) lists more than 5,000,000 queries.
    PriveletError
        ``objective`` is neither ``"mean"`` nor ``"worst"``.
    Cancelled
        ``should_cancel()`` returned True.

    Examples
    --------
    >>> from privelet_gui.engine import Hierarchy, NominalAttribute, OrdinalAttribute, Schema, marginals
    >>> schema = Schema([OrdinalAttribute.integer_range("age", 0, 63),
    ...                  NominalAttribute("sex", Hierarchy.flat(["F", "M"]))])
    >>> choice = best_sa(ReleaseSpec(schema, 1.0), marginals(schema, ways=(1,)))
    >>> choice.sa, choice.exhaustive  # one-way marginals of small domains: Basic wins
    (('age', 'sex'), True)
    """
    schema = spec.schema
    if workload.schema != schema:
        raise SchemaError(f"the workload {workload.name!r} is on another schema than the release")
    objective = check_objective(objective)
    check = Progress(None, should_cancel).check
    d = len(schema)
    factors = workload_factors(workload, spec.model, average=objective == "mean")
    public = spec.uses_public_total
    unit = unit_variance(spec.epsilon, spec.neighbours)
    columns = [(factors.transformed, factors.untransformed)]
    signs = [1.0]
    if public:
        columns.append((factors.transformed_covariance, factors.untransformed_covariance))
        columns.append((factors.share2 * factors.totals[:, 0], factors.share2 * factors.totals[:, 1]))
        signs += [-2.0, 1.0]
    weights = factors.weights if objective == "mean" else None

    def error_of(mask: np.ndarray) -> float:
        own, covariance, total = factors.select(mask)
        values = combine_products(own, covariance, total, public)
        if weights is None:
            return unit * float(values.max())
        return unit * float(np.dot(weights, values) / weights.sum())

    def names(mask: np.ndarray) -> tuple[str, ...]:
        return tuple(schema[a].name for a in range(d) if mask[a])

    rule = np.isin(np.array(schema.names), recommend_sa(schema))
    references = {
        "rule": rule,
        "basic": np.ones(d, dtype=bool),
        "privelet": np.zeros(d, dtype=bool),
    }
    reference_errors = {key: (names(mask), error_of(mask)) for key, mask in references.items()}
    exhaustive = d <= exhaustive_up_to
    if exhaustive:
        errors = _all_subsets(columns, signs, d, weights, check)
        index = int(np.argmin(errors))
        mask = np.array([(index >> a) & 1 for a in range(d)], dtype=bool)
    else:
        mask = min(references.values(), key=error_of).copy()
        current = error_of(mask)
        while True:  # flip the one attribute that helps most, while one does
            trials = []
            for axis in range(d):
                check()
                trial = mask.copy()
                trial[axis] = not trial[axis]
                trials.append((error_of(trial), axis))
            value, axis = min(trials)
            if value >= current:
                break
            mask[axis] = not mask[axis]
            current = value
    chosen = error_of(mask)
    # The search's floating-point sums may differ in the last bits from a direct evaluation:
    # never report a reference as worse than the choice when it is not.
    for sa, value in reference_errors.values():
        if value < chosen:
            mask, chosen = np.isin(np.array(schema.names), sa), value
    return SaChoice(names(mask), chosen, objective, exhaustive, reference_errors)


# -- the rule that chooses S_A ----------------------------------------------------------------

#: How S_A is chosen: the paper's rule (:func:`~privelet_gui.engine.recommend_sa`: the attributes
#: with ``|A| <= P(A)^2 H(A)``, which never raise its bound), the best S_A for a workload
#: (:func:`best_sa`), or the custodian's own list. The first two follow the schema.
SaRule = Literal["recommended", "best", "given"]
SA_RULES: tuple[SaRule, ...] = ("recommended", "best", "given")
#: Earlier names of the rules, still read: the command line's and release files' ``"auto"`` and
#: project files' ``"chosen"`` (before version 5).
SA_RULE_ALIASES: Mapping[str, SaRule] = {"auto": "recommended", "chosen": "given"}


def check_sa_rule(rule: object) -> SaRule:
    """The rule ``rule`` names: one of :data:`SA_RULES`, or an earlier name of one
    (:data:`SA_RULE_ALIASES`).

    Parameters
    ----------
    rule : str
        A rule's name.

    Returns
    -------
    {"recommended", "best", "given"}

    Raises
    ------
    PriveletError
        ``rule`` names no rule.
    """
    for name in SA_RULES:
        if rule == name:
            return name
    if isinstance(rule, str) and rule in SA_RULE_ALIASES:
        return SA_RULE_ALIASES[rule]
    raise PriveletError(f"the S_A rule is one of {', '.join(SA_RULES)}, got {rule!r}")


def resolve_sa(
    rule: SaRule,
    spec: ReleaseSpec,
    workload: Workload | None = None,
    *,
    given: Sequence[str] = (),
    best: Sequence[str] | None = None,
    objective: Objective = "mean",
    should_cancel: CancelCallback | None = None,
) -> tuple[str, ...]:
    """The S_A that ``rule`` gives a release of ``spec``: the only interpreter of :data:`SaRule`.

    Parameters
    ----------
    rule : {"recommended", "best", "given"} or an earlier name (:data:`SA_RULE_ALIASES`)
        ``"recommended"``: the paper's rule on ``spec.schema``; ``"best"``: the S_A with the
        least expected error on ``workload`` under ``spec``'s neighbours and public total;
        ``"given"``: ``given``, as it is.
    spec : ReleaseSpec
        The release (its mechanism and S_A are not read).
    workload : Workload, optional
        The queries ``"best"`` chooses for (on ``spec.schema``); unused by the other rules.
    given : sequence of str, default (), keyword-only
        The custodian's own S_A (``"given"``).
    best : sequence of str, optional, keyword-only
        Under ``"best"``, the best S_A when it was searched already (the app searches on a
        worker and keeps the results); None: :func:`best_sa` searches it here.
    objective : {"mean", "worst"}, default "mean", keyword-only
        What ``"best"`` minimises: the average square error, or the worst query's.
    should_cancel : callable ``() -> bool``, optional, keyword-only
        Polled by the search.

    Returns
    -------
    tuple of str
        S_A's names (in axis order but under ``"given"``, which keeps ``given``'s order).

    Raises
    ------
    PriveletError
        ``rule`` names no rule, or ``"best"`` has neither ``workload`` nor ``best``.
    SchemaError, Cancelled
        As :func:`best_sa` raises them.

    Examples
    --------
    >>> from privelet_gui.engine import Hierarchy, NominalAttribute, OrdinalAttribute, Schema, marginals
    >>> schema = Schema([OrdinalAttribute.integer_range("age", 0, 1023),
    ...                  NominalAttribute("sex", Hierarchy.flat(["F", "M"]))])
    >>> spec = ReleaseSpec(schema, 1.0)
    >>> resolve_sa("recommended", spec), resolve_sa("given", spec, given=["age"])
    (('sex',), ('age',))
    >>> resolve_sa("best", spec, marginals(schema, ways=(1,)))  # one-way marginals: Basic wins
    ('age', 'sex')
    """
    rule = check_sa_rule(rule)
    if rule == "given":
        return tuple(given)
    if rule == "recommended":
        return recommend_sa(spec.schema)
    if best is not None:
        return tuple(best)
    if workload is None:
        raise PriveletError("the best S_A is chosen for a workload: give one (or the S_A already found)")
    return best_sa(spec, workload, objective=objective, should_cancel=should_cancel).sa
