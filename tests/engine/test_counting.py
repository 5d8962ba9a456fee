import warnings

import numpy as np
import pandas as pd
import pytest

from privelet_gui.engine import (
    DomainError,
    DroppedRowsWarning,
    FrequencyCounter,
    Hierarchy,
    NominalAttribute,
    NumericBins,
    OrdinalAttribute,
    Schema,
    SchemaError,
    frequency_matrix,
)

SEX = NominalAttribute("sex", Hierarchy.flat(["F", "M"]))
AGE = OrdinalAttribute.integer_range("age", 0, 4)
SCHEMA = Schema([AGE, SEX])


def brute_force(table: pd.DataFrame, schema: Schema) -> np.ndarray:
    m = np.zeros(schema.shape)
    for row in table.itertuples(index=False):
        index = tuple(a.labels.index(str(getattr(row, a.source_column))) for a in schema)
        m[index] += 1
    return m


def test_counts_match_brute_force_for_every_column_type():
    rng = np.random.default_rng(0)
    n = 500
    table = pd.DataFrame(
        {
            "age": rng.integers(0, 5, n),
            "sex": rng.choice(["F", "M"], n),
            "edu": rng.choice(["Preschool", "HS", "Bachelors"], n),
        }
    )
    edu = OrdinalAttribute("edu", ["Preschool", "HS", "Bachelors"])
    schema = Schema([AGE, SEX, edu])
    m = frequency_matrix(table, schema)
    assert m.dtype == np.float64 and m.shape == (5, 2, 3)
    np.testing.assert_array_equal(m, brute_force(table, schema))
    # the same table as text, as categoricals, and in chunks gives the same matrix
    as_text = table.astype(str)
    np.testing.assert_array_equal(frequency_matrix(as_text, schema), m)
    np.testing.assert_array_equal(frequency_matrix(table.astype({"sex": "category", "edu": "category"}), schema), m)
    chunks = [table.iloc[i : i + 37] for i in range(0, n, 37)]
    np.testing.assert_array_equal(frequency_matrix(iter(chunks), schema), m)


def test_chunks_into_a_large_matrix_use_sparse_accumulation():
    big = Schema([OrdinalAttribute.integer_range("a", 0, 999), OrdinalAttribute.integer_range("b", 0, 999)])
    rng = np.random.default_rng(1)
    table = pd.DataFrame({"a": rng.integers(0, 1000, 3000), "b": rng.integers(0, 1000, 3000)})
    counter = FrequencyCounter(big)
    for i in range(0, 3000, 100):
        counter.add(table.iloc[i : i + 100])
    m = counter.matrix()
    expected = np.zeros((1000, 1000))
    np.add.at(expected, (table.a.to_numpy(), table.b.to_numpy()), 1)
    np.testing.assert_array_equal(m, expected)
    assert counter.report.rows_counted == 3000


def test_value_outside_the_domain_names_attribute_and_values():
    table = pd.DataFrame({"age": [1, 7, 2, -1, 7], "sex": ["F", "M", "F", "F", "M"]})
    with pytest.raises(DomainError) as info:
        frequency_matrix(table, SCHEMA)
    message = str(info.value)
    assert "age" in message and "3 rows hold values outside its domain" in message and "7" in message and "-1" in message
    assert "out_of_range" in message
    assert info.value.attribute == "age" and info.value.count == 3
    unknown_sex = pd.DataFrame({"age": [1], "sex": ["X"]})
    with pytest.raises(DomainError, match=r"sex.*1 row holds a value outside its domain, e.g. 'X'.*add the values to the hierarchy"):
        frequency_matrix(unknown_sex, SCHEMA)


def test_drop_option_drops_and_reports():
    table = pd.DataFrame({"age": [1, 7, 2, 3], "sex": ["F", "M", "X", "M"]})
    with pytest.warns(DroppedRowsWarning, match="2 of 4 rows counted"):
        m = frequency_matrix(table, SCHEMA, invalid="drop")
    assert m.sum() == 2 and m[1, 0] == 1 and m[3, 1] == 1
    counter = FrequencyCounter(SCHEMA, invalid="drop")
    counter.add(table)
    assert counter.report.dropped == {"age": 1, "sex": 1}
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the counter reports through its report, not warnings
        np.testing.assert_array_equal(counter.matrix(), m)


def test_clamp_drop_and_missing_policies():
    age = OrdinalAttribute.integer_range("age", 0, 4, out_of_range="clamp")
    sex = NominalAttribute("sex", Hierarchy.flat(["F", "M", "unknown"]), missing="unknown")
    table = pd.DataFrame({"age": ["9", "-3", "2", ""], "sex": ["F", None, "", "M"]})
    with pytest.raises(DomainError, match="empty"):  # a missing age has no mapping
        frequency_matrix(table, Schema([age, sex]))
    counter = FrequencyCounter(Schema([age, sex]))
    counter.add(table.iloc[:3])
    m = counter.matrix()
    assert counter.report.clamped["age"] == 2
    assert m[4, 0] == 1 and m[0, 2] == 1 and m[2, 2] == 1
    dropping = OrdinalAttribute.integer_range("age", 0, 4, out_of_range="drop")
    counter = FrequencyCounter(Schema([dropping, sex]))
    counter.add(table.iloc[:3])
    assert counter.matrix().sum() == 1
    assert counter.report.dropped["age"] == 2
    with pytest.warns(DroppedRowsWarning, match="2 dropped for 'age'"):
        frequency_matrix(table.iloc[:3], Schema([dropping, sex]))


def test_categorical_columns_are_encoded_by_distinct_value():
    # What the CSV reader produces: categoricals, numbers as text, empty cells, odd order.
    age = OrdinalAttribute.integer_range("age", 0, 4, out_of_range="clamp")
    sex = NominalAttribute("sex", Hierarchy.flat(["F", "M", "unknown"]), missing="unknown")
    table = pd.DataFrame({"age": ["9", "-3", "2", "2", "0"], "sex": ["M", None, "", "F", "M"]})
    plain = FrequencyCounter(Schema([age, sex]))
    plain.add(table)
    as_categories = FrequencyCounter(Schema([age, sex]))
    as_categories.add(table.astype("category"))
    np.testing.assert_array_equal(as_categories.matrix(), plain.matrix())
    assert as_categories.report == plain.report and plain.report.clamped["age"] == 2
    strict = Schema([OrdinalAttribute.integer_range("age", 0, 4), sex])
    with pytest.raises(DomainError, match=r"2 rows hold values outside its domain, e\.g\. 9, -3\."):
        frequency_matrix(table.astype("category"), strict)


def test_numeric_bins_and_unparsable_numbers():
    income = OrdinalAttribute("income", bins=NumericBins(0, 3000, 1000), out_of_range="clamp")
    assert income.labels == ("(-inf, 1000)", "[1000, 2000)", "[2000, inf)")  # clamped: the ends hold all beyond
    m = frequency_matrix(pd.DataFrame({"income": ["0", "999.5", "1000", "2999", "45000", "-5"]}), Schema([income]))
    assert m.tolist() == [3.0, 1.0, 2.0]
    with pytest.raises(DomainError, match="'abc'"):
        frequency_matrix(pd.DataFrame({"income": ["abc", "5"]}), Schema([income]))
    with pytest.raises(DomainError, match=r"e\.g\. 2\.5\. Fix"):
        frequency_matrix(pd.DataFrame({"age": ["2.5"], "sex": ["F"]}), SCHEMA)


def test_missing_column_and_bad_options():
    with pytest.raises(SchemaError, match=r"no column 'sex'.*'age'"):
        frequency_matrix(pd.DataFrame({"age": [1]}), SCHEMA)
    with pytest.raises(SchemaError, match="invalid must be"):
        FrequencyCounter(SCHEMA, invalid="ignore")
    renamed = Schema([OrdinalAttribute.integer_range("age", 0, 4, column="AGEP"), SEX])
    m = frequency_matrix(pd.DataFrame({"AGEP": [3], "sex": ["M"]}), renamed)
    assert m[3, 1] == 1


def test_progress_and_cancel_between_chunks():
    from privelet_gui.engine import Cancelled

    table = pd.DataFrame({"age": [1, 2, 3, 4], "sex": ["F", "M", "F", "M"]})
    seen = []
    frequency_matrix([table, table], SCHEMA, progress=lambda f, s: seen.append(f), total_rows=8)
    assert seen[0] == 0.5 and seen[-1] == 1.0
    calls = iter([False, True])
    with pytest.raises(Cancelled):
        frequency_matrix([table, table, table], SCHEMA, should_cancel=lambda: next(calls, True))


def test_schema_validation_messages():
    with pytest.raises(SchemaError, match="used twice"):
        Schema([AGE, OrdinalAttribute.integer_range("age", 0, 1)])
    with pytest.raises(SchemaError, match="empty domain"):
        OrdinalAttribute("x", [])
    with pytest.raises(SchemaError, match="listed twice"):
        OrdinalAttribute("x", ["a", "b", "a"])
    with pytest.raises(SchemaError, match=r"range \[5, 1\] is empty"):
        OrdinalAttribute.integer_range("x", 5, 1)
    with pytest.raises(SchemaError, match=r"bins\.width must be positive"):
        NumericBins(0, 10, 0)
    with pytest.raises(SchemaError, match="missing='z' is not a leaf"):
        NominalAttribute("s", Hierarchy.flat(["a"]), missing="z")
    assert SCHEMA.shape == (5, 2) and SCHEMA.size == 10 and SCHEMA["sex"] is SEX


def test_the_custodian_summary_shows_row_numbers_only_when_rows_were_lost():
    from privelet_gui.engine import CountReport

    clean = CountReport(rows_read=5, rows_counted=5, dropped={"age": 0}, clamped={"age": 0})
    assert clean.custodian_summary() == "every row was counted" and "5" not in clean.custodian_summary()
    lossy = CountReport(rows_read=5, rows_counted=3, dropped={"age": 2}, clamped={"age": 0})
    assert "3 of 5 rows counted" in lossy.custodian_summary() and "do not publish" in lossy.custodian_summary()


def test_cell_indices_equal_ravel_multi_index_across_blocks():
    from privelet_gui.engine.counting import _INDEX_ROWS, cell_indices

    rng = np.random.default_rng(5)
    shape = (101, 2, 512, 1001)
    rows = 3 * _INDEX_ROWS + 17  # several blocks and a partial one
    codes = [rng.integers(0, n, rows).astype(dtype) for n, dtype in zip(shape, (np.int16, np.int8, np.int16, np.int16), strict=True)]
    flat = cell_indices(codes, shape)
    assert flat.dtype == np.intp
    np.testing.assert_array_equal(flat, np.ravel_multi_index(codes, shape))


def test_a_matrix_larger_than_the_memory_is_refused_before_counting(monkeypatch):
    from privelet_gui.engine import counting

    schema = Schema([OrdinalAttribute.integer_range("a", 0, 999), OrdinalAttribute.integer_range("b", 0, 999)])
    monkeypatch.setattr(counting, "available_memory", lambda: 4 << 20)  # 4 MiB; the matrix needs 7.6 MiB
    with pytest.raises(SchemaError, match=r"1,000,000 cells \(7.6 MiB\), more than the 4.0 MiB .* exclude attributes"):
        frequency_matrix(pd.DataFrame({"a": [1], "b": [2]}), schema)
    monkeypatch.setattr(counting, "available_memory", lambda: 64 << 20)
    assert frequency_matrix(pd.DataFrame({"a": [1], "b": [2]}), schema)[1, 2] == 1
