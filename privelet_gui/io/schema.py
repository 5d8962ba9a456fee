"""Schema files (versioned JSON) and schema inference.

Format, version 3 (a file is written with the lowest version that holds what it says, so
files that use none of the later keys still open in older versions of Privelet Studio:
version 1 has none of the missing-value keys, display labels, bin edges or open ends;
version 2 adds ``missing_values``, ``missing``'s ``missing_at_end``, ``drop_missing`` and
``display_labels``; version 3 adds bin ``edges``, ``open_below`` and ``open_above``)::

    {"version": 3,
     "attributes": [
       {"name": "age", "type": "ordinal", "range": [0, 100]},
       {"name": "income", "column": "PINCP", "type": "ordinal",
        "bins": {"start": 0, "stop": 500000, "width": 1000}, "out_of_range": "clamp"},
       {"name": "wage", "type": "ordinal",
        "bins": {"edges": [0, 1, 10000, 50000, 150000], "open_below": true, "open_above": true}},
       {"name": "education", "type": "ordinal", "values": ["Preschool", "1st-4th", "Bachelors"]},
       {"name": "sex", "type": "nominal", "hierarchy": {"*": ["Male", "Female"]}},
       {"name": "occupation", "type": "nominal", "hierarchy_file": "hierarchy_occupation.csv"},
       {"name": "AGEP", "type": "ordinal", "range": [0, 99], "missing_values": ["N"],
        "missing": "(missing)", "missing_at_end": true},
       {"name": "INDP_CAT", "type": "nominal", "values": ["0", "1"], "drop_missing": true,
        "display_labels": {"0": "AGR: Agriculture", "1": "EXT: Mining"}}]}

The top level has exactly ``version`` and ``attributes``. Every attribute has:

- ``name``: the attribute's name (unique in the file);
- ``type``: ``"ordinal"`` (ordered values) or ``"nominal"`` (a hierarchy of groups);
- ``column`` (optional): the table column it reads, when it differs from the name.

An ordinal attribute has exactly one of:

- ``range``: ``[first, last]``, inclusive integers, parsed as numbers;
- ``bins``: numeric bins, either equal-width ``{"start", "stop", "width"}`` (``stop``
  exclusive) or between given ``{"edges": [e0, e1, ...]}`` (``[e0, e1), [e1, e2), ...``,
  increasing); both may add ``"open_below": true`` (a first bin ``(-inf, start)`` for every
  number below) and ``"open_above": true`` (a last bin ``[stop, inf)``). Labels are the
  intervals: ``"[0, 1000)"``, ``"(-inf, 0)"``, ``"[150000, inf)"``;
- ``values``: text labels (or integers) in order;

and may have ``out_of_range`` (``"error"``, the default, ``"clamp"`` or ``"drop"``; for
``range`` and ``bins``): what numbers outside the domain do. Clamped ones are counted in the
first or last value, whose labels then say so: ``"<=0"`` and ``">=99"`` for a range,
``"(-inf, 1000)"`` and ``"[499000, inf)"`` for bins (their plain forms still name them).

A nominal attribute has exactly one of ``hierarchy`` (nested JSON), ``hierarchy_file`` (ARX
CSV or JSON, relative to the schema file) or plain ``values`` (a flat hierarchy under ``*``),
and may have ``level`` (count the column at that level of its hierarchy, 2 or more; the root
is level 1) and ``display_labels``: code -> the text shown for it (the tree's leaves and
groups; exports get a ``<name>_label`` column), which changes nothing that is counted. Labels
and codes hold no control characters (tabs, line breaks, escapes, bidirectional overrides).

Both kinds may have ``domain_from_data`` (true when the domain was learned from the data: not
private) and, for missing cells (empty ones, and those holding one of ``missing_values``;
without that key, the texts the table's reading options name; a text that is itself one of
the domain's values is refused, since its cells would silently count as missing):
``missing`` (the value they count as: a leaf, or an ordinal value; with
``"missing_at_end": true`` an ordinal value of its own after the last) or
``"drop_missing": true`` (their rows are dropped, and counted in the report).
"""

from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from ..engine import (
    Hierarchy,
    HierarchyError,
    NominalAttribute,
    NumericBins,
    OrdinalAttribute,
    PriveletError,
    Schema,
    SchemaError,
    byte_size,
)
from ..engine.model.schema import MAX_AXIS_VALUES, RANGE_BOUNDS, Attribute, check_missing_values
from ._json import loads, shown
from .atomic import atomic_write, check_writable
from .hierarchies import check_display_labels, read_hierarchy, write_arx_hierarchy

__all__ = [
    "INFERRED_DOMAIN_WARNING",
    "SCHEMA_VERSION",
    "dumps_schema",
    "load_schema",
    "save_schema",
    "schema_from_json",
    "schema_to_json",
]

SCHEMA_VERSION = 3

_COMMON_KEYS = ("name", "type", "column", "missing", "domain_from_data", "missing_values", "drop_missing")
_ORDINAL_KEYS = (*_COMMON_KEYS, "range", "bins", "values", "out_of_range", "missing_at_end")
_NOMINAL_KEYS = (*_COMMON_KEYS, "hierarchy", "hierarchy_file", "values", "level", "display_labels")
#: Keys that version 1 did not have: a file using none of them is written as version 1.
_VERSION_2_KEYS = ("missing_values", "drop_missing", "missing_at_end", "display_labels")
#: Keys of ``bins`` that version 2 did not have.
_VERSION_3_BIN_KEYS = ("edges", "open_below", "open_above")
_OUT_OF_RANGE = ("error", "clamp", "drop")

#: Printed (loudly) wherever an inferred schema is shown or saved.
INFERRED_DOMAIN_WARNING = (
    "This schema was learned from the data, so it is NOT private: a value's mere presence in a domain "
    "can reveal a rare person (one 97-year-old, one unusual occupation). Before publishing, replace "
    "every domain with a public one (a code list, a fixed age range) and remove \"domain_from_data\"."
)


# -- reading ---------------------------------------------------------------------------------


class _Context:
    """Where in the JSON we are, for error messages."""

    def __init__(self, source: str):
        self.source = source

    def error(
        self, path: str, message: str, fix: str, *, attribute: str | None = None, hierarchy: bool = False
    ) -> PriveletError:
        where = f"{self.source}: " if self.source else ""
        who = f"attribute {attribute!r} at {path}" if attribute else path
        cls = HierarchyError if hierarchy else SchemaError
        return cls(f"{where}{who}: {message}; {fix}")


def _is_int(value: object) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, bool)


def _is_number(value: object) -> bool:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        return False
    try:
        return math.isfinite(float(value))
    except OverflowError:  # an integer beyond every float
        return False


def schema_from_json(obj: object, base_dir: str | os.PathLike[str] | None = None, *, source: str = "") -> Schema:
    """Build a :class:`~privelet_gui.engine.Schema` from a parsed schema file.

    ``base_dir`` resolves ``hierarchy_file`` paths (default: the current folder).
    Errors (:class:`SchemaError`, :class:`HierarchyError`) name the attribute, the
    JSON path (e.g. ``attributes[1].bins.width``) and how to fix it.

    Examples
    --------
    >>> s = schema_from_json({"version": 1, "attributes": [
    ...     {"name": "age", "type": "ordinal", "range": [0, 99]},
    ...     {"name": "sex", "type": "nominal", "hierarchy": {"*": ["F", "M"]}}]})
    >>> s.shape
    (100, 2)
    >>> schema_from_json({"version": 1, "attributes": [
    ...     {"name": "w", "type": "ordinal", "bins": {"start": 0, "stop": 10, "width": 0}}]})
    Traceback (most recent call last):
    ...
    privelet_gui.engine.errors.SchemaError: attribute 'w' at attributes[0].bins.width: the bin width must be a positive number, got 0; e.g. "width": 1000
    """
    ctx = _Context(source)
    base = Path(base_dir) if base_dir is not None else Path.cwd()
    if not isinstance(obj, Mapping):
        raise ctx.error(
            "the file", f"a schema is a JSON object, got {type(obj).__name__}",
            'write {"version": 1, "attributes": [...]}',
        )
    unknown = [k for k in obj if k not in ("version", "attributes")]
    if unknown:
        raise ctx.error(unknown[0], "unknown key", 'a schema has only "version" and "attributes"')
    if "version" not in obj:
        raise ctx.error("version", "missing", f'add "version": {SCHEMA_VERSION}')
    version = obj["version"]
    if not _is_int(version):
        raise ctx.error("version", f"must be an integer, got {shown(version)}", f'use "version": {SCHEMA_VERSION}')
    if version > SCHEMA_VERSION:
        raise ctx.error(
            "version", f"this file has version {version}, newer than this Privelet Studio understands "
            f"({SCHEMA_VERSION})", "update Privelet Studio",
        )
    if version < 1:
        raise ctx.error("version", f"unknown version {version}", f'use "version": {SCHEMA_VERSION}')
    attributes = obj.get("attributes")
    if not isinstance(attributes, list) or not attributes:
        raise ctx.error(
            "attributes", "must be a non-empty list of attributes",
            'e.g. "attributes": [{"name": "age", "type": "ordinal", "range": [0, 100]}]',
        )
    built: list[Attribute] = []
    names: dict[str, int] = {}
    for i, entry in enumerate(attributes):
        attribute = _attribute(entry, f"attributes[{i}]", ctx, base)
        if attribute.name in names:
            raise ctx.error(
                f"attributes[{i}].name", f"the name {attribute.name!r} is also used by attributes[{names[attribute.name]}]",
                "give every attribute its own name (use \"column\" to read the same column twice)",
                attribute=attribute.name,
            )
        names[attribute.name] = i
        built.append(attribute)
    return Schema(built)


def _attribute(entry: object, path: str, ctx: _Context, base: Path) -> Attribute:
    if not isinstance(entry, Mapping):
        raise ctx.error(path, f"an attribute is a JSON object, got {type(entry).__name__}",
                        'e.g. {"name": "age", "type": "ordinal", "range": [0, 100]}')
    name = entry.get("name")
    if not isinstance(name, str) or not name.strip():
        raise ctx.error(f"{path}.name", f"every attribute needs a non-empty text name, got {shown(name)}",
                        'add e.g. "name": "age"')
    kind = entry.get("type")
    if kind not in ("ordinal", "nominal"):
        raise ctx.error(f"{path}.type", f"type must be \"ordinal\" or \"nominal\", got {shown(kind)}",
                        "ordinal for ordered values (ages, incomes), nominal for categories with a hierarchy",
                        attribute=name)
    allowed = _ORDINAL_KEYS if kind == "ordinal" else _NOMINAL_KEYS
    for key in entry:
        if key not in allowed:
            raise ctx.error(f"{path}.{key}", f"unknown key for a {kind} attribute",
                            "allowed keys: " + ", ".join(allowed), attribute=name)
    column = entry.get("column")
    if column is not None and (not isinstance(column, str) or not column):
        raise ctx.error(f"{path}.column", f"must be the table column's name, got {shown(column)}",
                        "remove it to read the column with the attribute's name", attribute=name)
    flag = entry.get("domain_from_data", False)
    if not isinstance(flag, bool):
        raise ctx.error(f"{path}.domain_from_data", f"must be true or false, got {shown(flag)}",
                        "use true only for domains learned from the data", attribute=name)
    missing = entry.get("missing")
    if (missing is not None and not (isinstance(missing, str) or _is_int(missing))) or missing == "":
        raise ctx.error(f"{path}.missing", f"must be one of the attribute's labels, got {shown(missing)}",
                        'e.g. "missing": "Unknown"', attribute=name)
    missing_label = None if missing is None else str(missing)
    missing_options = _missing_options(entry, path, ctx, name, missing_label)
    try:
        if kind == "ordinal":
            return _ordinal(entry, path, ctx, name, column, flag, missing_label, missing_options)
        return _nominal(entry, path, ctx, base, name, column, flag, missing_label, missing_options)
    except (SchemaError, HierarchyError) as exc:
        if getattr(exc, "_privelet_located", False):
            raise
        message = str(exc).removeprefix(f"attribute {name!r}: ")  # the location names it already
        error = ctx.error(path, message, "fix the attribute", attribute=name, hierarchy=isinstance(exc, HierarchyError))
        raise error from None


def _missing_options(entry: Mapping[str, Any], path: str, ctx: _Context, name: str,
                     missing: str | None) -> dict[str, Any]:
    """``missing_values`` and ``drop_missing``, checked (both kinds of attribute have them)."""
    options: dict[str, Any] = {}
    if "missing_values" in entry:
        values = entry["missing_values"]
        if not isinstance(values, list):
            raise ctx.error(f"{path}.missing_values", f"must be a list of texts, got {shown(values)}",
                            'e.g. "missing_values": ["N", "NA"] (empty cells are always missing)', attribute=name)
        try:
            options["missing_values"] = check_missing_values(values, f"attribute {name!r}")
        except SchemaError as exc:
            raise ctx.error(f"{path}.missing_values", str(exc).split(": ", 1)[-1],
                            'e.g. "missing_values": ["N", "NA"]', attribute=name) from None
    drop = entry.get("drop_missing", False)
    if not isinstance(drop, bool):
        raise ctx.error(f"{path}.drop_missing", f"must be true or false, got {shown(drop)}",
                        "true drops the rows whose cell is missing", attribute=name)
    if drop and missing is not None:
        raise ctx.error(f"{path}.drop_missing", f"missing cells cannot both count as {missing!r} and be dropped",
                        'remove "missing" or "drop_missing"', attribute=name)
    if drop:
        options["drop_missing"] = True
    return options


def _located(error: PriveletError) -> PriveletError:
    error._privelet_located = True  # type: ignore[attr-defined]
    return error


def _one_of(entry: Mapping[str, Any], keys: tuple[str, ...], kind: str, path: str, ctx: _Context, name: str,
            example: str) -> str:
    """The one key of ``keys`` that ``entry`` has; an error naming them otherwise."""
    given = [k for k in keys if k in entry]
    if len(given) != 1:
        options = ", ".join(f'"{k}"' for k in keys[:-1]) + f' or "{keys[-1]}"'
        raise _located(ctx.error(
            path, f"{kind} attribute needs exactly one of {options}" + (f", got {' and '.join(given)}" if given else ""),
            example, attribute=name))
    return given[0]


def _ordinal(entry: Mapping[str, Any], path: str, ctx: _Context, name: str, column: str | None,
             flag: bool, missing: str | None, missing_options: dict[str, Any]) -> OrdinalAttribute:
    key = _one_of(entry, ("range", "bins", "values"), "an ordinal", path, ctx, name,
                  'e.g. "range": [0, 100] or "bins": {"start": 0, "stop": 500000, "width": 1000}')
    out = entry.get("out_of_range", "error")
    if out not in _OUT_OF_RANGE:
        raise _located(ctx.error(f"{path}.out_of_range", f"must be \"error\", \"clamp\" or \"drop\", got {shown(out)}",
                                 "clamp moves outside numbers to the first/last value, drop skips their rows",
                                 attribute=name))
    # ``missing`` is checked below, against the labels, with a located message.
    options: dict[str, Any] = {"out_of_range": out, "column": column, "domain_from_data": flag}
    if key == "range":
        bounds = entry["range"]
        if not (isinstance(bounds, list) and len(bounds) == 2 and all(_is_int(b) for b in bounds)):
            raise _located(ctx.error(f"{path}.range", f"must be two integers [first, last], got {shown(bounds)}",
                                     'e.g. "range": [0, 100] (both ends included)', attribute=name))
        lo, hi = int(bounds[0]), int(bounds[1])
        if hi < lo:
            raise _located(ctx.error(f"{path}.range", f"[{lo}, {hi}] is empty",
                                     "the last value must be at least the first", attribute=name))
        if lo < RANGE_BOUNDS[0] or hi > RANGE_BOUNDS[1]:
            raise _located(ctx.error(f"{path}.range", f"[{_brief(lo)}, {_brief(hi)}] goes beyond the 64-bit integers",
                                     f"ranges lie within {RANGE_BOUNDS[0]} and {RANGE_BOUNDS[1]}; use \"bins\" for "
                                     "such numbers", attribute=name))
        if hi - lo + 1 > MAX_AXIS_VALUES:
            raise _located(ctx.error(
                f"{path}.range", f"[{lo}, {hi}] has {hi - lo + 1:,} values, more than the {MAX_AXIS_VALUES:,} one axis "
                f"may hold (its frequency matrix alone would need {byte_size(8 * (hi - lo + 1))})",
                "use \"bins\" to group the numbers", attribute=name))
        attribute = OrdinalAttribute.integer_range(name, lo, hi, **options)
    elif key == "bins":
        attribute = OrdinalAttribute(name, bins=_bins(entry["bins"], f"{path}.bins", ctx, name), **options)
    else:
        values = entry["values"]
        if not isinstance(values, list) or not values:
            raise _located(ctx.error(f"{path}.values", f"must be a non-empty list of values in order, got {shown(values)}",
                                     'e.g. "values": ["low", "medium", "high"]', attribute=name))
        seen: dict[str, int] = {}
        for j, value in enumerate(values):
            if not (isinstance(value, str) or _is_int(value)) or value == "":
                raise _located(ctx.error(f"{path}.values[{j}]", f"must be non-empty text or an integer, got {shown(value)}",
                                         "write each value as it appears in the table", attribute=name))
            if str(value) in seen:
                raise _located(ctx.error(f"{path}.values[{j}]",
                                         f"{shown(value)} is listed twice (also at values[{seen[str(value)]}])",
                                         "list each value once", attribute=name))
            seen[str(value)] = j
        attribute = OrdinalAttribute(name, values, **options)
    if out != "error" and not attribute.is_numeric:
        raise _located(ctx.error(f"{path}.out_of_range", "applies only to numeric domains (range or bins)",
                                 "remove it: a text value outside \"values\" is always an error", attribute=name))
    at_end = entry.get("missing_at_end", False)
    if not isinstance(at_end, bool):
        raise _located(ctx.error(f"{path}.missing_at_end", f"must be true or false, got {shown(at_end)}",
                                 "true makes \"missing\" a value of its own after the last", attribute=name))
    if at_end and missing is None:
        raise _located(ctx.error(f"{path}.missing_at_end", "needs the label of that value of its own",
                                 'add e.g. "missing": "(missing)"', attribute=name))
    if missing is not None:
        known = attribute.position_of(missing) is not None
        if at_end and known:
            raise _located(ctx.error(f"{path}.missing", f"{shown(missing)} is already one of the attribute's values",
                                     "give the value of its own another label, or remove \"missing_at_end\" to count "
                                     "missing cells as that value", attribute=name))
        if not at_end and not known:
            raise _located(ctx.error(f"{path}.missing", f"{shown(missing)} is not one of the attribute's values",
                                     "use one of its labels, e.g. " + repr(attribute.labels[0])
                                     + ', or add "missing_at_end": true to make it a value of its own', attribute=name))
    if missing is not None or missing_options:
        extra: dict[str, Any] = {"missing": missing, "missing_at_end": at_end, **missing_options, **options}
        if key == "bins":
            attribute = OrdinalAttribute(name, bins=attribute.bins, **extra)
        else:
            attribute = OrdinalAttribute(name, attribute.values, **extra)
    return attribute


_BIN_KEYS = ("start", "stop", "width", "edges", "open_below", "open_above")


def _bins(spec: object, path: str, ctx: _Context, name: str) -> NumericBins:
    example = '"bins": {"start": 0, "stop": 500000, "width": 1000}'
    edges_example = '"bins": {"edges": [0, 1, 10000, 50000], "open_below": true, "open_above": true}'
    if not isinstance(spec, Mapping):
        raise _located(ctx.error(path, f"must be an object with start, stop and width, or edges, got {shown(spec)}",
                                 f"e.g. {example} or {edges_example}", attribute=name))
    for key in spec:
        if key not in _BIN_KEYS:
            raise _located(ctx.error(f"{path}.{key}", "unknown key",
                                     "bins have start, stop and width, or edges; and open_below or open_above",
                                     attribute=name))
    ends: dict[str, bool] = {}
    for key in ("open_below", "open_above"):
        flag = spec.get(key, False)
        if not isinstance(flag, bool):
            raise _located(ctx.error(f"{path}.{key}", f"must be true or false, got {shown(flag)}",
                                     f"true adds a bin for every number {'below the first' if key == 'open_below' else 'from the last'} edge",
                                     attribute=name))
        ends[key] = flag
    if "edges" in spec:
        return _edge_bins(spec, path, ctx, name, ends, edges_example)
    for key in ("start", "stop", "width"):
        if key not in spec:
            raise _located(ctx.error(f"{path}.{key}", "missing", f"e.g. {example} or {edges_example}", attribute=name))
        if not _is_number(spec[key]):
            raise _located(ctx.error(f"{path}.{key}", f"must be a finite number, got {shown(spec[key])}",
                                     f"e.g. {example}", attribute=name))
    start, stop, width = spec["start"], spec["stop"], spec["width"]
    if width <= 0:
        raise _located(ctx.error(f"{path}.width", f"the bin width must be a positive number, got {shown(width)}",
                                 'e.g. "width": 1000', attribute=name))
    if stop <= start:
        raise _located(ctx.error(f"{path}.stop", f"stop ({shown(stop)}) must be greater than start ({shown(start)})",
                                 "stop is the end of the last bin (exclusive)", attribute=name))
    try:
        return NumericBins(start, stop, width, open_below=ends["open_below"], open_above=ends["open_above"])
    except SchemaError as exc:  # too many bins, edges too close for float64, numbers float64 cannot hold
        raise _located(ctx.error(path, str(exc), f"e.g. {example}", attribute=name)) from None


def _edge_bins(spec: Mapping[str, Any], path: str, ctx: _Context, name: str, ends: dict[str, bool],
               example: str) -> NumericBins:
    """``{"edges": [...]}`` bins, each edge checked where it stands."""
    both = [key for key in ("start", "stop", "width") if key in spec]
    if both:
        raise _located(ctx.error(f"{path}.{both[0]}", "bins have either edges or start, stop and width, not both",
                                 f"remove {both[0]!r}, e.g. {example}", attribute=name))
    edges = spec["edges"]
    if not isinstance(edges, list) or len(edges) < 2:
        raise _located(ctx.error(f"{path}.edges", f"must be a list of at least two numbers, got {shown(edges)}",
                                 f"e.g. {example}", attribute=name))
    for j, edge in enumerate(edges):
        if not _is_number(edge):
            raise _located(ctx.error(f"{path}.edges[{j}]", f"must be a finite number, got {shown(edge)}",
                                     "write each edge as a number", attribute=name))
        if j and edge <= edges[j - 1]:
            raise _located(ctx.error(f"{path}.edges[{j}]",
                                     f"{shown(edge)} is not greater than the edge before it ({shown(edges[j - 1])})",
                                     "list the edges in increasing order, each once", attribute=name))
    try:
        return NumericBins.from_edges(edges, open_below=ends["open_below"], open_above=ends["open_above"])
    except SchemaError as exc:  # too many bins, numbers float64 cannot hold exactly
        raise _located(ctx.error(f"{path}.edges", str(exc), f"e.g. {example}", attribute=name)) from None


def _nominal(entry: Mapping[str, Any], path: str, ctx: _Context, base: Path, name: str, column: str | None,
             flag: bool, missing: str | None, missing_options: dict[str, Any]) -> NominalAttribute:
    key = _one_of(entry, ("hierarchy", "hierarchy_file", "values"), "a nominal", path, ctx, name,
                  'e.g. "hierarchy": {"*": ["Male", "Female"]} or "hierarchy_file": "hierarchy_sex.csv"')
    try:
        if key == "hierarchy":
            hierarchy = Hierarchy.from_nested(entry["hierarchy"])
        elif key == "values":
            values = entry["values"]
            if not isinstance(values, list) or not values:
                raise _located(ctx.error(f"{path}.values", f"must be a non-empty list of labels, got {shown(values)}",
                                         'e.g. "values": ["Male", "Female"]', attribute=name))
            root = "*" if "*" not in {str(v) for v in values} else "(all)"
            hierarchy = Hierarchy.flat(values, root=root)
        else:
            ref = entry["hierarchy_file"]
            if not isinstance(ref, str) or not ref:
                raise _located(ctx.error(f"{path}.hierarchy_file", f"must be a file name, got {shown(ref)}",
                                         'e.g. "hierarchy_file": "hierarchy_occupation.csv"', attribute=name))
            file = (base / ref) if not Path(ref).is_absolute() else Path(ref)
            if not _is_file(file):
                raise _located(ctx.error(f"{path}.hierarchy_file", f"no such file: {file}",
                                         "hierarchy files are found relative to the schema file", attribute=name,
                                         hierarchy=True))
            hierarchy = read_hierarchy(file)
    except HierarchyError as exc:
        if getattr(exc, "_privelet_located", False):
            raise
        raise _located(ctx.error(f"{path}.{key}", str(exc), "fix the hierarchy", attribute=name,
                                 hierarchy=True)) from None
    if "display_labels" in entry:
        labels = entry["display_labels"]
        if not isinstance(labels, Mapping):
            raise _located(ctx.error(f"{path}.display_labels", f"must map codes to labels, got {shown(labels)}",
                                     'e.g. "display_labels": {"1": "Male", "2": "Female"}', attribute=name))
        try:
            check_display_labels(labels)
        except HierarchyError as exc:
            message, fix = str(exc).split("; ", 1)
            raise _located(ctx.error(f"{path}.display_labels", message, fix, attribute=name, hierarchy=True)) from None
        try:
            hierarchy = hierarchy.with_display_labels(labels)
        except HierarchyError as exc:
            raise _located(ctx.error(f"{path}.display_labels", str(exc), "label the hierarchy's codes only",
                                     attribute=name, hierarchy=True)) from None
    if missing is not None and missing not in hierarchy.leaves:
        raise _located(ctx.error(f"{path}.missing", f"{shown(missing)} is not a leaf of the hierarchy",
                                 "add it as a leaf, or map empty cells to an existing leaf", attribute=name))
    level = entry.get("level")
    if level is not None and (not _is_int(level) or not 2 <= level <= hierarchy.height):
        raise _located(ctx.error(f"{path}.level", f"must be a hierarchy level from 2 to {hierarchy.height}, got {level!r}",
                                 "count the column at that level of its hierarchy (1 is the root), or remove the key",
                                 attribute=name))
    return NominalAttribute(name, hierarchy, missing=missing, column=column, domain_from_data=flag, level=level,
                            **missing_options)


def _is_file(path: Path) -> bool:
    try:
        return path.is_file()
    except (OSError, ValueError):  # a name too long for the system, a NUL character
        return False


def _brief(value: int) -> str:
    return str(value) if value.bit_length() < 200 else f"(a number of {len(str(value)):,} digits)"




def load_schema(path: str | os.PathLike[str]) -> Schema:
    """Read a schema file; ``hierarchy_file`` paths are relative to its folder."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        raise SchemaError(f"no such schema file: {p}") from None
    except IsADirectoryError:
        raise SchemaError(f"{p} is a folder, not a schema file") from None
    except UnicodeDecodeError:
        raise SchemaError(f"{p}: not UTF-8 text; save the schema file as UTF-8 JSON") from None
    except OSError as exc:
        raise SchemaError(f"cannot read the schema file {p}: {exc.strerror or exc}") from None
    obj = loads(text, source=str(p), error=SchemaError)
    return schema_from_json(obj, p.parent, source=str(p))


# -- writing -----------------------------------------------------------------------------------


def _json_value(value: object) -> object:
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        return int(value)
    if isinstance(value, (float, np.floating)):
        return float(value)
    return str(value)


def _file_stem(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", name).strip("._") or "attribute"


def hierarchy_file_names(schema: Schema) -> dict[str, str]:
    """The file name ``hierarchy_<name>.csv`` used for each nominal attribute (unique)."""
    names: dict[str, str] = {}
    used: set[str] = set()
    for attribute in schema:
        if isinstance(attribute, NominalAttribute):
            stem = f"hierarchy_{_file_stem(attribute.name)}"
            name, k = f"{stem}.csv", 2
            while name.lower() in used:
                name, k = f"{stem}_{k}.csv", k + 1
            used.add(name.lower())
            names[attribute.name] = name
    return names


def schema_to_json(schema: Schema, *, hierarchy_files: bool = False) -> dict[str, Any]:
    """The schema file's content (see the module docstring).

    Hierarchies are inlined as nested JSON, or with ``hierarchy_files=True`` referenced
    as ``hierarchy_<name>.csv`` (:func:`save_schema` writes those files).

    Examples
    --------
    >>> from privelet_gui.engine import OrdinalAttribute, Schema
    >>> schema_to_json(Schema([OrdinalAttribute.integer_range("age", 0, 100, domain_from_data=True)]))
    {'version': 1, 'attributes': [{'name': 'age', 'type': 'ordinal', 'range': [0, 100], 'domain_from_data': True}]}
    >>> schema_to_json(Schema([OrdinalAttribute.integer_range("age", 0, 99, missing_values=["N"], drop_missing=True)]))
    {'version': 2, 'attributes': [{'name': 'age', 'type': 'ordinal', 'range': [0, 99], 'missing_values': ['N'], 'drop_missing': True}]}
    """
    files = hierarchy_file_names(schema) if hierarchy_files else {}
    out: list[dict[str, Any]] = []
    for attribute in schema:
        entry: dict[str, Any] = {"name": attribute.name}
        if attribute.column is not None:
            entry["column"] = attribute.column
        entry["type"] = attribute.kind
        if isinstance(attribute, NominalAttribute):
            finest = attribute.finest or attribute.hierarchy
            if hierarchy_files:
                entry["hierarchy_file"] = files[attribute.name]
            else:
                entry["hierarchy"] = finest.to_nested()
            if attribute.level is not None:
                entry["level"] = attribute.level
            if finest.display_labels:  # in level order (the order of the tree), not as edited
                entry["display_labels"] = {c: finest.display_labels[c] for c in finest.labels if c in finest.display_labels}
        else:
            if attribute.bins is not None:
                entry["bins"] = _bins_json(attribute.bins)
            elif attribute.integer_start is not None:
                entry["range"] = [attribute.integer_start, attribute.integer_start + len(attribute.values) - 1]
            else:
                entry["values"] = [_json_value(v) for v in attribute.values]
            if attribute.out_of_range != "error":
                entry["out_of_range"] = attribute.out_of_range
        if attribute.missing_values is not None:
            entry["missing_values"] = list(attribute.missing_values)
        if attribute.missing is not None:
            entry["missing"] = attribute.missing
        if isinstance(attribute, OrdinalAttribute) and attribute.missing_at_end:
            entry["missing_at_end"] = True
        if attribute.drop_missing:
            entry["drop_missing"] = True
        if attribute.domain_from_data:
            entry["domain_from_data"] = True
        out.append(entry)
    if any(key in entry.get("bins", ()) for entry in out for key in _VERSION_3_BIN_KEYS):
        version = 3
    elif any(key in entry for entry in out for key in _VERSION_2_KEYS):
        version = 2
    else:
        version = 1
    return {"version": version, "attributes": out}


def _bins_json(bins: NumericBins) -> dict[str, Any]:
    """A ``bins`` entry: equal-width or edges, with its open ends (only when open)."""
    if bins.edges is not None:
        # whole edges as integers, as people write them (they read back as the same float64)
        out: dict[str, Any] = {"edges": [int(e) if e.is_integer() and abs(e) < 2.0**53 else e for e in bins.edges]}
    else:
        out = {"start": _json_value(bins.start), "stop": _json_value(bins.stop), "width": _json_value(bins.width)}
    for key in ("open_below", "open_above"):
        if getattr(bins, key):
            out[key] = True
    return out


def dumps_schema(schema: Schema, *, hierarchy_files: bool = False) -> str:
    """The schema file's text: indented JSON, short lists of leaves kept on one line."""
    return _dumps(schema_to_json(schema, hierarchy_files=hierarchy_files))


def _dumps(obj: object, indent: int = 0) -> str:
    pad = "  " * indent
    inner = "  " * (indent + 1)
    if isinstance(obj, Mapping):
        if not obj:
            return "{}"
        flat = json.dumps(obj, ensure_ascii=False)
        if len(flat) + len(pad) <= 100 and not any(isinstance(v, Mapping) and v and indent < 1 for v in obj.values()):
            return flat
        items = [f"{inner}{json.dumps(k, ensure_ascii=False)}: {_dumps(v, indent + 1)}" for k, v in obj.items()]
        return "{\n" + ",\n".join(items) + "\n" + pad + "}"
    if isinstance(obj, list):
        flat = json.dumps(obj, ensure_ascii=False)
        if len(flat) + len(pad) <= 100 or all(not isinstance(v, (Mapping, list)) for v in obj):
            return flat
        return "[\n" + ",\n".join(inner + _dumps(v, indent + 1) for v in obj) + "\n" + pad + "]"
    return json.dumps(obj, ensure_ascii=False)


def save_schema(
    schema: Schema, path: str | os.PathLike[str], *, force: bool = False, hierarchy_files: bool = False
) -> None:
    """Write a schema file (atomically). With ``hierarchy_files=True`` each nominal
    attribute's hierarchy goes to ``hierarchy_<name>.csv`` (ARX) beside it."""
    p = Path(path)
    check_writable(p, force=force)
    files = hierarchy_file_names(schema) if hierarchy_files else {}
    for file in files.values():
        check_writable(p.parent / file, force=force)
    for attribute in schema:
        if attribute.name in files:
            write_arx_hierarchy(attribute.finest or attribute.hierarchy, p.parent / files[attribute.name], force=force)  # type: ignore[union-attr]
    with atomic_write(p, force=force, mode="w", encoding="utf-8", newline="\n") as f:
        f.write(dumps_schema(schema, hierarchy_files=hierarchy_files) + "\n")
