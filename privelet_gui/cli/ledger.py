"""``privelet ledger``: every release made on this machine and the epsilon each table has spent."""

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
        description="List every release recorded in this machine's privacy ledger (time, table fingerprint, "
                    "epsilon, neighbours, S_A, mechanism, sampler, seeded or not, output file) and the total "
                    "epsilon each table has spent (sequential composition: the epsilons of its releases add up). "
                    "Tables are known by a salted fingerprint of their file's bytes, kept on this machine only. "
                    "The ledger is PRIVELET_LEDGER if set, else ledger.sqlite3 in the user's data folder.",
    )
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(handler=_cmd_ledger)


def _cmd_ledger(args: argparse.Namespace) -> int:
    from ..io.ledger import RELEASE_COLUMNS, SHORT_FINGERPRINT, ledger_report, spending_summary

    report = ledger_report()
    entries, totals = report.releases, report.tables
    if args.json:
        print(json.dumps(report.to_json(), indent=2))
        return 0
    print(f"privacy ledger {report.path}: {len(entries):,} release{'s' * (len(entries) != 1)}")
    if not entries:
        return 0
    # every column as wide as its longest cell (the last, the output file, as it comes)
    rows = [RELEASE_COLUMNS, *(entry.cells() for entry in entries)]
    widths = [max(len(row[i]) for row in rows) for i in range(len(RELEASE_COLUMNS) - 1)]
    for row in rows:
        print(" ".join(cell.rjust(w) if i in _RIGHT else cell.ljust(w) for i, (cell, w) in enumerate(zip(row, widths)))
              + f" {row[-1]}")
    print("epsilon spent per table (sequential composition):")
    for spending in totals:
        print(f"  {spending.fingerprint[:SHORT_FINGERPRINT]}: {spending_summary(spending)}")
    return 0
