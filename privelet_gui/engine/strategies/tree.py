"""Hierarchies of counts with least squares (docs/math.md, "Hierarchies with least squares").

A tree strategy measures the count of every node of a tree over the axis (each node a run of
contiguous values; a leaf one value), each level ``l`` with a positive integer weight ``w_l``,
and reconstructs the values by least squares, which makes the noisy counts of the levels
consistent. On an ordinal axis the tree splits the values into ``b`` nearly equal runs, level
after level (Hay et al. 2010, with branching chosen per axis); on a nominal axis it is the
attribute's own hierarchy, so that its groups are measured directly.

A level of weight 0 is not measured (its nodes are estimated from their children); the leaves
always are, so that the counts are identifiable.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from fractions import Fraction
from functools import cached_property

import numpy as np

from ..errors import SchemaError
from ..kernels import transforms
from ..model.hierarchy import Hierarchy
from .base import AxisStrategy, is_last_axis

__all__ = ["TreeStrategy"]

#: Columns of the reconstruction matrix built at once (bounds the memory of the exact variances).
_COLUMNS_AT_ONCE = 512


class TreeStrategy(AxisStrategy):
    """Counts of a tree's nodes, weighted by level, reconstructed by least squares.

    Build one with :meth:`branching` (an ordinal axis) or :meth:`of_hierarchy` (a nominal one).

    Examples
    --------
    >>> t = TreeStrategy.branching(8, 2)
    >>> t.n_measurements, t.rho, t.influence
    (15, Fraction(4, 1), 4)
    >>> z = np.empty((1, 15, 1), dtype=np.int64)
    >>> t.forward(np.arange(8).reshape(1, 8, 1), z)
    >>> z.ravel()[:3].tolist()  # the total, then the two halves
    [28, 6, 22]
    """

    kind = "tree"

    def __init__(self, low: np.ndarray, high: np.ndarray, parent: np.ndarray, depth: np.ndarray,
                 level_weights: Sequence[int], name: str):
        """A tree given by its nodes in level order (children contiguous, in their parents'
        order): half-open runs ``low..high`` of the axis, ``parent`` (-1 for the root) and
        ``depth`` (0 for the root); level ``l``'s nodes are weighted ``level_weights[l]``.

        Parameters
        ----------
        low, high : numpy.ndarray
            int64, one per node: the half-open run of values each node counts (the root's is ``0..size``).
        parent : numpy.ndarray
            int64, one per node: its parent's index (-1 for the root).
        depth : numpy.ndarray
            int64, one per node: 0 for the root.
        level_weights : sequence of int
            One weight (0 or more) per level; every level holding a leaf needs a positive one.
        name : str
            The strategy's name (``"tree-4"``, ``"hierarchy"``).

        Raises
        ------
        SchemaError
            Not one weight per level, a negative weight, or a leaf on a level of weight 0.
        """
        self.name = name
        self.size = int(high[0] - low[0])
        weights = [int(w) for w in level_weights]
        levels = int(depth.max()) + 1
        if len(weights) != levels or any(w < 0 for w in weights):
            raise SchemaError(f"a tree of {levels} levels needs {levels} weights of 0 or more, got {list(level_weights)}")
        self.level_weights = tuple(weights)
        self._low, self._high, self._parent, self._depth = low, high, parent, depth
        n = len(low)
        self._fanout = np.bincount(parent[1:], minlength=n).astype(np.int64)
        self._first_child = np.full(n, -1, dtype=np.int64)
        children = np.arange(1, n)
        self._first_child[parent[children][::-1]] = children[::-1]
        node_weight = np.asarray(weights, dtype=np.int64)[depth]
        leaves = self._fanout == 0
        if (node_weight[leaves] == 0).any():
            raise SchemaError("a tree strategy must measure its leaves: give every level holding a leaf a positive weight")
        self._measured = np.flatnonzero(node_weight > 0)
        self._row = np.full(n, -1, dtype=np.int64)
        self._row[self._measured] = np.arange(len(self._measured))
        self._node_weight = node_weight
        self.n_measurements = len(self._measured)

    @classmethod
    def branching(cls, size: int, branching: int, level_weights: Sequence[int] | None = None) -> TreeStrategy:
        """The tree over ``size`` ordered values that splits every run into ``branching`` nearly
        equal runs (the first ones a value longer), down to single values.

        Parameters
        ----------
        size : int
            Number of values of the axis (at least 1).
        branching : int
            Runs per split, at least 2.
        level_weights : sequence of int, optional
            One weight per level (default: 1 for every level).

        Returns
        -------
        TreeStrategy
            Named ``"tree-<branching>"``.

        Raises
        ------
        SchemaError
            ``branching`` below 2, or weights refused by the constructor.
        """
        if branching < 2:
            raise SchemaError(f"a tree's branching is 2 or more, got {branching}")
        low, high, parent, depth = [0], [size], [-1], [0]
        node = 0
        while node < len(low):
            lo, hi = low[node], high[node]
            if hi - lo > 1:
                parts = min(branching, hi - lo)
                edges = lo + np.cumsum([0] + [(hi - lo) // parts + (k < (hi - lo) % parts) for k in range(parts)])
                for start, stop in itertools.pairwise(edges):
                    low.append(int(start))
                    high.append(int(stop))
                    parent.append(node)
                    depth.append(depth[node] + 1)
            node += 1
        low_, high_, parent_, depth_ = (np.array(v, dtype=np.int64) for v in (low, high, parent, depth))
        levels = max(depth) + 1
        return cls(low_, high_, parent_, depth_, level_weights or [1] * levels, name=f"tree-{branching}")

    @classmethod
    def of_hierarchy(cls, hierarchy: Hierarchy, level_weights: Sequence[int] | None = None) -> TreeStrategy:
        """The tree of ``hierarchy``'s nodes (a node with one child is the same run of values as
        that child: only the topmost of such a chain is kept). Level l is the hierarchy's depth
        l + 1 of the kept node.

        Parameters
        ----------
        hierarchy : Hierarchy
            A nominal attribute's hierarchy.
        level_weights : sequence of int, optional
            One weight per level of the kept tree (default: 1 for every level).

        Returns
        -------
        TreeStrategy
            Named ``"hierarchy"``.

        Raises
        ------
        SchemaError
            Weights refused by the constructor.
        """
        lay = hierarchy.layout
        kept = lay.parent_fanout > 1
        kept[0] = True
        nearest = np.arange(hierarchy.n_nodes)
        for i in range(1, hierarchy.n_nodes):  # parents precede children
            nearest[i] = i if kept[i] else nearest[lay.parent[i]]
        order = [0]  # breadth first over the kept nodes: children contiguous
        parent = [-1]
        for position in range(hierarchy.n_nodes):
            if position >= len(order):
                break
            node = order[position]
            stack = list(range(lay.first_child[node], lay.first_child[node] + lay.fanout[node])) if lay.fanout[node] else []
            while stack:  # skip the chains below a node down to the next kept nodes
                child = stack.pop(0)
                if kept[child]:
                    order.append(child)
                    parent.append(position)
                elif lay.fanout[child]:
                    stack[:0] = list(range(lay.first_child[child], lay.first_child[child] + lay.fanout[child]))
        nodes = np.array(order, dtype=np.int64)
        depth = lay.depth[nodes].astype(np.int64) - 1
        levels = int(depth.max()) + 1
        return cls(lay.lo[nodes].astype(np.int64), lay.hi[nodes].astype(np.int64), np.array(parent, dtype=np.int64),
                   depth, level_weights or [1] * levels, name="hierarchy")

    # -- the measurements -----------------------------------------------------------------------
    @cached_property
    def denominators(self) -> np.ndarray:
        return np.ones(self.n_measurements, dtype=np.int64)

    @cached_property
    def weights(self) -> np.ndarray:
        return self._node_weight[self._measured].astype(np.float64)

    @cached_property
    def _path_sums(self) -> tuple[np.ndarray, np.ndarray]:
        """Per node, the weights and the number of measured nodes on its path from the root."""
        weight = np.zeros(len(self._low), dtype=np.int64)
        count = np.zeros(len(self._low), dtype=np.int64)
        for v in range(len(self._low)):
            above = self._parent[v]
            weight[v] = self._node_weight[v] + (weight[above] if above >= 0 else 0)
            count[v] = (self._node_weight[v] > 0) + (count[above] if above >= 0 else 0)
        return weight, count

    @property
    def rho(self) -> Fraction:
        """The heaviest leaf's path: a value is counted once per level, with its weight."""
        return Fraction(int(self._path_sums[0][self._fanout == 0].max()))

    @property
    def influence(self) -> int:
        return int(self._path_sums[1][self._fanout == 0].max())

    @property
    def growth(self) -> int:
        return int(self._node_weight.max())

    @cached_property
    def _forward_tables(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        measured = self._measured
        return self._low[measured], self._high[measured], self._node_weight[measured]

    def forward(self, x: np.ndarray, out: np.ndarray) -> None:
        if is_last_axis(x, out):
            transforms.tree_rows_forward(x[:, :, 0], out[:, :, 0], *self._forward_tables)
        else:
            transforms.tree_forward(x, out, *self._forward_tables)

    @cached_property
    def _reconstruct_tables(self) -> tuple[np.ndarray, ...]:
        """The data-free factors of the two passes (docs/math.md, "Hierarchies with least squares"):
        each node's measurement variance ``1 / w^2``, its estimate's variance ``s`` and its
        children's sum's ``S``."""
        n = len(self._low)
        measured = self._node_weight > 0
        own_variance = np.full(n, np.inf)
        own_variance[measured] = 1.0 / self._node_weight[measured].astype(np.float64) ** 2
        s = np.empty(n)
        children = np.zeros(n)
        own = np.zeros(n)
        share = np.zeros(n)
        for v in range(n - 1, -1, -1):
            if self._fanout[v] == 0:
                s[v] = own_variance[v]
                own[v] = 1.0 / self._node_weight[v]  # y / w: the count itself
                continue
            first = self._first_child[v]
            children[v] = s[first:first + self._fanout[v]].sum()
            if measured[v]:
                a = children[v] / (children[v] + own_variance[v])
                own[v] = a / self._node_weight[v]
                share[v] = 1.0 - a
                s[v] = own_variance[v] * children[v] / (own_variance[v] + children[v])
            else:
                s[v] = children[v]
        spread = np.zeros(n)
        spread[1:] = s[1:] / children[self._parent[1:]]
        position = np.where(self._fanout == 0, self._low, -1)
        return self._row, own, share, spread, self._first_child, self._fanout, position

    def reconstruct(self, y: np.ndarray, out: np.ndarray) -> None:
        if is_last_axis(y, out):
            transforms.tree_rows_reconstruct(y[:, :, 0], out[:, :, 0], *self._reconstruct_tables)
        else:
            transforms.tree_reconstruct(y, out, *self._reconstruct_tables)

    def reconstruction_matrix(self) -> np.ndarray:
        """R, built a block of columns at a time (the kernel holds two values per node and column).

        Returns
        -------
        numpy.ndarray
            float64, shape ``(size, n_measurements)``.
        """
        r = self.n_measurements
        out = np.empty((self.size, r))
        for start in range(0, r, _COLUMNS_AT_ONCE):
            stop = min(start + _COLUMNS_AT_ONCE, r)
            units = np.zeros((1, r, stop - start))
            units[0, np.arange(start, stop), np.arange(stop - start)] = 1.0
            values = np.empty((1, self.size, stop - start))
            self.reconstruct(units, values)
            out[:, start:stop] = values[0]
        return out

    # -- accuracy: from the prefix sums of R's rows, O(measurements) per interval ----------------
    @cached_property
    def _value_prefix(self) -> np.ndarray:
        """``P[i] = sum of R's first i rows``: an interval ``lo..hi`` is answered by ``(P[hi + 1] - P[lo]) y``."""
        prefix = np.zeros((self.size + 1, self.n_measurements))
        np.cumsum(self.reconstruction_matrix(), axis=0, out=prefix[1:])
        return prefix

    def _interval_rows(self, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
        prefix = self._value_prefix
        return prefix[np.asarray(hi, dtype=np.int64) + 1] - prefix[np.asarray(lo, dtype=np.int64)]

    def interval_variances(self, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
        lo, hi = np.ravel(lo), np.ravel(hi)
        out = np.empty(len(lo))
        step = max(1, (1 << 22) // max(self.n_measurements, 1))
        for start in range(0, len(lo), step):
            rows = self._interval_rows(lo[start:start + step], hi[start:start + step])
            out[start:start + step] = np.einsum("ij,ij->i", rows, rows)
        return out

    def interval_total_covariances(self, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
        lo, hi = np.ravel(lo), np.ravel(hi)
        total = self._value_prefix[-1]
        out = np.empty(len(lo))
        step = max(1, (1 << 22) // max(self.n_measurements, 1))
        for start in range(0, len(lo), step):
            out[start:start + step] = self._interval_rows(lo[start:start + step], hi[start:start + step]) @ total
        return out

    def total_variance(self) -> float:
        total = self._value_prefix[-1]
        return float(total @ total)

    def worst_interval_variance(self) -> float:
        """Over every interval ``lo..hi``: ``|P[hi + 1] - P[lo]|^2`` from the Gram matrix of the prefixes.

        Returns
        -------
        float
            Per unit of noise variance on a weighted measurement.
        """
        prefix = self._value_prefix
        gram = prefix @ prefix.T
        square = np.diag(gram).copy()
        worst = 0.0
        for end in range(1, self.size + 1):
            worst = max(worst, float((square[end] + square[:end] - 2.0 * gram[end, :end]).max()))
        return worst

    def __repr__(self) -> str:
        return f"TreeStrategy({self.name!r}, size={self.size}, level_weights={list(self.level_weights)})"
