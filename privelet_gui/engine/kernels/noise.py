"""The noise's loops: exact rounding to the grid, the two samplers' draws, the noisy measurement.

A block's numerators ``z`` (int64, flat, the block's memory order) are noised chunk by chunk: the
measurement at flat index ``f`` is row ``f // cols``, column ``f % cols`` of the block seen as 2-D,
with denominator ``den_rows[row] * den_cols[column]`` and global position
``positions_rows[row] + positions_cols[column]`` (docs/math.md, "Random bits"). Each draw first
gets its measurement's block 0 (two 64-bit words); :func:`exact_noise` draws from them and
writes the noisy measurement in the same pass, and lists the very few draws that need more of
their stream's words, which the full protocol (:func:`exact_draws`, :func:`standard_draws`)
takes. A draw that needs more words than it was given, or an exact tie that only arbitrary
precision decides, is left to the caller (its status says which).

The draws follow the bit protocol of docs/math.md ("The exact sampler", "The standard sampler")
word for word: the same words give the same value here and in the exact Python resolver of
:mod:`privelet_gui.engine.noise.exact`.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

#: A draw's status: done, needs more words, or needs exact (arbitrary-precision) comparisons.
DONE = 0
NEED_MORE = 1
EXACT = 2

#: The exact sampler's protocol (word a): the sign is bit 63, V's uniform's first 32 bits are
#: bits 31..62, and the first uniform of C's lower bits is bits 0..30.
V_PREFIX_BITS = 32
LOWER_PREFIX_BITS = 31
#: V's guide table is indexed by the top 16 bits of V's prefix.
GUIDE_BITS = 16
#: A guide entry with this bit set marks a cell that needs a search (V stays below 2**15).
SEARCH_FLAG = 1 << 31

_LOWER_MASK = np.uint64((1 << LOWER_PREFIX_BITS) - 1)
_PREFIX_MASK = np.uint64((1 << V_PREFIX_BITS) - 1)
_GUIDE_MASK = np.uint64((1 << GUIDE_BITS) - 1)
_MANTISSA = np.uint64((1 << 52) - 1)
_U64 = np.uint64
_ONE = np.uint64(1)
_ZERO = np.uint64(0)


@njit(cache=True, nogil=True, error_model="numpy")
def round_to_units(z: np.int64, den: np.int64, inverse: float, grid_exponent: np.int64) -> np.int64:  # pragma: no cover
    """``floor(z / (den 2**k) + 1/2)`` exactly (docs/math.md, "The grid"): a float candidate,
    corrected by its exact int64 residual. ``inverse`` is about ``1 / (den 2**k)``."""
    if grid_exponent <= 0:
        a = z << -grid_exponent
        b = den
    else:
        a = z
        b = den << grid_exponent
    if b == 1:
        return a
    q = np.int64(np.rint(z * inverse))
    r = a - q * b
    while 2 * r >= b:
        q += 1
        r -= b
    while 2 * r < -b:
        q -= 1
        r += b
    return q


#: Up to this many low bits M, a common draw's ``high 2**M`` stays below 2**60 and a noisy
#: measurement with ``|units| < 2**61`` is the float64 of its int64 sum (no limbs needed).
FAST_SHIFT_BITS = 44
_FAST_UNITS = np.int64(1) << 61


@njit(cache=True, nogil=True, error_model="numpy")
def exact_noise(
    z: np.ndarray, out: np.ndarray, start: int, cols: int, den_rows: np.ndarray, den_cols: np.ndarray,
    inverse_rows: np.ndarray, inverse_cols: np.ndarray, grid_exponent: int, words: np.ndarray, low_bits: int,
    word_guide: np.ndarray, zero_threshold: np.uint64, v_thresholds: np.ndarray, v_remainders: np.ndarray,
    q_thresholds: np.ndarray, lower_first: np.ndarray, lower_next: np.ndarray, pending: np.ndarray,
    high: np.ndarray, low: np.ndarray, entries: np.ndarray,
) -> int:  # pragma: no cover - compiled
    """The exact sampler's draws from block 0 and their noisy measurements for the chunk of flat
    indices from ``start`` (row ``i`` of ``words`` is block 0 of index ``start + i``).

    Three passes over the chunk, so that the first two run without branches: the common draw of
    each (V from the guide table, whose entry less V's prefix has V in its high half and marks a
    tie or a cell to search; C proved 0 by its prefix; L its fair digits; the sign the top bit;
    ``Z = +-V 2**M +- L`` into ``high``, ``low``), listing in ``pending`` those it cannot decide (a
    V tie or search, C not proved 0, or "-0"); every measurement ``(units + Z) 2**k`` into
    ``out``; then the full protocol on the same words for the pending ones. A draw that needs
    more words or exact comparisons keeps its chunk row in ``pending`` (``out[f]`` is then
    rewritten by the caller). Returns how many did. ``entries`` (uint32, the chunk's length) holds
    the guide entries: read in a loop of their own, they leave the common draw's loop free of the
    table lookup, so that it vectorises."""
    n = words.shape[0]
    low_mask = (_ONE << _U64(low_bits)) - _ONE
    flat = words.reshape(-1)  # (a flat index vectorises where a 2-D one does not)
    for i in range(n):  # V's prefix's top bits are word a's bits 47..62
        entries[i] = word_guide[np.intp((flat[2 * i] >> _U64(63 - GUIDE_BITS)) & _GUIDE_MASK)]
    unsure_any = np.int64(0)
    for i in range(n):
        a = flat[2 * i]
        b = flat[2 * i + 1]
        prefix = np.uint32((a >> _U64(LOWER_PREFIX_BITS)) & _PREFIX_MASK)
        entry = entries[i] - prefix
        quotient = np.int64(entry >> np.uint32(16))
        digits = np.int64(b & low_mask)
        negative = np.int64(a >> _U64(63))
        flip = -negative  # all ones for a negative draw: x ^ flip - flip is -x
        high[i] = (quotient ^ flip) - flip
        low[i] = (digits ^ flip) - flip
        # a tie (low half 0xFFFF) or a flagged cell (bit 31) make this at least 0x7FFFFFFF
        unsure = np.int64((entry | np.uint32(0x7FFF0000)) >= np.uint32(0x7FFFFFFF))
        opened = np.int64((b >> _U64(low_bits)) >= zero_threshold)  # (for M = 0 the threshold is 2**64 - 1)
        minus_zero = negative & np.int64((quotient | digits) == 0)
        pending[i] = unsure | opened | minus_zero
        unsure_any |= pending[i]
    unsure_count = 0
    if unsure_any:
        for i in range(n):  # the flags become the list of undecided rows, in place
            flag = pending[i]
            pending[unsure_count] = i
            unsure_count += flag
    grid = math.ldexp(1.0, grid_exponent)
    row, column = divmod(start, cols)
    i = 0
    while i < n:  # one row of the block at a time: its denominator and inverse are read once
        count = min(cols - column, n - i)
        den_row = den_rows[row]
        inverse_row = inverse_rows[row] / grid
        if low_bits > FAST_SHIFT_BITS or not _noisy_row(z, out, start + i, column, count, den_row, den_cols,
                                                         inverse_row, inverse_cols, grid_exponent, high, low, i,
                                                         low_bits, grid):
            for j in range(count):  # a count too large for the fast row: the exact integer path
                f = start + i + j
                units = round_to_units(z[f], den_row * den_cols[column + j], inverse_row * inverse_cols[column + j],
                                       np.int64(grid_exponent))
                out[f] = noisy_value(units, high[i + j], low[i + j], low_bits, grid)
        i += count
        column = 0
        row += 1
    left = 0
    for j in range(unsure_count):
        i = pending[j]
        state, quotient, digits = _exact_draw(words, i, low_bits, v_thresholds, v_remainders, q_thresholds,
                                              lower_first, lower_next)
        if state != DONE:
            pending[left] = i
            left += 1
            continue
        f = start + i
        row, column = divmod(f, cols)
        units = round_to_units(z[f], den_rows[row] * den_cols[column], inverse_rows[row] * inverse_cols[column] / grid,
                               np.int64(grid_exponent))
        out[f] = noisy_value(units, quotient, digits, low_bits, grid)
    return left


@njit(cache=True, nogil=True, error_model="numpy")
def _noisy_row(
    z: np.ndarray, out: np.ndarray, first: int, column: int, count: int, den_row: np.int64, den_cols: np.ndarray,
    inverse_row: float, inverse_cols: np.ndarray, grid_exponent: int, high: np.ndarray, low: np.ndarray,
    draw: int, shift: int, grid: float,
) -> bool:  # pragma: no cover - compiled
    """``count`` noisy measurements of one row from flat index ``first`` (column ``column``, draw
    ``draw``) without branches: :func:`round_to_units` with one correction step, and the float64
    of ``units + Z`` (:func:`noisy_value`'s value where ``|units| < 2**61`` and ``shift`` is at most
    :data:`FAST_SHIFT_BITS`). Returns False, values unfinished, where some count needs more
    (one correction step left a residual, or units reached 2**61)."""
    # integer factors for the shifts, and slices for the offsets: indices that are plain loop
    # counters let the loop vectorise (an offset index is checked for wrapping around)
    up = np.int64(1) << max(-grid_exponent, 0)
    den_scale = den_row << max(grid_exponent, 0)
    high_scale = np.int64(1) << shift
    values = z[first:first + count]
    targets = out[first:first + count]
    dens = den_cols[column:column + count]
    inverses = inverse_cols[column:column + count]
    highs = high[draw:draw + count]
    lows = low[draw:draw + count]
    fine = True
    for j in range(count):
        value = values[j]
        den = den_scale * dens[j]
        units = np.int64(np.rint(value * (inverse_row * inverses[j])))
        twice = 2 * (value * up - units * den)
        step = np.int64(twice >= den) - np.int64(twice < -den)
        units += step
        twice -= 2 * step * den
        fine &= (twice < den) & (twice >= -den) & (units < _FAST_UNITS) & (units > -_FAST_UNITS)
        targets[j] = np.float64(units + lows[j] + highs[j] * high_scale) * grid
    return fine


@njit(cache=True, nogil=True, error_model="numpy")
def exact_draws(
    words: np.ndarray, low_bits: int, v_thresholds: np.ndarray, v_remainders: np.ndarray, q_thresholds: np.ndarray,
    lower_first: np.ndarray, lower_next: np.ndarray, high: np.ndarray, low: np.ndarray, status: np.ndarray,
) -> int:  # pragma: no cover - compiled
    """The exact sampler's full protocol for each row of ``words`` (all the words each draw has):
    its status and ``Z = high 2**M + low``; returns how many are not done."""
    pending = 0
    for i in range(words.shape[0]):
        state, quotient, digits = _exact_draw(words, i, low_bits, v_thresholds, v_remainders, q_thresholds,
                                              lower_first, lower_next)
        status[i] = state
        high[i] = quotient
        low[i] = digits
        pending += state != DONE
    return pending


@njit(cache=True, nogil=True, error_model="numpy")
def _exact_draw(
    words: np.ndarray, row: int, low_bits: int, v_thresholds: np.ndarray, v_remainders: np.ndarray,
    q_thresholds: np.ndarray, lower_first: np.ndarray, lower_next: np.ndarray,
) -> tuple[int, np.int64, np.int64]:  # pragma: no cover - compiled
    """One draw of the protocol from the words of row ``row``: ``(DONE, +-V, +-L)``, or
    ``(NEED_MORE, 0, 0)`` / ``(EXACT, 0, 0)``."""
    n_words = words.shape[1]
    cursor = 0
    low_mask = (_ONE << _U64(low_bits)) - _ONE
    while True:
        if cursor + 2 > n_words:
            return NEED_MORE, np.int64(0), np.int64(0)
        a = words[row, cursor]
        b = words[row, cursor + 1]
        cursor += 2
        negative = (a >> _U64(63)) != _ZERO
        prefix = (a >> _U64(LOWER_PREFIX_BITS)) & _PREFIX_MASK
        # V: the count of thresholds its uniform is below (a binary search over the decreasing
        # thresholds), then ties at 32 bits decided by the next word against the 96-bit floors
        quotient = 0
        top = v_thresholds.shape[0]
        while quotient < top:
            middle = (quotient + top) // 2
            if _U64(v_thresholds[middle]) > prefix:
                quotient = middle + 1
            else:
                top = middle
        extended = False
        extension = _ZERO
        while quotient < v_thresholds.shape[0] and _U64(v_thresholds[quotient]) == prefix:
            if not extended:
                if cursor >= n_words:
                    return NEED_MORE, np.int64(0), np.int64(0)
                extension = words[row, cursor]
                cursor += 1
                extended = True
            remainder = v_remainders[quotient]
            if extension < remainder:
                quotient += 1
            elif extension > remainder:
                break
            else:
                return EXACT, np.int64(0), np.int64(0)
        if quotient == v_thresholds.shape[0]:
            return EXACT, np.int64(0), np.int64(0)  # the tail past the table (a prefix of 0 below the last 0)
        digits = np.int64(0)
        if low_bits > 0:
            correction = _ZERO
            c_prefix = b >> _U64(low_bits)
            if c_prefix >= q_thresholds[0]:
                count = 0
                for j in range(low_bits):
                    threshold = q_thresholds[j]
                    if c_prefix > threshold:
                        count += 1
                    elif c_prefix == threshold:
                        return EXACT, np.int64(0), np.int64(0)
                    else:
                        break
                level = count - 1
                correction = _ONE << _U64(level)
                uniform = a & _LOWER_MASK
                fresh = False  # the first uniform is word a's low bits; the others whole words
                while level > 0:
                    if fresh:
                        if cursor >= n_words:
                            return NEED_MORE, np.int64(0), np.int64(0)
                        uniform = words[row, cursor]
                        cursor += 1
                    lowest = lower_next[level, 0] if fresh else lower_first[level, 0]
                    if uniform < lowest:
                        break
                    if uniform == lowest:
                        return EXACT, np.int64(0), np.int64(0)
                    j = level - 1
                    while True:
                        threshold = lower_next[level, j] if fresh else lower_first[level, j]
                        if uniform > threshold:
                            break
                        if uniform == threshold:
                            return EXACT, np.int64(0), np.int64(0)
                        j -= 1
                    correction |= _ONE << _U64(j)
                    level = j
                    fresh = True
            digits = np.int64((b & low_mask) & ~correction)
        if negative and quotient == 0 and digits == 0:
            continue  # "-0": the draw starts again with the next words
        if negative:
            return DONE, -np.int64(quotient), -digits
        return DONE, np.int64(quotient), digits


@njit(cache=True, nogil=True, error_model="numpy")
def standard_draws(
    words: np.ndarray, scale: float, offset: float, split_bits: int, block_scale: float, theta: float,
    high: np.ndarray, low: np.ndarray, status: np.ndarray,
) -> int:  # pragma: no cover - compiled
    """The standard sampler (docs/math.md, "The standard sampler") for each row of ``words``: the
    magnitude by inverting its law from word a's low 52 bits, the sign from its top bit; above
    ``2**40`` grid units a quotient H by inversion and ``split_bits`` low bits L by rejection
    (``Z = high 2**m + low``, ``high = +-H``, ``low = +-L``). Returns how many are not done."""
    pending = 0
    n_words = words.shape[1]
    low_mask = (_ONE << _U64(split_bits)) - _ONE
    for i in range(words.shape[0]):
        state = NEED_MORE
        quotient = np.int64(0)
        digits = np.int64(0)
        cursor = 0
        while cursor + 2 <= n_words:
            a = words[i, cursor]
            b = words[i, cursor + 1]
            cursor += 2
            negative = (a >> _U64(63)) != _ZERO
            unit = 1.0 - np.float64(a & _MANTISSA) * 2.0**-52  # in (0, 1], exact
            exponential = -np.log(unit)
            if split_bits == 0:
                magnitude = np.int64(np.floor(scale * exponential + offset))
                state, quotient, digits = DONE, -magnitude if negative else magnitude, np.int64(0)
                break
            quotient = np.int64(np.floor(block_scale * exponential))
            accepted = False
            while True:
                digits = np.int64(b & low_mask)
                if np.float64(b >> _U64(split_bits)) * 2.0 ** (split_bits - 64) < np.exp(-theta * digits):
                    accepted = True
                    break
                if cursor >= n_words:
                    break
                b = words[i, cursor]
                cursor += 1
            if not accepted:
                break
            if negative and quotient == 0 and digits == 0:
                continue  # the draw starts again with the next words
            state = DONE
            if negative:
                quotient, digits = -quotient, -digits
            break
        status[i] = state
        high[i] = quotient
        low[i] = digits
        pending += state != DONE
    return pending


@njit(cache=True, nogil=True, error_model="numpy")
def fill_inputs(inputs: np.ndarray, start: int, cols: int, positions_rows: np.ndarray,
                positions_cols: np.ndarray) -> None:  # pragma: no cover - compiled
    """The AES inputs (position, block 0) of the chunk of flat indices from ``start``."""
    row, column = divmod(start, cols)
    n = inputs.shape[0]
    i = 0
    while i < n:  # row by row: the inner loop vectorises
        count = min(cols - column, n - i)
        base = positions_rows[row]
        targets = inputs[i:i + count]
        positions = positions_cols[column:column + count]
        for j in range(count):
            targets[j, 0] = base + positions[j]
            targets[j, 1] = 0
        i += count
        column = 0
        row += 1


@njit(cache=True, nogil=True, error_model="numpy")
def noisy_value(units: np.int64, high: np.int64, low: np.int64, shift: int, grid: float) -> float:  # pragma: no cover
    """``(units + high 2**shift + low) 2**k`` as float64, a fixed function of the exact integer sum N
    (docs/math.md, "The grid"): N itself where it fits in int64, else its two canonical limbs
    ``N = hi 2**shift + lo`` (``0 <= lo < 2**shift``) as ``hi 2**shift + lo`` in floats."""
    partial = units + low  # |units| < 2**62 and |low| < 2**61: no overflow
    hi = (partial >> shift) + high
    lo = partial & ((np.int64(1) << shift) - 1)
    if -(np.int64(1) << (62 - shift)) <= hi < (np.int64(1) << (62 - shift)):
        return np.float64((hi << shift) | lo) * grid
    return (np.float64(hi) * math.ldexp(1.0, shift) + np.float64(lo)) * grid


@njit(cache=True, nogil=True, error_model="numpy")
def noisy_values(
    z: np.ndarray, out: np.ndarray, cols: int, den_rows: np.ndarray, den_cols: np.ndarray, inverse_rows: np.ndarray,
    inverse_cols: np.ndarray, grid_exponent: int, shift: int, high: np.ndarray, low: np.ndarray, status: np.ndarray,
    start: int, flat: np.ndarray,
) -> None:  # pragma: no cover - compiled
    """The noisy weighted measurement ``(units + Z) 2**k`` of each done draw
    (``Z = high 2**shift + low``): the i-th of the flat indices from ``start`` on, or of ``flat``
    when it is given (not empty)."""
    grid = math.ldexp(1.0, grid_exponent)
    scattered = flat.shape[0] > 0
    row, column = divmod(start, cols)
    for i in range(high.shape[0]):
        if scattered:
            f = flat[i]
            row, column = divmod(f, cols)
        else:
            f = start + i
        if status[i] == DONE:
            den = den_rows[row] * den_cols[column]
            units = round_to_units(z[f], den, inverse_rows[row] * inverse_cols[column] / grid, np.int64(grid_exponent))
            out[f] = noisy_value(units, high[i], low[i], shift, grid)
        column += 1
        if column == cols:
            column = 0
            row += 1
