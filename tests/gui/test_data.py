"""Data step: tables are read in the worker with progress; the summary; the work functions without Qt."""

from __future__ import annotations

import gzip
import subprocess
import sys
import textwrap

import pytest

from privelet_gui import io as pio
from privelet_gui.engine import Cancelled
from privelet_gui.io import summarize_table
from privelet_gui.io.inference import guess_kind
from privelet_gui.workspace.jobs import classify_file


def test_a_table_is_read_in_the_worker_with_progress(window, qtbot, tmp_path):
    path = tmp_path / "big.csv.gz"
    with gzip.open(path, "wt") as f:
        f.write("age;sex;region\n")
        for i in range(200_000):
            f.write(f"{i % 97};{'FM'[i % 2]};r{i % 13}\n")
    fractions: list[float] = []
    window.runner.progressed.connect(lambda g, fraction, stage: fractions.append(fraction))
    with qtbot.waitSignal(window.tableLoaded, timeout=60_000) as loaded:
        assert window.open_table(path, pio.sniff_table(path))
        assert window.runner.busy  # the GUI thread returned at once
        assert window.data_panel.progress.isVisibleTo(window.data_panel)
    summary = loaded.args[0]
    assert summary.rows == 200_000
    assert not window.data_panel.progress.isVisibleTo(window.data_panel)
    assert fractions and fractions[-1] == 1.0
    age = summary.column("age")
    assert (age.integer, age.minimum, age.maximum, age.distinct, guess_kind(age)) == (True, 0, 96, 97, "ordinal")
    region = summary.column("region")
    assert (region.numeric, region.distinct, guess_kind(region)) == (False, 13, "nominal")
    # The per-column summary is shown.
    model = window.data_panel.summary_model
    assert model.rowCount() == 3
    assert model.index(2, 0).data() == "region" and model.index(2, 3).data() == "13"


def test_codes_written_as_numbers_start_nominal_in_the_data_and_attributes_steps(window, qtbot, tmp_path):
    """Issue 39, item 6: 1/2 for sex and industry codes are nominal from the start (every code
    its own value, in numeric order); a switch to ordinal starts from the numbers' range."""
    from privelet_gui.gui.models.attributes_model import AttributesModel

    path = tmp_path / "people.csv"
    codes = ["170", "180", "770", "3390", "7860", "8680"]
    rows = [f"{20 + i % 50},{1 + i % 2},{codes[i % 6]}" for i in range(60)]
    path.write_text("AGEP,SEX,INDP\n" + "\n".join(rows) + "\n")
    with qtbot.waitSignal(window.tableLoaded, timeout=30_000):
        assert window.open_table(path, pio.sniff_table(path))
    summary_model = window.data_panel.summary_model
    assert [summary_model.index(row, 2).data() for row in range(3)] == ["ordinal", "nominal", "nominal"]
    doc = window.document
    attributes = window.attributes_panel.model
    assert [attributes.index(row, AttributesModel.TYPE).data() for row in range(3)] == ["ordinal", "nominal", "nominal"]
    assert doc.schema()["INDP"].hierarchy.leaves == tuple(codes)
    assert doc.schema()["SEX"].hierarchy.leaves == ("1", "2")
    window.attributes_panel.select("INDP")
    window.attributes_panel.editor.ordinal.click()
    window.attributes_panel.editor.mode.setCurrentIndex(window.attributes_panel.editor.mode.findData("range"))
    assert (doc.config("INDP").lo, doc.config("INDP").hi) == (170, 8680)
    window.attributes_panel.editor.mode.setCurrentIndex(window.attributes_panel.editor.mode.findData("bins"))
    assert doc.config("INDP").bins == (100, 8700, 100)


def test_a_quantity_most_people_have_none_of_starts_ordinal_in_the_data_step(window, qtbot, tmp_path):
    """Capital gains: 0 in most cells and a few amounts besides, each repeated (as in the
    Census-Income KDD table): a quantity, guessed ordinal (bins), while industry codes beside it
    stay nominal (issue 39, item 6, seen in a real window)."""
    path = tmp_path / "people.csv"
    codes = ["170", "180", "770", "3390", "7860", "8680"]
    amounts = ["0"] * 9 + ["114", "2174", "15024", "99999"]
    rows = [f"{codes[i % 6]},{amounts[i % len(amounts)]}" for i in range(6 * 13 * 2)]
    path.write_text("INDP,capital_gains\n" + "\n".join(rows) + "\n")
    with qtbot.waitSignal(window.tableLoaded, timeout=30_000):
        assert window.open_table(path, pio.sniff_table(path))
    summary_model = window.data_panel.summary_model
    assert [summary_model.index(row, 2).data() for row in range(2)] == ["nominal", "ordinal"]
    assert window.document.schema()["capital_gains"].bins is not None


def test_the_missing_value_hint_names_one_column_in_the_singular(window, qtbot, tmp_path):
    """"The column income holds numbers and 50000+", not "The columns income hold" (seen in a
    real window on Census-Income KDD); two columns keep the plural."""
    path = tmp_path / "people.csv"
    path.write_text("age,income,hours\n" + "\n".join(f"{20 + i},{'N' if i % 3 else 1000 * i},{i}" for i in range(30)) + "\n")
    with qtbot.waitSignal(window.tableLoaded, timeout=30_000):
        assert window.open_table(path, pio.sniff_table(path))
    hint = window.data_panel.missing_hint
    assert hint.isVisibleTo(window.data_panel) and "The column income holds numbers and <b>N</b>" in hint.label.text()
    assert "that column then stays numeric" in hint.label.text()
    path.write_text("age,income,hours\n" + "\n".join(f"{20 + i},{'N' if i % 3 else 1000 * i},{'N' if i % 2 else i}"
                                                     for i in range(30)) + "\n")
    with qtbot.waitSignal(window.tableLoaded, timeout=30_000):
        assert window.open_table(path, pio.sniff_table(path))
    assert "The columns income, hours hold numbers and <b>N</b>" in hint.label.text()


def test_reading_options_can_be_changed_keeping_the_settings(sample_window, qtbot, dialogs):
    window = sample_window
    window.document.set_epsilon(0.42)
    chosen = pio.TableOptions(delimiter=";", encoding="latin-1", header=True, format="csv")
    dialogs.import_options = lambda path, current=None: chosen
    with qtbot.waitSignal(window.tableLoaded, timeout=30_000):
        window.data_panel.options_button.click()
    assert window.document.table_options == chosen
    assert window.document.epsilon == 0.42  # the setup survived
    assert window.document.schema() == pio.load_schema(pio.sample_schema_path())


def test_summarize_table_needs_no_qt_and_cancels_between_chunks(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("a,b\n" + "".join(f"{i},{i % 3}\n" for i in range(50)) + ",\n")
    summary = summarize_table(path, pio.TableOptions(delimiter=","))
    a, b = summary.columns
    assert summary.rows == 51 and a.missing == 1 and b.missing == 1
    assert a.values[:3] == ("0", "1", "2")  # natural order, not text order
    with pytest.raises(Cancelled):
        summarize_table(path, None, None, lambda: True)


def test_dropped_files_are_classified_by_content(tmp_path):
    (tmp_path / "h.csv").write_text("a;x;*\nb;x;*\n")
    (tmp_path / "t.csv").write_text("a;b\n1;2\n")
    (tmp_path / "h.json").write_text('{"*": ["a", "b"]}')
    (tmp_path / "p.json").write_text('{"format": "privelet-studio-project", "version": 1}')
    assert classify_file(tmp_path / "h.csv") == "hierarchy"
    assert classify_file(tmp_path / "t.csv") == "table"
    assert classify_file(tmp_path / "h.json") == "hierarchy"
    assert classify_file(tmp_path / "p.json") == "project"
    assert classify_file(tmp_path / "x.privelet") == "project"
    assert classify_file(pio.sample_table_path()) == "table"
    assert classify_file(pio.sample_hierarchy_paths()["occupation"]) == "hierarchy"


def test_work_functions_and_project_files_import_without_qt():
    blocker = textwrap.dedent(
        """
        import importlib.abc, sys

        class BlockQt(importlib.abc.MetaPathFinder):
            def find_spec(self, name, path=None, target=None):
                if name.split(".")[0] in {"PySide6", "shiboken6", "pyqtgraph"}:
                    raise ImportError(f"{name} is blocked")
                return None

        sys.meta_path.insert(0, BlockQt())
        import privelet_gui.workspace, privelet_gui.engine.model.builders, privelet_gui.io.project
        assert not [m for m in sys.modules if m.startswith(("PySide6", "shiboken6"))]
        print("ok")
        """
    )
    result = subprocess.run([sys.executable, "-c", blocker], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"
