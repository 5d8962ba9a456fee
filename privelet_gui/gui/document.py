"""The open document: table, attribute settings, privacy settings, last release.

:class:`Document` is the controller the panels share. It holds plain state, turns it
into engine objects on demand (:meth:`Document.schema`), says which steps are complete
(:meth:`Document.step_status`) and announces changes with signals. Every user edit
goes through :attr:`Document.undo_stack` (hierarchy edits included), and the undo
stack's clean state is the "saved" state.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from PySide6.QtCore import QObject, Signal
from PySide6.QtGui import QUndoCommand, QUndoStack

from ..engine import (
    Attribute,
    Hierarchy,
    HierarchyError,
    NominalAttribute,
    NumericBins,
    OrdinalAttribute,
    PriveletError,
    Schema,
    SchemaError,
    recommend_sa,
)
from ..io.project import Project
from ..io.schema import INFER_BINS, INFER_MAX_RANGE
from .jobs import MAX_CELLS, ColumnSummary, ReleaseJob, ReleaseOutcome, TableSummary
from .models.hierarchy_model import HierarchyModel, TreeNode, tree_from_json, tree_to_json

__all__ = ["STEPS", "AttributeConfig", "Document", "StepStatus", "infer_config"]

Kind = Literal["ordinal", "nominal"]
Mode = Literal["range", "values", "bins"]
StepState = Literal["done", "todo", "warning", "error"]
STEPS: tuple[str, ...] = ("data", "attributes", "hierarchies", "privacy", "release")

#: Columns with more distinct values than this are not included by default.
MAX_DEFAULT_VALUES = 1000
#: The value empty cells of a text column count as (the io module's convention).
MISSING_LABEL = "(missing)"


@dataclass
class AttributeConfig:
    """The editable settings of one column (mutated only through undo commands)."""

    column: str
    name: str
    include: bool = True
    kind: Kind = "nominal"
    mode: Mode = "values"
    values: tuple[object, ...] = ()
    lo: int = 0
    hi: int = 0
    bins: tuple[float, float, float] = (0.0, 1.0, 1.0)  # start, stop, width
    out_of_range: str = "error"
    missing: str | None = None
    domain_from_data: bool = False
    hierarchy: HierarchyModel | None = None
    note: str = ""

    def to_attribute(self) -> Attribute:
        """The engine attribute (validated by the engine); raises PriveletError."""
        common: dict[str, Any] = dict(
            missing=self.missing,
            column=None if self.column == self.name else self.column,
            domain_from_data=self.domain_from_data,
        )
        if self.kind == "nominal":
            if self.hierarchy is None:
                raise SchemaError(f"attribute {self.name!r} has no hierarchy yet")
            try:
                hierarchy = self.hierarchy.to_hierarchy()
            except HierarchyError as exc:
                raise HierarchyError(f"attribute {self.name!r}: {exc}") from None
            return NominalAttribute(self.name, hierarchy, **common)
        if self.mode == "range":
            return OrdinalAttribute.integer_range(self.name, int(self.lo), int(self.hi), out_of_range=self.out_of_range, **common)
        if self.mode == "bins":
            start, stop, width = self.bins
            return OrdinalAttribute(self.name, bins=NumericBins(start, stop, width), out_of_range=self.out_of_range, **common)
        return OrdinalAttribute(self.name, self.values, out_of_range=self.out_of_range, **common)

    def domain_text(self) -> str:
        """A one-line description of the domain."""
        if self.kind == "nominal":
            if self.hierarchy is None:
                return "no hierarchy"
            leaves = len(self.hierarchy.leaves())
            return f"hierarchy of {leaves:,} values"
        if self.mode == "range":
            return f"integers {self.lo} to {self.hi}"
        if self.mode == "bins":
            start, stop, width = self.bins
            return f"bins of width {_num(width)} from {_num(start)} to {_num(stop)}"
        shown = ", ".join(map(str, self.values[:4])) + (", ..." if len(self.values) > 4 else "")
        return f"{len(self.values):,} values: {shown}"


def _num(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else f"{x:g}"


def _nice_width(span: float, bins: int = 20) -> float:
    """A round bin width (1, 2 or 5 times a power of ten) giving about ``bins`` bins."""
    if span <= 0:
        return 1.0
    raw = span / bins
    power = 10 ** math.floor(math.log10(raw))
    for step in (1, 2, 5, 10):
        if raw <= step * power:
            return float(step * power)
    return float(10 * power)  # pragma: no cover


def infer_config(column: ColumnSummary, undo_stack: QUndoStack | None = None) -> AttributeConfig:
    """A starting configuration for a column, with its domain taken from the data (flagged).

    The rules follow :func:`privelet_gui.io.infer_schema` (integer ranges up to
    ``INFER_MAX_RANGE`` values, else ``INFER_BINS`` bins; text as a flat hierarchy with a
    ``(missing)`` value for empty cells), but work from the column summary, so the
    table never has to be held in memory.
    """
    config = AttributeConfig(column=column.name, name=column.name, domain_from_data=True)
    values = column.values
    lo, hi = column.minimum, column.maximum
    if column.numeric and lo is not None and hi is not None:
        config.kind = "ordinal"
        if column.integer and hi - lo + 1 <= INFER_MAX_RANGE:
            config.mode, config.lo, config.hi = "range", int(lo), int(hi)
        else:
            config.mode = "bins"
            width = _nice_width(hi - lo, INFER_BINS)
            start = math.floor(lo / width) * width
            stop = (math.floor(hi / width) + 1) * width
            config.bins = (_tidy(start), _tidy(stop), _tidy(width))
    else:
        config.kind = "nominal"
    labels = list(values or ())
    if config.kind == "nominal" and column.missing and labels:
        if MISSING_LABEL not in labels:
            labels.append(MISSING_LABEL)
        config.missing = MISSING_LABEL
    if labels:
        config.values = tuple(labels)
        root = "*" if "*" not in labels else "(all)"
        try:
            config.hierarchy = HierarchyModel(Hierarchy.flat(labels, root=root), undo_stack, name=column.name)
        except HierarchyError:  # e.g. both "*" and "(all)" are values: start from an editable draft
            config.hierarchy = HierarchyModel(TreeNode(root, True, [TreeNode(v) for v in labels]), undo_stack, name=column.name)
    else:
        config.hierarchy = HierarchyModel(TreeNode("*", True), undo_stack, name=column.name)
    size = column.distinct if config.kind == "nominal" else 0
    if values is None:
        config.include = False
        config.note = f"more than {column.distinct:,} distinct values: too many for a frequency table"
    elif not values:
        config.include = False
        config.note = "the column is empty"
    elif size > MAX_DEFAULT_VALUES:
        config.include = False
        config.note = f"{size:,} distinct values: excluded by default"
    return config


def _tidy(x: float) -> int | float:
    """Round away floating-point noise; whole numbers become ints (as in the io module)."""
    rounded = round(float(x), 12)
    return int(rounded) if rounded.is_integer() else rounded


def config_from_attribute(attribute: Attribute, undo_stack: QUndoStack | None) -> AttributeConfig:
    """The configuration that reproduces an engine attribute exactly."""
    config = AttributeConfig(
        column=attribute.source_column,
        name=attribute.name,
        missing=attribute.missing,
        domain_from_data=attribute.domain_from_data,
    )
    if isinstance(attribute, NominalAttribute):
        config.kind = "nominal"
        config.hierarchy = HierarchyModel(attribute.hierarchy, undo_stack, name=attribute.name)
        config.values = attribute.hierarchy.leaves
        return config
    config.kind = "ordinal"
    config.out_of_range = attribute.out_of_range
    config.values = tuple(attribute.values) or attribute.labels
    if attribute.bins is not None:
        config.mode = "bins"
        config.bins = (attribute.bins.start, attribute.bins.stop, attribute.bins.width)
    elif attribute.integer_start is not None:
        config.mode = "range"
        config.lo = attribute.integer_start
        config.hi = attribute.integer_start + attribute.size - 1
    else:
        config.mode = "values"
    config.hierarchy = HierarchyModel(Hierarchy.flat(list(attribute.labels)), undo_stack, name=attribute.name) if len(
        set(attribute.labels)
    ) == len(attribute.labels) and "*" not in attribute.labels else None
    return config


@dataclass(frozen=True)
class StepStatus:
    state: StepState
    message: str

    @property
    def complete(self) -> bool:
        return self.state in ("done", "warning")


# -- undo commands --------------------------------------------------------------------------------


class SetAttributeCommand(QUndoCommand):
    """Change fields of one attribute's settings."""

    ID = 4101

    def __init__(self, doc: Document, column: str, changes: Mapping[str, Any], text: str, merge: str | None = None):
        super().__init__(text)
        self._doc = doc
        self._column = column
        self._changes = dict(changes)
        self._old: dict[str, Any] = {}
        self._merge = merge

    def redo(self) -> None:
        old = self._doc._apply_attribute(self._column, self._changes)
        for key, value in old.items():
            self._old.setdefault(key, value)

    def undo(self) -> None:
        self._doc._apply_attribute(self._column, self._old)

    def id(self) -> int:
        return self.ID if self._merge else -1

    def mergeWith(self, other: QUndoCommand) -> bool:
        if not isinstance(other, SetAttributeCommand) or other._merge != self._merge or other._column != self._column:
            return False
        self._changes.update(other._changes)
        for key, value in other._old.items():
            self._old.setdefault(key, value)
        return True


class SetPrivacyCommand(QUndoCommand):
    """Change epsilon, S_A, the neighbouring notion, the mechanism or the counting policy."""

    ID = 4102

    def __init__(self, doc: Document, changes: Mapping[str, Any], text: str, merge: str | None = None):
        super().__init__(text)
        self._doc = doc
        self._changes = dict(changes)
        self._old: dict[str, Any] = {}
        self._merge = merge

    def redo(self) -> None:
        old = self._doc._apply_privacy(self._changes)
        for key, value in old.items():
            self._old.setdefault(key, value)

    def undo(self) -> None:
        self._doc._apply_privacy(self._old)

    def id(self) -> int:
        return self.ID if self._merge else -1

    def mergeWith(self, other: QUndoCommand) -> bool:
        if not isinstance(other, SetPrivacyCommand) or other._merge != self._merge:
            return False
        self._changes.update(other._changes)
        for key, value in other._old.items():
            self._old.setdefault(key, value)
        if self._changes == self._old:
            self.setObsolete(True)
        return True


# -- the document ---------------------------------------------------------------------------------


class Document(QObject):
    """Everything the user has set up, and the last release."""

    tableChanged = Signal()
    attributesChanged = Signal()
    privacyChanged = Signal()
    releaseChanged = Signal()
    stateChanged = Signal()  # after any of the above: step statuses may differ
    modifiedChanged = Signal(bool)
    projectPathChanged = Signal()

    def __init__(self, parent: QObject | None = None):
        super().__init__(parent)
        self.undo_stack = QUndoStack(self)
        self.summary: TableSummary | None = None
        self.table_path: Path | None = None
        self.table_options: Any = None
        self.table_error: str | None = None
        self.configs: list[AttributeConfig] = []
        self.epsilon = 1.0
        self.sa: tuple[str, ...] = ()
        self.neighbours = "replace"
        self.mechanism = "privelet+"
        self.invalid = "error"
        self.measure_error = True  # a preference of this session, not part of the project
        self.outcome: ReleaseOutcome | None = None
        self.project_path: Path | None = None
        self._dirty = False
        self._schema_cache: tuple[Schema | None, str | None] | None = None
        self._modified = False
        self.undo_stack.cleanChanged.connect(self._update_modified)

    # -- state -------------------------------------------------------------------------------------
    @property
    def modified(self) -> bool:
        return self._modified

    def _update_modified(self, *_: object) -> None:
        modified = self._dirty or not self.undo_stack.isClean()
        if modified != self._modified:
            self._modified = modified
            self.modifiedChanged.emit(modified)

    def mark_saved(self, path: Path | None = None) -> None:
        if path is not None and path != self.project_path:
            self.project_path = path
            self.projectPathChanged.emit()
        self._dirty = False
        self.undo_stack.setClean()
        self._update_modified()

    def mark_dirty(self) -> None:
        self._dirty = True
        self._update_modified()

    def config(self, column: str) -> AttributeConfig:
        for config in self.configs:
            if config.column == column:
                return config
        raise KeyError(column)

    def config_by_name(self, name: str) -> AttributeConfig | None:
        return next((c for c in self.configs if c.name == name), None)

    def included(self) -> list[AttributeConfig]:
        return [c for c in self.configs if c.include]

    def data_values(self, column: str) -> tuple[str, ...] | None:
        """The column's distinct values in the table (None if unknown or too many)."""
        if self.summary is None:
            return None
        summary = self.summary.column(column)
        return summary.values if summary is not None else None

    def column_summary(self, column: str) -> ColumnSummary | None:
        return self.summary.column(column) if self.summary is not None else None

    # -- engine objects -------------------------------------------------------------------------------
    def schema(self) -> Schema | None:
        """The schema of the included attributes, or None (see :meth:`schema_error`)."""
        return self._schema()[0]

    def schema_error(self) -> str | None:
        return self._schema()[1]

    def _schema(self) -> tuple[Schema | None, str | None]:
        if self._schema_cache is None:
            included = self.included()
            if not included:
                self._schema_cache = (None, "include at least one attribute")
            else:
                try:
                    self._schema_cache = (Schema([c.to_attribute() for c in included]), None)
                except PriveletError as exc:
                    self._schema_cache = (None, str(exc))
        return self._schema_cache

    def effective_sa(self) -> tuple[str, ...]:
        """S_A as the release will use it (in axis order; Privelet: none; Basic: all)."""
        schema = self.schema()
        if schema is None:
            return ()
        if self.mechanism == "privelet":
            return ()
        if self.mechanism == "basic":
            return schema.names
        return tuple(n for n in schema.names if n in set(self.sa))

    def recommended_sa(self) -> tuple[str, ...]:
        schema = self.schema()
        return recommend_sa(schema) if schema is not None else ()

    def release_job(self) -> ReleaseJob:
        """A snapshot of the settings for the worker; raises PriveletError if something is missing."""
        if self.table_path is None:
            raise PriveletError("open a table first (File > Open table)")
        blockers = [s.message for key, s in self.step_statuses().items() if key in STEPS[:3] and not s.complete]
        if blockers:
            raise PriveletError("fix these first: " + "; ".join(blockers))
        schema = self.schema()
        assert schema is not None
        return ReleaseJob(
            table_path=self.table_path,
            options=self.table_options,
            schema=schema,
            epsilon=self.epsilon,
            sa=tuple(n for n in schema.names if n in set(self.sa)),
            neighbours=self.neighbours,  # type: ignore[arg-type]
            mechanism=self.mechanism,  # type: ignore[arg-type]
            invalid=self.invalid,  # type: ignore[arg-type]
            measure_error=self.measure_error,
        )

    # -- checks ------------------------------------------------------------------------------------
    def attribute_issues(self, config: AttributeConfig) -> list[tuple[StepState, str]]:
        """What stands in the way of counting this attribute (errors) or deserves a look (warnings)."""
        issues: list[tuple[StepState, str]] = []
        try:
            attribute = config.to_attribute()
        except PriveletError as exc:
            if config.kind == "nominal":
                return [("error", f"{config.name}: the hierarchy has problems (see the Hierarchies step)")]
            return [("error", str(exc))]
        column = self.column_summary(config.column)
        severity: StepState = "warning" if self.invalid == "drop" else "error"
        if self.summary is not None and column is None:
            issues.append(("error", f"{config.name}: the table has no column {config.column!r}"))
        if column is not None:
            if column.missing and attribute.missing is None:
                issues.append(
                    (severity, f"{config.name}: {column.missing:,} empty cell(s); map them to a value of the domain "
                     "(\"Empty cells\") or drop such rows (Release step)")
                )
            if config.kind == "ordinal":
                issues.extend(self._ordinal_issues(config, attribute, column, severity))
        if config.domain_from_data:
            issues.append(("warning", f"{config.name}: the domain was taken from the data, which is not private"))
        return issues

    def _ordinal_issues(
        self, config: AttributeConfig, attribute: Attribute, column: ColumnSummary, severity: StepState
    ) -> list[tuple[StepState, str]]:
        assert isinstance(attribute, OrdinalAttribute)
        if attribute.is_numeric:
            if not column.numeric:
                return [(severity, f"{config.name}: the column holds text but the domain is numeric; "
                         "use explicit values or make the attribute nominal")]
            lo, hi = (attribute.bins.start, attribute.bins.stop) if attribute.bins else (config.lo, config.hi + 1)
            assert column.minimum is not None and column.maximum is not None
            if column.minimum < lo or column.maximum >= hi:
                if attribute.out_of_range == "error":
                    return [(severity, f"{config.name}: the data runs from {_num(column.minimum)} to "
                             f"{_num(column.maximum)}, outside the domain; widen it or set \"Out of range\" to clamp or drop")]
                fate = "dropped (the rows)" if attribute.out_of_range == "drop" else "clamped to the first or last value"
                return [("warning", f"{config.name}: values outside the domain will be {fate}")]
            return []
        if column.values is not None:
            labels = set(attribute.labels)
            outside = [v for v in column.values if v not in labels]
            if outside:
                shown = ", ".join(map(repr, outside[:3])) + (", ..." if len(outside) > 3 else "")
                return [(severity, f"{config.name}: {len(outside):,} data value(s) not in the domain ({shown})")]
        return []

    def hierarchy_problems(self, config: AttributeConfig) -> list[Any]:
        if config.kind != "nominal" or config.hierarchy is None:
            return []
        return config.hierarchy.problems(self.data_values(config.column))

    def step_statuses(self) -> dict[str, StepStatus]:
        return {step: self.step_status(step) for step in STEPS}

    def step_status(self, step: str) -> StepStatus:
        if step == "data":
            if self.summary is not None:
                return StepStatus("done", f"{self.summary.path.name}: {self.summary.rows:,} rows, {len(self.summary.columns)} columns")
            if self.table_error:
                return StepStatus("error", self.table_error)
            return StepStatus("todo", "open a table (File > Open table)")
        if step == "attributes":
            if not self.configs:
                return StepStatus("todo", "open a table first")
            included = self.included()
            if not included:
                return StepStatus("todo", "include at least one attribute")
            errors, warnings = [], []
            for config in included:
                if config.kind == "nominal" and config.hierarchy is not None and not config.hierarchy.is_valid():
                    continue  # reported by the Hierarchies step
                for state, message in self.attribute_issues(config):
                    (errors if state == "error" else warnings).append(message)
            schema = self.schema()
            if schema is not None and schema.size > MAX_CELLS:
                errors.append(
                    f"the frequency matrix would have {schema.size:,} cells ({schema.size * 8 / 2**30:.1f} GB); "
                    "exclude attributes or use coarser domains"
                )
            if errors:
                return StepStatus("error", errors[0] + (f" (+{len(errors) - 1} more)" if len(errors) > 1 else ""))
            if warnings:
                return StepStatus("warning", warnings[0] + (f" (+{len(warnings) - 1} more)" if len(warnings) > 1 else ""))
            return StepStatus("done", f"{len(included)} attribute(s), {schema.size:,} cells" if schema else "ready")
        if step == "hierarchies":
            nominal = [c for c in self.included() if c.kind == "nominal"]
            if not self.configs:
                return StepStatus("todo", "open a table first")
            bad = [(c, self.hierarchy_problems(c)) for c in nominal]
            bad = [(c, p) for c, p in bad if p]
            if bad:
                config, problems = bad[0]
                more = f" (and {len(bad) - 1} more attribute(s))" if len(bad) > 1 else ""
                return StepStatus("error", f"{config.name}: {len(problems):,} problem(s): {problems[0].message}{more}")
            if not nominal:
                return StepStatus("done", "no nominal attributes: nothing to edit")
            return StepStatus("done", f"{len(nominal)} hierarchy(ies) ready")
        if step == "privacy":
            if self.schema() is None:
                return StepStatus("todo", "define the attributes first")
            return StepStatus("done", f"epsilon = {self.epsilon:g}, S_A = {{{', '.join(self.effective_sa())}}}")
        if step == "release":
            if self.outcome is not None:
                return StepStatus("done", f"released in {self.outcome.seconds:.1f} s")
            return StepStatus("todo", "run the release")
        raise KeyError(step)

    # -- loading --------------------------------------------------------------------------------------
    def reset(self) -> None:
        """An empty document (a new project)."""
        self.undo_stack.clear()
        self.summary = None
        self.table_path = None
        self.table_options = None
        self.table_error = None
        self.configs = []
        self.epsilon, self.sa, self.neighbours, self.mechanism, self.invalid = 1.0, (), "replace", "privelet+", "error"
        self.outcome = None
        self.project_path = None
        self._dirty = False
        self._changed_all()
        self.projectPathChanged.emit()
        self.mark_saved()

    def set_table(self, summary: TableSummary, schema: Schema | None = None, project: Project | None = None) -> None:
        """Start from a freshly read table: settings from ``project`` or ``schema``, or inferred."""
        self.undo_stack.clear()
        self.summary = summary
        self.table_path = summary.path
        self.table_options = summary.options
        self.table_error = None
        self.outcome = None
        if project is not None:
            self._apply_project(project)
        else:
            self.configs = self._build_configs(schema, (), {})
            self.sa = tuple(n for n in self.sa if n in schema.names) if schema is not None else ()
        self._dirty = True  # a table read anew is a change to the saved project
        self._changed_all()
        self._update_modified()

    def set_table_error(self, path: Path, message: str) -> None:
        """A table could not be read: keep the settings, report the problem."""
        self.table_path = path
        self.table_error = message
        self.summary = None
        self._changed_all()

    def apply_project(self, project: Project, path: Path | None, summary: TableSummary | None) -> None:
        """Open a project (its table already summarised, or None if it could not be read)."""
        self.undo_stack.clear()
        self.summary = summary
        self.table_path = project.table_path
        self.table_options = project.table_options if summary is None else summary.options
        self.outcome = None
        self._apply_project(project)
        self.project_path = path
        self.projectPathChanged.emit()
        self._changed_all()
        self.mark_saved()

    def _apply_project(self, project: Project) -> None:
        self.configs = self._build_configs(project.schema, project.attribute_order, project.drafts)
        self.epsilon = project.epsilon
        self.sa = project.sa
        self.neighbours = project.neighbours
        self.mechanism = project.mechanism
        self.invalid = project.invalid
        self._dirty = False

    def _build_configs(
        self, schema: Schema | None, order: Sequence[str], drafts: Mapping[str, Mapping[str, Any]]
    ) -> list[AttributeConfig]:
        from_schema: dict[str, AttributeConfig] = {}
        if schema is not None:
            for attribute in schema:
                from_schema[attribute.name] = config_from_attribute(attribute, self.undo_stack)
        for name, draft in drafts.items():
            config = AttributeConfig(column=str(draft.get("column", name)), name=name)
            if "tree" in draft:
                config.kind = "nominal"
                config.hierarchy = HierarchyModel(tree_from_json(dict(draft["tree"])), self.undo_stack, name=name)
            else:
                config.kind, config.mode = "ordinal", "values"
                config.values = tuple(draft.get("values", ()))
            config.domain_from_data = bool(draft.get("domain_from_data", False))
            from_schema[name] = config
        names = list(order) or list(from_schema)
        names += [n for n in from_schema if n not in names]
        configs = [from_schema[n] for n in names if n in from_schema]
        used = {c.column for c in configs}
        if self.summary is not None:
            for column in self.summary.columns:
                if column.name in used:
                    continue
                config = infer_config(column, self.undo_stack)
                if schema is not None or drafts:
                    config.include = False  # the schema lists what to release
                configs.append(config)
        for config in configs:
            if config.hierarchy is not None:
                config.hierarchy.changed.connect(self._on_hierarchy_changed)
        return configs

    def to_project(self) -> Project:
        """The project (what a project file stores) for the current settings."""
        valid: list[Attribute] = []
        drafts: dict[str, dict[str, Any]] = {}
        order: list[str] = []
        for config in self.included():
            order.append(config.name)
            try:
                valid.append(config.to_attribute())
            except PriveletError:
                draft: dict[str, Any] = {"column": config.column, "domain_from_data": config.domain_from_data}
                if config.kind == "nominal" and config.hierarchy is not None:
                    draft["tree"] = tree_to_json(config.hierarchy.root)
                else:
                    draft["values"] = [str(v) for v in config.values]
                drafts[config.name] = draft
        schema = Schema(valid) if valid else None
        return Project(
            table_path=self.table_path,
            table_options=self.table_options,
            schema=schema,
            epsilon=self.epsilon,
            sa=tuple(n for n in order if n in set(self.sa)),
            neighbours=self.neighbours,
            mechanism=self.mechanism,
            invalid=self.invalid,
            attribute_order=tuple(order),
            drafts=drafts,
        )

    # -- edits (undoable) ---------------------------------------------------------------------------
    def set_attribute(self, column: str, text: str | None = None, *, merge: str | None = None, **changes: Any) -> None:
        """Change an attribute's settings through the undo stack."""
        config = self.config(column)
        changes = {k: v for k, v in changes.items() if getattr(config, k) != v}
        if not changes:
            return
        if "kind" in changes and changes["kind"] == "nominal" and config.hierarchy is None and "hierarchy" not in changes:
            labels = [str(v) for v in (self.data_values(column) or config.values)]
            model = HierarchyModel(TreeNode("*", True, [TreeNode(v) for v in dict.fromkeys(labels)]), self.undo_stack, name=config.name)
            model.changed.connect(self._on_hierarchy_changed)
            changes["hierarchy"] = model
        domain_keys = {"mode", "values", "lo", "hi", "bins", "hierarchy"}
        if domain_keys & set(changes) and "domain_from_data" not in changes and config.domain_from_data:
            # A domain the user typed in is theirs: it is no longer "taken from the data".
            changes["domain_from_data"] = False
        label = text or f"Change {config.name}: " + ", ".join(sorted(changes))
        self.undo_stack.push(SetAttributeCommand(self, column, changes, label, merge))

    def set_privacy(self, text: str | None = None, *, merge: str | None = None, **changes: Any) -> None:
        current = {k: getattr(self, k) for k in changes}
        changes = {k: v for k, v in changes.items() if current[k] != v}
        if not changes:
            return
        label = text or "Change " + ", ".join(sorted(changes))
        self.undo_stack.push(SetPrivacyCommand(self, changes, label, merge))

    def set_epsilon(self, epsilon: float) -> None:
        self.set_privacy(f"Set epsilon to {epsilon:g}", merge="epsilon", epsilon=float(epsilon))

    def set_sa(self, names: Iterable[str]) -> None:
        schema = self.schema()
        order = schema.names if schema is not None else tuple(c.name for c in self.configs)
        wanted = set(names)
        sa = tuple(n for n in order if n in wanted)
        self.set_privacy("Set S_A to {" + ", ".join(sa) + "}", sa=sa)

    def set_release_outcome(self, outcome: ReleaseOutcome | None) -> None:
        self.outcome = outcome
        self.releaseChanged.emit()
        self.stateChanged.emit()

    # -- appliers (called by the commands) -------------------------------------------------------
    def _apply_attribute(self, column: str, changes: Mapping[str, Any]) -> dict[str, Any]:
        config = self.config(column)
        old = {key: getattr(config, key) for key in changes}
        for key, value in changes.items():
            setattr(config, key, value)
        # S_A keeps the names of excluded attributes (effective_sa() skips them), so that
        # excluding and re-including an attribute restores its S_A choice.
        self._attributes_changed()
        return old

    def _apply_privacy(self, changes: Mapping[str, Any]) -> dict[str, Any]:
        old = {key: getattr(self, key) for key in changes}
        for key, value in changes.items():
            setattr(self, key, value)
        self.privacyChanged.emit()
        self.stateChanged.emit()
        return old

    def _on_hierarchy_changed(self) -> None:
        self._attributes_changed()

    def _attributes_changed(self) -> None:
        self._schema_cache = None
        self.attributesChanged.emit()
        self.stateChanged.emit()

    def _changed_all(self) -> None:
        self._schema_cache = None
        self.tableChanged.emit()
        self.attributesChanged.emit()
        self.privacyChanged.emit()
        self.releaseChanged.emit()
        self.stateChanged.emit()
