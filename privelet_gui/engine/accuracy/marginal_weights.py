"""The marginals strategy chosen for a workload (docs/math.md, "Choosing marginals").

A query's variance under a :class:`~privelet_gui.engine.strategies.marginals.MarginalsStrategy` is a
sum over eigen-components T of ``c_T(q) / lambda_T``, ``c_T(q)`` a product of per-axis mean and
contrast parts. Summed over a workload the error is ``(sum_S w_S)^2 sum_T c_T / lambda_T(w)``:
:func:`optimised_marginals` minimises it over the weights of the marginals the workload needs
(its queries' supports, every subset of them, and M itself) by projected gradient descent, then
rounds the weights to integers. The expected error itself is
:func:`~privelet_gui.engine.accuracy.workloads.marginals_expected_error`.
"""

from __future__ import annotations

import math

import numpy as np

from ..strategies.marginals import MarginalsStrategy
from .workloads import Workload, marginals_expected_error, workload_components

__all__ = ["WEIGHT_SCALE", "optimised_marginals"]

#: The largest rounded weight: weights are learned as reals, scaled so that the largest is this and
#: rounded to integers (each then moves by at most 2^-13 of the largest).
WEIGHT_SCALE = 1 << 12
#: Steps of the projected gradient descent (the error is smooth in the weights; a few hundred
#: steps settle the error to well under 1% on the census workloads).
DESCENT_STEPS = 400
#: Up to this many axes M itself (Basic's measurement) is a candidate too, so that the choice is
#: never worse than Basic; its least squares then has a component for every subset of the axes
#: (2^d of them), which beyond this many axes costs more than it can gain on a marginal workload.
FULL_TABLE_AXES = 12
#: What a subset the workload does not need by itself starts with, beside 1 for those it does:
#: a weight at 0 has a zero gradient and would never grow.
EXTRA_START = 0.1


def _supports(contrast: np.ndarray) -> np.ndarray:
    """Per row, the bit mask of the axes where it has a contrast part (the marginal it needs)."""
    return ((contrast > 0) * (1 << np.arange(contrast.shape[1]))).sum(axis=1).astype(np.int64)


def _below(masks: set[int]) -> list[int]:
    """Every subset of the given masks, the empty one included, in ascending order."""
    out: set[int] = set()
    for mask in masks:
        sub = mask
        while True:
            out.add(sub)
            if sub == 0:
                break
            sub = (sub - 1) & mask
    return sorted(out)


class _WeightedError:
    """``E(w) = (sum w)^2 sum_T c_T / lambda_T(w)``, ``lambda_T = sum_{S >= T} w_S^2 N_S`` (N_S the
    product of the sizes outside S), and its gradient, over a family of candidate subsets."""

    def __init__(self, shape: tuple[int, ...], candidates: list[int], weights: np.ndarray, mean: np.ndarray,
                 contrast: np.ndarray, public_total: bool):
        d = len(shape)
        components = [t for t in candidates if not (t == 0 and public_total)]
        inside = np.array([[bool(t >> a & 1) for a in range(d)] for t in components])
        # c_T: the workload's load on each eigen-component (those it does not load drop out).
        self.load = np.array([np.dot(weights, np.where(row, contrast, mean).prod(axis=1)) for row in inside])
        kept = self.load > 0
        self.load = self.load[kept]
        components = [t for t, k in zip(components, kept) if k]
        self.contains = np.array([[float(s & t == t) for s in candidates] for t in components]).reshape(
            len(components), len(candidates))
        self.outside = np.array([float(math.prod(shape[a] for a in range(d) if not s >> a & 1)) for s in candidates])

    def __call__(self, w: np.ndarray) -> tuple[float, np.ndarray]:
        eigenvalues = self.contains @ (w * w * self.outside)
        if np.any(eigenvalues <= 0):
            return math.inf, np.zeros_like(w)
        spread = float(np.sum(self.load / eigenvalues))
        total = float(w.sum())
        inner = -2.0 * w * self.outside * (self.contains.T @ (self.load / eigenvalues**2))
        return total**2 * spread, 2.0 * total * spread + total**2 * inner


def _descend(error: _WeightedError, start: np.ndarray) -> np.ndarray:
    """Projected gradient descent on ``w >= 0`` with Barzilai-Borwein steps and backtracking; the
    error is scale-free, so each iterate is scaled to sum 1."""
    w = start / start.sum()
    value, gradient = error(w)
    step = 0.01 / max(float(np.abs(gradient).max()), 1e-300)
    for _ in range(DESCENT_STEPS):
        for _ in range(50):
            trial = np.maximum(w - step * gradient, 0.0)
            if trial.sum() > 0:
                trial /= trial.sum()
                trial_value, trial_gradient = error(trial)
                if trial_value <= value - 1e-4 * float(gradient @ (w - trial)):
                    break
            step /= 2
        else:
            break  # no step lowers the error: a stationary point
        move, change = trial - w, trial_gradient - gradient
        w, value, gradient = trial, trial_value, trial_gradient
        curvature = float(move @ change)
        if float(move @ move) < 1e-24:
            break
        step = float(move @ move) / curvature if curvature > 0 else 2 * step
    return w


def optimised_marginals(workload: Workload, *, public_total: bool) -> MarginalsStrategy:
    """The marginals strategy of least expected error on ``workload`` (docs/math.md, "Choosing
    marginals"): every marginal the queries need, every marginal below one and M itself (up to
    :data:`FULL_TABLE_AXES` axes), their weights learned and rounded to integers (at most
    :data:`WEIGHT_SCALE`), those rounded to 0 dropped; or, if it is better, the needed marginals
    weighted alike, or M alone (Basic).

    The error of every weighting is ``2 (s / epsilon)^2`` times a function of the weights alone,
    so the choice depends neither on epsilon nor on the neighbouring notion.

    Parameters
    ----------
    workload : Workload
        Box queries (the strategy is made for marginals: boxes of whole values on some axes).
    public_total : bool, keyword-only
        Whether the release is shifted to the public total (its total is then exact and not
        worth measuring).

    Returns
    -------
    MarginalsStrategy
        It answers every query of the workload without bias.
    """
    shape = workload.schema.shape
    d = len(shape)
    weights, mean, contrast = workload_components(workload)
    needed = set(_supports(contrast).tolist())
    full = (1 << d) - 1
    candidates = sorted({*_below(needed), full}) if d <= FULL_TABLE_AXES else _below(needed)
    weighted_error = _WeightedError(shape, candidates, weights, mean, contrast, public_total)
    # Two starts: the needed marginals ahead (where marginal workloads end), and M ahead (where a
    # workload of fine marginals on small domains ends); a weight at 0 would never grow.
    starts = [[1.0 if s in needed else EXTRA_START for s in candidates]]
    if full in candidates and full not in needed:
        starts.append([1.0 if s == full else EXTRA_START for s in candidates])
    found = [_rounded(shape, candidates, needed, _descend(weighted_error, np.array(start))) for start in starts]
    plain = MarginalsStrategy(shape, tuple(tuple(a for a in range(d) if s >> a & 1) for s in sorted(needed)),
                              (1,) * len(needed))
    basic = MarginalsStrategy(shape, (tuple(range(d)),), (1,))

    def error(strategy: MarginalsStrategy) -> float:
        return marginals_expected_error(strategy, workload, epsilon=1.0, neighbours="add-remove",
                                        public_total=public_total)

    # Never worse than the needed marginals weighted alike, nor than Basic.
    return min((*found, plain, basic), key=error)


def _rounded(shape: tuple[int, ...], candidates: list[int], needed: set[int], learned: np.ndarray) -> MarginalsStrategy:
    """Learned real weights as integers up to :data:`WEIGHT_SCALE` (reduced by their common divisor),
    every needed marginal still measured (by itself or by one above it)."""
    rounded = np.rint(learned / learned.max() * WEIGHT_SCALE).astype(np.int64)
    for mask in needed:
        if not any(rounded[j] > 0 and s & mask == mask for j, s in enumerate(candidates)):
            rounded[candidates.index(mask)] = 1
    divisor = math.gcd(*rounded.tolist())
    kept = [(tuple(a for a in range(len(shape)) if s >> a & 1), int(w) // divisor)
            for s, w in zip(candidates, rounded.tolist()) if w > 0]
    return MarginalsStrategy(shape, tuple(s for s, _ in kept), tuple(w for _, w in kept))
