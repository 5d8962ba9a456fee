"""Attributes step: domains, data checks, the not-private warning, live factors, undo."""

from __future__ import annotations

import json

from PySide6.QtCore import Qt

from privelet_gui import io as pio
from privelet_gui.engine import NumericBins, paper_factors
from privelet_gui.gui.models.attributes_model import AttributesModel
from privelet_gui.workspace import MAX_CELLS

from .conftest import wait_for_best_strategy


def test_ordinal_domains_and_out_of_range_checks(sample_window):
    window = sample_window
    doc = window.document
    panel = window.attributes_panel
    editor = panel.editor
    panel.select("age")
    editor.hi.setValue(80)  # the data runs to 90
    status = doc.step_status("attributes")
    assert status.state == "error" and "outside the domain" in status.message
    assert "clamp or drop" in editor.issues.text()
    editor.out_of_range.setCurrentIndex(editor.out_of_range.findData("clamp"))
    assert doc.step_status("attributes").state == "warning"
    assert doc.schema()["age"].out_of_range == "clamp"
    window.act_undo.trigger()
    window.act_undo.trigger()
    assert (doc.config("age").hi, doc.config("age").out_of_range) == (90, "error")
    assert doc.step_status("attributes").state == "done"

    editor.mode.setCurrentIndex(editor.mode.findData("bins"))
    editor.start.setValue(0)
    editor.stop.setValue(100)
    editor.bin_width.setValue(10)
    age = doc.schema()["age"]
    assert age.bins == NumericBins(0, 100, 10) and age.size == 10
    assert "10 bins" in editor.bins_count.text()

    editor.mode.setCurrentIndex(editor.mode.findData("values"))
    editor.values.setPlainText("\n".join(str(a) for a in range(17, 91)))
    editor.apply_values.click()
    assert doc.schema()["age"].size == 74


def test_live_factors_follow_the_engine(sample_window):
    doc = sample_window.document
    model = sample_window.attributes_panel.model
    for row, config in enumerate(doc.configs):
        if not config.include:
            continue
        attribute = doc.schema()[config.name]
        p, h = paper_factors(attribute)
        assert model.index(row, AttributesModel.SIZE).data() == f"{attribute.size:,}"
        assert model.index(row, AttributesModel.P).data() == str(p)
        assert model.index(row, AttributesModel.H).data() == f"{h:g}"
        if config.kind == "nominal":
            assert model.index(row, AttributesModel.HEIGHT).data() == str(attribute.hierarchy.height)
    # Editing a hierarchy updates h and P(A) at once.
    occupation = doc.config("occupation").hierarchy
    row = [c.column for c in doc.configs].index("occupation")
    first_group = occupation.root.children[0]
    occupation.add_group([first_group.children[0]], "Deeper")
    assert model.index(row, AttributesModel.HEIGHT).data() == "4"


def test_data_derived_domains_are_flagged_until_confirmed(window, qtbot):
    with qtbot.waitSignal(window.tableLoaded, timeout=30_000):
        window.open_table(pio.sample_table_path(), pio.sniff_table(pio.sample_table_path()))
    doc = window.document
    panel = window.attributes_panel
    assert doc.schema().domain_from_data  # every inferred domain is flagged
    panel.select("sex")
    assert panel.editor.private_banner.isVisibleTo(panel.editor)
    assert doc.step_status("attributes").state in ("warning", "error")
    panel.editor.private_banner.button.click()  # "It is public knowledge"
    assert not doc.config("sex").domain_from_data
    assert not panel.editor.private_banner.isVisibleTo(panel.editor)
    window.act_undo.trigger()
    assert doc.config("sex").domain_from_data


def test_switching_a_data_domain_to_nominal_keeps_it_not_private(window, qtbot, tmp_path):
    """Issue 39, item 1: Type Ordinal -> Nominal builds a flat tree of the observed values, which
    is still a domain taken from the data: flagged in the table, the banners, the Release step
    and the saved project."""
    with qtbot.waitSignal(window.tableLoaded, timeout=30_000):
        window.open_table(pio.sample_table_path(), pio.sniff_table(pio.sample_table_path()))
    doc = window.document
    panel = window.attributes_panel
    row = [c.column for c in doc.configs].index("age")
    privacy = panel.model.index(row, AttributesModel.PRIVACY)
    assert privacy.data() == "from the data: not private" and doc.config("age").kind == "ordinal"
    panel.select("age")
    panel.editor.nominal.click()  # the Type radio button
    config = doc.config("age")
    assert config.kind == "nominal" and len(config.hierarchy.leaves()) == 72
    assert privacy.data() == "from the data: not private"
    assert panel.editor.private_banner.isVisibleTo(panel.editor) and panel.banner.isVisibleTo(panel)
    assert "age" in window.release_panel.setup_labels["domains"].text() and "NOT private" in window.release_panel.setup_labels["domains"].text()
    path = tmp_path / "p.privelet"
    assert window.save_project(path)
    saved = json.loads(path.read_text(encoding="utf-8"))
    (age,) = [a for a in saved["schema"]["attributes"] if a["name"] == "age"]
    assert age["type"] == "nominal" and age["domain_from_data"] is True


def test_too_large_a_matrix_blocks_the_release(sample_window):
    doc = sample_window.document
    model = sample_window.attributes_panel.model
    for row, config in enumerate(doc.configs):
        if not config.include:
            model.setData(model.index(row, AttributesModel.INCLUDE), Qt.CheckState.Checked.value, Qt.ItemDataRole.CheckStateRole)
    assert doc.schema().size > MAX_CELLS
    status = doc.step_status("attributes")
    assert status.state == "error" and "cells" in status.message
    assert not sample_window.release_panel.run_button.isEnabled()
    assert "too large" in sample_window.attributes_panel.size_label.text()


def test_empty_cells_can_be_mapped_to_a_value(window, qtbot, tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("sex,age\nF,30\n,\nM,52\nF,41\n")  # three ages: two values would be a code (1/2)
    with qtbot.waitSignal(window.tableLoaded, timeout=10_000):
        window.open_table(path, pio.sniff_table(path))
    doc = window.document
    # Text: like io.infer_schema, empty cells become the value "(missing)".
    sex = doc.schema()["sex"]
    assert sex.missing == "(missing)" and "(missing)" in sex.hierarchy.leaves
    # Numbers: a value of their own after the last one, until the custodian says otherwise.
    age = doc.schema()["age"]
    assert doc.column_summary("age").missing == 1
    assert (age.missing, age.missing_at_end, age.labels[-2:]) == ("(missing)", True, ("52", "(missing)"))
    panel = window.attributes_panel
    panel.select("age")
    editor = panel.editor
    assert editor.missing.isVisibleTo(editor) and editor.missing_label.text() == "Missing (1, all empty):"
    editor.missing.setCurrentIndex(editor.missing_index("refuse"))
    editor.missing.activated.emit(editor.missing.currentIndex())
    assert doc.schema()["age"].missing is None
    assert "missing cell" in doc.step_status("attributes").message
    editor.missing.setCurrentIndex(editor.missing_index("value", "30"))
    editor.missing.activated.emit(editor.missing.currentIndex())
    assert doc.schema()["age"].missing == "30" and doc.schema()["age"].size == 23  # 30..52, no value of its own
    assert "missing cell" not in doc.step_status("attributes").message
    window.dialogs.choices["domains-from-data"] = "release"  # the domains came from the data
    with qtbot.waitSignal(window.releaseFinished, timeout=30_000):
        wait_for_best_strategy(window, qtbot)
        assert window.run_release()
    assert window.release_panel.result_labels["rows"].text().startswith("every row was counted")


def test_excluding_everything_is_reported(sample_window):
    doc = sample_window.document
    for config in list(doc.included()):
        doc.set_attribute(config.column, include=False)
    assert doc.schema() is None
    assert doc.step_status("attributes").message == "include at least one attribute"
    assert doc.step_status("privacy").state == "todo"


def test_the_missing_choice_shows_its_whole_text(window, qtbot, tmp_path):
    """Switching a column with missing cells from ordinal to nominal: the Missing drop-down's
    choice ("A value of their own: 'N', a leaf of its own in the hierarchy") was cut at the
    width the shorter ordinal text had given it (seen in a real window on ACS data)."""
    path = tmp_path / "t.csv"
    path.write_text("MSP,age\n" + "\n".join(f"{'N' if i % 4 == 0 else 1 + i % 6},{20 + i}" for i in range(40)) + "\n")
    with qtbot.waitSignal(window.tableLoaded, timeout=10_000):
        window.open_table(path, pio.TableOptions(delimiter=",", missing_values=("N",)))
    window.go_to("attributes")
    panel = window.attributes_panel
    panel.select("MSP")
    editor = panel.editor
    assert window.document.config("MSP").kind == "ordinal" and editor.missing.isVisible()
    qtbot.waitExposed(editor.missing)
    editor.nominal.click()
    assert editor.missing.currentText() == "A value of their own: 'N', a leaf of its own in the hierarchy"
    qtbot.waitUntil(lambda: editor.missing.width() >= editor.missing.sizeHint().width(), timeout=2000)
    text_width = editor.missing.fontMetrics().horizontalAdvance(editor.missing.currentText())
    assert editor.missing.width() > text_width
