"""The multi-dimensional Haar-nominal (HN) transform of Privelet+.

Each attribute not in S_A gets its one-dimensional transform along its axis
(Haar if ordinal, nominal if it has a hierarchy); attributes in S_A are left
untransformed. Weights multiply across axes and so does rho.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from functools import cached_property, lru_cache

import numpy as np

from .errors import SchemaError
from .haar import HaarTransform
from .model.schema import Attribute, NominalAttribute, Schema
from .nominal import NominalTransform
from .transform import AxisTransform, IdentityTransform, along

__all__ = ["TransformPlan", "axis_transform", "hn_forward", "hn_inverse"]


def axis_transform(attribute: Attribute) -> AxisTransform:
    """The one-dimensional transform Privelet applies to ``attribute``."""
    if isinstance(attribute, NominalAttribute):
        return NominalTransform(attribute.hierarchy)
    return HaarTransform(attribute.size)


class TransformPlan:
    """The per-axis transforms of Privelet+ for a schema and a set S_A.

    Examples
    --------
    >>> from privelet_gui.engine import Hierarchy, NominalAttribute, OrdinalAttribute, Schema
    >>> schema = Schema([OrdinalAttribute.integer_range("age", 0, 15),
    ...                  NominalAttribute("sex", Hierarchy.flat(["F", "M"]))])
    >>> plan = TransformPlan(schema, sa=["sex"])
    >>> plan.rho, plan.transformed_axes, plan.coefficient_shape
    (5, (0,), (16, 2))
    """

    def __init__(self, schema: Schema, sa: Iterable[str] = ()):
        self.schema = schema
        self.sa: tuple[str, ...] = tuple(schema[i].name for i in schema.axes(list(sa)))
        sa_axes = set(schema.axes(self.sa))
        self.transforms: tuple[AxisTransform, ...] = tuple(
            IdentityTransform(a.size) if i in sa_axes else _cached_transform(a) for i, a in enumerate(schema)
        )

    @property
    def shape(self) -> tuple[int, ...]:
        """Shape of M."""
        return tuple(t.size for t in self.transforms)

    @cached_property
    def transformed_axes(self) -> tuple[int, ...]:
        return tuple(i for i, t in enumerate(self.transforms) if t.kind != "identity")

    @property
    def identity_axes(self) -> tuple[int, ...]:
        return tuple(i for i, t in enumerate(self.transforms) if t.kind == "identity")

    @property
    def rho(self) -> int:
        """rho_HN: the product of the per-axis generalized sensitivities."""
        return math.prod(t.rho for t in self.transforms)

    @property
    def influence(self) -> int:
        """K: the most coefficients that one cell of M changes."""
        return math.prod(t.influence for t in self.transforms)

    @property
    def coefficient_shape(self) -> tuple[int, ...]:
        return tuple(t.n_coefficients for t in self.transforms)

    @property
    def max_denominator(self) -> int:
        """Largest product of per-axis denominators (weighted coefficient = z / denominator)."""
        return math.prod(t.max_denominator for t in self.transforms)

    @cached_property
    def growth(self) -> float:
        """max |z| <= growth * n for a matrix of n tuples (asked by every block of a release)."""
        return math.prod(t.growth for t in self.transforms)

    def numerators(self, matrix: np.ndarray) -> np.ndarray:
        """Integer numerators ``z`` of every coefficient (exact for integer counts)."""
        z = np.asarray(matrix, dtype=np.float64)
        for axis in self.transformed_axes:
            z = self.transforms[axis].numerators(z, axis)
        return z

    def inverse(self, coefficients: np.ndarray) -> np.ndarray:
        """M from coefficients, along axes d..1 (mean subtraction in nominal axes)."""
        out = coefficients
        for axis in self.transformed_axes[::-1]:
            out = self.transforms[axis].inverse(out, axis)
        return out

    def axis_name(self, axis: int) -> str:
        return self.schema[axis].name

    def divide(self, array: np.ndarray, per_axis: str) -> np.ndarray:
        """Divide ``array`` (coefficient-shaped) in place by a per-axis vector, axis by axis.

        ``per_axis`` is ``"divisors"`` (numerators -> coefficients), ``"denominators"``
        (numerators -> weighted coefficients) or ``"weights"`` (weighted -> coefficients).
        """
        for axis in self.transformed_axes:
            vector = getattr(self.transforms[axis], per_axis)
            if np.any(vector != 1):
                array /= along(vector, axis, array.ndim)
        return array

    @cached_property
    def weights(self) -> np.ndarray:
        """W_HN of every coefficient (the outer product of per-axis weights)."""
        w = np.ones(self.coefficient_shape)
        for axis, t in enumerate(self.transforms):
            w = w * along(t.weights, axis, w.ndim)
        return w


@lru_cache(maxsize=64)
def _cached_transform(attribute: Attribute) -> AxisTransform:
    """Transforms hold precomputed tables; attributes are immutable, so share them."""
    return axis_transform(attribute)


def _check_matrix(matrix: np.ndarray, shape: tuple[int, ...], what: str) -> np.ndarray:
    matrix = np.asarray(matrix, dtype=np.float64)
    if matrix.shape != shape:
        raise SchemaError(
            f"{what} has shape {matrix.shape} but the schema needs {shape}; "
            "count the table with this schema or fix the schema"
        )
    return matrix


def hn_forward(matrix: np.ndarray, schema: Schema, sa: Iterable[str] = ()) -> tuple[np.ndarray, np.ndarray]:
    """HN wavelet coefficients of ``matrix`` and their weights W_HN (``inf``: always zero).

    Examples
    --------
    >>> from privelet_gui.engine import OrdinalAttribute, Schema
    >>> schema = Schema([OrdinalAttribute.integer_range("x", 1, 4)])
    >>> c, w = hn_forward(np.array([1., 2, 3, 6]), schema)
    >>> c.tolist(), w.tolist()
    ([3.0, -1.5, -0.5, -1.5], [4.0, 4.0, 2.0, 2.0])
    """
    plan = TransformPlan(schema, sa)
    matrix = _check_matrix(matrix, schema.shape, "the matrix")
    z = plan.numerators(matrix)
    return plan.divide(z, "divisors"), plan.weights


def hn_inverse(coefficients: np.ndarray, schema: Schema, sa: Iterable[str] = ()) -> np.ndarray:
    """Invert :func:`hn_forward` (with mean subtraction along nominal axes)."""
    plan = TransformPlan(schema, sa)
    coefficients = _check_matrix(coefficients, plan.coefficient_shape, "the coefficient array")
    return np.ascontiguousarray(plan.inverse(coefficients))
