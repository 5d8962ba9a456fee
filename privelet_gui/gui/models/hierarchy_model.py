"""An editable hierarchy tree as a Qt item model: a view over a workspace tree.

The tree, its edits, their undo and the problems to fix are the Qt-free
:class:`~privelet_gui.workspace.HierarchyTree`; this model only shows it and turns its
primitive operations into Qt's row signals, so views and proxies stay in step. Drag and drop
and editing through a view become the tree's own undoable edits.

Two columns: the code (what the data holds, for a value; a group's code is the custodian's to
choose, a value's is not editable) and the display label (the text shown for it, editable
for every node: labelling a value never changes what is counted).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from PySide6.QtCore import QAbstractItemModel, QByteArray, QMimeData, QModelIndex, QPersistentModelIndex, Qt, Signal
from PySide6.QtGui import QUndoStack

from ...engine import Hierarchy, InternalError
from ...formatting import counted
from ...workspace.tree import HierarchyTree, Problem, TreeNode, tree_from_hierarchy, tree_from_json, tree_to_json
from ..undo import UndoStackHistory

__all__ = ["MIME_TYPE", "HierarchyModel", "Problem", "TreeNode", "tree_from_hierarchy", "tree_from_json", "tree_to_json"]

MIME_TYPE = "application/x-privelet-hierarchy-nodes"

ModelIndex = QModelIndex | QPersistentModelIndex


class HierarchyModel(QAbstractItemModel):
    """A Qt item model (code and label columns) over an editable hierarchy tree.

    Give it a workspace :class:`~privelet_gui.workspace.HierarchyTree`, or a hierarchy (or
    tree of nodes) and the ``QUndoStack`` its edits go to. The root is shown as the single
    top-level item. Groups accept drops; leaves do not (dropping onto a leaf inserts next to
    it). The tree's queries and edits are available on the model too.
    """

    changed = Signal()  # after every edit (once per change, undo and redo included)

    CODE, LABEL = 0, 1

    def __init__(
        self,
        tree: HierarchyTree | Hierarchy | TreeNode,
        undo_stack: QUndoStack | None = None,
        parent: Any = None,
        *,
        name: str = "",
    ):
        super().__init__(parent)
        if not isinstance(tree, HierarchyTree):
            stack = undo_stack if undo_stack is not None else QUndoStack(self)
            tree = HierarchyTree(tree, UndoStackHistory(stack), name=name)
        self.tree = tree
        history = tree.history
        self.undo_stack: QUndoStack | None = history.stack if isinstance(history, UndoStackHistory) else undo_stack
        self.name = name or tree.name
        self._icons: dict[str, Any] = {}
        tree.observers.append(self)
        tree.edited.connect(self.changed.emit)

    # -- the tree's queries and edits -----------------------------------------------------------
    @property
    def root(self) -> TreeNode:
        return self.tree.root

    def node(self, index: ModelIndex) -> TreeNode:
        """The node of a (source) index; the root for an invalid index."""
        return self.tree.node_by_uid(index.internalId()) if index.isValid() else self.tree.root

    def index_of(self, node: TreeNode, column: int = 0) -> QModelIndex:
        if node.parent is None:
            return self.createIndex(0, column, node.uid)
        return self.createIndex(node.row, column, node.uid)

    def node_by_uid(self, uid: int) -> TreeNode:
        return self.tree.node_by_uid(uid)

    def find(self, label: str) -> TreeNode | None:
        return self.tree.find(label)

    def leaves(self) -> tuple[str, ...]:
        return self.tree.leaves()

    def leaf_position(self, node: TreeNode) -> tuple[int, int]:
        return self.tree.leaf_position(node)

    def to_hierarchy(self) -> Hierarchy:
        return self.tree.to_hierarchy()

    def is_valid(self) -> bool:
        return self.tree.is_valid()

    def problems(self, data_values: Any = None, *, limit: int = 500) -> list[Problem]:
        return self.tree.problems(data_values, limit=limit)

    def missing_values(self, data_values: Any) -> list[str]:
        return self.tree.missing_values(data_values)

    def unique_label(self, base: str) -> str:
        return self.tree.unique_label(base)

    def move_nodes(self, nodes: Sequence[TreeNode], target: TreeNode, row: int = -1, *, text: str | None = None) -> bool:
        return self.tree.move_nodes(nodes, target, row, text=text)

    def add_group(self, nodes: Sequence[TreeNode], label: str | None = None) -> TreeNode | None:
        return self.tree.add_group(nodes, label)

    def add_empty_group(self, parent: TreeNode, label: str | None = None) -> TreeNode | None:
        return self.tree.add_empty_group(parent, label)

    def add_leaves(self, labels: Sequence[str], parent: TreeNode | None = None) -> bool:
        return self.tree.add_leaves(labels, parent)

    def delete_group(self, node: TreeNode) -> bool:
        return self.tree.delete_group(node)

    def delete_leaves(self, nodes: Sequence[TreeNode]) -> bool:
        return self.tree.delete_leaves(nodes)

    def rename(self, node: TreeNode, label: str) -> bool:
        return self.tree.rename(node, label)

    def set_display_label(self, node: TreeNode, text: str | None) -> bool:
        return self.tree.set_display_label(node, text)

    def move_up(self, nodes: Sequence[TreeNode]) -> bool:
        return self.tree.move_up(nodes)

    def move_down(self, nodes: Sequence[TreeNode]) -> bool:
        return self.tree.move_down(nodes)

    def replace(self, tree: Hierarchy | TreeNode, text: str = "Replace hierarchy") -> bool:
        return self.tree.replace(tree, text)

    # -- the tree's primitive operations as Qt row signals (TreeObserver) --------------------------
    def before_move(self, node: TreeNode, target: TreeNode, row: int) -> None:
        source = node.parent
        if source is None:
            raise InternalError(f"the node {node.label!r} moved has no parent (the root never moves)")
        old_row = node.row
        destination = row + 1 if source is target and row > old_row else row
        ok = self.beginMoveRows(self.index_of(source), old_row, old_row, self.index_of(target), destination)
        if not ok:
            raise InternalError(f"Qt refused the move of {node.label!r} that the tree checked")

    def after_move(self) -> None:
        self.endMoveRows()

    def before_insert(self, parent: TreeNode, row: int) -> None:
        self.beginInsertRows(self.index_of(parent), row, row)

    def after_insert(self) -> None:
        self.endInsertRows()

    def before_remove(self, node: TreeNode) -> None:
        if node.parent is None:
            raise InternalError(f"the node {node.label!r} removed has no parent (the root is never removed)")
        self.beginRemoveRows(self.index_of(node.parent), node.row, node.row)

    def after_remove(self) -> None:
        self.endRemoveRows()

    def renamed(self, nodes: list[TreeNode]) -> None:
        for node in nodes:
            self.dataChanged.emit(self.index_of(node, self.CODE), self.index_of(node, self.LABEL))

    def before_reset(self) -> None:
        self.beginResetModel()

    def after_reset(self) -> None:
        self.endResetModel()

    # -- Qt model interface ----------------------------------------------------------
    def index(self, row: int, column: int, parent: ModelIndex = QModelIndex()) -> QModelIndex:
        if column not in (self.CODE, self.LABEL) or row < 0:
            return QModelIndex()
        if not parent.isValid():
            return self.createIndex(row, column, self.tree.root.uid) if row == 0 else QModelIndex()
        node = self.tree.node_by_uid(parent.internalId())
        if row >= len(node.children):
            return QModelIndex()
        return self.createIndex(row, column, node.children[row].uid)

    def parent(self, index: ModelIndex = QModelIndex()) -> QModelIndex:  # type: ignore[override]
        if not index.isValid():
            return QModelIndex()
        node = self.tree.node_by_uid(index.internalId())
        if node.parent is None:
            return QModelIndex()
        return self.index_of(node.parent)

    def rowCount(self, parent: ModelIndex = QModelIndex()) -> int:
        if not parent.isValid():
            return 1
        if parent.column() != 0:
            return 0
        return len(self.tree.node_by_uid(parent.internalId()).children)

    def columnCount(self, parent: ModelIndex = QModelIndex()) -> int:
        return 2

    def hasChildren(self, parent: ModelIndex = QModelIndex()) -> bool:
        return self.rowCount(parent) > 0

    def data(self, index: ModelIndex, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if not index.isValid():
            return None
        node = self.tree.node_by_uid(index.internalId())
        label_column = index.column() == self.LABEL
        if role in (Qt.ItemDataRole.DisplayRole, Qt.ItemDataRole.EditRole):
            if label_column:
                return node.display or ""
            return node.label
        if role == Qt.ItemDataRole.ToolTipRole:
            return self._tooltip(node)
        if role == Qt.ItemDataRole.DecorationRole and not label_column:
            return self._icon(node)
        if role == Qt.ItemDataRole.ForegroundRole and not label_column and node.label in self.tree.duplicates():
            from PySide6.QtGui import QColor

            return QColor("#c62828")
        if role == Qt.ItemDataRole.AccessibleTextRole:
            what = ("group " if node.is_group else "value ") + node.label
            return f"label of {what}: {node.display or 'none'}" if label_column else what
        return None

    def headerData(self, section: int, orientation: Qt.Orientation, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if orientation != Qt.Orientation.Horizontal:
            return None
        if role == Qt.ItemDataRole.DisplayRole:
            return ("Values and groups (leaf order = axis order)", "Label")[section] if section in (0, 1) else None
        if role == Qt.ItemDataRole.ToolTipRole and section in (0, 1):
            return (
                "The codes: a value's code is what the data holds, so it is counted there",
                "The text shown for a code, in the app and in exports (a <name>_label column); it changes no count",
            )[section]
        return None

    def flags(self, index: ModelIndex) -> Qt.ItemFlag:
        if not index.isValid():
            return Qt.ItemFlag.NoItemFlags
        node = self.tree.node_by_uid(index.internalId())
        flags = Qt.ItemFlag.ItemIsEnabled | Qt.ItemFlag.ItemIsSelectable
        # A value's code is what the data holds: it is labelled, never renamed, here.
        if index.column() == self.LABEL or node.is_group:
            flags |= Qt.ItemFlag.ItemIsEditable
        if node.is_group:
            flags |= Qt.ItemFlag.ItemIsDropEnabled
        else:
            flags |= Qt.ItemFlag.ItemNeverHasChildren
        if node is not self.tree.root:
            flags |= Qt.ItemFlag.ItemIsDragEnabled
        return flags

    def setData(self, index: ModelIndex, value: Any, role: int = Qt.ItemDataRole.EditRole) -> bool:
        if not index.isValid() or role != Qt.ItemDataRole.EditRole:
            return False
        node = self.tree.node_by_uid(index.internalId())
        if index.column() == self.LABEL:
            return self.set_display_label(node, str(value))
        label = str(value).strip()
        if not label or not node.is_group:
            return False
        return self.rename(node, label)

    # -- drag and drop ------------------------------------------------------------------
    def supportedDropActions(self) -> Qt.DropAction:
        return Qt.DropAction.MoveAction

    def supportedDragActions(self) -> Qt.DropAction:
        return Qt.DropAction.MoveAction

    def mimeTypes(self) -> list[str]:
        return [MIME_TYPE]

    def mimeData(self, indexes: Sequence[ModelIndex]) -> QMimeData:
        uids = []
        for index in indexes:
            if index.isValid() and index.column() == 0:
                uid = int(index.internalId())
                if uid not in uids and self.tree.node_by_uid(uid) is not self.tree.root:
                    uids.append(uid)
        data = QMimeData()
        payload = {"model": id(self), "nodes": uids}
        data.setData(MIME_TYPE, QByteArray(json.dumps(payload).encode()))
        return data

    def _decode(self, data: QMimeData) -> list[TreeNode] | None:
        if data is None or not data.hasFormat(MIME_TYPE):
            return None
        try:
            payload = json.loads(bytes(data.data(MIME_TYPE).data()).decode())
        except ValueError:
            return None
        if payload.get("model") != id(self):
            return None
        nodes = [self._known(uid) for uid in payload.get("nodes", [])]
        if not nodes or any(n is None or not self.tree.attached(n) for n in nodes):
            return None
        return nodes  # type: ignore[return-value]

    def canDropMimeData(
        self, data: QMimeData, action: Qt.DropAction, row: int, column: int, parent: ModelIndex
    ) -> bool:
        if action != Qt.DropAction.MoveAction or not parent.isValid():
            return False
        nodes = self._decode(data)
        target = self.tree.node_by_uid(parent.internalId())
        return nodes is not None and self.tree.can_move(nodes, target)

    def dropMimeData(self, data: QMimeData, action: Qt.DropAction, row: int, column: int, parent: ModelIndex) -> bool:
        if not self.canDropMimeData(data, action, row, column, parent):
            return False
        nodes = self._decode(data)
        if nodes is None:
            raise InternalError("the nodes dropped could not be read again after canDropMimeData read them")
        target = self.tree.node_by_uid(parent.internalId())
        self.move_nodes(nodes, target, row, text=f"Drag {self.tree.describe(nodes)} to {target.label!r}")
        # The move is done; the view must not remove the source rows (it would with True only
        # if the model implemented removeRows, which this one does not).
        return True

    def _known(self, uid: object) -> TreeNode | None:
        try:
            return self.tree.node_by_uid(int(uid))  # type: ignore[call-overload]
        except (KeyError, TypeError, ValueError):
            return None

    def _tooltip(self, node: TreeNode) -> str:
        lo, hi = self.tree.leaf_position(node)
        shown = f" ({node.display})" if node.display is not None else ""
        if node.is_group:
            if node.children:
                return f"Group {node.label!r}{shown}: {counted(hi - lo, 'value')}, axis positions {lo}-{hi - 1}"
            return f"Group {node.label!r}{shown} is empty"
        return f"Value {node.label!r}{shown}: axis position {lo}; the data's cells holding {node.label!r} count here"

    def _icon(self, node: TreeNode) -> Any:
        from ...qt import icons

        if node.is_group and not node.children and node is not self.tree.root:
            return icons.icon("warning")
        if node.label in self.tree.duplicates():
            return icons.icon("warning")
        return icons.icon("group" if node.is_group else "leaf")
