"""The noise samplers: the exact one's distribution, rare paths and ties; both samplers' fit at
every scale; the compiled loop against the exact resolver; the bit source; reproducible seeded
releases."""

import math
from fractions import Fraction

import numpy as np
import pytest
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
from hypothesis import given, settings
from hypothesis import strategies as st

from privelet_gui.engine import (
    Hierarchy,
    NominalAttribute,
    OrdinalAttribute,
    PriveletError,
    ReleaseSpec,
    Schema,
    Sizing,
)
from privelet_gui.engine.kernels import noise as kernels
from privelet_gui.engine.noise.bits import BlockCipher, release_key
from privelet_gui.engine.noise.calibration import UNITS_LIMIT, NoiseCalibration, discrete_laplace_variance
from privelet_gui.engine.noise.exact import (
    ExactSampler,
    WordStream,
    _LazyUniform,
    _threshold,
    exact_sampler,
    exp_neg_bounds,
)
from privelet_gui.engine.noise.samplers import NoiseSampler, SamplerSizing, exact_float

from .sampling import KEY, ScriptedStream, draw
from .stats import bin_counts, chi_square, chi_square_limit, discrete_laplace_bins

SCHEMA = Schema(
    [
        OrdinalAttribute.integer_range("age", 0, 20),
        NominalAttribute("job", Hierarchy.from_nested({"*": {"A": ["a1", "a2", "a3"], "B": ["b1", "b2"]}})),
    ]
)

# scale 1/theta from 0.4 to 2^61 grid units: M = 0, small and large V tables, and M up to 52
THETAS = [Fraction(5, 2), Fraction(1, 3), Fraction(1, 1000), Fraction(1, 2**31), Fraction(1, 2**35), Fraction(3, 2**43),
          Fraction(1, 2**61)]


@pytest.mark.parametrize("theta", THETAS, ids=lambda t: f"scale={float(1 / t):.3g}")
@pytest.mark.parametrize("kind", ["exact", "standard"])
def test_both_samplers_fit_the_discrete_laplace_law_at_every_scale(theta, kind):
    count = 200_000
    z = draw(kind, theta, count)
    edges, probabilities = discrete_laplace_bins(float(theta), bins=40)
    expected = count * probabilities
    keep = expected >= 5  # bins expected to be nearly empty are merged into none (chi-square needs ~5)
    observed = bin_counts(z, edges)
    statistic = chi_square(observed[keep], expected[keep]) + (observed[~keep].sum() - expected[~keep].sum()) ** 2 / max(
        expected[~keep].sum(), 1.0
    )
    assert statistic < chi_square_limit(int(keep.sum())), (statistic, int(keep.sum()))
    assert z.var() == pytest.approx(discrete_laplace_variance(float(theta)), rel=0.02)


@pytest.mark.parametrize("theta", [Fraction(2), Fraction(1, 3), Fraction(1, 1000), Fraction(1, 2**31), Fraction(1, 2**67)],
                         ids=lambda t: f"scale={float(1 / t):.3g}")
def test_the_compiled_loop_gives_the_exact_resolvers_values(theta):
    # Every draw the compiled paths decide (the common one, then the full protocol with more
    # blocks) is the value of the arbitrary-precision resolver on the same stream.
    count = 3000
    got = draw("exact", theta, count)
    sampler = ExactSampler(theta)
    cipher = BlockCipher(KEY)
    for position in range(count):
        exact = sampler.draw(WordStream(cipher, position))
        assert got[position] == exact_float(exact, sampler.low_bits), position
        assert abs(got[position] - exact) <= 2 * math.ulp(float(exact))


def assert_exact_measurements(theta: Fraction, grid_exponent: int, den_rows: np.ndarray, den_cols: np.ndarray,
                              numerators: np.ndarray) -> None:
    """The compiled loop's noisy measurements ``(units + Z) 2**k`` of ``numerators`` (rows of
    ``len(den_cols)``) against the exact rounding plus the arbitrary-precision resolver's draw on
    the same stream."""
    columns = len(den_cols)
    calibration = NoiseCalibration(epsilon=float(theta.numerator), neighbours="replace", rho=Fraction(1), influence=1,
                                   grid_exponent=grid_exponent, units=theta.denominator)
    out = np.empty(len(numerators))
    NoiseSampler("exact", calibration).add(
        numerators, out, columns, den_rows, den_cols, np.arange(len(den_rows), dtype=np.uint64) * np.uint64(columns),
        np.arange(columns, dtype=np.uint64), BlockCipher(KEY))
    exact = ExactSampler(calibration.theta)
    cipher = BlockCipher(KEY)
    for f in range(len(numerators)):
        row, column = divmod(f, columns)
        measurement = Fraction(int(numerators[f]), int(den_rows[row] * den_cols[column])) / Fraction(2) ** grid_exponent
        total = math.floor(measurement + Fraction(1, 2)) + exact.draw(WordStream(cipher, f))
        assert out[f] == math.ldexp(exact_float(total, exact.low_bits), grid_exponent), f


@pytest.mark.parametrize("theta", [Fraction(1, 3), Fraction(1, 2**61)], ids=["M=0", "M=53"])
def test_measurements_past_the_branch_free_row_are_exact(theta):
    # units of 2**61 and more, and low bits past 44, take the exact fallback of the compiled row
    largest = (UNITS_LIMIT - 1) >> 3
    numerators = np.array([largest, -largest, largest - 12345, (1 << 58) + 3, -(1 << 58) - 5, 7], dtype=np.int64)
    assert_exact_measurements(theta, -3, np.ones(2, dtype=np.int64), np.array([1, 1, 3], dtype=np.int64), numerators)


@settings(max_examples=25, deadline=None)
@given(
    data=st.data(),
    theta=st.sampled_from([Fraction(1, 3), Fraction(1, 2**20), Fraction(1, 2**40), Fraction(1, 2**61)]),
    grid_exponent=st.integers(-30, 4),
    columns=st.integers(1, 9),
)
def test_noisy_measurements_are_the_exact_rounding_plus_the_exact_draw(data, theta, grid_exponent, columns):
    den_rows = np.array(data.draw(st.lists(st.sampled_from([1, 2, 3, 34, 152]), min_size=1, max_size=4)), dtype=np.int64)
    den_cols = np.array(data.draw(st.lists(st.sampled_from([1, 6, 10, 42240]), min_size=columns, max_size=columns)),
                        dtype=np.int64)
    limit = UNITS_LIMIT >> max(-grid_exponent, 0)  # what check_rows guarantees of the numerators
    count = len(den_rows) * columns
    numerators = np.array(data.draw(st.lists(st.one_of(st.integers(-50, 50), st.integers(-limit + 1, limit - 1)),
                                             min_size=count, max_size=count)), dtype=np.int64)
    assert_exact_measurements(theta, grid_exponent, den_rows, den_cols, numerators)


def test_the_exact_sampler_takes_theta_exactly_and_refuses_nonsense():
    sampler = ExactSampler(Fraction(1.0) / 7)
    assert sampler.theta == Fraction(1, 7) and sampler.gamma == Fraction(1, 7)
    epsilon = 0.1  # not a short binary fraction: theta keeps all 55 of its bits
    assert ExactSampler(Fraction(epsilon) / 12345).theta == Fraction(3602879701896397, 36028797018963968 * 12345)
    with pytest.raises(PriveletError):
        ExactSampler(Fraction(0))


def test_exp_neg_bounds_bracket_exp_tightly():
    from decimal import Decimal, getcontext

    getcontext().prec = 120
    for x in [Fraction(1, 10**12), Fraction(1, 3), Fraction(7, 2), Fraction(355, 113), Fraction(44), Fraction(3, 2**40)]:
        for precision in (32, 64, 200):
            lo, hi = exp_neg_bounds(x, precision)
            exact = (-Decimal(x.numerator) / Decimal(x.denominator)).exp() * (Decimal(2) ** precision)
            assert Decimal(lo) <= exact <= Decimal(hi) and hi - lo <= 2
    assert exp_neg_bounds(Fraction(0), 10) == (1024, 1024)
    assert exp_neg_bounds(Fraction(500), 64) == (0, 1)


def test_a_lazy_uniform_decides_exactly_by_drawing_more_words():
    # U's first word equals floor(2^64 p): undecided; the next words decide, as exact arithmetic says
    p_bounds = lambda precision: exp_neg_bounds(Fraction(1, 3), precision)  # noqa: E731
    floor_at = lambda width: _threshold(p_bounds, width)  # noqa: E731
    first = floor_at(64)
    for position in range(50):
        uniform = _LazyUniform(first, 64, WordStream(BlockCipher(KEY), position))
        below = uniform.below(floor_at)
        assert uniform.known > 64  # a tie at 64 bits always reads more
        lo, hi = p_bounds(uniform.known + 8)
        prefix = uniform.prefix << 8
        assert (prefix + 256 <= lo) if below else (prefix >= hi)


def one_draw(sampler: ExactSampler, v_prefix: int, c_prefix: int, digits: int, position: int) -> int:
    """One positive draw whose V prefix (32 bits), C's prefix (64 - M bits) and L's fair digits are
    given (word a's low bits and the words after block 0 come from the real stream)."""
    m = sampler.low_bits
    a = v_prefix << 31
    b = (c_prefix << m) | digits
    return sampler.draw(ScriptedStream([a, b], position))


def test_a_tie_on_a_v_threshold_is_decided_with_its_exact_conditional_probability():
    sampler = ExactSampler(Fraction(1, 10))  # M = 0: V is the whole magnitude
    thresholds = sampler.quotient_thresholds
    tied = int(thresholds[1])  # the prefix equals T_2: V is 1 or 2
    lo, _ = exp_neg_bounds(2 * sampler.gamma, 32 + 160)
    share = float(Fraction(lo, 2**160) - tied)  # P(V >= 2 | prefix)
    values = [one_draw(sampler, tied, 0, 0, position) for position in range(3000)]
    assert set(values) <= {1, 2}
    observed = values.count(2) / len(values)
    assert abs(observed - share) < 5 * math.sqrt(share * (1 - share) / len(values))
    # the compiled protocol decides such ties with the next word against the 96-bit floors
    words = np.array([[tied << 31, 0, w] for w in (0, 2**64 - 1)], dtype=np.uint64)
    high, low, status = (np.empty(2, dtype=np.int64) for _ in range(3))
    kernels.exact_draws(words, *sampler.protocol_tables, high, low, status)
    assert status.tolist() == [kernels.DONE, kernels.DONE] and high.tolist() == [2, 1]
    # a zero prefix is the tail: V passes the table by the exact law of the deep tail
    deep = [one_draw(sampler, 0, 0, 0, position) for position in range(200)]
    assert min(deep) >= thresholds.size - 1


def test_a_tie_on_the_c_threshold_is_decided_with_its_exact_conditional_probability():
    sampler = ExactSampler(Fraction(1, 2**20))  # M = 12
    m = sampler.low_bits
    mask = (1 << m) - 1
    width = 64 - m
    tied = int(sampler.below_thresholds[0])  # C's prefix equals floor(2^52 P(C = 0))
    lo, _ = sampler._below_bounds(0, width + 64)
    share = float(Fraction(lo, 2**64) - tied)  # P(C = 0 | prefix)
    zero = 0
    runs = 3000
    for position in range(runs):
        magnitude = one_draw(sampler, 12345 << 16, tied, mask, position)
        zero += magnitude & mask == mask  # L = F & ~C with every fair bit set: C = 0 leaves L whole
    assert abs(zero / runs - share) < 5 * math.sqrt(share * (1 - share) / runs)


def test_rare_paths_give_the_exact_law_when_they_are_made_common():
    # gamma in (1/4, 1/2] makes C non-zero one draw in five; flagging every guide cell sends
    # every draw to the full protocol: the law must not change.
    exact_sampler.cache_clear()
    theta = Fraction(1, 37)
    sampler = exact_sampler(theta, rate_bits=1)  # the one the draws below share (cached)
    assert sampler.low_bits == 4
    sampler.word_guide |= np.uint32(kernels.SEARCH_FLAG)
    try:
        count = 300_000
        z = draw("exact", theta, count, sizing=SamplerSizing(rate_bits=1))
    finally:
        exact_sampler.cache_clear()
    # every value from -120 to 120 on its own (this tests L's bits one by one), tails pooled
    a = math.exp(-float(theta))
    values = np.arange(-120, 121)
    expected = count * (1 - a) / (1 + a) * a ** np.abs(values)
    observed = np.array([np.count_nonzero(z == v) for v in values])
    tails = count - expected.sum(), count - observed.sum()
    statistic = chi_square(observed, expected) + (tails[1] - tails[0]) ** 2 / tails[0]
    assert statistic < chi_square_limit(values.size + 1)


@pytest.mark.parametrize("theta, digits", [(Fraction(1, 37), 5), (Fraction(1, 2**27), 27)])
def test_each_digit_of_the_remainder_has_its_exact_probability(theta, digits):
    # gamma in (1/2, 1]: C is non-zero in a third of the draws, with lower bits below its top, so
    # each digit's probability differs from its neighbours' (a digit taken from the wrong bit, or
    # not cleared by C, shows)
    exact_sampler.cache_clear()
    try:
        assert exact_sampler(theta, rate_bits=0).low_bits == digits
        count = 1_000_000
        z = draw("exact", theta, count, sizing=SamplerSizing(rate_bits=0))
    finally:
        exact_sampler.cache_clear()
    remainder = np.abs(z).astype(np.int64) & ((1 << digits) - 1)
    if digits <= 8:
        # |Z| has P(|Z| = y) proportional to exp(-theta y), twice that for y > 0 (the two signs)
        a = math.exp(-float(theta))
        magnitudes = np.arange(20_000)
        law = np.where(magnitudes > 0, 2.0, 1.0) * a**magnitudes
        law /= law.sum()
        p = np.array([law[(magnitudes >> digit & 1) == 1].sum() for digit in range(digits)])
    else:
        # digit j of L is 1 with probability 1 / (1 + exp(theta 2**j)); |Z|'s differ by about
        # P(Y = 0) = 2**-27 only
        p = 1 / (1 + np.exp(float(theta) * 2.0 ** np.arange(digits)))
    observed = np.array([np.count_nonzero(remainder >> digit & 1) for digit in range(digits)]) / count
    assert np.all(np.abs(observed - p) < 4.5 * np.sqrt(p * (1 - p) / count)), observed - p
    # jointly, the law of the top five digits
    top = remainder >> (digits - 5)
    if digits <= 8:
        joint = np.bincount(magnitudes % 32, weights=law, minlength=32)
    else:  # L's digits are independent
        joint = np.ones(32)
        for bit, digit in enumerate(range(digits - 5, digits)):
            joint *= np.where(np.arange(32) >> bit & 1, p[digit], 1 - p[digit])
    assert chi_square(np.bincount(top, minlength=32), count * joint) < chi_square_limit(31)


def test_the_bit_source_is_aes_of_each_position_and_block_under_a_key_from_the_os():
    assert release_key() != release_key() and len(release_key()) == 16
    cipher = BlockCipher(KEY)
    inputs = np.array([[position, block] for position in range(50) for block in range(4)], dtype=np.uint64)
    words = cipher.blocks(inputs).copy()
    assert len({int(w) for w in words.ravel()}) == words.size  # no two blocks share a word
    # each block is AES-128 of the position and the block number, little-endian (docs/math.md)
    reference = Cipher(algorithms.AES(KEY), modes.ECB()).encryptor().update(
        (7).to_bytes(8, "little") + (3).to_bytes(8, "little"))
    assert words[7 * 4 + 3].astype("<u8").tobytes() == reference
    # a seed gives a key of its own, the same every time; a caller's generator its next bytes
    assert release_key(seed=4) == release_key(seed=4) != release_key(seed=5)
    assert release_key(np.random.default_rng(4)) == release_key(np.random.default_rng(4))
    with pytest.raises(PriveletError, match=r"rng must be a numpy\.random\.Generator"):
        release_key("seed")  # type: ignore[arg-type]


@pytest.mark.parametrize("sampler", ["exact", "standard"])
def test_seeded_releases_are_reproducible_whatever_the_threads_and_the_cuts(sampler):
    matrix = np.arange(SCHEMA.size, dtype=float).reshape(SCHEMA.shape)
    spec = ReleaseSpec(SCHEMA, 1.0, "privelet+", ("job",), sampler=sampler)
    one = spec.run(matrix, rng=np.random.default_rng(8), workers=1)
    two = spec.run(matrix, rng=np.random.default_rng(8), workers=2, sizing=Sizing(block_cells=21))
    big = spec.run(matrix, rng=np.random.default_rng(8), sizing=Sizing(big_block_cells=10, pencil_cells=5))
    np.testing.assert_array_equal(one.noisy, two.noisy)
    np.testing.assert_array_equal(one.noisy, big.noisy)
    assert one.sampler == sampler and one.seeded
    unseeded = spec.run(matrix)
    assert not unseeded.seeded and not np.array_equal(unseeded.noisy, one.noisy)
    assert ReleaseSpec(SCHEMA, 1.0).sampler == "exact"
    with pytest.raises(PriveletError, match="sampler must be 'exact' or 'standard'"):
        ReleaseSpec(SCHEMA, 1.0, sampler="fast")  # type: ignore[arg-type]


def test_exact_draws_as_python_integers():
    sampler = ExactSampler(Fraction(1, 2**68))
    cipher = BlockCipher(KEY)
    draws = [sampler.draw(WordStream(cipher, position)) for position in range(2000)]
    assert all(isinstance(z, int) for z in draws)
    assert max(abs(z) for z in draws) > 2**63  # past int64: the noisy sum is formed in two limbs


def test_releases_written_before_the_exact_sampler_read_as_standard():
    import dataclasses

    release = ReleaseSpec(SCHEMA, 1.0, sampler="standard").run(np.zeros(SCHEMA.shape), rng=np.random.default_rng(1))
    legacy = dataclasses.replace(release, sampler="discrete-laplace/geometric-difference")
    assert legacy.spec.sampler == "standard" and release.spec.sampler == "standard"
    assert ReleaseSpec(SCHEMA, 1.0).run(np.zeros(SCHEMA.shape)).spec.sampler == "exact"
