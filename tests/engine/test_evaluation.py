"""The paper's evaluation: quintile tables against brute force; the data-free preview."""

import numpy as np
import pytest

from privelet_gui.engine import (
    Cancelled,
    Hierarchy,
    NominalAttribute,
    OrdinalAttribute,
    Schema,
    basic,
    coverage_summary,
    privelet_plus,
    random_workload,
    variance_model,
)
from privelet_gui.engine.accuracy.evaluation import coverage_groups, evaluate, expected_errors, quintile_summary

JOBS = Hierarchy.from_nested({"*": {"T": ["t1", "t2", "t3"], "O": ["o1", "o2"], "S": ["s1", "s2", "s3", "s4"]}})
SCHEMA = Schema(
    [
        OrdinalAttribute.integer_range("age", 0, 9),
        NominalAttribute("sex", Hierarchy.flat(["F", "M"])),
        NominalAttribute("job", JOBS),
        OrdinalAttribute.integer_range("income", 0, 20),
    ]
)


def test_coverage_groups_are_equal_sized_and_ordered():
    coverage = np.array([0.5, 0.1, 0.9, 0.3, 0.7, 0.2, 0.8, 0.4, 0.6, 1.0])
    groups = coverage_groups(coverage)
    assert np.bincount(groups).tolist() == [2, 2, 2, 2, 2]
    for g in range(4):
        assert coverage[groups == g].max() <= coverage[groups == g + 1].min()


def test_quintile_table_matches_brute_force():
    rng = np.random.default_rng(42)
    matrix = rng.integers(0, 6, SCHEMA.shape).astype(float)
    epsilons = [0.5, 1.0]
    workload, rows = evaluate(matrix, SCHEMA, epsilons, ["age", "sex"], queries=500, rng=np.random.default_rng(7))
    # Replay the same random stream: the workload, then Basic and Privelet+ per epsilon.
    replay = np.random.default_rng(7)
    queries = random_workload(SCHEMA, 500, replay)
    np.testing.assert_array_equal(queries.lo, workload.lo)
    boxes = [tuple(slice(a, b + 1) for a, b in zip(lo, hi)) for lo, hi in zip(queries.lo, queries.hi)]
    actual = np.array([matrix[box].sum() for box in boxes])
    cells = np.array([np.prod([s.stop - s.start for s in box]) for box in boxes])
    coverage = cells / SCHEMA.size
    sanity = 0.001 * matrix.sum()
    order = np.argsort(coverage, kind="stable")
    expected = []
    for epsilon in epsilons:
        for mechanism in ("basic", "privelet+"):
            if mechanism == "basic":
                noisy_matrix = basic(matrix, epsilon, replay, schema=SCHEMA).noisy
            else:
                noisy_matrix = privelet_plus(matrix, SCHEMA, epsilon, ["age", "sex"], replay).noisy
            noisy = np.array([noisy_matrix[box].sum() for box in boxes])
            for q in range(5):
                members = order[q * 100 : (q + 1) * 100]
                expected.append(
                    (
                        epsilon,
                        mechanism,
                        q + 1,
                        coverage[members].mean(),
                        ((noisy - actual) ** 2)[members].mean(),
                        (np.abs(noisy - actual) / np.maximum(actual, sanity))[members].mean(),
                        100,
                    )
                )
    got = [
        (r.epsilon, r.mechanism, r.row.quintile, r.row.coverage, r.row.square_error, r.row.relative_error, r.row.queries)
        for r in rows
    ]
    assert len(got) == len(expected) == 20
    for g, e in zip(got, expected):
        assert g[:3] == e[:3] and g[6] == e[6]
        np.testing.assert_allclose(g[3:6], e[3:6], rtol=1e-9)


def test_expected_errors_are_the_exact_variances():
    workload = random_workload(SCHEMA, 2000, np.random.default_rng(1))
    preview = expected_errors(SCHEMA, 0.5, ["age", "sex"], workload)
    model = variance_model(SCHEMA)
    coverage = workload.coverage(SCHEMA.shape)
    groups = coverage_groups(coverage)
    basic_var = model.batch(workload, 0.5, SCHEMA.names)
    for row in preview["basic"]:
        assert row.square_error == pytest.approx(basic_var[groups == row.quintile - 1].mean())
        # Basic: 8 k / epsilon^2 for a box of k cells
        assert row.square_error == pytest.approx(8 / 0.25 * SCHEMA.size * row.coverage)
    assert [r.queries for r in preview["privelet+"]] == [400] * 5


def test_privelet_plus_beats_basic_on_large_queries_as_in_the_paper():
    from privelet_gui.bench import brazil_schema

    big = brazil_schema()
    workload = random_workload(big, 4000, np.random.default_rng(3))
    preview = expected_errors(big, 1.0, ["Age", "Gender"], workload)
    assert preview["privelet+"][-1].square_error * 10 < preview["basic"][-1].square_error
    basic_errors = [r.square_error for r in preview["basic"]]
    assert basic_errors == sorted(basic_errors)  # Basic grows with coverage


def test_evaluate_cancels_and_rejects_bad_epsilons():
    matrix = np.ones(SCHEMA.shape)
    with pytest.raises(Cancelled):
        evaluate(matrix, SCHEMA, [1.0], [], queries=50, should_cancel=lambda: True)
    with pytest.raises(ValueError, match="epsilon"):
        evaluate(matrix, SCHEMA, [0.0], [], queries=50)


def test_quintile_summary_with_fewer_queries_than_quintiles():
    rows = quintile_summary(np.array([0.2, 0.4]), np.array([1.0, 3.0]))
    assert [r.queries for r in rows] == [1, 0, 0, 0, 1] or sum(r.queries for r in rows) == 2


def test_measure_release_compares_with_basic_on_the_same_workload():
    from privelet_gui.engine import marginal, measure_release

    rng = np.random.default_rng(11)
    matrix = rng.integers(0, 6, SCHEMA.shape).astype(float)
    release = privelet_plus(matrix, SCHEMA, 1.0, ["age", "sex"], np.random.default_rng(2))
    preview = measure_release(matrix, release, queries=400, rng=np.random.default_rng(9))
    assert set(preview.by_coverage) == {"basic", "privelet+"} and preview.queries == 400
    # brute force for the release's own line, on the same workload
    replay = np.random.default_rng(9)
    workload = random_workload(SCHEMA, 400, replay)
    boxes = [tuple(slice(a, b + 1) for a, b in zip(lo, hi)) for lo, hi in zip(workload.lo, workload.hi)]
    errors = np.array([(release.noisy[b].sum() - matrix[b].sum()) ** 2 for b in boxes])
    expected = coverage_summary(workload.coverage(SCHEMA.shape), errors)  # grouped as the expected errors are
    assert len(preview.by_coverage["privelet+"]) == len(expected)
    for got, want in zip(preview.by_coverage["privelet+"], expected, strict=True):
        assert got.square_error == pytest.approx(want.square_error, rel=1e-9)
        assert got.queries == want.queries and np.isfinite(got.relative_error)
    assert preview.sanity == pytest.approx(0.001 * matrix.sum())
    np.testing.assert_array_equal(preview.true_marginals["job"], matrix.sum(axis=(0, 1, 3)))
    np.testing.assert_array_equal(marginal(matrix, [2, 0]), matrix.sum(axis=(1, 3)).T)
    only_basic = measure_release(matrix, basic(matrix, 1.0, rng, schema=SCHEMA), queries=100, rng=rng)
    assert set(only_basic.by_coverage) == {"basic"}


@pytest.mark.parametrize("public_total", [True, False])
def test_measure_release_compares_with_basic_made_like_the_release(public_total):
    """Basic's line is a Basic release with the release's own public-total choice: brute
    force on the same workload, with the generator where the workload left it."""
    from privelet_gui.engine import measure_release

    matrix = np.random.default_rng(5).integers(0, 6, SCHEMA.shape).astype(float)
    release = privelet_plus(matrix, SCHEMA, 1.0, ["age", "sex"], np.random.default_rng(2), public_total=public_total)
    preview = measure_release(matrix, release, queries=300, rng=np.random.default_rng(4))
    replay = np.random.default_rng(4)
    workload = random_workload(SCHEMA, 300, replay)
    comparison = basic(matrix, 1.0, replay, schema=SCHEMA, public_total=public_total)
    assert comparison.public_total is public_total
    boxes = [tuple(slice(a, b + 1) for a, b in zip(lo, hi)) for lo, hi in zip(workload.lo, workload.hi)]
    errors = np.array([(comparison.noisy[b].sum() - matrix[b].sum()) ** 2 for b in boxes])
    expected = coverage_summary(workload.coverage(SCHEMA.shape), errors)
    for got, want in zip(preview.by_coverage["basic"], expected, strict=True):
        assert got.square_error == pytest.approx(want.square_error, rel=1e-9)


def test_coverage_levels_keep_equal_coverages_together_and_match_quintiles_without_ties():
    from privelet_gui.engine import coverage_levels

    rng = np.random.default_rng(3)
    distinct = rng.permutation(1000) / 1000.0 + 1e-4
    np.testing.assert_array_equal(coverage_levels(distinct), coverage_groups(distinct))
    # many coverages with runs of ties: no run is split, groups follow coverage, none is empty
    tied = np.repeat(np.arange(40) / 40.0 + 0.01, rng.integers(1, 30, 40))
    levels = coverage_levels(tied)
    for value in np.unique(tied):
        assert len(set(levels[tied == value])) == 1
    order = np.argsort(tied, kind="stable")
    assert np.all(np.diff(levels[order]) >= 0) and set(levels) == set(range(levels.max() + 1)) and levels.max() < 5


def test_a_release_is_measured_in_the_groups_its_expected_error_is_shown_in():
    from privelet_gui.engine import ReleaseSpec, expected_by_coverage, marginals, measure_release

    matrix = np.random.default_rng(3).integers(0, 6, SCHEMA.shape).astype(float)
    spec = ReleaseSpec(SCHEMA, 1.0, sa=("sex",))
    release = spec.run(matrix, rng=np.random.default_rng(4))
    workload = marginals(SCHEMA, (1, 2))
    measured = measure_release(matrix, release, workload=workload, rng=np.random.default_rng(5))
    expected = expected_by_coverage({"privelet+": spec}, workload.queries())["privelet+"]
    coverages = set(workload.queries().coverage(SCHEMA.shape).tolist())
    assert len(expected) == len(coverages) != 5  # a marginal workload: a group per coverage, not quintiles
    for rows in measured.by_coverage.values():
        assert [(r.quintile, r.queries) for r in rows] == [(r.quintile, r.queries) for r in expected]
        assert [r.coverage for r in rows] == pytest.approx([r.coverage for r in expected], rel=1e-12)


def test_expected_by_coverage_is_each_releases_exact_variance_per_group():
    from privelet_gui.engine import ReleaseSpec, coverage_summary, expected_by_coverage, marginals

    workload = marginals(SCHEMA, (1, 2)).queries()
    specs = {"privelet+": ReleaseSpec(SCHEMA, 0.5, sa=("sex",)), "basic": ReleaseSpec(SCHEMA, 0.5, "basic")}
    rows = expected_by_coverage(specs, workload)
    coverage = workload.coverage(SCHEMA.shape)
    assert list(rows) == ["privelet+", "basic"]
    def numbers(groups):
        return [(r.quintile, r.coverage, r.square_error, r.queries) for r in groups]

    for name, spec in specs.items():
        assert numbers(rows[name]) == numbers(coverage_summary(coverage, spec.variances(workload)))
    # a marginal workload of few coverages: one point per coverage, every query counted once
    assert [r.coverage for r in rows["basic"]] == pytest.approx(sorted(set(coverage.tolist())))
    assert sum(r.queries for r in rows["basic"]) == len(workload)
    with pytest.raises(Cancelled):
        expected_by_coverage(specs, workload, should_cancel=lambda: True)
