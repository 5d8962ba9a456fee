"""The per-axis strategy interface (docs/math.md, "Strategies").

An axis strategy says how one attribute's axis is measured. Along that axis it maps the
``size`` values to ``n_measurements`` *weighted measurements* ``y = F x``, each ``y_r`` an integer
combination of the values divided by a positive integer ``denominators[r]`` (so that a release
can round every measurement to the noise grid exactly), and it reconstructs values from noisy
measurements. A release measures the Kronecker product of its axes' strategies and adds noise of
one scale to every weighted measurement; everything else follows from four numbers per axis and
two maps:

- ``rho``: the largest weighted L1 norm of a column of F (the axis's share of the sensitivity:
  the product over the axes is the release's), and ``influence`` K, the most measurements one
  value changes (the rounding's share of the sensitivity in grid units);
- ``growth``: the largest magnitude of an entry of the integer forward map (the exact integer
  arithmetic's headroom: a numerator is at most this times the sum of the counts);
- ``forward``: counts (int64) to numerators (int64), along the middle axis of a 3-D view;
- ``reconstruct``: noisy weighted measurements (float64) to values, along the middle axis;
- the accuracy of a predicate ``q`` (an interval of the axis; a hierarchy node is one), per unit
  of noise variance on each weighted measurement: its variance ``V(q) = q' S q`` and its
  covariance with the axis's total ``C(q) = q' S 1``, ``S = R R'`` for the reconstruction R.

The base class computes the accuracy figures from dense matrices built with ``forward`` and
``reconstruct``: exact, and fine for axes of a few hundred values; strategies with closed forms
(identity, Haar, nominal) override them.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from fractions import Fraction
from functools import cached_property

import numpy as np

__all__ = ["AxisStrategy", "is_last_axis"]


def is_last_axis(values: np.ndarray, out: np.ndarray) -> bool:
    """Whether the kernels' views ``(outer, axis, inner)`` of ``values`` and ``out`` run along the
    last axis of C-contiguous arrays: then a strategy's row kernels take ``values[:, :, 0]`` and
    ``out[:, :, 0]``, whose contiguous rows let the loops vectorise."""
    return values.shape[2] == 1 and values.flags.c_contiguous and out.flags.c_contiguous


class AxisStrategy(ABC):
    """How one axis is measured and reconstructed (see the module docstring).

    Subclasses set ``kind`` (a short name), ``size`` and ``n_measurements`` and implement the
    abstract members. ``separable`` strategies (the identity of S_A) measure each value on its
    own, so that a release can split its work along them.
    """

    kind: str
    size: int
    n_measurements: int
    separable: bool = False

    @property
    @abstractmethod
    def denominators(self) -> np.ndarray:
        """int64 ``d_r >= 1``: measurement r is ``numerator_r / d_r``."""

    @property
    @abstractmethod
    def rho(self) -> Fraction:
        """The largest weighted L1 norm of a column of the forward map (exact)."""

    @property
    @abstractmethod
    def influence(self) -> int:
        """K: the most measurements that one value changes."""

    @property
    def growth(self) -> int:
        """The largest magnitude of an entry of the integer forward map: a numerator is at most
        this times the sum of the counts (the integer arithmetic's headroom)."""
        return 1

    @abstractmethod
    def forward(self, x: np.ndarray, out: np.ndarray) -> None:
        """Numerators into ``out`` (int64 ``(outer, n_measurements, inner)``) of counts ``x``
        (int64 ``(outer, size, inner)``).

        Parameters
        ----------
        x : numpy.ndarray
            int64, shape ``(outer, size, inner)``: counts (or numerators of an earlier axis).
        out : numpy.ndarray
            int64, shape ``(outer, n_measurements, inner)``; overwritten.
        """

    @abstractmethod
    def reconstruct(self, y: np.ndarray, out: np.ndarray) -> None:
        """Values into ``out`` (float64 ``(outer, size, inner)``) from noisy weighted measurements
        ``y`` (float64 ``(outer, n_measurements, inner)``).

        Parameters
        ----------
        y : numpy.ndarray
            float64, shape ``(outer, n_measurements, inner)``.
        out : numpy.ndarray
            float64, shape ``(outer, size, inner)``; overwritten.
        """

    @property
    def weights(self) -> np.ndarray:
        """W of each measurement: the weighted measurement over the plain coefficient (the
        paper's weights for the wavelets; 1 where the measurement is its own coefficient)."""
        return np.ones(self.n_measurements)

    # -- accuracy, per unit of noise variance on each weighted measurement --------------------
    def interval_variances(self, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
        """``V`` of the intervals ``lo..hi`` (inclusive index arrays).

        Parameters
        ----------
        lo, hi : numpy.ndarray
            Integer arrays of one shape, ``0 <= lo <= hi < size``.

        Returns
        -------
        numpy.ndarray
            float64, one per interval: variance per unit of noise variance on a weighted measurement.
        """
        cumulative = self._covariance_prefix
        lo, hi = np.asarray(lo, dtype=np.int64), np.asarray(hi, dtype=np.int64) + 1
        return cumulative[hi, hi] - cumulative[lo, hi] - cumulative[hi, lo] + cumulative[lo, lo]

    def interval_total_covariances(self, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
        """``C`` of the intervals ``lo..hi``: their covariance with the axis's total.

        Parameters
        ----------
        lo, hi : numpy.ndarray
            Integer arrays of one shape, ``0 <= lo <= hi < size``.

        Returns
        -------
        numpy.ndarray
            float64, one per interval, per unit of noise variance on a weighted measurement.
        """
        rows = np.concatenate([[0.0], np.cumsum(self.covariance.sum(axis=1))])
        return rows[np.asarray(hi, dtype=np.int64) + 1] - rows[np.asarray(lo, dtype=np.int64)]

    def predicate_variances(self, lo: np.ndarray, hi: np.ndarray, nodes: np.ndarray) -> np.ndarray:
        """``V`` of predicates given as inclusive intervals ``lo..hi``; on a nominal axis
        ``nodes`` also names each one's hierarchy node (level order; -1 elsewhere), which a
        strategy over that hierarchy reads instead.

        Parameters
        ----------
        lo, hi : numpy.ndarray
            Integer arrays of one shape, ``0 <= lo <= hi < size``.
        nodes : numpy.ndarray
            Integer array of that shape: level-order hierarchy nodes, or -1.

        Returns
        -------
        numpy.ndarray
            float64, one per predicate: variance per unit of noise variance on a weighted measurement.
        """
        return self.interval_variances(lo, hi)

    def predicate_total_covariances(self, lo: np.ndarray, hi: np.ndarray, nodes: np.ndarray) -> np.ndarray:
        """``C`` of predicates (as :meth:`predicate_variances` takes them).

        Parameters
        ----------
        lo, hi : numpy.ndarray
            Integer arrays of one shape, ``0 <= lo <= hi < size``.
        nodes : numpy.ndarray
            Integer array of that shape: level-order hierarchy nodes, or -1.

        Returns
        -------
        numpy.ndarray
            float64, one per predicate, per unit of noise variance on a weighted measurement.
        """
        return self.interval_total_covariances(lo, hi)

    def total_variance(self) -> float:
        """``T = 1' S 1``: the axis's total's own factor.

        Returns
        -------
        float
            Per unit of noise variance on a weighted measurement.
        """
        return float(self.covariance.sum())

    def worst_interval_variance(self) -> float:
        """The largest ``V`` over every interval of the axis.

        Returns
        -------
        float
            Per unit of noise variance on a weighted measurement.
        """
        lo, hi = np.triu_indices(self.size)
        return float(self.interval_variances(lo, hi).max())

    @cached_property
    def covariance(self) -> np.ndarray:
        """``S = R R'`` (size x size), dense."""
        reconstruction = self.reconstruction_matrix()
        return reconstruction @ reconstruction.T

    def reconstruction_matrix(self) -> np.ndarray:
        """R (size x n_measurements): the values from unit weighted measurements, one column each.

        Returns
        -------
        numpy.ndarray
            float64, shape ``(size, n_measurements)``.
        """
        units = np.eye(self.n_measurements).reshape(1, self.n_measurements, self.n_measurements)
        values = np.empty((1, self.size, self.n_measurements))
        self.reconstruct(units, values)
        return values[0]

    def measurement_matrix(self) -> np.ndarray:
        """The forward map F (n_measurements x size) as exact rationals in float64 (numerators over
        denominators): weighted measurements of unit counts.

        Returns
        -------
        numpy.ndarray
            float64, shape ``(n_measurements, size)``.
        """
        units = np.eye(self.size, dtype=np.int64).reshape(1, self.size, self.size)
        numerators = np.empty((1, self.n_measurements, self.size), dtype=np.int64)
        self.forward(units, numerators)
        return numerators[0] / self.denominators[:, None]

    @cached_property
    def _covariance_prefix(self) -> np.ndarray:
        """2-D prefix sums of S with a zero first row and column."""
        cumulative = np.zeros((self.size + 1, self.size + 1))
        cumulative[1:, 1:] = self.covariance.cumsum(axis=0).cumsum(axis=1)
        return cumulative

    def __repr__(self) -> str:
        return f"{type(self).__name__}(size={self.size}, n_measurements={self.n_measurements})"

