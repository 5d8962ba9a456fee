"""``privelet ledger``: every release made on this machine and the epsilon each table has spent;
``privelet ledger link``: the files of a dataset, counted as one table."""

from __future__ import annotations

import argparse
import json

__all__ = ["register"]

#: The listing's columns of numbers, aligned right (id, epsilon).
_RIGHT = (0, 3)


def register(commands: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    """Add this module's commands to the ``privelet`` parser."""
    p = commands.add_parser(
        "ledger", parents=[common], help="the privacy-budget ledger: releases made here and epsilon spent per table",
        description="List every release recorded in this machine's privacy ledger (time, table, epsilon, "
                    "neighbours, S_A, mechanism, sampler, seeded or not, output file) and the total epsilon each "
                    "table has spent (sequential composition: the epsilons of its releases add up). A table is "
                    "known by a salted fingerprint of its parsed rows (whatever their order or the file's format), "
                    "of its file's bytes, and by the dataset you named (release --dataset, ledger link); the salt "
                    "stays on this machine. The ledger is PRIVELET_LEDGER if set, else ledger.sqlite3 in the "
                    "user's data folder.",
    )
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(handler=_cmd_ledger)
    actions = p.add_subparsers(dest="action", metavar="{link}")
    link = actions.add_parser(
        "link", parents=[common], help="count the releases of a file as releases of a dataset you name",
        description="Link table files to a dataset of your own naming: every release of these files, and of any "
                    "file linked to or released under the same dataset (release --dataset NAME), then adds to one "
                    "total. For the same people saved in different files (another export, another format, other "
                    "columns). The ledger keeps the name you give and a salted fingerprint of each file, nothing else.",
    )
    link.add_argument("files", nargs="+", metavar="FILE", help="a table file of the dataset")
    link.add_argument("--dataset", required=True, metavar="NAME", help="the dataset's name, in your own words")
    link.set_defaults(handler=_cmd_link)


def _cmd_ledger(args: argparse.Namespace) -> int:
    from ..io.ledger import RELEASE_COLUMNS, ledger_report, spending_summary

    report = ledger_report()
    entries, totals = report.releases, report.tables
    if args.json:
        print(json.dumps(report.to_json(), indent=2))
        return 0
    print(f"privacy ledger {report.path}: {len(entries):,} release{'s' * (len(entries) != 1)}")
    if not entries:
        return 0
    # every column as wide as its longest cell (the last, the output file, as it comes)
    rows = [RELEASE_COLUMNS, *report.rows()]
    widths = [max(len(row[i]) for row in rows) for i in range(len(RELEASE_COLUMNS) - 1)]
    for row in rows:
        print(" ".join(cell.rjust(w) if i in _RIGHT else cell.ljust(w) for i, (cell, w) in enumerate(zip(row, widths)))
              + f" {row[-1]}")
    print("epsilon spent per table (sequential composition):")
    for spending in totals:
        print(f"  {spending.table}: {spending_summary(spending)}")
    return 0


def _cmd_link(args: argparse.Namespace) -> int:
    from ..io.ledger import Ledger, spending_summary

    ledger = Ledger()
    for file in args.files:
        keys = ledger.link([file], args.dataset)
        print(f"linked {file} to the dataset {keys.dataset!r}")
    spending = ledger.spent(keys)
    print(f"the dataset {keys.dataset!r} has spent {spending_summary(spending)}")
    return 0
