"""The standard sampler's draw: one 64-bit word and one log per coefficient (the magnitude by
inverting its law, the sign from the word's top bit), its exact law value by value, the
independence of sign and magnitude, the inversion against exact arithmetic, and the split
draw (with the CKS restart) above 2^40 grid units."""

from __future__ import annotations

import math
from decimal import Decimal, getcontext
from fractions import Fraction

import numpy as np
import pytest

from privelet_gui.engine import noise as noise_module
from privelet_gui.engine.noise import StandardSampler, _inversion, discrete_laplace_variance

from .stats import chi_square, chi_square_limit


class CountingBits:
    """A bit generator that counts the words drawn from it (PCG64's words)."""

    def __init__(self, seed: int):
        self.inner = np.random.PCG64(seed)
        self.words = 0

    def random_raw(self, size: int | None = None):  # type: ignore[no-untyped-def]
        self.words += 1 if size is None else size
        return self.inner.random_raw(size)


class CountingGenerator:
    def __init__(self, seed: int):
        self.bit_generator = CountingBits(seed)

    def random(self, size: int | None = None):  # type: ignore[no-untyped-def]
        raise AssertionError("the sampler must not draw uniforms beside its words below 2^40 grid units")


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


@pytest.mark.parametrize("theta", [Fraction(5, 2), Fraction(7, 10), Fraction(1, 20)])
def test_every_value_has_its_exact_probability(theta):
    count = 400_000
    z = StandardSampler(theta).add(np.zeros(count), np.random.default_rng(21))
    np.testing.assert_array_equal(z, np.round(z))  # integers only
    statistic, cells = value_statistic(z, float(theta), reach=int(12 / float(theta)))
    assert statistic < chi_square_limit(cells), (statistic, cells)
    assert z.var() == pytest.approx(discrete_laplace_variance(float(theta)), rel=0.03)
    assert abs(z.mean()) < 5 * math.sqrt(discrete_laplace_variance(float(theta)) / count)


def test_one_word_and_no_uniform_per_coefficient():
    for theta in (Fraction(2), Fraction(1, 3), Fraction(1, 2**39)):
        generator = CountingGenerator(3)
        StandardSampler(theta).add(np.zeros(70_001), generator)  # type: ignore[arg-type]
        assert generator.bit_generator.words == 70_001
    # int64 units (past 2^52) take the same single word each, and the sum is exact
    generator = CountingGenerator(4)
    units = np.full(1000, 2**60, dtype=np.int64) + np.arange(1000)
    out = StandardSampler(Fraction(1, 3)).add(units, generator)  # type: ignore[arg-type]
    assert generator.bit_generator.words == 1000 and out.dtype == np.float64
    assert np.all(np.abs(out - 2.0**60) < 1000 + 40 * 3)


def test_the_sign_is_independent_of_the_magnitude():
    theta = 0.2
    z = StandardSampler(Fraction(theta)).add(np.zeros(400_000), np.random.default_rng(5))
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
        sampler = StandardSampler(theta)
        k = np.concatenate([rng.integers(0, 2**52, 2000, dtype=np.uint64), np.array([0, 1, 2**52 - 1], dtype=np.uint64)])
        words = k | (rng.integers(0, 2, k.size, dtype=np.uint64) << np.uint64(63))  # a sign, ignored here
        got = np.empty(k.size)
        _inversion(words, got, sampler.scale, sampler.offset)
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


def test_the_split_draw_above_2_40_gives_the_exact_law(monkeypatch):
    # The split at scales above 2^40 is made common: at scale 50 with 2 bits of H's scale,
    # m = 4, and "-0" (B = 1, Y = 0: probability (1 - a) / 2, about 1%) is drawn again.
    monkeypatch.setattr(noise_module, "_FLOAT_SCALE_BITS", 2)
    theta = Fraction(1, 50)
    sampler = StandardSampler(theta)
    assert sampler.shift == 4
    restarts = []
    draw = sampler._split_draws

    def counted(rng, count):  # type: ignore[no-untyped-def]
        high, low = draw(rng, count)
        restarts.append(count)
        return high, low

    monkeypatch.setattr(sampler, "_split_draws", counted)
    z = sampler.add(np.zeros(300_000), np.random.default_rng(8))
    statistic, cells = value_statistic(z, float(theta), reach=300)
    assert statistic < chi_square_limit(cells), (statistic, cells)
    assert z.var() == pytest.approx(discrete_laplace_variance(float(theta)), rel=0.03)
    # zero is not counted twice: P(Z = 0) = (1 - a) / (1 + a)
    p_zero = law(float(theta), np.array([0]))[0]
    assert abs(np.mean(z == 0) - p_zero) < 5 * math.sqrt(p_zero / z.size)
