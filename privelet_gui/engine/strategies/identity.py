"""The identity strategy: an attribute in S_A, each value measured on its own (Basic on this axis)."""

from __future__ import annotations

from fractions import Fraction
from functools import cached_property

import numpy as np

from .base import AxisStrategy

__all__ = ["IdentityTransform"]


class IdentityTransform(AxisStrategy):
    """No transform: weight 1, rho 1, one measurement per value (docs/math.md, "Strategies").

    Parameters
    ----------
    size : int
        Number of values of the axis (at least 1).

    Raises
    ------
    ValueError
        ``size`` is less than 1.

    Examples
    --------
    >>> t = IdentityTransform(4)
    >>> t.rho, t.influence, t.interval_variances(np.array([1]), np.array([2])).tolist()
    (Fraction(1, 1), 1, [2.0])
    """

    kind = "identity"
    separable = True

    def __init__(self, size: int):
        if size < 1:
            raise ValueError(f"an axis needs at least one value, got size {size}")
        self.size = int(size)
        self.n_measurements = self.size

    @cached_property
    def denominators(self) -> np.ndarray:
        return np.ones(self.size, dtype=np.int64)

    @property
    def rho(self) -> Fraction:
        return Fraction(1)

    @property
    def influence(self) -> int:
        return 1

    def forward(self, x: np.ndarray, out: np.ndarray) -> None:
        np.copyto(out, x)

    def reconstruct(self, y: np.ndarray, out: np.ndarray) -> None:
        np.copyto(out, y)

    def interval_variances(self, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
        return (np.asarray(hi, dtype=np.int64) - np.asarray(lo, dtype=np.int64) + 1).astype(np.float64)

    def interval_total_covariances(self, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
        return self.interval_variances(lo, hi)

    def total_variance(self) -> float:
        return float(self.size)

    def worst_interval_variance(self) -> float:
        return float(self.size)
