"""Laplace noise drawn safely: exact rounding to a power-of-two grid, then discrete Laplace.

Textbook floating-point Laplace sampling leaks (Mironov, CCS 2012): which floats
it can output depends on the true value. Here (math.md, "Drawing the noise
safely") every weighted coefficient ``y = W(c) * c`` is rounded *exactly* to
the nearest multiple of a grid ``g = 2**k``, and integer-valued discrete
Laplace noise is added in grid units, so every output lies on the same grid
whatever the input.

Why the rounding is exact: counts are integers, so each transform's integer
numerator ``z`` is computed exactly in float64 (the engine checks that every
intermediate stays below 2**53), and ``y = z / d`` for a small integer
denominator ``d``. ``round(y / g)`` then needs one correctly rounded division
and ``rint``: see :func:`round_to_grid` for why that is exactly a nearest grid
point, given the grid condition below.

Grid: ``k = floor(log2 lambda) - 30``, raised only as far as exact rounding
requires (``(B / g) d < 2**52``) for a public bound ``B`` on ``|y|`` (``|y| <= n``
for every Privelet coefficient): ``B = n`` under replace-one-tuple (n is the
same for all neighbouring tables, so the grid reveals nothing) and the fixed
cap ``ADD_REMOVE_MAX_ROWS`` under add/remove (where n itself is private).

Sensitivity in grid units: ``D = ceil(s * rho / g) + s * K`` with ``s = 2``
(replace) or ``1`` (add/remove) and ``K`` the most coefficients one cell
changes; each such coefficient's rounding moves by at most one grid step.
The noise ``Z`` has ``P(Z = z)`` proportional to ``exp(-epsilon |z| / D)``,
which is epsilon-DP for integer vectors of L1 sensitivity D. The effective
Laplace scale ``D g / epsilon`` exceeds ``lambda = s rho / epsilon`` by a
relative ``(s K + 1) g / (s rho)``: about 2**-30 K / rho, negligible.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import numpy as np

from .errors import PriveletError

__all__ = [
    "ADD_REMOVE_MAX_ROWS",
    "NEIGHBOUR_NAMES",
    "Neighbours",
    "NoiseCalibration",
    "add_discrete_laplace",
    "calibrate",
    "check_neighbours",
    "default_rng",
    "discrete_laplace",
    "discrete_laplace_variance",
    "multiplicity",
    "round_to_grid",
]

Neighbours = Literal["replace", "add-remove"]
NEIGHBOURS: tuple[str, ...] = ("replace", "add-remove")
#: How each neighbouring notion is written for people.
NEIGHBOUR_NAMES: dict[str, str] = {"replace": "replace one record", "add-remove": "add or remove one record"}

#: Under add/remove the table size is private, so the grid is chosen for this public
#: cap on the number of rows instead (2**32, about 4.3 billion; larger tables are refused).
ADD_REMOVE_MAX_ROWS = 1 << 32

_GRID_BITS_BELOW_SCALE = 30


def check_neighbours(neighbours: object) -> Neighbours:
    """``neighbours`` if it names a neighbouring notion; a PriveletError otherwise."""
    if neighbours not in NEIGHBOURS:
        raise PriveletError(f"neighbours must be 'replace' or 'add-remove', got {neighbours!r}")
    return neighbours  # type: ignore[return-value]


def multiplicity(neighbours: Neighbours) -> int:
    """Cells of M one neighbour step changes: 2 (replace one tuple) or 1 (add or remove one)."""
    return 2 if check_neighbours(neighbours) == "replace" else 1
_FLOAT_EXACT = 2.0**52


@dataclass(frozen=True)
class NoiseCalibration:
    """Everything that fixes the noise distribution of one release."""

    epsilon: float
    neighbours: Neighbours
    rho: float  # generalized sensitivity of the transform (1 for Basic)
    influence: int  # K: the most coefficients one cell changes
    grid_exponent: int  # k: the grid is g = 2**k
    units: int  # D: L1 sensitivity in grid units

    @property
    def multiplicity(self) -> int:
        """Cells of M changed by one neighbour step: 2 (replace) or 1 (add/remove)."""
        return multiplicity(self.neighbours)

    @property
    def nominal_scale(self) -> float:
        """lambda = 2 rho / epsilon (replace) or rho / epsilon (add/remove)."""
        return self.multiplicity * self.rho / self.epsilon

    @property
    def grid(self) -> float:
        return math.ldexp(1.0, self.grid_exponent)

    @property
    def scale(self) -> float:
        """The effective Laplace scale D g / epsilon (>= lambda by a negligible amount)."""
        return self.units * self.grid / self.epsilon

    @property
    def variance(self) -> float:
        """Variance of the noise added to one weighted coefficient (grid units converted back)."""
        return discrete_laplace_variance(self.epsilon / self.units) * self.grid**2


def calibrate(
    epsilon: float,
    rho: float,
    influence: int,
    *,
    neighbours: Neighbours,
    rows: int,
    max_denominator: int = 1,
) -> NoiseCalibration:
    """Choose the grid and the sensitivity in grid units (see the module docstring)."""
    check_epsilon(epsilon)
    steps = multiplicity(neighbours)
    if neighbours == "add-remove":
        if rows > ADD_REMOVE_MAX_ROWS:
            raise PriveletError(
                f"the table has more than {ADD_REMOVE_MAX_ROWS:,} rows, the most an add/remove release supports; "
                "use neighbours='replace'"
            )
        bound = ADD_REMOVE_MAX_ROWS
    else:
        bound = max(int(rows), 1)
    lam = steps * rho / epsilon
    k = math.floor(math.log2(lam)) - _GRID_BITS_BELOW_SCALE
    # Exact rounding (see round_to_grid) needs (B / g) d 2^max(k, 0) < 2^52; raise the grid
    # only if that fails (it then costs a negligible (s K + 1) g / (s rho) of extra scale).
    while bound * max_denominator * 2.0 ** (max(k, 0) - k) >= _FLOAT_EXACT:
        if k > 1023:
            raise PriveletError("the table is too large to release with exact rounding")
        k += 1
    units = math.ceil(steps * rho / 2.0**k) + steps * influence
    return NoiseCalibration(
        epsilon=float(epsilon),
        neighbours=neighbours,
        rho=rho,
        influence=influence,
        grid_exponent=k,
        units=units,
    )


def check_epsilon(epsilon: object) -> float:
    if isinstance(epsilon, bool) or not isinstance(epsilon, (int, float, np.floating, np.integer)):
        raise PriveletError(f"epsilon must be a number, got {epsilon!r}")
    value = float(epsilon)
    if not math.isfinite(value) or value <= 0:
        raise PriveletError(
            f"epsilon must be a positive number (finite, for example 1.0), got {epsilon!r}; "
            "smaller epsilon means more privacy and more noise"
        )
    return value


def round_to_grid(numerators: np.ndarray, denominators: np.ndarray | int, grid_exponent: int) -> np.ndarray:
    """``round((numerators / denominators) / 2**k)`` exactly, as integer-valued float64.

    ``numerators`` hold integers (exact in float64) and ``denominators`` small positive
    integers d broadcasting against them. The exact quotient q is a fraction with
    denominator ``d * 2**max(k, 0)``, so unless it is exactly a half-integer it lies at
    least ``1 / (2 d 2**max(k, 0))`` away from one; one correctly rounded division is off
    by at most ``2**-53 |q|``, which :func:`calibrate` keeps below that distance
    (``|q| d 2**max(k, 0) < 2**52``). Hence ``rint`` of the float quotient is a nearest
    integer to the exact one (at an exact tie the quotient is exact and either neighbour
    is nearest).
    """
    d = denominators if np.isscalar(denominators) else np.asarray(denominators, dtype=np.float64)
    q = numerators / (d * 2.0**grid_exponent)
    if np.isscalar(d) and d == 1 and grid_exponent <= 0:
        return q  # integers times a power of two: already exact integers
    return np.rint(q, out=q)


def discrete_laplace(rng: np.random.Generator, shape: tuple[int, ...] | int, epsilon_per_unit: float) -> np.ndarray:
    """Integer-valued noise with ``P(Z = z)`` proportional to ``exp(-epsilon_per_unit * |z|)``.

    ``Z = G1 - G2`` for two independent geometric variables counting failures with
    success probability ``1 - exp(-epsilon_per_unit)``; each is ``floor(E / t)`` for an
    exponential ``E = -log(1 - U)``, U uniform on [0, 1) in steps of 2**-53
    (``P(floor(E / t) >= j) = exp(-j t)``). Inversion rather than numpy's ziggurat
    exponential because numpy's vectorised ``log`` makes it faster; either way E is
    bounded (here by 53 log 2 = 36.7), so ``|Z|`` never exceeds 36.7 times the scale
    ``1 / t``, an event of probability about 1e-16 under the exact distribution.
    Returned as float64 holding integers (exact below 2**53).
    """
    noise = np.zeros(shape)
    add_discrete_laplace(rng, noise, epsilon_per_unit)
    return noise


# Values per round of draws: both geometric halves of a chunk stay in the CPU cache.
_NOISE_CHUNK = 1 << 16


def add_discrete_laplace(rng: np.random.Generator, target: np.ndarray, epsilon_per_unit: float) -> None:
    """Add :func:`discrete_laplace` noise to ``target`` in place."""
    # Work in the target's memory order (it may be a transposed layout): one flat view.
    flat = target.ravel(order="K")
    if not np.shares_memory(flat, target):
        raise ValueError("add_discrete_laplace needs a target that is contiguous in memory")
    minus_inverse_rate = -1.0 / epsilon_per_unit
    draws = np.empty(2 * min(flat.size, _NOISE_CHUNK))
    for start in range(0, flat.size, _NOISE_CHUNK):
        part = flat[start : start + _NOISE_CHUNK]
        count = part.size
        both = draws[: 2 * count]
        rng.random(out=both)
        np.subtract(1.0, both, out=both)  # U in [0, 1) -> 1 - U in (0, 1]: log is finite
        np.log(both, out=both)
        both *= minus_inverse_rate
        np.floor(both, out=both)  # G1 (first half) and G2 (second half)
        part += both[:count]
        part -= both[count:]


def discrete_laplace_variance(epsilon_per_unit: float) -> float:
    """Variance ``2 a / (1 - a)^2``, ``a = exp(-t)``, of :func:`discrete_laplace`."""
    a = math.exp(-epsilon_per_unit)
    return 2.0 * a / (-math.expm1(-epsilon_per_unit)) ** 2


def default_rng(rng: np.random.Generator | None) -> np.random.Generator:
    """The caller's generator, or PCG64 seeded from OS entropy.

    PCG64 is statistically strong but not a cryptographic generator.
    """
    if rng is None:
        return np.random.Generator(np.random.PCG64(np.random.SeedSequence()))
    if not isinstance(rng, np.random.Generator):
        raise PriveletError(f"rng must be a numpy.random.Generator, got {type(rng).__name__}")
    return rng
