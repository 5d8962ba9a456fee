"""The Release step's "Save report..." and "Save script...": written from the release file, in the worker."""

from __future__ import annotations

import threading

import pandas as pd

from privelet_gui import io as pio
from privelet_gui.engine import Hierarchy, NominalAttribute, OrdinalAttribute, Schema
from privelet_gui.gui import main_window
from privelet_gui.io.choices import release_choices
from tests.gui.conftest import wait_for_best_strategy


def test_save_report_and_script_write_their_files_off_the_ui_thread(window, dialogs, qtbot, tmp_path, monkeypatch):
    schema = Schema([OrdinalAttribute.integer_range("age", 0, 9), NominalAttribute("sex", Hierarchy.flat(["F", "M"]))])
    table = tmp_path / "people.csv"
    pd.DataFrame([(a % 10, "FM"[a % 3 == 0]) for a in range(400)], columns=["age", "sex"]).to_csv(table, index=False)
    with qtbot.waitSignal(window.tableLoaded, timeout=30_000):
        assert window.open_table(table, pio.sniff_table(table), schema=schema)
    wait_for_best_strategy(window, qtbot)
    with qtbot.waitSignal(window.releaseFinished, timeout=60_000):
        assert window.run_release()

    targets = {"release": tmp_path / "people.npz", "report": tmp_path / "people-report.html",
               "script": tmp_path / "people-redo.sh"}
    monkeypatch.setattr(dialogs, "save_path", lambda kind, title=None, suggested="": targets[kind])
    dialogs.text_answer = "People of the village"
    threads: list[bool] = []
    write = main_window.write_release_report

    def recording(*args, **kwargs):
        threads.append(threading.current_thread() is threading.main_thread())
        return write(*args, **kwargs)

    monkeypatch.setattr(main_window, "write_release_report", recording)
    panel = window.release_panel
    assert panel.save_report.isEnabled() and panel.save_script.isEnabled()
    # not saved yet: the release file is written first (the report gives its checksum), then the report
    with qtbot.waitSignals([window.exportFinished, window.exportFinished], timeout=60_000):
        panel.save_report.click()
    qtbot.waitUntil(lambda: targets["report"].exists(), timeout=30_000)
    assert targets["release"].exists() and threads == [False]
    text = targets["report"].read_text(encoding="utf-8")
    assert "Release report: People of the village" in text and "people.csv" not in text

    with qtbot.waitSignal(window.exportFinished, timeout=30_000):
        panel.save_script.click()
    script = targets["script"].read_text()
    # the app knows where its table is: the script names it, though the release file does not record it
    assert f"TABLE={table.resolve()}" in script and "PRIVELET_SCHEMA_END" in script
    choices = release_choices(pio.load_release_metadata(targets["release"]))
    assert choices is not None and choices.table is None and choices.epsilon == window.document.epsilon
    assert not dialogs.errors
