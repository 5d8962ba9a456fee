"""The workload the custodian expects, and what it chooses: the best per-axis strategies, the
best S_A and the advisor's suggestions (no Qt).

A :class:`~privelet_gui.io.project.WorkloadChoice` (what a project stores) becomes an engine
:class:`~privelet_gui.engine.Workload` for the current schema with :func:`build_workload`.
The searches are plain jobs on frozen keys, so that the app can run them on a worker and
cache them: :func:`find_best_strategy` (:class:`SearchKey` ->
:class:`~privelet_gui.engine.StrategyChoice`), :func:`find_best_sa` (:class:`SearchKey` ->
:class:`BestSa`), :func:`find_advice` (:class:`AdviceKey` ->
:class:`~privelet_gui.engine.Advice`) and :func:`find_coverage_errors` (:class:`CoverageKey` ->
:class:`CoverageErrors`: the expected error by query size of the releases compared). All compute at epsilon 1: a workload's expected error is proportional to ``1 / epsilon^2``
(the noise scale), so which strategy, S_A or suggestion is best does not depend on epsilon and the
figures for another epsilon are scaled (:meth:`BestSa.error`, :func:`scaled_advice`), and
moving the epsilon slider searches nothing again.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from collections import OrderedDict
from collections.abc import Hashable, Mapping
from dataclasses import dataclass
from typing import Generic, TypeVar

from ..engine import (
    Advice,
    Neighbours,
    NominalAttribute,
    PriveletError,
    QuintileRow,
    ReleaseSpec,
    Schema,
    StrategyChoice,
    Suggestion,
    Workload,
    advise,
    best_sa,
    best_strategy,
    expected_by_coverage,
    marginals,
    paper_workload,
)
from ..engine.accuracy.sa_choice import EXHAUSTIVE_UP_TO, SaRule
from ..engine.accuracy.workloads import check_objective
from ..engine.progress import CancelCallback, ProgressCallback
from ..engine.spec import MARGINALS, STRATEGIES, Mechanism
from ..io import read_workload
from ..io.project import WorkloadChoice

__all__ = [
    "REFERENCE_NAMES",
    "AdviceKey",
    "BestSa",
    "CoverageErrors",
    "CoverageKey",
    "ResultCache",
    "SearchKey",
    "WorkloadChoice",
    "build_workload",
    "chart_workload",
    "find_advice",
    "find_best_sa",
    "find_best_strategy",
    "find_coverage_errors",
    "scaled_advice",
    "search_seconds",
    "workload_descriptions",
]

#: The S_A each entry of :attr:`BestSa.errors` stands for, for people (the rule is the
#: recommended S_A, Basic has every attribute in S_A, Privelet none).
REFERENCE_NAMES = {
    "best": "Best for the workload",
    "rule": "The paper's rule",
    "basic": "Basic",
    "privelet": "Privelet",
}


def build_workload(choice: WorkloadChoice, schema: Schema) -> Workload:
    """The workload ``choice`` describes on ``schema`` (its parts combined, every query counted
    once). Marginals skip chosen attributes that are not in the schema; raises PriveletError
    saying what to change when no workload can be made."""
    if choice.empty:
        raise PriveletError("the workload is empty: choose the paper's random workload, marginals or a workload file")
    parts: list[Workload] = []
    if choice.paper is not None:
        parts.append(paper_workload(schema, choice.paper))
    if choice.ways:
        names = [n for n in (choice.attributes or schema.names) if n in schema.names]
        if not names:
            raise PriveletError(
                f"none of the marginals' attributes ({', '.join(choice.attributes)}) is included; "
                "choose included attributes for the marginals"
            )
        too_many = [k for k in choice.ways if k > len(names)]
        if too_many:
            raise PriveletError(
                f"{too_many[0]}-way marginals need at least {too_many[0]} attributes and the workload has "
                f"{len(names)} ({', '.join(names)}); choose more attributes or fewer ways"
            )
        grains = {name: grain for name, grain in choice.grains if name in names}
        try:
            parts.append(marginals(schema, choice.ways, names if choice.attributes else None, grains=grains))
        except PriveletError as exc:
            raise PriveletError(f"the workload's marginals: {exc}") from None
    for path in choice.files:
        try:
            parts.append(read_workload(path, schema))
        except OSError as exc:
            raise PriveletError(f"cannot read the workload file {path}: {exc.strerror or exc}") from None
    return parts[0].combine(*parts[1:]) if len(parts) > 1 else parts[0]


def workload_descriptions(choice: WorkloadChoice, schema: Schema) -> tuple[str, ...]:
    """``choice`` as ``privelet release --workload`` descriptions (what a release file records
    as the workload its strategy was chosen for). A workload file is named without its folder:
    a path can say more than the custodian means to publish.

    >>> from privelet_gui.engine import OrdinalAttribute
    >>> schema = Schema([OrdinalAttribute.integer_range("age", 0, 99), OrdinalAttribute.integer_range("hours", 0, 9)])
    >>> workload_descriptions(WorkloadChoice(ways=(1, 2), grains=(("age", 5),)), schema)
    ('paper:10000', 'marginals:1,2:age/5,hours')
    """
    texts = [] if choice.paper is None else [f"paper:{choice.paper}"]
    if choice.ways:
        names = [n for n in (choice.attributes or schema.names) if n in schema.names]
        listed = ",".join(f"{n}/{choice.grain(n)}" if choice.grain(n) is not None else n for n in names)
        texts.append(f"marginals:{','.join(map(str, choice.ways))}:{listed}")
    texts += [path.name for path in choice.files]
    return tuple(texts)


def _marginal_predicates(schema: Schema, choice: WorkloadChoice) -> dict[str, int]:
    """Per attribute of the marginals, about how many predicates it takes (an upper bound)."""
    out = {}
    for name in choice.attributes or schema.names:
        if name not in schema.names:
            continue
        attribute = schema[name]
        grain = choice.grain(name)
        if grain is None or isinstance(attribute, NominalAttribute):
            out[name] = attribute.size
        else:
            out[name] = math.ceil(attribute.size / grain)
    return out


@dataclass(frozen=True)
class SearchKey:
    """Everything the best S_A depends on (epsilon only scales the errors)."""

    schema: Schema
    choice: WorkloadChoice
    neighbours: Neighbours
    public_total: bool

    @classmethod
    def of(cls, spec: ReleaseSpec, choice: WorkloadChoice) -> SearchKey:
        return cls(spec.schema, choice, spec.neighbours, spec.uses_public_total)

    def spec(self, mechanism: Mechanism = "privelet+", sa: tuple[str, ...] = ()) -> ReleaseSpec:
        """The release this key describes, at epsilon 1."""
        return ReleaseSpec(self.schema, 1.0, mechanism, sa, self.neighbours, public_total=self.public_total)


# Measured costs of find_best_sa (2-core machine, numpy 2): factors of one product part along
# one axis, of one listed query along one axis, and one subset tried for one row.
_PART_AXIS_SECONDS = 1.5e-4
_QUERY_AXIS_SECONDS = 4e-7
_SUBSET_ROW_SECONDS = 8e-9


def search_seconds(key: SearchKey) -> float:
    """About how long :func:`find_best_sa` takes (infinite when a file must be read): the app
    runs the longer searches on a worker. Within a factor of about 3 on the measured cases
    (Adult, a Brazil-shaped schema, random schemas of 8 to 14 attributes)."""
    schema, choice = key.schema, key.choice
    if choice.files:
        return math.inf
    d = len(schema)
    parts, listed = 0.0, float(choice.paper or 0)
    if choice.ways:
        sizes = list(_marginal_predicates(schema, choice).values())
        for k in choice.ways:
            combos = list(itertools.combinations(sizes, k))
            if choice.objective == "mean":
                parts += len(combos)  # the mean of a product part is one row
            else:
                listed += sum(math.prod(c) for c in combos)  # the worst case lists every query
    subsets = 2.0**d if d <= EXHAUSTIVE_UP_TO else 4.0 * d * d
    return (parts * d * _PART_AXIS_SECONDS + listed * d * _QUERY_AXIS_SECONDS
            + (parts + listed) * subsets * _SUBSET_ROW_SECONDS)


@dataclass(frozen=True)
class BestSa:
    """The best S_A for a workload and the errors it was compared with, at epsilon 1.

    ``errors`` maps ``"best"``, ``"rule"``, ``"basic"`` and ``"privelet"`` to ``(S_A, expected
    error)``: the workload's average square error (or its worst query's, ``objective``) in
    squared counts at epsilon 1; :meth:`error` scales them to another epsilon.
    """

    sa: tuple[str, ...]
    objective: str
    exhaustive: bool
    workload: str
    queries: int
    errors: Mapping[str, tuple[tuple[str, ...], float]]

    def error(self, which: str = "best", epsilon: float = 1.0) -> float:
        """The expected error of ``which`` S_A at ``epsilon``."""
        return self.errors[which][1] / epsilon**2

    def ratio(self, which: str) -> float:
        """How many times the error of ``which`` is the best one's (1: as good)."""
        best = self.errors["best"][1]
        return self.errors[which][1] / best if best > 0 else 1.0


def find_best_sa(key: SearchKey, should_cancel: CancelCallback | None = None) -> BestSa:
    """Build the workload and search the S_A minimising its expected error (a plain job;
    ``should_cancel()`` is asked between steps of the search)."""
    workload = build_workload(key.choice, key.schema)
    choice = best_sa(key.spec(), workload, objective=check_objective(key.choice.objective),
                     should_cancel=should_cancel)
    errors = {"best": (choice.sa, choice.error), **choice.references}
    return BestSa(choice.sa, choice.objective, choice.exhaustive, workload.name, len(workload), errors)


def find_best_strategy(
    key: SearchKey, should_cancel: CancelCallback | None = None, progress: ProgressCallback | None = None
) -> StrategyChoice:
    """Build the workload and choose the per-axis strategies, or for a workload of marginals
    possibly weighted marginals, minimising its expected error, at epsilon 1 (a plain job;
    ``should_cancel()`` is asked between steps of the search)."""
    workload = build_workload(key.choice, key.schema)
    return best_strategy(key.spec(), workload, objective=check_objective(key.choice.objective),
                         should_cancel=should_cancel, progress=progress, marginals=True)


@dataclass(frozen=True)
class AdviceKey:
    """Everything the advisor's answer depends on: the search, the mechanism each schema is
    released with (:data:`~privelet_gui.engine.spec.STRATEGIES`: the best strategy for its
    workload), and how S_A follows a change of the schema under Privelet+ (``rule``; ``sa``:
    the given S_A under ``"given"``, else empty). ``strategies`` and ``marginals``: under the
    best strategy, the current schema's per-axis strategies or weighted marginals when they were
    chosen already (both empty: the advisor chooses them)."""

    search: SearchKey
    rule: SaRule
    mechanism: Mechanism
    sa: tuple[str, ...] = ()
    strategies: tuple[str, ...] = ()
    marginals: tuple[tuple[tuple[str, ...], int], ...] = ()


def find_advice(
    key: AdviceKey, should_cancel: CancelCallback | None = None, progress: ProgressCallback | None = None
) -> Advice:
    """The advisor's multipliers and suggestions at epsilon 1, each suggestion's error with the
    best strategy for the changed schema's workload (the mechanism
    :data:`~privelet_gui.engine.spec.STRATEGIES`), or else with the S_A that the rule gives the
    changed schema: its best S_A (``"best"``), its recommended S_A (``"recommended"``) or the
    given S_A less a dropped attribute (``"given"``)."""
    search = key.search
    workload = build_workload(search.choice, search.schema)
    objective = check_objective(search.choice.objective)
    if key.mechanism == STRATEGIES:
        chosen = None
        if key.marginals:
            chosen = search.spec().replace(mechanism=MARGINALS, sa=(), marginals=key.marginals)
        elif key.strategies:
            chosen = search.spec().replace(mechanism=STRATEGIES, sa=(), strategies=key.strategies)
        return advise(search.spec(), workload, objective=objective, strategies="best", chosen=chosen,
                      should_cancel=should_cancel, progress=progress)
    plus = key.mechanism == "privelet+"
    sa = tuple(n for n in key.sa if n in search.schema.names) if key.rule == "given" and plus else ()
    return advise(search.spec(key.mechanism, sa), workload, objective=objective, sa_rule=key.rule,
                  should_cancel=should_cancel, progress=progress)


def scaled_advice(advice: Advice, epsilon: float) -> Advice:
    """``advice`` (computed at epsilon 1) with its errors at ``epsilon``."""
    scale = 1.0 / epsilon**2
    def scaled(suggestions: tuple[Suggestion, ...]) -> tuple[Suggestion, ...]:
        return tuple(dataclasses.replace(s, error=s.error * scale, before=s.before * scale) for s in suggestions)

    return dataclasses.replace(
        advice, spec=advice.spec.replace(epsilon=epsilon), error=advice.error * scale,
        suggestions=scaled(advice.suggestions), lossy=scaled(advice.lossy),
    )


def chart_workload(choice: WorkloadChoice, schema: Schema, limit: int) -> tuple[Workload, str | None]:
    """The workload whose queries a chart lists one by one: the custodian's (``choice`` on
    ``schema``), or, with why (the second item), the paper's random workload
    (:data:`~privelet_gui.engine.accuracy.workloads.PAPER_QUERIES` queries, seeded) when
    ``choice`` has no query, cannot be made, or has more than ``limit`` queries."""
    if choice.empty:
        return paper_workload(schema), "you chose no queries"
    try:
        workload = build_workload(choice, schema)
    except PriveletError as exc:
        return paper_workload(schema), f"yours cannot be made ({exc})"
    if len(workload) > limit:
        return paper_workload(schema), f"yours has {len(workload):,} queries, more than the {limit:,} listed here"
    return workload, None


@dataclass(frozen=True)
class CoverageKey:
    """Everything a chart of expected error by query size depends on: the custodian's
    workload, the releases compared at epsilon 1 (by name, in order; None: one not known
    yet, drawn once it is) and the most queries listed (beyond it the paper's workload
    stands in, :func:`chart_workload`)."""

    choice: WorkloadChoice
    releases: tuple[tuple[str, ReleaseSpec | None], ...]
    limit: int

    @property
    def schema(self) -> Schema:
        for _name, spec in self.releases:
            if spec is not None:
                return spec.schema
        raise PriveletError("a chart of expected error needs at least one release")


@dataclass(frozen=True)
class CoverageErrors:
    """The expected square error by query size of the releases of a :class:`CoverageKey`, at
    epsilon 1 (:meth:`at` scales them: every variance is proportional to ``1 / epsilon^2``).

    ``workload``: the name of the workload the queries come from; ``queries``: how many;
    ``stand_in``: why the paper's random workload stands in for the custodian's (None: it is
    theirs); ``rows``: per release, its rows per coverage group
    (:func:`~privelet_gui.engine.coverage_summary`)."""

    workload: str
    queries: int
    stand_in: str | None
    rows: Mapping[str, list[QuintileRow]]

    def at(self, epsilon: float) -> dict[str, list[QuintileRow]]:
        """The rows at ``epsilon``."""
        scale = 1.0 / epsilon**2
        return {name: [dataclasses.replace(r, square_error=r.square_error * scale) for r in rows]
                for name, rows in self.rows.items()}


def find_coverage_errors(key: CoverageKey, should_cancel: CancelCallback | None = None) -> CoverageErrors:
    """List the workload of ``key`` (:func:`chart_workload`) and each known release's exact
    variances on it, by coverage group, at epsilon 1 (a plain job: reading a workload file
    and a big workload's variances take a while)."""
    workload, stand_in = chart_workload(key.choice, key.schema, key.limit)
    specs = {name: spec for name, spec in key.releases if spec is not None}
    rows = expected_by_coverage(specs, workload.queries(), should_cancel=should_cancel)
    return CoverageErrors(workload.name, len(workload), stand_in, rows)


K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class ResultCache(Generic[K, V]):
    """The last few results by key (undo and redo of a schema change find theirs again)."""

    def __init__(self, size: int = 16):
        self._size = size
        self._items: OrderedDict[K, V] = OrderedDict()

    def get(self, key: K) -> V | None:
        value = self._items.get(key)
        if value is not None:
            self._items.move_to_end(key)
        return value

    def put(self, key: K, value: V) -> None:
        self._items[key] = value
        self._items.move_to_end(key)
        while len(self._items) > self._size:
            self._items.popitem(last=False)
