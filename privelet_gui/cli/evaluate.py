"""``privelet evaluate``: the paper's Figures 8/9 on the custodian's own table (uses the TRUE data)."""

from __future__ import annotations

import argparse
import csv
import io as _io
import math
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from ._common import (
    ProgressBar,
    UsageError,
    loud,
    note,
    parse_sa,
    progress_bar,
    queries_type,
    read_options,
    seed_type,
    table_options,
)

if TYPE_CHECKING:
    from ..engine.accuracy.evaluation import EvaluationRow

__all__ = ["EVALUATION_WARNING", "SUMMARY_COLUMNS", "evaluation_outputs", "register", "summary_csv"]

#: Printed loudly (even with --quiet) by ``evaluate``; the figures carry the same label.
EVALUATION_WARNING = (
    "WARNING: 'privelet evaluate' measures errors against the TRUE data. Its outputs (summary.csv and "
    "the figures) are for the data custodian's own machine only: do NOT publish them or ship them "
    "with a release."
)


_EVALUATE_SEED_WARNING = (
    "WARNING: --seed makes the query workload and the noise reproducible, FOR TESTING ONLY. "
    "Seeded noise is NOT private: never publish releases made with a known seed."
)


def register(commands: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    """Add this module's commands to the ``privelet`` parser."""
    p = commands.add_parser(
        "evaluate", parents=[common],
        help="the paper's error evaluation on your own table (uses the TRUE data: not for publication)",
        description="Reproduce the paper's experiment (Figures 8/9) on TABLE: draw a random workload of range-count "
                    "queries, release the table with Basic and with Privelet+ at every epsilon, and write the "
                    "average square and relative errors (sanity bound 0.1% of n) per query-coverage quintile to "
                    "DIR/summary.csv, plus two PNG figures per epsilon: figure_epsilon_E.png (average square "
                    "error, as Figures 8/9) and figure_relative_error_epsilon_E.png. The errors are measured "
                    "against the TRUE data: the outputs are for the custodian's machine only, never for publication.",
    )
    p.add_argument("table", metavar="TABLE", help="CSV, TSV, .csv.gz or Parquet file")
    p.add_argument("--schema", required=True, metavar="S.json", help="schema file (attributes, domains, hierarchies)")
    p.add_argument("--epsilons", required=True, metavar="E1,E2,...",
                   help="privacy budgets to evaluate, comma-separated (e.g. 0.5,0.75,1,1.25)")
    p.add_argument("--sa", metavar="A,B|recommended|none", default=None,
                   help="S_A of Privelet+: a list, 'recommended' (the paper's rule, the default; 'auto', its earlier "
                        "name, works too) or 'none' (plain Privelet)")
    p.add_argument("--queries", type=queries_type, default=40_000, metavar="N",
                   help="random range-count queries in the workload (default 40000, as in the paper)")
    p.add_argument("--workload", action="append", default=[], metavar="W",
                   help="measure on the queries you expect instead of --queries random ones: 'paper[:N]', "
                        "'marginals:K[,K][:A[/G],B[/G]...]' or a CSV/JSON file of queries, as for release; repeat "
                        "to combine")
    p.add_argument("--seed", type=seed_type, metavar="N", help="fixed seed for the workload and the noise, FOR TESTS ONLY")
    p.add_argument("--neighbours", choices=("replace", "add-remove"), default="replace",
                   help="neighbouring tables differ by replacing one row (default, the paper's) or adding/removing one")
    p.add_argument("--invalid", choices=("error", "drop"), default="error",
                   help="rows with values outside the domain: stop with an error (default) or drop them")
    p.add_argument("--out", required=True, metavar="DIR", help="folder for summary.csv and the figures (created if missing)")
    p.add_argument("--force", action="store_true", help="overwrite existing outputs in DIR")
    p.add_argument("--report", metavar="REPORT.html",
                   help="also write the evaluation as one HTML page (printable), marked CONFIDENTIAL on every page: "
                        "its errors come from the true data")
    p.add_argument("--no-figures", action="store_true", help="write summary.csv only (no PNG figures, no Qt needed)")
    table_options(p)
    p.set_defaults(handler=_cmd_evaluate)


#: Columns of ``DIR/summary.csv`` written by ``evaluate`` (error statistics only, no true counts).
SUMMARY_COLUMNS = (
    "epsilon", "mechanism", "quintile", "average_coverage", "average_square_error", "average_relative_error", "queries",
)


def _epsilon_text(epsilon: float) -> str:
    """Shortest exact decimal of ``epsilon``: ``0.5``, ``1``, ``1.25`` (file names, summary.csv)."""
    import numpy as np

    return np.format_float_positional(float(epsilon), trim="-")


def _parse_epsilons(text: str) -> list[float]:
    """``--epsilons`` as a list of distinct positive numbers (errors name the bad entry; exit 1)."""
    from ..engine import PriveletError, check_epsilon

    example = "give positive numbers separated by commas, e.g. --epsilons 0.5,0.75,1,1.25"
    parts = [part.strip() for part in text.split(",")]
    if not any(parts):
        raise PriveletError(f"--epsilons is empty; {example}")
    values: list[float] = []
    for part in parts:
        if not part:
            raise PriveletError(f"--epsilons {text!r} has an empty entry; {example}")
        try:
            value = float(part)
        except ValueError:
            raise PriveletError(f"--epsilons: {part!r} is not a number; {example}") from None
        try:
            value = check_epsilon(value)
        except PriveletError:
            raise PriveletError(f"--epsilons: {part!r} is not a positive finite number; {example}") from None
        if value in values:
            raise PriveletError(f"--epsilons: epsilon {part} is listed twice")
        values.append(value)
    return values


def evaluation_outputs(out: str | os.PathLike[str], epsilons: Sequence[float], *, figures: bool = True) -> dict[str, Path]:
    """The files ``evaluate`` writes into ``out``: ``summary.csv`` and, with figures, two PNGs per epsilon.

    Keys are ``"summary"``, ``"square_error E"`` and ``"relative_error E"`` (E as in the file names).

    >>> sorted(p.name for p in evaluation_outputs("ev", [0.5, 1.0]).values())  # doctest: +NORMALIZE_WHITESPACE
    ['figure_epsilon_0.5.png', 'figure_epsilon_1.png', 'figure_relative_error_epsilon_0.5.png',
     'figure_relative_error_epsilon_1.png', 'summary.csv']
    """
    folder = Path(out)
    paths = {"summary": folder / "summary.csv"}
    if figures:
        for epsilon in epsilons:
            e = _epsilon_text(epsilon)
            paths[f"square_error {e}"] = folder / f"figure_epsilon_{e}.png"
            paths[f"relative_error {e}"] = folder / f"figure_relative_error_epsilon_{e}.png"
    return paths


def _check_output_folder(folder: Path, outputs: Sequence[Path], *, force: bool) -> None:
    """Fail before the long work: ``folder`` unusable, or an output there already (without --force)."""
    from ..io import OutputExistsError

    if folder.exists():
        if not folder.is_dir():
            raise NotADirectoryError(f"--out {folder} is a file, not a folder; give a folder for the outputs")
        for path in outputs:
            if path.is_dir():
                raise IsADirectoryError(f"cannot write {path}: it is a folder")
            if path.exists() and not force:
                raise OutputExistsError(path)
        if not os.access(folder, os.W_OK | os.X_OK):
            raise PermissionError(f"cannot write into the folder {folder}: permission denied")
        return
    parent = folder.parent
    while not parent.exists() and parent != parent.parent:
        parent = parent.parent
    if not parent.is_dir():
        raise NotADirectoryError(f"cannot create the folder {folder}: {parent} is a file")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise PermissionError(f"cannot create the folder {folder}: {parent} is not writable")


def summary_csv(rows: Sequence[EvaluationRow]) -> str:
    """``summary.csv``'s text: one line per epsilon x mechanism x quintile, floats exact (shortest repr).

    Error statistics only: coverage, average errors and the number of queries, never a count.
    """
    text = _io.StringIO()
    writer = csv.writer(text, lineterminator="\n")
    writer.writerow(SUMMARY_COLUMNS)
    for r in rows:
        q = r.row
        writer.writerow([
            _epsilon_text(r.epsilon), r.mechanism, q.quintile, repr(q.coverage), repr(q.square_error),
            repr(q.relative_error), q.queries,
        ])
    return text.getvalue()


def _cmd_evaluate(args: argparse.Namespace) -> int:
    import numpy as np

    from ..engine import PriveletError, ReleaseSpec, resolve_sa
    from ..engine.accuracy.evaluation import evaluate
    from ..io import atomic_write, count_table, load_schema, workloads_from_descriptions

    epsilons = _parse_epsilons(args.epsilons)
    folder = Path(args.out)
    figures = not args.no_figures
    outputs = evaluation_outputs(folder, epsilons, figures=figures)
    _check_output_folder(folder, list(outputs.values()), force=args.force)  # before the long work
    if args.report is not None:
        from ..io import check_writable

        check_writable(args.report, force=args.force)
    table = Path(args.table)
    if not table.exists():
        raise FileNotFoundError(f"no such table file: {table}")
    schema = load_schema(args.schema)
    rule, given = parse_sa(args.sa, schema)
    if rule == "best":
        raise UsageError("--sa best chooses S_A for a workload when releasing ('privelet release', 'privelet bounds'); "
                         "evaluate compares with a list, 'recommended' or 'none'")
    sa = resolve_sa(rule, ReleaseSpec(schema, 1.0, "privelet+", (), args.neighbours), given=given)
    workload = workloads_from_descriptions(args.workload, schema) if args.workload else None
    # Loud on purpose, and even with --quiet: a privacy warning, not a progress note.
    print(loud(EVALUATION_WARNING), file=sys.stderr)
    if args.seed is not None:
        print(_EVALUATE_SEED_WARNING, file=sys.stderr)
    if schema.domain_from_data:
        note(args, "note: the domains of " + ", ".join(schema.domain_from_data) + " were learned from the data "
                    "(domain_from_data); replace them with public domains before a real release.")
    bar = progress_bar(args)
    started = time.perf_counter()
    try:
        matrix, report = count_table(table, schema, read_options(args), invalid=args.invalid, progress=bar)
        bar.close()
        if report.rows_counted == 0:
            raise PriveletError(f"{table}: no rows were counted, so there is nothing to evaluate")
        rng = np.random.default_rng(args.seed) if args.seed is not None else None
        _, rows = evaluate(matrix, schema, epsilons, sa, queries=args.queries, rng=rng,
                           neighbours=args.neighbours, workload=workload, progress=bar)
        bar.close()
    finally:
        bar.close()
    del matrix  # the true counts go no further
    note(args, f"counted: {report.custodian_summary(args.neighbours)}")
    folder.mkdir(parents=True, exist_ok=True)
    with atomic_write(outputs["summary"], force=args.force, mode="w", newline="") as handle:
        handle.write(summary_csv(rows))
    written = [outputs["summary"]]
    if figures:
        written += _write_evaluation_figures(args, outputs, rows, bar)
    if args.report is not None:
        from ..io.report import write_evaluation_report

        written.append(write_evaluation_report(
            args.report, force=args.force, rows=rows, table_name=table.name, schema=schema, sa=sa,
            neighbours=args.neighbours, queries=args.queries if workload is None else len(workload),
            seeded=args.seed is not None, workload=None if workload is None else workload.name,
        ))
    seconds = time.perf_counter() - started
    from ..engine.accuracy.evaluation import EVALUATED_MECHANISMS

    print(f"wrote {outputs['summary']} ({len(rows)} rows: {len(epsilons)} epsilon(s) x "
          f"{len(EVALUATED_MECHANISMS)} mechanisms x 5 coverage quintiles)")
    for path in written[1:]:
        print(f"wrote {path}")
    asked = f"{args.queries:,} random queries" if workload is None else f"{len(workload):,} queries of {workload.name}"
    print(f"Basic vs Privelet+ (S_A = {{{', '.join(sa)}}}), {asked}, neighbours "
          f"{args.neighbours}, {seconds:,.1f} s; for the custodian's machine only, not for publication")
    for epsilon in epsilons:
        print(f"epsilon {_epsilon_text(epsilon)}: average square error per coverage quintile")
        print(f"  {'quintile':>8} {'avg coverage':>13} {'Basic':>12} {'Privelet+':>12} {'Basic/Privelet+':>16}")
        mine = {(r.mechanism, r.row.quintile): r.row for r in rows if r.epsilon == epsilon}
        for quintile in range(1, 6):
            b, p = mine[("basic", quintile)], mine[("privelet+", quintile)]
            ratio = b.square_error / p.square_error if p.square_error > 0 else math.inf
            print(f"  {quintile:>8} {b.coverage:>13.3e} {b.square_error:>12.4e} {p.square_error:>12.4e} {ratio:>16.2f}")
    return 0


def _write_evaluation_figures(
    args: argparse.Namespace, outputs: dict[str, Path], rows: Sequence[EvaluationRow], bar: ProgressBar
) -> list[Path]:
    """Draw the PNGs (Qt, loaded only here). summary.csv is written already if this fails."""
    from ..engine import PriveletError

    try:
        from ..qt.figures import ensure_application, rows_by_epsilon, write_error_figure

        ensure_application(headless=True)
    except (ImportError, RuntimeError) as exc:
        raise PriveletError(
            f"wrote {outputs['summary']}, but the figures need Qt (PySide6, pyqtgraph), which failed to load "
            f"({exc}); run again with --no-figures --force, or fix the Qt installation"
        ) from exc
    grouped = rows_by_epsilon(rows)
    jobs = [(epsilon, error) for epsilon in grouped for error in ("square_error", "relative_error")]
    written = []
    try:
        for number, (epsilon, error) in enumerate(jobs):
            bar(number / len(jobs), "drawing the figures")
            path = outputs[f"{error} {_epsilon_text(epsilon)}"]
            written.append(write_error_figure(path, grouped[epsilon], epsilon=epsilon, error=error, force=args.force))
        bar(1.0, "figures done")
    finally:
        bar.close()
    return written
