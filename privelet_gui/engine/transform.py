"""What every one-axis transform provides, and the identity axis of Privelet+.

A transform maps the ``size`` entries along one axis to ``n_coefficients``
coefficients. It is computed in two steps so that a release can round exactly:
integer inputs give integer *numerators* ``z`` (exact in float64), and

- the coefficient is ``c = z / divisors``;
- the weighted coefficient is ``W * c = z / denominators``.

``rho`` is the generalized sensitivity (largest weighted L1 norm of a column of
the transform) and ``influence`` the largest number of coefficients one entry
can change (K in math.md).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from functools import cached_property

import numpy as np

__all__ = ["AxisTransform", "IdentityTransform", "along", "back", "outer"]


def outer(x: np.ndarray, axis: int, *, copy: bool = False) -> np.ndarray:
    """``x`` as float64 with ``axis`` first *and outermost in memory* (copied only if needed).

    Along axis 0 of a C-ordered array every step reads or writes whole contiguous
    slabs, several times faster than striding through the innermost axis.
    """
    view = np.moveaxis(np.asarray(x, dtype=np.float64), axis, 0)
    if copy:
        return np.array(view, order="C")
    return view if view.flags.c_contiguous else np.ascontiguousarray(view)


def back(x: np.ndarray, axis: int) -> np.ndarray:
    """Undo :func:`outer`: a view with axis 0 moved back to ``axis`` (memory stays as is)."""
    return np.moveaxis(x, 0, axis)


def deliver(values: np.ndarray, out: np.ndarray | None) -> np.ndarray:
    """``values``, or a copy of them in ``out`` when one is given (the ``out=`` convention)."""
    if out is None:
        return values
    np.copyto(out, values)
    return out


def along(vector: np.ndarray, axis: int, ndim: int) -> np.ndarray:
    """``vector`` reshaped to broadcast along ``axis`` of an ``ndim``-dimensional array."""
    shape = [1] * ndim
    shape[axis] = -1
    return np.reshape(vector, shape)


class AxisTransform(ABC):
    """Interface of the per-axis transforms (Haar, nominal, identity)."""

    kind: str
    size: int
    n_coefficients: int

    @property
    @abstractmethod
    def rho(self) -> int:
        """Generalized sensitivity: the largest weighted L1 norm of a column."""

    @property
    @abstractmethod
    def influence(self) -> int:
        """K: the most coefficients one entry changes."""

    @property
    @abstractmethod
    def weights(self) -> np.ndarray:
        """W(c) per coefficient; ``inf`` for coefficients that are identically zero."""

    @property
    @abstractmethod
    def divisors(self) -> np.ndarray:
        """``numerators / divisors`` are the coefficients."""

    @property
    @abstractmethod
    def denominators(self) -> np.ndarray:
        """``numerators / denominators`` are the weighted coefficients (integers; 1 where the
        coefficient is identically zero, whose numerator is 0)."""

    @property
    def max_denominator(self) -> int:
        return int(self.denominators.max())

    @property
    def growth(self) -> float:
        """Bound on |intermediate| / (L1 of the input) while computing numerators."""
        return 1.0

    @abstractmethod
    def numerators(self, x: np.ndarray, axis: int = -1) -> np.ndarray:
        """Integer numerators of the coefficients along ``axis`` (exact for integer input)."""

    def count_numerators(self, x: np.ndarray, axis: int = -1) -> np.ndarray:
        """:meth:`numerators` of checked counts (non-negative integers whose numerators stay
        below 2**53, as the release pipeline checks): every order of their sums gives the same
        bits, so a transform may take a faster route than :meth:`numerators`, which keeps
        numpy's order for any input."""
        return self.numerators(x, axis)

    def forward(self, x: np.ndarray, axis: int = -1) -> np.ndarray:
        """Coefficients of ``x`` along ``axis`` (``numerators / divisors``)."""
        z = self.numerators(x, axis)
        z /= along(self.divisors, axis, z.ndim)
        return z

    @abstractmethod
    def inverse(
        self, c: np.ndarray, axis: int = -1, *, overwrite_input: bool = False, out: np.ndarray | None = None
    ) -> np.ndarray:
        """Values along ``axis`` from coefficients.

        ``overwrite_input=True`` allows the transform to use ``c`` as its workspace,
        saving a copy (transforms that need no workspace ignore it). ``out``, an array
        of the result's shape, receives the values (and is returned).
        """

    @abstractmethod
    def worst_case_factor(self) -> float:
        """Largest per-axis variance factor V over the queries this axis allows."""

    # Coefficients the release leaves out because they change no released value (the Haar
    # transform's padding-only details); by default none.
    @property
    def kept(self) -> np.ndarray:
        """Indices of the coefficients a release draws noise for (all, unless overridden)."""
        return np.arange(self.n_coefficients)

    @property
    def n_kept(self) -> int:
        return self.n_coefficients

    def kept_numerators(self, x: np.ndarray, axis: int = 0) -> np.ndarray:
        """``numerators(x, axis)[kept]`` along ``axis``, of checked counts (as :meth:`count_numerators`)."""
        return self.count_numerators(x, axis)

    def kept_inverse(self, c: np.ndarray, axis: int = 0, *, out: np.ndarray | None = None) -> np.ndarray:
        """Values along ``axis`` from the kept coefficients."""
        return self.inverse(c, axis, overwrite_input=True, out=out)


class IdentityTransform(AxisTransform):
    """An attribute in S_A: no transform, weight 1, rho 1 (Basic on this axis)."""

    kind = "identity"

    def __init__(self, size: int):
        self.size = int(size)
        self.n_coefficients = self.size

    @property
    def rho(self) -> int:
        return 1

    @property
    def influence(self) -> int:
        return 1

    @cached_property
    def weights(self) -> np.ndarray:
        return np.ones(self.size)

    @property
    def divisors(self) -> np.ndarray:
        return self.weights

    @property
    def denominators(self) -> np.ndarray:
        return self.weights

    def numerators(self, x: np.ndarray, axis: int = -1) -> np.ndarray:
        return np.array(x, dtype=np.float64)

    def inverse(
        self, c: np.ndarray, axis: int = -1, *, overwrite_input: bool = False, out: np.ndarray | None = None
    ) -> np.ndarray:
        return deliver(np.asarray(c, dtype=np.float64), out)

    def worst_case_factor(self) -> float:
        return float(self.size)
