"""Hierarchies step: toolbar edits, filter, builders, problems, import and export."""

from __future__ import annotations

from PySide6.QtCore import QItemSelectionModel

from privelet_gui import io as pio
from privelet_gui.engine import Hierarchy


def open_codes(window, qtbot, tmp_path, codes, column="job"):
    path = tmp_path / "codes.csv"
    path.write_text(column + "\n" + "\n".join(codes) + "\n")
    with qtbot.waitSignal(window.tableLoaded, timeout=10_000):
        window.open_table(path, pio.sniff_table(path))
    window.go_to("hierarchies")
    assert window.hierarchy_panel.set_attribute(column)
    return window.hierarchy_panel


def select(panel, labels):
    panel.select_nodes([panel.model.find(label) for label in labels])


def test_toolbar_actions_edit_through_the_undo_stack(sample_window):
    window = sample_window
    panel = window.hierarchy_panel
    window.go_to("hierarchies")
    assert panel.set_attribute("race")
    model = panel.model
    original = model.to_hierarchy()
    leaves = list(original.leaves)
    select(panel, leaves[:2])
    assert [n.label for n in panel.selected_nodes()] == leaves[:2]
    panel.act_group.trigger()
    group = model.find("New group")
    assert group is not None and [c.label for c in group.children] == leaves[:2]
    select(panel, ["New group"])
    panel.act_delete.trigger()  # children move up
    assert model.find("New group") is None
    assert model.to_hierarchy() == original
    select(panel, [leaves[1]])
    panel.act_up.trigger()
    assert model.leaves()[:2] == (leaves[1], leaves[0])
    panel.act_down.trigger()
    assert model.leaves()[:2] == tuple(leaves[:2])
    panel.act_new.trigger()
    assert model.find("New group") is not None
    assert window.document.step_status("hierarchies").state == "error"  # an empty group
    assert any("empty" in panel.problems.item(i).text() for i in range(panel.problems.count()))
    window.act_undo.trigger()
    assert window.document.step_status("hierarchies").state == "done"
    select(panel, [leaves[-1]])
    panel.act_remove.trigger()
    assert leaves[-1] not in model.leaves()
    # The value is in the data but no longer in the hierarchy: a problem, with a one-click fix.
    assert window.document.step_status("hierarchies").state == "error"
    assert panel.add_missing.isVisibleTo(panel)
    panel.add_missing.click()
    assert leaves[-1] in model.leaves()
    assert window.document.step_status("hierarchies").state == "done"
    assert not panel.add_missing_grouped.isVisibleTo(panel)  # a flat hierarchy: under the root is the leaves' depth


def test_a_missing_value_can_join_at_the_leaves_depth(sample_window):
    window = sample_window
    panel = window.hierarchy_panel
    window.go_to("hierarchies")
    assert panel.set_attribute("occupation")  # height 3: values sit under their groups
    model = panel.model
    value = model.leaves()[-1]
    model.delete_leaves([model.find(value)])
    assert panel.add_missing.isVisibleTo(panel) and panel.add_missing_grouped.isVisibleTo(panel)
    panel.add_missing_grouped.click()
    node = model.find(value)
    assert node.parent.label == f"{value} (group)" and node.parent.parent is model.root
    assert window.document.step_status("hierarchies").state == "done"


def test_problem_list_selects_the_node(sample_window):
    panel = sample_window.hierarchy_panel
    sample_window.go_to("hierarchies")
    panel.set_attribute("education")
    group = panel.model.add_empty_group(panel.model.root, "Vocational")
    item = next(panel.problems.item(i) for i in range(panel.problems.count()) if "Vocational" in panel.problems.item(i).text())
    panel.view.selectionModel().clear()
    panel._problem_activated(item)
    assert panel.selected_nodes() == [group]


def test_filter_box_keeps_ancestors_and_never_sorts(sample_window):
    panel = sample_window.hierarchy_panel
    sample_window.go_to("hierarchies")
    panel.set_attribute("occupation")
    panel.filter.setText("sales")
    proxy = panel.proxy
    root = proxy.index(0, 0)
    shown = []

    def walk(index):
        for row in range(proxy.rowCount(index)):
            child = proxy.index(row, 0, index)
            shown.append(child.data())
            walk(child)

    walk(root)
    assert "Sales" in shown and len(shown) == 2  # the match and its group
    panel.filter.clear()
    assert proxy.rowCount(root) == panel.model.rowCount(panel.model.index(0, 0))
    assert panel.model.leaves() == sample_window.document.schema()["occupation"].hierarchy.leaves


def test_group_by_code_prefix_and_ranges(window, qtbot, tmp_path, dialogs):
    codes = ["11-1011", "11-1021", "11-2011", "13-1011", "13-2011"]
    panel = open_codes(window, qtbot, tmp_path, codes)
    panel.build_prefix("4, 2")
    h = panel.model.to_hierarchy()
    assert h.to_nested() == {"*": {"11": {"11-1": ["11-1011", "11-1021"], "11-2": ["11-2011"]},
                                   "13": {"13-1": ["13-1011"], "13-2": ["13-2011"]}}}
    assert h.leaves == tuple(codes)  # no value moved
    window.act_undo.trigger()
    panel.build_ranges("2")
    assert panel.model.to_hierarchy().to_nested() == {
        "*": {"11-1011–11-1021": ["11-1011", "11-1021"], "11-2011–13-1011": ["11-2011", "13-1011"],
              "13-2011*": ["13-2011"]}  # a one-value range needs a label of its own
    }
    panel.build_flat()
    assert panel.model.to_hierarchy().height == 2
    panel.build_ranges("3, 2")  # 2 is not a multiple of 3
    assert "multiple" in dialogs.errors[-1][1]


def test_prefix_grouping_that_reorders_values_asks_first(window, qtbot, tmp_path, dialogs):
    panel = open_codes(window, qtbot, tmp_path, ["11-1011", "11-2011", "13-1011"])
    model = panel.model
    model.move_nodes([model.find("13-1011")], model.root, 1)  # the custodian's own order
    before = model.leaves()
    assert before == ("11-1011", "13-1011", "11-2011")
    dialogs.confirm_answer = False
    panel.build_prefix("2")
    assert panel.model.leaves() == before  # declined: nothing reordered
    assert dialogs.asked == ["Reorder values?"]
    dialogs.confirm_answer = True
    panel.build_prefix("2")
    assert panel.model.leaves() == ("11-1011", "11-2011", "13-1011")


def test_export_and_reimport_arx_and_json(sample_window, tmp_path):
    panel = sample_window.hierarchy_panel
    sample_window.go_to("hierarchies")
    panel.set_attribute("education")
    original = panel.model.to_hierarchy()
    for name in ("education.csv", "education.json"):
        assert panel.export_hierarchy(tmp_path / name)
        assert pio.read_hierarchy(tmp_path / name) == original
    panel.model.replace(Hierarchy.flat(list(original.leaves)))
    assert panel.import_hierarchy(tmp_path / "education.json")
    assert panel.model.to_hierarchy() == original


def test_selection_drives_the_actions(sample_window):
    panel = sample_window.hierarchy_panel
    sample_window.go_to("hierarchies")
    panel.set_attribute("race")
    panel.view.selectionModel().clear()
    assert not panel.act_group.isEnabled() and not panel.act_rename.isEnabled()
    root = panel.proxy.index(0, 0)
    panel.view.selectionModel().select(root, QItemSelectionModel.SelectionFlag.ClearAndSelect)
    assert not panel.act_delete.isEnabled()  # the root cannot be deleted
    assert panel.act_rename.isEnabled()


def test_rename_in_place_with_f2(sample_window, qtbot):
    from PySide6.QtCore import Qt
    from PySide6.QtGui import QKeySequence
    from PySide6.QtWidgets import QAbstractItemView, QLineEdit

    window = sample_window
    panel = window.hierarchy_panel
    window.go_to("hierarchies")
    panel.set_attribute("occupation")
    select(panel, ["Technical"])
    panel.view.setFocus()
    panel.act_rename.trigger()  # F2
    assert panel.view.state() == QAbstractItemView.State.EditingState
    editor = panel.view.findChild(QLineEdit)
    assert editor is not None and editor.text() == "Technical"
    editor.selectAll()
    qtbot.keyClicks(editor, "Skilled")
    qtbot.keyClick(editor, Qt.Key.Key_Return)
    qtbot.waitUntil(lambda: panel.model.find("Skilled") is not None, timeout=2000)  # Qt commits queued
    assert panel.model.find("Technical") is None
    assert window.document.schema()["occupation"].hierarchy.leaf_range("Skilled") == (0, 4)
    window.act_undo.trigger()
    assert panel.model.find("Technical") is not None
    assert panel.act_rename.shortcut() == QKeySequence(Qt.Key.Key_F2)


def expanded_labels(panel):
    """Labels of the groups open in the tree view."""
    proxy, shown = panel.proxy, []
    stack = [proxy.index(0, 0)]
    while stack:
        index = stack.pop()
        if panel.view.isExpanded(index):
            shown.append(index.data())
        stack.extend(proxy.index(row, 0, index) for row in range(proxy.rowCount(index)))
    return sorted(shown)


def test_clearing_the_filter_keeps_the_trees_expansion(window, qtbot, tmp_path):
    codes = ["11-1011", "11-1021", "11-2011", "13-1011", "13-2011", "15-1011", "15-2011"]
    panel = open_codes(window, qtbot, tmp_path, codes)
    panel.build_prefix("4, 2")  # * > 11, 13, 15 > 11-1, 11-2, ... > codes
    model = panel.model
    panel.collapse_all()
    # the custodian opened one group and one of its subgroups, and left the others closed
    panel.view.expand(panel.proxy_index(model.find("13")))
    panel.view.expand(panel.proxy_index(model.find("13-1")))
    before = expanded_labels(panel)
    assert before == ["*", "13", "13-1"]
    panel.filter.setText("15-2011")  # finds a value in a closed group ...
    assert panel.view.isExpanded(panel.proxy_index(model.find("15-2")))
    panel.select_nodes([model.find("15-2011")])  # ... and selects it
    panel.filter.clear()
    after = expanded_labels(panel)
    assert after == ["*", "13", "13-1", "15", "15-2"]  # as it was, plus the way to the selection
    assert [n.label for n in panel.selected_nodes()] == ["15-2011"]
    # filtering again (typing on) and clearing without selecting anything: exactly as it was
    panel.view.selectionModel().clear()
    panel.filter.setText("1")
    panel.filter.setText("11-")
    panel.filter.clear()
    assert expanded_labels(panel) == after
    # a group deleted while filtering is simply not reopened
    panel.filter.setText("13")
    model.delete_group(model.find("13-1"))
    panel.filter.clear()
    assert expanded_labels(panel) == ["*", "13", "15", "15-2"]


def test_importing_over_an_edited_tree_asks_first(sample_window, tmp_path, dialogs):
    """Issue 39, item 5: an import replaces a tree the custodian grouped or edited only once
    they say so; a tree fresh from the data is replaced without a question."""
    window = sample_window
    panel = window.hierarchy_panel
    window.go_to("hierarchies")
    assert panel.set_attribute("occupation")  # the sample's imported tree: it has groups
    original = panel.model.to_hierarchy()
    flat = tmp_path / "flat.csv"
    pio.write_hierarchy(Hierarchy.flat(list(original.leaves)), flat)
    dialogs.confirm_answer = False
    assert not panel.import_hierarchy(flat)
    assert dialogs.asked == ["Replace the hierarchy?"] and panel.model.to_hierarchy() == original
    dialogs.confirm_answer = True
    assert panel.import_hierarchy(flat)
    assert panel.model.to_hierarchy().height == 2
    dialogs.asked.clear()
    assert panel.import_hierarchy(flat)  # flat, not edited since its import: nothing to lose
    assert dialogs.asked == []
    panel.model.set_display_label(panel.model.find(original.leaves[0]), "First")  # an edit
    dialogs.confirm_answer = False
    assert not panel.import_hierarchy(flat) and dialogs.asked == ["Replace the hierarchy?"]
    window.act_undo.trigger()  # the edit undone: nothing to lose again
    dialogs.asked.clear()
    assert panel.import_hierarchy(flat) and dialogs.asked == []


def test_every_hierarchy_action_is_in_sight_in_a_1280_pixel_window(sample_window, qtbot):
    """Issue 39, item 5: "Import labels..." (and every other action) on screen, not behind the
    toolbar's overflow button."""
    window = sample_window
    window.resize(1280, 800)
    window.go_to("hierarchies")
    panel = window.hierarchy_panel
    assert panel.set_attribute("occupation")
    qtbot.waitUntil(lambda: panel.file_toolbar.isVisible())
    for toolbar in (panel.toolbar, panel.file_toolbar):
        for action in toolbar.actions():
            if action.isSeparator():
                continue
            widget = toolbar.widgetForAction(action)
            assert widget is not None and widget.isVisible(), action.text()
            assert toolbar.rect().contains(widget.geometry()), action.text()
    labels = panel.file_toolbar.widgetForAction(panel.act_import_labels)
    assert labels.text() == "Import labels"


def test_the_f2_key_does_what_the_guide_says(sample_window, qtbot):
    """Issue 39, item 5: F2 (the key, wherever the row was clicked) renames a group in place,
    its code; on a value it edits the label (a value's code is the data's). The guide says so."""
    from PySide6.QtCore import Qt
    from PySide6.QtWidgets import QAbstractItemView, QLineEdit

    from privelet_gui.gui.guide import GUIDE_HTML
    from privelet_gui.gui.models.hierarchy_model import HierarchyModel

    assert "rename a group in place (F2: its code" in GUIDE_HTML and "F2 on a value edits its label" in GUIDE_HTML
    window = sample_window
    panel = window.hierarchy_panel
    window.go_to("hierarchies")
    panel.set_attribute("occupation")
    panel.view.expandAll()
    for label, column in (("Technical", HierarchyModel.CODE), ("Sales", HierarchyModel.LABEL)):
        node = panel.model.find(label)
        cell = panel.view.visualRect(panel.proxy_index(node).siblingAtColumn(HierarchyModel.LABEL))
        qtbot.mouseClick(panel.view.viewport(), Qt.MouseButton.LeftButton, pos=cell.center())  # the Label column
        qtbot.keyClick(panel.view, Qt.Key.Key_F2)
        assert panel.view.state() == QAbstractItemView.State.EditingState
        assert panel.view.currentIndex().column() == column, label
        editor = next(e for e in panel.view.findChildren(QLineEdit) if e.isVisible())  # not a closed one
        qtbot.keyClicks(editor, "X")
        qtbot.keyClick(editor, Qt.Key.Key_Return)
        done = {"Technical": lambda: panel.model.find("X") is not None, "Sales": lambda: panel.model.find("Sales").display == "X"}
        qtbot.waitUntil(done[label], timeout=2000)  # Qt commits queued
    assert panel.model.find("Technical") is None and panel.model.find("X").is_group  # the group's code: renamed
    assert panel.model.find("Sales").display == "X"  # the value: labelled, its code kept
