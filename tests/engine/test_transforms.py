import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from privelet_gui.engine import (
    HaarTransform,
    Hierarchy,
    IdentityTransform,
    NominalAttribute,
    NominalTransform,
    OrdinalAttribute,
    Schema,
    SchemaError,
    TransformPlan,
    haar_forward,
    haar_inverse,
    haar_weights,
    hn_forward,
    hn_inverse,
    nominal_forward,
    nominal_inverse,
    nominal_weights,
)

from .strategies import forward_matrix, hierarchies, schemas

FIG3 = Hierarchy.from_nested({"root": {"a": ["v1", "v2", "v3"], "b": ["v4", "v5", "v6"]}})


def subsets(names):
    return [combo for r in range(len(names) + 1) for combo in itertools.combinations(names, r)]


# -- Haar ------------------------------------------------------------------------------
def test_haar_weights_match_the_paper_example():
    w = haar_weights(8)
    assert (w[0], w[1], w[2], w[4]) == (8, 8, 4, 2)  # c0, c1, c2, c4


def test_haar_coefficients_are_means_and_half_differences():
    x = np.array([9.0, 3, 5, 7, 1, 1, 4, 2])
    c = haar_forward(x)
    assert c[0] == x.mean()
    assert c[1] == (x[:4].mean() - x[4:].mean()) / 2
    assert c[4] == (x[0] - x[1]) / 2
    np.testing.assert_array_equal(haar_inverse(c, 8), x)


def test_haar_pads_to_a_power_of_two():
    x = np.arange(1.0, 6.0)  # 5 values -> 8 coefficients
    c = haar_forward(x)
    assert c.shape == (8,)
    assert c[0] == x.sum() / 8
    np.testing.assert_allclose(haar_inverse(c, 5), x)
    assert HaarTransform(5).rho == 4  # 1 + ceil(log2 5)


@pytest.mark.parametrize("size", [1, 2, 3, 7, 16, 33])
@pytest.mark.parametrize("axis", [0, 1, -1])
def test_haar_round_trip_every_axis(size, axis):
    rng = np.random.default_rng(size)
    shape = [3, 4, 2]
    shape[axis] = size
    x = rng.integers(0, 50, shape).astype(float)
    t = HaarTransform(size)
    np.testing.assert_allclose(t.inverse(t.forward(x, axis), axis), x, atol=1e-9)


@pytest.mark.parametrize("size", [2, 33, 101, 1001])
@pytest.mark.parametrize("columns", [1, 20, 200, 2000])
def test_haar_gives_the_same_numbers_however_many_positions_share_its_axis(size, columns):
    # Many positions per value do the coarse levels level by level, few by one matrix product:
    # the coefficients (exact integers) and the values must not depend on which.
    t = HaarTransform(size)
    x = np.random.default_rng(size + columns).integers(0, 50, (size, columns)).astype(float)
    picked = sorted({0, columns // 3, columns - 1})
    full, kept = t.numerators(x, 0), t.kept_numerators(x, 0)
    np.testing.assert_array_equal(kept, full[t.kept])
    for j in picked:  # one position alone takes the matrix product
        np.testing.assert_array_equal(full[:, j], t.numerators(x[:, j : j + 1], 0)[:, 0])
    noisy = kept / t.weights[t.kept][:, None] + np.random.default_rng(7).normal(size=kept.shape)
    values = t.kept_inverse(noisy, 0)
    for j in picked:
        np.testing.assert_allclose(values[:, j], t.kept_inverse(noisy[:, j : j + 1], 0)[:, 0], rtol=1e-13, atol=1e-10)
    np.testing.assert_allclose(t.kept_inverse(kept / t.weights[t.kept][:, None], 0), x, atol=1e-9)


# -- nominal ---------------------------------------------------------------------------
def test_nominal_figure_3_weights_groups_and_values():
    t = NominalTransform(FIG3)
    np.testing.assert_array_equal(nominal_weights(FIG3), [1, 1, 1] + [0.75] * 6)
    x = np.arange(1.0, 7.0)
    c = nominal_forward(x, FIG3)
    assert c[0] == 21  # leaf-sum of the root
    assert c[1] == 6 - 21 / 2  # leafsum(a) - leafsum(root) / 2
    assert c[3] == 1 - 6 / 3  # v1: leafsum(v1) - leafsum(a) / 3
    np.testing.assert_allclose(nominal_inverse(c, FIG3), x)
    assert t.rho == 3
    assert t.n_coefficients == 6 + 3  # over-complete: one more per internal node


def test_only_child_gets_infinite_weight_and_zero_coefficient():
    h = Hierarchy.from_nested({"*": {"A": ["x", "y"], "B": {"B1": ["z"]}}})
    t = NominalTransform(h)
    c = t.forward(np.array([3.0, 5, 7]))
    for label in ("B1", "z"):
        i = h.index_of(label)
        assert c[i] == 0 and np.isinf(t.weights[i])
    assert t.rho == 3 and h.height == 4


def test_mean_subtraction_changes_nothing_on_exact_coefficients_but_fixes_noisy_ones():
    rng = np.random.default_rng(0)
    x = rng.integers(0, 9, 6).astype(float)
    c = nominal_forward(x, FIG3)
    np.testing.assert_allclose(nominal_inverse(c, FIG3, mean_subtraction=False), x)
    noisy = c + rng.normal(0, 1, c.shape)
    # after mean subtraction, every sibling group sums to zero, so the leaf sums are consistent:
    out = nominal_inverse(noisy, FIG3)
    assert out.sum() == pytest.approx(noisy[0])


def counts_along(h: Hierarchy, axis: int, rng: np.random.Generator) -> np.ndarray:
    """Random counts of shape (2, 3, 2) but with the hierarchy's leaves along ``axis``."""
    shape = [2, 3, 2]
    shape[axis] = h.size
    return rng.integers(0, 100, shape).astype(float)


@settings(max_examples=60, deadline=None)
@given(hierarchies(), st.integers(0, 2), st.integers(0, 2**32 - 1))
def test_nominal_round_trip_random_hierarchies_every_axis(h, axis, seed):
    x = counts_along(h, axis, np.random.default_rng(seed))
    t = NominalTransform(h)
    np.testing.assert_allclose(t.inverse(t.forward(x, axis), axis), x, atol=1e-9)


@settings(max_examples=40, deadline=None)
@given(hierarchies(), st.integers(0, 2), st.integers(0, 2**32 - 1))
def test_nominal_group_loop_and_vectorised_paths_agree(h, axis, seed):
    # Big blocks visit sibling groups one by one, small ones use reduceat/repeat: same numbers.
    from privelet_gui.engine import nominal

    rng = np.random.default_rng(seed)
    x = counts_along(h, axis, rng)
    t = NominalTransform(h)
    coefficients = t.forward(x, axis)
    noisy = coefficients + rng.normal(0, 3, coefficients.shape)
    results = []
    for threshold in (0, 10**12):  # every depth looped, then none
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(nominal, "_GROUP_LOOP_CELLS", threshold)
            results.append((t.numerators(x, axis), t.inverse(noisy, axis), t.inverse(noisy, axis, mean_subtraction=False)))
    looped, vectorised = results
    np.testing.assert_array_equal(looped[0], vectorised[0])  # numerators stay exact integers
    np.testing.assert_allclose(looped[1], vectorised[1], atol=1e-9)
    np.testing.assert_allclose(looped[2], vectorised[2], atol=1e-9)


def test_nominal_inverse_overwrites_its_input_only_when_allowed():
    t = NominalTransform(FIG3)
    c = t.forward(np.array([[1.0, 2, 3, 4, 5, 6], [6, 0, 2, 9, 1, 1]]), axis=1)
    kept = c.copy()
    expected = t.inverse(c, axis=1)
    np.testing.assert_array_equal(c, kept)
    np.testing.assert_allclose(t.inverse(c, axis=1, overwrite_input=True), expected)


@pytest.mark.parametrize(
    "transform",
    [HaarTransform(37), HaarTransform(20), NominalTransform(FIG3), IdentityTransform(5)],
    ids=["haar", "haar-coarse-only", "nominal", "identity"],
)
def test_inverse_writes_into_out_of_any_memory_layout(transform):
    rng = np.random.default_rng(3)
    c = rng.normal(size=(3, transform.n_coefficients, 4))
    expected = transform.inverse(c, axis=1)
    out = np.empty((4, transform.size, 3)).transpose(2, 1, 0)  # shape (3, size, 4), not C-ordered
    assert transform.inverse(c, axis=1, out=out) is out
    np.testing.assert_allclose(out, expected)


def test_haar_numerators_accept_any_memory_layout():
    t = HaarTransform(37)
    x = np.random.default_rng(4).integers(0, 9, (5, 37, 4)).astype(float)
    np.testing.assert_array_equal(t.numerators(np.asfortranarray(x), 1), t.numerators(x, 1))
    np.testing.assert_array_equal(t.numerators(x.transpose(2, 1, 0), 1), t.numerators(x, 1).transpose(2, 1, 0))


# -- HN --------------------------------------------------------------------------------
@settings(max_examples=40, deadline=None)
@given(schemas(), st.integers(0, 2**32 - 1))
def test_hn_round_trip_every_sa(schema, seed):
    rng = np.random.default_rng(seed)
    m = rng.integers(0, 20, schema.shape).astype(float)
    for sa in subsets(schema.names):
        c, w = hn_forward(m, schema, sa)
        assert c.shape == w.shape == TransformPlan(schema, sa).coefficient_shape
        np.testing.assert_allclose(hn_inverse(c, schema, sa), m, atol=1e-8)


def test_hn_weights_are_products_of_axis_weights():
    schema = Schema([OrdinalAttribute.integer_range("age", 0, 3), NominalAttribute("g", FIG3)])
    _, w = hn_forward(np.zeros(schema.shape), schema)
    np.testing.assert_array_equal(w, np.outer(haar_weights(4), nominal_weights(FIG3)))
    _, w_sa = hn_forward(np.zeros(schema.shape), schema, sa=["age"])
    np.testing.assert_array_equal(w_sa, np.outer(np.ones(4), nominal_weights(FIG3)))


def test_hn_equals_the_tensor_product_of_axis_transforms():
    schema = Schema([OrdinalAttribute.integer_range("age", 0, 2), NominalAttribute("g", FIG3)])
    rng = np.random.default_rng(3)
    m = rng.integers(0, 9, schema.shape).astype(float)
    c, _ = hn_forward(m, schema)
    along_age = haar_forward(m, axis=0)
    expected = nominal_forward(along_age, FIG3, axis=1)
    np.testing.assert_allclose(c, expected)


def test_numerators_are_exact_integers_for_counts():
    schema = Schema([OrdinalAttribute.integer_range("a", 0, 6), NominalAttribute("g", FIG3)])
    plan = TransformPlan(schema)
    m = np.random.default_rng(1).integers(0, 10**6, schema.shape).astype(float)
    z = plan.numerators(m)
    np.testing.assert_array_equal(z, np.round(z))
    f = forward_matrix(plan)
    np.testing.assert_allclose(plan.divide(z.copy(), "divisors").ravel(), f @ m.ravel())


def test_hn_errors_say_what_to_fix():
    schema = Schema([OrdinalAttribute.integer_range("a", 0, 3)])
    with pytest.raises(SchemaError, match=r"shape \(5,\).*needs \(4,\)"):
        hn_forward(np.zeros(5), schema)
    with pytest.raises(SchemaError, match="unknown attribute 'b'"):
        hn_forward(np.zeros(4), schema, sa=["b"])
    with pytest.raises(SchemaError, match="coefficient array"):
        hn_inverse(np.zeros(3), schema)


def test_round_trip_with_leaves_at_several_depths():
    # level order puts the deep leaf "o1" after "s1", "s2": the leaves are not one block
    h = Hierarchy.from_nested({"*": {"T": ["t1", "t2", "t3"], "O": {"O1": ["o1"]}, "S": ["s1", "s2"]}})
    t = NominalTransform(h)
    x = np.array([[1.0, 2, 3, 4, 5, 6], [6, 0, 2, 9, 1, 1]])
    c = t.forward(x, axis=1)
    assert c[0, h.index_of("O")] == 4 - 21 / 3
    np.testing.assert_allclose(t.inverse(c, axis=1), x)
