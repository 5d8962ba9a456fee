"""The privacy-budget ledger: one row per release, salted fingerprints, totals per table."""

from __future__ import annotations

import os
import sqlite3
import stat
import sys

import numpy as np
import pytest

from privelet_gui.engine import Cancelled, OrdinalAttribute, PriveletError, Schema, privelet_plus
from privelet_gui.io.ledger import (
    LEDGER_ENVIRONMENT,
    RELEASE_COLUMNS,
    Ledger,
    ask_before_spending,
    ledger_path,
    ledger_report,
    spending_summary,
)
from tests.conftest import USERS_LEDGER

SCHEMA = Schema([OrdinalAttribute.integer_range("age", 0, 7)])
MATRIX = np.arange(8, dtype=float)


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


def test_releases_add_up_per_table_and_notion(tmp_path):
    ledger = Ledger(tmp_path / "ledger.sqlite3")
    table = tmp_path / "t.csv"
    table.write_text("age\n1\n2\n")
    copy = tmp_path / "renamed.csv"
    copy.write_bytes(table.read_bytes())
    other = tmp_path / "u.csv"
    other.write_text("age\n1\n3\n")
    mark = ledger.fingerprint_file(table)
    assert ledger.fingerprint_file(copy) == mark  # the bytes, not the name
    assert ledger.fingerprint_file(other) != mark
    assert not ledger.spent(mark).any and spending_summary(ledger.spent(mark)) == "nothing yet"

    ledger.record(mark, privelet_plus(MATRIX, SCHEMA, 0.5), output=tmp_path / "a.npz")
    ledger.record(mark, privelet_plus(MATRIX, SCHEMA, 0.25), output=tmp_path / "b.npz")
    ledger.record(mark, privelet_plus(MATRIX, SCHEMA, 1.0, neighbours="add-remove"))
    ledger.record(mark, privelet_plus(MATRIX, SCHEMA, 2.0, rng=np.random.default_rng(1)))
    ledger.record(ledger.fingerprint_file(other), privelet_plus(MATRIX, SCHEMA, 3.0))

    spent = ledger.spent(mark)
    assert spent.epsilon == {"replace": 0.75, "add-remove": 1.0} and (spent.releases, spent.seeded) == (3, 1)
    assert spending_summary(spent) == (
        "epsilon 1 (add-remove) and epsilon 0.75 (replace) in 3 releases, and 1 seeded test release (not private)"
    )
    assert [s.fingerprint for s in ledger.totals()] == [mark, ledger.fingerprint_file(other)]
    entries = ledger.entries()
    assert [e.epsilon for e in entries] == [0.5, 0.25, 1.0, 2.0, 3.0]
    first = entries[0]
    assert (first.neighbours, first.sa, first.mechanism, first.sampler, first.seeded) == (
        "replace", (), "privelet", "exact", False
    )
    assert first.output == str(tmp_path / "a.npz") and entries[2].output is None
    assert first.created.endswith("Z")
    ledger.set_output(entries[2].id, "later.npz")
    assert ledger.entries()[2].output == "later.npz"


def test_the_ledger_holds_no_counts_and_its_salt_stays_in_it(tmp_path):
    one, two = Ledger(tmp_path / "one.sqlite3"), Ledger(tmp_path / "two.sqlite3")
    table = tmp_path / "t.csv"
    table.write_text("age\n" + "3\n" * 12345)
    assert one.fingerprint_file(table) != two.fingerprint_file(table)  # salted per ledger
    one.record(one.fingerprint_file(table), privelet_plus(MATRIX, SCHEMA, 0.5))
    with sqlite3.connect(one.path) as connection:
        columns = [row[1] for row in connection.execute("PRAGMA table_info(releases)")]
    assert columns == ["id", "created", "fingerprint", "epsilon", "neighbours", "sa", "mechanism", "sampler", "seeded",
                       "output"]
    assert b"12345" not in one.path.read_bytes() and b"t.csv" not in one.path.read_bytes()
    if os.name == "posix":
        assert stat.S_IMODE(one.path.stat().st_mode) == 0o600


def test_a_damaged_or_unreachable_ledger_is_a_clear_error(tmp_path):
    damaged = tmp_path / "ledger.sqlite3"
    damaged.write_bytes(b"not a database at all" * 100)
    with pytest.raises(PriveletError, match=r"ledger.sqlite3 is damaged or not a ledger.*move it away"):
        Ledger(damaged).entries()
    blocked = tmp_path / "file"
    blocked.write_text("x")
    with pytest.raises(PriveletError, match=r"cannot open the privacy ledger.*PRIVELET_LEDGER"):
        Ledger(blocked / "ledger.sqlite3").entries()
    with pytest.raises(PriveletError, match="cannot read"):
        Ledger(tmp_path / "ok.sqlite3").fingerprint_file(tmp_path / "missing.csv")


def test_the_rule_before_the_noise_asks_only_a_table_that_has_spent(tmp_path):
    ledger = Ledger(tmp_path / "ledger.sqlite3")
    table = tmp_path / "t.csv"
    table.write_text("age\n1\n2\n")
    asked: list[object] = []

    def ask(check: object) -> bool:
        asked.append(check)
        return answer

    answer = False
    first = ask_before_spending(ledger, [table], 0.5, "replace", ask)
    assert asked == [] and not first.must_ask  # nothing spent: no question
    assert first.summary() == "this table has spent nothing yet; this release spends epsilon 0.5 more (replace)"
    release = privelet_plus(MATRIX, SCHEMA, 0.5)
    first.record(release, output=tmp_path / "a.npz")
    assert first.after(release) == ledger.spent(first.fingerprint)  # what the app shows is what the ledger holds
    with pytest.raises(Cancelled, match="not spent"):
        ask_before_spending(ledger, [table], 0.25, "add-remove", ask)
    check = asked[0]
    assert check.spent.epsilon == {"replace": 0.5} and check.totals_after() == {"replace": 0.5, "add-remove": 0.25}
    assert check.total_after_text() == "epsilon 0.25 (add-remove) and epsilon 0.5 (replace)"
    assert "already spent epsilon 0.5 (replace) in 1 release" in check.question()
    assert "attacker" in check.question()
    assert len(ledger.entries()) == 1  # refused: nothing recorded
    answer = True
    again = ask_before_spending(ledger, [table], 0.25, "add-remove", ask)
    seeded = privelet_plus(MATRIX, SCHEMA, 0.25, neighbours="add-remove", rng=np.random.default_rng(3))
    again.record(seeded)
    assert again.after(seeded) == ledger.spent(again.fingerprint)  # a seeded release is counted apart
    unseeded = privelet_plus(MATRIX, SCHEMA, 0.25, neighbours="add-remove")
    again.record(unseeded)
    after = again.after(unseeded)
    assert after.epsilon == {"replace": 0.5, "add-remove": 0.25} and after.releases == 2 and after.seeded == 0


def test_the_listing_is_one_report_for_the_command_line_and_the_app(tmp_path, private_ledger):
    ledger = Ledger()
    mark = ledger.fingerprint_file(__file__)
    ledger.record(mark, privelet_plus(MATRIX, SCHEMA, 0.5), output="r.npz")
    ledger.record(mark, privelet_plus(MATRIX, SCHEMA, 1.0, rng=np.random.default_rng(1)))
    report = ledger_report()
    assert report.path == private_ledger and [e.id for e in report.releases] == [1, 2]
    assert report.to_json()["tables"] == [{"fingerprint": mark, "epsilon": {"replace": 0.5}, "releases": 1, "seeded": 1}]
    cells = [entry.cells() for entry in report.releases]
    assert all(len(row) == len(RELEASE_COLUMNS) for row in cells)
    assert cells[0][2:] == (mark[:12], "0.5", "replace", "privelet", "exact", "no", "{}", "r.npz")
    assert cells[1][7:] == ("yes (not private)", "{}", "(not written)")
