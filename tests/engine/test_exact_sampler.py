"""The exact sampler's guide table and lower-bit draw: every table entry against exact
arithmetic, and ties on the lower-bit thresholds decided with their exact conditional
probability (the laws themselves: tests/engine/test_samplers.py)."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

from privelet_gui.engine import exact as exact_module
from privelet_gui.engine.exact import ExactSampler

THETAS = [Fraction(1, 1000), Fraction(1, 2**20), Fraction(3, 2**33)]


@pytest.mark.parametrize("theta", THETAS, ids=lambda t: f"scale={float(1 / t):.3g}")
def test_the_guide_gives_v_for_every_prefix_it_decides(theta):
    sampler = ExactSampler(theta)
    thresholds = sampler.quotient_thresholds.astype(np.int64)  # T_1 > T_2 > ... (32 bits)
    w = np.random.default_rng(1).integers(0, 2**32, 200_000, dtype=np.uint64).astype(np.uint32)
    w = np.concatenate([w, sampler.quotient_thresholds, sampler.quotient_thresholds - np.uint32(1)])
    entry = sampler.guide[(w >> np.uint32(16)).astype(np.intp)] - (w & np.uint32(0xFFFF))
    unsure = (entry | np.uint32(0x7FFF0000)) >= np.uint32(0x7FFFFFFF)
    truth = thresholds.size - np.searchsorted(thresholds[::-1], w, side="right")  # V: thresholds above the prefix
    decided = ~unsure
    np.testing.assert_array_equal((entry >> np.uint32(16))[decided], truth[decided])
    # every tie (a prefix equal to a threshold) is left open, and only a few others are
    assert unsure[-2 * thresholds.size : -thresholds.size].all()
    assert unsure[:200_000].mean() < 0.01


@pytest.mark.parametrize("theta", THETAS[1:], ids=lambda t: f"scale={float(1 / t):.3g}")
def test_lower_bit_thresholds_are_the_floors_of_their_exact_ratios(theta):
    sampler = ExactSampler(theta)
    m = sampler.low_bits
    for u in range(1, m):
        for j in range(u):
            lo, hi = sampler._lower_bounds(u, j, 200)
            assert lo >> 136 == hi >> 136 == int(sampler.lower_thresholds[u, j]), (u, j)
        # R(u, j) = P(bits j .. u - 1 all zero) grows with j
        row = sampler.lower_thresholds[u, :u]
        assert (np.diff(row.astype(object)) > 0).all()


def test_a_tie_on_a_lower_bit_threshold_is_decided_with_its_exact_conditional_probability(monkeypatch):
    monkeypatch.setattr(exact_module, "_RATE_BITS", 0)  # gamma in (1/2, 1]: M = 5, C often non-zero
    sampler = ExactSampler(Fraction(1, 37))
    u = 4
    tied = int(sampler.lower_thresholds[u, 0])  # U's first 64 bits equal floor(2^64 R(4, 0))
    lo, _ = sampler._lower_bounds(u, 0, 192)
    share = 1 - float(Fraction(lo, 2**128) - tied)  # P(U >= R(4, 0) | prefix): some bit below 4 is set
    runs = 1000
    set_below = sum(sampler._lower_bits(u, tied, np.random.PCG64(seed)) != 0 for seed in range(runs))
    assert abs(set_below / runs - share) < 5 * math.sqrt(share * (1 - share) / runs)
