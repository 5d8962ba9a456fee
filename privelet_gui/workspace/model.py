"""The app's state without Qt: the table, each column's attribute settings, the privacy
settings and the last release.

:class:`Workspace` holds plain state, turns it into engine objects on demand
(:meth:`Workspace.schema`, :meth:`Workspace.release_spec`), says which steps are complete
(:mod:`privelet_gui.workspace.steps`) and announces changes through plain
:class:`~privelet_gui.workspace.events.Event` objects (``workspace.events.*``). Every user
edit is an undoable :class:`~privelet_gui.workspace.history.Change` on
:attr:`Workspace.history` (hierarchy edits included); the history's clean state is the
"saved" state. The desktop app's document is this class plus Qt signals and a
``QUndoStack`` (:mod:`privelet_gui.gui.document`); tests and scripts use it directly.

>>> from privelet_gui import io as pio
>>> workspace = Workspace()
>>> workspace.set_table(pio.summarize_table(pio.sample_table_path()), schema=pio.load_schema(pio.sample_schema_path()))
>>> workspace.set_epsilon(0.5)
>>> workspace.release_spec().epsilon, workspace.history.can_undo
(0.5, True)
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from ..engine import (
    EPSILON_MAX,
    EPSILON_MIN,
    MARGINALS,
    SAMPLER,
    STRATEGIES,
    Attribute,
    HierarchyError,
    InternalError,
    Neighbours,
    NominalAttribute,
    NumericBins,
    OrdinalAttribute,
    PriveletError,
    ReleaseSpec,
    Sampler,
    SaRule,
    Schema,
    SchemaError,
    StrategyChoice,
    Workload,
    check_epsilon,
    mechanism_name,
    resolve_sa,
)
from ..engine.counting import InvalidPolicy
from ..engine.model.schema import OutOfRange, check_missing_values
from ..formatting import counted
from ..io import ColumnSummary, TableSummary, infer_attribute
from ..io.choices import recorded_sa_rule
from ..io.inference import MISSING_LABEL, free_root_label, infer_numbers, missing_code
from ..io.ledger import BudgetCheck, check_dataset_name, spending_summary
from ..io.project import BEST_STRATEGY, MechanismChoice, Project, WorkloadChoice
from .events import Event
from .history import FieldChange, History, UndoHistory
from .jobs import ReleaseJob, ReleaseOutcome
from .steps import MAX_CELLS, STEPS, attribute_issues, release_blockers, step_status
from .tree import HierarchyTree, Problem, TreeNode, tree_from_json, tree_to_json
from .workload import (
    AdviceKey,
    BestSa,
    CoverageKey,
    ResultCache,
    SearchKey,
    chart_workload,
    find_best_sa,
    find_best_strategy,
    search_seconds,
    workload_descriptions,
)

if TYPE_CHECKING:
    from ..engine import Suggestion

__all__ = [
    "EPSILON_FORMAT_TEXT",
    "MAX_CELLS",
    "MAX_DEFAULT_VALUES",
    "MECHANISM_CHOICE_NAMES",
    "STRATEGY_SEARCH_CANCELLED",
    "AttributeConfig",
    "Workspace",
    "WorkspaceEvents",
    "config_from_attribute",
    "epsilon_text",
    "infer_config",
    "parse_bin_edges",
    "parse_epsilon",
]

Kind = Literal["ordinal", "nominal"]
Mode = Literal["range", "values", "bins"]
MissingChoice = Literal["refuse", "drop", "own", "value"]

#: Columns with more distinct values than this are not included by default.
MAX_DEFAULT_VALUES = 1000
#: The most queries of the custodian's workload a release's error is measured on (each is
#: answered on the true and the noisy tables); a bigger workload is measured on the paper's.
MEASURED_QUERIES = 200_000
#: A switch to nominal starts from a flat tree of the values when there are at most this many.
MAX_TREE_VALUES = 100_000
#: Why nothing is chosen under the best strategy after the custodian cancelled its search (the
#: Privacy step's "Search again" starts it again).
STRATEGY_SEARCH_CANCELLED = "the search for the best strategy was cancelled: choose Search again"
#: Columns are included by default while the matrix has at most this many cells per row of the
#: table (and at most MAX_CELLS): beyond it most cells are empty and the noise swamps them.
DEFAULT_CELLS_PER_ROW = 10
#: ... but a small table may always have this many cells.
DEFAULT_MIN_CELLS = 10_000
#: What the custodian releases with, for people.
MECHANISM_CHOICE_NAMES: dict[str, str] = {
    BEST_STRATEGY: "Best strategy", **{key: mechanism_name(key) for key in ("privelet+", "privelet", "basic")},
}
#: How S_A was chosen, for people.
SA_RULE_TEXT: dict[SaRule, str] = {
    "recommended": "recommended: the attributes with |A| ≤ P(A)² H(A), which never raise the paper's bound",
    "given": "chosen by you",
    "best": "best for the workload: the subset with the smallest expected error of the queries you expect "
            "(it follows the schema and the workload)",
}


@dataclass
class AttributeConfig:
    """The editable settings of one column (changed only through the workspace's history)."""

    column: str
    name: str
    include: bool = True
    kind: Kind = "nominal"
    mode: Mode = "values"
    values: Sequence[object] = ()  # a range when the domain is consecutive integers
    lo: int = 0
    hi: int = 0
    bins: tuple[float, float, float] = (0.0, 1.0, 1.0)  # start, stop, width
    bin_edges: tuple[float, ...] | None = None  # bins between these edges instead (None: equal widths)
    open_below: bool = False  # bins: a first bin for every number below them
    open_above: bool = False  # bins: a last bin for every number from their end on
    out_of_range: OutOfRange = "error"
    missing: str | None = None  # the value missing cells count as (None: they are dropped or refused)
    domain_from_data: bool = False
    hierarchy: HierarchyTree | None = None
    level: int | None = None  # a nominal attribute counted at this level of its hierarchy (None: its leaves)
    note: str = ""
    missing_values: tuple[str, ...] | None = None  # texts meaning missing in this column (None: the table's)
    drop_missing: bool = False  # rows with a missing cell are dropped (and reported)
    missing_at_end: bool = False  # ordinal: ``missing`` is a value of its own after the last

    def to_attribute(self) -> Attribute:
        """The engine attribute (validated by the engine); raises PriveletError."""
        common: dict[str, Any] = {
            "missing": self.missing,
            "column": None if self.column == self.name else self.column,
            "domain_from_data": self.domain_from_data,
            "missing_values": self.missing_values,
            "drop_missing": self.drop_missing,
        }
        if self.kind == "nominal":
            if self.hierarchy is None:
                raise SchemaError(f"attribute {self.name!r} has no hierarchy yet")
            try:
                hierarchy = self.hierarchy.to_hierarchy()
            except HierarchyError as exc:
                raise HierarchyError(f"attribute {self.name!r}: {exc}") from None
            return NominalAttribute(self.name, hierarchy, level=self.level, **common)
        common["missing_at_end"] = self.missing_at_end
        if self.mode == "range":
            return OrdinalAttribute.integer_range(
                self.name, int(self.lo), int(self.hi), out_of_range=self.out_of_range, **common
            )
        if self.mode == "bins":
            return OrdinalAttribute(self.name, bins=self.numeric_bins(), out_of_range=self.out_of_range, **common)
        return OrdinalAttribute(self.name, self.values, out_of_range=self.out_of_range, **common)

    def numeric_bins(self) -> NumericBins:
        """The bins the settings describe (equal widths, or between the given edges; open ends
        as set), checked by the engine; raises PriveletError."""
        if self.bin_edges is not None:
            return NumericBins.from_edges(self.bin_edges, open_below=self.open_below, open_above=self.open_above)
        start, stop, width = self.bins
        return NumericBins(start, stop, width, open_below=self.open_below, open_above=self.open_above)

    def bins_summary(self) -> str:
        """How many bins the settings make, and their first and last labels (or what is wrong)."""
        try:
            bins = self.numeric_bins()
        except PriveletError as exc:
            return f"invalid: {exc}"
        labels = bins.labels(clamped=self.out_of_range == "clamp")
        shown = ", ".join(labels) if len(labels) <= 4 else f"{labels[0]}, {labels[1]}, ..., {labels[-1]}"
        return f"= {counted(len(labels), 'bin')}: {shown}"

    def domain_text(self) -> str:
        """A one-line description of the domain."""
        if self.kind == "nominal":
            if self.hierarchy is None:
                return "no hierarchy"
            text = f"hierarchy of {len(self.hierarchy.leaves()):,} values"
            if self.missing is not None and not self.drop_missing:
                text += f", {self.missing!r} for missing cells"
            return text if self.level is None else f"{text}, counted at level {self.level}"
        own = f", then {self.missing!r} for missing cells" if self.missing_at_end else ""
        if self.mode == "range":
            return f"integers {self.lo} to {self.hi}{own}"
        if self.mode == "bins":
            if self.bin_edges is not None:
                edges = self.bin_edges
                listed = ", ".join(map(_num, edges)) if len(edges) <= 6 else f"{_num(edges[0])}, ..., {_num(edges[-1])}"
                count = len(edges) - 1 + self.open_below + self.open_above
                text = f"{counted(count, 'bin')} at edges {listed}"
            else:
                start, stop, width = self.bins
                text = f"bins of width {_num(width)} from {_num(start)} to {_num(stop)}"
            ends = [end for end, on in (("below", self.open_below), ("above", self.open_above)) if on]
            return text + (f", open {' and '.join(ends)}" if ends else "") + own
        shown = ", ".join(map(str, self.values[:4])) + (", ..." if len(self.values) > 4 else "")
        return f"{len(self.values):,} values: {shown}{own}"


#: What a typed epsilon must look like: the engine's range, and the decimal separator.
EPSILON_FORMAT_TEXT = (
    f"a number from {EPSILON_MIN:g} to {EPSILON_MAX:g}, written with a point as the decimal separator "
    "(0.5, 2, 1e-3)"
)
# A plain decimal number, or one in scientific notation: no sign, no comma, no digit group.
_EPSILON_PATTERN = re.compile(r"(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?")


def parse_epsilon(text: str) -> float:
    """The epsilon ``text`` says, exactly, when the engine accepts it; else a PriveletError
    naming the range and the decimal separator (never another number: ``0,5`` is refused, not
    read as 5).

    >>> parse_epsilon(" 1e-3 "), parse_epsilon("5000")
    (0.001, 5000.0)
    >>> parse_epsilon("0,5")
    Traceback (most recent call last):
    ...
    privelet_gui.engine.errors.PriveletError: epsilon must be a number from 1e-12 to 1e+12, written with a point as the decimal separator (0.5, 2, 1e-3); got '0,5' (a comma is no decimal separator here: 0.5)
    """
    typed = text.strip()
    hint = f" (a comma is no decimal separator here: {typed.replace(',', '.')})" if "," in typed else ""
    refused = PriveletError(f"epsilon must be {EPSILON_FORMAT_TEXT}; got {typed!r}{hint}")
    if not _EPSILON_PATTERN.fullmatch(typed):
        raise refused
    try:
        return check_epsilon(float(typed))
    except (PriveletError, OverflowError):
        raise refused from None


def epsilon_text(epsilon: float) -> str:
    """An epsilon as typed back: the shortest text that reads as exactly this number.

    >>> epsilon_text(0.5), epsilon_text(2.0), epsilon_text(1e-12), epsilon_text(5000.0)
    ('0.5', '2', '1e-12', '5000')
    """
    text = repr(float(epsilon))
    return text[:-2] if text.endswith(".0") else text


def _num(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else f"{x:g}"


#: Equal-width bins are offered as edges to edit when there are at most this many.
MAX_EDITED_EDGES = 100


def parse_bin_edges(text: str) -> tuple[float, ...]:
    """Bin edges as typed: numbers in increasing order, separated by commas, semicolons or
    spaces (``"0, 1, 10000, 50000"``); checked as the engine checks them (raises
    PriveletError naming the problem)."""
    edges: list[float] = []
    typed: list[str] = []
    for item in re.split(r"[,;\s]+", text.strip()):
        if not item:
            continue
        try:
            number = float(item)
        except ValueError:
            raise SchemaError(
                f"{item!r} is not a number: type the bin edges as numbers in increasing order, e.g. 0, 1, 10000, 50000"
            ) from None
        if not math.isfinite(number):
            raise SchemaError(
                f"the edges are finite numbers, not {item!r}: for a bin holding every number below the first edge or "
                "from the last one on, tick \"Open below\" or \"Open above\""
            )
        if edges and number <= edges[-1]:
            raise SchemaError(
                f"the edges must increase, but {item} comes after {typed[-1]}: list them in increasing order, each once"
            )
        edges.append(number)
        typed.append(item)
    if len(edges) < 2:
        raise SchemaError("type at least two edges, the first bin's ends (e.g. 0, 1, 10000, 50000)")
    NumericBins.from_edges(edges)  # exact float64 numbers, not too many bins: else a message saying which
    return tuple(edges)


def _shown_labels(schema: Schema) -> list[dict[str, str]]:
    """Every nominal attribute's display labels (what equality of schemas leaves out)."""
    return [dict(a.hierarchy.display_labels) if isinstance(a, NominalAttribute) else {} for a in schema]


def _flat_tree(labels: Sequence[str], history: History | None, name: str) -> HierarchyTree:
    """A flat hierarchy of ``labels``, as an editable tree (a draft if the labels repeat)."""
    labels = list(dict.fromkeys(str(v) for v in labels))
    root = free_root_label(labels)
    return HierarchyTree(TreeNode(root, True, [TreeNode(v) for v in labels]), history, name=name)


def config_from_attribute(attribute: Attribute, history: History | None) -> AttributeConfig:
    """The configuration that reproduces an engine attribute exactly."""
    config = AttributeConfig(
        column=attribute.source_column,
        name=attribute.name,
        missing=attribute.missing,
        domain_from_data=attribute.domain_from_data,
        missing_values=attribute.missing_values,
        drop_missing=attribute.drop_missing,
    )
    if isinstance(attribute, NominalAttribute):
        # A coarse attribute keeps its whole hierarchy: the table holds the finest values.
        finest = attribute.finest if attribute.finest is not None else attribute.hierarchy
        config.kind = "nominal"
        config.hierarchy = HierarchyTree(finest, history, name=attribute.name)
        config.values = finest.leaves
        config.level = attribute.level
        return config
    config.kind = "ordinal"
    config.out_of_range = attribute.out_of_range
    config.missing_at_end = attribute.missing_at_end
    config.values = attribute.values or attribute.labels  # a range stays a range (it may be huge)
    if attribute.bins is not None:
        bins = attribute.bins
        config.mode = "bins"
        config.open_below, config.open_above = bins.open_below, bins.open_above
        if bins.width is not None:
            config.bins = (bins.start, bins.stop, bins.width)
        else:
            config.bin_edges = bins.edges
            config.bins = (bins.start, bins.stop, bins.stop - bins.start)  # one bin, should equal widths be chosen
    elif attribute.integer_start is not None:
        config.mode = "range"
        config.lo = attribute.integer_start
        config.hi = attribute.integer_start + len(attribute.values) - 1
    else:
        config.mode = "values"
    return config  # a switch to nominal builds a flat tree of the values (Workspace.set_attribute)


def infer_config(column: ColumnSummary, history: History | None = None) -> AttributeConfig:
    """A starting configuration for a column: the domain :func:`~privelet_gui.io.infer_attribute`
    proposes from the data (flagged as not private), and whether to include it by default."""
    values = column.values
    if values is None:
        config = AttributeConfig(column=column.name, name=column.name, domain_from_data=True, include=False)
        config.note = f"more than {column.distinct:,} distinct values: too many for a frequency table"
        config.hierarchy = HierarchyTree(TreeNode("*", True), history, name=column.name)
        return config
    config = config_from_attribute(infer_attribute(column), history)
    if config.kind == "ordinal":
        # The values a switch to "values" starts from are the data's own (a switch to nominal
        # builds its flat tree from them then: Workspace.set_attribute).
        config.values = tuple(values)
    elif (numbers := infer_numbers(column)) is not None:
        # Codes written as numbers: a switch to an ordinal range or bins starts from the numbers'.
        if numbers.bins is not None and numbers.bins.width is not None:
            config.bins = (numbers.bins.start, numbers.bins.stop, numbers.bins.width)
        if column.integer and column.minimum is not None and column.maximum is not None:
            config.lo, config.hi = int(column.minimum), int(column.maximum)
    if not values:
        config.include = False
        config.note = "the column is empty"
    elif config.kind == "nominal" and column.distinct > MAX_DEFAULT_VALUES:
        config.include = False
        config.note = f"{column.distinct:,} distinct values: excluded by default"
    return config


class WorkspaceEvents:
    """What a workspace announces; every edit ends with ``state_changed``."""

    def __init__(self) -> None:
        self.table_changed = Event()
        self.attributes_changed = Event()
        self.privacy_changed = Event()
        self.release_changed = Event()
        self.state_changed = Event()  # after any of the above: step statuses may differ
        self.modified_changed = Event()  # (bool)
        self.project_path_changed = Event()


_PRIVACY_FIELDS = ("epsilon", "sa", "sa_rule", "neighbours", "mechanism", "sampler", "invalid", "workload", "dataset")
#: The noise samplers, for people (the choice in the Privacy step).
SAMPLER_TEXT = {
    "exact": ("Exact (the default)", "discrete Laplace in integer arithmetic from cryptographically secure bits"),
    "standard": ("Standard", "floating-point inversion of the same law (equal to it to about 1e-16)"),
}


def default_cell_budget(rows: int) -> int:
    """The largest matrix the default column selection makes for a table of ``rows`` rows."""
    return min(MAX_CELLS, max(DEFAULT_MIN_CELLS, DEFAULT_CELLS_PER_ROW * rows))


def choose_default_columns(configs: Sequence[AttributeConfig], rows: int) -> None:
    """Include columns in table order while the matrix stays within :func:`default_cell_budget`
    (a column that would exceed it is left out, later smaller ones may still come in); columns
    excluded by inference (too many values, empty) stay out. Says why in each left-out note."""
    budget = default_cell_budget(rows)
    cells = 1
    for config in configs:
        if not config.include:
            continue
        try:
            size = config.to_attribute().size
        except PriveletError:
            config.include = False
            config.note = "its domain is not valid yet"
            continue
        if cells * size > budget:
            config.include = False
            config.note = (
                f"excluded by default: with it the matrix would exceed {budget:,} cells "
                f"({DEFAULT_CELLS_PER_ROW} per row of the table); include it if your users need it"
            )
            continue
        cells *= size



class Workspace:
    """Everything the custodian has set up, and the last release (see the module docstring).

    ``history`` receives every edit: a plain :class:`~privelet_gui.workspace.history.UndoHistory`
    by default, the app's ``QUndoStack`` adapter in the app.
    """

    def __init__(self, *, history: History | None = None) -> None:
        self.history: Any = history if history is not None else UndoHistory()
        self.events = WorkspaceEvents()
        self.summary: TableSummary | None = None
        self.table_path: Path | None = None
        self.table_options: Any = None
        self.table_error: str | None = None
        self.configs: list[AttributeConfig] = []
        self.epsilon = 1.0
        self._sa: tuple[str, ...] = ()
        self.sa_rule: SaRule = "recommended"
        self.neighbours: Neighbours = "replace"
        self.mechanism: MechanismChoice = BEST_STRATEGY
        self.sampler: Sampler = SAMPLER
        self.invalid: InvalidPolicy = "error"
        # the dataset the custodian names: the ledger counts the releases of every file linked to it as one table
        self.dataset: str | None = None
        self.workload = WorkloadChoice()  # the queries the custodian expects (S_A rule "best", the advisor)
        # Searches of the best S_A by key (a result, or why there is none). Searches estimated
        # to take longer than best_sa_inline_seconds are left to the app's worker
        # (store_best_sa); None: every search runs when asked (scripts, tests).
        self._best: ResultCache[SearchKey, BestSa | str] = ResultCache()
        self.best_sa_inline_seconds: float | None = None
        self._last_best_sa: tuple[str, ...] | None = None
        # The best strategies by key (a choice at epsilon 1, or why there is none). The app
        # chooses them on a worker (store_best_strategy) and turns strategy_search_inline off;
        # scripts and tests have them chosen when asked.
        self._strategies: ResultCache[SearchKey, StrategyChoice | str] = ResultCache()
        self.strategy_search_inline = True
        self._strategy_cancelled: SearchKey | None = None  # the settings whose search the custodian cancelled
        self._last_strategies: tuple[str, ...] = ()  # chosen last (what a saved project records)
        self._last_marginals: tuple[tuple[tuple[str, ...], int], ...] = ()  # or the weighted marginals
        self.measure_error = True  # a preference of this session, not part of the project
        self.outcome: ReleaseOutcome | None = None
        self.outcome_saved = False  # the last release was written to a file (release, CSV or Parquet)
        self.outcome_output: Path | None = None  # the file it was written to last
        # What the open table has spent, as the privacy ledger said (the app looks it up on a
        # worker: fingerprinting reads the whole file), or why it could not be looked up.
        self._budget: BudgetCheck | str | None = None
        self._budget_dataset: str | None = None  # the dataset _budget was looked up for
        self.project_path: Path | None = None
        self._dirty = False
        self._modified = False
        self._schema_cache: tuple[Schema | None, str | None] | None = None
        self._status_cache: dict[str, Any] = {}  # step -> StepStatus, until the next change
        self.events.state_changed.connect(self._status_cache.clear)
        self.history.clean_changed.connect(self._update_modified)

    # -- S_A -----------------------------------------------------------------------------------
    @property
    def sa(self) -> tuple[str, ...]:
        """S_A for Privelet+, as :attr:`sa_rule` gives it (:func:`~privelet_gui.engine.resolve_sa`):
        the custodian's own (``"given"``), the recommended S_A of the current schema
        (``"recommended"``), or its best S_A for :attr:`workload` (``"best"``; until that search
        has a result, the last best S_A found, or the recommended one: the release waits for
        the result, see :meth:`best_sa_problem`). A given S_A keeps the names of excluded
        attributes, so that excluding and re-including one restores its choice."""
        key = self.best_sa_key()
        if key is None:
            return self._sa if self.sa_rule == "given" else ()
        rule, best = self.sa_rule, None
        if rule == "best":
            result = self.best_sa_result()
            best = result.sa if isinstance(result, BestSa) else self._last_best_sa
            if best is None:
                rule = "recommended"  # its stand-in until the search has a result
        return resolve_sa(rule, key.spec(), given=self._sa, best=best)

    @sa.setter
    def sa(self, names: tuple[str, ...]) -> None:
        self._sa = tuple(names)

    def sa_rule_text(self) -> str:
        """How S_A was chosen, for people."""
        return SA_RULE_TEXT[self.sa_rule]

    # -- the workload and the best S_A for it -------------------------------------------------
    def best_sa_key(self) -> SearchKey | None:
        """What the best S_A of the current settings depends on (None without a schema)."""
        schema = self.schema()
        if schema is None:
            return None
        try:
            spec = ReleaseSpec(schema, 1.0, "privelet+", (), self.neighbours, invalid=self.invalid)
        except PriveletError:
            return None
        return SearchKey.of(spec, self.workload)

    def best_sa_result(self) -> BestSa | str | None:
        """The best S_A for :attr:`workload` on the current schema, or why there is none (the
        workload cannot be made), or None: no schema yet, or a search the app runs on a worker
        (see :attr:`best_sa_inline_seconds`) has not finished."""
        key = self.best_sa_key()
        if key is None:
            return None
        result = self._best.get(key)
        limit = self.best_sa_inline_seconds
        if result is None and (limit is None or search_seconds(key) <= limit):
            try:
                result = find_best_sa(key)
            except PriveletError as exc:
                result = str(exc)
            self._best.put(key, result)
        if isinstance(result, BestSa):
            self._last_best_sa = result.sa
        return result

    def store_best_sa(self, key: SearchKey, result: BestSa | str) -> None:
        """A search finished on the app's worker: keep it, and announce it if it is current."""
        self._best.put(key, result)
        if key == self.best_sa_key():
            self._privacy_changed()

    def best_sa_problem(self) -> str | None:
        """Why a release must wait under the ``"best"`` rule (None: it need not)."""
        if self.sa_rule != "best" or self.mechanism != "privelet+" or self.schema() is None:
            return None
        result = self.best_sa_result()
        if result is None:
            return "the best S_A for the workload is still being computed"
        if isinstance(result, str):
            return f"no best S_A: {result} (Privacy step; or choose S_A yourself)"
        return None

    def advice_key(self) -> AdviceKey | None:
        """What the advisor's answer for the current settings depends on (None without a schema).
        Under the best strategy the advisor weighs each change with the best strategy for the
        changed schema, as the release would choose it, and starts from the current schema's
        (:meth:`best_strategy_result`) when it is chosen: the app's advisor waits for it."""
        search = self.best_sa_key()
        if search is None:
            return None
        if self.mechanism == BEST_STRATEGY:
            current = self.best_strategy_result()
            if isinstance(current, StrategyChoice):
                return AdviceKey(search, "best", STRATEGIES, strategies=current.strategies,
                                 marginals=current.spec.marginals)
            return AdviceKey(search, "best", STRATEGIES)
        given = tuple(n for n in search.schema.names if n in set(self._sa)) if self.sa_rule == "given" else ()
        return AdviceKey(search, self.sa_rule, self.mechanism, given)

    # -- the best strategy for the workload -----------------------------------------------------
    def best_strategy_result(self) -> StrategyChoice | str | None:
        """The per-axis strategies (or, for a workload of marginals, the weighted marginals) with
        the least expected error on :attr:`workload` at the current settings (as :func:`~privelet_gui.engine.best_strategy` chooses them for
        ``release_spec(mechanism="privelet+")`` and the workload, its errors at the current
        epsilon), or why there is none (the workload cannot be made), or None: no schema yet,
        or a choice the app makes on a worker has not finished. The choice does not depend on
        epsilon (every error scales as ``1 / epsilon^2``): moving epsilon chooses nothing again."""
        key = self.best_sa_key()
        base = self.release_spec(mechanism="privelet+")
        if key is None or base is None:
            return None
        result = self._strategies.get(key)
        if result is None and self.strategy_search_inline:
            try:
                result = find_best_strategy(key)
            except PriveletError as exc:
                result = str(exc)
            self._strategies.put(key, result)
        if not isinstance(result, StrategyChoice):
            return result
        self._last_strategies, self._last_marginals = result.strategies, result.spec.marginals
        scale = 1.0 / self.epsilon**2

        def here(spec: ReleaseSpec) -> ReleaseSpec:
            if spec.mechanism == MARGINALS:
                return base.replace(mechanism=MARGINALS, sa=(), marginals=spec.marginals)
            return base.replace(mechanism=STRATEGIES, sa=(), strategies=spec.axis_strategies)

        try:
            return dataclasses.replace(
                result, spec=here(result.spec), error=result.error * scale,
                alternatives={name: (here(spec), error * scale) for name, (spec, error) in result.alternatives.items()},
            )
        except PriveletError as exc:  # an epsilon these measurements cannot serve: say why
            return str(exc)

    def store_best_strategy(self, key: SearchKey, result: StrategyChoice | str) -> None:
        """A choice of strategies finished on the app's worker: keep it, and announce it if it is current."""
        self._strategies.put(key, result)
        if key == self.best_sa_key():
            self._privacy_changed()

    def cancel_best_strategy(self, key: SearchKey | None) -> None:
        """The app's search of the best strategy for the settings ``key`` was cancelled (None:
        it is searched again): nothing is chosen for them, and until it is the release and the
        Privacy step say so (:meth:`best_strategy_cancelled`) instead of "not chosen yet"."""
        if key != self._strategy_cancelled:
            self._strategy_cancelled = key
            self._privacy_changed()

    def best_strategy_cancelled(self) -> bool:
        """Whether the search of the best strategy for the current settings was cancelled and
        nothing is chosen for them (:meth:`cancel_best_strategy`)."""
        key = self._strategy_cancelled
        return key is not None and key == self.best_sa_key() and self._strategies.get(key) is None

    def best_strategy_problem(self) -> str | None:
        """Why a release must wait under the best strategy (None: it need not)."""
        if self.mechanism != BEST_STRATEGY or self.schema() is None:
            return None
        result = self.best_strategy_result()
        if result is None and self.best_strategy_cancelled():
            return f"{STRATEGY_SEARCH_CANCELLED} (Privacy step), or release with Privelet+, Privelet or Basic"
        if result is None:
            return "the best strategy for the workload is not chosen yet (Privacy step)"
        if isinstance(result, str):
            return f"no best strategy: {result} (Privacy step; or release with Privelet+, Privelet or Basic)"
        return None

    def mechanism_text(self) -> str:
        """What the release is made with, for people."""
        return MECHANISM_CHOICE_NAMES[self.mechanism]

    # -- saved state -------------------------------------------------------------------------
    @property
    def modified(self) -> bool:
        return self._modified

    @property
    def has_unsaved_work(self) -> bool:
        """Whether closing now would lose work (a table's settings, not saved): the app then asks
        before dropping them, and keeps a copy against a crash (:mod:`.recovery`)."""
        return self.modified and bool(self.configs)

    def _update_modified(self, *_: object) -> None:
        modified = self._dirty or not self.history.is_clean()
        if modified != self._modified:
            self._modified = modified
            self.events.modified_changed.emit(modified)

    def mark_saved(self, path: Path | None = None) -> None:
        if path is not None and path != self.project_path:
            self.project_path = path
            self.events.project_path_changed.emit()
        self._dirty = False
        self.history.set_clean()
        self._update_modified()

    def mark_dirty(self) -> None:
        self._dirty = True
        self._update_modified()

    # -- lookups ---------------------------------------------------------------------------------
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
        summary = self.column_summary(column)
        return summary.values if summary is not None else None

    def column_summary(self, column: str) -> ColumnSummary | None:
        """What the column holds, its missing cells counted by the texts meaning missing in it
        (the attribute's own list, else the table's)."""
        summary = self.summary.column(column) if self.summary is not None else None
        config = next((c for c in self.configs if c.column == column), None)
        if summary is not None and config is not None and config.missing_values is not None:
            return summary.with_missing_values(config.missing_values)
        return summary

    def table_missing_values(self) -> tuple[str, ...]:
        """The texts the table's reading options say mean missing (besides empty cells)."""
        return tuple(getattr(self.table_options, "missing_values", ()) or ())

    def missing_choice(self, config: AttributeConfig) -> MissingChoice:
        """What the column's missing cells count as: ``"refuse"`` (the count stops with an
        error), ``"drop"`` their rows, ``"own"`` (a value of their own: an ordinal one after the
        last, or a leaf that the data never holds), or ``"value"`` (one of the data's values)."""
        if config.drop_missing:
            return "drop"
        if config.missing is None:
            return "refuse"
        if config.kind == "ordinal":
            return "own" if config.missing_at_end else "value"
        values = self.data_values(config.column)
        return "own" if values is not None and config.missing not in set(values) else "value"

    def own_missing_code(self, config: AttributeConfig) -> str:
        """The code a value of their own for the column's missing cells has, or would have."""
        return config.missing if config.missing is not None and self.missing_choice(config) == "own" else (
            self._own_missing_code(config)
        )

    def missing_values_of(self, config: AttributeConfig) -> tuple[str, ...]:
        """The texts meaning missing in an attribute's column: its own list, else the table's."""
        return config.missing_values if config.missing_values is not None else self.table_missing_values()

    def trees(self) -> list[HierarchyTree]:
        """Every attribute's editable hierarchy."""
        return [c.hierarchy for c in self.configs if c.hierarchy is not None]

    # -- engine objects --------------------------------------------------------------------------
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
                    schema = Schema([c.to_attribute() for c in included])
                    # The table's texts meaning missing, for attributes that name none of their own:
                    # the schema is then what counting uses (and what an exported schema says).
                    self._schema_cache = (schema.with_default_missing_values(self.table_missing_values()), None)
                except PriveletError as exc:
                    self._schema_cache = (None, str(exc))
        return self._schema_cache

    def release_spec(self, *, mechanism: MechanismChoice | None = None) -> ReleaseSpec | None:
        """The release the settings describe (or, with ``mechanism``, another mechanism at the
        same settings), or None while the schema or epsilon is not valid, or while the best
        strategy is not chosen (:meth:`best_strategy_problem` says why)."""
        chosen = mechanism or self.mechanism
        if chosen == BEST_STRATEGY:
            result = self.best_strategy_result()
            return result.spec if isinstance(result, StrategyChoice) else None
        schema = self.schema()
        if schema is None:
            return None
        sa = tuple(n for n in schema.names if n in set(self.sa))  # S_A keeps excluded names: skip them
        try:
            return ReleaseSpec(
                schema, self.epsilon, chosen, sa, self.neighbours, invalid=self.invalid, sampler=self.sampler,
            )
        except PriveletError:
            return None

    def effective_sa(self) -> tuple[str, ...]:
        """S_A as the release will use it (in axis order; Privelet: none; Basic: all)."""
        spec = self.release_spec()
        return spec.effective_sa if spec is not None else ()

    def recommended_sa(self) -> tuple[str, ...]:
        key = self.best_sa_key()
        return resolve_sa("recommended", key.spec()) if key is not None else ()

    def release_job(self) -> ReleaseJob:
        """A snapshot of the settings for the worker; raises PriveletError if something is missing."""
        if self.table_path is None:
            raise PriveletError("open a table first (File > Open table)")
        blockers = release_blockers(self)
        if blockers:
            raise PriveletError("fix these first: " + "; ".join(blockers))
        spec = self.release_spec()
        if spec is None:
            raise InternalError("no release spec although nothing blocks the release")
        choice: StrategyChoice | None = None
        if self.mechanism == BEST_STRATEGY:
            result = self.best_strategy_result()
            if not isinstance(result, StrategyChoice):
                raise InternalError("a release job was asked for before the best strategy was chosen")
            choice = result
        sa_rule = recorded_sa_rule(self.mechanism, self.sa_rule)
        # a release file records the workload S_A or the strategies were chosen for
        workload = workload_descriptions(self.workload, spec.schema) if sa_rule in (None, "best") else ()
        # measured on the workload the Privacy step's chart of expected error lists, so that the two line up
        measured, _stand_in = chart_workload(self.workload, spec.schema, MEASURED_QUERIES)
        return ReleaseJob(self.table_path, self.table_options, spec, measure_error=self.measure_error,
                          strategy_choice=choice, error_workload=measured,
                          sa_rule=sa_rule, workload=workload, objective=self.workload.objective, dataset=self.dataset)

    def measured_workload(self, schema: Schema) -> Workload | None:
        """The custodian's workload on ``schema``, for the workbench's examples (None: it cannot
        be made, or has more than :data:`MEASURED_QUERIES` queries: the charts of error by query
        size then list the paper's random workload, :func:`~privelet_gui.workspace.workload.chart_workload`)."""
        workload, stand_in = chart_workload(self.workload, schema, MEASURED_QUERIES)
        return None if stand_in is not None else workload

    def coverage_key(self) -> CoverageKey | None:
        """What the chart of expected error by query size (Privacy step) shows, at epsilon 1:
        the custodian's workload (the paper's random one stands in as
        :func:`~privelet_gui.workspace.workload.chart_workload` says, up to
        :data:`MEASURED_QUERIES` queries as a release's measured error), and the releases
        compared: the one these settings make (its spec None while the best strategy is
        being chosen, or when there is none: :meth:`best_strategy_result` says which), then
        Privelet+ with the current S_A and Basic. None without valid settings."""
        plus, basic = self.release_spec(mechanism="privelet+"), self.release_spec(mechanism="basic")
        if plus is None or basic is None:
            return None
        releases: list[tuple[str, ReleaseSpec | None]] = []
        if self.mechanism not in ("privelet+", "basic"):
            mine = self.release_spec()
            try:
                releases.append((self.mechanism, None if mine is None else mine.replace(epsilon=1.0)))
            except PriveletError:  # measurements that cannot serve epsilon 1 (none the search chooses)
                releases.append((self.mechanism, None))
        releases += [("privelet+", plus.replace(epsilon=1.0)), ("basic", basic.replace(epsilon=1.0))]
        return CoverageKey(self.workload, tuple(releases), MEASURED_QUERIES)

    def release_is_stale(self, outcome: ReleaseOutcome | None = None) -> bool:
        """Whether the release (the last one by default) no longer matches the settings."""
        outcome = outcome if outcome is not None else self.outcome
        if outcome is None:
            return False
        spec = self.release_spec()
        released = outcome.release
        return (
            spec is None
            or spec.schema != released.schema
            or abs(spec.epsilon - released.epsilon) > 1e-12
            or spec.neighbours != released.neighbours
            or spec.effective_sa != tuple(released.sa)
            or spec.axis_strategies != released.spec.axis_strategies
            or spec.marginals != released.spec.marginals
            or spec.sampler != released.sampler
            or spec.uses_public_total != released.public_total
            or spec.invalid != outcome.spec.invalid  # the table would be counted otherwise
        )

    # -- steps (rules in workspace/steps.py) ------------------------------------------------------
    def step_statuses(self) -> dict[str, Any]:
        return {step: self.step_status(step) for step in STEPS}

    def step_status(self, step: str) -> Any:
        """The status of ``step`` (computed once per state of the workspace)."""
        if step not in self._status_cache:
            self._status_cache[step] = step_status(self, step)
        return self._status_cache[step]

    def attribute_issues(self, config: AttributeConfig) -> list[tuple[str, str]]:
        return [(issue.severity, issue.message) for issue in attribute_issues(self, config)]

    def hierarchy_problems(self, config: AttributeConfig) -> list[Problem]:
        """What keeps a nominal attribute's hierarchy from counting its column: the tree's own
        problems, data values that are no leaf, and the value missing cells count as when it
        is none (an imported or rebuilt tree need not hold it)."""
        if config.kind != "nominal" or config.hierarchy is None:
            return []
        problems = config.hierarchy.problems(self.data_values(config.column))
        if config.missing is not None and not config.drop_missing and config.hierarchy.missing_values([config.missing]):
            problems.append(Problem(
                "missing",
                f"{config.missing!r}, the value missing cells count as, is not in the hierarchy: add it, or drop "
                "their rows (Attributes step, \"Missing\")",
                None, config.missing,
            ))
        return problems

    def values_missing_from_hierarchy(self, config: AttributeConfig) -> list[str]:
        """The values a nominal attribute's hierarchy must hold and does not, in order: the
        data's, then the value missing cells count as (the one rule behind "add the missing
        values")."""
        if config.kind != "nominal" or config.hierarchy is None:
            return []
        wanted = list(self.data_values(config.column) or ())
        if config.missing is not None and not config.drop_missing and config.missing not in wanted:
            wanted.append(config.missing)
        return config.hierarchy.missing_values(wanted)

    # -- loading ----------------------------------------------------------------------------------
    def reset(self) -> None:
        """An empty workspace (a new project)."""
        self.history.clear()
        self.summary = None
        self.table_path = None
        self.table_options = None
        self.table_error = None
        self.configs = []
        self.epsilon, self.neighbours, self.mechanism, self.invalid = 1.0, "replace", BEST_STRATEGY, "error"
        self.sampler = SAMPLER
        self.dataset = None
        self._budget = None
        self._sa, self.sa_rule, self.workload = (), "recommended", WorkloadChoice()
        self._last_best_sa = None
        self._last_strategies, self._last_marginals = (), ()
        self._strategy_cancelled = None
        self.outcome, self.outcome_saved = None, False
        self.project_path = None
        self._dirty = False
        self._changed_all()
        self.events.project_path_changed.emit()
        self.mark_saved()

    def set_table(
        self, summary: TableSummary, schema: Schema | None = None, project: Project | None = None,
        *, same_project: bool = False,
    ) -> None:
        """Start from a freshly read table: settings from ``project`` (columns of the same name
        keep their settings and hierarchies; data values new to them show up as problems) or
        ``schema``, or inferred. A new table makes a new, unsaved project unless ``same_project``
        (the same table read again, e.g. with other reading options)."""
        self.history.clear()
        self.summary = summary
        self.table_path = summary.path
        self.table_options = summary.options
        self.table_error = None
        self.outcome, self.outcome_saved = None, False
        self._budget = None
        self._last_best_sa = None  # a stand-in from another table's schema would mislead
        self._last_strategies, self._last_marginals = (), ()
        self._strategy_cancelled = None
        if project is not None:
            self._apply_project(project)
        else:
            self.configs = self._build_configs(schema, (), {})
            # A new table starts with the recommended S_A, not the best one for the paper's
            # workload: measured on seven schemas under both neighbouring notions, that one is
            # better on average but worse elsewhere in five of fourteen cases (up to 4.25x on
            # the largest fifth of queries, 11.4x on the smallest, 1.47x on the worst case,
            # 7.5x on 2-way marginals): python -m privelet_gui.accuracy_bench --default-sa.
            self._sa, self.sa_rule, self.workload = (), "recommended", WorkloadChoice()
            if schema is None:
                choose_default_columns(self.configs, summary.rows)
        if not same_project and self.project_path is not None:
            self.project_path = None  # never titled with, or saved over, a project it no longer matches
            self.events.project_path_changed.emit()
        self._dirty = True  # a table read anew is a change to the saved project
        self._changed_all()
        self._update_modified()

    def set_table_error(self, path: Path, message: str) -> None:
        """A table could not be read: keep the settings, report the problem."""
        self.table_path = path
        self.table_error = message
        self.summary = None
        self._budget = None
        self._changed_all()

    def apply_project(self, project: Project, path: Path | None, summary: TableSummary | None) -> None:
        """Open a project (its table already summarised, or None if it could not be read)."""
        self.history.clear()
        self.summary = summary
        self.table_path = project.table_path
        self.table_options = project.table_options if summary is None else summary.options
        self.outcome, self.outcome_saved = None, False
        self._budget = None
        self._last_best_sa = None
        self._apply_project(project)
        self.project_path = path
        self.events.project_path_changed.emit()
        self._changed_all()
        self.mark_saved()

    def _apply_project(self, project: Project) -> None:
        self.configs = self._build_configs(project.schema, project.attribute_order, project.drafts)
        self.epsilon = project.epsilon
        self._sa = project.sa
        self.sa_rule = project.sa_rule
        self.neighbours = project.neighbours
        self.mechanism = project.mechanism
        self._last_strategies, self._last_marginals = project.strategies, project.marginals
        self._strategy_cancelled = None
        self.sampler = project.sampler
        self.dataset = project.dataset
        self.invalid = project.invalid
        self.workload = project.workload
        self._dirty = False

    def _build_configs(
        self, schema: Schema | None, order: Sequence[str], drafts: Mapping[str, Mapping[str, Any]]
    ) -> list[AttributeConfig]:
        from_schema: dict[str, AttributeConfig] = {}
        if schema is not None:
            for attribute in schema:
                from_schema[attribute.name] = config_from_attribute(attribute, self.history)
        for name, draft in drafts.items():
            config = AttributeConfig(column=str(draft.get("column", name)), name=name)
            if "tree" in draft:
                config.kind = "nominal"
                config.hierarchy = HierarchyTree(tree_from_json(dict(draft["tree"])), self.history, name=name)
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
                config = infer_config(column, self.history)
                if schema is not None or drafts:
                    config.include = False  # the schema lists what to release
                configs.append(config)
        for config in configs:
            self._watch(config.hierarchy)
        return configs

    def _watch(self, tree: HierarchyTree | None) -> None:
        if tree is not None:
            tree.edited.connect(self._attributes_changed)

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
        chosen = self._chosen_strategies() if self.mechanism == BEST_STRATEGY else ((), ())
        return Project(
            table_path=self.table_path,
            table_options=self.table_options,
            schema=schema,
            epsilon=self.epsilon,
            sa=tuple(n for n in order if n in set(self.sa)),
            sa_rule=self.sa_rule,
            neighbours=self.neighbours,
            mechanism=self.mechanism,
            strategies=chosen[0],
            marginals=chosen[1],
            sampler=self.sampler,
            dataset=self.dataset,
            invalid=self.invalid,
            attribute_order=tuple(order),
            drafts=drafts,
            workload=self.workload,
        )

    def _chosen_strategies(self) -> tuple[tuple[str, ...], tuple[tuple[tuple[str, ...], int], ...]]:
        """The best per-axis strategies or weighted marginals for the current settings, or those
        chosen last while they are being chosen again (a project records them for reproducibility)."""
        result = self.best_strategy_result()
        if isinstance(result, StrategyChoice):
            return result.strategies, result.spec.marginals
        return self._last_strategies, self._last_marginals

    # -- edits (undoable) ---------------------------------------------------------------------------
    def set_attribute(self, column: str, text: str | None = None, *, merge: str | None = None, **changes: Any) -> None:
        """Change an attribute's settings through the history."""
        config = self.config(column)
        changes = {k: v for k, v in changes.items() if getattr(config, k) != v}
        if not changes:
            return
        own = (
            config.missing if "kind" in changes and "missing_at_end" not in changes
            and self.missing_choice(config) == "own" else None
        )
        if "kind" in changes and own is not None:
            # A value of their own for missing cells stays one: after the last ordinal value, or a leaf.
            changes["missing_at_end"] = changes["kind"] == "ordinal"
        if changes.get("kind") == "nominal" and config.hierarchy is None and "hierarchy" not in changes:
            values = self.data_values(column) or config.values
            # a tree of millions of leaves is no hierarchy anyone edits: start from the root alone
            labels = [str(v) for v in values] if len(values) <= MAX_TREE_VALUES else []
            tree = _flat_tree([*labels, *([own] if own is not None and labels else [])], self.history, config.name)
            self._watch(tree)
            changes["hierarchy"] = tree
        # No edit clears "taken from the data" by itself (see confirm_domain_public): a tree built
        # from the observed values, a range or list edited from the data's own, all still reveal them.
        label = text or f"Change {config.name}: " + ", ".join(sorted(changes))

        def apply(name: str, value: Any) -> None:
            setattr(config, name, value)

        before = {key: getattr(config, key) for key in changes}
        key = None if merge is None else ("attribute", merge, column)
        self.history.push(FieldChange(label, apply, before, changes, merge_key=key, done=self._attributes_changed))

    def set_bin_edges(self, column: str, edges: Sequence[float] | None) -> None:
        """Count the column in bins between ``edges`` (checked first: raises PriveletError and
        changes nothing), or with None in equal-width bins again; one undoable change."""
        config = self.config(column)
        if edges is None:
            self.set_attribute(column, f"{config.name}: bins of equal width", mode="bins", bin_edges=None)
            return
        bins = NumericBins.from_edges(edges, open_below=config.open_below, open_above=config.open_above)
        if bins.edges is None:
            raise InternalError("bins made from edges have no edges")
        self.set_attribute(column, f"{config.name}: bins between {len(bins.edges)} edges", mode="bins",
                           bin_edges=bins.edges)

    def use_bin_edges(self, column: str) -> None:
        """Switch the column's bins to given edges, starting from the equal-width bins' own edges
        (when there are at most :data:`MAX_EDITED_EDGES` of them; else their two ends)."""
        config = self.config(column)
        if config.bin_edges is not None:
            return
        try:
            bins = NumericBins(*config.bins)
        except PriveletError:
            edges: tuple[float, ...] = (0.0, 1.0)
        else:
            edges = tuple(bins.edge(i) for i in range(bins.count + 1)) if bins.count < MAX_EDITED_EDGES else (
                float(bins.start), float(bins.stop))
        self.set_bin_edges(column, edges)

    def confirm_domain_public(self, column: str, text: str | None = None) -> None:
        """The custodian says the column's domain is public knowledge (undoable). With an import
        of a public domain (a hierarchy file, a schema), the only way a domain taken from the
        data loses its flag: no other edit clears it, since a domain derived from the observed
        values (a tree of them, a range or list edited from them) still reveals them."""
        config = self.config(column)
        self.set_attribute(column, text or f"{config.name}: domain confirmed public", domain_from_data=False)

    def include_every_column(self, include: bool = True) -> int:
        """Include (or exclude) every column as one undoable change, announced once (views
        refresh once, not once per column); returns how many columns changed."""
        columns = [c.column for c in self.configs if c.include != include]
        if not columns:
            return 0

        def apply(column: str, value: Any) -> None:
            self.config(column).include = value

        text = "Include every column" if include else "Include no column"
        before = dict.fromkeys(columns, not include)
        self.history.push(FieldChange(text, apply, before, dict.fromkeys(columns, include), done=self._attributes_changed))
        return len(columns)

    def set_missing_values(self, column: str, values: Sequence[str] | None) -> None:
        """Name the texts meaning missing in one column (None: the table's, from its reading
        options); checked like the engine checks them (raises PriveletError)."""
        config = self.config(column)
        if values is not None:
            values = check_missing_values(values, f"column {column!r}")
        what = "the table's" if values is None else ", ".join(map(repr, values)) or "only empty cells"
        self.set_attribute(column, f"{config.name}: missing values {what}", missing_values=values)

    def set_missing(self, column: str, choice: MissingChoice, value: str | None = None) -> None:
        """Say what the column's missing cells count as (one undoable change): ``"refuse"``,
        ``"drop"`` their rows, ``"own"`` value (a value after the last ordinal one, or a leaf of
        the hierarchy, added at the depth of the other leaves), or ``"value"``: the domain's
        value ``value``. An own value is called ``value``, or after the column (see
        :func:`~privelet_gui.io.inference.missing_code`)."""
        config = self.config(column)
        changes: dict[str, Any] = {"drop_missing": choice == "drop", "missing_at_end": False, "missing": None}
        text = f"{config.name}: missing cells "
        if choice == "drop":
            text += "dropped"
        elif choice == "value":
            if value is None:
                raise PriveletError("say which value missing cells count as")
            changes["missing"] = value
            text += f"count as {value!r}"
        elif choice == "own":
            code = value or self._own_missing_code(config)
            changes["missing"] = code
            changes["missing_at_end"] = config.kind == "ordinal"
            text += f"count as a value of their own, {code!r}"
        elif choice == "refuse":
            text += "refused"
        else:
            raise PriveletError(f"missing cells are refused, dropped, their own value or a value, not {choice!r}")
        previous = self.missing_choice(config)
        with self.history.group(text):
            tree = config.hierarchy if config.kind == "nominal" else None
            if tree is not None and previous == "own" and config.missing is not None and changes["missing"] != config.missing:
                # the leaf that was there for missing cells only goes with them
                own_leaf = tree.find(config.missing)
                if own_leaf is not None:
                    tree.remove_branch(own_leaf)
            if choice == "own" and config.kind == "nominal" and config.hierarchy is not None:
                tree = config.hierarchy
                if tree.find(changes["missing"]) is None:
                    if tree.leaf_depth() > 2:
                        tree.add_leaves_at_depth([changes["missing"]])
                    else:
                        tree.add_leaves([changes["missing"]])
            self.set_attribute(column, text, **changes)

    def _own_missing_code(self, config: AttributeConfig) -> str:
        """The code of a value of their own for a column's missing cells (the inference rule),
        kept clear of the domain's values."""
        summary = self.column_summary(config.column)
        code = missing_code(summary) if summary is not None else MISSING_LABEL
        taken: set[str] = set()
        if config.kind == "nominal" and config.hierarchy is not None:
            taken = {n.label for n in config.hierarchy.root.walk()}
        elif config.mode == "values":
            taken = {str(v) for v in config.values}
        base, k = code, 2
        while code in taken:
            code, k = f"{base} ({k})", k + 1
        return code

    def set_privacy(self, text: str | None = None, *, merge: str | None = None, **changes: Any) -> None:
        """Change epsilon, S_A, the neighbouring notion, the mechanism or the counting policy."""
        unknown = set(changes) - set(_PRIVACY_FIELDS)
        if unknown:
            raise TypeError(f"not a privacy setting: {', '.join(sorted(unknown))}")
        if changes.get("sa_rule") == "given":
            changes.setdefault("sa", self.sa)  # a given S_A is stored, even when it equals the recommended one
        before = {k: getattr(self, k) for k in changes}
        keep = {"sa"} if changes.get("sa_rule") == "given" and before.get("sa_rule") != "given" else set()
        changes = {k: v for k, v in changes.items() if before[k] != v or k in keep}
        if not changes:
            return
        label = text or "Change " + ", ".join(sorted(changes))
        before = {k: before[k] for k in changes}
        key = None if merge is None else ("privacy", merge)
        self.history.push(FieldChange(label, self._set_field, before, changes, merge_key=key, done=self._privacy_changed))

    def _set_field(self, name: str, value: Any) -> None:
        setattr(self, name, value)

    def set_epsilon(self, epsilon: float) -> None:
        """Set epsilon (undoable); a PriveletError if the engine would refuse it (see :func:`parse_epsilon`
        for typed text)."""
        epsilon = check_epsilon(epsilon)
        self.set_privacy(f"Set epsilon to {epsilon_text(epsilon)}", merge="epsilon", epsilon=epsilon)

    def set_dataset(self, name: str | None) -> None:
        """Name the dataset this table belongs to (undoable; empty or None: none). The privacy
        ledger then counts the releases of every file of the dataset as one table, and what the
        table has spent is looked up again. A LedgerError names what is wrong with a name."""
        text = (name or "").strip()
        dataset = check_dataset_name(text) if text else None
        self.set_privacy(f"Dataset: {dataset}" if dataset else "No dataset", dataset=dataset)

    def set_sampler(self, sampler: Sampler) -> None:
        """Choose the noise sampler (undoable; checked when the release spec is made)."""
        self.set_privacy(f"Noise sampler: {sampler}", sampler=sampler)

    def set_sa(self, names: Iterable[str]) -> None:
        """Choose S_A (it then stays as chosen whatever the schema)."""
        schema = self.schema()
        order = schema.names if schema is not None else tuple(c.name for c in self.configs)
        wanted = set(names)
        sa = tuple(n for n in order if n in wanted)
        self.set_privacy("Set S_A to {" + ", ".join(sa) + "}", sa=sa, sa_rule="given")

    def use_recommended_sa(self) -> None:
        """Let S_A follow the recommendation for the current schema (see :data:`SA_RULE_TEXT`)."""
        self.set_privacy("Use the recommended S_A", sa_rule="recommended")

    def use_best_sa(self) -> None:
        """Let S_A follow the best subset for the workload as the schema changes."""
        self.set_privacy("Use the best S_A for the workload", sa_rule="best")

    def set_workload(self, choice: WorkloadChoice, text: str | None = None, *, merge: str | None = None) -> None:
        """Change the workload the custodian expects (undoable)."""
        self.set_privacy(text or "Change the workload", merge=merge, workload=choice)

    def apply_suggestion(self, suggestion: Suggestion) -> None:
        """Take one of the advisor's suggestions for the current schema: one undoable change of
        one attribute (excluded, binned, or counted at a hierarchy level). Raises
        PriveletError if it was made for another schema."""
        schema = self.schema()
        config = self.config_by_name(suggestion.attribute)
        if schema is None or config is None or suggestion.attribute not in schema.names:
            raise PriveletError(f"the suggestion is for attribute {suggestion.attribute!r}, which is not included now")
        others = [a for a in schema if a.name != suggestion.attribute]
        if [a for a in suggestion.schema if a.name != suggestion.attribute] != others:
            raise PriveletError("the suggestion was made for other attribute settings; look at the advisor's new ones")
        if suggestion.kind == "drop":
            changes: dict[str, Any] = {"include": False}
        else:
            new = suggestion.schema[suggestion.attribute]
            if isinstance(new, NominalAttribute):
                changes = {"level": new.level}
            else:
                if new.bins is None or new.bins.width is None:
                    raise InternalError("the advisor suggested bins that are not of equal width")
                changes = {"mode": "bins", "bins": (new.bins.start, new.bins.stop, new.bins.width), "bin_edges": None,
                           "open_below": new.bins.open_below, "open_above": new.bins.open_above}
        # Straight through the history, not set_attribute: a domain that still comes from the
        # data (binned edges of an inferred range) keeps its "from the data" warning.
        before: dict[str, Any] = {key: getattr(config, key) for key in changes}
        # The workload keeps its meaning in the same step: blocks of 5 years stay 5 years in bins of 5.
        grain = self.workload.grain(suggestion.attribute)
        if suggestion.kind != "drop" and grain is not None:
            before["workload"] = self.workload
            changes["workload"] = self.workload.with_grain(suggestion.attribute, suggestion.grain_after(grain))

        def apply(name: str, value: Any) -> None:
            setattr(self if name == "workload" else config, name, value)

        def done() -> None:
            self._attributes_changed()
            if "workload" in changes:
                self._privacy_changed()

        label = "Advisor: " + suggestion.description.split(" (")[0]
        self.history.push(FieldChange(label, apply, before, changes, done=done))

    def import_schema(self, schema: Schema, text: str = "Import a schema") -> None:
        """Take every attribute's settings from ``schema`` (undoable): its attributes are
        included, in its order; the table's other columns are kept, excluded."""
        before = {"configs": self.configs}
        configs = self._build_configs(schema, (), {})
        self.history.push(FieldChange(text, self._set_field, before, {"configs": configs}, done=self._attributes_changed))

    def set_release_outcome(self, outcome: ReleaseOutcome | None) -> None:
        self.outcome, self.outcome_saved, self.outcome_output = outcome, False, None
        if outcome is not None and outcome.budget is not None and outcome.spent_after is not None:
            self._budget = dataclasses.replace(outcome.budget, spent=outcome.spent_after)
        self.events.release_changed.emit()
        self.events.state_changed.emit()

    # -- the privacy ledger --------------------------------------------------------------------------
    def release_ledger_text(self) -> str:
        """What the privacy ledger holds of the last release, for the custodian (empty without one)."""
        outcome = self.outcome
        if outcome is None or outcome.ledger_entry is None or outcome.spent_after is None:
            return ""
        saved = (f"saved to {self.outcome_output}" if self.outcome_output is not None
                 else "not saved yet: the ledger notes the file once you save it")
        return (f"Recorded in the privacy ledger (release {outcome.ledger_entry}) as its noise was drawn; this table "
                f"has now spent {spending_summary(outcome.spent_after)}. The release is {saved}.")

    def set_table_budget(self, path: Path, check: BudgetCheck | str, dataset: str | None = None) -> None:
        """What the table at ``path`` (of ``dataset``) has spent (a lookup finished), or why it
        could not be looked up; kept only while ``path`` is the open table and ``dataset`` its dataset."""
        if path != self.table_path or dataset != self.dataset:
            return
        self._budget = check
        self._budget_dataset = dataset
        self.events.state_changed.emit()

    def needs_budget_lookup(self) -> bool:
        """Whether the open table's spending is still to be looked up (also after its dataset changed)."""
        return self.summary is not None and (self._budget is None or self._budget_dataset != self.dataset)

    def budget_check(self) -> BudgetCheck | None:
        """What the open table has spent and what a release at the current settings adds
        (None until looked up)."""
        if not isinstance(self._budget, BudgetCheck):
            return None
        return dataclasses.replace(self._budget, epsilon=float(self.epsilon), neighbours=self.neighbours)

    def spending_text(self) -> str:
        """What the privacy ledger says of the open table before a release at the current
        settings (empty without a table)."""
        if self.summary is None:
            return ""
        if isinstance(self._budget, str):
            return f"cannot look up what this table has spent ({self._budget})."
        check = self.budget_check()
        if check is None:
            return "looking up what this table has spent..."
        if not check.must_ask:
            return f"first release of this table: afterwards it will have spent {check.total_after_text()}."
        return (f"this table has already spent {spending_summary(check.spent)}; a release at these settings "
                f"brings it to {check.total_after_text()} (you are asked before its noise is drawn).")

    def domains_from_data(self) -> list[str]:
        """The included attributes whose domain was taken from the data (not private until
        replaced with a public domain or confirmed public knowledge)."""
        return [c.name for c in self.included() if c.domain_from_data]

    def domains_text(self) -> str:
        """What the release's domains mean for its privacy (empty without attributes)."""
        if self.domains_from_data():
            return f"NOT private: {self.domains_warning()}"
        return "public: every domain was declared or confirmed public knowledge" if self.included() else ""

    def domains_warning(self) -> str:
        """Which domains were taken from the data and what to do (empty if none was)."""
        derived = self.domains_from_data()
        if not derived:
            return ""
        named, rest = (derived[:3], f"{len(derived) - 3} more") if len(derived) > 3 else (derived[:-1], derived[-1])
        shown = f"{', '.join(named)} and {rest}" if named else rest
        one = len(derived) == 1
        return (f"the domain{'' if one else 's'} of {shown} {'was' if one else 'were'} taken from the "
                "data, and a value's mere presence in a domain can reveal a person. Replace "
                f"{'it with a public domain' if one else 'them with public domains'}, or confirm in the Attributes step that "
                f"{'it is' if one else 'they are'} public knowledge.")

    def mark_release_saved(self, path: Path | None = None) -> None:
        """The last release was written to a file (``path``): dropping it loses nothing."""
        self.outcome_saved = True
        if path is not None:
            self.outcome_output = path
        self.events.release_changed.emit()

    def release_at_risk(self) -> bool:
        """Whether a release is held that no file holds yet (dropping it would lose it)."""
        return self.outcome is not None and not self.outcome_saved

    # -- announcements ------------------------------------------------------------------------------
    def _privacy_changed(self) -> None:
        self.events.privacy_changed.emit()
        self.events.state_changed.emit()

    def _attributes_changed(self) -> None:
        self._schema_cache = None
        self._relabel_release()
        self.events.attributes_changed.emit()
        self.events.state_changed.emit()

    def _relabel_release(self) -> None:
        """Display labels are presentation: a held release that still matches the settings
        takes the current labels (its exports show them) instead of going stale, so rewording
        a label never costs another release."""
        outcome = self.outcome
        if outcome is None or self.release_is_stale():
            return
        spec = self.release_spec()
        released = outcome.release.schema
        if spec is None or released is None or _shown_labels(spec.schema) == _shown_labels(released):
            return
        self.outcome = dataclasses.replace(outcome, release=dataclasses.replace(outcome.release, schema=spec.schema))

    def _changed_all(self) -> None:
        self._schema_cache = None
        self.events.table_changed.emit()
        self.events.attributes_changed.emit()
        self.events.privacy_changed.emit()
        self.events.release_changed.emit()
        self.events.state_changed.emit()
