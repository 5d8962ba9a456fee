"""``privelet report``: a release's report (one HTML page) and the script that redoes the release."""

from __future__ import annotations

import argparse
from pathlib import Path

from ._common import UsageError, progress_bar

__all__ = ["register"]


def register(commands: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    """Add this module's commands to the ``privelet`` parser."""
    p = commands.add_parser(
        "report", parents=[common], help="a release's report (HTML) and a script that redoes the release",
        description="Write the report of a release file: one self-contained HTML page (printable on A4) saying what "
                    "was released, the guarantee, the mechanism and why, the error users can expect, the privacy "
                    "ledger's record and the file's checksum. Made from the release file alone: no true count. "
                    "--script writes a shell script of privelet commands that makes the release again (a NEW "
                    "release, with fresh noise, spending epsilon again).",
    )
    p.add_argument("release", metavar="RELEASE", help="release file (.npz) or Zarr release folder")
    p.add_argument("--out", metavar="REPORT.html", help="the report to write")
    p.add_argument("--script", metavar="REDO.sh", help="the shell script that redoes the release, to write")
    p.add_argument("--name", metavar="NAME",
                   help="the table's name, as the report should call it (default: the dataset recorded, or the file's name)")
    p.add_argument("--workload", action="append", default=[], metavar="W",
                   help="the queries the error figures are for ('paper[:N]', 'marginals:K[:A,B]' or a file of "
                        "queries, as in 'privelet bounds'; repeat to combine); default: the workload S_A was "
                        "chosen for, else the paper's random workload")
    p.add_argument("--force", action="store_true", help="overwrite --out and --script if they exist")
    p.set_defaults(handler=_cmd_report)


def _cmd_report(args: argparse.Namespace) -> int:
    from ..io import check_writable
    from ..io.choices import write_redo_script
    from ..io.report import write_release_report

    if args.out is None and args.script is None:
        raise UsageError("say what to write: --out REPORT.html, --script REDO.sh, or both")
    targets = [Path(t) for t in (args.out, args.script) if t is not None]
    for target in targets:  # before the work
        check_writable(target, force=args.force)
    if args.out is not None:
        bar = progress_bar(args)
        try:
            write_release_report(args.release, args.out, force=args.force, name=args.name, workload=args.workload,
                                 progress=bar)
        finally:
            bar.close()
        print(f"wrote {args.out}")
    if args.script is not None:
        write_redo_script(args.release, args.script, force=args.force)
        print(f"wrote {args.script} (running it makes a NEW release and spends epsilon again)")
    return 0
