"""An identity stacked on a few dense rows, optimised for a workload (docs/math.md, "Optimised identity").

HDMM's p-Identity strategy (McKenna et al. 2018) on one axis: every value is counted, and ``p``
more rows each count a non-negative mix of the values; the columns share one L1 norm, so each
value has the same influence. The mix is learned for the workload (:meth:`StackedIdentity.optimised`)
and the values are reconstructed by least squares. Both work through a p x p matrix, never one of
the axis's size squared, so axes of thousands of values take it.

The strategy is exact: its entries are integers over ``2^bits``, every column summing to
``2^bits``, so rho is exactly 1. Its name holds its whole definition (the rows' integers,
compressed), so a release file and a script that redoes it name it completely.
"""

from __future__ import annotations

import base64
import math
import zlib
from dataclasses import dataclass
from fractions import Fraction
from functools import cached_property

import numpy as np

from ..errors import SchemaError
from ..kernels import transforms
from .base import AxisStrategy

__all__ = ["IntervalGram", "StackedIdentity"]

#: The name's prefix: ``stacked/BITS/P/DATA``.
PREFIX = "stacked"
#: How many past values the optimiser's line search may compare a step with (a step may rise above
#: the last value, not above the largest of these).
LINE_SEARCH_MEMORY = 10


@dataclass(frozen=True)
class IntervalGram:
    """``G = sum_r weights[r] q_r q_r'`` over intervals ``q_r = lo[r]..hi[r]`` (inclusive) of an
    axis of ``size`` values: a workload's Gram matrix on one axis, kept as its intervals so that
    ``G`` times a matrix of k columns costs (intervals + size) k, not size^2 k.

    Attributes
    ----------
    size : int
        The axis's number of values.
    lo, hi : numpy.ndarray
        int64, one per interval.
    weights : numpy.ndarray
        float64, one per interval (non-negative).
    """

    size: int
    lo: np.ndarray
    hi: np.ndarray
    weights: np.ndarray

    def times(self, matrix: np.ndarray) -> np.ndarray:
        """``G matrix`` for a matrix of ``size`` rows."""
        out = np.empty(matrix.shape)
        transforms.interval_gram_product(self.lo, self.hi, self.weights, np.ascontiguousarray(matrix, dtype=np.float64), out)
        return out

    def diagonal(self) -> np.ndarray:
        """``G``'s diagonal: each value's summed weight over the intervals holding it."""
        spread = np.zeros(self.size + 1)
        np.add.at(spread, self.lo, self.weights)
        np.add.at(spread, self.hi + 1, -self.weights)
        return np.cumsum(spread[:-1])

    def dense(self) -> np.ndarray:
        """``G`` as a size x size matrix."""
        return self.times(np.eye(self.size))


class StackedIdentity(AxisStrategy):
    """Each value counted with weight ``diagonal[i]``, then ``rows`` (p x size non-negative
    integers), all over ``2^bits``; every column sums to ``2^bits``.

    Parameters
    ----------
    rows : numpy.ndarray
        The extra rows' numerators, non-negative integers of shape (p, size) whose columns sum
        below ``2^bits`` (each value's own count takes the rest).
    bits : int
        The common denominator is ``2^bits``.

    Raises
    ------
    SchemaError
        When ``rows`` is not a matrix of non-negative integers whose columns sum below ``2^bits``.

    Examples
    --------
    >>> s = StackedIdentity(np.array([[512, 512, 0, 0]]), bits=10)
    >>> s.diagonal.tolist(), s.rho, s.n_measurements
    ([512, 512, 1024, 1024], Fraction(1, 1), 5)
    >>> StackedIdentity.from_name(4, s.name).rows.tolist()
    [[512, 512, 0, 0]]
    """

    kind = "stacked"

    def __init__(self, rows: np.ndarray, bits: int):
        rows = np.ascontiguousarray(rows, dtype=np.int64)
        scale = 1 << bits
        if rows.ndim != 2 or (rows < 0).any() or (rows.sum(axis=0) >= scale).any():
            raise SchemaError("a stacked identity's rows are non-negative integers whose columns sum below 2^bits")
        self.rows, self.bits = rows, int(bits)
        self.size = rows.shape[1]
        self.n_measurements = self.size + rows.shape[0]
        self.diagonal = scale - rows.sum(axis=0)

    @classmethod
    def optimised(cls, gram: IntervalGram, rows: int, *, bits: int = 12, iterations: int = 300) -> StackedIdentity:
        """The strategy with ``rows`` extra rows whose least-squares error ``trace(G (A'A)^-1)`` on
        the workload's Gram matrix ``G`` is smallest, as found by spectral projected gradient
        descent from a fixed start (docs/math.md, "Optimised identity"), then rounded to integers
        over ``2^bits``.

        Parameters
        ----------
        gram : IntervalGram
            The workload's (weighted) Gram matrix on this axis
            (:func:`~privelet_gui.engine.accuracy.workloads.axis_gram`).
        rows : int
            How many extra rows to learn (p >= 1).
        bits : int, default 12
            The entries are integers over ``2^bits``.
        iterations : int, default 300
            Steps of the descent.

        Returns
        -------
        StackedIdentity
            The learned strategy, exact on the grid (rho 1).
        """
        theta = np.random.default_rng(0).random((rows, gram.size))
        diagonal = gram.diagonal()
        value, gradient = _objective(theta, gram, diagonal)
        recent = [value]
        step = _first_step(theta, gradient)
        for iteration in range(iterations):
            direction = np.maximum(theta - step * gradient, 0.0) - theta
            slope = float(np.sum(gradient * direction))
            if not slope < 0.0:
                break  # no feasible descent: a stationary point
            reference, fraction = max(recent[-LINE_SEARCH_MEMORY:]), 1.0
            while True:
                trial = theta + fraction * direction
                trial_value, trial_gradient = _objective(trial, gram, diagonal)
                if math.isfinite(trial_value) and trial_value <= reference + 1e-4 * fraction * slope:
                    break
                fraction *= 0.5
                if fraction < 1e-10:
                    return cls._rounded(theta, bits)
            moved, change = trial - theta, trial_gradient - gradient
            curvature = float(np.sum(moved * change))
            theta, gradient = trial, trial_gradient
            recent.append(trial_value)
            if curvature > 0:  # the two Barzilai-Borwein steps in turn: |s|^2 / s'y, then s'y / |y|^2
                long_step = iteration % 2 == 0
                step = min(float(np.sum(moved * moved)) / curvature if long_step
                           else curvature / float(np.sum(change * change)), 1e10)
            else:
                step = _first_step(theta, gradient)
        return cls._rounded(theta, bits)

    @classmethod
    def _rounded(cls, theta: np.ndarray, bits: int) -> StackedIdentity:
        """``[I; theta]`` with its columns scaled to L1 norm 1, its extra rows rounded down to
        integers over ``2^bits`` (the identity takes what the rounding leaves)."""
        scale = 1 << bits
        normalised = theta / (1.0 + theta.sum(axis=0))
        rows = np.floor(normalised * scale).astype(np.int64)
        # a column whose rows took everything (a huge theta) keeps one unit for its own count
        excess = np.maximum(rows.sum(axis=0) - (scale - 1), 0)
        rows[int(np.argmax(rows.sum(axis=1))), :] -= excess
        return cls(np.maximum(rows, 0), bits)

    @cached_property
    def name(self) -> str:
        data = base64.urlsafe_b64encode(zlib.compress(self.rows.astype("<u2").tobytes(), 9)).decode("ascii")
        return f"{PREFIX}/{self.bits}/{self.rows.shape[0]}/{data}"

    @classmethod
    def from_name(cls, size: int, name: str) -> StackedIdentity:
        """The strategy a name of :attr:`name`'s form defines, on an axis of ``size`` values.

        Parameters
        ----------
        size : int
            The axis's number of values.
        name : str
            ``stacked/BITS/P/DATA`` as :attr:`name` writes it.

        Returns
        -------
        StackedIdentity

        Raises
        ------
        SchemaError
            When the name is not such a strategy for ``size`` values.
        """
        try:
            prefix, bits_text, count_text, data = name.split("/")
            bits, count = int(bits_text), int(count_text)
            if prefix != PREFIX or not 1 <= bits <= 15 or count < 1:
                raise ValueError
            raw = zlib.decompress(base64.urlsafe_b64decode(data.encode("ascii")))
            rows = np.frombuffer(raw, dtype="<u2").astype(np.int64).reshape(count, size)
        except (ValueError, zlib.error):
            raise SchemaError(f"{name[:40]!r}... is not a stacked identity for {size} values") from None
        return cls(rows, bits)

    # -- the measurements -----------------------------------------------------------------------
    @cached_property
    def denominators(self) -> np.ndarray:
        return np.full(self.n_measurements, 1 << self.bits, dtype=np.int64)

    @property
    def rho(self) -> Fraction:
        return Fraction(1)  # every column's entries sum to the denominator

    @cached_property
    def influence(self) -> int:
        return int(1 + (self.rows > 0).sum(axis=0).max())

    @property
    def growth(self) -> int:
        return int(max(self.diagonal.max(), self.rows.max(initial=0)))

    def forward(self, x: np.ndarray, out: np.ndarray) -> None:
        transforms.stacked_forward(x, out, self.diagonal, self.rows)

    # -- least squares through the p x p core (docs/math.md, "Optimised identity") -------------
    @cached_property
    def _theta(self) -> np.ndarray:
        """The rounded mix: ``rows`` over each column's identity weight (p x size)."""
        return self.rows / self.diagonal

    @cached_property
    def _core(self) -> np.ndarray:
        """``K = I + theta theta'`` (p x p): ``(A'A)^-1`` needs no other inverse."""
        return np.eye(self.rows.shape[0]) + self._theta @ self._theta.T

    @cached_property
    def _value_scale(self) -> np.ndarray:
        """``2^bits / diagonal``: the identity row's inverse weight per value."""
        return (1 << self.bits) / self.diagonal

    @cached_property
    def _core_inverse(self) -> np.ndarray:
        return np.linalg.inv(self._core)

    def reconstruct(self, y: np.ndarray, out: np.ndarray) -> None:
        transforms.stacked_reconstruct(y, out, self._theta, self._core_inverse, self._value_scale)

    @cached_property
    def _low_rank_prefix(self) -> tuple[np.ndarray, np.ndarray]:
        """The covariance is ``S = E^2 - Z' Z`` with ``E = diag(2^bits / diagonal)`` and
        ``Z = L^-1 theta E`` (p x size, ``L L' = K``): the prefix sums of ``E^2``'s diagonal and
        of ``Z``'s columns ((size + 1) and (size + 1) x p, zero first)."""
        low_rank = np.linalg.solve(np.linalg.cholesky(self._core), self._theta * self._value_scale)
        diagonal_prefix = np.concatenate([[0.0], np.cumsum(self._value_scale**2)])
        low_rank_prefix = np.zeros((self.size + 1, low_rank.shape[0]))
        np.cumsum(low_rank.T, axis=0, out=low_rank_prefix[1:])
        return diagonal_prefix, low_rank_prefix

    def _interval_parts(self, lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Per interval, ``q' E^2 q`` and ``Z q``."""
        diagonal_prefix, low_rank_prefix = self._low_rank_prefix
        lo, hi = np.ravel(np.asarray(lo, dtype=np.int64)), np.ravel(np.asarray(hi, dtype=np.int64)) + 1
        return diagonal_prefix[hi] - diagonal_prefix[lo], low_rank_prefix[hi] - low_rank_prefix[lo]

    def interval_variances(self, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
        diagonal, low_rank = self._interval_parts(lo, hi)
        return diagonal - np.einsum("ij,ij->i", low_rank, low_rank)

    def interval_total_covariances(self, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
        diagonal, low_rank = self._interval_parts(lo, hi)
        return diagonal - low_rank @ self._low_rank_prefix[1][-1]

    def total_variance(self) -> float:
        return float(self.interval_variances(np.array([0]), np.array([self.size - 1]))[0])

    def worst_interval_variance(self) -> float:
        """Over every interval ``lo..hi``: ``V = (c[hi + 1] - c[lo]) - |P[hi + 1] - P[lo]|^2`` for
        the prefix sums ``c`` and ``P`` of :attr:`_low_rank_prefix`, from the Gram matrix of ``P``.

        Returns
        -------
        float
            Per unit of noise variance on a weighted measurement.
        """
        diagonal_prefix, low_rank_prefix = self._low_rank_prefix
        gram = low_rank_prefix @ low_rank_prefix.T
        square = np.diag(gram).copy()
        worst = 0.0
        for end in range(1, self.size + 1):
            spread = square[end] + square[:end] - 2.0 * gram[end, :end]
            worst = max(worst, float((diagonal_prefix[end] - diagonal_prefix[:end] - spread).max()))
        return worst

    def __repr__(self) -> str:
        return f"StackedIdentity(size={self.size}, rows={self.rows.shape[0]}, bits={self.bits})"


def _first_step(theta: np.ndarray, gradient: np.ndarray) -> float:
    """A step that moves no entry by more than 0.1 along the projected gradient (the start's
    entries are below 1: a longer first step zeroes most of them at once and the descent stalls)."""
    largest = float(np.abs(np.maximum(theta - gradient, 0.0) - theta).max())
    return 0.1 / largest if largest > 0 else 1.0


def _objective(theta: np.ndarray, gram: IntervalGram, diagonal: np.ndarray) -> tuple[float, np.ndarray]:
    """``trace(G (A'A)^-1)`` for ``A = [I; theta] D`` (columns scaled to L1 norm 1) and its
    gradient in ``theta`` through the p x p core ``K = I + theta theta'`` (docs/math.md,
    "Optimised identity"): with ``s = 1 + 1' theta``, ``P = theta diag(s)``, ``Y = G P'`` and
    ``H = P Y``, the value is ``sum_i G_ii s_i^2 - trace(K^-1 H)``; ``diagonal`` is ``G``'s."""
    extra = theta.shape[0]
    s = 1.0 + theta.sum(axis=0)
    weighted = theta * s
    product = gram.times(weighted.T)
    core_inverse = np.linalg.inv(np.eye(extra) + theta @ theta.T)
    inner = weighted @ product
    value = float(diagonal @ (s * s) - np.sum(core_inverse * inner))
    solved = core_inverse @ theta
    per_value = 2.0 * (diagonal * s - np.einsum("ik,ki->i", product, solved))
    gradient = per_value[None, :] - 2.0 * (core_inverse @ (product.T * s) - core_inverse @ inner @ solved)
    return value, gradient
