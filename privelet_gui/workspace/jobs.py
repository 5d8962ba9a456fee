"""The long-running work of the app, as plain functions with no Qt.

Each job is ``run(inputs..., progress, should_cancel)`` (Orange3 style) and returns
plain data. The desktop app hands them to its task service
(:mod:`privelet_gui.gui.tasks`); tests call them directly. They call the engine and io
functions and re-implement nothing: the release itself is
:meth:`~privelet_gui.engine.ReleaseSpec.run`.

A release spends privacy budget, so :func:`run_release` goes as ``privelet release``
does: the table's rows are fingerprinted as it is counted; then it asks the ledger what the
table has spent and, if it has spent anything, asks the custodian, and records the release
before its noise is drawn (the ledger's :func:`~privelet_gui.io.ledger.spend_budget`). A
:class:`ReleaseControl` gives the release a point of no return: a cancel before the noise is
drawn leaves nothing drawn and nothing recorded (the entry is removed); a cancel after it only
skips measuring the error, so that a release that spent epsilon is never dropped by a cancel.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import json
import math
import os
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np

from .. import __version__
from .. import io as pio
from ..engine import (
    Cancelled,
    CountReport,
    ErrorPreview,
    PriveletError,
    Progress,
    Release,
    ReleaseSpec,
    SaRule,
    StrategyChoice,
    Workload,
    available_memory,
    byte_size,
    margin95,
    measure_release,
)
from ..io.choices import STRATEGY_CHOICE_KEY, ReleaseChoices, choices_metadata, strategy_choice_record
from ..io.ledger import BudgetCheck, Ledger, PlannedRelease, Spending, check_budget, spend_budget
from ..io.releases import SLAB_CELLS, ReleaseWarning
from ..io.zarr_releases import is_zarr_release

__all__ = [
    "MEASURE_MAX_CELLS",
    "PROJECT_SUFFIX",
    "ReleaseControl",
    "ReleaseJob",
    "ReleaseOutcome",
    "check_table_budget",
    "classify_file",
    "export_format",
    "export_opened_release",
    "export_release_file",
    "export_written_text",
    "extra_metadata",
    "natural_sorted",
    "open_release_file",
    "release_location",
    "run_release",
]

PROJECT_SUFFIX = ".privelet"
#: The error of releases up to this many cells is measured on the true data (memory: 4 x M).
MEASURE_MAX_CELLS = 1 << 24

ProgressFunction = Callable[[float, str], None]
CancelFunction = Callable[[], bool]


# -- release ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class ReleaseJob:
    """Everything a release needs; frozen so the worker sees a consistent snapshot.

    The release itself is :attr:`spec`, already validated by the caller. :attr:`sa_rule` is how
    S_A was chosen, as its file records it (:func:`~privelet_gui.io.choices.recorded_sa_rule`:
    None when the best strategy chose every strategy, and :attr:`strategy_choice` is that
    choice). When S_A or the strategies were chosen for a workload, :attr:`workload` is that
    workload as ``--workload`` descriptions and :attr:`objective` what the choice minimised:
    the release file records them too.
    """

    table_path: Path
    options: Any  # io.TableOptions
    spec: ReleaseSpec
    measure_error: bool = True  # measure the release's error on the true data (custodian only)
    strategy_choice: StrategyChoice | None = None
    error_workload: Workload | None = None  # the custodian's queries the error is measured on (None: the paper's)
    sa_rule: SaRule | None = "given"
    workload: tuple[str, ...] = ()
    objective: str = "mean"
    dataset: str | None = None  # the dataset the ledger counts this table's releases under

    def choices(self) -> ReleaseChoices:
        """What a script needs to make this release again (recorded in its file)."""
        return ReleaseChoices.of(
            self.spec, table=self.table_path, schema=None, options=self.options, dataset=self.dataset,
            sa_rule=self.sa_rule, workload=self.workload, objective=self.objective,
        )

    @property
    def unmeasured_reason(self) -> str | None:
        """Why this release's error will not be measured on the true data, for people (None:
        it will be). Measuring keeps three more matrices of M's size: only for matrices up to
        MEASURE_MAX_CELLS."""
        if not self.measure_error:
            return '"Measure the error" was off'
        cells = self.spec.schema.size
        if cells > MEASURE_MAX_CELLS:
            return (f"measuring keeps three more matrices of its size, so it is done for up to "
                    f"{MEASURE_MAX_CELLS:,} cells, and this one has {cells:,}")
        return None

    @property
    def measures_error(self) -> bool:
        return self.unmeasured_reason is None


@dataclass(frozen=True)
class ReleaseOutcome:
    """A finished release and what the custodian should see about it (no true counts)."""

    spec: ReleaseSpec  # what was asked for (the release records all of it but the counting policy)
    release: Release
    report: CountReport  # rows read / counted / dropped: shown to the custodian, never exported
    table_name: str
    paper_bound: float
    worst_case_variance: float
    seconds: float
    counting_seconds: float
    preview: ErrorPreview | None = None  # errors on the true data: shown here only, never exported
    unmeasured_reason: str | None = None  # why there is no preview, for people
    finished_at: str = field(default_factory=lambda: _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"))
    budget: BudgetCheck | None = None  # the ledger's check this release was made under
    ledger_entry: int | None = None  # its entry in the ledger (the file it is saved to is noted there)
    spent_after: Spending | None = None  # what the table has spent with this release
    choices: ReleaseChoices | None = None  # what a script needs to make it again (recorded in its file)
    strategy_choice: StrategyChoice | None = None  # how its strategies were chosen (recorded in its file)

    @property
    def margin95(self) -> float:
        """+/- count that the worst query's noise stays within with 95% probability (normal approx.)."""
        return margin95(self.worst_case_variance)


def _counting_share(path: Path, cells: int) -> float:
    """The part of the progress bar for counting, from the file size and the matrix size."""
    try:
        size = path.stat().st_size
    except OSError:
        size = 0
    share = size / (size + 16.0 * cells) if size + cells else 0.5
    return min(max(share, 0.05), 0.9)


def check_table_budget(
    path: str | os.PathLike[str],
    epsilon: float,
    neighbours: str,
    progress: ProgressFunction | None = None,
    should_cancel: CancelFunction | None = None,
    *,
    ledger: Ledger | None = None,
    dataset: str | None = None,
) -> BudgetCheck:
    """What the table at ``path`` has spent so far, and what a release of ``epsilon`` under
    ``neighbours`` adds (the ledger's :func:`~privelet_gui.io.ledger.check_budget`; ``ledger``
    defaults to the user's, or ``PRIVELET_LEDGER``). The table is known by its file here (its
    rows are fingerprinted when a release counts them) and by ``dataset``, the custodian's name
    for the data it belongs to. Reads the whole file to fingerprint it: a job for a worker."""
    steps = Progress(progress, should_cancel)
    steps.report(0.0, "looking up what this table has spent")
    ledger = ledger if ledger is not None else Ledger()
    check = check_budget(ledger, ledger.table_keys([path], dataset=dataset), epsilon, neighbours)
    steps.report(1.0, "looked up what this table has spent")
    return check


class ReleaseControl:
    """The cancel of one release and its point of no return (thread-safe).

    Until the noise is drawn, :meth:`cancel` stops the release: nothing drawn is kept and
    nothing is recorded. :func:`run_release` calls :meth:`commit` the moment the noise is
    drawn, before it records the release; from then on a cancel only skips what is left
    (measuring the error), and the release is delivered.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._cancelled = False
        self._committed = False

    def cancel(self) -> bool:
        """Ask the release to stop; True if it will (its noise is not drawn yet)."""
        with self._lock:
            self._cancelled = True
            return not self._committed

    def commit(self) -> bool:
        """The noise is drawn: True if the release goes on (no cancel came first)."""
        with self._lock:
            if not self._cancelled:
                self._committed = True
            return self._committed

    @property
    def committed(self) -> bool:
        """Whether the noise was drawn and the release can no longer be cancelled."""
        return self._committed

    def cancelled(self) -> bool:
        """Whether a cancel was asked (after :meth:`commit`: skip what is left)."""
        return self._cancelled


def run_release(
    job: ReleaseJob,
    progress: ProgressFunction | None = None,
    should_cancel: CancelFunction | None = None,
    *,
    ask: Callable[[BudgetCheck], bool],
    control: ReleaseControl | None = None,
    ledger: Ledger | None = None,
) -> ReleaseOutcome:
    """Count the table into M, then release it as the job's spec says; M is dropped at once.

    Between the two, what the table has spent is looked up in ``ledger`` (default: the
    user's, or ``PRIVELET_LEDGER``) and, if it has spent anything, ``ask(check)`` says
    whether to spend more (it may block: the app asks the custodian on its GUI thread);
    no: Cancelled, nothing drawn. The release is recorded before its noise is drawn, and
    its entry removed if the noise never is. With ``control``, a cancel that comes after the
    noise is drawn skips measuring the error instead of dropping the release (see
    :class:`ReleaseControl`).
    """
    started = time.perf_counter()
    steps = Progress(progress, should_cancel)
    spec = job.spec
    ledger = ledger if ledger is not None else Ledger()
    rows = ledger.row_fingerprint()  # a damaged ledger is refused now, before the counting
    share = _counting_share(Path(job.table_path), spec.schema.size)
    counting = steps.slice(0.0, share)
    counting.report(0.0, "counting rows")
    matrix, report = pio.count_table(
        job.table_path,
        spec.schema,
        job.options,
        invalid=spec.invalid,
        progress=lambda f, stage: counting.report(f, _stage("counting", stage)),
        should_cancel=should_cancel,
        rows=rows,
    )
    counted = time.perf_counter()
    waited = 0.0  # seconds spent waiting for the custodian's answer: not the release's time

    def timed_ask(check: BudgetCheck) -> bool:
        nonlocal waited
        releasing.report(0.0, "waiting for your answer: spend more of this table's budget?")
        asked = time.perf_counter()
        try:
            return ask(check)
        finally:
            waited += time.perf_counter() - asked  # asked again if another release came meanwhile

    # Measuring the error releases Basic for comparison and answers queries: about as long again.
    end = share + (1.0 - share) * (0.5 if job.measures_error else 1.0)
    releasing = steps.slice(share, end)
    try:
        releasing.report(0.0, "looking up what this table has spent")
        keys = ledger.table_keys([job.table_path], rows=rows, dataset=job.dataset)
        with spend_budget(ledger, keys, PlannedRelease.of_spec(spec), timed_ask) as reservation:
            release = spec.run(matrix, progress=releasing.report, should_cancel=should_cancel)
            if control is not None and not control.commit():
                raise Cancelled("cancelled by the user")  # the entry is removed: nobody saw this noise
            reservation.mark_drawn()
        # From here on progress is only reported: a cancel no longer stops the release.
        reporting = Progress(progress)
        preview = None
        unmeasured = job.unmeasured_reason
        if job.measures_error:
            measuring = reporting.slice(end, 1.0)
            skip = control.cancelled if control is not None else should_cancel
            try:
                preview = measure_release(matrix, release, workload=job.error_workload, progress=measuring.report,
                                          should_cancel=skip)
            except Cancelled:
                preview = None  # the release is made: a late cancel only skips measuring its error
                unmeasured = "measuring was cancelled"
    finally:
        del matrix  # the true counts never leave this function (only error statistics and marginals)
    outcome = ReleaseOutcome(
        spec=spec,
        release=release,
        report=report,
        table_name=Path(job.table_path).name,
        paper_bound=spec.paper_bound(),
        worst_case_variance=spec.worst_case_variance(),
        seconds=time.perf_counter() - started - waited,
        counting_seconds=counted - started,
        preview=preview,
        unmeasured_reason=unmeasured,
        budget=reservation.check,
        ledger_entry=reservation.entry,
        spent_after=reservation.spent_after,
        choices=job.choices(),
        strategy_choice=job.strategy_choice,
    )
    reporting.report(1.0, "done")
    return outcome


def _stage(prefix: str, stage: str) -> str:
    return stage if stage.startswith(prefix) else f"{prefix}: {stage}"


# -- export -------------------------------------------------------------------------------------

ExportFormat = Literal["release", "csv", "parquet"]


def extra_metadata(outcome: ReleaseOutcome) -> dict[str, Any]:
    """Descriptive metadata stored with a release file: nothing computed from the data; the
    choices a script needs to make the release again (:mod:`~privelet_gui.io.choices`: the
    table's path among them, which the release report never prints), and how its strategies
    were chosen when they were the best for a workload."""
    extra: dict[str, Any] = {
        "created_by": f"Privelet Studio {__version__}",
        "created": outcome.finished_at,
    }
    if outcome.strategy_choice is not None:
        extra[STRATEGY_CHOICE_KEY] = strategy_choice_record(outcome.strategy_choice)
    return extra if outcome.choices is None else choices_metadata(outcome.choices, extra)


def export_format(path: str | os.PathLike[str]) -> ExportFormat:
    """The export format a file name asks for: .npz release file, .csv(.gz) or .parquet."""
    name = str(path).lower()
    if name.endswith((".parquet", ".pq")):
        return "parquet"
    if name.endswith((".csv", ".csv.gz", ".tsv")):
        return "csv"
    return "release"


def export_release_file(
    outcome: ReleaseOutcome,
    path: str | os.PathLike[str],
    fmt: ExportFormat | None = None,
    progress: ProgressFunction | None = None,
    should_cancel: CancelFunction | None = None,
    *,
    force: bool = False,
    counts: str = "noisy",
    standard_error: bool = False,
    slab_cells: int = SLAB_CELLS,
) -> Path:
    """Write a release: the release file (.npz, with metadata) or a long-format CSV / Parquet.

    The io writers are atomic (a temporary file renamed into place; a CSV file with the JSON
    that describes it beside it, :func:`export_written_text`). Only noisy counts are written:
    a release file always the release's own, a CSV or Parquet export the kind ``counts`` asks
    for (:data:`~privelet_gui.engine.postprocess.COUNT_KINDS`), with each cell's noise
    standard deviation if ``standard_error``, ``slab_cells`` cells at a time (progress and a
    cancel after each slab). Once written, the file is noted as the
    release's output in the privacy ledger (the last file written).
    """
    steps = Progress(progress, should_cancel)
    fmt = fmt or export_format(path)
    if fmt == "release" and counts != "noisy":
        raise PriveletError(
            f"a release file keeps the release's own counts; {counts} counts are for CSV and Parquet exports"
        )
    steps.report(0.0, f"writing {Path(path).name}")
    if fmt == "release":
        pio.save_release(outcome.release, path, force=force, metadata=extra_metadata(outcome))
    else:
        pio.export_release(outcome.release, path, format=fmt, force=force, counts=counts, progress=progress,
                           should_cancel=should_cancel, standard_error=standard_error, slab_cells=slab_cells)
    if outcome.budget is not None and outcome.ledger_entry is not None:
        try:
            outcome.budget.ledger.set_output(outcome.ledger_entry, Path(path).resolve())
        except PriveletError as exc:
            raise PriveletError(f"wrote {Path(path).name}, but could not note it in the privacy ledger: {exc}") from None
    steps.report(1.0, f"wrote {Path(path).name}")
    return Path(path)


def export_opened_release(
    release: Release,
    path: str | os.PathLike[str],
    fmt: Literal["csv", "parquet"],
    progress: ProgressFunction | None = None,
    should_cancel: CancelFunction | None = None,
    *,
    force: bool = False,
    counts: str = "noisy",
    allow_seeded: bool = False,
    standard_error: bool = False,
    slab_cells: int = SLAB_CELLS,
) -> Path:
    """Export a release read from a file as long-format CSV or Parquet
    (:func:`~privelet_gui.io.export_release`, ``slab_cells`` cells at a time). A seeded release needs ``allow_seeded``
    (the custodian was asked), and its export then says in the file that it is not private."""
    steps = Progress(progress, should_cancel)
    steps.report(0.0, f"writing {Path(path).name}")
    pio.export_release(release, path, format=fmt, force=force, counts=counts, allow_seeded=allow_seeded,
                       progress=progress, should_cancel=should_cancel, standard_error=standard_error,
                       slab_cells=slab_cells)
    steps.report(1.0, f"wrote {Path(path).name}")
    return Path(path)


def export_written_text(path: Path, fmt: ExportFormat) -> str:
    """What the app says once an export is written: the file, and what describes it (a CSV
    file's JSON beside it; Parquet's own metadata; a release file is its own description)."""
    if fmt == "release":
        return f"Wrote {path.name}."
    described = pio.export_metadata_path(path, fmt)
    if described is None:
        return f"Wrote {path.name} (epsilon, mechanism and noise scale are in its metadata)."
    return f"Wrote {path.name} and, beside it, {described.name} (epsilon, mechanism and noise scale)."


# -- dropped files -----------------------------------------------------------------------------

FileKind = Literal["project", "schema", "table", "hierarchy", "release"]

#: The app reads a Zarr release into memory when it takes at most this share of the memory
#: available (the workbench adds its prefix sums, one more matrix).
APP_RELEASE_MEMORY_SHARE = 0.25


def release_location(path: str | os.PathLike[str]) -> Path:
    """The release a path names: the ``zarr.json`` of a Zarr release (what a file dialog can
    choose) names its folder; anything else names itself."""
    p = Path(path)
    if p.name == "zarr.json" and is_zarr_release(p.parent):
        return p.parent
    return p


def open_release_file(
    path: str | os.PathLike[str],
    progress: ProgressFunction | None = None,
    should_cancel: CancelFunction | None = None,
    warn: ReleaseWarning | None = None,
) -> Release:
    """A release file, or a Zarr release folder read into memory for the app's views.

    A Zarr release bigger than :data:`APP_RELEASE_MEMORY_SHARE` of the available memory is
    refused, naming the commands that read it chunk by chunk. ``warn`` hears what the reader
    must know about it (its signature, flags that disagree: :func:`~privelet_gui.io.load_release`).
    """
    location = release_location(path)
    release = pio.load_release(location, warn=warn)
    if isinstance(release.noisy, np.ndarray):
        return release
    shape = tuple(release.noisy.shape)
    needed, available = 8 * math.prod(shape), available_memory()
    if available is not None and needed > APP_RELEASE_MEMORY_SHARE * available:
        raise PriveletError(
            f"{location.name} holds {math.prod(shape):,} cells ({byte_size(needed)}), more than the app can hold "
            f"with the {byte_size(available)} of memory available; query and export it with "
            f"'privelet query {location.name} --where ...' and 'privelet export', which read only the chunks they need"
        )
    steps = Progress(progress, should_cancel)
    noisy = np.empty(shape)
    rows = max(1, shape[0] * (1 << 20) // max(math.prod(shape), 1))  # about 8 MiB a read
    for start in range(0, shape[0], rows):
        steps.report(start / shape[0], f"reading {location.name}")
        noisy[start:start + rows] = release.noisy[start:start + rows]
    steps.report(1.0, f"read {location.name}")
    return dataclasses.replace(release, noisy=noisy)


def classify_file(path: str | os.PathLike[str]) -> FileKind:
    """What a file dropped on the window probably is: a project, a schema, a release, a table
    or a hierarchy.

    ``.privelet`` and JSON with the project marker are projects; JSON with ``"attributes"``
    is a schema (the command line's format); other JSON files are hierarchies; a headerless
    delimited file whose rows all end with the same value (the root, ``*`` in ARX files) is
    a hierarchy; anything else is a table.
    """
    p = Path(path)
    name = p.name.lower()
    if name.endswith(PROJECT_SUFFIX):
        return "project"
    if name.endswith((".npz", ".zarr")) or is_zarr_release(release_location(p)):
        return "release"
    if name.endswith(".json"):
        try:
            with open(p, encoding="utf-8") as f:
                obj = json.load(f)
        except (OSError, ValueError, RecursionError):
            return "hierarchy"
        if isinstance(obj, dict) and obj.get("format") == "privelet-studio-project":
            return "project"
        if isinstance(obj, dict) and "attributes" in obj:
            return "schema"
        return "hierarchy"
    if name.endswith((".parquet", ".pq", ".gz")):
        return "table"
    try:
        with open(p, encoding="utf-8", errors="replace") as f:
            lines = [line.rstrip("\r\n") for _, line in zip(range(200), f) if line.strip()]
    except OSError:
        return "table"
    if not lines:
        return "table"
    delimiter = pio.sniff_delimiter(lines, pio.ARX_DELIMITERS)
    rows = [line.split(delimiter) for line in lines]
    if all(len(r) >= 2 for r in rows) and len({r[-1] for r in rows}) == 1 and (len(rows) > 1 or rows[0][-1] == "*"):
        return "hierarchy"
    return "table"


def natural_sorted(values: Sequence[str]) -> list[str]:
    """Numbers by value, then text."""

    def key(v: str) -> tuple[int, float, str]:
        try:
            return (0, float(v), v)
        except ValueError:
            return (1, 0.0, v)

    return sorted(values, key=key)
