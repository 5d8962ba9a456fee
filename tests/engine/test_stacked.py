"""The stacked identity (HDMM's p-Identity on one axis): exact entries and sensitivity, its name
as its whole definition, least squares, the optimiser, and the HDMM figures of issue 40."""

import numpy as np
import pytest

from privelet_gui.engine import (
    OrdinalAttribute,
    ReleaseSpec,
    Schema,
    SchemaError,
    StackedIdentity,
    Workload,
    axis_strategy,
    best_strategy,
    expected_error,
    short_strategy_name,
)
from privelet_gui.engine.accuracy.workloads import axis_gram, axis_table
from privelet_gui.io import load_release, save_release
from privelet_gui.strategy_bench import prefixes, random_ranges


def learned(size: int = 24, rows: int = 3) -> StackedIdentity:
    schema = Schema([OrdinalAttribute.integer_range("x", 0, size - 1)])
    workload = Workload.of_queries(schema, random_ranges((size,), 200, seed=1))
    return StackedIdentity.optimised(axis_gram(workload, 0, np.ones(200), average=True), rows=rows, iterations=100)


def test_entries_are_integers_over_a_power_of_two_and_every_column_sums_to_one():
    s = learned()
    f = s.measurement_matrix()
    np.testing.assert_allclose(np.abs(f).sum(axis=0), 1.0, atol=1e-15)
    assert s.rho == 1 and (s.denominators == 1 << s.bits).all()
    assert s.influence == (f != 0).sum(axis=0).max() and s.growth == np.rint(f * (1 << s.bits)).max()
    np.testing.assert_allclose(s.reconstruction_matrix(), np.linalg.pinv(f), atol=1e-10)
    np.testing.assert_allclose(s.reconstruction_matrix() @ f, np.eye(s.size), atol=1e-10)


def test_the_name_is_the_whole_definition():
    s = learned()
    back = axis_strategy(OrdinalAttribute.integer_range("x", 0, 23), s.name)
    assert np.array_equal(back.rows, s.rows) and back.bits == s.bits
    assert short_strategy_name(s.name) == "stacked identity (+3 rows)"
    with pytest.raises(SchemaError, match="not a stacked identity"):
        StackedIdentity.from_name(24, "stacked/12/3/garbage")
    with pytest.raises(SchemaError, match="not a stacked identity for 25 values"):
        StackedIdentity.from_name(25, s.name)
    with pytest.raises(SchemaError, match="columns sum below"):
        StackedIdentity(np.array([[4096, 0]]), bits=12)


def test_the_optimiser_lowers_the_workload_s_error_below_the_identity_s():
    size = 24
    schema = Schema([OrdinalAttribute.integer_range("x", 0, size - 1)])
    workload = Workload.of_queries(schema, random_ranges((size,), 200, seed=1))
    gram = axis_gram(workload, 0, np.ones(200), average=True)
    s = learned(size)
    # trace(G (A'A)^-1) is the workload's summed variance factor: the axis table's mean times its rows
    assert axis_table(workload, 0, s).own.sum() == pytest.approx(np.trace(gram @ s.covariance), rel=1e-9)
    identity = axis_table(workload, 0, axis_strategy(schema[0], "identity")).own.sum()
    assert axis_table(workload, 0, s).own.sum() < 0.8 * identity


def test_a_release_gives_back_the_counts_at_a_huge_epsilon():
    s = learned()
    schema = Schema([OrdinalAttribute.integer_range("x", 0, 23), OrdinalAttribute.integer_range("y", 0, 2)])
    spec = ReleaseSpec(schema, 1e9, "strategies", strategies=(s.name, "tree-2"), neighbours="add-remove")
    counts = np.random.default_rng(2).integers(0, 40, schema.shape).astype(float)
    np.testing.assert_allclose(spec.run(counts, seed=4).noisy, counts, atol=1e-4)


@pytest.mark.parametrize(("kind", "hdmm"), [("ranges", 45.0), ("prefixes", 35.0)])
def test_on_96_values_the_choice_is_within_1_1_of_hdmm(kind, hdmm):
    """Issue 40's table: 96 values (ages), epsilon 1, add/remove, HDMM's mean square error."""
    schema = Schema([OrdinalAttribute.integer_range("age", 0, 95)])
    queries = prefixes(96) if kind == "prefixes" else random_ranges((96,), 2000)
    workload = Workload.of_queries(schema, queries)
    choice = best_strategy(ReleaseSpec(schema, 1.0, neighbours="add-remove"), workload)
    assert choice.error <= 1.1 * hdmm
    assert expected_error(choice.spec, workload) == pytest.approx(choice.error)


def test_a_learned_strategy_is_written_to_and_read_from_a_release_file(tmp_path):
    s = learned()
    schema = Schema([OrdinalAttribute.integer_range("x", 0, 23)])
    release = ReleaseSpec(schema, 1.0, "strategies", strategies=(s.name,)).run(np.ones(24), seed=1)
    save_release(release, tmp_path / "r.npz", seed=1)
    assert load_release(tmp_path / "r.npz").spec.plan.strategies[0].rows.tolist() == s.rows.tolist()
