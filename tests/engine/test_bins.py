"""Bins between given edges, open-ended bins, clamped ends that say so, and texts meaning
missing that are values of the domain (issue 39, items 8, 9, 12 and 13)."""

from __future__ import annotations

import contextlib
import math
import re

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

from privelet_gui.engine import (
    DomainError,
    DroppedRowsWarning,
    Hierarchy,
    NominalAttribute,
    NumericBins,
    OrdinalAttribute,
    RangeQuery,
    Schema,
    SchemaError,
    frequency_matrix,
)

INCOME = NumericBins.from_edges([0, 1, 10_000, 50_000, 150_000], open_below=True, open_above=True)


def test_income_brackets_below_zero_zero_and_one_hundred_fifty_thousand_and_more():
    assert INCOME.count == 6
    assert list(INCOME.labels()) == [
        "(-inf, 0)", "[0, 1)", "[1, 10000)", "[10000, 50000)", "[50000, 150000)", "[150000, inf)",
    ]
    numbers = [-1e300, -0.5, 0, 0.99, 1, 9_999.99, 10_000, 149_999, 150_000, 1e300, math.inf, -math.inf]
    assert INCOME.positions(np.array(numbers)).tolist() == [0, 0, 1, 1, 2, 2, 3, 4, 5, 5, 5, 0]
    assert np.isnan(INCOME.positions(np.array([math.nan]))[0])
    assert (INCOME.lowest, INCOME.highest) == (-math.inf, math.inf)
    assert INCOME.index_of_number(10**400) == 5  # beyond every float: still above the last edge
    assert INCOME.edge(0) == -math.inf and INCOME.edge(1) == 0 and INCOME.edge(5) == 150_000
    assert INCOME.edge(6) == math.inf


def test_counting_puts_each_number_in_its_bin_and_open_ends_leave_nothing_outside():
    income = Schema([OrdinalAttribute("income", bins=INCOME)])
    table = pd.DataFrame({"income": ["-20", "0", "0.5", "1", "10000", "49999.99", "150000", "9e99", "-inf", "inf"]})
    assert frequency_matrix(table, income).tolist() == [2, 2, 1, 2, 0, 3]
    # the same numbers as floats, and as a categorical column
    numbers = pd.DataFrame({"income": pd.to_numeric(table["income"])})
    assert frequency_matrix(numbers, income).tolist() == [2, 2, 1, 2, 0, 3]
    assert frequency_matrix(table.astype("category"), income).tolist() == [2, 2, 1, 2, 0, 3]


@pytest.mark.parametrize(
    ("policy", "expected"),
    [("clamp", [3, 1, 3]), ("drop", [1, 1, 1])],
)
def test_closed_edges_keep_the_out_of_range_policies(policy, expected):
    bins = NumericBins.from_edges([0, 10, 100, 1000])
    schema = Schema([OrdinalAttribute("x", bins=bins, out_of_range=policy)])
    table = pd.DataFrame({"x": [-5, -1, 0, 10, 999.5, 1000, 5000]})
    with pytest.warns(DroppedRowsWarning) if policy == "drop" else contextlib.nullcontext():
        assert frequency_matrix(table, schema).tolist() == expected
    strict = Schema([OrdinalAttribute("x", bins=bins)])
    with pytest.raises(DomainError, match=r"outside its domain, e\.g\. -5"):
        frequency_matrix(table, strict)


def test_open_ends_on_equal_width_bins():
    ages = NumericBins(0, 90, 10, open_above=True)
    assert ages.count == 10 and ages.labels()[-2:] == ("[80, 90)", "[90, inf)")
    below = NumericBins(0, 30, 10, open_below=True)
    assert list(below.labels()) == ["(-inf, 0)", "[0, 10)", "[10, 20)", "[20, 30)"]
    schema = Schema([OrdinalAttribute("age", bins=ages)])
    assert frequency_matrix(pd.DataFrame({"age": [0, 89, 90, 120]}), schema).tolist() == [1, 0, 0, 0, 0, 0, 0, 0, 1, 2]
    # out of range still applies below, where the bins are closed
    with pytest.raises(DomainError, match="-1"):
        frequency_matrix(pd.DataFrame({"age": [-1]}), schema)


@given(
    edges=st.lists(st.floats(-1e9, 1e9, allow_nan=False), min_size=2, max_size=12, unique=True).map(sorted),
    below=st.booleans(),
    above=st.booleans(),
    numbers=st.lists(st.floats(-2e9, 2e9, allow_nan=False), max_size=30),
)
def test_every_number_falls_in_the_bin_whose_label_holds_it(edges, below, above, numbers):
    bins = NumericBins.from_edges(edges, open_below=below, open_above=above)
    labels = bins.labels()
    numbers = numbers + edges  # the edges themselves open their bins
    for number, position in zip(numbers, bins.positions(np.array(numbers)), strict=True):
        if not 0 <= position < bins.count:
            assert (number < edges[0] and not below) or (number >= edges[-1] and not above)
            continue
        i = int(position)
        assert bins.edge(i) <= number < bins.edge(i + 1)
        assert labels.index(labels[i]) == i  # each label names its own bin


def test_bad_edges_are_refused_with_what_to_fix():
    with pytest.raises(SchemaError, match=r"edges\[2\] = 5 is not greater than edges\[1\] = 10"):
        NumericBins.from_edges([0, 10, 5])
    with pytest.raises(SchemaError, match="at least two numbers"):
        NumericBins.from_edges([0])
    with pytest.raises(SchemaError, match=r"edges\[1\] must be a finite number .* got inf"):
        NumericBins.from_edges([0, math.inf])
    with pytest.raises(SchemaError, match=r"edges\[1\] must be a finite number that float64 holds exactly"):
        NumericBins.from_edges([0, 2**53 + 1])
    with pytest.raises(SchemaError, match="open_above must be true or false"):
        NumericBins(0, 10, 1, open_above="yes")  # type: ignore[arg-type]
    with pytest.raises(SchemaError, match=r"either a width .* or a list of edges, not both"):
        NumericBins(0, 10, 1, edges=(0.0, 10.0))


def test_bins_wider_than_float64_can_hold_are_a_clear_error_not_an_overflow():
    for start, stop, width in [(-1.7e308, 1.7e308, 1e300), (-1e308, 1e308, 1e308)]:
        with pytest.raises(SchemaError, match=r"span more than float64 can hold.*narrower range"):
            NumericBins(start, stop, width)
    # edges need no difference of two numbers: the widest span float64 has is fine
    widest = NumericBins.from_edges([-1.7e308, 0, 1.7e308])
    assert widest.positions(np.array([-1e308, 1e308])).tolist() == [0, 1]


# -- clamped ends say so ---------------------------------------------------------------------------


def test_clamped_bins_are_labelled_open_and_their_closed_labels_still_name_them():
    income = OrdinalAttribute("income", bins=NumericBins(0, 200_000, 10_000), out_of_range="clamp")
    assert income.labels[0] == "(-inf, 10000)" and income.labels[-1] == "[190000, inf)"
    assert income.labels[1] == "[10000, 20000)"
    assert income.index_of("[190000, inf)") == 19 == income.index_of("[190000, 200000)")  # files written before
    assert income.index_of("[0, 10000)") == 0 == income.index_of("(-inf, 10000)")
    assert income.position_of("[10000, inf)") is None and income.position_of("(-inf, 20000)") is None
    assert income.position_of_number(1e12) == 19 and income.position_of_number(-3) == 0
    # what the matrix counts there: everyone above, as the label says
    counted = frequency_matrix(pd.DataFrame({"income": [195_000, 250_000, 1e9, -1]}), Schema([income]))
    assert counted[-1] == 3 and counted[0] == 1
    unclamped = OrdinalAttribute("income", bins=NumericBins(0, 200_000, 10_000))
    assert unclamped.labels[-1] == "[190000, 200000)" and unclamped.position_of_number(1e12) is None
    # an open end is open anyway: clamping changes only the closed one
    half = OrdinalAttribute("x", bins=NumericBins(0, 30, 10, open_above=True), out_of_range="clamp")
    assert list(half.labels) == ["(-inf, 10)", "[10, 20)", "[20, 30)", "[30, inf)"]


def test_clamped_integer_ranges_are_labelled_open_too():
    age = OrdinalAttribute.integer_range("age", 0, 99, out_of_range="clamp")
    assert age.labels[0] == "<=0" and age.labels[-1] == ">=99" and age.labels[1:3] == ("1", "2")
    assert age.index_of(">=99") == 99 == age.index_of("99") and age.index_of("<=0") == 0 == age.index_of("0")
    assert age.position_of(">=98") is None and age.position_of("<=5") is None
    assert OrdinalAttribute.integer_range("age", 0, 99).labels[-1] == "99"
    own = OrdinalAttribute.integer_range("age", 0, 3, out_of_range="clamp", missing="(missing)", missing_at_end=True)
    assert list(own.labels) == ["<=0", "1", "2", ">=3", "(missing)"]
    query = RangeQuery.build(Schema([age]), {"age": ("65", ">=99")})
    assert (query.lo, query.hi) == ((65,), (99,)) and query.describe() == "age=65..>=99"


def test_range_queries_name_bins_by_their_labels():
    schema = Schema([OrdinalAttribute("income", bins=INCOME)])
    query = RangeQuery.build(schema, {"income": ("[1, 10000)", "[150000, inf)")})
    assert (query.lo, query.hi) == ((2,), (5,))
    assert RangeQuery.build(schema, {"income": "(-inf, 0)"}).lo == (0,)
    with pytest.raises(SchemaError, match="not a value of attribute 'income'"):
        RangeQuery.build(schema, {"income": "[150000, 200000)"})


# -- texts meaning missing that are values ---------------------------------------------------------


@pytest.mark.parametrize(
    ("attribute", "text"),
    [
        (lambda m: OrdinalAttribute.integer_range("age", 0, 99, missing_values=m), "99"),
        (lambda m: OrdinalAttribute.integer_range("age", 0, 99, missing_values=m), "5.0"),  # read as the number 5
        (lambda m: OrdinalAttribute("w", bins=NumericBins(0, 10, 1), missing_values=m), "5.5"),
        (lambda m: OrdinalAttribute("w", bins=INCOME, missing_values=m), "-1"),  # the open bin below holds it
        (lambda m: OrdinalAttribute("edu", ["low", "high"], missing_values=m), "low"),
        (lambda m: NominalAttribute("flag", Hierarchy.flat(["Y", "N"]), missing_values=m), "N"),
        (lambda m: NominalAttribute("job", Hierarchy.from_nested({"*": {"G": ["a", "b"], "H": ["c"]}}), level=2,
                                    missing_values=m), "a"),  # a finest value, counted at the level
    ],
)
def test_a_text_meaning_missing_that_is_a_value_of_the_domain_is_refused(attribute, text):
    with pytest.raises(SchemaError, match=f"a cell holding '{re.escape(text)}' is one of its values.*remove it"):
        attribute(["NA", text])
    assert attribute(["NA"]).missing_values == ("NA",)


def test_texts_meaning_missing_outside_the_domain_or_equal_to_missing_are_kept():
    age = OrdinalAttribute.integer_range("age", 0, 99, missing_values=["-1", "999", "N"], out_of_range="clamp")
    assert age.missing_values == ("-1", "999", "N")  # clamped numbers are not values: missing wins, as before
    flag = NominalAttribute("flag", Hierarchy.flat(["Y", "N", "?"]), missing="?", missing_values=["?"])
    assert flag.missing_values == ("?",)  # its cells count as '?' either way
    group = NominalAttribute("job", Hierarchy.from_nested({"*": {"G": ["a"], "H": ["c"]}}), missing_values=["G"])
    assert group.missing_values == ("G",)  # a group is no cell's value without a level


def test_the_tables_texts_meaning_missing_name_the_attribute_whose_value_they_are():
    schema = Schema([NominalAttribute("flag", Hierarchy.flat(["Y", "N"])), OrdinalAttribute.integer_range("age", 0, 9)])
    with pytest.raises(SchemaError, match=r"include 'N', but a cell holding it is a value of attribute 'flag'.*"
                                          r"give 'flag' texts meaning missing of its own"):
        schema.with_default_missing_values(["NA", "N"])
    own = Schema([NominalAttribute("flag", Hierarchy.flat(["Y", "N"]), missing_values=[]), schema["age"]])
    assert own.with_default_missing_values(["N"])["age"].missing_values == ("N",)
    # counting with such a table default: refused before anything is counted
    table = pd.DataFrame({"flag": ["Y", "N"], "age": [1, 2]})
    with pytest.raises(SchemaError, match="value of attribute 'flag'"):
        frequency_matrix(table, schema.with_default_missing_values(["N"]))
