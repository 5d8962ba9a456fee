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
- :func:`advise`: each attribute's multiplier of the error, and concrete changes of the
  domain (bins of a width for a numeric ordinal attribute, a hierarchy level for a nominal
  one, dropping an attribute no query constrains), each with its predicted error.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Literal

import numpy as np

from ..errors import SchemaError
from ..model.schema import Attribute, NominalAttribute, NumericBins, OrdinalAttribute, Schema
from ..progress import CancelCallback, Progress
from ..spec import ReleaseSpec
from .bounds import margin95, recommend_sa
from .queries import QueryBatch
from .workloads import (
    AxisPredicates,
    Objective,
    Part,
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
    "Advice",
    "AttributeMultiplier",
    "SaChoice",
    "Suggestion",
    "advise",
    "best_sa",
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

    ``error`` is the expected error of the workload's queries on the new domain, each
    query rounded out to whole bins or nodes of the new domain, with S_A ``sa``. It is
    noise only: ``exact_share`` is the share of the workload's queries that the new domain
    answers exactly; the others (rounded out) also get a bias that depends on the data and
    is not predicted. ``schema`` and ``workload`` are the changed ones (apply the schema to
    take the suggestion).

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

    @property
    def factor(self) -> float:
        """How many times smaller the predicted error is."""
        return self.before / self.error if self.error > 0 else math.inf


@dataclass(frozen=True)
class Advice:
    """The advisor's answer for one release specification and workload.

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
        Lossless ones first, then by predicted error.
    """

    spec: ReleaseSpec
    workload: Workload = field(repr=False)
    objective: Objective
    error: float
    multipliers: tuple[AttributeMultiplier, ...]
    suggestions: tuple[Suggestion, ...]

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


def _map_parts(
    workload: Workload, schema: Schema, axis: int, mapper: _AxisMapper | None
) -> tuple[Workload, float]:
    """``workload`` on ``schema`` with ``axis`` mapped (``mapper``) or dropped (None); also
    the share of its queries answered exactly on the new axis."""
    parts: list[Part] = []
    exact = 0.0
    for part, preds in zip(workload.parts, workload.axis_predicates(), strict=False):
        if mapper is None:
            new_axis = None
            exact_here = np.ones(len(preds[axis]), dtype=bool)
        else:
            new_axis, exact_here = mapper(preds[axis])
        kept = [p for a, p in enumerate(preds) if a != axis]
        if new_axis is not None:
            kept.insert(axis, new_axis)
        if isinstance(part, ProductPart):
            parts.append(ProductPart(tuple(kept)))
            exact += len(part) * float(np.mean(exact_here))
        else:
            stacked = [np.stack([getattr(p, f) for p in kept], axis=1) for f in ("lo", "hi", "nodes")]
            parts.append(QueryBatch(*stacked))
            exact += float(np.sum(exact_here))
    return Workload(schema, tuple(parts), workload.name), exact / len(workload)


class _AxisMapper:
    """Maps one axis' predicates onto a coarser domain, rounding them out."""

    def __call__(self, preds: AxisPredicates) -> tuple[AxisPredicates, np.ndarray]:
        raise NotImplementedError


class _Bins(_AxisMapper):
    def __init__(self, width: int, size: int):
        self.width, self.size = width, size

    def __call__(self, preds: AxisPredicates) -> tuple[AxisPredicates, np.ndarray]:
        lo, hi = preds.lo // self.width, preds.hi // self.width
        aligned = (preds.lo % self.width == 0) & (((preds.hi + 1) % self.width == 0) | (preds.hi == self.size - 1))
        return AxisPredicates(lo, hi, preds.nodes), aligned


class _Level(_AxisMapper):
    def __init__(self, old: NominalAttribute, new: NominalAttribute, level: int):
        lay = old.hierarchy.layout
        labels = old.hierarchy.labels
        top = np.arange(old.hierarchy.n_nodes)
        for _ in range(old.hierarchy.height):  # climb to the level (parents precede children)
            top = np.where(lay.depth[top] > level, lay.parent[top], top)
        new_index = np.array([new.hierarchy.index_of(labels[t]) for t in top])
        new_lay = new.hierarchy.layout
        self.node = new_index
        self.lo, self.hi = new_lay.lo[new_index], new_lay.hi[new_index] - 1
        self.exact = lay.depth <= level

    def __call__(self, preds: AxisPredicates) -> tuple[AxisPredicates, np.ndarray]:
        n = preds.nodes
        return AxisPredicates(self.lo[n].astype(np.int64), self.hi[n].astype(np.int64), self.node[n]), self.exact[n]


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


def _candidates(schema: Schema, workload: Workload) -> Iterable[tuple[SuggestionKind, int, str, Attribute | None, _AxisMapper | None]]:
    constrained = workload.constrained_axes()
    for axis, attribute in enumerate(schema):
        if axis not in constrained and len(schema) > 1:
            yield "drop", axis, f"drop {attribute.name} (no query of the workload constrains it)", None, None
        if isinstance(attribute, OrdinalAttribute):
            for width in _bin_widths(attribute.size):
                binned = _binned(attribute, width)
                if binned is not None:
                    text = f"{attribute.name} in bins of {width} values ({binned.size} bins instead of {attribute.size})"
                    yield "bins", axis, text, binned, _Bins(width, attribute.size)
        else:
            finest = attribute.finest or attribute.hierarchy
            current = attribute.level or finest.height
            for level in range(2, current):
                coarse = NominalAttribute(attribute.name, finest, missing=None, column=attribute.column,
                                          domain_from_data=attribute.domain_from_data, level=level)
                if attribute.missing is not None or coarse.size == attribute.size:
                    continue
                text = (f"{attribute.name} at hierarchy level {level} ({coarse.size} values instead of "
                        f"{attribute.size}, e.g. {', '.join(coarse.labels[:3])})")
                yield "level", axis, text, coarse, _Level(attribute, coarse, level)


def advise(
    spec: ReleaseSpec,
    workload: Workload,
    *,
    objective: Objective = "mean",
    choose_sa: bool = True,
    should_cancel: CancelCallback | None = None,
) -> Advice:
    """Per-attribute multipliers and domain suggestions for ``workload`` under ``spec``
    (``should_cancel`` as for :func:`best_sa`).

    With ``choose_sa`` each changed schema gets its :func:`best_sa` (and so does the
    current one, for a fair comparison: ``before`` is then the best current error);
    otherwise the spec's S_A is kept (less any dropped attribute). Suggestions come with
    lossless ones first (every query answered exactly), then by predicted error.

    Parameters
    ----------
    spec : ReleaseSpec
        The release; its epsilon, neighbours, public total and (without ``choose_sa``) S_A are used.
    workload : Workload
        Queries on ``spec.schema``.
    objective : {"mean", "worst"}, default "mean", keyword-only
        The average square error, or the worst query's.
    choose_sa : bool, default True, keyword-only
        Choose S_A with :func:`best_sa` for the current and every changed schema.
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
        ``objective`` is neither ``"mean"`` nor ``"worst"``.
    Cancelled
        ``should_cancel()`` returned True.
    """
    objective = check_objective(objective)
    check = Progress(None, should_cancel).check
    schema = spec.schema

    def best(of: ReleaseSpec, queries: Workload) -> tuple[str, ...]:
        return best_sa(of, queries, objective=objective, should_cancel=should_cancel).sa

    base = spec.replace(mechanism="privelet+", sa=best(spec, workload)) if choose_sa else spec
    before = expected_error(base, workload, objective=objective)
    multipliers = []
    constrained = workload.constrained_axes()
    suggestions = []
    for kind, axis, text, new_attribute, mapper in _candidates(schema, workload):
        check()
        attributes = list(schema)
        if new_attribute is None:
            del attributes[axis]
        else:
            attributes[axis] = new_attribute
        new_schema = Schema(attributes)
        new_workload, exact = _map_parts(workload, new_schema, axis, mapper)
        kept_sa = tuple(n for n in base.effective_sa if n in new_schema.names)
        new_spec = spec.replace(schema=new_schema, mechanism="privelet+", sa=kept_sa)
        if choose_sa:
            new_spec = new_spec.replace(sa=best(new_spec, new_workload))
        error = expected_error(new_spec, new_workload, objective=objective)
        suggestions.append(Suggestion(kind, schema[axis].name, text, new_schema, new_workload, new_spec.effective_sa,
                                      error, before, exact))
    if len(schema) > 1:
        for axis, attribute in enumerate(schema):
            check()
            rest = Schema([a for i, a in enumerate(schema) if i != axis])
            reduced, _ = _map_parts(workload, rest, axis, None)
            kept_sa = tuple(n for n in base.effective_sa if n != attribute.name)
            without = spec.replace(schema=rest, mechanism="privelet+", sa=kept_sa)
            error = expected_error(without, reduced, objective=objective)
            multipliers.append(AttributeMultiplier(attribute.name, attribute.name in base.effective_sa,
                                                   before / error if error > 0 else math.inf, axis in constrained))
    suggestions.sort(key=lambda s: (s.exact_share < 1.0, s.error))
    return Advice(base, workload, objective, before, tuple(multipliers), tuple(suggestions))
