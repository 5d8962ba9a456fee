"""The Haar wavelet transform (HWT) along one axis, for ordinal attributes.

The domain is padded with zeros to ``m' = 2**l`` entries, ``l = ceil(log2 |A|)``.
Coefficients are stored in level order: the base coefficient (the mean of all
``m'`` entries) first, then level 1 (the root of the decomposition tree), then
level 2, and so on; a level-``i`` coefficient is ``(a1 - a2) / 2`` where ``a1``
(``a2``) is the mean of its left (right) subtree.
"""

from __future__ import annotations

import math
from functools import cache, cached_property
from itertools import pairwise

import numpy as np

from . import _compiled
from .transform import AxisTransform, back, deliver, outer

__all__ = ["HaarTransform", "haar_forward", "haar_inverse", "haar_weights"]


class HaarTransform(AxisTransform):
    """Haar wavelet along one axis of length ``size`` (see the module docstring).

    Examples
    --------
    >>> t = HaarTransform(8)
    >>> t.weights.tolist()
    [8.0, 8.0, 4.0, 4.0, 2.0, 2.0, 2.0, 2.0]
    >>> t.forward(np.array([9., 3, 5, 7, 1, 1, 4, 2])).tolist()
    [4.0, 2.0, 0.0, -1.0, 3.0, -1.0, 0.0, 1.0]
    """

    kind = "haar"

    def __init__(self, size: int):
        if size < 1:
            raise ValueError(f"a Haar axis needs at least one value, got size {size}")
        self.size = int(size)
        self.levels = math.ceil(math.log2(self.size)) if self.size > 1 else 0
        self.n_coefficients = 1 << self.levels

    @property
    def rho(self) -> int:
        return 1 + self.levels

    @property
    def influence(self) -> int:
        return 1 + self.levels

    @cached_property
    def weights(self) -> np.ndarray:
        w = np.empty(self.n_coefficients)
        w[0] = self.n_coefficients
        for i in range(1, self.levels + 1):
            w[1 << (i - 1) : 1 << i] = 1 << (self.levels - i + 1)
        return w

    @property
    def divisors(self) -> np.ndarray:
        # Weighted Haar coefficients W*c are the integer differences of subtree sums.
        return self.weights

    @cached_property
    def denominators(self) -> np.ndarray:
        return np.ones(self.n_coefficients)

    def numerators(self, x: np.ndarray, axis: int = -1) -> np.ndarray:
        """Subtree-sum differences ``S_left - S_right`` (base: the total); exact for integers."""
        # A view, not a contiguous copy: the first level reads it once whatever its layout.
        sums = np.moveaxis(np.asarray(x, dtype=np.float64), axis, 0)
        ov = np.empty((self.n_coefficients, *sums.shape[1:]))
        coarse = self._product_levels(sums)
        sums, filled = _fine_levels_forward(sums, self.size, ov, self.levels, coarse)
        # The coarse levels hold few nodes: one small exact matrix product does them all
        # (integer entries and sums below 2^53, so any summation order is exact).
        head = _product(_coarse_forward(coarse)[:, :filled], sums[:filled].reshape(filled, -1))
        ov[: 1 << coarse] = head.reshape((1 << coarse, *sums.shape[1:]))
        return back(ov, axis)

    def inverse(
        self, c: np.ndarray, axis: int = -1, *, overwrite_input: bool = False, out: np.ndarray | None = None
    ) -> np.ndarray:
        cv = outer(c, axis)
        if cv.shape[0] != self.n_coefficients:
            raise ValueError(f"expected {self.n_coefficients} Haar coefficients along axis {axis}, got {cv.shape[0]}")
        coarse = self._product_levels(cv)
        # Means of the subtrees below the coarse levels (only those covering real values).
        count = self._covering(coarse)
        head = cv[: 1 << coarse].reshape(1 << coarse, -1)
        means = _product(_coarse_inverse(coarse)[:count], head).reshape((count, *cv.shape[1:]))
        if coarse == self.levels:
            return deliver(back(means, axis), out)
        details = [cv[1 << (level - 1) : 1 << level] for level in range(coarse + 1, self.levels + 1)]
        return self._finer_levels(means, details, axis, out)

    def _product_levels(self, along: np.ndarray) -> int:
        """How many coarse levels one matrix product does for ``along`` (the axis first).

        The product costs up to ``2**c`` multiply-adds per value, the level-by-level loop a
        few numpy calls per level: the more positions the axis has (its other dimensions),
        the fewer levels the product should do. Measured on 32 to 1001 values times 8 to 8192
        positions: 5 levels at 16 positions or fewer, 2 beyond 1024, where a forward and an
        inverse cost 1.1 (1001 values) to 9 (32 values) times less than with 5. Neither the
        coefficients nor their level order depend on it.
        """
        columns = math.prod(along.shape[1:])
        wanted = 5 if columns <= 16 else 4 if columns <= 128 else 3 if columns <= 1024 else 2
        return min(self.levels, wanted)

    def _finer_levels(
        self, means: np.ndarray, details: list[np.ndarray], axis: int, out: np.ndarray | None
    ) -> np.ndarray:
        """The inverse below the coarse levels: each level's ``means`` and ``details`` give the
        next level's means, the finest written straight into the destination, whatever its layout."""
        tail = means.shape[1:]
        values = np.empty((self.size, *tail)) if out is None else np.moveaxis(out, axis, 0)
        for level, detail in zip(range(self.levels - len(details) + 1, self.levels + 1), details, strict=True):
            count = self._covering(level)
            finer = values if level == self.levels else np.empty((count, *tail))
            evens, odds = (count + 1) // 2, count // 2
            np.add(means[:evens], detail[:evens], out=finer[0:count:2])
            np.subtract(means[:odds], detail[:odds], out=finer[1:count:2])
            means = finer
        return back(values, axis) if out is None else out

    # -- the release pipeline's layouts ------------------------------------------------
    # numpy runs a loop over one long, evenly strided run of memory several times faster than
    # over many short rows, so the pipeline's two layouts keep every operation on such runs.

    @property
    def rows_head_levels(self) -> int:
        """The levels in the head of the level-major rows layout (:meth:`rows_numerators`): the
        base and these levels of a row lie together."""
        return min(self.levels, _COARSE_LEVELS)

    def rows_numerators(
        self, rows: np.ndarray, out: np.ndarray, *, divisors: np.ndarray | None = None,
        head_divisors: np.ndarray | None = None, rint: bool = False,
    ) -> np.ndarray:
        """Numerators along each of ``rows`` (C-contiguous, shape ``(R, n_coefficients)``: the
        values, then zero padding), written to the flat ``out`` in the *level-major* layout.

        The layout holds first the head, R rows of the base and levels 1..c in level order
        (``c = min(levels, 5)``, ``2**c`` per row), then level c + 1's details of all R rows
        (``R 2**c``), level c + 2's (``R 2**(c + 1)``), and so on to level ``levels``: level l
        fills ``out[R 2**(l - 1) : R 2**l]``. Every level's pairs are then one strided run of
        ``rows`` and its details one contiguous run of ``out``. Exact for integers (below 2**53).

        With ``divisors`` (shape ``(levels - c, R)``: level l's divisor of row r at ``[l - c - 1,
        r]``) the finer levels' details are divided as they are written, and rounded to the
        nearest integer with ``rint`` (the release's grid units, without another pass over them);
        and with ``head_divisors`` (shape ``(R, 2**c)``: row r's head as it lies in the layout) the
        head, after it is formed.
        """
        count, width = rows.shape
        coarse = self.rows_head_levels
        compiled = _compiled.haar_rows_loops() if coarse < self.levels else None
        if compiled is not None and _compiled_fits(rows, out):  # the head too
            compiled.forward(rows, out, self.levels, coarse, loop_table(divisors), loop_table(head_divisors), rint)
            return out
        sums = rows
        for level in range(self.levels, coarse, -1):  # the finest level first
            half = width // 2
            detail = out[count * half : count * width].reshape(count, half)
            parents = np.empty((count, half))
            left, right = sums[:, 0::2], sums[:, 1::2]
            np.subtract(left, right, out=detail)
            np.add(left, right, out=parents)
            if divisors is not None:
                np.divide(detail, divisors[level - coarse - 1][:, None], out=detail)
                if rint:
                    np.rint(detail, out=detail)
            sums, width = parents, half
        head = out[: count * width].reshape(count, width)
        np.einsum("ij,kj->ik", sums, _coarse_forward(coarse), out=head, optimize=False)
        if head_divisors is not None:
            np.divide(head, head_divisors, out=head)
            if rint:
                np.rint(head, out=head)
        return out

    def rows_inverse(self, coefficients: np.ndarray, out: np.ndarray, *, factors: np.ndarray | None = None) -> np.ndarray:
        """Values along rows (into ``out``, shape ``(R, n_coefficients)``, padding included) from
        coefficients in the level-major layout of :meth:`rows_numerators`. With ``factors``
        (shaped as its ``divisors``) each finer level's details are multiplied by their row's
        factor first (``coefficients`` may be overwritten).

        Level by level from the base, the head's levels too: each level's means plus (left)
        and minus (right) its details, the same operations in the same order on either path,
        so that the bits do not depend on how a library sums (numpy's matrix product, which did
        the head before, sums in the order its SIMD dispatch picks), and a tile's head takes
        microseconds (the product: 60-75 us of a 2**18-coefficient tile's 375 us)."""
        count = out.shape[0]
        coarse = self.rows_head_levels
        compiled = _compiled.haar_rows_loops() if self.levels else None
        if compiled is not None and _compiled_fits(coefficients, out):
            compiled.inverse(coefficients.reshape(-1), out, self.levels, coarse, loop_table(factors))
            return out
        head = coefficients[: count << coarse].reshape(count, 1 << coarse)
        means: np.ndarray = head[:, :1]
        width = 1
        for level in range(1, self.levels + 1):
            if level <= coarse:  # the head: level l's details of a row after its first 2**(l - 1) coefficients
                detail = head[:, width : 2 * width]
            else:
                detail = coefficients[count * width : 2 * count * width].reshape(count, width)
                if factors is not None:
                    np.multiply(detail, factors[level - coarse - 1][:, None], out=detail)
            finer = out if level == self.levels else np.empty((count, 2 * width))
            np.add(means, detail, out=finer[:, 0::2])
            np.subtract(means, detail, out=finer[:, 1::2])
            means, width = finer, 2 * width
        if not self.levels:
            out[:, :1] = head
        return out

    def rows_weights(self, count: int) -> np.ndarray:
        """W of each coefficient of ``count`` rows in the level-major layout (flat)."""
        coarse = self.rows_head_levels
        head = np.tile(self.weights[: 1 << coarse], count)
        rest = [np.full(count << (level - 1), self.weights[1 << (level - 1)]) for level in range(coarse + 1, self.levels + 1)]
        return np.concatenate([head, *rest])

    @cached_property
    def level_counts(self) -> tuple[int, ...]:
        """Details of each level 1..levels that cover a real value; the others cover padding only:
        their numerators are zero and they change no real value, so the pipeline leaves them out."""
        return tuple(self._covering(level - 1) for level in range(1, self.levels + 1))

    @cached_property
    def kept(self) -> np.ndarray:
        """The coefficients (indices in level order) that cover a real value: the base and the
        first ``level_counts[l - 1]`` details of each level l."""
        first = [np.arange(1 << (level - 1), (1 << (level - 1)) + n) for level, n in enumerate(self.level_counts, 1)]
        return np.concatenate([[0], *first]).astype(np.intp)

    def _covering(self, level: int) -> int:
        """How many of the ``2**level`` subtrees at ``level`` (the means there) cover a real value:
        the others hold padding only."""
        return -(-self.size // (1 << (self.levels - level)))

    @cached_property
    def kept_loop_tables(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """What the compiled kept loops take (int64): :attr:`level_counts` (the forward's), and for
        the inverse each level's values that cover a real value and where its details start."""
        counts = np.array([self._covering(level) for level in range(1, self.levels + 1)], dtype=np.int64)
        starts = np.cumsum([1, *self.level_counts])[:-1].astype(np.int64)
        return np.array(self.level_counts, dtype=np.int64), counts, starts

    @property
    def n_kept(self) -> int:
        return 1 + sum(self.level_counts)

    def kept_numerators(self, x: np.ndarray, axis: int = 0) -> np.ndarray:
        """``numerators(x, axis)[kept]`` along ``axis`` of checked counts, computed without the
        padding-only details: by a compiled loop where numba is installed and ``axis`` is
        outermost in memory (the same exact integers)."""
        sums = np.moveaxis(np.asarray(x, dtype=np.float64), axis, 0)
        out = np.empty((self.n_kept, *sums.shape[1:]))
        loops = _compiled.block_loops()
        lines = _loop_rows(sums) if loops is not None else None
        if loops is not None and lines is not None:
            rows, mid = lines
            columns = rows.shape[1]
            loops.haar_kept_numerators(rows, out.reshape(self.n_kept * mid, columns), self.kept_loop_tables[0],
                                       np.empty(((self.size + 1) // 2 * mid, columns)), mid)
            return back(out, axis)
        coarse = self._product_levels(sums)
        offsets = np.cumsum([1, *self.level_counts])  # where each level's details start
        filled = self.size
        for level in range(self.levels, coarse, -1):
            kept = self.level_counts[level - 1]
            detail = out[offsets[level - 1] : offsets[level - 1] + kept]
            pairs = filled // 2
            parents = np.empty((kept, *sums.shape[1:]))
            left, right = sums[0 : 2 * pairs : 2], sums[1 : 2 * pairs : 2]
            np.subtract(left, right, out=detail[:pairs])
            np.add(left, right, out=parents[:pairs])
            if filled % 2:  # the last subtree's right sibling is all padding
                detail[pairs] = parents[pairs] = sums[filled - 1]
            sums, filled = parents, kept
        head_rows = self.kept[self.kept < 1 << coarse]
        head = _product(_coarse_forward(coarse)[head_rows, :filled], sums[:filled].reshape(filled, -1))
        out[: head_rows.size] = head.reshape((head_rows.size, *sums.shape[1:]))
        return back(out, axis)

    def kept_inverse(self, c: np.ndarray, axis: int = 0, *, out: np.ndarray | None = None) -> np.ndarray:
        """Values along ``axis`` from the kept coefficients (:meth:`kept_numerators`' layout): level
        by level from the base (the mean of every value), each level's means plus and minus its
        details, by a compiled loop where numba is installed (the same operations in the same order
        as numpy's passes, so the same bits on either path and on any machine)."""
        cv = outer(c, axis)
        means = cv[:1]
        if not self.levels:
            return deliver(back(means, axis), out)
        offsets = np.cumsum([1, *self.level_counts])
        loops = _compiled.block_loops()
        if loops is not None:
            values = np.empty((self.size, *cv.shape[1:])) if out is None else np.moveaxis(out, axis, 0)
            lines = _loop_rows(values)
            if lines is not None:
                # every level in one compiled loop: the same sums and differences, the GIL released
                rows, mid = lines
                columns = rows.shape[1]
                _, counts, starts = self.kept_loop_tables
                loops.haar_kept_inverse(cv.reshape(self.n_kept * mid, columns), means.reshape(mid, columns), rows, counts,
                                        starts, np.empty((2 * int(counts[:-1].max(initial=0)) * mid, columns)), mid)
                return back(values, axis) if out is None else out
        details = [cv[offsets[level - 1] : offsets[level]] for level in range(1, self.levels + 1)]
        return self._finer_levels(means, details, axis, out)

    # -- exact variance of interval queries -------------------------------------------
    # V(q) = sum_c (R^T q)_c^2 / W(c)^2 is the noise variance of the count of q per unit
    # 2 lambda^2. For an interval [a, b] only the nodes holding an end of it are partly
    # covered, which gives a closed form in O(1) per interval from per-leaf suffix tables.

    def interval_factor(self, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
        """``V`` of the intervals ``lo..hi`` (inclusive index arrays, ``lo <= hi``)."""
        a = np.asarray(lo, dtype=np.int64)
        b = np.asarray(hi, dtype=np.int64)
        length = (b - a + 1).astype(np.float64)
        if self.levels == 0:
            return length**2
        mp = self.n_coefficients
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
            length**2 * (1.0 / mp**2 + above)
            + straddle
            + left_tail[a, lca_level]
            + right_tail[b, lca_level]
        )

    def worst_case_factor(self) -> float:
        """The largest ``V`` over every interval of the (unpadded) domain.

        Small domains: every interval, vectorised (O(m^2)). Large ones: per level of the
        tree, an upper-envelope search over the interval's two ends (O(m log m)).
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
            b = np.arange(n)[None, :]
            a_full, b_full = np.broadcast_arrays(a, b)
            mask = b_full >= a_full
            best = max(best, float(self.interval_factor(a_full[mask], b_full[mask]).max()))
        return best

    def _worst_by_envelopes(self) -> float:
        """Every interval a < b straddles the middle of one lowest common ancestor, of width w.

        With u = mid - a and v = b - mid + 1 (both in 1..w/2) the closed form of
        :meth:`interval_factor` reads ``alpha (u^2 + v^2) + 2 beta u v + TA(u) + TB(v)``:
        the same for every node of a level (the tails depend on positions within nodes).
        For each u the best v is the upper envelope of the lines ``v k + alpha v^2 + TB(v)``
        at ``k = 2 beta u``: one convex hull per level, queried for every u at once.
        """
        mp, levels = self.n_coefficients, self.levels
        left, right = self._tail_sums
        best = 1.0 / mp**2 + float(self._above_sums[levels])  # single values (a == b)
        for level in range(1, levels + 1):
            width = 1 << (levels - level + 1)
            half = width // 2
            common = 1.0 / mp**2 + float(self._above_sums[level - 1])
            alpha, beta = common + 1.0 / width**2, common - 1.0 / width**2
            u = np.arange(1, half + 1, dtype=np.float64)
            from_left = alpha * u**2 + left[half - np.arange(1, half + 1), level]
            v = np.arange(1, half + 1, dtype=np.float64)
            from_right = alpha * v**2 + right[half + np.arange(half), level]
            # Nodes start at 0, w, 2w, ...: those ending inside the domain allow every v, the
            # one holding the domain's end only v <= size - mid.
            full = self.size // width
            ends = [half] if full else []
            mid = full * width + half
            if mid < self.size:
                ends.append(self.size - mid)
            for last in ends:
                best = max(best, _envelope_max(from_left, 2 * beta * u, v[:last], from_right[:last]))
        return best

    @cached_property
    def _above_sums(self) -> np.ndarray:
        """``sum_{level < L} 1 / width(level)^2`` for L = 1 .. levels + 1 (index L - 1)."""
        widths = np.array([1 << (self.levels - level + 1) for level in range(1, self.levels + 1)], dtype=np.float64)
        return np.concatenate([[0.0], np.cumsum(1.0 / widths**2)])

    @cached_property
    def _tail_sums(self) -> tuple[np.ndarray, np.ndarray]:
        """Per leaf x and level L: the contributions of x's nodes below level L.

        ``left[x, L]``: nodes at levels > L holding the interval's left end x, covered
        from x to their end; ``right[x, L]``: nodes holding the right end x, covered from
        their start to x. Shape ``(n_coefficients, levels + 2)``.
        """
        x = np.arange(self.n_coefficients, dtype=np.int64)[:, None]  # padding too: the envelopes use it
        levels = np.arange(1, self.levels + 1)[None, :]
        width = np.left_shift(1, self.levels - levels + 1)
        start = (x // width) * width
        mid = start + width // 2
        end = start + width
        left = ((np.maximum(mid - x, 0) - (end - np.maximum(x, mid))) / width) ** 2
        right = (((np.minimum(x, mid - 1) - start + 1) - np.maximum(x - mid + 1, 0)) / width) ** 2
        # Suffix sums over levels > L, for L = 0 .. levels + 1.
        def suffix(per_level: np.ndarray) -> np.ndarray:
            out = np.zeros((self.n_coefficients, self.levels + 2))
            out[:, : self.levels] = np.cumsum(per_level[:, ::-1], axis=1)[:, ::-1]
            return out

        return suffix(left), suffix(right)


# The rows layout's head: the base and the levels with at most 2**5 nodes, each row's together
# (few values per position there: see HaarTransform._product_levels).
_COARSE_LEVELS = 5
# Worst cases of domains up to this size look at every interval; larger ones use envelopes.
_ALL_INTERVALS_UP_TO = 2048


def _envelope_max(base: np.ndarray, slopes: np.ndarray, xs: np.ndarray, ys: np.ndarray) -> float:
    """``max_i (base_i + max_j (slopes_i * xs_j + ys_j))`` for increasing ``xs``.

    The inner maximum is attained on the upper convex hull of the points (xs, ys); along
    it, edge slopes decrease, so each query finds its vertex by binary search.
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


def _fine_levels_forward(
    sums: np.ndarray, filled: int, out: np.ndarray, top: int, stop: int
) -> tuple[np.ndarray, int]:
    """Numerators of levels ``top`` down to ``stop + 1``, pairing subtree sums level by level.

    ``sums`` holds the subtree sums of the level below ``top``; only its first ``filled``
    rows can be non-zero (the rest cover the zero padding and cost no work). Returns the
    sums of the subtrees at level ``stop + 1`` and how many of them are filled.
    """
    for level in range(top, stop, -1):
        first = 1 << (level - 1)  # index of the level's first coefficient = its node count
        detail = out[first : 2 * first]
        pairs = filled // 2
        parents = np.empty(((filled + 1) // 2, *sums.shape[1:]))
        left, right = sums[0 : 2 * pairs : 2], sums[1 : 2 * pairs : 2]
        np.subtract(left, right, out=detail[:pairs])
        np.add(left, right, out=parents[:pairs])
        if filled % 2:  # the last subtree's right sibling is all padding
            detail[pairs] = parents[pairs] = sums[filled - 1]
        detail[(filled + 1) // 2 :] = 0.0
        sums, filled = parents, (filled + 1) // 2
    return sums, filled


def loop_table(levels_by_row: np.ndarray | None) -> np.ndarray:
    """Per-level, per-row numbers as the compiled loops take them: C-contiguous float64, empty for none."""
    if levels_by_row is None:
        return _NO_TABLE
    return np.ascontiguousarray(levels_by_row, dtype=np.float64)


_NO_TABLE = np.empty((0, 0))


def _loop_rows(along: np.ndarray) -> tuple[np.ndarray, int] | None:
    """``along`` (float64, the transform's axis first) as the rows the kept loops take, and the
    rows of each value: where it is C-contiguous, one row per value (its other positions side by
    side); else, where its innermost axis is contiguous and the others fold into one stride
    without a copy (a big block's pencil, a view of the intermediate's rows read and written in
    place), one row per line of that axis. None otherwise (numpy's passes then)."""
    if along.dtype != np.float64:
        return None
    if along.flags.c_contiguous:
        return along.reshape(along.shape[0], -1), 1
    shape, strides = along.shape, along.strides
    if along.ndim < 2 or strides[-1] != along.itemsize:
        return None
    folded = [(n, stride) for n, stride in zip(shape[:-1], strides[:-1], strict=True) if n != 1]  # (any stride: one index)
    if any(outer != inner * n for (_, outer), (n, inner) in pairwise(folded)):
        return None
    lines = math.prod(shape[:-1])
    row_stride = folded[-1][1] if folded else shape[-1] * along.itemsize
    rows = np.lib.stride_tricks.as_strided(along, (lines, shape[-1]), (row_stride, along.itemsize))
    return rows, lines // shape[0]


def _compiled_fits(*arrays: np.ndarray) -> bool:
    """Whether the compiled rows loops take these arrays (float64, C-contiguous); others go to numpy."""
    return all(a.dtype == np.float64 and a.flags.c_contiguous for a in arrays)


@cache
def _coarse_forward(levels: int) -> np.ndarray:
    """Numerators of the base and levels 1..``levels`` from the 2**levels subtree sums below."""
    n = 1 << levels
    out = np.empty((n, n))
    sums, _ = _fine_levels_forward(np.eye(n), n, out, levels, 0)
    out[0] = sums[0]
    return out


def _product(matrix: np.ndarray, values: np.ndarray) -> np.ndarray:
    """``matrix @ values`` in numpy's own loop, not BLAS's. BLAS splits a big product across its
    threads, and the inverse's sums of noisy floats then depend on their number (a Dask worker
    process has one): numpy's loop gives the same bits everywhere. BLAS's threads also spin
    for work, which costs several times the product itself on a busy machine (and the
    pipeline's own threads already use every core)."""
    return np.einsum("ij,jk->ik", matrix, values, optimize=False)


@cache
def _coarse_inverse(levels: int) -> np.ndarray:
    """Means of the 2**levels subtrees below level ``levels`` from the coefficients above."""
    n = 1 << levels
    weights = HaarTransform(n).weights
    # numerators = F @ sums; coefficients = numerators / W; means = sums / (leaves per subtree),
    # with one leaf per subtree here: means = F^-1 @ (W * coefficients).
    return np.linalg.inv(_coarse_forward(levels)) * weights[None, :]


def haar_weights(size: int) -> np.ndarray:
    """Weights W_Haar of the ``2**ceil(log2 size)`` Haar coefficients."""
    return HaarTransform(size).weights


def haar_forward(x: np.ndarray, axis: int = -1) -> np.ndarray:
    """Haar coefficients of ``x`` along ``axis`` (zero-padded to a power of two)."""
    x = np.asarray(x, dtype=np.float64)
    return HaarTransform(x.shape[axis]).forward(x, axis)


def haar_inverse(c: np.ndarray, size: int, axis: int = -1) -> np.ndarray:
    """Invert :func:`haar_forward`: ``size`` values along ``axis`` (padding dropped)."""
    return HaarTransform(size).inverse(c, axis)
