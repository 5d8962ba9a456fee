"""The per-axis transforms' loops: exact integer numerators forward, float reconstruction back.

Every kernel works on a 3-D view ``(outer, axis, inner)``: the transform runs along the middle
axis for each outer position, on whole rows of ``inner`` values (contiguous in memory, so the
innermost loops vectorise). The forward kernels take counts as int64 and give the weighted
measurements' integer numerators (docs/math.md, "The grid"); the reconstruction kernels take
the noisy weighted measurements as float64 and give values.
"""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True, nogil=True, error_model="numpy")
def haar_forward(x: np.ndarray, out: np.ndarray, offsets: np.ndarray) -> None:  # pragma: no cover - compiled
    """Haar numerators (docs/math.md, "The Haar strategy"): ``out[:, 0]`` the total, then level by
    level (root first) the differences ``S_left - S_right`` of the kept nodes, the finest level
    formed first from pairs of values. ``offsets[i]`` is the first row of level ``i`` (1-based)."""
    outer, size, inner = x.shape
    levels = offsets.shape[0] - 1
    half = (size + 1) // 2
    first = np.empty((max(half, 1), inner), np.int64)
    second = np.empty((max((half + 1) // 2, 1), inner), np.int64)
    for o in range(outer):
        if levels == 0:
            for t in range(inner):
                out[o, 0, t] = x[o, 0, t]
            continue
        row = offsets[levels]
        for j in range(half):
            if 2 * j + 1 < size:
                for t in range(inner):
                    left = x[o, 2 * j, t]
                    right = x[o, 2 * j + 1, t]
                    out[o, row + j, t] = left - right
                    first[j, t] = left + right
            else:
                for t in range(inner):
                    out[o, row + j, t] = x[o, 2 * j, t]
                    first[j, t] = x[o, 2 * j, t]
        current, following = first, second
        count = half
        for level in range(levels - 1, 0, -1):
            kept = (count + 1) // 2
            row = offsets[level]
            for j in range(kept):
                if 2 * j + 1 < count:
                    for t in range(inner):
                        left = current[2 * j, t]
                        right = current[2 * j + 1, t]
                        out[o, row + j, t] = left - right
                        following[j, t] = left + right
                else:
                    for t in range(inner):
                        out[o, row + j, t] = current[2 * j, t]
                        following[j, t] = current[2 * j, t]
            current, following = following, current
            count = kept
        for t in range(inner):
            out[o, 0, t] = current[0, t]


@njit(cache=True, nogil=True, error_model="numpy")
def haar_reconstruct(y: np.ndarray, out: np.ndarray, offsets: np.ndarray) -> None:  # pragma: no cover - compiled
    """Values from noisy weighted Haar measurements: each divided by its weight (the width of its
    node, the padded size for the total), then the means top-down, ``left = mean + c`` and
    ``right = mean - c`` (docs/math.md, "The Haar strategy")."""
    outer, _, inner = y.shape
    size = out.shape[1]
    levels = offsets.shape[0] - 1
    padded = 1 << levels
    half = (size + 1) // 2
    first = np.empty((max(half, 1), inner))
    second = np.empty((max(half, 1), inner))
    for o in range(outer):
        if levels == 0:
            for t in range(inner):
                out[o, 0, t] = y[o, 0, t]
            continue
        current, following = first, second
        for t in range(inner):
            current[0, t] = y[o, 0, t] / padded
        count = 1
        for level in range(1, levels + 1):
            inverse_width = 1.0 / (1 << (levels - level + 1))  # a power of two: exact
            shift = levels - level  # children of this level have width 2**shift
            children = (size + (1 << shift) - 1) >> shift
            row = offsets[level]
            target = out[o] if level == levels else following
            for j in range(count):
                left = 2 * j
                if left + 1 < children:
                    for t in range(inner):
                        detail = y[o, row + j, t] * inverse_width
                        target[left, t] = current[j, t] + detail
                        target[left + 1, t] = current[j, t] - detail
                else:
                    for t in range(inner):
                        target[left, t] = current[j, t] + y[o, row + j, t] * inverse_width
            current, following = following, current
            count = children


@njit(cache=True, nogil=True, error_model="numpy")
def haar_rows_forward(x: np.ndarray, out: np.ndarray, offsets: np.ndarray) -> None:  # pragma: no cover - compiled
    """:func:`haar_forward` along the last axis: ``x`` (int64 ``(rows, size)``, C order) row by row
    into ``out`` (``(rows, measurements)``); contiguous rows let the levels vectorise."""
    half = max((x.shape[1] + 1) // 2, 1)
    first = np.empty(half, np.int64)
    second = np.empty(half, np.int64)
    for o in range(x.shape[0]):
        _haar_forward_row(x[o], out[o], offsets, first, second)


@njit(cache=True, nogil=True, error_model="numpy")
def haar_rows_reconstruct(y: np.ndarray, out: np.ndarray, offsets: np.ndarray) -> None:  # pragma: no cover - compiled
    """:func:`haar_reconstruct` along the last axis: ``y`` (float64 ``(rows, measurements)``, C
    order) row by row into ``out`` (``(rows, size)``)."""
    half = max((out.shape[1] + 1) // 2, 1)
    first = np.empty(half)
    second = np.empty(half)
    for o in range(y.shape[0]):
        _haar_reconstruct_row(y[o], out[o], offsets, first, second)


@njit(cache=True, nogil=True, error_model="numpy")
def _haar_forward_row(x: np.ndarray, out: np.ndarray, offsets: np.ndarray, first: np.ndarray,
                      second: np.ndarray) -> None:  # pragma: no cover - compiled
    """:func:`haar_forward` of one row ``x`` into ``out`` (``first``, ``second``: work rows)."""
    levels = offsets.shape[0] - 1
    if levels == 0:
        out[0] = x[0]
        return
    count = _haar_level_forward(x, x.shape[0], out[offsets[levels]:], first)
    for level in range(levels - 1, 0, -1):
        current, following = (first, second) if (levels - level) % 2 else (second, first)
        count = _haar_level_forward(current, count, out[offsets[level]:], following)
    out[0] = first[0] if (levels - 1) % 2 == 0 else second[0]


@njit(cache=True, nogil=True, error_model="numpy")
def _haar_level_forward(values: np.ndarray, count: int, differences: np.ndarray,
                        sums: np.ndarray) -> int:  # pragma: no cover - compiled
    """One level of :func:`_haar_forward_row`: the pairs' differences and sums of the first
    ``count`` values (an odd last value is its own); returns how many sums. The indices are plain
    loop counters so that the loop vectorises."""
    pairs = count // 2
    for j in range(pairs):
        left = values[2 * j]
        right = values[2 * j + 1]
        differences[j] = left - right
        sums[j] = left + right
    if count % 2:
        differences[pairs] = values[count - 1]
        sums[pairs] = values[count - 1]
    return pairs + count % 2


@njit(cache=True, nogil=True, error_model="numpy")
def _haar_reconstruct_row(y: np.ndarray, out: np.ndarray, offsets: np.ndarray, first: np.ndarray,
                          second: np.ndarray) -> None:  # pragma: no cover - compiled
    """:func:`haar_reconstruct` of one row ``y`` into ``out`` (``first``, ``second``: work rows)."""
    size = out.shape[0]
    levels = offsets.shape[0] - 1
    if levels == 0:
        out[0] = y[0]
        return
    current, following = first, second
    current[0] = y[0] / (1 << levels)
    for level in range(1, levels + 1):
        shift = levels - level  # children of this level have width 2**shift
        children = (size + (1 << shift) - 1) >> shift
        details = y[offsets[level]:]
        target = out if level == levels else following
        inverse_width = 1.0 / (1 << (shift + 1))  # a power of two: the same as dividing, and faster
        pairs = children // 2
        for j in range(pairs):
            detail = details[j] * inverse_width
            target[2 * j] = current[j] + detail
            target[2 * j + 1] = current[j] - detail
        if children % 2:
            target[children - 1] = current[pairs] + details[pairs] * inverse_width
        current, following = following, current


@njit(cache=True, nogil=True, error_model="numpy")
def _prefix_sums(x: np.ndarray, o: int, prefix: np.ndarray) -> None:  # pragma: no cover - compiled
    """``prefix[i] = x[o, 0] + ... + x[o, i - 1]`` along the axis (``prefix[0] = 0``): a run's count
    is a difference of two of them."""
    size, inner = x.shape[1], x.shape[2]
    for t in range(inner):
        prefix[0, t] = 0
    for i in range(size):
        for t in range(inner):
            prefix[i + 1, t] = prefix[i, t] + x[o, i, t]


@njit(cache=True, nogil=True, error_model="numpy")
def nominal_forward(
    x: np.ndarray, out: np.ndarray, internal: np.ndarray, first_child: np.ndarray, fanout: np.ndarray,
    node_row: np.ndarray, node_slot: np.ndarray,
) -> None:  # pragma: no cover - compiled
    """Nominal numerators (docs/math.md, "The nominal wavelet"), bottom-up: the leaf-sums of the
    internal nodes from their children's (``internal`` lists them in level order, so in reverse
    children come first), then in every sibling group of f > 1 nodes ``f leafsum(child) -
    leafsum(parent)`` into the child's row ``node_row[child]``; row 0 is the root's leaf-sum.
    ``node_slot`` is as in :func:`nominal_reconstruct`. Only the internal nodes' sums are held
    (a few rows), not a prefix sum of the whole axis."""
    outer, _, inner = x.shape
    sums = np.empty((max(internal.shape[0], 1), inner), np.int64)
    for o in range(outer):
        if internal.shape[0] == 0:  # a single value: the root is a leaf
            for t in range(inner):
                out[o, 0, t] = x[o, 0, t]
            continue
        for k in range(internal.shape[0] - 1, -1, -1):
            node = internal[k]
            start = first_child[node]
            total = sums[k]  # an internal node's slot is its place in ``internal``
            for t in range(inner):
                total[t] = 0
            for child in range(start, start + fanout[node]):
                slot = node_slot[child]
                source = sums[slot] if slot >= 0 else x[o, -1 - slot]
                for t in range(inner):
                    total[t] += source[t]
        for t in range(inner):
            out[o, 0, t] = sums[0, t]
        for k in range(internal.shape[0]):
            node = internal[k]
            f = fanout[node]
            if f == 1:
                continue  # an only child is not measured
            start = first_child[node]
            parent = sums[k]
            for child in range(start, start + f):
                slot = node_slot[child]
                source = sums[slot] if slot >= 0 else x[o, -1 - slot]
                target = out[o, node_row[child]]
                for t in range(inner):
                    target[t] = f * source[t] - parent[t]


@njit(cache=True, nogil=True, error_model="numpy")
def nominal_reconstruct(
    y: np.ndarray, out: np.ndarray, internal: np.ndarray, first_child: np.ndarray, fanout: np.ndarray,
    node_row: np.ndarray, node_slot: np.ndarray,
) -> None:  # pragma: no cover - compiled
    """Leaf values from noisy weighted nominal measurements, top-down with mean subtraction
    (docs/math.md, "The nominal wavelet"): in every sibling group of f > 1 nodes each
    coefficient is ``c = y (2f - 2) / f``, and ``leafsum(child) = c - mean(c of the group) +
    leafsum(parent) / f``; an only child takes its parent's leaf-sum. ``internal`` lists the
    internal nodes in level order; ``node_slot`` is an internal node's row of the work buffer
    (>= 0) or a leaf's position in the output (``-1 - position``)."""
    outer, _, inner = y.shape
    sums = np.empty((internal.shape[0], inner))
    mean = np.empty(inner)
    for o in range(outer):
        for t in range(inner):
            sums[0, t] = y[o, 0, t]
        for k in range(internal.shape[0]):
            node = internal[k]
            start = first_child[node]
            f = fanout[node]
            source = sums[node_slot[node]]
            if f == 1:
                slot = node_slot[start]
                target = sums[slot] if slot >= 0 else out[o, -1 - slot]
                for t in range(inner):
                    target[t] = source[t]
                continue
            scale = (2.0 * f - 2.0) / f
            for t in range(inner):
                mean[t] = 0.0
            for child in range(start, start + f):
                row = node_row[child]
                for t in range(inner):
                    mean[t] += y[o, row, t]
            for t in range(inner):
                mean[t] = source[t] / f - mean[t] * scale / f
            for child in range(start, start + f):
                row = node_row[child]
                slot = node_slot[child]
                target = sums[slot] if slot >= 0 else out[o, -1 - slot]
                for t in range(inner):
                    target[t] = y[o, row, t] * scale + mean[t]


@njit(cache=True, nogil=True, error_model="numpy")
def tree_forward(
    x: np.ndarray, out: np.ndarray, low: np.ndarray, high: np.ndarray, weight: np.ndarray,
) -> None:  # pragma: no cover - compiled
    """Tree numerators (docs/math.md, "Hierarchies with least squares"): row r is ``weight[r]``
    times the count of the node covering positions ``low[r]`` to ``high[r]`` (half-open), a
    difference of prefix sums along the axis."""
    outer, size, inner = x.shape
    rows = out.shape[1]
    prefix = np.empty((size + 1, inner), np.int64)
    for o in range(outer):
        _prefix_sums(x, o, prefix)
        for r in range(rows):
            lo = low[r]
            hi = high[r]
            w = weight[r]
            for t in range(inner):
                out[o, r, t] = w * (prefix[hi, t] - prefix[lo, t])


@njit(cache=True, nogil=True, error_model="numpy")
def tree_reconstruct(
    y: np.ndarray, out: np.ndarray, row: np.ndarray, own: np.ndarray, children_share: np.ndarray,
    spread: np.ndarray, first_child: np.ndarray, fanout: np.ndarray, position: np.ndarray,
) -> None:  # pragma: no cover - compiled
    """Least-squares values from a tree's noisy weighted measurements in two passes over the
    nodes (level order, children contiguous; docs/math.md, "Hierarchies with least squares").

    Up: a node's estimate is ``own[v] y[row[v]] + children_share[v] c_v``, ``c_v`` the sum of its
    children's estimates (a leaf: ``own`` alone; an unmeasured node, ``row`` -1: ``c_v``). Down: a
    child's final value is its estimate plus ``spread[u]`` times what its parent's final value
    differs from ``c_parent``. Leaf v's value goes to ``position[v]``."""
    outer, _, inner = y.shape
    nodes = row.shape[0]
    estimate = np.empty((nodes, inner))
    children_sum = np.empty((nodes, inner))
    for o in range(outer):
        for v in range(nodes - 1, -1, -1):
            f = fanout[v]
            r = row[v]
            if f == 0:
                for t in range(inner):
                    estimate[v, t] = own[v] * y[o, r, t]
                continue
            first = first_child[v]
            for t in range(inner):
                children_sum[v, t] = estimate[first, t]
            for c in range(first + 1, first + f):
                for t in range(inner):
                    children_sum[v, t] += estimate[c, t]
            if r >= 0:
                for t in range(inner):
                    estimate[v, t] = own[v] * y[o, r, t] + children_share[v] * children_sum[v, t]
            else:
                for t in range(inner):
                    estimate[v, t] = children_sum[v, t]
        for v in range(nodes):
            f = fanout[v]
            if f == 0:
                p = position[v]
                for t in range(inner):
                    out[o, p, t] = estimate[v, t]
                continue
            first = first_child[v]
            for c in range(first, first + f):
                for t in range(inner):
                    estimate[c, t] += spread[c] * (estimate[v, t] - children_sum[v, t])


@njit(cache=True, nogil=True, error_model="numpy")
def tree_rows_forward(
    x: np.ndarray, out: np.ndarray, low: np.ndarray, high: np.ndarray, weight: np.ndarray,
) -> None:  # pragma: no cover - compiled
    """:func:`tree_forward` along the last axis: ``x`` (int64 ``(rows, size)``) row by row into
    ``out`` (``(rows, measurements)``), each row's prefix sums in one short buffer."""
    rows, size = x.shape
    prefix = np.empty(size + 1, np.int64)
    prefix[0] = 0
    for o in range(rows):
        values = x[o]
        for i in range(size):
            prefix[i + 1] = prefix[i] + values[i]
        target = out[o]
        for r in range(target.shape[0]):
            target[r] = weight[r] * (prefix[high[r]] - prefix[low[r]])


@njit(cache=True, nogil=True, error_model="numpy")
def tree_rows_reconstruct(
    y: np.ndarray, out: np.ndarray, row: np.ndarray, own: np.ndarray, children_share: np.ndarray,
    spread: np.ndarray, first_child: np.ndarray, fanout: np.ndarray, position: np.ndarray,
) -> None:  # pragma: no cover - compiled
    """:func:`tree_reconstruct` along the last axis: ``y`` (float64 ``(rows, measurements)``) row
    by row into ``out`` (``(rows, size)``), with the same operations in the same order (the same
    floats)."""
    nodes = row.shape[0]
    estimate = np.empty(nodes)
    children_sum = np.empty(nodes)
    for o in range(y.shape[0]):
        values = y[o]
        target = out[o]
        for v in range(nodes - 1, -1, -1):
            f = fanout[v]
            r = row[v]
            if f == 0:
                estimate[v] = own[v] * values[r]
                continue
            first = first_child[v]
            total = estimate[first]
            for c in range(first + 1, first + f):
                total += estimate[c]
            children_sum[v] = total
            estimate[v] = own[v] * values[r] + children_share[v] * total if r >= 0 else total
        for v in range(nodes):
            f = fanout[v]
            if f == 0:
                target[position[v]] = estimate[v]
                continue
            first = first_child[v]
            difference = estimate[v] - children_sum[v]
            for c in range(first, first + f):
                estimate[c] += spread[c] * difference


@njit(cache=True, nogil=True, error_model="numpy")
def stacked_forward(x: np.ndarray, out: np.ndarray, diagonal: np.ndarray, rows: np.ndarray) -> None:  # pragma: no cover - compiled
    """Numerators of a strategy that stacks a weighted identity on dense rows (docs/math.md,
    "Optimised identity"): ``out[:, i] = diagonal[i] x[i]`` for every value, then
    ``out[:, size + r] = sum_j rows[r, j] x[j]``."""
    outer, size, inner = x.shape
    extra = rows.shape[0]
    for o in range(outer):
        for i in range(size):
            d = diagonal[i]
            for t in range(inner):
                out[o, i, t] = d * x[o, i, t]
        for r in range(extra):
            for t in range(inner):
                out[o, size + r, t] = 0
            for j in range(size):
                w = rows[r, j]
                if w != 0:
                    for t in range(inner):
                        out[o, size + r, t] += w * x[o, j, t]


@njit(cache=True, nogil=True, error_model="numpy")
def stacked_reconstruct(
    y: np.ndarray, out: np.ndarray, theta: np.ndarray, core_inverse: np.ndarray, scale: np.ndarray,
) -> None:  # pragma: no cover - compiled
    """Least-squares values from a stacked identity's noisy weighted measurements through its
    p x p core (docs/math.md, "Optimised identity"): with ``g = y[:size] + theta' y[size:]``,
    ``out = scale * (g - theta' core_inverse theta g)``; ``theta`` is p x size, ``core_inverse``
    is ``(I + theta theta')^-1``."""
    outer, _, inner = y.shape
    extra, size = theta.shape
    combined = np.empty((size, inner))
    projected = np.empty((extra, inner))
    solved = np.empty((extra, inner))
    for o in range(outer):
        for i in range(size):
            for t in range(inner):
                combined[i, t] = y[o, i, t]
        for r in range(extra):
            for t in range(inner):
                projected[r, t] = 0.0
            for i in range(size):
                w = theta[r, i]
                if w != 0.0:
                    for t in range(inner):
                        combined[i, t] += w * y[o, size + r, t]
        for r in range(extra):
            for i in range(size):
                w = theta[r, i]
                if w != 0.0:
                    for t in range(inner):
                        projected[r, t] += w * combined[i, t]
        for r in range(extra):
            for t in range(inner):
                solved[r, t] = 0.0
            for k in range(extra):
                w = core_inverse[r, k]
                for t in range(inner):
                    solved[r, t] += w * projected[k, t]
        for i in range(size):
            for t in range(inner):
                out[o, i, t] = combined[i, t]
        for r in range(extra):
            for i in range(size):
                w = theta[r, i]
                if w != 0.0:
                    for t in range(inner):
                        out[o, i, t] -= w * solved[r, t]
        for i in range(size):
            f = scale[i]
            for t in range(inner):
                out[o, i, t] *= f


@njit(cache=True, nogil=True, error_model="numpy")
def interval_gram_product(
    lo: np.ndarray, hi: np.ndarray, weights: np.ndarray, matrix: np.ndarray, out: np.ndarray,
) -> None:  # pragma: no cover - compiled
    """``out = G matrix`` for ``G = sum_r weights[r] q_r q_r'``, ``q_r`` the 0/1 vector of the
    interval ``lo[r]..hi[r]`` (inclusive) of an axis of ``matrix.shape[0]`` values: each
    interval's column sums are differences of prefix sums, and spreading them back over the
    interval is a difference array summed once."""
    size, columns = matrix.shape
    prefix = np.zeros((size + 1, columns))
    for i in range(size):
        for c in range(columns):
            prefix[i + 1, c] = prefix[i, c] + matrix[i, c]
    spread = np.zeros((size + 1, columns))
    for r in range(lo.shape[0]):
        first = lo[r]
        stop = hi[r] + 1
        w = weights[r]
        for c in range(columns):
            value = w * (prefix[stop, c] - prefix[first, c])
            spread[first, c] += value
            spread[stop, c] -= value
    for c in range(columns):
        out[0, c] = spread[0, c]
    for i in range(1, size):
        for c in range(columns):
            out[i, c] = out[i - 1, c] + spread[i, c]
