"""The exact sampler: discrete Laplace in integer arithmetic, vectorised, from secure bits.

It draws ``Z`` with ``P(Z = z)`` proportional to ``exp(-theta |z|)`` *exactly*, for
``theta = epsilon / D`` held as an exact rational (a float is an exact binary
fraction): no floating-point step decides any sample, and every decision is a
comparison of random bits with an integer threshold whose value is proved, or a
refinement of such a comparison with more bits until it is decided.

The construction follows Canonne, Kamath and Steinke ("The Discrete Gaussian for
Differential Privacy", 2020, Algorithm 2): a sign bit B and a magnitude Y with
``P(Y = y)`` proportional to ``exp(-theta y)`` (geometric), returning ``(1 - 2B) Y``
and starting again on ``B = 1, Y = 0`` (so that zero is not counted twice). Their
Algorithm 1 draws Bernoulli(exp(-gamma)) by a loop of rational Bernoulli trials;
here, to draw a hundred million magnitudes in numpy at the speed of the standard
sampler, the geometric magnitude is drawn in two independent parts instead, both
by exact threshold comparisons:

- ``Y = V 2**M + L``: for a geometric Y the quotient V and the remainder L by ``2**M``
  are independent, V geometric with rate ``gamma = theta 2**M`` and L with
  ``P(L = l)`` proportional to ``exp(-theta l)`` on ``[0, 2**M)``. M is chosen so that
  ``gamma`` lies in ``(2**-9, 2**-8]`` (or ``M = 0`` if theta is larger).
- **V by inversion**: ``V >= v`` exactly when a uniform U is below ``exp(-gamma v)``.
  U's first 32 bits w are compared with ``T_v = floor(2**32 exp(-gamma v))``:
  ``w < T_v`` proves ``U < exp(-gamma v)`` and ``w > T_v`` proves the opposite (these
  reals are transcendental, never multiples of 2**-32). A guide table on w's top 16
  bits gives V with one subtraction for all but about 0.3% of draws (a binary search
  over the T_v does those); ``w == T_v`` (probability below 2**-17 per draw: at most
  2**14.5 thresholds among 2**32 prefixes) draws more bits of U.
- **L bit by bit**: L's binary digits are independent, digit j being 1 with
  probability ``p_j = 1 / (1 + exp(theta 2**j))``. Write digit j as ``F_j and not C_j``
  for a fair bit F_j and an independent C_j with probability ``c_j = 1 - 2 p_j =
  tanh(theta 2**(j - 1))``: then ``P = p_j`` exactly. The fair bits come from one word (and
  a byte when 23 < M <= 31); C is almost always 0 (``P(C != 0) < 2**-9``), decided by one comparison of a uniform
  with ``P(C = 0)``. Otherwise the same uniform gives C's highest set bit u by inversion
  (``P(C < 2**j) = prod_{i >= j} (1 - c_i)``). C's bits below u are independent of u (the
  bits are independent), so the highest of them is drawn the same way from a fresh uniform,
  with ``P(no bit of j .. u - 1 set) = R(u, j) = prod_{j <= i < u} (1 - c_i) =
  P(C < 2**j) / P(C < 2**u)``: one comparison with ``R(u, 0)`` shows that there is none
  (all but about ``c_u`` of the draws), and otherwise the next set bit follows, and so on down.

Thresholds are computed once per theta, in integers: :func:`exp_neg_bounds` brackets
``exp(-x)`` for a rational x with the alternating Taylor series and repeated
squaring, rounding outwards, and each threshold is the common floor of a bracket
(tightened until its ends agree). Random bits come from the caller's generator's
bit generator (``random_raw``'s words; a round's bulk of them by
:func:`~privelet_gui.engine.bits.random_words`, the same words): AES-128 in counter mode
keyed from the operating system for every release that is not seeded
(:mod:`privelet_gui.engine.bits`).

The sum with the rounded coefficient is exact (int64 limbs,
:func:`~privelet_gui.engine.noise.add_in_limbs`, when it could pass 2**52). Float64 sums
with numba installed (the ``fast`` extra) are formed in compiled loops (:mod:`._compiled`):
the draws that the guide table and C's first bits decide in one, which also sorts out the
rare ones, and those in three more, their extra bits drawn here in the order the numpy passes
draw them: the same values.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from fractions import Fraction
from functools import lru_cache, partial
from typing import NamedTuple

import numpy as np

from . import _compiled
from .bits import random_words
from .errors import PriveletError
from .noise import Sampler, add_in_limbs

__all__ = ["ExactSampler", "exact_discrete_laplace", "exact_sampler", "exp_neg_bounds"]

Bounds = Callable[[int], tuple[int, int]]

# gamma = theta 2**M lies in (2**-(b + 1), 2**-b] for this b: V then takes about 44 / gamma
# < 2**15 values and C is non-zero with probability below 2**-(b + 1).
_RATE_BITS = 8
# C's first bits in the fair word: C is proved 0 by them for all but about 2**-8 of the draws.
_PACKED_C_BITS = 8
# V's uniform is first known by this many bits (more are drawn only on a tie).
_PREFIX_BITS = 32
# The guide table is indexed by the top bits of V's prefix; bit 15 of an entry marks a cell
# that needs a search (V itself stays below 2**15: 44 / gamma < 2**14.5).
_GUIDE_BITS = 16
_SEARCH_FLAG = 1 << 15
_QUOTIENT_BITS = 15
_MINUS_ZERO = np.uint64(1 << 63)
# Draws per round: numpy's call overhead is spread. The rounds fix which random words each
# draw reads: another size draws other values from the same seed.
_CHUNK = 1 << 17
_WORD = 64


def _ceil_shift(value: int, shift: int) -> int:
    """``ceil(value / 2**shift)``."""
    return -((-value) >> shift)


def exp_neg_bounds(x: Fraction, precision: int) -> tuple[int, int]:
    """Integers ``lo <= 2**precision * exp(-x) <= hi`` for a rational ``x >= 0``, close together.

    ``exp(-y)`` for ``y = x / 2**s <= 1/2`` is the alternating series ``sum (-y)^k / k!``,
    whose terms shrink: its partial sums bracket it, and each term is computed in fixed
    point rounded down and up. Squaring ``s`` times (rounding outwards) gives ``exp(-x)``;
    guard bits absorb the error that the squarings double.

    Examples
    --------
    >>> lo, hi = exp_neg_bounds(Fraction(1), 64)
    >>> lo <= 6786177901268885274 <= hi and hi - lo <= 2   # floor(2**64 / e)
    True
    """
    if x < 0:
        raise ValueError("exp_neg_bounds needs x >= 0")
    one = 1 << precision
    if x == 0:
        return one, one
    if x >= precision:  # exp(-x) < 2**(-1.44 x) <= 2**-precision
        return 0, 1
    squarings = max(0, (2 * x.numerator // x.denominator).bit_length())  # 2**s > 2 x
    y = x / (1 << squarings)
    guard = squarings + 2 * precision.bit_length() + 8
    bits = precision + guard
    lo, hi = _exp_neg_small(y, bits)
    for _ in range(squarings):
        lo = (lo * lo) >> bits
        hi = _ceil_shift(hi * hi, bits)
    return lo >> guard, _ceil_shift(hi, guard)


def _exp_neg_small(y: Fraction, bits: int) -> tuple[int, int]:
    """Bounds of ``2**bits exp(-y)`` for ``0 < y <= 1/2``."""
    num, den = y.numerator, y.denominator
    term_lo = term_hi = 1 << bits
    sum_lo = sum_hi = term_lo
    k = 0
    while term_hi > 1:
        k += 1
        term_lo = term_lo * num // (den * k)
        term_hi = -((-term_hi * num) // (den * k))
        if k % 2:
            sum_lo -= term_hi
            sum_hi -= term_lo
        else:
            sum_lo += term_lo
            sum_hi += term_hi
    # The rest of the series is below its first term, at most term_hi <= 1 unit.
    return max(sum_lo - 1, 0), sum_hi + 1


def _threshold(bounds: Bounds, width: int) -> int:
    """``floor(2**width p)`` for the irrational p in (0, 1) that ``bounds`` brackets."""
    extra = 32
    while extra <= 1 << 14:
        lo, hi = bounds(width + extra)
        if lo >> extra == hi >> extra:
            return lo >> extra
        extra *= 2
    raise PriveletError("internal error: a noise threshold could not be separated from a multiple of 2**-width")


class _LazyUniform:
    """A uniform U in [0, 1) known by its first ``first_bits`` bits; 64-bit words follow on demand."""

    def __init__(self, first: int, first_bits: int, bits: np.random.BitGenerator):
        self.prefix = int(first)
        self.known = first_bits
        self.bits = bits

    def below(self, bounds: Bounds) -> bool:
        """Whether U < p, for the p that ``bounds`` brackets (drawing words until decided)."""
        guard = 8
        while True:
            lo, hi = bounds(self.known + guard)
            if (self.prefix + 1) << guard <= lo:  # U < (prefix + 1) / 2**known <= p
                return True
            if self.prefix << guard >= hi:  # U >= prefix / 2**known >= p
                return False
            self.prefix = (self.prefix << _WORD) | int(self.bits.random_raw())
            self.known += _WORD


def _outward_div(num_lo: int, num_hi: int, den_lo: int, den_hi: int, scale: int) -> tuple[int, int]:
    """Bounds of ``2**scale * n / d`` for positive n in [num_lo, num_hi], d in [den_lo, den_hi]."""
    lo = (num_lo << scale) // den_hi if den_hi else 0
    hi = -((-(num_hi << scale)) // den_lo) if den_lo else 1 << (scale + num_hi.bit_length() + 1)
    return lo, hi


class ExactSampler:
    """Exact discrete Laplace noise with rate ``theta`` per grid unit (see the module docstring).

    The tables are built when the sampler is made (once per release) and only read
    afterwards: threads share one sampler, each with its own generator (and its own
    scratch arrays for :meth:`add`'s rounds, 9 MiB, kept while the thread lives).

    Bits per draw: 32 for V's uniform (its first bits; more on a tie) and one word of
    fair bits, 32 bits when M <= 31 (else 64): the sign on top, then the first 8 to 16
    bits of C's uniform (64 bits in all when it is not proved below ``P(C = 0)``), then
    L's M digits, of which a 32-bit word holds the first 23: for 23 < M <= 31 the others
    are the low bits of a byte of their own. (For M > 55 C's first 16 bits come from a word
    of their own.)
    """

    name: Sampler = "exact"

    def __init__(self, theta: Fraction):
        if theta <= 0:
            raise PriveletError(f"the noise rate must be positive, got {theta}")
        self.theta = Fraction(theta)
        # M, the bits of the remainder L: gamma = theta 2**M in (2**-(b+1), 2**-b] (M = 0 for larger theta)
        ratio = Fraction(1, 1 << _RATE_BITS) / self.theta
        self.low_bits = max(0, ratio.numerator.bit_length() - ratio.denominator.bit_length() + 1)
        while self.low_bits and (1 << self.low_bits) > ratio:
            self.low_bits -= 1
        if self.low_bits > 61:
            raise PriveletError("internal error: the noise scale passes the exact sampler's 2**61 limit")
        self.gamma = self.theta * (1 << self.low_bits)
        # L's digits beside the sign and C's first bits in a 32-bit fair word; up to a byte more
        # of them in a byte of their own (1.125 words a draw where a 64-bit word would take 1.5)
        word_digits = 31 - _PACKED_C_BITS
        self._fair_bits = 32 if self.low_bits <= word_digits + 8 else 64
        self._fair_digits = min(self.low_bits, word_digits) if self._fair_bits == 32 else self.low_bits
        self._high_digits = self.low_bits - self._fair_digits
        spare = self._fair_bits - 1 - self._fair_digits  # between the sign and L's digits
        self._packed = spare >= _PACKED_C_BITS
        self._c_bits = min(16, spare) if self._packed else 16
        self._build_quotient_tables()
        self._build_remainder_tables()
        # C's first bits sit just below the sign (when packed); C is proved 0 when the fair word
        # without its sign is below the threshold moved there (never when M = 0)
        self._c_shift = self._fair_bits - 1 - self._c_bits
        self._signless = (1 << (self._fair_bits - 1)) - 1
        self._open_threshold = self.zero_threshold << self._c_shift if self.low_bits else self._signless + 1
        params = {_compiled.LOW_BITS: self.low_bits, _compiled.SIGN_SHIFT: self._fair_bits - 1,
                  _compiled.SIGNLESS: self._signless, _compiled.OPEN_THRESHOLD: self._open_threshold,
                  _compiled.C_SHIFT: self._c_shift, _compiled.C_BITS: self._c_bits,
                  _compiled.FAIR_DIGITS: self._fair_digits, _compiled.HIGH_MASK: (1 << self._high_digits) - 1}
        self._round_params = np.array([params[entry] for entry in sorted(params)], dtype=np.int64)

    @property
    def words_per_draw(self) -> float:
        """Random 64-bit words one draw takes on its common path (C proved 0, V from the guide):
        1 when M <= 23, 1.125 up to M = 31, 1.5 up to M = 55, 1.75 beyond."""
        own_c_bits = 0 if self._packed else 16
        high_bits = 8 if self._high_digits else 0
        return (self._fair_bits + _PREFIX_BITS + own_c_bits + high_bits) / _WORD

    # -- tables ------------------------------------------------------------------------------
    def _quotient_bounds(self, v: int) -> Bounds:
        gamma = self.gamma
        return lambda p: exp_neg_bounds(gamma * v, p)

    def _build_quotient_tables(self) -> None:
        """``T_v = floor(2**32 exp(-gamma v))`` (v = 1.. while positive) and the guide table."""
        gamma = self.gamma
        thresholds: list[int] = []
        if gamma < _PREFIX_BITS:  # otherwise exp(-gamma) < 2**-32: no positive threshold at all
            extra = 48  # exp(-gamma) ** v by repeated multiplication: error about v units
            bits = _PREFIX_BITS + extra
            base_lo, base_hi = exp_neg_bounds(gamma, bits)
            lo, hi = base_lo, base_hi
            v = 1
            while hi >> extra:
                value = lo >> extra
                if value != hi >> extra:  # rare: the bracket meets a multiple of 2**-32; tighten it
                    value = _threshold(self._quotient_bounds(v), _PREFIX_BITS)
                if not value:
                    break
                thresholds.append(value)
                v += 1
                lo = (lo * base_lo) >> bits
                hi = _ceil_shift(hi * base_hi, bits)
        self.quotient_thresholds = np.array(thresholds, dtype=np.uint32)  # decreasing
        self._ascending = self.quotient_thresholds[::-1].copy()
        # The largest threshold at most w, by the count of them (0 where there is none): a tie
        # when it equals w. Thresholds are positive, so a zero prefix (the tail) is found too.
        self._at_most = np.concatenate([np.zeros(1, dtype=np.uint32), self._ascending])
        cells = (self.quotient_thresholds >> np.uint32(_PREFIX_BITS - _GUIDE_BITS)).astype(np.intp)
        counts = np.bincount(cells, minlength=1 << _GUIDE_BITS)
        # V for a prefix in cell c is the number of thresholds in higher cells, plus one if the
        # cell's single threshold is above the prefix. Cells holding several thresholds are
        # searched instead (flag bit 15 of the high half); so is cell 0, which also holds the
        # tail (T_v = 0). A prefix in the cell shares its threshold's top bits, so only the low
        # halves t (of the threshold) and l (of the prefix) are compared, by one subtraction:
        # an entry is ``(base + 1) 2**16 + t - 1`` (t = 0 in a cell without threshold), and
        # ``entry - l`` has the high half ``base + [l < t]`` (a borrow exactly when l >= t) and
        # the low half ``0xFFFF`` exactly when ``l == t``, a tie that more bits decide.
        base = (len(thresholds) - np.cumsum(counts)).astype(np.int64)
        search = counts > 1
        search[0] = True
        low_half = np.zeros(1 << _GUIDE_BITS, dtype=np.int64)
        single = (counts == 1)[cells]
        low_half[cells[single]] = self.quotient_thresholds[single] & np.uint32(0xFFFF)
        entries = ((base + 1) << 16) + low_half - 1
        entries[search] = (_SEARCH_FLAG << 16) | 0xFFFF
        self.guide = entries.astype(np.uint32)

    @property
    def guide(self) -> np.ndarray:
        """The guide table: for each cell (the top 16 bits of V's prefix), ``(base + 1) 2**16 + t - 1``,
        or a flagged entry (see :meth:`_build_quotient_tables`)."""
        return self._guide

    @guide.setter
    def guide(self, entries: np.ndarray) -> None:
        # The draws read the entries plus their cell's own top bits (modulo 2**32), so that
        # subtracting the whole prefix w subtracts its low half: one pass fewer. Assigning the
        # table (as ``guide |= ...`` does) keeps the two in step.
        self._guide = entries
        cells = np.arange(1 << _GUIDE_BITS, dtype=np.uint32)
        self._word_guide = entries + (cells << np.uint32(_PREFIX_BITS - _GUIDE_BITS))

    def _build_remainder_tables(self) -> None:
        """``P(C = 0)`` (at the bits C's first prefix has), ``P(C < 2**j)`` and the lower-bit
        table ``R(u, j)`` (all 64 bits)."""
        bits = self.low_bits
        self.below_bounds: list[Bounds] = [partial(self._below_bounds, j) for j in range(bits)]
        self.zero_threshold = _threshold(self.below_bounds[0], self._c_bits) if bits else 0
        self.below_thresholds = np.array([_threshold(b, _WORD) for b in self.below_bounds], dtype=np.uint64)
        self._build_lower_tables()
        # By the count p of thresholds below U (C's highest set bit is p - 1): the threshold
        # that U may tie with (none when p = M: the last one is repeated, and is below U),
        # C's highest bit, and R(p - 1, 0), which U's lower bits are compared with.
        last = self.below_thresholds[-1:] if bits else np.zeros(1, dtype=np.uint64)
        self._tie_by_count = np.concatenate([self.below_thresholds, last])
        self._top_by_count = np.array([0] + [1 << j for j in range(bits)], dtype=np.uint64)
        self._lower_by_count = np.concatenate([np.zeros(1, dtype=np.uint64), self.lower_thresholds[:bits, 0]])

    def _build_lower_tables(self) -> None:
        """``floor(2**64 R(u, j))`` for ``0 <= j < u < M``, where ``R(u, j) = P(C < 2**j) / P(C < 2**u)``
        is the probability that C's bits ``j .. u - 1`` are all zero (cells with ``j >= u``:
        the largest word, never used). The ratio of two brackets of ``P(C < 2**j)`` at 160
        bits decides nearly every floor; the rest are tightened with :meth:`_lower_bounds`."""
        m = self.low_bits
        table = np.full((max(m, 1), max(m, 1)), np.iinfo(np.uint64).max, dtype=np.uint64)
        precision, spare = 160, 32
        brackets = [self._below_bounds(j, precision) for j in range(m)]
        for u in range(1, m):
            den_lo, den_hi = brackets[u]
            for j in range(u):
                lo, hi = _outward_div(*brackets[j], den_lo, den_hi, _WORD + spare)
                if lo >> spare == hi >> spare:
                    table[u, j] = lo >> spare
                else:  # the bracket meets a multiple of 2**-64: tighten it
                    table[u, j] = _threshold(partial(self._lower_bounds, u, j), _WORD)
        self.lower_thresholds = table

    def _lower_bounds(self, u: int, j: int, precision: int) -> tuple[int, int]:
        """Bounds of ``2**precision R(u, j)`` (see :meth:`_build_lower_tables`)."""
        work = precision + 2 * _WORD
        lo, hi = _outward_div(*self._below_bounds(j, work), *self._below_bounds(u, work), precision + _WORD)
        return lo >> _WORD, _ceil_shift(hi, _WORD)

    def _below_bounds(self, j: int, precision: int) -> tuple[int, int]:
        """``P(C < 2**j) = prod_{j <= i < M} (1 - c_i) = 2**(M-j) a^(2^M - 2^j) (1 - a^(2^j)) / (1 - a^(2^M))``
        with ``a = exp(-theta)`` (the product of ``1 + a^(2^i)`` telescopes)."""
        m = self.low_bits
        work = precision + 2 * _WORD + m + 16  # 1 - a^(2^j) can be as small as 2**-70: keep its digits
        one = 1 << work
        power_lo, power_hi = exp_neg_bounds(self.theta * ((1 << m) - (1 << j)), work)
        small_lo, small_hi = exp_neg_bounds(self.theta * (1 << j), work)
        whole_lo, whole_hi = exp_neg_bounds(self.theta * (1 << m), work)
        num_lo, num_hi = power_lo * (one - small_hi), power_hi * (one - small_lo)
        lo, hi = _outward_div(num_lo, num_hi, one - whole_hi, one - whole_lo, precision + m - j)
        return lo >> work, _ceil_shift(hi, work)

    # -- drawing -----------------------------------------------------------------------------
    def _parts(self, bits: np.random.BitGenerator, count: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """One round of ``count`` draws as (fair words, V, L) before the CKS restart on "-0";
        the sign is the top bit of each fair word."""
        fair, quotient, remainder = self._round(bits, count, None)
        return fair, quotient, np.zeros(count, dtype=fair.dtype) if remainder is None else remainder

    def _round(
        self, bits: np.random.BitGenerator, count: int, buffers: _RoundBuffers | None
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
        """:meth:`_parts` (L is None when M = 0), in ``buffers`` if given (else in new arrays)."""
        words = self._words(bits, count)
        return self._decide(bits, words, _RoundBuffers(count) if buffers is None else buffers)

    def _words(self, bits: np.random.BitGenerator, count: int) -> _RoundWords:
        """One round's random words (see :class:`_RoundWords`)."""
        fair_words = count if self._fair_bits == 64 else (count + 1) // 2
        prefix_words = (count + 1) // 2
        own_c = bool(self.low_bits) and not self._packed
        extra_words = (count + 3) // 4 if own_c else (count + 7) // 8 if self._high_digits else 0
        raw = random_words(bits, fair_words + prefix_words + extra_words)
        fair = raw[:fair_words] if self._fair_bits == 64 else raw[:fair_words].view(np.uint32)[:count]
        w = raw[fair_words : fair_words + prefix_words].view(np.uint32)[:count]
        extra = raw[fair_words + prefix_words :]
        return _RoundWords(fair, w, extra.view(np.uint16)[:count] if own_c else None,
                           extra.view(np.uint8)[:count] if self._high_digits else None)

    def _decide(
        self, bits: np.random.BitGenerator, words: _RoundWords, scratch: _RoundBuffers,
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
        """(fair words, V, L) from a round's words (:meth:`_words`), drawing more bits where
        they do not decide V or C."""
        fair, w, first = words.fair, words.prefixes, words.first_c
        m = self.low_bits
        count = fair.size
        kind = fair.dtype.type
        entry, unsure_flags = self._guide_entries(w, scratch, count)
        if m and self._packed:
            # C's first bits sit just below the sign: the word without its sign is at least
            # the threshold moved there exactly when they are (the bits below do not matter)
            shift = kind(self._c_shift)
            # (in the remainder's array, which is not filled yet)
            unsigned = np.bitwise_and(fair, kind(self._signless), out=scratch.remainder.view(fair.dtype)[:count])
            open_flags = np.greater_equal(unsigned, kind(self._open_threshold), out=scratch.flags[1, :count])
            # both rare: one pass finds them
            either = np.flatnonzero(np.bitwise_or(unsure_flags, open_flags, out=scratch.flags[2, :count]))
            unsure, open_ = either[unsure_flags[either]], either[open_flags[either]]
            wc = (fair[open_] >> shift) & kind((1 << self._c_bits) - 1)
        else:
            unsure = np.flatnonzero(unsure_flags)
        quotient = np.right_shift(entry, np.uint32(16), out=entry)
        if unsure.size:
            quotient[unsure] = self._search_quotients(w[unsure], bits)
        if not m:
            return fair, quotient, None
        remainder = np.bitwise_and(fair, kind((1 << self._fair_digits) - 1), out=scratch.remainder.view(fair.dtype)[:count])
        if words.high is not None:  # L's digits past the fair word's, from their byte
            high = np.bitwise_and(words.high, np.uint8((1 << self._high_digits) - 1)).astype(kind)
            remainder |= high << kind(self._fair_digits)
        if first is not None:
            open_ = np.flatnonzero(first >= self.zero_threshold)
            wc = first[open_]
        if open_.size:  # not proved C = 0
            more = np.uint64(self._c_bits)
            extended = (wc.astype(np.uint64) << (np.uint64(_WORD) - more)) | (bits.random_raw(open_.size) >> more)
            corrections: np.ndarray = self._corrections(extended, bits).astype(fair.dtype)
            remainder[open_] &= np.invert(corrections)
        return fair, quotient, remainder

    def _guide_entries(self, w: np.ndarray, scratch: _RoundBuffers, count: int) -> tuple[np.ndarray, np.ndarray]:
        """The guide table's entries for V's 32-bit prefixes ``w`` less their low halves (the
        high half is V), and the flags of those it leaves open."""
        cells = np.right_shift(w, np.uint32(_PREFIX_BITS - _GUIDE_BITS), out=scratch.cells[:count], casting="unsafe")
        # "wrap" (the cells are all in range) spares take the copy that "raise" makes of its output
        entry = self._word_guide.take(cells, out=scratch.entry[:count], mode="wrap")
        entry -= w  # the entry less w's low half: high half V; low half 0xFFFF: a tie (see the guide table)
        # ties (and, in cells with no threshold, a zero low half: harmless) and flagged cells
        # (bit 31 set): the entry with bits 16..30 set is then at least 0x7FFFFFFF
        marked = np.bitwise_or(entry, np.uint32(0x7FFF0000), out=scratch.work[:count])
        return entry, np.greater_equal(marked, np.uint32(0x7FFFFFFF), out=scratch.flags[0, :count])

    def _search_quotients(self, w: np.ndarray, bits: np.random.BitGenerator) -> np.ndarray:
        """V for prefixes the guide table leaves open: a binary search, then more bits on ties."""
        at_most = np.searchsorted(self._ascending, w, side="right")
        quotient = (self._ascending.size - at_most).astype(np.uint16)  # thresholds above w: V >= v proved
        for index in np.flatnonzero(self._at_most.take(at_most) == w).tolist():
            quotient[index] = self._resolve_quotient(int(w[index]), int(quotient[index]), bits)
        return quotient

    def _resolve_quotient(self, first: int, proved: int, bits: np.random.BitGenerator) -> int:
        """V given U's first 32 bits, when ``T_v == first`` for the next v (or ``first == 0``: the tail)."""
        uniform = _LazyUniform(first, _PREFIX_BITS, bits)
        table = self.quotient_thresholds
        v = proved
        while True:
            candidate = v + 1
            threshold = int(table[candidate - 1]) if candidate <= table.size else 0
            if threshold < first or not uniform.below(self._quotient_bounds(candidate)):
                return v  # U >= exp(-gamma candidate)
            if candidate >= _SEARCH_FLAG:  # probability below exp(-2**6) per draw
                raise PriveletError("internal error: a noise draw passed the exact sampler's range")
            v = candidate

    def _corrections(self, wc: np.ndarray, bits: np.random.BitGenerator) -> np.ndarray:
        """C for the draws whose uniform (64-bit prefixes ``wc``) is not proved below ``P(C = 0)``."""
        count = np.searchsorted(self.below_thresholds, wc, side="left")  # thresholds proved below U
        for index in np.flatnonzero(self._tie_by_count.take(count) == wc).tolist():
            count[index] = self._resolve_top(int(wc[index]), bits) + 1
        corrections = self._top_by_count.take(count)  # C's highest set bit (none: C = 0)
        # The bits below each top: all zero unless a fresh uniform is not below R(top, 0)
        # (probability about c_top); those few are followed down bit by bit.
        lower = np.flatnonzero(count > 1)
        if lower.size:
            words = bits.random_raw(lower.size)
            counts = count[lower]
            for row in np.flatnonzero(words >= self._lower_by_count.take(counts)).tolist():
                corrections[lower[row]] |= np.uint64(self._lower_bits(int(counts[row]) - 1, int(words[row]), bits))
        return corrections

    def _lower_bits(self, u: int, first: int, bits: np.random.BitGenerator) -> int:
        """C's bits below its set bit ``u``, given the first 64 bits of the uniform that decides
        the highest of them: the largest j with ``U >= R(u, j)`` (none if ``U < R(u, 0)``), and
        then the same below j with a fresh uniform."""
        value = 0
        while u > 0:
            uniform = _LazyUniform(first, _WORD, bits)
            table = self.lower_thresholds[u]
            highest = -1
            for j in range(u - 1, -1, -1):
                threshold = int(table[j])
                if threshold < first or (threshold == first and not uniform.below(partial(self._lower_bounds, u, j))):
                    highest = j
                    break
            if highest < 0:
                return value
            value |= 1 << highest
            u = highest
            first = int(bits.random_raw())
        return value

    def _resolve_top(self, first: int, bits: np.random.BitGenerator) -> int:
        """C's highest set bit (-1: C = 0) when U's first 64 bits equal a threshold."""
        uniform = _LazyUniform(first, _WORD, bits)
        for j in range(self.low_bits - 1, -1, -1):  # the largest j with U >= P(C < 2**j)
            threshold = int(self.below_thresholds[j])
            if threshold < first or (threshold == first and not uniform.below(self.below_bounds[j])):
                return j
        return -1

    def _negative(self, fair: np.ndarray) -> np.ndarray:
        return (fair >> fair.dtype.type(self._fair_bits - 1)).astype(bool)

    def draw(self, rng: np.random.Generator, count: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``count`` draws as (negative, V, L), int64 arrays but the first: ``Z = (-1)**negative (V 2**M + L)``."""
        negative = np.empty(count, dtype=bool)
        quotient = np.empty(count, dtype=np.int64)
        remainder = np.empty(count, dtype=np.int64)
        bits = rng.bit_generator
        for start in range(0, count, _CHUNK):
            part = slice(start, min(start + _CHUNK, count))
            fair, v, low = self._parts(bits, part.stop - part.start)
            neg = self._negative(fair)
            negative[part], quotient[part], remainder[part] = neg, v, low
            again = np.flatnonzero(neg & (v == 0) & (low == 0)) + start
            while again.size:  # CKS: start again on "-0" (negative with Y = 0)
                fair, v, low = self._parts(bits, again.size)
                neg = self._negative(fair)
                negative[again], quotient[again], remainder[again] = neg, v, low
                again = again[neg & (v == 0) & (low == 0)]
        return negative, quotient, remainder

    def add(self, units: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """``units + Z`` (exactly, then as float64) for integer ``units`` (float64 or int64).

        When ``|Z|`` stays below 2**52 by construction (V below 2**15, ``M <= 37``) and the
        units are float64 (below 2**52), the sum is formed in float64, exactly; otherwise
        in int64 limbs.
        """
        shift = self.low_bits
        if units.dtype != np.float64 or shift > 52 - _QUOTIENT_BITS:
            negative, quotient, remainder = self.draw(rng, units.size)
            sign = 1 - 2 * negative.astype(np.int64)
            quotient *= sign
            remainder *= sign
            return add_in_limbs(units.reshape(-1), quotient, remainder, shift).reshape(units.shape)
        flat = units.reshape(-1)  # a copy if units is not C-contiguous: the result is flat
        bits = rng.bit_generator
        # the compiled loops read C's first bits from the fair word: always so for float64 sums
        loops = _compiled.sampler_loops() if self._packed or not self.low_bits else None
        add_round: Callable[[np.ndarray], np.ndarray] = (
            partial(self._add_round, bits, buffers=_thread_buffers()) if loops is None
            else partial(self._add_round_compiled, loops, bits, scratch=_thread_scratch()))
        for start in range(0, flat.size, _CHUNK):
            part = flat[start : start + _CHUNK]
            # |units| < 2**52 and |noise| < 2**52: every sum is exact, in whatever order
            again = add_round(part)
            if again.size:  # CKS: start again on "-0"
                noise = np.zeros(again.size)
                pending = np.arange(again.size)
                while pending.size:
                    noise[pending], still = self._float_noise(bits, pending.size, None)
                    pending = pending[still]
                part[again] += noise
        return flat.reshape(units.shape)

    def _add_round(self, bits: np.random.BitGenerator, part: np.ndarray, buffers: _RoundBuffers) -> np.ndarray:
        """Add one round of draws to ``part`` but its "-0" draws, whose positions it returns."""
        noise, again = self._float_noise(bits, part.size, buffers)
        part += noise  # zero at the "-0" draws
        return again

    def _add_round_compiled(
        self, loops: _compiled.SamplerLoops, bits: np.random.BitGenerator, part: np.ndarray, scratch: _RoundScratch,
    ) -> np.ndarray:
        """:meth:`_add_round` in the compiled ``loops``: the common draws added and the rare ones
        sorted out in one loop; once the bits that :meth:`_decide` draws for those are drawn here
        (V's ties, then C's uniforms, then the words for C's lower bits), they are added by the
        last. The same bits in the same order, the same values; a round takes four compiled calls
        and three of the generator, where :meth:`_decide`'s order took some forty numpy calls."""
        words = self._words(bits, part.size)
        fair, w = words.fair, words.prefixes
        high = scratch.no_high if words.high is None else words.high
        rows, params = scratch.rows, self._round_params
        rare_count, again_count, tie_count, open_count = loops.add_round(
            part, fair, high, w, self._word_guide, self._ascending, self._at_most, params, rows, scratch.first_c)
        again = rows[_compiled.AGAIN, :again_count]
        if not rare_count:
            return again
        rare, quotients = rows[_compiled.RARE], rows[_compiled.QUOTIENTS]
        for index in rows[_compiled.TIES, :tie_count].tolist():  # V's ties first (their bits)
            quotients[index] = self._resolve_quotient(int(w[rare[index]]), int(quotients[index]), bits)
        if open_count:  # then C's uniforms (theirs)
            self._open_corrections(loops, bits, scratch, open_count)
        redraw_count = loops.add_rare(part, fair, high, params, rows, rare_count)
        return np.union1d(again, rows[_compiled.LOWER, :redraw_count]) if redraw_count else again

    def _open_corrections(self, loops: _compiled.SamplerLoops, bits: np.random.BitGenerator, scratch: _RoundScratch,
                          open_count: int) -> None:
        """:meth:`_corrections` of the round's opened draws (C not proved 0), into the scratch's
        row of corrections: the same bits, drawn in the same order."""
        rows, extended = scratch.rows, scratch.first_c[:open_count]
        top_ties, lower_count = loops.open_counts(extended, bits.random_raw(open_count), self._round_params,
                                                  self.below_thresholds, self._tie_by_count, self._top_by_count, rows)
        if top_ties:
            counts = rows[_compiled.COUNTS]
            for index in rows[_compiled.TIES, :top_ties].tolist():
                counts[index] = self._resolve_top(int(extended[index]), bits) + 1
            lower_count = loops.open_tops(self._top_by_count, rows, open_count)
        if not lower_count:
            return
        words = bits.random_raw(lower_count)
        for row in rows[_compiled.TIES, : loops.lower_rows(words, self._lower_by_count, rows)].tolist():
            opened = int(rows[_compiled.LOWER, row])
            lower = self._lower_bits(int(rows[_compiled.COUNTS, opened]) - 1, int(words[row]), bits)
            rows[_compiled.CORRECTIONS, rows[_compiled.OPENED, opened]] |= lower

    def _float_noise(
        self, bits: np.random.BitGenerator, count: int, buffers: _RoundBuffers | None
    ) -> tuple[np.ndarray, np.ndarray]:
        """One round of draws as float64 (exact integers), in ``buffers`` if given, and the
        positions of its "-0" draws (to be drawn again; their values there are zeros)."""
        scratch = _RoundBuffers(count) if buffers is None else buffers
        return self._as_floats(*self._round(bits, count, scratch), scratch)

    def _as_floats(
        self, fair: np.ndarray, quotient: np.ndarray, remainder: np.ndarray | None, scratch: _RoundBuffers
    ) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`_float_noise` of a round's (fair words, V, L)."""
        count = fair.size
        noise = scratch.noise[:count]
        low = scratch.cells.view(np.float64)[:count]  # the guide's cells are no longer needed
        zeros = scratch.flags[2, :count]
        if fair.dtype == np.uint32:
            # The sign (the fair word's top bit) as -1 or 1, on V and L before they are
            # converted: V 2**M and L are then exact floats of the same sign.
            signs = np.right_shift(fair.view(np.int32), 31, out=scratch.work.view(np.int32)[:count])
            signs |= 1
            np.copyto(noise, np.multiply(quotient.view(np.int32), signs, out=quotient.view(np.int32)))
            if remainder is not None:
                noise *= 2.0**self.low_bits
                np.copyto(low, np.multiply(remainder.view(np.int32), signs, out=remainder.view(np.int32)))
                noise += low
            zero = np.flatnonzero(np.equal(noise, 0.0, out=zeros))
            return noise, zero[signs[zero] < 0]
        np.copyto(noise, quotient.view(np.int32))  # V < 2**15: read as signed, the cheaper conversion
        if remainder is not None:
            noise *= 2.0**self.low_bits
            np.copyto(low, remainder.view(np.int64))  # L < 2**37
            noise += low
        # The sign: the fair word's top bit, set in the float's sign bit (the magnitude is +0 or
        # more); the fair words are not read again.
        np.bitwise_or(noise.view(np.uint64), np.bitwise_and(fair, _MINUS_ZERO, out=fair), out=noise.view(np.uint64))
        return noise, np.flatnonzero(np.equal(noise.view(np.uint64), _MINUS_ZERO, out=zeros))


class _RoundWords(NamedTuple):
    """One round's random words: the fair words (32 or 64 bits), V's 32-bit prefixes, C's first
    16 bits where the fair word has no room for them (else None), and the bytes whose low bits
    are L's digits past the fair word's (else None)."""

    fair: np.ndarray
    prefixes: np.ndarray
    first_c: np.ndarray | None
    high: np.ndarray | None


class _RoundBuffers:
    """Scratch arrays for one round of :meth:`ExactSampler.add`'s draws, reused round after
    round by one thread (threads share a sampler, so each has its own)."""

    def __init__(self, size: int = _CHUNK):
        self.cells = np.empty(size, dtype=np.intp)  # the guide's cells, then L as float64
        self.entry = np.empty(size, dtype=np.uint32)  # guide entries, then V
        self.work = np.empty(size, dtype=np.uint32)  # intermediate words
        self.remainder = np.empty(size, dtype=np.uint64)  # L (its 32-bit view for 32-bit fair words)
        self.flags = np.empty((3, size), dtype=bool)  # V open, C open, either (or a "-0")
        self.noise = np.empty(size)


class _RoundScratch:
    """Scratch arrays for one round of the compiled loops' draws (:meth:`ExactSampler._add_round_compiled`),
    reused round after round by one thread: the rows named in :mod:`._compiled` (the rare draws'
    places and values), and C's first bits of the opened ones, then their uniforms' first 64 bits."""

    def __init__(self, size: int = _CHUNK):
        self.rows = np.empty((_compiled.ROUND_ROWS, size), dtype=np.int64)
        self.first_c = np.empty(size, dtype=np.uint64)
        self.no_high = np.empty(0, dtype=np.uint8)  # the loops' L bytes where all of L is in the fair word


_local = threading.local()


def _thread_buffers() -> _RoundBuffers:
    """This thread's :class:`_RoundBuffers` (made on its first round of numpy passes)."""
    buffers: _RoundBuffers | None = getattr(_local, "buffers", None)
    if buffers is None:
        buffers = _local.buffers = _RoundBuffers()
    return buffers


def _thread_scratch() -> _RoundScratch:
    """This thread's :class:`_RoundScratch` (made on its first round of compiled loops)."""
    scratch: _RoundScratch | None = getattr(_local, "scratch", None)
    if scratch is None:
        scratch = _local.scratch = _RoundScratch()
    return scratch


@lru_cache(maxsize=32)
def exact_sampler(theta: Fraction) -> ExactSampler:
    """The shared :class:`ExactSampler` for ``theta`` (its tables take a few milliseconds to build)."""
    return ExactSampler(theta)


def exact_discrete_laplace(rng: np.random.Generator, count: int, theta: Fraction) -> list[int]:
    """``count`` exact draws with ``P(Z = z)`` proportional to ``exp(-theta |z|)``, as Python ints.

    Examples
    --------
    >>> draws = exact_discrete_laplace(np.random.default_rng(1), 5, Fraction(1, 3))
    >>> len(draws), all(isinstance(z, int) for z in draws)
    (5, True)
    """
    sampler = exact_sampler(Fraction(theta))
    negative, quotient, remainder = sampler.draw(rng, count)
    shift = sampler.low_bits
    return [
        (-1 if neg else 1) * ((int(v) << shift) + int(low))
        for neg, v, low in zip(negative.tolist(), quotient.tolist(), remainder.tolist(), strict=True)
    ]

