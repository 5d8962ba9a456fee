"""The whole flow on the bundled sample, driven through the window as a user would."""

from __future__ import annotations

import math

import pandas as pd
from PySide6.QtCore import Qt

from privelet_gui import io as pio
from privelet_gui.engine import Z95, NominalAttribute, OrdinalAttribute, paper_bound, recommend_sa, variance_model
from privelet_gui.formatting import table_is_scientific
from privelet_gui.gui.models.attributes_model import AttributesModel
from privelet_gui.qt.widgets import fmt_number
from tests.gui.conftest import open_sample

KEEP = ("sex", "age", "race", "marital-status", "education", "occupation")


def row_of(window, column: str) -> int:
    return [c.column for c in window.document.configs].index(column)


def test_whole_flow_on_the_sample(window, qtbot, tmp_path, dialogs):
    doc = window.document

    # -- 1. load (no schema: everything inferred from the data, and flagged as not private)
    summary = open_sample(window, qtbot, with_schema=False)
    assert summary.rows == 30162
    assert [c.name for c in summary.columns][:3] == ["sex", "age", "race"]
    assert doc.step_status("data").state == "done"
    age = doc.config("age")
    assert (age.kind, age.mode, age.lo, age.hi, age.domain_from_data) == ("ordinal", "range", 17, 90, True)
    assert doc.config("occupation").kind == "nominal"

    # -- 2. attributes: include only some columns, set types and a public age range
    window.go_to("attributes")
    panel = window.attributes_panel
    model = panel.model
    for config in list(doc.configs):  # the default selection suits the table's size; ask for these
        index = model.index(row_of(window, config.column), AttributesModel.INCLUDE)
        state = Qt.CheckState.Checked if config.column in KEEP else Qt.CheckState.Unchecked
        if config.include != (config.column in KEEP):
            assert model.setData(index, state.value, Qt.ItemDataRole.CheckStateRole)
    assert [c.column for c in doc.included()] == list(KEEP)
    race_type = model.index(row_of(window, "race"), AttributesModel.TYPE)
    assert model.setData(race_type, "ordinal", Qt.ItemDataRole.EditRole)
    assert isinstance(doc.schema()["race"], OrdinalAttribute)
    assert model.setData(race_type, "nominal", Qt.ItemDataRole.EditRole)
    assert isinstance(doc.schema()["race"], NominalAttribute)
    panel.select("age")
    assert panel.editor._column == "age"
    panel.editor.lo.setValue(0)
    panel.editor.hi.setValue(99)
    assert doc.schema()["age"].size == 100
    assert doc.config("age").domain_from_data  # edited from the data's 17..90: still taken from the data
    assert panel.editor.private_banner.isVisibleTo(panel.editor)
    panel.editor.private_banner.button.click()  # "It is public knowledge": the custodian's 0..99
    assert not doc.config("age").domain_from_data
    assert model.index(row_of(window, "age"), AttributesModel.PRIVACY).data() == "public"
    assert "not private" in model.index(row_of(window, "sex"), AttributesModel.PRIVACY).data()
    assert panel.banner.isVisibleTo(panel)  # the visible "not private" warning
    # Live |A|, h, P(A), H(A): the engine's numbers.
    occ_row = row_of(window, "occupation")
    assert model.index(occ_row, AttributesModel.SIZE).data() == "14"

    # -- 3. hierarchies: import the public ARX hierarchy, drag a leaf, undo
    window.go_to("hierarchies")
    hp = window.hierarchy_panel
    assert hp.set_attribute("occupation")
    assert hp.import_hierarchy(pio.sample_hierarchy_paths()["occupation"])
    imported = doc.config("occupation").hierarchy.to_hierarchy()
    assert imported.height == 3 and imported.size == 14
    assert not doc.config("occupation").domain_from_data
    assert model.index(occ_row, AttributesModel.HEIGHT).data() == "3"
    assert model.index(occ_row, AttributesModel.P).data() == str(imported.rho)
    tree = hp.model
    groups = [n for n in tree.root.children if n.is_group]
    source_group, target_group = groups[0], groups[-1]
    leaf = source_group.children[0]
    mime = hp.proxy.mimeData([hp.proxy_index(leaf)])
    assert hp.proxy.dropMimeData(mime, Qt.DropAction.MoveAction, 0, 0, hp.proxy_index(target_group))
    moved = doc.config("occupation").hierarchy.to_hierarchy()
    assert moved != imported
    assert moved.leaf_range(target_group.label)[0] == moved.leaves.index(leaf.label)
    assert doc.schema()["occupation"].hierarchy == moved  # the document follows the tree
    window.act_undo.trigger()  # Edit > Undo, as Ctrl+Z would
    assert doc.config("occupation").hierarchy.to_hierarchy() == imported
    window.act_redo.trigger()
    assert doc.config("occupation").hierarchy.to_hierarchy() == moved
    window.act_undo.trigger()
    for column in ("sex", "race", "marital-status", "education"):
        path = pio.sample_hierarchy_paths()[column]
        assert hp.set_attribute(column) and hp.import_hierarchy(path)
    assert doc.step_status("hierarchies").state == "done"
    assert doc.step_status("attributes").state == "done"  # all domains public now

    # -- 4. privacy: epsilon and S_A; the displayed bound is the engine's
    window.go_to("privacy")
    pp = window.privacy_panel
    pp.epsilon_field.setText("0.5")
    assert pp.apply_typed_epsilon()
    assert doc.epsilon == 0.5
    assert doc.mechanism == "best" and pp.mech_buttons["best"].isChecked()  # the default
    pp.mech_buttons["privelet+"].setChecked(True)  # S_A is Privelet+'s
    assert doc.sa == recommend_sa(doc.schema()) and "recommended" in pp.sa_rule_label.text()  # the default
    pp.clear_sa.click()
    pp.sa_boxes["sex"].setChecked(True)
    pp.sa_boxes["race"].setChecked(True)
    assert doc.sa == ("sex", "race") and "chosen by you" in pp.sa_rule_label.text()
    schema = doc.schema()
    expected = paper_bound(schema, 0.5, ("sex", "race"))
    assert pp.bounds["privelet+"]["paper"] == expected
    # the column is written in one style, scientific when any bound in it needs that
    papers = [entry["paper"] for entry in pp.bounds.values()]
    assert pp.displayed("privelet+", 1) == fmt_number(expected, scientific_form=table_is_scientific(papers))
    assert pp.bounds["basic"]["paper"] == paper_bound(schema, 0.5, schema.names)
    assert pp.bounds["privelet"]["paper"] == paper_bound(schema, 0.5, ())
    qtbot.waitUntil(lambda: "exact" in pp.bounds["privelet+"], timeout=10_000)
    exact = variance_model(schema).worst_case(0.5, ("sex", "race"))
    assert pp.bounds["privelet+"]["exact"] == exact
    assert pp.displayed("privelet+", 3) == "± " + f"{Z95 * math.sqrt(exact):,.0f}"

    # -- 5. release in the worker, then export and read back
    with qtbot.waitSignal(window.releaseFinished, timeout=60_000) as finished:
        window.act_run.trigger()
        assert window.runner.busy
    outcome = finished.args[0]
    release = outcome.release
    assert (release.epsilon, release.sa, release.mechanism) == (0.5, ("sex", "race"), "privelet+")
    assert release.noisy.shape == schema.shape
    assert outcome.paper_bound == expected
    assert doc.step_status("release").state == "done"
    assert window.release_panel.result_box.isVisibleTo(window.release_panel)
    assert window.release_panel.result_labels["epsilon"].text() == "0.5"

    npz = tmp_path / "adult.npz"
    with qtbot.waitSignal(window.exportFinished, timeout=30_000):
        assert window.export_release("release", npz)
    loaded = pio.load_release(npz)
    assert (loaded.epsilon, loaded.sa, loaded.mechanism, loaded.neighbours) == (0.5, ("sex", "race"), "privelet+", "replace")
    assert loaded.schema == schema
    assert (loaded.noisy == release.noisy).all()
    meta = pio.load_release_metadata(npz)
    assert "table" not in meta["extra"]  # the table's file name is not published (issue 11)
    assert meta["extra"]["created_by"].startswith("Privelet Studio")
    assert meta["paper_bound"] == expected
    assert "rows" not in str(meta["extra"])  # nothing computed from the true data

    csv = tmp_path / "adult.csv"
    with qtbot.waitSignal(window.exportFinished, timeout=30_000):
        assert window.export_release("csv", csv)
    frame = pd.read_csv(csv)
    assert len(frame) == schema.size
    assert "noisy_count" in frame.columns
    parquet = tmp_path / "adult.parquet"
    with qtbot.waitSignal(window.exportFinished, timeout=30_000):
        assert window.export_release("parquet", parquet)
    assert len(pd.read_parquet(parquet)) == schema.size
    # Exports never overwrite silently.
    with qtbot.waitSignal(window.exportFailed, timeout=30_000):
        assert window.export_release("csv", csv)
    assert "exists" in dialogs.errors[-1][1]
    assert dialogs.errors[:-1] == []


def test_sample_with_its_schema_is_ready_to_release(sample_window):
    doc = sample_window.document
    statuses = doc.step_statuses()
    assert [statuses[s].complete for s in ("data", "attributes", "hierarchies", "privacy")] == [True] * 4
    assert doc.schema() == pio.load_schema(pio.sample_schema_path())
    assert doc.step_status("release").state == "todo"
