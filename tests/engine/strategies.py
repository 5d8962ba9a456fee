"""Shared test builders: random hierarchies and schemas, explicit transform matrices."""

from __future__ import annotations

import itertools

import numpy as np
from hypothesis import strategies as st

from privelet_gui.engine import Hierarchy, HierarchyNode, NominalAttribute, OrdinalAttribute, Schema, TransformPlan


@st.composite
def hierarchies(draw, max_leaves: int = 12, max_depth: int = 4) -> Hierarchy:
    """Random hierarchies, with only children, uneven depths and single-leaf groups."""
    counter = itertools.count()

    def node(depth: int, budget: int) -> HierarchyNode:
        if depth >= max_depth or budget <= 1 or (draw(st.booleans()) and depth > 1):
            return HierarchyNode(f"v{next(counter)}")
        fanout = draw(st.integers(1, min(4, budget)))
        share = max(1, budget // fanout)
        return HierarchyNode(f"g{next(counter)}", tuple(node(depth + 1, share) for _ in range(fanout)))

    root = node(1, draw(st.integers(1, max_leaves)))
    if root.is_leaf:  # a hierarchy needs a root group
        root = HierarchyNode("root", (root,))
    return Hierarchy(root)


@st.composite
def schemas(draw, max_dims: int = 3, max_cells: int = 400) -> Schema:
    attributes = []
    cells = 1
    for i in range(draw(st.integers(1, max_dims))):
        if draw(st.booleans()):
            attribute = NominalAttribute(f"n{i}", draw(hierarchies(max_leaves=8)))
        else:
            attribute = OrdinalAttribute.integer_range(f"o{i}", 0, draw(st.integers(0, 9)))
        if cells * attribute.size > max_cells:
            break
        cells *= attribute.size
        attributes.append(attribute)
    if not attributes:
        attributes.append(OrdinalAttribute.integer_range("o", 0, 3))
    return Schema(attributes)


def forward_matrix(plan: TransformPlan) -> np.ndarray:
    """The HN transform as an explicit (coefficients x cells) matrix."""
    shape = plan.shape
    m = int(np.prod(shape))
    columns = []
    for cell in range(m):
        unit = np.zeros(m)
        unit[cell] = 1.0
        z = plan.numerators(unit.reshape(shape))
        columns.append(plan.divide(z, "divisors").ravel())
    return np.array(columns).T


def inverse_matrix(plan: TransformPlan) -> np.ndarray:
    """The inverse (with mean subtraction) as an explicit (cells x coefficients) matrix."""
    shape = plan.coefficient_shape
    n = int(np.prod(shape))
    columns = []
    for k in range(n):
        unit = np.zeros(n)
        unit[k] = 1.0
        columns.append(np.asarray(plan.inverse(unit.reshape(shape))).ravel())
    return np.array(columns).T


def box_indicator(shape: tuple[int, ...], lo, hi) -> np.ndarray:
    q = np.zeros(shape)
    q[tuple(slice(a, b + 1) for a, b in zip(lo, hi))] = 1.0
    return q.ravel()


def explicit_variance_factor(plan: TransformPlan, lo, hi) -> float:
    """sum_c (R^T q)_c^2 / W_c^2 from explicit matrices (infinite weights contribute 0)."""
    r = inverse_matrix(plan)
    q = box_indicator(plan.shape, lo, hi)
    w = plan.weights.ravel()
    return float(np.sum((r.T @ q) ** 2 / w**2))
