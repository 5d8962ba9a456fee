"""The granularity advisor: how coarse each attribute's domain should be for a workload.

Data-independent (it reads the schema and the workload, never the table), so it costs no
privacy and can run live while the custodian edits the schema.
:func:`advise` gives each attribute's multiplier of the error, and concrete changes of the
domain (bins of a width for a numeric ordinal attribute, a hierarchy level for a nominal one,
dropping an attribute no query constrains), each with its predicted error under the release's
mechanism: the paper's (S_A as an :data:`~privelet_gui.engine.accuracy.sa_choice.SaRule`
gives it), or the per-axis strategies :func:`~privelet_gui.engine.best_strategy` chooses for
each schema.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Literal

import numpy as np

from ..bounds import margin95
from ..descriptions import describe_marginals, describe_strategies
from ..errors import PriveletError, SchemaError
from ..model.schema import Attribute, NominalAttribute, NumericBins, OrdinalAttribute, Schema
from ..progress import CancelCallback, Progress, ProgressCallback
from ..spec import MARGINALS, STRATEGIES, ReleaseSpec
from ..strategies.plan import axis_strategy, short_strategy_name
from .coarsening import (
    Answering,
    AxisCoarsening,
    BinsCoarsening,
    Coarsened,
    LevelCoarsening,
    check_answering,
    coarse_axis_table,
    coarsen,
)
from .sa_choice import SaRule, check_sa_rule, resolve_sa
from .strategy_search import axis_candidates, best_strategy
from .workloads import (
    AxisTable,
    Objective,
    ProductPart,
    Workload,
    axis_table,
    check_objective,
    expected_error,
    tables_error,
)

__all__ = [
    "ADVISOR_STRATEGIES",
    "SEARCHED_SUGGESTIONS",
    "Advice",
    "AdvisorStrategies",
    "AttributeMultiplier",
    "Suggestion",
    "advise",
]

AdvisorStrategies = Literal["spec", "best"]
#: What the advisor weighs the current and every changed schema with: the spec's mechanism
#: (``"spec"``: Privelet+ with S_A by the rule, Privelet or Basic), or the per-axis strategies
#: :func:`~privelet_gui.engine.best_strategy` chooses for each (``"best"``: the release's default).
ADVISOR_STRATEGIES: tuple[AdvisorStrategies, ...] = ("spec", "best")
#: Under the best strategy, how many changes of each list (lossless, lossy) get a strategy search
#: of their own: the most the app shows, and the command line's default ``--top``.
SEARCHED_SUGGESTIONS = 10

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
    strategy : str
        Under the best strategy, how it is measured (its strategy's short name, or "weighted
        marginals"); empty under the paper's mechanisms.
    """

    name: str
    in_sa: bool
    multiplier: float
    constrained: bool
    strategy: str = ""

    @property
    def measured(self) -> str:
        """How the release measures the attribute, for people."""
        return self.strategy or ("in S_A" if self.in_sa else "transformed")


@dataclass(frozen=True)
class Suggestion:
    """One change of the domain and what it is predicted to do to the workload's error.

    ``error`` is the expected square error of the noise on the workload's queries on the new
    domain with S_A ``sa`` (or, under the best strategy, the per-axis ``strategies``);
    ``exact_share`` is the share of the queries the new domain answers
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
        S_A on the changed schema (the attributes measured by the identity, under the best strategy).
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
    strategies : tuple of str
        Under the best strategy, each attribute's strategy on the changed schema, as
        :func:`~privelet_gui.engine.best_strategy` chooses it for the changed workload (names
        of :data:`~privelet_gui.engine.AXIS_STRATEGY_FORMS`); empty under the paper's mechanisms
        and when it chooses weighted marginals.
    marginals : tuple of (tuple of str, int)
        Under the best strategy, the weighted marginals it chooses for the changed workload (as
        :attr:`~privelet_gui.engine.ReleaseSpec.marginals`); empty when it chooses per-axis strategies.
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
    strategies: tuple[str, ...] = ()
    marginals: tuple[tuple[tuple[str, ...], int], ...] = ()

    @property
    def measured(self) -> str:
        """What the changed schema's release measures under the best strategy, for people (empty
        under the paper's mechanisms)."""
        if self.marginals:
            return describe_marginals(self.marginals)
        return describe_strategies(self.schema, self.strategies) if self.strategies else ""

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
        The spec compared against: with the best S_A when the advisor chose it, or the
        per-axis strategies :func:`~privelet_gui.engine.best_strategy` chose (``strategies="best"``).
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
    def under_best_strategy(self) -> bool:
        """Whether each schema is weighed with the best strategy for its workload (per-axis
        strategies or weighted marginals), not with one of the paper's mechanisms."""
        return self.spec.mechanism in (STRATEGIES, MARGINALS)

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


def _changes(schema: Schema, workload: Workload) -> Iterable[tuple[_Candidate, Schema, Coarsened]]:
    """Each candidate change, the schema it makes and the workload on it."""
    for candidate in _candidates(schema, workload):
        attributes = list(schema)
        if candidate.attribute is None:
            del attributes[candidate.axis]
        else:
            attributes[candidate.axis] = candidate.attribute
        new_schema = Schema(attributes)
        yield candidate, new_schema, coarsen(workload, new_schema, candidate.axis, candidate.coarsening)


def _suggestion(candidate: _Candidate, schema: Schema, coarsened: Coarsened, spec: ReleaseSpec, error: float,
                before: float, answering: Answering) -> Suggestion:
    """The suggestion of ``candidate`` (``schema`` the current one), released with ``spec``."""
    strategies = spec.axis_strategies if spec.mechanism == STRATEGIES else ()
    return Suggestion(
        candidate.kind, schema[candidate.axis].name, candidate.description, coarsened.schema, coarsened.workload,
        spec.effective_sa, error, before, coarsened.exact_share, answering, coarsened.estimated_share,
        coarsened.added_share, candidate.width, candidate.level, strategies, spec.marginals,
    )


def _gains(error: float, before: float) -> bool:
    """Whether ``error`` is smaller than ``before`` by more than the last bits that two orders of
    the same sums can differ by (a change the strategy ignores gains nothing)."""
    return error < before * (1 - 1e-9)


def _marginals_after(spec: ReleaseSpec, schema: Schema) -> ReleaseSpec:
    """``spec``'s weighted marginals on ``schema`` (a coarsened or dropped attribute of its
    schema): the same marginals by name, a dropped attribute left out of each (marginals that
    become the same one measured once, their weights summed, as a screening estimate)."""
    merged: dict[tuple[str, ...], int] = {}
    for names, weight in spec.marginals:
        kept = tuple(n for n in names if n in schema.names)
        merged[kept] = merged.get(kept, 0) + weight
    return spec.replace(schema=schema, marginals=tuple(merged.items()))


def _screened(coarsened: Coarsened, kept: list[AxisTable], spec: ReleaseSpec, answering: Answering,
              average: bool) -> float:
    """A quick estimate of the best strategy's error after a change: the current strategies of
    the attributes it leaves alone (their tables ``kept``, in axis order without the changed
    one: a change maps each query's predicates one to one, so their rows stay), and the best
    of the changed attribute's candidate strategies (:func:`axis_candidates`)."""
    if spec.mechanism == MARGINALS:  # the current marginals, by name, on the changed schema
        return coarsened.expected_error(_marginals_after(spec, coarsened.schema), answering=answering,
                                        objective="mean" if average else "worst")
    if coarsened.coarsening is None:
        return tables_error(kept, spec, coarsened.workload, average=average)
    axis = coarsened.axis
    attribute = coarsened.schema[axis]
    rows = coarsened.rows(average)
    errors = []
    for name in axis_candidates(attribute):
        table = coarse_axis_table(rows, axis_strategy(attribute, name), attribute.size, answering)
        errors.append(tables_error([*kept[:axis], table, *kept[axis:]], spec, coarsened.workload, average=average))
    return min(errors)


def _advise_best(spec: ReleaseSpec, workload: Workload, objective: Objective, answering: Answering,
                 searched: int, chosen: ReleaseSpec | None, steps: Progress) -> Advice:
    """:func:`advise` under the best strategy (``strategies="best"``; ``chosen``: the current
    schema's, when it was chosen already)."""
    average = objective == "mean"
    # What best_strategy reads of it:
    spec = spec.replace(mechanism="privelet+", sa=(), strategies=(), marginals=())
    if chosen is None:
        chosen = best_strategy(spec, workload, objective=objective, marginals=True, should_cancel=steps.should_cancel,
                               progress=steps.slice(0.0, 0.3).report).spec
    if chosen.mechanism not in (STRATEGIES, MARGINALS):
        raise PriveletError(f"the advisor starts from a choice of the best strategy, not from {chosen.name}")
    base = spec.replace(mechanism=chosen.mechanism, strategies=chosen.strategies, marginals=chosen.marginals)
    before = expected_error(base, workload, objective=objective)
    tables = ([] if base.mechanism == MARGINALS
              else [axis_table(workload, a, s, average=average) for a, s in enumerate(base.plan.strategies)])
    constrained = workload.constrained_axes()
    multipliers = []
    if len(base.schema) > 1:
        for axis, attribute in enumerate(base.schema):
            # The others keep their strategies: an estimate (no search) of what the attribute costs.
            if base.mechanism == MARGINALS:
                rest = coarsen(workload, Schema([a for i, a in enumerate(base.schema) if i != axis]), axis, None)
                without = expected_error(_marginals_after(base, rest.schema), rest.workload, objective=objective)
            else:
                without = tables_error(tables[:axis] + tables[axis + 1:], base, workload, average=average)
            strategy = ("weighted marginals" if base.mechanism == MARGINALS
                        else short_strategy_name(base.axis_strategies[axis]))
            multipliers.append(AttributeMultiplier(attribute.name, attribute.name in base.effective_sa,
                                                   before / without if without > 0 else math.inf, axis in constrained,
                                                   strategy))
    # Every change is screened by a quick estimate; the best ones get a strategy search of their own
    # (the release makes that search too), and only they are suggested, with its exact figures.
    lossless: list[tuple[float, _Candidate, Coarsened]] = []
    lossy: list[tuple[float, _Candidate, Coarsened]] = []
    for candidate, _new_schema, coarsened in _changes(base.schema, workload):
        steps.check()
        kept = tables[:candidate.axis] + tables[candidate.axis + 1:] if tables else []
        estimate = _screened(coarsened, kept, base, answering, average)
        (lossless if coarsened.exact_share >= 1.0 else lossy).append((estimate, candidate, coarsened))
    lossless.sort(key=lambda entry: entry[0])
    lossy.sort(key=lambda entry: (-entry[2].exact_share, entry[0]))
    shortlist = lossless[:searched] + lossy[:searched]
    found: list[Suggestion] = []
    for done, (_estimate, candidate, coarsened) in enumerate(shortlist):
        share = steps.slice(0.3 + 0.7 * done / len(shortlist), 0.3 + 0.7 * (done + 1) / len(shortlist))
        share.report(0.0, f"weighing: {candidate.description}")
        changed = best_strategy(spec.replace(schema=coarsened.schema), coarsened.workload, objective=objective,
                                marginals=True, should_cancel=steps.should_cancel, progress=share.report).spec
        error = coarsened.expected_error(changed, answering=answering, objective=objective)
        found.append(_suggestion(candidate, base.schema, coarsened, changed, error, before, answering))
    steps.report(1.0, "advice ready")
    suggestions = sorted((s for s in found if s.lossless and _gains(s.error, before)), key=lambda s: s.error)
    inexact = sorted((s for s in found if not s.lossless), key=lambda s: (-s.exact_share, s.error))
    return Advice(base, workload, objective, before, tuple(multipliers), tuple(suggestions), tuple(inexact), answering)


def advise(
    spec: ReleaseSpec,
    workload: Workload,
    *,
    objective: Objective = "mean",
    sa_rule: SaRule = "best",
    answering: Answering = "spread",
    strategies: AdvisorStrategies = "spec",
    searched: int = SEARCHED_SUGGESTIONS,
    chosen: ReleaseSpec | None = None,
    should_cancel: CancelCallback | None = None,
    progress: ProgressCallback | None = None,
) -> Advice:
    """Per-attribute multipliers and domain suggestions for ``workload`` under ``spec``
    (``should_cancel`` as for :func:`~privelet_gui.engine.best_sa`).

    Under ``strategies="spec"``, ``sa_rule`` says the S_A of the current and of each changed
    schema, as :func:`~privelet_gui.engine.resolve_sa` gives it; under ``"best"`` the current schema gets its best S_A
    too (``before`` is then the best current error), under ``"recommended"`` its recommended one,
    under ``"given"`` the spec's S_A (less a dropped attribute). Under ``strategies="best"`` the
    current and each changed schema are released with the per-axis strategies
    :func:`~privelet_gui.engine.best_strategy` chooses for its workload, as the release does:
    every change is first screened (the current strategies of the attributes it leaves alone,
    the best candidate strategy of the one it changes), and only the ``searched`` best lossless
    and the ``searched`` first lossy ones get a search of their own, whose exact error is theirs
    (the others are not listed). Queries a changed domain cannot answer exactly are answered
    by ``answering`` (:data:`~privelet_gui.engine.accuracy.coarsening.ANSWERING`). Lossless
    suggestions that make the error smaller are :attr:`Advice.suggestions`; no change that
    leaves an attribute one value is suggested.

    Parameters
    ----------
    spec : ReleaseSpec
        The release; its epsilon, neighbours, public total and (``sa_rule="given"``) S_A are used.
    workload : Workload
        Queries on ``spec.schema``.
    objective : {"mean", "worst"}, default "mean", keyword-only
        The average square error, or the worst query's.
    sa_rule : {"best", "recommended", "given"}, default "best", keyword-only
        The S_A of the current and every changed schema (:data:`SaRule`): :func:`~privelet_gui.engine.best_sa`'s,
        the recommended one, or the spec's (less a dropped attribute). Not read under
        ``strategies="best"``.
    answering : {"spread", "round-out"}, default "spread", keyword-only
        How a changed domain answers the queries it cannot answer exactly.
    strategies : {"spec", "best"}, default "spec", keyword-only
        What each schema is released with (:data:`ADVISOR_STRATEGIES`): the spec's mechanism,
        or the best strategy for its workload.
    searched : int, default :data:`SEARCHED_SUGGESTIONS`, keyword-only
        Under ``strategies="best"``: how many lossless and how many lossy changes get a search.
    chosen : ReleaseSpec, optional, keyword-only
        Under ``strategies="best"``: what :func:`~privelet_gui.engine.best_strategy` (with
        ``marginals=True``, as the release calls it) chose for ``spec`` and ``workload`` when it
        was chosen already (the app chooses it on a worker of its own): a spec of the mechanism
        ``"strategies"`` or ``"marginals"``; None: chosen here.
    should_cancel : callable ``() -> bool``, optional, keyword-only
        Polled between candidates and searches.
    progress : callable ``(fraction, stage)``, optional, keyword-only
        Progress through the searches of ``strategies="best"``.

    Returns
    -------
    Advice

    Raises
    ------
    SchemaError
        The workload is on another schema, or (``"worst"``) lists more than 5,000,000 queries.
    PriveletError
        ``objective``, ``sa_rule``, ``answering`` or ``strategies`` is not one of its values.
    Cancelled
        ``should_cancel()`` returned True.
    """
    objective = check_objective(objective)
    answering = check_answering(answering)
    sa_rule = check_sa_rule(sa_rule)
    steps = Progress(progress, should_cancel)
    if workload.schema != spec.schema:
        raise SchemaError(f"the workload {workload.name!r} is on another schema than the release")
    if strategies == "best":
        return _advise_best(spec, workload, objective, answering, searched, chosen, steps)
    if strategies != "spec":
        raise PriveletError(f"the advisor weighs each schema with 'spec' or 'best', got {strategies!r}")
    check = steps.check
    if spec.mechanism in (STRATEGIES, "marginals"):
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
    for candidate, new_schema, coarsened in _changes(schema, workload):
        check()
        kept_sa = tuple(n for n in base.effective_sa if n in new_schema.names)
        new_spec = spec.replace(schema=new_schema, sa=kept_sa if plus else ())
        if plus:
            new_spec = new_spec.replace(sa=sa_of(new_spec, coarsened.workload, kept_sa))
        error = coarsened.expected_error(new_spec, answering=answering, objective=objective)
        suggestion = _suggestion(candidate, schema, coarsened, new_spec, error, before, answering)
        if suggestion.lossless:
            if _gains(error, before):  # a lossless change that gains nothing is no advice
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
