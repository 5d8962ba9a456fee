"""The exact sampler's tables and lower-bit draw: every table entry against exact arithmetic, and
ties on the lower-bit thresholds decided with their exact conditional probability (the laws
themselves: tests/engine/test_samplers.py)."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

from privelet_gui.engine.kernels import noise as kernels
from privelet_gui.engine.noise.bits import BlockCipher
from privelet_gui.engine.noise.exact import ExactSampler, WordStream, _LazyUniform, exp_neg_bounds

from .sampling import KEY

THETAS = [Fraction(1, 1000), Fraction(1, 2**20), Fraction(3, 2**33)]


@pytest.mark.parametrize("theta", THETAS, ids=lambda t: f"scale={float(1 / t):.3g}")
def test_the_guide_gives_v_for_every_prefix_it_decides(theta):
    sampler = ExactSampler(theta)
    thresholds = sampler.quotient_thresholds.astype(np.int64)  # T_1 > T_2 > ... (32 bits), then a 0
    w = np.random.default_rng(1).integers(0, 2**32, 200_000, dtype=np.uint64).astype(np.uint32)
    positive = sampler.quotient_thresholds[:-1]
    w = np.concatenate([w, positive, positive - np.uint32(1)])
    # as the compiled loop reads it: the entry of the prefix's cell less the whole prefix
    entry = sampler.word_guide[(w >> np.uint32(16)).astype(np.intp)] - w
    unsure = (entry | np.uint32(0x7FFF0000)) >= np.uint32(0x7FFFFFFF)
    truth = thresholds.size - np.searchsorted(thresholds[::-1], w, side="right")  # V: thresholds above the prefix
    decided = ~unsure
    np.testing.assert_array_equal((entry >> np.uint32(16))[decided], truth[decided])
    # every tie (a prefix equal to a threshold) is left open, and only a few others are
    assert unsure[-2 * positive.size : -positive.size].all()
    assert unsure[:200_000].mean() < 0.01


@pytest.mark.parametrize("theta", THETAS, ids=lambda t: f"scale={float(1 / t):.3g}")
def test_v_thresholds_are_the_floors_of_exp_at_32_and_96_bits(theta):
    sampler = ExactSampler(theta)
    for v in [1, 2, 17, len(sampler.quotient_thresholds) // 2, len(sampler.quotient_thresholds)]:
        lo, hi = exp_neg_bounds(sampler.gamma * v, 96 + 64)
        assert lo >> 64 == hi >> 64  # decided at this precision for these v
        floor96 = lo >> 64
        assert int(sampler.quotient_thresholds[v - 1]) == floor96 >> 64
        assert int(sampler.quotient_remainders[v - 1]) == floor96 & (2**64 - 1)
    assert sampler.quotient_thresholds[-1] == 0 and sampler.quotient_thresholds[-2] > 0


@pytest.mark.parametrize("theta", THETAS[1:], ids=lambda t: f"scale={float(1 / t):.3g}")
def test_lower_bit_thresholds_are_the_floors_of_their_exact_ratios(theta):
    sampler = ExactSampler(theta)
    m = sampler.low_bits
    for u in range(1, m):
        for j in range(u):
            lo, hi = sampler._lower_bounds(u, j, 200)
            assert lo >> 136 == hi >> 136 == int(sampler.lower_next[u, j]), (u, j)
            assert int(sampler.lower_first[u, j]) == int(sampler.lower_next[u, j]) >> 33  # the first uniform's 31 bits
        # R(u, j) = P(bits j .. u - 1 all zero) grows with j
        row = sampler.lower_next[u, :u]
        assert (np.diff(row.astype(object)) > 0).all()


def test_a_tie_on_a_lower_bit_threshold_is_decided_with_its_exact_conditional_probability():
    sampler = ExactSampler(Fraction(1, 37), rate_bits=0)  # gamma in (1/2, 1]: M = 5, C often non-zero
    u = 4
    tied = int(sampler.lower_next[u, 0])  # U's first 64 bits equal floor(2^64 R(4, 0))
    lo, _ = sampler._lower_bounds(u, 0, 192)
    share = 1 - float(Fraction(lo, 2**128) - tied)  # P(U >= R(4, 0) | prefix): some bit below 4 is set
    runs = 1000
    cipher = BlockCipher(KEY)
    set_below = sum(sampler._highest_below(u, _LazyUniform(tied, 64, WordStream(cipher, position))) >= 0
                    for position in range(runs))
    assert abs(set_below / runs - share) < 5 * math.sqrt(share * (1 - share) / runs)
    # the compiled protocol leaves such a tie to the exact resolver
    top = int(sampler.below_thresholds[u]) + 1  # C's prefix above P(C < 2**4): its top bit is 4
    b = top << sampler.low_bits
    v_prefix = (2**32 - 1) << 31  # above every V threshold: V = 0, decided
    words = np.array([[v_prefix, b, tied]], dtype=np.uint64)  # the first lower uniform: 0, below R(4, 0)
    high, low, status = (np.empty(1, dtype=np.int64) for _ in range(3))
    kernels.exact_draws(words, *sampler.protocol_tables, high, low, status)
    assert status[0] == kernels.DONE and low[0] == (b & 31) & ~16  # no lower bit: C = 2**4 clears digit 4
    words[0, 0] = v_prefix | int(sampler.lower_first[u, 0])  # now the first uniform ties at its 31 bits
    kernels.exact_draws(words, *sampler.protocol_tables, high, low, status)
    assert status[0] == kernels.EXACT
