"""The noise's random words (privelet_gui/engine/bits.py ``random_words``): word for word those
of the generator's own ``random_raw``, its state left as that leaves it, whichever path draws them."""

from __future__ import annotations

import threading
from fractions import Fraction

import numpy as np
import pytest
from randomgen import AESCounter

from privelet_gui.engine import _compiled, bits
from privelet_gui.engine.bits import random_words
from privelet_gui.engine.exact import ExactSampler

KEY = 0x3C4FCF098815F7ABA6D2AE2816157E2B
# word counts that start and stop inside, at and across the four blocks of randomgen's buffer
SIZES = [1, 2, 3, 17, 8, 7, 0, 64, 1000, 5, 8, 9, 15, 16, 1]


def _states_equal(first: AESCounter, second: AESCounter) -> bool:
    a, b = first.state["s"], second.state["s"]
    return a["offset"] == b["offset"] and all(np.array_equal(a[k], b[k]) for k in ("counter", "seed", "state"))


def _compiled_path() -> None:
    if _compiled.aes_words_loop() is None:
        pytest.skip("no compiled AES loop here (numba missing, or a CPU without AES instructions)")


# counters whose low word carries during the draws, and the whole counter wrapping around
@pytest.mark.parametrize("counter", [0, 2**64 - 9, 2**128 - 5])
def test_the_words_and_the_state_are_random_raws_in_any_interleaving(counter):
    drawn, twin = AESCounter(key=KEY, counter=counter), AESCounter(key=KEY, counter=counter)
    for turn, size in enumerate(SIZES):
        words = random_words(drawn, size) if turn % 3 else drawn.random_raw(size)
        np.testing.assert_array_equal(words, twin.random_raw(size))
        assert words.dtype == np.uint64 and _states_equal(drawn, twin)


def test_the_aes_is_aes_128_by_fips_197s_example():
    # FIPS-197 appendix C.1: key 000102..0f, plaintext 00112233..ff; a counter block is the
    # counter's two words, low first, little-endian
    key = int.from_bytes(bytes(range(16)), "little")
    block = int.from_bytes(bytes.fromhex("00112233445566778899aabbccddeeff"), "little")
    words = random_words(AESCounter(key=key, counter=block), 2)
    assert words.tobytes().hex() == "69c4e0d86a7b0430d8cdb78070b4c55a"


def test_where_the_cpu_has_aes_instructions_the_compiled_loop_draws_the_words(monkeypatch):
    _compiled_path()
    assert bits._aes_layout_known(), "randomgen's AESCounter state is not laid out as _compiled.AES_* say"
    loop, calls = _compiled.aes_words_loop(), []

    def counted(state, out):
        calls.append(out.size)
        loop(state, out)

    monkeypatch.setattr(_compiled, "aes_words_loop", lambda: counted)
    drawn, twin = AESCounter(key=KEY, counter=7), AESCounter(key=KEY, counter=7)
    np.testing.assert_array_equal(random_words(drawn, 1001), twin.random_raw(1001))
    assert calls == [1001]


# each intrinsic's code, uncached: the loop above has the one this CPU runs fastest
@pytest.mark.parametrize("wide", [False, True], ids=["four blocks at a time", "VAES"])
@pytest.mark.parametrize("blocks", [4, _compiled._AES_BULK_BLOCKS])
def test_each_intrinsic_encrypts_its_counter_blocks_as_randomgen_does(wide, blocks):
    numba = pytest.importorskip("numba", reason="numba is not installed (the fast extra)")
    aes, vaes = _compiled._aes_features()
    if not (vaes if wide else aes):
        pytest.skip(f"this CPU has no {'VAES' if wide else 'AES'} instructions")
    encrypt = _compiled._aes_intrinsic(blocks, wide)

    @numba.njit
    def blocks_of(keys, low, high, out):
        encrypt(keys.ctypes.data, low, high, out.ctypes.data)

    counter = 2**64 - 5  # the low word carries inside the blocks
    keys = AESCounter(key=KEY, counter=0).state["s"]["seed"]
    out = np.zeros(2 * blocks + 1, dtype=np.uint64)
    blocks_of(keys, np.uint64(counter % 2**64), np.uint64(counter >> 64), out)
    np.testing.assert_array_equal(out[:-1], AESCounter(key=KEY, counter=counter).random_raw(2 * blocks))
    assert out[-1] == 0  # nothing written past them


def test_on_every_other_path_the_words_are_the_same(monkeypatch):
    expected = AESCounter(key=KEY, counter=3).random_raw(300)
    # another generator, a randomgen whose state is laid out otherwise, no compiled loop
    np.testing.assert_array_equal(random_words(np.random.PCG64(5), 300), np.random.PCG64(5).random_raw(300))
    monkeypatch.setattr(bits, "_aes_layout_known", lambda: False)
    np.testing.assert_array_equal(random_words(AESCounter(key=KEY, counter=3), 300), expected)
    monkeypatch.undo()
    monkeypatch.setattr(_compiled, "aes_words_loop", lambda: None)
    np.testing.assert_array_equal(random_words(AESCounter(key=KEY, counter=3), 300), expected)


def test_generators_in_turn_and_threads_each_keep_their_own_stream():
    keys = [KEY + number for number in range(4)]
    failures = []

    def draw(key: int) -> None:
        # two generators in turn on one thread: the thread's kept state view must follow
        first, second = AESCounter(key=key, counter=0), AESCounter(key=key ^ 1, counter=0)
        first_twin, second_twin = AESCounter(key=key, counter=0), AESCounter(key=key ^ 1, counter=0)
        for size in SIZES * 4:
            for drawn, twin in ((first, first_twin), (second, second_twin)):
                if not np.array_equal(random_words(drawn, size), twin.random_raw(size)):
                    failures.append((key, size))

    threads = [threading.Thread(target=draw, args=(key,)) for key in keys]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not failures


@pytest.mark.parametrize("theta", [Fraction(1, 2**20), Fraction(1, 2**27)])  # 1 and 1.125 words a draw
def test_the_exact_sampler_draws_the_same_noise_on_either_path_of_its_words(theta, monkeypatch):
    _compiled_path()
    sampler = ExactSampler(theta)
    units = np.arange(300_000, dtype=np.float64)
    compiled = sampler.add(units.copy(), np.random.Generator(AESCounter(key=KEY, counter=0)))
    monkeypatch.setattr(_compiled, "aes_words_loop", lambda: None)
    plain = sampler.add(units.copy(), np.random.Generator(AESCounter(key=KEY, counter=0)))
    np.testing.assert_array_equal(compiled, plain)
    assert np.any(compiled != units)
