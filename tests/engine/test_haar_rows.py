"""The Haar transform's rows layout (HaarTransform.rows_numerators and rows_inverse), on both
of its paths: numpy's passes, and numba's compiled loops (the fast extra), which must give
the same bits."""

from __future__ import annotations

import numpy as np
import pytest

from privelet_gui.engine import OrdinalAttribute, Schema, _compiled, privelet_plus
from privelet_gui.engine.haar import HaarTransform

from .loops import counting_loops

# sizes with no finer level (coarse levels only), one, several, and a power of two
SIZES = [2, 7, 32, 33, 300, 1001, 1024]
ROWS = [1, 5, 128]


@pytest.fixture(params=["numpy", "compiled"])
def rows_path(request, monkeypatch):
    """Each path of the rows layout: numpy's passes, or the compiled loops."""
    if request.param == "numpy":
        monkeypatch.setattr(_compiled, "haar_rows_loops", lambda: None)
    elif _compiled.haar_rows_loops() is None:
        pytest.skip("numba is not installed (the fast extra): only the numpy path runs here")
    return request.param


def _padded_counts(transform: HaarTransform, count: int, seed: int) -> np.ndarray:
    rows = np.zeros((count, transform.n_coefficients))
    rows[:, : transform.size] = np.random.default_rng(seed).integers(0, 1_000, (count, transform.size))
    return rows


def _level_major(transform: HaarTransform, by_row: np.ndarray) -> np.ndarray:
    """Coefficients in level order, one row each, laid out as rows_numerators lays them out."""
    width = 1 << transform.rows_head_levels
    runs = [by_row[:, :width].reshape(-1)]
    while width < transform.n_coefficients:
        runs.append(by_row[:, width : 2 * width].reshape(-1))
        width *= 2
    return np.concatenate(runs)


@pytest.mark.parametrize("count", ROWS)
@pytest.mark.parametrize("size", SIZES)
def test_rows_numerators_are_each_rows_numerators_in_level_major_order(size, count, rows_path):
    transform = HaarTransform(size)
    rows = _padded_counts(transform, count, seed=size + count)
    expected = _level_major(transform, transform.numerators(rows[:, :size], axis=1))
    out = transform.rows_numerators(rows, np.full(rows.size, np.nan))
    np.testing.assert_array_equal(out, expected)  # integers: exact on either path


@pytest.mark.parametrize("count", ROWS)
@pytest.mark.parametrize("size", SIZES)
def test_rows_inverse_gives_each_rows_values(size, count, rows_path):
    transform = HaarTransform(size)
    by_row = np.random.default_rng(size * count).normal(0.0, 50.0, (count, transform.n_coefficients))
    out = transform.rows_inverse(_level_major(transform, by_row), np.full((count, transform.n_coefficients), np.nan))
    np.testing.assert_allclose(out[:, :size], transform.inverse(by_row, axis=1), rtol=1e-12, atol=1e-9)


@pytest.mark.parametrize("size", SIZES)
def test_the_compiled_loops_give_numpys_bits(size, monkeypatch):
    if _compiled.haar_rows_loops() is None:
        pytest.skip("numba is not installed (the fast extra)")
    transform = HaarTransform(size)
    count = 37
    rows = _padded_counts(transform, count, seed=size)
    coefficients = np.random.default_rng(size).laplace(0.0, 1e6, rows.size)  # fractions and signs
    compiled = (transform.rows_numerators(rows, np.empty(rows.size)),
                transform.rows_inverse(coefficients, np.empty_like(rows)))
    monkeypatch.setattr(_compiled, "haar_rows_loops", lambda: None)
    passes = (transform.rows_numerators(rows, np.empty(rows.size)),
              transform.rows_inverse(coefficients, np.empty_like(rows)))
    for ours, numpys in zip(compiled, passes, strict=True):
        np.testing.assert_array_equal(ours.view(np.uint64), numpys.view(np.uint64))


def test_a_release_runs_the_compiled_loops_when_numba_is_there(monkeypatch):
    # The comparisons above prove the paths equal only if the pipeline takes the compiled one.
    if _compiled.haar_rows_loops() is None:
        pytest.skip("numba is not installed (the fast extra)")
    calls = counting_loops(monkeypatch, "haar_rows_loops", "forward", "inverse")
    schema = Schema([OrdinalAttribute("Income", range(1001))])
    privelet_plus(np.ones(1001), schema, 1.0, (), np.random.default_rng(1))
    assert calls == ["forward", "inverse"]


def _levels_by_row(transform: HaarTransform, count: int, seed: int) -> np.ndarray:
    """A per-level, per-row table as the pipeline makes them: small integers times a power of two."""
    finer = transform.levels - transform.rows_head_levels
    return np.random.default_rng(seed).integers(1, 40, (finer, count)) * 2.0**-7


@pytest.mark.parametrize("rint", [False, True])
@pytest.mark.parametrize("size", SIZES)
def test_the_finer_levels_are_divided_and_rounded_as_they_are_written(size, rint, rows_path):
    """``divisors``: each finer level's details divided by their row's divisor (and rounded),
    the same bits as dividing the numerators afterwards; the head is left as numerators."""
    transform = HaarTransform(size)
    count = 37
    rows = _padded_counts(transform, count, seed=size)
    divisors = _levels_by_row(transform, count, seed=size)
    expected = transform.rows_numerators(rows, np.empty(rows.size))
    head = count << transform.rows_head_levels
    for level, divisor in enumerate(divisors, transform.rows_head_levels + 1):
        details = expected[count << (level - 1) : count << level].reshape(count, -1)
        np.divide(details, divisor[:, None], out=details)
        if rint:
            np.rint(details, out=details)
    ours = transform.rows_numerators(rows, np.full(rows.size, np.nan), divisors=divisors, rint=rint)
    np.testing.assert_array_equal(ours.view(np.uint64), expected.view(np.uint64))
    assert rint or size <= 32 or not np.all(ours[head:] == np.rint(ours[head:]))  # the divisions show


@pytest.mark.parametrize("rint", [False, True])
@pytest.mark.parametrize("size", SIZES)
def test_the_head_is_divided_and_rounded_as_it_is_written(size, rint, rows_path):
    """``head_divisors``: each row's head (its total and coarse details, as they lie in the
    layout) divided by its own divisors (and rounded), the same bits as dividing the numerators
    afterwards; with the finer levels' ``divisors`` at once."""
    transform = HaarTransform(size)
    count = 37
    rows = _padded_counts(transform, count, seed=size + 1)
    divisors = _levels_by_row(transform, count, seed=size + 2)
    width = 1 << transform.rows_head_levels
    head_divisors = np.random.default_rng(size).integers(1, 40, (count, width)) * 2.0**-7
    expected = transform.rows_numerators(rows, np.empty(rows.size), divisors=divisors, rint=rint)
    head = expected[: count * width].reshape(count, width)
    np.divide(head, head_divisors, out=head)
    if rint:
        np.rint(head, out=head)
    ours = transform.rows_numerators(rows, np.full(rows.size, np.nan), divisors=divisors, head_divisors=head_divisors,
                                     rint=rint)
    np.testing.assert_array_equal(ours.view(np.uint64), expected.view(np.uint64))
    assert rint or not np.all(ours[: count * width] == np.rint(ours[: count * width]))  # the divisions show


@pytest.mark.parametrize("size", SIZES)
def test_the_finer_levels_are_scaled_as_they_are_read(size, rows_path):
    """``factors``: the inverse of details multiplied by their row's factor first, the same bits
    as multiplying them beforehand."""
    transform = HaarTransform(size)
    count = 37
    coefficients = np.random.default_rng(size).laplace(0.0, 1e6, count * transform.n_coefficients)
    factors = _levels_by_row(transform, count, seed=size + 1) * np.pi
    scaled = coefficients.copy()
    for level, factor in enumerate(factors, transform.rows_head_levels + 1):
        details = scaled[count << (level - 1) : count << level].reshape(count, -1)
        np.multiply(details, factor[:, None], out=details)
    expected = transform.rows_inverse(scaled, np.empty((count, transform.n_coefficients)))
    ours = transform.rows_inverse(coefficients.copy(), np.empty((count, transform.n_coefficients)), factors=factors)
    np.testing.assert_array_equal(ours.view(np.uint64), expected.view(np.uint64))
