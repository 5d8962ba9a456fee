"""Both samplers' outputs pinned bit for bit: the same generator state and inputs give the same
values from the same random words, whatever the code's passes over them.

The digests were produced by the samplers as they stood before their passes were merged
(commit 9bfd551), those with 23 < M <= 31 when L's last digits moved to a byte of their own
(1.125 words a draw instead of 1.5); each one covers the noisy output's bytes and the
generator's next words (so a change in how many words a draw consumes shows too). The cases
cover the exact sampler's paths: M = 0 (with many "-0" redraws), 32-bit fair words (M <= 31,
C's bits packed below the sign, L's digits past the 23rd in a byte), 64-bit fair words
(M > 31), the int64 limbs (M > 37, and int64 units at any M), C's bits in a word of their own
(M > 55), rounds past the first (more than 2**17 draws), odd counts, a transposed layout, and a rate at which C is often non-zero (its corrections and lower bits).
The exact sampler's float64 sums are pinned on both of its paths: the numpy passes, and the
compiled loop of the ``fast`` extra (numba), which must give the same values from the same words.
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Callable
from fractions import Fraction

import numpy as np
import pytest
from randomgen import AESCounter

from privelet_gui.engine import _compiled
from privelet_gui.engine import exact as exact_module
from privelet_gui.engine.exact import ExactSampler, exact_discrete_laplace
from privelet_gui.engine.noise import StandardSampler

Units = Callable[[int, np.random.Generator], np.ndarray]


def _zeros(count: int, _: np.random.Generator) -> np.ndarray:
    return np.zeros(count)


def _floats(count: int, source: np.random.Generator) -> np.ndarray:
    """Integer-valued float64 units up to 2**40 in magnitude (the rounded coefficients' range)."""
    return source.integers(-(2**40), 2**40, count).astype(np.float64)


def _integers(count: int, source: np.random.Generator) -> np.ndarray:
    return source.integers(-(2**60), 2**60, count)


def _transposed(count: int, source: np.random.Generator) -> np.ndarray:
    """A Fortran-ordered 2-D target (the samplers work in memory order or on a flat copy)."""
    rows = 7
    return np.asfortranarray(_floats(rows * (count // rows), source).reshape(rows, -1))


UNITS: dict[str, Units] = {"zeros": _zeros, "floats": _floats, "int64": _integers, "transposed": _transposed}

# (sampler, theta, units, count, generator): every row is drawn with two seeds
CASES: list[tuple[str, Fraction, str, int, str]] = [
    ("exact", Fraction(2), "zeros", 5_001, "pcg"),  # M = 0, P(-0) about 0.43: many redraws
    ("exact", Fraction(2), "floats", 3, "aes"),
    ("exact", Fraction(1, 300), "floats", 140_001, "pcg"),  # M = 0, two rounds, an odd last one
    ("exact", Fraction(1, 1000), "zeros", 131_072, "aes"),  # M = 1, one full round
    ("exact", Fraction(1, 1000), "int64", 20_000, "pcg"),  # M = 1 in limbs
    ("exact", Fraction(1, 2**20), "floats", 300_001, "aes"),  # M = 12
    ("exact", Fraction(1, 2**20), "transposed", 70_000, "pcg"),
    ("exact", Fraction(1, 2**31), "floats", 50_001, "pcg"),  # M = 23: 8 of C's bits packed
    ("exact", Fraction(1, 2**32), "floats", 50_001, "aes"),  # M = 24: one of L's digits in a byte
    ("exact", Fraction(1, 2**39), "floats", 50_001, "pcg"),  # M = 31: eight of them, the last such
    ("exact", Fraction(1, 2**40), "floats", 50_001, "aes"),  # M = 32: 64-bit fair words
    ("exact", Fraction(3, 2**43), "zeros", 140_000, "pcg"),  # M = 33
    ("exact", Fraction(1, 2**45), "floats", 40_000, "pcg"),  # M = 37, the last float64 sum
    ("exact", Fraction(1, 2**46), "floats", 40_000, "aes"),  # M = 38: limbs
    ("exact", Fraction(1, 2**64), "zeros", 30_001, "pcg"),  # M = 56: C's bits from their own word
    ("exact", Fraction(1, 2**68), "int64", 20_000, "aes"),  # M = 60
    ("standard", Fraction(1, 3), "zeros", 70_001, "pcg"),
    ("standard", Fraction(3, 1000), "floats", 140_000, "aes"),
    ("standard", Fraction(1, 2**30), "transposed", 70_000, "pcg"),
    ("standard", Fraction(1, 2**30), "int64", 20_000, "aes"),
    ("standard", Fraction(1, 2**45), "floats", 70_001, "pcg"),  # split draw above 2**40
]
# C non-zero often (gamma in (1/2, 1]): corrections, lower bits and their ties' redraws
STRESSED: list[tuple[Fraction, str, int, str]] = [
    (Fraction(1, 37), "zeros", 20_001, "pcg"),  # M = 5
    (Fraction(1, 2**20), "floats", 20_000, "aes"),  # M = 19
    (Fraction(1, 2**30), "int64", 5_000, "pcg"),  # M = 29, six of L's digits in a byte, limbs
]
SEEDS = (3, 2026)

EXPECTED = {
    ('exact', Fraction(2, 1), 'zeros', 5001, 'pcg', 3): 'f331894b178ac00331e6',
    ('exact', Fraction(2, 1), 'floats', 3, 'aes', 3): 'a81963318d275ee17374',
    ('exact', Fraction(1, 300), 'floats', 140001, 'pcg', 3): '29cada656fed4633e52b',
    ('exact', Fraction(1, 1000), 'zeros', 131072, 'aes', 3): '9d3aff697c5611899a56',
    ('exact', Fraction(1, 1000), 'int64', 20000, 'pcg', 3): '2b6a191c3693ceedd45f',
    ('exact', Fraction(1, 1048576), 'floats', 300001, 'aes', 3): 'f28a95241e40a8e17714',
    ('exact', Fraction(1, 1048576), 'transposed', 70000, 'pcg', 3): '1085b13584907b4f489f',
    ('exact', Fraction(1, 2147483648), 'floats', 50001, 'pcg', 3): '76a9d27dcd5184ed98ed',
    ('exact', Fraction(1, 4294967296), 'floats', 50001, 'aes', 3): 'b6740bd87d11bd355cb8',
    ('exact', Fraction(1, 549755813888), 'floats', 50001, 'pcg', 3): '373c5d13d50878ff19ad',
    ('exact', Fraction(1, 1099511627776), 'floats', 50001, 'aes', 3): 'b888fb530c63c79a9577',
    ('exact', Fraction(3, 8796093022208), 'zeros', 140000, 'pcg', 3): 'bbd37cd59882153151aa',
    ('exact', Fraction(1, 35184372088832), 'floats', 40000, 'pcg', 3): '681a7432660cb971a611',
    ('exact', Fraction(1, 70368744177664), 'floats', 40000, 'aes', 3): '8eb17ba90c3a45b6223e',
    ('exact', Fraction(1, 18446744073709551616), 'zeros', 30001, 'pcg', 3): 'f37e09c796af9425473c',
    ('exact', Fraction(1, 295147905179352825856), 'int64', 20000, 'aes', 3): '6299a392d567530a22ef',
    ('standard', Fraction(1, 3), 'zeros', 70001, 'pcg', 3): 'c81364ea56667de7b8a4',
    ('standard', Fraction(3, 1000), 'floats', 140000, 'aes', 3): '27153e5b6cf6ba2d618c',
    ('standard', Fraction(1, 1073741824), 'transposed', 70000, 'pcg', 3): '4482aa7c8f98eeb4a916',
    ('standard', Fraction(1, 1073741824), 'int64', 20000, 'aes', 3): '9c77e7b001516ffe6524',
    ('standard', Fraction(1, 35184372088832), 'floats', 70001, 'pcg', 3): '10201f01c4065dd9eb7d',
    ('exact', Fraction(2, 1), 'zeros', 5001, 'pcg', 2026): 'ba1014938fc0b139c09c',
    ('exact', Fraction(2, 1), 'floats', 3, 'aes', 2026): 'f28651df665b89ec604f',
    ('exact', Fraction(1, 300), 'floats', 140001, 'pcg', 2026): 'f9ea829eed66f368b78b',
    ('exact', Fraction(1, 1000), 'zeros', 131072, 'aes', 2026): 'f1dfd1964453added6fc',
    ('exact', Fraction(1, 1000), 'int64', 20000, 'pcg', 2026): 'a043f2b261397cdb59db',
    ('exact', Fraction(1, 1048576), 'floats', 300001, 'aes', 2026): '337c2f19d6a32cb95a4c',
    ('exact', Fraction(1, 1048576), 'transposed', 70000, 'pcg', 2026): 'aa1d54bf323cd75255fe',
    ('exact', Fraction(1, 2147483648), 'floats', 50001, 'pcg', 2026): '5e9442c84f3d9d339201',
    ('exact', Fraction(1, 4294967296), 'floats', 50001, 'aes', 2026): '442e44861f70f9b8ca6f',
    ('exact', Fraction(1, 549755813888), 'floats', 50001, 'pcg', 2026): 'ea00ba4fa18ee895b238',
    ('exact', Fraction(1, 1099511627776), 'floats', 50001, 'aes', 2026): 'c375c2060d53b8ec6820',
    ('exact', Fraction(3, 8796093022208), 'zeros', 140000, 'pcg', 2026): 'fa9f607fe6ecb130859d',
    ('exact', Fraction(1, 35184372088832), 'floats', 40000, 'pcg', 2026): 'da9bd605eff8c97e2d71',
    ('exact', Fraction(1, 70368744177664), 'floats', 40000, 'aes', 2026): 'b9411e430b682a41ca1a',
    ('exact', Fraction(1, 18446744073709551616), 'zeros', 30001, 'pcg', 2026): '7ac6af95e24f2ea911b2',
    ('exact', Fraction(1, 295147905179352825856), 'int64', 20000, 'aes', 2026): 'aaa0e7d6fe9cebc4d00b',
    ('standard', Fraction(1, 3), 'zeros', 70001, 'pcg', 2026): '086fd026fb51ea061f8a',
    ('standard', Fraction(3, 1000), 'floats', 140000, 'aes', 2026): 'abb7386efe557928954f',
    ('standard', Fraction(1, 1073741824), 'transposed', 70000, 'pcg', 2026): '98be5267d3766423b78d',
    ('standard', Fraction(1, 1073741824), 'int64', 20000, 'aes', 2026): 'c7a5b53c9ace20547a7e',
    ('standard', Fraction(1, 35184372088832), 'floats', 70001, 'pcg', 2026): 'ab7f6d13156483ebdd88',
    ('stressed', Fraction(1, 37), 'zeros', 20001, 'pcg', 3): '81ea161619e6f37656a2',
    ('stressed', Fraction(1, 1048576), 'floats', 20000, 'aes', 3): 'f0e317c35677a1283c10',
    ('stressed', Fraction(1, 1073741824), 'int64', 5000, 'pcg', 3): '256dc863f0a77d634679',
    ('stressed', Fraction(1, 37), 'zeros', 20001, 'pcg', 2026): 'bb252fb00270e4776432',
    ('stressed', Fraction(1, 1048576), 'floats', 20000, 'aes', 2026): '43f8ae71c654fc98174a',
    ('stressed', Fraction(1, 1073741824), 'int64', 5000, 'pcg', 2026): '5ab8a2561745e29bec6d',
    ('draw', Fraction(2, 1)): '7b6064f9c548492050b2',
    ('ints', Fraction(2, 1)): '20ea66a31703318d4423',
    ('draw', Fraction(1, 1048576)): '308fbef9f7a786aaf537',
    ('ints', Fraction(1, 1048576)): '97650c82983a2cf9e3dd',
    ('draw', Fraction(1, 70368744177664)): '0580f5e1f81543f45e58',
    ('ints', Fraction(1, 70368744177664)): 'dca8ee06bbb2657579f2',
}


def _generator(kind: str, seed: int) -> np.random.Generator:
    if kind == "aes":
        return np.random.Generator(AESCounter(key=seed * 0x9E3779B97F4A7C15 + 1, counter=0))
    return np.random.Generator(np.random.PCG64(seed))


def _digest(output: np.ndarray, generator: np.random.Generator) -> str:
    digest = hashlib.sha256(np.ascontiguousarray(output, dtype=output.dtype.newbyteorder("<")).tobytes())
    digest.update(generator.bit_generator.random_raw(4).astype("<u8").tobytes())  # the words that come next
    return digest.hexdigest()[:20]


def _add(kind: str, theta: Fraction, units: str, count: int, generator: str, seed: int) -> str:
    target = UNITS[units](count, np.random.default_rng(seed + 1))
    sampler = ExactSampler(theta) if kind == "exact" else StandardSampler(theta)
    rng = _generator(generator, seed)
    return _digest(sampler.add(target, rng), rng)


def _case_id(case: tuple[object, ...]) -> str:
    return "-".join(str(part) for part in case)


@pytest.fixture(params=["numpy", "compiled"])
def exact_path(request, monkeypatch):
    """Each of the exact sampler's two paths: the numpy passes, or numba's compiled loop."""
    if request.param == "numpy":
        monkeypatch.setattr(_compiled, "sampler_loops", lambda: None)
    elif _compiled.sampler_loops() is None:
        pytest.skip("numba is not installed (the fast extra): only the numpy path runs here")
    return request.param


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("case", CASES, ids=_case_id)
def test_add_gives_the_pinned_values(case, seed, exact_path):
    assert _add(*case, seed) == EXPECTED[(*case, seed)]


def test_the_compiled_loops_draw_the_float_sums_when_numba_is_there(monkeypatch):
    # The pins above prove the paths equal only if the compiled ones run: count their rounds.
    loops = _compiled.sampler_loops()
    if loops is None:
        pytest.skip("numba is not installed (the fast extra)")
    calls: dict[str, list[int]] = {"add_round": [], "open_counts": [], "add_rare": []}

    def counted(name):
        def run(*args):
            calls[name].append(args[0].size)
            return getattr(loops, name)(*args)
        return run

    monkeypatch.setattr(_compiled, "sampler_loops", lambda: dataclasses.replace(loops, **{n: counted(n) for n in calls}))
    ExactSampler(Fraction(1, 2**20)).add(np.zeros(300_001), _generator("pcg", 1))
    # every round leaves rare draws (searched V, C not proved 0) to the later loops
    rounds = [2**17, 2**17, 300_001 - 2**18]
    assert calls["add_round"] == calls["add_rare"] == rounds
    # about 2**-9 of the draws have C not proved 0 (the loop gets their uniforms' first bits)
    assert len(calls["open_counts"]) == 3 and all(0 < opened < size / 2**7 for opened, size in zip(calls["open_counts"], rounds, strict=True))
    calls = {name: [] for name in calls}
    ExactSampler(Fraction(1, 2**46)).add(np.zeros(1_000), _generator("pcg", 1))  # limbs: no float sums
    assert calls == {name: [] for name in calls}


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("case", STRESSED, ids=_case_id)
def test_add_gives_the_pinned_values_where_c_is_often_non_zero(case, seed, monkeypatch, exact_path):
    monkeypatch.setattr(exact_module, "_RATE_BITS", 0)
    assert _add("exact", *case, seed) == EXPECTED[("stressed", *case, seed)]


DRAWN = [Fraction(2), Fraction(1, 2**20), Fraction(1, 2**46)]


def _drawn(theta: Fraction) -> str:
    """:meth:`ExactSampler.draw`'s three arrays (PCG64)."""
    rng = _generator("pcg", 7)
    negative, quotient, remainder = ExactSampler(theta).draw(rng, 40_001)
    return _digest(np.concatenate([negative.astype(np.int64), quotient, remainder]), rng)


def _ints(theta: Fraction) -> str:
    """:func:`exact_discrete_laplace`'s Python ints, as text (AES)."""
    rng = _generator("aes", 7)
    ints = np.array([str(z) for z in exact_discrete_laplace(rng, 1_001, theta)], dtype="S24")
    return _digest(ints, rng)


@pytest.mark.parametrize("theta", DRAWN, ids=str)
def test_draw_and_the_python_ints_give_the_pinned_values(theta):
    assert _drawn(theta) == EXPECTED[("draw", theta)]
    assert _ints(theta) == EXPECTED[("ints", theta)]


def _pins() -> dict[tuple[object, ...], str]:
    """The digests of the code as it stands (how EXPECTED was made)."""
    pins: dict[tuple[object, ...], str] = {}
    for seed in SEEDS:
        for case in CASES:
            pins[(*case, seed)] = _add(*case, seed)
    saved = exact_module._RATE_BITS
    exact_module._RATE_BITS = 0
    try:
        for seed in SEEDS:
            for stressed in STRESSED:
                pins[("stressed", *stressed, seed)] = _add("exact", *stressed, seed)
    finally:
        exact_module._RATE_BITS = saved
    for theta in DRAWN:
        pins[("draw", theta)] = _drawn(theta)
        pins[("ints", theta)] = _ints(theta)
    return pins


@pytest.mark.parametrize("theta", [Fraction(1, 300), Fraction(1, 2**20), Fraction(1, 2**32)], ids=str)
def test_the_binary_search_gives_the_guide_tables_values(theta, exact_path):
    # Flagging every guide cell sends every draw to the search (assigning guide updates the
    # copy the draws read): the same words must give the same values.
    guided = ExactSampler(theta)
    searched = ExactSampler(theta)
    searched.guide |= np.uint32(exact_module._SEARCH_FLAG << 16)
    units = _floats(50_001, np.random.default_rng(4))
    first, second = _generator("pcg", 9), _generator("pcg", 9)
    np.testing.assert_array_equal(guided.add(units.copy(), first), searched.add(units.copy(), second))
    assert first.bit_generator.random_raw() == second.bit_generator.random_raw()


@pytest.mark.parametrize("kind", ["exact", "standard"])
def test_threads_sharing_a_sampler_draw_what_each_would_alone(kind, exact_path):
    # Each thread keeps its own scratch arrays: two threads adding through one sampler at
    # once give what each gives alone.
    from concurrent.futures import ThreadPoolExecutor

    theta = Fraction(1, 2**31)
    sampler = ExactSampler(theta) if kind == "exact" else StandardSampler(theta)
    targets = [_floats(300_000, np.random.default_rng(seed)) for seed in range(4)]
    alone = [sampler.add(target.copy(), _generator("pcg", seed)) for seed, target in enumerate(targets)]
    with ThreadPoolExecutor(max_workers=2) as pool:
        together = list(pool.map(lambda seed: sampler.add(targets[seed].copy(), _generator("pcg", seed)), range(4)))
    for one, other in zip(alone, together, strict=True):
        np.testing.assert_array_equal(one, other)


class _ScriptedBits:
    """A bit generator whose first calls' words are given (a round's fair words and V's
    prefixes, then perhaps the opened draws' next words), then a PCG64's: where the rare
    draws' extra bits come from."""

    def __init__(self, first: np.ndarray, seed: int, *then: np.ndarray):
        self.scripted = [first, *then]
        self.rest = np.random.PCG64(seed)

    def random_raw(self, size: int | None = None):
        if self.scripted:
            words = self.scripted.pop(0)
            assert size == words.size
            return words.copy()
        return self.rest.random_raw(size)


@pytest.mark.parametrize("theta", [Fraction(1, 2**20), Fraction(1, 300), Fraction(1, 37), Fraction(1, 2**27)])
def test_ties_searches_and_open_draws_take_the_same_bits_on_both_paths(theta, monkeypatch):
    # Ties of V's prefix with a threshold (their bits drawn first), searched cells, C not proved
    # 0 and "-0" draws, far more often than chance gives them: both paths, word for word.
    loops = _compiled.sampler_loops()
    if loops is None:
        pytest.skip("numba is not installed (the fast extra)")
    monkeypatch.setattr(exact_module, "_RATE_BITS", 0)  # C is often non-zero
    sampler = ExactSampler(theta)
    count = 4_001
    source = np.random.default_rng(7)
    fair = source.integers(0, 2**32, count, dtype=np.uint64).astype(np.uint32)
    fair[::11] = fair[2::11] = np.uint32(1 << 31)  # the sign alone: L = 0, C proved 0
    prefixes = source.integers(0, 2**32, count, dtype=np.uint64).astype(np.uint32)
    thresholds = sampler.quotient_thresholds
    prefixes[::5] = thresholds[source.integers(0, thresholds.size, prefixes[::5].size)]  # ties
    prefixes[1::7] = source.integers(0, 1 << 16, prefixes[1::7].size)  # cell 0: searched
    prefixes[::11] = thresholds[0] + np.uint32(1)  # V = 0 proved: "-0"
    prefixes[2::11] = thresholds[0]  # V = 0 or 1 by more bits: "-0" or -2**M
    assert sampler._fair_bits == 32
    # M = 27: L's last four digits from a byte of their own (the top bits ignored)
    high = source.integers(0, 256, -(-count // 8) * 8, dtype=np.uint64).astype(np.uint8)
    high[:count:11] = high[2:count:11] = 0xF0
    bytes_of_l = [high.view(np.uint64)] if sampler._high_digits else []
    words = np.concatenate([np.resize(fair, count + 1).view(np.uint64), np.resize(prefixes, count + 1).view(np.uint64),
                            *bytes_of_l])
    results = []
    for path in ("numpy", "compiled"):
        bits = _ScriptedBits(words, seed=11)
        part = np.arange(count, dtype=np.float64)
        part[::3] = -0.0  # a negative coefficient that rounded to zero
        again = (sampler._add_round(bits, part, exact_module._RoundBuffers()) if path == "numpy"
                 else sampler._add_round_compiled(loops, bits, part, exact_module._RoundScratch()))
        results.append((part.view(np.uint64).copy(), np.asarray(again).copy(), bits.rest.random_raw(4)))
    (numpy_part, numpy_again, numpy_next), (ours, our_again, our_next) = results
    np.testing.assert_array_equal(ours, numpy_part)  # -0.0 plus a zero is +0.0 on both paths
    np.testing.assert_array_equal(our_again, numpy_again)
    np.testing.assert_array_equal(our_next, numpy_next)  # the same number of extra words drawn
    assert np.isin(numpy_again, np.arange(2, count, 11)).any()  # "-0" after a tie: the rare path's own redraws


@pytest.mark.parametrize("theta", [Fraction(1, 3), Fraction(1, 2**20), Fraction(1, 2**27)])
def test_negative_zeros_get_the_same_noise_on_both_paths(theta, monkeypatch):
    # -0.0 units (rounded negative coefficients) where draws are common, rare and "-0": the
    # compiled loop adds +0.0 to those it leaves to the rare path, whose sums are the same
    if _compiled.sampler_loops() is None:
        pytest.skip("numba is not installed (the fast extra)")
    monkeypatch.setattr(exact_module, "_RATE_BITS", 0)  # C often non-zero: many rare draws
    sampler = ExactSampler(theta)
    units = np.zeros(200_003)
    units[::2] = -0.0
    compiled = sampler.add(units.copy(), np.random.default_rng(21))
    monkeypatch.setattr(_compiled, "sampler_loops", lambda: None)
    numpy_passes = sampler.add(units.copy(), np.random.default_rng(21))
    np.testing.assert_array_equal(compiled.view(np.uint64), numpy_passes.view(np.uint64))


def test_uniforms_equal_to_a_threshold_of_c_take_the_same_bits_on_both_paths(monkeypatch):
    # C's uniform equal to one of its thresholds in all its first 64 bits (chance: 2**-64 a draw)
    # is decided by more bits (_resolve_top) before C's lower bits are drawn: forced here for half
    # of a round whose draws all have C not proved 0, both paths word for word.
    loops = _compiled.sampler_loops()
    if loops is None:
        pytest.skip("numba is not installed (the fast extra)")
    monkeypatch.setattr(exact_module, "_RATE_BITS", 0)  # C is often non-zero: thresholds far apart
    sampler = ExactSampler(Fraction(1, 37))
    assert sampler._fair_bits == 32 and sampler._packed
    count, c_bits = 64, sampler._c_bits
    source = np.random.default_rng(3)
    thresholds = sampler.below_thresholds[source.integers(0, sampler.below_thresholds.size, count)]
    # the fair words: sign 0, C's first bits those of the threshold, L's digits random
    first_c = (thresholds >> np.uint64(64 - c_bits)).astype(np.uint32)
    assert np.all(first_c >= sampler.zero_threshold)  # C not proved 0: every draw opened
    fair = (first_c << np.uint32(sampler._c_shift)) | source.integers(0, 1 << sampler.low_bits, count).astype(np.uint32)
    prefixes = source.integers(0, 2**32, count, dtype=np.uint64).astype(np.uint32)
    # the opened draws' next words: their top bits complete the threshold (a tie) or not
    more = (thresholds << np.uint64(c_bits)) | source.integers(0, 1 << c_bits, count).astype(np.uint64)
    more[1::2] = source.integers(0, 2**63, count // 2, dtype=np.uint64)
    words = np.concatenate([fair, prefixes]).view(np.uint64)
    results = []
    for path in ("numpy", "compiled"):
        bits = _ScriptedBits(words, 5, more)
        part = np.zeros(count)
        again = (sampler._add_round(bits, part, exact_module._RoundBuffers()) if path == "numpy"
                 else sampler._add_round_compiled(loops, bits, part, exact_module._RoundScratch()))
        results.append((part.view(np.uint64).copy(), np.asarray(again).copy(), bits.rest.random_raw(4)))
        assert not bits.scripted  # both words' calls were made, with the counts scripted
    (numpy_part, numpy_again, numpy_next), (ours, our_again, our_next) = results
    np.testing.assert_array_equal(ours, numpy_part)
    np.testing.assert_array_equal(our_again, numpy_again)
    np.testing.assert_array_equal(our_next, numpy_next)
    ties = (sampler._tie_by_count.take(np.searchsorted(sampler.below_thresholds, thresholds)) == thresholds)
    assert ties[::2].all()  # the forced ones do tie (the loop for them ran)
