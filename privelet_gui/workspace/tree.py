"""An editable hierarchy tree with undoable edits, without Qt.

The tree holds :class:`TreeNode` groups and leaves and turns into an engine
:class:`~privelet_gui.engine.Hierarchy` on demand (the engine validates it). While the
custodian edits it, the tree may be invalid (an empty group, a duplicate label):
:meth:`HierarchyTree.problems` lists what to fix, and :meth:`HierarchyTree.to_hierarchy`
raises until it is fixed.

A node's ``label`` is its code (what the data holds, for a leaf); its ``display`` is the
optional text shown for it (a display label: see :mod:`privelet_gui.engine.model.hierarchy`).
Labelling a value never changes the code the data is matched with.

Every edit is one :class:`~privelet_gui.workspace.history.Change` made of primitive
operations (move, insert, remove, rename, relabel, reset), each with its inverse, pushed on
the tree's history. Views follow the edits through a :class:`TreeObserver`, told before and
after every primitive operation (the Qt item model turns these into its row signals).
Leaf order is the attribute's axis order: the tree never reorders leaves except when
the user moves them.

>>> from privelet_gui.engine import Hierarchy
>>> tree = HierarchyTree(Hierarchy.from_nested({"*": {"EU": ["FR", "DE"], "AS": ["CN"]}}))
>>> tree.move_nodes([tree.find("FR")], tree.find("AS"))
True
>>> tree.to_hierarchy().to_nested()
{'*': {'EU': ['DE'], 'AS': ['CN', 'FR']}}
>>> tree.history.undo()
>>> tree.leaves()
('FR', 'DE', 'CN')
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from ..engine import Hierarchy, HierarchyError, HierarchyNode, InternalError
from ..engine.model.hierarchy import MAX_DISPLAY_LABEL
from .events import Event
from .history import Change, History, UndoHistory

__all__ = [
    "HierarchyTree",
    "Problem",
    "TreeNode",
    "TreeObserver",
    "tree_from_hierarchy",
    "tree_from_json",
    "tree_to_json",
]

_uids = itertools.count(1)


class TreeNode:
    """One node of the editable tree. ``is_group`` distinguishes an empty group from a leaf;
    ``label`` is the node's code, ``display`` its display label (None: none)."""

    __slots__ = ("children", "display", "is_group", "label", "parent", "uid")

    def __init__(
        self, label: str, is_group: bool = False, children: Iterable[TreeNode] = (), display: str | None = None
    ):
        self.uid: int = next(_uids)
        self.label = label
        self.display = display
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

    @property
    def shown(self) -> str:
        """The text shown for the node: its display label, else its code."""
        return self.display if self.display is not None else self.label

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
    """A fresh editable tree with the structure (and display labels) of an engine hierarchy."""
    shown = hierarchy.display_labels

    def build(node: HierarchyNode, is_root: bool) -> TreeNode:
        return TreeNode(
            node.label, is_group=is_root or not node.is_leaf, children=[build(c, False) for c in node.children],
            display=shown.get(node.label),
        )

    return build(hierarchy.root, True)


def tree_to_json(node: TreeNode) -> dict[str, Any]:
    """A JSON-able form that keeps empty groups (used for drafts in project files)."""
    out: dict[str, Any] = {"label": node.label}
    if node.display is not None:
        out["display"] = node.display
    if node.is_group:
        out["children"] = [tree_to_json(c) for c in node.children]
    return out


def tree_from_json(obj: dict[str, Any]) -> TreeNode:
    """The inverse of :func:`tree_to_json`."""
    display = obj.get("display")
    shown = None if display is None else str(display)
    if "children" in obj:
        return TreeNode(str(obj["label"]), True, [tree_from_json(c) for c in obj["children"]], display=shown)
    return TreeNode(str(obj["label"]), display=shown)


def _to_engine(node: TreeNode) -> HierarchyNode:
    return HierarchyNode(node.label, tuple(_to_engine(c) for c in node.children))


@dataclass(frozen=True)
class Problem:
    """Something to fix before the hierarchy can be used."""

    kind: Literal["missing", "empty", "duplicate", "root"]
    message: str
    uid: int | None = None  # the node concerned, if any
    value: str | None = None  # the data value concerned (kind == "missing")


class TreeObserver(Protocol):
    """What a view is told about every primitive operation (Qt's begin/end row signals)."""

    def before_move(self, node: TreeNode, target: TreeNode, row: int) -> None: ...
    def after_move(self) -> None: ...
    def before_insert(self, parent: TreeNode, row: int) -> None: ...
    def after_insert(self) -> None: ...
    def before_remove(self, node: TreeNode) -> None: ...
    def after_remove(self) -> None: ...
    def renamed(self, nodes: list[TreeNode]) -> None: ...  # their code or display label changed
    def before_reset(self) -> None: ...
    def after_reset(self) -> None: ...


# -- primitive operations ---------------------------------------------------------------
# ("move", uid, parent_uid, row_after_removal) | ("insert", uid, parent_uid, row) |
# ("remove", uid) | ("rename", uid, label) | ("relabel", uid, display or None) | ("reset", root_uid)
Op = tuple[Any, ...]


class _Edit(Change):
    """An undoable edit: a recorded list of primitive operations and their inverses.

    The first ``redo`` runs ``build``, which performs the edit and records it; later
    ones replay the recorded operations.
    """

    def __init__(self, tree: HierarchyTree, text: str, build: Callable[[], object]):
        self.text = text
        self._tree = tree
        self._build: Callable[[], object] | None = build
        self._ops: list[Op] = []
        self._inverses: list[Op] = []
        self._built = False

    def redo(self) -> None:
        tree = self._tree
        if self._build is not None:
            build, self._build = self._build, None
            tree._recording = (self._ops, self._inverses)
            try:
                build()
            finally:
                tree._recording = None
            self._built = True
        else:
            self._inverses = [inverse for op in self._ops if (inverse := tree._apply(op)) is not None]
        self._count(+1)
        tree._edited()

    def undo(self) -> None:
        self._count(-1)
        for op in reversed(self._inverses):
            self._tree._apply(op)
        self._tree._edited()

    def _count(self, step: int) -> None:
        """An edit of the tree in place (not a replacement of it) counts for its root."""
        if self._ops and not any(op[0] == "reset" for op in self._ops):
            counts = self._tree._edits
            counts[self._tree.root.uid] = counts.get(self._tree.root.uid, 0) + step

    @property
    def obsolete(self) -> bool:
        return self._built and not self._ops


class HierarchyTree:
    """An editable hierarchy (see the module docstring).

    ``history`` receives every edit (a plain :class:`UndoHistory` of its own by default;
    the workspace passes its shared one). ``edited`` is emitted after every edit, undo and
    redo included.
    """

    def __init__(self, tree: Hierarchy | TreeNode, history: History | None = None, *, name: str = ""):
        self.name = name
        self.history: Any = history if history is not None else UndoHistory()
        self.edited = Event()
        self.observers: list[TreeObserver] = []
        self._nodes: dict[int, TreeNode] = {}
        self._recording: tuple[list[Op], list[Op]] | None = None
        self._cache: dict[str, Any] = {}
        self._edits: dict[int, int] = {}  # root uid -> edits made to that tree in place (undone ones not counted)
        self._root = tree_from_hierarchy(tree) if isinstance(tree, Hierarchy) else tree
        self._register(self._root)

    # -- queries ---------------------------------------------------------------------------
    @property
    def root(self) -> TreeNode:
        return self._root

    def node_by_uid(self, uid: int) -> TreeNode:
        return self._nodes[uid]

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
            # Iterative post-order: deep trees do not hit the recursion limit.
            stack: list[tuple[TreeNode, int | None]] = [(self._root, None)]
            while stack:
                node_, start = stack.pop()
                if start is None:
                    stack.append((node_, counter))
                    if not node_.is_group:
                        counter += 1
                    stack.extend((child, None) for child in reversed(node_.children))
                else:
                    positions[node_.uid] = (start, counter)
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
                    self._cache["hierarchy"] = Hierarchy(_to_engine(self._root), self.display_labels())
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
            dups = self.duplicates()
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
            missing = self.missing_values(data_values)
            for value in missing[:limit]:
                problems.append(
                    Problem("missing", f"data value {value!r} is not in the hierarchy: add it or it cannot be counted", None, value)
                )
            if len(missing) > limit:
                problems.append(Problem("missing", f"... and {len(missing) - limit:,} more data values missing from the hierarchy"))
        return problems

    def is_edited(self) -> bool:
        """Whether replacing the tree would lose the custodian's work: it has groups under its
        root, or was edited since it was built, imported or opened (undone edits aside)."""
        return self._edits.get(self._root.uid, 0) > 0 or any(child.is_group for child in self._root.children)

    def display_labels(self) -> dict[str, str]:
        """Code -> display label of every node that has one."""
        return {n.label: n.display for n in self._root.walk() if n.display is not None}

    def missing_values(self, data_values: Collection[str]) -> list[str]:
        leaves = set(self.leaves())
        return [v for v in data_values if v not in leaves]

    def duplicates(self) -> dict[str, int]:
        """Labels used more than once, with their number of uses."""
        if "duplicates" not in self._cache:
            counts = Counter(n.label for n in self._root.walk())
            self._cache["duplicates"] = {label: c for label, c in counts.items() if c > 1}
        return self._cache["duplicates"]

    def unique_label(self, base: str) -> str:
        labels = {n.label for n in self._root.walk()}
        if base not in labels:
            return base
        for i in itertools.count(2):
            candidate = f"{base} {i}"
            if candidate not in labels:
                return candidate
        raise InternalError("itertools.count() ended")  # pragma: no cover

    def attached(self, node: TreeNode) -> bool:
        """Whether ``node`` is in the tree now (not removed by an edit)."""
        top = node
        while top.parent is not None:
            top = top.parent
        return top is self._root

    def can_move(self, nodes: Sequence[TreeNode], target: TreeNode) -> bool:
        if not target.is_group or not nodes:
            return False
        return all(node is not self._root and node is not target and not node.is_ancestor_of(target) for node in nodes)

    # -- edits (each is one undoable change) ------------------------------------------------
    def move_nodes(self, nodes: Sequence[TreeNode], target: TreeNode, row: int = -1, *, text: str | None = None) -> bool:
        """Move ``nodes`` (kept in tree order) into group ``target`` before child ``row`` (-1: at the end)."""
        nodes = self._ordered(nodes)
        if not self.can_move(nodes, target):
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

        return self._push(text or f"Move {self.describe(nodes)} to {target.label!r}", build)

    def add_group(self, nodes: Sequence[TreeNode], label: str | None = None) -> TreeNode | None:
        """Put ``nodes`` into a new group, placed where the first of them was."""
        nodes = self._ordered(nodes)
        if not nodes or any(n is self._root for n in nodes):
            return None
        label = label or self.unique_label("New group")
        first = nodes[0]
        parent, row = first.parent, first.row
        if parent is None:
            raise InternalError("the first node grouped has no parent, yet it is not the root")
        group = TreeNode(label, is_group=True)
        self._nodes[group.uid] = group

        def build() -> None:
            self._do(("insert", group.uid, parent.uid, row))
            for node in nodes:
                self._do(("move", node.uid, group.uid, len(group.children)))

        self._push(f"Group {self.describe(nodes)} as {label!r}", build)
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

    def leaf_depth(self) -> int:
        """The depth of the deepest leaves (the root is depth 1)."""
        deepest = 1
        stack = [(self._root, 1)]
        while stack:
            node, depth = stack.pop()
            if not node.is_group:
                deepest = max(deepest, depth)
            stack.extend((child, depth + 1) for child in node.children)
        return deepest

    def add_leaves_at_depth(self, labels: Sequence[str]) -> bool:
        """Append new leaves under the root, each in a chain of groups of its own (labelled
        ``"<value> (group)"``) so that it sits as deep as the other leaves (a value such as
        ``N`` then answers the same level queries as its siblings; an only child adds no
        coefficient and no sensitivity)."""
        if not labels:
            return False
        levels = max(self.leaf_depth() - 2, 0)  # groups between the root and the leaf
        taken = {n.label for n in self._root.walk()} | {str(v) for v in labels}
        chains: list[TreeNode] = []
        for label in labels:
            node = TreeNode(str(label))
            for _ in range(levels):
                group_label = f"{label} (group)"
                while group_label in taken:
                    group_label += "'"
                taken.add(group_label)
                node = TreeNode(group_label, True, [node])
            chains.append(node)
            self._register(node)

        def build() -> None:
            for chain in chains:
                self._do(("insert", chain.uid, self._root.uid, len(self._root.children)))

        what = repr(labels[0]) if len(labels) == 1 else f"{len(labels)} values"
        return self._push(f"Add {what} in a group of its own", build)

    def remove_branch(self, leaf: TreeNode, text: str | None = None) -> bool:
        """Remove a value together with the groups above it that hold nothing else (the group
        of its own :meth:`add_leaves_at_depth` made for it), as one edit."""
        if leaf.is_group or not self.attached(leaf):
            return False
        top = leaf
        while top.parent is not None and top.parent is not self._root and len(top.parent.children) == 1:
            top = top.parent
        return self._push(text or f"Remove {leaf.label!r}", lambda: self._do(("remove", top.uid)))

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

        def build() -> None:
            for node in nodes:
                self._do(("remove", node.uid))

        return self._push(f"Delete {self.describe(nodes)}", build)

    def rename(self, node: TreeNode, label: str) -> bool:
        """Change a node's code (for a leaf: the value the data must hold to count there)."""
        label = label.strip()
        if not label or label == node.label:
            return False
        return self._push(f"Rename {node.label!r} to {label!r}", lambda: self._do(("rename", node.uid, label)))

    def set_display_label(self, node: TreeNode, text: str | None) -> bool:
        """Show ``text`` for the node (empty, None or its code: no display label); its code,
        and so what it counts, stays. The groups :meth:`add_leaves_at_depth` made for a value
        follow its label (see :meth:`set_display_labels`)."""
        display = _display_text(node, text)
        if display == node.display:
            return False
        what = f"Label {node.label!r} {display!r}" if display is not None else f"Remove the label of {node.label!r}"
        changes = [(node, display), *_made_group_labels(node, display)]

        def build() -> None:
            for changed, shown in changes:
                self._do(("relabel", changed.uid, shown))

        return self._push(what, build)

    def set_display_labels(self, labels: Mapping[str, str], text: str = "Import labels") -> int:
        """Give every node whose code ``labels`` names that display label, as one edit; the
        number of nodes whose label changed. A group :meth:`add_leaves_at_depth` made for a
        value (``N (group)``), unless labelled itself, shows the value's label too
        (``N/A (group)``)."""
        targets = [(node, _display_text(node, labels[node.label])) for node in self._root.walk() if node.label in labels]
        changes = [(node, display) for node, display in targets if display != node.display]
        named = {node.uid for node, _ in targets}
        changes += [(group, shown) for node, display in changes for group, shown in _made_group_labels(node, display)
                    if group.uid not in named]
        if not changes:
            return 0

        def build() -> None:
            for node, display in changes:
                self._do(("relabel", node.uid, display))

        self._push(text, build)
        return len(changes)

    def move_up(self, nodes: Sequence[TreeNode]) -> bool:
        return self._shift(nodes, -1)

    def move_down(self, nodes: Sequence[TreeNode]) -> bool:
        return self._shift(nodes, +1)

    def replace(self, tree: Hierarchy | TreeNode, text: str = "Replace hierarchy") -> bool:
        """Replace the whole tree (import, builders); undoable. Codes that stay keep their display
        labels, unless the new hierarchy labels them itself."""
        if isinstance(tree, Hierarchy):
            kept = {code: shown for code, shown in self.display_labels().items() if code in tree}
            if kept:
                tree = tree.with_display_labels({**kept, **tree.display_labels})
        root = tree_from_hierarchy(tree) if isinstance(tree, Hierarchy) else tree
        self._register(root)
        return self._push(text, lambda: self._do(("reset", root.uid)))

    # -- internals ---------------------------------------------------------------------------
    def _shift(self, nodes: Sequence[TreeNode], step: int) -> bool:
        nodes = self._ordered(nodes)
        if not nodes or any(n is self._root for n in nodes):
            return False
        parent = nodes[0].parent
        if any(n.parent is not parent for n in nodes):
            return False  # only siblings move together
        if parent is None:
            raise InternalError("the nodes moved have no parent, yet none is the root")
        rows = [n.row for n in nodes]
        if (step < 0 and rows[0] == 0) or (step > 0 and rows[-1] == len(parent.children) - 1):
            return False
        # Up: before the previous sibling; down: before the child after the next one.
        target_row = rows[0] - 1 if step < 0 else rows[-1] + 2
        word = "up" if step < 0 else "down"
        return self.move_nodes(nodes, parent, target_row, text=f"Move {self.describe(nodes)} {word}")

    def _ordered(self, nodes: Iterable[TreeNode]) -> list[TreeNode]:
        """Distinct attached nodes in tree order, without nodes whose ancestor is also listed."""
        wanted = {n.uid for n in nodes if self.attached(n)}
        out: list[TreeNode] = []
        for node in self._root.walk():
            if node.uid in wanted and not any(a.uid in wanted for a in _ancestors(node)):
                out.append(node)
        return out

    @staticmethod
    def describe(nodes: Sequence[TreeNode]) -> str:
        """``'FR'`` for one node, ``3 items`` for several (the text of an edit)."""
        return repr(nodes[0].label) if len(nodes) == 1 else f"{len(nodes)} items"

    def _push(self, text: str, build: Callable[[], object]) -> bool:
        edit = _Edit(self, text, build)
        self.history.push(edit)
        return not edit.obsolete

    def _do(self, op: Op) -> None:
        if self._recording is None:
            raise InternalError("an edit of the tree ran outside a change (edits must run inside one)")
        ops, inverses = self._recording
        inverse = self._apply(op)
        if inverse is not None:  # None: the operation changed nothing
            ops.append(op)
            inverses.append(inverse)

    def _edited(self) -> None:
        self._cache.clear()
        self.edited.emit()

    def _register(self, root: TreeNode) -> None:
        for node in root.walk():
            self._nodes[node.uid] = node

    def _apply(self, op: Op) -> Op | None:
        """Perform one primitive operation, telling the observers; return its inverse (None: no-op)."""
        self._cache.clear()
        kind = op[0]
        if kind == "move":
            _, uid, parent_uid, row = op
            node, target = self._nodes[uid], self._nodes[parent_uid]
            source = node.parent
            if source is None:
                raise InternalError(f"the node {node.label!r} moved has no parent (the root never moves)")
            old_row = node.row
            if source is target and old_row == row:
                return None
            for observer in self.observers:
                observer.before_move(node, target, row)
            del source.children[old_row]
            target.children.insert(row, node)
            node.parent = target
            for observer in self.observers:
                observer.after_move()
            return ("move", uid, source.uid, old_row)
        if kind == "insert":
            _, uid, parent_uid, row = op
            node, parent = self._nodes[uid], self._nodes[parent_uid]
            for observer in self.observers:
                observer.before_insert(parent, row)
            parent.children.insert(row, node)
            node.parent = parent
            for observer in self.observers:
                observer.after_insert()
            return ("remove", uid)
        if kind == "remove":
            _, uid = op
            node = self._nodes[uid]
            source = node.parent
            if source is None:
                raise InternalError(f"the node {node.label!r} removed has no parent (the root is never removed)")
            row = node.row
            for observer in self.observers:
                observer.before_remove(node)
            del source.children[row]
            node.parent = None
            for observer in self.observers:
                observer.after_remove()
            return ("insert", uid, source.uid, row)
        if kind == "rename":
            _, uid, label = op
            node = self._nodes[uid]
            old = node.label
            if old == label:
                return None
            node.label = label
            # The node itself, and any node whose duplicate highlighting may change.
            touched = [other for other in self._root.walk() if other is node or other.label in (old, label)]
            for observer in self.observers:
                observer.renamed(touched)
            return ("rename", uid, old)
        if kind == "relabel":
            _, uid, display = op
            node = self._nodes[uid]
            old_display = node.display
            if old_display == display:
                return None
            node.display = display
            for observer in self.observers:
                observer.renamed([node])
            return ("relabel", uid, old_display)
        if kind == "reset":
            _, uid = op
            old_root = self._root
            for observer in self.observers:
                observer.before_reset()
            self._root = self._nodes[uid]
            for observer in self.observers:
                observer.after_reset()
            return ("reset", old_root.uid)
        raise InternalError(f"unknown operation {op[0]!r} of the tree's history")  # pragma: no cover


def _display_text(node: TreeNode, text: str | None) -> str | None:
    """A display label as stored: one line (runs of spaces and line breaks made one space),
    at most :data:`~privelet_gui.engine.model.hierarchy.MAX_DISPLAY_LABEL` characters; None for
    none (empty, or the code itself)."""
    shown = " ".join((text or "").split())[:MAX_DISPLAY_LABEL]
    return None if not shown or shown == node.label else shown


def _made_group_labels(leaf: TreeNode, display: str | None) -> list[tuple[TreeNode, str | None]]:
    """The labels of the groups :meth:`HierarchyTree.add_leaves_at_depth` made for ``leaf``
    (``"<code> (group)"``, each the only child of the next) once the leaf shows ``display``:
    ``"<display> (group)"`` (None without one). A group labelled otherwise by the custodian keeps its label."""
    if leaf.is_group:
        return []
    old = None if leaf.display is None else f"{leaf.display} (group)"
    new = None if display is None else f"{display} (group)"
    made: list[tuple[TreeNode, str | None]] = []
    node = leaf
    while (group := node.parent) is not None and len(group.children) == 1 and group.parent is not None:
        if group.label.rstrip("'") != f"{leaf.label} (group)":
            break
        if group.display in (None, old):
            made.append((group, _display_text(group, new)))
        node = group
    return made


def _ancestors(node: TreeNode) -> Iterator[TreeNode]:
    parent = node.parent
    while parent is not None:
        yield parent
        parent = parent.parent
