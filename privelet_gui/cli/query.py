"""``privelet query`` and ``privelet export``: answer queries on a release, export it as a table.

A release is a ``.npz`` file or a ``.zarr`` folder; a folder is read lazily, a chunk at a time
(:func:`~privelet_gui.io.load_release` opens it so), never whole.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
from typing import TYPE_CHECKING

from ._common import UsageError, fmt, loud, note, progress_bar

if TYPE_CHECKING:
    from ..engine import Release

__all__ = ["STDOUT", "register", "warn_about_release"]

#: ``--out -`` names standard output.
STDOUT = "-"


def register(commands: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    """Add this module's commands to the ``privelet`` parser."""
    p = commands.add_parser(
        "query", parents=[common], help="answer a range-count query on a release",
        description="Sum the noisy counts in a box and give the exact noise variance and a 95% interval.",
    )
    p.add_argument("release", metavar="RELEASE.npz|.zarr", help="a .npz release file or a .zarr release folder (read in chunks)")
    p.add_argument("--where", action="append", default=[], metavar="NAME=VALUE",
                   help="a condition: a hierarchy label (occupation=Technical), a value (sex=Male) or an "
                        "inclusive range (age=20..30, age=65..); repeat for several attributes")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(handler=_cmd_query)

    p = commands.add_parser(
        "export", parents=[common], help="export a release as a long table (CSV or Parquet)",
        description="Write one row per cell: the attribute labels, then noisy_count.",
    )
    p.add_argument("release", metavar="RELEASE.npz|.zarr", help="a .npz release file or a .zarr release folder (read in chunks)")
    p.add_argument("--format", choices=("csv", "parquet"), help="default: from the --out extension")
    p.add_argument("--out", required=True, metavar="FILE",
                   help="file to write (.csv, .csv.gz or .parquet), or - for standard output (CSV unless --format "
                        "parquet, which is refused when standard output is a terminal)")
    p.add_argument("--force", action="store_true", help="overwrite --out if it exists")
    p.add_argument("--counts", choices=("noisy", "nonnegative", "integer", "nonnegative-integer"), default="noisy",
                   help="noisy (default: the release's own unbiased counts), or for users who cannot use negative or "
                        "fractional counts: nonnegative (the closest non-negative counts with the same total), "
                        "integer (whole counts keeping the total) or both; these help small counts and relative "
                        "errors but bias large sums, and their column is named so (e.g. noisy_count_nonnegative)")
    p.add_argument("--allow-seeded", action="store_true",
                   help="export a seeded (test, NOT private) release anyway; the file then says it is seeded")
    p.add_argument("--standard-error", action="store_true",
                   help="add each cell's exact noise standard deviation (column noisy_count_standard_error), worked "
                        "out from the release's epsilon, S_A, mechanism and schema alone (noisy counts only; refused "
                        "for weighted marginals that answer single cells with a bias, which have none)")
    p.set_defaults(handler=_cmd_export)


def warn_about_release(message: str) -> None:
    """What a reader must know about a release read (its signature, its flags): on stderr,
    even with --quiet, as the privacy warnings are."""
    print(f"privelet: warning: {message}", file=sys.stderr)


def _cmd_query(args: argparse.Namespace) -> int:
    from ..engine import PriveletError
    from ..io import answer_query, load_release, parse_where

    release = load_release(args.release, warn=warn_about_release)
    if release.schema is None:
        raise PriveletError(f"{args.release} has no schema, so its cells have no labels to query")
    answer = answer_query(release, parse_where(release.schema, args.where))
    if args.json:
        print(json.dumps(answer.to_json()))
        return 0
    lo, hi = answer.ci95
    print(f"{answer.query}: {answer.noisy_count:,.2f}")
    if answer.biased:
        print("  answered with a bias: no marginal this release measured holds these attributes together, so no "
              "noise variance or interval applies")
        return 0
    print(f"  noise variance {fmt(answer.variance)} (standard deviation {math.sqrt(answer.variance):,.2f})")
    print(f"  95% interval [{lo:,.2f}, {hi:,.2f}]")
    return 0


def _cmd_export(args: argparse.Namespace) -> int:
    from ..io import check_writable, export_metadata_path, export_release, load_release
    from ..io.releases import SEEDED_WARNING

    to_stdout = args.out == STDOUT
    if to_stdout:
        if args.format == "parquet" and sys.stdout.isatty():
            raise UsageError(
                "Parquet is binary and would garble the terminal: redirect standard output to a file or a program "
                "(privelet export RELEASE --format parquet --out - > cells.parquet), or give --out FILE"
            )
    else:
        out = check_writable(args.out, force=args.force)
        described = export_metadata_path(out, args.format)  # the CSV's description beside it
        if described is not None:
            check_writable(described, force=args.force)
    release = load_release(args.release, warn=warn_about_release)
    if release.seeded and args.allow_seeded:
        print(loud(SEEDED_WARNING), file=sys.stderr)  # even with --quiet: a privacy warning
    what = "" if args.counts == "noisy" else f", {args.counts} counts (post-processed for convenience: biased for big sums)"
    if args.standard_error:
        what += ", with each cell's noise standard deviation"
    seeded = ", marked as a seeded test release" if release.seeded else ""
    if to_stdout:
        rows = _export_to_stdout(release, args)
        if rows is None:
            return 1
        own = ("; CSV on standard output has no description beside it (--out FILE.csv writes one)"
               if (args.format or "csv") == "csv" else "")
        note(args, f"wrote {rows:,} rows to standard output (one per cell{what}){seeded}{own}")  # stdout holds the cells
        return 0
    bar = progress_bar(args)
    try:
        rows = export_release(release, out, format=args.format, force=args.force, counts=args.counts,
                              allow_seeded=args.allow_seeded, progress=bar, standard_error=args.standard_error)
    finally:
        bar.close()
    described_in = f"; described in {described}" if described is not None else "; described in its own metadata"
    print(f"wrote {out} ({rows:,} rows, one per cell{what}){seeded}{described_in}")
    return 0


def _export_to_stdout(release: Release, args: argparse.Namespace) -> int | None:
    """``--out -``: the export on standard output; its rows, or None if the reader closed the pipe early."""
    from ..io import write_export

    sys.stdout.flush()  # anything printed before goes first
    bar = progress_bar(args)  # on stderr, beside the data
    try:
        rows = write_export(release, sys.stdout.buffer, format=args.format or "csv", counts=args.counts,
                            allow_seeded=args.allow_seeded, progress=bar, standard_error=args.standard_error)
        sys.stdout.buffer.flush()
    except BrokenPipeError:
        # The reader stopped early (``| head``): no error message for that. Standard output
        # now points at nothing, so that Python's own flush at exit does not fail again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return None
    finally:
        bar.close()
    return rows
