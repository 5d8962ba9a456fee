"""The noise grid and the sensitivity in grid units (docs/math.md, "The grid").

Every weighted measurement ``y`` is rounded *exactly* to the nearest multiple of a grid
``g = 2**k`` and integer-valued discrete Laplace noise is added in grid units, so every output
lies on the same grid whatever the input (floating-point Laplace leaks: Mironov, CCS 2012).

Sensitivity in grid units: ``D = ceil(s rho / g) + s K`` with ``s = 2`` (replace) or ``1``
(add/remove) and K the most measurements one cell changes; each such measurement's rounding
moves by at most one grid step. The noise ``Z`` has ``P(Z = z)`` proportional to
``exp(-theta |z|)``, ``theta = epsilon / D``: epsilon-DP for integer vectors of L1 sensitivity D.

The grid follows the sensitivity, never epsilon nor n: ``g`` is the largest power of two with
``s rho / g >= 2**20 (1 + s K)``, so the effective scale ``D g / epsilon`` exceeds
``lambda = s rho / epsilon`` by less than ``2**-20`` at every epsilon. Exact int64 arithmetic
needs ``|y| / g < 2**62`` (``|y| <= n`` for every weighted measurement of the paper's transforms,
with the public bound ``n`` under replace-one-tuple and the fixed cap :data:`ADD_REMOVE_MAX_ROWS`
under add/remove, where n is private) and a noise scale of at most :data:`SCALE_UNITS_MAX` grid
units (then every noise draw is below ``2**75`` and its sum with a rounded measurement is formed
exactly in two int64 limbs).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Literal

from ..errors import PriveletError

__all__ = [
    "ADD_REMOVE_MAX_ROWS",
    "EPSILON_MAX",
    "EPSILON_MIN",
    "NEIGHBOURS",
    "NEIGHBOUR_NAMES",
    "SAMPLERS",
    "SCALE_UNITS_MAX",
    "Neighbours",
    "NoiseCalibration",
    "Sampler",
    "calibrate",
    "check_epsilon",
    "check_neighbours",
    "check_sampler",
    "discrete_laplace_variance",
    "multiplicity",
]

Neighbours = Literal["replace", "add-remove"]
NEIGHBOURS: tuple[Neighbours, ...] = ("replace", "add-remove")
#: How each neighbouring notion is written for people.
NEIGHBOUR_NAMES: dict[str, str] = {"replace": "replace one record", "add-remove": "add or remove one record"}

Sampler = Literal["exact", "standard"]
#: The noise samplers, the default first.
SAMPLERS: tuple[Sampler, ...] = ("exact", "standard")

#: Under add/remove the table size is private, so the grid is checked against this public
#: cap on the number of rows instead (2**32, about 4.3 billion; larger tables are refused).
ADD_REMOVE_MAX_ROWS = 1 << 32

#: The accepted epsilons (outside them a PriveletError names this range).
EPSILON_MIN = 1e-12
EPSILON_MAX = 1e12
#: The largest noise scale ``D / epsilon`` in grid units a release may have: the exact sampler's
#: remainder then has at most 60 bits (docs/math.md, "The exact sampler").
SCALE_UNITS_MAX = 1 << 68
# The grid leaves 2**20 (1 + s K) grid units in s rho: the excess is then below 2**-20.
_GRID_MARGIN_BITS = 20
# Rounded measurements must stay below this many grid units (exact int64 arithmetic).
UNITS_LIMIT = 1 << 62


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
    """``epsilon`` as a float if the engine accepts it; a PriveletError naming the range otherwise.

    Parameters
    ----------
    epsilon : object
        A number (int, float, or anything with ``__float__``; not a bool).

    Returns
    -------
    float
        ``float(epsilon)``.

    Raises
    ------
    PriveletError
        Not a number, not finite, not positive, or outside
        :data:`EPSILON_MIN` .. :data:`EPSILON_MAX`.
    """
    if isinstance(epsilon, bool) or (not isinstance(epsilon, (int, float)) and not hasattr(epsilon, "__float__")):
        raise PriveletError(f"epsilon must be a number, got {epsilon!r}")
    if isinstance(epsilon, int) and epsilon > EPSILON_MAX:  # before float() overflows
        raise PriveletError(_range_message(f"about 2^{int(epsilon).bit_length() - 1}"))
    try:
        value = float(epsilon)
    except (TypeError, ValueError, OverflowError):
        raise PriveletError(f"epsilon must be a number, got {epsilon!r}") from None
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
    """Everything that fixes the noise distribution of one release.

    Attributes
    ----------
    epsilon : float
        The privacy budget.
    neighbours : {"replace", "add-remove"}
        The neighbouring notion.
    rho : fractions.Fraction
        The generalized sensitivity of the strategy (1 for Basic).
    influence : int
        K: the most measurements one cell changes.
    grid_exponent : int
        k: the grid is ``g = 2**k``.
    units : int
        D: the L1 sensitivity in grid units.
    """

    epsilon: float
    neighbours: Neighbours
    rho: Fraction  # generalized sensitivity of the strategy (1 for Basic)
    influence: int  # K: the most measurements one cell changes
    grid_exponent: int  # k: the grid is g = 2**k
    units: int  # D: L1 sensitivity in grid units

    @property
    def multiplicity(self) -> int:
        """Cells of M changed by one neighbour step: 2 (replace) or 1 (add/remove)."""
        return multiplicity(self.neighbours)

    @property
    def nominal_scale(self) -> float:
        """lambda = 2 rho / epsilon (replace) or rho / epsilon (add/remove)."""
        return float(self.multiplicity * Fraction(self.rho) / Fraction(self.epsilon))

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
        """Variance of the noise added to one weighted measurement (grid units converted back)."""
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


def calibrate(
    epsilon: float, rho: Fraction | int, influence: int, *, neighbours: Neighbours, rows: int,
    measurement_bound: Fraction | int = 1,
) -> NoiseCalibration:
    """Choose the grid and the sensitivity in grid units (see the module docstring).

    ``measurement_bound`` bounds ``|y| / n`` for the strategy's weighted measurements (1 for the
    paper's transforms): a table of ``rows`` tuples is refused when its measurements could pass
    ``2**62`` grid units.

    Parameters
    ----------
    epsilon : float
        The privacy budget, in ``[1e-12, 1e12]``.
    rho : fractions.Fraction or int
        The strategy's generalized sensitivity.
    influence : int
        K: the most measurements one cell changes.
    neighbours : {"replace", "add-remove"}, keyword-only
        The neighbouring notion.
    rows : int
        Number of rows n (under add/remove only checked against :data:`ADD_REMOVE_MAX_ROWS`).
    measurement_bound : fractions.Fraction or int, default 1, keyword-only
        A bound on ``|y| / n``.

    Returns
    -------
    NoiseCalibration

    Raises
    ------
    PriveletError
        ``epsilon`` refused by :func:`check_epsilon`; ``neighbours`` unknown; more than
        :data:`ADD_REMOVE_MAX_ROWS` rows under add/remove; measurements that could pass ``2**62``
        grid units; a noise scale above ``2**68`` grid units (the message names the smallest epsilon).
    """
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
    if bound * Fraction(measurement_bound) >= UNITS_LIMIT * _power_of_two(k):
        raise PriveletError(
            f"a table of up to {bound:,} rows is too large for an exact release with these strategies (its "
            "measurements would pass 2^62 grid units); put more attributes in S_A"
            + (" or use neighbours='replace'" if neighbours == "add-remove" else "")
        )
    units = math.ceil(sensitivity / _power_of_two(k)) + rounding
    calibration = NoiseCalibration(
        epsilon=value, neighbours=neighbours, rho=Fraction(rho), influence=int(influence), grid_exponent=k,
        units=units,
    )
    if calibration.scale_units > SCALE_UNITS_MAX:
        smallest = math.nextafter(float(Fraction(units) / SCALE_UNITS_MAX), math.inf)
        raise PriveletError(
            f"epsilon {value:g} is too small for this release: its noise would pass 2^68 grid units. With this "
            f"schema, S_A and neighbouring notion the smallest epsilon is {smallest:.3g} (the engine accepts "
            f"{EPSILON_MIN:g} to {EPSILON_MAX:g}); use a larger epsilon or put more attributes in S_A"
        )
    return calibration


def discrete_laplace_variance(epsilon_per_unit: float) -> float:
    """Variance ``2 a / (1 - a)^2``, ``a = exp(-t)``, of the discrete Laplace noise."""
    a = math.exp(-epsilon_per_unit)
    return 2.0 * a / (-math.expm1(-epsilon_per_unit)) ** 2
