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
- with ``--accept``: accepting every advisor suggestion in turn, as a user clicking "Apply"
  would, on the Adult sample and the shared census tables, under the app's default (the best
  strategy) and under Privelet+: the release the app then proposes against the same mechanism
  at full granularity (not following the advice) and against recommended Privelet+ there,
  *measured on the true table* (seeded releases, bias included) on the workload's queries,
  with the time the advice took (benchmark only, never publish);
- with ``--advice-seconds``: how long the advice takes under the best strategy and under
  Privelet+, on the same workloads and on DPBench's 1-D shape;
- with ``--marginals``: the marginals strategy learned for marginal workloads (docs/math.md,
  "Choosing marginals") against Basic and the best per-axis strategies, exact expected errors on
  the sample's and the new tables' schemas, and on the Adult sample *measured on the true table*
  over seeded releases (benchmark only, never publish);
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
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import numpy as np

from .bench import brazil_schema
from .engine import (
    Hierarchy,
    InternalError,
    NominalAttribute,
    OrdinalAttribute,
    PrefixSums,
    ReleaseSpec,
    Schema,
    Workload,
    advise,
    best_sa,
    best_strategy,
    expected_error,
    marginals,
    paper_workload,
    quintile_summary,
    recommend_sa,
    relative_error,
    sanity_bound,
)
from .engine.postprocess import post_processed_counts
from .io.hierarchies import hierarchy_from_arx_rows, hierarchy_to_arx_rows
from .io.project import BEST_STRATEGY, MechanismChoice, WorkloadChoice

__all__ = ["AcceptCase", "Accepted", "accept_cases", "accept_every_suggestion", "main"]


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


@dataclass(frozen=True)
class AcceptCase:
    """A table, its schema and the workload a custodian sets (``choice``)."""

    title: str
    table: Path
    schema: Schema
    choice: WorkloadChoice


@dataclass(frozen=True)
class Accepted:
    """What accepting every suggestion did: the suggestions taken, and the measured mean square
    error (over the workload's queries and the seeds, bias included) of recommended Privelet+
    at full granularity (``baseline``), of the release the app proposes at full granularity with
    the mechanism chosen (``unadvised``: not following the advice) and of the one it proposes
    after the suggestions (``advised``); ``expected_unadvised`` and ``expected_advised`` are their
    exact expected errors (the noise's: every accepted suggestion is lossless), ``seconds`` how
    long the advice took in all."""

    steps: tuple[str, ...]
    queries: int
    baseline: float
    unadvised: float
    advised: float
    expected_unadvised: float
    expected_advised: float
    same_truth: bool  # the workload's true answers on the coarser table are the fine ones
    seconds: float

    @property
    def gain(self) -> float:
        return self.baseline / self.advised if self.advised > 0 else float("inf")


def _measured(path: Path, options: object, spec: ReleaseSpec, workload: Workload, seeds: range) -> tuple[np.ndarray, float]:
    """The workload's true answers on the table counted with ``spec``'s schema, and the mean
    square error of seeded releases of it against them."""
    from .io import count_table

    matrix, _ = count_table(path, spec.schema, options)  # type: ignore[arg-type]
    queries = workload.queries()
    truth = PrefixSums(matrix).answer_batch(queries)
    errors = [float(np.mean((PrefixSums(spec.run(matrix, rng=np.random.default_rng(seed)).noisy).answer_batch(queries)
                             - truth) ** 2)) for seed in seeds]
    return truth, float(np.mean(errors))


def accept_every_suggestion(case: AcceptCase, *, mechanism: MechanismChoice = BEST_STRATEGY, epsilon: float = 1.0,
                            seeds: range = range(3)) -> Accepted:
    """Take the advisor's first suggestion until it has none (a workspace with ``mechanism``
    chosen, as the app does), then measure the proposed release, the one it proposed before
    the suggestions and recommended Privelet+ on the original schema."""
    from .io import sniff_table, summarize_table
    from .workspace import Workspace
    from .workspace.workload import build_workload, find_advice

    workspace = Workspace()
    workspace.set_table(summarize_table(case.table, sniff_table(case.table)), schema=case.schema)
    workspace.set_workload(case.choice)
    workspace.set_epsilon(epsilon)
    workspace.set_privacy(mechanism=mechanism)
    fine = workspace.release_spec()
    if fine is None:
        raise InternalError("the workspace has no release spec for the accept-every-suggestion bench")
    steps = []
    started = time.perf_counter()
    while True:
        key = workspace.advice_key()
        if key is None:
            raise InternalError("the workspace gives no advice key")
        advice = find_advice(key)
        if not advice.suggestions:
            break
        workspace.apply_suggestion(advice.suggestions[0])
        steps.append(advice.suggestions[0].description)
    seconds = time.perf_counter() - started
    proposed = workspace.release_spec()
    if proposed is None:
        raise InternalError("the workspace has no release spec after the suggestions")
    baseline = fine.replace(mechanism="privelet+", sa=recommend_sa(fine.schema), strategies=(), marginals=())
    options = workspace.table_options
    fine_workload = build_workload(case.choice, fine.schema)
    coarse_workload = build_workload(workspace.workload, proposed.schema)
    truth, baseline_error = _measured(case.table, options, baseline, fine_workload, seeds)
    _, unadvised_error = _measured(case.table, options, fine, fine_workload, seeds)
    coarse_truth, advised_error = _measured(case.table, options, proposed, coarse_workload, seeds)
    same = coarse_truth.shape == truth.shape and bool(np.array_equal(coarse_truth, truth))
    return Accepted(tuple(steps), len(fine_workload), baseline_error, unadvised_error, advised_error,
                    expected_error(fine, fine_workload), expected_error(proposed, coarse_workload), same, seconds)


def _arx(path: Path, missing: str | None = None) -> Hierarchy:
    """An ARX hierarchy file, with ``missing`` appended in a group of its own (as the app's fix does)."""
    from .io import read_arx_hierarchy

    hierarchy = read_arx_hierarchy(path)
    if missing is None:
        return hierarchy
    rows = hierarchy_to_arx_rows(hierarchy)
    chain = [missing] + [f"{missing} (group)"] * (hierarchy.height - 2) + [rows[0][-1]]
    return hierarchy_from_arx_rows([*rows, chain])


def accept_cases(shared: Path) -> list[AcceptCase]:
    """The Adult sample and, where ``shared`` holds them, census tables, each with the paper's
    workload and with 1- and 2-way marginals at bins and levels the domains hold."""
    from .io import load_schema, sample_schema_path, sample_table_path

    adult = load_schema(sample_schema_path())
    cases = [
        AcceptCase("Adult sample, paper's workload", sample_table_path(), adult, WorkloadChoice()),
        AcceptCase("Adult sample, 1- and 2-way marginals (age/5, education/2, occupation/2, native-country/2)",
                   sample_table_path(), adult,
                   WorkloadChoice(paper=None, ways=(1, 2), grains=(("age", 5), ("education", 2), ("occupation", 2),
                                                                   ("native-country", 2)))),
    ]
    acs = shared / "nist_acs_ma"
    if (acs / "ma2019.csv").is_file():
        schema = Schema([
            NominalAttribute("PUMA", _arx(acs / "hierarchy_PUMA.csv")),
            OrdinalAttribute.integer_range("AGEP", 0, 99),
            NominalAttribute("SEX", Hierarchy.flat(["1", "2"])),
            NominalAttribute("INDP", _arx(acs / "hierarchy_INDP.csv", "N"), missing="N", missing_values=("N",)),
        ])
        grains: tuple[tuple[str, int], ...] = (("AGEP", 5), ("INDP", 2))
        cases += [
            AcceptCase("ACS Massachusetts 2019, paper's workload", acs / "ma2019.csv", schema, WorkloadChoice()),
            AcceptCase("ACS Massachusetts 2019, 1- and 2-way marginals (AGEP/5, INDP/2)", acs / "ma2019.csv", schema,
                       WorkloadChoice(paper=None, ways=(1, 2), grains=grains)),
        ]
    kdd = shared / "census_income_kdd"
    if (kdd / "census_income_kdd_train.csv.gz").is_file():
        schema = Schema([
            OrdinalAttribute.integer_range("age", 0, 90),
            NominalAttribute("sex", Hierarchy.flat(["Female", "Male"])),
            NominalAttribute("detailed_occupation_recode", _arx(kdd / "hierarchy_detailed_occupation_recode.csv")),
            OrdinalAttribute.integer_range("weeks_worked_in_year", 0, 52),
        ])
        grains = (("age", 10), ("detailed_occupation_recode", 2), ("weeks_worked_in_year", 4))
        cases += [
            AcceptCase("Census-Income (KDD), paper's workload", kdd / "census_income_kdd_train.csv.gz", schema,
                       WorkloadChoice()),
            AcceptCase("Census-Income (KDD), 1- and 2-way marginals (age/10, occupation/2, weeks/4)",
                       kdd / "census_income_kdd_train.csv.gz", schema,
                       WorkloadChoice(paper=None, ways=(1, 2), grains=grains)),
        ]
    return cases


def _accept(shared: Path, epsilon: float) -> None:
    print(f"\n== Accepting every advisor suggestion in turn (epsilon {epsilon:g}, replace-one neighbours): mean square "
          "error measured on the TRUE table over 3 seeded releases, bias included; benchmark only, never publish.\n"
          "   Privelet+: recommended Privelet+ at full granularity; unadvised: the chosen mechanism there (not "
          "following the advice); advised: after every suggestion; gain: Privelet+ / advised")
    print(f"{'case':<88} {'mechanism':<14} {'queries':>8} {'Privelet+':>11} {'unadvised':>11} {'advised':>11} "
          f"{'gain':>8} {'advice':>7}")
    for case in accept_cases(shared):
        for mechanism in (BEST_STRATEGY, "privelet+"):
            accepted = accept_every_suggestion(case, mechanism=mechanism, epsilon=epsilon)
            print(f"{case.title[:88]:<88} {mechanism:<14} {accepted.queries:>8,} {accepted.baseline:11.4g} "
                  f"{accepted.unadvised:11.4g} {accepted.advised:11.4g} {accepted.gain:7.1f}x {accepted.seconds:6.1f}s")
            print(f"    accepted: {'; '.join(accepted.steps) or 'nothing (no lossless suggestion)'}"
                  + ("" if accepted.same_truth else "   [true answers differ: the workload changed meaning]"))


def _advice_seconds(shared: Path) -> None:
    """How long the advice takes under the best strategy and under Privelet+ with the best S_A,
    on the accept cases' workloads and on DPBench's 1-D shape (one axis of 4,096 values)."""
    from .strategy_bench import ordinal_schema, random_ranges
    from .workspace.workload import build_workload

    cases = [(c.title, ReleaseSpec(c.schema, 1.0), build_workload(c.choice, c.schema)) for c in accept_cases(shared)]
    line = ordinal_schema((4096,))
    cases.append(("1-D, 4,096 values, 2,000 random ranges (DPBench's shape)", ReleaseSpec(line, 1.0, neighbours="add-remove"),
                  Workload.of_queries(line, random_ranges((4096,), 2000))))
    best_strategy(cases[0][1], cases[0][2])  # compile the kernels first
    print("\n== Seconds the advice takes: the best strategy of the current schema alone, the advice under Privelet+ "
          "(best S_A), and under the best strategy (screening every change, then a search per listed one)")
    for title, spec, workload in cases:
        timings = []
        for run in (partial(best_strategy, spec, workload), partial(advise, spec, workload, sa_rule="best"),
                    partial(advise, spec, workload, strategies="best")):
            started = time.perf_counter()
            run()
            timings.append(time.perf_counter() - started)
        print(f"{title[:72]:<72} d={len(spec.schema)}  best strategy {timings[0]:6.2f}  advice Privelet+ {timings[1]:6.2f}"
              f"  advice best strategy {timings[2]:6.2f}")


def _search_seconds() -> None:
    """How long the exhaustive best-S_A search takes over twelve attributes (4,096 subsets)."""
    schema = Schema([OrdinalAttribute.integer_range(f"a{i}", 0, 2 + i % 5) for i in range(12)])
    workload = paper_workload(schema, 10_000)
    best_sa(ReleaseSpec(schema, 1.0), workload)  # warm the per-axis tables
    started = time.perf_counter()
    choice = best_sa(ReleaseSpec(schema, 1.0, public_total=True), workload)
    print(f"\nbest S_A over 12 attributes, paper's workload of 10,000 queries: {time.perf_counter() - started:.3f} s"
          f" ({'exhaustive' if choice.exhaustive else 'greedy'}, 4,096 subsets)")


def _marginals(shared: Path, epsilon: float) -> None:
    from .engine.accuracy.marginal_weights import optimised_marginals
    from .engine.accuracy.workloads import marginals_expected_error

    print(f"\n== Marginal workloads: the learned marginals strategy (exact expected mean square error, epsilon "
          f"{epsilon:g}, add/remove neighbours)")
    print(f"{'schema':<42} {'workload':<24} {'Basic':>11} {'per-axis':>11} {'marginals':>11} {'vs Basic':>9} "
          f"{'vs per-axis':>11} {'learn s':>7}")
    for title, schema in _new_table_schemas(shared):
        spec = ReleaseSpec(schema, epsilon, neighbours="add-remove")
        for ways in ((1,), (2,), (1, 2), (3,)):
            if ways[-1] > len(schema):
                continue
            workload = marginals(schema, ways)
            started = time.perf_counter()
            strategy = optimised_marginals(workload, public_total=False)
            seconds = time.perf_counter() - started
            error = marginals_expected_error(strategy, workload, epsilon=epsilon, neighbours="add-remove",
                                             public_total=False)
            per_axis = best_strategy(spec, workload)
            basic = per_axis.alternatives["Basic"][1]
            print(f"{title[:42]:<42} {workload.name[:24]:<24} {basic:11.4g} {per_axis.error:11.4g} {error:11.4g} "
                  f"{basic / error:8.1f}x {per_axis.error / error:10.1f}x {seconds:7.2f}")
    _measured_marginals(epsilon)


def _measured_marginals(epsilon: float, releases: int = 20) -> None:
    """Seeded releases of the Adult sample with the marginals learned for its 2-way marginals: the
    measured mean square error of those marginals' cells against the exact figure."""
    from .engine.accuracy.marginal_weights import optimised_marginals
    from .engine.accuracy.workloads import marginals_expected_error
    from .engine.noise.bits import release_key
    from .engine.noise.calibration import calibrate
    from .io import count_table, load_schema, sample_schema_path, sample_table_path

    schema = load_schema(sample_schema_path())
    matrix, _ = count_table(sample_table_path(), schema)
    counts = matrix.astype(np.int64)
    workload = marginals(schema, (2,))
    strategy = optimised_marginals(workload, public_total=False)
    exact = marginals_expected_error(strategy, workload, epsilon=epsilon, neighbours="add-remove", public_total=False)
    calibration = calibrate(epsilon, strategy.rho, strategy.influence, neighbours="add-remove",
                            rows=int(counts.sum()), measurement_bound=strategy.growth)
    pairs = [(a, b) for a in range(len(schema)) for b in range(a + 1, len(schema))]

    def marginal(m: np.ndarray, pair: tuple[int, int]) -> np.ndarray:
        return m.sum(axis=tuple(i for i in range(len(schema)) if i not in pair))

    truth = [marginal(counts, p) for p in pairs]
    cells = sum(t.size for t in truth)
    errors = []
    for seed in range(releases):
        released = strategy.release(counts, calibration, "exact", release_key(seed=seed))
        errors.append(sum(float(((marginal(released, p) - t) ** 2).sum()) for p, t in zip(pairs, truth)) / cells)
    spread = float(np.std(errors)) / np.sqrt(releases)
    print(f"\nAdult sample, 2-way marginals, measured on the TRUE table ({releases} seeded releases; benchmark only, "
          f"never publish): mean square error {np.mean(errors):.4g} +/- {spread:.2g} (one standard error), exact "
          f"{exact:.4g} (the grid's noise is {calibration.variance / (2 * float(strategy.rho) ** 2 / epsilon**2):.7f} "
          "of the nominal Laplace variance)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--epsilon", type=float, default=1.0)
    parser.add_argument("--no-measured", action="store_true", help="skip the part that counts and releases Adult")
    parser.add_argument("--accept", action="store_true",
                        help="only measure accepting every advisor suggestion (Adult sample and shared census tables)")
    parser.add_argument("--marginals", action="store_true",
                        help="only compare the learned marginals strategy with Basic and per-axis strategies")
    parser.add_argument("--advice-seconds", action="store_true",
                        help="only time the advice under the best strategy and under Privelet+")
    parser.add_argument("--default-sa", action="store_true",
                        help="only measure whether new tables should start with the best S_A for the paper's workload")
    parser.add_argument("--shared", type=Path, default=Path(__file__).resolve().parents[2] / "shared" / "data",
                        help="the shared data folder (default: ../shared/data beside the checkout)")
    args = parser.parse_args(argv)
    if args.default_sa:
        _default_sa(args.shared)
        return 0
    if args.accept:
        _accept(args.shared, args.epsilon)
        return 0
    if args.marginals:
        _marginals(args.shared, args.epsilon)
        return 0
    if args.advice_seconds:
        _advice_seconds(args.shared)
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
