"""Hierarchies of nominal attributes.

A hierarchy is a tree whose leaves are the attribute's domain values; the
left-to-right order of the leaves is the attribute's axis order in the
frequency matrix, so every node covers a contiguous range of leaf indices.
Labels are unique across the whole tree, which lets a query name a node by
its label.

A node's label is its *code*: what the data holds (leaves) and what queries and counting
match. A hierarchy may also carry *display labels*, text shown for a code where people read
it (the app's tree and drop-downs, a ``<attribute>_label`` column in exports): an ACS
industry category ``"4"`` displayed as ``"MFG: Manufacturing"``. Display labels are
presentation only: they never change what is counted, and hierarchies that differ only in
them are equal.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from types import MappingProxyType

import numpy as np

from ..errors import HierarchyError, shown

__all__ = ["MAX_DISPLAY_LABEL", "MAX_HEIGHT", "Hierarchy", "HierarchyNode", "NodeInfo"]

#: The longest display label, in characters (official titles run to a few hundred).
MAX_DISPLAY_LABEL = 1000

#: The most levels a hierarchy may have (the root is level 1). Real ones have a handful; the
#: limit keeps every walk of a tree far from Python's recursion limit, so that a damaged file
#: nested thousands of levels deep is refused with a message instead of a RecursionError.
MAX_HEIGHT = 100


@dataclass(frozen=True)
class HierarchyNode:
    """One node of a hierarchy: a leaf when it has no children.

    Attributes
    ----------
    label : str
        The node's code (non-empty text, unique in its hierarchy).
    children : tuple of HierarchyNode, default ()
        Its children, left to right; empty for a leaf.
    """

    label: str
    children: tuple[HierarchyNode, ...] = ()

    @property
    def is_leaf(self) -> bool:
        return not self.children


@dataclass(frozen=True)
class NodeInfo:
    """A node seen while walking a hierarchy (see :meth:`Hierarchy.nodes`).

    ``lo`` and ``hi`` delimit the node's leaves as a half-open range of leaf
    indices: the node covers axis positions ``lo, lo + 1, ..., hi - 1``.

    Attributes
    ----------
    index : int
        Level-order index (the root is 0).
    label : str
        The node's code.
    depth : int
        1 for the root.
    lo, hi : int
        See above.
    parent : int
        The parent's index; -1 for the root.
    fanout : int
        Number of children (0 for a leaf).
    """

    index: int
    label: str
    depth: int
    lo: int
    hi: int
    parent: int
    fanout: int

    @property
    def is_leaf(self) -> bool:
        return self.fanout == 0


@dataclass(frozen=True)
class _Layout:
    """Array view of a hierarchy in breadth-first (level) order.

    Index 0 is the root. The children of a node are contiguous, and the nodes
    of each depth form one contiguous block, in which children appear in the
    order of their parents. Nominal wavelet coefficients use this order.
    """

    parent: np.ndarray  # (n_nodes,) intp; -1 for the root
    depth: np.ndarray  # (n_nodes,) 1-based
    lo: np.ndarray  # (n_nodes,) first leaf index
    hi: np.ndarray  # (n_nodes,) one past the last leaf index
    fanout: np.ndarray  # (n_nodes,) number of children (0 for leaves)
    first_child: np.ndarray  # (n_nodes,) index of the first child (-1 for leaves)
    leaf_nodes: np.ndarray  # (n_leaves,) node index of each leaf, in leaf order
    depth_starts: np.ndarray  # (max_depth + 1,) start of each depth's block, plus the end

    @property
    def parent_fanout(self) -> np.ndarray:
        """Fan-out of each node's parent (1 for the root, which has none)."""
        out = np.ones(len(self.parent), dtype=np.intp)
        out[1:] = self.fanout[self.parent[1:]]
        return out


class Hierarchy:
    """An immutable, validated hierarchy.

    Build one with :meth:`from_nested`, :meth:`flat` or from a tree of
    :class:`HierarchyNode`.

    Parameters
    ----------
    root : HierarchyNode
        The tree.
    display_labels : mapping of str to str, optional
        Code -> text shown for some nodes (one line of non-empty text each).

    Raises
    ------
    HierarchyError
        Duplicate or empty labels, a node that is not a :class:`HierarchyNode`, children not a
        tuple, a tree too deep, or display labels that are not text or name no node.

    Examples
    --------
    >>> h = Hierarchy.from_nested(
    ...     {"All": {"Europe": ["FR", "DE"], "Asia": {"East": ["CN", "JP"], "South": ["IN"]}}})
    >>> h.leaves
    ('FR', 'DE', 'CN', 'JP', 'IN')
    >>> h.height, h.rho
    (4, 4)
    >>> h.leaf_range("Asia")
    (2, 5)

    A node that is its parent's only child ("East" below) does not count towards rho:

    >>> Hierarchy.from_nested({"*": {"Europe": ["FR", "DE"], "Asia": {"East": ["CN", "JP"]}}}).rho
    3

    Display labels (code -> text shown) change nothing but what people read:

    >>> sex = Hierarchy.flat(["1", "2"]).with_display_labels({"1": "Male", "2": "Female"})
    >>> sex.leaves, sex.display_label("2"), sex == Hierarchy.flat(["1", "2"])
    (('1', '2'), 'Female', True)
    """

    def __init__(self, root: HierarchyNode, display_labels: Mapping[str, str] | None = None):
        _validate(root)
        self._root = root
        self._display: Mapping[str, str] = MappingProxyType(
            _checked_display_labels(display_labels, self._index) if display_labels else {}
        )

    # -- construction -----------------------------------------------------------------
    @classmethod
    def from_nested(cls, obj: Mapping[str, object]) -> Hierarchy:
        """Build a hierarchy from a nested mapping.

        The mapping has exactly one key, the root. A dict holds groups
        (label -> children); a list holds leaves (strings) and may also hold
        one-key dicts for groups. Integers are accepted as labels and turned
        into text, because table columns are read as text.

        Parameters
        ----------
        obj : mapping
            ``{root: children}`` as above (the form of a hierarchy's JSON).

        Returns
        -------
        Hierarchy

        Raises
        ------
        HierarchyError
            Not a one-key mapping, an empty group, a label that is not text (or an int), empty or
            repeated, or a tree too deep.
        """
        if not isinstance(obj, Mapping) or len(obj) != 1:
            raise HierarchyError(
                "a nested hierarchy must be a mapping with exactly one key, the root label, "
                'e.g. {"*": ["Male", "Female"]}'
                + (f"; got {len(obj)} top-level keys" if isinstance(obj, Mapping) else f"; got {type(obj).__name__}")
            )
        ((label, children),) = obj.items()
        root = _parse_group(_label(label, "the root"), children, path=())
        return cls(root)

    @classmethod
    def flat(cls, labels: Sequence[object], root: str = "*") -> Hierarchy:
        """A two-level hierarchy: every label directly under ``root``.

        Parameters
        ----------
        labels : sequence
            The leaves, in axis order (text, or integers turned into text); none gives the
            root alone.
        root : str, default "*"
            The root's label.

        Returns
        -------
        Hierarchy

        Raises
        ------
        HierarchyError
            A label that is not text or an int, empty or repeated.
        """
        return cls(HierarchyNode(root, tuple(HierarchyNode(_label(v, root)) for v in labels)))

    def to_nested(self) -> dict[str, object]:
        """The inverse of :meth:`from_nested` (lists for leaf-only groups; display labels are
        not part of it: see :attr:`display_labels`).

        Returns
        -------
        dict of str to object
            ``{root: children}``, JSON-serialisable.
        """
        return {self._root.label: _to_nested(self._root)}

    # -- display labels -----------------------------------------------------------------
    @property
    def display_labels(self) -> Mapping[str, str]:
        """Code -> display label, for the nodes that have one (read-only)."""
        return self._display

    def display_label(self, code: str) -> str:
        """The text shown for the node ``code``: its display label, else the code itself.

        Parameters
        ----------
        code : str
            A node's code.

        Returns
        -------
        str
        """
        return self._display.get(code, code)

    def with_display_labels(self, labels: Mapping[str, str]) -> Hierarchy:
        """The same tree with ``labels`` (code -> text) as its display labels, replacing any it
        had. Every code must be a node of the tree; a label equal to its code is dropped.

        Parameters
        ----------
        labels : mapping of str to str
            Code -> text (one line of non-empty text each).

        Returns
        -------
        Hierarchy
            Equal to this one (display labels are not compared).

        Raises
        ------
        HierarchyError
            A code that is no node, or a label that is not one line of non-empty text.
        """
        return Hierarchy(self._root, labels)

    @property
    def leaf_display_labels(self) -> tuple[str, ...] | None:
        """The display label of each leaf in axis order (its code where it has none), or None
        when no leaf has one."""
        if not any(leaf in self._display for leaf in self.leaves):
            return None
        return tuple(self._display.get(leaf, leaf) for leaf in self.leaves)

    # -- basic facts ------------------------------------------------------------------
    @property
    def root(self) -> HierarchyNode:
        return self._root

    @cached_property
    def leaves(self) -> tuple[str, ...]:
        """Leaf labels in axis order (left to right)."""
        return tuple(self._labels[i] for i in self.layout.leaf_nodes)

    @property
    def size(self) -> int:
        """Number of leaves, |A|."""
        return len(self.layout.leaf_nodes)

    @property
    def n_nodes(self) -> int:
        """Number of nodes, leaves included (= number of nominal wavelet coefficients)."""
        return len(self._labels)

    @cached_property
    def height(self) -> int:
        """Number of levels on the longest root-to-leaf path (root = level 1)."""
        return int(self.layout.depth.max())

    @cached_property
    def rho(self) -> int:
        """The nominal transform's generalized sensitivity h (docs/math.md, "The nominal wavelet").

        Levels where a node is its parent's only child are not counted: their
        coefficients are identically zero.
        """
        lay = self.layout
        counted = np.zeros(self.n_nodes, dtype=np.intp)
        counted[0] = 1
        pf = lay.parent_fanout
        for i in range(1, self.n_nodes):  # parents precede children in level order
            counted[i] = counted[lay.parent[i]] + (1 if pf[i] > 1 else 0)
        return int(counted[lay.leaf_nodes].max())

    @cached_property
    def labels(self) -> tuple[str, ...]:
        """Every node label in level order (the nominal coefficient order)."""
        return tuple(self._labels)

    def __contains__(self, label: object) -> bool:
        return label in self._index

    def index_of(self, label: str) -> int:
        """Level-order index of the node called ``label``.

        Parameters
        ----------
        label : str
            A node's code.

        Returns
        -------
        int
            ``0 <= index < n_nodes``.

        Raises
        ------
        HierarchyError
            No node has that code.
        """
        try:
            return self._index[label]
        except KeyError:
            raise HierarchyError(f"no node called {label!r} in the hierarchy rooted at {self._root.label!r}") from None

    def leaf_range(self, label: str) -> tuple[int, int]:
        """Half-open range ``(lo, hi)`` of leaf indices under the node ``label``.

        Parameters
        ----------
        label : str
            A node's code.

        Returns
        -------
        tuple of (int, int)
            ``(lo, hi)``, ``0 <= lo < hi <= size``.

        Raises
        ------
        HierarchyError
            No node has that code.
        """
        i = self.index_of(label)
        return int(self.layout.lo[i]), int(self.layout.hi[i])

    def nodes(self) -> Iterator[NodeInfo]:
        """Walk every node in level order with its depth and leaf index range.

        Yields
        ------
        NodeInfo
            One per node, root first.
        """
        lay = self.layout
        for i, label in enumerate(self._labels):
            yield NodeInfo(
                index=i,
                label=label,
                depth=int(lay.depth[i]),
                lo=int(lay.lo[i]),
                hi=int(lay.hi[i]),
                parent=int(lay.parent[i]),
                fanout=int(lay.fanout[i]),
            )

    # -- internals --------------------------------------------------------------------
    @cached_property
    def _bfs(self) -> list[tuple[HierarchyNode, int, int]]:
        """(node, parent index, depth) in level order."""
        order: list[tuple[HierarchyNode, int, int]] = [(self._root, -1, 1)]
        i = 0
        while i < len(order):
            node, _, depth = order[i]
            order.extend((child, i, depth + 1) for child in node.children)
            i += 1
        return order

    @cached_property
    def _labels(self) -> list[str]:
        return [node.label for node, _, _ in self._bfs]

    @cached_property
    def _index(self) -> dict[str, int]:
        return {label: i for i, label in enumerate(self._labels)}

    @cached_property
    def layout(self) -> _Layout:
        bfs = self._bfs
        n = len(bfs)
        parent = np.array([p for _, p, _ in bfs], dtype=np.intp)
        depth = np.array([d for _, _, d in bfs], dtype=np.intp)
        fanout = np.array([len(node.children) for node, _, _ in bfs], dtype=np.intp)
        first_child = np.full(n, -1, dtype=np.intp)
        for i in range(n - 1, 0, -1):
            first_child[parent[i]] = i
        # Leaf ranges: leaves are numbered in depth-first (left-to-right) order.
        lo = np.zeros(n, dtype=np.intp)
        hi = np.zeros(n, dtype=np.intp)
        leaf_nodes: list[int] = []
        stack = [(0, False)]
        while stack:
            i, done = stack.pop()
            if done:
                last = first_child[i] + fanout[i] - 1
                hi[i] = hi[last]
                continue
            lo[i] = len(leaf_nodes)
            if fanout[i] == 0:
                leaf_nodes.append(i)
                hi[i] = lo[i] + 1
            else:
                stack.append((i, True))
                stack.extend((c, False) for c in range(first_child[i] + fanout[i] - 1, first_child[i] - 1, -1))
        depth_starts = np.searchsorted(depth, np.arange(1, depth.max() + 2))
        return _Layout(
            parent=parent,
            depth=depth,
            lo=lo,
            hi=hi,
            fanout=fanout,
            first_child=first_child,
            leaf_nodes=np.array(leaf_nodes, dtype=np.intp),
            depth_starts=depth_starts,
        )

    def cut(self, level: int) -> Hierarchy:
        """This hierarchy with every node at ``level`` (root = 1) made a leaf (its subtree dropped).

        Parameters
        ----------
        level : int
            The level whose nodes become leaves (root = 1: the root alone); at the height or
            beyond, nothing changes.

        Returns
        -------
        Hierarchy
            The cut tree, with the display labels of the nodes it keeps.
        """

        def prune(node: HierarchyNode, depth: int) -> HierarchyNode:
            if depth >= level or node.is_leaf:
                return HierarchyNode(node.label)
            return HierarchyNode(node.label, tuple(prune(child, depth + 1) for child in node.children))

        pruned = prune(self._root, 1)
        kept = {node.label for node in _walk(pruned)}
        return Hierarchy(pruned, {code: text for code, text in self._display.items() if code in kept})

    def __eq__(self, other: object) -> bool:
        # Display labels are presentation: relabelling a hierarchy changes no count, no query and
        # no release made with it (a release is not stale because a label was reworded).
        return isinstance(other, Hierarchy) and other._root == self._root

    def __hash__(self) -> int:
        return self._hash

    @cached_property
    def _hash(self) -> int:
        return hash(self._root)

    def __repr__(self) -> str:
        return f"Hierarchy(root={self._root.label!r}, leaves={self.size}, height={self.height})"


def _walk(root: HierarchyNode) -> Iterator[HierarchyNode]:
    stack = [root]
    while stack:
        node = stack.pop()
        yield node
        stack.extend(node.children)


def _checked_display_labels(labels: object, codes: Mapping[str, int]) -> dict[str, str]:
    """Display labels as stored: text for codes of the tree, one line each, not too long;
    labels equal to their code are left out (they say nothing)."""
    if not isinstance(labels, Mapping):
        raise HierarchyError(f"display labels must map codes to text, got {type(labels).__name__}")
    out: dict[str, str] = {}
    for code, text in labels.items():
        if not isinstance(code, str) or code not in codes:
            raise HierarchyError(
                f"a display label is given for {shown(code)}, which is not a value or group of the hierarchy; "
                "give labels for its codes only"
            )
        if not isinstance(text, str) or not text.strip():
            raise HierarchyError(f"the display label of {code!r} must be non-empty text, got {text!r}")
        if len(text) > MAX_DISPLAY_LABEL:
            raise HierarchyError(
                f"the display label of {code!r} has {len(text):,} characters, more than {MAX_DISPLAY_LABEL:,}; "
                "shorten it"
            )
        if "\n" in text or "\r" in text:
            raise HierarchyError(f"the display label of {code!r} holds a line break; a label is one line of text")
        if text != code:
            out[code] = text
    return out


def _label(value: object, where: str) -> str:
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise HierarchyError(f"label {shown(value)} in {where} must be text, not {type(value).__name__}")
    if isinstance(value, int) and value.bit_length() > 1000:
        raise HierarchyError(f"a label in {where} is an integer of {value.bit_length():,} bits; write labels as text")
    text = str(value)
    if not text:
        raise HierarchyError(f"an empty label in {where}: every node needs a non-empty label")
    return text


def _describe(path: tuple[str, ...]) -> str:
    if len(path) > 6:  # a deep path: its start and its end say where
        path = (*path[:3], "...", *path[-2:])
    return " > ".join(path) if path else "the top level"


def _too_deep(path: tuple[str, ...]) -> HierarchyError:
    return HierarchyError(
        f"group {_describe(path)} is nested more than {MAX_HEIGHT} levels deep; "
        f"a hierarchy has at most {MAX_HEIGHT} levels"
    )


def _parse_group(label: str, value: object, path: tuple[str, ...]) -> HierarchyNode:
    here = (*path, label)
    if len(here) >= MAX_HEIGHT and isinstance(value, (Mapping, list, tuple)) and value:
        raise _too_deep(here)  # its children would be a level too many (checked before recursing)
    children: list[HierarchyNode] = []
    if isinstance(value, Mapping):
        for child_label, child_value in value.items():
            children.append(_parse_group(_label(child_label, f"group {_describe(here)}"), child_value, here))
    elif isinstance(value, (list, tuple)):
        for item in value:
            if isinstance(item, Mapping):
                for child_label, child_value in item.items():
                    children.append(_parse_group(_label(child_label, f"group {_describe(here)}"), child_value, here))
            else:
                children.append(HierarchyNode(_label(item, f"group {_describe(here)}")))
    else:
        raise HierarchyError(
            f"group {_describe(here)} must hold a list of leaves or a mapping of groups, "
            f"not {type(value).__name__} {shown(value)}"
        )
    if not children:
        raise HierarchyError(f"group {_describe(here)} is empty: add leaves to it or delete it")
    return HierarchyNode(label, tuple(children))


def _to_nested(node: HierarchyNode) -> object:
    if all(child.is_leaf for child in node.children):
        return [child.label for child in node.children]
    if all(not child.is_leaf for child in node.children):
        return {child.label: _to_nested(child) for child in node.children}
    return [child.label if child.is_leaf else {child.label: _to_nested(child)} for child in node.children]


def _validate(root: HierarchyNode) -> None:
    """Reject duplicate labels and non-text labels, naming where they occur."""
    seen: dict[str, tuple[str, ...]] = {}
    stack: list[tuple[HierarchyNode, tuple[str, ...]]] = [(root, ())]
    while stack:
        node, path = stack.pop()
        if not isinstance(node, HierarchyNode):
            raise HierarchyError(f"a node under {_describe(path)} is a {type(node).__name__}, not a HierarchyNode")
        if not isinstance(node.label, str) or not node.label:
            raise HierarchyError(f"node under {_describe(path)} has an invalid label {node.label!r}: use non-empty text")
        here = (*path, node.label)
        if len(here) > MAX_HEIGHT:
            raise _too_deep(path)
        if not isinstance(node.children, tuple):
            raise HierarchyError(f"the children of {_describe(here)} must be a tuple of nodes")
        if node.label in seen:
            raise HierarchyError(
                f"label {node.label!r} appears twice: at {_describe(seen[node.label])} and at {_describe(here)}; "
                "labels must be unique across the hierarchy, rename one of them"
            )
        seen[node.label] = here
        stack.extend((child, here) for child in reversed(node.children))
