"""The privacy-budget ledger: one row per release, salted fingerprints, tables known by rows,
files and datasets, one rule of composition, damage refused, releases at the same time asked."""

from __future__ import annotations

import contextlib
import dataclasses
import os
import shutil
import sqlite3
import stat
import subprocess
import sys
import threading

import numpy as np
import pytest

from privelet_gui.engine import Cancelled, OrdinalAttribute, PriveletError, Schema, privelet_plus
from privelet_gui.io.ledger import (
    LEDGER_ENVIRONMENT,
    RELEASE_COLUMNS,
    BudgetCheck,
    Ledger,
    LedgerError,
    PlannedRelease,
    Spending,
    TableKeys,
    add_release,
    check_budget,
    ledger_path,
    ledger_report,
    spend_budget,
    spending_summary,
)
from tests.conftest import USERS_LEDGER

SCHEMA = Schema([OrdinalAttribute.integer_range("age", 0, 7)])
MATRIX = np.arange(8, dtype=float)


def planned(epsilon: float, neighbours: str = "replace", *, seeded: bool = False) -> PlannedRelease:
    return PlannedRelease(epsilon, neighbours, (), "privelet", "exact", seeded)


def never(check: BudgetCheck) -> bool:
    raise AssertionError(f"asked, though the table has spent {check.spent}")


@pytest.fixture
def table(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("age\n1\n2\n")
    return path


def test_tests_never_use_the_users_ledger(private_ledger, tmp_path_factory):
    assert ledger_path() == private_ledger
    assert str(tmp_path_factory.getbasetemp()) in os.environ[LEDGER_ENVIRONMENT]
    assert ledger_path() != USERS_LEDGER  # which users_ledger_untouched checks over the whole run


def test_the_default_place_is_the_users_data_folder(monkeypatch, tmp_path):
    monkeypatch.delenv(LEDGER_ENVIRONMENT)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    path = ledger_path()
    if sys.platform.startswith("linux"):
        assert path == tmp_path / "data" / "privelet-studio" / "ledger.sqlite3"
    assert path.name == "ledger.sqlite3" and "privelet-studio" in str(path)


def test_releases_add_up_per_table_and_notion(tmp_path, table):
    ledger = Ledger(tmp_path / "ledger.sqlite3")
    copy = tmp_path / "renamed.csv"
    copy.write_bytes(table.read_bytes())
    other = tmp_path / "u.csv"
    other.write_text("age\n1\n3\n")
    keys = ledger.table_keys([table])
    assert ledger.table_keys([copy]) == keys  # the bytes, not the name
    assert ledger.table_keys([other]) != keys
    assert not ledger.spent(keys).any and spending_summary(ledger.spent(keys)) == "nothing yet"

    ledger.record(keys, privelet_plus(MATRIX, SCHEMA, 0.5), output=tmp_path / "a.npz")
    ledger.record(keys, privelet_plus(MATRIX, SCHEMA, 0.25), output=tmp_path / "b.npz")
    ledger.record(keys, privelet_plus(MATRIX, SCHEMA, 1.0, neighbours="add-remove"))
    ledger.record(keys, privelet_plus(MATRIX, SCHEMA, 2.0, rng=np.random.default_rng(1)))
    ledger.record(ledger.table_keys([other]), privelet_plus(MATRIX, SCHEMA, 3.0))

    spent = ledger.spent(keys)
    assert spent.epsilon == {"replace": 0.75, "add-remove": 1.0} and (spent.releases, spent.seeded) == (3, 1)
    assert spent.entries == (1, 2, 3, 4) and spent.table == keys.file[:12]
    assert spending_summary(spent) == (
        "epsilon 1 (add-remove) and epsilon 0.75 (replace) in 3 releases, and 1 seeded test release (not private)"
    )
    assert [s.entries for s in ledger.tables()] == [(1, 2, 3, 4), (5,)]
    entries = ledger.entries()
    assert [e.epsilon for e in entries] == [0.5, 0.25, 1.0, 2.0, 3.0]
    first = entries[0]
    assert (first.neighbours, first.sa, first.mechanism, first.sampler, first.seeded) == (
        "replace", (), "privelet", "exact", False
    )
    assert first.output == str(tmp_path / "a.npz") and entries[2].output is None
    assert first.created.endswith("Z") and first.keys == keys
    ledger.set_output(entries[2].id, "later.npz")
    assert ledger.entries()[2].output == "later.npz"


def test_the_ledger_holds_no_counts_and_its_salt_stays_in_it(tmp_path):
    one, two = Ledger(tmp_path / "one.sqlite3"), Ledger(tmp_path / "two.sqlite3")
    table = tmp_path / "t.csv"
    table.write_text("age\n" + "3\n" * 12345)
    assert one.fingerprint_file(table) != two.fingerprint_file(table)  # salted per ledger
    rows = one.row_fingerprint()
    from privelet_gui.io import count_table

    count_table(table, SCHEMA, rows=rows)
    keys = one.table_keys([table], rows=rows)
    assert keys.rows is not None and len(keys.rows) == 32
    one.record(keys, privelet_plus(MATRIX, SCHEMA, 0.5))
    with sqlite3.connect(one.path) as connection:
        columns = [row[1] for row in connection.execute("PRAGMA table_info(releases)")]
    assert columns == ["id", "created", "fingerprint", "epsilon", "neighbours", "sa", "mechanism", "sampler", "seeded",
                       "output", "rows", "dataset", "mac"]
    assert b"12345" not in one.path.read_bytes() and b"t.csv" not in one.path.read_bytes()
    if os.name == "posix":
        assert stat.S_IMODE(one.path.stat().st_mode) == 0o600
    assert sorted(p.name for p in tmp_path.iterdir()) == ["one.sqlite3", "t.csv", "two.sqlite3"]  # no temporary left


# -- how a table is known -----------------------------------------------------------------------------


def test_releases_sharing_rows_a_file_or_a_dataset_are_one_table(tmp_path):
    ledger = Ledger(tmp_path / "ledger.sqlite3")
    csv = TableKeys(file="f1", rows="r1")
    parquet = TableKeys(file="f2", rows="r1")  # the same rows saved as Parquet
    other_columns = TableKeys(file="f2", rows="r2")  # the Parquet file, other columns released
    stranger = TableKeys(file="f3", rows="r3")
    ledger.record(csv, planned(0.5))
    ledger.record(stranger, planned(1.0))
    assert ledger.spent(parquet).entries == (1,)  # known by its rows
    ledger.record(parquet, planned(0.25))
    assert ledger.spent(other_columns).epsilon == {"replace": 0.75}  # known by its file
    ledger.record(other_columns, planned(0.25))
    assert ledger.spent(csv).epsilon == {"replace": 1.0} and ledger.spent(csv).entries == (1, 3, 4)
    assert ledger.spent(stranger).epsilon == {"replace": 1.0}
    # a dataset named by the custodian: a release under it, and a file linked to it
    export = tmp_path / "export.csv"
    export.write_text("age\n5\n")
    ledger.record(TableKeys(file="f4", rows="r4", dataset="census 2020"), planned(2.0))
    assert not ledger.spent(ledger.table_keys([export])).any
    linked = ledger.link([export], "census 2020")
    assert linked == TableKeys(ledger.fingerprint_file(export), None, "census 2020")
    spent = ledger.spent(ledger.table_keys([export]))
    assert spent.epsilon == {"replace": 2.0} and spent.table == "census 2020"
    # naming the stranger's release's dataset joins the two
    assert ledger.spent(TableKeys(file="f3", dataset="census 2020")).entries == (2, 5)
    report = ledger_report(ledger)
    assert [t.table for t in report.tables] == ["r1", "r3", "census 2020"]
    assert [row[2] for row in report.rows()] == ["r1", "r3", "r1", "r1", "census 2020"]
    assert report.table_for(ledger.table_keys([export])) is report.tables[2]
    assert report.table_for(TableKeys(file="f2")) is report.tables[0]
    assert report.table_for(TableKeys(file="nowhere")) is None
    assert report.to_json()["links"] == [{"file_fingerprint": linked.file, "dataset": "census 2020"}]
    with pytest.raises(LedgerError, match="1 to 200 printable characters"):
        ledger.link([export], "  ")


# -- one rule of composition ----------------------------------------------------------------------------


def test_composition_is_one_rule_and_a_seeded_release_is_counted_apart_everywhere(tmp_path):
    ledger = Ledger(tmp_path / "ledger.sqlite3")
    keys = TableKeys(file="f", rows="r")
    ledger.record(keys, planned(1.0))
    # a seeded (test) release asked about: its epsilon is not added to the total the question
    # names (it was, while the ledger's own totals counted it apart)
    check = check_budget(ledger, keys, 0.5, "replace", seeded=True)
    assert check.after() == add_release(check.spent, planned(0.5, seeded=True))
    assert check.after().epsilon == {"replace": 1.0} and check.after().seeded == 1
    assert check.total_after_text() == "epsilon 1 (replace), and 1 seeded test release (not private)"
    assert "seeded test release (epsilon 0.5, replace): not private, counted apart" in check.question()
    with spend_budget(ledger, keys, planned(0.5, seeded=True), lambda c: True) as reservation:
        reservation.mark_drawn()
    # what was asked is what the ledger, its report and `privelet ledger` now say
    after = ledger.spent(keys)
    assert reservation.spent_after == after == dataclasses.replace(check.after(), entries=(1, 2))
    assert ledger_report(ledger).tables == [after]
    unseeded = check_budget(ledger, keys, 0.25, "add-remove")
    assert unseeded.after().epsilon == {"replace": 1.0, "add-remove": 0.25}
    assert unseeded.total_after_text() == (
        "epsilon 0.25 (add-remove) and epsilon 1 (replace), and 1 seeded test release (not private)"
    )
    assert add_release(Spending("t"), planned(0.5), entry=7) == Spending("t", {"replace": 0.5}, 1, 0, (7,))


# -- the rule before the noise ------------------------------------------------------------------------------


def test_the_rule_before_the_noise_asks_only_a_table_that_has_spent(tmp_path, table):
    ledger = Ledger(tmp_path / "ledger.sqlite3")
    keys = ledger.table_keys([table])
    asked: list[BudgetCheck] = []

    def ask(check: BudgetCheck) -> bool:
        asked.append(check)
        return answer

    answer = False
    with spend_budget(ledger, keys, planned(0.5), ask, output=tmp_path / "a.npz") as first:
        assert first.check.summary() == (
            "this table has spent nothing yet; this release spends epsilon 0.5 more (replace)"
        )
        assert [e.output for e in ledger.entries()] == [str(tmp_path / "a.npz")]  # recorded before the noise
        first.mark_drawn()
    assert asked == [] and first.spent_after == ledger.spent(keys)
    with pytest.raises(Cancelled, match="not spent"), spend_budget(ledger, keys, planned(0.25, "add-remove"), ask):
        raise AssertionError("refused: the release must not go on")
    check = asked[0]
    assert check.spent.epsilon == {"replace": 0.5} and check.after().epsilon == {"replace": 0.5, "add-remove": 0.25}
    assert check.total_after_text() == "epsilon 0.25 (add-remove) and epsilon 0.5 (replace)"
    assert "already spent epsilon 0.5 (replace) in 1 release" in check.question()
    assert "attacker" in check.question()
    assert len(ledger.entries()) == 1  # refused: nothing recorded


def test_an_entry_whose_noise_was_never_drawn_is_removed_and_one_drawn_stays(tmp_path):
    ledger = Ledger(tmp_path / "ledger.sqlite3")
    keys = TableKeys(file="f")
    with pytest.raises(MemoryError), spend_budget(ledger, keys, planned(1.0), never):
        assert len(ledger.entries()) == 1
        raise MemoryError  # drawing the noise failed: nobody saw any
    assert ledger.entries() == []
    with pytest.raises(OSError), spend_budget(ledger, keys, planned(1.0), never) as reservation:
        reservation.mark_drawn()
        raise OSError("disk full")  # writing the file failed: the noise was drawn all the same
    assert [e.id for e in ledger.entries()] == [reservation.entry]


def test_two_releases_at_once_are_not_both_made_without_the_question(tmp_path, monkeypatch):
    """Both look the table up before either records: the second to record finds the first's
    release and asks again, with it counted."""
    from privelet_gui.io import ledger as ledger_module

    path = tmp_path / "ledger.sqlite3"
    keys = TableKeys(file="f", rows="r")
    both_looked = threading.Barrier(2, timeout=20)
    look_up = ledger_module.check_budget

    def looked_up_together(*args: object, **kwargs: object) -> BudgetCheck:
        check = look_up(*args, **kwargs)  # type: ignore[arg-type]
        with contextlib.suppress(threading.BrokenBarrierError):
            both_looked.wait()  # the second look-up (after the question) passes at once
        both_looked.abort()
        return check

    monkeypatch.setattr(ledger_module, "check_budget", looked_up_together)
    asked: dict[int, list[Spending]] = {0: [], 1: []}
    outcome: dict[int, object] = {}

    def release(number: int) -> None:
        ledger = Ledger(path)  # a connection of its own, as another process has

        def ask(check: BudgetCheck) -> bool:
            asked[number].append(check.spent)
            return False

        try:
            with spend_budget(ledger, keys, planned(1.0), ask) as reservation:
                reservation.mark_drawn()
            outcome[number] = reservation.entry
        except Cancelled as exc:
            outcome[number] = exc

    Ledger(path).entries()  # made before the two start
    threads = [threading.Thread(target=release, args=(n,)) for n in (0, 1)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    made = [n for n in (0, 1) if isinstance(outcome[n], int)]
    assert len(made) == 1 and len(Ledger(path).entries()) == 1
    refused = 1 - made[0]
    assert isinstance(outcome[refused], Cancelled)
    assert [spent.epsilon for spent in asked[refused]] == [{"replace": 1.0}] and asked[made[0]] == []


# -- damage is never a fresh start ------------------------------------------------------------------------------


def _sql(statement: str):
    def damage(path):
        with contextlib.closing(sqlite3.connect(path)) as connection:
            connection.execute(statement)
            connection.commit()
    return damage


def _cut(size):
    return lambda path: path.write_bytes(path.read_bytes()[:size])


DAMAGE = {
    "truncated by its last byte": (_cut(-1), "cut short"),
    "emptied": (_cut(0), "empty file"),
    "one byte left": (_cut(1), "damaged"),
    "not a database": (lambda path: path.write_bytes(b"not a database at all" * 300), "damaged"),
    "meta table gone": (_sql("DROP TABLE meta"), "'meta' table is gone"),
    "releases table gone": (_sql("DROP TABLE releases"), "'releases' table is gone"),
    "salt replaced": (_sql(f"UPDATE meta SET value = '{'ab' * 32}' WHERE key = 'salt'"), "does not match the ledger's salt"),
    "salt gone": (_sql("DELETE FROM meta WHERE key = 'salt'"), "salt is missing"),
    "text for epsilon": (_sql("UPDATE releases SET epsilon = 'abc' WHERE id = 2"), "release 2: its epsilon is 'abc'"),
    "epsilon lowered": (_sql("UPDATE releases SET epsilon = 0.001 WHERE id = 1"), "release 1: what it records does not"),
    "epsilon zero": (_sql("UPDATE releases SET epsilon = 0 WHERE id = 1"), "release 1: its epsilon is 0.0"),
    "version not a number": (_sql("UPDATE meta SET value = 'abc' WHERE key = 'version'"), "version is 'abc'"),
    "unknown neighbours": (_sql("UPDATE releases SET neighbours = 'x' WHERE id = 1"), "neighbouring notion is 'x'"),
    "S_A not a list": (_sql("UPDATE releases SET sa = '{' WHERE id = 1"), "its S_A is '{'"),
}


@pytest.fixture
def spent_ledger(tmp_path, table):
    """A ledger in which the table has spent epsilon 1.5 in two releases, and the table's keys."""
    ledger = Ledger(tmp_path / "ledger.sqlite3")
    keys = ledger.table_keys([table])
    for epsilon in (0.5, 1.0):
        ledger.record(keys, planned(epsilon))
    # enough pages that a cut one loses a release
    ledger.record(TableKeys(file="x" * 64, rows="y" * 32), planned(2.0), output="z" * 3000)
    return ledger, keys


@pytest.mark.parametrize("damage", DAMAGE, ids=list(DAMAGE))
def test_a_damaged_ledger_is_refused_never_a_fresh_start(spent_ledger, damage):
    ledger, keys = spent_ledger
    mutate, said = DAMAGE[damage]
    mutate(ledger.path)
    before = ledger.path.read_bytes()
    for attempt in (lambda: ledger.spent(keys), lambda: ledger.record(keys, planned(1.0)), ledger.row_fingerprint,
                    ledger.report, lambda: ledger.table_keys([ledger.path])):
        with pytest.raises(LedgerError) as raised:
            attempt()
        message = str(raised.value)
        assert said in message and str(ledger.path) in message
        assert "is damaged" in message and "Restore ledger.sqlite3 from a backup" in message
        assert "\n" not in message
    assert ledger.path.read_bytes() == before  # left as it was, for its owner to restore


def test_a_version_1_ledger_is_upgraded_and_keeps_what_it_counted(tmp_path, table):
    path = tmp_path / "ledger.sqlite3"
    with contextlib.closing(sqlite3.connect(path)) as connection:  # as Privelet Studio 1 wrote it
        connection.executescript(
            "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);"
            "CREATE TABLE releases (id INTEGER PRIMARY KEY AUTOINCREMENT, created TEXT NOT NULL, fingerprint TEXT "
            "NOT NULL, epsilon REAL NOT NULL, neighbours TEXT NOT NULL, sa TEXT NOT NULL, mechanism TEXT NOT NULL,"
            " sampler TEXT NOT NULL, seeded INTEGER NOT NULL, output TEXT);"
            f"INSERT INTO meta VALUES ('version', '1'), ('salt', '{'cd' * 32}');"
        )
        file = Ledger(tmp_path / "scratch.sqlite3").fingerprint_file(table)  # any fingerprint
        connection.execute(
            "INSERT INTO releases (created, fingerprint, epsilon, neighbours, sa, mechanism, sampler, seeded, output)"
            " VALUES ('2026-01-01T00:00:00Z', ?, 0.5, 'replace', '[]', 'privelet', 'exact', 0, 'old.npz')", (file,))
        connection.commit()
    ledger = Ledger(path)
    [entry] = ledger.entries()
    assert (entry.file_fingerprint, entry.row_fingerprint, entry.epsilon, entry.output) == (file, None, 0.5, "old.npz")
    assert ledger.spent(TableKeys(file=file, rows="new")).epsilon == {"replace": 0.5}
    with contextlib.closing(sqlite3.connect(path)) as connection:
        assert connection.execute("SELECT value FROM meta WHERE key = 'version'").fetchone() == ("2",)
        connection.execute("UPDATE releases SET epsilon = 0.1")  # its HMAC now guards it
        connection.commit()
    with pytest.raises(LedgerError, match="release 1: what it records does not match"):
        ledger.entries()


def test_a_locked_ledger_is_reported_as_locked(spent_ledger):
    ledger, keys = spent_ledger
    holder = sqlite3.connect(ledger.path, isolation_level=None)
    try:
        holder.execute("BEGIN EXCLUSIVE")
        waiting = Ledger(ledger.path, timeout=0.2)
        for attempt in (lambda: waiting.spent(keys), lambda: waiting.record(keys, planned(1.0))):
            with pytest.raises(LedgerError, match=r"is locked by another program .* for more than 0.2 s; try again"):
                attempt()
    finally:
        holder.close()
    assert ledger.spent(keys).epsilon == {"replace": 1.5}  # unlocked: as it was


@contextlib.contextmanager
def read_only(path):
    """``path`` made read-only (immutable for root, whom file modes do not stop)."""
    if os.name != "posix":
        pytest.skip("POSIX file modes")
    if os.geteuid() == 0:
        if shutil.which("chattr") is None or subprocess.run(["chattr", "+i", str(path)], capture_output=True).returncode:
            pytest.skip("root, and the file cannot be made immutable here")
        try:
            yield
        finally:
            subprocess.run(["chattr", "-i", str(path)], check=True)
    else:
        path.chmod(0o400)
        try:
            yield
        finally:
            path.chmod(0o600)


def test_a_read_only_ledger_is_read_and_reported_as_read_only(spent_ledger):
    ledger, keys = spent_ledger
    with read_only(ledger.path):
        assert ledger.spent(keys).epsilon == {"replace": 1.5}  # what was spent can still be read
        assert len(ledger.report().releases) == 3
        for attempt in (lambda: ledger.record(keys, planned(1.0)), ledger.row_fingerprint):  # the latter: before counting
            with pytest.raises(LedgerError, match=r"is read-only \(the file cannot be written\).*make ledger.sqlite3"):
                attempt()
    assert len(ledger.entries()) == 3


def test_an_unreachable_ledger_or_table_is_a_clear_error(tmp_path):
    blocked = tmp_path / "file"
    blocked.write_text("x")
    with pytest.raises(LedgerError, match=r"cannot open the privacy ledger.*PRIVELET_LEDGER"):
        Ledger(blocked / "ledger.sqlite3").entries()
    with pytest.raises(PriveletError, match="cannot read"):
        Ledger(tmp_path / "ok.sqlite3").fingerprint_file(tmp_path / "missing.csv")


def test_ledgers_made_at_the_same_time_are_one_ledger(tmp_path):
    path = tmp_path / "new" / "ledger.sqlite3"
    salts: list[bytes] = []
    start = threading.Barrier(4)

    def make() -> None:
        start.wait()
        rows = Ledger(path).row_fingerprint()
        salts.append(rows._key)

    threads = [threading.Thread(target=make) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(set(salts)) == 1 and len(salts) == 4  # one salt: one ledger, not one per thread
    assert [p.name for p in path.parent.iterdir()] == ["ledger.sqlite3"]


def test_the_listing_is_one_report_for_the_command_line_and_the_app(private_ledger):
    ledger = Ledger()
    keys = ledger.table_keys([__file__])
    ledger.record(keys, privelet_plus(MATRIX, SCHEMA, 0.5), output="r.npz")
    ledger.record(keys, privelet_plus(MATRIX, SCHEMA, 1.0, rng=np.random.default_rng(1)))
    report = ledger_report()
    assert report.path == private_ledger and [e.id for e in report.releases] == [1, 2]
    assert report.to_json()["tables"] == [{
        "table": keys.file[:12], "epsilon": {"replace": 0.5}, "releases": 1, "seeded": 1, "entries": [1, 2],
        "fingerprints": [keys.file], "datasets": [],
    }]
    cells = report.rows()
    assert all(len(row) == len(RELEASE_COLUMNS) for row in cells)
    assert cells[0][2:] == (keys.file[:12], "0.5", "replace", "privelet", "exact", "no", "{}", "r.npz")
    assert cells[1][7:] == ("yes (not private)", "{}", "(not written)")
