"""Laplace noise drawn safely: exact rounding to a power-of-two grid, then discrete Laplace.

Textbook floating-point Laplace sampling leaks (Mironov, CCS 2012): which floats
it can output depends on the true value. Here (math.md, "Drawing the noise
safely") every weighted coefficient ``y = W(c) * c`` is rounded *exactly* to
the nearest multiple of a grid ``g = 2**k``, and integer-valued discrete
Laplace noise is added in grid units, so every output lies on the same grid
whatever the input.

Sensitivity in grid units: ``D = ceil(s * rho / g) + s * K`` with ``s = 2``
(replace) or ``1`` (add/remove) and ``K`` the most coefficients one cell
changes; each such coefficient's rounding moves by at most one grid step. The
noise ``Z`` has ``P(Z = z)`` proportional to ``exp(-theta |z|)`` with
``theta = epsilon / D``, which is epsilon-DP for integer vectors of L1
sensitivity D. The effective Laplace scale ``D g / epsilon`` exceeds
``lambda = s rho / epsilon`` by the relative ``excess = (D g - s rho) / (s rho)``.

The grid follows the sensitivity, never epsilon nor n: ``g`` is the largest power
of two with ``s rho / g >= 2**20 (1 + s K)``, so ``D g`` exceeds ``s rho`` by at most
``(1 + s K) g <= 2**-20 s rho``: the excess is below ``2**-20`` (9.5e-7) at every
epsilon. (A grid tied to lambda shrinks the sensitivity in grid units with epsilon
until the rounding term ``s K`` dominates it: 80-fold excess at epsilon = 1e-8.)
A public bound ``B`` on ``|y|`` (``|y| <= n`` for every Privelet coefficient) must
stay below ``2**62`` grid units for exact int64 arithmetic, or the release is
refused: ``B = n`` under replace-one-tuple (n is the same for all neighbouring
tables) and the fixed cap ``ADD_REMOVE_MAX_ROWS`` under add/remove (where n itself
is private); for every schema in this project that limit is far away.

Exact arithmetic at every scale: at small epsilon the noise in grid units exceeds
2**53 (and at the smallest epsilons 2**63), so the sum ``round(y / g) + Z`` is
formed exactly in int64, in two limbs when needed (:func:`add_in_limbs`);
converting that exact integer to float64 afterwards is post-processing and
leaks nothing. Epsilon is accepted from :data:`EPSILON_MIN` to
:data:`EPSILON_MAX`, and a release whose noise scale would pass
:data:`SCALE_UNITS_MAX` grid units (tiny epsilon with very many coefficients per
cell) is refused with the smallest epsilon it can serve.

Two samplers draw ``Z`` (the release records which): ``"exact"``
(:mod:`privelet_gui.engine.exact`, integer arithmetic only, the default) and
``"standard"`` (:class:`StandardSampler`, the magnitude by floating-point inversion of
its law: one 64-bit word and one log per coefficient).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Literal, Protocol

import numpy as np

from .bits import random_words, release_generator
from .errors import PriveletError

__all__ = [
    "ADD_REMOVE_MAX_ROWS",
    "EPSILON_MAX",
    "EPSILON_MIN",
    "NEIGHBOUR_NAMES",
    "SAMPLERS",
    "SCALE_UNITS_MAX",
    "Neighbours",
    "NoiseCalibration",
    "NoiseSampler",
    "Sampler",
    "StandardSampler",
    "add_discrete_laplace",
    "add_in_limbs",
    "calibrate",
    "check_epsilon",
    "check_neighbours",
    "check_sampler",
    "default_rng",
    "discrete_laplace",
    "discrete_laplace_variance",
    "largest_magnitude",
    "multiplicity",
    "noise_sampler",
    "one_division_limit",
    "round_to_grid",
    "rounds_by_one_division",
]

Neighbours = Literal["replace", "add-remove"]
NEIGHBOURS: tuple[Neighbours, ...] = ("replace", "add-remove")
#: How each neighbouring notion is written for people.
NEIGHBOUR_NAMES: dict[str, str] = {"replace": "replace one record", "add-remove": "add or remove one record"}

Sampler = Literal["exact", "standard"]
#: The noise samplers, the default first.
SAMPLERS: tuple[Sampler, ...] = ("exact", "standard")

#: Under add/remove the table size is private, so the grid is chosen for this public
#: cap on the number of rows instead (2**32, about 4.3 billion; larger tables are refused).
ADD_REMOVE_MAX_ROWS = 1 << 32

#: The accepted epsilons (outside them a PriveletError names this range).
EPSILON_MIN = 1e-12
EPSILON_MAX = 1e12
#: The largest noise scale ``D / epsilon`` in grid units a release may have: the exact
#: sampler's low limb then stays below 2**61 (exact int64 arithmetic).
SCALE_UNITS_MAX = 1 << 68
# The grid leaves 2**20 (1 + s K) grid units in s rho: the excess is then below 2**-20.
_GRID_MARGIN_BITS = 20
# Rounded coefficients must stay below this many grid units (exact int64 arithmetic).
_UNITS_LIMIT = 1 << 62
# Below this magnitude float64 holds every integer and sums of two of them exactly.
_FLOAT_EXACT = 2.0**52


def check_neighbours(neighbours: object) -> Neighbours:
    """``neighbours`` if it names a neighbouring notion; a PriveletError otherwise."""
    if neighbours not in NEIGHBOURS:
        raise PriveletError(f"neighbours must be 'replace' or 'add-remove', got {neighbours!r}")
    return neighbours


def check_sampler(sampler: object) -> Sampler:
    """``sampler`` if it names a noise sampler; a PriveletError otherwise."""
    if sampler not in SAMPLERS:
        raise PriveletError(f"sampler must be 'exact' or 'standard', got {sampler!r}")
    return sampler


def multiplicity(neighbours: Neighbours) -> int:
    """Cells of M one neighbour step changes: 2 (replace one tuple) or 1 (add or remove one)."""
    return 2 if check_neighbours(neighbours) == "replace" else 1


def check_epsilon(epsilon: object) -> float:
    """``epsilon`` as a float if the engine accepts it; a PriveletError naming the range otherwise."""
    if isinstance(epsilon, bool) or not isinstance(epsilon, (int, float, np.floating, np.integer)):
        raise PriveletError(f"epsilon must be a number, got {epsilon!r}")
    if isinstance(epsilon, (int, np.integer)) and epsilon > EPSILON_MAX:  # before float() overflows
        raise PriveletError(_range_message(f"about 2^{int(epsilon).bit_length() - 1}"))
    value = float(epsilon)
    if not math.isfinite(value) or value <= 0:
        raise PriveletError(
            f"epsilon must be a positive number (finite, for example 1.0), got {epsilon!r}; "
            "smaller epsilon means more privacy and more noise"
        )
    if not EPSILON_MIN <= value <= EPSILON_MAX:
        raise PriveletError(_range_message(f"{value:g}"))
    return value


def _range_message(shown: str) -> str:
    return (
        f"epsilon must be at least {EPSILON_MIN:g} and at most {EPSILON_MAX:g}, got {shown}; "
        "typical releases use 0.1 to 10 (smaller epsilon means more privacy and more noise)"
    )


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
    def theta(self) -> Fraction:
        """``epsilon / D`` exactly (a float is an exact binary fraction): the noise's rate per grid unit."""
        return Fraction(self.epsilon) / self.units

    @property
    def scale_units(self) -> Fraction:
        """The noise scale ``D / epsilon`` in grid units, exactly."""
        return 1 / self.theta

    @property
    def scale(self) -> float:
        """The effective Laplace scale D g / epsilon (>= lambda, by :attr:`excess`)."""
        return math.ldexp(float(self.scale_units), self.grid_exponent)

    @property
    def excess(self) -> float:
        """How much the effective scale exceeds lambda, relative: ``D g / (s rho) - 1``."""
        nominal = Fraction(self.multiplicity) * Fraction(self.rho)
        return float(Fraction(self.units) * _power_of_two(self.grid_exponent) / nominal - 1)

    @property
    def variance(self) -> float:
        """Variance of the noise added to one weighted coefficient (grid units converted back)."""
        return math.ldexp(discrete_laplace_variance(float(self.theta)), 2 * self.grid_exponent)


def _power_of_two(exponent: int) -> Fraction:
    return Fraction(1 << exponent) if exponent >= 0 else Fraction(1, 1 << -exponent)


def _floor_log2(value: Fraction) -> int:
    """The largest k with ``2**k <= value`` (value > 0), exactly."""
    k = value.numerator.bit_length() - value.denominator.bit_length()
    while _power_of_two(k) > value:
        k -= 1
    while _power_of_two(k + 1) <= value:
        k += 1
    return k


def calibrate(epsilon: float, rho: float, influence: int, *, neighbours: Neighbours, rows: int) -> NoiseCalibration:
    """Choose the grid and the sensitivity in grid units (see the module docstring)."""
    value = check_epsilon(epsilon)
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
    sensitivity = steps * Fraction(rho)
    rounding = steps * int(influence)
    k = _floor_log2(sensitivity / ((1 + rounding) << _GRID_MARGIN_BITS))
    if bound >= _UNITS_LIMIT * _power_of_two(k):  # exact int64 arithmetic on the rounded coefficients
        raise PriveletError(
            f"a table of up to {bound:,} rows is too large for an exact release with these transforms (its "
            "coefficients would pass 2^62 grid units); put more attributes in S_A"
            + (" or use neighbours='replace'" if neighbours == "add-remove" else "")
        )
    units = math.ceil(sensitivity / _power_of_two(k)) + rounding
    calibration = NoiseCalibration(
        epsilon=value, neighbours=neighbours, rho=rho, influence=int(influence), grid_exponent=k, units=units
    )
    if calibration.scale_units > SCALE_UNITS_MAX:
        smallest = math.nextafter(float(Fraction(units) / SCALE_UNITS_MAX), math.inf)
        raise PriveletError(
            f"epsilon {value:g} is too small for this release: its noise would pass 2^68 grid units. With this "
            f"schema, S_A and neighbouring notion the smallest epsilon is {smallest:.3g} (the engine accepts "
            f"{EPSILON_MIN:g} to {EPSILON_MAX:g}); use a larger epsilon or put more attributes in S_A"
        )
    return calibration


# -- exact rounding ------------------------------------------------------------------------------


def rounds_by_one_division(largest: float, grid_exponent: int) -> bool:
    """Whether numerators of magnitude at most ``largest`` round to the grid ``2**k`` exactly
    by one correctly rounded division and ``rint`` (:func:`round_to_grid`'s proof)."""
    return largest < one_division_limit(grid_exponent)


def one_division_limit(grid_exponent: int) -> float:
    """The magnitude that numerators must stay below for :func:`rounds_by_one_division`:
    ``2**52 / 2**max(-k, 0)`` (a power of two, so the comparison is the proof's own)."""
    return math.ldexp(_FLOAT_EXACT, -max(-grid_exponent, 0))


def largest_magnitude(values: np.ndarray) -> float:
    """The largest magnitude among ``values`` (0 for none): what :func:`rounds_by_one_division` asks of them."""
    return max(float(values.max()), -float(values.min())) if values.size else 0.0


def round_to_grid(numerators: np.ndarray, denominators: np.ndarray | float, grid_exponent: int) -> np.ndarray:
    """``round((numerators / denominators) / 2**k)`` exactly: integer-valued float64 when
    every result is below 2**52 in magnitude, int64 otherwise.

    ``numerators`` hold integers (exact in float64) and ``denominators`` small positive
    integers d broadcasting against them. The exact quotient q is a fraction with
    denominator ``d * 2**max(k, 0)``, so unless it is exactly a half-integer it lies at
    least ``1 / (2 d 2**max(k, 0))`` away from one; one correctly rounded division is off
    by at most ``2**-53 |q|``, below that distance when ``|q| d 2**max(k, 0) < 2**52``,
    which holds whenever ``max |numerators| * 2**max(-k, 0) < 2**52``. Then ``rint`` of
    the float quotient is a nearest integer to the exact one (at an exact tie the
    quotient is exact and either neighbour is nearest). Otherwise that float result is
    only a candidate within a few units: its exact residual ``z 2**-k - a d`` is
    computed in wrapping int64 arithmetic (the true value is small, so the wrapped
    one is it) and the candidate corrected by it.
    """
    d: np.ndarray | float = (
        np.asarray(denominators, dtype=np.float64) if isinstance(denominators, np.ndarray) else float(denominators)
    )
    q = numerators / (d * 2.0**grid_exponent)
    if rounds_by_one_division(largest_magnitude(numerators), grid_exponent):
        if isinstance(d, float) and d == 1 and grid_exponent <= 0:
            return q  # integers times a power of two: already exact integers
        return np.rint(q, out=q)
    candidate = np.rint(q, out=q).astype(np.int64)
    whole = np.asarray(d, dtype=np.int64) << max(grid_exponent, 0)
    residual = (numerators.astype(np.int64) << max(-grid_exponent, 0)) - candidate * whole
    candidate += np.floor((2.0 * residual + whole) / (2.0 * whole)).astype(np.int64)
    return candidate


def add_in_limbs(units: np.ndarray, high: np.ndarray, low: np.ndarray, shift: int) -> np.ndarray:
    """``units + high * 2**shift + low`` formed exactly, then converted to float64.

    ``units`` are integers (int64, or float64 holding integers), ``|low| < 2**shift`` and
    ``shift <= 61``. The exact sum N is kept in two int64 limbs, ``N = hi 2**shift + lo``
    with ``0 <= lo < 2**shift``, which N determines; the float64 returned is computed
    from them, so it is a fixed function of N (post-processing of the exact noisy
    integer, whatever its rounding).
    """
    whole = units.astype(np.int64, copy=False)
    mask = np.int64((1 << shift) - 1)
    lo = (whole & mask) + low  # in (-2**shift, 2**(shift + 1)): no overflow
    hi = (whole >> shift) + high
    hi += lo >> shift  # the carry, -1, 0 or 1 (arithmetic shift floors)
    lo &= mask
    out = hi.astype(np.float64)
    out *= 2.0**shift
    out += lo
    return out


# -- the samplers ----------------------------------------------------------------------------------


class NoiseSampler(Protocol):
    """Adds discrete Laplace noise of one calibration to rounded coefficients."""

    name: Sampler

    def add(self, units: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """``units + Z`` (exactly, then as float64) for integer ``units`` (float64 or int64)."""
        ...


def noise_sampler(sampler: Sampler, calibration: NoiseCalibration) -> NoiseSampler:
    """The sampler named ``sampler`` for ``calibration`` (its tables are built once)."""
    if check_sampler(sampler) == "exact":
        from .exact import exact_sampler

        return exact_sampler(calibration.theta)
    return StandardSampler(calibration.theta)


# Values per round of draws: a round's few arrays stay in the CPU cache.
_NOISE_CHUNK = 1 << 16
# Up to this scale (grid units) S E + c < 2**46 for every E the inversion gives (at most
# 52 log 2): every magnitude is an exact float64 integer, and so is its sum with the units.
_FLOAT_SCALE_BITS = 40
# A word's low 52 bits, and the float64 bits of 1.0: ``(w & mask) | one`` is the float 1 + k 2**-52.
_MANTISSA = np.uint64((1 << 52) - 1)
_ONE_BITS = np.uint64(0x3FF0000000000000)
_SIGN_BIT = np.uint64(1 << 63)


class StandardSampler:
    """Discrete Laplace by inverting the law of its magnitude: one 64-bit word and one log
    per coefficient.

    With ``a = exp(-theta)`` the law ``P(Z = z) = (1 - a) / (1 + a) a^|z|`` has
    ``P(|Z| >= y) = 2 a^y / (1 + a)`` for every integer ``y >= 1`` (both signs) and
    ``P(Z = z) = P(|Z| = |z|) / 2`` for ``z != 0``. Each draw takes one 64-bit word w of
    the bit generator: its low 52 bits k give ``V = 1 - k 2**-52``, uniform on (0, 1] in
    steps of 2**-52 (exact in float64), and its top bit is the sign, independent of V. Then

        ``|Z| = floor(S E + c)``,  ``E = -log V``,  ``S = 1 / theta``,  ``c = S log(2 / (1 + a))``.

    Proof: E is exponential with rate 1 (up to V's steps), so for ``y >= 1``, as
    ``c <= 1`` (``2 a <= 1 + a``), ``P(S E + c >= y) = P(E >= theta (y - c)) =
    exp(-theta y) exp(theta c) = 2 a^y / (1 + a)``: the magnitude's law; and ``S E + c >= c
    >= 0``, so the floor is never negative. The sign bit is independent of the magnitude, so
    ``Z = (-1)^sign |Z|`` has ``P(Z = z) = P(|Z| = |z|) / 2`` for ``z != 0`` and
    ``P(Z = 0) = 1 - 2 a / (1 + a) = (1 - a) / (1 + a)``: the discrete Laplace law. (A zero
    with the sign set is -0.0, which adds nothing.) The offset, computed as
    ``-log1p(expm1(-theta) / 2) / theta``, is added after the product, so every rounding
    is relative to ``S E + c`` itself, about 2**-53 of it, as in the textbook inversion. V's
    steps bound E by 52 log 2 = 36.04: the sampler gives the exact law's tail beyond
    36.04 S (probability 2**-52, 2.2e-16) to the largest magnitude instead.

    Scales above 2**40 grid units (small epsilon): ``S E`` no longer resolves single
    units. Then ``Z = (-1)^B Y`` for the word's top bit B and a geometric Y with
    ``P(Y = y) = (1 - a) a^y``, drawn again when ``B = 1`` and ``Y = 0`` (the construction
    of Canonne, Kamath and Steinke, 2020: zero is not counted twice, so ``P(Z = z)`` is
    proportional to ``a^|z|``), and Y is split as ``Y = H 2**m + L``, its quotient and
    remainder by ``2**m``, which are independent for a geometric: H by the same inversion
    from the word's low bits at the scale ``S / 2**m <= 2**40`` (no offset: ``P(H >= h)``
    is ``exp(-theta 2**m h)``), and L, whose law ``exp(-theta l)`` on ``[0, 2**m)`` is
    within 2**-39 of uniform, by a uniform integer accepted with probability ``exp(-theta l)``.
    """

    name: Sampler = "standard"

    def __init__(self, theta: Fraction):
        self.theta = float(theta)
        scale = 1 / theta
        self.scale = float(scale)
        self.offset = -math.log1p(math.expm1(-self.theta) / 2) / self.theta  # c = S log(2 / (1 + a))
        self.shift = max(0, math.ceil(math.log2(scale)) - _FLOAT_SCALE_BITS) if scale > 1 else 0
        self.block_scale = float(scale / (1 << self.shift))  # S / 2**m

    def add(self, units: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """``units + Z`` as float64 (see the class docstring); ``units`` may be reused."""
        bits = rng.bit_generator
        if self.shift == 0 and units.dtype == np.float64:
            _add_folded(bits, units, self.scale, self.offset)  # |units| < 2**52, |Z| < 2**46: exact
            return units
        if self.shift == 0:
            noise = np.zeros(units.shape)
            _add_folded(bits, noise, self.scale, self.offset)
            out = units + noise.astype(np.int64)
            return out.astype(np.float64)
        high = np.empty(units.size, dtype=np.int64)
        low = np.empty(units.size, dtype=np.int64)
        for start in range(0, units.size, _NOISE_CHUNK):
            part = slice(start, min(start + _NOISE_CHUNK, units.size))
            high[part], low[part] = self._split_draws(rng, part.stop - part.start)
        return add_in_limbs(units.reshape(-1), high, low, self.shift).reshape(units.shape)

    def _split_draws(self, rng: np.random.Generator, count: int) -> tuple[np.ndarray, np.ndarray]:
        """``count`` draws above 2**40 grid units as signed limbs ``(+-H, +-L)``: ``Z = H 2**m + L``."""
        high = np.empty(count, dtype=np.int64)
        low = np.empty(count, dtype=np.int64)
        pending = np.arange(count)
        work = np.empty(count)
        while pending.size:  # CKS: draw again on "-0" (B = 1 and Y = 0)
            words = rng.bit_generator.random_raw(pending.size)
            quotient = work[: pending.size]
            _inversion(words, quotient, self.block_scale, 0.0)
            h = quotient.astype(np.int64)
            remainder = self._remainders(rng, pending.size)
            negative = (words >> np.uint64(63)).astype(bool)
            sign = 1 - 2 * negative.astype(np.int64)
            high[pending], low[pending] = h * sign, remainder * sign
            pending = pending[negative & (h == 0) & (remainder == 0)]
        return high, low

    def _remainders(self, rng: np.random.Generator, count: int) -> np.ndarray:
        """``count`` remainders L with ``P(L = l)`` proportional to ``exp(-theta l)`` on ``[0, 2**m)``."""
        low = np.empty(count, dtype=np.int64)
        pending = np.arange(count)
        mask = np.uint64((1 << self.shift) - 1)
        while pending.size:
            draws = (rng.bit_generator.random_raw(pending.size) & mask).astype(np.int64)
            accepted = rng.random(pending.size) < np.exp(-self.theta * draws)
            low[pending[accepted]] = draws[accepted]
            pending = pending[~accepted]
        return low


def _inversion(words: np.ndarray, out: np.ndarray, scale: float, offset: float) -> None:
    """``floor(scale E + offset)`` into ``out`` (float64), ``E = -log V`` for the uniform V in
    (0, 1] that the low 52 bits of each word give (see :class:`StandardSampler`)."""
    mantissas = np.bitwise_and(words, _MANTISSA, out=out.view(np.uint64))
    mantissas |= _ONE_BITS  # the float 1 + k 2**-52 in [1, 2)
    np.subtract(2.0, out, out=out)  # V = 1 - k 2**-52 in (0, 1], exact
    np.log(out, out=out)
    out *= -scale
    if offset:
        out += offset
    np.floor(out, out=out)


def _add_folded(bits: np.random.BitGenerator, target: np.ndarray, scale: float, offset: float) -> None:
    """Add one draw of :class:`StandardSampler` (scales up to 2**40) to each value of ``target``
    in place, one 64-bit word each: the magnitude from its low 52 bits, the sign its top bit."""
    # Work in the target's memory order (it may be a transposed layout): one flat view.
    flat = target.ravel(order="K")
    if not np.shares_memory(flat, target):
        raise ValueError("the noise needs a target that is contiguous in memory")
    noise = np.empty(min(flat.size, _NOISE_CHUNK))
    for start in range(0, flat.size, _NOISE_CHUNK):
        part = flat[start : start + _NOISE_CHUNK]
        words = random_words(bits, part.size)
        magnitude = noise[: part.size]
        _inversion(words, magnitude, scale, offset)
        # The sign: the word's top bit, set in the magnitude's (which is positive or +0, as the
        # offset is positive), one bit operation where copysign costs more.
        signs = np.bitwise_and(words, _SIGN_BIT, out=words)
        np.bitwise_or(magnitude.view(np.uint64), signs, out=magnitude.view(np.uint64))
        part += magnitude


def discrete_laplace(rng: np.random.Generator, shape: tuple[int, ...] | int, epsilon_per_unit: float) -> np.ndarray:
    """Integer-valued noise with ``P(Z = z)`` proportional to ``exp(-epsilon_per_unit * |z|)``,
    drawn by the standard sampler (:class:`StandardSampler`, scales up to 2**40) and
    returned as float64 holding integers."""
    noise = np.zeros(shape)
    add_discrete_laplace(rng, noise, epsilon_per_unit)
    return noise


def add_discrete_laplace(rng: np.random.Generator, target: np.ndarray, epsilon_per_unit: float) -> None:
    """Add :func:`discrete_laplace` noise to ``target`` in place."""
    sampler = StandardSampler(Fraction(epsilon_per_unit))
    if sampler.shift:
        raise PriveletError(f"add_discrete_laplace draws at scales up to 2**40 grid units, got {sampler.scale:.3g}")
    _add_folded(rng.bit_generator, target, sampler.scale, sampler.offset)


def discrete_laplace_variance(epsilon_per_unit: float) -> float:
    """Variance ``2 a / (1 - a)^2``, ``a = exp(-t)``, of the discrete Laplace noise."""
    a = math.exp(-epsilon_per_unit)
    return 2.0 * a / (-math.expm1(-epsilon_per_unit)) ** 2


def default_rng(rng: np.random.Generator | None) -> np.random.Generator:
    """The caller's generator (a seeded test release), or AES-128 counter mode keyed from
    the operating system (:mod:`privelet_gui.engine.bits`)."""
    return release_generator(rng)
