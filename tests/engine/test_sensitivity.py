"""Generalized sensitivity by brute force: every unit change of M, every S_A."""

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings

from privelet_gui.engine import Hierarchy, NominalAttribute, OrdinalAttribute, Schema, StrategyPlan, privelet_plus

from .strategies import measurement_matrix, schemas


def weighted_column_norms(plan: StrategyPlan) -> np.ndarray:
    """The L1 norm of each column of the weighted measurements' map (what one unit change of a
    cell moves them by, in all)."""
    return np.abs(measurement_matrix(plan)).sum(axis=0)


SMALL = Schema(
    [
        OrdinalAttribute.integer_range("age", 0, 4),
        NominalAttribute("job", Hierarchy.from_nested({"*": {"T": ["t1", "t2", "t3"], "O": {"O1": ["o1"]}, "S": ["s1"]}})),
    ]
)


@pytest.mark.parametrize("sa", [(), ("age",), ("job",), ("age", "job")])
def test_rho_is_the_largest_weighted_column_norm(sa):
    plan = StrategyPlan.paper(SMALL, sa)
    norms = weighted_column_norms(plan)
    assert norms.max() == pytest.approx(float(plan.rho))  # equality somewhere
    assert (norms <= float(plan.rho) + 1e-9).all()  # <= rho for every unit change


@settings(max_examples=30, deadline=None)
@given(schemas(max_dims=2, max_cells=120))
def test_rho_bound_is_tight_on_random_schemas(schema):
    for r in range(len(schema) + 1):
        for sa in itertools.combinations(schema.names, r):
            plan = StrategyPlan.paper(schema, sa)
            norms = weighted_column_norms(plan)
            assert norms.max() == pytest.approx(float(plan.rho))


@settings(max_examples=30, deadline=None)
@given(schemas(max_dims=2, max_cells=120))
def test_influence_counts_the_measurements_one_cell_changes(schema):
    plan = StrategyPlan.paper(schema)
    touched = (measurement_matrix(plan) != 0).sum(axis=0)
    assert touched.max() == plan.influence


@pytest.mark.parametrize("neighbours, multiplicity", [("replace", 2), ("add-remove", 1)])
@pytest.mark.parametrize("epsilon", [0.1, 1.0, 3.0])
def test_scale_is_the_generalized_sensitivity_over_epsilon(neighbours, multiplicity, epsilon):
    for sa in [(), ("age",), ("age", "job")]:
        plan = StrategyPlan.paper(SMALL, sa)
        release = privelet_plus(
            np.ones(SMALL.shape), SMALL, epsilon, sa, np.random.default_rng(0), neighbours=neighbours
        )
        lam = multiplicity * float(plan.rho) / epsilon
        assert release.rho == plan.rho
        assert release.nominal_scale == pytest.approx(lam, rel=1e-15)
        # The effective scale D g / epsilon pays for the rounding to the grid g (math.md):
        # D = ceil(s rho / g) + s K, a negligible excess over lambda.
        cal = release.calibration
        assert cal.units == math.ceil(multiplicity * plan.rho / cal.grid) + multiplicity * plan.influence
        assert release.scale == cal.units * cal.grid / epsilon
        assert lam <= release.scale <= lam * (1 + 1e-4)  # negligible: under 0.01%
        assert release.neighbours == neighbours
