"""The release mechanisms: Basic, Privelet and Privelet+.

Privelet+ transforms M along every attribute not in S_A, adds noise of scale
``lambda / W(c)`` to every coefficient (``lambda = 2 rho / epsilon`` for
replace-one-tuple neighbours, ``rho / epsilon`` for add/remove), and inverts
(mean subtraction along nominal axes). Attributes in S_A are never transformed,
so the work is done one S_A slice block at a time: memory stays a small
multiple of one block, and the blocks fit the CPU cache.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Literal

import numpy as np

from .bounds import variance_model
from .errors import PriveletError
from .hn import TransformPlan
from .noise import Neighbours, NoiseCalibration, calibrate, default_rng, discrete_laplace, round_to_grid
from .progress import CancelCallback, Progress, ProgressCallback
from .queries import QueryBatch, RangeQuery
from .schema import Schema
from .transform import along

__all__ = ["Release", "privelet_plus", "privelet", "basic", "SAMPLER"]

Mechanism = Literal["privelet+", "privelet", "basic"]

#: The noise sampler every release uses (math.md, "standard"): discrete Laplace on a
#: power-of-two grid, drawn as the difference of two geometric variables.
SAMPLER = "discrete-laplace/geometric-difference"

# Block size (cells) for the S_A-sliced pipeline: small enough to stay in cache.
_BLOCK_CELLS = 1 << 19
_EXACT_LIMIT = 2.0**53


@dataclass(frozen=True)
class Release:
    """A differentially private noisy frequency matrix and how it was made.

    ``noisy`` has the shape of the input. ``scale`` is the effective Laplace scale
    ``D g / epsilon`` of the weighted coefficients (math.md; it exceeds the
    nominal ``lambda`` by a relative 2**-30 K / rho or so). ``seeded`` is True when
    the caller supplied the random generator (tests): such a release must not be
    published. A release never holds a true count.
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
    seconds: float = field(default=0.0, compare=False)

    @property
    def nominal_scale(self) -> float:
        """lambda = 2 rho / epsilon (replace) or rho / epsilon (add/remove)."""
        return self.calibration.nominal_scale

    @property
    def coefficient_variance(self) -> float:
        """Variance of the noise on each weighted coefficient (``~ 2 scale^2``)."""
        return self.calibration.variance

    def variances(self, queries: QueryBatch) -> np.ndarray:
        """Exact noise variance of each query's answer on this release (data-independent)."""
        if self.schema is None:
            raise PriveletError("this release has no schema: exact variances need the attributes' transforms")
        return self.coefficient_variance * variance_model(self.schema).batch_factors(queries, self.sa)

    def variance(self, query: RangeQuery) -> float:
        """Exact noise variance of one query's answer on this release."""
        return float(self.variances(QueryBatch.of([query]))[0])

    @property
    def worst_case_variance(self) -> float:
        """The largest noise variance of any range-count query on this release."""
        if self.schema is None:  # Basic without a schema: the worst query is the whole matrix
            return self.coefficient_variance * self.noisy.size
        return self.coefficient_variance * variance_model(self.schema).worst_factor(self.sa)


def privelet_plus(
    matrix: np.ndarray,
    schema: Schema,
    epsilon: float,
    sa: Iterable[str] = (),
    rng: np.random.Generator | None = None,
    *,
    neighbours: Neighbours = "replace",
    progress: ProgressCallback | None = None,
    should_cancel: CancelCallback | None = None,
    mechanism: Mechanism | None = None,
) -> Release:
    """Privelet+ (math.md): the HN transform on attributes outside ``sa``, noise, inverse.

    ``matrix`` is M (non-negative integer counts, shape ``schema.shape``). ``rng`` is for
    reproducible tests only; by default the noise is seeded from OS entropy.

    Examples
    --------
    >>> from privelet_gui.engine import Hierarchy, NominalAttribute, OrdinalAttribute, Schema
    >>> schema = Schema([OrdinalAttribute.integer_range("age", 0, 15),
    ...                  NominalAttribute("sex", Hierarchy.flat(["F", "M"]))])
    >>> m = np.ones(schema.shape)
    >>> r = privelet_plus(m, schema, epsilon=1.0, sa=["sex"], rng=np.random.default_rng(7))
    >>> r.noisy.shape, r.rho, r.mechanism, round(r.scale, 6)
    ((16, 2), 5, 'privelet+', 10.0)
    """
    plan = TransformPlan(schema, sa)
    if mechanism is None:
        mechanism = "privelet" if not plan.sa else ("basic" if not plan.transformed_axes else "privelet+")
    return _release(matrix, plan, epsilon, rng, neighbours, Progress(progress, should_cancel), mechanism)


def privelet(
    matrix: np.ndarray,
    schema: Schema,
    epsilon: float,
    rng: np.random.Generator | None = None,
    **options: object,
) -> Release:
    """Privelet: :func:`privelet_plus` with S_A empty (every attribute transformed)."""
    return privelet_plus(matrix, schema, epsilon, (), rng, mechanism="privelet", **options)  # type: ignore[arg-type]


def basic(
    matrix: np.ndarray,
    epsilon: float,
    rng: np.random.Generator | None = None,
    *,
    schema: Schema | None = None,
    neighbours: Neighbours = "replace",
    progress: ProgressCallback | None = None,
    should_cancel: CancelCallback | None = None,
) -> Release:
    """Basic (Dwork et al.): noise of scale 2/epsilon (replace) on every cell of M.

    Equivalent to Privelet+ with every attribute in S_A. ``schema`` is optional and,
    when given, is recorded in the release.
    """
    matrix = np.asarray(matrix, dtype=np.float64)
    if schema is not None:
        plan = TransformPlan(schema, schema.names)
    else:
        plan = TransformPlan.untransformed(matrix.shape)
    return _release(matrix, plan, epsilon, rng, neighbours, Progress(progress, should_cancel), "basic")


def _release(
    matrix: np.ndarray,
    plan: TransformPlan,
    epsilon: float,
    rng: np.random.Generator | None,
    neighbours: Neighbours,
    steps: Progress,
    mechanism: Mechanism,
) -> Release:
    started = time.perf_counter()
    matrix = np.asarray(matrix, dtype=np.float64)
    expected = plan.shape
    if matrix.shape != expected:
        raise PriveletError(
            f"the matrix has shape {matrix.shape} but the schema needs {expected}; "
            "count the table with this schema or fix the schema"
        )
    seeded = rng is not None
    generator = default_rng(rng)
    rows = _total_count(matrix)
    if rows * plan.growth >= _EXACT_LIMIT:
        raise PriveletError(
            f"the table is too large for exact rounding with these hierarchies ({rows:,} rows); "
            "split the table or use hierarchies with smaller fan-outs"
        )
    calibration = calibrate(
        epsilon,
        plan.rho,
        plan.influence,
        neighbours=neighbours,
        rows=rows,
        max_denominator=plan.max_denominator,
    )
    denominators = _denominators(plan)
    per_unit = calibration.epsilon / calibration.units
    grid = calibration.grid
    noisy = np.empty(matrix.shape)
    blocks = list(_blocks(matrix.shape, plan.identity_axes, _BLOCK_CELLS))
    for number, index in enumerate(blocks):
        part = steps.slice(number / len(blocks), (number + 1) / len(blocks))
        cells = matrix[index]
        _check_counts(cells)
        z = plan.numerators(cells, part.slice(0.0, 0.4) if len(blocks) == 1 else None)
        part.report(0.4, "adding noise")
        # Exact grid units + integer noise: both below 2^53, so the sum is exact too.
        coefficients = round_to_grid(z, denominators, calibration.grid_exponent)
        coefficients += discrete_laplace(generator, coefficients.shape, per_unit)
        coefficients *= grid
        plan.divide(coefficients, "weights")
        part.report(0.6, "inverting")
        noisy[index] = plan.inverse(coefficients, part.slice(0.6, 1.0) if len(blocks) == 1 else None)
        part.report(1.0, "inverting")
    return Release(
        noisy=noisy,
        epsilon=calibration.epsilon,
        sa=plan.sa,
        rho=plan.rho,
        scale=calibration.scale,
        mechanism=mechanism,
        neighbours=neighbours,
        calibration=calibration,
        schema=plan.schema,
        seeded=seeded,
        seconds=time.perf_counter() - started,
    )


def _total_count(matrix: np.ndarray) -> int:
    total = float(matrix.sum())
    if not math.isfinite(total):
        raise PriveletError("the matrix holds NaN or infinite values; a frequency matrix holds counts")
    return max(int(round(total)), 0)


def _check_counts(cells: np.ndarray) -> None:
    """Privacy and exact rounding assume non-negative integer counts."""
    if cells.size and (cells.min() < 0 or not np.array_equal(cells, np.floor(cells))):
        raise PriveletError(
            "the matrix holds negative or fractional values; Privelet releases a frequency matrix "
            "of non-negative integer counts (count the table with frequency_matrix)"
        )


def _denominators(plan: TransformPlan) -> np.ndarray | int:
    """Product of per-axis denominators, broadcastable to the coefficients (1 if none)."""
    ndim = len(plan.transforms)
    product: np.ndarray | int = 1
    for axis in plan.transformed_axes:
        d = plan.transforms[axis].denominators
        if np.any(d != 1):
            product = product * along(d, axis, ndim)
    return product


def _blocks(shape: tuple[int, ...], split_axes: tuple[int, ...], target: int) -> Iterator[tuple[slice, ...]]:
    """Index tuples cutting ``shape`` along ``split_axes`` into blocks of about ``target`` cells."""
    index = [slice(None)] * len(shape)

    def split(axes: tuple[int, ...], cells: int) -> Iterator[tuple[slice, ...]]:
        if cells <= target or not axes:
            yield tuple(index)
            return
        axis, rest = axes[0], axes[1:]
        per_index = cells // shape[axis]
        step = 1 if per_index >= target else max(1, target // per_index)
        for start in range(0, shape[axis], step):
            index[axis] = slice(start, min(start + step, shape[axis]))
            if per_index >= target:
                yield from split(rest, per_index)
            else:
                yield tuple(index)
        index[axis] = slice(None)

    yield from split(split_axes, math.prod(shape))
