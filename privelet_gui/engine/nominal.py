"""The nominal wavelet transform along one axis, for attributes with a hierarchy.

There is one coefficient per node of the hierarchy, in level order (the
hierarchy's :attr:`~Hierarchy.labels` order): the root's coefficient is the sum
of all counts (weight 1); any other node N whose parent has fan-out f gets
``c_N = leafsum(N) - leafsum(parent) / f`` with weight ``f / (2f - 2)``. A
node that is its parent's only child has ``c_N = 0`` for every input: it gets
weight ``inf`` (no noise) and adds nothing to rho.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from . import _compiled
from .haar import HaarTransform, loop_table
from .model.hierarchy import Hierarchy
from .transform import AxisTransform, along, back, deliver, outer

__all__ = ["NominalTransform", "nominal_forward", "nominal_inverse", "nominal_weights"]


@dataclass(frozen=True)
class _Depth:
    block: slice  # the nodes at this depth (level order)
    parents: slice | np.ndarray  # the internal nodes one level up, in order
    fanouts: np.ndarray  # children per parent
    offsets: np.ndarray  # start of each parent's children within the block
    child_fanout: np.ndarray  # for each node of the block, its parent's fan-out
    groups: tuple[tuple[int, int, int], ...]  # (parent node, first child in block, fan-out)

    def loop_groups(self, cells_per_row: int) -> bool:
        """Whether to visit the sibling groups one by one (cache-friendly, no np.repeat):
        when groups are big enough to pay for the per-call overhead."""
        rows = self.block.stop - self.block.start
        return rows * cells_per_row >= len(self.groups) * _GROUP_LOOP_CELLS


# Average cells per sibling group from which a loop over the groups beats np.repeat.
_GROUP_LOOP_CELLS = 4096
# The compiled loops' "no divisors" and "no factors".
_NONE = np.empty(0)


def _as_slice(indices: np.ndarray) -> slice | np.ndarray:
    """A slice when the indices are consecutive (cheaper to index with), else the indices."""
    if len(indices) and np.array_equal(indices, np.arange(indices[0], indices[0] + len(indices))):
        return slice(int(indices[0]), int(indices[0]) + len(indices))
    return indices


class NominalTransform(AxisTransform):
    """Nominal wavelet along one axis whose entries are ``hierarchy.leaves``.

    Examples
    --------
    The paper's Figure 3 (root -> {a, b}, a -> {v1, v2, v3}, b -> {v4, v5, v6}):

    >>> h = Hierarchy.from_nested({"root": {"a": ["v1", "v2", "v3"], "b": ["v4", "v5", "v6"]}})
    >>> t = NominalTransform(h)
    >>> t.weights.tolist()
    [1.0, 1.0, 1.0, 0.75, 0.75, 0.75, 0.75, 0.75, 0.75]
    >>> t.forward(np.array([1., 2, 3, 4, 5, 6])).tolist()
    [21.0, -4.5, 4.5, -1.0, 0.0, 1.0, -1.0, 0.0, 1.0]
    """

    kind = "nominal"

    def __init__(self, hierarchy: Hierarchy):
        self.hierarchy = hierarchy
        self.size = hierarchy.size
        self.n_coefficients = hierarchy.n_nodes
        lay = hierarchy.layout
        self._layout = lay
        self._parent_fanout = lay.parent_fanout.astype(np.float64)
        self._leaves = _as_slice(lay.leaf_nodes)
        # Per depth d >= 2: the block of nodes at depth d, which is exactly the children of
        # the internal nodes at depth d - 1, in order (level order); each sibling group is
        # one parent's consecutive run in the block.
        self._depths: list[_Depth] = []
        starts = lay.depth_starts
        for d in range(2, len(starts)):
            above = np.arange(starts[d - 2], starts[d - 1])
            parents = above[lay.fanout[above] > 0]
            offsets = lay.first_child[parents] - starts[d - 1]
            self._depths.append(
                _Depth(
                    block=slice(int(starts[d - 1]), int(starts[d])),
                    parents=_as_slice(parents),
                    fanouts=lay.fanout[parents],
                    offsets=offsets,
                    child_fanout=self._parent_fanout[starts[d - 1] : starts[d]],
                    groups=tuple(zip(parents.tolist(), offsets.tolist(), lay.fanout[parents].tolist())),
                )
            )
        # Usually every leaf sits at the deepest level: the input is then that level's
        # leaf-sums as it is, and need not be copied into place first.
        self._leaves_fill_deepest = (
            bool(self._depths) and isinstance(self._leaves, slice) and self._leaves == self._depths[-1].block
        )

    @property
    def rho(self) -> int:
        return self.hierarchy.rho

    @cached_property
    def influence(self) -> int:
        lay = self._layout
        touched = np.zeros(self.n_coefficients, dtype=np.int64)
        touched[0] = 1
        for i in range(1, self.n_coefficients):  # parents precede children
            f = lay.fanout[lay.parent[i]]
            touched[i] = touched[lay.parent[i]] + (f if f > 1 else 0)
        return int(touched[lay.leaf_nodes].max())

    @cached_property
    def weights(self) -> np.ndarray:
        f = self._parent_fanout
        w = np.full(self.n_coefficients, np.inf)
        branching = f > 1
        w[branching] = f[branching] / (2 * f[branching] - 2)
        w[0] = 1.0
        return w

    @property
    def divisors(self) -> np.ndarray:
        return self._parent_fanout

    @cached_property
    def denominators(self) -> np.ndarray:
        f = self._parent_fanout
        d = np.where(f > 1, 2 * f - 2, 1.0)
        d[0] = 1.0
        return d

    @property
    def growth(self) -> float:
        # f * leafsum(N) is the largest intermediate: at most (largest fan-out) * L1 of the input.
        return float(max(1, int(self._layout.fanout.max())))

    def numerators(self, x: np.ndarray, axis: int = -1) -> np.ndarray:
        """``z_N = f * leafsum(N) - leafsum(parent)`` (root: its leaf-sum); exact for integer input."""
        x = outer(x, axis)
        sums = np.empty((self.n_coefficients, *x.shape[1:]))
        deepest = self._depths[-1] if self._leaves_fill_deepest else None
        if deepest is None:
            sums[self._leaves] = x

        def leafsums(depth: _Depth) -> np.ndarray:
            return x if depth is deepest else sums[depth.block]

        row_cells = math.prod(x.shape[1:])
        for depth in reversed(self._depths):  # leaf-sums bottom-up
            children = leafsums(depth)
            if depth.loop_groups(row_cells):  # np.add.reduce per group: 4x faster than reduceat
                for parent, start, fanout in depth.groups:
                    np.add.reduce(children[start : start + fanout], axis=0, out=sums[parent])
            else:
                sums[depth.parents] = np.add.reduceat(children, depth.offsets, axis=0)
        for depth in reversed(self._depths):  # deepest first: parents are still leaf-sums
            children, block = leafsums(depth), sums[depth.block]
            if depth.loop_groups(row_cells):
                for parent, start, fanout in depth.groups:
                    rows = slice(start, start + fanout)
                    np.multiply(children[rows], fanout, out=block[rows])
                    block[rows] -= sums[parent]
            else:
                np.multiply(children, along(depth.child_fanout, 0, block.ndim), out=block)
                block -= np.repeat(sums[depth.parents], depth.fanouts, axis=0)
        return back(sums, axis)

    def count_numerators(self, x: np.ndarray, axis: int = -1) -> np.ndarray:
        """:meth:`numerators` of checked counts, by the compiled loop where numba is installed
        (one pass for the leaf-sums, one for the numerators, releasing the GIL, reading ``x``
        in its own C order without a transposing copy): exact integers, the same bits as
        numpy's passes, in numpy's layout (``axis`` first in memory)."""
        loops = _compiled.block_loops()
        if loops is None:
            return self.numerators(x, axis)
        out, _ = self._compiled_numerators(loops, x, axis, _NONE, _NONE, _compiled.limit_bits(None))
        return out

    def count_units(self, x: np.ndarray, axis: int, divisors_rows: np.ndarray, divisors_columns: np.ndarray,
                    limit: float | None) -> np.ndarray | None:
        """:meth:`count_numerators` in a release's grid units, where numba is installed: each
        divided by its row's divisor times its column's and rounded to the nearest integer
        (ties to even) in the compiled loop, as each outer position's numerators are formed
        (the same bits as dividing them afterwards). The rows are the result's in memory
        (coefficient, then the positions before ``axis``: ``divisors_rows``), the columns the
        positions after it (``divisors_columns``). None without numba, or where a numerator's
        magnitude is not below ``limit`` (None: none is)."""
        loops = _compiled.block_loops()
        if loops is None:
            return None
        out, divided = self._compiled_numerators(loops, x, axis, divisors_rows, divisors_columns,
                                                 _compiled.limit_bits(limit))
        return out if divided else None

    def _compiled_numerators(self, loops: _compiled.BlockLoops, x: np.ndarray, axis: int, divisors_rows: np.ndarray,
                             divisors_columns: np.ndarray, limit_bits: np.uint64) -> tuple[np.ndarray, bool]:
        x = np.ascontiguousarray(x, dtype=np.float64)
        axis %= x.ndim
        others = (*x.shape[:axis], *x.shape[axis + 1 :])
        out = np.empty((self.n_coefficients, *others))
        before, after = math.prod(x.shape[:axis]), math.prod(x.shape[axis + 1 :])
        divided = loops.nominal_numerators(x.reshape(before, self.size, after),
                                           out.reshape(self.n_coefficients, before, after), *self.tree_arrays,
                                           divisors_rows, divisors_columns, limit_bits)
        return back(out, axis), bool(divided)

    def checked_leaf_sums(self, lines: np.ndarray, padded: int) -> tuple[np.ndarray, float] | None:
        """The first half of :meth:`rows_numerators`, where the compiled loops run (numba
        installed, a hierarchy of two nodes or more): the leaf-sums of the internal nodes of
        ``lines`` (outer positions, leaves, a line of counts each: C-contiguous float64), their
        lines zero-padded to ``padded``; and the counts' checked total from the same read (-1.0
        if one is negative, fractional or NaN). None elsewhere."""
        loops = _compiled.block_loops()
        if loops is None or self.n_coefficients < 2:
            return None
        _, fanout, first_child, leaf_row = self.tree_arrays
        internal_row = self._internal_rows
        sums = np.empty((int(internal_row.max()) + 1, lines.shape[0], padded))
        return sums, loops.nominal_leaf_sums(lines, sums, fanout, first_child, leaf_row, internal_row)

    def rows_numerators(self, lines: np.ndarray, sums: np.ndarray, haar: HaarTransform, first: int, out: np.ndarray,
                        divisors: np.ndarray | None, head_divisors: np.ndarray | None, rint: bool) -> None:
        """:meth:`numerators` of checked counts ``lines`` (as :meth:`checked_leaf_sums` took them, with
        its ``sums``) along the leaves, then ``haar``'s :meth:`~HaarTransform.rows_numerators` of
        the padded lines ``first`` on (line ``outer * n_coefficients + node``) into the flat ``out``
        (``divisors``, ``head_divisors`` and ``rint`` as there): one compiled pass, the same bits as
        those two transforms one after the other."""
        loops = _compiled.block_loops()
        assert loops is not None, "rows_numerators follows checked_leaf_sums"
        parent, fanout, _, leaf_row = self.tree_arrays
        loops.nominal_haar_numerators(lines, sums, out, parent, fanout, leaf_row, self._internal_rows, first,
                                      haar.levels, haar.rows_head_levels, loop_table(divisors),
                                      loop_table(head_divisors), rint)

    @cached_property
    def _internal_rows(self) -> np.ndarray:
        """Each internal node's row of :meth:`checked_leaf_sums`' sums (level order), -1 for a leaf."""
        internal = self._layout.fanout > 0
        rows = np.full(self.n_coefficients, -1, dtype=np.int64)
        rows[internal] = np.arange(int(internal.sum()))
        return rows

    @cached_property
    def tree_arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """The hierarchy as the compiled loop takes it: each node's parent, fan-out, first child
        and row among the leaves (-1 for an internal node), as int64."""
        lay = self._layout
        leaf_row = np.full(self.n_coefficients, -1, dtype=np.int64)
        leaf_row[lay.leaf_nodes] = np.arange(self.size)
        return (lay.parent.astype(np.int64), lay.fanout.astype(np.int64), lay.first_child.astype(np.int64), leaf_row)

    def inverse(
        self,
        c: np.ndarray,
        axis: int = -1,
        *,
        mean_subtraction: bool = True,
        overwrite_input: bool = False,
        out: np.ndarray | None = None,
    ) -> np.ndarray:
        """Leaf values from coefficients, with mean subtraction in every sibling group.

        ``out`` may be narrower than the result along its last axis (when that is not ``axis``):
        it then receives the first positions (a padded array's values), the others never computed
        where the compiled loop runs (numba installed, mean subtraction, and numpy's own order of
        summing followed: :meth:`_compiled_inverse`).
        """
        c = np.asarray(c, dtype=np.float64)
        if c.shape[axis] != self.n_coefficients:
            raise ValueError(f"expected {self.n_coefficients} nominal coefficients along axis {axis}, got {c.shape[axis]}")
        sums = outer(c, axis, copy=not overwrite_input)
        row_cells = math.prod(sums.shape[1:])
        if mean_subtraction:
            done = self._compiled_inverse(sums, axis, out, _NONE, _NONE)
            if done is not None:
                return done
        for depth in self._depths:
            # leafsum(N) = c_N - mean(c of N's sibling group) + leafsum(parent) / f, top-down
            block = sums[depth.block]
            if depth.loop_groups(row_cells):
                for parent, start, fanout in depth.groups:
                    rows = block[start : start + fanout]
                    shift = sums[parent] - np.add.reduce(rows, axis=0) if mean_subtraction else sums[parent].copy()
                    shift /= fanout
                    rows += shift
                continue
            fanouts = along(depth.fanouts.astype(np.float64), 0, sums.ndim)
            shift = sums[depth.parents] / fanouts
            if mean_subtraction:
                shift -= np.add.reduceat(block, depth.offsets, axis=0) / fanouts
            block += np.repeat(shift, depth.fanouts, axis=0)
        values = back(sums[self._leaves], axis)
        if out is not None and out.shape[-1] < values.shape[-1]:
            values = values[..., : out.shape[-1]]
        return deliver(values, out)

    def scaled_inverse(self, c: np.ndarray, axis: int, factors_rows: np.ndarray, factors_columns: np.ndarray) -> np.ndarray | None:
        """:meth:`inverse` with mean subtraction of ``c`` (overwritten: the workspace) multiplied
        first by its row's factor, then by its column's (two roundings, in that order), in the
        compiled loop as it reaches each outer position (the same bits as multiplying them
        before). The rows are those of ``c`` with ``axis`` first (C-contiguous: coefficient,
        then the positions before ``axis``), the columns the positions after it. None where the
        compiled loop does not apply (see :meth:`_compiled_inverse`); ``c`` is then unchanged."""
        if c.dtype != np.float64 or c.shape[axis] != self.n_coefficients:
            return None
        return self._compiled_inverse(outer(c, axis), axis, None, factors_rows, factors_columns)

    def _compiled_inverse(self, sums: np.ndarray, axis: int, out: np.ndarray | None, factors_rows: np.ndarray,
                          factors_columns: np.ndarray) -> np.ndarray | None:
        """:meth:`inverse` with mean subtraction of ``sums`` (the coefficients with ``axis``
        first, C-contiguous: the workspace) in one compiled pass, into ``out`` or a new array in
        the values' own C order (no transposing copy for the next axis's transform); None where
        it does not apply: without numba, where numpy would sum the sibling groups another way
        than child after child (rows of one value, or a depth it does by reduceat), or where
        ``out``'s layout does not fit."""
        loops = _compiled.block_loops()
        if loops is None or not self.loops_groups(math.prod(sums.shape[1:])):
            return None
        axis %= sums.ndim
        before, inner = sums.shape[1 : axis + 1], sums.shape[axis + 1 :]
        values = np.empty((*before, self.size, *inner)) if out is None else out
        same = values.shape == (*before, self.size, *inner)
        # narrower along the last axis (not ``axis``): the first positions of each row, one row per leaf
        narrower = (bool(inner) and math.prod(inner[:-1]) == 1 and values.shape[:-1] == (*before, self.size, *inner[:-1])
                    and values.shape[-1] < inner[-1])
        if not (same or narrower) or not values.flags.c_contiguous or values.dtype != np.float64:
            return None
        positions = math.prod(values.shape[axis + 1 :])
        loops.nominal_inverse(sums.reshape(self.n_coefficients, math.prod(before), math.prod(inner)),
                              values.reshape(math.prod(before), self.size, positions),
                              *self._groups_arrays, self.tree_arrays[3], np.empty(positions), factors_rows,
                              factors_columns)
        return values

    def loops_groups(self, row_cells: int) -> bool:
        """Whether :meth:`inverse`, with mean subtraction, of coefficients with ``row_cells``
        positions beside the axis visits the sibling groups one by one, summing each child after
        child (as the compiled loops do, :attr:`groups_arrays`): not for rows of one value or a
        depth it does by reduceat."""
        return row_cells >= 2 and all(depth.loop_groups(row_cells) for depth in self._depths)

    @property
    def groups_arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Every sibling group, top-down as :meth:`inverse` visits them: its parent, first child
        and fan-out; and each node's row among the leaves (-1 for an internal node); as int64."""
        return (*self._groups_arrays, self.tree_arrays[3])

    @cached_property
    def _groups_arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Every sibling group, top-down as :meth:`inverse` visits them: its parent, first child
        and fan-out, as int64."""
        groups = [(parent, depth.block.start + start, fanout) for depth in self._depths
                  for parent, start, fanout in depth.groups]
        parent, first, fanout = (np.array([g[i] for g in groups], dtype=np.int64) for i in range(3))
        return parent, first, fanout

    # -- exact variance of node queries ----------------------------------------------
    @cached_property
    def node_factors(self) -> np.ndarray:
        """``V`` of the query "this node" for every node, in level order.

        With independent noise of variance ``1 / W^2`` per coefficient, mean subtraction
        leaves ``(1 / W^2) (1 - 1/f)`` on each coefficient of a sibling group of size f,
        and ``leafsum(N) = c_N + leafsum(parent) / f`` adds the parent's variance / f^2.
        """
        lay = self._layout
        f = self._parent_fanout
        own = np.zeros(self.n_coefficients)
        branching = f > 1
        own[branching] = (1.0 / self.weights[branching] ** 2) * (1.0 - 1.0 / f[branching])
        v = np.empty(self.n_coefficients)
        v[0] = 1.0
        for d in range(2, len(lay.depth_starts)):
            block = slice(lay.depth_starts[d - 1], lay.depth_starts[d])
            v[block] = own[block] + v[lay.parent[block]] / f[block] ** 2
        return v

    def worst_case_factor(self) -> float:
        return float(self.node_factors.max())


def nominal_weights(hierarchy: Hierarchy) -> np.ndarray:
    """Weights W_Nom of the nominal coefficients (level order; ``inf`` for only children)."""
    return NominalTransform(hierarchy).weights


def nominal_forward(x: np.ndarray, hierarchy: Hierarchy, axis: int = -1) -> np.ndarray:
    """Nominal wavelet coefficients of ``x`` along ``axis`` (leaves in hierarchy order)."""
    return NominalTransform(hierarchy).forward(x, axis)


def nominal_inverse(c: np.ndarray, hierarchy: Hierarchy, axis: int = -1, *, mean_subtraction: bool = True) -> np.ndarray:
    """Invert :func:`nominal_forward`, with the mean subtraction of math.md by default."""
    return NominalTransform(hierarchy).inverse(c, axis, mean_subtraction=mean_subtraction)
