"""The release specification: every rule of a release, decided in one place.

A :class:`ReleaseSpec` is what a custodian chooses before releasing a table: the
schema, epsilon, the mechanism, the attributes left untransformed (S_A), the
neighbouring notion and the noise sampler. It is validated once, when it is made
(an epsilon this release cannot serve is refused then, with the smallest it can),
and everything that follows from it is computed here and nowhere else: the
effective S_A, rho, the noise calibration, the paper's bound, the exact worst case and any query's
variance and 95% interval, the memory a release needs, and the release itself
(:meth:`ReleaseSpec.run`). The command line, the desktop app, release files and
project files all go through it; the functions :func:`~privelet_gui.engine.privelet_plus`,
:func:`~privelet_gui.engine.privelet` and :func:`~privelet_gui.engine.basic` are thin
calls into it.

Examples
--------
>>> import numpy as np
>>> from privelet_gui.engine import Hierarchy, NominalAttribute, OrdinalAttribute, Schema
>>> schema = Schema([OrdinalAttribute.integer_range("age", 0, 15),
...                  NominalAttribute("sex", Hierarchy.flat(["F", "M"]))])
>>> spec = ReleaseSpec(schema, epsilon=1.0, sa=("sex",))
>>> spec.effective_sa, spec.rho, spec.name
(('sex',), 5, 'Privelet+')
>>> ReleaseSpec(schema, 1.0, "basic").effective_sa
('age', 'sex')
>>> round(spec.worst_case_variance(), 1), spec.paper_bound()
(568.8, 1200.0)
>>> spec.run(np.ones(schema.shape), rng=np.random.default_rng(7)).noisy.shape
(16, 2)
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Collection
from dataclasses import dataclass, field
from fractions import Fraction
from functools import cached_property
from typing import Literal

import numpy as np

from .bounds import (
    VarianceModel,
    margin95,
    paper_bound,
    strategy_factors,
    variance_model,
    worst_predicate_variance,
)
from .counting import InvalidPolicy
from .errors import InternalError, PriveletError, SchemaError
from .memory import check_memory
from .model.schema import OrdinalAttribute, Schema
from .noise.bits import release_key
from .noise.calibration import (
    SAMPLERS,
    UNITS_LIMIT,
    Neighbours,
    NoiseCalibration,
    Sampler,
    calibrate,
    check_epsilon,
    check_neighbours,
    check_sampler,
    multiplicity,
)
from .noise.samplers import CHUNK_BYTES
from .pipeline import DEFAULT_SIZING, ReleasePipeline, Sizing, checked_counts, thread_count
from .postprocess import shift_to_total
from .progress import CancelCallback, Progress, ProgressCallback
from .queries import QueryBatch, RangeQuery
from .strategies.marginals import MarginalsStrategy
from .strategies.plan import StrategyPlan

__all__ = [
    "MECHANISMS",
    "MECHANISM_NAMES",
    "READABLE_SAMPLERS",
    "SAMPLER",
    "Mechanism",
    "Release",
    "ReleaseSpec",
    "axes_schema",
    "check_mechanism",
    "check_sa",
    "mechanism_name",
]

Mechanism = Literal["privelet+", "privelet", "basic", "strategies", "marginals"]
#: The default noise sampler: exact discrete Laplace in integer arithmetic
#: (:mod:`privelet_gui.engine.noise.exact`); ``"standard"`` is the other.
SAMPLER: Sampler = SAMPLERS[0]
#: How release files written before the exact sampler name the standard one.
_LEGACY_SAMPLER = "discrete-laplace/geometric-difference"
#: The sampler names a release file may hold.
READABLE_SAMPLERS: tuple[str, ...] = (*SAMPLERS, _LEGACY_SAMPLER)

#: The mechanisms a custodian can choose (Privelet+ with S_A empty is Privelet, with every
#: attribute in S_A it is Basic).
MECHANISMS: tuple[Mechanism, ...] = ("privelet+", "privelet", "basic")
#: A strategy named per axis (``ReleaseSpec(..., "strategies", strategies=(...))``): the paper's
#: transforms, the identity, or hierarchies measured with least squares (what
#: :func:`~privelet_gui.engine.best_strategy` chooses).
STRATEGIES: Mechanism = "strategies"
#: Weighted marginals of M, reconstructed by least squares (docs/math.md, "Marginals"):
#: ``ReleaseSpec(..., "marginals", marginals=((("age", "sex"), 3), (("race",), 1)))``, each marginal
#: its attributes and its integer weight.
MARGINALS: Mechanism = "marginals"
#: How each mechanism is written for people.
MECHANISM_NAMES: dict[str, str] = {
    "privelet+": "Privelet+", "privelet": "Privelet", "basic": "Basic", STRATEGIES: "Per-axis strategies",
    MARGINALS: "Weighted marginals",
}

def mechanism_name(mechanism: str) -> str:
    """``"Privelet+"``, ``"Privelet"`` or ``"Basic"`` (an unknown name is returned as is).

    Parameters
    ----------
    mechanism : str
        A mechanism as the engine names it (``"privelet+"``, ``"privelet"``, ``"basic"``, ``"strategies"``).

    Returns
    -------
    str
        Its name for people (:data:`MECHANISM_NAMES`).
    """
    return MECHANISM_NAMES.get(mechanism, mechanism)


def check_mechanism(mechanism: object) -> Mechanism:
    """``mechanism`` if it is one of :data:`MECHANISMS`, :data:`STRATEGIES` or :data:`MARGINALS`; a
    PriveletError naming them otherwise."""
    if mechanism not in (*MECHANISMS, STRATEGIES, MARGINALS):
        raise PriveletError(
            f"mechanism must be one of {', '.join(map(repr, (*MECHANISMS, STRATEGIES, MARGINALS)))}, got {mechanism!r}")
    return mechanism


def check_sa(schema: Schema, sa: Collection[str]) -> tuple[str, ...]:
    """S_A as attribute names in axis order; errors name an unknown or repeated attribute.

    A single string is refused rather than read as its letters.
    """
    if isinstance(sa, str):
        raise SchemaError(
            f"S_A is a collection of attribute names, got the text {sa!r}; write [{sa!r}] for one attribute"
        )
    names = tuple(sa)
    wrong = [name for name in names if not isinstance(name, str)]
    if wrong:
        raise SchemaError(f"S_A holds attribute names, got {wrong[0]!r}")
    return tuple(schema[axis].name for axis in schema.axes(names))


def axes_schema(shape: tuple[int, ...]) -> Schema:
    """A schema of plain ordinal axes ``axis_0, axis_1, ...`` for a matrix given without one."""
    return Schema([OrdinalAttribute.integer_range(f"axis_{axis}", 0, size - 1) for axis, size in enumerate(shape)])


@dataclass(frozen=True)
class ReleaseSpec:
    """What to release and how (see the module docstring); validated when made.

    ``sa`` is read as attribute names (in any order; kept in axis order). It applies to
    Privelet+ only: Privelet leaves no attribute untransformed and Basic every one.

    ``strategies`` names each attribute's axis strategy (in axis order; the forms of
    :data:`~privelet_gui.engine.strategies.plan.AXIS_STRATEGY_FORMS`) for the mechanism
    ``"strategies"``, and is empty for the others. Such a spec whose axes are all ``identity`` or
    ``wavelet`` *is* the paper's mechanism (its :attr:`label` says which).

    ``public_total``: shift the release so that its total is the number of rows n
    (:mod:`~privelet_gui.engine.postprocess`). ``None`` (the default) does so under
    replace-one-tuple neighbours, where n is public, and never under add/remove, where
    it is private (asking for it there is refused).

    ``invalid`` is how the table is counted: ``"error"`` stops at a value outside its
    domain, ``"drop"`` drops such rows. When rows may be dropped (``"drop"``, an
    attribute that drops out-of-range numbers or missing cells), how many were counted depends on the
    data: the total of M is then private even under replace-one-tuple neighbours, and the
    release is not shifted to it.

    ``marginals`` (with the mechanism ``"marginals"``) measures weighted marginals instead of
    per-axis strategies and answers by least squares: a query on a combination of attributes that
    no measured marginal holds is answered with a bias, and its exact variance is infinite.

    ``sampler`` draws the noise: ``"exact"`` (the default; integer arithmetic only) or
    ``"standard"`` (floating-point inversion); both have the same distribution up to the
    standard one's rounding (about 1e-16).

    Parameters
    ----------
    schema : Schema
        The attributes of M's axes, in axis order.
    epsilon : float
        The privacy budget, in ``[1e-12, 1e12]`` (stored as a float).
    mechanism : {"privelet+", "privelet", "basic", "strategies"}, default "privelet+"
        The mechanism; ``"strategies"`` needs ``strategies``.
    sa : tuple of str, default ()
        S_A for Privelet+ (see above); must be empty with ``"strategies"``.
    neighbours : {"replace", "add-remove"}, default "replace"
        The neighbouring notion.
    public_total : bool, optional, keyword-only
        See above; default None.
    invalid : {"error", "drop"}, default "error", keyword-only
        See above.
    sampler : {"exact", "standard"}, default "exact", keyword-only
        See above.
    strategies : tuple of str, default (), keyword-only
        See above; one name per attribute.
    marginals : tuple of (tuple of str, int), default (), keyword-only
        For the mechanism ``"marginals"`` only: each measured marginal as its attribute names (kept
        in axis order; none: the total) and its positive integer weight (docs/math.md, "Marginals").

    Raises
    ------
    SchemaError
        ``schema`` is not a :class:`Schema`; ``sa`` names an unknown or repeated attribute or is a
        single string; ``strategies`` is not a sequence of names or a name does not fit its attribute.
    PriveletError
        ``epsilon``, ``mechanism``, ``neighbours``, ``sampler``, ``public_total`` or ``invalid``
        is not an accepted value; ``strategies`` given without the mechanism ``"strategies"`` (or
        the reverse), or with ``sa``; ``public_total`` under add/remove or where rows may be
        dropped; an epsilon too small for this strategy's grid (the message names the smallest).
    """

    schema: Schema
    epsilon: float
    mechanism: Mechanism = "privelet+"
    sa: tuple[str, ...] = ()
    neighbours: Neighbours = "replace"
    # keyword-only: several optional choices, never given by position
    public_total: bool | None = field(default=None, kw_only=True)
    invalid: InvalidPolicy = field(default="error", kw_only=True)
    sampler: Sampler = field(default=SAMPLER, kw_only=True)
    strategies: tuple[str, ...] = field(default=(), kw_only=True)
    marginals: tuple[tuple[tuple[str, ...], int], ...] = field(default=(), kw_only=True)

    def __post_init__(self) -> None:
        if not isinstance(self.schema, Schema):
            raise SchemaError(f"a release needs a Schema, got {type(self.schema).__name__}")
        object.__setattr__(self, "epsilon", check_epsilon(self.epsilon))
        check_mechanism(self.mechanism)
        check_neighbours(self.neighbours)
        check_sampler(self.sampler)
        object.__setattr__(self, "sa", check_sa(self.schema, self.sa))
        if isinstance(self.strategies, str) or not all(isinstance(n, str) for n in self.strategies):
            raise SchemaError(f"strategies is a sequence of strategy names, one per attribute, got {self.strategies!r}")
        object.__setattr__(self, "strategies", tuple(self.strategies))
        if (self.mechanism == STRATEGIES) != bool(self.strategies):
            raise PriveletError(
                "name a strategy per attribute (strategies=...) with the mechanism 'strategies', and only with it"
            )
        if self.mechanism == STRATEGIES and self.sa:
            raise PriveletError("with named strategies S_A is the attributes named 'identity'; leave sa empty")
        if (self.mechanism == MARGINALS) != bool(self.marginals):
            raise PriveletError(
                "give the weighted marginals (marginals=...) with the mechanism 'marginals', and only with it"
            )
        if self.mechanism == MARGINALS and self.sa:
            raise PriveletError("a release of weighted marginals has no S_A; leave sa empty")
        object.__setattr__(self, "marginals", tuple(
            (tuple(self.schema[a].name for a in self.schema.axes(list(names))), weight)
            for names, weight in self.marginals))
        # An unknown or unfitting strategy name, or a bad marginal or weight, is refused now.
        _ = self.marginals_strategy if self.mechanism == MARGINALS else self.plan
        if self.public_total not in (None, True, False):
            raise PriveletError(f"public_total is True, False or None (the default), got {self.public_total!r}")
        if self.invalid not in ("error", "drop"):
            raise PriveletError(f"invalid must be 'error' or 'drop', got {self.invalid!r}")
        if self.public_total and self.neighbours != "replace":
            raise PriveletError(
                "the public total needs replace-one-tuple neighbours: under add/remove the number of rows "
                "is private; leave public_total unset (or False) for add/remove releases"
            )
        if self.public_total and self.may_drop_rows:
            raise PriveletError(
                "the public total needs every row counted: when rows outside a domain or with a missing cell "
                "are dropped, how many were counted is private; count with invalid 'error', no 'drop' "
                "out-of-range policy and no attribute that drops missing cells"
            )
        # An epsilon the release cannot serve is refused now. One row gives the finest grid,
        # the largest noise scale in grid units, so this holds for every table.
        self.calibration(1)

    def replace(self, **changes: object) -> ReleaseSpec:
        """A copy with some fields changed (validated again).

        Parameters
        ----------
        **changes
            Field names and their new values (``epsilon=0.5``, ``sa=("sex",)``).

        Returns
        -------
        ReleaseSpec
            The new spec.

        Raises
        ------
        PriveletError
            As the constructor does for the new values; TypeError for an unknown field name.
        """
        return dataclasses.replace(self, **changes)  # type: ignore[arg-type]

    # -- what the mechanism means ------------------------------------------------------------
    @cached_property
    def effective_sa(self) -> tuple[str, ...]:
        """S_A as the release uses it, in axis order: none for Privelet, all for Basic, the
        attributes measured by ``identity`` for named strategies; none for weighted marginals."""
        if self.mechanism == MARGINALS:
            return ()
        if self.mechanism == STRATEGIES:
            return tuple(a.name for a, name in zip(self.schema, self.strategies) if name == "identity")
        if self.mechanism == "privelet":
            return ()
        if self.mechanism == "basic":
            return self.schema.names
        return self.sa

    @property
    def label(self) -> Mechanism:
        """The mechanism the release really is: Privelet+ with S_A empty is Privelet, and
        with every attribute in S_A it is Basic; named strategies that are all the identity or the
        wavelets are one of those three."""
        if self.mechanism == MARGINALS:
            return MARGINALS
        if self.mechanism == STRATEGIES and not set(self.strategies) <= {"identity", "wavelet"}:
            return STRATEGIES
        if not self.effective_sa:
            return "privelet"
        if len(self.effective_sa) == len(self.schema):
            return "basic"
        return "privelet+"

    @property
    def name(self) -> str:
        """The label for people: ``"Privelet+"``, ``"Privelet"``, ``"Basic"`` or ``"Per-axis strategies"``."""
        return mechanism_name(self.label)

    @cached_property
    def plan(self) -> StrategyPlan:
        """The per-axis strategies (the named ones, or the identity along S_A and the paper's
        transform elsewhere); a PriveletError for weighted marginals, which are not measured axis by
        axis (:attr:`marginals_strategy`)."""
        if self.mechanism == MARGINALS:
            raise PriveletError("a release of weighted marginals is not measured axis by axis: it has no per-axis plan")
        if self.mechanism == STRATEGIES:
            return StrategyPlan.of_names(self.schema, self.strategies)
        return StrategyPlan.paper(self.schema, self.effective_sa)

    @cached_property
    def marginals_strategy(self) -> MarginalsStrategy:
        """The weighted marginals of a ``"marginals"`` release, by axis (a PriveletError otherwise)."""
        if self.mechanism != MARGINALS:
            raise PriveletError(f"a {self.name} release measures no weighted marginals")
        return MarginalsStrategy(self.schema.shape, tuple(self.schema.axes(list(names)) for names, _ in self.marginals),
                                 tuple(weight for _, weight in self.marginals))

    @property
    def _sensitivity(self) -> tuple[Fraction, int, int]:
        """rho, K and the growth of the strategy, whatever measures M."""
        measured = self.marginals_strategy if self.mechanism == MARGINALS else self.plan
        return measured.rho, measured.influence, measured.growth

    @property
    def axis_strategies(self) -> tuple[str, ...]:
        """Each attribute's strategy by name, whatever the mechanism (``identity`` or ``wavelet``
        for the paper's; none for weighted marginals)."""
        if self.mechanism == MARGINALS:
            return ()
        if self.mechanism == STRATEGIES:
            return self.strategies
        sa = set(self.effective_sa)
        return tuple("identity" if a.name in sa else "wavelet" for a in self.schema)

    @property
    def rho(self) -> int | float:
        """The generalized sensitivity of the strategy (1 for Basic)."""
        rho = self._sensitivity[0]
        return int(rho) if rho.denominator == 1 else float(rho)

    @property
    def multiplicity(self) -> int:
        """Cells of M one neighbour step changes: 2 (replace) or 1 (add/remove)."""
        return multiplicity(self.neighbours)

    @property
    def may_drop_rows(self) -> bool:
        """Whether counting may drop rows (then the number counted is private): rows outside
        a domain (``invalid="drop"``, an attribute that drops out-of-range numbers) or rows
        with a missing cell that an attribute drops."""
        return self.invalid == "drop" or any(a.out_of_range == "drop" or a.drop_missing for a in self.schema)

    @property
    def uses_public_total(self) -> bool:
        """Whether the release is shifted to the public total (see the class docstring)."""
        if self.public_total is None:
            return self.neighbours == "replace" and not self.may_drop_rows
        return self.public_total

    @property
    def nominal_scale(self) -> float:
        """lambda = 2 rho / epsilon (replace) or rho / epsilon (add/remove)."""
        return self.multiplicity * self.rho / self.epsilon

    def calibration(self, rows: int) -> NoiseCalibration:
        """The noise grid and sensitivity in grid units for a table of ``rows`` tuples.

        Parameters
        ----------
        rows : int
            Number of rows n of the table (at least 0; 1 gives the finest grid).

        Returns
        -------
        NoiseCalibration
            The grid, the sensitivity in grid units and the effective noise scale.

        Raises
        ------
        PriveletError
            A table of ``rows`` rows too large for exact rounding (or over
            :data:`ADD_REMOVE_MAX_ROWS` under add/remove), or an epsilon too small for the grid.
        """
        rho, influence, _ = self._sensitivity
        return calibrate(self.epsilon, rho, influence, neighbours=self.neighbours, rows=rows)

    # -- errors, before any release (data-independent: they cost no privacy) -------------------
    @property
    def model(self) -> VarianceModel:
        """The schema's shared variance model (its factors are computed once per schema)."""
        return variance_model(self.schema)

    @property
    def unit_variance(self) -> float:
        """``2 lambda^2``: the variance of the Laplace noise of scale lambda on each weighted
        measurement (the grid's discrete Laplace exceeds it by less than 1e-6, relative); every
        query's variance is this times its factor, as every expected error is figured."""
        return 2.0 * self.nominal_scale**2

    def paper_bound(self) -> float:
        """The paper's bound on the noise variance of every range-count query (Eq. 7); for named
        strategies beyond the paper's, which it does not bound, their exact worst case.

        Returns
        -------
        float
            A variance, in squared counts.
        """
        if self.label in (STRATEGIES, MARGINALS):
            return self.worst_case_variance()
        return paper_bound(self.schema, self.epsilon, self.effective_sa, neighbours=self.neighbours)

    def worst_case_variance(self) -> float:
        """The exact largest noise variance of any range-count query on the raw release (slow
        the first time for a schema with big domains: :meth:`VarianceModel.prepare`).

        Shifting to the public total changes each query's variance by ``s^2 T - 2 s C``
        (:mod:`~privelet_gui.engine.bounds`), which is not a product over the axes: use
        :meth:`variances` for exact figures of the post-processed release.

        Returns
        -------
        float
            A variance, in squared counts.
        """
        return self.unit_variance * self.worst_factor()

    def worst_case_margin95(self) -> float:
        """+/- the worst query's noise stays within in 95% of releases.

        Returns
        -------
        float
            The 95% half-width, in counts.
        """
        return margin95(self.worst_case_variance())

    def variances(self, queries: QueryBatch, *, raw: bool = False) -> np.ndarray:
        """The exact noise variance of each query of a batch on the release (on the raw
        release, before the shift to the public total, with ``raw``).

        Parameters
        ----------
        queries : QueryBatch
            Box queries on this spec's schema.
        raw : bool, default False, keyword-only
            The raw release's variances (before the shift to the public total).

        Returns
        -------
        numpy.ndarray
            float64, shape ``(len(queries),)``, in squared counts.
        """
        return self.unit_variance * self.variance_factors(queries, raw=raw)

    def variance_factors(self, queries: QueryBatch, *, raw: bool = False) -> np.ndarray:
        """Each query's variance per unit of noise variance on a weighted measurement (its
        strategies' factors; after the shift to the public total unless ``raw``).

        Parameters
        ----------
        queries : QueryBatch
            Box queries on this spec's schema.
        raw : bool, default False, keyword-only
            The raw release's factors (before the shift to the public total).

        Returns
        -------
        numpy.ndarray
            float64, shape ``(len(queries),)``: variances divided by :attr:`unit_variance`.
        """
        public_total = self.uses_public_total and not raw
        if self.mechanism == MARGINALS:  # infinite for a query the marginals answer with a bias
            return self.marginals_strategy.query_variances(queries.lo, queries.hi, public_total=public_total)
        return strategy_factors(self.plan.strategies, queries, public_total=public_total)

    def worst_factor(self) -> float:
        """The largest query's variance per unit of noise variance on a weighted measurement.

        Returns
        -------
        float
            ``prod_i max V_i`` over the spec's per-axis strategies (dimensionless); for weighted
            marginals the largest ``q' (A'A)^+ q`` over every box, infinite when the marginals leave
            a box's answer biased (they do not hold every attribute of more than one value).
        """
        if self.mechanism == MARGINALS:
            return self.marginals_strategy.worst_box_variance()
        return math.prod(worst_predicate_variance(a, s) for a, s in zip(self.schema, self.plan.strategies))

    def variance(self, query: RangeQuery, *, raw: bool = False) -> float:
        """The exact noise variance of one query (on the raw release with ``raw``).

        Parameters
        ----------
        query : RangeQuery
            A box query on this spec's schema.
        raw : bool, default False, keyword-only
            The raw release's variance (before the shift to the public total).

        Returns
        -------
        float
            A variance, in squared counts.
        """
        return float(self.variances(QueryBatch.of([query]), raw=raw)[0])

    @staticmethod
    def margin95(variance: float) -> float:
        """The half-width of a 95% interval for noise of this variance (normal approximation).

        Parameters
        ----------
        variance : float
            A noise variance, in squared counts (non-negative).

        Returns
        -------
        float
            ``Z95 * sqrt(variance)``, in counts.
        """
        return margin95(variance)

    # -- the release ----------------------------------------------------------------------------
    def peak_bytes(self, workers: int | None = None, sizing: Sizing = DEFAULT_SIZING) -> int:
        """About the most memory a release holds at once besides M itself (bytes): the output,
        or for a release of one big block its intermediate, and each thread's block buffers (the
        counts as integers, the measurements, their noisy values, the reconstruction's work) and noise chunk.

        Parameters
        ----------
        workers : int, optional
            Threads of the release (default: by size, :func:`thread_count`).
        sizing : Sizing, default :data:`DEFAULT_SIZING`
            How the release cuts its work.

        Returns
        -------
        int
            Bytes.

        Raises
        ------
        PriveletError
            ``workers`` is not a positive integer.
        """
        if self.mechanism == MARGINALS:
            # The counts as integers and the output, the measurements and their noisy values, and
            # the reconstruction's per-subset arrays (the components are each below one of those).
            return 8 * (2 * self.schema.size + 3 * self.marginals_strategy.n_measurements) + CHUNK_BYTES
        pipeline = ReleasePipeline(self.plan, self.calibration(1), self.sampler, sizing)
        blocks = pipeline.blocks()
        threads = thread_count(self.schema.size, workers, sizing)
        largest = max(blocks, key=lambda index: math.prod(p.stop - p.start for p in index))
        measured = math.prod(
            (part.stop - part.start) if s.separable else s.n_measurements for part, s in zip(largest, self.plan.strategies)
        )
        if len(blocks) == 1 and pipeline.is_big(largest):
            big = pipeline.big_block(largest)
            working = 6 * max(big.slab_measurements, sizing.pencil_cells)
            return 8 * (big.slabs * big.slab_measurements + threads * working) + threads * CHUNK_BYTES
        return 8 * (self.schema.size + threads * 5 * measured) + threads * CHUNK_BYTES

    def check_memory(self, workers: int | None = None) -> None:
        """Refuse, with what to do, a release that would not fit in the memory available now.

        Parameters
        ----------
        workers : int, optional
            Threads of the release (default: by size).

        Raises
        ------
        PriveletError
            :meth:`peak_bytes` is more than the memory available now (:func:`available_memory`),
            or ``workers`` is not a positive integer.
        """
        check_memory(self.peak_bytes(workers))

    def run(
        self,
        matrix: np.ndarray,
        *,
        rng: np.random.Generator | None = None,
        seed: int | None = None,
        progress: ProgressCallback | None = None,
        should_cancel: CancelCallback | None = None,
        workers: int | None = None,
        overwrite_input: bool = False,
        sizing: Sizing = DEFAULT_SIZING,
    ) -> Release:
        """Release ``matrix`` (M: non-negative integer counts of shape ``schema.shape``).

        Under :attr:`uses_public_total` every cell is then shifted by ``(n - total) / m``
        (``Release.total_shift``; ``Release.raw`` is the matrix before). ``seed`` or ``rng`` is for
        reproducible tests only (such a release is marked ``seeded`` and is not private): the
        release is then a function of (seed, spec, M) alone. By default the noise is keyed from
        the operating system (:mod:`~privelet_gui.engine.noise.bits`). The work is done by
        ``workers`` threads (default: by size, :func:`~privelet_gui.engine.pipeline.thread_count`)
        in pieces that ``sizing`` sets; neither changes any value. ``overwrite_input`` writes
        the release into ``matrix`` itself when it is a C-contiguous, writable float64 array
        (the same values, without the memory of a second matrix; the true counts are gone
        afterwards, also after an error or a cancel).

        Parameters
        ----------
        matrix : numpy.ndarray
            M: non-negative integer counts (any numeric dtype), shape ``schema.shape``.
        rng : numpy.random.Generator, optional, keyword-only
            For reproducible tests only (see above).
        seed : int, optional, keyword-only
            For reproducible tests only (see above).
        progress : callable ``(fraction, stage)``, optional, keyword-only
            Called with the fraction done (0..1) and a stage label.
        should_cancel : callable ``() -> bool``, optional, keyword-only
            Polled between blocks; True stops the release with :class:`Cancelled`.
        workers : int, optional, keyword-only
            Threads (at least 1); see above.
        overwrite_input : bool, default False, keyword-only
            Write the release into ``matrix`` (see above).
        sizing : Sizing, default :data:`DEFAULT_SIZING`, keyword-only
            How the work is cut (see above).

        Returns
        -------
        Release
            The noisy matrix (float64, shape ``schema.shape``) and how it was made.

        Raises
        ------
        PriveletError
            ``matrix`` not of shape ``schema.shape``, or holding a negative, fractional, NaN or infinite
            count or one of 2^53 or more; a table with too many rows for exact rounding; a release
            that would not fit in the memory available; ``workers`` not a positive integer.
        Cancelled
            ``should_cancel()`` returned True.
        """
        started = time.perf_counter()
        matrix = np.asarray(matrix, dtype=np.float64)
        if matrix.shape != self.schema.shape:
            raise PriveletError(
                f"the matrix has shape {matrix.shape} but the schema needs {self.schema.shape}; "
                "count the table with this schema or fix the schema"
            )
        key = release_key(rng, seed=seed)
        # The grid and the sensitivity do not depend on n (only the refusal of huge tables
        # does): the blocks count n while they check their counts, and the table is refused
        # afterwards if it is too large, before anything is returned.
        calibration = self.calibration(1)
        self.check_memory(workers)
        steps = Progress(progress, should_cancel)
        threads = thread_count(matrix.size, workers, sizing)
        if self.mechanism == MARGINALS:
            noisy, rows = self._release_marginals(matrix, key, calibration, steps, overwrite_input)
        else:
            pipeline = ReleasePipeline(self.plan, calibration, self.sampler, sizing)
            noisy, rows = pipeline.release(matrix, key, steps, threads, overwrite_input=overwrite_input)
        self.check_rows(rows)
        if self.calibration(rows) != calibration:
            raise InternalError("the noise calibration depends on the number of rows")
        shift = shift_to_total(noisy, rows, workers=threads) if self.uses_public_total else None
        steps.report(1.0, "release done")
        return self.release_of(noisy, calibration, seeded=rng is not None or seed is not None, total_shift=shift,
                               seconds=time.perf_counter() - started)

    def _release_marginals(self, matrix: np.ndarray, key: bytes, calibration: NoiseCalibration, steps: Progress,
                           overwrite_input: bool) -> tuple[np.ndarray, int]:
        """The least-squares release of weighted marginals (docs/math.md, "Marginals"), and the
        number of rows counted."""
        counts = np.empty(matrix.size, dtype=np.int64)
        rows = checked_counts(matrix, counts)
        self.check_rows(rows)  # before measuring: a weighted marginal cell reaches the growth times n
        steps.report(0.0, "weighted marginals: measure, noise and least squares")
        steps.check()
        noisy = self.marginals_strategy.release(counts.reshape(matrix.shape), calibration, self.sampler, key)
        if overwrite_input and matrix.flags.c_contiguous and matrix.flags.writeable:
            matrix[...] = noisy
            noisy = matrix
        return noisy, rows

    def check_rows(self, rows: int) -> None:
        """Refuse a table whose counts the exact integer arithmetic cannot hold (said without the
        number of rows, which is private under add/remove neighbours).

        Parameters
        ----------
        rows : int
            The number of rows counted in M (its total).

        Raises
        ------
        PriveletError
            Too many rows for exact rounding with these strategies.
        """
        calibration = self.calibration(1)
        if rows * self._sensitivity[2] << max(-calibration.grid_exponent, 0) >= UNITS_LIMIT:
            raise PriveletError(
                "the table has too many rows for exact rounding with these hierarchies; "
                "split the table or use hierarchies with smaller fan-outs"
            )

    def release_of(
        self,
        noisy: np.ndarray,
        calibration: NoiseCalibration,
        *,
        seeded: bool,
        total_shift: float | None,
        seconds: float = 0.0,
    ) -> Release:
        """The :class:`Release` of ``noisy``, made by this spec with ``calibration`` (here or on a cluster).

        Parameters
        ----------
        noisy : numpy.ndarray
            The released matrix (float64, shape ``schema.shape``), after any shift.
        calibration : NoiseCalibration
            The calibration its noise was drawn with (:meth:`calibration`).
        seeded : bool, keyword-only
            Whether the noise came from a caller's seed or generator (tests; not private).
        total_shift : float or None, keyword-only
            What was added to every cell to reach the public total (None: not shifted).
        seconds : float, default 0.0, keyword-only
            Wall-clock time of the release, recorded in the release.

        Returns
        -------
        Release
            ``noisy`` with this spec's effective S_A, rho, label, neighbours, sampler and strategies.
        """
        return Release(
            noisy=noisy,
            epsilon=calibration.epsilon,
            sa=self.effective_sa,
            rho=self.rho,
            scale=calibration.scale,
            mechanism=self.label,
            neighbours=self.neighbours,
            calibration=calibration,
            schema=self.schema,
            seeded=seeded,
            total_shift=total_shift,
            sampler=self.sampler,
            strategies=self.strategies if self.label == STRATEGIES else (),
            marginals=self.marginals,
            seconds=seconds,
        )


@dataclass(frozen=True)
class Release:
    """A differentially private noisy frequency matrix and how it was made.

    ``noisy`` has the shape of the input. ``scale`` is the effective Laplace scale
    ``D g / epsilon`` of the weighted measurements (docs/math.md, "The grid"; it exceeds the nominal
    ``lambda`` by a relative excess below 1e-6). ``sampler`` names the noise sampler
    (``"exact"`` or ``"standard"``). ``seeded`` is True when the caller supplied the seed or
    the random generator (tests): such a release must not be published. ``total_shift`` is
    what was added to every cell to make the total the public number of rows
    (replace-one-tuple neighbours only; None: not shifted), so :attr:`raw` gives back the
    matrix before. A release never holds a true count. Its exact variances are its
    specification's (:attr:`spec`).

    Attributes
    ----------
    noisy : numpy.ndarray
        The released matrix, float64, shape ``schema.shape`` (after any shift).
    epsilon : float
        The privacy budget spent.
    sa : tuple of str
        The effective S_A, in axis order.
    rho : float
        The generalized sensitivity of the strategy (1 for Basic; an int when whole).
    scale : float
        The effective Laplace scale of the weighted measurements (see above).
    mechanism : {"privelet+", "privelet", "basic", "strategies"}
        What the release really is (:attr:`ReleaseSpec.label`).
    neighbours : {"replace", "add-remove"}
        The neighbouring notion.
    calibration : NoiseCalibration
        The noise grid and sensitivity the noise was drawn with.
    schema : Schema or None, default None
        The attributes of the axes (None: a matrix released by :func:`basic` without one).
    seeded : bool, default False
        See above.
    sampler : str, default "exact"
        See above.
    total_shift : float or None, default None
        See above.
    strategies : tuple of str, default ()
        Each axis's strategy name for the mechanism ``"strategies"``; empty for the paper's.
    marginals : tuple of (tuple of str, int), default ()
        The weighted marginals of the mechanism ``"marginals"``; empty for the others.
    seconds : float, default 0.0
        Wall-clock time the release took (not compared by ``==``).
    """

    noisy: np.ndarray
    epsilon: float
    sa: tuple[str, ...]
    rho: float
    scale: float
    mechanism: Mechanism
    neighbours: Neighbours
    calibration: NoiseCalibration
    schema: Schema | None = None
    seeded: bool = False
    sampler: str = SAMPLER
    total_shift: float | None = None
    strategies: tuple[str, ...] = ()
    marginals: tuple[tuple[tuple[str, ...], int], ...] = ()
    seconds: float = field(default=0.0, compare=False)

    @cached_property
    def spec(self) -> ReleaseSpec:
        """The specification this release follows (a schema of plain axes when it has none)."""
        schema = self.schema if self.schema is not None else axes_schema(self.noisy.shape)
        sa = self.sa if self.schema is not None else schema.names
        if self.mechanism in (STRATEGIES, MARGINALS):
            sa = ()  # named by the strategies, or none
        sampler = "standard" if self.sampler == _LEGACY_SAMPLER else self.sampler
        return ReleaseSpec(
            schema, self.epsilon, self.mechanism, sa, self.neighbours,
            public_total=self.public_total, sampler=sampler, strategies=self.strategies,  # type: ignore[arg-type]
            marginals=self.marginals,
        )

    @property
    def public_total(self) -> bool:
        """Whether the release was shifted so that its total is the public number of rows."""
        return self.total_shift is not None

    @property
    def raw(self) -> np.ndarray:
        """The matrix before the shift to the public total (itself when not shifted; equal
        to the mechanism's output up to float rounding)."""
        return self.noisy if self.total_shift is None else self.noisy - self.total_shift

    @property
    def nominal_scale(self) -> float:
        """lambda = 2 rho / epsilon (replace) or rho / epsilon (add/remove)."""
        return self.calibration.nominal_scale

    @property
    def coefficient_variance(self) -> float:
        """Variance of the noise on each weighted measurement (``~ 2 scale^2``)."""
        return self.calibration.variance

    def variances(self, queries: QueryBatch, *, raw: bool = False) -> np.ndarray:
        """Exact noise variance of each query's answer on this release (data-independent):
        its specification's factors times the noise variance its calibration draws; on
        :attr:`raw` with ``raw``.

        Parameters
        ----------
        queries : QueryBatch
            Box queries on the release's schema.
        raw : bool, default False, keyword-only
            Variances on :attr:`raw` (before the shift to the public total).

        Returns
        -------
        numpy.ndarray
            float64, shape ``(len(queries),)``, in squared counts.

        Raises
        ------
        PriveletError
            The release has no schema.
        """
        if self.schema is None:
            raise PriveletError("this release has no schema: exact variances need the attributes' strategies")
        return self.coefficient_variance * self.spec.variance_factors(queries, raw=raw)

    def variance(self, query: RangeQuery, *, raw: bool = False) -> float:
        """Exact noise variance of one query's answer on this release (on :attr:`raw` with ``raw``).

        Parameters
        ----------
        query : RangeQuery
            A box query on the release's schema.
        raw : bool, default False, keyword-only
            The variance on :attr:`raw`.

        Returns
        -------
        float
            A variance, in squared counts.

        Raises
        ------
        PriveletError
            The release has no schema.
        """
        return float(self.variances(QueryBatch.of([query]), raw=raw)[0])

    @property
    def worst_case_variance(self) -> float:
        """The largest noise variance of any range-count query on the raw release (see
        :meth:`ReleaseSpec.worst_case_variance`)."""
        return self.coefficient_variance * self.spec.worst_factor()
