"""A naive reference release: dense per-axis matrices and Python integers, for a few hundred cells.

It follows docs/math.md step by step, with nothing of the pipeline's blocks, passes, threads or
compiled loops: the Kronecker product of the axes' numerator matrices (exact integers), each
measurement rounded to the grid with Python's integers, the noise of the measurement at global
position p drawn by the exact sampler's arbitrary-precision protocol from its own stream, and the
reconstruction as the Kronecker product of the axes' reconstruction matrices.
"""

from __future__ import annotations

import math
from functools import reduce

import numpy as np

from privelet_gui.engine.noise.bits import BlockCipher
from privelet_gui.engine.noise.calibration import NoiseCalibration
from privelet_gui.engine.noise.exact import WordStream, exact_sampler
from privelet_gui.engine.noise.samplers import exact_float
from privelet_gui.engine.strategies.base import AxisStrategy
from privelet_gui.engine.strategies.plan import StrategyPlan


def numerator_matrix(strategy: AxisStrategy) -> np.ndarray:
    """The integer forward map (n_measurements x size) of one axis."""
    units = np.eye(strategy.size, dtype=np.int64).reshape(1, strategy.size, strategy.size)
    out = np.empty((1, strategy.n_measurements, strategy.size), dtype=np.int64)
    strategy.forward(units, out)
    return out[0]


def measurement_positions(plan: StrategyPlan) -> np.ndarray:
    """The global position of every measurement, in the C order of the measurement shape."""
    grids = np.meshgrid(*[np.arange(n) for n in plan.measurement_shape], indexing="ij")
    return sum(grid.astype(np.int64) * stride for grid, stride in zip(grids, plan.position_strides))


def naive_release(matrix: np.ndarray, plan: StrategyPlan, calibration: NoiseCalibration, key: bytes) -> np.ndarray:
    """The release of integer ``matrix`` (exact sampler) by the reference steps above."""
    counts = [int(v) for v in np.asarray(matrix).ravel()]
    forward = reduce(np.kron, [numerator_matrix(s).astype(object) for s in plan.strategies])
    numerators = forward.dot(np.array(counts, dtype=object))
    dens = reduce(np.kron, [s.denominators.astype(object) for s in plan.strategies])
    k = calibration.grid_exponent
    sampler = exact_sampler(calibration.theta)
    cipher = BlockCipher(key)
    positions = measurement_positions(plan).ravel()
    weighted = []
    for z, den, position in zip(numerators, dens, positions):
        a, b = int(z) << max(-k, 0), int(den) << max(k, 0)
        units = (2 * a + b) // (2 * b)
        weighted.append(math.ldexp(exact_float(units + sampler.draw(WordStream(cipher, int(position))), sampler.low_bits), k))
    reconstruction = reduce(np.kron, [s.reconstruction_matrix() for s in plan.strategies])
    return (reconstruction @ np.array(weighted)).reshape(plan.shape)
