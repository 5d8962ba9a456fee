"""Reading a block of M: the counts checked and converted to int64 in one pass."""

from __future__ import annotations

import numpy as np
from numba import njit

#: What :func:`checked_counts` found: every count fine, or the first kind of bad count.
FINE = 0
NEGATIVE = 1
FRACTIONAL = 2
NOT_FINITE = 3
TOO_LARGE = 4

# Counts must stay below this (float64 holds every integer below it exactly).
_EXACT = 2.0**53


@njit(cache=True, nogil=True, error_model="numpy")
def checked_counts(counts: np.ndarray, out: np.ndarray) -> tuple[int, np.int64]:  # pragma: no cover - compiled
    """Convert float64 ``counts`` (flat) to int64 ``out``, checking that each is a non-negative
    integer below 2**53; returns (:data:`FINE` or the first problem, the total)."""
    total = np.int64(0)
    problem = FINE
    for i in range(counts.shape[0]):
        value = counts[i]
        if not (value >= 0.0 and value < _EXACT):  # NaN fails both
            if value != value or value == np.inf or value == -np.inf:
                problem = NOT_FINITE
            elif value < 0.0:
                problem = NEGATIVE
            else:
                problem = TOO_LARGE
            break
        whole = np.int64(value)
        if whole != value:
            problem = FRACTIONAL
            break
        out[i] = whole
        total += whole
    return problem, total
