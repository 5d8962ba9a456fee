"""The Haar wavelet strategy for ordinal attributes (docs/math.md, "The Haar strategy").

The domain is padded with zeros to ``2**l`` values. The measurements are the paper's weighted
Haar coefficients that can be non-zero: the total (weight ``2**l``), then level by level from
the root the nodes whose left half holds a real value, each weighted by its width, so that the
weighted coefficient is the integer ``S_left - S_right`` (the sums of its two halves). A node
lying wholly in the padding is always zero and is not measured: it changes no released value.
"""

from __future__ import annotations

import math
from fractions import Fraction
from functools import cached_property

import numpy as np

from ..kernels import transforms
from .base import AxisStrategy, is_last_axis

__all__ = ["HaarTransform"]

# Worst cases of domains up to this size look at every interval; larger ones use envelopes.
_ALL_INTERVALS_UP_TO = 2048


class HaarTransform(AxisStrategy):
    """Haar wavelet along an axis of ``size`` ordinal values (see the module docstring).

    Parameters
    ----------
    size : int
        Number of values of the axis (at least 1; padded to the next power of two).

    Raises
    ------
    ValueError
        ``size`` is less than 1.

    Examples
    --------
    >>> t = HaarTransform(8)
    >>> t.weights.tolist()
    [8.0, 8.0, 4.0, 4.0, 2.0, 2.0, 2.0, 2.0]
    >>> z = np.empty((1, 8, 1), dtype=np.int64)
    >>> t.forward(np.array([9, 3, 5, 7, 1, 1, 4, 2]).reshape(1, 8, 1), z)
    >>> z.ravel().tolist()  # S_left - S_right: the weighted coefficients
    [32, 16, 0, -4, 6, -2, 0, 2]
    >>> HaarTransform(5).n_measurements  # the total, then 1 + 2 + 3 nodes not wholly in the padding
    7
    """

    kind = "haar"

    def __init__(self, size: int):
        if size < 1:
            raise ValueError(f"a Haar axis needs at least one value, got size {size}")
        self.size = int(size)
        self.levels = math.ceil(math.log2(self.size)) if self.size > 1 else 0
        self.padded = 1 << self.levels
        counts = [-(-self.size >> (self.levels - level + 1)) for level in range(1, self.levels + 1)]
        # the total's row, then each level's first row
        self.level_offsets = np.array([0, *(1 + np.cumsum([0, *counts])[:-1])], dtype=np.int64)
        self.n_measurements = 1 + sum(counts)

    @property
    def rho(self) -> Fraction:
        return Fraction(1 + self.levels)

    @property
    def influence(self) -> int:
        return 1 + self.levels

    @cached_property
    def denominators(self) -> np.ndarray:
        return np.ones(self.n_measurements, dtype=np.int64)

    @cached_property
    def weights(self) -> np.ndarray:
        """The width of each measured node (the padded size for the total)."""
        w = np.empty(self.n_measurements)
        w[0] = self.padded
        ends = [*self.level_offsets[1:].tolist(), self.n_measurements]
        for level in range(1, self.levels + 1):
            w[ends[level - 1] : ends[level]] = 1 << (self.levels - level + 1)
        return w

    def forward(self, x: np.ndarray, out: np.ndarray) -> None:
        if is_last_axis(x, out):
            transforms.haar_rows_forward(x[:, :, 0], out[:, :, 0], self.level_offsets)
        else:
            transforms.haar_forward(x, out, self.level_offsets)

    def reconstruct(self, y: np.ndarray, out: np.ndarray) -> None:
        if is_last_axis(y, out):
            transforms.haar_rows_reconstruct(y[:, :, 0], out[:, :, 0], self.level_offsets)
        else:
            transforms.haar_reconstruct(y, out, self.level_offsets)

    # -- accuracy ---------------------------------------------------------------------------
    def interval_variances(self, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
        """``V`` of ``lo..hi``: the total's term, then at most two partly covered nodes a level.

        Parameters
        ----------
        lo, hi : numpy.ndarray
            Integer arrays of one shape, ``0 <= lo <= hi < size``.

        Returns
        -------
        numpy.ndarray
            float64, one per interval: variance per unit of noise variance on a weighted measurement.
        """
        a = np.asarray(lo, dtype=np.int64)
        b = np.asarray(hi, dtype=np.int64)
        length = (b - a + 1).astype(np.float64)
        if self.levels == 0:
            return length**2
        diff = a ^ b
        # p: highest differing bit of a and b; the lowest common ancestor has width 2^(p+1).
        p = np.where(diff > 0, np.floor(np.log2(np.maximum(diff, 1))).astype(np.int64), -1)
        lca_level = self.levels - p  # == levels + 1 when a == b (no straddling node)
        mid = (b >> np.maximum(p, 0)) << np.maximum(p, 0)
        width = np.left_shift(1, p + 1).astype(np.float64)
        straddle = np.where(diff > 0, (((mid - a) - (b - mid + 1)) / width) ** 2, 0.0)
        above = self._above_sums[np.minimum(lca_level, self.levels + 1) - 1]
        left_tail, right_tail = self._tail_sums
        return (
            length**2 * (1.0 / self.padded**2 + above)
            + straddle
            + left_tail[a, lca_level]
            + right_tail[b, lca_level]
        )

    def interval_total_covariances(self, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
        table = self._total_table
        return table[np.asarray(hi, dtype=np.int64) + 1] - table[np.asarray(lo, dtype=np.int64)]

    def total_variance(self) -> float:
        return float(self._total_table[-1])

    def worst_interval_variance(self) -> float:
        """Small domains: every interval, vectorised. Large ones: per level of the tree, an
        upper-envelope search over the interval's two ends (O(m log m)).

        Returns
        -------
        float
            Per unit of noise variance on a weighted measurement.
        """
        if self.size <= _ALL_INTERVALS_UP_TO:
            return self._worst_over_all_intervals()
        return self._worst_by_envelopes()

    def _worst_over_all_intervals(self) -> float:
        n = self.size
        best = 0.0
        rows = max(1, (1 << 21) // n)
        for first in range(0, n, rows):
            a = np.arange(first, min(first + rows, n))[:, None]
            a_full, b_full = np.broadcast_arrays(a, np.arange(n)[None, :])
            mask = b_full >= a_full
            best = max(best, float(self.interval_variances(a_full[mask], b_full[mask]).max()))
        return best

    def _worst_by_envelopes(self) -> float:
        """Every interval a < b straddles the middle of one lowest common ancestor, of width w.

        With u = mid - a and v = b - mid + 1 (both in 1..w/2) the closed form of
        :meth:`interval_variances` reads ``alpha (u^2 + v^2) + 2 beta u v + TA(u) + TB(v)``:
        the same for every node of a level (the tails depend on positions within nodes).
        For each u the best v is the upper envelope of the lines ``v k + alpha v^2 + TB(v)``
        at ``k = 2 beta u``: one convex hull per level, queried for every u at once.
        """
        padded, levels = self.padded, self.levels
        left, right = self._tail_sums
        best = 1.0 / padded**2 + float(self._above_sums[levels])  # single values (a == b)
        for level in range(1, levels + 1):
            width = 1 << (levels - level + 1)
            half = width // 2
            common = 1.0 / padded**2 + float(self._above_sums[level - 1])
            alpha, beta = common + 1.0 / width**2, common - 1.0 / width**2
            u = np.arange(1, half + 1, dtype=np.float64)
            from_left = alpha * u**2 + left[half - np.arange(1, half + 1), level]
            from_right = alpha * u**2 + right[half + np.arange(half), level]
            # Nodes start at 0, w, 2w, ...: those ending inside the domain allow every v, the
            # one holding the domain's end only v <= size - mid.
            full = self.size // width
            ends = [half] if full else []
            mid = full * width + half
            if mid < self.size:
                ends.append(self.size - mid)
            for last in ends:
                best = max(best, _envelope_max(from_left, 2 * beta * u, u[:last], from_right[:last]))
        return best

    @cached_property
    def _total_table(self) -> np.ndarray:
        """Prefix sums over the values of ``S 1 = R R' 1``: ``R' 1`` is the numerators of ones over
        the weights, and R the reconstruction."""
        numerators = np.empty((1, self.n_measurements, 1), dtype=np.int64)
        self.forward(np.ones((1, self.size, 1), dtype=np.int64), numerators)
        spread = numerators / self.weights[None, :, None]
        u = np.empty((1, self.size, 1))
        self.reconstruct(spread, u)
        return np.concatenate([[0.0], np.cumsum(u.ravel())])

    @cached_property
    def _above_sums(self) -> np.ndarray:
        """``sum_{level < L} 1 / width(level)^2`` for L = 1 .. levels + 1 (index L - 1)."""
        widths = np.array([1 << (self.levels - level + 1) for level in range(1, self.levels + 1)], dtype=np.float64)
        return np.concatenate([[0.0], np.cumsum(1.0 / widths**2)])

    @cached_property
    def _tail_sums(self) -> tuple[np.ndarray, np.ndarray]:
        """Per position x (padding included: the envelopes use it) and level L: the contributions
        of x's nodes below level L. ``left[x, L]``: nodes at levels > L holding the interval's
        left end x, covered from x to their end; ``right[x, L]``: nodes holding the right end x,
        covered from their start to x. Shape ``(padded, levels + 2)``."""
        x = np.arange(self.padded, dtype=np.int64)[:, None]
        levels = np.arange(1, self.levels + 1)[None, :]
        width = np.left_shift(1, self.levels - levels + 1)
        start = (x // width) * width
        mid = start + width // 2
        end = start + width
        left = ((np.maximum(mid - x, 0) - (end - np.maximum(x, mid))) / width) ** 2
        right = (((np.minimum(x, mid - 1) - start + 1) - np.maximum(x - mid + 1, 0)) / width) ** 2

        def suffix(per_level: np.ndarray) -> np.ndarray:  # sums over levels > L, L = 0 .. levels + 1
            out = np.zeros((self.padded, self.levels + 2))
            out[:, : self.levels] = np.cumsum(per_level[:, ::-1], axis=1)[:, ::-1]
            return out

        return suffix(left), suffix(right)


def _envelope_max(base: np.ndarray, slopes: np.ndarray, xs: np.ndarray, ys: np.ndarray) -> float:
    """``max_i (base_i + max_j (slopes_i * xs_j + ys_j))`` for increasing ``xs``.

    The inner maximum is attained on the upper convex hull of the points (xs, ys); along it,
    edge slopes decrease, so each query finds its vertex by binary search.
    """
    hull: list[int] = []
    for j in range(len(xs)):
        while len(hull) >= 2:
            i, k = hull[-2], hull[-1]
            # drop k unless the chain i -> k -> j turns clockwise (k above the chord i-j)
            if (xs[k] - xs[i]) * (ys[j] - ys[i]) - (ys[k] - ys[i]) * (xs[j] - xs[i]) >= 0:
                hull.pop()
            else:
                break
        hull.append(j)
    hx, hy = xs[hull], ys[hull]
    rising = -np.diff(hy) / np.diff(hx)  # minus the edge slopes: increasing along the hull
    vertex = np.searchsorted(rising, slopes)
    return float(np.max(base + slopes * hx[vertex] + hy[vertex]))
