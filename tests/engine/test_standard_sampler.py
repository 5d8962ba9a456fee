"""The standard sampler's draw: the magnitude by inverting its law from word a's low 52 bits, the
sign from its top bit; its exact law value by value, the independence of sign and magnitude,
the inversion against exact arithmetic, and the split draw (with the CKS restart) above 2^40
grid units."""

from __future__ import annotations

import math
from decimal import Decimal, getcontext
from fractions import Fraction

import numpy as np
import pytest

from privelet_gui.engine.kernels import noise as kernels
from privelet_gui.engine.noise.calibration import discrete_laplace_variance
from privelet_gui.engine.noise.samplers import SamplerSizing, StandardParameters

from .sampling import draw
from .stats import chi_square, chi_square_limit


def law(theta: float, values: np.ndarray) -> np.ndarray:
    """``P(Z = z)`` of the discrete Laplace law, exactly in float64 for moderate ``theta``."""
    a = math.exp(-theta)
    return (1 - a) / (1 + a) * a ** np.abs(values)


def value_statistic(z: np.ndarray, theta: float, reach: int) -> tuple[float, int]:
    """Chi-square of every value in ``-reach..reach`` on its own, the two tails pooled."""
    values = np.arange(-reach, reach + 1)
    expected = z.size * law(theta, values)
    observed = np.array([np.count_nonzero(z == v) for v in values])
    tail_expected, tail_observed = z.size - expected.sum(), z.size - observed.sum()
    keep = expected >= 5
    statistic = chi_square(observed[keep], expected[keep])
    rest = tail_expected + expected[~keep].sum()
    statistic += (tail_observed + observed[~keep].sum() - rest) ** 2 / max(rest, 1.0)
    return statistic, int(keep.sum()) + 1


def standard_rows(words: np.ndarray, parameters: StandardParameters) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    high, low, status = (np.empty(len(words), dtype=np.int64) for _ in range(3))
    kernels.standard_draws(words, parameters.scale, parameters.offset, parameters.split_bits, parameters.block_scale,
                           parameters.theta, high, low, status)
    return high, low, status


@pytest.mark.parametrize("theta", [Fraction(5, 2), Fraction(7, 10), Fraction(1, 20)])
def test_every_value_has_its_exact_probability(theta):
    count = 400_000
    z = draw("standard", theta, count)
    np.testing.assert_array_equal(z, np.round(z))  # integers only
    statistic, cells = value_statistic(z, float(theta), reach=int(12 / float(theta)))
    assert statistic < chi_square_limit(cells), (statistic, cells)
    assert z.var() == pytest.approx(discrete_laplace_variance(float(theta)), rel=0.03)
    assert abs(z.mean()) < 5 * math.sqrt(discrete_laplace_variance(float(theta)) / count)


def test_below_2_40_grid_units_every_draw_is_decided_by_its_first_block():
    for theta in (Fraction(2), Fraction(1, 3), Fraction(1, 2**39)):
        words = np.random.default_rng(3).integers(0, 2**64, (70_001, 2), dtype=np.uint64)
        _, low, status = standard_rows(words, StandardParameters(theta))
        assert (status == kernels.DONE).all() and (low == 0).all()


def test_the_sign_is_independent_of_the_magnitude():
    theta = 0.2
    z = draw("standard", Fraction(theta), 400_000)
    magnitude, positive = np.abs(z[z != 0]), z[z != 0] > 0
    edges = np.array([1, 2, 3, 5, 8, 13, 21, 10**9])
    shell = np.searchsorted(edges, magnitude, side="right") - 1
    table = np.stack([np.bincount(shell[positive], minlength=7), np.bincount(shell[~positive], minlength=7)])
    expected = table.sum(axis=1, keepdims=True) * table.sum(axis=0, keepdims=True) / table.sum()
    assert chi_square(table, expected) < chi_square_limit(6)  # (2 - 1) x (7 - 1) degrees of freedom
    assert abs(positive.mean() - 0.5) < 5 * math.sqrt(0.25 / positive.size)


def test_the_inversion_agrees_with_exact_arithmetic_word_by_word():
    # |Z| = floor(S E + c) for E = -log(1 - k 2^-52): computed to 60 digits, the float64 path
    # gives the same integer for every word not within 1e-13 (relative) of a boundary
    getcontext().prec = 60
    rng = np.random.default_rng(6)
    for theta in (Fraction(1, 3), Fraction(3, 1000), Fraction(1, 2**30)):
        parameters = StandardParameters(theta)
        k = np.concatenate([rng.integers(0, 2**52, 2000, dtype=np.uint64), np.array([0, 1, 2**52 - 1], dtype=np.uint64)])
        words = np.zeros((k.size, 2), dtype=np.uint64)
        words[:, 0] = k  # sign bit 0: positive
        got, _, _ = standard_rows(words, parameters)
        t = Decimal(theta.numerator) / Decimal(theta.denominator)
        offset = -(1 + (-t).exp()).ln() / t + Decimal(2).ln() / t  # S log(2 / (1 + a))
        checked = 0
        for ki, value in zip(k.tolist(), got.tolist(), strict=True):
            v = 1 - Decimal(ki) / Decimal(2) ** 52
            x = -v.ln() / t + offset
            if abs(x - x.to_integral_value()) > Decimal("1e-13") * max(x, Decimal(1)):
                assert value == int(x), (theta, ki, value, x)
                checked += 1
        assert checked > 1990
    # the largest magnitude (k = 2^52 - 1, V = 2^-52) is about 36.04 S
    assert abs(got[-1] - 52 * math.log(2) * 2**30) < 1  # floor(36.04 S + 1/2)


def test_the_split_draw_above_2_40_gives_the_exact_law():
    # The split at scales above 2^40 is made common: at scale 50 with 2 bits of H's scale,
    # m = 4, and "-0" (B = 1, Y = 0: probability (1 - a) / 2, about 1%) is drawn again.
    theta = Fraction(1, 50)
    assert StandardParameters(theta, float_scale_bits=2).split_bits == 4
    z = draw("standard", theta, 300_000, sizing=SamplerSizing(float_scale_bits=2))
    statistic, cells = value_statistic(z, float(theta), reach=300)
    assert statistic < chi_square_limit(cells), (statistic, cells)
    assert z.var() == pytest.approx(discrete_laplace_variance(float(theta)), rel=0.03)
    # zero is not counted twice: P(Z = 0) = (1 - a) / (1 + a)
    p_zero = law(float(theta), np.array([0]))[0]
    assert abs(np.mean(z == 0) - p_zero) < 5 * math.sqrt(p_zero / z.size)
