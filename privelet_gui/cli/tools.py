"""``privelet schema infer`` and ``privelet hierarchy check|convert``: tools for schema and hierarchy files."""

from __future__ import annotations

import argparse
import json
import sys
import warnings
from typing import TYPE_CHECKING

from ._common import Parser, delimiter_type, loud, missing_action, progress_bar, read_options, table_options

if TYPE_CHECKING:
    from ..engine import Hierarchy

__all__ = ["register"]


def register(commands: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    """Add this module's commands to the ``privelet`` parser."""
    p = commands.add_parser("schema", parents=[common], help="schema tools", description="Schema tools.")
    schema_commands = p.add_subparsers(dest="schema_command", metavar="ACTION", parser_class=Parser)
    q = schema_commands.add_parser(
        "infer", parents=[common], help="propose a schema from a table (NOT private)",
        description="Propose a schema from the table's values. A domain learned from the data is NOT "
                    "private: replace it with a public one before publishing.",
    )
    q.add_argument("table", metavar="TABLE")
    q.add_argument("--out", metavar="S.json", help="write the schema here (default: print it)")
    q.add_argument("--force", action="store_true", help="overwrite --out if it exists")
    q.add_argument("--columns", metavar="A,B", help="only these columns")
    table_options(q)
    q.set_defaults(handler=_cmd_schema_infer)
    p.set_defaults(handler=missing_action(p))

    p = commands.add_parser("hierarchy", parents=[common], help="hierarchy file tools",
                            description="Hierarchy file tools (ARX CSV and nested JSON).")
    hierarchy_commands = p.add_subparsers(dest="hierarchy_command", metavar="ACTION", parser_class=Parser)
    q = hierarchy_commands.add_parser("check", parents=[common], help="validate a hierarchy file and describe it",
                                      description="Read a hierarchy file (ARX CSV or JSON) and describe it.")
    q.add_argument("file", metavar="FILE")
    q.add_argument("--delimiter", metavar="C", type=delimiter_type, help="ARX separator (default: sniffed, ';' first)")
    q.add_argument("--json", action="store_true", help="print JSON")
    q.set_defaults(handler=_cmd_hierarchy_check)
    q = hierarchy_commands.add_parser("convert", parents=[common], help="convert between ARX CSV and JSON",
                                      description="Convert a hierarchy file; formats follow the extensions "
                                                  "(.csv/.txt/.tsv: ARX, .json: nested JSON).")
    q.add_argument("input", metavar="IN")
    q.add_argument("output", metavar="OUT")
    q.add_argument("--delimiter", metavar="C", type=delimiter_type, help="ARX separator of IN (default: sniffed)")
    q.add_argument("--force", action="store_true", help="overwrite OUT if it exists")
    q.set_defaults(handler=_cmd_hierarchy_convert)
    p.set_defaults(handler=missing_action(p))


def _cmd_schema_infer(args: argparse.Namespace) -> int:
    from ..io import INFERRED_DOMAIN_WARNING, dumps_schema, infer_table_schema, save_schema

    columns = None if args.columns is None else [c.strip() for c in args.columns.split(",") if c.strip()]
    bar = progress_bar(args)
    try:
        schema = infer_table_schema(args.table, read_options(args), columns=columns, progress=bar)
    finally:
        bar.close()
    # Loud on purpose, and even with --quiet: this is a privacy warning, not a progress note.
    print(loud("WARNING: " + INFERRED_DOMAIN_WARNING), file=sys.stderr)
    if args.out:
        save_schema(schema, args.out, force=args.force)
        print(f"wrote {args.out} ({len(schema)} attributes, every domain learned from the data)")
    else:
        print(dumps_schema(schema))
    return 0


def _read_hierarchy_noting(args: argparse.Namespace, path: str) -> Hierarchy:
    from ..io import HierarchyLabelWarning, read_hierarchy

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", HierarchyLabelWarning)
        hierarchy = read_hierarchy(path, delimiter=args.delimiter)
    for w in caught:
        if issubclass(w.category, HierarchyLabelWarning):
            print(f"note: {w.message}", file=sys.stderr)
        else:
            warnings.showwarning(w.message, w.category, w.filename, w.lineno)
    return hierarchy


def _cmd_hierarchy_check(args: argparse.Namespace) -> int:
    from ..io import hierarchy_summary

    hierarchy = _read_hierarchy_noting(args, args.file)
    facts = hierarchy_summary(hierarchy)
    if args.json:
        print(json.dumps(facts))
        return 0
    print(f"{args.file}: valid hierarchy")
    print(f"  {facts['leaves']} leaves, height {facts['height']} (rho {facts['rho']}), {facts['nodes']} nodes")
    print(f"  nodes per level (root first): {', '.join(map(str, facts['nodes_per_level']))}")
    print(f"  fan-out {facts['fanout_min']}..{facts['fanout_max']}")
    return 0


def _cmd_hierarchy_convert(args: argparse.Namespace) -> int:
    from ..io import check_writable, write_hierarchy

    check_writable(args.output, force=args.force)
    hierarchy = _read_hierarchy_noting(args, args.input)
    write_hierarchy(hierarchy, args.output, force=args.force)
    print(f"wrote {args.output} ({hierarchy.size} leaves, height {hierarchy.height})")
    return 0
