"""The noise samplers: the exact one's distribution, rare paths and ties; both samplers' fit at
every scale; the bit source; reproducible seeded releases."""

import math
from fractions import Fraction

import numpy as np
import pytest
from randomgen import AESCounter

from privelet_gui.engine import Hierarchy, NominalAttribute, OrdinalAttribute, PriveletError, ReleaseSpec, Schema
from privelet_gui.engine import exact as exact_module
from privelet_gui.engine.bits import is_secure, release_generator, secure_generator, spawn, spawn_lazily
from privelet_gui.engine.exact import ExactSampler, _LazyUniform, _threshold, exact_discrete_laplace, exp_neg_bounds
from privelet_gui.engine.noise import StandardSampler, discrete_laplace_variance

from .stats import bin_counts, chi_square, chi_square_limit, discrete_laplace_bins

SCHEMA = Schema(
    [
        OrdinalAttribute.integer_range("age", 0, 20),
        NominalAttribute("job", Hierarchy.from_nested({"*": {"A": ["a1", "a2", "a3"], "B": ["b1", "b2"]}})),
    ]
)


def exact_draws(sampler: ExactSampler, count: int, seed: int) -> np.ndarray:
    """Draws as float64 (exact below 2^53; rounded beyond, which binning at such scales allows)."""
    negative, quotient, remainder = sampler.draw(np.random.default_rng(seed), count)
    magnitude = quotient * 2.0**sampler.low_bits + remainder
    return np.where(negative, -magnitude, magnitude)


def standard_draws(sampler: StandardSampler, count: int, seed: int) -> np.ndarray:
    return sampler.add(np.zeros(count, dtype=np.int64), np.random.default_rng(seed))


# scale 1/theta from 0.4 to 2^61 grid units: M = 0, small and large V tables, 32-bit fair words
# (with a byte of L's digits at M = 27) and 64-bit ones
THETAS = [Fraction(5, 2), Fraction(1, 3), Fraction(1, 1000), Fraction(1, 2**31), Fraction(1, 2**35), Fraction(3, 2**43),
          Fraction(1, 2**61)]


@pytest.mark.parametrize("theta", THETAS, ids=lambda t: f"scale={float(1 / t):.3g}")
@pytest.mark.parametrize("kind", ["exact", "standard"])
def test_both_samplers_fit_the_discrete_laplace_law_at_every_scale(theta, kind):
    count = 200_000
    if kind == "exact":
        z = exact_draws(ExactSampler(theta), count, seed=11)
    else:
        z = standard_draws(StandardSampler(theta), count, seed=11)
    edges, probabilities = discrete_laplace_bins(float(theta), bins=40)
    expected = count * probabilities
    keep = expected >= 5  # bins expected to be nearly empty are merged into none (chi-square needs ~5)
    observed = bin_counts(z, edges)
    statistic = chi_square(observed[keep], expected[keep]) + (observed[~keep].sum() - expected[~keep].sum()) ** 2 / max(
        expected[~keep].sum(), 1.0
    )
    assert statistic < chi_square_limit(int(keep.sum())), (statistic, int(keep.sum()))
    assert z.var() == pytest.approx(discrete_laplace_variance(float(theta)), rel=0.02)


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
    first = _threshold(p_bounds, 64)
    for seed in range(50):
        bits = np.random.PCG64(seed)
        uniform = _LazyUniform(first, 64, bits)
        below = uniform.below(p_bounds)
        lo, hi = p_bounds(uniform.known + 8)
        prefix = uniform.prefix << 8
        assert (prefix + 256 <= lo) if below else (prefix >= hi)


class ScriptedBits:
    """A bit generator whose first words are given, then PCG64's (to force rare paths)."""

    def __init__(self, words: list[int], seed: int):
        self.words = list(words)
        self.rest = np.random.PCG64(seed)

    def random_raw(self, size: int | None = None):
        if size is None:
            return self.words.pop(0) if self.words else int(self.rest.random_raw())
        head, self.words = self.words[:size], self.words[size:]
        tail = self.rest.random_raw(size - len(head))
        return np.concatenate([np.array(head, dtype=np.uint64), tail]) if head else tail


class ScriptedGenerator:
    def __init__(self, words: list[int], seed: int):
        self.bit_generator = ScriptedBits(words, seed)


def one_draw(sampler: ExactSampler, low: int, w: int, wc: int, seed: int) -> tuple[bool, int, int]:
    """One positive draw whose L digits, V prefix (32 bits) and C prefix are given (M <= 23)."""
    assert sampler._fair_bits == 32 and sampler._packed
    fair = (wc << (31 - sampler._c_bits)) | low  # sign 0, then C's first bits, then L's digits
    words = [fair, w]  # raw[0]: the fair word in its low half; raw[1]: V's prefix in its low half
    negative, quotient, remainder = sampler.draw(ScriptedGenerator(words, seed), 1)  # type: ignore[arg-type]
    return bool(negative[0]), int(quotient[0]), int(remainder[0])


def test_a_tie_on_a_v_threshold_is_decided_with_its_exact_conditional_probability():
    sampler = ExactSampler(Fraction(1, 10))  # M = 0: V is the whole magnitude
    thresholds = sampler.quotient_thresholds
    tied = int(thresholds[1])  # the prefix equals T_2: V is 1 or 2
    share = float(Fraction(exp_neg_bounds(2 * sampler.gamma, 96)[0], 2**64) - tied)  # P(V >= 2 | prefix)
    values = [one_draw(sampler, low=0, w=tied, wc=0, seed=seed)[1] for seed in range(3000)]
    assert set(values) <= {1, 2}
    observed = values.count(2) / len(values)
    assert abs(observed - share) < 5 * math.sqrt(share * (1 - share) / len(values))
    # a zero prefix is the tail: V passes the table by the exact law of the deep tail
    deep = [one_draw(sampler, low=0, w=0, wc=0, seed=seed)[1] for seed in range(200)]
    assert min(deep) >= thresholds.size


def test_a_tie_on_the_c_threshold_is_decided_with_its_exact_conditional_probability():
    sampler = ExactSampler(Fraction(1, 2**20))  # M = 12
    mask = (1 << sampler.low_bits) - 1
    bits = sampler._c_bits
    share = float(Fraction(sampler.below_bounds[0](bits + 64)[0], 2**64) - sampler.zero_threshold)  # P(C = 0 | prefix)
    zero = 0
    runs = 3000
    for seed in range(runs):
        _, _, remainder = one_draw(sampler, low=mask, w=12345 << 16, wc=sampler.zero_threshold, seed=seed)
        zero += remainder == mask  # L = F & ~C with every fair bit set: C = 0 leaves L whole
    assert abs(zero / runs - share) < 5 * math.sqrt(share * (1 - share) / runs)


def test_rare_paths_give_the_exact_law_when_they_are_made_common(monkeypatch):
    # gamma in (1/4, 1/2] makes C non-zero one draw in five; flagging every guide cell sends
    # every draw to the binary search: the law must not change.
    monkeypatch.setattr(exact_module, "_RATE_BITS", 1)
    theta = Fraction(1, 37)
    sampler = ExactSampler(theta)
    assert sampler.low_bits == 4
    sampler.guide |= np.uint32(exact_module._SEARCH_FLAG << 16)
    count = 300_000
    z = exact_draws(sampler, count, seed=5)
    # every value from -120 to 120 on its own (this tests L's bits one by one), tails pooled
    a = math.exp(-float(theta))
    values = np.arange(-120, 121)
    expected = count * (1 - a) / (1 + a) * a ** np.abs(values)
    observed = np.array([np.count_nonzero(z == v) for v in values])
    tails = count - expected.sum(), count - observed.sum()
    statistic = chi_square(observed, expected) + (tails[1] - tails[0]) ** 2 / tails[0]
    assert statistic < chi_square_limit(values.size + 1)


def test_each_digit_of_the_remainder_has_its_exact_probability(monkeypatch):
    # gamma in (1/2, 1]: C is non-zero in a third of the draws, with lower bits below its top
    monkeypatch.setattr(exact_module, "_RATE_BITS", 0)
    theta = Fraction(1, 37)
    sampler = ExactSampler(theta)
    assert sampler.low_bits == 5
    count = 1_000_000
    _, _, remainder = sampler.draw(np.random.default_rng(9), count)
    # |Z| has P(|Z| = y) proportional to exp(-theta y), twice that for y > 0 (the two signs)
    a = math.exp(-float(theta))
    magnitudes = np.arange(20_000)
    law = np.where(magnitudes > 0, 2.0, 1.0) * a**magnitudes
    law /= law.sum()
    for digit in range(sampler.low_bits):
        p = law[(magnitudes >> digit & 1) == 1].sum()
        observed = np.count_nonzero(remainder >> digit & 1) / count
        assert abs(observed - p) < 4.5 * math.sqrt(p * (1 - p) / count), digit
    # and jointly: the law of L = |Z| mod 32
    expected = count * np.bincount(magnitudes % 32, weights=law, minlength=32)
    assert chi_square(np.bincount(remainder, minlength=32), expected) < chi_square_limit(31)


def test_digits_of_the_remainder_from_their_own_byte_have_their_exact_probabilities(monkeypatch):
    # M = 27: a 32-bit fair word holds L's first 23 digits, a byte of its own the last 4. At
    # gamma = 1 C is often non-zero in those last digits, so each digit's probability differs
    # from its neighbours' (a digit taken from the wrong bit, or not cleared by C, shows).
    monkeypatch.setattr(exact_module, "_RATE_BITS", 0)
    theta = Fraction(1, 2**27)
    sampler = ExactSampler(theta)
    assert (sampler.low_bits, sampler._fair_bits, sampler._high_digits, sampler.words_per_draw) == (27, 32, 4, 1.125)
    count = 1_000_000
    _, _, remainder = sampler.draw(np.random.default_rng(9), count)
    assert remainder.max() < 2**27
    # digit j is 1 with probability 1 / (1 + exp(theta 2**j)); the CKS restart moves these by
    # about P(Y = 0) = 2**-27 only
    p = 1 / (1 + np.exp(float(theta) * 2.0 ** np.arange(27)))
    observed = np.array([np.count_nonzero(remainder >> digit & 1) for digit in range(27)]) / count
    assert np.all(np.abs(observed - p) < 4.5 * np.sqrt(p * (1 - p) / count)), (observed - p)[20:]
    # jointly, the five digits across the word's end and the byte (independent digits)
    top = remainder >> 22
    law = np.ones(32)
    for bit, digit in enumerate(range(22, 27)):
        law *= np.where(np.arange(32) >> bit & 1, p[digit], 1 - p[digit])
    assert chi_square(np.bincount(top, minlength=32), count * law) < chi_square_limit(31)


def test_the_bit_source_is_aes_keyed_by_the_os_and_streams_are_disjoint():
    first, second = secure_generator(), secure_generator()
    assert is_secure(first) and not np.array_equal(first.bit_generator.random_raw(4), second.bit_generator.random_raw(4))
    assert is_secure(release_generator(None)) and not is_secure(release_generator(np.random.default_rng(1)))
    children = spawn(first, 3)
    assert all(is_secure(child) for child in children)
    # a tree of streams (blocks, then the tiles of a big block): no two ever share a word
    family = [*children, *spawn(children[0], 3), *spawn(children[1], 3), *spawn(spawn(children[0], 2)[1], 2)]
    words = [int(w) for child in family for w in child.bit_generator.random_raw(1000)]
    assert len(set(words)) == len(words) == 11_000
    # seeded generators spawn reproducibly
    again = [g.random() for g in spawn(np.random.default_rng(4), 2)]
    assert again == [g.random() for g in spawn(np.random.default_rng(4), 2)]


@pytest.mark.parametrize("parent", ["aes", "seed sequence", "no seed sequence"])
def test_children_made_when_needed_are_those_spawned_at_once(parent):
    # The release's threads make their blocks' generators themselves, in any order: the same
    # children as numpy's spawn (and as before, for a generator without a SeedSequence), and the
    # parent left where spawning leaves it.
    def make_parent() -> np.random.Generator:
        if parent == "aes":
            return np.random.Generator(AESCounter(key=12345, counter=0))
        if parent == "seed sequence":
            return np.random.default_rng(7)
        legacy = np.random.MT19937()
        legacy._legacy_seeding(7)  # as numpy's RandomState seeds it: no SeedSequence to spawn from
        return np.random.Generator(legacy)

    eager_parent, lazy_parent = make_parent(), make_parent()
    eager = [child.bit_generator.random_raw(3).tolist() for child in spawn(eager_parent, 4)]
    makers = spawn_lazily(lazy_parent, 4)
    lazy = {number: makers[number]().bit_generator.random_raw(3).tolist() for number in (2, 0, 3, 1)}
    assert [lazy[number] for number in range(4)] == eager
    assert lazy_parent.bit_generator.random_raw(2).tolist() == eager_parent.bit_generator.random_raw(2).tolist()
    if parent == "seed sequence":
        assert eager == [child.bit_generator.random_raw(3).tolist() for child in np.random.default_rng(7).spawn(4)]
    if parent == "no seed sequence":
        seeds = make_parent().integers(0, 2**63, size=4)
        assert eager == [np.random.PCG64(int(seed)).random_raw(3).tolist() for seed in seeds]


@pytest.mark.parametrize("sampler", ["exact", "standard"])
def test_seeded_releases_are_reproducible_with_either_sampler_and_thread_count(sampler):
    matrix = np.arange(SCHEMA.size, dtype=float).reshape(SCHEMA.shape)
    spec = ReleaseSpec(SCHEMA, 1.0, "privelet+", ("job",), sampler=sampler)
    one = spec.run(matrix, rng=np.random.default_rng(8), workers=1)
    two = spec.run(matrix, rng=np.random.default_rng(8), workers=2)
    np.testing.assert_array_equal(one.noisy, two.noisy)
    assert one.sampler == sampler and one.seeded
    unseeded = spec.run(matrix)
    assert not unseeded.seeded and not np.array_equal(unseeded.noisy, one.noisy)
    assert ReleaseSpec(SCHEMA, 1.0).sampler == "exact"
    with pytest.raises(PriveletError, match="sampler must be 'exact' or 'standard'"):
        ReleaseSpec(SCHEMA, 1.0, sampler="fast")  # type: ignore[arg-type]


def test_exact_draws_as_python_integers():
    draws = exact_discrete_laplace(np.random.default_rng(2), 20_000, Fraction(1, 2**68))
    assert all(isinstance(z, int) for z in draws)
    assert max(abs(z) for z in draws) > 2**63  # past int64: the limbs carry them exactly


def test_releases_written_before_the_exact_sampler_read_as_standard():
    import dataclasses

    release = ReleaseSpec(SCHEMA, 1.0, sampler="standard").run(np.zeros(SCHEMA.shape), rng=np.random.default_rng(1))
    legacy = dataclasses.replace(release, sampler="discrete-laplace/geometric-difference")
    assert legacy.spec.sampler == "standard" and release.spec.sampler == "standard"
    assert ReleaseSpec(SCHEMA, 1.0).run(np.zeros(SCHEMA.shape)).spec.sampler == "exact"
