"""A workload asked on fine values, answered on a coarser domain of one attribute.

Coarsening an attribute (bins of an ordinal one, a hierarchy level of a nominal one, or
dropping it) keeps a query *exact* when each of its predicates on that attribute is a union
of whole new bins or groups (or leaves the attribute unconstrained). Any other query is
answered in one of two ways (:data:`ANSWERING`):

- ``"spread"`` (the default): each coarse cell the query covers only in part counts with the
  share of its fine values that the query holds, as if its count were spread uniformly over
  them. The answer is a fixed linear combination of released cells, so its noise variance is
  exact and data-free (below); its bias is the data's departure from uniform inside those cells.
- ``"round-out"``: the query takes every coarse cell it touches whole. Its noise is that of a
  plain box query; its bias is the whole count of the cells it adds.

Variance of a spread query. Along the coarsened axis a predicate is the weight vector
``w = a e_L + 1_M + b e_R`` (first cell ``L`` with share ``a``, the cells ``M`` between, last cell
``R`` with share ``b``; one cell with share ``a`` when the query stays in one). A release's
noise covariance is a Kronecker product of per-axis factors ``S`` (docs/math.md, "Exact
variance"), so the query's variance is the product over the axes of ``w' S w`` with this axis'
factor written with interval variances ``V`` only (each a union of adjacent intervals):
``w' S w = a^2 V(L) + V(M) + b^2 V(R) + a (V(LM) - V(L) - V(M)) + b (V(MR) - V(M) - V(R))
+ a b (V(LMR) - V(LM) - V(MR) + V(M))``; its covariance with the total is linear in ``w``:
``C(LMR) - (1 - a) C(L) - (1 - b) C(R)``.

Under weighted marginals (docs/math.md, "Marginals", exact variances) a query's variance depends on each axis'
weight vector through its mean part ``(w'1)^2 / n`` and its contrast part ``w'w - (w'1)^2 / n``
only, so a spread query's figure is the box formula with ``w``'s parts on the coarsened axis.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

import numpy as np

from ..errors import InternalError, PriveletError
from ..model.schema import NominalAttribute, Schema
from ..queries import QueryBatch
from ..strategies.base import AxisStrategy
from .workloads import (
    AxisPredicates,
    AxisTable,
    Objective,
    Part,
    ProductPart,
    Workload,
    axis_table,
    check_objective,
    components_error,
    tables_error,
    workload_components,
)

if TYPE_CHECKING:
    from ..spec import ReleaseSpec

__all__ = [
    "ANSWERING",
    "Answering",
    "AxisCoarsening",
    "BinsCoarsening",
    "CoarsePredicates",
    "Coarsened",
    "LevelCoarsening",
    "check_answering",
    "coarse_axis_table",
    "coarsen",
]

Answering = Literal["spread", "round-out"]
#: How a query that a coarser domain cannot answer exactly is answered (see the module docstring).
ANSWERING: tuple[Answering, ...] = ("spread", "round-out")


def check_answering(answering: object) -> Answering:
    """``answering`` if it is one of :data:`ANSWERING`; a PriveletError naming them otherwise."""
    if answering == "spread" or answering == "round-out":
        return answering
    raise PriveletError(f"queries across coarser bins are answered by 'spread' or 'round-out', got {answering!r}")


@dataclass(frozen=True)
class CoarsePredicates:
    """One axis' fine predicates on the coarse axis: the coarse cells ``lo..hi`` they touch
    (inclusive; ``nodes`` the coarse node on a nominal axis, -1 elsewhere), the share of the
    first (``first``) and last (``last``) of those cells the predicate covers (1: whole; with
    ``lo == hi`` only ``first`` counts), ``cells`` its fine values, ``added`` the fine values
    rounding out would add and ``estimated`` those of its own that spreading estimates."""

    lo: np.ndarray
    hi: np.ndarray
    nodes: np.ndarray
    first: np.ndarray
    last: np.ndarray
    cells: np.ndarray
    added: np.ndarray
    estimated: np.ndarray

    def __len__(self) -> int:
        return len(self.lo)

    @property
    def exact(self) -> np.ndarray:
        """Whether each predicate is a union of whole coarse cells."""
        return (self.first >= 1.0) & (self.last >= 1.0)

    def rounded(self) -> AxisPredicates:
        """The predicates rounded out to the whole coarse cells they touch."""
        return AxisPredicates(self.lo, self.hi, self.nodes)

    def take(self, index: np.ndarray) -> CoarsePredicates:
        return CoarsePredicates(*(getattr(self, f)[index] for f in (
            "lo", "hi", "nodes", "first", "last", "cells", "added", "estimated")))


class AxisCoarsening:
    """Maps one axis' fine predicates onto its coarser domain."""

    def __call__(self, predicates: AxisPredicates) -> CoarsePredicates:
        raise NotImplementedError


class BinsCoarsening(AxisCoarsening):
    """``size`` values in consecutive bins of ``width`` (the last one may be shorter)."""

    def __init__(self, width: int, size: int):
        self.width, self.size = int(width), int(size)

    def __call__(self, predicates: AxisPredicates) -> CoarsePredicates:
        w, n = self.width, self.size
        lo, hi = np.asarray(predicates.lo, dtype=np.int64), np.asarray(predicates.hi, dtype=np.int64)
        clo, chi = lo // w, hi // w
        start_lo, end_lo = clo * w, np.minimum((clo + 1) * w, n) - 1
        start_hi, end_hi = chi * w, np.minimum((chi + 1) * w, n) - 1
        one = clo == chi
        cells = hi - lo + 1
        first = np.where(one, cells, end_lo - lo + 1) / (end_lo - start_lo + 1)
        last = np.where(one, first, (hi - start_hi + 1) / (end_hi - start_hi + 1))
        inside_first = np.where(one, cells, end_lo - lo + 1)
        estimated = np.where(first < 1, inside_first, 0) + np.where(~one & (last < 1), hi - start_hi + 1, 0)
        added = (end_hi - start_lo + 1) - cells
        return CoarsePredicates(clo, chi, np.full(len(lo), -1, dtype=np.int64), first, last, cells, added, estimated)


class LevelCoarsening(AxisCoarsening):
    """A nominal attribute counted at hierarchy ``level`` (``coarse`` is it at that level)."""

    def __init__(self, fine: NominalAttribute, coarse: NominalAttribute, level: int):
        lay = fine.hierarchy.layout
        labels = fine.hierarchy.labels
        top = np.arange(fine.hierarchy.n_nodes)
        for _ in range(fine.hierarchy.height):  # climb to the level (parents precede children)
            top = np.where(lay.depth[top] > level, lay.parent[top], top)
        coarse_index = np.array([coarse.hierarchy.index_of(labels[t]) for t in top])
        coarse_lay = coarse.hierarchy.layout
        self._node = coarse_index.astype(np.int64)
        self._lo = coarse_lay.lo[coarse_index].astype(np.int64)
        self._hi = (coarse_lay.hi[coarse_index] - 1).astype(np.int64)
        self._cells = (lay.hi - lay.lo).astype(np.int64)  # fine leaves under each fine node
        self._share = self._cells / (lay.hi[top] - lay.lo[top])
        self._outside = (lay.hi[top] - lay.lo[top]) - self._cells

    def __call__(self, predicates: AxisPredicates) -> CoarsePredicates:
        n = np.asarray(predicates.nodes, dtype=np.int64)
        share = self._share[n]
        estimated = np.where(share < 1, self._cells[n], 0)
        return CoarsePredicates(self._lo[n], self._hi[n], self._node[n], share, share, self._cells[n],
                                self._outside[n], estimated)


def _spread_factors(strategy: AxisStrategy, p: CoarsePredicates, size: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per predicate ``w' S w``, ``w' S 1`` and the share ``w' 1 / size`` of its weight vector on
    the coarse axis (module docstring)."""
    own = strategy.predicate_variances(p.lo, p.hi, p.nodes).astype(np.float64)
    total = strategy.predicate_total_covariances(p.lo, p.hi, p.nodes).astype(np.float64)
    one = p.lo == p.hi
    share = np.where(one, p.first, p.first + p.last + (p.hi - p.lo - 1)) / size
    single = np.nonzero(one & (p.first < 1))[0]
    if len(single):
        a = p.first[single]
        own[single] *= a**2
        total[single] *= a
    multi = np.nonzero(~one & ~p.exact)[0]  # only an ordinal axis: a nominal one's inexact queries stay in one cell
    if len(multi):
        lo, hi = p.lo[multi], p.hi[multi]
        a, b = p.first[multi], p.last[multi]
        minus = np.full(len(multi), -1, dtype=np.int64)

        def v(first: np.ndarray, last: np.ndarray) -> np.ndarray:
            empty = last < first
            values = strategy.predicate_variances(np.where(empty, 0, first), np.where(empty, 0, last), minus)
            return np.where(empty, 0.0, values)

        v_l, v_r, v_m = v(lo, lo), v(hi, hi), v(lo + 1, hi - 1)
        v_lm, v_mr, v_lmr = v(lo, hi - 1), v(lo + 1, hi), own[multi]
        own[multi] = (a**2 * v_l + v_m + b**2 * v_r + a * (v_lm - v_l - v_m) + b * (v_mr - v_m - v_r)
                      + a * b * (v_lmr - v_lm - v_mr + v_m))
        c_l = strategy.predicate_total_covariances(lo, lo, minus)
        c_r = strategy.predicate_total_covariances(hi, hi, minus)
        total[multi] = total[multi] - (1 - a) * c_l - (1 - b) * c_r
    return own, total, share


def _spread_components(p: CoarsePredicates, size: int) -> tuple[np.ndarray, np.ndarray]:
    """Per predicate the mean and contrast parts of its spread weight vector ``w`` on the
    coarsened axis (module docstring; a box's are
    :func:`~privelet_gui.engine.strategies.marginals.box_components`)."""
    one = p.lo == p.hi
    inner = (p.hi - p.lo - 1).astype(np.float64)
    total = np.where(one, p.first, p.first + p.last + inner)
    squares = np.where(one, p.first**2, p.first**2 + p.last**2 + inner)
    mean = total**2 / size
    # The whole domain, every value whole, has no contrast part: exactly 0, not a rounding residue.
    whole = (p.lo == 0) & (p.hi == size - 1) & (p.first == 1) & (one | (p.last == 1))
    return mean, np.where(whole, 0.0, squares - mean)


def coarse_axis_table(
    rows: Sequence[tuple[bool, CoarsePredicates]], strategy: AxisStrategy, size: int, answering: Answering
) -> AxisTable:
    """The coarsened axis' :class:`~privelet_gui.engine.accuracy.workloads.AxisTable`: one row per
    ``(product, predicates)`` (a product part's predicates averaged into one row; else a row per
    predicate), answered by ``answering``."""
    rho2 = float(strategy.rho) ** 2
    columns: dict[str, list[np.ndarray]] = {"own": [], "covariance": [], "share2": []}
    for product, p in rows:
        if answering == "spread":
            own, total, share = _spread_factors(strategy, p, size)
        else:
            own = strategy.predicate_variances(p.lo, p.hi, p.nodes)
            total = strategy.predicate_total_covariances(p.lo, p.hi, p.nodes)
            share = (p.hi - p.lo + 1) / size
        values = {"own": rho2 * own, "covariance": rho2 * share * total, "share2": share**2}
        for key, value in values.items():
            columns[key].append(np.array([value.mean()]) if product else np.asarray(value, dtype=np.float64))
    own, covariance, share2 = (np.concatenate(columns[k]) for k in ("own", "covariance", "share2"))
    return AxisTable(own, covariance, share2, total=rho2 * strategy.total_variance())


@dataclass(frozen=True)
class Coarsened:
    """A fine workload on a schema with one attribute coarsened (``coarsening``) or dropped
    (``coarsening`` None) at ``axis``.

    ``workload`` is it rounded out on ``schema`` (the exact queries unchanged); ``predicates``
    per part the coarsened axis' predicates; ``exact_share`` the share of queries answered
    exactly; ``estimated_share`` and ``added_share`` the mean, over the other queries, of the
    share of a query's fine values that spreading estimates and of the values rounding out
    adds (relative to the query's own).
    """

    fine: Workload
    schema: Schema
    axis: int
    coarsening: AxisCoarsening | None
    workload: Workload
    predicates: tuple[CoarsePredicates, ...] | None
    exact_share: float
    estimated_share: float
    added_share: float

    def rows(self, average: bool) -> list[tuple[bool, CoarsePredicates]]:
        """The coarsened axis' predicates by row of :func:`axis_table` (see :func:`coarse_axis_table`)."""
        if self.predicates is None:
            raise InternalError("a coarsened axis's predicates were read before they were made")
        out = []
        for part, p in zip(self.fine.parts, self.predicates, strict=True):
            if average or not isinstance(part, ProductPart):
                out.append((isinstance(part, ProductPart) and average, p))
            else:  # listed one by one, the last axis varying fastest (ProductPart.queries)
                picks = np.meshgrid(*[np.arange(len(a)) for a in part.axes], indexing="ij")[self.axis].reshape(-1)
                out.append((False, p.take(picks)))
        return out

    def expected_error(self, spec: ReleaseSpec, *, answering: Answering = "spread", objective: Objective = "mean") -> float:
        """The fine workload's expected square error (noise only) on a release of ``schema``
        (``spec``), inexact queries answered by ``answering``; the average over queries or the
        worst one (``objective``)."""
        if spec.schema != self.schema:
            raise PriveletError("the release is on another schema than the coarsened workload")
        average = check_objective(objective) == "mean"
        answering = check_answering(answering)
        if spec.label == "marginals":
            return self._marginals_error(spec, answering, average)
        strategies = spec.plan.strategies
        tables = [axis_table(self.workload, a, s, average=average) for a, s in enumerate(strategies)
                  if a != self.axis or self.predicates is None]
        if self.predicates is not None:
            tables.insert(self.axis, coarse_axis_table(self.rows(average), strategies[self.axis],
                                                       self.schema[self.axis].size, answering))
        return tables_error(tables, spec, self.workload, average=average)

    def _marginals_error(self, spec: ReleaseSpec, answering: Answering, average: bool) -> float:
        """:meth:`expected_error` under weighted marginals: the rounded-out queries' components,
        the coarsened axis' replaced by the spread weight vectors' when spreading."""
        weights, mean, contrast = workload_components(self.workload, average=average)
        if self.predicates is not None and answering == "spread":
            size = self.schema[self.axis].size
            parts = []
            for product, p in self.rows(average):
                m, c = _spread_components(p, size)
                parts.append((np.array([m.mean()]), np.array([c.mean()])) if product else (m, c))
            mean[:, self.axis] = np.concatenate([m for m, _ in parts])
            contrast[:, self.axis] = np.concatenate([c for _, c in parts])
        return components_error(spec.marginals_strategy, weights, mean, contrast, epsilon=spec.epsilon,
                                neighbours=spec.neighbours, public_total=spec.uses_public_total, average=average)


def coarsen(fine: Workload, schema: Schema, axis: int, coarsening: AxisCoarsening | None) -> Coarsened:
    """``fine`` (a workload on the schema before the change) on ``schema``, whose attribute at
    ``axis`` is coarsened by ``coarsening`` (None: the attribute is dropped, and each query keeps
    its other conditions: a drop the workload loses nothing by leaves it unconstrained)."""
    parts: list[Part] = []
    mapped: list[CoarsePredicates] = []
    exact = estimated = added = 0.0
    for part, preds in zip(fine.parts, fine.axis_predicates(), strict=True):
        kept = [p for a, p in enumerate(preds) if a != axis]
        weight = float(len(part)) / len(preds[axis]) if isinstance(part, ProductPart) else 1.0
        if coarsening is not None:
            p = coarsening(preds[axis])
            mapped.append(p)
            kept.insert(axis, p.rounded())
            inexact = ~p.exact
            exact += weight * float(np.sum(p.exact))
            estimated += weight * float(np.sum(p.estimated[inexact] / p.cells[inexact]))
            added += weight * float(np.sum(p.added[inexact] / p.cells[inexact]))
        else:
            exact += float(len(part))
            if isinstance(part, ProductPart) and len(preds[axis]) > 1 and kept:
                # every query keeps its other conditions: as many queries as before, not one per
                # combination of the others (the first kept axis's predicates listed once per dropped one)
                k = len(preds[axis])
                kept[0] = AxisPredicates(np.tile(kept[0].lo, k), np.tile(kept[0].hi, k), np.tile(kept[0].nodes, k))
        if isinstance(part, ProductPart):
            parts.append(ProductPart(tuple(kept)))
        else:
            stacked = [np.stack([getattr(p, f) for p in kept], axis=1) for f in ("lo", "hi", "nodes")]
            parts.append(QueryBatch(*stacked))
    inexact_queries = len(fine) - exact
    return Coarsened(
        fine, schema, axis, coarsening, Workload(schema, tuple(parts), fine.name),
        tuple(mapped) if coarsening is not None else None, exact / len(fine),
        estimated / inexact_queries if inexact_queries > 0 else 0.0,
        added / inexact_queries if inexact_queries > 0 else 0.0,
    )
