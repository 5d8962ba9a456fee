"""Calibration at every epsilon: the grid follows the sensitivity, sums stay exact, bad epsilons are refused."""

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from privelet_gui.bench import brazil_schema
from privelet_gui.engine import (
    Hierarchy,
    NominalAttribute,
    OrdinalAttribute,
    PriveletError,
    ReleaseSpec,
    Schema,
    paper_bound,
    worst_case_variance,
)
from privelet_gui.engine.kernels.noise import noisy_value, round_to_units
from privelet_gui.engine.noise.calibration import (
    EPSILON_MAX,
    EPSILON_MIN,
    SCALE_UNITS_MAX,
    UNITS_LIMIT,
    calibrate,
    check_epsilon,
)
from privelet_gui.engine.noise.samplers import exact_float

SMALL = Schema(
    [
        OrdinalAttribute.integer_range("age", 0, 9),
        NominalAttribute("job", Hierarchy.from_nested({"*": {"A": ["a1", "a2", "a3"], "B": ["b1", "b2"]}})),
    ]
)
BRAZIL = brazil_schema()
SPECS = [
    ReleaseSpec(BRAZIL, 1.0, "privelet+", ("Age", "Gender")),
    ReleaseSpec(BRAZIL, 1.0, "basic"),
    ReleaseSpec(SMALL, 1.0, "privelet"),
    ReleaseSpec(SMALL, 1.0, "privelet+", ("job",), "add-remove"),
]
log_epsilons = st.floats(min_value=-9.0, max_value=6.0, allow_nan=False)


@settings(max_examples=300)
@given(log_epsilon=log_epsilons, which=st.integers(0, len(SPECS) - 1), rows=st.integers(1, 10**9))
def test_the_effective_scale_exceeds_lambda_by_less_than_1e_6_at_every_epsilon(log_epsilon, which, rows):
    spec = SPECS[which].replace(epsilon=10.0**log_epsilon)
    cal = spec.calibration(rows)
    assert cal.nominal_scale == pytest.approx(spec.nominal_scale, rel=1e-15)
    assert 0 <= cal.scale / cal.nominal_scale - 1 < 1e-6
    assert 0 <= cal.excess < 2**-20
    # the grid and D depend on the transform only: never on epsilon or n
    reference = SPECS[which].calibration(1)
    assert (cal.grid_exponent, cal.units) == (reference.grid_exponent, reference.units)


def test_the_audited_epsilons_are_served_or_refused_clearly():
    spec = ReleaseSpec(BRAZIL, 1.0, "privelet+", ("Age", "Gender"))
    # reproduced before the fix: 83.7x at 1e-8 and 677,702x at 1e-12 with n = 10^7
    for epsilon in (1e-8, 1e-10):
        cal = spec.replace(epsilon=epsilon).calibration(10_000_000)
        assert cal.scale / cal.nominal_scale - 1 < 1e-6
    matrix = np.arange(SMALL.size, dtype=float).reshape(SMALL.shape)
    for epsilon in (1e-200, 1e-300, 1e300, 1.7e308, 5e-324, 2**1100, 1e-13, 1.1e12):
        with pytest.raises(PriveletError, match=r"epsilon must be at least 1e-12 and at most 1e\+12"):
            ReleaseSpec(SMALL, epsilon).run(matrix)
    with pytest.raises(PriveletError, match="epsilon must be at least"):
        paper_bound(SMALL, 1e-300)
    for epsilon in (EPSILON_MIN, EPSILON_MAX):
        assert math.isfinite(paper_bound(SMALL, epsilon)) and math.isfinite(worst_case_variance(SMALL, epsilon))
        for sampler in ("exact", "standard"):
            release = ReleaseSpec(SMALL, epsilon, sampler=sampler).run(matrix, rng=np.random.default_rng(1))
            assert np.isfinite(release.noisy).all()
    assert check_epsilon(np.float32(0.5)) == 0.5 and check_epsilon(3) == 3.0


def test_an_epsilon_too_small_for_the_schema_names_the_smallest_it_serves():
    spec = ReleaseSpec(BRAZIL, 1.0, "privelet")  # D ~ 2^35.7 grid units: 1e-12 would pass 2^68
    with pytest.raises(PriveletError, match=r"too small for this release.*the smallest epsilon is ([0-9.e-]+)") as caught:
        spec.replace(epsilon=1e-12)
    smallest = float(caught.value.args[0].split("the smallest epsilon is ")[1].split(" ")[0])
    cal = spec.replace(epsilon=smallest * 1.01).calibration(1)
    assert cal.scale_units <= SCALE_UNITS_MAX


def test_tiny_epsilon_releases_are_exact_sums_converted_once():
    # At epsilon 1e-11 the noise is ~2^61 grid units: far past float64's 2^53 (and 2^63 at its tails).
    matrix = np.arange(SMALL.size, dtype=float).reshape(SMALL.shape)
    for sampler in ("exact", "standard"):
        spec = ReleaseSpec(SMALL, 1e-11, "privelet+", ("job",), sampler=sampler)
        release = spec.run(matrix, rng=np.random.default_rng(3))
        assert np.isfinite(release.noisy).all()
        assert release.calibration.scale_units > 2**60
        np.testing.assert_array_equal(release.noisy, spec.run(matrix, rng=np.random.default_rng(3)).noisy)
        # the spread matches the noise scale (lambda = 1e12)
        assert 1e10 < np.abs(release.noisy - matrix).mean() < 1e14


@given(
    units=st.integers(-(2**62) + 1, 2**62 - 1),
    high=st.integers(-(2**14), 2**14),
    shift=st.integers(0, 60),
    seed=st.integers(0, 2**32),
)
def test_a_noisy_value_is_a_function_of_the_exact_sum(units, high, shift, seed):
    low = int(np.random.default_rng(seed).integers(-(2**shift) + 1, 2**shift)) if shift else 0
    exact = units + (high << shift) + low
    value = noisy_value(np.int64(units), np.int64(high), np.int64(low), shift, 1.0)
    assert value == exact_float(exact, shift)  # the compiled loop and the exact resolver agree
    # within a unit in the last place or two of the exact sum (two roundings at most)
    assert abs(value - exact) <= 2 * math.ulp(float(exact)) + 1
    if -(2**62) <= exact < 2**62:
        assert value == float(exact)  # correctly rounded where the sum fits
    # the same exact sum reached with other limbs gives the same float (post-processing of N alone)
    if shift and abs(high) > 0:
        other = noisy_value(np.int64(units - (1 << shift)), np.int64(high + 1), np.int64(low), shift, 1.0)
        assert other == value


@given(
    numerator=st.integers(-(2**53) + 1, 2**53 - 1),
    denominator=st.sampled_from([1, 2, 3, 6, 10, 34, 62, 152, 42240]),
    exponent=st.integers(-50, 3),
)
def test_rounding_to_the_grid_is_exact(numerator, denominator, exponent):
    exact = Fraction(numerator, denominator) / Fraction(2) ** exponent
    assume_fits = abs(numerator) << max(-exponent, 0) < UNITS_LIMIT  # what check_rows guarantees
    if not assume_fits:
        return
    inverse = 1.0 / (denominator * 2.0**exponent)
    got = int(round_to_units(np.int64(numerator), np.int64(denominator), inverse, np.int64(exponent)))
    assert abs(Fraction(got) - exact) <= Fraction(1, 2)
    assert got == math.floor(exact + Fraction(1, 2))  # ties up, as the exact resolver rounds


def test_grid_is_independent_of_the_table_size_under_both_notions():
    replace = [calibrate(0.1, 66, 1000, neighbours="replace", rows=n) for n in (1, 10**3, 10**9)]
    assert len({(c.grid_exponent, c.units) for c in replace}) == 1
    remove = [calibrate(0.1, 66, 1000, neighbours="add-remove", rows=n) for n in (1, 10**9)]
    assert remove[0] == remove[1]


@pytest.mark.parametrize("neighbours", ["replace", "add-remove"])
def test_a_table_too_large_for_exact_rounding_is_refused_without_saying_its_size(neighbours):
    spec = ReleaseSpec(brazil_schema(), 1.0, sa=("Age", "Gender"), neighbours=neighbours)
    spec.check_rows(10_000_000)  # the bench's table
    rows = math.ceil(UNITS_LIMIT / (spec.plan.growth << -spec.calibration(1).grid_exponent))
    with pytest.raises(PriveletError, match="too many rows for exact rounding") as caught:
        spec.check_rows(rows)
    assert not any(ch.isdigit() for ch in str(caught.value))  # n is private under add/remove
