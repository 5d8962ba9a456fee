"""Cross-check with OpenDP (the optional ``opendp`` extra; skipped without it).

OpenDP's discrete Laplace (``make_laplace`` over i64 vectors) and the exact sampler draw
from the same distribution, and OpenDP's own privacy map, for a release's sensitivity
and scale in grid units, gives at most the release's epsilon.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from privelet_gui.bench import brazil_schema
from privelet_gui.engine import Hierarchy, NominalAttribute, OrdinalAttribute, ReleaseSpec, Schema

from .sampling import draw
from .stats import bin_counts, chi_square_limit, discrete_laplace_bins

dp = pytest.importorskip("opendp.prelude")
dp.enable_features("contrib")

SMALL = Schema([OrdinalAttribute.integer_range("age", 0, 9), NominalAttribute("sex", Hierarchy.flat(["F", "M"]))])


def opendp_laplace(scale: float):  # type: ignore[no-untyped-def]
    return dp.m.make_laplace(dp.vector_domain(dp.atom_domain(T="i64")), dp.l1_distance(T="i64"), scale=scale)


@pytest.mark.parametrize("epsilon", [0.25, 0.5, 1.0, 2.0])
@pytest.mark.parametrize(
    "spec",
    [
        ReleaseSpec(brazil_schema(), 1.0, "privelet+", ("Age", "Gender")),
        ReleaseSpec(SMALL, 1.0, "privelet", neighbours="add-remove"),
        ReleaseSpec(SMALL, 1.0, "basic"),
    ],
    ids=["brazil-privelet+", "small-privelet-add-remove", "small-basic"],
)
def test_opendps_privacy_map_gives_at_most_the_releases_epsilon(spec, epsilon):
    calibration = spec.replace(epsilon=epsilon).calibration(10_000)
    scale = calibration.scale_units  # D / epsilon: exact in float64 for these epsilons
    assert Fraction(float(scale)) == scale
    measurement = opendp_laplace(float(scale))
    assert measurement.map(calibration.units) <= epsilon


@pytest.mark.parametrize("theta", [Fraction(1, 3), Fraction(1, 1000), Fraction(1, 2**31)], ids=["3", "1000", "2^31"])
def test_opendp_and_the_exact_sampler_draw_the_same_distribution(theta):
    scale = float(1 / theta)
    ours_count, theirs_count = 200_000, 20_000  # OpenDP draws about 15 microseconds each
    ours = draw("exact", theta, ours_count).astype(np.int64)
    theirs = np.array(opendp_laplace(scale)([0] * theirs_count), dtype=np.int64)
    edges, _ = discrete_laplace_bins(float(theta), bins=20)
    a, b = bin_counts(ours, edges), bin_counts(theirs, edges)
    keep = (a + b) > 0
    a, b = a[keep], b[keep]
    # two-sample chi-square (homogeneity) with unequal sample sizes
    k1, k2 = np.sqrt(theirs_count / ours_count), np.sqrt(ours_count / theirs_count)
    statistic = float((((k1 * a - k2 * b) ** 2) / (a + b)).sum())
    assert statistic < chi_square_limit(int(keep.sum()) - 1)
    assert np.var(theirs) == pytest.approx(np.var(ours), rel=0.05)
