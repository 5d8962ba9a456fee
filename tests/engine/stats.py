"""Small statistics for the noise tests and audits (no scipy): chi-square limits and
Clopper-Pearson intervals."""

from __future__ import annotations

import math

import numpy as np

# Two-sided normal quantiles used by the tests.
Z_999 = 3.090232306167813  # one-sided 0.999


def chi_square_limit(df: int, z: float = Z_999) -> float:
    """The upper quantile of chi-square with ``df`` degrees of freedom (Wilson-Hilferty,
    within a few percent for df >= 5), for the one-sided normal quantile ``z``."""
    c = 2.0 / (9.0 * df)
    return df * (1.0 - c + z * math.sqrt(c)) ** 3


def chi_square(observed: np.ndarray, expected: np.ndarray) -> float:
    return float(((observed - expected) ** 2 / expected).sum())


def _betacf(a: float, b: float, x: float) -> float:
    """Continued fraction of the incomplete beta function (modified Lentz)."""
    tiny = 1e-300
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 10_000):
        m2 = 2 * m
        aa = m * (b - m) * x / ((qam + m2) * (a + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        h *= d * c
        aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        delta = d * c
        h *= delta
        if abs(delta - 1.0) < 1e-15:
            break
    return h


def beta_cdf(x: float, a: float, b: float) -> float:
    """The regularized incomplete beta function I_x(a, b)."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    log_front = math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)
    if x < (a + 1.0) / (a + b + 2.0):
        return math.exp(log_front) * _betacf(a, b, x) / a
    return 1.0 - math.exp(log_front) * _betacf(b, a, 1.0 - x) / b


def _beta_quantile(q: float, a: float, b: float) -> float:
    lo, hi = 0.0, 1.0
    for _ in range(200):
        mid = (lo + hi) / 2
        if beta_cdf(mid, a, b) < q:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


def clopper_pearson(successes: int, trials: int, confidence: float) -> tuple[float, float]:
    """The exact (Clopper-Pearson) two-sided interval for a binomial proportion."""
    alpha = 1.0 - confidence
    lower = 0.0 if successes == 0 else _beta_quantile(alpha / 2, successes, trials - successes + 1)
    upper = 1.0 if successes == trials else _beta_quantile(1 - alpha / 2, successes + 1, trials - successes)
    return lower, upper


def discrete_laplace_bins(theta: float, bins: int) -> tuple[np.ndarray, np.ndarray]:
    """Edges on |Z| (integers, increasing, first 0 and 1) and each signed bin's probability
    for ``P(Z = z)`` proportional to ``exp(-theta |z|)``: returns (edges, probabilities) with
    probabilities ordered [Z = 0, then |Z| in [e_i, e_{i+1}) positive, then negative]."""
    a = math.exp(-theta)  # 1.0 in float64 at large scales: powers are taken as exp(-theta e)
    # equal-probability edges on |Z| >= 1, as far as integers allow
    scale = 1.0 / theta
    edges = [0, 1]
    for i in range(1, bins):
        edge = 1 + int(scale * -math.log1p(-i / bins))
        if edge > edges[-1]:
            edges.append(edge)
    survival = [2 * math.exp(-theta * e) / (1 + a) if e >= 1 else 1.0 for e in edges]  # P(|Z| >= e)
    survival.append(0.0)
    p_zero = -math.expm1(-theta) / (1 + a)
    shells = [(survival[i] - survival[i + 1]) / 2 for i in range(1, len(edges))]
    probabilities = np.array([p_zero, *shells, *shells])
    return np.array(edges, dtype=np.int64), probabilities


def bin_counts(z: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """Counts of ``z`` in the bins of :func:`discrete_laplace_bins`."""
    magnitude = np.abs(z)
    shell = np.searchsorted(edges, magnitude, side="right") - 1  # index of the edge at or below |z|
    zero = int(np.count_nonzero(z == 0))
    shells = len(edges) - 1
    positive = np.bincount(shell[z > 0] - 1, minlength=shells)
    negative = np.bincount(shell[z < 0] - 1, minlength=shells)
    return np.concatenate([[zero], positive, negative])
