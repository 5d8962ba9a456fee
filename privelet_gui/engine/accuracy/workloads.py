"""Workloads: the range-count queries a custodian expects users to ask, and their expected error.

A workload is a union of *parts*. A part is either a list of explicit queries (the
paper's random workload, a file of queries) or a Cartesian product of per-axis
predicate lists (all 2-way marginals of age and sex: every age value times every
sex value). Products keep marginal workloads small: the error of a product is a
product of per-axis averages, however many queries it holds.

The expected square error of a query is its exact noise variance (the noise is
unbiased), so everything here is data-independent and costs no privacy. Per axis
and part, :func:`workload_factors` averages the exact factors of
:class:`~privelet_gui.engine.VarianceModel` (``V_i``, and for the public total
``C_i`` and the share ``s_i = |q_i| / |A_i|``); :func:`expected_error` and the S_A search of
:mod:`~privelet_gui.engine.accuracy.advisor` combine them.

Examples
--------
>>> from privelet_gui.engine import Hierarchy, NominalAttribute, OrdinalAttribute, Schema
>>> schema = Schema([OrdinalAttribute.integer_range("age", 0, 15),
...                  NominalAttribute("sex", Hierarchy.flat(["F", "M"]))])
>>> w = marginals(schema, ways=(1, 2))
>>> len(w), w.name
(50, '1- and 2-way marginals')
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

import numpy as np

from ..bounds import VarianceModel, variance_model
from ..errors import PriveletError, SchemaError
from ..model.schema import Attribute, NominalAttribute, Schema
from ..noise.calibration import Neighbours, check_epsilon, multiplicity
from ..queries import QueryBatch, random_workload
from ..strategies.base import AxisStrategy
from ..strategies.marginals import MarginalsStrategy, box_components
from ..strategies.stacked import IntervalGram

if TYPE_CHECKING:
    from ..spec import ReleaseSpec

__all__ = [
    "OBJECTIVES",
    "AxisPredicates",
    "AxisTable",
    "ProductPart",
    "Workload",
    "WorkloadFactors",
    "axis_gram",
    "axis_table",
    "combine_tables",
    "expected_error",
    "level_nodes",
    "marginals",
    "marginals_expected_error",
    "paper_workload",
    "row_weights",
    "sa_mask",
    "tables_error",
    "workload_components",
    "workload_factors",
    "workload_variances",
]

#: Queries of the paper's random workload used when none is given (seeded: the same
#: workload every time, so that choices made from it are reproducible).
PAPER_QUERIES = 10_000
#: Most queries a workload lists one by one (exports, worst cases, quintiles).
MAX_LISTED_QUERIES = 5_000_000


@dataclass(frozen=True)
class AxisPredicates:
    """The predicates one axis takes in a product part: inclusive index intervals, and the
    level-order node of each for a nominal axis (``-1`` for an ordinal one).

    Attributes
    ----------
    lo, hi : numpy.ndarray
        int64, one per predicate: inclusive first and last index along the axis.
    nodes : numpy.ndarray
        int64, one per predicate: the level-order node (nominal) or -1 (ordinal).
    """

    lo: np.ndarray
    hi: np.ndarray
    nodes: np.ndarray

    def __len__(self) -> int:
        return len(self.lo)

    @classmethod
    def whole(cls, attribute: Attribute) -> AxisPredicates:
        """The axis left unconstrained.

        Parameters
        ----------
        attribute : Attribute
            The axis' attribute.

        Returns
        -------
        AxisPredicates
            One predicate: the whole domain (the root node for a nominal attribute).
        """
        node = 0 if isinstance(attribute, NominalAttribute) else -1
        return cls(np.array([0]), np.array([attribute.size - 1]), np.array([node]))

    def is_whole(self, attribute: Attribute) -> bool:
        """Whether these predicates are the single whole-domain one.

        Parameters
        ----------
        attribute : Attribute
            The axis' attribute.

        Returns
        -------
        bool
        """
        return len(self) == 1 and self.lo[0] == 0 and self.hi[0] == attribute.size - 1


@dataclass(frozen=True)
class ProductPart:
    """Every combination of one predicate per axis.

    Attributes
    ----------
    axes : tuple of AxisPredicates
        One per axis of the schema, in axis order.
    """

    axes: tuple[AxisPredicates, ...]

    def __len__(self) -> int:
        return math.prod(len(a) for a in self.axes)

    def queries(self) -> QueryBatch:
        """The part's queries listed one by one (the last axis varies fastest).

        Returns
        -------
        QueryBatch
            ``len(part)`` queries.
        """
        grids = np.meshgrid(*[np.arange(len(a)) for a in self.axes], indexing="ij")
        picks = [g.reshape(-1) for g in grids]
        lo = np.stack([a.lo[p] for a, p in zip(self.axes, picks, strict=False)], axis=1)
        hi = np.stack([a.hi[p] for a, p in zip(self.axes, picks, strict=False)], axis=1)
        nodes = np.stack([a.nodes[p] for a, p in zip(self.axes, picks, strict=False)], axis=1)
        return QueryBatch(lo.astype(np.int64), hi.astype(np.int64), nodes.astype(np.int64))


Part = ProductPart | QueryBatch


@dataclass(frozen=True)
class Workload:
    """Queries on one schema, as parts (see the module docstring); ``name`` is for people.

    Every query counts once: a workload's error is the average over all its queries.

    Attributes
    ----------
    schema : Schema
        The attributes the queries are on.
    parts : tuple of ProductPart or QueryBatch
        The parts; each has one axis per attribute.
    name : str, default "workload"
        A label for people.

    Raises
    ------
    SchemaError
        A part whose number of axes is not the schema's, or a workload with no query.
    """

    schema: Schema
    parts: tuple[Part, ...]
    name: str = "workload"

    def __post_init__(self) -> None:
        d = len(self.schema)
        for part in self.parts:
            if isinstance(part, ProductPart):
                if len(part.axes) != d:
                    raise SchemaError(f"a workload part has {len(part.axes)} axes but the schema has {d}")
            elif part.lo.shape[1:] != (d,):
                raise SchemaError(f"a workload's queries have {part.lo.shape[1:]} axes but the schema has {d}")
        if len(self) == 0:
            raise SchemaError(f"the workload {self.name!r} holds no query")

    def __len__(self) -> int:
        return sum(len(part) for part in self.parts)

    @classmethod
    def of_queries(cls, schema: Schema, queries: QueryBatch, name: str = "queries") -> Workload:
        """A workload of listed queries.

        Parameters
        ----------
        schema : Schema
            The attributes.
        queries : QueryBatch
            At least one query, on ``schema``.
        name : str, default "queries"
            A label for people.

        Returns
        -------
        Workload

        Raises
        ------
        SchemaError
            The queries' axes are not the schema's, or there is none.
        """
        return cls(schema, (queries,), name)

    def combine(self, *others: Workload) -> Workload:
        """The union of this workload and ``others`` (same schema), every query counted once.

        Parameters
        ----------
        *others : Workload
            Workloads on the same schema.

        Returns
        -------
        Workload
            Its name joins the names with " + ".

        Raises
        ------
        SchemaError
            A workload on another schema.
        """
        for other in others:
            if other.schema != self.schema:
                raise SchemaError(f"workloads {self.name!r} and {other.name!r} are on different schemas")
        parts = self.parts + tuple(p for other in others for p in other.parts)
        return Workload(self.schema, parts, " + ".join([self.name, *(o.name for o in others)]))

    def queries(self, limit: int = MAX_LISTED_QUERIES) -> QueryBatch:
        """Every query listed one by one (refused beyond ``limit`` queries).

        Parameters
        ----------
        limit : int, default 5,000,000
            The most queries to list.

        Returns
        -------
        QueryBatch
            Every query, part by part.

        Raises
        ------
        SchemaError
            The workload has more than ``limit`` queries.
        """
        if len(self) > limit:
            raise SchemaError(
                f"the workload {self.name!r} has {len(self):,} queries, more than {limit:,} listed one by one; "
                "use its average error, or a smaller workload"
            )
        batches = [p.queries() if isinstance(p, ProductPart) else p for p in self.parts]
        return QueryBatch(*(np.concatenate([getattr(b, f) for b in batches]) for f in ("lo", "hi", "nodes")))

    def examples(self, count: int) -> QueryBatch:
        """Up to ``count`` of its queries, evenly spaced through it (each part gets its turn in order).

        Parameters
        ----------
        count : int
            The most queries to return (at least one is).

        Returns
        -------
        QueryBatch
        """
        picks = np.unique(np.linspace(0, len(self) - 1, num=max(1, min(count, len(self)))).round().astype(np.int64))
        chosen, start = [], 0
        for part in self.parts:
            mine = picks[(picks >= start) & (picks < start + len(part))] - start
            if len(mine):
                batch = part.queries() if isinstance(part, ProductPart) else part
                chosen.append(QueryBatch(batch.lo[mine], batch.hi[mine], batch.nodes[mine]))
            start += len(part)
        return QueryBatch(*(np.concatenate([getattr(b, f) for b in chosen]) for f in ("lo", "hi", "nodes")))

    def constrained_axes(self) -> frozenset[int]:
        """Axes that at least one query constrains.

        Returns
        -------
        frozenset of int
        """
        out: set[int] = set()
        for part in self.parts:
            for axis, attribute in enumerate(self.schema):
                if isinstance(part, ProductPart):
                    if not part.axes[axis].is_whole(attribute):
                        out.add(axis)
                elif np.any(part.lo[:, axis] != 0) or np.any(part.hi[:, axis] != attribute.size - 1):
                    out.add(axis)
        return frozenset(out)

    def axis_predicates(self) -> list[list[AxisPredicates]]:
        """Per part, per axis, the predicates (a query list gives one predicate per query).

        Returns
        -------
        list of list of AxisPredicates
            ``[part][axis]``.
        """
        out = []
        for part in self.parts:
            if isinstance(part, ProductPart):
                out.append(list(part.axes))
            else:
                out.append([AxisPredicates(part.lo[:, a], part.hi[:, a], part.nodes[:, a]) for a in range(len(self.schema))])
        return out


def paper_workload(schema: Schema, queries: int = PAPER_QUERIES, *, seed: int = 0) -> Workload:
    """The paper's random workload (:func:`~privelet_gui.engine.random_workload`), seeded.

    Parameters
    ----------
    schema : Schema
        The attributes.
    queries : int, default 10000
        Number of queries (at least 1).
    seed : int, default 0, keyword-only
        Seed of the workload (the same seed gives the same queries).

    Returns
    -------
    Workload

    Raises
    ------
    SchemaError
        ``queries`` is less than 1.
    """
    if queries < 1:
        raise SchemaError(f"the random workload needs at least one query, got {queries}")
    batch = random_workload(schema, queries, np.random.default_rng(seed))
    return Workload(schema, (batch,), f"paper's random workload ({queries:,} queries)")


def level_nodes(attribute: NominalAttribute, level: int) -> np.ndarray:
    """The nodes that partition the domain at ``level`` (root = 1): the nodes of that
    depth, and the leaves of shallower depth, in leaf order."""
    lay = attribute.hierarchy.layout
    if not 1 <= level <= attribute.hierarchy.height:
        raise SchemaError(
            f"attribute {attribute.name!r} has hierarchy levels 1..{attribute.hierarchy.height}, got level {level}"
        )
    picked = (lay.depth == level) | ((lay.depth < level) & (lay.fanout == 0))
    nodes = np.nonzero(picked)[0]
    return nodes[np.argsort(lay.lo[nodes], kind="stable")]


def _predicates(attribute: Attribute, grain: int | None) -> AxisPredicates:
    """One value (or leaf) per predicate; with ``grain``, blocks of that many values
    (ordinal) or the nodes of that hierarchy level (nominal)."""
    if isinstance(attribute, NominalAttribute):
        level = attribute.hierarchy.height if grain is None else grain
        nodes = level_nodes(attribute, level)
        lay = attribute.hierarchy.layout
        return AxisPredicates(lay.lo[nodes].astype(np.int64), (lay.hi[nodes] - 1).astype(np.int64), nodes.astype(np.int64))
    width = 1 if grain is None else grain
    if width < 1:
        raise SchemaError(f"attribute {attribute.name!r}: a block width must be at least 1, got {width}")
    lo = np.arange(0, attribute.size, width, dtype=np.int64)
    hi = np.minimum(lo + width - 1, attribute.size - 1)
    return AxisPredicates(lo, hi, np.full(len(lo), -1, dtype=np.int64))


def marginals(
    schema: Schema,
    ways: Iterable[int] = (2,),
    attributes: Sequence[str] | None = None,
    *,
    grains: Mapping[str, int] | None = None,
) -> Workload:
    """Every cell of every k-way marginal (k in ``ways``) of ``attributes`` (default: all).

    ``grains`` queries an attribute coarser: an ordinal one in blocks of that many
    values (5: five-year age bands), a nominal one at that hierarchy level (2:
    continents rather than countries). Other attributes are unconstrained.

    Parameters
    ----------
    schema : Schema
        The attributes.
    ways : iterable of int, default (2,)
        Each k, ``1 <= k <= len(attributes)``.
    attributes : sequence of str, optional
        The attributes the marginals are over (default: all).
    grains : mapping of str to int, optional, keyword-only
        ``{attribute name: grain}`` as above: a block width of at least 1 (ordinal) or a
        hierarchy level ``1..height`` (nominal).

    Returns
    -------
    Workload
        One product part per set of k attributes; named for people ("2-way marginals of age, sex").

    Raises
    ------
    SchemaError
        An unknown attribute (in ``attributes`` or ``grains``), a k outside ``1..len(attributes)``,
        a block width below 1 or a hierarchy level that does not exist.
    """
    names = schema.names if attributes is None else tuple(attributes)
    axes = schema.axes(names)
    ways = sorted(set(ways))
    grains = dict(grains or {})
    for name in grains:
        schema.index(name)
    if not ways or ways[0] < 1 or ways[-1] > len(axes):
        raise SchemaError(f"marginals of {len(axes)} attributes can be 1- to {len(axes)}-way, got {ways}")
    per_axis = {axis: _predicates(schema[axis], grains.get(schema[axis].name)) for axis in axes}
    parts = []
    for k in ways:
        for chosen in itertools.combinations(axes, k):
            parts.append(
                ProductPart(tuple(per_axis[a] if a in chosen else AxisPredicates.whole(attr) for a, attr in enumerate(schema)))
            )
    label = " and ".join(f"{k}" for k in ways)
    label = (", ".join(str(k) for k in ways[:-1]) + f"- and {ways[-1]}") if len(ways) > 1 else label
    name = f"{label}-way marginals"
    if attributes is not None:
        name += f" of {', '.join(names)}"
    if grains:
        name += " (" + ", ".join(f"{n} at {g}" for n, g in grains.items()) + ")"
    return Workload(schema, tuple(parts), name)


@dataclass(frozen=True)
class WorkloadFactors:
    """Per row (a product part, or one listed query) and axis, the averages the expected
    error is made of; each row stands for ``weights[r]`` queries.

    ``transformed`` / ``untransformed`` hold ``rho_i^2 mean V_i`` and ``mean |q_i|``;
    ``*_covariance`` hold ``rho_i^2 mean s_i C_i`` and ``mean s_i |q_i|``; ``share2`` holds
    ``mean s_i^2``; ``totals`` is ``(rho_i^2 T_i, |A_i|)`` per axis.
    """

    weights: np.ndarray
    transformed: np.ndarray
    untransformed: np.ndarray
    transformed_covariance: np.ndarray
    untransformed_covariance: np.ndarray
    share2: np.ndarray
    totals: np.ndarray  # (d, 2)

    def select(self, in_sa: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Per row, the three products of :mod:`~privelet_gui.engine.bounds`' public-total
        formula for one S_A (a boolean mask over the axes), ``rho^2`` included."""
        own = np.where(in_sa, self.untransformed, self.transformed).prod(axis=1)
        covariance = np.where(in_sa, self.untransformed_covariance, self.transformed_covariance).prod(axis=1)
        total = float(np.where(in_sa, self.totals[:, 1], self.totals[:, 0]).prod())
        return own, covariance, self.share2.prod(axis=1) * total


def workload_factors(workload: Workload, model: VarianceModel | None = None, *, average: bool = True) -> WorkloadFactors:
    """The per-axis averages of ``workload`` (see :class:`WorkloadFactors`).

    ``average=False`` lists every query as its own row (for worst cases).
    """
    schema = workload.schema
    model = model if model is not None else variance_model(schema)
    rho2 = np.array([float(t.rho) ** 2 for t in model.transforms])
    sizes = np.array([float(a.size) for a in schema])
    totals = np.array([[rho2[a] * model.axis_total(a, untransformed=False), sizes[a]] for a in range(len(schema))])
    parts: tuple[Part, ...] = workload.parts if average else (workload.queries(),)
    blocks: dict[str, list[np.ndarray]] = {k: [] for k in ("w", "t", "u", "tc", "uc", "s2")}
    for part in parts:
        product = isinstance(part, ProductPart)
        if isinstance(part, ProductPart):
            preds = list(part.axes)
        else:
            preds = [AxisPredicates(part.lo[:, a], part.hi[:, a], part.nodes[:, a]) for a in range(len(schema))]
        # A product's average is the product of per-axis averages; listed queries are rows of their own.
        blocks["w"].append(np.array([float(len(part))]) if product else np.ones(len(part)))
        columns: dict[str, list[np.ndarray]] = {k: [] for k in ("t", "u", "tc", "uc", "s2")}
        for axis, p in enumerate(preds):
            v_t, c_t = model.axis_factors(axis, p.lo, p.hi, p.nodes, untransformed=False)
            cells = (p.hi - p.lo + 1).astype(np.float64)
            share = cells / sizes[axis]
            values = {"t": rho2[axis] * v_t, "u": cells, "tc": rho2[axis] * share * c_t, "uc": share * cells,
                      "s2": share**2}
            for key, value in values.items():
                columns[key].append(np.array([value.mean()]) if product else value)
        for key, column in columns.items():
            blocks[key].append(np.stack(column, axis=1))
    return WorkloadFactors(
        weights=np.concatenate(blocks["w"]),
        transformed=np.concatenate(blocks["t"]),
        untransformed=np.concatenate(blocks["u"]),
        transformed_covariance=np.concatenate(blocks["tc"]),
        untransformed_covariance=np.concatenate(blocks["uc"]),
        share2=np.concatenate(blocks["s2"]),
        totals=totals,
    )



Objective = Literal["mean", "worst"]
#: What "the error of a workload" means: the average square error of its queries (the
#: default), or the square error of its worst query.
OBJECTIVES: tuple[Objective, ...] = ("mean", "worst")


def check_objective(objective: object) -> Objective:
    """``objective`` if it is one of :data:`OBJECTIVES`; a PriveletError saying them otherwise."""
    if objective == "mean" or objective == "worst":
        return objective
    raise PriveletError(f"the objective is 'mean' (average square error) or 'worst' (worst query), got {objective!r}")


def sa_mask(schema: Schema, sa: Iterable[str]) -> np.ndarray:
    """S_A as a boolean mask over the axes."""
    mask = np.zeros(len(schema), dtype=bool)
    mask[list(schema.axes(list(sa)))] = True
    return mask


def unit_variance(epsilon: float, neighbours: Neighbours) -> float:
    """``2 (multiplicity / epsilon)^2``: the variance per unit of the ``rho^2``-weighted factors."""
    return 2.0 * (multiplicity(neighbours) / check_epsilon(epsilon)) ** 2


def combine_products(
    own: np.ndarray, covariance: np.ndarray, total: np.ndarray, public_total: bool
) -> np.ndarray:
    """Per row, the raw (``own``) or the public-total factor ``own - 2 covariance + total``."""
    if not public_total:
        return own
    return np.maximum(own - 2.0 * covariance + total, 0.0)


@dataclass(frozen=True)
class AxisTable:
    """One axis measured by one strategy, per row of a workload (a product part, or a listed
    query): ``own`` is ``rho^2 mean V``, ``covariance`` ``rho^2 mean s C`` and ``share2``
    ``mean s^2`` (``s`` a predicate's share of the axis); ``total`` is ``rho^2 T``. A box's
    factors are products of its axes' (docs/math.md, "Exact variance")."""

    own: np.ndarray
    covariance: np.ndarray
    share2: np.ndarray
    total: float


def _rows(workload: Workload, average: bool) -> list[tuple[bool, list[AxisPredicates]]]:
    parts: tuple[Part, ...] = workload.parts if average else (workload.queries(),)
    out = []
    for part in parts:
        if isinstance(part, ProductPart):
            out.append((True, list(part.axes)))
        else:
            out.append((False, [AxisPredicates(part.lo[:, a], part.hi[:, a], part.nodes[:, a])
                                for a in range(len(workload.schema))]))
    return out


def row_weights(workload: Workload, *, average: bool = True) -> np.ndarray:
    """How many queries each row of :func:`axis_table` stands for."""
    parts: tuple[Part, ...] = workload.parts if average else (workload.queries(),)
    return np.concatenate([np.array([float(len(part))]) if isinstance(part, ProductPart) else np.ones(len(part))
                           for part in parts])


def axis_table(workload: Workload, axis: int, strategy: AxisStrategy, *, average: bool = True) -> AxisTable:
    """``strategy``'s factors on ``axis`` for every row of ``workload`` (see :class:`AxisTable`):
    a product part's average is one row, a listed query is a row of its own (every query with
    ``average=False``)."""
    size = workload.schema[axis].size
    rho2 = float(strategy.rho) ** 2
    columns: dict[str, list[np.ndarray]] = {"own": [], "covariance": [], "share2": []}
    for product, axes in _rows(workload, average):
        p = axes[axis]
        share = (p.hi - p.lo + 1).astype(np.float64) / size
        values = {
            "own": rho2 * strategy.predicate_variances(p.lo, p.hi, p.nodes),
            "covariance": rho2 * share * strategy.predicate_total_covariances(p.lo, p.hi, p.nodes),
            "share2": share**2,
        }
        for key, value in values.items():
            columns[key].append(np.array([value.mean()]) if product else value)
    own, covariance, share2 = (np.concatenate(columns[k]) for k in ("own", "covariance", "share2"))
    return AxisTable(own, covariance, share2, total=rho2 * strategy.total_variance())


def axis_gram(workload: Workload, axis: int, row_factors: np.ndarray, *, average: bool = True) -> IntervalGram:
    """``sum_r row_factors[r] mean_{q in row r} q q'`` over the predicates ``q`` (0/1 vectors) that
    ``axis`` takes in each row of :func:`axis_table`: the axis's Gram matrix, each row weighted by
    what the other axes multiply its variance by (docs/math.md, "Optimised identity"), kept as
    its weighted intervals."""
    lo, hi, coefficient = [], [], []
    row = 0
    for product, axes in _rows(workload, average):
        p = axes[axis]
        lo.append(p.lo)
        hi.append(p.hi)
        if product:  # one row: the mean over its predicates
            coefficient.append(np.full(len(p), row_factors[row] / len(p)))
            row += 1
        else:  # a row per predicate
            coefficient.append(row_factors[row:row + len(p)])
            row += len(p)
    starts, stops = (np.concatenate(v).astype(np.int64) for v in (lo, hi))
    return IntervalGram(workload.schema[axis].size, starts, stops, np.concatenate(coefficient).astype(np.float64))


def combine_tables(tables: Sequence[AxisTable], public_total: bool) -> np.ndarray:
    """Per row, the box factor of the axes' strategies (``rho^2`` included): the raw release's,
    or the one shifted to the public total (:func:`combine_products`)."""
    own = np.prod([t.own for t in tables], axis=0)
    if not public_total:
        return own
    covariance = np.prod([t.covariance for t in tables], axis=0)
    total = np.prod([t.share2 for t in tables], axis=0) * math.prod(t.total for t in tables)
    return combine_products(own, covariance, total, True)


def workload_components(workload: Workload, *, average: bool = True) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per row (a product part's mean, or a listed query), its weight and its per-axis mean and
    contrast parts (:func:`~privelet_gui.engine.strategies.marginals.box_components`).

    Parameters
    ----------
    workload : Workload
        Box queries.
    average : bool, default True, keyword-only
        A product part as one row (its per-axis averages); False lists every query.

    Returns
    -------
    tuple of numpy.ndarray
        ``(weights (rows,), mean (rows, d), contrast (rows, d))``: each row stands for
        ``weights[r]`` queries.
    """
    shape = workload.schema.shape
    parts = workload.parts if average else (workload.queries(),)
    weights, means, contrasts = [], [], []
    for part in parts:
        if isinstance(part, ProductPart):
            # A product's mean of per-axis products is the product of per-axis means.
            per_axis = [box_components(p.lo[:, None], p.hi[:, None], (shape[a],)) for a, p in enumerate(part.axes)]
            weights.append(np.array([float(len(part))]))
            means.append(np.array([[m.mean() for m, _ in per_axis]]))
            contrasts.append(np.array([[c.mean() for _, c in per_axis]]))
        else:
            mean, contrast = box_components(part.lo, part.hi, shape)
            weights.append(np.ones(len(part)))
            means.append(mean)
            contrasts.append(contrast)
    return np.concatenate(weights), np.concatenate(means), np.concatenate(contrasts)


def marginals_expected_error(
    strategy: MarginalsStrategy, workload: Workload, *, epsilon: float, neighbours: Neighbours,
    public_total: bool, objective: Objective = "mean",
) -> float:
    """The workload's exact expected square error under ``strategy`` (``inf`` when a query has a
    part no measured marginal holds: its answer is biased).

    Parameters
    ----------
    strategy : MarginalsStrategy
        On the workload's shape.
    workload : Workload
        Box queries.
    epsilon : float, keyword-only
        The privacy budget.
    neighbours : {"replace", "add-remove"}, keyword-only
        The neighbouring notion.
    public_total : bool, keyword-only
        Whether the release is shifted to the public total.
    objective : {"mean", "worst"}, default "mean", keyword-only
        The average square error of the queries, or the largest.

    Returns
    -------
    float
        Squared counts: ``2 (s rho / epsilon)^2`` times the mean (or largest) ``q' (A'A)^+ q``.

    Raises
    ------
    SchemaError
        The workload's shape is not the strategy's.
    """
    if workload.schema.shape != strategy.shape:
        raise SchemaError(f"the workload {workload.name!r} is on another shape than the marginals strategy")
    average = check_objective(objective) == "mean"
    weights, mean, contrast = workload_components(workload, average=average)
    return components_error(strategy, weights, mean, contrast, epsilon=epsilon, neighbours=neighbours,
                            public_total=public_total, average=average)


def components_error(
    strategy: MarginalsStrategy, weights: np.ndarray, mean: np.ndarray, contrast: np.ndarray, *, epsilon: float,
    neighbours: Neighbours, public_total: bool, average: bool,
) -> float:
    """The expected square error under ``strategy`` of rows of per-axis mean and contrast parts
    (:func:`workload_components`; row ``r`` standing for ``weights[r]`` queries): their
    weighted mean, or (``average`` False) the largest."""
    values = strategy.component_variances(mean, contrast, public_total=public_total)
    scale = unit_variance(epsilon, neighbours) * float(strategy.rho) ** 2
    return scale * (float(np.dot(weights, values) / weights.sum()) if average else float(values.max()))


def expected_error(spec: ReleaseSpec, workload: Workload, *, objective: Objective = "mean") -> float:
    """The workload's expected square error under ``spec``: the average over its queries
    (``"mean"``) or its worst query (``"worst"``), exact and data-independent.

    Parameters
    ----------
    spec : ReleaseSpec
        The release (its schema, epsilon, strategies, neighbours and public total).
    workload : Workload
        Queries on ``spec.schema``.
    objective : {"mean", "worst"}, default "mean", keyword-only
        The average square error of the queries, or the largest.

    Returns
    -------
    float
        An expected square error, in squared counts.

    Raises
    ------
    SchemaError
        The workload is on another schema, or (``"worst"``) lists more than 5,000,000 queries.
    PriveletError
        ``objective`` is neither ``"mean"`` nor ``"worst"``.

    Examples
    --------
    >>> from privelet_gui.engine import Hierarchy, NominalAttribute, OrdinalAttribute, ReleaseSpec, Schema
    >>> schema = Schema([OrdinalAttribute.integer_range("age", 0, 15),
    ...                  NominalAttribute("sex", Hierarchy.flat(["F", "M"]))])
    >>> spec = ReleaseSpec(schema, 1.0, sa=("sex",))
    >>> w = marginals(schema, ways=(1,))
    >>> round(expected_error(spec, w), 3), round(expected_error(spec, w, objective="worst"), 3)
    (129.167, 132.812)
    """
    if workload.schema != spec.schema:
        raise SchemaError(f"the workload {workload.name!r} is on another schema than the release")
    objective = check_objective(objective)
    if spec.label == "marginals":
        return marginals_expected_error(spec.marginals_strategy, workload, epsilon=spec.epsilon,
                                        neighbours=spec.neighbours, public_total=spec.uses_public_total,
                                        objective=objective)
    average = objective == "mean"
    tables = [axis_table(workload, axis, strategy, average=average) for axis, strategy in enumerate(spec.plan.strategies)]
    return tables_error(tables, spec, workload, average=average)


def tables_error(tables: Sequence[AxisTable], spec: ReleaseSpec, workload: Workload, *, average: bool) -> float:
    """The expected square error that per-axis tables (one per axis of ``workload``, rows as
    :func:`axis_table` makes them) give under ``spec``'s epsilon, neighbours and public total:
    the mean over the workload's queries (``average``) or its worst query's.

    Parameters
    ----------
    tables : sequence of AxisTable
        One per axis, in axis order.
    spec : ReleaseSpec
        The release whose noise scale and public total apply (its strategies are the tables').
    workload : Workload
        The queries the tables' rows stand for.
    average : bool, keyword-only
        The mean over the queries (rows weighted by how many each stands for), or the maximum.

    Returns
    -------
    float
        Squared counts.
    """
    values = combine_tables(tables, spec.uses_public_total)
    unit = unit_variance(spec.epsilon, spec.neighbours)
    if not average:
        return unit * float(values.max())
    weights = row_weights(workload, average=True)
    return unit * float(np.dot(weights, values) / weights.sum())


def workload_variances(spec: ReleaseSpec, workload: Workload) -> np.ndarray:
    """The exact noise variance of each query of the workload, listed one by one.

    Parameters
    ----------
    spec : ReleaseSpec
        The release.
    workload : Workload
        Queries on ``spec.schema``.

    Returns
    -------
    numpy.ndarray
        float64, one per query in :meth:`Workload.queries` order, in squared counts.

    Raises
    ------
    SchemaError
        The workload lists more than 5,000,000 queries.
    """
    return spec.variances(workload.queries())
