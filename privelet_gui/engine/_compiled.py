"""The release's hottest loops compiled, when numba is installed (the ``fast`` extra).

:class:`~privelet_gui.engine.exact.ExactSampler` decides nearly every draw from two words
and one table look-up; in numpy that takes some thirty passes over each round of draws,
which hold the GIL between them. Here one loop, which releases the GIL, adds those draws
to the coefficients; a second finds V of the rare ones it leaves (about 0.7 %: V searched in
the thresholds, C not proved 0) and what is still open, and a third adds them once the
sampler has drawn the bits those need, in the numpy passes' order; the "-0" draws that CKS
draws again are left to the numpy code. The same bits give the same values either way (tests/engine/test_sampler_pins.py
pins both paths and compares them where ties and open draws are forced).

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
with S_A empty; on two, within the machine's noise. The numerators of counts are
integers below 2**53 (the check refuses the rest), so every order of their sums and differences
gives the same bits as numpy's; the check's sum is exact as well, and a sum of 2**53 or more is
refused by either path. The nominal inverse sums noisy floats: its loop follows numpy's order
(the children of a group one after the other, as numpy's reduction along the first axis of
rows of two or more values does), and is taken only where numpy visits the groups one by one.
A big block's pencils are divided to the grid and scaled in one pass each, and the finer
levels of their Haar inverse computed, by three more: the same quotients, products, sums and
differences (tests/engine/test_block_loops.py compares them all).

numba is imported, and the loops compiled (the sampler's for both word sizes), on the first
release or when :func:`prepare_compiled` asks (the app does, on a thread of its own, as it
starts), never when the engine is imported (that would cost 0.3 s); the machine code is
cached beside this file, or in the user's cache folder where that is read-only, so later
processes load them instead of compiling them (the engine's import and the loops in a fresh
process: 0.4 to 0.5 s against 3.4 s the first time on a machine, measured here).
"""

from __future__ import annotations

import functools
import math
import threading
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = [
    "BlockLoops",
    "GridLoops",
    "HaarRowsLoops",
    "SamplerLoops",
    "block_loops",
    "grid_loops",
    "haar_rows_loops",
    "prepare_compiled",
    "sampler_loops",
]


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
    leaf_row: np.ndarray,
) -> None:
    """:meth:`~privelet_gui.engine.nominal.NominalTransform.numerators` of counts along the middle
    axis of ``leaves`` (outer positions, leaves in leaf order, inner positions: the array as it
    is, no transposing copy) into ``out`` (nodes in level order, where children follow their
    parent, then the outer and inner positions: numpy's layout). For each outer position, first
    each internal node's leaf-sum, bottom-up; then each node's ``f leafsum(N) - leafsum(parent)``,
    the deepest first, so that a parent's row still holds its leaf-sum when its children read it.
    ``leaf_row[node]``: the node's row of ``leaves``, -1 for an internal node. (Whole rows at a
    time: strips of columns measured slower on rows of 1024, whose 8 KiB stride maps a strip's
    rows to the same cache sets.)"""
    count = out.shape[0]
    for outer in range(leaves.shape[0]):
        for node in range(count - 1, -1, -1):
            children = fanout[node]
            if children == 0:
                continue
            first = first_child[node]
            target = out[node, outer]
            for child in range(first, first + children):
                row = leaf_row[child]
                source = leaves[outer, row] if row >= 0 else out[child, outer]
                if child == first:
                    for k in range(target.size):
                        target[k] = source[k]
                else:
                    for k in range(target.size):
                        target[k] += source[k]
        if leaf_row[0] >= 0:  # the root is the only leaf
            for k in range(out.shape[2]):
                out[0, outer, k] = leaves[outer, 0, k]
        for node in range(count - 1, 0, -1):
            above = parent[node]
            scale = float(fanout[above])
            row = leaf_row[node]
            own = leaves[outer, row] if row >= 0 else out[node, outer]
            target = out[node, outer]
            sums = out[above, outer]
            for k in range(target.size):
                target[k] = scale * own[k] - sums[k]


def _haar_rows_forward(
    rows: np.ndarray, out: np.ndarray, levels: int, coarse: int, divisors: np.ndarray, rint: bool,
) -> None:
    """:meth:`~privelet_gui.engine.haar.HaarTransform.rows_numerators` of counts: each row's
    pair differences of levels ``levels`` down to 1 into the flat ``out`` in the level-major
    layout (level l's details of row r at ``R 2**(l - 1) + r 2**(l - 1)`` above level
    ``coarse``, at ``r 2**coarse + 2**(l - 1)`` in the head, the row's total at ``r 2**coarse``).
    With ``divisors`` (not empty: level l's of row r at ``[l - coarse - 1, r]``) each difference
    above ``coarse`` is divided as it is written, and rounded to the nearest integer (ties to
    even) with ``rint``. (The numpy code does the head as a matrix product: on counts, the same
    exact integers.)"""
    count, width = rows.shape
    sums = np.empty(width // 2)
    for r in range(count):
        _haar_row_forward(rows[r], sums, out, 0, count, r, levels, coarse, divisors, r, rint)


def _haar_row_forward(
    values: np.ndarray, sums: np.ndarray, out: np.ndarray, base: int, count: int, r: int, levels: int, coarse: int,
    divisors: np.ndarray, column: int, rint: bool,
) -> None:
    """Row ``r`` of :func:`_haar_rows_forward` for a tile of ``count`` rows whose layout starts
    at ``out[base]``: ``values`` (the row, read only) through every level, the finest first,
    with ``sums`` (half a row) for the pair sums; its divisors are column ``column`` of
    ``divisors``. (Compiled into the loops that call it: see :func:`_compiled_kernels`.)"""
    head_width = 1 << coarse
    divide = divisors.shape[0] > 0
    size = values.size
    for level in range(levels, 0, -1):  # the finest level first
        half = size // 2
        details = base + (count * half + r * half if level > coarse else r * head_width + half)
        divisor = divisors[level - coarse - 1, column] if divide and level > coarse else 1.0
        for k in range(half):
            left = values[2 * k]
            right = values[2 * k + 1]
            difference = left - right
            if divide and level > coarse:
                difference = difference / divisor
                if rint:
                    difference = np.rint(difference)
            out[details + k] = difference
            sums[k] = left + right  # k <= 2k: a pair is read before its sum overwrites it
        values = sums
        size = half
    out[base + r * head_width] = values[0]


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
    rint: bool,
) -> None:
    """A tile of a plane's nominal numerators (the axis before the last) and the Haar
    transform's along its padded lines in one pass: lines ``first`` to ``first + R - 1`` (line
    ``outer * nodes + node``, the plane's C order) into the flat ``out`` in the tile's
    level-major layout of R lines. Each line's nominal numerators ``f leafsum(N) -
    leafsum(parent)`` (the root: its leaf-sum) are formed in a row of their own from the counts
    and :func:`_nominal_leaf_sums`' ``sums``, and go through every Haar level while they are in
    the L1 cache (:func:`_haar_row_forward`, with ``divisors`` and ``rint`` as
    :func:`_haar_rows_forward` takes them). The same exact integers, quotients and roundings as
    :func:`_nominal_numerators` then :func:`_haar_rows_forward` on the padded counts."""
    width = leaves.shape[2]
    padded = sums.shape[2]
    count = out.size // padded
    nodes = parent.size
    row = np.empty(padded)
    half_row = np.empty(padded // 2)
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
        _haar_row_forward(row, half_row, out, 0, count, r, levels, coarse, divisors, r, rint)


def _haar_rows_inverse(coefficients: np.ndarray, out: np.ndarray, levels: int, coarse: int, factors: np.ndarray) -> None:
    """The finer levels of :meth:`~privelet_gui.engine.haar.HaarTransform.rows_inverse`:
    each row of ``out`` holds its ``2**coarse`` coarse means on entry and its values on return,
    each level's means plus and minus its details (from the flat level-major ``coefficients``),
    each detail first multiplied by its level's and row's factor where ``factors`` is not empty
    (level l's of row r at ``[l - coarse - 1, r]``). Each level reads its means from one
    scratch row and writes the next level's to the other (the last to ``out``): a loop that
    reads and writes the same row cannot be vectorised."""
    count, width_out = out.shape
    scale = factors.shape[0] > 0
    means = np.empty(width_out)
    finer = np.empty(width_out)
    for r in range(count):
        row = out[r]
        width = 1 << coarse
        for k in range(width):
            means[k] = row[k]
        for level in range(coarse + 1, levels + 1):
            details = count * width + r * width
            factor = factors[level - coarse - 1, r] if scale else 1.0
            target = row if level == levels else finer
            for k in range(width):
                mean = means[k]
                detail = coefficients[details + k]
                if scale:
                    detail = detail * factor
                target[2 * k] = mean + detail
                target[2 * k + 1] = mean - detail
            means, finer = finer, means
            width *= 2


def _nominal_inverse(
    sums: np.ndarray, out: np.ndarray, group_parent: np.ndarray, group_first: np.ndarray, group_fanout: np.ndarray,
    leaf_row: np.ndarray, shift: np.ndarray,
) -> None:
    """:meth:`~privelet_gui.engine.nominal.NominalTransform.inverse` with mean subtraction where
    numpy visits every sibling group in turn: ``sums`` (nodes, then outer and inner positions:
    numpy's layout of the coefficients, and the workspace) top-down, group after group (parents
    first), each child plus ``(parent - sum of the group) / fanout`` with the group summed child
    after child, as numpy's reduction along the first axis sums rows. A leaf's values go to
    ``out`` (outer positions, leaves, inner positions: the values' own layout), whose rows may
    be shorter than ``sums``' (a padded array's first columns: the others are never computed)."""
    width = out.shape[2]
    for outer in range(out.shape[0]):
        if group_parent.size == 0:  # the root is the only leaf
            for k in range(width):
                out[outer, 0, k] = sums[0, outer, k]
        for group in range(group_parent.size):
            parent = sums[group_parent[group], outer]
            first = group_first[group]
            fanout = group_fanout[group]
            for k in range(width):
                shift[k] = sums[first, outer, k]
            for child in range(first + 1, first + fanout):
                row = sums[child, outer]
                for k in range(width):
                    shift[k] += row[k]
            divisor = float(fanout)
            for k in range(width):
                shift[k] = (parent[k] - shift[k]) / divisor
            for child in range(first, first + fanout):
                row = sums[child, outer]
                leaf = leaf_row[child]
                target = out[outer, leaf] if leaf >= 0 else row
                for k in range(width):
                    target[k] = row[k] + shift[k]


def _haar_kept_numerators(values: np.ndarray, out: np.ndarray, level_counts: np.ndarray, sums: np.ndarray) -> None:
    """:meth:`~privelet_gui.engine.haar.HaarTransform.kept_numerators` of counts along the rows
    of ``values`` (one row per value, the columns side by side) into ``out`` (one row per kept
    coefficient): every level's pair differences, the finest first, each level's subtree sums
    into ``sums`` (scratch, half as many rows as ``values``; a pair is read before its sum
    overwrites a row), then the base. The numpy code does the coarse levels as one matrix
    product; on counts both are the same exact integers."""
    levels = level_counts.size
    columns = values.shape[1]
    filled = values.shape[0]
    start = out.shape[0]
    for level in range(levels, 0, -1):
        kept = level_counts[level - 1]
        start -= kept
        pairs = filled // 2
        for pair in range(pairs):
            left = values[2 * pair] if level == levels else sums[2 * pair]
            right = values[2 * pair + 1] if level == levels else sums[2 * pair + 1]
            detail = out[start + pair]
            parent = sums[pair]
            for k in range(columns):
                a = left[k]
                b = right[k]
                detail[k] = a - b
                parent[k] = a + b
        if filled % 2:  # the last subtree's right sibling is all padding
            last = values[filled - 1] if level == levels else sums[filled - 1]
            for k in range(columns):
                out[start + pairs, k] = last[k]
                sums[pairs, k] = last[k]
        filled = kept
    base = values[0] if levels == 0 else sums[0]
    for k in range(columns):
        out[0, k] = base[k]


def _haar_kept_inverse(
    coefficients: np.ndarray, means: np.ndarray, out: np.ndarray, counts: np.ndarray, starts: np.ndarray,
    scratch: np.ndarray,
) -> None:
    """The finer levels of :meth:`~privelet_gui.engine.haar.HaarTransform.kept_inverse` along
    rows (the columns side by side): from the coarse ``means``, each level's values, ``counts[i]``
    of them, are its means plus (even) and minus (odd) its details (the rows of ``coefficients``
    from ``starts[i]``); the finest into ``out``, the others into ``scratch`` (two halves, used in
    turn)."""
    columns = means.shape[1]
    half = scratch.shape[0] // 2
    levels = counts.size
    for level in range(levels):
        count = counts[level]
        start = starts[level]
        for value in range(count):
            mean = means[value // 2] if level == 0 else scratch[(level - 1) % 2 * half + value // 2]
            detail = coefficients[start + value // 2]
            target = out[value] if level == levels - 1 else scratch[level % 2 * half + value]
            if value % 2 == 0:
                for k in range(columns):
                    target[k] = mean[k] + detail[k]
            else:
                for k in range(columns):
                    target[k] = mean[k] - detail[k]


def _grid_units(rows: np.ndarray, divisors_rows: np.ndarray, divisors_columns: np.ndarray) -> None:
    """Each ``rows[r, c]`` divided by ``divisors_rows[r] * divisors_columns[c]`` and rounded to
    the nearest integer (ties to even): a big block's pencil in grid units."""
    count, width = rows.shape
    for r in range(count):
        row = rows[r]
        first = divisors_rows[r]
        for c in range(width):
            row[c] = np.rint(row[c] / (first * divisors_columns[c]))


def _grid_scale(rows: np.ndarray, factors_rows: np.ndarray, factors_columns: np.ndarray) -> None:
    """Each ``rows[r, c]`` multiplied by ``factors_rows[r]``, then by ``factors_columns[c]``."""
    count, width = rows.shape
    for r in range(count):
        row = rows[r]
        first = factors_rows[r]
        for c in range(width):
            row[c] = row[c] * first * factors_columns[c]


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


_READ_ONLY_1D = "Array(float64, 1, 'C', readonly=True)"
_READ_ONLY_2D = "Array(float64, 2, 'C', readonly=True)"
_READ_ONLY_3D = "Array(float64, 3, 'C', readonly=True)"
# Each loop with its signatures; the sampler's for both word sizes of the fair words (32 bits
# up to M = 23, else 64). All are compiled at once, in this order (that of SamplerLoops',
# HaarRowsLoops', BlockLoops' and GridLoops' fields).
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
    (_haar_rows_forward, ["void(float64[:, ::1], float64[::1], int64, int64, float64[:, ::1], boolean)"]),
    (_haar_rows_inverse, ["void(float64[::1], float64[:, ::1], int64, int64, float64[:, ::1])"]),
    # the counts read-only (a frozen or memory-mapped matrix): that type takes writable arrays too
    (_checked_sum, [f"float64({_READ_ONLY_1D})"]),
    (_checked_padding, [f"float64({_READ_ONLY_2D}, float64[:, ::1])"]),
    (_nominal_leaf_sums, [f"float64({_READ_ONLY_3D}, float64[:, :, ::1], int64[::1], int64[::1], int64[::1], int64[::1])"]),
    (_nominal_haar_numerators, [
        f"void({_READ_ONLY_3D}, {_READ_ONLY_3D}, float64[::1], int64[::1], int64[::1], int64[::1], int64[::1], int64, "
        "int64, int64, float64[:, ::1], boolean)"
    ]),
    (_nominal_numerators, [
        f"void({_READ_ONLY_3D}, float64[:, :, ::1], int64[::1], int64[::1], int64[::1], int64[::1])"
    ]),
    (_nominal_inverse, [
        "void(float64[:, :, ::1], float64[:, :, ::1], int64[::1], int64[::1], int64[::1], int64[::1], float64[::1])"
    ]),
    (_haar_kept_numerators, [f"void({_READ_ONLY_2D}, float64[:, ::1], int64[::1], float64[:, ::1])"]),
    (_haar_kept_inverse, [
        f"void({_READ_ONLY_2D}, {_READ_ONLY_2D}, float64[:, ::1], int64[::1], int64[::1], float64[:, ::1])"
    ]),
    (_grid_units, [f"void(float64[:, ::1], float64[::1], {_READ_ONLY_1D})"]),
    (_grid_scale, [f"void(float64[:, ::1], float64[::1], {_READ_ONLY_1D})"]),
]
# The checks' sums may be taken in any order (see _checked_sum): numba then vectorises them.
_FASTMATH: dict[Callable[..., object], set[str]] = {_checked_sum: {"reassoc"}, _checked_padding: {"reassoc"}}

# Functions the loops call (see _compiled_kernels).
_HELPERS: list[Callable[..., object]] = [_haar_row_forward]

_BUILDING = threading.Lock()


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
    with _BUILDING:  # a release's threads ask at once: one of them compiles, the others wait for it
        return _compiled_kernels()


@functools.cache
def _compiled_kernels() -> _Kernels | None:
    try:
        import numba
    except ImportError:  # the fast extra is not installed: the numpy passes
        return None
    try:
        # The helpers the loops call: compiled into each caller, so they must be numba's
        # functions under their own names before the loops are compiled.
        for helper in _HELPERS:
            globals()[helper.__name__] = numba.njit(inline="always")(helper)
        try:
            loops = [numba.njit(signatures, nogil=True, cache=True, fastmath=_FASTMATH.get(loop, False))(loop)
                     for loop, signatures in _LOOPS]
        except RuntimeError:  # no folder to cache them in (numba: "no locator available"): compile each run
            loops = [numba.njit(signatures, nogil=True, fastmath=_FASTMATH.get(loop, False))(loop)
                     for loop, signatures in _LOOPS]
    except Exception as error:  # a numba that cannot compile them must not stop a release
        warnings.warn(f"numba could not compile the release's loops, which run as numpy passes: {error}",
                      RuntimeWarning, stacklevel=2)
        return None
    return _Kernels(SamplerLoops(*loops[:3]), HaarRowsLoops(*loops[3:5]), BlockLoops(*loops[5:13]),
                    GridLoops(*loops[13:]))
