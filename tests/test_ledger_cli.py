"""The privacy ledger on the command line: the README's first command runs again, a table is
known by its rows or a dataset, a damaged ledger is refused, and two releases at once of one
table do not both go ahead without the question."""

from __future__ import annotations

import contextlib
import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from privelet_gui.cli import main
from privelet_gui.engine import Hierarchy, NominalAttribute, OrdinalAttribute, Schema
from privelet_gui.io import save_schema
from privelet_gui.io.ledger import Ledger, PlannedRelease
from tests.test_cli import assert_one_line_error, call


@pytest.fixture
def table(tmp_path):
    """A small table (people.csv) and its schema."""
    schema = Schema(
        [OrdinalAttribute.integer_range("age", 0, 9), NominalAttribute("sex", Hierarchy.flat(["F", "M"]))]
    )
    save_schema(schema, tmp_path / "schema.json")
    frame = pd.DataFrame([(a % 10, "FM"[a % 3 % 2]) for a in range(200)], columns=["age", "sex"])
    frame.to_csv(tmp_path / "people.csv", index=False)
    return tmp_path / "people.csv", tmp_path / "schema.json"


def release(capsys, data: Path, schema: Path, out: Path, *extra: str) -> tuple[int, str, str]:
    return call(capsys, "release", str(data), "--schema", str(schema), "--epsilon", "0.5", "--out", str(out), *extra)


def test_the_readmes_first_command_runs_again(capsys, tmp_path, private_ledger, monkeypatch):
    """``privelet release --demo --out demo.npz --force``, twice, without a terminal: the bundled
    sample is public data, so the demo is not asked about; the ledger still counts both."""
    monkeypatch.chdir(tmp_path)
    for _ in range(2):
        code, out, err = call(capsys, "release", "--demo", "--out", "demo.npz", "--force")
        assert code == 0, err
        assert "wrote demo.npz" in out
    assert "already spent epsilon 1 (replace) in 1 release" in err
    assert "the bundled sample is public data: --demo spends without asking" in err
    assert [e.epsilon for e in Ledger(private_ledger).entries()] == [1.0, 1.0]
    # the same sample given as a table is asked about: it is not the demo any more
    from privelet_gui.io import sample_schema_path, sample_table_path

    code, _, err = call(capsys, "release", str(sample_table_path()), "--schema", str(sample_schema_path()),
                        "--epsilon", "1", "--out", "again.npz")
    assert code == 2 and "already spent epsilon 2 (replace) in 2 releases" in err and "--yes" in err


def test_the_same_rows_in_another_file_are_asked_about(capsys, table, tmp_path, private_ledger):
    data, schema = table
    assert release(capsys, data, schema, tmp_path / "a.npz")[0] == 0
    # the rows shuffled, with CRLF line ends and every cell quoted: the same table
    frame = pd.read_csv(data, dtype=str)
    copy = tmp_path / "exported.csv"
    frame.sample(frac=1, random_state=2).to_csv(copy, index=False, lineterminator="\r\n", quoting=1)
    assert copy.read_bytes() != data.read_bytes()
    code, _, err = release(capsys, copy, schema, tmp_path / "b.npz")
    assert code == 2 and "already spent epsilon 0.5 (replace) in 1 release" in err
    assert release(capsys, copy, schema, tmp_path / "b.npz", "--yes")[0] == 0
    code, out, _ = call(capsys, "ledger")
    assert "epsilon 1 (replace) in 2 releases" in out
    [spent] = json.loads(call(capsys, "ledger", "--json")[1])["tables"]
    assert spent["epsilon"] == {"replace": 1.0} and spent["entries"] == [1, 2]


def test_a_dataset_named_by_the_custodian_is_one_table(capsys, table, tmp_path, private_ledger):
    data, schema = table
    frame = pd.read_csv(data, dtype=str)
    first_half, second_half = tmp_path / "part1.csv", tmp_path / "part2.csv"
    frame.iloc[:100].to_csv(first_half, index=False)
    frame.iloc[100:].to_csv(second_half, index=False)
    code, _, err = release(capsys, first_half, schema, tmp_path / "a.npz", "--dataset", "survey 2024")
    assert code == 0 and "spent nothing yet" in err
    # other rows, other file: only the dataset's name says it is the same people
    code, _, err = release(capsys, second_half, schema, tmp_path / "b.npz", "--dataset", "survey 2024")
    assert code == 2 and "already spent epsilon 0.5 (replace) in 1 release" in err
    # a file linked to the dataset: its release is asked about without naming the dataset
    code, out, _ = call(capsys, "ledger", "link", str(data), "--dataset", "survey 2024")
    assert code == 0 and "linked" in out and "the dataset 'survey 2024' has spent epsilon 0.5 (replace)" in out
    code, _, err = release(capsys, data, schema, tmp_path / "c.npz")
    assert code == 2 and "already spent epsilon 0.5 (replace) in 1 release" in err
    assert release(capsys, data, schema, tmp_path / "c.npz", "--yes")[0] == 0
    code, out, _ = call(capsys, "ledger")
    assert "  survey 2024: epsilon 1 (replace) in 2 releases" in out
    code, _, err = release(capsys, data, schema, tmp_path / "d.npz", "--dataset", "\t")
    assert code == 1 and "a dataset's name is 1 to 200 printable characters" in err
    with sqlite3.connect(private_ledger) as connection:
        stored = {row[0] for row in connection.execute("SELECT dataset FROM releases")}
    assert stored == {"survey 2024", None}  # only where the custodian gave it


def _tamper(statement: str):
    def damage(path: Path) -> None:
        with contextlib.closing(sqlite3.connect(path)) as connection:
            connection.execute(statement)
            connection.commit()
    return damage


DAMAGE = {
    "cut by its last byte": (lambda path: path.write_bytes(path.read_bytes()[:-1]), "cut short"),
    "emptied": (lambda path: path.write_bytes(b""), "an empty file"),
    "releases table gone": (_tamper("DROP TABLE releases"), "'releases' table is gone"),
    "salt replaced": (_tamper(f"UPDATE meta SET value = '{'0' * 64}' WHERE key = 'salt'"), "does not match"),
    "text for epsilon": (_tamper("UPDATE releases SET epsilon = 'x'"), "its epsilon is 'x', not a positive number"),
    "bad version": (_tamper("UPDATE meta SET value = 'two' WHERE key = 'version'"), "its version is 'two'"),
}


@pytest.mark.parametrize("damage", DAMAGE, ids=list(DAMAGE))
def test_a_damaged_ledger_stops_the_release_with_one_line_naming_it(capsys, table, tmp_path, private_ledger, damage):
    data, schema = table
    assert release(capsys, data, schema, tmp_path / "a.npz")[0] == 0
    ledger = Ledger(private_ledger)
    ledger.record(ledger.table_keys([schema]), PlannedRelease(1.0, "replace", (), "basic", "exact"),
                  output="o" * 5000)  # more pages: cutting the last byte loses one
    mutate, said = DAMAGE[damage]
    mutate(private_ledger)
    before = private_ledger.read_bytes()
    code, _, err = release(capsys, data, schema, tmp_path / "b.npz", "--yes")
    assert_one_line_error(code, err, str(private_ledger), said, "Restore ledger.sqlite3 from a backup")
    assert not (tmp_path / "b.npz").exists() and "counted:" not in err  # refused before the counting
    code, _, err = call(capsys, "ledger")
    assert_one_line_error(code, err, said)
    assert private_ledger.read_bytes() == before


def test_a_locked_ledger_is_said_to_be_locked(capsys, table, tmp_path, private_ledger, monkeypatch):
    data, schema = table
    assert release(capsys, data, schema, tmp_path / "a.npz")[0] == 0
    monkeypatch.setattr("privelet_gui.io.ledger.LOCK_TIMEOUT", 0.1)
    holder = sqlite3.connect(private_ledger, isolation_level=None)
    try:
        holder.execute("BEGIN EXCLUSIVE")
        code, _, err = release(capsys, data, schema, tmp_path / "b.npz", "--yes")
    finally:
        holder.close()
    assert_one_line_error(code, err, "is locked by another program", "try again once it has finished")
    assert "damaged" not in err and "move it away" not in err


def _release_process(data: Path, schema: Path, out: Path) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "privelet_gui.cli", "release", str(data), "--schema", str(schema), "--epsilon", "0.5",
         "--out", str(out)],
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )


@pytest.mark.parametrize("trial", range(3))
def test_two_releases_of_one_table_at_once_do_not_both_go_ahead_unasked(table, tmp_path, private_ledger, trial):
    """Two processes release the same table at the same moment, without a terminal and without
    --yes: one goes ahead (nothing spent yet), the other must be asked, and so stops."""
    data, schema = table
    children = [_release_process(data, schema, tmp_path / f"{name}.npz") for name in ("a", "b")]
    results = [(child.wait(timeout=300), child.stderr.read().decode()) for child in children if child.stderr]
    codes = sorted(code for code, _ in results)
    assert codes == [0, 2], results
    refused = next(err for code, err in results if code == 2)
    assert "already spent epsilon 0.5 (replace) in 1 release" in refused and "--yes" in refused
    assert len(Ledger(private_ledger).entries()) == 1
    assert sum((tmp_path / f"{name}.npz").exists() for name in ("a", "b")) == 1


def test_the_listing_names_tables_and_says_how_they_are_known(capsys, table, tmp_path):
    data, schema = table
    release(capsys, data, schema, tmp_path / "a.npz", "--dataset", "people")
    code, out, _ = call(capsys, "ledger")
    assert code == 0
    header, row = out.splitlines()[1:3]
    assert header.split()[:4] == ["id", "time", "(UTC)", "table"] and row.split()[2] == "people"
    listing = json.loads(call(capsys, "ledger", "--json")[1])
    [entry] = listing["releases"]
    assert entry["table"] == "people" and entry["dataset"] == "people"
    assert len(entry["row_fingerprint"]) == 32 and len(entry["file_fingerprint"]) == 64
    assert main(["ledger", "link", "--help"]) == 0
