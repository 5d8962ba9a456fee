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
from functools import cache, cached_property, lru_cache

import numpy as np

from ..errors import SchemaError
from ..model.schema import Attribute, NominalAttribute, Schema
from .base import AxisStrategy
from .haar import HaarTransform
from .identity import IdentityTransform
from .nominal import NominalTransform
from .stacked import StackedIdentity
from .tree import TreeStrategy

__all__ = [
    "AXIS_STRATEGY_FORMS", "StrategyPlan", "axis_strategy", "identity_strategy", "paper_strategy", "short_strategy_name",
]

#: The names an axis strategy is given by (a release file and the command line use them):
#: ``identity``; ``wavelet`` (the paper's transform: Haar, or the nominal wavelet); ``tree-B`` on an
#: ordinal axis (branching B); ``hierarchy`` on a nominal one (its hierarchy); the trees take
#: per-level integer weights, root first, after a slash: ``tree-8/1,1,2`` (docs/math.md,
#: "Hierarchies with least squares"); ``stacked/...`` on an ordinal axis, an identity stacked on
#: rows optimised for a workload, named by its whole definition (docs/math.md, "Optimised identity").
AXIS_STRATEGY_FORMS = (
    "identity", "wavelet", "tree-B", "hierarchy", "tree-B/w0,w1,...", "hierarchy/w0,w1,...", "stacked/BITS/P/DATA",
)


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


def short_strategy_name(name: str) -> str:
    """``name`` for people: a stacked identity's name holds its whole matrix, shown as its row count.

    Parameters
    ----------
    name : str
        An axis strategy's name (:data:`AXIS_STRATEGY_FORMS`).

    Returns
    -------
    str
        The name itself, or ``"stacked identity (+P rows)"``.
    """
    if name.startswith("stacked/"):
        parts = name.split("/")
        return f"stacked identity (+{parts[2]} rows)" if len(parts) == 4 else name
    return name


@lru_cache(maxsize=64)
def axis_strategy(attribute: Attribute, name: str) -> AxisStrategy:
    """The axis strategy called ``name`` (:data:`AXIS_STRATEGY_FORMS`) for ``attribute``; a
    SchemaError saying the forms where it is not one (shared, as :func:`paper_strategy`)."""
    nominal = isinstance(attribute, NominalAttribute)
    base, _, weights_text = name.partition("/")
    if name == "identity":
        return identity_strategy(attribute.size)
    if name == "wavelet":
        return paper_strategy(attribute)
    weights: list[int] | None = None
    if weights_text and base != "stacked":
        try:
            weights = [int(w) for w in weights_text.split(",")]
        except ValueError:
            raise SchemaError(f"the level weights of {name!r} must be whole numbers separated by commas") from None
    if base == "stacked" and not nominal:
        return StackedIdentity.from_name(attribute.size, name)
    if base == "hierarchy" and isinstance(attribute, NominalAttribute):
        return TreeStrategy.of_hierarchy(attribute.hierarchy, weights)
    if base.startswith("tree-") and base[5:].isdigit() and not nominal:
        return TreeStrategy.branching(attribute.size, int(base[5:]), weights)
    kinds = "identity, wavelet or hierarchy" if nominal else "identity, wavelet or tree-B (B = 2, 3, ...)"
    raise SchemaError(
        f"{attribute.name!r} cannot be measured by {name!r}: a {'nominal' if nominal else 'ordinal'} attribute "
        f"takes {kinds}, trees with optional level weights after a slash (tree-8/1,1,2)"
    )


class StrategyPlan:
    """The per-axis strategies of a release of ``schema``.

    Parameters
    ----------
    schema : Schema
        The attributes.
    strategies : sequence of AxisStrategy
        One per attribute, in axis order, each of the attribute's size.

    Raises
    ------
    SchemaError
        Not one strategy per attribute, or a strategy of another size.

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
        """Privelet+: the identity along the attributes of ``sa``, the paper's transform elsewhere.

        Parameters
        ----------
        schema : Schema
            The attributes.
        sa : iterable of str, default ()
            S_A: the attributes measured by the identity.

        Returns
        -------
        StrategyPlan

        Raises
        ------
        SchemaError
            ``sa`` names an unknown or repeated attribute.
        """
        in_sa = set(schema.axes(list(sa)))
        return cls(schema, [identity_strategy(a.size) if i in in_sa else paper_strategy(a) for i, a in enumerate(schema)])

    @classmethod
    def of_names(cls, schema: Schema, names: Sequence[str]) -> StrategyPlan:
        """The plan measuring each attribute by the strategy of that name (:func:`axis_strategy`).

        Parameters
        ----------
        schema : Schema
            The attributes.
        names : sequence of str
            One strategy name per attribute (:data:`AXIS_STRATEGY_FORMS`), in axis order.

        Returns
        -------
        StrategyPlan

        Raises
        ------
        SchemaError
            Not one name per attribute, or a name that is unknown or does not fit its attribute.
        """
        if len(names) != len(schema):
            raise SchemaError(f"a strategy per attribute: {len(schema)} attributes, {len(names)} strategy names")
        return cls(schema, [axis_strategy(a, name) for a, name in zip(schema, names)])

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
        """The name of the attribute of ``axis``.

        Parameters
        ----------
        axis : int
            ``0 <= axis < len(schema)``.

        Returns
        -------
        str
        """
        return self.schema[axis].name

    def numerators(self, matrix: np.ndarray) -> np.ndarray:
        """The integer numerators of every measurement of ``matrix`` (int64 counts), axis by axis.

        Parameters
        ----------
        matrix : numpy.ndarray
            Counts, shape :attr:`shape` (converted to int64).

        Returns
        -------
        numpy.ndarray
            int64, shape :attr:`measurement_shape`; divide by :meth:`denominators` for the weighted measurements.
        """
        z = np.asarray(matrix, dtype=np.int64)
        for axis in self.transformed_axes:
            z = forward_along(self.strategies[axis], z, axis)
        return z

    def reconstruct(self, weighted: np.ndarray) -> np.ndarray:
        """Values from weighted measurements (float64), along the axes in ascending order (as a release).

        Parameters
        ----------
        weighted : numpy.ndarray
            Weighted measurements, shape :attr:`measurement_shape`.

        Returns
        -------
        numpy.ndarray
            float64, shape :attr:`shape`.
        """
        values = np.asarray(weighted, dtype=np.float64)
        for axis in self.transformed_axes:
            values = reconstruct_along(self.strategies[axis], values, axis)
        return values

    def denominators(self) -> np.ndarray:
        """Every measurement's denominator (the outer product of the axes').

        Returns
        -------
        numpy.ndarray
            int64, shape :attr:`measurement_shape`, each at least 1.
        """
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
