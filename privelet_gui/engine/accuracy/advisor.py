"""Choosing for a workload: the best S_A, and how coarse each attribute's domain should be.

Both are data-independent (they read the schema and the workload, never the table),
so they cost no privacy and can run live while the custodian edits the schema.

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
  (``"given"``). The command line, the app's workspace and :func:`advise` all ask it, so that
  each rule is interpreted here only.
- :func:`advise`: each attribute's multiplier of the error, and concrete changes of the
  domain (bins of a width for a numeric ordinal attribute, a hierarchy level for a nominal
  one, dropping an attribute no query constrains), each with its predicted error.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

import numpy as np

from ..errors import PriveletError, SchemaError
from ..model.schema import Attribute, NominalAttribute, NumericBins, OrdinalAttribute, Schema
from ..progress import CancelCallback, Progress
from ..spec import ReleaseSpec
from .bounds import margin95, recommend_sa
from .coarsening import (
    Answering,
    AxisCoarsening,
    BinsCoarsening,
    LevelCoarsening,
    check_answering,
    coarsen,
)
from .workloads import (
    Objective,
    ProductPart,
    Workload,
    check_objective,
    combine_products,
    expected_error,
    unit_variance,
    workload_factors,
)

__all__ = [
    "EXHAUSTIVE_UP_TO",
    "SA_RULES",
    "SA_RULE_ALIASES",
    "Advice",
    "AttributeMultiplier",
    "SaChoice",
    "SaRule",
    "Suggestion",
    "advise",
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


# -- the granularity advisor ------------------------------------------------------------------

SuggestionKind = Literal["drop", "bins", "level"]


@dataclass(frozen=True)
class AttributeMultiplier:
    """How much one attribute multiplies the workload's error.

    ``multiplier`` is the error divided by the error of the same workload on the schema
    without the attribute (queries keep their other conditions). ``constrained`` says
    whether any query of the workload constrains the attribute.

    Attributes
    ----------
    name : str
        The attribute's name.
    in_sa : bool
        Whether it is in the (chosen) S_A.
    multiplier : float
        See above (inf when the error without it is 0).
    constrained : bool
        See above.
    """

    name: str
    in_sa: bool
    multiplier: float
    constrained: bool


@dataclass(frozen=True)
class Suggestion:
    """One change of the domain and what it is predicted to do to the workload's error.

    ``error`` is the expected square error of the noise on the workload's queries on the new
    domain with S_A ``sa``; ``exact_share`` is the share of the queries the new domain answers
    exactly. A suggestion is :attr:`lossless` when that is all of them: ``error`` is then the
    whole error. The others are answered by ``answering`` (see
    :mod:`~privelet_gui.engine.accuracy.coarsening`) and also get a bias that depends on the
    data: ``estimated_share`` is, on average over them, the share of a query's answer that
    spreading estimates, ``added_share`` the values rounding out adds (relative to the query's
    own). ``schema`` and ``workload`` are the changed ones (``workload`` rounded out to the new
    domain); ``width`` (bins, in values of the current domain) and ``level`` say the change.

    Attributes
    ----------
    kind : {"drop", "bins", "level"}
        Drop the attribute, bin a numeric ordinal one, or cut a nominal one's hierarchy.
    attribute : str
        The attribute changed.
    description : str
        The change, for people.
    schema : Schema
        The changed schema.
    workload : Workload
        The workload on the changed schema.
    sa : tuple of str
        S_A on the changed schema.
    error : float
        The predicted expected error (squared counts; noise only).
    before : float
        The error before the change (squared counts).
    exact_share : float
        See above: in 0..1.
    answering : {"spread", "round-out"}
        How queries the new domain cannot answer exactly are answered.
    estimated_share : float
        Spreading's estimated share of an inexact query's answer, on average (0..1).
    added_share : float
        Rounding out's added values relative to an inexact query's own, on average.
    width : int or None
        For bins: their width in values of the current domain.
    level : int or None
        For a hierarchy level: the level kept.
    """

    kind: SuggestionKind
    attribute: str
    description: str
    schema: Schema
    workload: Workload = field(repr=False)
    sa: tuple[str, ...]
    error: float
    before: float
    exact_share: float
    answering: Answering = "spread"
    estimated_share: float = 0.0
    added_share: float = 0.0
    width: int | None = None
    level: int | None = None

    @property
    def factor(self) -> float:
        """How many times smaller the predicted error is."""
        return self.before / self.error if self.error > 0 else math.inf

    @property
    def lossless(self) -> bool:
        """Whether every query of the workload stays exact on the new domain."""
        return self.exact_share >= 1.0

    def bias_text(self) -> str:
        """What bias the inexact queries risk, for people.

        Returns
        -------
        str
            A sentence on the inexact queries' bias; empty when the suggestion is lossless.
        """
        if self.lossless:
            return ""
        inexact = f"the other {1 - self.exact_share:.0%} of the queries"
        if self.answering == "spread":
            return (f"{inexact} spread a coarse cell's count evenly over its values (on average "
                    f"{self.estimated_share:.0%} of such an answer is estimated: biased wherever the data is not "
                    "even inside a bin or group)")
        return (f"{inexact} are rounded out to whole bins or groups (on average {self.added_share:.0%} more values "
                "than asked are counted: biased by their whole count)")

    def grain_after(self, grain: int | None) -> int | None:
        """A workload grain of this attribute (blocks of ``grain`` values, or a hierarchy level;
        None: its finest values) with the same meaning on the new domain, as near as it has one:
        blocks of 5 years stay 5 years (one bin of 5 after bins of 5).

        Parameters
        ----------
        grain : int or None
            The grain on the current domain.

        Returns
        -------
        int or None
            The grain on the changed domain.
        """
        if grain is None:
            return None
        if self.kind == "bins" and self.width is not None:
            return max(1, round(grain / self.width))
        if self.kind == "level" and self.level is not None and grain > self.level:
            return None
        return grain


@dataclass(frozen=True)
class Advice:
    """The advisor's answer for one release specification and workload.

    ``suggestions`` are the lossless changes that make the workload's error smaller, best
    first; ``lossy`` the changes that leave some query inexact, listed apart (most queries
    exact first): their predicted ``error`` is of the noise only.

    Attributes
    ----------
    spec : ReleaseSpec
        The spec compared against (with the best S_A when the advisor chose it).
    workload : Workload
        The workload.
    objective : {"mean", "worst"}
        What the errors are.
    error : float
        The workload's expected error under ``spec`` (squared counts).
    multipliers : tuple of AttributeMultiplier
        One per attribute, in axis order (empty for a single attribute).
    suggestions : tuple of Suggestion
        The lossless changes that lower the error, best first.
    lossy : tuple of Suggestion
        The changes that leave some query inexact, most queries exact first.
    answering : {"spread", "round-out"}
        How the lossy ones answer the queries they cannot answer exactly.
    """

    spec: ReleaseSpec
    workload: Workload = field(repr=False)
    objective: Objective
    error: float
    multipliers: tuple[AttributeMultiplier, ...]
    suggestions: tuple[Suggestion, ...]
    lossy: tuple[Suggestion, ...] = ()
    answering: Answering = "spread"

    @property
    def margin95(self) -> float:
        """A workload count is off by at most this much in 95% of releases (from the root of
        the average square error: a typical query; the objective's worst for ``"worst"``)."""
        return margin95(self.error)

    def sentence(self, rows: int | None = None) -> str:
        """The error in counts, for people; ``rows`` (public under replace-one) sizes a typical count.

        Parameters
        ----------
        rows : int, optional
            The number of rows n; None: the sentence gives the margin only.

        Returns
        -------
        str
            One sentence, with the 95% margin in counts.
        """
        if rows is None:
            return f"a count of this workload will be off by +/- {self.margin95:,.0f} in 95% of releases"
        typical = rows * _mean_coverage(self.workload)
        return (
            f"a count of about {typical:,.0f} (this workload's average share of {rows:,} rows) "
            f"will be off by +/- {self.margin95:,.0f} in 95% of releases"
        )


def _mean_coverage(workload: Workload) -> float:
    total = 0.0
    for part in workload.parts:
        if isinstance(part, ProductPart):
            total += len(part) * math.prod(
                float(np.mean((a.hi - a.lo + 1) / size)) for a, size in zip(part.axes, workload.schema.shape, strict=False)
            )
        else:
            total += float(part.coverage(workload.schema.shape).sum())
    return total / len(workload)


def _bin_widths(size: int) -> list[int]:
    """Friendly widths (2, 5, 10, 20, 50, ...) leaving at least 8 bins."""
    out: list[int] = []
    base = 1
    while True:
        for step in (2, 5, 10):
            width = base * step
            if math.ceil(size / width) < 8:
                return sorted(set(out))
            out.append(width)
        base *= 10


def _aligned_width(workload: Workload, axis: int) -> int:
    """The widest bins that keep every predicate of ``axis`` exact: the greatest common divisor
    of where they start and end (1 when none is wider)."""
    size = workload.schema[axis].size
    width = 0
    for preds in workload.axis_predicates():
        p = preds[axis]
        ends = np.concatenate([p.lo, p.hi + 1])
        ends = ends[(ends > 0) & (ends < size)]
        if len(ends):
            width = math.gcd(width, int(np.gcd.reduce(ends)))
    return width if width > 0 else 1


def _binned(attribute: OrdinalAttribute, width: int) -> OrdinalAttribute | None:
    """The attribute in bins of ``width`` of its values, or None if it is not numeric."""
    options = {"out_of_range": attribute.out_of_range, "column": attribute.column,
               "domain_from_data": attribute.domain_from_data}
    if attribute.missing is not None:
        return None  # the declared value for empty cells would no longer be a label
    if attribute.bins is not None:
        b = attribute.bins
        if b.width is None or not b.uniform:
            return None  # bins between given edges, or open-ended: no wider equal bins keep them
        return OrdinalAttribute(attribute.name, bins=NumericBins(b.start, b.stop, b.width * width), **options)  # type: ignore[arg-type]
    start = attribute.integer_start
    if start is None:
        return None
    return OrdinalAttribute(attribute.name, bins=NumericBins(start, start + attribute.size, width), **options)  # type: ignore[arg-type]


def _missing_alone(attribute: NominalAttribute, coarse: NominalAttribute) -> bool:
    """Whether the attribute's missing value (if any) still has a value of its own at the
    coarse level (a group holding nothing else), so that missing cells stay apart."""
    if attribute.missing is None:
        return True
    node = coarse._coarse_labels[attribute.missing]
    lo, hi = coarse.hierarchy.leaf_range(node)
    finest = attribute.finest or attribute.hierarchy
    return finest.leaf_range(node)[1] - finest.leaf_range(node)[0] == 1 and hi - lo == 1


@dataclass(frozen=True)
class _Candidate:
    kind: SuggestionKind
    axis: int
    description: str
    attribute: Attribute | None
    coarsening: AxisCoarsening | None
    width: int | None = None
    level: int | None = None


def _candidates(schema: Schema, workload: Workload) -> Iterable[_Candidate]:
    constrained = workload.constrained_axes()
    for axis, attribute in enumerate(schema):
        if axis not in constrained and len(schema) > 1:
            yield _Candidate("drop", axis, f"drop {attribute.name} (no query of the workload constrains it)", None, None)
        if isinstance(attribute, OrdinalAttribute):
            widths = set(_bin_widths(attribute.size))
            aligned = _aligned_width(workload, axis)
            if aligned > 1:
                widths.add(aligned)
            for width in sorted(widths):
                binned = _binned(attribute, width)
                if binned is None or binned.size < 2:
                    continue  # one value left: every query of the attribute would be the whole table's
                text = f"{attribute.name} in bins of {width} values ({binned.size} bins instead of {attribute.size})"
                yield _Candidate("bins", axis, text, binned, BinsCoarsening(width, attribute.size), width=width)
        else:
            finest = attribute.finest or attribute.hierarchy
            current = attribute.level or finest.height
            for level in range(2, current):
                coarse = dataclasses.replace(attribute, level=level)
                if coarse.size < 2 or coarse.size == attribute.size or not _missing_alone(attribute, coarse):
                    continue
                text = (f"{attribute.name} at hierarchy level {level} ({coarse.size} values instead of "
                        f"{attribute.size}, e.g. {', '.join(coarse.labels[:3])})")
                yield _Candidate("level", axis, text, coarse, LevelCoarsening(attribute, coarse, level), level=level)


def advise(
    spec: ReleaseSpec,
    workload: Workload,
    *,
    objective: Objective = "mean",
    sa_rule: SaRule = "best",
    answering: Answering = "spread",
    should_cancel: CancelCallback | None = None,
) -> Advice:
    """Per-attribute multipliers and domain suggestions for ``workload`` under ``spec``
    (``should_cancel`` as for :func:`best_sa`).

    ``sa_rule`` says the S_A of the current and of each changed schema, as :func:`resolve_sa`
    gives it; under ``"best"`` the current schema gets its best S_A too (``before`` is then the
    best current error), under ``"recommended"`` its recommended one, under ``"given"`` the
    spec's S_A (less a dropped attribute). Queries a changed domain cannot answer exactly are
    answered by ``answering`` (:data:`~privelet_gui.engine.accuracy.coarsening.ANSWERING`).
    Lossless suggestions that make the error smaller are :attr:`Advice.suggestions`; no
    change that leaves an attribute one value is suggested.

    Parameters
    ----------
    spec : ReleaseSpec
        The release; its epsilon, neighbours, public total and (``sa_rule="given"``) S_A are used.
    workload : Workload
        Queries on ``spec.schema``.
    objective : {"mean", "worst"}, default "mean", keyword-only
        The average square error, or the worst query's.
    sa_rule : {"best", "recommended", "given"}, default "best", keyword-only
        The S_A of the current and every changed schema (:data:`SaRule`): :func:`best_sa`'s,
        the recommended one, or the spec's (less a dropped attribute).
    answering : {"spread", "round-out"}, default "spread", keyword-only
        How a changed domain answers the queries it cannot answer exactly.
    should_cancel : callable ``() -> bool``, optional, keyword-only
        Polled between candidates.

    Returns
    -------
    Advice

    Raises
    ------
    SchemaError
        The workload is on another schema, or (``"worst"``) lists more than 5,000,000 queries.
    PriveletError
        ``objective``, ``sa_rule`` or ``answering`` is not one of its values.
    Cancelled
        ``should_cancel()`` returned True.
    """
    objective = check_objective(objective)
    answering = check_answering(answering)
    sa_rule = check_sa_rule(sa_rule)
    check = Progress(None, should_cancel).check
    if spec.mechanism in ("strategies", "marginals"):
        # Named strategies and weighted marginals do not follow a change of the schema: Privelet+ does.
        spec = spec.replace(mechanism="privelet+", strategies=(), marginals=(), sa=spec.effective_sa)
    schema = spec.schema

    def sa_of(of: ReleaseSpec, queries: Workload, kept: tuple[str, ...]) -> tuple[str, ...]:
        return resolve_sa(sa_rule, of, queries, given=kept, objective=objective, should_cancel=should_cancel)

    plus = spec.mechanism == "privelet+"
    base = spec.replace(sa=sa_of(spec, workload, spec.effective_sa)) if plus else spec
    before = expected_error(base, workload, objective=objective)
    multipliers = []
    constrained = workload.constrained_axes()
    lossless, lossy = [], []
    for candidate in _candidates(schema, workload):
        check()
        axis = candidate.axis
        attributes = list(schema)
        if candidate.attribute is None:
            del attributes[axis]
        else:
            attributes[axis] = candidate.attribute
        new_schema = Schema(attributes)
        coarsened = coarsen(workload, new_schema, axis, candidate.coarsening)
        kept_sa = tuple(n for n in base.effective_sa if n in new_schema.names)
        new_spec = spec.replace(schema=new_schema, sa=kept_sa if plus else ())
        if plus:
            new_spec = new_spec.replace(sa=sa_of(new_spec, coarsened.workload, kept_sa))
        error = coarsened.expected_error(new_spec, answering=answering, objective=objective)
        suggestion = Suggestion(
            candidate.kind, schema[axis].name, candidate.description, new_schema, coarsened.workload,
            new_spec.effective_sa, error, before, coarsened.exact_share, answering, coarsened.estimated_share,
            coarsened.added_share, candidate.width, candidate.level,
        )
        if suggestion.lossless:
            if error < before:  # a lossless change that gains nothing is no advice
                lossless.append(suggestion)
        else:
            lossy.append(suggestion)
    if len(schema) > 1:
        for axis, attribute in enumerate(schema):
            check()
            rest = Schema([a for i, a in enumerate(schema) if i != axis])
            reduced = coarsen(workload, rest, axis, None).workload
            kept_sa = tuple(n for n in base.effective_sa if n != attribute.name)
            without = spec.replace(schema=rest, sa=kept_sa if plus else ())
            error = expected_error(without, reduced, objective=objective)
            multipliers.append(AttributeMultiplier(attribute.name, attribute.name in base.effective_sa,
                                                   before / error if error > 0 else math.inf, axis in constrained))
    lossless.sort(key=lambda s: s.error)
    lossy.sort(key=lambda s: (-s.exact_share, s.error))
    return Advice(base, workload, objective, before, tuple(multipliers), tuple(lossless), tuple(lossy), answering)
