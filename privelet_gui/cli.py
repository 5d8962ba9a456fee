"""The ``privelet`` command line: differentially private frequency tables from a terminal.

Examples::

    privelet release --demo --out demo.npz
    privelet release people.csv --schema schema.json --epsilon 1 --sa auto --out release.npz
    privelet bounds --schema schema.json --epsilon 1 --json
    privelet query release.npz --where "age=20..30" --where "occupation=Technical"
    privelet export release.npz --format csv --out release.csv
    privelet evaluate people.csv --schema schema.json --epsilons 0.5,1 --out evaluation/
    privelet schema infer people.csv --out proposed-schema.json
    privelet hierarchy check hierarchy_occupation.csv
    privelet hierarchy convert hierarchy_occupation.csv hierarchy_occupation.json

Exit codes: 0 success, 1 a problem with the data or files (one line on stderr, no
traceback unless ``--debug``), 2 a usage error. Progress bars go to stderr
(``--quiet`` turns them off). This module imports nothing from the GUI, except that ``evaluate`` loads Qt (lazily)
to draw its figures; ``evaluate --no-figures`` does not.
"""

from __future__ import annotations

import argparse
import csv
import io as _io
import json
import math
import os
import sys
import time
import traceback
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Any, NoReturn

import numpy as np

from . import __version__
from .engine import (
    Cancelled,
    DroppedRowsWarning,
    PriveletError,
    Schema,
    basic,
    paper_bound,
    privelet_plus,
    recommend_sa,
    worst_case_variance,
)
from .engine.evaluation import EVALUATED_MECHANISMS, EvaluationRow, evaluate
from .engine.noise import check_epsilon
from .io import (
    INFERRED_DOMAIN_WARNING,
    HierarchyLabelWarning,
    OutputExistsError,
    TableOptions,
    answer_query,
    atomic_write,
    check_writable,
    count_table,
    dumps_schema,
    export_release,
    hierarchy_summary,
    infer_schema,
    load_release,
    load_schema,
    parse_where,
    read_hierarchy,
    read_table,
    sample_schema_path,
    sample_table_path,
    save_release,
    save_schema,
    write_hierarchy,
)

__all__ = ["DEMO_EPSILON", "build_parser", "main"]

#: The privacy budget ``release --demo`` uses.
DEMO_EPSILON = 1.0

_SEED_WARNING = (
    "WARNING: --seed makes the noise reproducible. A seeded release is NOT private: anyone who "
    "knows the seed can remove the noise. Use --seed for tests only, never for publication."
)


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

#: Columns of ``DIR/summary.csv`` written by ``evaluate`` (error statistics only, no true counts).
SUMMARY_COLUMNS = (
    "epsilon", "mechanism", "quintile", "average_coverage", "average_square_error", "average_relative_error", "queries",
)


class _UsageError(Exception):
    """A command-line usage error found after parsing (exit code 2)."""


# -- progress --------------------------------------------------------------------------------


class ProgressBar:
    """A one-line progress bar on stderr, redrawn with carriage returns, throttled.

    Call it as ``bar(fraction, stage)``; :meth:`close` ends the line. Disabled bars do nothing.
    """

    def __init__(self, stream: IO[str] | None = None, *, enabled: bool = True, interval: float = 0.1, width: int = 30):
        self.stream = stream if stream is not None else sys.stderr
        self.enabled = enabled
        self.interval = interval
        self.width = width
        self._last = -math.inf
        self._shown = False
        self._length = 0

    def __call__(self, fraction: float, stage: str) -> None:
        if not self.enabled:
            return
        now = time.monotonic()
        if fraction < 1.0 and now - self._last < self.interval:
            return
        self._last = now
        fraction = min(max(fraction, 0.0), 1.0)
        filled = int(round(fraction * self.width))
        line = f"{stage[:40]:<40} [{'#' * filled}{'.' * (self.width - filled)}] {fraction:4.0%}"
        pad = max(self._length - len(line), 0)
        self.stream.write("\r" + line + " " * pad)
        self.stream.flush()
        self._length = len(line)
        self._shown = True

    def close(self) -> None:
        if self._shown:
            self.stream.write("\n")
            self.stream.flush()
            self._shown = False
            self._length = 0


# -- the parser ---------------------------------------------------------------------------------


class _Parser(argparse.ArgumentParser):
    """argparse with one-line errors (``privelet release: error: ...``) and exit code 2."""

    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        self.exit(2, f"{self.prog}: error: {message}\n")


def _common(*, sub: bool) -> argparse.ArgumentParser:
    """--debug and --quiet, accepted before or after the command."""
    parent = argparse.ArgumentParser(add_help=False)
    default = argparse.SUPPRESS if sub else False
    parent.add_argument("--debug", action="store_true", default=default, help="show a traceback on errors")
    parent.add_argument("--quiet", "-q", action="store_true", default=default, help="no progress bars or notes")
    return parent


def delimiter_type(text: str) -> str:
    """``--delimiter``: one character that can separate columns ('tab' or '\\t' for TAB), or a
    usage error (exit 2) saying which ones can."""
    delimiter = "\t" if text.lower() in ("tab", "\\t") else text
    try:
        TableOptions(delimiter=delimiter)
    except PriveletError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return delimiter


def encoding_type(text: str) -> str:
    """``--encoding``: a text encoding Python knows, or a usage error (exit 2)."""
    try:
        TableOptions(encoding=text)
    except PriveletError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return text


def _table_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("reading the table")
    group.add_argument("--delimiter", metavar="C", type=delimiter_type,
                       help="column separator (default: sniffed among , ; | TAB; 'tab' for TAB)")
    group.add_argument("--encoding", default="utf-8", type=encoding_type,
                       help="text encoding (default: utf-8; a BOM is skipped)")
    group.add_argument("--no-header", action="store_true", help="the first row is data (columns are column_1, column_2, ...)")


def _epsilon(text: str) -> float:
    try:
        return check_epsilon(float(text))
    except ValueError as exc:  # float() failing, or the engine's check (a PriveletError)
        message = str(exc) if isinstance(exc, PriveletError) else f"epsilon must be a number, got {text!r}"
        raise argparse.ArgumentTypeError(message) from None


def _queries(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"the number of queries must be an integer, got {text!r}") from None
    if value < 5:
        raise argparse.ArgumentTypeError(f"give at least 5 queries (one per coverage quintile), got {text!r}")
    return value


def _seed(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"the seed must be a non-negative integer, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"the seed must be a non-negative integer, got {text!r}")
    return value


def build_parser() -> argparse.ArgumentParser:
    """The ``privelet`` argument parser."""
    common = _common(sub=True)
    parser = _Parser(
        prog="privelet",
        description="Publish frequency tables under differential privacy with Privelet and Privelet+.",
        parents=[_common(sub=False)],
        epilog="Run 'privelet COMMAND --help' for a command's options.",
    )
    parser.add_argument("--version", action="version", version=f"privelet {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)

    p = commands.add_parser(
        "release", parents=[common], help="count a table and write a differentially private release",
        description="Count TABLE with the schema and write a noisy frequency matrix (a .npz release file).",
    )
    p.add_argument("table", nargs="?", metavar="TABLE", help="CSV, TSV, .csv.gz or Parquet file")
    p.add_argument("--schema", metavar="S.json", help="schema file (attributes, domains, hierarchies)")
    p.add_argument("--epsilon", type=_epsilon, metavar="E", help="privacy budget epsilon > 0 (smaller: more private)")
    p.add_argument("--sa", metavar="A,B|auto|none", default=None,
                   help="attributes left untransformed (Privelet+): a list, 'auto' (recommended, the default) "
                        "or 'none' (plain Privelet)")
    p.add_argument("--mechanism", choices=("privelet", "basic"), default="privelet",
                   help="privelet (wavelets, default) or basic (noise on every cell)")
    p.add_argument("--neighbours", choices=("replace", "add-remove"), default="replace",
                   help="neighbouring tables differ by replacing one row (default, the paper's) or adding/removing one")
    p.add_argument("--out", metavar="RELEASE.npz", help="release file to write")
    p.add_argument("--force", action="store_true", help="overwrite --out if it exists")
    p.add_argument("--seed", type=_seed, metavar="N", help="fixed noise seed, FOR TESTS ONLY (not private)")
    p.add_argument("--invalid", choices=("error", "drop"), default="error",
                   help="rows with values outside the domain: stop with an error (default) or drop them")
    p.add_argument("--demo", action="store_true",
                   help=f"use the bundled UCI Adult sample and its schema (epsilon {DEMO_EPSILON}, --sa auto)")
    _table_options(p)
    p.set_defaults(handler=_cmd_release)

    p = commands.add_parser(
        "bounds", parents=[common], help="noise-variance bounds for a schema (no data needed)",
        description="The paper's bound and the exact worst-case noise variance of Basic, Privelet and "
                    "Privelet+, and the recommended S_A. Data-independent: costs no privacy.",
    )
    p.add_argument("--schema", required=True, metavar="S.json", help="schema file")
    p.add_argument("--epsilon", required=True, type=_epsilon, metavar="E", help="privacy budget epsilon > 0")
    p.add_argument("--sa", metavar="A,B|auto|none", default=None, help="S_A for Privelet+ (default: auto)")
    p.add_argument("--neighbours", choices=("replace", "add-remove"), default="replace", help="neighbouring notion")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(handler=_cmd_bounds)

    p = commands.add_parser(
        "query", parents=[common], help="answer a range-count query on a release",
        description="Sum the noisy counts in a box and give the exact noise variance and a 95%% interval.",
    )
    p.add_argument("release", metavar="RELEASE.npz")
    p.add_argument("--where", action="append", default=[], metavar="NAME=VALUE",
                   help="a condition: a hierarchy label (occupation=Technical), a value (sex=Male) or an "
                        "inclusive range (age=20..30, age=65..); repeat for several attributes")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(handler=_cmd_query)

    p = commands.add_parser(
        "export", parents=[common], help="export a release as a long table (CSV or Parquet)",
        description="Write one row per cell: the attribute labels, then noisy_count.",
    )
    p.add_argument("release", metavar="RELEASE.npz")
    p.add_argument("--format", choices=("csv", "parquet"), help="default: from the --out extension")
    p.add_argument("--out", required=True, metavar="FILE", help="file to write (.csv, .csv.gz or .parquet)")
    p.add_argument("--force", action="store_true", help="overwrite --out if it exists")
    p.set_defaults(handler=_cmd_export)

    p = commands.add_parser(
        "evaluate", parents=[common],
        help="the paper's error evaluation on your own table (uses the TRUE data: not for publication)",
        description="Reproduce the paper's experiment (Figures 8/9) on TABLE: draw a random workload of range-count "
                    "queries, release the table with Basic and with Privelet+ at every epsilon, and write the "
                    "average square and relative errors (sanity bound 0.1%% of n) per query-coverage quintile to "
                    "DIR/summary.csv, plus two PNG figures per epsilon: figure_epsilon_E.png (average square "
                    "error, as Figures 8/9) and figure_relative_error_epsilon_E.png. The errors are measured "
                    "against the TRUE data: the outputs are for the custodian's machine only, never for publication.",
    )
    p.add_argument("table", metavar="TABLE", help="CSV, TSV, .csv.gz or Parquet file")
    p.add_argument("--schema", required=True, metavar="S.json", help="schema file (attributes, domains, hierarchies)")
    p.add_argument("--epsilons", required=True, metavar="E1,E2,...",
                   help="privacy budgets to evaluate, comma-separated (e.g. 0.5,0.75,1,1.25)")
    p.add_argument("--sa", metavar="A,B|auto|none", default=None,
                   help="S_A of Privelet+: a list, 'auto' (recommended, the default) or 'none' (plain Privelet)")
    p.add_argument("--queries", type=_queries, default=40_000, metavar="N",
                   help="random range-count queries in the workload (default 40000, as in the paper)")
    p.add_argument("--seed", type=_seed, metavar="N", help="fixed seed for the workload and the noise, FOR TESTS ONLY")
    p.add_argument("--neighbours", choices=("replace", "add-remove"), default="replace",
                   help="neighbouring tables differ by replacing one row (default, the paper's) or adding/removing one")
    p.add_argument("--invalid", choices=("error", "drop"), default="error",
                   help="rows with values outside the domain: stop with an error (default) or drop them")
    p.add_argument("--out", required=True, metavar="DIR", help="folder for summary.csv and the figures (created if missing)")
    p.add_argument("--force", action="store_true", help="overwrite existing outputs in DIR")
    p.add_argument("--no-figures", action="store_true", help="write summary.csv only (no PNG figures, no Qt needed)")
    _table_options(p)
    p.set_defaults(handler=_cmd_evaluate)

    p = commands.add_parser("schema", parents=[common], help="schema tools", description="Schema tools.")
    schema_commands = p.add_subparsers(dest="schema_command", metavar="ACTION", parser_class=_Parser)
    q = schema_commands.add_parser(
        "infer", parents=[common], help="propose a schema from a table (NOT private)",
        description="Propose a schema from the table's values. A domain learned from the data is NOT "
                    "private: replace it with a public one before publishing.",
    )
    q.add_argument("table", metavar="TABLE")
    q.add_argument("--out", metavar="S.json", help="write the schema here (default: print it)")
    q.add_argument("--force", action="store_true", help="overwrite --out if it exists")
    q.add_argument("--columns", metavar="A,B", help="only these columns")
    _table_options(q)
    q.set_defaults(handler=_cmd_schema_infer)
    p.set_defaults(handler=_missing_action(p))

    p = commands.add_parser("hierarchy", parents=[common], help="hierarchy file tools",
                            description="Hierarchy file tools (ARX CSV and nested JSON).")
    hierarchy_commands = p.add_subparsers(dest="hierarchy_command", metavar="ACTION", parser_class=_Parser)
    q = hierarchy_commands.add_parser("check", parents=[common], help="validate a hierarchy file and describe it",
                                      description="Read a hierarchy file (ARX CSV or JSON) and describe it.")
    q.add_argument("file", metavar="FILE")
    q.add_argument("--delimiter", metavar="C", help="ARX separator (default: sniffed, ';' first)")
    q.add_argument("--json", action="store_true", help="print JSON")
    q.set_defaults(handler=_cmd_hierarchy_check)
    q = hierarchy_commands.add_parser("convert", parents=[common], help="convert between ARX CSV and JSON",
                                      description="Convert a hierarchy file; formats follow the extensions "
                                                  "(.csv/.txt/.tsv: ARX, .json: nested JSON).")
    q.add_argument("input", metavar="IN")
    q.add_argument("output", metavar="OUT")
    q.add_argument("--delimiter", metavar="C", help="ARX separator of IN (default: sniffed)")
    q.add_argument("--force", action="store_true", help="overwrite OUT if it exists")
    q.set_defaults(handler=_cmd_hierarchy_convert)
    p.set_defaults(handler=_missing_action(p))
    return parser


def _missing_action(parser: argparse.ArgumentParser):
    def handler(args: argparse.Namespace) -> int:
        raise _UsageError(f"{parser.prog}: choose an action (see '{parser.prog} --help')")

    return handler


# -- helpers --------------------------------------------------------------------------------


def _note(args: argparse.Namespace, message: str) -> None:
    if not args.quiet:
        print(message, file=sys.stderr)


def _options(args: argparse.Namespace) -> TableOptions:
    delimiter = args.delimiter
    if delimiter is not None and delimiter.lower() in ("tab", "\\t"):
        delimiter = "\t"
    return TableOptions(delimiter=delimiter, encoding=args.encoding, header=not args.no_header)


def _parse_sa(text: str | None, schema: Schema) -> tuple[str, ...]:
    if text is None or text.strip().lower() == "auto":
        return recommend_sa(schema)
    if text.strip().lower() in ("none", ""):
        return ()
    names = tuple(n.strip() for n in text.split(",") if n.strip())
    schema.axes(names)  # unknown or repeated names: a one-line error
    return names


def _bar(args: argparse.Namespace) -> ProgressBar:
    return ProgressBar(sys.stderr, enabled=not args.quiet)


def _fmt(x: float) -> str:
    return f"{x:,.6g}" if abs(x) < 1e6 else f"{x:.4e}"


# -- commands -------------------------------------------------------------------------------------


def _cmd_release(args: argparse.Namespace) -> int:
    if args.demo:
        if args.table or args.schema:
            raise _UsageError("--demo uses the bundled sample: give no TABLE and no --schema")
        table, schema_path = sample_table_path(), sample_schema_path()
        epsilon = DEMO_EPSILON if args.epsilon is None else args.epsilon
    else:
        missing = [n for n, v in (("TABLE", args.table), ("--schema", args.schema), ("--epsilon", args.epsilon)) if v is None]
        if missing:
            raise _UsageError(f"missing {', '.join(missing)} (or use --demo)")
        table, schema_path, epsilon = Path(args.table), Path(args.schema), args.epsilon
    if args.out is None:
        raise _UsageError("missing --out RELEASE.npz")
    if args.mechanism == "basic" and args.sa is not None:
        raise _UsageError("--sa applies to --mechanism privelet only (basic adds noise to every cell)")
    out = check_writable(args.out, force=args.force)  # fail before the long work
    schema = load_schema(schema_path)
    sa = _parse_sa(args.sa, schema)
    if schema.domain_from_data:
        _note(args, "WARNING: the domains of " + ", ".join(schema.domain_from_data)
              + " were learned from the data (domain_from_data): this release is NOT private until they "
                "are replaced with public domains.")
    if args.seed is not None:
        print(_SEED_WARNING, file=sys.stderr)
    if args.mechanism == "privelet" and set(sa) == set(schema.names) and args.sa in (None, "auto"):
        _note(args, "note: --sa auto put every attribute in S_A: for these domain sizes the paper's bound "
                    "favours noise on every cell (Basic) over wavelets; give --sa to choose otherwise.")
    options = TableOptions() if args.demo else _options(args)
    bar = _bar(args)
    try:
        matrix, report = count_table(table, schema, options, invalid=args.invalid, progress=bar)
        bar.close()
        rng = np.random.default_rng(args.seed) if args.seed is not None else None
        if args.mechanism == "basic":
            release = basic(matrix, epsilon, rng, schema=schema, neighbours=args.neighbours, progress=bar)
        else:
            release = privelet_plus(matrix, schema, epsilon, sa, rng, neighbours=args.neighbours, progress=bar)
        bar.close()
    finally:
        bar.close()
    del matrix  # the true counts go no further
    extra: dict[str, Any] = {"source": "demo" if args.demo else None}
    meta = save_release(release, out, force=args.force, seed=args.seed, metadata=extra)
    _note(args, f"counted: {report.custodian_summary()}")
    print(f"wrote {out}")
    print(f"  mechanism {_mechanism_name(release)}, epsilon {release.epsilon:g}, neighbours {release.neighbours}, "
          f"S_A = {{{', '.join(release.sa)}}}")
    print(f"  matrix {' x '.join(map(str, release.noisy.shape))} = {release.noisy.size:,} cells")
    print(f"  worst-case noise variance of any range count: {_fmt(meta['exact_worst_case_variance'])} "
          f"(paper's bound {_fmt(meta['paper_bound'])})")
    return 0


def _mechanism_name(release: Any) -> str:
    return {"privelet+": "Privelet+", "privelet": "Privelet", "basic": "Basic"}.get(release.mechanism, release.mechanism)


def _cmd_bounds(args: argparse.Namespace) -> int:
    schema = load_schema(args.schema)
    sa = _parse_sa(args.sa, schema)
    eps, nb = args.epsilon, args.neighbours
    rows = {
        "basic": schema.names,
        "privelet": (),
        "privelet_plus": sa,
    }
    result: dict[str, Any] = {}
    for key, chosen in rows.items():
        result[key] = {
            "paper_bound": paper_bound(schema, eps, chosen, neighbours=nb),
            "exact_worst_case": worst_case_variance(schema, eps, chosen, neighbours=nb),
        }
    result["sa"] = list(sa)
    result["recommended_sa"] = list(recommend_sa(schema))
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    print(f"epsilon {eps:g}, neighbours {nb}, matrix {' x '.join(map(str, schema.shape))} = {schema.size:,} cells")
    print(f"{'mechanism':<12} {'paper bound':>14} {'exact worst case':>18}")
    for key, label in (("basic", "Basic"), ("privelet", "Privelet"), ("privelet_plus", "Privelet+")):
        print(f"{label:<12} {_fmt(result[key]['paper_bound']):>14} {_fmt(result[key]['exact_worst_case']):>18}")
    print(f"S_A used for Privelet+: {{{', '.join(sa)}}}")
    print(f"recommended S_A:        {{{', '.join(result['recommended_sa'])}}}")
    return 0


def _cmd_query(args: argparse.Namespace) -> int:
    release = load_release(args.release)
    if release.schema is None:
        raise PriveletError(f"{args.release} has no schema, so its cells have no labels to query")
    answer = answer_query(release, parse_where(release.schema, args.where))
    if args.json:
        print(json.dumps(answer.to_json()))
        return 0
    lo, hi = answer.ci95
    print(f"{answer.query}: {answer.noisy_count:,.2f}")
    print(f"  noise variance {_fmt(answer.variance)} (standard deviation {math.sqrt(answer.variance):,.2f})")
    print(f"  95% interval [{lo:,.2f}, {hi:,.2f}]")
    return 0


def _cmd_export(args: argparse.Namespace) -> int:
    out = check_writable(args.out, force=args.force)
    release = load_release(args.release)
    rows = export_release(release, out, format=args.format, force=args.force)
    print(f"wrote {out} ({rows:,} rows, one per cell)")
    return 0


def _epsilon_text(epsilon: float) -> str:
    """Shortest exact decimal of ``epsilon``: ``0.5``, ``1``, ``1.25`` (file names, summary.csv)."""
    return np.format_float_positional(float(epsilon), trim="-")


def _parse_epsilons(text: str) -> list[float]:
    """``--epsilons`` as a list of distinct positive numbers (errors name the bad entry; exit 1)."""
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
    epsilons = _parse_epsilons(args.epsilons)
    folder = Path(args.out)
    figures = not args.no_figures
    outputs = evaluation_outputs(folder, epsilons, figures=figures)
    _check_output_folder(folder, list(outputs.values()), force=args.force)  # before the long work
    table = Path(args.table)
    if not table.exists():
        raise FileNotFoundError(f"no such table file: {table}")
    schema = load_schema(args.schema)
    sa = _parse_sa(args.sa, schema)
    # Loud on purpose, and even with --quiet: a privacy warning, not a progress note.
    print(_loud(EVALUATION_WARNING), file=sys.stderr)
    if args.seed is not None:
        print(_EVALUATE_SEED_WARNING, file=sys.stderr)
    if schema.domain_from_data:
        _note(args, "note: the domains of " + ", ".join(schema.domain_from_data) + " were learned from the data "
                    "(domain_from_data); replace them with public domains before a real release.")
    bar = _bar(args)
    started = time.perf_counter()
    try:
        matrix, report = count_table(table, schema, _options(args), invalid=args.invalid, progress=bar)
        bar.close()
        if report.rows_counted == 0:
            raise PriveletError(f"{table}: no rows were counted, so there is nothing to evaluate")
        rng = np.random.default_rng(args.seed) if args.seed is not None else None
        _, rows = evaluate(matrix, schema, epsilons, sa, queries=args.queries, rng=rng,
                           neighbours=args.neighbours, progress=bar)
        bar.close()
    finally:
        bar.close()
    del matrix  # the true counts go no further
    _note(args, f"counted: {report.custodian_summary()}")
    folder.mkdir(parents=True, exist_ok=True)
    with atomic_write(outputs["summary"], force=args.force, mode="w", newline="") as handle:
        handle.write(summary_csv(rows))
    written = [outputs["summary"]]
    if figures:
        written += _write_evaluation_figures(args, outputs, rows, bar)
    seconds = time.perf_counter() - started
    print(f"wrote {outputs['summary']} ({len(rows)} rows: {len(epsilons)} epsilon(s) x "
          f"{len(EVALUATED_MECHANISMS)} mechanisms x 5 coverage quintiles)")
    for path in written[1:]:
        print(f"wrote {path}")
    print(f"Basic vs Privelet+ (S_A = {{{', '.join(sa)}}}), {args.queries:,} random queries, neighbours "
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
    try:
        from .gui.figures import ensure_application, rows_by_epsilon, write_error_figure

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


def _loud(message: str) -> str:
    width = 78
    words, lines, line = message.split(), [], ""
    for word in words:
        if len(line) + len(word) + 1 > width - 4:
            lines.append(line)
            line = word
        else:
            line = f"{line} {word}".strip()
    lines.append(line)
    bar = "!" * width
    return "\n".join([bar, *(f"! {text:<{width - 4}} !" for text in lines), bar])


def _cmd_schema_infer(args: argparse.Namespace) -> int:
    columns = None if args.columns is None else [c.strip() for c in args.columns.split(",") if c.strip()]
    table = read_table(args.table, _options(args), columns=columns)
    schema = infer_schema(table)
    # Loud on purpose, and even with --quiet: this is a privacy warning, not a progress note.
    print(_loud("WARNING: " + INFERRED_DOMAIN_WARNING), file=sys.stderr)
    if args.out:
        save_schema(schema, args.out, force=args.force)
        print(f"wrote {args.out} ({len(schema)} attributes, every domain learned from the data)")
    else:
        print(dumps_schema(schema))
    return 0


def _read_hierarchy_noting(args: argparse.Namespace, path: str) -> Any:
    delimiter = args.delimiter
    if delimiter is not None and delimiter.lower() in ("tab", "\\t"):
        delimiter = "\t"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", HierarchyLabelWarning)
        hierarchy = read_hierarchy(path, delimiter=delimiter)
    for w in caught:
        if issubclass(w.category, HierarchyLabelWarning):
            print(f"note: {w.message}", file=sys.stderr)
        else:
            warnings.showwarning(w.message, w.category, w.filename, w.lineno)
    return hierarchy


def _cmd_hierarchy_check(args: argparse.Namespace) -> int:
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
    check_writable(args.output, force=args.force)
    hierarchy = _read_hierarchy_noting(args, args.input)
    write_hierarchy(hierarchy, args.output, force=args.force)
    print(f"wrote {args.output} ({hierarchy.size} leaves, height {hierarchy.height})")
    return 0


# -- entry point ----------------------------------------------------------------------------------


def _one_line(exc: BaseException) -> str:
    if isinstance(exc, OSError) and not isinstance(exc, PriveletError) and exc.strerror:
        text = f"{exc.strerror}: {exc.filename}" if exc.filename is not None else exc.strerror
    else:
        text = str(exc)
    return " ".join(text.split()) or type(exc).__name__


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit code (0 ok, 1 data error, 2 usage error)."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help, --version and usage errors
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 2)
    if getattr(args, "handler", None) is None:
        parser.print_usage(sys.stderr)
        print("privelet: error: choose a command (see 'privelet --help')", file=sys.stderr)
        return 2
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DroppedRowsWarning)  # the count report says it
            return int(args.handler(args))
    except _UsageError as exc:
        print(f"privelet: error: {exc}", file=sys.stderr)
        return 2
    except (PriveletError, OSError, MemoryError) as exc:
        if args.debug:
            traceback.print_exc()
        print(f"privelet: error: {_one_line(exc)}", file=sys.stderr)
        return 1
    except Cancelled:
        print("privelet: cancelled", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("\nprivelet: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":  # python -m privelet_gui.cli
    sys.exit(main())

