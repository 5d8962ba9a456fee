"""Generalized sensitivity by brute force: every unit change of M, every S_A."""

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings

from privelet_gui.engine import Hierarchy, NominalAttribute, OrdinalAttribute, Schema, TransformPlan, privelet_plus

from .strategies import forward_matrix, schemas


def weighted_column_norms(plan: TransformPlan) -> np.ndarray:
    f = forward_matrix(plan)
    w = plan.weights.ravel()[:, None]
    # W = inf only on identically-zero coefficients (only children), whose row of F is 0.
    assert (f[np.isinf(w[:, 0])] == 0).all()
    return (np.abs(f) * np.where(np.isinf(w), 0.0, w)).sum(axis=0)


SMALL = Schema(
    [
        OrdinalAttribute.integer_range("age", 0, 4),
        NominalAttribute("job", Hierarchy.from_nested({"*": {"T": ["t1", "t2", "t3"], "O": {"O1": ["o1"]}, "S": ["s1"]}})),
    ]
)


@pytest.mark.parametrize("sa", [(), ("age",), ("job",), ("age", "job")])
def test_rho_is_the_largest_weighted_column_norm(sa):
    plan = TransformPlan(SMALL, sa)
    norms = weighted_column_norms(plan)
    assert norms.max() == pytest.approx(plan.rho)  # equality somewhere
    assert (norms <= plan.rho + 1e-9).all()  # <= rho for every unit change


@settings(max_examples=30, deadline=None)
@given(schemas(max_dims=2, max_cells=120))
def test_rho_bound_is_tight_on_random_schemas(schema):
    for r in range(len(schema) + 1):
        for sa in itertools.combinations(schema.names, r):
            plan = TransformPlan(schema, sa)
            norms = weighted_column_norms(plan)
            assert norms.max() == pytest.approx(plan.rho)


@settings(max_examples=30, deadline=None)
@given(schemas(max_dims=2, max_cells=120))
def test_influence_counts_the_coefficients_one_cell_changes(schema):
    plan = TransformPlan(schema)
    touched = (forward_matrix(plan) != 0).sum(axis=0)
    assert touched.max() == plan.influence


@pytest.mark.parametrize("neighbours, multiplicity", [("replace", 2), ("add-remove", 1)])
@pytest.mark.parametrize("epsilon", [0.1, 1.0, 3.0])
def test_scale_is_the_generalized_sensitivity_over_epsilon(neighbours, multiplicity, epsilon):
    for sa in [(), ("age",), ("age", "job")]:
        plan = TransformPlan(SMALL, sa)
        release = privelet_plus(
            np.ones(SMALL.shape), SMALL, epsilon, sa, np.random.default_rng(0), neighbours=neighbours
        )
        lam = multiplicity * plan.rho / epsilon
        assert release.rho == plan.rho
        assert release.nominal_scale == pytest.approx(lam, rel=1e-15)
        # The effective scale D g / epsilon pays for the rounding to the grid g (math.md):
        # D = ceil(s rho / g) + s K, a negligible excess over lambda.
        cal = release.calibration
        assert cal.units == math.ceil(multiplicity * plan.rho / cal.grid) + multiplicity * plan.influence
        assert release.scale == cal.units * cal.grid / epsilon
        assert lam <= release.scale <= lam * (1 + 1e-4)  # negligible: under 0.01%
        assert release.neighbours == neighbours
