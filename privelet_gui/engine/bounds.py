"""Noise-variance bounds: the paper's worst-case bounds and the exact variances.

Both are data-independent: they can be shown before any release at no privacy cost.

- Paper (Theorem 3, Corollary 1): ``(8 / epsilon^2) prod_{A in S_A} |A| prod_{A not in S_A} P(A)^2 H(A)``
  for replace-one-tuple neighbours (a quarter of it for add/remove).
- Exact: a box query ``q = q_1 x ... x q_d`` has noise variance
  ``2 lambda^2 prod_i V_i(q_i)`` with ``V_i(q_i) = sum_c (R_i^T q_i)_c^2 / W_i(c)^2``;
  the worst case over all boxes is ``2 lambda^2 prod_i max V_i``.
- The public total (replace-one-tuple: n is public): a release shifted by ``(n - total) / m``
  per cell answers a box of ``k`` cells with noise ``(q - s 1) . E``, ``s = k / m``, of variance
  ``2 lambda^2 (prod_i V_i(q_i) - 2 s prod_i C_i(q_i) + s^2 prod_i T_i)``: ``C_i(q_i) = q_i^T Sigma_i 1``
  is the per-axis covariance of the query's noise with the total's (``Sigma_i = R_i D_i R_i^T``)
  and ``T_i = 1^T Sigma_i 1`` the total's own factor. Every term factorises over the axes.

:class:`VarianceModel` caches each attribute's factors (transformed and in S_A),
so changing epsilon or S_A only multiplies a handful of numbers.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from functools import cached_property, lru_cache

import numpy as np

from .model.schema import Attribute, NominalAttribute, Schema
from .noise.calibration import Neighbours, check_epsilon, multiplicity
from .queries import QueryBatch, RangeQuery
from .strategies.base import AxisStrategy
from .strategies.plan import identity_strategy, paper_strategy

__all__ = [
    "Z95",
    "AttributeFactors",
    "VarianceModel",
    "epsilon_for_variance",
    "margin95",
    "paper_bound",
    "paper_factors",
    "query_variance",
    "recommend_sa",
    "variance_for_margin95",
    "variance_model",
    "worst_case_variance",
]


#: The two-sided 95% quantile of the normal distribution: intervals are ``count +/- Z95 sqrt(variance)``
#: (a normal approximation of the noise on a query, a sum of many independent terms).
Z95 = 1.959963984540054


def margin95(variance: float) -> float:
    """The half-width ``Z95 * sqrt(variance)`` of a 95% interval for noise of this variance:
    a count is off by at most this much in 95% of releases.

    Parameters
    ----------
    variance : float
        A noise variance, in squared counts (non-negative).

    Returns
    -------
    float
        The half-width, in counts.
    """
    return Z95 * math.sqrt(variance)


def variance_for_margin95(margin: float) -> float:
    """The noise variance whose 95% interval is ``count +/- margin`` (the inverse of :func:`margin95`).

    Parameters
    ----------
    margin : float
        The half-width of the 95% interval, in counts.

    Returns
    -------
    float
        ``(margin / Z95)**2``, in squared counts.

    Examples
    --------
    >>> round(margin95(variance_for_margin95(6000.0)), 6)
    6000.0
    """
    return (margin / Z95) ** 2


def paper_factors(attribute: Attribute) -> tuple[int, float]:
    """``(P(A), H(A))``: ``1 + ceil(log2 |A|)`` and ``(2 + ceil(log2 |A|)) / 2`` for an
    ordinal attribute; ``h`` and 4 for a nominal one.

    Parameters
    ----------
    attribute : Attribute
        An ordinal or nominal attribute.

    Returns
    -------
    tuple of (int, float)
        ``P(A)`` (for a nominal attribute, its hierarchy's height ``h``) and ``H(A)``.
    """
    if isinstance(attribute, NominalAttribute):
        return attribute.hierarchy.rho, 4.0
    levels = math.ceil(math.log2(attribute.size)) if attribute.size > 1 else 0
    return 1 + levels, (2 + levels) / 2


def paper_bound(schema: Schema, epsilon: float, sa: Iterable[str] = (), *, neighbours: Neighbours = "replace") -> float:
    """The paper's bound on the noise variance of every range-count query (Eq. 7).

    ``sa`` = every attribute gives Basic's ``8 m / epsilon^2``; ``sa`` empty gives Privelet's.

    Parameters
    ----------
    schema : Schema
        The attributes.
    epsilon : float
        The privacy budget, in ``[1e-12, 1e12]``.
    sa : iterable of str, default ()
        S_A: names of the attributes left untransformed.
    neighbours : {"replace", "add-remove"}, default "replace", keyword-only
        The neighbouring notion (add/remove quarters every variance).

    Returns
    -------
    float
        The bound, in squared counts.

    Raises
    ------
    PriveletError
        ``epsilon`` outside ``[1e-12, 1e12]`` or not a number, or ``neighbours`` unknown.
    SchemaError
        ``sa`` names an unknown or repeated attribute.

    Examples
    --------
    >>> from privelet_gui.engine import OrdinalAttribute, Schema
    >>> s = Schema([OrdinalAttribute.integer_range("a", 1, 16)])
    >>> paper_bound(s, 1.0), paper_bound(s, 1.0, sa=["a"])
    (600.0, 128.0)
    """
    epsilon = check_epsilon(epsilon)
    in_sa = set(schema.axes(list(sa)))
    product = 1.0
    for axis, attribute in enumerate(schema):
        if axis in in_sa:
            product *= attribute.size
        else:
            p, h = paper_factors(attribute)
            product *= p * p * h
    return 2 * multiplicity(neighbours) ** 2 * product / epsilon**2


def recommend_sa(schema: Schema) -> tuple[str, ...]:
    """The attributes with ``|A| <= P(A)^2 H(A)``: putting them in S_A never hurts the bound.

    Parameters
    ----------
    schema : Schema
        The attributes.

    Returns
    -------
    tuple of str
        Their names, in axis order (possibly empty).
    """
    chosen = []
    for attribute in schema:
        p, h = paper_factors(attribute)
        if attribute.size <= p * p * h:
            chosen.append(attribute.name)
    return tuple(chosen)


@dataclass(frozen=True)
class AttributeFactors:
    """One attribute's worst-case variance factors, transformed and left in S_A.

    Attributes
    ----------
    name : str
        The attribute's name.
    size : int
        ``|A|``.
    transformed : float
        Max V over the attribute's predicates under the paper's transform.
    untransformed : float
        Max V in S_A (the identity): ``|A|`` for the whole domain.
    rho : int
        The transform's generalized sensitivity.
    paper_p : int
        ``P(A)`` (:func:`paper_factors`).
    paper_h : float
        ``H(A)`` (:func:`paper_factors`).
    """

    name: str
    size: int
    transformed: float  # max V over this attribute's queries under its wavelet
    untransformed: float  # |A|: the whole domain, untransformed
    rho: int
    paper_p: int
    paper_h: float


class VarianceModel:
    """Exact noise variances of box queries for one schema, with cached per-axis factors.

    Each axis is either in S_A (the identity strategy) or measured by the paper's transform;
    every figure comes from the strategies' own accuracy methods (docs/math.md, "Exact variance").

    Parameters
    ----------
    schema : Schema
        The attributes; the model is for this schema only.

    Examples
    --------
    >>> from privelet_gui.engine import OrdinalAttribute, Schema
    >>> model = VarianceModel(Schema([OrdinalAttribute.integer_range("a", 1, 16)]))
    >>> round(model.factors[0].transformed, 2)
    1.42
    >>> round(model.worst_case(1.0, sa=()), 1)  # 2 * (2 * 5 / 1)^2 * 1.42
    284.4
    """

    def __init__(self, schema: Schema):
        self.schema = schema

    @property
    def ready(self) -> bool:
        """Whether :meth:`prepare` has run (the per-axis factors are known), so that every
        other method returns at once; computing them can take a moment for big domains."""
        return "factors" in self.__dict__

    def prepare(self) -> VarianceModel:
        """Compute every attribute's worst-case factors now (slow for big domains: call it
        off the UI thread); returns the model.

        Returns
        -------
        VarianceModel
            ``self``, with :attr:`ready` True.
        """
        _ = self.factors
        return self

    @cached_property
    def transforms(self) -> tuple[AxisStrategy, ...]:
        """The paper's transform of each attribute."""
        return tuple(paper_strategy(a) for a in self.schema)

    @cached_property
    def identities(self) -> tuple[AxisStrategy, ...]:
        """The identity strategy of each attribute (S_A)."""
        return tuple(identity_strategy(a.size) for a in self.schema)

    def strategy(self, axis: int, *, untransformed: bool) -> AxisStrategy:
        """One axis's strategy: the identity (S_A) or the paper's transform.

        Parameters
        ----------
        axis : int
            The axis, ``0 <= axis < len(schema)``.
        untransformed : bool, keyword-only
            True for the identity (the attribute in S_A).

        Returns
        -------
        AxisStrategy
        """
        return self.identities[axis] if untransformed else self.transforms[axis]

    def strategies(self, sa: Iterable[str] = ()) -> tuple[AxisStrategy, ...]:
        """Each axis's strategy under Privelet+ with ``sa``.

        Parameters
        ----------
        sa : iterable of str, default ()
            S_A: names of the attributes left untransformed.

        Returns
        -------
        tuple of AxisStrategy
            One per axis, in axis order.

        Raises
        ------
        SchemaError
            ``sa`` names an unknown or repeated attribute.
        """
        in_sa = self._sa_axes(sa)
        return tuple(self.strategy(axis, untransformed=axis in in_sa) for axis in range(len(self.schema)))

    @cached_property
    def factors(self) -> tuple[AttributeFactors, ...]:
        out = []
        for axis, attribute in enumerate(self.schema):
            p, h = paper_factors(attribute)
            out.append(
                AttributeFactors(
                    name=attribute.name,
                    size=attribute.size,
                    transformed=worst_predicate_variance(attribute, self.transforms[axis]),
                    untransformed=worst_predicate_variance(attribute, self.identities[axis]),
                    rho=int(self.transforms[axis].rho),
                    paper_p=p,
                    paper_h=h,
                )
            )
        return tuple(out)

    def _sa_axes(self, sa: Iterable[str]) -> frozenset[int]:
        return frozenset(self.schema.axes(list(sa)))

    def rho(self, sa: Iterable[str] = ()) -> Fraction:
        """The generalized sensitivity of Privelet+ with ``sa``: the product of the axes' rho.

        Parameters
        ----------
        sa : iterable of str, default ()
            S_A: names of the attributes left untransformed.

        Returns
        -------
        fractions.Fraction
            rho, exactly.

        Raises
        ------
        SchemaError
            ``sa`` names an unknown or repeated attribute.
        """
        return math.prod((s.rho for s in self.strategies(sa)), start=Fraction(1))

    def coefficient_variance(self, epsilon: float, sa: Iterable[str] = (), *, neighbours: Neighbours = "replace") -> float:
        """``2 lambda^2``: the Laplace variance per unit of V.

        Parameters
        ----------
        epsilon : float
            The privacy budget, in ``[1e-12, 1e12]``.
        sa : iterable of str, default ()
            S_A: names of the attributes left untransformed.
        neighbours : {"replace", "add-remove"}, default "replace", keyword-only
            The neighbouring notion (add/remove quarters every variance).

        Returns
        -------
        float
            ``2 lambda^2``, in squared counts.

        Raises
        ------
        PriveletError
            ``epsilon`` outside ``[1e-12, 1e12]`` or not a number, or ``neighbours`` unknown.
        SchemaError
            ``sa`` names an unknown or repeated attribute.
        """
        lam = multiplicity(neighbours) * float(self.rho(sa)) / check_epsilon(epsilon)
        return 2.0 * lam * lam

    def worst_factor(self, sa: Iterable[str] = ()) -> float:
        """``prod_i max V_i``: the worst case per unit of ``2 lambda^2``.

        Parameters
        ----------
        sa : iterable of str, default ()
            S_A: names of the attributes left untransformed.

        Returns
        -------
        float
            The factor (dimensionless).

        Raises
        ------
        SchemaError
            ``sa`` names an unknown or repeated attribute.
        """
        in_sa = self._sa_axes(sa)
        return math.prod(f.untransformed if axis in in_sa else f.transformed for axis, f in enumerate(self.factors))

    def worst_case(self, epsilon: float, sa: Iterable[str] = (), *, neighbours: Neighbours = "replace") -> float:
        """The largest noise variance of any range-count query.

        Parameters
        ----------
        epsilon : float
            The privacy budget, in ``[1e-12, 1e12]``.
        sa : iterable of str, default ()
            S_A: names of the attributes left untransformed.
        neighbours : {"replace", "add-remove"}, default "replace", keyword-only
            The neighbouring notion (add/remove quarters every variance).

        Returns
        -------
        float
            A variance, in squared counts.

        Raises
        ------
        PriveletError
            ``epsilon`` outside ``[1e-12, 1e12]`` or not a number, or ``neighbours`` unknown.
        SchemaError
            ``sa`` names an unknown or repeated attribute.
        """
        return self.coefficient_variance(epsilon, sa, neighbours=neighbours) * self.worst_factor(sa)

    def query(self, query: RangeQuery, epsilon: float, sa: Iterable[str] = (), *, neighbours: Neighbours = "replace") -> float:
        """Exact noise variance of one query.

        Parameters
        ----------
        query : RangeQuery
            A box query on the model's schema.
        epsilon : float
            The privacy budget, in ``[1e-12, 1e12]``.
        sa : iterable of str, default ()
            S_A: names of the attributes left untransformed.
        neighbours : {"replace", "add-remove"}, default "replace", keyword-only
            The neighbouring notion (add/remove quarters every variance).

        Returns
        -------
        float
            A variance, in squared counts, of the raw release.

        Raises
        ------
        PriveletError
            ``epsilon`` outside ``[1e-12, 1e12]`` or not a number, or ``neighbours`` unknown.
        SchemaError
            ``sa`` names an unknown or repeated attribute.
        """
        batch = QueryBatch.of([query])
        return float(self.batch(batch, epsilon, sa, neighbours=neighbours)[0])

    def batch(
        self,
        queries: QueryBatch,
        epsilon: float,
        sa: Iterable[str] = (),
        *,
        neighbours: Neighbours = "replace",
        public_total: bool = False,
    ) -> np.ndarray:
        """Exact noise variance of every query of a batch (of the release shifted to the
        public total with ``public_total``).

        Parameters
        ----------
        queries : QueryBatch
            Box queries on the model's schema.
        epsilon : float
            The privacy budget, in ``[1e-12, 1e12]``.
        sa : iterable of str, default ()
            S_A: names of the attributes left untransformed.
        neighbours : {"replace", "add-remove"}, default "replace", keyword-only
            The neighbouring notion (add/remove quarters every variance).
        public_total : bool, default False, keyword-only
            The variances of the release shifted to the public total.

        Returns
        -------
        numpy.ndarray
            float64, shape ``(len(queries),)``, in squared counts.

        Raises
        ------
        PriveletError
            ``epsilon`` outside ``[1e-12, 1e12]`` or not a number, or ``neighbours`` unknown.
        SchemaError
            ``sa`` names an unknown or repeated attribute.
        """
        factors = self.batch_factors(queries, sa, public_total=public_total)
        return self.coefficient_variance(epsilon, sa, neighbours=neighbours) * factors

    def batch_factors(self, queries: QueryBatch, sa: Iterable[str] = (), *, public_total: bool = False) -> np.ndarray:
        """``prod_i V_i(q_i)`` per query (variance per unit of ``2 lambda^2``); with ``public_total``
        the factor of the release shifted to the public total (module docstring).

        Parameters
        ----------
        queries : QueryBatch
            Box queries on the model's schema.
        sa : iterable of str, default ()
            S_A: names of the attributes left untransformed.
        public_total : bool, default False, keyword-only
            The factors of the release shifted to the public total.

        Returns
        -------
        numpy.ndarray
            float64, shape ``(len(queries),)``, dimensionless.

        Raises
        ------
        SchemaError
            ``sa`` names an unknown or repeated attribute.
        """
        return strategy_factors(self.strategies(sa), queries, public_total=public_total)

    def axis_factors(
        self, axis: int, lo: np.ndarray, hi: np.ndarray, nodes: np.ndarray, *, untransformed: bool
    ) -> tuple[np.ndarray, np.ndarray]:
        """``(V_i, C_i)`` of one axis' predicates: their own variance factor and their covariance
        factor with the axis' total. ``lo``/``hi`` are inclusive index arrays, ``nodes`` the
        level-order nodes of a nominal axis (-1 elsewhere).

        Parameters
        ----------
        axis : int
            The axis, ``0 <= axis < len(schema)``.
        lo, hi : numpy.ndarray
            Inclusive index bounds of the predicates along the axis (int arrays of one length).
        nodes : numpy.ndarray
            Level-order hierarchy nodes of a nominal axis' predicates, -1 elsewhere.
        untransformed : bool, keyword-only
            True for the identity (the attribute in S_A).

        Returns
        -------
        tuple of (numpy.ndarray, numpy.ndarray)
            ``V_i`` and ``C_i`` per predicate, float64, ``lo``'s shape.
        """
        strategy = self.strategy(axis, untransformed=untransformed)
        return strategy.predicate_variances(lo, hi, nodes), strategy.predicate_total_covariances(lo, hi, nodes)

    def axis_total(self, axis: int, *, untransformed: bool) -> float:
        """``T_i = 1' S_i 1``: the axis' factor of the variance of the total.

        Parameters
        ----------
        axis : int
            The axis, ``0 <= axis < len(schema)``.
        untransformed : bool, keyword-only
            True for the identity (the attribute in S_A).

        Returns
        -------
        float
            ``T_i`` (dimensionless).
        """
        return self.strategy(axis, untransformed=untransformed).total_variance()

    def total_factor(self, sa: Iterable[str] = ()) -> float:
        """``prod_i T_i``: the variance of the raw release's total per unit of ``2 lambda^2``.

        Parameters
        ----------
        sa : iterable of str, default ()
            S_A: names of the attributes left untransformed.

        Returns
        -------
        float
            ``prod_i T_i`` (dimensionless).

        Raises
        ------
        SchemaError
            ``sa`` names an unknown or repeated attribute.
        """
        return math.prod(s.total_variance() for s in self.strategies(sa))

    def paper_bound(self, epsilon: float, sa: Iterable[str] = (), *, neighbours: Neighbours = "replace") -> float:
        """The paper's bound for this schema (:func:`paper_bound`).

        Parameters
        ----------
        epsilon : float
            The privacy budget, in ``[1e-12, 1e12]``.
        sa : iterable of str, default ()
            S_A: names of the attributes left untransformed.
        neighbours : {"replace", "add-remove"}, default "replace", keyword-only
            The neighbouring notion (add/remove quarters every variance).

        Returns
        -------
        float
            The bound, in squared counts.

        Raises
        ------
        PriveletError
            ``epsilon`` outside ``[1e-12, 1e12]`` or not a number, or ``neighbours`` unknown.
        SchemaError
            ``sa`` names an unknown or repeated attribute.
        """
        return paper_bound(self.schema, epsilon, sa, neighbours=neighbours)


@lru_cache(maxsize=256)
def worst_predicate_variance(attribute: Attribute, strategy: AxisStrategy) -> float:
    """The largest ``V`` over the predicates ``attribute`` allows: every interval of an ordinal
    attribute, every node of a nominal one's hierarchy."""
    if isinstance(attribute, NominalAttribute):
        lay = attribute.hierarchy.layout
        nodes = np.arange(attribute.hierarchy.n_nodes)
        return float(strategy.predicate_variances(lay.lo, lay.hi - 1, nodes).max())
    return strategy.worst_interval_variance()


def strategy_factors(strategies: Sequence[AxisStrategy], queries: QueryBatch, *, public_total: bool = False) -> np.ndarray:
    """``prod_i V_i(q_i)`` per query under the per-axis ``strategies``; with ``public_total``,
    ``prod V - 2 s prod C + s^2 prod T`` (``s`` the query's share of the cells)."""
    product = np.ones(len(queries))
    covariance = np.ones(len(queries))
    share = np.ones(len(queries))
    total = 1.0
    for axis, strategy in enumerate(strategies):
        lo, hi, nodes = queries.lo[:, axis], queries.hi[:, axis], queries.nodes[:, axis]
        product *= strategy.predicate_variances(lo, hi, nodes)
        if public_total:
            covariance *= strategy.predicate_total_covariances(lo, hi, nodes)
            share *= (hi - lo + 1) / strategy.size
            total *= strategy.total_variance()
    if not public_total:
        return product
    # The whole matrix has exactly zero variance; rounding must not make it negative.
    return np.maximum(product - 2.0 * share * covariance + share**2 * total, 0.0)


@lru_cache(maxsize=16)
def variance_model(schema: Schema) -> VarianceModel:
    """A shared :class:`VarianceModel` per schema (its factors are computed once)."""
    return VarianceModel(schema)


def query_variance(
    schema: Schema, epsilon: float, sa: Iterable[str], query: RangeQuery, *, neighbours: Neighbours = "replace"
) -> float:
    """Exact noise variance of ``query`` under Privelet+ with ``sa`` (math.md, "Exact variance").

    Parameters
    ----------
    schema : Schema
        The attributes.
    epsilon : float
        The privacy budget, in ``[1e-12, 1e12]``.
    sa : iterable of str
        S_A: names of the attributes left untransformed.
    query : RangeQuery
        A box query on ``schema``.
    neighbours : {"replace", "add-remove"}, default "replace", keyword-only
        The neighbouring notion (add/remove quarters every variance).

    Returns
    -------
    float
        A variance, in squared counts, of the raw release.

    Raises
    ------
    PriveletError
        ``epsilon`` outside ``[1e-12, 1e12]`` or not a number, or ``neighbours`` unknown.
    SchemaError
        ``sa`` names an unknown or repeated attribute.
    """
    return variance_model(schema).query(query, epsilon, sa, neighbours=neighbours)


def worst_case_variance(
    schema: Schema, epsilon: float, sa: Iterable[str] = (), *, neighbours: Neighbours = "replace"
) -> float:
    """Exact worst-case noise variance over all range-count queries.

    Parameters
    ----------
    schema : Schema
        The attributes.
    epsilon : float
        The privacy budget, in ``[1e-12, 1e12]``.
    sa : iterable of str, default ()
        S_A: names of the attributes left untransformed.
    neighbours : {"replace", "add-remove"}, default "replace", keyword-only
        The neighbouring notion (add/remove quarters every variance).

    Returns
    -------
    float
        A variance, in squared counts, of the raw release.

    Raises
    ------
    PriveletError
        ``epsilon`` outside ``[1e-12, 1e12]`` or not a number, or ``neighbours`` unknown.
    SchemaError
        ``sa`` names an unknown or repeated attribute.
    """
    return variance_model(schema).worst_case(epsilon, sa, neighbours=neighbours)


def epsilon_for_variance(variance_at_epsilon_one: float, target_variance: float) -> float:
    """The smallest epsilon whose variance is at most ``target_variance``.

    Every variance here scales as ``1 / epsilon^2``, so it is
    ``sqrt(variance_at_epsilon_one / target_variance)``.

    Parameters
    ----------
    variance_at_epsilon_one : float
        The variance (squared counts) at epsilon = 1.
    target_variance : float
        The variance wanted (squared counts, positive and finite).

    Returns
    -------
    float
        The epsilon.

    Raises
    ------
    ValueError
        ``target_variance`` is not a positive finite number.
    """
    if not (target_variance > 0 and math.isfinite(target_variance)):
        raise ValueError(f"the target variance must be a positive number, got {target_variance!r}")
    return math.sqrt(variance_at_epsilon_one / target_variance)
