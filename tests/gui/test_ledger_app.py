"""The privacy ledger and the samplers in the app: asked before spending more (with the right
totals), nothing drawn or recorded when declined or cancelled, recorded before it is saved and
the file noted after, the ledger view, seeded release files, the sampler through a project, and
what counting dropped shown to the custodian only."""

from __future__ import annotations

import json
import sqlite3
import time

import numpy as np
import pandas as pd
import pytest
from PySide6.QtWidgets import QMessageBox, QWidget

from privelet_gui import io as pio
from privelet_gui.cli import main
from privelet_gui.engine import Hierarchy, NominalAttribute, OrdinalAttribute, ReleaseSpec, Schema
from privelet_gui.gui.dialogs import Dialogs
from privelet_gui.gui.settings import Settings
from privelet_gui.io.ledger import (
    COMPOSITION_TEXT,
    BudgetCheck,
    Ledger,
    PlannedRelease,
    Spending,
    TableKeys,
    ledger_report,
)
from privelet_gui.io.releases import SEEDED_WARNING
from tests.gui.conftest import open_sample, wait_for_best_strategy


def release_now(window, qtbot):
    wait_for_best_strategy(window, qtbot)  # the settings may have changed since the sample was opened
    with qtbot.waitSignal(window.releaseFinished, timeout=120_000) as finished:
        assert window.run_release()
    return finished.args[0]


def spent_before(window, qtbot) -> str:
    """The privacy ledger's line of the Release step once the open table's spending is looked up."""
    qtbot.waitUntil(lambda: window.document.budget_check() is not None, timeout=20_000)
    return window.release_panel.setup_labels["ledger"].text()


def test_a_first_release_asks_nothing_is_recorded_before_it_is_saved_and_notes_the_file(
    sample_window, qtbot, dialogs, tmp_path
):
    window = sample_window
    assert "first release of this table" in spent_before(window, qtbot)
    assert window.privacy_panel.spending.text() == (
        "Privacy ledger: first release of this table: afterwards it will have spent epsilon 1 (replace)."
    )
    outcome = release_now(window, qtbot)
    assert "spend-budget" not in dialogs.asked  # nothing spent yet: no question
    entries = Ledger().entries()
    assert [(e.id, e.epsilon, e.neighbours, e.sampler, e.seeded, e.output) for e in entries] == [
        (outcome.ledger_entry, 1.0, "replace", "exact", False, None)
    ]  # recorded as the noise was drawn, before any file
    assert entries[0].file_fingerprint == Ledger().fingerprint_file(pio.sample_table_path())
    assert entries[0].row_fingerprint is not None
    shown = window.release_panel.result_labels["ledger"].text()
    assert "has now spent epsilon 1 (replace) in 1 release" in shown and "not saved yet" in shown
    target = tmp_path / "adult-release.npz"
    with qtbot.waitSignal(window.exportFinished, timeout=30_000):
        assert window.export_release("release", target)
    assert [e.output for e in Ledger().entries()] == [str(target.resolve())]
    assert f"saved to {target}" in window.release_panel.result_labels["ledger"].text()
    # the next release's line counts this one
    assert "already spent epsilon 1 (replace) in 1 release" in window.release_panel.setup_labels["ledger"].text()


def test_a_second_release_asks_with_what_was_spent_and_the_new_total(sample_window, qtbot, dialogs):
    window = sample_window
    doc = window.document
    first = release_now(window, qtbot)
    doc.set_epsilon(0.5)
    line = window.privacy_panel.spending.text()
    assert "already spent epsilon 1 (replace) in 1 release" in line and "brings it to epsilon 1.5 (replace)" in line
    second = release_now(window, qtbot)
    assert dialogs.asked.count("spend-budget") == 1
    check = dialogs.budget_checks[0]
    assert isinstance(check, BudgetCheck)
    assert (check.spent.epsilon, check.spent.releases, check.spent.seeded, check.spent.entries) == (
        {"replace": 1.0}, 1, 0, (first.ledger_entry,))
    assert (check.epsilon, check.neighbours, check.after().epsilon) == (0.5, "replace", {"replace": 1.5})
    question = check.question()
    assert "already spent epsilon 1 (replace) in 1 release" in question
    assert "spends epsilon 0.5 more (replace)" in question and "will have spent epsilon 1.5 (replace)" in question
    assert "attacker who has every one of these releases" in question
    assert [e.id for e in Ledger().entries()] == [first.ledger_entry, second.ledger_entry]
    # a third under the other neighbouring notion: its epsilon adds up apart
    doc.set_privacy(neighbours="add-remove")
    release_now(window, qtbot)
    third = dialogs.budget_checks[1]
    assert third.spent.epsilon == {"replace": 1.5}
    assert third.after().epsilon == {"replace": 1.5, "add-remove": 0.5}
    assert ledger_report().tables[0].epsilon == {"replace": 1.5, "add-remove": 0.5}


def test_declining_draws_no_noise_and_records_nothing(sample_window, qtbot, dialogs, monkeypatch):
    window = sample_window
    ledger = Ledger()
    earlier = ReleaseSpec(window.document.schema(), 0.25).run(np.zeros(window.document.schema().shape))
    ledger.record(ledger.table_keys([pio.sample_table_path()]), earlier)  # a release made before
    drawn: list[object] = []
    run = ReleaseSpec.run
    monkeypatch.setattr(ReleaseSpec, "run", lambda self, *a, **k: drawn.append(self) or run(self, *a, **k))
    dialogs.spend_answer = False
    with qtbot.waitSignal(window.releaseCancelled, timeout=60_000):
        assert window.run_release()
    assert dialogs.budget_checks[0].spent.epsilon == {"replace": 0.25}
    assert drawn == []  # counted, then asked: no noise was drawn
    assert len(Ledger().entries()) == 1 and window.document.outcome is None
    assert "nothing was recorded" in window.release_panel.progress.format()
    assert dialogs.errors == []
    dialogs.spend_answer = True  # the custodian changes their mind: it releases
    outcome = release_now(window, qtbot)
    assert drawn and len(Ledger().entries()) == 2 and outcome.spent_after.epsilon == {"replace": 1.25}


def test_a_cancel_after_the_noise_is_drawn_keeps_the_recorded_release(sample_window, qtbot, dialogs):
    window = sample_window
    said: list[str] = []
    window.statusBar().messageChanged.connect(said.append)

    def cancel_when_measuring(_generation: int, _fraction: float, stage: str) -> None:
        if stage.startswith("measuring the error") and not said:
            window.cancel_task()  # the noise is drawn and recorded by now

    window.runner.progressed.connect(cancel_when_measuring)
    outcome = release_now(window, qtbot)
    assert any("the release is kept" in text for text in said)
    assert window.document.outcome is outcome
    assert [e.id for e in Ledger().entries()] == [outcome.ledger_entry]
    assert window.document.release_at_risk()  # held, and not dropped without asking


def test_the_ledger_view_shows_what_privelet_ledger_lists(sample_window, qtbot, capsys):
    window = sample_window
    release_now(window, qtbot)
    window.document.set_epsilon(0.5)
    release_now(window, qtbot)
    window.act_ledger.trigger()
    dialog = window.ledger_dialog
    assert main(["ledger", "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert dialog.report.to_json() == listed  # the same data as the command line, from one function
    assert [[dialog.releases.item(r, c).text() for c in range(dialog.releases.columnCount())]
            for r in range(dialog.releases.rowCount())] == [list(row) for row in ledger_report().rows()]
    assert dialog.tables.rowCount() == 1
    assert dialog.tables.item(0, 0).text().endswith("(the open table)")
    assert dialog.tables.item(0, 1).text() == "epsilon 1.5 (replace) in 2 releases"
    dialog.close()


SMALL = Schema([OrdinalAttribute.integer_range("age", 0, 9), NominalAttribute("sex", Hierarchy.flat(["F", "M"]))])


@pytest.fixture
def seeded_file(tmp_path):
    """A seeded (test) release file, and an unseeded one."""
    schema = SMALL
    spec = ReleaseSpec(schema, 1.0)
    seeded = tmp_path / "seeded.npz"
    pio.save_release(spec.run(np.zeros(schema.shape), rng=np.random.default_rng(7)), seeded, seed=7)
    plain = tmp_path / "plain.npz"
    pio.save_release(spec.run(np.zeros(schema.shape)), plain)
    return seeded, plain


def open_release_file(window, qtbot, path):
    assert window.open_release(path)
    qtbot.waitUntil(lambda: window.release_panel.opened is not None and window.release_panel.opened[0] == path,
                    timeout=20_000)


def test_exporting_a_seeded_release_file_asks_and_marks_the_file(window, qtbot, dialogs, seeded_file, tmp_path):
    seeded, plain = seeded_file
    open_release_file(window, qtbot, seeded)
    panel = window.release_panel
    assert panel.opened_bar.isVisible() and "SEEDED TEST RELEASE" in panel.opened_label.text()
    refused = tmp_path / "refused.csv"
    dialogs.seeded_answer = False
    assert not window.export_opened_release("csv", refused)
    assert dialogs.seeded_asked == ["seeded.npz"] and not refused.exists()
    dialogs.seeded_answer = True
    target = tmp_path / "seeded.csv"
    with qtbot.waitSignal(window.exportFinished, timeout=30_000):
        assert window.export_opened_release("csv", target)
    assert target.read_text().splitlines()[0] == f"# {SEEDED_WARNING}"
    # an unseeded file exports without a question, and without the mark
    open_release_file(window, qtbot, plain)
    dialogs.asked.clear()
    with qtbot.waitSignal(window.exportFinished, timeout=30_000):
        assert window.export_opened_release("parquet", tmp_path / "plain.parquet")
    assert "export-seeded" not in dialogs.asked
    frame = pd.read_parquet(tmp_path / "plain.parquet")
    assert len(frame) == pio.load_release(plain).noisy.size
    assert Ledger().entries() == []  # opening and exporting a file spends nothing


def test_the_sampler_is_chosen_undone_saved_in_the_project_and_used(sample_window, qtbot, dialogs, tmp_path):
    window = sample_window
    doc = window.document
    panel = window.privacy_panel
    assert doc.sampler == "exact" and panel.sampler_buttons["exact"].isChecked()
    panel.sampler_buttons["standard"].click()
    assert doc.sampler == "standard" and doc.release_spec().sampler == "standard"
    window.act_undo.trigger()
    assert doc.sampler == "exact" and panel.sampler_buttons["exact"].isChecked()
    window.act_redo.trigger()
    assert panel.sampler_buttons["standard"].isChecked()
    project = tmp_path / "study.privelet"
    assert window.save_project(project)
    assert json.loads(project.read_text())["privacy"]["sampler"] == "standard"
    doc.reset()
    assert doc.sampler == "exact"
    with qtbot.waitSignal(window.projectOpened, timeout=30_000):
        assert window.open_project(project)
    qtbot.waitUntil(lambda: doc.summary is not None, timeout=30_000)
    assert doc.sampler == "standard" and panel.sampler_buttons["standard"].isChecked()
    outcome = release_now(window, qtbot)
    assert outcome.release.sampler == "standard" and Ledger().entries()[0].sampler == "standard"
    assert window.release_panel.result_labels["sampler"].text() == "standard"
    panel.sampler_buttons["exact"].click()
    assert doc.release_is_stale()
    window.act_undo.trigger()
    assert not doc.release_is_stale()


@pytest.fixture
def dropping_table(tmp_path):
    """200 rows in the domain and one outside it (age 99)."""
    schema = SMALL
    rows = [(a % 10, "FM"[a % 2]) for a in range(200)] + [(99, "F")]
    path = tmp_path / "people.csv"
    pd.DataFrame(rows, columns=["age", "sex"]).to_csv(path, index=False)
    return path, schema


@pytest.mark.parametrize("neighbours", ["replace", "add-remove"])
def test_what_counting_dropped_is_shown_to_the_custodian_in_the_notions_terms(
    window, qtbot, dropping_table, tmp_path, neighbours
):
    path, schema = dropping_table
    with qtbot.waitSignal(window.tableLoaded, timeout=20_000):
        window.open_table(path, pio.sniff_table(path), schema=schema)
    doc = window.document
    doc.set_privacy(neighbours=neighbours, invalid="drop")
    outcome = release_now(window, qtbot)
    panel = window.release_panel
    shown = panel.result_labels["rows"].text()
    assert shown.startswith(outcome.report.custodian_summary(neighbours))
    assert "never exported" in shown
    if neighbours == "add-remove":  # n is private: no row number anywhere beside the release
        assert "rows dropped for 'age'" in shown
        texts = [label.text() for label in (*panel.result_labels.values(), *panel.setup_labels.values())]
        assert not any(number in text for text in texts for number in ("200", "201"))
    else:
        assert "200 of 201 rows counted; 1 dropped for 'age'" in shown
    target = tmp_path / "r.npz"
    with qtbot.waitSignal(window.exportFinished, timeout=30_000):
        assert window.export_release("release", target)
    metadata = json.dumps(pio.load_release_metadata(target))
    assert "dropped" not in metadata and "201" not in metadata  # never in the release file


# -- the real dialogs ------------------------------------------------------------------------------------


class Answering:
    """Stands in for QMessageBox.exec: records the box, clicks the button whose text starts with ``answer``."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, answer: str):
        self.answer = answer
        self.boxes: list[dict[str, object]] = []
        monkeypatch.setattr(QMessageBox, "exec", lambda box: self._exec(box))

    def _exec(self, box: QMessageBox) -> int:
        self.boxes.append({
            "text": box.text(), "informative": box.informativeText(), "default": box.defaultButton().text(),
            "escape": box.escapeButton().text(), "buttons": [b.text() for b in box.buttons()], "icon": box.icon(),
            "detailed": box.detailedText(),
        })
        next(b for b in box.buttons() if b.text().startswith(self.answer)).click()
        return 0


def test_the_spending_question_shows_the_totals_and_defaults_to_cancel(qtbot, monkeypatch, tmp_path):
    parent = QWidget()
    qtbot.addWidget(parent)
    dialogs = Dialogs(parent, Settings())
    check = BudgetCheck(Ledger(tmp_path / "l.sqlite3"), TableKeys("ab" * 32, "cd" * 16),
                        Spending("abab", {"replace": 1.0}, 2, 1), 0.5, "replace")
    answering = Answering(monkeypatch, "Cancel")
    assert not dialogs.ask_spend_budget(check)
    box = answering.boxes[0]
    assert box["text"] == "This table has already spent epsilon 1 (replace) in 2 releases, and 1 seeded test release (not private)."
    assert "spends epsilon 0.5 more (replace)" in box["informative"]
    assert "will have spent epsilon 1.5 (replace)" in box["informative"] and COMPOSITION_TEXT in box["informative"]
    assert box["default"] == box["escape"] == "Cancel"  # as the command line's [y/N]
    assert box["detailed"] == (f"Privacy ledger: {tmp_path / 'l.sqlite3'}\nFingerprint of its rows: {'cd' * 16}\n"
                               f"Fingerprint of its file: {'ab' * 32}")
    answering.answer = "Spend epsilon 0.5 more"
    assert dialogs.ask_spend_budget(check)


def test_a_question_shows_the_warning_icon_when_asked_to(qtbot, monkeypatch):
    parent = QWidget()
    qtbot.addWidget(parent)
    dialogs = Dialogs(parent, Settings())
    answering = Answering(monkeypatch, "Release anyway")
    choices = [("review", "Review the domains"), ("release", "Release anyway"), ("cancel", "Cancel")]
    assert dialogs.choose("domains-from-data", "Release?", "NOT private", choices, warning=True) == "release"
    answering.answer = "Cancel"
    assert dialogs.choose("recover", "Recover?", "text", choices) == "cancel"
    first, second = answering.boxes
    assert first["icon"] == QMessageBox.Icon.Warning and second["icon"] == QMessageBox.Icon.Question
    assert first["default"] == "Review the domains" and first["escape"] == "Cancel"


def test_the_seeded_export_question_quotes_the_warning(qtbot, monkeypatch):
    parent = QWidget()
    qtbot.addWidget(parent)
    dialogs = Dialogs(parent, Settings())
    answering = Answering(monkeypatch, "Cancel")
    assert not dialogs.ask_export_seeded("seeded.npz")
    assert SEEDED_WARNING in answering.boxes[0]["informative"]
    assert answering.boxes[0]["default"] == "Cancel"
    answering.answer = "Export it"
    assert dialogs.ask_export_seeded("seeded.npz")


def test_a_release_after_the_table_was_opened_again_asks_for_the_same_data(window, qtbot, dialogs, tmp_path):
    # a copy of the sample under another name is the same people: the same budget
    copy = tmp_path / "renamed.csv.gz"
    copy.write_bytes(pio.sample_table_path().read_bytes())
    open_sample(window, qtbot)
    release_now(window, qtbot)
    with qtbot.waitSignal(window.tableLoaded, timeout=30_000):
        window.open_table(copy, pio.sniff_table(copy), schema=pio.load_schema(pio.sample_schema_path()))
    assert "already spent epsilon 1 (replace) in 1 release" in spent_before(window, qtbot)
    release_now(window, qtbot)
    assert dialogs.asked.count("spend-budget") == 1


def test_an_export_shows_the_rows_written_and_a_cancel_writes_nothing(window, qtbot, seeded_file, tmp_path, monkeypatch):
    from privelet_gui.io import long_format

    _, plain = seeded_file
    open_release_file(window, qtbot, plain)
    window.export_slab_cells = 1  # a slab per cell
    started = long_format._cells_frame

    def slow(*args):  # each slab takes a while: the cancel arrives while the file is half written
        time.sleep(0.02)
        return started(*args)

    monkeypatch.setattr(long_format, "_cells_frame", slow)
    target = tmp_path / "cells.csv"
    assert window.export_opened_release("csv", target)
    qtbot.waitUntil(lambda: window.task_label.text().startswith("Writing rows: "), timeout=10_000)
    window.cancel_task()
    qtbot.waitUntil(lambda: not window.runner.busy, timeout=10_000)
    assert window.statusBar().currentMessage() == "Export cancelled: cells.csv was not written."
    assert sorted(p.name for p in tmp_path.iterdir()) == ["plain.npz", "seeded.npz"]  # no file, no temporary


def test_a_release_with_domains_from_the_data_is_asked_first_and_declining_spends_nothing(window, qtbot, dialogs):
    open_sample(window, qtbot, with_schema=False)  # every domain inferred from the data
    doc = window.document
    for config in doc.configs:
        doc.set_attribute(config.column, include=config.column in ("age", "sex"))
    wait_for_best_strategy(window, qtbot)
    assert doc.domains_from_data() == ["sex", "age"]  # in the table's column order
    summary = window.release_panel.setup_labels["domains"].text()
    assert summary.startswith("NOT private: the domains of sex and age were taken from the data")
    banner = window.attributes_panel.banner  # the Attributes step says the same, in the same words
    assert banner.text() == "<b>Not private:</b>" + summary.removeprefix("NOT private:").replace("'", "&#x27;")
    for answer, step in (("cancel", "privacy"), ("review", "attributes")):
        window.go_to("privacy")
        dialogs.choices["domains-from-data"] = answer
        assert not window.run_release()
        assert (doc.outcome, Ledger().entries(), window.current_step()) == (None, [], step)
    assert dialogs.asked.count("domains-from-data") == 2
    assert "Releasing anyway spends epsilon 1;" in dialogs.texts["domains-from-data"]
    assert dialogs.warnings["domains-from-data"]  # not private: the warning icon, not a question mark
    # "It is public knowledge" on age: the question names sex alone, and the release file says so
    doc.set_attribute("age", "age: domain confirmed public", domain_from_data=False)
    dialogs.choices["domains-from-data"] = "release"
    outcome = release_now(window, qtbot)
    assert dialogs.texts["domains-from-data"].startswith("NOT private: the domain of sex was taken from the data")
    assert outcome.release.schema.domain_from_data == ("sex",)
    assert [e.epsilon for e in Ledger().entries()] == [1.0]
    # every domain public: nothing asked
    doc.set_attribute("sex", "sex: domain confirmed public", domain_from_data=False)
    assert window.release_panel.setup_labels["domains"].text().startswith("public: every domain")
    dialogs.asked.clear()
    dialogs.spend_answer = True
    release_now(window, qtbot)
    assert "domains-from-data" not in dialogs.asked


# -- the ledger knows a table by its rows; damage is refused; releases at the same time are asked -----------


def test_the_same_rows_in_another_file_are_asked_about_in_the_app(window, qtbot, dialogs, tmp_path):
    open_sample(window, qtbot)
    first = release_now(window, qtbot)
    # the sample's rows in another order, as plain comma-separated CSV with CRLF line ends
    frame = pd.read_csv(pio.sample_table_path(), sep=";", dtype=str, keep_default_na=False)
    copy = tmp_path / "adult-export.csv"
    frame.sample(frac=1, random_state=4).to_csv(copy, index=False, lineterminator="\r\n")
    with qtbot.waitSignal(window.tableLoaded, timeout=30_000):
        window.open_table(copy, pio.sniff_table(copy), schema=pio.load_schema(pio.sample_schema_path()))
    # before counting it is known by its file only, which is new; counting finds its rows
    assert "first release of this table" in spent_before(window, qtbot)
    dialogs.spend_answer = False
    with qtbot.waitSignal(window.releaseCancelled, timeout=60_000):
        assert window.run_release()
    [check] = dialogs.budget_checks
    assert check.spent.entries == (first.ledger_entry,) and check.spent.epsilon == {"replace": 1.0}
    assert "already spent epsilon 1 (replace) in 1 release" in window.release_panel.setup_labels["ledger"].text()
    assert len(Ledger().entries()) == 1


def test_a_damaged_ledger_stops_the_release_in_the_app_and_says_how_to_restore_it(sample_window, qtbot, dialogs):
    window = sample_window
    release_now(window, qtbot)
    ledger = Ledger()
    with sqlite3.connect(ledger.path) as connection:  # the salt replaced: every release would look new
        connection.execute(f"UPDATE meta SET value = '{'0' * 64}' WHERE key = 'salt'")
    connection.close()
    before = ledger.path.read_bytes()
    with qtbot.waitSignal(window.releaseFailed, timeout=60_000):
        assert window.run_release()
    [(title, message)] = dialogs.errors
    assert title == "The release failed" and str(ledger.path) in message and "is damaged" in message
    assert "does not match the ledger's salt" in message and "Restore ledger.sqlite3 from a backup" in message
    assert window.document.outcome is not None and "spend-budget" not in dialogs.asked  # the first release stays
    assert ledger.path.read_bytes() == before
    window.act_ledger.trigger()
    dialog = window.ledger_dialog
    assert dialog.problem.isVisibleTo(dialog) and "is damaged" in dialog.problem.text()
    assert dialog.releases.rowCount() == 0
    dialog.close()
    # the Release step's line, once the table is looked up again, says why it cannot say more
    with qtbot.waitSignal(window.tableLoaded, timeout=30_000):
        window.open_table(pio.sample_table_path(), pio.sniff_table(pio.sample_table_path()),
                          schema=pio.load_schema(pio.sample_schema_path()))
    qtbot.waitUntil(lambda: "cannot look up" in window.release_panel.setup_labels["ledger"].text(), timeout=20_000)
    assert "is damaged" in window.release_panel.setup_labels["ledger"].text()


def test_a_release_recorded_elsewhere_while_the_app_releases_is_asked_about(sample_window, qtbot, dialogs, monkeypatch):
    """The command line records a release of the same table between the app's look-up and its
    record: the app asks (with that release counted) before it draws anything."""
    from privelet_gui.io import ledger as ledger_module

    window = sample_window
    look_up = ledger_module.check_budget
    elsewhere: list[int] = []

    def looked_up_then_released_elsewhere(ledger: Ledger, keys: TableKeys, *args: object, **kwargs: object) -> object:
        check = look_up(ledger, keys, *args, **kwargs)
        if not elsewhere:  # another process, another connection, the same table
            elsewhere.append(Ledger(ledger.path).record(keys, PlannedRelease(0.3, "replace", (), "basic", "exact")))
        return check

    monkeypatch.setattr(ledger_module, "check_budget", looked_up_then_released_elsewhere)
    dialogs.spend_answer = False
    with qtbot.waitSignal(window.releaseCancelled, timeout=60_000):
        assert window.run_release()
    [check] = dialogs.budget_checks
    assert check.spent.entries == tuple(elsewhere) and check.spent.epsilon == {"replace": 0.3}
    assert [e.id for e in Ledger().entries()] == elsewhere and window.document.outcome is None
