"""``privelet release`` and ``privelet bounds``: count and release a table; bounds before any release."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from ._common import (
    SEED_WARNING,
    UsageError,
    epsilon_type,
    fmt,
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
    p.add_argument("--sa", metavar="A,B|auto|none", default=None,
                   help="attributes left untransformed (Privelet+): a list, 'auto' (recommended, the default) "
                        "or 'none' (plain Privelet)")
    p.add_argument("--mechanism", choices=("privelet", "basic"), default="privelet",
                   help="privelet (wavelets, default) or basic (noise on every cell)")
    p.add_argument("--neighbours", choices=("replace", "add-remove"), default="replace",
                   help="neighbouring tables differ by replacing one row (default, the paper's) or adding/removing one")
    p.add_argument("--out", metavar="RELEASE.npz", help="release file to write (NAME.zarr: a Zarr release folder, "
                                                        "read in chunks by query and export; required with --dask)")
    p.add_argument("--force", action="store_true", help="overwrite --out if it exists")
    p.add_argument("--seed", type=seed_type, metavar="N", help="fixed noise seed, FOR TESTS ONLY (not private)")
    p.add_argument("--invalid", choices=("error", "drop"), default="error",
                   help="rows with values outside the domain: stop with an error (default) or drop them")
    p.add_argument("--demo", action="store_true",
                   help=f"use the bundled UCI Adult sample and its schema (epsilon {DEMO_EPSILON}, --sa auto)")
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
    p.add_argument("--sa", metavar="A,B|auto|none", default=None, help="S_A for Privelet+ (default: auto)")
    p.add_argument("--neighbours", choices=("replace", "add-remove"), default="replace", help="neighbouring notion")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(handler=_cmd_bounds)


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"give a positive whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"give a positive whole number, got {text!r}")
    return value


def _spec_of(args: argparse.Namespace, schema: Any, epsilon: float) -> Any:
    """The release the options ask for: ``--mechanism privelet`` is Privelet+ with ``--sa``."""
    from ..engine import ReleaseSpec

    sa = parse_sa(args.sa, schema)
    mechanism = "basic" if args.mechanism == "basic" else "privelet+"
    return ReleaseSpec(schema, epsilon, mechanism, sa, args.neighbours)


def _cmd_release(args: argparse.Namespace) -> int:
    import numpy as np

    from ..io import (
        TableOptions,
        check_writable,
        count_table,
        load_schema,
        sample_schema_path,
        sample_table_path,
        save_release,
    )
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
    if args.mechanism == "basic" and args.sa is not None:
        raise UsageError("--sa applies to --mechanism privelet only (basic adds noise to every cell)")
    zarr_out = str(args.out).endswith(ZARR_SUFFIX)
    _check_dask_options(args, table, zarr_out)
    # fail before the long work
    out = check_zarr_target(args.out, force=args.force) if zarr_out else check_writable(args.out, force=args.force)
    schema = load_schema(schema_path)
    spec = _spec_of(args, schema, epsilon)
    if schema.domain_from_data:
        note(args, "WARNING: the domains of " + ", ".join(schema.domain_from_data)
             + " were learned from the data (domain_from_data): this release is NOT private until they "
               "are replaced with public domains.")
    if args.seed is not None:
        print(SEED_WARNING, file=sys.stderr)
    if args.mechanism == "privelet" and spec.label == "basic" and args.sa in (None, "auto"):
        note(args, "note: --sa auto put every attribute in S_A: for these domain sizes the paper's bound "
                   "favours noise on every cell (Basic) over wavelets; give --sa to choose otherwise.")
    options = TableOptions() if args.demo else read_options(args)
    extra: dict[str, Any] = {"source": "demo" if args.demo else None}
    rng = np.random.default_rng(args.seed) if args.seed is not None else None
    if args.dask is not None:
        release, meta, report = _release_on_dask(args, table, spec, out, options, rng, extra)
    else:
        bar = progress_bar(args)
        try:
            matrix, report = count_table(table, schema, options, invalid=args.invalid, progress=bar)
            bar.close()
            release = spec.run(matrix, rng=rng, progress=bar)
            bar.close()
        finally:
            bar.close()
        del matrix  # the true counts go no further
        save = save_zarr_release if zarr_out else save_release
        meta = save(release, out, force=args.force, seed=args.seed, metadata=extra)
    note(args, f"counted: {report.custodian_summary()}")
    print(f"wrote {out}")
    print(f"  mechanism {spec.name}, epsilon {release.epsilon:g}, neighbours {release.neighbours}, "
          f"S_A = {{{', '.join(release.sa)}}}")
    print(f"  matrix {' x '.join(map(str, release.noisy.shape))} = {release.noisy.size:,} cells")
    print(f"  worst-case noise variance of any range count: {fmt(meta['exact_worst_case_variance'])} "
          f"(paper's bound {fmt(meta['paper_bound'])})")
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


def _release_on_dask(
    args: argparse.Namespace,
    table: Path,
    spec: Any,
    out: Path,
    options: Any,
    rng: Any,
    extra: dict[str, Any],
) -> tuple[Any, dict[str, Any], Any]:
    """Count and release on a Dask cluster: (release, metadata written, count report)."""
    from ..distributed import count_dataset, dask_client, release_layout, release_to_zarr

    address = None if args.dask == LOCAL_CLUSTER else args.dask
    memory = args.dask_memory if args.dask_memory is not None else "auto"
    bar = progress_bar(args)
    try:
        with dask_client(address, workers=args.dask_workers, memory_limit=memory) as client:
            info = client.scheduler_info()
            note(args, f"Dask: {len(info.get('workers', {}))} worker(s), scheduler {info.get('address')}")
            counts = count_dataset(
                client, table, spec.schema, release_layout(spec.plan).chunks, options=options,
                invalid=args.invalid, progress=bar,
            )
            bar.close()
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
    from ..engine import MECHANISM_NAMES, ReleaseSpec, recommend_sa
    from ..io import load_schema

    schema = load_schema(args.schema)
    sa = parse_sa(args.sa, schema)
    eps, nb = args.epsilon, args.neighbours
    specs = {
        "basic": ReleaseSpec(schema, eps, "basic", (), nb),
        "privelet": ReleaseSpec(schema, eps, "privelet", (), nb),
        "privelet_plus": ReleaseSpec(schema, eps, "privelet+", sa, nb),
    }
    result: dict[str, Any] = {
        key: {"paper_bound": spec.paper_bound(), "exact_worst_case": spec.worst_case_variance()}
        for key, spec in specs.items()
    }
    result["sa"] = list(sa)
    result["recommended_sa"] = list(recommend_sa(schema))
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    print(f"epsilon {eps:g}, neighbours {nb}, matrix {' x '.join(map(str, schema.shape))} = {schema.size:,} cells")
    print(f"{'mechanism':<12} {'paper bound':>14} {'exact worst case':>18}")
    for key, spec in specs.items():
        label = MECHANISM_NAMES[spec.mechanism]
        print(f"{label:<12} {fmt(result[key]['paper_bound']):>14} {fmt(result[key]['exact_worst_case']):>18}")
    print(f"S_A used for Privelet+: {{{', '.join(sa)}}}")
    print(f"recommended S_A:        {{{', '.join(result['recommended_sa'])}}}")
    return 0
