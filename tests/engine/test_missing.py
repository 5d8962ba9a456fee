"""Missing cells in the engine: texts meaning missing, rows dropped (and reported), a value of
their own at the end of an ordinal domain; and display labels of hierarchies."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

from privelet_gui.engine import (
    CountReport,
    DomainError,
    Hierarchy,
    HierarchyError,
    NominalAttribute,
    NumericBins,
    OrdinalAttribute,
    ReleaseSpec,
    Schema,
    SchemaError,
    frequency_matrix,
)
from privelet_gui.engine.counting import FrequencyCounter

SEX = Hierarchy.flat(["1", "2"])


def count(frame: pd.DataFrame, schema: Schema, **options: object) -> tuple[np.ndarray, CountReport]:
    counter = FrequencyCounter(schema, **options)  # type: ignore[arg-type]
    counter.add(frame)
    return counter.matrix(), counter.report


# -- texts meaning missing ------------------------------------------------------------------------


@pytest.mark.parametrize("categorical", [False, True])
def test_texts_meaning_missing_count_as_the_missing_value(categorical):
    column = pd.Series(["1", "N", "2", "", None, "NA", "2"])
    if categorical:
        column = column.astype("category")
    sex = NominalAttribute("sex", Hierarchy.flat(["1", "2", "(missing)"]), missing="(missing)", missing_values=["N", "NA"])
    encoded = sex.encode(column)
    assert encoded.codes.tolist() == [0, 2, 1, 2, 2, 2, 1]
    assert encoded.missing_rows is None  # every missing cell has a value to count as


def test_an_ordinal_value_of_its_own_at_the_end_of_the_domain():
    age = OrdinalAttribute.integer_range("age", 0, 3, missing="N", missing_at_end=True, missing_values=["N"])
    assert (age.size, list(age.labels), age.position_of("N"), age.position_of("3")) == (5, ["0", "1", "2", "3", "N"], 4, 3)
    matrix, report = count(pd.DataFrame({"age": ["0", "N", "3", "", "N"]}), Schema([age]))
    assert matrix.tolist() == [1, 0, 0, 1, 3]
    assert report.rows_counted == 5 and not report.rows_dropped
    # an integer column needs no parsing; its missing values are the NA cells of nullable integers
    ints = pd.DataFrame({"age": pd.array([0, None, 3, 3], dtype="Int64")})
    assert count(ints, Schema([age]))[0].tolist() == [1, 0, 0, 2, 1]


def test_clamping_stops_at_the_last_number_not_at_the_value_of_its_own():
    age = OrdinalAttribute.integer_range("age", 0, 3, out_of_range="clamp", missing="(missing)", missing_at_end=True)
    matrix, report = count(pd.DataFrame({"age": [7, -2, 1]}), Schema([age]))
    assert matrix.tolist() == [1, 1, 0, 1, 0] and report.clamped == {"age": 2}
    binned = OrdinalAttribute("income", bins=NumericBins(0, 30, 10), out_of_range="clamp", missing="N",
                              missing_at_end=True, missing_values=["N"])
    assert list(binned.labels) == ["(-inf, 10)", "[10, 20)", "[20, inf)", "N"]  # the clamped ends say so
    assert count(pd.DataFrame({"income": ["45.5", "N", "3"]}), Schema([binned]))[0].tolist() == [1, 0, 1, 1]


def test_number_like_texts_meaning_missing_in_an_integer_column():
    """-1 means missing here: the fast path for integer columns must not take it for a number
    (outside the range, which would stop the count)."""
    age = OrdinalAttribute.integer_range("age", 0, 2, drop_missing=True, missing_values=["-1"])
    matrix, report = count(pd.DataFrame({"age": np.array([-1, 0, 2, -1], dtype=np.int64)}), Schema([age]))
    assert matrix.tolist() == [1, 0, 1] and report.missing_dropped == {"age": 2}


@given(
    st.lists(st.sampled_from(["0", "1", "2", "N", "NA", "", None, "7"]), min_size=1, max_size=40),
    st.sampled_from(["drop", "own"]),
    st.booleans(),
)
def test_counting_matches_a_count_by_hand(cells, policy, categorical):
    """Every row is counted once: numbers at their value, missing cells at the value of their own
    or dropped and reported, numbers outside the range dropped (invalid="drop")."""
    options = {"drop_missing": True} if policy == "drop" else {"missing": "(missing)", "missing_at_end": True}
    age = OrdinalAttribute.integer_range("age", 0, 2, missing_values=["N", "NA"], **options)  # type: ignore[arg-type]
    column = pd.Series(cells, dtype=object)
    frame = pd.DataFrame({"age": column.astype("category") if categorical else column})
    matrix, report = count(frame, Schema([age]), invalid="drop")
    missing = sum(1 for c in cells if c in ("N", "NA", "", None))
    outside = cells.count("7")
    expected = [cells.count(v) for v in ("0", "1", "2")] + ([] if policy == "drop" else [missing])
    assert matrix.tolist() == expected
    assert report.missing_dropped["age"] == (missing if policy == "drop" else 0)
    assert report.dropped["age"] == outside
    assert report.rows_counted + report.rows_dropped == report.rows_read == len(cells)


def test_a_row_is_reported_once_for_the_first_attribute_that_drops_it():
    schema = Schema([
        OrdinalAttribute.integer_range("age", 0, 99, drop_missing=True, missing_values=["N"]),
        NominalAttribute("sex", SEX, drop_missing=True, missing_values=["N"]),
    ])
    frame = pd.DataFrame({"age": ["N", "30", "N", "5"], "sex": ["N", "N", "1", "2"]})
    matrix, report = count(frame, schema)
    assert matrix.sum() == 1 and report.missing_dropped == {"age": 2, "sex": 1} and report.rows_dropped == 3
    assert report.summary() == "1 of 4 rows counted; 2 dropped as missing in 'age'; 1 dropped as missing in 'sex'"


def test_the_report_shows_no_count_under_add_remove():
    schema = Schema([NominalAttribute("sex", SEX, drop_missing=True, missing_values=["N"])])
    _, report = count(pd.DataFrame({"sex": ["N", "1", "N"]}), schema)
    replace = report.custodian_summary("replace")
    hidden = report.custodian_summary("add-remove")
    assert "2 dropped as missing in 'sex'" in replace and "true counts" in replace
    assert "'sex'" in hidden and not re.search(r"\d", hidden)


def test_missing_cells_without_a_choice_stop_the_count_and_say_what_to_choose():
    schema = Schema([NominalAttribute("INDP", Hierarchy.flat(["170", "180"]), missing_values=["N"])])
    with pytest.raises(DomainError, match=r"2 rows have a missing value \('N', \(empty\)\).*value of its own|a leaf"):
        frequency_matrix(pd.DataFrame({"INDP": ["170", "N", None]}), schema)
    numbers = Schema([OrdinalAttribute.integer_range("AGEP", 0, 99)])
    with pytest.raises(DomainError, match="name texts that mean a missing value"):
        frequency_matrix(pd.DataFrame({"AGEP": ["30", "N"]}), numbers)


def test_reports_of_parts_add_up():
    one = CountReport(3, 2, {"a": 1}, {"a": 0}, {"a": 0})
    two = CountReport(5, 3, {"a": 0}, {"a": 2}, {"a": 2})
    one.add(two)
    assert (one.rows_read, one.rows_counted, one.dropped, one.clamped, one.missing_dropped) == (
        8, 5, {"a": 1}, {"a": 2}, {"a": 2}
    )


def test_the_table_texts_go_to_attributes_without_their_own():
    schema = Schema([
        OrdinalAttribute.integer_range("age", 0, 9),
        NominalAttribute("code", Hierarchy.flat(["N", "S"]), missing_values=[]),  # N is North here
    ])
    resolved = schema.with_default_missing_values(["N"])
    assert resolved["age"].missing_values == ("N",) and resolved["code"].missing_values == ()
    assert schema.with_default_missing_values([]) is schema
    assert resolved == Schema([OrdinalAttribute.integer_range("age", 0, 9, missing_values=["N"]),
                               NominalAttribute("code", Hierarchy.flat(["N", "S"]), missing_values=[])])


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda: OrdinalAttribute.integer_range("a", 0, 9, missing_at_end=True), "needs the label"),
        (lambda: OrdinalAttribute.integer_range("a", 0, 9, missing="9", missing_at_end=True), "already one of its values"),
        (lambda: OrdinalAttribute.integer_range("a", 0, 9, missing="N"), "missing_at_end"),
        (lambda: OrdinalAttribute.integer_range("a", 0, 9, missing="3", drop_missing=True), "not both"),
        (lambda: NominalAttribute("s", SEX, missing="1", drop_missing=True), "not both"),
        (lambda: NominalAttribute("s", SEX, missing_values="N"), "a list of texts"),
        (lambda: NominalAttribute("s", SEX, missing_values=["N", "N"]), "listed twice"),
        (lambda: NominalAttribute("s", SEX, missing_values=[" "]), "empty cells are always missing"),
        (lambda: NominalAttribute("s", SEX, missing_values=[3]), "must be text"),
        (lambda: NominalAttribute("s", SEX, missing_values=["a\nb"]), "one line"),
        (lambda: NominalAttribute("s", SEX, missing_values=[str(i) for i in range(101)]), "more than 100"),
        (lambda: OrdinalAttribute.integer_range("a", 0, 9, drop_missing="yes"), "true or false"),
    ],
)
def test_missing_settings_are_checked(build, message):
    with pytest.raises(SchemaError, match=message):
        build()


def test_a_value_of_its_own_costs_a_level_only_when_the_domain_fills_a_power_of_two():
    """The Haar transform pads the domain to a power of two: 16 values + 1 need 32 (one more
    level, rho + 1), 101 + 1 still fit in 128. Worked with math.md's P(A) and H(A)."""
    def privelet(attribute: OrdinalAttribute) -> ReleaseSpec:
        return ReleaseSpec(Schema([attribute]), 1.0, "privelet")

    plain = privelet(OrdinalAttribute.integer_range("a", 0, 15))
    own = privelet(OrdinalAttribute.integer_range("a", 0, 15, missing="N", missing_at_end=True))
    assert (plain.rho, own.rho) == (5, 6)
    assert plain.paper_bound() == pytest.approx(600.0)  # 8 * 5^2 * 3
    assert own.paper_bound() == pytest.approx(8 * 6**2 * 3.5)  # |A| = 17: P = 6, H = 3.5
    brazil_age = privelet(OrdinalAttribute.integer_range("age", 0, 100))
    brazil_own = privelet(OrdinalAttribute.integer_range("age", 0, 100, missing="N", missing_at_end=True))
    assert brazil_age.rho == brazil_own.rho == 8


# -- display labels --------------------------------------------------------------------------------


def test_display_labels_change_nothing_but_what_is_shown():
    tree = Hierarchy.from_nested({"*": {"0": ["170", "180"], "4": ["3390"]}})
    labelled = tree.with_display_labels({"0": "AGR", "4": "MFG", "170": "Crop production", "3390": "3390"})
    assert labelled == tree and hash(labelled) == hash(tree)  # equality and hashing ignore labels
    assert dict(labelled.display_labels) == {"0": "AGR", "4": "MFG", "170": "Crop production"}  # no label = code
    assert labelled.display_label("180") == "180" and labelled.leaves == ("170", "180", "3390")
    assert labelled.leaf_display_labels == ("Crop production", "180", "3390")
    assert tree.leaf_display_labels is None
    assert dict(labelled.cut(2).display_labels) == {"0": "AGR", "4": "MFG"}
    coarse = NominalAttribute("INDP", labelled, level=2)
    assert coarse.display_labels == ("AGR", "MFG") and coarse.labels == ("0", "4")
    assert OrdinalAttribute.integer_range("a", 0, 3).display_labels is None


@pytest.mark.parametrize(
    ("labels", "message"),
    [
        ({"9": "Nine"}, "not a value or group"),
        ({"0": ""}, "non-empty text"),
        ({"0": 5}, "non-empty text"),
        ({"0": "two\nlines"}, "line break"),
        ({"0": "x" * 1001}, "more than 1,000"),
        ({5: "five"}, "not a value or group"),
    ],
)
def test_display_labels_are_checked(labels, message):
    with pytest.raises(HierarchyError, match=message):
        Hierarchy.from_nested({"*": {"0": ["170"]}}).with_display_labels(labels)
