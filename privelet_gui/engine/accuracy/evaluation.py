"""The paper's evaluation (Figures 8 and 9) and the data-independent error preview.

Errors of noisy answers are measured against the *true* answers, so everything
here except :func:`expected_errors` reads the true data: run it only on the
custodian's own machine, never publish its output beside a release. Summaries
hold error statistics only, never a true count.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from ..bounds import variance_model
from ..errors import PriveletError
from ..mechanisms import Release, basic, privelet_plus
from ..model.schema import Schema
from ..noise.calibration import Neighbours, check_epsilon
from ..progress import CancelCallback, Progress, ProgressCallback
from ..queries import PrefixSums, QueryBatch, random_workload, relative_error, sanity_bound, square_error
from .workloads import Workload

if TYPE_CHECKING:
    from ..spec import ReleaseSpec

__all__ = [
    "EVALUATED_MECHANISMS",
    "QUINTILES",
    "ErrorPreview",
    "EvaluationRow",
    "QuintileRow",
    "coverage_groups",
    "coverage_levels",
    "coverage_summary",
    "evaluate",
    "expected_by_coverage",
    "expected_errors",
    "marginal",
    "measure_release",
    "quintile_summary",
]

QUINTILES = 5
EVALUATED_MECHANISMS = ("basic", "privelet+")


@dataclass(frozen=True)
class QuintileRow:
    """Average errors of the queries in one coverage quintile.

    Attributes
    ----------
    quintile : int
        1 (smallest coverage) .. 5.
    coverage : float
        Average coverage (fraction of M's cells).
    square_error : float
        Average ``(x - act)^2``, squared counts.
    relative_error : float
        Average ``|x - act| / max(act, s)``; nan where not measured.
    queries : int
        Queries in the quintile.
    """

    quintile: int  # 1 (smallest coverage) .. 5
    coverage: float  # average coverage (fraction of M's cells)
    square_error: float  # average (x - act)^2
    relative_error: float  # average |x - act| / max(act, s); nan where not measured
    queries: int


def coverage_groups(coverage: np.ndarray, parts: int = QUINTILES) -> np.ndarray:
    """Group of each query (0..parts-1) by the rank of its coverage: equal-size groups.

    "All queries in the i-th subset have coverage between the (i-1)-th and i-th
    quintiles of the query coverage distribution"; ties are split by query order.

    Parameters
    ----------
    coverage : numpy.ndarray
        Each query's coverage (any real values; only their order counts).
    parts : int, default 5
        Number of groups (positive).

    Returns
    -------
    numpy.ndarray
        int64, ``coverage``'s length: each query's group.
    """
    coverage = np.asarray(coverage, dtype=np.float64)
    order = np.argsort(coverage, kind="stable")
    groups = np.empty(len(coverage), dtype=np.int64)
    groups[order] = np.arange(len(coverage)) * parts // max(len(coverage), 1)
    return groups


def quintile_summary(
    coverage: np.ndarray,
    square_errors: np.ndarray,
    relative_errors: np.ndarray | None = None,
    parts: int = QUINTILES,
) -> list[QuintileRow]:
    """Average coverage and errors per coverage quintile (see :func:`coverage_groups`).

    Parameters
    ----------
    coverage : numpy.ndarray
        Each query's coverage, float, shape ``(n_queries,)``.
    square_errors : numpy.ndarray
        Each query's square error, same shape.
    relative_errors : numpy.ndarray, optional
        Each query's relative error; None: the rows' relative errors are nan.
    parts : int, default 5
        Number of groups.

    Returns
    -------
    list of QuintileRow
        ``parts`` rows, smallest coverage first (an empty group has nan averages).

    Examples
    --------
    >>> rows = quintile_summary(np.arange(10) / 10, np.arange(10.0))
    >>> [(r.quintile, r.coverage, r.square_error, r.queries) for r in rows[:2]]
    [(1, 0.05, 0.5, 2), (2, 0.25, 2.5, 2)]
    """
    return _group_rows(coverage_groups(coverage, parts), parts, coverage, square_errors, relative_errors)


def _group_rows(groups: np.ndarray, count: int, coverage: np.ndarray, square_errors: np.ndarray,
                relative_errors: np.ndarray | None) -> list[QuintileRow]:
    """One row per group ``0 .. count - 1`` of ``groups``: its averages (nan for an empty group,
    and for relative errors when there are none) and its number of queries."""
    rows = []
    for g in range(count):
        members = groups == g
        size = int(members.sum())
        rows.append(
            QuintileRow(
                quintile=g + 1,
                coverage=float(np.mean(coverage[members])) if size else float("nan"),
                square_error=float(np.mean(square_errors[members])) if size else float("nan"),
                relative_error=(
                    float(np.mean(relative_errors[members])) if size and relative_errors is not None else float("nan")
                ),
                queries=size,
            )
        )
    return rows


#: Workloads with at most this many distinct coverages (marginals) get one group per coverage.
FEW_COVERAGES = 10


def coverage_levels(coverage: np.ndarray, parts: int = QUINTILES, *, few: int = FEW_COVERAGES) -> np.ndarray:
    """Group of each query by coverage, queries of equal coverage always together: one group
    per coverage when there are at most ``few`` of them (the cells of a marginal share one),
    else the ``parts`` quintiles of :func:`coverage_groups` with each run of equal coverages
    placed whole in the group of its middle rank (so that no two groups have the same
    coverage), empty groups dropped.

    Without ties this is :func:`coverage_groups`.

    Parameters
    ----------
    coverage : numpy.ndarray
        Each query's coverage (equal boxes have exactly equal coverages).
    parts : int, default 5
        The most groups of a workload of many coverages (positive).
    few : int, default 10, keyword-only
        The most distinct coverages that get a group each.

    Returns
    -------
    numpy.ndarray
        int64, ``coverage``'s length: each query's group (0, 1, ...), 0 for the smallest coverages.

    Examples
    --------
    >>> coverage_levels(np.array([0.5, 0.01, 0.01, 0.01, 0.1])).tolist()
    [2, 0, 0, 0, 1]
    >>> coverage_levels(np.array([0.1, 0.2, 0.2, 0.2, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7]), parts=2, few=3).tolist()
    [0, 0, 0, 0, 0, 1, 1, 1, 1, 1]
    """
    coverage = np.asarray(coverage, dtype=np.float64)
    values, inverse, counts = np.unique(coverage, return_inverse=True, return_counts=True)
    if len(values) <= few:
        return inverse.astype(np.int64)
    first = np.cumsum(counts) - counts
    middle = first + (counts - 1) // 2
    group_of_value = middle * parts // len(coverage)
    _, numbered = np.unique(group_of_value, return_inverse=True)
    return numbered[inverse].astype(np.int64)


def coverage_summary(
    coverage: np.ndarray, square_errors: np.ndarray, parts: int = QUINTILES, *,
    relative_errors: np.ndarray | None = None,
) -> list[QuintileRow]:
    """Average coverage and errors per group of :func:`coverage_levels` (one per coverage for
    a workload of few coverages, else at most ``parts``; none empty, equal coverages never
    split): what any workload's errors look like by query size, marginals included.

    Parameters
    ----------
    coverage : numpy.ndarray
        Each query's coverage, float, shape ``(n_queries,)``.
    square_errors : numpy.ndarray
        Each query's square error, same shape.
    parts : int, default 5
        The most groups of a workload of many coverages.
    relative_errors : numpy.ndarray, optional, keyword-only
        Each query's relative error (measured errors); None: the rows' relative errors are nan.

    Returns
    -------
    list of QuintileRow
        One row per group, smallest coverage first, numbered from 1.

    Examples
    --------
    >>> rows = coverage_summary(np.array([0.5, 0.01, 0.01, 0.1]), np.array([8.0, 1.0, 3.0, 4.0]))
    >>> [(r.quintile, r.coverage, r.square_error, r.queries) for r in rows]
    [(1, 0.01, 2.0, 2), (2, 0.1, 4.0, 1), (3, 0.5, 8.0, 1)]
    """
    groups = coverage_levels(coverage, parts)
    return _group_rows(groups, int(groups.max()) + 1 if len(groups) else 0, coverage, square_errors, relative_errors)


def expected_by_coverage(
    specs: Mapping[str, ReleaseSpec],
    queries: QueryBatch,
    *,
    parts: int = QUINTILES,
    should_cancel: CancelCallback | None = None,
) -> dict[str, list[QuintileRow]]:
    """Each release's expected square error (its exact noise variance, after the shift to the
    public total where the release makes it) per coverage group of ``queries``
    (:func:`coverage_summary`): data-independent, it costs no privacy.

    Parameters
    ----------
    specs : mapping of str to ReleaseSpec
        The releases compared, by name, all on one schema.
    queries : QueryBatch
        Box queries on that schema (a workload listed: :meth:`Workload.queries`).
    parts : int, default 5, keyword-only
        The most groups of a workload of many coverages (:func:`coverage_summary`).
    should_cancel : callable ``() -> bool``, optional, keyword-only
        Asked before each release's variances.

    Returns
    -------
    dict of str to list of QuintileRow
        Per name of ``specs``, in their order: the groups' rows (the same groups for every release).

    Raises
    ------
    PriveletError
        The releases are on different schemas, or one has none.
    Cancelled
        ``should_cancel()`` returned True.
    """
    schemas = {spec.schema for spec in specs.values()}
    if len(schemas) != 1 or None in schemas:
        raise PriveletError("the releases compared must share one schema")
    schema = next(iter(schemas))
    coverage = queries.coverage(schema.shape)
    steps = Progress(None, should_cancel)
    out = {}
    for name, spec in specs.items():
        steps.check()
        out[name] = coverage_summary(coverage, spec.variances(queries), parts)
    return out


def expected_errors(
    schema: Schema,
    epsilon: float,
    sa: Iterable[str],
    workload: QueryBatch,
    *,
    neighbours: Neighbours = "replace",
) -> dict[str, list[QuintileRow]]:
    """Expected square error (= exact noise variance) per coverage quintile, Basic vs Privelet+.

    Data-independent: it uses the schema only, so it costs no privacy and can be shown
    before any release.

    Parameters
    ----------
    schema : Schema
        The attributes.
    epsilon : float
        The privacy budget, in ``[1e-12, 1e12]``.
    sa : iterable of str
        S_A of the Privelet+ row.
    workload : QueryBatch
        The queries (for example :func:`random_workload`).
    neighbours : {"replace", "add-remove"}, default "replace", keyword-only
        The neighbouring notion.

    Returns
    -------
    dict of str to list of QuintileRow
        ``{"basic": rows, "privelet+": rows}``; the rows' relative errors are nan.

    Raises
    ------
    PriveletError
        ``epsilon`` or ``neighbours`` refused.
    SchemaError
        ``sa`` names an unknown or repeated attribute.
    """
    model = variance_model(schema)
    coverage = workload.coverage(schema.shape)
    out = {}
    for mechanism, chosen in (("basic", schema.names), ("privelet+", tuple(sa))):
        variances = model.batch(workload, epsilon, chosen, neighbours=neighbours)
        out[mechanism] = quintile_summary(coverage, variances)
    return out


@dataclass(frozen=True)
class EvaluationRow:
    """One line of ``summary.csv``.

    Attributes
    ----------
    epsilon : float
        The privacy budget of the release measured.
    mechanism : str
        ``"basic"`` or ``"privelet+"``.
    row : QuintileRow
        Its errors in one coverage quintile.
    """

    epsilon: float
    mechanism: str
    row: QuintileRow


class _TrueAnswers:
    """A workload (``queries`` random ones when ``workload`` is None) with its true answers:
    errors of any noisy matrix per quintile (the paper's figures) or per coverage group (as
    :func:`expected_by_coverage` groups the expected ones)."""

    def __init__(self, matrix: np.ndarray, schema: Schema, queries: int, rng: np.random.Generator,
                 workload: Workload | None = None):
        if workload is not None and workload.schema != schema:
            raise PriveletError(f"the workload {workload.name!r} is on another schema than the table")
        self.workload = random_workload(schema, queries, rng) if workload is None else workload.queries()
        self.coverage = self.workload.coverage(schema.shape)
        self.actual = PrefixSums(matrix).answer_batch(self.workload)
        self.sanity = sanity_bound(float(np.sum(matrix)))

    def _errors(self, noisy_matrix: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        noisy = PrefixSums(noisy_matrix).answer_batch(self.workload)
        return square_error(noisy, self.actual), relative_error(noisy, self.actual, self.sanity)

    def quintiles(self, noisy_matrix: np.ndarray) -> list[QuintileRow]:
        return quintile_summary(self.coverage, *self._errors(noisy_matrix))

    def by_coverage(self, noisy_matrix: np.ndarray) -> list[QuintileRow]:
        square, relative = self._errors(noisy_matrix)
        return coverage_summary(self.coverage, square, relative_errors=relative)


def evaluate(
    matrix: np.ndarray,
    schema: Schema,
    epsilons: Sequence[float],
    sa: Iterable[str],
    *,
    queries: int = 40_000,
    rng: np.random.Generator | None = None,
    neighbours: Neighbours = "replace",
    workload: Workload | None = None,
    progress: ProgressCallback | None = None,
    should_cancel: CancelCallback | None = None,
) -> tuple[QueryBatch, list[EvaluationRow]]:
    """The paper's experiment on the custodian's own data: Basic and Privelet+ per epsilon.

    Draws ``queries`` random queries (docs/math.md, "The paper's evaluation"), or asks the
    custodian's ``workload`` (every query of it), releases M with Basic and with Privelet+
    (S_A = ``sa``) at every epsilon, and summarises square and relative errors (sanity
    bound 0.1% of n) per coverage quintile. Uses the true matrix: not for publication.

    Parameters
    ----------
    matrix : numpy.ndarray
        M: the true non-negative integer counts, shape ``schema.shape``.
    schema : Schema
        The attributes.
    epsilons : sequence of float
        The privacy budgets, each in ``[1e-12, 1e12]``.
    sa : iterable of str
        S_A of the Privelet+ releases.
    queries : int, default 40000, keyword-only
        Number of random queries.
    rng : numpy.random.Generator, optional, keyword-only
        Draws the workload and seeds the releases (default: fresh entropy).
    workload : Workload, optional, keyword-only
        The custodian's queries to measure instead of ``queries`` random ones (on the schema).
    neighbours : {"replace", "add-remove"}, default "replace", keyword-only
        The neighbouring notion.
    progress : callable ``(fraction, stage)``, optional, keyword-only
        Progress over the whole experiment.
    should_cancel : callable ``() -> bool``, optional, keyword-only
        Polled between and during releases.

    Returns
    -------
    tuple of (QueryBatch, list of EvaluationRow)
        The workload, and 5 rows per epsilon and mechanism (Basic first).

    Raises
    ------
    PriveletError
        An epsilon refused, or a release refused (see :func:`privelet_plus`).
    SchemaError
        ``sa`` names an unknown or repeated attribute.
    Cancelled
        ``should_cancel()`` returned True.
    """
    epsilons = [check_epsilon(e) for e in epsilons]
    sa = tuple(sa)
    generator = rng if rng is not None else np.random.default_rng()
    steps = Progress(progress, should_cancel)
    steps.report(0.0, "answering the queries on the true data")
    truth = _TrueAnswers(matrix, schema, queries, generator, workload)
    rows: list[EvaluationRow] = []
    runs = [(e, m) for e in epsilons for m in EVALUATED_MECHANISMS]
    for number, (epsilon, mechanism) in enumerate(runs):
        part = steps.slice(0.05 + 0.95 * number / len(runs), 0.05 + 0.95 * (number + 1) / len(runs))
        part.report(0.0, f"{mechanism} at epsilon {epsilon:g}")
        report = part.slice(0.0, 0.8).report if progress is not None else None
        if mechanism == "basic":
            release = basic(matrix, epsilon, generator, schema=schema, neighbours=neighbours, progress=report,
                            should_cancel=should_cancel)
        else:
            release = privelet_plus(matrix, schema, epsilon, sa, generator, neighbours=neighbours, progress=report,
                                    should_cancel=should_cancel)
        part.report(0.8, f"answering the queries ({mechanism}, epsilon {epsilon:g})")
        summary = truth.quintiles(release.noisy)
        del release
        rows.extend(EvaluationRow(epsilon, mechanism, row) for row in summary)
        part.report(1.0, f"{mechanism} at epsilon {epsilon:g} done")
    return truth.workload, rows


@dataclass(frozen=True)
class ErrorPreview:
    """How a release's noise compares with the true data: for the custodian's eyes only.

    ``by_coverage`` maps a mechanism to its error per coverage group of the workload (as
    :func:`coverage_summary` groups it, like the expected errors of
    :func:`expected_by_coverage`): the release's own mechanism, and Basic at the same epsilon
    for comparison (one entry if the release is Basic). ``true_marginals`` are one-attribute marginals of the *true* table.
    Nothing here may be published or exported with the release.

    Attributes
    ----------
    epsilon : float
        The release's privacy budget.
    queries : int
        Number of queries measured.
    sanity : float
        The sanity bound s used for relative errors (0.1% of n).
    by_coverage : dict of str to list of QuintileRow
        See above.
    true_marginals : dict of str to numpy.ndarray
        See above: attribute name to its true one-attribute marginal.
    workload : str
        The name of the workload measured (the custodian's, or the paper's random one).
    """

    epsilon: float
    queries: int
    sanity: float
    by_coverage: dict[str, list[QuintileRow]]
    true_marginals: dict[str, np.ndarray]
    workload: str = "the paper's random workload"


def measure_release(
    matrix: np.ndarray,
    release: Release,
    *,
    queries: int = 10_000,
    rng: np.random.Generator | None = None,
    workload: Workload | None = None,
    progress: ProgressCallback | None = None,
    should_cancel: CancelCallback | None = None,
) -> ErrorPreview:
    """The errors of ``release`` on the true ``matrix`` by coverage group (Figure 8 style, grouped
    as :func:`coverage_summary` does: marginals get a group per coverage): on the custodian's
    ``workload`` (every query of it), or on ``queries`` of the paper's random workload.

    Also releases M with Basic at the same epsilon, neighbours and public-total choice, for
    comparison only (that matrix is discarded). Reads the true data: run it on the custodian's machine only.

    Parameters
    ----------
    matrix : numpy.ndarray
        M: the true counts the release was made from, shape ``release.schema.shape``.
    release : Release
        A release with a schema.
    queries : int, default 10000, keyword-only
        Number of random queries.
    rng : numpy.random.Generator, optional, keyword-only
        Draws the workload and the comparison's noise (default: fresh entropy).
    workload : Workload, optional, keyword-only
        The custodian's queries to measure, every one of them (default: ``queries`` of the
        paper's random workload).
    progress : callable ``(fraction, stage)``, optional, keyword-only
        Progress.
    should_cancel : callable ``() -> bool``, optional, keyword-only
        Polled during the comparison release.

    Returns
    -------
    ErrorPreview

    Raises
    ------
    PriveletError
        The release has no schema, or the comparison release is refused.
    Cancelled
        ``should_cancel()`` returned True.
    """
    schema = release.schema
    if schema is None:
        raise PriveletError("measuring a release needs its schema")
    generator = rng if rng is not None else np.random.default_rng()
    steps = Progress(progress, should_cancel)
    steps.report(0.0, "measuring the error on the true data")
    truth = _TrueAnswers(matrix, schema, queries, generator, workload)
    by_coverage: dict[str, list[QuintileRow]] = {release.mechanism: truth.by_coverage(release.noisy)}
    if release.mechanism != "basic":
        steps.report(0.4, "measuring the error: Basic for comparison")
        comparison = basic(
            matrix, release.epsilon, generator, schema=schema, neighbours=release.neighbours,
            public_total=release.public_total,  # compared like for like: shifted only when the release is
            progress=steps.slice(0.4, 0.8).report if progress is not None else None, should_cancel=should_cancel,
        )
        by_coverage = {"basic": truth.by_coverage(comparison.noisy), **by_coverage}
        del comparison
    steps.report(0.9, "measuring the error: marginals")
    true_marginals = {a.name: marginal(matrix, [axis]) for axis, a in enumerate(schema)}
    steps.report(1.0, "measuring the error: done")
    name = "the paper's random workload" if workload is None else workload.name
    return ErrorPreview(release.epsilon, len(truth.workload), truth.sanity, by_coverage, true_marginals, name)


def marginal(matrix: np.ndarray, axes: Sequence[int]) -> np.ndarray:
    """Sum of ``matrix`` over every axis not in ``axes`` (kept in the given order).

    Parameters
    ----------
    matrix : numpy.ndarray
        Any array.
    axes : sequence of int
        The axes to keep, distinct, each in ``0 .. matrix.ndim - 1``.

    Returns
    -------
    numpy.ndarray
        Shape ``[matrix.shape[a] for a in axes]``.
    """
    others = tuple(a for a in range(matrix.ndim) if a not in axes)
    summed = np.sum(matrix, axis=others)
    kept = sorted(axes)
    return np.transpose(summed, [kept.index(a) for a in axes])
