"""Adding the noise to a block's numerators: rounding to the grid, drawing, and the rare draws.

:meth:`NoiseSampler.add` takes a block's numerators chunk by chunk: it asks AES for each
measurement's block 0, runs the compiled loop over the chunk, then serves the few draws it left:
those that need more of their stream's blocks (the compiled loop again, with blocks 1 to n), and
the exact ties, which :meth:`~privelet_gui.engine.noise.exact.ExactSampler.draw` decides in
arbitrary precision (docs/math.md, "Random bits").
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction
from functools import partial

import numpy as np

from ..errors import InternalError
from ..kernels import noise as kernels
from .bits import BlockCipher
from .calibration import NoiseCalibration, Sampler, check_sampler
from .exact import RATE_BITS, ExactSampler, WordStream, exact_sampler

__all__ = ["FLOAT_SCALE_BITS", "NoiseSampler", "SamplerSizing", "StandardParameters", "noise_sampler"]

# Draws per chunk: their AES blocks and statuses stay in the CPU cache.
CHUNK = 1 << 15
#: What noising holds per thread: a chunk's AES inputs, its blocks (and OpenSSL's buffer), the
#: draws' two parts, statuses and guide entries.
CHUNK_BYTES = CHUNK * (16 + 16 + 16 + 3 * 8 + 4)
# Blocks of a draw's stream read at once when block 0 did not suffice.
_MORE_BLOCKS = 2
#: The default ``float_scale_bits`` of :class:`StandardParameters`: up to a scale of 2**this (grid
#: units) the standard sampler's S E + c resolves single units; above it the draw is split.
FLOAT_SCALE_BITS = 40

_NO_FLAT = np.empty(0, dtype=np.int64)


@dataclass(frozen=True)
class SamplerSizing:
    """The samplers' sizing knobs: table sizes and where a draw takes its slower path, never the
    law of the noise. The defaults are the release's; tests make the rare paths common with
    small ones.

    Parameters
    ----------
    rate_bits
        The exact sampler's b (:class:`~privelet_gui.engine.noise.exact.ExactSampler`): its rare
        paths have probability below ``2**-(b + 1)``.
    float_scale_bits
        The standard sampler's split (:class:`StandardParameters`): above a scale of
        ``2**float_scale_bits`` grid units a draw is a quotient and low bits.
    """

    rate_bits: int = RATE_BITS
    float_scale_bits: int = FLOAT_SCALE_BITS


class StandardParameters:
    """The standard sampler (docs/math.md, "The standard sampler"): ``|Z| = floor(S E + c)`` with
    ``E = -log V``, ``S = 1 / theta``, ``c = S log(2 / (1 + a))``; above ``2**float_scale_bits``
    (default 2**40) grid units a quotient by inversion at ``S / 2**m`` and m low bits by rejection."""

    name = "standard"

    def __init__(self, theta: Fraction, *, float_scale_bits: int = FLOAT_SCALE_BITS):
        self.theta = float(theta)
        scale = 1 / theta
        self.scale = float(scale)
        self.offset = -math.log1p(math.expm1(-self.theta) / 2) / self.theta
        self.split_bits = max(0, math.ceil(math.log2(scale)) - float_scale_bits) if scale > 1 else 0
        self.block_scale = float(scale / (1 << self.split_bits))


class NoiseSampler:
    """The named sampler of one calibration, ready to noise blocks (threads share it); ``sizing``
    sizes its tables and slow paths (:class:`SamplerSizing`, the release's by default)."""

    def __init__(self, name: Sampler, calibration: NoiseCalibration, *, sizing: SamplerSizing | None = None):
        self.name = check_sampler(name)
        self.calibration = calibration
        sizing = SamplerSizing() if sizing is None else sizing
        theta = calibration.theta
        self.exact: ExactSampler | None = (exact_sampler(theta, rate_bits=sizing.rate_bits) if self.name == "exact"
                                           else None)
        if self.exact is not None:
            self.shift = self.exact.low_bits
            low_bits, word_guide, zero_threshold = self.exact.common_tables
            low_bits, thresholds, remainders, below, lower_first, lower_next = self.exact.protocol_tables
            self._exact_noise: Callable[..., int] | None = partial(
                kernels.exact_noise, low_bits=low_bits, word_guide=word_guide, zero_threshold=zero_threshold,
                v_thresholds=thresholds, v_remainders=remainders, q_thresholds=below, lower_first=lower_first,
                lower_next=lower_next)
            self._draws: Callable[..., int] = partial(
                kernels.exact_draws, low_bits=low_bits, v_thresholds=thresholds, v_remainders=remainders,
                q_thresholds=below, lower_first=lower_first, lower_next=lower_next)
        else:
            standard = StandardParameters(theta, float_scale_bits=sizing.float_scale_bits)
            self.shift = standard.split_bits
            self._exact_noise = None
            self._draws = partial(kernels.standard_draws, scale=standard.scale, offset=standard.offset,
                                  split_bits=standard.split_bits, block_scale=standard.block_scale,
                                  theta=standard.theta)

    def add(
        self, z: np.ndarray, out: np.ndarray, cols: int, den_rows: np.ndarray, den_cols: np.ndarray,
        positions_rows: np.ndarray, positions_cols: np.ndarray, cipher: BlockCipher,
    ) -> None:
        """Noise the numerators ``z`` (int64, flat) into ``out`` (float64, flat): the block seen as
        rows of ``cols`` measurements, with per-row and per-column denominators and positions
        (a measurement's are the products and the sums of its row's and its column's)."""
        k = self.calibration.grid_exponent
        layout = (cols, den_rows, den_cols, 1.0 / den_rows, 1.0 / den_cols, k, self.shift)
        size = min(CHUNK, z.size)
        inputs = np.empty((size, 2), dtype=np.uint64)
        high = np.empty(size, dtype=np.int64)
        low = np.empty(size, dtype=np.int64)
        status = np.empty(size, dtype=np.int64)  # the exact sampler: its pending draws
        entries = np.empty(size, dtype=np.uint32)  # the exact sampler: its guide entries
        for start in range(0, z.size, CHUNK):
            count = min(CHUNK, z.size - start)
            kernels.fill_inputs(inputs[:count], start, cols, positions_rows, positions_cols)
            words = cipher.blocks(inputs[:count])
            if self._exact_noise is not None:
                undecided = status[:self._exact_noise(z, out, start, *layout[:6], words, pending=status, high=high,
                                                      low=low, entries=entries[:count])]
            else:
                self._draws(words, high=high[:count], low=low[:count], status=status[:count])
                kernels.noisy_values(z, out, *layout, high[:count], low[:count], status[:count], start, _NO_FLAT)
                undecided = np.flatnonzero(status[:count] != kernels.DONE)
            if len(undecided):
                self._finish(z, out, start + undecided, inputs[undecided, 0].copy(), words[undecided].copy(), layout,
                             cipher)

    def _finish(self, z: np.ndarray, out: np.ndarray, flat: np.ndarray, positions: np.ndarray, words: np.ndarray,
                layout: tuple, cipher: BlockCipher) -> None:
        """The draws block 0 did not decide: the full protocol again with more blocks of their
        streams until each is done or needs exact comparisons, which :meth:`ExactSampler.draw`
        makes (a draw that needed them on block 0 needs them at the same word with more)."""
        blocks = 1
        exact_flat: list[np.ndarray] = []
        exact_positions: list[np.ndarray] = []
        while len(flat):
            more = np.empty((len(flat), _MORE_BLOCKS, 2), dtype=np.uint64)
            more[:, :, 0] = positions[:, None]
            more[:, :, 1] = np.arange(blocks, blocks + _MORE_BLOCKS)
            words = np.concatenate([words, cipher.blocks(more.reshape(-1, 2)).reshape(len(flat), -1)], axis=1)
            blocks += _MORE_BLOCKS
            status = self._retry(z, out, flat, words, layout)
            exact = status == kernels.EXACT
            exact_flat.append(flat[exact])
            exact_positions.append(positions[exact])
            again = status == kernels.NEED_MORE
            flat, positions, words = flat[again], positions[again], words[again]
        for f, position in zip(np.concatenate(exact_flat).tolist(), np.concatenate(exact_positions).tolist()):
            self._exact_value(z, out, f, position, layout, cipher)

    def _retry(self, z: np.ndarray, out: np.ndarray, flat: np.ndarray, words: np.ndarray,
               layout: tuple) -> np.ndarray:
        """The full protocol for the draws at flat indices ``flat`` with their ``words``; their statuses."""
        high = np.empty(len(flat), dtype=np.int64)
        low = np.empty(len(flat), dtype=np.int64)
        status = np.empty(len(flat), dtype=np.int64)
        self._draws(words, high=high, low=low, status=status)
        kernels.noisy_values(z, out, *layout, high, low, status, 0, flat)  # type: ignore[call-arg]
        return status

    def _exact_value(self, z: np.ndarray, out: np.ndarray, f: int, position: int, layout: tuple,
                     cipher: BlockCipher) -> None:
        if self.exact is None:
            raise InternalError("the standard sampler asked for an exact comparison")
        cols, den_rows, den_cols, _, _, k, shift = layout
        row, column = divmod(f, cols)
        numerator = int(z[f]) << max(-k, 0)
        denominator = int(den_rows[row]) * int(den_cols[column]) << max(k, 0)
        units = (2 * numerator + denominator) // (2 * denominator)  # floor(x + 1/2), as the compiled loop
        out[f] = math.ldexp(exact_float(units + self.exact.draw(WordStream(cipher, position)), shift), k)


def exact_float(total: int, shift: int) -> float:
    """The float64 of an exact noisy integer N, as the compiled loop forms it
    (:func:`~privelet_gui.engine.kernels.noise.noisy_value`): N itself where
    ``-2**62 <= N < 2**62``, else ``hi 2**shift + lo`` from its canonical limbs."""
    if -(1 << 62) <= total < 1 << 62:
        return float(total)
    return float(total >> shift) * math.ldexp(1.0, shift) + float(total & ((1 << shift) - 1))


def noise_sampler(name: Sampler, calibration: NoiseCalibration) -> NoiseSampler:
    """The sampler named ``name`` for ``calibration``."""
    return NoiseSampler(name, calibration)
