"""The counting's fast paths give exactly what the plain computation gives: int32 cell
indices below 2**31 cells and intp from there on, rows indexed on several threads, chunks of
every size added up; the rows are counted without holding the GIL."""

import threading
import time
import warnings
from concurrent.futures import ThreadPoolExecutor

import numba
import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

from privelet_gui.engine import (
    DomainError,
    DroppedRowsWarning,
    FrequencyCounter,
    Hierarchy,
    NominalAttribute,
    OrdinalAttribute,
    PriveletError,
    Schema,
    frequency_matrix,
)
from privelet_gui.engine.counting import _INDEX_ROWS, _INT32_CELLS, _Pool, cell_indices

CODE_TYPES = (np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32)


def random_codes(rng: np.random.Generator, shape: tuple[int, ...], rows: int) -> list[np.ndarray]:
    """Valid codes of each axis in the smallest of CODE_TYPES that holds them, the last
    row at the largest index (the one that would overflow a too narrow type)."""
    codes = []
    for size in shape:
        column = rng.integers(0, size, rows)
        if rows:
            column[-1] = size - 1
        kind = next(t for t in CODE_TYPES[rng.integers(0, 2) * 4 :] if np.iinfo(t).max >= size - 1)
        codes.append(column.astype(kind))
    return codes


@pytest.mark.parametrize(
    "shape",
    [
        (101, 2, 512, 1001),  # the bench's Brazil shape: int32
        (_INT32_CELLS - 1,),  # the largest matrix computed in int32 (2**31 - 1 is prime)
        (2, 1 << 30),  # 2**31 cells: intp (its largest index, 2**31 - 1, is the int32 maximum)
        (3, 1 << 30),  # indices above 2**31 - 1: wrong in int32
        (1 << 16, 1 << 16, 3),  # 3 * 2**32 cells
    ],
)
def test_cell_indices_equal_ravel_multi_index_on_both_sides_of_2_to_the_31(shape):
    rng = np.random.default_rng(sum(shape))
    codes = random_codes(rng, shape, 2 * _INDEX_ROWS + 5)
    flat = cell_indices(codes, shape)
    assert flat.dtype == np.intp
    np.testing.assert_array_equal(flat, np.ravel_multi_index(codes, shape))
    assert flat[-1] == np.prod(shape, dtype=np.int64) - 1


@given(
    shape=st.lists(st.integers(1, 3000), min_size=1, max_size=5),
    rows=st.integers(0, 300),
    threads=st.integers(1, 4),
    seed=st.integers(0, 2**32 - 1),
)
def test_cell_indices_on_threads_equal_ravel_multi_index(shape, rows, threads, seed):
    codes = random_codes(np.random.default_rng(seed), tuple(shape), rows)
    expected = np.ravel_multi_index(codes, shape) if rows else np.zeros(0, np.intp)
    with ThreadPoolExecutor(threads) as executor:
        flat = cell_indices(codes, tuple(shape), pool=_Pool(executor, threads))
    np.testing.assert_array_equal(flat, expected)
    np.testing.assert_array_equal(cell_indices(codes, tuple(shape)), expected)


def test_rows_marked_minus_one_give_some_index_and_no_error():
    # -1 marks a row to drop: in int32 its partial sums may wrap around, silently
    shape = (3, 1 << 20, 500)
    codes = [np.array([-1, 2, -1], np.int64), np.array([(1 << 20) - 1, -1, -1], np.int64), np.array([-1, 499, -1], np.int16)]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        flat = cell_indices(codes, shape)
    assert flat.dtype == np.intp and len(flat) == 3


def brazil_like(rows: int, seed: int, incomes: int = 1000) -> tuple[Schema, pd.DataFrame]:
    """A small schema of the bench's column types (integers, categoricals) and a table
    with some values outside the domains."""
    rng = np.random.default_rng(seed)
    schema = Schema(
        [
            OrdinalAttribute.integer_range("age", 0, 100),
            NominalAttribute("sex", Hierarchy.flat(["F", "M"])),
            NominalAttribute("job", Hierarchy.flat([f"j{i}" for i in range(40)])),
            OrdinalAttribute.integer_range("income", 0, incomes - 1),
        ]
    )
    age = rng.integers(0, 103, rows).astype(np.int16)  # 101 and 102 are outside
    table = pd.DataFrame(
        {
            "age": age,
            "sex": pd.Categorical.from_codes(rng.integers(0, 2, rows), categories=pd.Index(["F", "M"])),
            "job": pd.Categorical.from_codes(rng.integers(0, 41, rows), categories=pd.Index([f"j{i}" for i in range(41)])),
            "income": rng.integers(0, incomes, rows).astype(np.int16),
        }
    )
    return schema, table


def expected_counts(schema: Schema, table: pd.DataFrame) -> np.ndarray:
    """The matrix by the plain scatter of the rows inside every domain."""
    codes = [table["age"].to_numpy(np.int64), table["sex"].cat.codes.to_numpy(np.int64),
             table["job"].cat.codes.to_numpy(np.int64), table["income"].to_numpy(np.int64)]
    inside = np.logical_and.reduce([c < size for c, size in zip(codes, schema.shape, strict=True)])
    m = np.zeros(schema.shape)
    np.add.at(m, tuple(c[inside] for c in codes), 1.0)
    return m


def count_threads() -> list[str]:
    return [t.name for t in threading.enumerate() if t.name.startswith("privelet-count")]


@pytest.mark.parametrize("workers", [2, 3])
def test_a_table_counted_on_threads_gives_the_serial_matrix_report_and_warning(workers):
    schema, table = brazil_like(20_000, seed=workers)
    with pytest.warns(DroppedRowsWarning) as serial_warning:
        serial = frequency_matrix(table, schema, invalid="drop", workers=1, parallel_rows=1000)
    with pytest.warns(DroppedRowsWarning) as threaded_warning:  # threads from 1,000 rows on
        threaded = frequency_matrix(table, schema, invalid="drop", workers=workers, parallel_rows=1000)
    np.testing.assert_array_equal(threaded, expected_counts(schema, table))
    np.testing.assert_array_equal(serial, threaded)
    assert str(serial_warning[0].message) == str(threaded_warning[0].message)
    assert "dropped for 'age'" in str(threaded_warning[0].message) and "dropped for 'job'" in str(threaded_warning[0].message)
    assert count_threads() == []


def test_an_error_on_threads_is_the_serial_one_and_leaves_no_thread():
    schema, table = brazil_like(5000, seed=7)
    messages = []
    for workers in (1, 2):
        with pytest.raises(DomainError) as error:
            frequency_matrix(table, schema, workers=workers, parallel_rows=1000)
        messages.append((str(error.value), error.value.attribute, error.value.count))
    assert messages[0] == messages[1] and messages[0][1] == "age"
    assert count_threads() == []


def test_chunks_of_every_size_add_up_to_the_matrix_of_the_whole_table():
    schema, table = brazil_like(25_000, seed=3, incomes=10)
    table = table[table["age"].lt(101) & table["job"].cat.codes.lt(40)]
    counter = FrequencyCounter(schema, workers=2, parallel_rows=1000)
    for start, stop in ((0, 6000), (6000, 6001), (6001, 6001), (6001, 11_100), (11_100, len(table))):
        counter.add(table.iloc[start:stop])  # indexed on threads from 1,000 rows on, serially below
    np.testing.assert_array_equal(counter.matrix(), expected_counts(schema, table))
    assert counter.report.rows_read == counter.report.rows_counted == len(table)


@pytest.mark.skipif(numba.config.DISABLE_JIT, reason="NUMBA_DISABLE_JIT: the loop is Python's, which takes turns with the GIL")
def test_rows_are_counted_without_the_gil():
    """The first touch of a large matrix's pages can take seconds: another thread (the app's
    window) runs meanwhile. Had the counting held the GIL, this thread would stop for all of it."""
    from privelet_gui.engine.kernels.counts import count_cells

    cells = np.random.default_rng(5).integers(0, 1 << 22, 1 << 25)
    count_cells(cells[:10], np.zeros(1 << 22))  # compiled (or loaded) before it is timed
    counts = np.zeros(1 << 22)
    done = threading.Event()

    def count() -> None:
        count_cells(cells, counts)
        done.set()

    worker = threading.Thread(target=count)
    began = last = time.perf_counter()
    longest = 0.0
    worker.start()
    while not done.is_set():
        now = time.perf_counter()
        last, longest = now, max(longest, now - last)
    ended = time.perf_counter()  # a held GIL shows here: this thread waited until the counting was over
    longest, elapsed = max(longest, ended - last), ended - began
    worker.join()
    assert counts.sum() == len(cells)
    assert elapsed > 0.05, elapsed  # long enough for a held GIL to show
    assert longest < elapsed / 2, (longest, elapsed)


def test_flat_codes_of_a_matrix_past_2_to_the_31_cells_from_a_table():
    # encode_only: such a matrix (4 * 2**32 cells) is never allocated, its indices are exact
    schema = Schema(
        [OrdinalAttribute.integer_range(name, 0, 65535) for name in ("a", "b")] + [OrdinalAttribute.integer_range("c", 0, 3)]
    )
    rng = np.random.default_rng(11)
    table = pd.DataFrame({name: rng.integers(0, size, 1000).astype(np.uint16) for name, size in zip("abc", schema.shape, strict=True)})
    table.iloc[-1] = [65535, 65535, 3]
    flat = FrequencyCounter(schema, encode_only=True).flat_codes(table)
    np.testing.assert_array_equal(flat, np.ravel_multi_index([table[c].to_numpy() for c in "abc"], schema.shape))
    assert flat[-1] == 4 * 2**32 - 1


def test_workers_must_be_a_positive_integer():
    schema, table = brazil_like(10, seed=0)
    with pytest.raises(PriveletError, match="workers must be a positive integer, got 0"):
        frequency_matrix(table, schema, workers=0)


@pytest.mark.parametrize("bad", [-1, 3, 1 << 40])
def test_a_cell_outside_the_matrix_is_never_written(bad):
    from privelet_gui.engine.kernels.counts import count_cells

    counts = np.zeros(3)
    assert count_cells(np.array([0, 2, bad, 1], dtype=np.intp), counts) == 2
    np.testing.assert_array_equal(counts, [1.0, 0.0, 1.0])
    assert count_cells(np.array([2, 2, 1], dtype=np.intp), counts) == 3
    np.testing.assert_array_equal(counts, [1.0, 1.0, 3.0])


def test_a_cell_index_outside_the_matrix_is_a_bug_not_a_data_error(monkeypatch):
    from privelet_gui.engine.errors import InternalError

    schema, table = brazil_like(100, seed=1)
    counter = FrequencyCounter(schema)
    monkeypatch.setattr(counter, "_flat_codes", lambda table, pool: np.array([0, schema.size], dtype=np.intp))
    with pytest.raises(InternalError, match="outside the frequency matrix"):
        counter.add(table)
