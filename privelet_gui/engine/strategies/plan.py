"""A release's strategy: one axis strategy per attribute, measured as their Kronecker product.

The weighted measurements of M are ``(F_1 x ... x F_d) M``; their numerators are integers and
each measurement's denominator is the product of its axes' (docs/math.md, "Strategies"). The
sensitivity, the rounding's share (K) and the integer headroom multiply across the axes.
Measurements are numbered in one canonical order, the *global position* of each (docs/math.md,
"Random bits"): C order over the separable axes (S_A) first, then over the others, each in axis
order; a measurement's noise depends on its position alone.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from fractions import Fraction
from functools import cache, cached_property

import numpy as np

from ..errors import SchemaError
from ..model.schema import Attribute, NominalAttribute, Schema
from .base import AxisStrategy
from .haar import HaarTransform
from .identity import IdentityTransform
from .nominal import NominalTransform

__all__ = ["StrategyPlan", "identity_strategy", "paper_strategy"]


@cache
def paper_strategy(attribute: Attribute) -> AxisStrategy:
    """The paper's transform of ``attribute``: Haar if ordinal, the nominal wavelet if it has a
    hierarchy (shared: attributes are immutable and strategies hold tables)."""
    if isinstance(attribute, NominalAttribute):
        return NominalTransform(attribute.hierarchy)
    return HaarTransform(attribute.size)


@cache
def identity_strategy(size: int) -> AxisStrategy:
    """The identity strategy of an axis of ``size`` values (S_A), shared."""
    return IdentityTransform(size)


class StrategyPlan:
    """The per-axis strategies of a release of ``schema``.

    Examples
    --------
    >>> from privelet_gui.engine import Hierarchy, NominalAttribute, OrdinalAttribute, Schema
    >>> schema = Schema([OrdinalAttribute.integer_range("age", 0, 15),
    ...                  NominalAttribute("sex", Hierarchy.flat(["F", "M"]))])
    >>> plan = StrategyPlan.paper(schema, sa=["sex"])
    >>> plan.rho, plan.separable_axes, plan.measurement_shape
    (Fraction(5, 1), (1,), (16, 2))
    """

    def __init__(self, schema: Schema, strategies: Sequence[AxisStrategy]):
        if len(strategies) != len(schema):
            raise SchemaError(f"a strategy per attribute: {len(schema)} attributes, {len(strategies)} strategies")
        for attribute, strategy in zip(schema, strategies):
            if strategy.size != attribute.size:
                raise SchemaError(
                    f"the strategy for {attribute.name!r} measures {strategy.size} values, the attribute has {attribute.size}"
                )
        self.schema = schema
        self.strategies: tuple[AxisStrategy, ...] = tuple(strategies)

    @classmethod
    def paper(cls, schema: Schema, sa: Iterable[str] = ()) -> StrategyPlan:
        """Privelet+: the identity along the attributes of ``sa``, the paper's transform elsewhere."""
        in_sa = set(schema.axes(list(sa)))
        return cls(schema, [identity_strategy(a.size) if i in in_sa else paper_strategy(a) for i, a in enumerate(schema)])

    @property
    def shape(self) -> tuple[int, ...]:
        """Shape of M."""
        return self.schema.shape

    @property
    def measurement_shape(self) -> tuple[int, ...]:
        return tuple(s.n_measurements for s in self.strategies)

    @cached_property
    def separable_axes(self) -> tuple[int, ...]:
        """The axes measured value by value (S_A): a release splits its work along them."""
        return tuple(i for i, s in enumerate(self.strategies) if s.separable)

    @cached_property
    def transformed_axes(self) -> tuple[int, ...]:
        return tuple(i for i, s in enumerate(self.strategies) if not s.separable)

    @cached_property
    def sa(self) -> tuple[str, ...]:
        """The names of the separable axes' attributes."""
        return tuple(self.schema[i].name for i in self.separable_axes)

    @cached_property
    def rho(self) -> Fraction:
        """The generalized sensitivity: the product of the per-axis shares."""
        return math.prod((s.rho for s in self.strategies), start=Fraction(1))

    @cached_property
    def influence(self) -> int:
        """K: the most measurements that one cell of M changes."""
        return math.prod(s.influence for s in self.strategies)

    @cached_property
    def growth(self) -> int:
        """A bound on ``|numerator| / n`` at every step of the forward maps (integer headroom): the
        largest entry of a Kronecker product is the product of the axes' largest entries."""
        return math.prod(s.growth for s in self.strategies)

    @cached_property
    def largest_denominator(self) -> int:
        return math.prod(int(s.denominators.max()) for s in self.strategies)

    @cached_property
    def position_strides(self) -> tuple[int, ...]:
        """Each axis's stride in the global numbering of the measurements."""
        order = (*self.separable_axes, *self.transformed_axes)
        strides = [0] * len(self.strategies)
        stride = 1
        for axis in reversed(order):
            strides[axis] = stride
            stride *= self.strategies[axis].n_measurements
        return tuple(strides)

    def axis_name(self, axis: int) -> str:
        return self.schema[axis].name

    def numerators(self, matrix: np.ndarray) -> np.ndarray:
        """The integer numerators of every measurement of ``matrix`` (int64 counts), axis by axis."""
        z = np.asarray(matrix, dtype=np.int64)
        for axis in self.transformed_axes:
            z = forward_along(self.strategies[axis], z, axis)
        return z

    def reconstruct(self, weighted: np.ndarray) -> np.ndarray:
        """Values from weighted measurements (float64), along the axes in ascending order (as a release)."""
        values = np.asarray(weighted, dtype=np.float64)
        for axis in self.transformed_axes:
            values = reconstruct_along(self.strategies[axis], values, axis)
        return values

    def denominators(self) -> np.ndarray:
        """Every measurement's denominator (the outer product of the axes')."""
        out = np.ones(self.measurement_shape, dtype=np.int64)
        for axis, strategy in enumerate(self.strategies):
            out *= along(strategy.denominators, axis, len(self.strategies))
        return out


def along(vector: np.ndarray, axis: int, ndim: int) -> np.ndarray:
    """``vector`` reshaped to broadcast along ``axis`` of an ``ndim``-dimensional array."""
    shape = [1] * ndim
    shape[axis] = -1
    return np.reshape(vector, shape)


def as_3d(array: np.ndarray, axis: int) -> np.ndarray:
    """A C-contiguous array as the ``(outer, axis, inner)`` view the kernels take."""
    shape = array.shape
    return array.reshape(math.prod(shape[:axis]), shape[axis], math.prod(shape[axis + 1 :]))


def forward_along(strategy: AxisStrategy, x: np.ndarray, axis: int) -> np.ndarray:
    """``strategy``'s numerators of int64 ``x`` along ``axis`` (a new array)."""
    x = np.ascontiguousarray(x, dtype=np.int64)
    shape = list(x.shape)
    shape[axis] = strategy.n_measurements
    out = np.empty(shape, dtype=np.int64)
    strategy.forward(as_3d(x, axis), as_3d(out, axis))
    return out


def reconstruct_along(strategy: AxisStrategy, y: np.ndarray, axis: int) -> np.ndarray:
    """``strategy``'s values from weighted measurements ``y`` along ``axis`` (a new array)."""
    y = np.ascontiguousarray(y, dtype=np.float64)
    shape = list(y.shape)
    shape[axis] = strategy.size
    out = np.empty(shape)
    strategy.reconstruct(as_3d(y, axis), as_3d(out, axis))
    return out
