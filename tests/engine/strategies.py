"""Shared test builders: random hierarchies and schemas, explicit transform matrices."""

from __future__ import annotations

import itertools
from functools import reduce

import numpy as np
from hypothesis import strategies as st

from privelet_gui.engine import Hierarchy, HierarchyNode, NominalAttribute, OrdinalAttribute, Schema, StrategyPlan


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


def measurement_matrix(plan: StrategyPlan) -> np.ndarray:
    """The weighted measurements as an explicit (measurements x cells) matrix: the Kronecker
    product of the axes' maps (each the strategy's numerators of unit counts over denominators)."""
    return reduce(np.kron, [s.measurement_matrix() for s in plan.strategies])


def reconstruction_matrix(plan: StrategyPlan) -> np.ndarray:
    """The reconstruction (mean subtraction included) as an explicit (cells x measurements) matrix."""
    return reduce(np.kron, [s.reconstruction_matrix() for s in plan.strategies])


def box_indicator(shape: tuple[int, ...], lo, hi) -> np.ndarray:
    q = np.zeros(shape)
    q[tuple(slice(a, b + 1) for a, b in zip(lo, hi))] = 1.0
    return q.ravel()


def explicit_variance_factor(plan: StrategyPlan, lo, hi) -> float:
    """||R^T q||^2 from explicit matrices: the query's variance per unit of noise variance on
    each weighted measurement."""
    q = box_indicator(plan.shape, lo, hi)
    return float(np.sum((reconstruction_matrix(plan).T @ q) ** 2))
