"""Range-count queries: boxes in M, answered in O(2^d) each with prefix sums.

A query constrains each attribute to an inclusive interval (ordinal), to one
hierarchy node (nominal: a leaf or all leaves under an internal node), or not
at all. Every query is therefore an axis-aligned box of M.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from .errors import SchemaError
from .model.schema import NominalAttribute, Schema

__all__ = [
    "PrefixSums",
    "QueryBatch",
    "RangeQuery",
    "random_workload",
    "relative_error",
    "sanity_bound",
    "square_error",
]

@dataclass(frozen=True)
class RangeQuery:
    """One box query: per axis an inclusive index interval, plus the node for nominal axes.

    Build it with :meth:`build` from labels, or directly from indices. For a nominal
    attribute ``nodes[axis]`` is the level-order index of the queried node (the root
    when unconstrained) and ``lo``/``hi`` are that node's leaves; for an ordinal
    attribute ``nodes[axis]`` is -1.

    Attributes
    ----------
    schema : Schema
        The attributes the query is on.
    lo, hi : tuple of int
        Per axis, the inclusive first and last index of the box.
    nodes : tuple of int
        Per axis, the level-order node of a nominal attribute (0 = the root: unconstrained),
        -1 for an ordinal one.

    Examples
    --------
    >>> from privelet_gui.engine import Hierarchy, NominalAttribute, OrdinalAttribute, Schema
    >>> schema = Schema([OrdinalAttribute.integer_range("age", 0, 99),
    ...                  NominalAttribute("job", Hierarchy.from_nested(
    ...                      {"*": {"Technical": ["Tech-support", "Craft-repair"], "Other": ["Sales"]}}))])
    >>> q = RangeQuery.build(schema, {"age": ("20", "30"), "job": "Technical"})
    >>> q.lo, q.hi, q.cells
    ((20, 0), (30, 1), 22)
    """

    schema: Schema
    lo: tuple[int, ...]
    hi: tuple[int, ...]
    nodes: tuple[int, ...]

    @classmethod
    def build(cls, schema: Schema, constraints: Mapping[str, object] | None = None) -> RangeQuery:
        """A query from ``{attribute: constraint}``; attributes left out are unconstrained.

        Constraints: a nominal attribute takes a node label (a leaf or a group); an
        ordinal attribute takes one value, or a pair ``(first, last)`` of values (text
        labels or raw values, inclusive; ``None`` for an open end).

        Parameters
        ----------
        schema : Schema
            The attributes.
        constraints : mapping of str to object, optional
            ``{attribute name: constraint}`` as above; None or empty: the whole of M.

        Returns
        -------
        RangeQuery

        Raises
        ------
        SchemaError
            An unknown attribute name, an unknown node label, a value outside an ordinal
            attribute's domain, an interval that is not a pair or is empty.
        """
        constraints = dict(constraints or {})
        unknown = [name for name in constraints if name not in schema.names]
        if unknown:
            schema.index(unknown[0])  # raises with the list of attributes
        lo, hi, nodes = [], [], []
        for attribute in schema:
            value = constraints.get(attribute.name)
            if isinstance(attribute, NominalAttribute):
                h = attribute.hierarchy
                label = h.root.label if value is None else value
                if not isinstance(label, (str, int)) or isinstance(label, bool):
                    raise SchemaError(
                        f"attribute {attribute.name!r} is nominal: constrain it with one node label, got {value!r}"
                    )
                if str(label) not in h:
                    raise SchemaError(
                        f"attribute {attribute.name!r} has no node called {str(label)!r}; "
                        "use a leaf or a group label of its hierarchy"
                    )
                node = h.index_of(str(label))
                first, stop = h.leaf_range(str(label))
                lo.append(first)
                hi.append(stop - 1)
                nodes.append(node)
                continue
            if value is None:
                first, last = 0, attribute.size - 1
            elif isinstance(value, (tuple, list)):
                if len(value) != 2:
                    raise SchemaError(f"attribute {attribute.name!r}: give an interval as (first, last), got {value!r}")
                first = 0 if value[0] is None else attribute.index_of(value[0])
                last = attribute.size - 1 if value[1] is None else attribute.index_of(value[1])
            else:
                first = last = attribute.index_of(value)
            if last < first:
                raise SchemaError(
                    f"attribute {attribute.name!r}: the interval {value!r} is empty (its end comes before its start)"
                )
            lo.append(first)
            hi.append(last)
            nodes.append(-1)
        return cls(schema, tuple(lo), tuple(hi), tuple(nodes))

    @classmethod
    def from_indices(cls, schema: Schema, bounds: Mapping[str, tuple[int, int] | int]) -> RangeQuery:
        """A query from axis indices: ``(first, last)`` inclusive for ordinal attributes,
        a node's level-order index for nominal ones.

        Parameters
        ----------
        schema : Schema
            The attributes.
        bounds : mapping of str to (int, int) or int
            ``{attribute name: (first, last)}`` (ordinal, ``0 <= first <= last < |A|``) or
            ``{attribute name: node}`` (nominal, ``0 <= node < n_nodes``); attributes left out are
            unconstrained. Names not in the schema are ignored.

        Returns
        -------
        RangeQuery

        Raises
        ------
        SchemaError
            An interval outside the attribute's indices, or a node number that does not exist.
        """
        lo, hi, nodes = [], [], []
        for attribute in schema:
            value = bounds.get(attribute.name)
            if isinstance(attribute, NominalAttribute):
                node = 0 if value is None else int(value)  # type: ignore[arg-type]
                if not 0 <= node < attribute.hierarchy.n_nodes:
                    raise SchemaError(f"attribute {attribute.name!r} has no node number {node}")
                lay = attribute.hierarchy.layout
                lo.append(int(lay.lo[node]))
                hi.append(int(lay.hi[node]) - 1)
                nodes.append(node)
                continue
            first, last = (0, attribute.size - 1) if value is None else value  # type: ignore[misc]
            if not 0 <= first <= last < attribute.size:
                raise SchemaError(
                    f"attribute {attribute.name!r}: interval ({first}, {last}) is not within 0..{attribute.size - 1}"
                )
            lo.append(int(first))
            hi.append(int(last))
            nodes.append(-1)
        return cls(schema, tuple(lo), tuple(hi), tuple(nodes))

    @property
    def cells(self) -> int:
        """Number of cells of M inside the box."""
        return int(np.prod([last - first + 1 for first, last in zip(self.lo, self.hi)]))

    @property
    def coverage(self) -> float:
        """Fraction of M's cells inside the box."""
        return self.cells / self.schema.size

    def describe(self) -> str:
        """A readable form such as ``age=20..30, job=Technical`` (``*`` if unconstrained).

        Returns
        -------
        str
            ``name=value``, ``name=first..last`` or ``name=group`` for each constrained attribute,
            joined by ", "; ``"*"`` for the whole of M.
        """
        parts = []
        for axis, attribute in enumerate(self.schema):
            if isinstance(attribute, NominalAttribute):
                if self.nodes[axis] != 0:
                    parts.append(f"{attribute.name}={attribute.hierarchy.labels[self.nodes[axis]]}")
            elif (self.lo[axis], self.hi[axis]) != (0, attribute.size - 1):
                a, b = attribute.labels[self.lo[axis]], attribute.labels[self.hi[axis]]
                parts.append(f"{attribute.name}={a}" if a == b else f"{attribute.name}={a}..{b}")
        return ", ".join(parts) or "*"


@dataclass(frozen=True)
class QueryBatch:
    """Many box queries as arrays of shape ``(n_queries, d)`` (see :class:`RangeQuery`).

    Attributes
    ----------
    lo, hi : numpy.ndarray
        int64, shape ``(n_queries, d)``: inclusive first and last index per axis.
    nodes : numpy.ndarray
        int64, shape ``(n_queries, d)``: level-order node of a nominal axis, -1 for an ordinal one.
    """

    lo: np.ndarray
    hi: np.ndarray
    nodes: np.ndarray

    def __len__(self) -> int:
        return len(self.lo)

    @classmethod
    def of(cls, queries: Sequence[RangeQuery]) -> QueryBatch:
        """The batch of ``queries``, in order.

        Parameters
        ----------
        queries : sequence of RangeQuery
            Queries on one schema (may be empty).

        Returns
        -------
        QueryBatch
        """
        return cls(
            np.array([q.lo for q in queries], dtype=np.int64).reshape(len(queries), -1),
            np.array([q.hi for q in queries], dtype=np.int64).reshape(len(queries), -1),
            np.array([q.nodes for q in queries], dtype=np.int64).reshape(len(queries), -1),
        )

    def cells(self) -> np.ndarray:
        """Number of M's cells inside each box.

        Returns
        -------
        numpy.ndarray
            int64, shape ``(n_queries,)``.
        """
        return np.prod(self.hi - self.lo + 1, axis=1)

    def coverage(self, shape: tuple[int, ...]) -> np.ndarray:
        """Fraction of M's cells inside each box (equal boxes get exactly equal values).

        Parameters
        ----------
        shape : tuple of int
            The shape of M.

        Returns
        -------
        numpy.ndarray
            float64 in (0, 1], shape ``(n_queries,)``.
        """
        return self.cells() / float(np.prod(shape, dtype=np.float64))

    def query(self, schema: Schema, i: int) -> RangeQuery:
        """Query ``i`` of the batch as a :class:`RangeQuery`.

        Parameters
        ----------
        schema : Schema
            The schema the batch is on.
        i : int
            The query's position, ``0 <= i < len(batch)``.

        Returns
        -------
        RangeQuery
        """
        return RangeQuery(schema, tuple(map(int, self.lo[i])), tuple(map(int, self.hi[i])), tuple(map(int, self.nodes[i])))


class PrefixSums:
    """A d-dimensional summed-area table of M: any box sum in 2^d look-ups.

    Memory: one float64 per cell of M (plus one layer per axis).

    Parameters
    ----------
    matrix : numpy.ndarray
        M (any numeric dtype, converted to float64), at least one axis.

    Examples
    --------
    >>> m = np.arange(12.0).reshape(3, 4)
    >>> PrefixSums(m).box_sum((1, 1), (2, 2))
    30.0
    """

    def __init__(self, matrix: np.ndarray):
        matrix = np.asarray(matrix, dtype=np.float64)
        table = np.zeros(tuple(n + 1 for n in matrix.shape))
        table[tuple(slice(1, None) for _ in matrix.shape)] = matrix
        for axis in range(matrix.ndim):
            np.cumsum(table, axis=axis, out=table)
        self.table = table
        self.shape = matrix.shape

    def box_sum(self, lo: Sequence[int], hi: Sequence[int]) -> float:
        """Sum of M over the inclusive box ``lo..hi``.

        Parameters
        ----------
        lo, hi : sequence of int
            Inclusive first and last index per axis.

        Returns
        -------
        float
        """
        return float(self.answer(np.asarray([lo]), np.asarray([hi]))[0])

    def answer(self, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
        """Box sums for arrays of inclusive bounds of shape ``(n_queries, d)``.

        Parameters
        ----------
        lo, hi : numpy.ndarray
            Integer arrays of shape ``(n_queries, d)``.

        Returns
        -------
        numpy.ndarray
            float64, shape ``(n_queries,)``.
        """
        lo = np.asarray(lo, dtype=np.int64)
        hi = np.asarray(hi, dtype=np.int64)
        d = lo.shape[1]
        total = np.zeros(len(lo))
        for corner in itertools.product((0, 1), repeat=d):
            # corner bit 1: take hi + 1 (upper face); 0: take lo (lower face, sign flips)
            index = tuple(np.where(bit, hi[:, axis] + 1, lo[:, axis]) for axis, bit in enumerate(corner))
            sign = -1.0 if (d - sum(corner)) % 2 else 1.0
            total += sign * self.table[index]
        return total

    def answer_batch(self, batch: QueryBatch) -> np.ndarray:
        """The box sum of each query of ``batch``.

        Parameters
        ----------
        batch : QueryBatch
            Queries on M's shape.

        Returns
        -------
        numpy.ndarray
            float64, shape ``(len(batch),)``.
        """
        return self.answer(batch.lo, batch.hi)


def random_workload(schema: Schema, n: int, rng: np.random.Generator) -> QueryBatch:
    """The paper's random workload (docs/math.md, "The paper's evaluation").

    Each query has a uniform number of predicates in ``[1, min(4, d)]`` on distinct
    random attributes; an ordinal predicate is an interval between two uniform
    random values, a nominal predicate a uniform random non-root node. Coverage is
    :meth:`QueryBatch.coverage`.

    Parameters
    ----------
    schema : Schema
        The attributes.
    n : int
        Number of queries (non-negative).
    rng : numpy.random.Generator
        The source of randomness (seed it for a reproducible workload).

    Returns
    -------
    QueryBatch
        ``n`` queries.
    """
    d = len(schema)
    predicates = rng.integers(1, min(4, d) + 1, size=n)
    # A random rank per attribute; the lowest `predicates` ranks are constrained.
    rank = np.argsort(np.argsort(rng.random((n, d)), axis=1), axis=1)
    chosen = rank < predicates[:, None]
    lo = np.zeros((n, d), dtype=np.int64)
    hi = np.zeros((n, d), dtype=np.int64)
    nodes = np.full((n, d), -1, dtype=np.int64)
    for axis, attribute in enumerate(schema):
        if isinstance(attribute, NominalAttribute):
            lay = attribute.hierarchy.layout
            n_nodes = attribute.hierarchy.n_nodes
            picked = rng.integers(1, n_nodes, size=n) if n_nodes > 1 else np.zeros(n, dtype=np.int64)
            node = np.where(chosen[:, axis], picked, 0)
            nodes[:, axis] = node
            lo[:, axis] = lay.lo[node]
            hi[:, axis] = lay.hi[node] - 1
        else:
            ends = rng.integers(0, attribute.size, size=(n, 2))
            ends.sort(axis=1)
            lo[:, axis] = np.where(chosen[:, axis], ends[:, 0], 0)
            hi[:, axis] = np.where(chosen[:, axis], ends[:, 1], attribute.size - 1)
    return QueryBatch(lo, hi, nodes)


def square_error(noisy: np.ndarray, actual: np.ndarray) -> np.ndarray:
    """``(x - act)^2`` per query.

    Parameters
    ----------
    noisy, actual : numpy.ndarray
        Noisy and true answers, one per query (broadcastable).

    Returns
    -------
    numpy.ndarray
        In squared counts.
    """
    return (np.asarray(noisy) - np.asarray(actual)) ** 2


def sanity_bound(n: float) -> float:
    """The paper's sanity bound s: 0.1% of the number of tuples.

    Parameters
    ----------
    n : float
        Number of tuples of the table.

    Returns
    -------
    float
        ``0.001 * n``.
    """
    return 0.001 * n


def relative_error(noisy: np.ndarray, actual: np.ndarray, sanity: float) -> np.ndarray:
    """``|x - act| / max(act, s)`` per query.

    Parameters
    ----------
    noisy, actual : numpy.ndarray
        Noisy and true answers, one per query (broadcastable).
    sanity : float
        The sanity bound s (:func:`sanity_bound`), positive.

    Returns
    -------
    numpy.ndarray
        float64, dimensionless.
    """
    actual = np.asarray(actual, dtype=np.float64)
    return np.abs(np.asarray(noisy) - actual) / np.maximum(actual, sanity)
