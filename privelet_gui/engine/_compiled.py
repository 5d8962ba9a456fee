"""The exact sampler's common draw as one compiled loop, when numba is installed (the ``fast`` extra).

:class:`~privelet_gui.engine.exact.ExactSampler` decides nearly every draw from two words
and one table look-up; in numpy that takes some thirty passes over each round of draws,
which hold the GIL between them. Here one loop, which releases the GIL, adds those draws
to the coefficients and leaves the rest (the rare draws that need more bits, and the "-0"
draws that CKS draws again) to the numpy code, in the same order, so that the same bits
give the same values either way (tests/engine/test_sampler_pins.py pins both).

numba is imported, and the loop compiled for both word sizes, on the first release that draws
or when :func:`prepare_compiled` asks (the app does, on a thread of its own, as it starts),
never when the engine is imported (that would cost 0.3 s); the machine code is cached beside
this file, or in the user's cache folder where that is read-only, so later processes load it
instead of compiling it (0.2 s against 1 s).
"""

from __future__ import annotations

import functools
import threading
import warnings
from collections.abc import Callable

import numpy as np

__all__ = ["add_common_draws", "prepare_compiled"]


def _add_common_draws(
    part: np.ndarray,
    fair: np.ndarray,
    prefixes: np.ndarray,
    word_guide: np.ndarray,
    low_bits: int,
    sign_shift: int,
    signless: int,
    open_threshold: int,
    rare: np.ndarray,
    again: np.ndarray,
) -> tuple[int, int]:
    """Add each draw of the round that the guide table and C's first bits decide to ``part``.

    ``fair`` and ``prefixes`` are the round's fair words (the sign on bit ``sign_shift``, then
    C's first bits, then L's ``low_bits`` digits) and V's 32-bit prefixes; C is proved 0 when
    the fair word without its sign (``word & signless``) is below ``open_threshold``. The other
    draws go to ``rare`` (V's prefix ties or needs a search, or C is not proved 0) and to
    ``again`` (the sign set on a zero magnitude: CKS draws it again), by position, ascending;
    their ``part`` values are left as they were. Returns how many of each.

    (Short-circuit ``and``/``or`` on purpose: numba makes the bitwise forms two to three
    times slower here.)
    """
    low_mask = (np.int64(1) << low_bits) - 1
    rare_count = 0
    again_count = 0
    for i in range(part.size):
        word = np.int64(fair[i])
        prefix = np.int64(prefixes[i])
        # the guide entry less the prefix (ExactSampler._guide_entries), modulo 2**32
        entry = (np.int64(word_guide[prefix >> 16]) - prefix) & 0xFFFFFFFF
        if (entry | 0x7FFF0000) >= 0x7FFFFFFF or (word & signless) >= open_threshold:
            rare[rare_count] = i
            rare_count += 1
            continue
        negative = (word >> sign_shift) & 1
        # V 2**M + L: L's M digits are the word's low bits (C = 0); below 2**52
        magnitude = ((entry >> 16) << low_bits) | (word & low_mask)
        if magnitude == 0 and negative:
            again[again_count] = i
            again_count += 1
            continue
        part[i] += float(magnitude * (1 - 2 * negative))
    return rare_count, again_count


_BUILDING = threading.Lock()

# Both word sizes of the fair words (32 bits up to M = 23, else 64), compiled at once.
_SIGNATURES = [
    f"UniTuple(int64, 2)(float64[::1], {fair}[::1], uint32[::1], uint32[::1], int64, int64, int64, int64, "
    "int64[::1], int64[::1])"
    for fair in ("uint32", "uint64")
]


def add_common_draws() -> Callable[..., tuple[int, int]] | None:
    """:func:`_add_common_draws` compiled (releasing the GIL), or None without numba or where
    numba cannot compile it (the sampler then runs its numpy passes, which give the same values)."""
    with _BUILDING:  # a release's threads ask at once: one of them compiles, the others wait for it
        return _compiled_loop()


def prepare_compiled() -> bool:
    """Load (or, the first time on a machine, compile) the compiled loop now, so that a release
    does not: loading numba takes the GIL often enough for half a second to stall a window's
    thread by 100 to 300 ms. Returns whether the loop is there."""
    return add_common_draws() is not None


@functools.cache
def _compiled_loop() -> Callable[..., tuple[int, int]] | None:
    try:
        import numba
    except ImportError:  # the fast extra is not installed: the numpy passes
        return None
    try:
        try:
            return numba.njit(_SIGNATURES, nogil=True, cache=True)(_add_common_draws)
        except RuntimeError:  # no folder to cache it in (numba: "no locator available"): compile each run
            return numba.njit(_SIGNATURES, nogil=True)(_add_common_draws)
    except Exception as error:  # a numba that cannot compile it must not stop a release
        warnings.warn(f"numba could not compile the exact sampler's loop, which runs as numpy passes: {error}",
                      RuntimeWarning, stacklevel=2)
        return None
