"""Drawing noise in tests through the product's own path, and scripted words for rare paths."""

from __future__ import annotations

from fractions import Fraction

import numpy as np

from privelet_gui.engine.noise.bits import BlockCipher
from privelet_gui.engine.noise.calibration import NoiseCalibration
from privelet_gui.engine.noise.exact import WordStream
from privelet_gui.engine.noise.samplers import NoiseSampler, SamplerSizing

KEY = bytes(range(16))


def calibration_for(theta: Fraction) -> NoiseCalibration:
    """A calibration on the grid 1 whose noise rate per grid unit is ``theta`` (epsilon over D)."""
    theta = Fraction(theta)
    return NoiseCalibration(epsilon=float(theta.numerator), neighbours="replace", rho=Fraction(1), influence=1,
                            grid_exponent=0, units=theta.denominator)


def draw(kind: str, theta: Fraction, count: int, key: bytes = KEY, first: int = 0,
         sizing: SamplerSizing | None = None) -> np.ndarray:
    """``count`` draws of the named sampler at rate ``theta``, those of the measurements at
    positions ``first`` on, as the pipeline adds them (to zeros, on the grid 1): float64,
    exact below 2**53. ``sizing``: the sampler's sizing knobs (the release's by default)."""
    calibration = calibration_for(theta)
    assert calibration.theta == Fraction(theta)
    out = np.empty(count)
    NoiseSampler(kind, calibration, sizing=sizing).add(  # type: ignore[arg-type]
        np.zeros(count, dtype=np.int64), out, count, np.ones(1, dtype=np.int64), np.ones(count, dtype=np.int64),
        np.zeros(1, dtype=np.uint64),
        np.arange(first, first + count, dtype=np.uint64), BlockCipher(key),
    )
    return out


class ScriptedStream(WordStream):
    """A measurement's stream whose first words are given, then a real stream's."""

    def __init__(self, words: list[int], position: int, key: bytes = KEY):
        super().__init__(BlockCipher(key), position)
        self.scripted = list(words)

    def next(self) -> int:
        return self.scripted.pop(0) if self.scripted else super().next()
