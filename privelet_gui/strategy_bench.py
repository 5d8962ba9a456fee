"""Strategy benchmark: what :func:`~privelet_gui.engine.best_strategy` buys over the paper's mechanisms.

Run ``python -m privelet_gui.strategy_bench``. It prints, at epsilon 1:

- the workloads of issue 40 (DPBench's random ranges and prefixes on 4,096 values, random boxes on
  256 x 256, random ranges on 1,024 and on 96 values, boxes on 128 x 128; add/remove neighbours, the
  DPBench convention): the strategy chosen, its exact mean square error per query, the paper's
  mechanisms' and the figure the issue gives for the best data-independent peer;
- with the DPBench data beside the checkout (``../shared/data/dpbench``, or
  ``PRIVELET_SHARED_DATA``), the mean square error measured over seeded releases of real
  histograms beside the exact figure (a benchmark on public research data, never a release);
- the bundled Adult sample (six attributes), a Brazil-shaped schema (four) and the Adult sample
  with two more ordinal attributes (eight; replace-one, shifted to the public total): the paper's
  workload and the 1- and 2-way marginals, and the seconds the search takes.

Every expected error is exact and data-free.
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import numpy as np

from .bench import brazil_schema
from .engine import (
    OrdinalAttribute,
    PrefixSums,
    QueryBatch,
    ReleaseSpec,
    Schema,
    Workload,
    best_strategy,
    expected_error,
    marginals,
    paper_workload,
)
from .engine.descriptions import describe_measurements
from .io import load_schema, sample_schema_path

#: The best data-independent peer's mean square error per query in issue 40 (measured there).
PEERS = {
    "dpbench-1d-ranges": ("HB", 390.0),
    "dpbench-1d-prefixes": ("HB", 222.0),
    "dpbench-2d-ranges": ("QuadTree", 11_039.0),
    "1024-ranges": ("HDMM", 134.0),
    "96-ranges": ("HDMM", 45.0),
    "96-prefixes": ("HDMM", 35.0),
    "128x128-ranges": ("HB2D", 3_837.0),
}


def random_ranges(shape: tuple[int, ...], count: int, seed: int = 9001) -> QueryBatch:
    """DPBench's random range queries: per axis a width uniform in 1..n, placed uniformly."""
    rng = np.random.RandomState(seed)
    lo = np.empty((count, len(shape)), dtype=np.int64)
    hi = np.empty((count, len(shape)), dtype=np.int64)
    for q in range(count):
        for axis, n in enumerate(shape):
            width = rng.randint(1, n + 1)
            lo[q, axis] = rng.randint(0, n - width + 1)
            hi[q, axis] = lo[q, axis] + width - 1
    return QueryBatch(lo, hi, np.full(lo.shape, -1))


def prefixes(n: int) -> QueryBatch:
    return QueryBatch(np.zeros((n, 1), dtype=np.int64), np.arange(n).reshape(n, 1), np.full((n, 1), -1))


def ordinal_schema(shape: tuple[int, ...]) -> Schema:
    return Schema([OrdinalAttribute.integer_range(f"a{i}", 0, n - 1) for i, n in enumerate(shape)])


def _peer_rows() -> list[tuple[str, Workload]]:
    rows = []
    for key, shape, kind in [("dpbench-1d-ranges", (4096,), "ranges"), ("dpbench-1d-prefixes", (4096,), "prefixes"),
                             ("dpbench-2d-ranges", (256, 256), "ranges"), ("1024-ranges", (1024,), "ranges"),
                             ("96-ranges", (96,), "ranges"), ("96-prefixes", (96,), "prefixes"),
                             ("128x128-ranges", (128, 128), "ranges")]:
        schema = ordinal_schema(shape)
        queries = prefixes(shape[0]) if kind == "prefixes" else random_ranges(shape, 2000)
        rows.append((key, Workload.of_queries(schema, queries, key)))
    return rows


def _print_choice(label: str, workload: Workload, spec: ReleaseSpec, peer: tuple[str, float] | None) -> None:
    started = time.perf_counter()
    choice = best_strategy(spec, workload, marginals=True)  # as the release chooses it
    seconds = time.perf_counter() - started
    paper = {key: error for key, (_s, error) in choice.alternatives.items()}
    peer_text = f"{peer[0]} {peer[1]:>10,.1f}  ratio {choice.error / peer[1]:.2f}" if peer else ""
    print(f"{label:<22} best {choice.error:>12,.1f}  Privelet+ {paper['Privelet+ (recommended S_A)']:>12,.1f}  "
          f"best S_A {paper['Privelet+ (best S_A)']:>12,.1f}  Basic {paper['Basic']:>12,.1f}  {peer_text}")
    print(f"{'':<22} measured: {describe_measurements(choice.spec)}; search {seconds:.2f} s")


def _measured(shared: Path, releases: int) -> None:
    files = [("1D/HEPTH.n4096.npy", "dpbench-1d-ranges"), ("1D/INCOME.n4096.npy", "dpbench-1d-prefixes")]
    two = sorted((shared / "dpbench" / "2D").glob("*.npy"))
    if two:
        files.append((str(two[0].relative_to(shared / "dpbench")), "dpbench-2d-ranges"))
    workloads = dict(_peer_rows())
    print(f"\nmeasured over {releases} seeded releases of DPBench histograms (mean square error per query):")
    for name, key in files:
        counts = np.load(shared / "dpbench" / name).astype(np.float64)
        workload = workloads[key]
        spec = best_strategy(ReleaseSpec(workload.schema, 1.0, neighbours="add-remove"), workload).spec
        queries = workload.queries()
        truth = PrefixSums(counts).answer_batch(queries)
        errors = [float(((PrefixSums(spec.run(counts, seed=s).noisy).answer_batch(queries) - truth) ** 2).mean())
                  for s in range(releases)]
        exact = expected_error(spec, workload)
        spread = np.std(errors) / np.sqrt(releases)
        print(f"  {name:<28} {key:<20} measured {np.mean(errors):>10,.1f} +/- {spread:,.1f}   exact {exact:>10,.1f}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m privelet_gui.strategy_bench", description=__doc__.splitlines()[0])
    parser.add_argument("--releases", type=int, default=50, help="seeded releases per measured histogram (default 50)")
    args = parser.parse_args(argv)
    print("exact mean square error per query, epsilon 1, add/remove neighbours:")
    for key, workload in _peer_rows():
        _print_choice(key, workload, ReleaseSpec(workload.schema, 1.0, neighbours="add-remove"), PEERS.get(key))
    print("\nreplace-one neighbours, shifted to the public total, epsilon 1:")
    adult = load_schema(sample_schema_path())
    eight = Schema([*adult, OrdinalAttribute.integer_range("hours", 1, 99), OrdinalAttribute.integer_range("year", 0, 15)])
    for title, schema in (("Adult sample", adult), ("Brazil-shaped", brazil_schema()), ("Adult + 2 (d = 8)", eight)):
        for workload in (paper_workload(schema), marginals(schema, ways=(1, 2))):
            _print_choice(f"{title}: {workload.name[:8]}", workload, ReleaseSpec(schema, 1.0), None)
    shared = Path(os.environ.get("PRIVELET_SHARED_DATA") or Path(__file__).resolve().parents[2] / "shared" / "data")
    if (shared / "dpbench").is_dir():
        _measured(shared, args.releases)
    else:
        print(f"\n(no DPBench data at {shared / 'dpbench'}: the measured part is skipped)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
