"""Where the noise's random bits come from: AES-128 in counter mode, keyed by the OS.

Every release that is not seeded draws its bits from randomgen's ``AESCounter``
(a counter-mode AES-128 bit generator from the maintainer of numpy's random
module), keyed with 128 bits from the operating system's generator
(:func:`os.urandom`). AES in counter mode is a cryptographically secure
generator (it is the core of NIST SP 800-90A's CTR_DRBG): no one who sees the
outputs can predict or reconstruct the others, which a statistical generator
such as numpy's PCG64 does not promise. With the CPU's AES instructions it
produces 64 bits as fast as PCG64 does here (about 2.2 ns), where ChaCha20 costs
six times as much and reading the OS generator directly nine times as much.

The sampler takes its words from :func:`random_words`: the same words as the generator's
``random_raw``, drawn where the CPU has AES instructions (and numba is installed) by a
compiled loop that keeps many blocks in flight, on the generator's own state: 0.6 ns a word
with VAES, 1.0 without, against 2.6 for randomgen's loop, which takes one word per call
(measured here, one thread).

Parallel parts of a release (blocks, and the tiles of a big block) each get a key
of their own, drawn from their parent's stream (:func:`spawn`): a tree of keys, so
streams never overlap however deeply they are spawned (streams made by jumping
one key's counter would: a child's children would run into its siblings).

A caller's own :class:`numpy.random.Generator` (a seeded test release) is used as
given: such a release is reproducible and marked ``seeded`` (not private).
"""

from __future__ import annotations

import ctypes
import os
import threading
from collections.abc import Callable
from functools import lru_cache, partial

import numpy as np
from randomgen import AESCounter

from . import _compiled
from .errors import PriveletError

__all__ = [
    "BIT_SOURCE", "is_secure", "random_words", "release_generator", "secure_generator", "spawn", "spawn_lazily",
]

#: How release files and the README name the bit source of unseeded releases.
BIT_SOURCE = "aes128-ctr/os-key"


def secure_generator() -> np.random.Generator:
    """A generator over AES-128 in counter mode with a fresh key from :func:`os.urandom`."""
    key = int.from_bytes(os.urandom(16), "little")
    return np.random.Generator(AESCounter(key=key, counter=0))


def is_secure(generator: np.random.Generator) -> bool:
    """Whether ``generator`` draws from the AES counter-mode bit generator."""
    return isinstance(generator.bit_generator, AESCounter)


def release_generator(rng: np.random.Generator | None) -> np.random.Generator:
    """The caller's generator (tests: the release is then seeded), or a secure one."""
    if rng is None:
        return secure_generator()
    if not isinstance(rng, np.random.Generator):
        raise PriveletError(f"rng must be a numpy.random.Generator, got {type(rng).__name__}")
    return rng


def spawn(generator: np.random.Generator, count: int) -> list[np.random.Generator]:
    """``count`` independent child generators, one per block or tile of a release.

    AES: each child keyed with 128 bits of the parent's output (secure as long as AES
    is a pseudorandom function; reproducible from a seeded parent). A numpy generator
    built from a SeedSequence: its spawned children (reproducible from the seed). Any
    other generator: children seeded from its own output (reproducible too).
    """
    return [make() for make in spawn_lazily(generator, count)]


def spawn_lazily(generator: np.random.Generator, count: int) -> list[Callable[[], np.random.Generator]]:
    """:func:`spawn`'s children, each made when it is called: their keys or seeds are drawn from
    ``generator`` now, in order, so a child is the same whenever it is made. Making one takes 10
    to 60 us (an AES key schedule and its buffers; a SeedSequence's mixing), twice that with cold
    caches: a release's threads make their own blocks' instead of the thread that starts the
    release making them all before any block can start (202 blocks at Brazil scale: 12 to 25 ms)."""
    bits = generator.bit_generator
    if isinstance(bits, AESCounter):
        words = bits.random_raw(2 * count).tolist()
        return [partial(_aes_generator, words[2 * number] | words[2 * number + 1] << 64) for number in range(count)]
    seeds = getattr(bits, "seed_seq", None)
    if isinstance(seeds, np.random.SeedSequence):  # as Generator.spawn makes them
        return [partial(_seeded_generator, type(bits), child) for child in seeds.spawn(count)]
    # a generator built without a SeedSequence
    return [partial(_seeded_generator, np.random.PCG64, int(seed)) for seed in generator.integers(0, 2**63, size=count)]


def _aes_generator(key: int) -> np.random.Generator:
    return np.random.Generator(AESCounter(key=key, counter=0))


def _seeded_generator(kind: type[np.random.BitGenerator], seed: int | np.random.SeedSequence) -> np.random.Generator:
    return np.random.Generator(kind(seed))


def random_words(bit_generator: np.random.BitGenerator, count: int) -> np.ndarray:
    """The next ``count`` 64-bit words of ``bit_generator`` (a new array): exactly those its
    ``random_raw(count)`` gives, its state moved on as that moves it, so that both may be called
    in turn.

    An AESCounter's words come from a compiled loop on the generator's own state where the
    CPU has AES instructions (see the module docstring); every other generator's from its
    ``random_raw``."""
    state = _aes_state(bit_generator) if isinstance(bit_generator, AESCounter) else None
    loop = None if state is None else _compiled.aes_words_loop()
    if loop is None or state is None:
        return bit_generator.random_raw(count)
    target = np.empty(count, dtype=np.uint64)
    with bit_generator.lock:  # as random_raw holds it
        loop(state, target)
    return target


_local = threading.local()


def _aes_state(bit_generator: AESCounter) -> np.ndarray | None:
    """The generator's C state as 64-bit words (a view; see ``_compiled.AES_*``), or None where
    this randomgen keeps it otherwise. The view of the thread's last generator is kept (with the
    generator, whose memory it is)."""
    kept = getattr(_local, "aes", None)
    if kept is not None and kept[0] is bit_generator:
        return kept[1]
    if not _aes_layout_known():
        return None
    state = _state_words(bit_generator)
    _local.aes = (bit_generator, state)
    return state


def _state_words(bit_generator: AESCounter) -> np.ndarray:
    words = (ctypes.c_uint64 * _compiled.AES_STATE_WORDS).from_address(bit_generator.ctypes.state_address)
    return np.ctypeslib.as_array(words)


@lru_cache(maxsize=1)
def _aes_layout_known() -> bool:
    """Whether randomgen's AESCounter keeps its state as ``_compiled.AES_*`` say: checked once,
    against the state it reports, on a generator whose counters have just carried into their
    high words and whose buffer is in part used."""
    probe = AESCounter(key=0x2B7E151628AED2A6ABF7158809CF4F3C, counter=2**64 - 6)
    probe.random_raw(11)
    reported = probe.state["s"]
    words = _state_words(probe)
    buffer = words[_compiled.AES_BUFFER : _compiled.AES_OFFSET].view(np.uint8)
    return bool(np.array_equal(words[_compiled.AES_COUNTERS : _compiled.AES_KEYS], reported["counter"])
                and np.array_equal(words[_compiled.AES_KEYS : _compiled.AES_BUFFER], reported["seed"])
                and np.array_equal(buffer, reported["state"]) and int(words[_compiled.AES_OFFSET]) == reported["offset"])
