"""A table known by its rows: the fingerprint count_table computes is the same for the same
rows in any order, line ends, quoting, file format or binning, and differs for other rows."""

from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from privelet_gui.engine import Hierarchy, NominalAttribute, NumericBins, OrdinalAttribute, Schema
from privelet_gui.io import TableOptions, count_table
from privelet_gui.io.row_fingerprint import RowFingerprint

KEY = bytes(range(32))

SCHEMA = Schema([
    OrdinalAttribute.integer_range("age", 0, 99, drop_missing=True),
    NominalAttribute("sex", Hierarchy.flat(["F", "M"])),
    OrdinalAttribute("income", bins=NumericBins(0, 100_000, 1_000)),
])
COARSER = Schema([  # the same columns, binned otherwise: the same table
    OrdinalAttribute("age", bins=NumericBins(0, 100, 10), drop_missing=True),
    NominalAttribute("sex", Hierarchy.flat(["F", "M"])),
    OrdinalAttribute("income", bins=NumericBins(0, 100_000, 10)),
])


def people(rows: int = 3000, seed: int = 5) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame({
        "age": rng.integers(0, 100, rows).astype(str),
        "sex": rng.choice(["F", "M"], rows),
        "income": rng.integers(0, 100_000, rows).astype(str),
        "job": rng.choice(["Sales", "Tech, support"], rows),  # a column no schema reads, with a comma
    })
    frame.loc[7, "age"] = ""  # a missing cell
    return frame


def fingerprint(path: Path, schema: Schema = SCHEMA, key: bytes = KEY, **options: object) -> str:
    rows = RowFingerprint(key)
    count_table(path, schema, TableOptions(**options) if options else None, rows=rows, chunksize=700)
    return rows.hexdigest()


@pytest.fixture
def table(tmp_path) -> Path:
    path = tmp_path / "people.csv"
    people().to_csv(path, index=False)
    return path


def test_the_same_rows_in_another_file_are_the_same_table(table, tmp_path):
    frame = people()
    mark = fingerprint(table)
    assert len(mark) == 32 and mark != "0" * 32
    variants = {
        "trailing newline": lambda p: p.write_bytes(table.read_bytes() + b"\n"),
        "rows in another order": lambda p: frame.sample(frac=1, random_state=3).to_csv(p, index=False),
        "CRLF line ends": lambda p: frame.to_csv(p, index=False, lineterminator="\r\n"),
        "every cell quoted": lambda p: frame.to_csv(p, index=False, quoting=1),
        "columns in another order": lambda p: frame[["job", "income", "sex", "age"]].to_csv(p, index=False),
        "semicolons": lambda p: frame.to_csv(p, index=False, sep=";"),
        "gzip": lambda p: p.write_bytes(gzip.compress(table.read_bytes())),
    }
    for name, write in variants.items():
        path = tmp_path / (f"{name}.csv" + (".gz" if name == "gzip" else ""))
        write(path)
        assert path.read_bytes() != table.read_bytes()
        assert fingerprint(path) == mark, name
    # Parquet with typed columns: integers (a missing age as a null), or floats as pandas
    # makes them of integers with a missing value (30.0 is the text "30")
    typed = frame.assign(age=pd.to_numeric(frame["age"]).astype("Int64"), income=frame["income"].astype(int))
    typed.sample(frac=1, random_state=9).to_parquet(tmp_path / "people.parquet")
    assert fingerprint(tmp_path / "people.parquet") == mark
    floats = typed.assign(age=typed["age"].astype(float), income=typed["income"].astype(float))
    floats.to_parquet(tmp_path / "floats.parquet")
    assert fingerprint(tmp_path / "floats.parquet") == mark
    # whatever the schema bins, and however many chunks
    assert fingerprint(table, COARSER) == mark
    whole = RowFingerprint(KEY)
    count_table(table, SCHEMA, rows=whole)
    assert whole.hexdigest() == mark


def test_other_rows_are_another_table(table, tmp_path):
    frame = people()
    mark = fingerprint(table)
    other = int(np.flatnonzero(frame["sex"] != frame["sex"].iloc[0])[0])  # a row of the other sex
    swapped = frame.copy()
    swapped.loc[[0, other], "sex"] = frame.loc[[other, 0], "sex"].to_numpy()  # each column keeps its values
    changes = {
        "one row less": frame.iloc[1:],
        "one row twice": pd.concat([frame, frame.iloc[:1]]),
        "one cell changed": frame.assign(income=frame["income"].where(frame.index != 3, "12345")),
        "two cells swapped between rows": swapped,
        "a missing cell filled": frame.assign(age=frame["age"].replace("", "30")),
    }
    for name, changed in changes.items():
        path = tmp_path / f"{name}.csv"
        changed.to_csv(path, index=False)
        assert fingerprint(path) != mark, name
    # another ledger's salt: another fingerprint of the same rows
    assert fingerprint(table, key=bytes(32)) != mark


def test_the_fingerprint_starts_again_when_counting_does(tmp_path, monkeypatch):
    """count_table reads a file cut in byte ranges again, in one pass, when a range meets a
    quote: the rows read before must not count twice (nor those of the parallel ranges)."""
    frame = people(8000).assign(job="Sales")
    frame.loc[6000, "job"] = 'said "hi"'  # a quote past the first 64 KiB
    path = tmp_path / "late-quote.csv"
    frame.to_csv(path, index=False)
    assert path.read_bytes().find(b'"') > 1 << 16
    resets: list[int] = []
    reset = RowFingerprint.reset
    monkeypatch.setattr(RowFingerprint, "reset", lambda self: resets.append(1) or reset(self))
    direct = RowFingerprint(KEY)
    direct.add(pd.read_csv(path, dtype=str, keep_default_na=False, na_values=[""])[["age", "sex", "income"]])
    rows = RowFingerprint(KEY)
    count_table(path, SCHEMA, rows=rows, chunksize=700, parallel_ranges=3, parallel_min_bytes=0)
    assert rows.hexdigest() == direct.hexdigest()
    assert len(resets) == 2  # counted in ranges, then again in one pass


def test_rows_are_hashed_apart_from_their_columns(tmp_path):
    one, two = RowFingerprint(KEY), RowFingerprint(KEY)
    one.add(pd.DataFrame({"a": ["1", "2"], "b": ["x", "y"]}))
    two.add(pd.DataFrame({"a": ["1", "2"], "b": ["y", "x"]}))  # the same values in each column
    assert one.hexdigest() != two.hexdigest()
    empty = RowFingerprint(KEY)
    empty.add(pd.DataFrame({"a": pd.Series([], dtype=str)}))
    assert empty.hexdigest() == "0" * 32
