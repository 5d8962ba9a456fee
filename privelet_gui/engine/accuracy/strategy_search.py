"""The strategy that minimises a workload's expected error (docs/math.md, "Choosing strategies").

Every axis is measured by one of its candidate strategies: the identity (S_A), the paper's
wavelet, and hierarchies with least squares (trees of several branchings on an ordinal axis,
the attribute's own hierarchy on a nominal one). A box query's variance is a product over the
axes, so the expected error of any combination comes from per-axis tables
(:func:`~privelet_gui.engine.accuracy.workloads.axis_table`) without ever forming the strategy:
the search tries every combination when there are few, and otherwise improves one axis at a
time from the best of the paper's mechanisms and best S_A until no axis change helps. The
paper's mechanisms are in the search space, so the choice is never worse than any of them.
Asked to, it also learns weighted marginals for a workload of marginals (not a Kronecker product
of axis strategies: :mod:`~privelet_gui.engine.accuracy.marginal_weights`) and takes them when
their exact error is lower.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ..bounds import recommend_sa
from ..errors import SchemaError
from ..model.schema import Attribute, NominalAttribute
from ..progress import CancelCallback, Progress, ProgressCallback
from ..spec import MARGINALS, STRATEGIES, ReleaseSpec
from ..strategies.plan import axis_strategy
from ..strategies.stacked import StackedIdentity
from .marginal_weights import optimised_marginals
from .sa_choice import best_sa
from .workloads import (
    AxisTable,
    Objective,
    ProductPart,
    Workload,
    axis_gram,
    axis_table,
    check_objective,
    combine_tables,
    marginals_expected_error,
    row_weights,
    unit_variance,
)

__all__ = ["BRANCHINGS", "TREE_LIMIT", "StrategyChoice", "axis_candidates", "best_strategy"]

#: The branchings tried for an ordinal axis's tree (each only where it is below the axis's size).
BRANCHINGS = (2, 4, 8, 16, 32)
#: The largest ordinal axis for which trees are tried: their exact variances hold a matrix of
#: (values + 1) x nodes.
TREE_LIMIT = 4096
#: The most combinations tried one by one; beyond it the search goes axis by axis.
EXHAUSTIVE_COMBINATIONS = 4096
#: The largest integer weight a chosen strategy may have in all (the product over its axes), unless
#: one of the paper's mechanisms already has more: a release's exact integer arithmetic holds
#: (rows x this) grid units, so larger weights would refuse tables the paper's mechanisms release.
GROWTH_LIMIT = 1 << 16
#: The largest ordinal axis for which an identity stacked on optimised rows is learned (DPBench's
#: 1-D size; its optimisation and least squares solve systems of its extra rows only, so the cost
#: grows with the axis's size times the square of the rows).
STACKED_LIMIT = 4096
#: The most extra rows a stacked identity learns: HDMM's one per 16 values, up to this many
#: (more rows converge more slowly in the descent's fixed number of steps, and lengthen the name).
STACKED_ROWS = 32


def stacked_rows(size: int) -> int:
    """How many extra rows the stacked identity learned for an axis of ``size`` values has."""
    return min(max(1, size // 16), STACKED_ROWS)


def _with_and_without_root(name: str, levels: int) -> tuple[str, ...]:
    """A tree with every level weighted alike, and the same without its root: the root's count
    is the total, which a query needs only through its complement."""
    return (name, f"{name}/{','.join(['0'] + ['1'] * (levels - 1))}") if levels > 1 else (name,)


def axis_candidates(attribute: Attribute) -> tuple[str, ...]:
    """The strategy names tried for ``attribute`` (see the module docstring).

    Parameters
    ----------
    attribute : Attribute
        An ordinal or nominal attribute.

    Returns
    -------
    tuple of str
        Strategy names (:data:`~privelet_gui.engine.AXIS_STRATEGY_FORMS`): ``("identity",)`` for a
        one-value domain, otherwise the identity, the wavelet, and trees (each with and without its
        root) where they apply.
    """
    if attribute.size == 1:
        return ("identity",)
    if isinstance(attribute, NominalAttribute):
        levels = len(axis_strategy(attribute, "hierarchy").level_weights)  # type: ignore[attr-defined]
        return ("identity", "wavelet", *_with_and_without_root("hierarchy", levels))
    trees: tuple[str, ...] = ()
    if attribute.size <= TREE_LIMIT:
        for b in (b for b in BRANCHINGS if b < attribute.size):
            trees += _with_and_without_root(f"tree-{b}", len(axis_strategy(attribute, f"tree-{b}").level_weights))  # type: ignore[attr-defined]
    return ("identity", "wavelet", *trees)


@dataclass(frozen=True)
class StrategyChoice:
    """The chosen per-axis strategies (:attr:`spec`) and what they were compared with.

    ``error`` is the workload's expected square error under :attr:`spec` (the mean over its
    queries, or its worst query, as ``objective`` says); ``alternatives`` maps each reference
    (``"Privelet+ (recommended S_A)"``, ``"Privelet+ (best S_A)"``, ``"Privelet"``, ``"Basic"``)
    to its spec and error on the same workload.

    Attributes
    ----------
    spec : ReleaseSpec
        The chosen strategies, as a spec of the mechanism ``"strategies"`` (or ``"marginals"``: see
        :func:`best_strategy`).
    error : float
        See above (squared counts).
    objective : {"mean", "worst"}
        What the error is.
    workload : str
        The workload's name.
    exhaustive : bool
        Whether every combination of candidates was tried.
    alternatives : dict of str to (ReleaseSpec, float)
        See above.
    """

    spec: ReleaseSpec
    error: float
    objective: Objective
    workload: str
    exhaustive: bool
    alternatives: dict[str, tuple[ReleaseSpec, float]]

    @property
    def strategies(self) -> tuple[str, ...]:
        return self.spec.axis_strategies

    def gain_over(self, reference: str) -> float:
        """How many times smaller the error is than ``reference``'s.

        Parameters
        ----------
        reference : str
            A key of :attr:`alternatives`.

        Returns
        -------
        float
            The reference's error over the chosen one's (inf when the chosen error is 0).

        Raises
        ------
        KeyError
            ``reference`` is not a key of :attr:`alternatives`.
        """
        other = self.alternatives[reference][1]
        return other / self.error if self.error > 0 else math.inf


def _descend(chosen: list[int], error_of: Callable[[list[int]], float], candidates: list[tuple[str, ...]],
             steps: Progress) -> tuple[list[int], float]:
    """From ``chosen``, the one axis change that lowers the error most, while one does."""
    chosen = list(chosen)
    current = error_of(chosen)
    improved = True
    while improved:
        improved = False
        for axis in range(len(candidates)):
            steps.check()
            trials = [(error_of([*chosen[:axis], c, *chosen[axis + 1:]]), c) for c in range(len(candidates[axis]))]
            value, pick = min(trials)
            if value < current:
                chosen[axis], current, improved = pick, value, True
    return chosen, current


def best_strategy(
    spec: ReleaseSpec,
    workload: Workload,
    *,
    objective: Objective = "mean",
    should_cancel: CancelCallback | None = None,
    progress: ProgressCallback | None = None,
    marginals: bool = False,
) -> StrategyChoice:
    """The per-axis strategies minimising ``workload``'s exact expected error under ``spec``'s
    epsilon, neighbours, public total and sampler (its mechanism, S_A and strategies are
    ignored). ``should_cancel()`` is asked between steps (:class:`~privelet_gui.engine.Cancelled`).

    Parameters
    ----------
    spec : ReleaseSpec
        The release; its epsilon, neighbours, public total and sampler are used.
    workload : Workload
        Queries on ``spec.schema``.
    objective : {"mean", "worst"}, default "mean", keyword-only
        Minimise the average square error, or the worst query's.
    should_cancel : callable ``() -> bool``, optional, keyword-only
        Polled between steps.
    progress : callable ``(fraction, stage)``, optional, keyword-only
        Progress while the per-axis tables are computed.
    marginals : bool, default False, keyword-only
        Also learn weighted marginals for a workload of product parts (marginals;
        docs/math.md, "Choosing marginals") and choose them when their error is lower: the
        spec's mechanism is then ``"marginals"``.

    Returns
    -------
    StrategyChoice

    Raises
    ------
    SchemaError
        The workload is on another schema, or (``"worst"``) lists more than 5,000,000 queries.
    PriveletError
        ``objective`` is neither ``"mean"`` nor ``"worst"``.
    Cancelled
        ``should_cancel()`` returned True.

    Examples
    --------
    >>> from privelet_gui.engine import OrdinalAttribute, Schema, marginals, short_strategy_name
    >>> schema = Schema([OrdinalAttribute.integer_range("age", 0, 255)])
    >>> w = Workload.of_queries(schema, marginals(schema, ways=(1,), grains={"age": 16}).queries())
    >>> choice = best_strategy(ReleaseSpec(schema, 1.0, neighbours="add-remove"), w)
    >>> [short_strategy_name(name) for name in choice.strategies], 12 < choice.gain_over("Privelet") < 14
    (['stacked identity (+16 rows)'], True)
    """
    schema = spec.schema
    if workload.schema != schema:
        raise SchemaError(f"the workload {workload.name!r} is on another schema than the release")
    objective = check_objective(objective)
    average = objective == "mean"
    steps = Progress(progress, should_cancel)
    public = spec.uses_public_total
    unit = unit_variance(spec.epsilon, spec.neighbours)
    weights = row_weights(workload, average=average)
    candidates = [axis_candidates(a) for a in schema]
    tables: list[list[AxisTable]] = []
    growths: list[list[int]] = []  # each candidate's largest integer weight, beside its table
    count = sum(len(c) for c in candidates)
    done = 0
    for axis, names in enumerate(candidates):
        row, growth = [], []
        for name in names:
            steps.report(done / (count + 1), f"the error of {name} on {schema[axis].name}")
            strategy = axis_strategy(schema[axis], name)
            row.append(axis_table(workload, axis, strategy, average=average))
            growth.append(strategy.growth)
            done += 1
        tables.append(row)
        growths.append(growth)

    def growth_of(choice: list[int]) -> int:
        return math.prod(growths[a][c] for a, c in enumerate(choice))

    def error_of(choice: list[int]) -> float:
        if growth_of(choice) > growth_limit:
            return math.inf  # its exact arithmetic would refuse tables the paper's mechanisms take
        values = combine_tables([tables[a][c] for a, c in enumerate(choice)], public)
        return unit * (float(np.dot(weights, values) / weights.sum()) if average else float(values.max()))

    def spec_of(choice: list[int]) -> ReleaseSpec:
        names = tuple(candidates[a][c] for a, c in enumerate(choice))
        return spec.replace(mechanism=STRATEGIES, sa=(), strategies=names, marginals=())

    def paper(sa: tuple[str, ...]) -> list[int]:
        """The candidates of Privelet+ with ``sa`` (an axis of one value has the identity only)."""
        return [candidates[axis].index("identity" if attribute.name in sa else "wavelet") if attribute.size > 1 else 0
                for axis, attribute in enumerate(schema)]

    references = {
        "Privelet+ (recommended S_A)": paper(recommend_sa(schema)),
        "Privelet+ (best S_A)": paper(best_sa(spec, workload, objective=objective, should_cancel=should_cancel).sa),
        "Privelet": paper(()),
        "Basic": paper(schema.names),
    }
    growth_limit = max(GROWTH_LIMIT, *(growth_of(choice) for choice in references.values()))
    reference_errors = {key: error_of(choice) for key, choice in references.items()}
    combinations = math.prod(len(c) for c in candidates)
    exhaustive = combinations <= EXHAUSTIVE_COMBINATIONS
    if exhaustive:
        best, best_error = None, math.inf
        for combination in itertools.product(*[range(len(c)) for c in candidates]):
            steps.check()
            value = error_of(list(combination))
            if value < best_error:
                best, best_error = list(combination), value
        chosen = best if best is not None else references["Basic"]
    else:
        chosen, _ = _descend(list(references[min(reference_errors, key=reference_errors.__getitem__)]),
                             error_of, candidates, steps)
    # An identity stacked on rows learned for this workload, on each small ordinal axis it
    # constrains, each row of the workload weighted by what the other axes' choices give it.
    for axis, attribute in enumerate(schema):
        if isinstance(attribute, NominalAttribute) or not 3 <= attribute.size <= STACKED_LIMIT:
            continue
        if axis not in workload.constrained_axes():
            continue
        steps.report(done / (count + 1), f"learning a strategy for {attribute.name}")
        others = np.prod([tables[b][c].own for b, c in enumerate(chosen) if b != axis], axis=0) * weights
        learned = StackedIdentity.optimised(axis_gram(workload, axis, np.broadcast_to(others, weights.shape),
                                                      average=average), rows=stacked_rows(attribute.size))
        candidates[axis] = (*candidates[axis], learned.name)
        tables[axis].append(axis_table(workload, axis, learned, average=average))
        growths[axis].append(learned.growth)
    chosen, _ = _descend(chosen, error_of, candidates, steps)
    error = error_of(chosen)
    # The sums may differ in the last bits between orders: never report a reference as worse when it is not.
    for key, choice in references.items():
        if reference_errors[key] < error:
            chosen, error = list(choice), reference_errors[key]
    chosen_spec = spec_of(chosen)
    if marginals and all(isinstance(part, ProductPart) for part in workload.parts):
        steps.report(done / (count + 1), "learning weighted marginals")
        weighted = optimised_marginals(workload, public_total=public)
        weighted_error = marginals_expected_error(weighted, workload, epsilon=spec.epsilon, neighbours=spec.neighbours,
                                                  public_total=public, objective=objective)
        if weighted_error < error:
            named = tuple((tuple(schema[a].name for a in subset), weight)
                          for subset, weight in zip(weighted.subsets, weighted.weights))
            chosen_spec = spec.replace(mechanism=MARGINALS, sa=(), strategies=(), marginals=named)
            error = weighted_error
    steps.report(1.0, "strategy chosen")
    alternatives = {key: (spec_of(choice), reference_errors[key]) for key, choice in references.items()}
    return StrategyChoice(chosen_spec, error, objective, workload.name, exhaustive, alternatives)
