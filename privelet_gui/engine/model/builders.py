"""Helpers that build a hierarchy from a list of values (no Qt).

They return engine :class:`~privelet_gui.engine.Hierarchy` objects and report whether
the leaf order had to change, so that the editor can ask before reordering (the leaf
order is the axis order).

Examples
--------
>>> h, moved = group_by_prefix(["11-1011", "11-1021", "11-2011", "13-1011"], [4, 2])
>>> h.to_nested(), moved
({'*': {'11': {'11-1': ['11-1011', '11-1021'], '11-2': ['11-2011']}, '13': {'13-1': ['13-1011']}}}, False)
>>> group_into_ranges([str(a) for a in range(1, 11)], [5]).to_nested()
{'*': {'1–5': ['1', '2', '3', '4', '5'], '6–10': ['6', '7', '8', '9', '10']}}
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import TypeAlias

from ..errors import HierarchyError, InternalError
from .hierarchy import Hierarchy, HierarchyNode

__all__ = ["flat", "group_by_prefix", "group_into_ranges", "parse_numbers"]

_LEAVES = "\x00leaves"  # the key of a group's own values in the nested dicts below
_Content: TypeAlias = "dict[str, _Content | list[str]]"


def flat(values: Sequence[str], root: str = "*") -> Hierarchy:
    """Every value directly under the root."""
    return Hierarchy.flat(list(values), root=root)


def parse_numbers(text: str) -> list[int]:
    """``"4, 2"`` -> ``[4, 2]`` (positive integers), with a clear error otherwise."""
    parts = [p.strip() for p in text.replace(";", ",").split(",") if p.strip()]
    try:
        numbers = [int(p) for p in parts]
    except ValueError:
        raise HierarchyError(f"expected whole numbers separated by commas, got {text!r}") from None
    if not numbers or any(n < 1 for n in numbers):
        raise HierarchyError(f"expected positive whole numbers separated by commas, got {text!r}")
    return numbers


def _unique_group_label(label: str, taken: set[str]) -> str:
    candidate = label
    while candidate in taken:
        candidate += "*"
    return candidate


def group_by_prefix(values: Sequence[str], lengths: Sequence[int], root: str = "*") -> tuple[Hierarchy, bool]:
    """Group codes by prefixes of the given lengths (finest first is not required).

    ``lengths`` ``[4, 2]`` turns ``11-1011`` into ``11-1011 -> 11-1 -> 11``. Groups keep
    the order in which their first value appears; the second result says whether some
    values had to move (their codes were not contiguous).
    """
    lengths = sorted({int(n) for n in lengths}, reverse=True)  # finest level first
    if not lengths or lengths[-1] < 1:
        raise HierarchyError("give at least one prefix length (a positive number of characters)")
    values = [str(v) for v in values]
    taken = set(values) | {root, _LEAVES}  # no group is labelled as the key of its values
    labels: dict[tuple[int, str], str] = {}

    def label_for(level: int, prefix: str) -> str:
        key = (level, prefix)
        if key not in labels:
            labels[key] = _unique_group_label(prefix, taken)
            taken.add(labels[key])
        return labels[key]

    # Nested ordered dicts: coarsest prefix -> ... -> finest prefix -> leaves (a list, placed
    # where the first of them came).
    tree: _Content = {}
    for value in values:
        node = tree
        for depth, length in enumerate(reversed(lengths)):  # coarsest first
            prefix = value[:length]
            if len(value) <= length:
                break  # the value is not longer than the prefix: it sits at this level
            sub = node.setdefault(label_for(len(lengths) - 1 - depth, prefix), {})
            if not isinstance(sub, dict):
                raise InternalError(f"the group {prefix!r} is also a list of values")
            node = sub
        leaves = node.setdefault(_LEAVES, [])
        if not isinstance(leaves, list):
            raise InternalError("a group's values are also a group")
        leaves.append(value)

    def build(label: str, content: _Content) -> HierarchyNode:
        children: list[HierarchyNode] = []
        for key, sub in content.items():
            if isinstance(sub, list):
                children.extend(HierarchyNode(v) for v in sub)
            else:
                children.append(build(key, sub))
        return HierarchyNode(label, tuple(children))

    hierarchy = Hierarchy(build(root, tree))
    return hierarchy, hierarchy.leaves != tuple(values)


def group_into_ranges(values: Sequence[str], widths: Sequence[int], root: str = "*") -> Hierarchy:
    """Group consecutive values, in their current order, into ranges of ``widths[0]`` values,
    then those into ranges of ``widths[1]`` values, and so on (each a multiple of the previous).

    Group labels are ``first–last`` (the first and last value of the range, joined by an en dash).
    """
    values = [str(v) for v in values]
    widths = [int(w) for w in widths]
    if not widths or any(w < 1 for w in widths):
        raise HierarchyError("range widths must be positive whole numbers")
    for finer, coarser in itertools.pairwise(widths):
        if coarser <= finer or coarser % finer:
            raise HierarchyError(
                f"each range width must be a multiple of the previous one and larger (got {finer} then {coarser})"
            )
    if not values:
        raise HierarchyError("there are no values to group")
    taken = set(values) | {root}
    level: list[tuple[int, int, HierarchyNode]] = [(i, i + 1, HierarchyNode(v)) for i, v in enumerate(values)]
    previous = 1
    for width in widths:
        step = width // previous
        grouped: list[tuple[int, int, HierarchyNode]] = []
        for start in range(0, len(level), step):
            members = level[start : start + step]
            lo, hi = members[0][0], members[-1][1]
            label = values[lo] if hi - lo == 1 else f"{values[lo]}–{values[hi - 1]}"
            label = _unique_group_label(label, taken)
            taken.add(label)
            grouped.append((lo, hi, HierarchyNode(label, tuple(m[2] for m in members))))
        level = grouped
        previous = width
    return Hierarchy(HierarchyNode(root, tuple(node for _, _, node in level)))
