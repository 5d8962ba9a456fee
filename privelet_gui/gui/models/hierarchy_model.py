"""An editable hierarchy tree as a Qt item model, with every edit on a QUndoStack.

The model holds a mutable tree of :class:`TreeNode` (groups and leaves) and turns
it into an engine :class:`~privelet_gui.engine.Hierarchy` on demand; validation
is the engine's. The tree may be temporarily invalid while the user edits it
(an empty group, a duplicate label): :meth:`HierarchyModel.problems` lists what
to fix, and :meth:`HierarchyModel.to_hierarchy` raises until it is fixed.

Every edit is an undoable command made of primitive operations (move, insert,
remove, rename, replace), each of which emits the exact Qt model signals, so views
and proxies stay in step. Leaf order is the attribute's axis order: the model
never reorders leaves except when the user moves them.
"""

from __future__ import annotations

import itertools
import json
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from PySide6.QtCore import QAbstractItemModel, QByteArray, QMimeData, QModelIndex, QPersistentModelIndex, Qt, Signal
from PySide6.QtGui import QUndoCommand, QUndoStack

from ...engine import Hierarchy, HierarchyError, HierarchyNode

__all__ = ["MIME_TYPE", "HierarchyModel", "Problem", "TreeNode", "tree_from_hierarchy", "tree_from_json", "tree_to_json"]

MIME_TYPE = "application/x-privelet-hierarchy-nodes"

_uids = itertools.count(1)

ModelIndex = QModelIndex | QPersistentModelIndex


class TreeNode:
    """One node of the editable tree. ``is_group`` distinguishes an empty group from a leaf."""

    __slots__ = ("children", "is_group", "label", "parent", "uid")

    def __init__(self, label: str, is_group: bool = False, children: Iterable[TreeNode] = ()):
        self.uid: int = next(_uids)
        self.label = label
        self.is_group = is_group
        self.parent: TreeNode | None = None
        self.children: list[TreeNode] = []
        for child in children:
            child.parent = self
            self.children.append(child)

    @property
    def row(self) -> int:
        return self.parent.children.index(self) if self.parent is not None else 0

    def walk(self) -> Iterator[TreeNode]:
        """This node and its descendants, depth-first, left to right."""
        stack = [self]
        while stack:
            node = stack.pop()
            yield node
            stack.extend(reversed(node.children))

    def leaves(self) -> Iterator[TreeNode]:
        return (n for n in self.walk() if not n.is_group)

    def is_ancestor_of(self, other: TreeNode) -> bool:
        node = other.parent
        while node is not None:
            if node is self:
                return True
            node = node.parent
        return False

    def path(self) -> tuple[str, ...]:
        labels = []
        node: TreeNode | None = self
        while node is not None:
            labels.append(node.label)
            node = node.parent
        return tuple(reversed(labels))

    def __repr__(self) -> str:
        return f"TreeNode({self.label!r}, group={self.is_group}, children={len(self.children)})"


def tree_from_hierarchy(hierarchy: Hierarchy) -> TreeNode:
    """A fresh editable tree with the structure of an engine hierarchy."""

    def build(node: HierarchyNode, is_root: bool) -> TreeNode:
        return TreeNode(node.label, is_group=is_root or not node.is_leaf, children=[build(c, False) for c in node.children])

    return build(hierarchy.root, True)


def tree_to_json(node: TreeNode) -> dict[str, Any]:
    """A JSON-able form that keeps empty groups (used for drafts in project files)."""
    if node.is_group:
        return {"label": node.label, "children": [tree_to_json(c) for c in node.children]}
    return {"label": node.label}


def tree_from_json(obj: dict[str, Any]) -> TreeNode:
    """The inverse of :func:`tree_to_json`."""
    if "children" in obj:
        return TreeNode(str(obj["label"]), True, [tree_from_json(c) for c in obj["children"]])
    return TreeNode(str(obj["label"]))


def _to_engine(node: TreeNode) -> HierarchyNode:
    return HierarchyNode(node.label, tuple(_to_engine(c) for c in node.children))


@dataclass(frozen=True)
class Problem:
    """Something to fix before the hierarchy can be used."""

    kind: Literal["missing", "empty", "duplicate", "root"]
    message: str
    uid: int | None = None  # the node concerned, if any
    value: str | None = None  # the data value concerned (kind == "missing")


# -- primitive operations ---------------------------------------------------------------
# ("move", uid, parent_uid, row_after_removal) | ("insert", uid, parent_uid, row) |
# ("remove", uid) | ("rename", uid, label) | ("reset", root_uid)
Op = tuple[Any, ...]


class _EditCommand(QUndoCommand):
    """An undoable edit: a recorded list of primitive operations and their inverses."""

    def __init__(self, model: HierarchyModel, text: str, build: Callable[[], None]):
        super().__init__(text)
        self._model = model
        self._build: Callable[[], None] | None = build
        self._ops: list[Op] = []
        self._inverses: list[Op] = []
        self.empty = False

    def redo(self) -> None:
        model = self._model
        if self._build is not None:
            build, self._build = self._build, None
            model._recording = (self._ops, self._inverses)
            try:
                build()
            finally:
                model._recording = None
            if not self._ops:
                self.empty = True
                self.setObsolete(True)  # a no-op: QUndoStack drops it
        else:
            self._inverses = [inverse for op in self._ops if (inverse := model._apply(op)) is not None]
        model._edited()

    def undo(self) -> None:
        model = self._model
        for op in reversed(self._inverses):
            model._apply(op)
        model._edited()


class HierarchyModel(QAbstractItemModel):
    """A Qt item model (one column) over an editable hierarchy tree.

    The root is shown as the single top-level item. Groups accept drops; leaves do
    not (dropping onto a leaf inserts next to it). Drag and drop, renaming through
    the view and all editing methods go through :attr:`undo_stack`.
    """

    changed = Signal()  # after every edit (once per command, undo and redo included)

    def __init__(
        self,
        tree: Hierarchy | TreeNode,
        undo_stack: QUndoStack | None = None,
        parent: Any = None,
        *,
        name: str = "",
    ):
        super().__init__(parent)
        self.name = name
        self.undo_stack = undo_stack if undo_stack is not None else QUndoStack(self)
        self._nodes: dict[int, TreeNode] = {}
        self._recording: tuple[list[Op], list[Op]] | None = None
        self._cache: dict[str, Any] = {}
        self._root = tree_from_hierarchy(tree) if isinstance(tree, Hierarchy) else tree
        self._register(self._root)
        self._icons: dict[str, Any] = {}

    # -- Qt model interface ----------------------------------------------------------
    def index(self, row: int, column: int, parent: ModelIndex = QModelIndex()) -> QModelIndex:
        if column != 0 or row < 0:
            return QModelIndex()
        if not parent.isValid():
            return self.createIndex(row, 0, self._root.uid) if row == 0 else QModelIndex()
        node = self._nodes[parent.internalId()]
        if row >= len(node.children):
            return QModelIndex()
        return self.createIndex(row, 0, node.children[row].uid)

    def parent(self, index: ModelIndex = QModelIndex()) -> QModelIndex:  # type: ignore[override]
        if not index.isValid():
            return QModelIndex()
        node = self._nodes[index.internalId()]
        if node.parent is None:
            return QModelIndex()
        return self.index_of(node.parent)

    def rowCount(self, parent: ModelIndex = QModelIndex()) -> int:
        if not parent.isValid():
            return 1
        if parent.column() != 0:
            return 0
        return len(self._nodes[parent.internalId()].children)

    def columnCount(self, parent: ModelIndex = QModelIndex()) -> int:
        return 1

    def hasChildren(self, parent: ModelIndex = QModelIndex()) -> bool:
        return self.rowCount(parent) > 0

    def data(self, index: ModelIndex, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if not index.isValid():
            return None
        node = self._nodes[index.internalId()]
        if role in (Qt.ItemDataRole.DisplayRole, Qt.ItemDataRole.EditRole):
            return node.label
        if role == Qt.ItemDataRole.ToolTipRole:
            return self._tooltip(node)
        if role == Qt.ItemDataRole.DecorationRole:
            return self._icon(node)
        if role == Qt.ItemDataRole.ForegroundRole and node.label in self._duplicates():
            from PySide6.QtGui import QColor

            return QColor("#c62828")
        if role == Qt.ItemDataRole.AccessibleTextRole:
            return ("group " if node.is_group else "value ") + node.label
        return None

    def headerData(self, section: int, orientation: Qt.Orientation, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if orientation == Qt.Orientation.Horizontal and role == Qt.ItemDataRole.DisplayRole and section == 0:
            return "Values and groups (leaf order = axis order)"
        return None

    def flags(self, index: ModelIndex) -> Qt.ItemFlag:
        if not index.isValid():
            return Qt.ItemFlag.NoItemFlags
        node = self._nodes[index.internalId()]
        flags = Qt.ItemFlag.ItemIsEnabled | Qt.ItemFlag.ItemIsSelectable | Qt.ItemFlag.ItemIsEditable
        if node.is_group:
            flags |= Qt.ItemFlag.ItemIsDropEnabled
        else:
            flags |= Qt.ItemFlag.ItemNeverHasChildren
        if node is not self._root:
            flags |= Qt.ItemFlag.ItemIsDragEnabled
        return flags

    def setData(self, index: ModelIndex, value: Any, role: int = Qt.ItemDataRole.EditRole) -> bool:
        if not index.isValid() or role != Qt.ItemDataRole.EditRole:
            return False
        label = str(value).strip()
        if not label:
            return False
        return self.rename(self._nodes[index.internalId()], label)

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
                if uid not in uids and self._nodes[uid] is not self._root:
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
        nodes = [self._nodes.get(uid) for uid in payload.get("nodes", [])]
        if not nodes or any(n is None or not self._attached(n) for n in nodes):
            return None
        return nodes  # type: ignore[return-value]

    def canDropMimeData(
        self, data: QMimeData, action: Qt.DropAction, row: int, column: int, parent: ModelIndex
    ) -> bool:
        if action != Qt.DropAction.MoveAction or not parent.isValid():
            return False
        nodes = self._decode(data)
        target = self._nodes[parent.internalId()]
        return nodes is not None and self._can_move(nodes, target)

    def dropMimeData(self, data: QMimeData, action: Qt.DropAction, row: int, column: int, parent: ModelIndex) -> bool:
        if not self.canDropMimeData(data, action, row, column, parent):
            return False
        nodes = self._decode(data)
        assert nodes is not None
        target = self._nodes[parent.internalId()]
        self.move_nodes(nodes, target, row, text=f"Drag {self._describe(nodes)} to {target.label!r}")
        # The move is done; the view must not remove the source rows (it would with True only
        # if the model implemented removeRows, which this one does not).
        return True

    # -- queries ---------------------------------------------------------------------------
    @property
    def root(self) -> TreeNode:
        return self._root

    def node(self, index: ModelIndex) -> TreeNode:
        """The node of a (source) index; the root for an invalid index."""
        return self._nodes[index.internalId()] if index.isValid() else self._root

    def node_by_uid(self, uid: int) -> TreeNode:
        return self._nodes[uid]

    def index_of(self, node: TreeNode) -> QModelIndex:
        if node.parent is None:
            return self.createIndex(0, 0, node.uid)
        return self.createIndex(node.row, 0, node.uid)

    def find(self, label: str) -> TreeNode | None:
        """The first attached node with this label (depth-first), or None."""
        for node in self._root.walk():
            if node.label == label:
                return node
        return None

    def leaves(self) -> tuple[str, ...]:
        """Leaf labels in axis order."""
        if "leaves" not in self._cache:
            self._cache["leaves"] = tuple(n.label for n in self._root.leaves())
        return self._cache["leaves"]

    def leaf_position(self, node: TreeNode) -> tuple[int, int]:
        """Half-open range of leaf (axis) positions under ``node``."""
        if "positions" not in self._cache:
            positions: dict[int, tuple[int, int]] = {}
            counter = 0

            def visit(n: TreeNode) -> None:
                nonlocal counter
                start = counter
                if n.is_group:
                    for child in n.children:
                        visit(child)
                else:
                    counter += 1
                positions[n.uid] = (start, counter)

            # Iterative would be safer for very deep trees; hierarchies are shallow.
            visit(self._root)
            self._cache["positions"] = positions
        return self._cache["positions"][node.uid]

    def to_hierarchy(self) -> Hierarchy:
        """The engine hierarchy (validated by the engine). Raises HierarchyError while invalid."""
        if "hierarchy" not in self._cache:
            structural = [p for p in self.problems() if p.kind in ("empty", "root")]
            if structural:
                self._cache["hierarchy"] = HierarchyError(structural[0].message)
            else:
                try:
                    self._cache["hierarchy"] = Hierarchy(_to_engine(self._root))
                except HierarchyError as exc:
                    self._cache["hierarchy"] = exc
        result = self._cache["hierarchy"]
        if isinstance(result, HierarchyError):
            raise result
        return result

    def is_valid(self) -> bool:
        try:
            self.to_hierarchy()
        except HierarchyError:
            return False
        return True

    def problems(self, data_values: Collection[str] | None = None, *, limit: int = 500) -> list[Problem]:
        """Empty groups, duplicate labels and (given the column's values) values missing from the leaves."""
        if "problems" not in self._cache:
            found: list[Problem] = []
            if not self._root.children:
                found.append(Problem("root", f"the hierarchy {self._root.label!r} has no values: add or import some"))
            for node in self._root.walk():
                if node.is_group and not node.children and node is not self._root:
                    where = " > ".join(node.path()[:-1])
                    found.append(Problem("empty", f"group {node.label!r} (under {where}) is empty: move values into it or delete it", node.uid))
            dups = self._duplicates()
            reported: set[str] = set()
            for node in self._root.walk():
                if node.label in dups and node.label not in reported:
                    reported.add(node.label)
                    found.append(
                        Problem("duplicate", f"label {node.label!r} is used {dups[node.label]} times: labels must be unique, rename one", node.uid)
                    )
            self._cache["problems"] = found
        problems = list(self._cache["problems"])
        if data_values is not None:
            leaves = set(self.leaves())
            missing = [v for v in data_values if v not in leaves]
            for value in missing[:limit]:
                problems.append(
                    Problem("missing", f"data value {value!r} is not in the hierarchy: add it or it cannot be counted", None, value)
                )
            if len(missing) > limit:
                problems.append(Problem("missing", f"... and {len(missing) - limit:,} more data values missing from the hierarchy"))
        return problems

    def missing_values(self, data_values: Collection[str]) -> list[str]:
        leaves = set(self.leaves())
        return [v for v in data_values if v not in leaves]

    # -- edits (each is one undoable command) -----------------------------------------------
    def move_nodes(self, nodes: Sequence[TreeNode], target: TreeNode, row: int = -1, *, text: str | None = None) -> bool:
        """Move ``nodes`` (kept in tree order) into group ``target`` before child ``row`` (-1: at the end)."""
        nodes = self._ordered(nodes)
        if not self._can_move(nodes, target):
            return False
        # Anchor: the first child at or after ``row`` that is not moving; insert before it.
        moving = {n.uid for n in nodes}
        siblings = target.children
        start = len(siblings) if row < 0 or row > len(siblings) else row
        anchor = next((c for c in siblings[start:] if c.uid not in moving), None)

        def build() -> None:
            for node in nodes:
                # Where the anchor sits once ``node`` is out of the way.
                position = target.children.index(anchor) if anchor is not None else len(target.children)
                if node.parent is target and node.row < position:
                    position -= 1
                self._do(("move", node.uid, target.uid, position))

        return self._push(text or f"Move {self._describe(nodes)} to {target.label!r}", build)

    def add_group(self, nodes: Sequence[TreeNode], label: str | None = None) -> TreeNode | None:
        """Put ``nodes`` into a new group, placed where the first of them was."""
        nodes = self._ordered(nodes)
        if not nodes or any(n is self._root for n in nodes):
            return None
        label = label or self.unique_label("New group")
        first = nodes[0]
        parent, row = first.parent, first.row
        assert parent is not None
        group = TreeNode(label, is_group=True)
        self._nodes[group.uid] = group

        def build() -> None:
            self._do(("insert", group.uid, parent.uid, row))
            for node in nodes:
                self._do(("move", node.uid, group.uid, len(group.children)))

        self._push(f"Group {self._describe(nodes)} as {label!r}", build)
        return group

    def add_empty_group(self, parent: TreeNode, label: str | None = None) -> TreeNode | None:
        if not parent.is_group:
            return None
        label = label or self.unique_label("New group")
        group = TreeNode(label, is_group=True)
        self._nodes[group.uid] = group
        self._push(f"Add group {label!r}", lambda: self._do(("insert", group.uid, parent.uid, len(parent.children))))
        return group

    def add_leaves(self, labels: Sequence[str], parent: TreeNode | None = None) -> bool:
        """Append new leaves (e.g. data values missing from the hierarchy) to ``parent`` (root)."""
        parent = parent or self._root
        if not labels or not parent.is_group:
            return False
        leaves = [TreeNode(str(label)) for label in labels]
        for leaf in leaves:
            self._nodes[leaf.uid] = leaf

        def build() -> None:
            for leaf in leaves:
                self._do(("insert", leaf.uid, parent.uid, len(parent.children)))

        what = repr(labels[0]) if len(labels) == 1 else f"{len(labels)} values"
        return self._push(f"Add {what} to {parent.label!r}", build)

    def delete_group(self, node: TreeNode) -> bool:
        """Remove a group; its children take its place in its parent."""
        if node is self._root or not node.is_group or node.parent is None:
            return False
        parent = node.parent

        def build() -> None:
            for child in list(node.children):
                self._do(("move", child.uid, parent.uid, node.row))
            self._do(("remove", node.uid))

        return self._push(f"Delete group {node.label!r}", build)

    def delete_leaves(self, nodes: Sequence[TreeNode]) -> bool:
        """Remove values from the domain (they can no longer be counted)."""
        nodes = [n for n in self._ordered(nodes) if not n.is_group]
        if not nodes:
            return False
        return self._push(f"Delete {self._describe(nodes)}", lambda: [self._do(("remove", n.uid)) for n in nodes])

    def rename(self, node: TreeNode, label: str) -> bool:
        label = label.strip()
        if not label or label == node.label:
            return False
        return self._push(f"Rename {node.label!r} to {label!r}", lambda: self._do(("rename", node.uid, label)))

    def move_up(self, nodes: Sequence[TreeNode]) -> bool:
        return self._shift(nodes, -1)

    def move_down(self, nodes: Sequence[TreeNode]) -> bool:
        return self._shift(nodes, +1)

    def replace(self, tree: Hierarchy | TreeNode, text: str = "Replace hierarchy") -> bool:
        """Replace the whole tree (import, builders); undoable."""
        root = tree_from_hierarchy(tree) if isinstance(tree, Hierarchy) else tree
        self._register(root)
        return self._push(text, lambda: self._do(("reset", root.uid)))

    def unique_label(self, base: str) -> str:
        labels = {n.label for n in self._root.walk()}
        if base not in labels:
            return base
        for i in itertools.count(2):
            candidate = f"{base} {i}"
            if candidate not in labels:
                return candidate
        raise AssertionError  # pragma: no cover

    # -- internals ---------------------------------------------------------------------------
    def _shift(self, nodes: Sequence[TreeNode], step: int) -> bool:
        nodes = self._ordered(nodes)
        if not nodes or any(n is self._root for n in nodes):
            return False
        parent = nodes[0].parent
        if any(n.parent is not parent for n in nodes):
            return False  # only siblings move together
        assert parent is not None
        rows = [n.row for n in nodes]
        if (step < 0 and rows[0] == 0) or (step > 0 and rows[-1] == len(parent.children) - 1):
            return False
        if step < 0:
            target_row = rows[0] - 1
        else:
            # Insert before the child that follows the one right after the last selected node.
            target_row = rows[-1] + 2
        word = "up" if step < 0 else "down"
        return self.move_nodes(nodes, parent, target_row, text=f"Move {self._describe(nodes)} {word}")

    def _ordered(self, nodes: Iterable[TreeNode]) -> list[TreeNode]:
        """Distinct attached nodes in tree order, without nodes whose ancestor is also listed."""
        wanted = {n.uid for n in nodes if self._attached(n)}
        out: list[TreeNode] = []
        for node in self._root.walk():
            if node.uid in wanted and not any(a.uid in wanted for a in self._ancestors(node)):
                out.append(node)
        return out

    @staticmethod
    def _ancestors(node: TreeNode) -> Iterator[TreeNode]:
        parent = node.parent
        while parent is not None:
            yield parent
            parent = parent.parent

    def _attached(self, node: TreeNode) -> bool:
        top = node
        while top.parent is not None:
            top = top.parent
        return top is self._root

    def _can_move(self, nodes: Sequence[TreeNode], target: TreeNode) -> bool:
        if not target.is_group or not nodes:
            return False
        for node in nodes:
            if node is self._root or node is target or node.is_ancestor_of(target):
                return False
        return True

    @staticmethod
    def _describe(nodes: Sequence[TreeNode]) -> str:
        return repr(nodes[0].label) if len(nodes) == 1 else f"{len(nodes)} items"

    def _push(self, text: str, build: Callable[[], Any]) -> bool:
        command = _EditCommand(self, text, build)  # type: ignore[arg-type]
        self.undo_stack.push(command)
        return not command.empty

    def _do(self, op: Op) -> None:
        assert self._recording is not None, "edits must run inside a command"
        ops, inverses = self._recording
        inverse = self._apply(op)
        if inverse is not None:  # None: the operation changed nothing
            ops.append(op)
            inverses.append(inverse)

    def _edited(self) -> None:
        self._cache.clear()
        self.changed.emit()

    def _register(self, root: TreeNode) -> None:
        for node in root.walk():
            self._nodes[node.uid] = node

    def _apply(self, op: Op) -> Op | None:
        """Perform one primitive operation, emitting Qt's model signals; return its inverse (None: no-op)."""
        self._cache.clear()
        kind = op[0]
        if kind == "move":
            _, uid, parent_uid, row = op
            node, target = self._nodes[uid], self._nodes[parent_uid]
            source = node.parent
            assert source is not None
            old_row = node.row
            inverse = ("move", uid, source.uid, old_row)
            if source is target and old_row == row:
                return None
            destination = row + 1 if source is target and row > old_row else row
            ok = self.beginMoveRows(self.index_of(source), old_row, old_row, self.index_of(target), destination)
            assert ok, f"invalid move of {node.label!r}"
            del source.children[old_row]
            target.children.insert(row, node)
            node.parent = target
            self.endMoveRows()
            return inverse
        if kind == "insert":
            _, uid, parent_uid, row = op
            node, parent = self._nodes[uid], self._nodes[parent_uid]
            self.beginInsertRows(self.index_of(parent), row, row)
            parent.children.insert(row, node)
            node.parent = parent
            self.endInsertRows()
            return ("remove", uid)
        if kind == "remove":
            _, uid = op
            node = self._nodes[uid]
            parent = node.parent
            assert parent is not None
            row = node.row
            self.beginRemoveRows(self.index_of(parent), row, row)
            del parent.children[row]
            node.parent = None
            self.endRemoveRows()
            return ("insert", uid, parent.uid, row)
        if kind == "rename":
            _, uid, label = op
            node = self._nodes[uid]
            old = node.label
            if old == label:
                return None
            node.label = label
            # The node itself, and any node whose duplicate highlighting may change.
            for other in self._root.walk():
                if other is node or other.label in (old, label):
                    index = self.index_of(other)
                    self.dataChanged.emit(index, index)
            return ("rename", uid, old)
        if kind == "reset":
            _, uid = op
            old = self._root
            self.beginResetModel()
            self._root = self._nodes[uid]
            self.endResetModel()
            return ("reset", old.uid)
        raise ValueError(f"unknown operation {op!r}")  # pragma: no cover

    def _duplicates(self) -> dict[str, int]:
        if "duplicates" not in self._cache:
            counts = Counter(n.label for n in self._root.walk())
            self._cache["duplicates"] = {label: c for label, c in counts.items() if c > 1}
        return self._cache["duplicates"]

    def _tooltip(self, node: TreeNode) -> str:
        lo, hi = self.leaf_position(node)
        if node.is_group:
            if node.children:
                return f"Group {node.label!r}: {hi - lo} value(s), axis positions {lo}-{hi - 1}"
            return f"Group {node.label!r} is empty"
        return f"Value {node.label!r}: axis position {lo}"

    def _icon(self, node: TreeNode) -> Any:
        from ...qt import icons

        if node.is_group and not node.children and node is not self._root:
            return icons.icon("warning")
        if node.label in self._duplicates():
            return icons.icon("warning")
        return icons.icon("group" if node.is_group else "leaf")
