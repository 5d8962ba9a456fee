"""Project files: the whole setup of a release, as versioned JSON (``*.privelet``).

A project holds the table's path and reading options (texts meaning missing included), the schema (attributes with
their domains and hierarchies, written with :func:`schema_to_json`), the privacy
settings (epsilon, S_A and how it was chosen, neighbouring notion, mechanism or "best" with
the strategies or weighted marginals last chosen, noise sampler), the counting policy and the workload the custodian expects users to ask
(:class:`WorkloadChoice`: it chooses S_A under the ``"best"`` rule and guides the
advisor). It never holds data or counts. Hierarchies that are being edited and are not valid
yet (an empty group, a duplicate label) are kept as *drafts* so that nothing the
user did is lost.

The file carries ``"format"`` and ``"version"``; older versions are migrated on
load (Orange3's ``migrate_settings`` habit) and newer ones are refused with a clear
message. Table paths are stored relative to the project file when the table lies
in the same folder tree, so a project folder can be moved as a whole.

Examples
--------
>>> import tempfile, pathlib
>>> from privelet_gui.engine import OrdinalAttribute, Schema
>>> folder = pathlib.Path(tempfile.mkdtemp())
>>> project = Project(table_path=folder / "t.csv",
...                   schema=Schema([OrdinalAttribute.integer_range("age", 0, 99)]), epsilon=0.5)
>>> save_project(project, folder / "p.privelet")
>>> load_project(folder / "p.privelet") == project
True
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, Literal, TypeVar

from .. import __version__
from ..engine import NEIGHBOURS, SA_RULES, SAMPLER, SAMPLERS, Neighbours, Sampler, SaRule, check_epsilon
from ..engine.accuracy.workloads import OBJECTIVES, PAPER_QUERIES
from ..engine.counting import INVALID_POLICIES, InvalidPolicy
from ..engine.errors import PriveletError
from ..engine.model.hierarchy import MAX_DISPLAY_LABEL, MAX_HEIGHT
from ..engine.model.schema import Schema
from ._json import is_finite_number, loads, shown
from .atomic import atomic_write
from .ledger import check_dataset_name
from .schema import schema_from_json, schema_to_json
from .tables import TableOptions

__all__ = [
    "BEST_STRATEGY",
    "MECHANISM_CHOICES",
    "PROJECT_FORMAT",
    "PROJECT_SUFFIX",
    "PROJECT_VERSION",
    "MechanismChoice",
    "Project",
    "ProjectError",
    "WorkloadChoice",
    "load_project",
    "migrate_project",
    "project_from_json",
    "project_to_json",
    "save_project",
]

PROJECT_FORMAT = "privelet-studio-project"
PROJECT_VERSION = 5
PROJECT_SUFFIX = ".privelet"

#: What a project releases with: the per-axis strategies with the least expected error on its
#: workload (chosen again whenever the settings change), or one of the paper's mechanisms.
MechanismChoice = Literal["best", "privelet+", "privelet", "basic"]
BEST_STRATEGY: Final = "best"
MECHANISM_CHOICES: tuple[MechanismChoice, ...] = (BEST_STRATEGY, "privelet+", "privelet", "basic")


class ProjectError(PriveletError):
    """A project file cannot be read (not JSON, not a project, a newer version, bad values)."""


def _whole(value: object, least: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= least


@dataclass(frozen=True)
class WorkloadChoice:
    """The queries the custodian expects users to ask, as parts that are combined (every
    query counted once); the workspace builds the engine's
    :class:`~privelet_gui.engine.Workload` from it for the current schema.

    ``paper``: queries of the paper's random workload (seeded), or None to leave it out.
    ``ways``: every cell of the k-way marginals for each k (1, 2, ...) of ``attributes``
    (empty: every included attribute), each attribute queried at its grain in ``grains``
    (``(name, grain)`` pairs: blocks of that many values for an ordinal attribute, that
    hierarchy level for a nominal one; absent: its finest values). ``files``: workload files
    (:func:`~privelet_gui.io.read_workload`). ``objective``: ``"mean"`` (average square
    error) or ``"worst"`` (the worst query). A choice with no part is valid here and is
    refused when a workload is built from it.
    """

    paper: int | None = PAPER_QUERIES
    ways: tuple[int, ...] = ()
    attributes: tuple[str, ...] = ()
    grains: tuple[tuple[str, int], ...] = ()
    files: tuple[Path, ...] = ()
    objective: str = "mean"

    def __post_init__(self) -> None:
        if self.paper is not None and not _whole(self.paper, 1):
            raise ProjectError(f"the paper's workload needs a whole number of queries (1 or more), got {self.paper!r}")
        ways = tuple(self.ways)
        if not all(_whole(k, 1) for k in ways):
            raise ProjectError(f"marginals are 1-way, 2-way, ...: give whole numbers of 1 or more, got {list(ways)!r}")
        object.__setattr__(self, "ways", tuple(sorted(set(ways))))
        attributes = tuple(self.attributes)
        if not all(isinstance(a, str) and a for a in attributes) or len(set(attributes)) != len(attributes):
            raise ProjectError(f"the marginals' attributes must be distinct attribute names, got {list(attributes)!r}")
        object.__setattr__(self, "attributes", attributes)
        grains = tuple((name, grain) for name, grain in self.grains)
        for name, grain in grains:
            if not isinstance(name, str) or not _whole(grain, 1):
                raise ProjectError(
                    f"a grain is an attribute name and a whole number (a block width or a hierarchy level), got "
                    f"{name!r}: {grain!r}"
                )
        if len({name for name, _ in grains}) != len(grains):
            raise ProjectError("each attribute has at most one grain in the workload")
        object.__setattr__(self, "grains", tuple(sorted(grains)))
        object.__setattr__(self, "files", tuple(Path(f) for f in self.files))
        if self.objective not in OBJECTIVES:
            raise ProjectError(
                f"the objective is 'mean' (average square error) or 'worst' (worst query), got {self.objective!r}"
            )

    @property
    def empty(self) -> bool:
        """Whether no kind of query is chosen."""
        return self.paper is None and not self.ways and not self.files

    def grain(self, name: str) -> int | None:
        """The grain ``name`` is queried at in the marginals (None: its finest values)."""
        return dict(self.grains).get(name)

    def with_grain(self, name: str, grain: int | None) -> WorkloadChoice:
        """A copy with ``name`` queried at ``grain`` (None: at its finest values)."""
        grains = {k: v for k, v in self.grains if k != name}
        if grain is not None:
            grains[name] = grain
        return dataclasses.replace(self, grains=tuple(grains.items()))


@dataclass(frozen=True)
class Project:
    """Everything needed to redo a release, except the data itself.

    ``attribute_order`` lists the included attributes in axis order; it equals
    ``schema.names`` unless some attributes are ``drafts`` (name -> ``{"column": ...,
    "tree": {...}}``: a nominal attribute whose hierarchy is not valid yet; the tree is
    ``{"label": ..., "children": [...]}`` with groups marked by ``children``).
    ``table_options`` is an :class:`~privelet_gui.io.TableOptions` (or None: sniff).
    ``sampler`` is the noise sampler (:data:`~privelet_gui.engine.SAMPLERS`, exact by default).
    ``sa_rule`` says how S_A was chosen (:data:`~privelet_gui.engine.SaRule`); with
    ``"recommended"`` the app keeps it equal to the recommended S_A of the current schema, with
    ``"best"`` equal to the best subset for ``workload`` (``sa`` then records the S_A at saving
    time), with ``"given"`` it is ``sa``, the custodian's. ``mechanism``
    ``"best"`` releases the per-axis strategies with the least expected error on ``workload``
    (or, for a workload of marginals, possibly weighted marginals); ``strategies`` records the
    per-axis strategies chosen at saving time and ``marginals`` the weighted marginals (each
    marginal's attribute names and its positive integer weight), at most one of the two not
    empty (the app chooses them again on opening).
    """

    table_path: Path | None = None
    table_options: Any = None
    schema: Schema | None = None
    epsilon: float = 1.0
    sa: tuple[str, ...] = ()
    sa_rule: SaRule = "given"
    neighbours: Neighbours = "replace"
    mechanism: MechanismChoice = "privelet+"
    sampler: Sampler = SAMPLER
    invalid: InvalidPolicy = "error"
    strategies: tuple[str, ...] = ()
    marginals: tuple[tuple[tuple[str, ...], int], ...] = ()
    dataset: str | None = None
    attribute_order: tuple[str, ...] = ()
    drafts: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    workload: WorkloadChoice = field(default_factory=WorkloadChoice)

    def __post_init__(self) -> None:
        if self.table_path is not None and not isinstance(self.table_path, Path):
            object.__setattr__(self, "table_path", Path(self.table_path))
        object.__setattr__(self, "sa", tuple(self.sa))
        if not self.attribute_order and self.schema is not None:
            object.__setattr__(self, "attribute_order", self.schema.names)
        object.__setattr__(self, "attribute_order", tuple(self.attribute_order))
        try:
            check_epsilon(self.epsilon)
        except PriveletError as exc:
            raise ProjectError(str(exc)) from None
        if self.neighbours not in NEIGHBOURS:
            raise ProjectError(f"neighbours must be one of {NEIGHBOURS}, got {self.neighbours!r}")
        if self.mechanism not in MECHANISM_CHOICES:
            raise ProjectError(f"mechanism must be one of {MECHANISM_CHOICES}, got {self.mechanism!r}")
        object.__setattr__(self, "strategies", tuple(self.strategies))
        if not all(isinstance(name, str) and name for name in self.strategies):
            raise ProjectError(f"the strategies are names, one per attribute, got {list(self.strategies)!r}")
        object.__setattr__(self, "marginals", _checked_marginals(self.marginals))
        if self.strategies and self.marginals:
            raise ProjectError("the best strategy is per-axis strategies or weighted marginals, not both")
        if self.sampler not in SAMPLERS:
            raise ProjectError(f"sampler must be one of {SAMPLERS}, got {self.sampler!r}")
        if self.sa_rule not in SA_RULES:
            raise ProjectError(f"sa_rule must be one of {SA_RULES}, got {self.sa_rule!r}")
        if self.invalid not in INVALID_POLICIES:
            raise ProjectError(f"invalid must be one of {INVALID_POLICIES}, got {self.invalid!r}")
        if not isinstance(self.workload, WorkloadChoice):
            raise ProjectError(f"the workload must be a WorkloadChoice, got {type(self.workload).__name__}")
        known = set(self.attribute_order)
        unknown = [name for name in self.sa if name not in known]
        if unknown:
            raise ProjectError(f"S_A names {', '.join(map(repr, unknown))}, which is not an included attribute")


# -- JSON ---------------------------------------------------------------------------------------


def _options_to_json(options: Any) -> dict[str, Any] | None:
    if options is None:
        return None
    if dataclasses.is_dataclass(options):
        return dataclasses.asdict(options)  # type: ignore[arg-type]
    raise ProjectError(f"table options must be a TableOptions, got {type(options).__name__}")


def _options_from_json(obj: Any) -> Any:
    if obj is None:
        return None
    if not isinstance(obj, Mapping):
        raise ProjectError(f'"table.options" must be an object, got {shown(obj)}')
    names = {f.name for f in dataclasses.fields(TableOptions)}
    try:
        return TableOptions(**{k: v for k, v in obj.items() if k in names})
    except PriveletError as exc:
        raise ProjectError(f'"table.options": {exc}') from None


def _path_to_json(path: Path | None, base_dir: Path | None) -> str | None:
    if path is None:
        return None
    path = Path(path)
    if base_dir is not None and path.is_absolute():
        try:
            return Path(os.path.relpath(path, base_dir)).as_posix() if _inside(path, base_dir) else str(path)
        except ValueError:  # another drive on Windows
            return str(path)
    return path.as_posix() if not path.is_absolute() else str(path)


def _inside(path: Path, folder: Path) -> bool:
    try:
        path.resolve().relative_to(folder.resolve())
    except ValueError:
        return False
    return True


def _path_from_json(text: Any, base_dir: Path | None) -> Path | None:
    if text is None:
        return None
    if not isinstance(text, str) or not text or "\x00" in text:
        raise ProjectError(f'"table.path" must be a file path, got {shown(text)}')
    path = Path(text)
    if not path.is_absolute() and base_dir is not None:
        path = Path(os.path.normpath(base_dir / path))
    return path


def project_to_json(project: Project, base_dir: str | os.PathLike[str] | None = None) -> dict[str, Any]:
    """The JSON object of a project; table paths relative to ``base_dir`` when inside it."""
    base = Path(base_dir) if base_dir is not None else None
    return {
        "format": PROJECT_FORMAT,
        "version": PROJECT_VERSION,
        "saved_by": f"Privelet Studio {__version__}",
        "table": {
            "path": _path_to_json(project.table_path, base),
            "options": _options_to_json(project.table_options),
        },
        "schema": schema_to_json(project.schema) if project.schema is not None else None,
        "attribute_order": list(project.attribute_order),
        "drafts": {name: dict(draft) for name, draft in project.drafts.items()},
        "privacy": {
            "epsilon": project.epsilon,
            "sa": list(project.sa),
            "sa_rule": project.sa_rule,
            "neighbours": project.neighbours,
            "mechanism": project.mechanism,
            "strategies": list(project.strategies),
            "marginals": [{"attributes": list(names), "weight": weight} for names, weight in project.marginals],
            "sampler": project.sampler,
            "dataset": project.dataset,
        },
        "counting": {"invalid": project.invalid},
        "workload": _workload_to_json(project.workload, base),
    }


def _workload_to_json(choice: WorkloadChoice, base: Path | None) -> dict[str, Any]:
    return {
        "paper": choice.paper,
        "marginals": list(choice.ways),
        "attributes": list(choice.attributes),
        "grains": dict(choice.grains),
        "files": [_path_to_json(path, base) for path in choice.files],
        "objective": choice.objective,
    }


def _workload_from_json(obj: Any, base: Path | None) -> WorkloadChoice:
    if not isinstance(obj, Mapping):
        raise ProjectError(f'"workload" must be a JSON object, got {type(obj).__name__}')
    lists = {key: obj.get(key, []) for key in ("marginals", "attributes", "files")}
    for key, value in lists.items():
        if not isinstance(value, list):
            raise ProjectError(f'"workload.{key}" must be a list, got {value!r}')
    grains = obj.get("grains", {})
    if not isinstance(grains, Mapping):
        raise ProjectError(f'"workload.grains" must map attribute names to whole numbers, got {grains!r}')
    files = []
    for text in lists["files"]:
        if not isinstance(text, str) or not text:
            raise ProjectError(f'"workload.files" must list file paths, got {text!r}')
        files.append(_path_from_json(text, base))
    return WorkloadChoice(
        paper=obj.get("paper", PAPER_QUERIES),
        ways=tuple(lists["marginals"]),
        attributes=tuple(lists["attributes"]),
        grains=tuple(grains.items()),
        files=tuple(p for p in files if p is not None),
        objective=obj.get("objective", "mean"),
    )


def _checked_marginals(marginals: Any) -> tuple[tuple[tuple[str, ...], int], ...]:
    """``Project.marginals`` as tuples, each marginal's names and weight checked."""
    checked = []
    for entry in marginals:
        try:
            names, weight = entry
            names = tuple(names)
        except (TypeError, ValueError):
            raise ProjectError(f"each weighted marginal is (attribute names, weight), got {entry!r}") from None
        if not all(isinstance(name, str) and name for name in names) or len(set(names)) != len(names):
            raise ProjectError(f"each weighted marginal names distinct attributes, got {list(names)!r}")
        if isinstance(weight, bool) or not isinstance(weight, int) or weight < 1:
            raise ProjectError(f"each weighted marginal's weight is a positive whole number, got {weight!r}")
        checked.append((names, weight))
    return tuple(checked)


def _marginals_from_json(obj: Any) -> tuple[tuple[tuple[str, ...], int], ...]:
    """``"privacy.marginals"``: a list of ``{"attributes": [names], "weight": n}``."""
    if not isinstance(obj, list):
        raise ProjectError(f'"privacy.marginals" must be a list of weighted marginals, got {shown(obj)}')
    marginals = []
    for index, entry in enumerate(obj):
        where = f'"privacy.marginals[{index}]'
        if not isinstance(entry, Mapping) or set(entry) != {"attributes", "weight"}:
            raise ProjectError(f'{where}" must be an object with "attributes" and "weight" only, got {shown(entry)}')
        names, weight = entry["attributes"], entry["weight"]
        if (not isinstance(names, list) or not all(isinstance(name, str) and name for name in names)
                or len(set(names)) != len(names)):
            raise ProjectError(f'{where}.attributes" must be a list of distinct attribute names, got {shown(names)}')
        if isinstance(weight, bool) or not isinstance(weight, int) or weight < 1:
            raise ProjectError(f'{where}.weight" must be a positive whole number, got {shown(weight)}')
        marginals.append((tuple(names), weight))
    return tuple(marginals)


def migrate_project(obj: Any) -> dict[str, Any]:
    """Bring a project object of any known version to the current one."""
    if not isinstance(obj, Mapping) or obj.get("format") != PROJECT_FORMAT:
        raise ProjectError(
            f'not a Privelet Studio project (expected "format": "{PROJECT_FORMAT}"); '
            "open tables with File > Open table, hierarchies in the Hierarchies step"
        )
    version = obj.get("version")
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        raise ProjectError(f"the project has an invalid version {version!r}; it must be a positive integer")
    if version > PROJECT_VERSION:
        raise ProjectError(
            f"the project was saved by a newer Privelet Studio (format version {version}, this one reads up to "
            f"{PROJECT_VERSION}); update Privelet Studio to open it"
        )
    migrated = dict(obj)
    if version == 1:
        # Version 2 added the workload (S_A rule "best" and the advisor); version 1 projects
        # expected the paper's random workload, the default.
        migrated["workload"] = _workload_to_json(WorkloadChoice(), None)
        migrated["version"] = version = 2
    if version == 2:
        # Version 3 added the noise sampler (projects saved before used the default, exact,
        # one), texts meaning missing in the reading options and display labels in draft trees
        # (a version 2 project has neither: only empty cells are missing). An older Privelet
        # Studio must not open a version 3 project, whose missing texts it would count as values.
        privacy = migrated.get("privacy")
        if isinstance(privacy, Mapping):  # anything else is refused by project_from_json
            migrated["privacy"] = {**privacy, "sampler": SAMPLER}
        migrated["version"] = version = 3
    if version == 3:
        # Version 4 added the mechanism "best" and the strategies it chose; a version 3 project
        # has neither and reads unchanged. An older Privelet Studio must not open a version 4
        # project, which may release with a mechanism it does not have.
        migrated["version"] = version = 4
    if version == 4:
        # Version 5 names the S_A rules as the command line and release files do: the
        # custodian's own S_A is "given" (it was "chosen"). An older Privelet Studio must not
        # open a version 5 project, whose rule it would not know.
        # "privacy.marginals" (the weighted marginals the best strategy chose) came later
        # without a new version: it is a record, chosen again on opening, that a project
        # without it reads as none and an older Privelet Studio may ignore unharmed.
        privacy = migrated.get("privacy")
        if isinstance(privacy, Mapping) and privacy.get("sa_rule", "chosen") == "chosen":
            migrated["privacy"] = {**privacy, "sa_rule": "given"}
        migrated["version"] = 5
    return migrated


def project_from_json(obj: Any, base_dir: str | os.PathLike[str] | None = None) -> Project:
    """Read a project object (see :func:`project_to_json`); relative paths resolve against ``base_dir``.

    Every value is checked here, so that a project that loads also opens in the app: a
    value of the wrong type, an epsilon that is not a positive finite number, a draft tree
    that is not ``{"label": text, "children": [...]}`` (or nests deeper than a hierarchy
    may) is refused with a :class:`ProjectError` naming it.
    """
    obj = migrate_project(obj)
    base = Path(base_dir) if base_dir is not None else None
    table = _section(obj, "table")
    privacy = _section(obj, "privacy")
    counting = _section(obj, "counting")
    schema_obj = obj.get("schema")
    try:
        schema = schema_from_json(schema_obj, base_dir=base) if schema_obj is not None else None
    except PriveletError as exc:
        raise ProjectError(f"the project's schema is invalid: {exc}") from None
    drafts = _drafts({} if obj.get("drafts") is None else obj["drafts"])
    order = obj.get("attribute_order")
    if order is None:
        order = list(schema.names) if schema is not None else []
    _names(order, "attribute_order", unique=True)
    sa = privacy.get("sa", [])
    _names(sa, "privacy.sa", unique=True)
    strategies = privacy.get("strategies", [])
    if not isinstance(strategies, list) or not all(isinstance(name, str) and name for name in strategies):
        raise ProjectError(f'"privacy.strategies" must be a list of strategy names, got {shown(strategies)}')
    marginals = _marginals_from_json(privacy.get("marginals", []))
    if strategies and marginals:
        raise ProjectError('"privacy.strategies" and "privacy.marginals" are both given: the best strategy chose one')
    dataset = privacy.get("dataset")
    if dataset is not None:
        if not isinstance(dataset, str):
            raise ProjectError(f'"privacy.dataset" must be a dataset name or null, got {shown(dataset)}')
        try:
            dataset = check_dataset_name(dataset)
        except PriveletError as exc:
            raise ProjectError(f'"privacy.dataset": {exc}') from None
    epsilon = privacy.get("epsilon", 1.0)
    if isinstance(epsilon, bool) or not isinstance(epsilon, (int, float)) or not is_finite_number(epsilon):
        raise ProjectError(f'"privacy.epsilon" must be a positive number, got {shown(epsilon)}')
    return Project(
        table_path=_path_from_json(table.get("path"), base),
        table_options=_options_from_json(table.get("options")),
        schema=schema,
        epsilon=float(epsilon),
        sa=tuple(sa),
        sa_rule=_choice(privacy, "sa_rule", "given", SA_RULES, "privacy"),
        neighbours=_choice(privacy, "neighbours", "replace", NEIGHBOURS, "privacy"),
        mechanism=_choice(privacy, "mechanism", "privelet+", MECHANISM_CHOICES, "privacy"),
        strategies=tuple(strategies),
        marginals=marginals,
        dataset=dataset,
        sampler=_choice(privacy, "sampler", SAMPLER, SAMPLERS, "privacy"),
        invalid=_choice(counting, "invalid", "error", INVALID_POLICIES, "counting"),
        attribute_order=tuple(order),
        drafts=drafts,
        workload=_workload_from_json(obj.get("workload", {}), base),
    )






def _section(obj: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    value = obj.get(key)
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise ProjectError(f'"{key}" must be a JSON object, got {shown(value)}')
    return value


T = TypeVar("T", bound=str)


def _choice(section: Mapping[str, Any], key: str, default: str, allowed: tuple[T, ...], where: str) -> T:
    value = section.get(key, default)
    for choice in allowed:
        if value == choice:
            return choice
    raise ProjectError(f'"{where}.{key}" must be one of {", ".join(allowed)}, got {shown(value)}')


def _names(value: Any, where: str, *, unique: bool) -> None:
    if not isinstance(value, list) or not all(isinstance(name, str) and name for name in value):
        raise ProjectError(f'"{where}" must be a list of attribute names, got {shown(value)}')
    if unique and len(set(value)) != len(value):
        twice = next(name for name in value if value.count(name) > 1)
        raise ProjectError(f'"{where}" names {twice!r} twice')


_DRAFT_KEYS = ("column", "domain_from_data", "tree", "values")


def _drafts(obj: Any) -> dict[str, dict[str, Any]]:
    """Drafts as the app opens them: name -> {"column": text, "domain_from_data": bool, and
    either "tree" (a nominal attribute's hierarchy being edited) or "values" (an ordinal's)}."""
    if not isinstance(obj, Mapping):
        raise ProjectError(f'"drafts" must map attribute names to drafts, got {shown(obj)}')
    drafts: dict[str, dict[str, Any]] = {}
    for name, draft in obj.items():
        where = f"drafts[{name!r}]"
        if not name or not isinstance(draft, Mapping):
            raise ProjectError(f'{where} must be an object {{"column": ..., "tree": {{...}}}}, got {shown(draft)}')
        unknown = [key for key in draft if key not in _DRAFT_KEYS]
        if unknown:
            raise ProjectError(f"{where} has an unknown key {unknown[0]!r}; a draft has {', '.join(_DRAFT_KEYS)}")
        column = draft.get("column", name)
        if not isinstance(column, str) or not column:
            raise ProjectError(f'{where}.column must be a column name, got {shown(column)}')
        if not isinstance(draft.get("domain_from_data", False), bool):
            raise ProjectError(f"{where}.domain_from_data must be true or false")
        if ("tree" in draft) == ("values" in draft):
            raise ProjectError(f'{where} needs either "tree" (a hierarchy) or "values" (ordered values)')
        if "tree" in draft:
            _check_tree(draft["tree"], where)
        elif not isinstance(draft["values"], list) or not all(isinstance(v, str) for v in draft["values"]):
            raise ProjectError(f"{where}.values must be a list of text values, got {shown(draft['values'])}")
        drafts[name] = dict(draft)
    return drafts


def _check_tree(tree: Any, where: str) -> None:
    """A draft's tree: groups ``{"label": text, "children": [...]}`` and leaves ``{"label": text}``,
    the root a group, at most :data:`~privelet_gui.engine.model.hierarchy.MAX_HEIGHT` levels
    (walked without recursion: a file nested thousands deep is refused, not overflowed)."""
    if not isinstance(tree, Mapping) or "children" not in tree:
        raise ProjectError(f'{where}.tree must be a group {{"label": ..., "children": [...]}}, got {shown(tree)}')
    stack: list[tuple[Any, str, int]] = [(tree, f"{where}.tree", 1)]
    while stack:
        node, path, depth = stack.pop()
        if not isinstance(node, Mapping) or not isinstance(node.get("label"), str) or not node["label"].strip():
            raise ProjectError(f'{path} must be a node {{"label": "non-empty text", ...}}, got {shown(node)}')
        if any(key not in ("label", "display", "children") for key in node):
            raise ProjectError(f'{path} may hold only "label", "display" and "children"')
        display = node.get("display")
        if display is not None and (not isinstance(display, str) or not display.strip() or len(display) > MAX_DISPLAY_LABEL):
            raise ProjectError(
                f"{path}.display must be a display label (non-empty text of at most {MAX_DISPLAY_LABEL:,} "
                f"characters), got {shown(display)}"
            )
        if "children" in node:
            children = node["children"]
            if not isinstance(children, list):
                raise ProjectError(f"{path}.children must be a list of nodes, got {shown(children)}")
            if children and depth >= MAX_HEIGHT:
                raise ProjectError(f"{path} is nested more than {MAX_HEIGHT} levels deep")
            stack.extend((child, f"{path}.children[{i}]", depth + 1) for i, child in enumerate(children))


def save_project(project: Project, path: str | os.PathLike[str], *, force: bool = True) -> None:
    """Write a project file atomically (overwriting by default: saving a project updates it)."""
    target = Path(path)
    text = json.dumps(project_to_json(project, target.parent.absolute()), indent=2, ensure_ascii=False)
    with atomic_write(target, force=force, mode="w", encoding="utf-8") as f:
        f.write(text + "\n")


def load_project(path: str | os.PathLike[str]) -> Project:
    """Read a project file written by :func:`save_project`."""
    source = Path(path)
    try:
        text = source.read_text(encoding="utf-8-sig")  # a byte-order mark, as Windows editors write, is skipped
    except FileNotFoundError:
        raise ProjectError(f"no such project file: {source}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ProjectError(f"cannot read the project file {source}: {exc}") from None
    obj = loads(text, source=str(source), error=ProjectError)
    return project_from_json(obj, source.parent.absolute())
