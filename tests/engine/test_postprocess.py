"""The public total and the export post-processing: exact variances, the raw release, counts."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from privelet_gui.engine import (
    PriveletError,
    QueryBatch,
    RangeQuery,
    ReleaseSpec,
    StrategyPlan,
    VarianceModel,
)
from privelet_gui.engine.postprocess import (
    integer_counts,
    matrix_sum,
    nonnegative_counts,
    post_processed_counts,
    shift_to_total,
)

from .strategies import box_indicator, reconstruction_matrix, schemas


def every_box(schema):
    """Every range-count query of a small schema (ordinal intervals x hierarchy nodes)."""
    import itertools

    per_axis = []
    for attribute in schema:
        if attribute.kind == "nominal":
            per_axis.append([node.index for node in attribute.hierarchy.nodes()])
        else:
            per_axis.append([(a, b) for a in range(attribute.size) for b in range(a, attribute.size)])
    return [RangeQuery.from_indices(schema, dict(zip(schema.names, combo, strict=False))) for combo in itertools.product(*per_axis)]


@settings(max_examples=25, deadline=None)
@given(schemas(max_dims=3, max_cells=60), st.data())
def test_shifted_variances_match_explicit_matrices(schema, data):
    sa = data.draw(st.lists(st.sampled_from(schema.names), unique=True))
    reconstruction = reconstruction_matrix(StrategyPlan.paper(schema, sa))
    covariance = reconstruction @ reconstruction.T
    queries = every_box(schema)
    model = VarianceModel(schema)
    got = model.batch_factors(QueryBatch.of(queries), sa, public_total=True)
    m = schema.size
    for query, value in zip(queries, got, strict=False):
        q = box_indicator(schema.shape, query.lo, query.hi)
        shifted = q - q.sum() / m  # the query's noise after the shift: (q - s 1) . E
        assert value == pytest.approx(shifted @ covariance @ shifted, rel=1e-9, abs=1e-12)
    assert model.total_factor(sa) == pytest.approx(covariance.sum(), rel=1e-12)


def small_spec(**options):
    from privelet_gui.engine import Hierarchy, NominalAttribute, OrdinalAttribute, Schema

    jobs = Hierarchy.from_nested({"*": {"T": ["t1", "t2", "t3"], "O": {"O1": ["o1"]}, "S": ["s1", "s2"]}})
    schema = Schema([OrdinalAttribute.integer_range("age", 0, 6), NominalAttribute("job", jobs)])
    return ReleaseSpec(schema, 1.0, sa=("job",), **options)


def test_the_shift_makes_the_total_exact_and_keeps_the_raw_release():
    spec = small_spec()
    truth = np.arange(42.0).reshape(7, 6) % 5
    shifted = spec.run(truth, rng=np.random.default_rng(3))
    raw = spec.replace(public_total=False).run(truth, rng=np.random.default_rng(3))
    assert spec.uses_public_total and shifted.public_total and not raw.public_total
    assert shifted.noisy.sum() == pytest.approx(truth.sum(), abs=1e-9)
    # the shift draws no randomness: the same seed gives the same noise, recovered from the field
    np.testing.assert_allclose(shifted.raw, raw.noisy, rtol=0, atol=1e-12)
    assert shifted.total_shift == pytest.approx((truth.sum() - raw.noisy.sum()) / truth.size)
    assert raw.raw is raw.noisy and raw.total_shift is None


def test_add_remove_never_uses_the_number_of_rows():
    spec = small_spec(neighbours="add-remove")
    assert not spec.uses_public_total
    release = spec.run(np.ones((7, 6)), rng=np.random.default_rng(1))
    assert release.total_shift is None
    with pytest.raises(PriveletError, match="add/remove the number of rows is private"):
        small_spec(neighbours="add-remove", public_total=True)
    with pytest.raises(PriveletError, match="public_total is True, False or None"):
        small_spec(public_total="yes")


def test_the_whole_table_has_zero_variance_and_small_queries_barely_change():
    spec = small_spec()
    whole = RangeQuery.build(spec.schema, {})
    cell = RangeQuery.build(spec.schema, {"age": "3", "job": "t1"})
    assert spec.variance(whole) == 0.0 and spec.variance(whole, raw=True) > 0
    assert spec.variance(cell) == pytest.approx(spec.variance(cell, raw=True), rel=0.1)


def test_shift_to_total_in_place():
    m = np.array([[1.0, 2.0], [3.0, -2.0]])
    assert shift_to_total(m, 8) == 1.0
    assert m.sum() == 8


@settings(max_examples=60, deadline=None)
@given(st.lists(st.floats(-50, 50, allow_nan=False), min_size=1, max_size=30), st.floats(0, 200))
def test_nonnegative_counts_are_the_projection_onto_the_simplex(values, total):
    y = np.array(values)
    x = nonnegative_counts(y, total)
    assert (x >= 0).all()
    assert x.sum() == pytest.approx(total, abs=1e-9)
    if total > 1e-6:  # (a total below float resolution rounds every cell to 0)
        # optimality (KKT): every kept cell moved by the same tau, every dropped cell was below it
        kept = x > 0
        tau = (y - x)[kept]
        assert np.ptp(tau) < 1e-9
        assert (y[~kept] <= tau[0] + 1e-9).all()


def test_nonnegative_counts_keep_the_releases_own_total_by_default():
    y = np.array([[4.0, -1.0], [2.5, -0.5]])
    x = nonnegative_counts(y)
    assert x.sum() == pytest.approx(5.0) and (x >= 0).all()
    assert nonnegative_counts(np.array([-1.0, -2.0])).tolist() == [0.0, 0.0]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.floats(-50, 50, allow_nan=False), min_size=1, max_size=30))
def test_integer_counts_keep_the_rounded_total(values):
    y = np.array(values)
    x = integer_counts(y)
    assert (x == np.round(x)).all()
    assert x.sum() == round(y.sum())
    assert (np.abs(x - y) < 1).all()


def test_integer_counts_round_the_total_not_the_missing_fraction():
    # Found at the minimum versions (hypothesis 6.100 drew [1.5]): 1.5 - floor = 0.5 rounds to 0 (half to even).
    assert integer_counts(np.array([1.5])).tolist() == [2.0]
    assert integer_counts(np.array([0.5, 1.0])).tolist() == [1.0, 1.0]  # total 1.5 rounds to 2
    assert integer_counts(np.array([0.25, 1.25, 1.0])).tolist() == [0.0, 1.0, 1.0]  # total 2.5 rounds to 2


def test_post_processed_counts_kinds():
    y = np.array([2.6, -0.4, 1.8])
    assert post_processed_counts(y, "noisy") is not None and post_processed_counts(y, "noisy").tolist() == y.tolist()
    both = post_processed_counts(y, "nonnegative-integer")
    assert (both >= 0).all() and both.sum() == 4 and (both == np.round(both)).all()
    with pytest.raises(PriveletError, match="counts must be one of"):
        post_processed_counts(y, "clipped")


def test_no_public_total_when_rows_may_be_dropped():
    """Dropping rows makes the number counted depend on the data: the total of M is then
    private even under replace-one-tuple neighbours, and nothing is shifted to it."""
    from privelet_gui.engine import OrdinalAttribute, ReleaseSpec, Schema

    plain = Schema([OrdinalAttribute.integer_range("a", 0, 3)])
    dropping = Schema([OrdinalAttribute.integer_range("a", 0, 3, out_of_range="drop")])
    assert ReleaseSpec(plain, 1.0).uses_public_total
    assert not ReleaseSpec(plain, 1.0, invalid="drop").uses_public_total
    assert not ReleaseSpec(dropping, 1.0).uses_public_total
    # Rows with a missing cell that an attribute drops: how many is private too.
    dropping_missing = Schema([OrdinalAttribute.integer_range("a", 0, 3, missing_values=("N",), drop_missing=True)])
    assert not ReleaseSpec(dropping_missing, 1.0).uses_public_total
    with pytest.raises(PriveletError, match="every row counted"):
        ReleaseSpec(dropping_missing, 1.0, public_total=True)
    with pytest.raises(PriveletError, match="every row counted"):
        ReleaseSpec(plain, 1.0, public_total=True, invalid="drop")
    release = ReleaseSpec(dropping, 1.0).run(np.ones(4), rng=np.random.default_rng(0))
    assert release.total_shift is None and not release.public_total


@pytest.mark.parametrize("order", ["C", "F"])
@pytest.mark.parametrize("workers", [1, 2, 3])
def test_the_shift_is_the_same_on_any_number_of_threads_and_any_layout(order, workers):
    """Threads add the shift to pieces of the memory (or to sum slabs, where the matrix is not one
    run of memory): every cell gets the same addition, to the bit."""
    noisy = np.array(np.random.default_rng(4).normal(0.0, 1e3, (3, 7, 1001)), order=order)
    shift = (12_345.0 - matrix_sum(noisy)) / noisy.size
    expected = noisy + shift
    assert shift_to_total(noisy, 12_345.0, workers=workers) == shift
    np.testing.assert_array_equal(noisy.view(np.uint64), expected.view(np.uint64))
