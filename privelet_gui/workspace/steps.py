"""When each step of the app is complete, and what makes the release startable.

Every step's status is computed here from the workspace's own inputs, as structured
records (:class:`StepIssue`: step, attribute, code, message, severity) rather than
strings, so that the app can point at the attribute concerned and tests can assert on
codes. :func:`release_blockers` is the one rule that decides whether a release may start.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from ..engine import InternalError, OrdinalAttribute, PriveletError
from ..formatting import counted, fmt_bytes, fmt_count
from ..io import ColumnSummary
from ..io.project import BEST_STRATEGY

if TYPE_CHECKING:
    from .model import AttributeConfig, Workspace

__all__ = ["MAX_CELLS", "STEPS", "StepIssue", "StepState", "StepStatus", "attribute_issues", "release_blockers", "step_status"]

#: The largest frequency matrix a release is started for (8 bytes a cell, a few copies); the
#: workspace model (which asks these rules) re-exports it.
MAX_CELLS = 1 << 27

StepState = Literal["done", "todo", "warning", "error"]
Severity = Literal["error", "warning"]
STEPS: tuple[str, ...] = ("data", "attributes", "hierarchies", "privacy", "release")


@dataclass(frozen=True)
class StepIssue:
    """One thing a step reports: what, for which attribute (if any), and how serious."""

    step: str
    code: str
    message: str
    severity: Severity = "error"
    attribute: str | None = None


@dataclass(frozen=True)
class StepStatus:
    """A step's state and the line shown for it; ``issues`` are the records behind it."""

    state: StepState
    message: str
    issues: tuple[StepIssue, ...] = ()

    @property
    def complete(self) -> bool:
        return self.state in ("done", "warning")


def _summed(issues: list[StepIssue], done: str) -> StepStatus:
    """Errors first, then warnings, else done; the first message stands for the rest."""
    for severity, state in (("error", "error"), ("warning", "warning")):
        chosen = [i for i in issues if i.severity == severity]
        if chosen:
            more = f" (+{len(chosen) - 1} more)" if len(chosen) > 1 else ""
            return StepStatus(state, chosen[0].message + more, tuple(issues))  # type: ignore[arg-type]
    return StepStatus("done", done, tuple(issues))


def attribute_issues(workspace: Workspace, config: AttributeConfig) -> list[StepIssue]:
    """What stands in the way of counting this attribute (errors) or deserves a look (warnings)."""
    name = config.name
    try:
        attribute = config.to_attribute()
    except PriveletError as exc:
        if config.kind == "nominal":
            return [StepIssue("attributes", "hierarchy", f"{name}: the hierarchy has problems (see the Hierarchies step)",
                              attribute=name)]
        return [StepIssue("attributes", "invalid-domain", str(exc), attribute=name)]
    issues: list[StepIssue] = []
    column = workspace.column_summary(config.column)
    severity: Severity = "warning" if workspace.invalid == "drop" else "error"
    if workspace.summary is not None and column is None:
        issues.append(StepIssue("attributes", "no-column", f"{name}: the table has no column {config.column!r}",
                                attribute=name))
    if column is not None:
        if column.missing and attribute.missing is None and not attribute.drop_missing:
            issues.append(StepIssue(
                "attributes", "missing",
                f"{name}: missing cells ({column.missing_text()}); give them a value of their own or drop their "
                "rows (\"Missing\")",
                severity, name,
            ))
        if isinstance(attribute, OrdinalAttribute):
            issues.extend(_ordinal_issues(config, attribute, column, severity))
    if config.domain_from_data:
        issues.append(StepIssue("attributes", "domain-from-data",
                                f"{name}: the domain was taken from the data, which is not private", "warning", name))
    return issues


def _ordinal_issues(
    config: AttributeConfig, attribute: OrdinalAttribute, column: ColumnSummary, severity: Severity
) -> list[StepIssue]:
    name = config.name
    if attribute.is_numeric:
        if not column.numeric:
            texts = column.non_numbers()
            hint = (
                f"; if {', '.join(map(repr, texts))} mean{'s' if len(texts) == 1 else ''} missing, name "
                f"{'it' if len(texts) == 1 else 'them'} among the values meaning missing"
                if texts else ""
            )
            return [StepIssue("attributes", "text-in-numeric", f"{name}: the column holds text but the domain is "
                              f"numeric; use explicit values or make the attribute nominal{hint}", severity, name)]
        lo, hi = (attribute.bins.lowest, attribute.bins.highest) if attribute.bins else (config.lo, config.hi + 1)
        if column.minimum is None or column.maximum is None:
            raise InternalError(f"{name}: a numeric column summary without a minimum or maximum")
        if column.minimum < lo or column.maximum >= hi:
            if attribute.out_of_range == "error":
                return [StepIssue("attributes", "out-of-range",
                                  f"{name}: the data runs from {_num(column.minimum)} to {_num(column.maximum)}, "
                                  "outside the domain; widen it or set \"Out of range\" to clamp or drop", severity, name)]
            fate = "dropped (the rows)" if attribute.out_of_range == "drop" else "clamped to the first or last value"
            return [StepIssue("attributes", "out-of-range", f"{name}: values outside the domain will be {fate}",
                              "warning", name)]
        return []
    if column.values is not None:
        outside = [v for v in column.values if attribute.position_of(v) is None]
        if outside:
            shown = ", ".join(map(repr, outside[:3])) + (", ..." if len(outside) > 3 else "")
            return [StepIssue("attributes", "values-outside",
                              f"{name}: {counted(len(outside), 'data value')} not in the domain ({shown})", severity, name)]
    return []


def _num(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else f"{x:g}"


def step_status(workspace: Workspace, step: str) -> StepStatus:
    """The status of one of :data:`STEPS`."""
    if step == "data":
        return _data(workspace)
    if step == "attributes":
        return _attributes(workspace)
    if step == "hierarchies":
        return _hierarchies(workspace)
    if step == "privacy":
        return _privacy(workspace)
    if step == "release":
        return _release(workspace)
    raise KeyError(step)


def _data(workspace: Workspace) -> StepStatus:
    if workspace.summary is not None:
        summary = workspace.summary
        return StepStatus("done", f"{summary.path.name}: {summary.rows:,} rows, {len(summary.columns)} columns")
    if workspace.table_error:
        return StepStatus("error", workspace.table_error, (StepIssue("data", "table-error", workspace.table_error),))
    return StepStatus("todo", "open a table (File > Open table)")


def _attributes(workspace: Workspace) -> StepStatus:
    if not workspace.configs:
        return StepStatus("todo", "open a table first")
    included = workspace.included()
    if not included:
        return StepStatus("todo", "include at least one attribute")
    issues: list[StepIssue] = []
    for config in included:
        if config.kind == "nominal" and config.hierarchy is not None and not config.hierarchy.is_valid():
            continue  # reported by the Hierarchies step
        issues.extend(attribute_issues(workspace, config))
    schema = workspace.schema()
    if schema is not None and schema.size > MAX_CELLS:
        issues.append(StepIssue(
            "attributes", "too-many-cells",
            f"the frequency matrix would have {fmt_count(schema.size)} cells ({fmt_bytes(schema.size * 8)}); "
            "exclude attributes or use coarser domains",
        ))
    return _summed(issues, f"{counted(len(included), 'attribute')}, {counted(schema.size, 'cell')}" if schema else "ready")


def _hierarchies(workspace: Workspace) -> StepStatus:
    if not workspace.configs:
        return StepStatus("todo", "open a table first")
    nominal = [c for c in workspace.included() if c.kind == "nominal"]
    bad = [(c, p) for c in nominal if (p := workspace.hierarchy_problems(c))]
    if bad:
        config, problems = bad[0]
        more = f" (and {counted(len(bad) - 1, 'more attribute')})" if len(bad) > 1 else ""
        issues = tuple(
            StepIssue("hierarchies", problem.kind, f"{c.name}: {problem.message}", attribute=c.name)
            for c, found in bad for problem in found
        )
        return StepStatus("error", f"{config.name}: {len(problems):,} problem(s): {problems[0].message}{more}", issues)
    if not workspace.step_status("attributes").complete:
        return StepStatus("todo", "finish the attributes first (Attributes step)")
    if not nominal:
        return StepStatus("done", "no nominal attributes: nothing to edit")
    flat = [
        StepIssue("hierarchies", "flat-from-data", f"{c.name}: a flat hierarchy of the data's values; group them "
                  "(or import a public hierarchy) so that queries can ask for groups", "warning", c.name)
        for c in nominal
        if c.domain_from_data and c.hierarchy is not None and c.hierarchy.is_valid() and c.hierarchy.to_hierarchy().height <= 2
    ]
    return _summed(flat, f"{counted(len(nominal), 'hierarchy', 'hierarchies')} ready")


def _privacy(workspace: Workspace) -> StepStatus:
    if workspace.schema() is None or _earlier_blockers(workspace):
        return StepStatus("todo", "finish the attributes and hierarchies first")
    searches = ((workspace.best_sa_problem(), workspace.best_sa_result),
                (workspace.best_strategy_problem(), workspace.best_strategy_result))
    for problem, result in searches:
        if problem is not None:  # a search still running on the app's worker is no error
            return StepStatus("todo" if result() is None else "error", problem)
    spec = workspace.release_spec()
    if spec is None:
        return StepStatus("todo", "choose privacy settings a release can use")
    if workspace.mechanism == BEST_STRATEGY:
        return StepStatus("done", f"epsilon = {spec.epsilon:g}, the best strategy for the workload ({spec.name})")
    return StepStatus(
        "done", f"epsilon = {spec.epsilon:g}, S_A = {{{', '.join(spec.effective_sa)}}} ({workspace.sa_rule_text().split(':')[0]})"
    )


def _release(workspace: Workspace) -> StepStatus:
    if workspace.outcome is not None:
        return StepStatus("done", f"released in {workspace.outcome.seconds:.1f} s")
    return StepStatus("todo", "run the release")


def release_blockers(workspace: Workspace) -> list[str]:
    """Why a release cannot start now (empty: it can): the data, attributes and hierarchies
    steps must be complete, and under the "best" S_A rule or the best strategy its search must
    have a result."""
    blockers = _earlier_blockers(workspace)
    problem = (workspace.best_sa_problem() or workspace.best_strategy_problem()) if not blockers else None
    return blockers + ([problem] if problem is not None else [])


def _earlier_blockers(workspace: Workspace) -> list[str]:
    return [
        status.message
        for step in STEPS[:3]
        if not (status := workspace.step_status(step)).complete
    ]
