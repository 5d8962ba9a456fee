"""Adding a strategy is one class: a trivial redundant one, written here against the interface
alone, releases through the pipeline and gets exact variances and workload errors."""

from fractions import Fraction

import numpy as np
import pytest

from privelet_gui.engine import (
    AxisStrategy,
    OrdinalAttribute,
    Progress,
    QueryBatch,
    ReleasePipeline,
    Schema,
    StrategyPlan,
    Workload,
    calibrate,
)
from privelet_gui.engine.accuracy.workloads import axis_table, combine_tables
from privelet_gui.engine.bounds import strategy_factors
from privelet_gui.engine.noise.bits import release_key
from privelet_gui.engine.pipeline import DEFAULT_SIZING
from privelet_gui.engine.strategies.plan import identity_strategy


class CountedTwice(AxisStrategy):
    """Every value measured twice with weight 1, reconstructed as the mean of its two measurements
    (least squares): half the noise variance of the identity, at twice its sensitivity."""

    kind = "counted-twice"

    def __init__(self, size: int):
        self.size = size
        self.n_measurements = 2 * size

    @property
    def denominators(self) -> np.ndarray:
        return np.ones(self.n_measurements, dtype=np.int64)

    @property
    def rho(self) -> Fraction:
        return Fraction(2)

    @property
    def influence(self) -> int:
        return 2

    def forward(self, x: np.ndarray, out: np.ndarray) -> None:
        out[:, : self.size] = x
        out[:, self.size :] = x

    def reconstruct(self, y: np.ndarray, out: np.ndarray) -> None:
        out[:] = (y[:, : self.size] + y[:, self.size :]) / 2


def test_a_new_strategy_releases_through_the_pipeline_with_exact_variances():
    schema = Schema([OrdinalAttribute.integer_range("x", 0, 5), OrdinalAttribute.integer_range("y", 0, 3)])
    plan = StrategyPlan(schema, [CountedTwice(6), identity_strategy(4)])
    assert plan.rho == 2 and plan.measurement_shape == (12, 4)
    counts = np.arange(24, dtype=np.float64).reshape(6, 4)
    calibration = calibrate(1e9, plan.rho, plan.influence, neighbours="add-remove", rows=int(counts.sum()))
    noisy, rows = ReleasePipeline(plan, calibration, "exact", DEFAULT_SIZING).release(
        counts.copy(), release_key(seed=3), Progress(), threads=1)
    assert rows == counts.sum()
    np.testing.assert_allclose(noisy, counts, atol=1e-5)
    # the base class's dense accuracy: a run of k values has variance k / 2 per unit of noise
    strategy = plan.strategies[0]
    assert strategy.interval_variances(np.array([0, 1]), np.array([0, 4])).tolist() == pytest.approx([0.5, 2.0])
    queries = QueryBatch(np.array([[1, 0]]), np.array([[4, 3]]), np.full((1, 2), -1))
    assert strategy_factors(plan.strategies, queries)[0] == pytest.approx(2.0 * 4)
    workload = Workload.of_queries(schema, queries)
    tables = [axis_table(workload, axis, s) for axis, s in enumerate(plan.strategies)]
    assert combine_tables(tables, public_total=False)[0] == pytest.approx(4 * 2.0 * 4)  # rho^2 = 4
