"""An identity stacked on a few dense rows, optimised for a workload (docs/math.md, "Optimised identity").

HDMM's p-Identity strategy (McKenna et al. 2018) on one axis: every value is counted, and ``p``
more rows each count a non-negative mix of the values; the columns share one L1 norm, so each
value has the same influence. The mix is learned for the workload (see
:func:`~privelet_gui.engine.accuracy.strategy_search.optimise_stacked_identity`) and the values
are reconstructed by least squares.

The strategy is exact: its entries are integers over ``2^bits``, every column summing to
``2^bits``, so rho is exactly 1. Its name holds its whole definition (the rows' integers,
compressed), so a release file and a script that redoes it name it completely.
"""

from __future__ import annotations

import base64
import math
import zlib
from fractions import Fraction
from functools import cached_property

import numpy as np

from ..errors import SchemaError
from ..kernels import transforms
from .base import AxisStrategy

__all__ = ["StackedIdentity"]

#: The name's prefix: ``stacked/BITS/P/DATA``.
PREFIX = "stacked"


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
    def optimised(cls, gram: np.ndarray, rows: int, *, bits: int = 12, iterations: int = 300) -> StackedIdentity:
        """The strategy with ``rows`` extra rows whose least-squares error ``trace(G (A'A)^-1)`` on
        the workload's Gram matrix ``G`` (size x size) is smallest, as found by projected gradient
        descent with backtracking from a fixed start (docs/math.md, "Optimised identity"), then
        rounded to integers over ``2^bits``.

        Parameters
        ----------
        gram : numpy.ndarray
            The workload's (weighted) Gram matrix on this axis, size x size, symmetric and
            non-negative (:func:`~privelet_gui.engine.accuracy.workloads.axis_gram`).
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
        size = gram.shape[0]
        theta = np.random.default_rng(0).random((rows, size))
        value, gradient = _objective(theta, gram)
        step = 1e-3
        for _ in range(iterations):
            while True:
                trial = np.maximum(theta - step * gradient, 0.0)
                trial_value, trial_gradient = _objective(trial, gram)
                if math.isfinite(trial_value) and trial_value <= value - 1e-4 * float(np.sum(gradient * (theta - trial))):
                    break
                step *= 0.5
                if step < 1e-12:
                    return cls._rounded(theta, bits)
            theta, value, gradient = trial, trial_value, trial_gradient
            step *= 1.5
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

    @cached_property
    def _least_squares(self) -> np.ndarray:
        return np.linalg.pinv(self.measurement_matrix())

    def reconstruct(self, y: np.ndarray, out: np.ndarray) -> None:
        transforms.dense_reconstruct(y, out, self._least_squares)

    def reconstruction_matrix(self) -> np.ndarray:
        return self._least_squares.copy()

    def __repr__(self) -> str:
        return f"StackedIdentity(size={self.size}, rows={self.rows.shape[0]}, bits={self.bits})"


def _objective(theta: np.ndarray, gram: np.ndarray) -> tuple[float, np.ndarray]:
    """``trace(G (A'A)^-1)`` for ``A = [I; theta] D`` (columns scaled to L1 norm 1) and its
    gradient in ``theta``: with ``s = 1 + 1' theta`` and ``X = I + theta' theta``, the value is
    ``s' (G o X^-1) s`` (docs/math.md, "Optimised identity")."""
    size = gram.shape[0]
    s = 1.0 + theta.sum(axis=0)
    inverse = np.linalg.inv(np.eye(size) + theta.T @ theta)
    weighted = gram * inverse
    value = float(s @ weighted @ s)
    outer = np.outer(s, s) * gram
    gradient = np.broadcast_to(2.0 * weighted @ s, theta.shape) - 2.0 * theta @ inverse @ outer @ inverse
    return value, gradient
