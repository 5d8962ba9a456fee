"""The custodian's choices behind a release, recorded in its file, and the script that redoes it.

A release file's metadata says what the release *is* (epsilon, S_A, the calibration: see
:mod:`~privelet_gui.io.releases`); :class:`ReleaseChoices` adds what is needed to make it again:
where the table and the schema file are, how the table was read, the rows-outside-the-domain
policy, how S_A was chosen (and for which workload). ``privelet release`` and the app both record
them (:func:`choices_metadata`, under ``extra.choices``); :func:`release_choices` reads them back
and :func:`redo_script` turns them into a shell script of ``privelet`` commands.

Where the table and the schema file are is recorded only when the custodian asks
(``privelet release --record-paths``): a path can say more than the custodian means to publish
(issue 11), and a release file may be published. Without them the script names the table and
the schema file as places to fill in, and refuses to run until they are; the app, which knows
where its table is, writes them into its script without recording them in the file. The
release report never prints a path, and CSV and Parquet exports never carry the choices.
"""

from __future__ import annotations

import json
import os
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .. import __version__
from ..engine import MARGINALS, NEIGHBOUR_NAMES, STRATEGIES, PriveletError, ReleaseSpec, SaRule, check_sa_rule
from .atomic import atomic_write
from .project import BEST_STRATEGY
from .releases import load_release_metadata
from .schema import load_schema, schema_to_json

if TYPE_CHECKING:
    from ..engine import StrategyChoice

__all__ = [
    "CHOICES_KEY",
    "STRATEGY_CHOICE_KEY",
    "ReleaseChoices",
    "choices_metadata",
    "marginals_argument",
    "parse_marginals_argument",
    "recorded_sa_rule",
    "redo_arguments",
    "redo_script",
    "release_choices",
    "strategy_choice_record",
    "write_redo_script",
]

#: Where a release file's metadata keeps the choices: ``metadata["extra"][CHOICES_KEY]``.
CHOICES_KEY = "choices"
#: Where a release file's metadata keeps how the best strategy chose every attribute's strategy
#: (``sa_rule`` None): ``metadata["extra"][STRATEGY_CHOICE_KEY]`` (:func:`strategy_choice_record`).
STRATEGY_CHOICE_KEY = "strategy_choice"
#: What earlier release files recorded as ``sa_rule`` for a release of the best strategy; read as
#: None (the best strategy is a mechanism: it chooses every attribute's strategy, not an S_A).
_LEGACY_BEST_STRATEGY = "best-strategy"


@dataclass(frozen=True)
class ReleaseChoices:
    """Everything ``privelet release`` needs to make a release again (see the module docstring).

    ``table`` and ``schema`` are absolute paths (None: the bundled sample with ``demo``; a schema
    known only from the release itself, in the app); ``public_total`` is the spec's (None: the
    default). ``sa_rule`` says how S_A was chosen (:data:`~privelet_gui.engine.SaRule`:
    ``"given"`` also when the custodian named the mechanism, Basic, the strategies or the
    marginals), or is
    None when no S_A was chosen: the best strategy chose every attribute's strategy for the
    workload (:data:`STRATEGY_CHOICE_KEY`). ``workload`` lists the ``--workload`` descriptions S_A
    (``sa_rule`` ``"best"``) or the strategies (None) were chosen for.
    """

    epsilon: float
    mechanism: str
    sa: tuple[str, ...]
    neighbours: str
    sampler: str
    invalid: str
    public_total: bool | None
    table: str | None = None
    schema: str | None = None
    delimiter: str | None = None
    encoding: str = "utf-8"
    header: bool = True
    missing_values: tuple[str, ...] = ()
    dataset: str | None = None
    demo: bool = False
    sa_rule: SaRule | None = "given"
    workload: tuple[str, ...] = ()
    objective: str = "mean"
    strategies: tuple[str, ...] = ()
    marginals: tuple[tuple[tuple[str, ...], int], ...] = ()

    @classmethod
    def of(
        cls,
        spec: ReleaseSpec,
        *,
        table: str | os.PathLike[str] | None,
        schema: str | os.PathLike[str] | None,
        options: Any = None,
        dataset: str | None = None,
        demo: bool = False,
        sa_rule: SaRule | None = "given",
        workload: Sequence[str] = (),
        objective: str = "mean",
    ) -> ReleaseChoices:
        """The choices of a release of ``spec`` from ``table`` read with ``options`` (a
        :class:`~privelet_gui.io.TableOptions`; None: the defaults)."""
        return cls(
            epsilon=float(spec.epsilon), mechanism=spec.label, sa=tuple(spec.effective_sa),
            neighbours=spec.neighbours, sampler=spec.sampler, invalid=spec.invalid, public_total=spec.public_total,
            table=_absolute(table), schema=_absolute(schema),
            delimiter=getattr(options, "delimiter", None), encoding=getattr(options, "encoding", "utf-8"),
            header=bool(getattr(options, "header", True)),
            missing_values=tuple(getattr(options, "missing_values", ()) or ()),
            dataset=dataset, demo=demo, sa_rule=None if sa_rule is None else check_sa_rule(sa_rule),
            workload=tuple(workload), objective=objective,
            strategies=tuple(spec.strategies) if spec.label == STRATEGIES else (),
            marginals=spec.marginals,
        )

    def to_json(self) -> dict[str, Any]:
        out = asdict(self)
        for key in ("sa", "missing_values", "workload", "strategies"):
            out[key] = list(out[key])
        out["marginals"] = [[list(names), weight] for names, weight in self.marginals]
        return out

    @classmethod
    def from_json(cls, obj: object) -> ReleaseChoices:
        """The choices a release file recorded (earlier names of the S_A rules read as today's:
        :data:`~privelet_gui.engine.SA_RULE_ALIASES`, ``"best-strategy"``); a
        PriveletError when they are not what was written."""
        if not isinstance(obj, Mapping):
            raise PriveletError(f"a release's recorded choices are an object, got {type(obj).__name__}")
        fields = dict(obj)
        rule = fields.get("sa_rule", "given")
        fields["sa_rule"] = None if rule is None or rule == _LEGACY_BEST_STRATEGY else check_sa_rule(rule)
        try:
            for key in ("sa", "missing_values", "workload", "strategies"):
                if key in fields:
                    fields[key] = tuple(fields[key])
            fields["marginals"] = tuple((tuple(names), weight) for names, weight in fields.get("marginals", ()))
            choices = cls(**fields)
        except (TypeError, ValueError) as exc:
            raise PriveletError(f"a release's recorded choices cannot be read: {exc}") from None
        marginal_names = [name for names, _ in choices.marginals for name in names]
        if not all(isinstance(name, str) for name in (*choices.sa, *choices.missing_values, *choices.workload,
                                                      *choices.strategies, *marginal_names)):
            raise PriveletError("a release's recorded choices hold a name that is not text")
        return choices


def recorded_sa_rule(mechanism: str, sa_rule: SaRule) -> SaRule | None:
    """How S_A was chosen, as a release file records it (:attr:`ReleaseChoices.sa_rule`), for a
    release of the ``mechanism`` the custodian chose (the app's and ``privelet release``'s:
    ``"best"``, ``"privelet+"``, ``"privelet"``, ``"basic"`` or named ``"strategies"``) with
    S_A by ``sa_rule``: None for the best strategy, which chose every attribute's strategy and
    no S_A; ``sa_rule`` for Privelet+, whose S_A it chose; ``"given"`` for a mechanism the
    custodian named with no S_A to choose.

    >>> recorded_sa_rule("privelet+", "best"), recorded_sa_rule("basic", "best"), recorded_sa_rule("best", "best")
    ('best', 'given', None)
    """
    if mechanism == BEST_STRATEGY:
        return None
    return sa_rule if mechanism == "privelet+" else "given"


def _absolute(path: str | os.PathLike[str] | None) -> str | None:
    return None if path is None else str(Path(path).resolve())


def choices_metadata(
    choices: ReleaseChoices, extra: Mapping[str, Any] | None = None, *, paths: bool = False
) -> dict[str, Any]:
    """``extra`` (a release file's descriptive metadata) with the choices recorded in it; the
    table's and the schema file's paths only with ``paths`` (see the module docstring)."""
    recorded = choices if paths else replace(choices, table=None, schema=None)
    return {**(extra or {}), CHOICES_KEY: recorded.to_json()}


def strategy_choice_record(choice: StrategyChoice) -> dict[str, Any]:
    """What a release file says about how its strategy was chosen (data-free figures only): the
    workload, the objective, the expected error and the alternatives' on the same workload."""
    return {
        "workload": choice.workload,
        "objective": choice.objective,
        "expected_error": choice.error,
        "alternatives": {name: error for name, (_spec, error) in choice.alternatives.items()},
    }


def release_choices(meta: Mapping[str, Any]) -> ReleaseChoices | None:
    """The choices a release file's metadata records (None: a file written before they were)."""
    extra = meta.get("extra")
    if not isinstance(extra, Mapping) or extra.get(CHOICES_KEY) is None:
        return None
    return ReleaseChoices.from_json(extra[CHOICES_KEY])


def redo_arguments(choices: ReleaseChoices, *, table: str = "$TABLE", schema: str = "$SCHEMA") -> list[str]:
    """The ``privelet release`` arguments (after ``release``, before ``--out``) that make the
    release again; ``table`` and ``schema`` stand where the files go (shell variables by default)."""
    args = ["--demo"] if choices.demo else [table, "--schema", schema]
    args += ["--epsilon", repr(choices.epsilon)]
    if choices.mechanism == "basic":
        args += ["--mechanism", "basic"]
    elif choices.mechanism == STRATEGIES:
        args += ["--strategies", ";".join(choices.strategies)]
    elif choices.mechanism == MARGINALS:
        args += ["--mechanism", MARGINALS, "--marginals", marginals_argument(choices.marginals)]
    else:
        args += ["--sa", ",".join(choices.sa) if choices.sa else "none"]
    args += ["--neighbours", choices.neighbours, "--sampler", choices.sampler, "--invalid", choices.invalid]
    if choices.public_total is False and choices.neighbours == "replace":
        args.append("--raw")
    if choices.dataset is not None:
        args += ["--dataset", choices.dataset]
    if not choices.demo:
        if choices.delimiter is not None:
            args += ["--delimiter", "tab" if choices.delimiter == "\t" else choices.delimiter]
        if choices.encoding != "utf-8":
            args += ["--encoding", choices.encoding]
        if not choices.header:
            args.append("--no-header")
        if choices.missing_values:
            args += ["--missing", ",".join(choices.missing_values)]
    return args


def marginals_argument(marginals: Sequence[tuple[Sequence[str], int]]) -> str:
    """Weighted marginals as ``privelet release --marginals`` takes them: each marginal its
    attributes separated by ``,`` and ``=`` its weight, marginals separated by ``;``.

    >>> marginals_argument(((("age", "sex"), 3), (("race",), 1)))
    'age,sex=3;race=1'
    """
    return ";".join(f"{','.join(names)}={weight}" for names, weight in marginals)


def parse_marginals_argument(text: str) -> tuple[tuple[tuple[str, ...], int], ...]:
    """The weighted marginals :func:`marginals_argument` writes (a weight left out is 1); a
    PriveletError saying how to write them otherwise. The names are checked by the spec.

    >>> parse_marginals_argument("age,sex=3; race")
    ((('age', 'sex'), 3), (('race',), 1))
    """
    marginals = []
    for written in text.split(";"):
        names_text, equals, weight_text = written.partition("=")
        names = tuple(name.strip() for name in names_text.split(",") if name.strip())
        try:
            weight = int(weight_text) if equals else 1
        except ValueError:
            weight = 0
        if weight < 1 or (not names and not equals):
            raise PriveletError(
                f"--marginals: {written.strip()!r} is not a marginal; write each as its attributes and a whole "
                "weight of 1 or more, the marginals separated by ';' (e.g. 'age,sex=3;race=1')")
        marginals.append((names, weight))
    return tuple(marginals)


#: What a script holds where the custodian must write a path.
_FILL_IN = "FILL-IN-THE-TABLE-PATH"
#: The line that ends a schema written out by a script (never a line of one-line JSON).
_SCHEMA_END = "PRIVELET_SCHEMA_END"


def redo_script(
    meta: Mapping[str, Any], release_path: str | os.PathLike[str], *, choices: ReleaseChoices | None = None
) -> str:
    """A POSIX shell script of ``privelet`` commands that makes the release whose file
    ``release_path`` has the metadata ``meta`` again: a new release, with fresh noise, that
    spends epsilon again (its first lines say so).

    The schema file recorded is used when it still holds the schema the release was made with;
    otherwise (changed, gone, or never a file: the app) the script writes that schema, taken from
    the release file, beside the new release. Options given to the script go to ``privelet
    release`` (``--yes``, ``--force``, ``--out other.npz``: the last ``--out`` wins). ``choices``
    (default: those the file records) are the app's, which know the table's path.
    """
    choices = choices if choices is not None else release_choices(meta)
    name = Path(release_path).name
    lines = [
        "#!/bin/sh",
        f"# Redo the release {name} (made {meta.get('created', 'at an unknown time')} with privelet-gui "
        f"{meta.get('software_version', '?')}; this script written by {__version__}).",
        "#",
    ]
    if choices is None:
        lines += [
            f"# {name} was written before release files recorded the choices behind them (the table, the",
            "# schema file, how the table was read), so this script cannot redo it. Release the table again",
            "# with 'privelet release TABLE --schema SCHEMA.json' and the epsilon, S_A and neighbours the",
            "# release report gives.",
            "exit 1",
        ]
        return "\n".join(lines) + "\n"
    spends = f"epsilon {choices.epsilon:g} ({NEIGHBOUR_NAMES.get(choices.neighbours, choices.neighbours)})"
    lines += [
        "# THIS MAKES A NEW RELEASE, WITH FRESH NOISE, AND SPENDS THE PRIVACY BUDGET AGAIN:",
        f"# {spends} more on this table. The privacy ledger adds it to what the table has spent",
        "# (and asks first when the table has spent some already; pass --yes to spend without asking).",
        "# Publishing both releases costs the sum of their epsilons. It does not reproduce the old",
        "# noise: nothing can, its key was never stored.",
        "#",
        "# Options given to this script go to 'privelet release' (--yes, --force, --out other.npz).",
        "set -eu",
    ]
    if meta.get("seeded"):
        lines.insert(3, "# The release redone was a SEEDED TEST RELEASE; this one draws private noise (no --seed).")
    if choices.demo:
        lines.append("# the bundled UCI Adult sample and its schema (privelet release --demo)")
    else:
        if choices.table is None:
            lines += [
                "# The release file does not record where its table is ('privelet release --record-paths' does):",
                "# write the table's path here.",
                f"TABLE={_FILL_IN}",
            ]
        else:
            found = Path(choices.table).exists()
            lines.append(f"TABLE={shlex.quote(choices.table)}"
                         + ("" if found else "  # not found when this script was written: edit it"))
        lines += _schema_lines(meta, choices)
        lines.append(f'if [ "$TABLE" = {_FILL_IN} ]; then echo "edit TABLE in $0 first: the table to release" >&2; exit 2; fi')
    if choices.sa_rule is None:
        chosen_for = " + ".join(choices.workload) or "the paper's random one"
        chosen = "weighted marginals" if choices.mechanism == MARGINALS else "strategies"
        lines.append(f"# The {chosen} were chosen as the least expected error ({choices.objective}) on the workload "
                     f"{chosen_for}; they are given here as chosen.")
    if choices.sa_rule == "best" and choices.workload:
        lines.append(f"# S_A was chosen as the least expected error ({choices.objective}) on the workload "
                     f"{' + '.join(choices.workload)}; it is given here as chosen.")
    lines.append(f"OUT={shlex.quote(Path(release_path).stem + '-redone.npz')}")
    command = ["privelet", "release", *redo_arguments(choices)]
    shown = " ".join(f'"{arg}"' if arg in ("$TABLE", "$SCHEMA") else shlex.quote(arg) for arg in command)
    lines.append(f'{shown} --out "$OUT" "$@"')
    return "\n".join(lines) + "\n"


def write_redo_script(
    release_path: str | os.PathLike[str],
    out: str | os.PathLike[str],
    *,
    force: bool = False,
    choices: ReleaseChoices | None = None,
) -> Path:
    """Write :func:`redo_script` of the release file ``release_path`` to ``out``, atomically and
    executable (an existing file only with ``force``)."""
    text = redo_script(load_release_metadata(release_path), release_path, choices=choices)
    with atomic_write(out, force=force, mode="w", encoding="utf-8", newline="\n") as handle:
        handle.write(text)
    os.chmod(out, 0o755)
    return Path(out)


def _schema_lines(meta: Mapping[str, Any], choices: ReleaseChoices) -> list[str]:
    """The script's ``SCHEMA=`` line: the recorded file when it holds the release's schema,
    else the release's schema written out by the script."""
    recorded = meta.get("schema")
    if choices.schema is not None:
        try:
            same = schema_to_json(load_schema(choices.schema)) == recorded
        except (PriveletError, OSError):
            same = False
        if same:
            return [f"SCHEMA={shlex.quote(choices.schema)}"]
    why = ("the schema file recorded no longer holds the schema the release was made with"
           if choices.schema is not None else "the release file does not record a schema file")
    return [
        f"# {why}: the release's own schema (from its file) is written here",
        'SCHEMA="${TMPDIR:-/tmp}/privelet-redo-schema-$$.json"',
        f"cat > \"$SCHEMA\" <<'{_SCHEMA_END}'",
        json.dumps(recorded, ensure_ascii=False, separators=(",", ":")),
        _SCHEMA_END,
    ]
