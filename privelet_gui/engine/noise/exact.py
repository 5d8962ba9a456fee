"""The exact sampler: discrete Laplace in integer arithmetic (docs/math.md, "The exact sampler").

It draws ``Z`` with ``P(Z = z)`` proportional to ``exp(-theta |z|)`` *exactly*, for
``theta = epsilon / D`` held as an exact rational: no floating-point step decides any sample;
every decision compares random bits with the floor of an exact probability, and reads more
bits only when they are equal. The construction is Canonne, Kamath and Steinke's (2020): a
sign B and a geometric magnitude Y, starting again on ``B = 1, Y = 0``; here Y is drawn in two
independent parts, ``Y = V 2**M + L``, V geometric with rate ``gamma = theta 2**M`` in
``(2**-9, 2**-8]`` by inversion, and L's M binary digits as ``F and not C`` for fair bits F and a
rarely non-zero C whose bits are drawn from the top down by inversion.

This module builds the thresholds once per theta (Python integers, proved bounds), and draws
the rare values the compiled loop leaves to it: those whose bits tie a threshold, which only
arbitrary precision decides. Both follow the same bit protocol, word for word.
"""

from __future__ import annotations

from collections.abc import Callable
from fractions import Fraction
from functools import lru_cache, partial

import numpy as np

from ..errors import InternalError, PriveletError
from ..kernels.noise import GUIDE_BITS, LOWER_PREFIX_BITS, SEARCH_FLAG, V_PREFIX_BITS
from .bits import BlockCipher

__all__ = ["RATE_BITS", "ExactSampler", "WordStream", "exact_sampler", "exp_neg_bounds"]

Bounds = Callable[[int], tuple[int, int]]

#: The default ``rate_bits`` b of :class:`ExactSampler`: gamma = theta 2**M lies in (2**-(b + 1), 2**-b],
#: so that V takes about 22 / gamma < 2**14 values above its 32-bit prefix's floor, and C is non-zero
#: with probability below 2**-(b + 1). A speed and table-size choice: the law of the noise is the same.
RATE_BITS = 8
_WORD = 64
# V's ties at 32 bits are decided by one more word: its thresholds are also kept at 32 + 64 bits.
_V_EXTENDED_BITS = V_PREFIX_BITS + _WORD


def _ceil_shift(value: int, shift: int) -> int:
    """``ceil(value / 2**shift)``."""
    return -((-value) >> shift)


def exp_neg_bounds(x: Fraction, precision: int) -> tuple[int, int]:
    """Integers ``lo <= 2**precision * exp(-x) <= hi`` for a rational ``x >= 0``, close together.

    ``exp(-y)`` for ``y = x / 2**s <= 1/2`` is the alternating series ``sum (-y)^k / k!``, whose
    terms shrink: its partial sums bracket it, and each term is computed in fixed point rounded
    down and up. Squaring ``s`` times (rounding outwards) gives ``exp(-x)``; guard bits absorb the
    error that the squarings double.

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
    """``floor(2**width p)`` for the irrational p in (0, 1] that ``bounds`` brackets."""
    extra = 32
    while extra <= 1 << 14:
        lo, hi = bounds(width + extra)
        if lo >> extra == hi >> extra:
            return lo >> extra
        extra *= 2
    raise InternalError("a noise threshold could not be separated from a multiple of 2**-width")


def _outward_div(num_lo: int, num_hi: int, den_lo: int, den_hi: int, scale: int) -> tuple[int, int]:
    """Bounds of ``2**scale * n / d`` for positive n in [num_lo, num_hi], d in [den_lo, den_hi]."""
    lo = (num_lo << scale) // den_hi if den_hi else 0
    hi = -((-(num_hi << scale)) // den_lo) if den_lo else 1 << (scale + num_hi.bit_length() + 1)
    return lo, hi


class WordStream:
    """The 64-bit words of one measurement's stream, block 0 first (docs/math.md, "Random bits")."""

    def __init__(self, cipher: BlockCipher, position: int):
        self.cipher = cipher
        self.position = position
        self.block = 0
        self.words: list[int] = []

    def next(self) -> int:
        if not self.words:
            inputs = np.array([[self.position, self.block]], dtype=np.uint64)
            self.words = [int(w) for w in self.cipher.blocks(inputs)[0]][::-1]
            self.block += 1
        return self.words.pop()


class _LazyUniform:
    """A uniform U in [0, 1) known by its first ``known`` bits; more words follow on demand."""

    def __init__(self, prefix: int, known: int, stream: WordStream):
        self.prefix = prefix
        self.known = known
        self.stream = stream

    def below(self, floor_at: Callable[[int], int]) -> bool:
        """Whether U < p, for the p whose ``floor(2**width p)`` is ``floor_at(width)``: decided
        at the bits known unless they equal that floor, then one more word at a time."""
        while True:
            threshold = floor_at(self.known)
            if self.prefix != threshold:
                return self.prefix < threshold
            self.prefix = (self.prefix << _WORD) | self.stream.next()
            self.known += _WORD


class ExactSampler:
    """Exact discrete Laplace noise with rate ``theta`` per grid unit (see the module docstring).

    The tables are built when the sampler is made (a few milliseconds) and only read afterwards:
    threads share one sampler. ``rate_bits`` (default :data:`RATE_BITS`) sizes M, so that the rare
    paths (C non-zero, a tie) have probability below ``2**-(rate_bits + 1)``; tests make them common
    with a small one. The law of the noise does not depend on it.
    """

    name = "exact"

    def __init__(self, theta: Fraction, *, rate_bits: int = RATE_BITS):
        if theta <= 0:
            raise PriveletError(f"the noise rate must be positive, got {theta}")
        self.theta = Fraction(theta)
        # M, the bits of the remainder L: gamma = theta 2**M in (2**-(b+1), 2**-b] (M = 0 for larger theta)
        ratio = Fraction(1, 1 << rate_bits) / self.theta
        low_bits = max(0, ratio.numerator.bit_length() - ratio.denominator.bit_length() + 1)
        while low_bits and (1 << low_bits) > ratio:
            low_bits -= 1
        if low_bits > 60:
            raise InternalError("the noise scale passes the exact sampler's range (the calibration caps it)")
        self.low_bits = low_bits
        self.gamma = self.theta * (1 << low_bits)
        self._build_quotient_tables()
        self._build_remainder_tables()

    @property
    def common_tables(self) -> tuple[int, np.ndarray, np.uint64]:
        """What :func:`~privelet_gui.engine.kernels.noise.exact_noise` reads: M, the guide table,
        and the prefix of C's uniform from which C is not proved 0."""
        zero = self.below_thresholds[0] if self.low_bits else np.uint64(np.iinfo(np.uint64).max)
        return self.low_bits, self.word_guide, np.uint64(zero)

    @property
    def protocol_tables(self) -> tuple[int, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """What :func:`~privelet_gui.engine.kernels.noise.exact_draws` reads."""
        return (self.low_bits, self.quotient_thresholds, self.quotient_remainders, self.below_thresholds,
                self.lower_first, self.lower_next)

    # -- tables ------------------------------------------------------------------------------
    def _quotient_floor(self, v: int, width: int) -> int:
        """``floor(2**width exp(-gamma v))``."""
        if v == 0:
            return 1 << width
        return _threshold(partial(exp_neg_bounds, self.gamma * v), width)

    def _build_quotient_tables(self) -> None:
        """``T_v = floor(2**32 exp(-gamma v))`` for v = 1.. while positive, then one 0 (the tail: a
        prefix of 0 ties it), with ``floor(2**96 exp(-gamma v)) - T_v 2**64`` for the ties, and
        the guide table on the thresholds' top 16 bits."""
        gamma, width = self.gamma, _V_EXTENDED_BITS
        floors: list[int] = []
        if gamma < V_PREFIX_BITS:  # otherwise exp(-gamma) < 2**-32: no positive threshold at all
            extra = 48  # exp(-gamma) ** v by repeated multiplication: error about v units
            bits = width + extra
            base_lo, base_hi = exp_neg_bounds(gamma, bits)
            lo, hi = base_lo, base_hi
            v = 1
            while hi >> (extra + _WORD):
                value = lo >> extra
                if value != hi >> extra:  # rare: the bracket meets a multiple of 2**-96; tighten it
                    value = self._quotient_floor(v, width)
                if not value >> _WORD:
                    break
                floors.append(value)
                v += 1
                lo = (lo * base_lo) >> bits
                hi = _ceil_shift(hi * base_hi, bits)
        floors.append(self._quotient_floor(len(floors) + 1, width))  # below 2**64: its 32-bit floor is 0
        mask = (1 << _WORD) - 1
        self.quotient_thresholds = np.array([f >> _WORD for f in floors], dtype=np.uint32)  # decreasing
        self.quotient_remainders = np.array([f & mask for f in floors], dtype=np.uint64)
        positive = self.quotient_thresholds[:-1]
        if len(positive) >= SEARCH_FLAG >> 17:
            raise InternalError("V's thresholds overflow the guide table's entries")
        # V for a prefix in cell c (its top 16 bits) is the number of thresholds in higher cells,
        # plus one if the cell's single threshold is above the prefix. Cells holding several
        # thresholds are searched instead (the flag), and so is cell 0, which holds the tail.
        # A prefix in the cell shares its threshold's top bits, so only the low halves t (of the
        # threshold) and l (of the prefix) are compared, by one subtraction: an entry is
        # ``(base + 1) 2**16 + t - 1`` (t = 0 in a cell without threshold), and ``entry - l`` has
        # the high half ``base + [l < t]`` and the low half 0xFFFF exactly when ``l == t``, a tie.
        shift = V_PREFIX_BITS - GUIDE_BITS
        cells = (positive >> np.uint32(shift)).astype(np.intp)
        counts = np.bincount(cells, minlength=1 << GUIDE_BITS)
        base = (len(positive) - np.cumsum(counts)).astype(np.int64)
        search = counts > 1
        search[0] = True
        low_half = np.zeros(1 << GUIDE_BITS, dtype=np.int64)
        single = (counts == 1)[cells]
        low_half[cells[single]] = positive[single] & np.uint32((1 << shift) - 1)
        entries = ((base + 1) << 16) + low_half - 1
        entries[search] = SEARCH_FLAG | 0xFFFF
        # The draws read the entries plus their cell's own top bits (modulo 2**32), so that
        # subtracting the whole prefix subtracts its low half.
        positions = np.arange(1 << GUIDE_BITS, dtype=np.int64) << shift
        self.word_guide = ((entries + positions) & 0xFFFFFFFF).astype(np.uint32)

    def _build_remainder_tables(self) -> None:
        """``floor(2**(64 - M) P(C < 2**j))`` for j < M (C's highest bit), and
        ``floor(2**23 R(u, j))``, ``floor(2**64 R(u, j))`` for ``j < u < M`` (its lower bits)."""
        m = self.low_bits
        width = _WORD - m
        self.below_thresholds = np.array([_threshold(partial(self._below_bounds, j), width) for j in range(m)],
                                         dtype=np.uint64)
        if m == 0:
            self.below_thresholds = np.zeros(1, dtype=np.uint64)  # never read (no L)
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
        self.lower_next = table
        self.lower_first = table >> np.uint64(_WORD - LOWER_PREFIX_BITS)  # floor(floor(2**64 R) / 2**41)

    def _lower_bounds(self, u: int, j: int, precision: int) -> tuple[int, int]:
        """Bounds of ``2**precision R(u, j)``, ``R(u, j) = P(C < 2**j) / P(C < 2**u)``: the
        probability that C's bits ``j .. u - 1`` are all zero."""
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

    # -- the exact draw, for what the compiled loop leaves ----------------------------------------
    def draw(self, stream: WordStream) -> int:
        """One draw from a measurement's stream, every comparison exact (the protocol of the
        compiled :func:`~privelet_gui.engine.kernels.noise.exact_draw`, ties decided by more words)."""
        m = self.low_bits
        while True:
            a, b = stream.next(), stream.next()
            negative = a >> 63
            quotient = self._quotient(_LazyUniform((a >> LOWER_PREFIX_BITS) & ((1 << V_PREFIX_BITS) - 1),
                                                   V_PREFIX_BITS, stream))
            low = 0
            if m:
                correction = 0
                top = self._top_bit(_LazyUniform(b >> m, _WORD - m, stream))
                if top >= 0:
                    correction = 1 << top
                    uniform = _LazyUniform(a & ((1 << LOWER_PREFIX_BITS) - 1), LOWER_PREFIX_BITS, stream)
                    level = top
                    while level > 0:
                        if uniform.known == 0:  # a fresh uniform: the next word
                            uniform = _LazyUniform(stream.next(), _WORD, stream)
                        below = self._highest_below(level, uniform)
                        if below < 0:
                            break
                        correction |= 1 << below
                        level = below
                        uniform = _LazyUniform(0, 0, stream)
                low = (b & ((1 << m) - 1)) & ~correction
            if negative and quotient == 0 and low == 0:
                continue
            magnitude = (quotient << m) + low
            return -magnitude if negative else magnitude

    def _quotient(self, uniform: _LazyUniform) -> int:
        """V: the largest v with ``U < exp(-gamma v)``, deciding v = 1, 2, ... in turn."""
        thresholds, remainders = self.quotient_thresholds, self.quotient_remainders
        v = 0
        while True:
            candidate = v + 1

            def floor_at(width: int, candidate: int = candidate) -> int:
                if candidate <= len(thresholds):
                    if width == V_PREFIX_BITS:
                        return int(thresholds[candidate - 1])
                    if width == _V_EXTENDED_BITS:
                        return int(thresholds[candidate - 1]) << _WORD | int(remainders[candidate - 1])
                return self._quotient_floor(candidate, width)

            if not uniform.below(floor_at):
                return v
            v = candidate

    def _top_bit(self, uniform: _LazyUniform) -> int:
        """C's highest set bit (-1 when C = 0): the count of j with ``U >= P(C < 2**j)``, less one."""
        count = 0
        for j in range(self.low_bits):
            if uniform.below(partial(self._below_floor, j)):
                break
            count += 1
        return count - 1

    def _below_floor(self, j: int, width: int) -> int:
        if width == _WORD - self.low_bits:
            return int(self.below_thresholds[j])
        return _threshold(partial(self._below_bounds, j), width)

    def _highest_below(self, level: int, uniform: _LazyUniform) -> int:
        """The highest set bit of C below ``level`` (-1: none): ``U < R(level, 0)`` says none;
        otherwise the largest j with ``U >= R(level, j)``, tried from ``level - 1`` down."""
        if uniform.below(partial(self._lower_floor, level, 0)):
            return -1
        for j in range(level - 1, -1, -1):
            if not uniform.below(partial(self._lower_floor, level, j)):
                return j
        raise InternalError("C's lower bits: U >= R(u, 0) but below every R(u, j)")

    def _lower_floor(self, u: int, j: int, width: int) -> int:
        if width == LOWER_PREFIX_BITS:
            return int(self.lower_first[u, j])
        if width == _WORD:
            return int(self.lower_next[u, j])
        return _threshold(partial(self._lower_bounds, u, j), width)


@lru_cache(maxsize=32)
def exact_sampler(theta: Fraction, *, rate_bits: int = RATE_BITS) -> ExactSampler:
    """The shared :class:`ExactSampler` for ``theta`` and ``rate_bits`` (its tables take milliseconds to build)."""
    return ExactSampler(theta, rate_bits=rate_bits)
