import itertools

import numpy as np
import pytest

from privelet_gui.engine import (
    Hierarchy,
    NominalAttribute,
    OrdinalAttribute,
    PrefixSums,
    QueryBatch,
    RangeQuery,
    Schema,
    SchemaError,
    random_workload,
    relative_error,
    sanity_bound,
    square_error,
)

JOBS = Hierarchy.from_nested({"*": {"T": ["t1", "t2", "t3"], "O": ["o1"], "S": ["s1", "s2"]}})
SCHEMA = Schema(
    [
        OrdinalAttribute.integer_range("age", 0, 6),
        NominalAttribute("job", JOBS),
        OrdinalAttribute("edu", ["lo", "mid", "hi"]),
    ]
)


def test_prefix_sums_answer_every_box_exactly():
    rng = np.random.default_rng(0)
    m = rng.integers(0, 100, (4, 3, 5)).astype(float)
    table = PrefixSums(m)
    boxes = [
        (lo, hi)
        for lo in itertools.product(range(4), range(3), range(5))
        for hi in itertools.product(range(4), range(3), range(5))
        if all(a <= b for a, b in zip(lo, hi))
    ]
    answers = table.answer(np.array([b[0] for b in boxes]), np.array([b[1] for b in boxes]))
    expected = [m[tuple(slice(a, b + 1) for a, b in zip(lo, hi))].sum() for lo, hi in boxes]
    np.testing.assert_array_equal(answers, expected)


def test_build_from_labels_and_indices():
    q = RangeQuery.build(SCHEMA, {"age": ("2", "4"), "job": "T", "edu": "mid"})
    assert (q.lo, q.hi) == ((2, 0, 1), (4, 2, 1))
    assert q.nodes == (-1, JOBS.index_of("T"), -1)
    assert q.cells == 3 * 3 * 1
    assert q.coverage == pytest.approx(9 / SCHEMA.size)
    assert q.describe() == "age=2..4, job=T, edu=mid"
    assert RangeQuery.build(SCHEMA).describe() == "*"
    assert RangeQuery.build(SCHEMA, {"age": (3, None)}).lo[0] == 3
    same = RangeQuery.from_indices(SCHEMA, {"age": (2, 4), "job": JOBS.index_of("T"), "edu": (1, 1)})
    assert same == q


@pytest.mark.parametrize(
    "constraints, words",
    [
        ({"height": "1"}, "unknown attribute 'height'"),
        ({"age": ("4", "2")}, "is empty"),
        ({"age": "70"}, "'70' is not a value of attribute 'age'"),
        ({"job": "Z"}, "attribute 'job' has no node called 'Z'"),
        ({"job": ("t1", "t2")}, "one node label"),
        ({"age": ("1", "2", "3")}, "(first, last)"),
    ],
)
def test_bad_queries_say_what_is_wrong(constraints, words):
    with pytest.raises(SchemaError) as info:
        RangeQuery.build(SCHEMA, constraints)
    assert words in str(info.value)


def test_random_workload_follows_the_paper():
    rng = np.random.default_rng(7)
    batch = random_workload(SCHEMA, 20000, rng)
    assert len(batch) == 20000
    full = np.array([[0, 0, 0]]), np.array([[6, 5, 2]])
    constrained = (batch.lo != full[0]) | (batch.hi != full[1])
    # 1..3 predicates (d = 3), never more; nominal predicates are non-root nodes
    assert constrained.sum(axis=1).max() <= 3
    job = batch.nodes[:, 1]
    assert ((job == 0) | (job >= 1)).all() and (job > 0).mean() == pytest.approx(2 / 3, abs=0.02)
    # the number of predicates is uniform on {1, 2, 3}: each attribute is picked 2/3 of the time
    nominal_picked = (job > 0).mean()
    assert nominal_picked == pytest.approx(2 / 3, abs=0.02)
    for axis in (0, 2):
        picked = constrained[:, axis].mean()
        assert picked <= 2 / 3 + 0.02
    coverage = batch.coverage(SCHEMA.shape)
    cells = np.prod(batch.hi - batch.lo + 1, axis=1)
    np.testing.assert_allclose(coverage, cells / SCHEMA.size)
    one = batch.query(SCHEMA, 0)
    assert one.coverage == pytest.approx(coverage[0])
    assert QueryBatch.of([one]).lo.tolist() == [list(one.lo)]


def test_error_metrics():
    assert square_error(np.array([3.0, 5]), np.array([1.0, 5])).tolist() == [4.0, 0.0]
    s = sanity_bound(10_000)
    assert s == 10
    assert relative_error(np.array([12.0, 1000]), np.array([2.0, 900]), s).tolist() == [1.0, 100 / 900]
