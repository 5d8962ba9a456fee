"""``privelet release`` and ``privelet bounds``: count and release a table; bounds before any release."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..engine import Mechanism, SaRule

from ._common import (
    SEED_WARNING,
    UsageError,
    epsilon_type,
    fmt,
    fmt_column,
    note,
    parse_sa,
    progress_bar,
    read_options,
    seed_type,
    table_options,
)

__all__ = ["DEMO_EPSILON", "register"]

#: The privacy budget ``release --demo`` uses.
DEMO_EPSILON = 1.0
#: ``--dask`` without an address: a cluster of processes on this machine.
LOCAL_CLUSTER = "local"
#: The name a Zarr release folder ends with.
ZARR_SUFFIX = ".zarr"


def register(commands: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    """Add this module's commands to the ``privelet`` parser."""
    p = commands.add_parser(
        "release", parents=[common], help="count a table and write a differentially private release",
        description="Count TABLE with the schema and write a noisy frequency matrix (a .npz release file, "
                    "or a .zarr release folder).",
    )
    p.add_argument("table", nargs="?", metavar="TABLE",
                   help="CSV, TSV, .csv.gz or Parquet file; with --dask also a folder or a glob ('parts/*.parquet') "
                        "of such files")
    p.add_argument("--schema", metavar="S.json", help="schema file (attributes, domains, hierarchies)")
    p.add_argument("--epsilon", type=epsilon_type, metavar="E", help="privacy budget epsilon > 0 (smaller: more private)")
    p.add_argument("--sa", metavar="A,B|recommended|best|none", default=None,
                   help="attributes left untransformed (Privelet+): a list, 'recommended' (the paper's rule, the "
                        "default; 'auto', its earlier name, works too), 'best' (the least expected error on "
                        "--workload) or 'none' (plain Privelet)")
    p.add_argument("--mechanism", choices=("best", "privelet", "basic", "marginals"), default=None,
                   help="best (the default; privelet when --sa is given): the per-axis strategies - the paper's "
                        "wavelets, the identity, or hierarchies of counts with least squares - or, for a workload "
                        "of marginals, weighted marginals, with the least expected error on --workload; privelet "
                        "(the paper's Privelet+, with --sa), basic (noise on every cell) or marginals (the weighted "
                        "marginals of --marginals)")
    p.add_argument("--strategies", metavar="S1;S2;...",
                   help="name each attribute's strategy yourself, in the schema's order, separated by ';': identity, "
                        "wavelet, tree-B (ordinal, branching B), hierarchy (nominal), trees with per-level weights "
                        "after a slash (tree-16/0,1,1); what --mechanism best chose is in the release file")
    p.add_argument("--marginals", metavar="A,B=W;C=W;...",
                   help="with --mechanism marginals: the marginals to measure, separated by ';', each its attributes "
                        "separated by ',' and '=' a whole weight (more weight: less noise on that marginal; 1 when "
                        "left out), e.g. 'age,sex=3;race=1'; what --mechanism best chose is in the release file")
    p.add_argument("--neighbours", choices=("replace", "add-remove"), default="replace",
                   help="neighbouring tables differ by replacing one row (default, the paper's) or adding/removing one")
    workload_options(p)
    p.add_argument("--raw", action="store_true",
                   help="do not shift the release to the public number of rows (replace-one neighbours shift it "
                        "by default: the total becomes exact at no privacy cost)")
    p.add_argument("--sampler", choices=("exact", "standard"), default="exact",
                   help="noise sampler: exact (integer arithmetic only, the default) or standard (floating-point "
                        "inversion, the same law to about 1e-16)")
    p.add_argument("--yes", action="store_true",
                   help="spend the epsilon without asking when the privacy ledger says this table has spent some "
                        "already (needed to release such a table again without a terminal; --demo never asks: "
                        "its sample is public data)")
    p.add_argument("--dataset", metavar="NAME",
                   help="the dataset this table belongs to, in your own words: the privacy ledger counts every "
                        "release of the dataset's files as one table (see 'privelet ledger link')")
    p.add_argument("--out", metavar="RELEASE.npz", help="release file to write (NAME.zarr: a Zarr release folder, "
                                                        "read in chunks by query and export; required with --dask)")
    p.add_argument("--force", action="store_true", help="overwrite --out if it exists")
    p.add_argument("--record-paths", action="store_true",
                   help="record the table's and the schema file's paths in the release file, so that 'privelet report "
                        "--script' can redo it as it is (off by default: a path can say more than you mean to publish)")
    p.add_argument("--seed", type=seed_type, metavar="N", help="fixed noise seed, FOR TESTS ONLY (not private)")
    p.add_argument("--invalid", choices=("error", "drop"), default="error",
                   help="rows with values outside the domain: stop with an error (default) or drop them")
    p.add_argument("--demo", action="store_true",
                   help=f"use the bundled UCI Adult sample and its schema (epsilon {DEMO_EPSILON}, --sa recommended)")
    group = p.add_argument_group("on a Dask cluster (needs privelet-gui[dask])")
    group.add_argument("--dask", nargs="?", const=LOCAL_CLUSTER, metavar="ADDRESS",
                       help="count and release on the Dask scheduler at ADDRESS (e.g. tcp://10.0.0.5:8786); "
                            "without ADDRESS, on a cluster of worker processes on this machine")
    group.add_argument("--dask-workers", type=_positive_int, metavar="N",
                       help="worker processes of the local cluster (default: one per core, at most 8)")
    group.add_argument("--dask-memory", metavar="SIZE",
                       help="memory each worker of the local cluster may use, e.g. 4GB (default: shared out)")
    table_options(p)
    p.set_defaults(handler=_cmd_release)

    p = commands.add_parser(
        "bounds", parents=[common], help="noise-variance bounds for a schema (no data needed)",
        description="The paper's bound and the exact worst-case noise variance of Basic, Privelet and "
                    "Privelet+, and the recommended S_A. Data-independent: costs no privacy.",
    )
    p.add_argument("--schema", required=True, metavar="S.json", help="schema file")
    p.add_argument("--epsilon", required=True, type=epsilon_type, metavar="E", help="privacy budget epsilon > 0")
    p.add_argument("--sa", metavar="A,B|recommended|best|none", default=None,
                   help="S_A for Privelet+: a list, 'recommended' (the paper's rule, the default; 'auto', its earlier "
                        "name, works too), 'best' (the least expected error on --workload) or 'none'")
    p.add_argument("--neighbours", choices=("replace", "add-remove"), default="replace", help="neighbouring notion")
    workload_options(p)
    p.add_argument("--raw", action="store_true", help="errors of the raw release (not shifted to the public total)")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(handler=_cmd_bounds)


def workload_options(parser: argparse.ArgumentParser) -> None:
    """``--workload`` (repeatable) and ``--objective``."""
    parser.add_argument("--workload", action="append", default=[], metavar="W",
                        help="the queries you expect: 'paper[:N]' (the paper's random workload, the default), "
                             "'marginals:K[,K][:A[/G],B[/G]...]' (every cell of the K-way marginals; /G: blocks of G "
                             "values or hierarchy level G), or a CSV/JSON file of queries (--where syntax); repeat to "
                             "combine")
    parser.add_argument("--objective", choices=("mean", "worst"), default="mean",
                        help="the workload's error: its average square error (default) or its worst query")


def public_total_of(args: argparse.Namespace) -> bool | None:
    """``--raw`` as the spec's ``public_total`` (refused under add/remove, where nothing is shifted)."""
    if getattr(args, "raw", False):
        if args.neighbours != "replace":
            raise UsageError("--raw applies to replace-one neighbours only: add/remove releases are never shifted")
        return False
    return None


def workload_of(args: argparse.Namespace, schema: Any) -> Any:
    from ..io import workloads_from_descriptions

    return workloads_from_descriptions(args.workload, schema)


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"give a positive whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"give a positive whole number, got {text!r}")
    return value


def mechanism_of(args: argparse.Namespace) -> str:
    """``--mechanism``, where unset: ``strategies`` with ``--strategies``, ``privelet`` when ``--sa`` is
    given, ``best`` otherwise; ``marginals`` comes with ``--marginals`` and only with it."""
    if getattr(args, "strategies", None) is not None:
        if args.mechanism is not None or args.sa is not None:
            raise UsageError("--strategies names every attribute's strategy: give no --mechanism and no --sa with it")
        return "strategies"
    if (args.mechanism == "marginals") != (getattr(args, "marginals", None) is not None):
        raise UsageError("--mechanism marginals measures the marginals of --marginals: give both or neither "
                         "(e.g. --mechanism marginals --marginals 'age,sex=3;race=1')")
    if args.mechanism == "marginals" and args.sa is not None:
        raise UsageError("--mechanism marginals leaves no attribute untransformed: give no --sa with it")
    if args.mechanism is not None:
        return str(args.mechanism)
    return "privelet" if args.sa is not None else "best"


def _spec_of(args: argparse.Namespace, schema: Any, epsilon: float) -> tuple[Any, Any]:
    """The release the options ask for, and the strategy choice behind it (None but for
    ``--mechanism best``, the strategy :func:`best_strategy` chooses for ``--workload``);
    ``privelet`` is Privelet+ with ``--sa``."""
    from ..engine import ReleaseSpec, best_strategy, resolve_sa
    from ..io.choices import parse_marginals_argument

    chosen = mechanism_of(args)
    if chosen == "marginals":
        if args.workload:
            raise UsageError("--workload chooses the marginals with --mechanism best; --marginals names them")
        return ReleaseSpec(schema, epsilon, "marginals", (), args.neighbours, public_total=public_total_of(args),
                           invalid=_invalid(args), sampler=_sampler(args),
                           marginals=parse_marginals_argument(args.marginals)), None
    if chosen == "strategies":
        if args.workload:
            raise UsageError("--workload chooses the strategies with --mechanism best; --strategies names them")
        names = tuple(name.strip() for name in args.strategies.split(";"))
        return ReleaseSpec(schema, epsilon, "strategies", (), args.neighbours, public_total=public_total_of(args),
                           invalid=_invalid(args), sampler=_sampler(args), strategies=names), None
    if chosen == "best":
        spec = ReleaseSpec(schema, epsilon, "privelet+", (), args.neighbours, public_total=public_total_of(args),
                           invalid=_invalid(args), sampler=_sampler(args))
        # A cluster releases per-axis strategies only (distributed.release_layout): there the search
        # leaves weighted marginals out rather than choose what it would refuse.
        choice = best_strategy(spec, workload_of(args, schema), objective=args.objective,
                               marginals=args.dask is None)
        return choice.spec, choice
    mechanism: Mechanism = "basic" if chosen == "basic" else "privelet+"
    rule, given = parse_sa(args.sa, schema)
    if args.workload and rule != "best":
        raise UsageError("--workload chooses the strategy with --mechanism best (the default) or S_A with --sa best; "
                         "give one of them (or see 'privelet bounds --workload')")
    spec = ReleaseSpec(schema, epsilon, mechanism, (), args.neighbours, public_total=public_total_of(args),
                       invalid=_invalid(args), sampler=_sampler(args))
    workload = workload_of(args, schema) if rule == "best" else None
    return spec.replace(sa=resolve_sa(rule, spec, workload, given=given, objective=args.objective)), None


def _sa_rule(args: argparse.Namespace, schema: Any) -> SaRule | None:
    """How S_A was chosen, as a release file records it (:func:`~privelet_gui.io.choices.recorded_sa_rule`;
    the command line's ``privelet`` is Privelet+, with ``--sa``'s rule)."""
    from ..io.choices import recorded_sa_rule

    mechanism = mechanism_of(args)
    return recorded_sa_rule("privelet+" if mechanism == "privelet" else mechanism, parse_sa(args.sa, schema)[0])


def _invalid(args: argparse.Namespace) -> Any:
    """How the table is counted (``bounds`` reads no table: every row counts)."""
    return getattr(args, "invalid", "error")


def _sampler(args: argparse.Namespace) -> Any:
    """The noise sampler (``bounds`` draws no noise: the default)."""
    from ..engine import SAMPLER

    return getattr(args, "sampler", SAMPLER)


def _ask_to_spend(args: argparse.Namespace, check: Any) -> bool:
    """Whether to spend more of a table's budget (the ledger's :func:`~privelet_gui.io.ledger.spend_budget`
    asks only when the table has spent some): ``--yes``, ``--demo`` (the bundled sample is public data), or
    a terminal's answer; no terminal: a usage error."""
    said = check.summary()
    if args.yes or args.demo:
        return True
    if not sys.stdin.isatty():
        raise UsageError(f"{said}. Run again with --yes to spend it without being asked")
    print(f"privacy ledger: {said}; afterwards it will have spent {check.total_after_text()}.", file=sys.stderr)
    answer = input(f"Spend epsilon {check.epsilon:g} more on this table? [y/N] ")
    return answer.strip().lower() in ("y", "yes")


def _cmd_release(args: argparse.Namespace) -> int:
    import numpy as np

    from ..engine.descriptions import describe_measurements
    from ..io import (
        TableOptions,
        check_writable,
        count_table,
        load_schema,
        sample_schema_path,
        sample_table_path,
        save_release,
    )
    from ..io.choices import STRATEGY_CHOICE_KEY, ReleaseChoices, choices_metadata, strategy_choice_record
    from ..io.ledger import Ledger, PlannedRelease, Reservation, check_dataset_name, spend_budget
    from ..io.signing import signing_key
    from ..io.zarr_releases import check_zarr_target, save_zarr_release

    if args.demo:
        if args.table or args.schema:
            raise UsageError("--demo uses the bundled sample: give no TABLE and no --schema")
        table, schema_path = sample_table_path(), sample_schema_path()
        epsilon = DEMO_EPSILON if args.epsilon is None else args.epsilon
    else:
        missing = [n for n, v in (("TABLE", args.table), ("--schema", args.schema), ("--epsilon", args.epsilon)) if v is None]
        if missing:
            raise UsageError(f"missing {', '.join(missing)} (or use --demo)")
        table, schema_path, epsilon = Path(args.table), Path(args.schema), args.epsilon
    if args.out is None:
        raise UsageError("missing --out RELEASE.npz" + (" (with --dask: --out NAME.zarr)" if args.dask else ""))
    if mechanism_of(args) not in ("privelet", "strategies") and args.sa is not None:
        raise UsageError(f"--sa applies to --mechanism privelet only ({mechanism_of(args)} chooses every axis itself)")
    if args.dataset is not None:
        check_dataset_name(args.dataset)
    zarr_out = str(args.out).endswith(ZARR_SUFFIX)
    _check_dask_options(args, table, zarr_out)
    # fail before the long work
    out = check_zarr_target(args.out, force=args.force) if zarr_out else check_writable(args.out, force=args.force)
    signing_key()  # the file is signed when written: a damaged key must stop us before the noise spends budget
    schema = load_schema(schema_path)
    spec, choice = _spec_of(args, schema, epsilon)
    if schema.domain_from_data:  # said even with --quiet, as the seed warning is
        print("WARNING: the domains of " + ", ".join(schema.domain_from_data)
              + " were learned from the data (domain_from_data): this release is NOT private until they "
                "are replaced with public domains.", file=sys.stderr)
    if args.seed is not None:
        print(SEED_WARNING, file=sys.stderr)
    sa_rule = _sa_rule(args, schema)
    if spec.label == "basic" and sa_rule == "recommended":
        note(args, "note: --sa recommended put every attribute in S_A: for these domain sizes the paper's bound "
                   "favours noise on every cell (Basic) over wavelets; give --sa to choose otherwise.")
    options = TableOptions() if args.demo else read_options(args)
    choices = ReleaseChoices.of(
        spec, table=None if args.demo else table, schema=None if args.demo else schema_path, options=options,
        dataset=args.dataset, demo=args.demo, sa_rule=sa_rule, workload=args.workload, objective=args.objective,
    )
    extra = choices_metadata(choices, {"source": "demo" if args.demo else None}, paths=args.record_paths)
    if choice is not None:
        extra[STRATEGY_CHOICE_KEY] = strategy_choice_record(choice)
    rng = np.random.default_rng(args.seed) if args.seed is not None else None
    ledger = Ledger()
    # Keyed with the ledger's salt (a damaged ledger is refused here, before the counting);
    # filled as the table is counted (not on a cluster, whose workers count its parts).
    rows = ledger.row_fingerprint() if args.dask is None else None
    planned = PlannedRelease.of_spec(spec, seeded=rng is not None)
    with ExitStack() as budget:
        reserved: list[Reservation] = []

        def before_noise() -> None:  # counting spends nothing; drawing the noise does: ask the ledger first
            keys = ledger.table_keys(_table_files(args, table), rows=rows, dataset=args.dataset)
            reservation = budget.enter_context(
                spend_budget(ledger, keys, planned, lambda check: _ask_to_spend(args, check), output=out.resolve())
            )
            check = reservation.check
            if not check.must_ask or args.yes or args.demo:
                public = check.must_ask and args.demo and not args.yes
                note(args, f"privacy ledger: {check.summary()}"
                           + (" (the bundled sample is public data: --demo spends without asking)" if public else ""))
            reserved.append(reservation)
            if args.dask is not None:
                # A cluster draws the noise and writes the release in one step: the entry stays
                # whatever happens from here (the ledger errs on the side of counting).
                reservation.mark_drawn()

        def drawn(release: Any) -> None:
            # Recorded before the noise was drawn (spend_budget); from now on the entry stays.
            reserved[-1].mark_drawn()

        if args.dask is not None:
            release, meta, report = _release_on_dask(args, table, spec, out, options, rng, extra, before_noise)
        else:
            bar = progress_bar(args)
            try:
                matrix, report = count_table(table, schema, options, invalid=args.invalid, progress=bar, rows=rows)
                bar.close()
                before_noise()
                release = spec.run(matrix, rng=rng, progress=bar, overwrite_input=True)  # M is not needed after
                bar.close()
            finally:
                bar.close()
            del matrix  # the true counts go no further
            drawn(release)
            save = save_zarr_release if zarr_out else save_release
            meta = save(release, out, force=args.force, seed=args.seed, metadata=extra)
    note(args, f"counted: {report.custodian_summary(release.neighbours)}")
    print(f"wrote {out}")
    sa = "" if release.marginals else f"S_A = {{{', '.join(release.sa)}}}, "  # marginals measure no axis alone
    print(f"  mechanism {spec.name}, epsilon {release.epsilon:g}, neighbours {release.neighbours}, "
          f"{sa}{release.sampler} sampler")
    if spec.label in ("strategies", "marginals"):
        print(f"  measured: {describe_measurements(spec)}")
    print(f"  matrix {' x '.join(map(str, release.noisy.shape))} = {release.noisy.size:,} cells")
    if meta["exact_worst_case_variance"] is None:  # weighted marginals answer some range counts with a bias
        print("  range counts over attributes that no marginal holds together are answered with a bias: no "
              "worst-case noise variance bounds them (see the release report)")
    else:
        bound = ("the paper bounds only its own mechanisms" if release.mechanism in ("strategies", "marginals")
                 else f"paper's bound {fmt(meta['paper_bound'])}")
        print(f"  worst-case noise variance of any range count: {fmt(meta['exact_worst_case_variance'])} "
              f"(raw release; {bound})")
    if release.public_total:
        print("  shifted to the public number of rows (replace-one neighbours make it public): the total is exact; "
              "the raw release is noisy - post_processing.total_shift")
    return 0


def _check_dask_options(args: argparse.Namespace, table: Path, zarr_out: bool) -> None:
    """Usage errors of the cluster options, before any work."""
    many = table.is_dir() or (not table.exists() and any(c in str(table) for c in "*?["))
    if args.dask is None:
        if many:
            raise UsageError(
                f"{table} is a folder or a pattern of files: count it on a Dask cluster with --dask "
                "(no address: on this machine)"
            )
        if args.dask_workers is not None or args.dask_memory is not None:
            raise UsageError("--dask-workers and --dask-memory apply to --dask only")
        return
    if not zarr_out:
        raise UsageError(f"with --dask the release is a Zarr folder: give --out NAME{ZARR_SUFFIX}")
    if args.dask != LOCAL_CLUSTER and (args.dask_workers is not None or args.dask_memory is not None):
        raise UsageError("--dask-workers and --dask-memory set up the cluster on this machine; "
                         "a cluster at an address has its own workers")


def _table_files(args: argparse.Namespace, table: Path) -> list[Path]:
    """The files of the table whose budget the release spends: one file, or a dataset's files."""
    if args.dask is None:
        return [table]
    from ..distributed import dataset_files

    return dataset_files(table)


def _release_on_dask(
    args: argparse.Namespace,
    table: Path,
    spec: Any,
    out: Path,
    options: Any,
    rng: Any,
    extra: dict[str, Any],
    before_noise: Callable[[], None],
) -> tuple[Any, dict[str, Any], Any]:
    """Count and release on a Dask cluster: (release, metadata written, count report).
    ``before_noise`` runs once the table is counted (it records the release in the ledger)."""
    from ..distributed import count_dataset, dask_client, release_layout, release_to_zarr

    address = None if args.dask == LOCAL_CLUSTER else args.dask
    memory = args.dask_memory if args.dask_memory is not None else "auto"
    layout = release_layout(spec)  # refuses what a cluster cannot release before one starts
    bar = progress_bar(args)
    try:
        with dask_client(address, workers=args.dask_workers, memory_limit=memory) as client:
            info = client.scheduler_info()
            note(args, f"Dask: {len(info.get('workers', {}))} worker(s), scheduler {info.get('address')}")
            counts = count_dataset(
                client, table, spec.schema, layout.chunks, options=options,
                invalid=args.invalid, progress=bar,
            )
            bar.close()
            before_noise()
            release, meta = release_to_zarr(
                client, counts.matrix, spec, out, rows=counts.rows, rng=rng, progress=bar, force=args.force,
                metadata=extra, seed=args.seed,
            )
            report = counts.report
            del counts  # the true counts go no further (the workers drop them)
    finally:
        bar.close()
    return release, meta, report


def _cmd_bounds(args: argparse.Namespace) -> int:
    import math

    from ..engine import (
        MECHANISM_NAMES,
        MECHANISMS,
        ReleaseSpec,
        best_sa,
        best_strategy,
        expected_error,
        margin95,
        resolve_sa,
    )
    from ..engine.descriptions import describe_measurements
    from ..io import load_schema

    schema = load_schema(args.schema)
    eps, nb = args.epsilon, args.neighbours
    public = public_total_of(args)
    rule, given = parse_sa(args.sa, schema)
    workload = workload_of(args, schema) if args.workload or rule == "best" else None
    sa = resolve_sa(rule, ReleaseSpec(schema, eps, "privelet+", (), nb, public_total=public), workload, given=given,
                    objective=args.objective)
    specs = {
        "basic": ReleaseSpec(schema, eps, "basic", (), nb, public_total=public),
        "privelet": ReleaseSpec(schema, eps, "privelet", (), nb, public_total=public),
        "privelet_plus": ReleaseSpec(schema, eps, "privelet+", sa, nb, public_total=public),
    }
    result: dict[str, Any] = {
        key: {"paper_bound": spec.paper_bound(), "exact_worst_case": spec.worst_case_variance()}
        for key, spec in specs.items()
    }
    result["sa"] = list(sa)
    result["recommended_sa"] = list(resolve_sa("recommended", specs["privelet_plus"]))
    if workload is not None:
        choice = best_sa(specs["privelet_plus"], workload, objective=args.objective)
        specs["best"] = specs["privelet_plus"].replace(sa=choice.sa)
        result["best"] = {"paper_bound": specs["best"].paper_bound(),
                          "exact_worst_case": specs["best"].worst_case_variance()}
        strategy = specs["strategy"] = best_strategy(specs["privelet_plus"], workload, objective=args.objective,
                                                     marginals=True).spec
        paper_bounds = strategy.label in MECHANISMS  # the paper bounds only its own mechanisms
        worst = strategy.worst_case_variance()  # infinite for marginals that answer some range counts with a bias
        result["strategy"] = {"paper_bound": strategy.paper_bound() if paper_bounds else None,
                              "exact_worst_case": worst if math.isfinite(worst) else None,
                              "strategies": list(strategy.axis_strategies),
                              "marginals": [[list(names), weight] for names, weight in strategy.marginals]}
        result["workload"] = {"name": workload.name, "queries": len(workload), "objective": args.objective,
                              "public_total": specs["basic"].uses_public_total, "best_sa": list(choice.sa)}
        for key, spec in specs.items():
            error = expected_error(spec, workload, objective=args.objective)
            result.setdefault(key, {})["workload_error"] = error
            result[key]["workload_margin95"] = margin95(error)
        result["best"]["sa"] = list(choice.sa)
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    print(f"epsilon {eps:g}, neighbours {nb}, matrix {' x '.join(map(str, schema.shape))} = {schema.size:,} cells")
    print(f"{'mechanism':<13} {'paper bound':>14} {'exact worst case':>18}")
    named = {"best": "best S_A", "strategy": "best strategy"}
    labels = [named.get(key) or MECHANISM_NAMES[spec.mechanism] for key, spec in specs.items()]
    paper = _column_or_dash([result[key]["paper_bound"] for key in specs])
    exact = _column_or_dash([result[key]["exact_worst_case"] for key in specs])
    for label, paper_text, exact_text in zip(labels, paper, exact, strict=True):
        print(f"{label:<13} {paper_text:>14} {exact_text:>18}")
    print(f"S_A used for Privelet+: {{{', '.join(sa)}}}")
    print(f"recommended S_A:        {{{', '.join(result['recommended_sa'])}}}")
    if workload is not None:
        what = "average square error" if args.objective == "mean" else "worst query's square error"
        shifted = "shifted to the public total" if specs["basic"].uses_public_total else "raw"
        print(f"workload {workload.name} ({len(workload):,} queries), {what}, release {shifted}:")
        errors = fmt_column([result[key]["workload_error"] for key in specs])
        for label, key, error_text in zip(labels, specs, errors, strict=True):
            print(f"  {label:<13} {error_text:>14}  (+/- {result[key]['workload_margin95']:,.0f} in 95% of releases)")
        print(f"best S_A for this workload: {{{', '.join(result['best']['sa'])}}}")
        print(f"best strategy for this workload: {describe_measurements(specs['strategy'])}")
    return 0


def _column_or_dash(values: list[float | None]) -> list[str]:
    """A column of :func:`fmt_column`, with a dash where there is no number."""
    shown = iter(fmt_column([value for value in values if value is not None]))
    return [next(shown) if value is not None else "—" for value in values]
