"""Counting rows into M, and reading a block of M: the counts checked and converted to int64 in one pass."""

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
    fine = True
    for i in range(counts.shape[0]):  # without a branch, so that it vectorises; problems are rare
        value = counts[i]
        in_range = (value >= 0.0) & (value < _EXACT)  # NaN fails both
        whole = np.int64(value) if in_range else np.int64(0)
        fine &= in_range & (whole == value)
        out[i] = whole
        total += whole
    if fine:
        return FINE, total
    for i in range(counts.shape[0]):  # the first problem, named
        value = counts[i]
        if value != value or value == np.inf or value == -np.inf:
            return NOT_FINITE, total
        if value < 0.0:
            return NEGATIVE, total
        if value >= _EXACT:
            return TOO_LARGE, total
        if np.int64(value) != value:
            return FRACTIONAL, total
    return FINE, total


@njit(cache=True, nogil=True)
def count_cells(cells: np.ndarray, counts: np.ndarray) -> int:  # pragma: no cover - compiled
    """Add one to ``counts[c]`` (float64, flat) for each ``c`` in ``cells``; returns how many were
    counted: all, or those before the first outside ``counts`` (a bug upstream, never a write
    outside the matrix). Without the GIL: the first touch of a large matrix's pages can take
    seconds, and other threads (the app's window) go on meanwhile."""
    size = counts.shape[0]
    for i in range(cells.shape[0]):
        cell = cells[i]
        if cell < 0 or cell >= size:
            return i
        counts[cell] += 1.0
    return cells.shape[0]
