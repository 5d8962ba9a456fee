"""``privelet ledger``: every release made on this machine and the epsilon each table has spent."""

from __future__ import annotations

import argparse
import json

__all__ = ["register"]


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
    from ..io.ledger import Ledger, spending_summary

    ledger = Ledger()
    entries, totals = ledger.entries(), ledger.totals()
    if args.json:
        print(json.dumps({
            "ledger": str(ledger.path),
            "releases": [entry.to_json() for entry in entries],
            "tables": [spending.to_json() for spending in totals],
        }, indent=2))
        return 0
    print(f"privacy ledger {ledger.path}: {len(entries):,} release{'s' * (len(entries) != 1)}")
    if not entries:
        return 0
    print(f"{'id':>4} {'time (UTC)':<20} {'table':<12} {'epsilon':>9} {'neighbours':<10} {'mechanism':<9} "
          f"{'sampler':<8} {'seeded':<6} S_A / output")
    for entry in entries:
        print(f"{entry.id:>4} {entry.created:<20} {entry.fingerprint[:12]:<12} {entry.epsilon:>9g} "
              f"{entry.neighbours:<10} {entry.mechanism:<9} {entry.sampler:<8} {'yes' if entry.seeded else 'no':<6} "
              f"{{{', '.join(entry.sa)}}} -> {entry.output or '(not written)'}")
    print("epsilon spent per table (sequential composition):")
    for spending in totals:
        print(f"  {spending.fingerprint[:12]}: {spending_summary(spending)}")
    return 0
