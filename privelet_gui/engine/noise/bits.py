"""Where the noise's random bits come from: AES-128 keyed per release, one stream per measurement.

Every release has a 128-bit key, from the operating system's generator (:func:`os.urandom`)
unless the caller passes a seeded generator (tests; such a release is not private). The
random bits of the measurement at global position ``p`` (docs/math.md, "Random bits") are the
blocks ``AES_key(p, j)`` for ``j = 0, 1, 2, ...``: the 16-byte input holds ``p`` then ``j`` as
little-endian 64-bit integers, and each output block is read as two little-endian 64-bit words.
Block 0 serves nearly every draw; the others are read only by the rare draws that need more
bits. So a measurement's noise depends on its position and the key alone: how a release is cut
into blocks and threads, or spread over a cluster, never changes a value.

AES as a pseudorandom function of distinct inputs is what counter mode is (NIST SP 800-90A's
CTR_DRBG is built on it): no one who sees outputs can predict the others. The blocks come from
OpenSSL (the ``cryptography`` package) in ECB mode over the inputs, one call for many blocks.
"""

from __future__ import annotations

import hashlib
import os

import numpy as np
from cryptography.hazmat.primitives.ciphers import Cipher, CipherContext, algorithms, modes

from ..errors import PriveletError

__all__ = ["BIT_SOURCE", "KEY_BYTES", "BlockCipher", "release_key"]

#: How release files and docs/privacy.md name the bit source of unseeded releases.
BIT_SOURCE = "aes128-ecb(position)/os-key"
#: The key's length.
KEY_BYTES = 16
_LITTLE = np.dtype("<u8")


def release_key(rng: np.random.Generator | None = None, *, seed: int | None = None) -> bytes:
    """A release's key: 16 bytes of the operating system's generator, or (tests: the release is
    then seeded, not private) derived from ``seed`` or drawn from the caller's generator."""
    if seed is not None and rng is not None:
        raise PriveletError("give a seed or a generator, not both")
    if seed is not None:
        return hashlib.sha256(f"privelet seeded release {int(seed)}".encode()).digest()[:KEY_BYTES]
    if rng is None:
        return os.urandom(KEY_BYTES)
    if not isinstance(rng, np.random.Generator):
        raise PriveletError(f"rng must be a numpy.random.Generator, got {type(rng).__name__}")
    return rng.bytes(KEY_BYTES)


class BlockCipher:
    """AES-128 under one release key: the blocks of given (position, block number) inputs.

    One object per thread (an encryption context is not shared between threads)."""

    def __init__(self, key: bytes):
        if len(key) != KEY_BYTES:
            raise PriveletError(f"a release key has {KEY_BYTES} bytes, got {len(key)}")
        self._context: CipherContext = Cipher(algorithms.AES(key), modes.ECB()).encryptor()
        self._out = np.empty(0, dtype=np.uint8)

    def blocks(self, inputs: np.ndarray) -> np.ndarray:
        """The AES blocks of ``inputs`` (uint64 ``(n, 2)``: position, block number) as uint64
        ``(n, 2)`` words: a view of this object's buffer, valid until its next call."""
        source = np.ascontiguousarray(inputs, dtype=_LITTLE)
        size = source.nbytes
        if self._out.size < size + 15:  # OpenSSL asks for a block's room beyond the input
            self._out = np.empty(size + 15, dtype=np.uint8)
        self._context.update_into(source.view(np.uint8).reshape(-1).data, self._out.data)
        return self._out[:size].view(_LITTLE).reshape(-1, 2)
