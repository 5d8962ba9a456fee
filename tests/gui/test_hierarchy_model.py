"""The hierarchy tree model: structure, drag and drop, undo/redo, problems, filtering at SOC scale."""

from __future__ import annotations

import time

import pytest
from PySide6.QtCore import QModelIndex, QSortFilterProxyModel, Qt
from PySide6.QtGui import QUndoStack
from PySide6.QtTest import QAbstractItemModelTester

from privelet_gui import io as pio
from privelet_gui.engine import Hierarchy, HierarchyError
from privelet_gui.gui.models.hierarchy_model import HierarchyModel, TreeNode, tree_from_json, tree_to_json
from privelet_gui.gui.panels.hierarchy_panel import HierarchyFilterModel

NESTED = {"*": {"Europe": ["FR", "DE", "IT"], "Asia": ["CN", "JP"], "Africa": ["NG"]}}


@pytest.fixture
def model(qtbot):
    m = HierarchyModel(Hierarchy.from_nested(NESTED), QUndoStack())
    # Qt's own checker: every signal and index is verified while the tests edit the model.
    m._tester = QAbstractItemModelTester(m, QAbstractItemModelTester.FailureReportingMode.Fatal)
    return m


def idx(model: HierarchyModel, label: str) -> QModelIndex:
    node = model.find(label)
    assert node is not None, label
    return model.index_of(node)


def nested(model: HierarchyModel) -> dict:
    return model.to_hierarchy().to_nested()


def test_structure_matches_the_engine_hierarchy(model):
    assert model.rowCount() == 1
    root = model.index(0, 0)
    assert root.data() == "*"
    assert [model.index(r, 0, root).data() for r in range(model.rowCount(root))] == ["Europe", "Asia", "Africa"]
    assert model.leaves() == ("FR", "DE", "IT", "CN", "JP", "NG")
    assert model.to_hierarchy() == Hierarchy.from_nested(NESTED)
    assert not model.flags(root) & Qt.ItemFlag.ItemIsDragEnabled
    assert model.flags(idx(model, "FR")) & Qt.ItemFlag.ItemIsDragEnabled
    assert not model.flags(idx(model, "FR")) & Qt.ItemFlag.ItemIsDropEnabled
    assert model.flags(idx(model, "Asia")) & Qt.ItemFlag.ItemIsDropEnabled


def test_drag_and_drop_moves_leaves_and_undo_restores(model):
    before = nested(model)
    mime = model.mimeData([idx(model, "FR"), idx(model, "IT")])
    asia = idx(model, "Asia")
    assert model.canDropMimeData(mime, Qt.DropAction.MoveAction, 1, 0, asia)
    assert model.dropMimeData(mime, Qt.DropAction.MoveAction, 1, 0, asia)
    assert nested(model) == {"*": {"Europe": ["DE"], "Asia": ["CN", "FR", "IT", "JP"], "Africa": ["NG"]}}
    assert model.undo_stack.count() == 1  # one drop = one undoable command
    model.undo_stack.undo()
    assert nested(model) == before
    model.undo_stack.redo()
    assert model.leaves() == ("DE", "CN", "FR", "IT", "JP", "NG")


def test_drop_through_the_filter_proxy_and_within_the_same_group(model):
    proxy = QSortFilterProxyModel()
    proxy.setSourceModel(model)
    QAbstractItemModelTester(proxy, QAbstractItemModelTester.FailureReportingMode.Fatal)
    europe = proxy.mapFromSource(idx(model, "Europe"))
    fr = proxy.mapFromSource(idx(model, "FR"))
    mime = proxy.mimeData([fr])
    # Drop FR after IT, in its own group (row 3 = after the last child).
    assert proxy.dropMimeData(mime, Qt.DropAction.MoveAction, 3, 0, europe)
    assert nested(model)["*"]["Europe"] == ["DE", "IT", "FR"]
    model.undo_stack.undo()
    assert nested(model)["*"]["Europe"] == ["FR", "DE", "IT"]


def test_groups_move_with_their_children_and_cycles_are_refused(model):
    mime = model.mimeData([idx(model, "Asia")])
    europe = idx(model, "Europe")
    assert model.dropMimeData(mime, Qt.DropAction.MoveAction, -1, 0, europe)
    assert nested(model) == {"*": {"Europe": ["FR", "DE", "IT", {"Asia": ["CN", "JP"]}], "Africa": ["NG"]}}
    # A group cannot go into its own descendant, nor onto a leaf, nor above the root.
    mime = model.mimeData([idx(model, "Europe")])
    assert not model.canDropMimeData(mime, Qt.DropAction.MoveAction, -1, 0, idx(model, "Asia"))
    assert not model.dropMimeData(mime, Qt.DropAction.MoveAction, -1, 0, idx(model, "Asia"))
    assert not model.canDropMimeData(mime, Qt.DropAction.MoveAction, -1, 0, QModelIndex())
    assert not model.canDropMimeData(model.mimeData([idx(model, "NG")]), Qt.DropAction.MoveAction, -1, 0, idx(model, "FR"))
    assert not model.canDropMimeData(mime, Qt.DropAction.CopyAction, -1, 0, idx(model, "Africa"))


def test_drops_from_another_model_are_refused(model):
    other = HierarchyModel(Hierarchy.from_nested(NESTED), QUndoStack())
    mime = other.mimeData([other.index_of(other.find("FR"))])
    assert not model.canDropMimeData(mime, Qt.DropAction.MoveAction, -1, 0, idx(model, "Asia"))


def test_add_group_delete_group_rename_and_move(model):
    stack = model.undo_stack
    original = nested(model)
    group = model.add_group([model.find("CN"), model.find("JP")], "East Asia")
    assert group is not None
    assert nested(model)["*"]["Asia"] == {"East Asia": ["CN", "JP"]}
    assert model.setData(model.index_of(group), "Far East")
    assert nested(model)["*"]["Asia"] == {"Far East": ["CN", "JP"]}
    assert model.delete_group(model.find("Europe"))  # children move up, in place
    assert nested(model) == {"*": ["FR", "DE", "IT", {"Asia": {"Far East": ["CN", "JP"]}}, {"Africa": ["NG"]}]}
    assert model.move_down([model.find("FR")])
    assert model.leaves()[:3] == ("DE", "FR", "IT")
    assert model.move_up([model.find("IT")])
    assert model.leaves()[:3] == ("DE", "IT", "FR")
    assert not model.move_up([model.find("DE")])  # already first: no command
    assert stack.count() == 5
    while stack.canUndo():
        stack.undo()
    assert nested(model) == original
    while stack.canRedo():
        stack.redo()
    assert model.leaves()[:3] == ("DE", "IT", "FR")


def test_multi_selection_move_up_and_down_keeps_order(model):
    assert model.move_down([model.find("FR"), model.find("DE")])
    assert model.leaves()[:3] == ("IT", "FR", "DE")
    assert model.move_up([model.find("FR"), model.find("DE")])
    assert model.leaves()[:3] == ("FR", "DE", "IT")


def test_problems_block_the_engine_hierarchy(model):
    assert model.problems() == []
    model.move_nodes([model.find("NG")], model.find("Asia"))
    problems = model.problems()
    assert [p.kind for p in problems] == ["empty"]
    assert "Africa" in problems[0].message
    with pytest.raises(HierarchyError, match="empty"):
        model.to_hierarchy()
    model.rename(model.find("CN"), "JP")
    kinds = sorted(p.kind for p in model.problems())
    assert kinds == ["duplicate", "empty"]
    missing = model.problems(["FR", "XX", "YY"])
    assert [p.value for p in missing if p.kind == "missing"] == ["XX", "YY"]
    model.add_leaves(["XX", "YY"])
    assert not [p for p in model.problems(["FR", "XX", "YY"]) if p.kind == "missing"]


def test_empty_rename_is_refused_and_noops_make_no_command(model):
    stack = model.undo_stack
    assert not model.setData(idx(model, "FR"), "   ")
    assert not model.rename(model.find("FR"), "FR")
    assert not model.move_nodes([model.find("FR")], model.find("Europe"), 0)
    assert stack.count() == 0


def test_replace_is_undoable(model):
    before = nested(model)
    model.replace(Hierarchy.flat(list(model.leaves())), "Flat")
    assert model.to_hierarchy().height == 2
    model.undo_stack.undo()
    assert nested(model) == before


def test_draft_tree_json_keeps_empty_groups():
    root = TreeNode("*", True, [TreeNode("a"), TreeNode("g", True)])
    again = tree_from_json(tree_to_json(root))
    assert tree_to_json(again) == {"label": "*", "children": [{"label": "a"}, {"label": "g", "children": []}]}


def test_soc_2018_stays_fluid(qtbot, shared_data):
    """867 leaves: building, filtering and a drag-and-drop move each take milliseconds."""
    from PySide6.QtWidgets import QTreeView

    hierarchy = pio.read_hierarchy(shared_data / "hierarchies" / "soc2018" / "hierarchy_soc2018_detailed.csv")
    assert hierarchy.size == 867
    started = time.perf_counter()
    model = HierarchyModel(hierarchy, QUndoStack())
    proxy = HierarchyFilterModel()
    proxy.setSourceModel(model)
    view = QTreeView()
    qtbot.addWidget(view)
    view.setUniformRowHeights(True)
    view.setModel(proxy)
    view.expandAll()
    view.show()
    assert time.perf_counter() - started < 2.0
    for text in ("11-1", "engineer", "29-", ""):
        t = time.perf_counter()
        proxy.setFilterFixedString(text)
        view.expandAll()
        assert time.perf_counter() - t < 0.5, text
    proxy.setFilterFixedString("11-1011")
    assert proxy.rowCount() == 1  # the root stays as an ancestor of the match
    # A drag-and-drop move through the proxy.
    proxy.setFilterFixedString("")
    source = next(n for n in model.root.leaves() if len(n.parent.children) > 1)
    target = model.find("13-0000")
    position = hierarchy.leaves.index(source.label)
    t = time.perf_counter()
    mime = proxy.mimeData([proxy.mapFromSource(model.index_of(source))])
    assert proxy.dropMimeData(mime, Qt.DropAction.MoveAction, 0, 0, proxy.mapFromSource(model.index_of(target)))
    assert time.perf_counter() - t < 0.5
    moved = model.to_hierarchy()
    assert moved.leaves.index(source.label) != position
    assert moved.leaf_range("13-0000")[0] == moved.leaves.index(source.label)
    model.undo_stack.undo()
    assert model.to_hierarchy() == hierarchy
