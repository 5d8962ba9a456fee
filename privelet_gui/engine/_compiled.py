"""The release's hottest loops compiled, when numba is installed (the ``fast`` extra).

:class:`~privelet_gui.engine.exact.ExactSampler` decides nearly every draw from two words
and one table look-up; in numpy that takes some thirty passes over each round of draws,
which hold the GIL between them. Here one loop, which releases the GIL, adds those draws
to the coefficients; a second finds V of the rare ones it leaves (about 0.7 %: V searched in
the thresholds, C not proved 0) and what is still open, and a third adds them once the
sampler has drawn the bits those need, in the numpy passes' order; the "-0" draws that CKS
draws again are left to the numpy code. The same bits give the same values either way (tests/engine/test_sampler_pins.py
pins both paths and compares them where ties and open draws are forced).

The Haar transform's finer levels in the pipeline's rows layout
(:meth:`~privelet_gui.engine.haar.HaarTransform.rows_numerators` and ``rows_inverse``) are
two more such loops: numpy runs two passes per level over a whole tile, each a GIL hand-over
between the release's threads; here one row at a time goes through every level while it is
in the L1 cache. Each value is the same sum or difference of the same two numbers, so the
results are the same bits (tests/engine/test_haar_rows.py compares them).

numba is imported, and the loops compiled (the sampler's for both word sizes), on the first
release or when :func:`prepare_compiled` asks (the app does, on a thread of its own, as it
starts), never when the engine is imported (that would cost 0.3 s); the machine code is
cached beside this file, or in the user's cache folder where that is read-only, so later
processes load them instead of compiling them (0.2 s against 1.5 s).
"""

from __future__ import annotations

import functools
import threading
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["HaarRowsLoops", "SamplerLoops", "haar_rows_loops", "prepare_compiled", "sampler_loops"]


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


def _rare_quotients(
    fair: np.ndarray,
    prefixes: np.ndarray,
    rare: np.ndarray,
    word_guide: np.ndarray,
    ascending: np.ndarray,
    at_most: np.ndarray,
    signless: int,
    open_threshold: int,
    quotients: np.ndarray,
    flags: np.ndarray,
) -> None:
    """V of each draw at the positions ``rare`` that :func:`_add_common_draws` left (a binary
    search of the ``ascending`` thresholds where the guide entry is flagged; ``at_most[j]``:
    the largest of the first j thresholds, 0 for none) into ``quotients``, and what is still
    open into ``flags``: 1 where V ties a threshold (more bits decide it), 2 where C is not
    proved 0, 0 where the draw is decided."""
    for j in range(rare.size):
        i = rare[j]
        prefix = np.int64(prefixes[i])
        entry = (np.int64(word_guide[prefix >> 16]) - prefix) & 0xFFFFFFFF
        quotient = entry >> 16
        tie = False
        if (entry | 0x7FFF0000) >= 0x7FFFFFFF:  # flagged or a tie: the thresholds at most the prefix
            low, high = 0, ascending.size
            while low < high:
                middle = (low + high) >> 1
                if np.int64(ascending[middle]) <= prefix:
                    low = middle + 1
                else:
                    high = middle
            quotient = np.int64(ascending.size - low)
            tie = np.int64(at_most[low]) == prefix
        opened = (np.int64(fair[i]) & signless) >= open_threshold
        quotients[j] = quotient
        flags[j] = (1 if tie else 0) | (2 if opened else 0)


def _add_rare_draws(
    part: np.ndarray,
    fair: np.ndarray,
    rare: np.ndarray,
    quotients: np.ndarray,
    corrections: np.ndarray,
    low_bits: int,
    sign_shift: int,
    again: np.ndarray,
) -> int:
    """Add the draws at the positions ``rare`` once their V (``quotients``) and C
    (``corrections``, whose set bits clear L's) are decided; the "-0" ones go to ``again``
    (their count is returned)."""
    low_mask = (np.int64(1) << low_bits) - 1
    again_count = 0
    for j in range(rare.size):
        i = rare[j]
        word = np.int64(fair[i])
        negative = (word >> sign_shift) & 1
        remainder = word & low_mask & ~np.int64(corrections[j])
        magnitude = (quotients[j] << low_bits) | remainder
        if magnitude == 0 and negative:
            again[again_count] = i
            again_count += 1
            continue
        part[i] += float(magnitude * (1 - 2 * negative))
    return again_count


def _haar_rows_forward(rows: np.ndarray, out: np.ndarray, head: np.ndarray, levels: int, coarse: int) -> None:
    """The finer levels of :meth:`~privelet_gui.engine.haar.HaarTransform.rows_numerators`:
    each row's pair differences of levels ``levels`` down to ``coarse + 1`` into the flat
    ``out`` in the level-major layout (level l's details of row r at ``R 2**(l - 1) + r
    2**(l - 1)``), and the row's ``2**coarse`` subtree sums left into ``head[r]``."""
    count, width = rows.shape
    sums = np.empty(width // 2)
    for r in range(count):
        values = rows[r]
        size = width
        for _ in range(levels, coarse, -1):  # the finest level first
            half = size // 2
            details = count * half + r * half
            for k in range(half):
                left = values[2 * k]
                right = values[2 * k + 1]
                out[details + k] = left - right
                sums[k] = left + right  # k <= 2k: a pair is read before its sum overwrites it
            values = sums
            size = half
        for k in range(size):
            head[r, k] = values[k]


def _haar_rows_inverse(coefficients: np.ndarray, out: np.ndarray, levels: int, coarse: int) -> None:
    """The finer levels of :meth:`~privelet_gui.engine.haar.HaarTransform.rows_inverse`:
    each row of ``out`` holds its ``2**coarse`` coarse means on entry and its values on return,
    each level's means plus and minus its details (from the flat level-major ``coefficients``)."""
    count = out.shape[0]
    for r in range(count):
        row = out[r]
        width = 1 << coarse
        for _ in range(coarse + 1, levels + 1):
            details = count * width + r * width
            for k in range(width - 1, -1, -1):  # the last first: mean k is read before 2k overwrites it
                mean = row[k]
                detail = coefficients[details + k]
                row[2 * k + 1] = mean - detail
                row[2 * k] = mean + detail
            width *= 2


@dataclass(frozen=True)
class SamplerLoops:
    """The exact sampler's compiled loops (numba's dispatchers, typed by their signatures in _LOOPS)."""

    add_common: Callable[..., Any]  # _add_common_draws
    rare_quotients: Callable[..., Any]  # _rare_quotients
    add_rare: Callable[..., Any]  # _add_rare_draws


@dataclass(frozen=True)
class HaarRowsLoops:
    """The Haar rows layout's compiled loops."""

    forward: Callable[..., Any]  # _haar_rows_forward
    inverse: Callable[..., Any]  # _haar_rows_inverse


@dataclass(frozen=True)
class _Kernels:
    sampler: SamplerLoops
    haar_rows: HaarRowsLoops


# Each loop with its signatures; the sampler's for both word sizes of the fair words (32 bits
# up to M = 23, else 64). All are compiled at once, in this order (that of SamplerLoops' and HaarRowsLoops' fields).
_LOOPS: list[tuple[Callable[..., object], list[str]]] = [
    (_add_common_draws, [
        f"UniTuple(int64, 2)(float64[::1], {fair}[::1], uint32[::1], uint32[::1], int64, int64, int64, int64, "
        "int64[::1], int64[::1])"
        for fair in ("uint32", "uint64")
    ]),
    (_rare_quotients, [
        f"void({fair}[::1], uint32[::1], int64[::1], uint32[::1], uint32[::1], uint32[::1], int64, int64, "
        "int64[::1], uint8[::1])"
        for fair in ("uint32", "uint64")
    ]),
    (_add_rare_draws, [
        f"int64(float64[::1], {fair}[::1], int64[::1], int64[::1], uint64[::1], int64, int64, int64[::1])"
        for fair in ("uint32", "uint64")
    ]),
    (_haar_rows_forward, ["void(float64[:, ::1], float64[::1], float64[:, ::1], int64, int64)"]),
    (_haar_rows_inverse, ["void(float64[::1], float64[:, ::1], int64, int64)"]),
]

_BUILDING = threading.Lock()


def sampler_loops() -> SamplerLoops | None:
    """The exact sampler's loops compiled (releasing the GIL), or None without numba or where numba
    cannot compile them (the sampler then runs its numpy passes, which give the same values)."""
    kernels = _kernels()
    return None if kernels is None else kernels.sampler


def haar_rows_loops() -> HaarRowsLoops | None:
    """The Haar rows layout's loops compiled (releasing the GIL), or None (numpy passes, the same values)."""
    kernels = _kernels()
    return None if kernels is None else kernels.haar_rows


def prepare_compiled() -> bool:
    """Load (or, the first time on a machine, compile) the compiled loops now, so that a release
    does not: loading numba takes the GIL often enough for half a second to stall a window's
    thread by 100 to 300 ms. Returns whether the loops are there."""
    return _kernels() is not None


def _kernels() -> _Kernels | None:
    with _BUILDING:  # a release's threads ask at once: one of them compiles, the others wait for it
        return _compiled_kernels()


@functools.cache
def _compiled_kernels() -> _Kernels | None:
    try:
        import numba
    except ImportError:  # the fast extra is not installed: the numpy passes
        return None
    try:
        try:
            loops = [numba.njit(signatures, nogil=True, cache=True)(loop) for loop, signatures in _LOOPS]
        except RuntimeError:  # no folder to cache them in (numba: "no locator available"): compile each run
            loops = [numba.njit(signatures, nogil=True)(loop) for loop, signatures in _LOOPS]
    except Exception as error:  # a numba that cannot compile them must not stop a release
        warnings.warn(f"numba could not compile the release's loops, which run as numpy passes: {error}",
                      RuntimeWarning, stacklevel=2)
        return None
    return _Kernels(SamplerLoops(*loops[:3]), HaarRowsLoops(*loops[3:]))
