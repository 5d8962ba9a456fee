"""Post-processing a release: the public total, non-negative counts, whole counts.

Post-processing uses nothing but the release (and, under replace-one-tuple neighbours,
the number of rows n, which that neighbouring notion makes public), so it costs no
privacy.

- :func:`shift_to_total` adds ``(n - total) / m`` to every cell: the total becomes exact,
  and every query's variance stays exact and data-independent
  (:meth:`~privelet_gui.engine.VarianceModel.batch_factors` with ``public_total``).
  Under add/remove neighbours n is private and this is never done.
- :func:`nonnegative_counts` projects the counts onto the non-negative matrices with the
  same total (the closest in least squares); :func:`integer_counts` rounds them to whole
  counts that keep the (rounded) total. Both are for people who cannot use negative or
  fractional counts: they help small counts and relative errors but bias sums (the
  projection lowers big counts to pay for the small ones), so a release file always keeps
  the unbiased counts and these are export options only.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

import numpy as np

from .errors import PriveletError

__all__ = [
    "COUNT_KINDS",
    "integer_counts",
    "matrix_sum",
    "nonnegative_counts",
    "post_processed_counts",
    "shift_to_total",
    "sum_slabs",
]

T = TypeVar("T")
Index = TypeVar("Index")  # a slab of the matrix, or a piece of its memory

#: The kinds of counts an export can hold: the release's own, projected onto non-negative
#: counts with the same total, rounded to whole counts, or both.
COUNT_KINDS = ("noisy", "nonnegative", "integer", "nonnegative-integer")


#: The sum of a matrix is taken over slabs of at most this many cells (see :func:`matrix_sum`).
SUM_SLAB_CELLS = 1 << 22


def sum_slabs(shape: tuple[int, ...]) -> tuple[int, ...]:
    """The leading axes :func:`matrix_sum` indexes one value at a time: the fewest whose
    remaining axes hold at most :data:`SUM_SLAB_CELLS` cells (each slab is then one
    C-contiguous block of the matrix)."""
    lead = 0
    while lead < len(shape) - 1 and math.prod(shape[lead:]) > SUM_SLAB_CELLS:
        lead += 1
    return tuple(shape[:lead])


def matrix_sum(noisy: Any, *, workers: int = 1) -> float:
    """The sum of a matrix, the same to the last bit however the matrix is held: numpy's
    sum of each slab ``noisy[i, j, ...]`` over the leading axes of :func:`sum_slabs`, then an
    exact sum of the slab sums. A chunked (Zarr) release read slab by slab gets exactly the
    total that one machine gets, so both shift a release to the public total identically
    (and so do ``workers`` threads, each summing whole slabs)."""
    indices = list(np.ndindex(*sum_slabs(noisy.shape)))

    def slab_sum(index: tuple[int, ...]) -> float:
        return float(np.sum(np.asarray(noisy[index], dtype=np.float64)))

    return math.fsum(_by_slabs(slab_sum, indices, workers))


def shift_to_total(noisy: np.ndarray, total: float, *, workers: int = 1) -> float:
    """Add ``(total - sum(noisy)) / m`` to every cell of ``noisy`` (in place, the sum as
    :func:`matrix_sum`, on ``workers`` threads); returns that shift.

    Examples
    --------
    >>> m = np.array([1.5, -0.5, 2.0, 1.0])
    >>> shift_to_total(m, 6), m.tolist()
    (0.5, [2.0, 0.0, 2.5, 1.5])
    """
    shift = (float(total) - matrix_sum(noisy, workers=workers)) / noisy.size
    # Every cell gets the same addition, so any cut gives the same bits: in one run of memory,
    # one piece per thread (a small matrix is one sum slab, which would leave a thread idle).
    target = noisy.reshape(-1) if noisy.flags.c_contiguous else noisy
    if target.ndim == 1:
        step = -(-target.size // max(workers, 1))
        pieces: list[tuple[int | slice, ...]] = [(slice(start, start + step),) for start in range(0, target.size, step)]
    else:
        pieces = list(np.ndindex(*sum_slabs(noisy.shape)))

    def add(index: tuple[int | slice, ...]) -> None:
        target[index] += shift

    _by_slabs(add, pieces, workers)
    return shift


def _by_slabs(work: Callable[[Index], T], indices: list[Index], workers: int) -> list[T]:
    """``work`` on every index (of a slab, or a piece), in order, on ``workers`` threads (numpy releases the GIL)."""
    if workers == 1 or len(indices) == 1:
        return [work(index) for index in indices]
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="privelet") as pool:
        futures = [pool.submit(work, index) for index in indices]
        try:
            return [future.result() for future in futures]
        finally:  # after an error, no slab is still being written when this returns
            for future in futures:
                future.cancel()


def nonnegative_counts(counts: np.ndarray, total: float | None = None) -> np.ndarray:
    """The non-negative matrix with the given total closest to ``counts`` (Euclidean projection).

    ``total`` defaults to the counts' own total (0 if that is negative). The result is
    ``max(counts - tau, 0)`` for the one threshold ``tau`` that gives that total.

    Examples
    --------
    >>> nonnegative_counts(np.array([3.0, -1.0, 2.0, 0.0])).tolist()
    [2.5, 0.0, 1.5, 0.0]
    """
    counts = np.asarray(counts, dtype=np.float64)
    target = max(float(np.sum(counts)) if total is None else float(total), 0.0)
    if target == 0.0:
        return np.zeros_like(counts)
    flat = np.sort(counts, axis=None)[::-1]
    running = np.cumsum(flat)
    ranks = np.arange(1, flat.size + 1)
    # The kept cells are the largest ones; tau makes exactly them sum to the target. Written
    # without a division, the largest cell always qualifies (its term is the target itself).
    kept = int(np.nonzero(flat * ranks - running + target > 0)[0][-1]) + 1
    tau = (running[kept - 1] - target) / kept
    return np.maximum(counts - tau, 0.0)


def integer_counts(counts: np.ndarray) -> np.ndarray:
    """Whole counts that keep the total (rounded): floors, plus one for the cells with the
    largest fractional parts (largest-remainder rounding). Non-negative input stays so.

    Examples
    --------
    >>> integer_counts(np.array([0.6, 0.6, 1.8])).tolist()
    [1.0, 0.0, 2.0]
    """
    counts = np.asarray(counts, dtype=np.float64)
    floors = np.floor(counts)
    # The total rounded first, as the docstring says: rounding the missing fraction instead rounds
    # 1.5 - 1 = 0.5 to 0 (half to even) and loses one (found by the tests at the minimum versions).
    missing = round(float(np.sum(counts))) - int(np.sum(floors))
    if missing > 0:
        fractions = (counts - floors).reshape(-1)
        # stable order: equal remainders go to the earlier cells, so the result is reproducible
        chosen = np.argsort(-fractions, kind="stable")[:missing]
        floors.reshape(-1)[chosen] += 1.0
    return floors


def post_processed_counts(counts: np.ndarray, kind: str) -> np.ndarray:
    """``counts`` as one of :data:`COUNT_KINDS` (``"noisy"``: unchanged)."""
    if kind not in COUNT_KINDS:
        raise PriveletError(f"counts must be one of {', '.join(COUNT_KINDS)}, got {kind!r}")
    out = np.asarray(counts, dtype=np.float64)
    if kind.startswith("nonnegative"):
        out = nonnegative_counts(out)
    if kind.endswith("integer"):
        out = integer_counts(out)
    return out
