"""The compiled loops' setup (privelet_gui/engine/_compiled.py); the sampler's values are pinned in
test_sampler_pins.py on both of its paths, the Haar rows' compared with numpy's in test_haar_rows.py."""

from __future__ import annotations

import sys
import time
from concurrent.futures import ThreadPoolExecutor
from fractions import Fraction

import numpy as np
import pytest

from privelet_gui.engine import _compiled
from privelet_gui.engine.exact import ExactSampler


@pytest.fixture
def fresh_loop():
    """The compiled loops built again inside the test, and again (as normal) after it."""
    _compiled._built.clear()
    yield
    _compiled._built.clear()


def test_threads_asking_at_once_share_one_build_of_the_loops(fresh_loop, monkeypatch):
    numba = pytest.importorskip("numba", reason="numba is not installed (the fast extra)")
    real_njit = numba.njit

    def slow_njit(*arguments, **options):  # a slow build, so that the threads' questions overlap
        if not (arguments and callable(arguments[0])):
            time.sleep(0.05)
        return real_njit(*arguments, **options)

    monkeypatch.setattr(numba, "njit", slow_njit)
    with ThreadPoolExecutor(max_workers=4) as pool:
        loops = list(pool.map(lambda _: _compiled.sampler_loops(), range(8)))
    assert loops[0] is not None and all(loop is loops[0] for loop in loops)


def test_without_numba_the_sampler_runs_its_numpy_passes(fresh_loop, monkeypatch):
    monkeypatch.setitem(sys.modules, "numba", None)  # import numba raises ImportError
    assert _compiled.sampler_loops() is None and _compiled.haar_rows_loops() is None
    units = np.arange(1_000, dtype=np.float64)
    noisy = ExactSampler(Fraction(1, 2**20)).add(units.copy(), np.random.default_rng(3))
    assert np.all(noisy == np.rint(noisy)) and np.any(noisy != units)


def test_where_the_aes_loop_cannot_be_compiled_the_words_come_from_randomgen(fresh_loop, monkeypatch):
    pytest.importorskip("numba", reason="numba is not installed (the fast extra)")

    def cannot_select():
        raise RuntimeError("LLVM ERROR: Cannot select: intrinsic %llvm.x86.aesni.aesenc")

    monkeypatch.setattr(_compiled, "_aes_features", lambda: (True, False))
    monkeypatch.setattr(_compiled, "_aes_intrinsic", cannot_select)
    with pytest.warns(RuntimeWarning, match="AES loop"):
        assert _compiled.aes_words_loop() is None
    assert _compiled.sampler_loops() is not None  # the other loops are compiled all the same
    _compiled._built.clear()
    monkeypatch.setattr(_compiled, "_aes_features", lambda: (False, False))  # a CPU without them: no warning
    assert _compiled.aes_words_loop() is None and _compiled.sampler_loops() is not None


def test_where_numba_cannot_cache_the_loop_is_compiled_for_this_run(fresh_loop, monkeypatch):
    numba = pytest.importorskip("numba", reason="numba is not installed (the fast extra)")
    real_njit = numba.njit
    asked = []

    def njit(*arguments, **options):
        if arguments and callable(arguments[0]):  # numba's own modules, imported while compiling
            return real_njit(*arguments, **options)
        asked.append(options)
        if options.get("cache"):  # what numba raises in a frozen app or a read-only tree
            raise RuntimeError("cannot cache function '_add_common_draws': no locator available for file")
        return real_njit(*arguments, **options)

    monkeypatch.setattr(numba, "njit", njit)
    kernel = _compiled.sampler_loops().add_round
    helpers = [{"inline": "always"}] * len(_compiled._HELPERS)  # compiled into their callers
    # compiled on their own and called by the loops; numpy's error model (no check for a zero
    # divisor inside a loop) lets the divisions vectorise
    called = [{"nogil": True, "error_model": "numpy"}] * len(_compiled._CALLED)
    # the AES loop, where the CPU has AES instructions: asked to cache, then compiled for this run
    aes = [{"nogil": True, "error_model": "numpy", "cache": True}, {"nogil": True, "error_model": "numpy"}]
    assert asked == helpers + [{"nogil": True, "error_model": "numpy", "cache": True}] + called + [
        {"nogil": True, "error_model": "numpy", "fastmath": _compiled._FASTMATH.get(loop, False)}
        for loop, _ in _compiled._LOOPS] + (aes if _compiled._aes_features()[0] else [])
    assert (_compiled.aes_words_loop() is not None) == _compiled._aes_features()[0]
    part = np.zeros(4)
    fair = np.array([5, 1 << 31 | 5, 0, 1 << 31], dtype=np.uint32)  # +5, -5, 0, "-0"
    prefixes = np.full(4, 0xFFFF_FFFF, dtype=np.uint32)
    guide = np.zeros(1 << 16, dtype=np.uint32)
    guide[-1] = 0x1233  # less the prefix, modulo 2**32: 0x1234, V = 0 (high half), decided (no tie, no flag)
    thresholds = np.zeros(1, dtype=np.uint32)  # no draw is searched
    params = np.empty(8, dtype=np.int64)
    params[[_compiled.LOW_BITS, _compiled.SIGN_SHIFT, _compiled.SIGNLESS, _compiled.OPEN_THRESHOLD, _compiled.C_SHIFT,
            _compiled.C_BITS, _compiled.FAIR_DIGITS, _compiled.HIGH_MASK]] = 23, 31, (1 << 31) - 1, 1 << 30, 23, 8, 23, 0
    scratch = np.empty((_compiled.ROUND_ROWS, 4), dtype=np.int64)
    no_high = np.empty(0, dtype=np.uint8)  # all of L's digits in the fair words
    counts = kernel(part, fair, no_high, prefixes, guide, thresholds, thresholds, params, scratch,
                    np.empty(4, dtype=np.uint64))
    assert counts == (0, 1, 0, 0) and scratch[_compiled.AGAIN, 0] == 3  # no rare draw, one "-0"
    np.testing.assert_array_equal(part, [5.0, -5.0, 0.0, 0.0])


def test_a_numba_that_cannot_compile_the_loop_leaves_the_numpy_passes(fresh_loop, monkeypatch):
    numba = pytest.importorskip("numba", reason="numba is not installed (the fast extra)")
    real_njit = numba.njit

    def failing(*arguments, **options):
        if arguments and callable(arguments[0]):
            return real_njit(*arguments, **options)
        raise TypeError("a numba release that types the loop differently")

    monkeypatch.setattr(numba, "njit", failing)
    with pytest.warns(RuntimeWarning, match="run as numpy passes: a numba release"):
        assert _compiled.sampler_loops() is None
    assert _compiled.haar_rows_loops() is None
    assert not _compiled.prepare_compiled()  # asked again: the same answer, no second warning
    units = np.arange(1_000, dtype=np.float64)
    noisy = ExactSampler(Fraction(1, 2**20)).add(units.copy(), np.random.default_rng(3))
    assert np.all(noisy == np.rint(noisy)) and np.any(noisy != units)


def test_the_loop_is_compiled_for_both_word_sizes_before_any_release(fresh_loop):
    pytest.importorskip("numba", reason="numba is not installed (the fast extra)")
    assert _compiled.prepare_compiled()
    loops = _compiled.sampler_loops()
    # each with the fair words at its argument ``fair``
    for loop, fair in ((loops.add_round, 1), (loops.add_rare, 1)):
        assert {str(signature[fair].dtype) for signature in loop.signatures} == {"uint32", "uint64"}


def test_the_output_store_goes_past_the_caches_and_the_fence_orders_it():
    """The grouped inverse's stores of a release's output carry LLVM's nontemporal hint, and its
    fence is a real one: the same values, the store's cache behaviour only."""
    numba = pytest.importorskip("numba", reason="numba is not installed (the fast extra)")
    stream, fence = _compiled._stream_store_intrinsic(), _compiled._store_fence_intrinsic()

    def write(row, values):
        for k in range(values.size):
            stream(row, k, values[k] * 2.0)
        fence()

    compiled = numba.njit("void(float64[::1], float64[::1])")(write)
    values = np.arange(7.0)
    row = np.full(7, np.nan)
    compiled(row, values)
    np.testing.assert_array_equal(row, values * 2.0)
    llvm = compiled.inspect_llvm(compiled.signatures[0])
    assert "!nontemporal" in llvm and "fence seq_cst" in llvm
