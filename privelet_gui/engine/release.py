"""A release: the noisy frequency matrix and how it was made (never a true count)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

import numpy as np

from .accuracy.bounds import variance_model
from .accuracy.queries import QueryBatch, RangeQuery
from .errors import PriveletError
from .model.schema import Schema
from .noise import SAMPLERS, Neighbours, NoiseCalibration, Sampler

if TYPE_CHECKING:
    from .spec import ReleaseSpec

__all__ = ["READABLE_SAMPLERS", "SAMPLER", "SAMPLERS", "Mechanism", "Release"]

Mechanism = Literal["privelet+", "privelet", "basic"]

#: The default noise sampler: exact discrete Laplace in integer arithmetic
#: (:mod:`privelet_gui.engine.exact`); ``"standard"`` is the other (:class:`~.noise.StandardSampler`).
SAMPLER: Sampler = SAMPLERS[0]
#: How release files written before the exact sampler name the standard one.
_LEGACY_SAMPLER = "discrete-laplace/geometric-difference"
#: The sampler names a release file may hold.
READABLE_SAMPLERS: tuple[str, ...] = (*SAMPLERS, _LEGACY_SAMPLER)


@dataclass(frozen=True)
class Release:
    """A differentially private noisy frequency matrix and how it was made.

    ``noisy`` has the shape of the input. ``scale`` is the effective Laplace scale
    ``D g / epsilon`` of the weighted coefficients (math.md; it exceeds the
    nominal ``lambda`` by a relative excess below 1e-6). ``sampler`` names the noise
    sampler (``"exact"`` or ``"standard"``). ``seeded`` is True when the caller
    supplied the random generator (tests): such a release must not be published.
    ``total_shift`` is what was added to every cell to make the total the public number
    of rows (replace-one-tuple neighbours only; None: not shifted), so :attr:`raw` gives
    back the matrix before. A release never holds a true count.
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
    seconds: float = field(default=0.0, compare=False)

    @property
    def spec(self) -> ReleaseSpec:
        """The specification this release follows (a schema of plain axes when it has none)."""
        from .spec import ReleaseSpec, axes_schema

        schema = self.schema if self.schema is not None else axes_schema(self.noisy.shape)
        sa = self.sa if self.schema is not None else schema.names
        sampler = "standard" if self.sampler == _LEGACY_SAMPLER else self.sampler
        return ReleaseSpec(
            schema, self.epsilon, self.mechanism, sa, self.neighbours,
            public_total=self.public_total, sampler=sampler,  # type: ignore[arg-type]
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
        """Variance of the noise on each weighted coefficient (``~ 2 scale^2``)."""
        return self.calibration.variance

    def variances(self, queries: QueryBatch, *, raw: bool = False) -> np.ndarray:
        """Exact noise variance of each query's answer on this release (data-independent);
        on :attr:`raw` with ``raw``."""
        if self.schema is None:
            raise PriveletError("this release has no schema: exact variances need the attributes' transforms")
        model = variance_model(self.schema)
        return self.coefficient_variance * model.batch_factors(queries, self.sa, public_total=self.public_total and not raw)

    def variance(self, query: RangeQuery, *, raw: bool = False) -> float:
        """Exact noise variance of one query's answer on this release (on :attr:`raw` with ``raw``)."""
        return float(self.variances(QueryBatch.of([query]), raw=raw)[0])

    @property
    def worst_case_variance(self) -> float:
        """The largest noise variance of any range-count query on the raw release (see
        :meth:`ReleaseSpec.worst_case_variance`)."""
        if self.schema is None:  # Basic without a schema: the worst query is the whole matrix
            return self.coefficient_variance * self.noisy.size
        return self.coefficient_variance * variance_model(self.schema).worst_factor(self.sa)
