"""The nominal wavelet strategy for attributes with a hierarchy (docs/math.md, "The nominal wavelet").

One measurement per node of the hierarchy in level order, except the nodes that are their
parent's only child (their coefficient is zero for every input): the root's leaf-sum (weight 1),
and for a node N whose parent has f > 1 children the weighted coefficient
``W c_N = (f leafsum(N) - leafsum(parent)) / (2f - 2)`` (``c_N = leafsum(N) - leafsum(parent) / f``,
``W = f / (2f - 2)``). The reconstruction subtracts each sibling group's mean first.
"""

from __future__ import annotations

from fractions import Fraction
from functools import cached_property

import numpy as np

from ..kernels import transforms
from ..model.hierarchy import Hierarchy
from .base import AxisStrategy

__all__ = ["NominalTransform"]


class NominalTransform(AxisStrategy):
    """Nominal wavelet along an axis whose values are ``hierarchy.leaves``.

    Parameters
    ----------
    hierarchy : Hierarchy
        The attribute's hierarchy; its leaves are the axis' values, in order.

    Examples
    --------
    The paper's Figure 3 (root -> {a, b}, a -> {v1, v2, v3}, b -> {v4, v5, v6}):

    >>> h = Hierarchy.from_nested({"root": {"a": ["v1", "v2", "v3"], "b": ["v4", "v5", "v6"]}})
    >>> t = NominalTransform(h)
    >>> t.weights.tolist()
    [1.0, 1.0, 1.0, 0.75, 0.75, 0.75, 0.75, 0.75, 0.75]
    >>> z = np.empty((1, 9, 1), dtype=np.int64)
    >>> t.forward(np.arange(1, 7).reshape(1, 6, 1), z)
    >>> (z.ravel() / t.denominators / t.weights).tolist()  # the coefficients c
    [21.0, -4.5, 4.5, -1.0, 0.0, 1.0, -1.0, 0.0, 1.0]
    """

    kind = "nominal"

    def __init__(self, hierarchy: Hierarchy):
        self.hierarchy = hierarchy
        self.size = hierarchy.size
        lay = hierarchy.layout
        parent_fanout = lay.parent_fanout
        measured = parent_fanout > 1
        measured[0] = True
        self.nodes = np.flatnonzero(measured)  # the node of each measurement row, level order
        self.n_measurements = len(self.nodes)
        self._node_row = np.full(hierarchy.n_nodes, -1, dtype=np.int64)
        self._node_row[self.nodes] = np.arange(self.n_measurements)
        self._fanout_of_parent = parent_fanout[self.nodes].astype(np.int64)
        self._fanout_of_parent[0] = 0  # the root: its own leaf-sum

    @cached_property
    def denominators(self) -> np.ndarray:
        f = self._fanout_of_parent
        return np.where(f > 1, 2 * f - 2, 1).astype(np.int64)

    @cached_property
    def weights(self) -> np.ndarray:
        f = self._fanout_of_parent.astype(np.float64)
        w = np.ones(self.n_measurements)
        w[1:] = f[1:] / (2 * f[1:] - 2)
        return w

    @property
    def rho(self) -> Fraction:
        return Fraction(self.hierarchy.rho)

    @cached_property
    def influence(self) -> int:
        lay = self.hierarchy.layout
        touched = np.zeros(self.hierarchy.n_nodes, dtype=np.int64)
        touched[0] = 1
        for i in range(1, self.hierarchy.n_nodes):  # parents precede children
            f = lay.fanout[lay.parent[i]]
            touched[i] = touched[lay.parent[i]] + (f if f > 1 else 0)
        return int(touched[lay.leaf_nodes].max())

    @property
    def growth(self) -> int:
        """``f leafsum(N) - leafsum(parent)`` has entries ``f - 1`` and ``-1``; the root's are 1."""
        return max(1, int(self.hierarchy.layout.fanout.max()) - 1)

    @cached_property
    def _tables(self) -> tuple[np.ndarray, ...]:
        """The tree as both kernels walk it (:func:`~privelet_gui.engine.kernels.transforms.nominal_forward`)."""
        lay = self.hierarchy.layout
        internal = np.flatnonzero(lay.fanout > 0).astype(np.int64)
        slot = -1 - lay.lo.astype(np.int64)  # a leaf: its position in the output
        slot[internal] = np.arange(len(internal))
        return (internal, lay.first_child.astype(np.int64), lay.fanout.astype(np.int64), self._node_row, slot)

    def forward(self, x: np.ndarray, out: np.ndarray) -> None:
        transforms.nominal_forward(x, out, *self._tables)

    def reconstruct(self, y: np.ndarray, out: np.ndarray) -> None:
        transforms.nominal_reconstruct(y, out, *self._tables)

    # -- accuracy: the predicates of a nominal axis are its nodes ------------------------------
    @cached_property
    def node_variances(self) -> np.ndarray:
        """``V`` of the query "this node" for every node, in level order: mean subtraction leaves
        ``(1 / W^2)(1 - 1/f)`` on each coefficient of a sibling group of f, and
        ``leafsum(N) = c_N + leafsum(parent) / f`` adds the parent's variance over ``f^2``."""
        lay = self.hierarchy.layout
        f = lay.parent_fanout.astype(np.float64)
        own = np.zeros(self.hierarchy.n_nodes)
        branching = f > 1
        own[branching] = ((2 * f[branching] - 2) / f[branching]) ** 2 * (1.0 - 1.0 / f[branching])
        v = np.empty(self.hierarchy.n_nodes)
        v[0] = 1.0
        for d in range(2, len(lay.depth_starts)):  # a level's parents are all one level up
            block = slice(lay.depth_starts[d - 1], lay.depth_starts[d])
            v[block] = own[block] + v[lay.parent[block]] / f[block] ** 2
        return v

    @cached_property
    def node_total_covariances(self) -> np.ndarray:
        """``C`` of every node: the total is the root's measurement alone, and a node's leaf-sum
        takes ``1 / f`` of its parent's, so ``C(node) = prod 1 / f`` along its path."""
        lay = self.hierarchy.layout
        fanout = lay.parent_fanout.astype(np.float64)
        covariance = np.ones(self.hierarchy.n_nodes)
        for depth in range(2, len(lay.depth_starts)):
            block = slice(lay.depth_starts[depth - 1], lay.depth_starts[depth])
            covariance[block] = covariance[lay.parent[block]] / fanout[block]
        return covariance

    @cached_property
    def _node_of_range(self) -> dict[tuple[int, int], int]:
        lay = self.hierarchy.layout
        return {(int(a), int(b)): node for node, (a, b) in reversed(list(enumerate(zip(lay.lo, lay.hi))))}

    def _nodes(self, lo: np.ndarray, hi: np.ndarray) -> np.ndarray | None:
        """The node of each interval ``lo..hi`` (inclusive), or None if one is not a node."""
        ranges = self._node_of_range
        nodes = [ranges.get((int(a), int(b) + 1), -1) for a, b in zip(np.ravel(lo), np.ravel(hi))]
        found = np.array(nodes, dtype=np.int64).reshape(np.shape(lo))
        return None if (found < 0).any() else found

    def interval_variances(self, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
        nodes = self._nodes(lo, hi)
        return super().interval_variances(lo, hi) if nodes is None else self.node_variances[nodes]

    def interval_total_covariances(self, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
        nodes = self._nodes(lo, hi)
        return super().interval_total_covariances(lo, hi) if nodes is None else self.node_total_covariances[nodes]

    def predicate_variances(self, lo: np.ndarray, hi: np.ndarray, nodes: np.ndarray) -> np.ndarray:
        nodes = np.asarray(nodes, dtype=np.int64)
        return self.node_variances[nodes] if (nodes >= 0).all() else self.interval_variances(lo, hi)

    def predicate_total_covariances(self, lo: np.ndarray, hi: np.ndarray, nodes: np.ndarray) -> np.ndarray:
        nodes = np.asarray(nodes, dtype=np.int64)
        return self.node_total_covariances[nodes] if (nodes >= 0).all() else self.interval_total_covariances(lo, hi)

    def total_variance(self) -> float:
        return 1.0
