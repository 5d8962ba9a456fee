"""The app on a real-looking table: texts meaning missing from the reading options to the release,
and code labels from a data dictionary to the tree, the workbench and the export."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QAbstractItemView, QLineEdit

from privelet_gui import io as pio
from privelet_gui.gui.models.hierarchy_model import HierarchyModel
from privelet_gui.gui.models.table_models import ColumnSummaryModel
from privelet_gui.gui.panels.import_dialog import ImportDialog
from tests.acs_like import write_acs_like

from .conftest import wait_for_best_strategy

N = pio.TableOptions(delimiter=",", missing_values=("N",))


@pytest.fixture
def acs(tmp_path):
    return write_acs_like(tmp_path / "acs")


def open_acs(window: Any, qtbot: Any, path: Path, options: Any) -> None:
    with qtbot.waitSignal(window.tableLoaded, timeout=20_000):
        assert window.open_table(path, options)


def summary_cell(window: Any, column: str, header: str) -> str:
    model = window.data_panel.summary_model
    row = next(r for r in range(model.rowCount()) if model.index(r, 0).data() == column)
    return model.index(row, ColumnSummaryModel.HEADERS.index(header)).data()


def pick_missing(editor: Any, choice: str, value: str | None = None) -> None:
    editor.missing.setCurrentIndex(editor.missing_index(choice, value))
    editor.missing.activated.emit(editor.missing.currentIndex())


def test_the_import_dialog_names_texts_meaning_missing(qtbot, acs):
    dialog = ImportDialog(acs.table)
    qtbot.addWidget(dialog)
    assert dialog.options().missing_values == ()
    assert dialog.use_suggestion.isVisibleTo(dialog) and "'N'" in dialog.use_suggestion.text()
    assert "INDP" in dialog.suggestion.text()
    dialog.use_suggestion.click()
    assert dialog.missing.text() == "N" and dialog.options().missing_values == ("N",)
    assert not dialog.suggestion.isVisibleTo(dialog)  # nothing left to propose
    model = dialog.model
    row, column = 1, list(model.frame.columns).index("INDP")
    cell = model.index(row, column)
    assert cell.data() == "N" and cell.data(Qt.ItemDataRole.ForegroundRole) is not None  # greyed, like empty cells
    dialog.missing.setText("N, N,")
    assert dialog.options().missing_values == ("N",)


def test_the_data_step_counts_missing_cells_and_points_at_n(window, qtbot, acs):
    open_acs(window, qtbot, acs.table, pio.TableOptions(delimiter=","))
    panel = window.data_panel
    assert summary_cell(window, "PINCP", "Looks like") == "numbers and 'N'"
    assert panel.missing_hint.isVisibleTo(panel) and "<b>N</b>" in panel.missing_hint.label.text()
    open_acs(window, qtbot, acs.table, N)
    assert summary_cell(window, "PINCP", "Missing") == "3, all 'N'"
    assert summary_cell(window, "PINCP", "Looks like") == "integer"  # 22000.0 is a whole number
    assert summary_cell(window, "NOC", "Looks like") == "integer"
    assert not panel.missing_hint.isVisibleTo(panel)
    assert "missing: 'N' and empty cells" in panel.file_label.text()


def test_each_attribute_says_what_missing_cells_count_as(window, qtbot, acs):
    open_acs(window, qtbot, acs.table, N)
    doc = window.document
    panel = window.attributes_panel
    window.go_to("attributes")
    doc.set_attribute("INDP_CAT", include=True, kind="nominal")
    panel.select("INDP_CAT")
    editor = panel.editor
    assert editor.missing_label.text() == "Missing (4, all 'N'):"
    assert "A value of their own: 'N', a leaf of its own" in editor.missing.currentText()
    pick_missing(editor, "drop")
    assert doc.schema()["INDP_CAT"].drop_missing
    pick_missing(editor, "refuse")
    assert "missing cell" in doc.step_status("attributes").message
    pick_missing(editor, "value", "0")
    assert doc.schema()["INDP_CAT"].missing == "0"
    window.act_undo.trigger()
    assert not doc.schema()["INDP_CAT"].drop_missing and doc.schema()["INDP_CAT"].missing is None
    # its own texts meaning missing: none at all, so N becomes a value of the column
    assert not editor.markers.isEnabled() and editor.markers.text() == "N"
    editor.own_markers.setChecked(True)
    assert doc.config("INDP_CAT").missing_values == ("N",) and editor.markers.isEnabled()
    editor.markers.setText("")
    editor.markers.editingFinished.emit()
    assert doc.config("INDP_CAT").missing_values == ()
    assert doc.column_summary("INDP_CAT").missing == 0 and not editor.missing.isVisibleTo(editor)
    editor.own_markers.setChecked(False)
    assert doc.config("INDP_CAT").missing_values is None and editor.markers.text() == "N"


def test_dropped_rows_are_reported_after_the_release(window, qtbot, acs):
    open_acs(window, qtbot, acs.table, N)
    doc = window.document
    for config in doc.configs:
        doc.set_attribute(config.column, include=config.column in ("SEX", "INDP_CAT"))
    doc.set_attribute("INDP_CAT", kind="nominal")
    doc.set_missing("INDP_CAT", "drop")
    window.dialogs.choices["domains-from-data"] = "release"  # the domains came from the data
    with qtbot.waitSignal(window.releaseFinished, timeout=30_000):
        wait_for_best_strategy(window, qtbot)
        assert window.run_release()
    assert doc.outcome.report.missing_dropped == {"SEX": 0, "INDP_CAT": 4}
    assert "4 dropped as missing in 'INDP_CAT'" in window.release_panel.result_labels["rows"].text()


def test_labels_from_a_data_dictionary_to_the_tree_workbench_and_export(window, qtbot, acs, dialogs, tmp_path):
    open_acs(window, qtbot, acs.table, N)
    doc = window.document
    for config in doc.configs:
        doc.set_attribute(config.column, include=config.column in ("SEX", "INDP_CAT"))
    doc.set_attribute("SEX", kind="nominal")
    doc.set_attribute("INDP_CAT", kind="nominal")
    window.go_to("hierarchies")
    panel = window.hierarchy_panel
    assert panel.set_attribute("INDP_CAT")
    dialogs.open_answer = acs.dictionary
    panel.act_import_labels.trigger()  # the dictionary's entry for the attribute's column
    model = panel.model
    assert model.columnCount() == 2
    manufacturing = model.find("4")
    assert model.index_of(manufacturing, HierarchyModel.LABEL).data() == "MFG: Manufacturing"
    assert model.index_of(manufacturing, HierarchyModel.CODE).data() == "4"
    assert "Labelled 6 codes from data_dictionary.json (data dictionary)" in panel.labels_note.text()
    assert doc.schema()["INDP_CAT"].display_labels[2] == "MFG: Manufacturing"

    # F2 on a value edits its label, never its code
    panel.select_nodes([manufacturing])
    panel.view.setFocus()
    panel.act_rename.trigger()
    assert panel.view.state() == QAbstractItemView.State.EditingState
    assert panel.view.currentIndex().column() == HierarchyModel.LABEL
    editor = panel.view.findChild(QLineEdit)
    assert editor is not None and editor.text() == "MFG: Manufacturing"
    editor.selectAll()
    qtbot.keyClicks(editor, "Manufacturing")
    qtbot.keyClick(editor, Qt.Key.Key_Return)
    qtbot.waitUntil(lambda: manufacturing.display == "Manufacturing", timeout=2000)
    assert manufacturing.label == "4" and doc.schema()["INDP_CAT"].labels[2] == "4"
    assert not model.flags(model.index_of(manufacturing)) & Qt.ItemFlag.ItemIsEditable  # the code is the data's
    panel.filter.setText("manufact")
    assert panel.proxy.rowCount(panel.proxy.index(0, 0)) == 1  # the filter matches labels
    panel.filter.clear()

    # the workbench shows the labels, the export has a label column
    dialogs.open_answer = acs.dictionary
    assert panel.set_attribute("SEX")
    assert panel.import_labels(acs.dictionary) == 2
    dialogs.choices["domains-from-data"] = "release"  # the flat trees were built from the data's values
    with qtbot.waitSignal(window.releaseFinished, timeout=30_000):
        wait_for_best_strategy(window, qtbot)
        assert window.run_release()
    picker = window.release_panel.workbench.picker("INDP_CAT")
    texts = [picker.model().item(0).child(row).text() for row in range(picker.model().item(0).rowCount())]
    assert "Manufacturing  [4]" in texts and "AGR: Agriculture, Forestry, Fishing and Hunting  [0]" in texts
    picker.set_node("4")
    assert picker.currentText() == "Manufacturing  [4]"
    target = tmp_path / "release.csv"
    with qtbot.waitSignal(window.exportFinished, timeout=30_000):
        assert window.export_release("csv", target, force=True)
    frame = pd.read_csv(target, dtype=str)
    assert list(frame.columns)[:4] == ["SEX", "SEX_label", "INDP_CAT", "INDP_CAT_label"]
    assert ["1", "Male", "4", "Manufacturing"] in frame.iloc[:, :4].values.tolist()

    # a reworded label after the release: the release stays, and takes the new label
    window.go_to("hierarchies")
    assert panel.set_attribute("INDP_CAT")
    model.set_display_label(manufacturing, "MFG")
    assert not doc.release_is_stale() and not window.release_panel.stale.isVisibleTo(window.release_panel)
    assert doc.outcome.release.schema["INDP_CAT"].hierarchy.display_label("4") == "MFG"


def test_a_group_keeps_its_rename_and_can_be_labelled(window, qtbot, acs):
    open_acs(window, qtbot, acs.table, N)
    doc = window.document
    doc.set_attribute("INDP", include=True, kind="nominal")
    window.go_to("hierarchies")
    panel = window.hierarchy_panel
    assert panel.set_attribute("INDP")
    assert panel.import_hierarchy(acs.hierarchy)
    assert panel.import_labels(acs.labelled) == 5  # the labelled twin: category names for their codes
    model = panel.model
    group = model.find("4")
    assert group.display == "MFG" and model.flags(model.index_of(group)) & Qt.ItemFlag.ItemIsEditable
    assert model.setData(model.index_of(group), "Manufacturing")  # a group's code is the custodian's
    assert group.label == "Manufacturing" and group.display == "MFG"
    assert model.setData(model.index_of(group, HierarchyModel.LABEL), "")  # no label any more
    assert group.display is None
    assert not model.setData(model.index_of(model.find("3390")), "9999")  # a value's code: refused


def test_the_hierarchy_step_adds_the_value_for_missing_cells_an_imported_tree_lacks(window, qtbot, dialogs, acs):
    open_acs(window, qtbot, acs.table, N)
    doc = window.document
    doc.set_attribute("INDP", include=True, kind="nominal")
    window.go_to("hierarchies")
    panel = window.hierarchy_panel
    assert panel.set_attribute("INDP") and panel.import_hierarchy(acs.hierarchy)
    texts = [panel.problems.item(row).text() for row in range(panel.problems.count())]
    assert texts == ["'N', the value missing cells count as, is not in the hierarchy: add it, or drop their rows "
                     "(Attributes step, \"Missing\")"]
    assert doc.step_status("attributes").state == "error"  # what it says points here, and here it is
    assert panel.add_missing_grouped.isVisibleTo(panel) and panel.add_missing.text().startswith("Add the 1 ")
    panel.add_missing_grouped.click()
    assert doc.schema()["INDP"].hierarchy.leaf_range("N (group)") == (6, 7)
    assert panel.problems.item(0).text() == "No problems: this hierarchy is ready."
    assert not panel.add_missing.isVisibleTo(panel)
    # the dictionary has no code labels for INDP: the custodian is asked for an entry, here the
    # categories, whose codes are the groups of this tree
    dialogs.item_answers["labels-entry"] = "INDP_CAT"
    assert panel.import_labels(acs.dictionary) == 7  # five groups, the leaf for missing cells and its group
    assert panel.model.find("N").display.startswith("N/A (less than 16")
    assert panel.model.find("N (group)").display.startswith("N/A (less than 16") and \
        panel.model.find("N (group)").display.endswith(" (group)")
    assert dialogs.texts["labels-entry"].startswith("data_dictionary.json is a data dictionary with no code labels for 'INDP'")
    assert dialogs.items["labels-entry"] == ["PUMA", "SEX", "INDP_CAT"]  # a list to pick from, not free text
    assert dialogs.item_current["labels-entry"] == "INDP_CAT"  # offered first: it labels this tree's codes
    assert panel.model.find("4").display == "MFG: Manufacturing" and panel.model.find("4").label == "4"


def ticks(axis: Any) -> list[str]:
    """The texts an axis of categories shows."""
    return [text for _, text in axis._tickLevels[0]]


def test_labels_show_wherever_a_code_is_shown(window, qtbot, acs, dialogs, tmp_path):
    """Issue 39, item 5: the charts' axes, the workbench's kept queries, the workload's level
    list show the codes' labels (the codes stay in the tables beside them)."""
    open_acs(window, qtbot, acs.table, N)
    doc = window.document
    for config in doc.configs:
        doc.set_attribute(config.column, include=config.column in ("SEX", "INDP"))
    doc.set_attribute("INDP", kind="nominal")
    doc.set_missing("INDP", "drop")
    window.go_to("hierarchies")
    panel = window.hierarchy_panel
    assert panel.set_attribute("INDP") and panel.import_hierarchy(acs.hierarchy)  # INDP codes -> categories
    dialogs.item_answers["labels-entry"] = "INDP_CAT"
    assert panel.import_labels(acs.dictionary) == 5  # the five categories
    assert panel.set_attribute("SEX") and panel.import_labels(acs.dictionary) == 2
    # the workload's level list
    window.go_to("privacy")
    combo = window.privacy_panel.workload_box.grain_widgets["INDP"]
    assert combo.itemText(1) == "hierarchy level 2: 5 groups (AGR: Agriculture, Forestry, Fishing and Hunting, CON: Construction, ...)"
    # the charts
    dialogs.choices["domains-from-data"] = "release"
    with qtbot.waitSignal(window.releaseFinished, timeout=30_000):
        wait_for_best_strategy(window, qtbot)
        assert window.run_release()
    preview = window.release_panel.preview
    preview.marginal_attribute.setCurrentText("SEX")
    qtbot.waitUntil(lambda: preview.marginal.table[0][:1] == ["SEX"], timeout=10_000)
    assert ticks(preview.marginal.plot_item.getAxis("bottom")) == ["Male", "Female"]
    header, rows = preview.marginal.table
    assert header == ["SEX", "SEX_label", "true_count", "noisy_count"] and [r[:2] for r in rows] == [["1", "Male"], ["2", "Female"]]
    preview.heat_rows.setCurrentText("SEX")
    preview.heat_columns.setCurrentText("INDP")
    qtbot.waitUntil(lambda: preview.heatmap.table[0][:2] == ["SEX", "SEX_label"], timeout=10_000)
    assert ticks(preview.heatmap.plot_item.getAxis("bottom")) == ["Male", "Female"]
    assert preview.heatmap.table[0] == ["SEX", "SEX_label", "INDP", "noisy_count"]  # INDP's values have no labels
    # the workbench's kept queries
    bench = window.release_panel.workbench
    qtbot.waitUntil(lambda: bench.last_answer is not None, timeout=10_000)
    bench.picker("SEX").set_node("2")
    bench.picker("INDP").set_node("4")
    bench.keep()
    assert bench.table.columnCount() == 5  # the labelled query stands in for the codes, not beside them
    item = bench.table.item(0, 0)
    assert item.text() == "SEX=Female, INDP=MFG: Manufacturing" and item.toolTip() == "Codes: SEX=2, INDP=4"
    assert "SEX=Female, INDP=MFG: Manufacturing" in bench.answer_label.text()
    exported = pd.read_csv(bench.export_csv(tmp_path / "queries.csv"), dtype=str)
    assert exported[["query", "query_labels"]].values.tolist() == [["SEX=2, INDP=4", "SEX=Female, INDP=MFG: Manufacturing"]]
