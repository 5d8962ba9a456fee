"""Accuracy benchmark: what workloads, ``best`` S_A, the advisor and the public total buy.

Run ``python -m privelet_gui.accuracy_bench``. For the bundled Adult sample and a
synthetic Brazil-shaped schema it prints, at epsilon 1 with replace-one neighbours:

- per workload: the exact expected error (average square error) under the paper's rule
  for S_A, under ``best``, and after the advisor's top suggestion (with ``best`` again),
  each for the release shifted to the public total (the default) and for the raw one;
- per coverage quintile of the paper's workload: the rule, ``best`` and Basic;
- for Adult only, *measured on the true table* (one seeded release): square error per
  quintile and mean relative error of the release's counts, of non-negative counts and
  of whole counts. This part reads the true data: its output is a benchmark on a public
  sample, never something to publish beside a release;
- with ``--default-sa``: whether a new table should start with the best S_A for the
  paper's workload instead of the recommended one. For the schemas a new table gets in
  the app (the sample and the shared tables, inferred; the sample's schema; the
  Brazil-shaped one), under both neighbouring notions, the best S_A's error divided by
  the rule's: the paper's workload (mean, worst query, each quintile), the exact worst
  case of any range query (raw release), all 1-way and all 2-way marginals.

Expected errors are data-independent and exact; nothing but the last part reads a table.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

from .bench import brazil_schema
from .engine import (
    OrdinalAttribute,
    PrefixSums,
    ReleaseSpec,
    Schema,
    Workload,
    advise,
    best_sa,
    expected_error,
    marginals,
    paper_workload,
    quintile_summary,
    recommend_sa,
    relative_error,
    sanity_bound,
)
from .engine.postprocess import post_processed_counts

__all__ = ["main"]


def _workloads(schema: Schema, coarse: dict[str, int | None]) -> list[Workload]:
    """The paper's, all 1-way and 2-way marginals, and a band/group-level workload on a few attributes."""
    grains = {name: grain for name, grain in coarse.items() if grain is not None}
    return [
        paper_workload(schema),
        marginals(schema, (1,)),
        marginals(schema, (2,)),
        marginals(schema, (1, 2), list(coarse), grains=grains),
    ]


def _table(schema: Schema, title: str, coarse: dict[str, int | None], epsilon: float) -> None:
    print(f"\n== {title}: {schema!r}, m = {schema.size:,}, epsilon {epsilon:g}, replace-one neighbours")
    rule = ReleaseSpec(schema, epsilon, sa=recommend_sa(schema))
    print(f"rule S_A = {{{', '.join(rule.effective_sa)}}}")
    header = f"{'workload':<62} {'':>5} {'rule':>11} {'best':>11} {'gain':>6} {'advisor':>11} {'gain':>6}"
    print(header)
    for workload in _workloads(schema, coarse):
        started = time.perf_counter()
        tops = []
        for public in (True, False):
            spec = rule.replace(public_total=public)
            choice = best_sa(spec, workload)
            advice = advise(spec, workload)
            top = advice.suggestions[0] if advice.suggestions else None
            tops.append(top)
            rule_error = expected_error(spec, workload)
            advised = top.error if top is not None else float("nan")
            label = "total" if public else "raw"
            print(f"{workload.name[:62]:<62} {label:>5} {rule_error:11.4g} {choice.error:11.4g} "
                  f"{rule_error / choice.error:5.2f}x {advised:11.4g} {rule_error / advised:5.2f}x")
        top = tops[0]
        if top is not None:
            exact = "lossless" if top.exact_share >= 1 else f"{top.exact_share:.0%} exact, rest rounded out"
            print(f"{'':<4}advisor's top: {top.description}; S_A {{{', '.join(top.sa)}}}; {exact}")
        print(f"{'':<4}best S_A (total): {{{', '.join(best_sa(rule, workload).sa)}}}"
              f"   [{time.perf_counter() - started:.2f} s for both rows]")
    paper = paper_workload(schema)
    queries = paper.queries()
    coverage = queries.coverage(schema.shape)
    print("paper's workload, expected square error per coverage quintile (shifted to the public total | raw):")
    best = rule.replace(sa=best_sa(rule, paper).sa)
    basic = rule.replace(mechanism="basic")
    rows = {name: (quintile_summary(coverage, spec.variances(queries)), quintile_summary(coverage, spec.variances(queries, raw=True)))
            for name, spec in (("rule", rule), ("best", best), ("Basic", basic))}
    print(f"{'quintile':>8} {'coverage':>10} " + " ".join(f"{n + ' total':>12} {n + ' raw':>12}" for n in rows))
    for q in range(5):
        cells = " ".join(f"{rows[n][0][q].square_error:12.4g} {rows[n][1][q].square_error:12.4g}" for n in rows)
        print(f"{q + 1:>8} {rows['rule'][0][q].coverage:10.3g} {cells}")


def _measured_adult(epsilon: float) -> None:
    from .io import count_table, load_schema, sample_schema_path, sample_table_path

    schema = load_schema(sample_schema_path())
    matrix, _ = count_table(sample_table_path(), schema)
    spec = ReleaseSpec(schema, epsilon, sa=recommend_sa(schema))
    release = spec.run(matrix, rng=np.random.default_rng(2026))
    queries = paper_workload(schema).queries()
    truth = PrefixSums(matrix).answer_batch(queries)
    coverage = queries.coverage(schema.shape)
    sanity = sanity_bound(float(matrix.sum()))
    print(f"\n== Adult, measured on the TRUE table (one seeded release, rule S_A, epsilon {epsilon:g}): "
          "benchmark only, never publish")
    print(f"{'counts':<22} {'mean sq. error':>14} {'mean rel. err':>13}  square error per quintile")
    for label, counts in (("raw", release.raw), ("shifted (default)", release.noisy)):
        _measured_row(label, counts, queries, truth, coverage, sanity)
    for kind in ("nonnegative", "integer", "nonnegative-integer"):
        _measured_row(kind, post_processed_counts(release.noisy, kind), queries, truth, coverage, sanity)


def _measured_row(label: str, counts: np.ndarray, queries: object, truth: np.ndarray, coverage: np.ndarray,
                  sanity: float) -> None:
    answers = PrefixSums(counts).answer_batch(queries)  # type: ignore[arg-type]
    square = (answers - truth) ** 2
    rows = quintile_summary(coverage, square)
    per = " ".join(f"{r.square_error:10.4g}" for r in rows)
    print(f"{label:<22} {square.mean():14.4g} {relative_error(answers, truth, sanity).mean():13.3f}  {per}")


#: Tables of the shared data folder whose inferred schemas --default-sa also measures (when present).
SHARED_TABLES = (
    "adult_arx/adult.csv",
    "adult_privatepgm/adult.csv",
    "census_income_kdd/census_income_kdd_train.csv.gz",
    "nist_acs_ma/ma2018.csv",
)


def _new_table_schemas(shared: Path) -> list[tuple[str, Schema]]:
    """The schema a new table starts with in the app (inferred columns, default selection)."""
    from .io import load_schema, sample_schema_path, sample_table_path, sniff_table, summarize_table
    from .workspace import Workspace

    out = [("sample schema", load_schema(sample_schema_path())), ("Brazil-shaped", brazil_schema())]
    for path in (sample_table_path(), *(shared / name for name in SHARED_TABLES)):
        if not path.is_file():
            continue
        workspace = Workspace()
        workspace.set_table(summarize_table(path, sniff_table(path)))
        schema = workspace.schema()
        if schema is not None:
            out.append((f"new table {path.name}", schema))
    return out


def _default_sa(shared: Path) -> None:
    print("\n== Should a new table start with the best S_A for the paper's workload? best / rule, per measure "
          "(> 1: best is worse); epsilon 1")
    worse_anywhere = False
    for title, schema in _new_table_schemas(shared):
        for neighbours in ("replace", "add-remove"):
            rule = ReleaseSpec(schema, 1.0, sa=recommend_sa(schema), neighbours=neighbours)
            paper = paper_workload(schema)
            best = rule.replace(sa=best_sa(rule, paper).sa)
            queries = paper.queries()
            coverage = queries.coverage(schema.shape)
            measures = {}
            for name, spec in (("rule", rule), ("best", best)):
                variances = spec.variances(queries)
                values = {"paper mean": float(variances.mean()), "paper worst": float(variances.max())}
                values.update({f"q{r.quintile}": r.square_error for r in quintile_summary(coverage, variances)})
                values["worst case"] = spec.worst_case_variance()
                values["1-way"] = expected_error(spec, marginals(schema, (1,)))
                if len(schema) > 1:
                    values["2-way"] = expected_error(spec, marginals(schema, (2,)))
                measures[name] = values
            ratios = {k: measures["best"][k] / measures["rule"][k] for k in measures["rule"]}
            worse = [k for k, r in ratios.items() if r > 1 + 1e-9]
            worse_anywhere = worse_anywhere or bool(worse)
            print(f"{title} [{neighbours}] d={len(schema)} m={schema.size:,}: "
                  + ("same S_A" if best.effective_sa == rule.effective_sa else
                     f"rule {{{', '.join(rule.effective_sa)}}} best {{{', '.join(best.effective_sa)}}}"))
            print("   " + " ".join(f"{k}={r:.3g}" for k, r in ratios.items())
                  + (f"   WORSE on {', '.join(worse)}" if worse else "   never worse"))
    print("=> keep the recommended S_A for new tables" if worse_anywhere else
          "=> the best S_A for the paper's workload is never worse here")


def _search_seconds() -> None:
    """How long the exhaustive best-S_A search takes over twelve attributes (4,096 subsets)."""
    schema = Schema([OrdinalAttribute.integer_range(f"a{i}", 0, 2 + i % 5) for i in range(12)])
    workload = paper_workload(schema, 10_000)
    best_sa(ReleaseSpec(schema, 1.0), workload)  # warm the per-axis tables
    started = time.perf_counter()
    choice = best_sa(ReleaseSpec(schema, 1.0, public_total=True), workload)
    print(f"\nbest S_A over 12 attributes, paper's workload of 10,000 queries: {time.perf_counter() - started:.3f} s"
          f" ({'exhaustive' if choice.exhaustive else 'greedy'}, 4,096 subsets)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--epsilon", type=float, default=1.0)
    parser.add_argument("--no-measured", action="store_true", help="skip the part that counts and releases Adult")
    parser.add_argument("--default-sa", action="store_true",
                        help="only measure whether new tables should start with the best S_A for the paper's workload")
    parser.add_argument("--shared", type=Path, default=Path(__file__).resolve().parents[2] / "shared" / "data",
                        help="the shared data folder (default: ../shared/data beside the checkout)")
    args = parser.parse_args(argv)
    if args.default_sa:
        _default_sa(args.shared)
        return 0
    from .io import load_schema, sample_schema_path

    _table(load_schema(sample_schema_path()), "Adult sample", {"age": 5, "native-country": 2, "sex": None}, args.epsilon)
    _table(brazil_schema(), "Brazil-shaped (synthetic)", {"Age": 5, "Income": 50, "Gender": None}, args.epsilon)
    _search_seconds()
    if not args.no_measured:
        _measured_adult(args.epsilon)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
