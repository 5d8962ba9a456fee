"""The ``privelet`` command line: differentially private frequency tables from a terminal.

Examples::

    privelet release --demo --out demo.npz
    privelet release people.csv --schema schema.json --epsilon 1 --sa recommended --out release.npz
    privelet bounds --schema schema.json --epsilon 1 --json
    privelet bounds --schema schema.json --epsilon 1 --workload marginals:2
    privelet advise --schema schema.json --workload marginals:1,2:age/5,sex
    privelet query release.npz --where "age=20..30" --where "occupation=Technical"
    privelet export release.npz --format csv --out release.csv
    privelet report release.npz --out report.html --script redo.sh
    privelet evaluate people.csv --schema schema.json --epsilons 0.5,1 --out evaluation/
    privelet ledger
    privelet schema infer people.csv --out proposed-schema.json
    privelet hierarchy check hierarchy_occupation.csv
    privelet hierarchy convert hierarchy_occupation.csv hierarchy_occupation.json

Exit codes: 0 success, 1 a problem with the data or files (one line on stderr, no
traceback unless ``--debug``), 2 a usage error, 70 a bug (``EX_SOFTWARE``: an unexpected
error or an :class:`~privelet_gui.engine.InternalError`, said to be a bug, its traceback
written to the log of unexpected errors, :mod:`privelet_gui.error_log`, never the data). Progress bars go to stderr
(``--quiet`` turns them off). One module per group of commands; each imports the
engine only when its command runs, so ``--help`` and ``--version`` start at once. The
command line imports nothing from the desktop app: ``evaluate`` draws its figures with
:mod:`privelet_gui.qt.figures` (Qt loaded lazily; ``--no-figures`` never loads it).
"""

from __future__ import annotations

import argparse
import sys
import traceback
import warnings
from collections.abc import Sequence

from .. import __version__
from . import advise, evaluate, ledger, query, release, report, tools
from ._common import Parser, ProgressBar, UsageError, common_options, one_line
from .evaluate import EVALUATION_WARNING, SUMMARY_COLUMNS
from .release import DEMO_EPSILON

__all__ = ["DEMO_EPSILON", "EVALUATION_WARNING", "EX_SOFTWARE", "SUMMARY_COLUMNS", "ProgressBar", "build_parser", "main"]

#: The exit code of a bug (sysexits.h's EX_SOFTWARE, "an internal software error").
EX_SOFTWARE = 70


def build_parser() -> argparse.ArgumentParser:
    """The ``privelet`` argument parser."""
    common = common_options(sub=True)
    parser = Parser(
        prog="privelet",
        description="Publish frequency tables under differential privacy with Privelet and Privelet+.",
        parents=[common_options(sub=False)],
        epilog="Run 'privelet COMMAND --help' for a command's options.",
    )
    parser.add_argument("--version", action="version", version=f"privelet {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)
    for module in (release, query, report, evaluate, advise, ledger, tools):
        module.register(commands, common)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit code (0 ok, 1 data error, 2 usage error, 70 a bug)."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help, --version and usage errors
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 2)
    from ..engine import Cancelled, DroppedRowsWarning, PriveletError  # the engine loads once a command runs

    if getattr(args, "handler", None) is None:
        parser.print_usage(sys.stderr)
        print("privelet: error: choose a command (see 'privelet --help')", file=sys.stderr)
        return 2
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DroppedRowsWarning)  # the count report says it
            return int(args.handler(args))
    except UsageError as exc:
        print(f"privelet: error: {exc}", file=sys.stderr)
        return 2
    except (PriveletError, OSError, MemoryError) as exc:
        if args.debug:
            traceback.print_exc()
        print(f"privelet: error: {one_line(exc)}", file=sys.stderr)
        return 1
    except Cancelled:
        print("privelet: cancelled", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("\nprivelet: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # an InternalError or any other unexpected error: a bug, never a data error
        return _report_bug(exc, args)


def _report_bug(error: Exception, args: argparse.Namespace) -> int:
    """Say that ``error`` is a bug, log its traceback (no values) and where to report it; :data:`EX_SOFTWARE`."""
    from ..error_log import bug_report_text, log_unexpected_error

    if args.debug:
        traceback.print_exc()
    log = log_unexpected_error(error, where=f"the command 'privelet {args.command}'")
    print(f"privelet: internal error: {one_line(error)}", file=sys.stderr)
    print(f"privelet: {bug_report_text(error, log)}", file=sys.stderr)
    return EX_SOFTWARE
