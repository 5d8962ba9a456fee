"""The release's hottest loops compiled, when numba is installed (the ``fast`` extra).

:class:`~privelet_gui.engine.exact.ExactSampler` decides nearly every draw from two words
and one table look-up; in numpy that takes some thirty passes over each round of draws,
which hold the GIL between them. Here one loop, which releases the GIL, adds those draws
to the coefficients and, in the same call, finds V of the rare ones it leaves (about 0.7 %: V
searched in the thresholds, C not proved 0) and what is still open; two more decide C for the
draws it is not proved 0 for, and the last adds the rare draws, once the sampler has drawn the
bits they need, in the numpy passes' order; the "-0" draws that CKS draws again are left to the
numpy code. Every Python step between these calls counts: after a loop over a round's arrays
each numpy call took 10 to 20 us here instead of 1 (the interpreter's and numpy's code and
data evicted from the CPU's caches), and a round's forty such steps were a tenth of the
sampler's time; in these loops the exact sampler takes 5.3 ns a draw instead of 6.0 (epsilon 1,
one thread, Brazil's scale; 6.6 instead of 7.3 at epsilon 0.1). The same bits give the same
values either way (tests/engine/test_sampler_pins.py pins both paths and compares them where
ties and open draws are forced).

The Haar transform's levels in the pipeline's rows layout
(:meth:`~privelet_gui.engine.haar.HaarTransform.rows_numerators` and ``rows_inverse``) are
two more such loops: numpy runs two passes per level over a whole tile, each a GIL hand-over
between the release's threads; here one row at a time goes through every level while it is
in the L1 cache, divided to the noise grid (and rounded) on the way forward and scaled on the
way back. Each value is the same sum, difference, quotient or product of the same two numbers,
so the results are the same bits (tests/engine/test_haar_rows.py compares them); the forward's
head, which numpy does as a matrix product, is exact integers either way.

A block's counts are checked and summed in one read (and copied into the rows layout's padded
lines in the same pass), and the nominal transform's numerators and the Haar transform's kept
numerators (a big block's pencils) computed, by four more. Where a plane is a nominal axis and
the rows axis, two more replace the padded copy and the nominal plane: one reads the counts once,
checking them and summing each internal node's leaves; the other forms a tile's nominal
numerators a line at a time and takes each line through the Haar levels while it is in the L1
cache (a helper shared with the rows loop). On one thread that is 1.5 % of a Privelet+ release
at Brazil scale (1.485 against 1.508 s, medians of six alternating runs) and 2 % of Privelet
with S_A empty; on two, within the machine's noise. On the way back one more takes a tile's
lines through the Haar inverse and each sibling group through the nominal inverse as soon as its
lines are there, in a few rows that stay in the L2 cache (:func:`_rows_nominal_inverse`), instead
of writing the whole plane out and reading it back for the nominal inverse: the same bits, and
Privelet+ at Brazil scale 5% faster on two threads, 2% on one. The numerators of counts are
integers below 2**53 (the check refuses the rest), so every order of their sums and differences
gives the same bits as numpy's; the check's sum is exact as well, and a sum of 2**53 or more is
refused by either path. The nominal inverse sums noisy floats: its loop follows numpy's order
(the children of a group one after the other, as numpy's reduction along the first axis of
rows of two or more values does), and is taken only where numpy visits the groups one by one.
A big block's pencils are divided to the grid and scaled in one pass each, and the finer
levels of their Haar inverse computed, by three more: the same quotients, products, sums and
differences (tests/engine/test_block_loops.py compares them all). Where a pencil's axes are a
Haar axis then a nominal one (Brazil's Age and Gender), two more take it through both at once:
each Haar coefficient's lines through the nominal numerators (to the grid) as soon as they are
formed, and on the way back each through the nominal inverse as the Haar inverse first reads
them, from a few rows that stay in the cache (:func:`_pencil_units`, :func:`_pencil_inverse`):
the pencil's Haar coefficients (2.8 MiB at Brazil scale) are never written out and read back.
Plain Privelet at Brazil scale: 1.059 -> 0.941 s on two threads (best of 24 in alternating
processes).

The noise's random words come from one more where the CPU has AES instructions: AES-128 in
counter mode on the state of randomgen's AESCounter itself, many blocks in flight, through intrinsics of
LLVM's ``aesenc`` (256-bit VAES where the CPU has it; :func:`_aes_counter_words`;
:func:`~privelet_gui.engine.bits.random_words` checks the state's layout once and gives the
same words as the generator's ``random_raw``, which takes one word per call: 0.6 ns a word
with VAES and 1.0 without, against 2.6, here).

numba is imported, and the loops compiled (the sampler's for both word sizes), on the first
release or when :func:`prepare_compiled` asks (the app does, on a thread of its own, as it
starts), never when the engine is imported (that would cost 0.3 s); the machine code is
cached beside this file, or in the user's cache folder where that is read-only, so later
processes load them instead of compiling them (the engine's import and the loops in a fresh
process: 0.4 to 0.5 s against 3.4 s the first time on a machine, measured here).
"""

from __future__ import annotations

import math
import platform
import threading
import warnings
from collections.abc import Callable
from dataclasses import dataclass, fields
from itertools import islice
from typing import Any

import numpy as np

__all__ = [
    "AES_BUFFER",
    "AES_COUNTERS",
    "AES_KEYS",
    "AES_OFFSET",
    "AES_STATE_WORDS",
    "BlockLoops",
    "GridLoops",
    "HaarRowsLoops",
    "SamplerLoops",
    "aes_words_loop",
    "block_loops",
    "grid_loops",
    "haar_rows_loops",
    "limit_bits",
    "loaded_count_loop",
    "prepare_compiled",
    "sampler_loops",
]


# The exact sampler's round (ExactSampler._add_round_compiled): the rows of its int64 scratch
# array (ROUND_ROWS of them, each a round long), and the entries of its parameters.
RARE, AGAIN, QUOTIENTS, CORRECTIONS, TIES, OPENED, COUNTS, LOWER = range(8)
ROUND_ROWS = 8
LOW_BITS, SIGN_SHIFT, SIGNLESS, OPEN_THRESHOLD, C_SHIFT, C_BITS, FAIR_DIGITS, HIGH_MASK = range(8)


def _add_common_draws(part: np.ndarray, fair: np.ndarray, high: np.ndarray, prefixes: np.ndarray,
                      word_guide: np.ndarray, params: np.ndarray, rare: np.ndarray, again: np.ndarray,
                      entries: np.ndarray, flags: np.ndarray) -> tuple[int, int]:
    """Add each draw of the round that the guide table and C's first bits decide to ``part``.

    ``fair`` and ``prefixes`` are the round's fair words (the sign on bit ``SIGN_SHIFT``, then
    C's first bits, then L's first ``FAIR_DIGITS`` digits) and V's 32-bit prefixes; L's other
    digits are the ``HIGH_MASK`` bits of each draw's byte in ``high`` (none, and ``high``
    empty, when ``HIGH_MASK`` is 0). C is proved 0 when
    the fair word without its sign (``word & SIGNLESS``) is below ``OPEN_THRESHOLD`` (the
    entries of ``params``). The other draws go to ``rare`` (V's prefix ties or needs a search,
    or C is not proved 0) and to ``again`` (the sign set on a zero magnitude: CKS draws it
    again), by position, ascending; their ``part`` values are left as they were. Returns how
    many of each.

    In three loops, so that numba vectorises the second: the guide entries into ``entries``
    (uint32, a round long: a table lookup is not vectorised), the draws added without a branch
    (each draw's flags into ``flags``, uint8, a round long), then the flags read eight at a time.
    """
    count = part.size
    for i in range(count):
        # the guide entry less the prefix (ExactSampler._guide_entries), modulo 2**32
        entries[i] = word_guide[prefixes[i] >> np.uint32(16)] - prefixes[i]
    # the second loop twice, with a constant mask where there are no bytes: it then reads none
    # (a loop that read a byte of zeros costs 0.1 ns a draw, one that tested the mask 0.4)
    if params[HIGH_MASK]:
        _add_decided_draws(part, fair, high, entries, flags, params, params[HIGH_MASK])
    else:
        _add_decided_draws(part, fair, high, entries, flags, params, np.int64(0))
    rare_count = 0
    again_count = 0
    eights = flags[: count - count % 8].view(np.uint64)
    for block in range(eights.size + (1 if count % 8 else 0)):
        if block < eights.size and eights[block] == 0:
            continue
        for i in range(8 * block, min(8 * block + 8, count)):
            if flags[i] & 1:
                rare[rare_count] = i
                rare_count += 1
            elif flags[i]:
                again[again_count] = i
                again_count += 1
    return rare_count, again_count


def _add_decided_draws(part: np.ndarray, fair: np.ndarray, high: np.ndarray, entries: np.ndarray, flags: np.ndarray,
                       params: np.ndarray, high_mask: np.int64) -> None:
    """:func:`_add_common_draws`' second loop, with L's digits from the bytes ``high`` masked by
    ``high_mask`` (when it is the constant 0, compiled without reading them)."""
    low_bits, sign_shift = params[LOW_BITS], params[SIGN_SHIFT]
    signless, open_threshold, fair_digits = params[SIGNLESS], params[OPEN_THRESHOLD], params[FAIR_DIGITS]
    low_mask = (np.int64(1) << fair_digits) - 1
    for i in range(part.size):
        word = np.int64(fair[i])
        entry = np.int64(entries[i])
        unsure = ((entry | 0x7FFF0000) >= 0x7FFFFFFF) | ((word & signless) >= open_threshold)
        negative = (word >> sign_shift) & 1
        # V 2**M + L: L's M digits are the word's low bits and the byte's (C = 0); below 2**52
        magnitude = ((entry >> 16) << low_bits) | (word & low_mask) | ((np.int64(high[i]) & high_mask) << fair_digits)
        minus_zero = (magnitude == 0) & (negative == 1)
        # the float64 of a magnitude below 2**52 exactly, from its bits below 2**52's (AVX2 has
        # no vector int64 conversion: four scalar ones and a multiply for the sign took 2.4 ns a
        # draw, this 1.4, with the select below); the garbage of an unsure draw is not added
        value = _float_of_bits(np.uint64(magnitude) | _TWO_52_BITS) - _TWO_52
        value = -value if negative else value
        # an unconditional store (a masked one is slow on some CPUs): before + 0.0 differs from
        # before only for -0.0, which becomes +0.0; an unsure or "-0" draw's value, added
        # later, is an integer's float (never -0.0), so the sum is the same either way
        part[i] = part[i] + (0.0 if unsure | minus_zero else value)
        flags[i] = np.uint8(unsure) | (np.uint8(minus_zero) << np.uint8(1))


# 2**52 and its float64 bits: an integer below 2**52 or'ed into them is 2**52 plus it, exactly
_TWO_52 = 4503599627370496.0
_TWO_52_BITS = np.uint64(0x4330000000000000)


def _float_of_bits(bits: np.uint64) -> float:
    """The float64 whose bits are ``bits``: compiled as a bitcast (:func:`_float_of_bits_intrinsic`),
    which numba vectorises, before the loops that call it."""
    return float(np.uint64(bits).view(np.float64))


def _float_of_bits_intrinsic() -> Any:
    """:func:`_float_of_bits` as numba's intrinsic: LLVM's bitcast (numba is imported)."""
    from llvmlite import ir
    from numba.core import types
    from numba.extending import intrinsic

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        return builder.bitcast(args[0], ir.DoubleType())

    def typer(typingctx: Any, bits: Any) -> Any:
        return types.float64(types.uint64), codegen

    typer.__name__ = "_float_of_bits"  # numba names the intrinsic by its function
    return intrinsic(typer)


def _stream_store(row: np.ndarray, index: int, value: float) -> None:
    """``row[index] = value`` (a C-contiguous row of float64), compiled as a store past the
    CPU's caches (:func:`_stream_store_intrinsic`): for a release's output, which nothing reads
    soon, whose cache lines are then neither read from memory before they are written nor kept."""
    row[index] = value


def _stream_store_intrinsic() -> Any:
    """:func:`_stream_store` as numba's intrinsic: a store with LLVM's ``nontemporal`` hint
    (numba is imported). Such stores are weakly ordered: :func:`_store_fence` follows them."""
    from llvmlite import ir
    from numba.core import cgutils, types
    from numba.extending import intrinsic

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        row_type = signature.args[0]
        row, index, value = args
        array = context.make_array(row_type)(context, builder, row)
        pointer = cgutils.get_item_pointer(context, builder, row_type, array, [index], wraparound=False)
        store = builder.store(value, pointer)
        store.set_metadata("nontemporal", builder.module.add_metadata([ir.Constant(ir.IntType(32), 1)]))
        return context.get_dummy_value()

    def typer(typingctx: Any, row: Any, index: Any, value: Any) -> Any:
        return types.void(row, types.int64, types.float64), codegen

    typer.__name__ = "_stream_store"  # numba names the intrinsic by its function
    return intrinsic(typer)


def _store_fence() -> None:
    """Nothing in Python; compiled as a full memory fence (:func:`_store_fence_intrinsic`): every
    :func:`_stream_store` before it is seen by every thread before any store after it."""


def _store_fence_intrinsic() -> Any:
    """:func:`_store_fence` as numba's intrinsic: LLVM's sequentially consistent fence."""
    from numba.core import types
    from numba.extending import intrinsic

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        builder.fence("seq_cst")
        return context.get_dummy_value()

    def typer(typingctx: Any) -> Any:
        return types.void(), codegen

    typer.__name__ = "_store_fence"
    return intrinsic(typer)


def _add_round_draws(part: np.ndarray, fair: np.ndarray, high: np.ndarray, prefixes: np.ndarray,
                     word_guide: np.ndarray, ascending: np.ndarray, at_most: np.ndarray, params: np.ndarray,
                     scratch: np.ndarray, first_c: np.ndarray) -> tuple[int, int, int, int]:
    """:func:`_add_common_draws` (into the rows ``RARE`` and ``AGAIN`` of ``scratch``), then the
    rare draws it leaves sorted out, in one call (each Python step between compiled ones costs
    10 to 20 us here: it runs with caches that the round's arrays have just filled).

    For each rare draw, by its place among them: V (a binary search of the ``ascending``
    thresholds where the guide entry is flagged; ``at_most[j]``: the largest of the first j
    thresholds, 0 for none) into row ``QUOTIENTS`` and a zero C into ``CORRECTIONS``. The
    places of the draws whose V's prefix ties a threshold (more bits decide V) go to row
    ``TIES``, those of the draws whose C is not proved 0 to ``OPENED``, with C's first
    ``C_BITS`` bits (from bit ``C_SHIFT`` of the fair word) into ``first_c``. Returns how many
    rare, "-0", tied and opened draws there are."""
    rare = scratch[RARE]
    # the rows LOWER and COUNTS are free until the opened draws are decided: the guide entries
    # stay there for the rare draws below
    entries = scratch[LOWER].view(np.uint32)
    rare_count, again_count = _add_common_draws(part, fair, high, prefixes, word_guide, params, rare,
                                                scratch[AGAIN], entries, scratch[COUNTS].view(np.uint8))
    signless, open_threshold = params[SIGNLESS], params[OPEN_THRESHOLD]
    c_shift = np.uint64(params[C_SHIFT])
    c_mask = (np.uint64(1) << np.uint64(params[C_BITS])) - np.uint64(1)
    tie_count = 0
    open_count = 0
    for j in range(rare_count):
        i = rare[j]
        prefix = np.int64(prefixes[i])
        entry = np.int64(entries[i])
        quotient = entry >> 16
        if (entry | 0x7FFF0000) >= 0x7FFFFFFF:  # flagged or a tie: the thresholds at most the prefix
            low, above = 0, ascending.size
            while low < above:
                middle = (low + above) >> 1
                if np.int64(ascending[middle]) <= prefix:
                    low = middle + 1
                else:
                    above = middle
            quotient = np.int64(ascending.size - low)
            if np.int64(at_most[low]) == prefix:
                scratch[TIES, tie_count] = j
                tie_count += 1
        scratch[QUOTIENTS, j] = quotient
        scratch[CORRECTIONS, j] = 0
        if (np.int64(fair[i]) & signless) >= open_threshold:
            scratch[OPENED, open_count] = j
            first_c[open_count] = (np.uint64(fair[i]) >> c_shift) & c_mask
            open_count += 1
    return rare_count, again_count, tie_count, open_count


def _open_counts(extended: np.ndarray, more: np.ndarray, params: np.ndarray, below_thresholds: np.ndarray,
                 tie_by_count: np.ndarray, top_by_count: np.ndarray, scratch: np.ndarray) -> tuple[int, int]:
    """For the opened draws (C not proved 0): their uniform's first 64 bits, C's first bits
    (``extended``, as :func:`_add_round_draws` left them) followed by the top bits of a fresh
    word each (``more``), into ``extended``; the count of ``below_thresholds`` below each into
    row ``COUNTS`` of ``scratch`` (numpy's ``searchsorted``, left), and the places of those equal
    to the threshold they may tie with (``tie_by_count``: more bits decide them) into ``TIES``.
    Without a tie, :func:`_open_tops` follows in the same call. Returns how many ties there are
    and what :func:`_open_tops` returns (-1 when it is left to the caller, after the ties)."""
    c_bits = np.uint64(params[C_BITS])
    up = np.uint64(64) - c_bits
    tie_count = 0
    for k in range(extended.size):
        uniform = (extended[k] << up) | (more[k] >> c_bits)
        extended[k] = uniform
        low, high = 0, below_thresholds.size
        while low < high:
            middle = (low + high) >> 1
            if below_thresholds[middle] < uniform:
                low = middle + 1
            else:
                high = middle
        scratch[COUNTS, k] = low
        if tie_by_count[low] == uniform:
            scratch[TIES, tie_count] = k
            tie_count += 1
    if tie_count:
        return tie_count, -1
    return 0, _open_tops(top_by_count, scratch, extended.size)


def _open_tops(top_by_count: np.ndarray, scratch: np.ndarray, open_count: int) -> int:
    """C's highest set bit (``top_by_count`` of each opened draw's count in row ``COUNTS``) as the
    correction of its rare draw (row ``CORRECTIONS``), and the places among the opened draws of
    those with bits below it to decide (a count above 1) into row ``LOWER``; returns how many."""
    lower_count = 0
    for k in range(open_count):
        count = scratch[COUNTS, k]
        scratch[CORRECTIONS, scratch[OPENED, k]] = np.int64(top_by_count[count])
        if count > 1:
            scratch[LOWER, lower_count] = k
            lower_count += 1
    return lower_count


def _lower_rows(words: np.ndarray, lower_by_count: np.ndarray, scratch: np.ndarray) -> int:
    """Of the opened draws in row ``LOWER`` (one fresh word each, ``words``), the rows of those
    whose word is not below ``R(top, 0)`` (``lower_by_count`` of their count: C has more set
    bits, followed down in Python) into row ``TIES``; returns how many."""
    row_count = 0
    for row in range(words.size):
        if words[row] >= lower_by_count[scratch[COUNTS, scratch[LOWER, row]]]:
            scratch[TIES, row_count] = row
            row_count += 1
    return row_count


def _add_rare_draws(part: np.ndarray, fair: np.ndarray, high: np.ndarray, params: np.ndarray, scratch: np.ndarray,
                    rare_count: int) -> int:
    """Add the rare draws (row ``RARE``) once their V (``QUOTIENTS``) and C (``CORRECTIONS``,
    whose set bits clear L's) are decided; the "-0" ones go to row ``LOWER`` (their count is
    returned). L's digits as in :func:`_add_common_draws`."""
    low_bits, sign_shift = params[LOW_BITS], params[SIGN_SHIFT]
    fair_digits, high_mask = params[FAIR_DIGITS], params[HIGH_MASK]
    low_mask = (np.int64(1) << fair_digits) - 1
    again_count = 0
    for j in range(rare_count):
        i = scratch[RARE, j]
        word = np.int64(fair[i])
        negative = (word >> sign_shift) & 1
        digits = word & low_mask
        if high_mask:
            digits |= (np.int64(high[i]) & high_mask) << fair_digits
        remainder = digits & ~scratch[CORRECTIONS, j]
        magnitude = (scratch[QUOTIENTS, j] << low_bits) | remainder
        if magnitude == 0 and negative:
            scratch[LOWER, again_count] = i
            again_count += 1
            continue
        part[i] += float(magnitude * (1 - 2 * negative))
    return again_count


def _checked_sum(cells: np.ndarray) -> float:
    """The sum of ``cells``, or -1.0 if one of them is negative, fractional or NaN (an
    infinity gives an infinite sum). Summed in any order (fastmath's reassociation, which
    vectorises the loop): non-negative integers add exactly below 2**53, and a sum that
    reaches 2**53 in one order does in every order (rounding is monotone)."""
    total = 0.0
    bad = False
    for k in range(cells.size):
        value = cells[k]
        total += value
        bad |= (value < 0.0) | (math.floor(value) != value)
    return -1.0 if bad else total


def _checked_padding(cells: np.ndarray, padded: np.ndarray) -> float:
    """:func:`_checked_sum` of ``cells`` (rows), which are copied into the first columns of
    ``padded``'s rows, the rest of each row set to zero: one read of the counts."""
    count, width = cells.shape
    total = 0.0
    bad = False
    for r in range(count):
        source = cells[r]
        target = padded[r]
        row_total = 0.0
        for k in range(width):
            value = source[k]
            row_total += value
            bad |= (value < 0.0) | (math.floor(value) != value)
            target[k] = value
        for k in range(width, target.size):
            target[k] = 0.0
        total += row_total
    return -1.0 if bad else total


def _nominal_numerators(
    leaves: np.ndarray, out: np.ndarray, parent: np.ndarray, fanout: np.ndarray, first_child: np.ndarray,
    leaf_row: np.ndarray, divisors_rows: np.ndarray, divisors_columns: np.ndarray, limit_bits: int,
) -> bool:
    """:meth:`~privelet_gui.engine.nominal.NominalTransform.numerators` of counts along the middle
    axis of ``leaves`` (outer positions, leaves in leaf order, inner positions: the array as it
    is, no transposing copy) into ``out`` (nodes in level order, where children follow their
    parent, then the outer and inner positions: numpy's layout). For each outer position, first
    each internal node's leaf-sum, bottom-up; then each node's ``f leafsum(N) - leafsum(parent)``,
    the deepest first, so that a parent's row still holds its leaf-sum when its children read it.
    ``leaf_row[node]``: the node's row of ``leaves``, -1 for an internal node. (Whole rows at a
    time: strips of columns measured slower on rows of 1024, whose 8 KiB stride maps a strip's
    rows to the same cache sets.)

    With ``divisors_rows`` (not empty; one per row of ``out``: node, then outer position) each
    outer position's numerators are then taken to grid units as :func:`_grid_units` does, while
    they are in the cache, if their magnitudes are below the limit whose float64 bits are
    ``limit_bits``; the first that is not stops it, returning False (``out`` is then in part
    divided: the caller starts again without). Returns True otherwise."""
    for outer in range(leaves.shape[0]):
        if not _outer_numerators(leaves[outer], out, outer, parent, fanout, first_child, leaf_row, divisors_rows,
                                 divisors_columns, limit_bits):
            return False
    return True


def _outer_numerators(leaves: np.ndarray, out: np.ndarray, outer: int, parent: np.ndarray, fanout: np.ndarray,
                      first_child: np.ndarray, leaf_row: np.ndarray, divisors_rows: np.ndarray,
                      divisors_columns: np.ndarray, limit_bits: int) -> bool:
    """:func:`_nominal_numerators` of one outer position: its ``leaves`` (a row per leaf) into
    ``out[:, outer]``. (Compiled into its callers.)"""
    count = out.shape[0]
    outers = out.shape[1]
    for node in range(count - 1, -1, -1):
        children = fanout[node]
        if children == 0:
            continue
        first = first_child[node]
        target = out[node, outer]
        for child in range(first, first + children):
            row = leaf_row[child]
            source = leaves[row] if row >= 0 else out[child, outer]
            if child == first:
                for k in range(target.size):
                    target[k] = source[k]
            else:
                for k in range(target.size):
                    target[k] += source[k]
    if leaf_row[0] >= 0:  # the root is the only leaf
        for k in range(out.shape[2]):
            out[0, outer, k] = leaves[0, k]
    for node in range(count - 1, 0, -1):
        above = parent[node]
        scale = float(fanout[above])
        row = leaf_row[node]
        own = leaves[row] if row >= 0 else out[node, outer]
        target = out[node, outer]
        sums = out[above, outer]
        for k in range(target.size):
            target[k] = scale * own[k] - sums[k]
    if divisors_rows.size:
        largest = np.uint64(0)
        for node in range(count):
            largest = _largest_magnitude_bits(out[node, outer].view(np.uint64), largest)
        if not largest < limit_bits:
            return False
        for node in range(count):
            _row_to_units(out[node, outer], divisors_rows[node * outers + outer], divisors_columns)
    return True


def _haar_rows_forward(
    rows: np.ndarray, out: np.ndarray, levels: int, coarse: int, divisors: np.ndarray, head_divisors: np.ndarray,
    rint: bool,
) -> None:
    """:meth:`~privelet_gui.engine.haar.HaarTransform.rows_numerators` of counts: each row's
    pair differences of levels ``levels`` down to 1 into the flat ``out`` in the level-major
    layout (level l's details of row r at ``R 2**(l - 1) + r 2**(l - 1)`` above level
    ``coarse``, at ``r 2**coarse + 2**(l - 1)`` in the head, the row's total at ``r 2**coarse``).
    With ``divisors`` (not empty: level l's of row r at ``[l - coarse - 1, r]``) each difference
    above ``coarse`` is divided as it is written, and rounded to the nearest integer (ties to
    even) with ``rint``; so is each value of the head with ``head_divisors`` (not empty: row r's
    at ``[r, j]``, j its place in the row's head). (The numpy code does the head as a matrix
    product: on counts, the same exact integers.)"""
    count, width = rows.shape
    sums = np.empty(width)
    for r in range(count):
        _haar_row_forward(rows[r], sums, out, count, r, levels, coarse, divisors, head_divisors, rint)


def _haar_row_forward(
    values: np.ndarray, sums: np.ndarray, out: np.ndarray, count: int, r: int, levels: int, coarse: int,
    divisors: np.ndarray, head_divisors: np.ndarray, rint: bool,
) -> None:
    """Row ``r`` of :func:`_haar_rows_forward` for a tile of ``count`` rows: ``values`` (the row,
    read only) through every level, the finest first, with ``sums`` (as long as the row) for
    the pair sums; its divisors are column ``r`` of ``divisors`` and row ``r`` of
    ``head_divisors``. (Compiled into the loops that call it: see :func:`_compiled_kernels`.)"""
    head_width = 1 << coarse
    divide = divisors.shape[0] > 0
    divide_head = head_divisors.shape[0] > 0
    size = values.size
    # the finer levels: each level's sums into the other half of ``sums`` than it reads
    # (:func:`_pair_level`), dividing by 1 where there is no divisor (which is exact)
    spare, other = sums[: size // 2], sums[size // 2 :]
    for level in range(levels, coarse, -1):
        half = size // 2
        details = count * half + r * half
        divisor = divisors[level - coarse - 1, r] if divide else 1.0
        _pair_level(values, spare[:half], out[details : details + half], divisor, rint and divide)
        values = spare[:half]
        spare, other = other, spare
        size = half
    for _ in range(coarse):  # the head: a few pairs a row, summed in place
        half = size // 2
        details = r * head_width + half
        for k in range(half):
            left = values[2 * k]
            right = values[2 * k + 1]
            difference = left - right
            if divide_head:
                difference = difference / head_divisors[r, half + k]
                if rint:
                    difference = np.rint(difference)
            out[details + k] = difference
            spare[k] = left + right  # k <= 2k: a pair is read before its sum overwrites it
        values = spare[:half]
        size = half
    total = values[0]
    if divide_head:
        total = total / head_divisors[r, 0]
        if rint:
            total = np.rint(total)
    out[r * head_width] = total


def _pair_level(values: np.ndarray, sums: np.ndarray, details: np.ndarray, divisor: float, rint: bool) -> None:
    """One finer Haar level forward: each pair of ``values``' difference divided by ``divisor``
    (and rounded to the nearest integer, ties to even, with ``rint``) into ``details``, its sum
    into ``sums`` (another array: a loop that reads and writes the same row is not vectorised;
    compiled on its own, where numba vectorises it, and called: see :func:`_compiled_kernels`)."""
    for k in range(sums.size):
        left = values[2 * k]
        right = values[2 * k + 1]
        difference = (left - right) / divisor
        details[k] = np.rint(difference) if rint else difference
        sums[k] = left + right


def _nominal_leaf_sums(
    leaves: np.ndarray, sums: np.ndarray, fanout: np.ndarray, first_child: np.ndarray, leaf_row: np.ndarray,
    internal_row: np.ndarray,
) -> float:
    """The first half of :func:`_nominal_haar_numerators`: the leaf-sums of the internal nodes
    (``sums``: internal nodes in level order, ``internal_row[node]`` each, then the outer
    positions, then the padded lines: zero beyond the counts' width) of ``leaves`` (outer
    positions, leaves in leaf order, a line of counts each), bottom-up; and :func:`_checked_sum`
    of the counts, read once: their total (the root's leaf-sums added up), or -1.0 if one is
    negative, fractional or NaN. The root is an internal node."""
    width = leaves.shape[2]
    padded = sums.shape[2]
    total = 0.0
    bad = False
    for outer in range(leaves.shape[0]):
        for node in range(fanout.size - 1, -1, -1):  # children after their parent: bottom-up
            children = fanout[node]
            if children == 0:
                continue
            target = sums[internal_row[node], outer]
            first = first_child[node]
            for child in range(first, first + children):
                leaf = leaf_row[child]
                if leaf >= 0:
                    counts = leaves[outer, leaf]
                    for k in range(width):
                        value = counts[k]
                        bad |= (value < 0.0) | (math.floor(value) != value)
                        target[k] = value if child == first else target[k] + value
                    if child == first:
                        for k in range(width, padded):
                            target[k] = 0.0
                else:
                    below = sums[internal_row[child], outer]
                    for k in range(padded):
                        target[k] = below[k] if child == first else target[k] + below[k]
        root = sums[0, outer]
        for k in range(padded):
            total += root[k]
    return -1.0 if bad else total


def _nominal_haar_numerators(
    leaves: np.ndarray, sums: np.ndarray, out: np.ndarray, parent: np.ndarray, fanout: np.ndarray,
    leaf_row: np.ndarray, internal_row: np.ndarray, first: int, levels: int, coarse: int, divisors: np.ndarray,
    head_divisors: np.ndarray, rint: bool,
) -> None:
    """A tile of a plane's nominal numerators (the axis before the last) and the Haar
    transform's along its padded lines in one pass: lines ``first`` to ``first + R - 1`` (line
    ``outer * nodes + node``, the plane's C order) into the flat ``out`` in the tile's
    level-major layout of R lines. Each line's nominal numerators ``f leafsum(N) -
    leafsum(parent)`` (the root: its leaf-sum) are formed in a row of their own from the counts
    and :func:`_nominal_leaf_sums`' ``sums``, and go through every Haar level while they are in
    the L1 cache (:func:`_haar_row_forward`, with ``divisors``, ``head_divisors`` and ``rint`` as
    :func:`_haar_rows_forward` takes them). The same exact integers, quotients and roundings as
    :func:`_nominal_numerators` then :func:`_haar_rows_forward` on the padded counts."""
    width = leaves.shape[2]
    padded = sums.shape[2]
    count = out.size // padded
    nodes = parent.size
    row = np.empty(padded)
    sums_row = np.empty(padded)
    for r in range(count):
        outer, node = divmod(first + r, nodes)
        if node == 0:
            own = sums[0, outer]
            for k in range(padded):
                row[k] = own[k]
        else:
            above = sums[internal_row[parent[node]], outer]
            scale = float(fanout[parent[node]])
            leaf = leaf_row[node]
            if leaf >= 0:
                counts = leaves[outer, leaf]
                for k in range(width):
                    row[k] = scale * counts[k] - above[k]
                for k in range(width, padded):  # the padding's zero counts
                    row[k] = scale * 0.0 - above[k]
            else:
                own = sums[internal_row[node], outer]
                for k in range(padded):
                    row[k] = scale * own[k] - above[k]
        _haar_row_forward(row, sums_row, out, count, r, levels, coarse, divisors, head_divisors, rint)


def _haar_rows_inverse(coefficients: np.ndarray, out: np.ndarray, levels: int, coarse: int, factors: np.ndarray) -> None:
    """:meth:`~privelet_gui.engine.haar.HaarTransform.rows_inverse`: each row's values into ``out``
    from the flat level-major ``coefficients``, level by level from the row's base, each level's
    means plus and minus its details (the head's ``coarse`` levels from the row's head; each
    finer detail first multiplied by its level's and row's factor where ``factors`` is not
    empty: level l's of row r at ``[l - coarse - 1, r]``). Each level reads its means from one
    scratch row and writes the next level's to the other (the last to ``out``): a loop that
    reads and writes the same row cannot be vectorised (:func:`_unpair_level`)."""
    count, width_out = out.shape
    means = np.empty(width_out)
    finer = np.empty(width_out)
    for r in range(count):
        _haar_row_inverse(coefficients, out[r], count, r, levels, coarse, factors, means, finer)


def _haar_row_inverse(coefficients: np.ndarray, row: np.ndarray, count: int, r: int, levels: int, coarse: int,
                      factors: np.ndarray, means: np.ndarray, finer: np.ndarray) -> None:
    """Row ``r`` of :func:`_haar_rows_inverse` for a tile of ``count`` rows into ``row``, with
    ``means`` and ``finer`` (each as long as the row) for the levels' means. (Compiled into
    the loops that call it: see :func:`_compiled_kernels`.)"""
    head = 1 << coarse
    scale = factors.shape[0] > 0
    means[0] = coefficients[r * head]
    width = 1
    for level in range(1, levels + 1):
        # a factor of 1 where there is none: multiplying by 1 is exact
        if level <= coarse:
            details = r * head + width
            factor = 1.0
        else:
            details = count * width + r * width
            factor = factors[level - coarse - 1, r] if scale else 1.0
        target = row if level == levels else finer
        _unpair_level(means[:width], coefficients[details : details + width], target[: 2 * width], factor)
        means, finer = finer, means
        width *= 2


def _unpair_level(means: np.ndarray, details: np.ndarray, target: np.ndarray, factor: float) -> None:
    """One finer Haar level inverse: each mean plus and minus its detail times ``factor``, the
    pair into ``target`` (another array than ``means``; compiled on its own, where numba
    vectorises it, and called: see :func:`_compiled_kernels`)."""
    for k in range(means.size):
        mean = means[k]
        detail = details[k] * factor
        target[2 * k] = mean + detail
        target[2 * k + 1] = mean - detail


def _nominal_inverse(
    sums: np.ndarray, out: np.ndarray, group_parent: np.ndarray, group_first: np.ndarray, group_fanout: np.ndarray,
    leaf_row: np.ndarray, shift: np.ndarray, factors_rows: np.ndarray, factors_columns: np.ndarray,
) -> None:
    """:meth:`~privelet_gui.engine.nominal.NominalTransform.inverse` with mean subtraction where
    numpy visits every sibling group in turn: ``sums`` (nodes, then outer and inner positions:
    numpy's layout of the coefficients, and the workspace) top-down, group after group (parents
    first), each child plus ``(parent - sum of the group) / fanout`` with the group summed child
    after child, as numpy's reduction along the first axis sums rows. A leaf's values go to
    ``out`` (outer positions, leaves, inner positions: the values' own layout), whose rows may
    be shorter than ``sums``' (a padded array's first columns: the others are never computed).

    With ``factors_rows`` (not empty; one per row of ``sums``: node, then outer position) each
    outer position's coefficients are first multiplied as :func:`_grid_scale` does, while they
    are in the cache."""
    nodes = np.arange(sums.shape[0])  # each node's row of sums is its own
    for outer in range(out.shape[0]):
        _outer_inverse(sums, outer, nodes, out[outer], group_parent, group_first, group_fanout, leaf_row, shift,
                       factors_rows, factors_columns)


def _outer_inverse(sums: np.ndarray, outer: int, nodes: np.ndarray, leaves: np.ndarray, group_parent: np.ndarray,
                   group_first: np.ndarray, group_fanout: np.ndarray, leaf_row: np.ndarray, shift: np.ndarray,
                   factors_rows: np.ndarray, factors_columns: np.ndarray) -> None:
    """:func:`_nominal_inverse` of one outer position: ``sums[:, outer]`` into ``leaves`` (a row
    per leaf). (Compiled into its callers.)"""
    outers = sums.shape[1]
    if factors_rows.size:
        for node in range(sums.shape[0]):
            _row_scaled(sums[node, outer], factors_rows[node * outers + outer], factors_columns)
    if group_parent.size == 0:  # the root is the only leaf
        for k in range(leaves.shape[1]):
            leaves[0, k] = sums[0, outer, k]
    for group in range(group_parent.size):
        _group_inverse(sums, outer, nodes, leaves, group_parent[group], group_first[group], group_fanout[group],
                       leaf_row, shift, False)


def _rows_nominal_inverse(
    coefficients: np.ndarray, first: int, rows: np.ndarray, slot: np.ndarray, out: np.ndarray, levels: int, coarse: int,
    factors: np.ndarray, group_parent: np.ndarray, group_first: np.ndarray, group_fanout: np.ndarray,
    leaf_row: np.ndarray, done: int,
) -> int:
    """:func:`_haar_rows_inverse` of a tile of a plane of a nominal axis and the rows axis (lines
    ``first`` to ``first + R - 1``, line ``outer * nodes + node``), each line into
    ``rows[slot[node], 0]``, with :func:`_nominal_inverse` of each sibling group (of each
    outer position) done as soon as its last line is, the leaves' values into ``out``.

    ``done`` groups were done by the earlier tiles (all outer positions' groups counted in
    turn); returns how many are done after this one. A group's parent is done before it: in
    level order every node of a level comes after every node of the level above, so a group
    ends after its parent's group. So one group at most is open at a time, and ``rows`` needs a
    row for each internal node and one for each leaf of a group (``slot``): a few hundred KiB
    that stay in the L2 cache, where the whole plane (4.4 MiB a block at Brazil scale) went
    out to memory and was read back. The same operations on the same numbers as the two loops
    one after the other, so the same bits."""
    nodes = leaf_row.size
    groups = group_parent.size
    count = coefficients.size >> levels
    padded = rows.shape[2]
    means = np.empty(padded)
    finer = np.empty(padded)
    shift = np.empty(out.shape[2])
    for r in range(count):
        line = first + r
        outer = line // nodes
        node = line - outer * nodes
        _haar_row_inverse(coefficients, rows[slot[node], 0], count, r, levels, coarse, factors, means, finer)
        while done < (outer + 1) * groups:
            group = done - outer * groups
            start = group_first[group]
            if start + group_fanout[group] - 1 > node:  # its last line is still to come
                break
            _group_inverse(rows, 0, slot, out[outer], group_parent[group], start, group_fanout[group], leaf_row, shift,
                           True)
            done += 1
    _store_fence()
    return done


def _group_inverse(rows: np.ndarray, column: int, slot: np.ndarray, leaves: np.ndarray, parent: int, start: int,
                   fanout: int, leaf_row: np.ndarray, shift: np.ndarray, stream: bool) -> None:
    """One sibling group of the nominal inverse, node ``n``'s values in ``rows[slot[n], column]``:
    each child (``start`` to ``start + fanout - 1``) plus ``(parent - sum of the group) /
    fanout``, the group summed child after child (as numpy's reduction along the first axis of
    rows of two or more values does); a leaf's values into its row of ``leaves``, an internal
    node's in place. With ``stream`` the leaves' values go past the CPU's caches
    (:func:`_stream_store`; the caller fences them): a Privelet+ release at Brazil scale then
    took 2-3% less on one thread (within the noise on two). (Compiled into its callers.)"""
    width = shift.size
    above = rows[slot[parent], column]
    first = rows[slot[start], column]
    for k in range(width):
        shift[k] = first[k]
    for child in range(start + 1, start + fanout):
        row = rows[slot[child], column]
        for k in range(width):
            shift[k] += row[k]
    divisor = float(fanout)
    for k in range(width):
        shift[k] = (above[k] - shift[k]) / divisor
    for child in range(start, start + fanout):
        row = rows[slot[child], column]
        leaf = leaf_row[child]
        if leaf >= 0 and stream:
            target = leaves[leaf]
            for k in range(width):
                _stream_store(target, k, row[k] + shift[k])
        else:
            target = leaves[leaf] if leaf >= 0 else row
            for k in range(width):
                target[k] = row[k] + shift[k]


def _count_cells(flat: np.ndarray, counts: np.ndarray, first: int) -> None:
    """One more in ``counts`` (cells ``first`` to ``first + counts.size - 1`` of the frequency
    matrix) for every cell index of ``flat`` in that range. Threads that take disjoint ranges
    each read every index and count their own cells: no two write the same cell (see
    :meth:`~.counting.FrequencyCounter._count_in_parts`). Each count is a sum of ones: exact,
    whatever the order."""
    stop = first + counts.size
    for row in range(flat.size):
        cell = flat[row]
        if first <= cell < stop:
            counts[cell - first] += 1.0


def _haar_pair_lines(values: np.ndarray, sums: np.ndarray, finest: bool, pair: int, mid: int,
                     details: np.ndarray) -> None:
    """The ``mid`` lines of pair ``pair`` of a Haar level (of ``values`` at the ``finest`` level,
    else of ``sums``): their differences into the rows of ``details``, their sums into the
    pair's rows of ``sums`` (a row may be read and then written: each value is read first).
    (Compiled into its callers, as the next two are.)"""
    for line in range(mid):
        left = values[2 * pair * mid + line] if finest else sums[2 * pair * mid + line]
        right = values[(2 * pair + 1) * mid + line] if finest else sums[(2 * pair + 1) * mid + line]
        detail = details[line]
        above = sums[pair * mid + line]
        for k in range(detail.size):
            a = left[k]
            b = right[k]
            detail[k] = a - b
            above[k] = a + b


def _haar_last_lines(values: np.ndarray, sums: np.ndarray, finest: bool, filled: int, mid: int,
                     details: np.ndarray) -> None:
    """The ``mid`` lines of the last of ``filled`` (odd) values of a Haar level, whose right
    sibling is all padding: their details and their parent's sums are their own values."""
    pairs = filled // 2
    for line in range(mid):
        last = values[(filled - 1) * mid + line] if finest else sums[(filled - 1) * mid + line]
        for k in range(last.size):
            details[line, k] = last[k]
            sums[pairs * mid + line, k] = last[k]


def _haar_unpair(mean: np.ndarray, detail: np.ndarray, target: np.ndarray, left: bool) -> None:
    """One line of a value of a Haar level from its parent's ``mean`` and ``detail``: ``mean +
    detail`` for a ``left`` child, ``mean - detail`` for a right one."""
    if left:
        for k in range(target.size):
            target[k] = mean[k] + detail[k]
    else:
        for k in range(target.size):
            target[k] = mean[k] - detail[k]


def _haar_kept_numerators(values: np.ndarray, out: np.ndarray, level_counts: np.ndarray, sums: np.ndarray,
                          mid: int) -> None:
    """:meth:`~privelet_gui.engine.haar.HaarTransform.kept_numerators` of counts along the rows
    of ``values``: value i's columns are its rows ``i mid .. i mid + mid - 1`` (rows of any
    stride: a big block's pencil read in place), and so are coefficient i's in ``out`` and
    sum i's in ``sums``. Every level's pair differences, the finest first, each level's subtree
    sums into ``sums`` (scratch, half as many values as ``values``; a pair is read before its
    sum overwrites a row), then the base. The numpy code does the coarse levels as one matrix
    product; on counts both are the same exact integers."""
    levels = level_counts.size
    columns = values.shape[1]
    filled = values.shape[0] // mid
    start = out.shape[0] // mid
    for level in range(levels, 0, -1):
        kept = level_counts[level - 1]
        start -= kept
        pairs = filled // 2
        for pair in range(pairs):
            _haar_pair_lines(values, sums, level == levels, pair, mid, out[(start + pair) * mid : (start + pair + 1) * mid])
        if filled % 2:  # the last subtree's right sibling is all padding
            _haar_last_lines(values, sums, level == levels, filled, mid, out[(start + pairs) * mid : (start + pairs + 1) * mid])
        filled = kept
    for line in range(mid):
        base = values[line] if levels == 0 else sums[line]
        for k in range(columns):
            out[line, k] = base[k]


def _haar_kept_inverse(
    coefficients: np.ndarray, means: np.ndarray, out: np.ndarray, counts: np.ndarray, starts: np.ndarray,
    scratch: np.ndarray, mid: int,
) -> None:
    """:meth:`~privelet_gui.engine.haar.HaarTransform.kept_inverse` along rows, each value (mean,
    coefficient) ``mid`` rows as in :func:`_haar_kept_numerators` (``out``'s of any stride: a big
    block's pencil written in place): from the base ``means`` (level 0), each level's
    values, ``counts[i]`` of them, are its means plus (even) and minus (odd) its details (the
    coefficients from ``starts[i]``); the finest into ``out``, the others into ``scratch`` (two
    halves, used in turn)."""
    half = scratch.shape[0] // 2
    levels = counts.size
    for level in range(levels):
        count = counts[level]
        start = starts[level]
        for value in range(count):
            for line in range(mid):
                mean = (means[value // 2 * mid + line] if level == 0
                        else scratch[(level - 1) % 2 * half + value // 2 * mid + line])
                target = out[value * mid + line] if level == levels - 1 else scratch[level % 2 * half + value * mid + line]
                _haar_unpair(mean, coefficients[(start + value // 2) * mid + line], target, value % 2 == 0)


def _pencil_units(values: np.ndarray, units: np.ndarray, level_counts: np.ndarray, mid: int, parent: np.ndarray,
                  fanout: np.ndarray, first_child: np.ndarray, leaf_row: np.ndarray, divisors_rows: np.ndarray,
                  divisors_columns: np.ndarray, limit_bits: int) -> bool:
    """A big block's pencil along a Haar axis, then a nominal one (``mid`` leaves), to grid
    units: :func:`_haar_kept_numerators` of ``values`` (rows ``value * mid + line``, any stride:
    the pencil in place), each coefficient's ``mid`` lines taken by :func:`_nominal_numerators`
    (with the divisors) into ``units`` (nominal coefficient, Haar coefficient, column: numpy's
    layout, in which the noise is drawn) as soon as they are formed, from a buffer that stays in
    the cache: the Haar coefficients of the whole pencil (2.8 MiB at Brazil scale) are never
    written out and read back. The same operations on the same numbers as the two loops, so the
    same bits; returns False where a numerator is not below the limit (``units`` then in part
    written)."""
    levels = level_counts.size
    columns = values.shape[1]
    filled = values.shape[0] // mid
    sums = np.empty(((filled + 1) // 2 * mid, columns))
    lines = np.empty((mid, columns))  # one coefficient's lines
    start = units.shape[1]
    for level in range(levels, 0, -1):
        kept = level_counts[level - 1]
        start -= kept
        pairs = filled // 2
        for pair in range(pairs):
            _haar_pair_lines(values, sums, level == levels, pair, mid, lines)
            if not _outer_numerators(lines, units, start + pair, parent, fanout, first_child, leaf_row, divisors_rows,
                                     divisors_columns, limit_bits):
                return False
        if filled % 2:  # the last subtree's right sibling is all padding
            _haar_last_lines(values, sums, level == levels, filled, mid, lines)
            if not _outer_numerators(lines, units, start + pairs, parent, fanout, first_child, leaf_row, divisors_rows,
                                     divisors_columns, limit_bits):
                return False
        filled = kept
    return _outer_numerators(sums[:mid], units, 0, parent, fanout, first_child, leaf_row, divisors_rows,
                             divisors_columns, limit_bits)


def _pencil_inverse(units: np.ndarray, values: np.ndarray, group_parent: np.ndarray, group_first: np.ndarray,
                    group_fanout: np.ndarray, leaf_row: np.ndarray, factors_rows: np.ndarray,
                    factors_columns: np.ndarray, counts: np.ndarray, starts: np.ndarray, mid: int) -> None:
    """Undo :func:`_pencil_units` on the noisy ``units`` (the workspace): :func:`_haar_kept_inverse`
    into ``values`` (``counts`` and ``starts`` as there), each coefficient's ``mid`` lines made
    by :func:`_nominal_inverse` (with the factors) into a buffer as that loop first reads them.
    The same bits as the two loops one after the other."""
    columns = values.shape[1]
    nodes = np.arange(units.shape[0])
    shift = np.empty(columns)
    means = np.empty((mid, columns))
    detail = np.empty((mid, columns))
    _outer_inverse(units, 0, nodes, means, group_parent, group_first, group_fanout, leaf_row, shift, factors_rows,
                   factors_columns)
    coarser = 0  # the most values of a level but the finest (those go to ``values``)
    for level in range(counts.size - 1):
        coarser = max(coarser, counts[level])
    half = coarser * mid
    scratch = np.empty((2 * half, columns))
    levels = counts.size
    for level in range(levels):
        count = counts[level]
        start = starts[level]
        for value in range(count):
            if value % 2 == 0:
                _outer_inverse(units, start + value // 2, nodes, detail, group_parent, group_first, group_fanout,
                               leaf_row, shift, factors_rows, factors_columns)
            for line in range(mid):
                mean = means[line] if level == 0 else scratch[(level - 1) % 2 * half + value // 2 * mid + line]
                target = values[value * mid + line] if level == levels - 1 else scratch[level % 2 * half + value * mid + line]
                _haar_unpair(mean, detail[line], target, value % 2 == 0)


# float64 bits: those of infinity, and all but the sign
_INFINITY_BITS = np.uint64(0x7FF0000000000000)
_MAGNITUDE_BITS = np.uint64(0x7FFFFFFFFFFFFFFF)


def limit_bits(limit: float | None) -> np.uint64:
    """``limit`` as the grid loops take it (the float64 bits they compare magnitudes' bits with);
    None, no limit, as infinity's."""
    return np.float64(math.inf if limit is None else limit).view(np.uint64)


def _grid_units(rows: np.ndarray, bits: np.ndarray, divisors_rows: np.ndarray, divisors_columns: np.ndarray,
                limit_bits: int) -> bool:
    """Each ``rows[r, c]`` divided by ``divisors_rows[r] * divisors_columns[c]`` and rounded to
    the nearest integer (ties to even): a big block's pencil in grid units; but only if every
    ``|rows[r, c]|`` is below the limit whose float64 bits are ``limit_bits`` (one division then
    rounds exactly; those of infinity where that is known), else nothing is changed. Returns
    whether they were divided. The magnitudes are compared as the bits of ``rows`` (``bits``:
    the same memory) without their sign, whose order is the numbers' own: an integer maximum,
    which vectorises (a float one does not without fastmath; 0.16 against 0.38 ms for numpy's
    max and min over a pencil of 2**19 coefficients here)."""
    count = rows.shape[0]
    if limit_bits < _INFINITY_BITS:
        largest = np.uint64(0)
        for r in range(count):
            largest = _largest_magnitude_bits(bits[r], largest)
        if not largest < limit_bits:
            return False
    for r in range(count):
        _row_to_units(rows[r], divisors_rows[r], divisors_columns)
    return True


def _grid_scale(rows: np.ndarray, factors_rows: np.ndarray, factors_columns: np.ndarray) -> None:
    """Each ``rows[r, c]`` multiplied by ``factors_rows[r]``, then by ``factors_columns[c]``."""
    for r in range(rows.shape[0]):
        _row_scaled(rows[r], factors_rows[r], factors_columns)


# One row's share of the grid loops, also run by the nominal loops on the rows they have just
# formed (the same operations, so the same bits):
def _largest_magnitude_bits(bits: np.ndarray, largest: np.uint64) -> np.uint64:
    """``largest`` or the largest magnitude among the float64 bits ``bits``, as bits."""
    for c in range(bits.size):
        largest = max(largest, bits[c] & _MAGNITUDE_BITS)
    return largest


def _row_to_units(row: np.ndarray, divisor: float, divisors_columns: np.ndarray) -> None:
    """Each ``row[c]`` divided by ``divisor * divisors_columns[c]`` and rounded to the nearest integer."""
    for c in range(row.size):
        row[c] = np.rint(row[c] / (divisor * divisors_columns[c]))


def _row_scaled(row: np.ndarray, factor: float, factors_columns: np.ndarray) -> None:
    """Each ``row[c]`` multiplied by ``factor``, then by ``factors_columns[c]``."""
    for c in range(row.size):
        row[c] = row[c] * factor * factors_columns[c]


# randomgen's AESCounter state (its C struct ``aesctr_state_t``, read as 64-bit words): four
# 128-bit counters (the next four blocks'), the 11 round keys, the 64-byte buffer of the last
# four blocks, and the byte offset of the buffer's next word (64: used up).
AES_COUNTERS, AES_KEYS, AES_BUFFER, AES_OFFSET, AES_STATE_WORDS = 0, 8, 30, 38, 39
_AES_GROUP_WORDS = 8  # the four blocks randomgen encrypts at a time, as words
_AES_BULK_BLOCKS = 16  # blocks per call on the bulk of a request (8 at once with VAES, else 4 by 4)


def _aes_blocks(keys: int, low: int, high: int, out: int) -> None:
    """AES-128 of the four counter blocks ``c`` to ``c + 3`` (c = ``high`` 2**64 + ``low``, each
    block the counter's two words, low first) under the 11 round keys at address ``keys``, the
    64 bytes to address ``out``. Compiled as an intrinsic of the CPU's AES instructions
    (:func:`_aes_intrinsic`) before the loop that calls it; never run as Python."""
    raise NotImplementedError("AES rounds run compiled only")


def _aes_bulk(keys: int, low: int, high: int, out: int) -> None:
    """:func:`_aes_blocks` of ``_AES_BULK_BLOCKS`` blocks (256 bytes)."""
    raise NotImplementedError("AES rounds run compiled only")


def _aes_counter_words(state: np.ndarray, out: np.ndarray) -> None:
    """The next ``out.size`` words of the AESCounter whose C state ``state`` is (the words named
    ``AES_*``), into ``out``, and the state moved on past them: what its ``random_raw`` gives and
    does, word for word. The buffer's words first; then 16 blocks, then four, at a time straight
    into ``out``; the last few from a refilled buffer. Many blocks in flight keep the AES units
    busy (randomgen's loop takes one word per call; here 0.6 ns a word with VAES, 1.0 without,
    against its 2.6)."""
    count = out.size
    used = state[AES_OFFSET] // 8
    done = 0
    while used < _AES_GROUP_WORDS and done < count:
        out[done] = state[AES_BUFFER + used]
        used += 1
        done += 1
    low, high = state[AES_COUNTERS], state[AES_COUNTERS + 1]
    keys = state.ctypes.data + 8 * AES_KEYS
    while done < count:
        blocks = np.uint64(4)
        if count - done >= 2 * _AES_BULK_BLOCKS:
            _aes_bulk(keys, low, high, out.ctypes.data + 8 * done)
            blocks = np.uint64(_AES_BULK_BLOCKS)
            done += 2 * _AES_BULK_BLOCKS
        elif count - done >= _AES_GROUP_WORDS:
            _aes_blocks(keys, low, high, out.ctypes.data + 8 * done)
            done += _AES_GROUP_WORDS
        else:  # the last few words from a refilled buffer, the rest of it left for later
            _aes_blocks(keys, low, high, state.ctypes.data + 8 * AES_BUFFER)
            used = count - done
            out[done:] = state[AES_BUFFER : AES_BUFFER + used]
            done = count
        low += blocks
        if low < blocks:  # the low word wrapped: carry
            high += np.uint64(1)
    for block in range(4):  # each counter as randomgen keeps them: c + block
        block_low = low + np.uint64(block)
        state[AES_COUNTERS + 2 * block] = block_low
        state[AES_COUNTERS + 2 * block + 1] = high + np.uint64(1 if block_low < low else 0)
    state[AES_OFFSET] = 8 * used


def _aes_intrinsic(blocks: int, wide: bool) -> Any:
    """:func:`_aes_blocks` of ``blocks`` blocks as numba's intrinsic, with unaligned loads and
    stores (numba is imported): LLVM's ``aesenc`` and ``aesenclast`` on four blocks at a time,
    or with ``wide`` (VAES) on two blocks per 256-bit register, all of them at once."""
    from llvmlite import ir
    from numba.core import cgutils, types
    from numba.extending import intrinsic

    lanes = 2 if wide else 1
    in_flight = blocks if wide else 4  # blocks whose rounds are interleaved
    suffix = ".256" if wide else ""

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        keys_address, low, high, out_address = args
        word, index = ir.IntType(64), ir.IntType(32)
        key_type, vector = ir.VectorType(word, 2), ir.VectorType(word, 2 * lanes)
        round_type = ir.FunctionType(vector, [vector, vector])
        aes_round = cgutils.get_or_insert_function(builder.module, round_type, "llvm.x86.aesni.aesenc" + suffix)
        aes_last = cgutils.get_or_insert_function(builder.module, round_type, "llvm.x86.aesni.aesenclast" + suffix)
        keys_pointer = builder.inttoptr(keys_address, key_type.as_pointer())
        keys = []
        for r in range(11):
            key = builder.load(builder.gep(keys_pointer, [ir.Constant(word, r)]), align=1)
            if wide:  # the round key in both lanes
                key = builder.shuffle_vector(key, key, ir.Constant(ir.VectorType(index, 4), [0, 1, 0, 1]))
            keys.append(key)
        out_pointer = builder.inttoptr(out_address, vector.as_pointer())
        for first in range(0, blocks, in_flight):
            work = []
            for start in range(first, first + in_flight, lanes):
                counters = ir.Constant(vector, ir.Undefined)
                for lane in range(lanes):
                    block_low = builder.add(low, ir.Constant(word, start + lane))
                    block_high = builder.add(high, builder.zext(builder.icmp_unsigned("<", block_low, low), word))
                    counters = builder.insert_element(counters, block_low, ir.Constant(index, 2 * lane))
                    counters = builder.insert_element(counters, block_high, ir.Constant(index, 2 * lane + 1))
                work.append(builder.xor(counters, keys[0]))
            for key in keys[1:10]:
                work = [builder.call(aes_round, [value, key]) for value in work]
            for offset, value in enumerate(work):
                target = builder.gep(out_pointer, [ir.Constant(word, first // lanes + offset)])
                builder.store(builder.call(aes_last, [value, keys[10]]), target, align=1)
        return context.get_dummy_value()

    def typer(typingctx: Any, keys: Any, low: Any, high: Any, out: Any) -> Any:
        return types.void(types.uintp, types.uint64, types.uint64, types.uintp), codegen

    typer.__name__ = f"_aes_{blocks}_blocks{'_wide' if wide else ''}"  # numba names the intrinsic by its function
    return intrinsic(typer)


def _aes_features() -> tuple[bool, bool]:
    """Whether this CPU runs x86's AES instructions, and their 256-bit forms (VAES with AVX2):
    numba's LLVM compiles for the host CPU."""
    from llvmlite import binding

    if platform.machine().lower() not in ("x86_64", "amd64"):
        return False, False
    features = binding.get_host_cpu_features()
    aes = bool(features.get("aes"))
    return aes, aes and bool(features.get("vaes")) and bool(features.get("avx2"))


@dataclass(frozen=True)
class SamplerLoops:
    """The exact sampler's compiled loops (numba's dispatchers, typed by their signatures in _LOOPS)."""

    add_round: Callable[..., Any]  # _add_round_draws
    open_counts: Callable[..., Any]  # _open_counts
    open_tops: Callable[..., Any]  # _open_tops
    lower_rows: Callable[..., Any]  # _lower_rows
    add_rare: Callable[..., Any]  # _add_rare_draws


@dataclass(frozen=True)
class HaarRowsLoops:
    """The Haar rows layout's compiled loops."""

    forward: Callable[..., Any]  # _haar_rows_forward
    inverse: Callable[..., Any]  # _haar_rows_inverse
    nominal_inverse: Callable[..., Any]  # _rows_nominal_inverse


@dataclass(frozen=True)
class BlockLoops:
    """The compiled loops of a block's checks and transforms (those the Haar rows loops do not do)."""

    checked_sum: Callable[..., Any]  # _checked_sum
    checked_padding: Callable[..., Any]  # _checked_padding
    nominal_leaf_sums: Callable[..., Any]  # _nominal_leaf_sums
    nominal_haar_numerators: Callable[..., Any]  # _nominal_haar_numerators
    nominal_numerators: Callable[..., Any]  # _nominal_numerators
    nominal_inverse: Callable[..., Any]  # _nominal_inverse
    haar_kept_numerators: Callable[..., Any]  # _haar_kept_numerators
    haar_kept_inverse: Callable[..., Any]  # _haar_kept_inverse
    pencil_units: Callable[..., Any]  # _pencil_units
    pencil_inverse: Callable[..., Any]  # _pencil_inverse


@dataclass(frozen=True)
class GridLoops:
    """The compiled loops to and from the noise grid of a big block's pencil."""

    units: Callable[..., Any]  # _grid_units
    scale: Callable[..., Any]  # _grid_scale


@dataclass(frozen=True)
class _Kernels:
    sampler: SamplerLoops
    haar_rows: HaarRowsLoops
    block: BlockLoops
    grid: GridLoops
    aes_words: Callable[..., Any] | None  # _aes_counter_words, where the CPU has AES instructions
    count_cells: Callable[..., Any]  # _count_cells


_READ_ONLY_1D = "Array(float64, 1, 'C', readonly=True)"
_READ_ONLY_2D = "Array(float64, 2, 'C', readonly=True)"
_READ_ONLY_3D = "Array(float64, 3, 'C', readonly=True)"
_READ_ONLY_ROWS = "Array(float64, 2, 'A', readonly=True)"
# Each loop with its signatures; the sampler's for both word sizes of the fair words (32 bits
# up to M = 31, else 64). All are compiled at once, in this order (that of SamplerLoops',
# HaarRowsLoops', BlockLoops' and GridLoops' fields).
_LOOPS: list[tuple[Callable[..., object], list[str]]] = [
    (_add_round_draws, [
        f"UniTuple(int64, 4)(float64[::1], {fair}[::1], uint8[::1], uint32[::1], uint32[::1], uint32[::1], "
        "uint32[::1], int64[::1], int64[:, ::1], uint64[::1])"
        for fair in ("uint32", "uint64")
    ]),
    (_open_counts, ["UniTuple(int64, 2)(uint64[::1], uint64[::1], int64[::1], uint64[::1], uint64[::1], uint64[::1], "
                    "int64[:, ::1])"]),
    (_open_tops, ["int64(uint64[::1], int64[:, ::1], int64)"]),
    (_lower_rows, ["int64(uint64[::1], uint64[::1], int64[:, ::1])"]),
    (_add_rare_draws, [f"int64(float64[::1], {fair}[::1], uint8[::1], int64[::1], int64[:, ::1], int64)"
                       for fair in ("uint32", "uint64")]),
    (_haar_rows_forward, ["void(float64[:, ::1], float64[::1], int64, int64, float64[:, ::1], float64[:, ::1], boolean)"]),
    (_haar_rows_inverse, ["void(float64[::1], float64[:, ::1], int64, int64, float64[:, ::1])"]),
    (_rows_nominal_inverse, [
        "int64(float64[::1], int64, float64[:, :, ::1], int64[::1], float64[:, :, ::1], int64, int64, float64[:, ::1], "
        "int64[::1], int64[::1], int64[::1], int64[::1], int64)"
    ]),
    # the counts read-only (a frozen or memory-mapped matrix): that type takes writable arrays too
    (_checked_sum, [f"float64({_READ_ONLY_1D})"]),
    (_checked_padding, [f"float64({_READ_ONLY_2D}, float64[:, ::1])"]),
    (_nominal_leaf_sums, [f"float64({_READ_ONLY_3D}, float64[:, :, ::1], int64[::1], int64[::1], int64[::1], int64[::1])"]),
    (_nominal_haar_numerators, [
        f"void({_READ_ONLY_3D}, {_READ_ONLY_3D}, float64[::1], int64[::1], int64[::1], int64[::1], int64[::1], int64, "
        "int64, int64, float64[:, ::1], float64[:, ::1], boolean)"
    ]),
    (_nominal_numerators, [
        f"boolean({_READ_ONLY_3D}, float64[:, :, ::1], int64[::1], int64[::1], int64[::1], int64[::1], {_READ_ONLY_1D}, "
        f"{_READ_ONLY_1D}, uint64)"
    ]),
    (_nominal_inverse, [
        "void(float64[:, :, ::1], float64[:, :, ::1], int64[::1], int64[::1], int64[::1], int64[::1], float64[::1], "
        f"{_READ_ONLY_1D}, {_READ_ONLY_1D})"
    ]),
    # (rows of any stride, their columns contiguous: numba vectorises them as it does C rows)
    (_haar_kept_numerators, [f"void({_READ_ONLY_ROWS}, float64[:, ::1], int64[::1], float64[:, ::1], int64)"]),
    (_haar_kept_inverse, [
        f"void({_READ_ONLY_2D}, {_READ_ONLY_2D}, float64[:, :], int64[::1], int64[::1], float64[:, ::1], int64)"
    ]),
    (_pencil_units, [
        f"boolean({_READ_ONLY_ROWS}, float64[:, :, ::1], int64[::1], int64, int64[::1], int64[::1], int64[::1], "
        f"int64[::1], {_READ_ONLY_1D}, {_READ_ONLY_1D}, uint64)"
    ]),
    (_pencil_inverse, [
        "void(float64[:, :, ::1], float64[:, :], int64[::1], int64[::1], int64[::1], int64[::1], "
        f"{_READ_ONLY_1D}, {_READ_ONLY_1D}, int64[::1], int64[::1], int64)"
    ]),
    (_grid_units, [f"boolean(float64[:, ::1], uint64[:, ::1], float64[::1], {_READ_ONLY_1D}, uint64)"]),
    (_grid_scale, [f"void(float64[:, ::1], float64[::1], {_READ_ONLY_1D})"]),
    (_count_cells, ["void(Array(int64, 1, 'C', readonly=True), float64[::1], int64)"]),
]
# The checks' sums may be taken in any order (see _checked_sum): numba then vectorises them.
_FASTMATH: dict[Callable[..., object], set[str]] = {_checked_sum: {"reassoc"}, _checked_padding: {"reassoc"}}

# Functions the loops call (see _compiled_kernels): the helpers are compiled into their callers;
# the called loops are compiled on their own, with their signatures, and called (numba
# vectorises them alone, not once inlined).
_HELPERS: list[Callable[..., object]] = [_haar_row_forward, _haar_row_inverse, _group_inverse, _add_decided_draws,
                                         _add_common_draws, _open_tops, _largest_magnitude_bits, _row_to_units,
                                         _row_scaled, _outer_numerators, _outer_inverse, _haar_pair_lines,
                                         _haar_last_lines, _haar_unpair]
_CALLED: list[tuple[Callable[..., object], list[str]]] = [
    (_pair_level, ["void(float64[::1], float64[::1], float64[::1], float64, boolean)"]),
    (_unpair_level, ["void(float64[::1], float64[::1], float64[::1], float64)"]),
]

_BUILDING = threading.Lock()
# What _compiled_kernels gave (None: the numpy passes), once it has run; empty before.
_built: list[_Kernels | None] = []


def sampler_loops() -> SamplerLoops | None:
    """The exact sampler's loops compiled (releasing the GIL), or None without numba or where numba
    cannot compile them (the sampler then runs its numpy passes, which give the same values)."""
    kernels = _kernels()
    return None if kernels is None else kernels.sampler


def block_loops() -> BlockLoops | None:
    """The loops of a block's checks and transforms compiled (releasing the GIL), or None (numpy
    passes, the same values)."""
    kernels = _kernels()
    return None if kernels is None else kernels.block


def aes_words_loop() -> Callable[..., Any] | None:
    """:func:`_aes_counter_words` compiled (releasing the GIL), or None without numba or without
    the CPU's AES instructions (the generator's own ``random_raw`` then, the same words)."""
    kernels = _kernels()
    return None if kernels is None else kernels.aes_words


def loaded_count_loop() -> Callable[..., Any] | None:
    """:func:`_count_cells` compiled (releasing the GIL) where the loops are loaded already (the app
    loads them as it starts, a release when it starts), else None (numpy's bincount): loading
    numba for a count alone took 0.5 s and 100 MB more than it saved (a 10-million-row CSV file
    counted in a fresh process, ``python -m privelet_gui.io.bench``: 2.18 s against 1.70)."""
    kernels = _built[0] if _built else None
    return None if kernels is None else kernels.count_cells


def grid_loops() -> GridLoops | None:
    """The pencils' loops to and from the noise grid compiled (releasing the GIL), or None (numpy passes)."""
    kernels = _kernels()
    return None if kernels is None else kernels.grid


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
    # asked for every tile of a release: once built, no lock for the threads to meet at
    if not _built:
        with _BUILDING:  # a release's threads ask at once: one of them compiles, the others wait for it
            if not _built:
                _built.append(_compiled_kernels())
    return _built[0]


def _compiled_kernels() -> _Kernels | None:
    try:
        import numba
    except ImportError:  # the fast extra is not installed: the numpy passes
        return None
    try:
        # The helpers the loops call: compiled into each caller, so they must be numba's
        # functions under their own names before the loops are compiled.
        globals()["_float_of_bits"] = _float_of_bits_intrinsic()  # the name _add_decided_draws calls
        globals()["_stream_store"] = _stream_store_intrinsic()  # and _group_inverse, with the next
        globals()["_store_fence"] = _store_fence_intrinsic()
        for helper in _HELPERS:
            globals()[helper.__name__] = numba.njit(inline="always")(helper)
        try:
            loops = _compiled_loops(numba.njit, cache=True)
        except RuntimeError:  # no folder to cache them in (numba: "no locator available"): compile each run
            loops = _compiled_loops(numba.njit, cache=False)
    except Exception as error:  # a numba that cannot compile them must not stop a release
        warnings.warn(f"numba could not compile the release's loops, which run as numpy passes: {error}",
                      RuntimeWarning, stacklevel=2)
        return None
    # _LOOPS' dispatchers, in the order of these groups' fields, then the count's
    taken = iter(loops)
    sampler = SamplerLoops(*islice(taken, len(fields(SamplerLoops))))
    haar_rows = HaarRowsLoops(*islice(taken, len(fields(HaarRowsLoops))))
    block = BlockLoops(*islice(taken, len(fields(BlockLoops))))
    grid = GridLoops(*islice(taken, len(fields(GridLoops))))
    return _Kernels(sampler, haar_rows, block, grid, _compiled_aes_loop(numba.njit), next(taken))


def _compiled_aes_loop(njit: Callable[..., Any]) -> Callable[..., Any] | None:
    """:func:`_aes_counter_words` compiled where the CPU has AES instructions, else None (as when
    numba cannot compile it: the words then come from the generator's own loop)."""
    try:
        aes, wide = _aes_features()
        if not aes:
            return None
        # the names _aes_counter_words calls
        globals()["_aes_blocks"] = _aes_intrinsic(4, wide)
        globals()["_aes_bulk"] = _aes_intrinsic(_AES_BULK_BLOCKS, wide)
        options: dict[str, Any] = {"nogil": True, "error_model": "numpy"}
        signature = "void(uint64[::1], uint64[::1])"
        try:
            return njit(signature, cache=True, **options)(_aes_counter_words)
        except RuntimeError:  # no folder to cache it in
            return njit(signature, **options)(_aes_counter_words)
    except Exception as error:
        warnings.warn(f"numba could not compile the AES loop; the noise's random words come from randomgen's: {error}",
                      RuntimeWarning, stacklevel=2)
        return None


def _compiled_loops(njit: Callable[..., Any], cache: bool) -> list[Any]:
    """The called loops under their own names, then _LOOPS' dispatchers, in order.

    numpy's error model: numba's default (Python's) checks every division for a zero divisor
    and raises, a branch inside the loop that keeps a division by an array's elements from
    vectorising. No loop here divides by zero (every divisor is a positive ``d 2**k``, a
    fan-out or a constant), and the quotients are the same."""
    options: dict[str, Any] = {"error_model": "numpy", **({"cache": True} if cache else {})}
    for called, signatures in _CALLED:
        globals()[called.__name__] = njit(signatures, nogil=True, **options)(called)
    return [njit(signatures, nogil=True, **options, fastmath=_FASTMATH.get(loop, False))(loop)
            for loop, signatures in _LOOPS]
