"""Hierarchy files: the ARX CSV layout and nested JSON.

ARX layout (as used by the ARX anonymisation tool): no header, one row per leaf,
``leaf;level1;...;root``, every row the same length, separator ``;`` by default
(``,``, ``|`` and TAB are sniffed too), optional UTF-8 byte-order mark, CRLF tolerated.
Example, with height 3::

    Tech-support;Technical;*
    Craft-repair;Technical;*
    Sales;Nontechnical;*

How ARX rows become a tree (the engine needs unique labels across the whole tree,
while ARX labels only need to be unique within a level):

- **Leaf order** is the row order of the file. Where a group's rows are not
  adjacent in the file, they are gathered under the group at its first row (stable),
  because every node of a hierarchy covers a contiguous run of leaves.
- **Collapse.** A group whose label equals the label of its only child is the same
  value repeated one level up (ARX's way of keeping every row the same length when a
  branch is shorter, e.g. ``Micronesia;Micronesia;Oceania;*`` if Micronesia were
  alone in its sub-region). Such a level carries no information and no wavelet
  coefficient (an only child's coefficient is identically zero), so the group is
  replaced by its child. The writer pads short branches the same way (repeating the
  leaf), so unbalanced trees round-trip.
- **Rename.** A label reused at a higher level with other members (in the UN M49
  country file, the country ``Micronesia`` lies in the sub-region ``Micronesia``) is
  kept by the lowest level, so leaves always keep their text and match the data;
  the higher occurrence becomes ``"Micronesia (level 1)"`` (its ARX column, leaves
  being level 0), and :class:`HierarchyLabelWarning` says so. Pass
  ``rename=False`` to get an error instead.

Errors name the line: ragged rows, empty labels, a label with two parents
("X can be generalised to Y or to Z"), duplicate leaves, several roots.

**Display labels.** ARX files hold one text per node, which is its code (what the data
holds); they have no room for a label beside it. Labels come from another file
(:func:`read_display_labels`): a data dictionary (JSON: ``{column: {"values": {code: label}}}``,
as the NIST ACS excerpts ship), a flat JSON object ``{code: label}``, a two-column CSV
``code,label``, or a *labelled twin* of an ARX hierarchy: the same rows with labels in place
of the codes (``170;AGR;*`` beside ``170;0;*``), each cell labelling the code in the same
place. Nested-JSON hierarchies do not hold labels either; schema files do.
"""

from __future__ import annotations

import csv
import io
import json
import os
import re
import warnings
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from ..engine import Hierarchy, HierarchyError, HierarchyNode
from ..engine.model.hierarchy import MAX_HEIGHT
from ._json import loads
from .atomic import atomic_write
from .tables import _lines, sniff_delimiter

__all__ = [
    "ARX_DELIMITERS",
    "DisplayLabels",
    "HierarchyLabelWarning",
    "check_display_labels",
    "hierarchy_from_arx_rows",
    "hierarchy_summary",
    "hierarchy_to_arx_rows",
    "label_dictionary_entries",
    "read_arx_hierarchy",
    "read_display_labels",
    "read_hierarchy",
    "read_json_hierarchy",
    "write_arx_hierarchy",
    "write_hierarchy",
    "write_json_hierarchy",
]

#: ARX's separator first: it wins ties when sniffing.
ARX_DELIMITERS: tuple[str, ...] = (";", ",", "\t", "|")

HierarchyFormat = Literal["arx", "json"]


class HierarchyLabelWarning(UserWarning):
    """An ARX label reused at two levels was renamed to keep labels unique."""


# -- ARX rows -> tree ----------------------------------------------------------------------


def hierarchy_from_arx_rows(
    rows: Iterable[Sequence[str]],
    *,
    line_numbers: Sequence[int] | None = None,
    rename: bool = True,
    source: str = "",
) -> Hierarchy:
    """Build a hierarchy from ARX rows ``[leaf, level1, ..., root]`` (see the module doc).

    ``line_numbers`` gives each row's line in its file (default 1, 2, ...), for
    messages; ``source`` (a file name) prefixes them.

    Examples
    --------
    >>> h = hierarchy_from_arx_rows([["Tech-support", "Technical", "*"],
    ...                              ["Sales", "Nontechnical", "*"],
    ...                              ["Craft-repair", "Technical", "*"]])
    >>> h.leaves, h.height
    (('Tech-support', 'Craft-repair', 'Sales'), 3)
    >>> hierarchy_from_arx_rows([["a", "G", "*"], ["a", "H", "*"]])
    Traceback (most recent call last):
    ...
    privelet_gui.engine.errors.HierarchyError: leaf 'a' is listed twice, on lines 1 and 2; each value needs exactly one row
    """
    table = [list(r) for r in rows]
    lines = list(line_numbers) if line_numbers is not None else list(range(1, len(table) + 1))
    prefix = f"{source}: " if source else ""

    def fail(message: str) -> HierarchyError:
        return HierarchyError(prefix + message)

    if not table:
        raise fail("the hierarchy has no rows; give one row per value: leaf;group;...;*")
    # A separator at the end of every row (a common export quirk) adds an empty last column.
    if all(len(r) > 1 and r[-1] == "" for r in table):
        table = [r[:-1] for r in table]
    width = len(table[0])
    if width > MAX_HEIGHT:  # checked before the tree is built (recursively, one level per column)
        raise fail(
            f"line {lines[0]} has {width} columns, more than the {MAX_HEIGHT} levels a hierarchy may have; "
            "check the separator"
        )
    ragged = [(line, len(r)) for line, r in zip(lines, table, strict=True) if len(r) != width]
    if ragged:
        shown = ", ".join(f"line {line} has {n}" for line, n in ragged[:3]) + (", ..." if len(ragged) > 3 else "")
        raise fail(
            f"rows have different lengths: line {lines[0]} has {width} columns but {shown}; "
            "every row lists a value and all its generalisations up to the root, so all rows need the same length"
        )
    if width < 2:
        raise fail(
            "each row needs at least two columns, the value and the root (e.g. 'Male;*'); "
            "check the separator"
        )
    for line, r in zip(lines, table, strict=True):
        for col, label in enumerate(r):
            if label == "":
                raise fail(f"line {line}, column {col + 1} is empty: every level needs a label")
            if "\n" in label or "\r" in label:
                raise fail(
                    f"the row ending on line {line} has a label holding a line break (column {col + 1}); "
                    "an ARX file has one row per line: is a quote left open?"
                )
    roots = dict.fromkeys(r[-1] for r in table)
    if len(roots) > 1:
        first, second = list(roots)[:2]
        where = next(line for line, r in zip(lines, table, strict=True) if r[-1] == second)
        raise fail(
            f"the last column must hold one root for every row, but it holds {first!r} and {second!r} "
            f"(line {where}); add a final column '*' to every row"
        )
    # Leaves once each; each (level, label) with one parent.
    leaf_line: dict[str, int] = {}
    parent: dict[tuple[int, str], tuple[str, int]] = {}
    for line, r in zip(lines, table, strict=True):
        if r[0] in leaf_line:
            raise fail(
                f"leaf {r[0]!r} is listed twice, on lines {leaf_line[r[0]]} and {line}; each value needs exactly one row"
            )
        leaf_line[r[0]] = line
        for level in range(1, width - 1):
            key = (level, r[level])
            seen = parent.get(key)
            if seen is None:
                parent[key] = (r[level + 1], line)
            elif seen[0] != r[level + 1]:
                raise fail(
                    f"{r[level]!r} (level {level}) can be generalised to {seen[0]!r} (line {seen[1]}) "
                    f"or to {r[level + 1]!r} (line {line}); each value needs exactly one generalisation per level"
                )
    # Children in order of first appearance: leaf order is row order, regrouped stably.
    children: dict[tuple[int, str], dict[tuple[int, str], None]] = {}
    for r in table:
        for level in range(width - 1):
            children.setdefault((level + 1, r[level + 1]), {})[(level, r[level])] = None

    def build(key: tuple[int, str]) -> tuple[HierarchyNode, int]:
        """The subtree at ``key`` and the ARX level its top label comes from."""
        level, label = key
        kids = children.get(key)
        if not kids:
            return HierarchyNode(label), level
        built = [build(k) for k in kids]
        if len(built) == 1 and built[0][0].label == label:
            return built[0]  # collapse: the same value repeated one level up
        return HierarchyNode(label, tuple(node for node, _ in built)), level

    root, _ = build((width - 1, table[0][-1]))
    return Hierarchy(_unique_labels(root, rename, prefix))


def _unique_labels(root: HierarchyNode, rename: bool, prefix: str) -> HierarchyNode:
    """Rename labels reused at several levels (the lowest level keeps the text).

    A node's level is its height above the leaves (leaves 0), which is its ARX column
    in a file whose branches all have the same length.
    """
    levels: dict[int, int] = {}  # id(node) -> level

    def height_of(node: HierarchyNode) -> int:
        level = 0 if node.is_leaf else 1 + max(height_of(c) for c in node.children)
        levels[id(node)] = level
        return level

    height_of(root)
    owner: dict[str, tuple[int, int]] = {}  # label -> (level, id) of the node keeping it
    nodes: list[HierarchyNode] = []
    stack = [root]
    while stack:
        node = stack.pop()
        nodes.append(node)
        stack.extend(node.children)
    for node in sorted(nodes, key=lambda n: levels[id(n)]):
        owner.setdefault(node.label, (levels[id(node)], id(node)))
    renames: dict[int, str] = {}
    used = {n.label for n in nodes}
    for node in sorted(nodes, key=lambda n: levels[id(n)]):
        keep = owner[node.label]
        if keep[1] == id(node):
            continue
        if keep[0] == levels[id(node)] and node.is_leaf:
            continue  # duplicate leaves are reported by the engine
        if not rename:
            raise HierarchyError(
                f"{prefix}label {node.label!r} is used at level {keep[0]} and at level {levels[id(node)]}; "
                "labels must be unique across the hierarchy, rename one of them"
            )
        base = f"{node.label} (level {levels[id(node)]})"
        new, k = base, 2
        while new in used:
            new, k = f"{base} #{k}", k + 1
        used.add(new)
        renames[id(node)] = new
    if not renames:
        return root
    warnings.warn(
        HierarchyLabelWarning(
            prefix
            + "labels reused at a higher level were renamed to keep labels unique: "
            + ", ".join(
                f"{n.label!r} -> {renames[id(n)]!r}" for n in nodes if id(n) in renames
            )
        ),
        stacklevel=3,
    )

    def rebuild(node: HierarchyNode) -> HierarchyNode:
        label = renames.get(id(node), node.label)
        if node.is_leaf:
            return node if label == node.label else HierarchyNode(label)
        return HierarchyNode(label, tuple(rebuild(c) for c in node.children))

    return rebuild(root)


def hierarchy_to_arx_rows(hierarchy: Hierarchy) -> list[list[str]]:
    """One row ``[leaf, parent, ..., root]`` per leaf, in leaf order.

    Branches shorter than the tree are padded by repeating the leaf, which
    :func:`hierarchy_from_arx_rows` collapses again.

    Examples
    --------
    >>> h = Hierarchy.from_nested({"*": ["x", {"G": ["a", "b"]}]})
    >>> hierarchy_to_arx_rows(h)
    [['x', 'x', '*'], ['a', 'G', '*'], ['b', 'G', '*']]
    """
    height = hierarchy.height
    if height == 1:
        return [[hierarchy.root.label, hierarchy.root.label]]
    rows: list[list[str]] = []
    stack: list[tuple[HierarchyNode, tuple[str, ...]]] = [(hierarchy.root, ())]
    while stack:
        node, path = stack.pop()
        here = (node.label, *path)  # leaf-first
        if node.is_leaf:
            rows.append([node.label] * (height - len(here)) + list(here))
        else:
            stack.extend((child, here) for child in reversed(node.children))
    return rows


# -- ARX files --------------------------------------------------------------------------------


def _read_text(path: Path, encoding: str) -> str:
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise HierarchyError(f"no such hierarchy file: {path}") from None
    except IsADirectoryError:
        raise HierarchyError(f"{path} is a folder, not a hierarchy file") from None
    except OSError as exc:
        raise HierarchyError(f"cannot read the hierarchy file {path}: {exc.strerror or exc}") from None
    try:
        return data.decode("utf-8-sig" if encoding.lower().replace("_", "-") in ("utf-8", "utf8") else encoding)
    except UnicodeDecodeError as exc:
        raise HierarchyError(
            f"{path}: the bytes at offset {exc.start} are not valid {encoding} text; save the file as UTF-8"
        ) from None
    except LookupError:
        raise HierarchyError(f"unknown encoding {encoding!r}; use a Python codec name such as 'utf-8'") from None


def _is_path(path_or_text: str | os.PathLike[str]) -> bool:
    if isinstance(path_or_text, os.PathLike):
        return True
    if "\n" in path_or_text or "\r" in path_or_text:
        return False
    try:
        return Path(path_or_text).is_file()
    except (OSError, ValueError):
        return False


def read_arx_hierarchy(
    path_or_text: str | os.PathLike[str],
    *,
    delimiter: str | None = None,
    encoding: str = "utf-8",
    rename: bool = True,
) -> Hierarchy:
    """Read an ARX hierarchy from a file (a path) or from its text.

    A ``str`` is taken as a path when it names an existing file and holds no line
    break; otherwise as the file's content. ``delimiter=None`` sniffs ``; , TAB |``.

    Examples
    --------
    >>> read_arx_hierarchy("Male;*\\r\\nFemale;*\\r\\n").leaves
    ('Male', 'Female')
    """
    if _is_path(path_or_text):
        path = Path(path_or_text)
        text = _read_text(path, encoding)
        source = str(path)
    else:
        text = str(path_or_text)
        text = text.removeprefix("\ufeff")
        source = ""
    lines = [line for line in _lines(text) if line.strip()]  # CR and LF only, as the csv reader cuts
    if delimiter is None:
        delimiter = sniff_delimiter(lines[:200], ARX_DELIMITERS) if lines else ";"
    elif not isinstance(delimiter, str) or len(delimiter) != 1 or delimiter in '"\r\n':
        raise HierarchyError(f"the separator must be one character other than a quote or a line break, got {delimiter!r}")
    rows: list[list[str]] = []
    numbers: list[int] = []
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter, strict=False)
    try:
        for row in reader:
            if not row or all(not cell.strip() for cell in row):
                continue  # blank lines
            rows.append(row)
            numbers.append(reader.line_num)
    except csv.Error as exc:
        raise HierarchyError(f"{source or 'hierarchy'}: line {reader.line_num}: {exc}") from None
    return hierarchy_from_arx_rows(rows, line_numbers=numbers, rename=rename, source=source)


def write_arx_hierarchy(
    hierarchy: Hierarchy,
    path: str | os.PathLike[str] | None = None,
    *,
    delimiter: str = ";",
    force: bool = False,
) -> str:
    """Write ``hierarchy`` in the ARX layout; returns the text (also written to ``path``).

    Labels holding the separator or quotes are quoted, CSV style. Lines end with ``\\n``. A
    label holding a line break cannot be written (an ARX file has one row per line).
    """
    broken = next((label for label in hierarchy.labels if "\n" in label or "\r" in label), None)
    if broken is not None:
        raise HierarchyError(
            f"the label {broken!r} holds a line break, which the ARX layout cannot hold; save the hierarchy as JSON"
        )
    buffer = io.StringIO()
    writer = csv.writer(buffer, delimiter=delimiter, lineterminator="\n", quoting=csv.QUOTE_MINIMAL)
    writer.writerows(hierarchy_to_arx_rows(hierarchy))
    text = buffer.getvalue()
    if path is not None:
        with atomic_write(path, force=force, mode="w", encoding="utf-8", newline="") as f:
            f.write(text)
    return text


# -- JSON -----------------------------------------------------------------------------------


def read_json_hierarchy(path: str | os.PathLike[str]) -> Hierarchy:
    """Read a nested-JSON hierarchy (the :meth:`Hierarchy.from_nested` form)."""
    p = Path(path)
    text = _read_text(p, "utf-8")
    obj = loads(
        text, source=str(p), error=HierarchyError,
        duplicate="label {key!r} is used twice in the same group; labels must be unique",
    )
    try:
        return Hierarchy.from_nested(obj)
    except HierarchyError as exc:
        raise HierarchyError(f"{p}: {exc}") from None


def write_json_hierarchy(hierarchy: Hierarchy, path: str | os.PathLike[str], *, force: bool = False) -> None:
    """Write ``hierarchy`` as nested JSON (UTF-8, indented)."""
    text = json.dumps(hierarchy.to_nested(), indent=2, ensure_ascii=False) + "\n"
    with atomic_write(path, force=force, mode="w", encoding="utf-8", newline="\n") as f:
        f.write(text)


# -- display labels -----------------------------------------------------------------------------

#: The most rows a labels file may have (a code list of this size is already far beyond any hierarchy).
MAX_LABEL_ROWS = 1_000_000
_CODE_HEADERS = ("code", "value", "id", "key")
_LABEL_HEADERS = ("label", "title", "name", "description", "text")


@dataclass(frozen=True)
class DisplayLabels:
    """Display labels read for a hierarchy: code -> label for its nodes, and the codes of the
    file that are not nodes of it (left out; a dictionary usually lists more codes than a
    table holds)."""

    labels: dict[str, str]
    unknown: tuple[str, ...]
    source: str  # what the file was read as: "data dictionary", "JSON", "CSV" or "labelled twin"


def label_dictionary_entries(path: str | os.PathLike[str]) -> tuple[str, ...]:
    """The entries of a data dictionary (JSON) that hold code labels, in file order (empty for
    a file that is not a data dictionary)."""
    obj = _labels_json(Path(path))
    return tuple(name for name, entry in obj.items() if _entry_labels(entry) is not None) if _is_dictionary(obj) else ()


def read_display_labels(
    path: str | os.PathLike[str], hierarchy: Hierarchy, *, entry: str | None = None
) -> DisplayLabels:
    """Display labels for ``hierarchy`` from a labels file (see the module docstring).

    ``entry`` picks a data dictionary's entry (a column name); it is needed when the file is
    one (:func:`label_dictionary_entries` lists them). Labels are checked as the engine
    checks them (:meth:`~privelet_gui.engine.Hierarchy.with_display_labels`): a
    :class:`~privelet_gui.engine.HierarchyError` names the file and what is wrong.
    """
    p = Path(path)
    codes = set(hierarchy.labels)
    if p.suffix.lower() == ".json" or _starts_with_brace(p):
        obj = _labels_json(p)
        if _is_dictionary(obj):
            entries = [name for name, value in obj.items() if _entry_labels(value) is not None]
            if entry is None or entry not in obj:
                listed = ", ".join(map(repr, entries[:20])) + (", ..." if len(entries) > 20 else "")
                what = "choose one of its entries" if entry is None else f"it has no entry {entry!r}"
                raise HierarchyError(f"{p} is a data dictionary: {what} (with code labels: {listed or 'none'})")
            found = _entry_labels(obj[entry])
            if found is None:
                raise HierarchyError(
                    f"{p}: the entry {entry!r} has no code labels (no \"values\" mapping codes to text); choose "
                    "another entry"
                )
            pairs, source = found, "data dictionary"
        else:
            pairs = {str(k): v for k, v in obj.items() if isinstance(v, str)}
            if len(pairs) != len(obj):
                raise HierarchyError(f'{p}: a labels file maps codes to text, e.g. {{"1": "Male"}}; some values are not text')
            source = "JSON"
    else:
        rows = _label_rows(p)
        twin = _twin_labels(rows, hierarchy)
        if twin is not None:
            pairs, source = twin, "labelled twin"
        else:
            pairs, source = _table_labels(rows, codes, p), "CSV"
    labels = {code: text for code, text in pairs.items() if code in codes}
    unknown = tuple(code for code in pairs if code not in codes)
    try:
        check_display_labels(labels)
        hierarchy.with_display_labels(labels)
    except HierarchyError as exc:
        raise HierarchyError(f"{p}: {exc}") from None
    return DisplayLabels({c: t for c, t in labels.items() if t != c}, unknown, source)


#: What no display label may hold: control characters (tabs, line breaks, terminal escapes,
#: NUL: C0, DEL and C1), the Unicode line and paragraph separators, and the bidirectional
#: embeddings, overrides and isolates, which make a label show as other text than it is.
_NOT_IN_LABELS = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def check_display_labels(labels: Mapping[str, str]) -> None:
    """Refuse display labels holding a character of :data:`_NOT_IN_LABELS` (labels are plain
    one-line text, shown on screens and written into exports), naming the code and the character."""
    for code, text in labels.items():
        found = _NOT_IN_LABELS.search(text) if isinstance(text, str) else None  # the engine refuses other types
        if found is not None:
            char = found.group()
            what = ("a line break" if char in "\n\r\u2028\u2029" else "a tab" if char == "\t"
                    else "a bidirectional text control" if char >= "\u202a" else "a control character")
            raise HierarchyError(
                f"the display label of {code!r}, {text!r}, holds {what} (U+{ord(char):04X}); a display label is plain "
                "one-line text: remove that character"
            )


def _starts_with_brace(path: Path) -> bool:
    try:
        with open(path, "rb") as f:
            return f.read(64).lstrip(b"\xef\xbb\xbf \t\r\n").startswith(b"{")
    except OSError:
        return False


def _labels_json(path: Path) -> dict[str, Any]:
    obj = loads(_read_text(path, "utf-8"), source=str(path), error=HierarchyError)
    if not isinstance(obj, dict):
        raise HierarchyError(f'{path}: a labels file is a JSON object (code -> label, or a data dictionary), got {type(obj).__name__}')
    return obj


def _is_dictionary(obj: dict[str, Any]) -> bool:
    """A data dictionary: every entry an object (a column's description), not a label."""
    return bool(obj) and all(isinstance(value, dict) for value in obj.values())


def _entry_labels(entry: object) -> dict[str, str] | None:
    """A data dictionary entry's code labels (its ``values`` texts; ``min``/``max`` numbers
    describe a range, not codes), or None when it has none."""
    values = entry.get("values") if isinstance(entry, dict) else None
    if not isinstance(values, dict):
        return None
    labels = {str(code): text for code, text in values.items() if isinstance(text, str)}
    return labels or None


def _label_rows(path: Path) -> list[list[str]]:
    text = _read_text(path, "utf-8")
    lines = [line for line in _lines(text) if line.strip()]
    if not lines:
        raise HierarchyError(f"{path} is empty: give one code and its label per line")
    delimiter = sniff_delimiter(lines[:200], ARX_DELIMITERS)
    rows: list[list[str]] = []
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter, strict=False)
    try:
        for row in reader:
            if row and any(cell.strip() for cell in row):
                rows.append(row)
                if len(rows) > MAX_LABEL_ROWS:
                    raise HierarchyError(f"{path} has more than {MAX_LABEL_ROWS:,} rows: not a labels file")
    except csv.Error as exc:
        raise HierarchyError(f"{path}: line {reader.line_num}: {exc}") from None
    return rows


def _twin_labels(rows: list[list[str]], hierarchy: Hierarchy) -> dict[str, str] | None:
    """Labels from an ARX file laid out like ``hierarchy`` (one row per leaf, as wide as the
    tree, one root): each cell labels the code in the same place of the hierarchy's own rows,
    which are matched by leaf when the twin keeps the leaf codes (then it may lack leaves the
    hierarchy gained since, such as a value for missing cells), else by row order. None when
    the rows are not such a twin."""
    own = hierarchy_to_arx_rows(hierarchy)
    width = len(own[0])
    if width < 3 or any(len(r) != width for r in rows) or len({r[-1] for r in rows}) != 1:
        return None
    by_leaf = {r[0]: r for r in own}
    if all(r[0] in by_leaf for r in rows):
        pairs = [(by_leaf[r[0]], r) for r in rows]
    elif len(rows) == len(own):
        pairs = list(zip(own, rows, strict=True))
    else:
        return None
    labels: dict[str, str] = {}
    for code_row, label_row in pairs:
        for code, text in zip(code_row, label_row, strict=True):
            if labels.setdefault(code, text) != text:
                return None  # one code, two labels: not a twin of this hierarchy
    return labels


def _table_labels(rows: list[list[str]], codes: set[str], path: Path) -> dict[str, str]:
    """``code,label`` rows (a header row is skipped; with more columns, the header's code and
    label columns, else the first two)."""
    if any(len(r) < 2 for r in rows):
        line = next(i for i, r in enumerate(rows, start=1) if len(r) < 2)
        raise HierarchyError(f"{path}: row {line} has one column; a labels file has a code and a label on each row")
    first = [cell.strip().lower() for cell in rows[0]]
    code_column, label_column = 0, 1
    header = rows[0][0] not in codes and any(r[0] in codes for r in rows[1:])
    if header:
        code_column = next((i for i, name in enumerate(first) if name in _CODE_HEADERS), 0)
        label_column = next((i for i, name in enumerate(first) if name in _LABEL_HEADERS and i != code_column),
                            1 if code_column != 1 else 0)
        rows = rows[1:]
    labels: dict[str, str] = {}
    for row in rows:
        if max(code_column, label_column) < len(row) and row[label_column].strip():
            labels.setdefault(row[code_column], row[label_column].strip())
    return labels


# -- either format ------------------------------------------------------------------------------


def _format_of(path: Path, given: str | None, *, reading: bool) -> HierarchyFormat:
    if given is not None:
        if given not in ("arx", "json"):
            raise HierarchyError(f"hierarchy format must be 'arx' or 'json', got {given!r}")
        return given  # type: ignore[return-value]
    if path.suffix.lower() == ".json":
        return "json"
    if path.suffix.lower() in (".csv", ".txt", ".tsv", ".arx"):
        return "arx"
    if reading and path.is_file():
        with open(path, "rb") as f:
            head = f.read(64).lstrip(b"\xef\xbb\xbf \t\r\n")
        return "json" if head.startswith(b"{") else "arx"
    if reading:
        raise HierarchyError(f"no such hierarchy file: {path}")
    raise HierarchyError(
        f"cannot tell the hierarchy format of {path.name!r} from its extension; "
        "use .csv (ARX) or .json, or give the format"
    )


def read_hierarchy(
    path: str | os.PathLike[str], *, delimiter: str | None = None, format: HierarchyFormat | None = None
) -> Hierarchy:
    """Read a hierarchy file: ARX CSV, or nested JSON (``.json``, or content starting with ``{``)."""
    p = Path(path)
    try:
        exists = p.exists()
    except (OSError, ValueError):  # a name too long for the system, a NUL character
        exists = False
    if not exists:
        raise HierarchyError(f"no such hierarchy file: {p}")
    if _format_of(p, format, reading=True) == "json":
        return read_json_hierarchy(p)
    return read_arx_hierarchy(p, delimiter=delimiter)


def write_hierarchy(
    hierarchy: Hierarchy,
    path: str | os.PathLike[str],
    *,
    format: HierarchyFormat | None = None,
    force: bool = False,
    delimiter: str = ";",
) -> None:
    """Write a hierarchy as ARX CSV (``.csv``, ``.txt``, ``.tsv``) or nested JSON (``.json``).

    ``.tsv`` files are tab-separated; otherwise ``delimiter`` (``;``) is used.
    """
    p = Path(path)
    if _format_of(p, format, reading=False) == "json":
        write_json_hierarchy(hierarchy, p, force=force)
    else:
        write_arx_hierarchy(hierarchy, p, delimiter="\t" if p.suffix.lower() == ".tsv" else delimiter, force=force)


def hierarchy_summary(hierarchy: Hierarchy) -> dict[str, Any]:
    """Facts to show about a hierarchy: leaves, height, rho, nodes and groups per level."""
    per_level: dict[int, int] = {}
    for info in hierarchy.nodes():
        per_level[info.depth] = per_level.get(info.depth, 0) + 1
    fanouts = [info.fanout for info in hierarchy.nodes() if info.fanout]
    return {
        "root": hierarchy.root.label,
        "leaves": hierarchy.size,
        "height": hierarchy.height,
        "rho": hierarchy.rho,
        "nodes": hierarchy.n_nodes,
        "nodes_per_level": [per_level[d] for d in sorted(per_level)],
        "fanout_min": min(fanouts) if fanouts else 0,
        "fanout_max": max(fanouts) if fanouts else 0,
    }

