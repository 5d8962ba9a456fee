"""Kill test: ``privelet release`` and ``privelet export`` killed (SIGKILL) at random moments.

After each kill the target is absent or complete and loadable (a write goes to a temporary
file renamed at the end); a killed write cannot remove its temporary file, and the next
write to the same target must. Half the kills come at any moment of a run, half while it
writes (a short part of it), at a random moment after its temporary file appears. So every few kills (and at the end) the command runs to
completion, after which no temporary file may be left. CI kills each command 3 times;
``PRIVELET_FUZZ=1`` 50 times (see tests/fuzz/__init__.py). The schedule of the kills is
seeded; where each kill lands in the program is up to the machine.

The privacy ledger is killed around too: ``privelet release`` killed just as it has counted
the table (when it asks the ledger and records the release), while its ledger write is under
way (its journal there), or at any moment; after each kill the ledger opens undamaged and
holds an entry for every release file there is: it may count a release nobody saw, never
miss one that was written.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest

from privelet_gui.engine import Hierarchy, NominalAttribute, NumericBins, OrdinalAttribute, Schema, privelet_plus
from privelet_gui.io import load_release, release_frame, save_release
from privelet_gui.io.ledger import Ledger

from .support import TALLY, by_hand, fuzz_cases

pytestmark = pytest.mark.skipif(os.name != "posix", reason="SIGKILL and process numbers are POSIX")

KILLS = max(50, fuzz_cases() // 20) if by_hand() else 3
# A completed run every so many kills (its start removes what the kills left; its end must leave nothing).
COMPLETE_EVERY = 10

EXPORT_SCHEMA = Schema([
    OrdinalAttribute.integer_range("age", 0, 99),
    NominalAttribute("sex", Hierarchy.flat(["F", "M"])),
    OrdinalAttribute("income", bins=NumericBins(0, 100_000, 100)),
])


def _temporary_files(folder: Path) -> list[Path]:
    return sorted(p for p in folder.iterdir() if p.name.startswith(".") and p.name.endswith(".tmp"))


def _complete_release(path: Path) -> None:
    release = load_release(path)  # raises on a partial or damaged file
    assert release.noisy.shape == release.schema.shape


def _complete_export(path: Path, cells: int) -> None:
    if path.suffix == ".parquet":
        assert pq.ParquetFile(path).metadata.num_rows == cells
    else:
        frame = pd.read_csv(path)
        assert len(frame) == cells and frame["noisy_count"].notna().all()


def _run(argv: list[str]) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-m", "privelet_gui.cli", *argv, "-q"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def _kill_repeatedly(
    name: str, argv_for: object, target_for: object, check: object, folder: Path, targets: int
) -> None:
    """Kill the command (on ``targets`` targets in turn) at random moments; every few kills,
    run it to completion on every target (a later write to a target cleans what a killed
    write to it left), after which no temporary file may be left."""
    rng = random.Random(f"kill {name}")
    started = time.perf_counter()
    _finish(_run(argv_for(0)))  # type: ignore[operator]
    whole = time.perf_counter() - started  # how long one run takes here
    check(target_for(0))  # type: ignore[operator]
    for kill in range(KILLS):
        target = target_for(kill)  # type: ignore[operator]
        child = _run(argv_for(kill))  # type: ignore[operator]
        if kill % 2:  # anywhere in the run: mostly before it ends, sometimes after
            time.sleep(rng.uniform(0.05, 1.1) * whole)
        else:  # while it writes: once its temporary file is there (the write is a short part)
            _wait_for_write(child, folder, target, deadline=time.perf_counter() + 3 * whole)
            time.sleep(rng.uniform(0.0, 0.2) * whole)
        child.send_signal(signal.SIGKILL)
        child.wait()
        if child.returncode == -signal.SIGKILL:
            left = [p for p in _temporary_files(folder) if p.name.startswith(f".{target.name}.")]
            TALLY.outcomes[f"kill {name}"]["killed, temporary file left" if left else "killed, none left"] += 1
        else:
            TALLY.outcomes[f"kill {name}"]["finished first"] += 1
        TALLY.cases[f"kill {name}"] += 1
        if target.exists():
            check(target)  # type: ignore[operator]  # absent or complete, never partial
        if (kill + 1) % COMPLETE_EVERY == 0 or kill == KILLS - 1:
            for turn in range(kill, kill + targets):
                _finish(_run(argv_for(turn)))  # type: ignore[operator]
                check(target_for(turn))  # type: ignore[operator]
            assert _temporary_files(folder) == [], "finished runs left temporary files"


def _wait_for_write(child: subprocess.Popen[bytes], folder: Path, target: Path, deadline: float) -> None:
    while child.poll() is None and time.perf_counter() < deadline:
        if any(p.name.startswith(f".{target.name}.") for p in _temporary_files(folder)):
            return
        time.sleep(0.002)


def _finish(child: subprocess.Popen[bytes]) -> None:
    assert child.wait(timeout=300) == 0


def test_killed_releases_leave_the_target_absent_or_complete_and_nothing_behind(tmp_path):
    targets = [tmp_path / "release.npz", tmp_path / "other.npz"]  # an existing target and a new one
    _kill_repeatedly(
        "release",
        lambda kill: ["release", "--demo", "--out", str(targets[kill % 2]), "--force", "--seed", str(kill), "--yes"],
        lambda kill: targets[kill % 2],
        _complete_release,
        tmp_path,
        len(targets),
    )


def test_killed_exports_leave_the_target_absent_or_complete_and_nothing_behind(tmp_path):
    release = privelet_plus(np.ones(EXPORT_SCHEMA.shape), EXPORT_SCHEMA, 1.0, sa=["sex"])  # unseeded: exportable
    source = tmp_path / "release.npz"
    save_release(release, source)
    cells = len(release_frame(release))
    outputs = tmp_path / "exports"
    outputs.mkdir()
    targets = [outputs / "export.csv", outputs / "export.parquet", outputs / "export.csv.gz"]
    _kill_repeatedly(
        "export",
        lambda kill: ["export", str(source), "--out", str(targets[kill % 3]), "--force"],
        lambda kill: targets[kill % 3],
        lambda path: _complete_export(path, cells),
        outputs,
        len(targets),
    )


def _counted_release(target: Path) -> tuple[subprocess.Popen[bytes], threading.Event]:
    """``privelet release --demo`` (no question: the sample is public) to ``target``, and an
    event set once it says it has counted the table (the ledger comes next)."""
    child = subprocess.Popen([sys.executable, "-m", "privelet_gui.cli", "release", "--demo", "--out", str(target)],
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    counted = threading.Event()

    def watch() -> None:
        assert child.stderr is not None
        for line in child.stderr:
            if line.startswith(b"100% counting"):
                counted.set()
        counted.set()  # ended (or killed) before: nothing more to wait for

    threading.Thread(target=watch, daemon=True).start()
    return child, counted


def test_killed_releases_never_leave_the_ledger_saying_less_than_was_released(tmp_path, private_ledger):
    rng = random.Random("kill ledger")
    targets = [tmp_path / f"release-{kill}.npz" for kill in range(KILLS + 1)]
    started = time.perf_counter()
    child, _ = _counted_release(targets[-1])
    _finish(child)
    whole = time.perf_counter() - started
    journal = private_ledger.with_name(private_ledger.name + "-journal")
    recorded = 1
    for kill, target in enumerate(targets[:-1]):
        child, counted = _counted_release(target)
        moment = ("counted", "ledger write", "any")[kill % 3]
        if moment == "counted":  # the question's check and the record come right after
            counted.wait(3 * whole)
            time.sleep(rng.uniform(0.0, 0.05))
        elif moment == "ledger write":  # the record's transaction, once counted: its journal is there
            counted.wait(3 * whole)
            deadline = time.perf_counter() + whole
            while child.poll() is None and not journal.exists() and time.perf_counter() < deadline:
                pass
        else:
            time.sleep(rng.uniform(0.05, 1.1) * whole)
        child.send_signal(signal.SIGKILL)
        child.wait()
        entries = Ledger(private_ledger).entries()  # opens undamaged (a killed write is rolled back)
        outputs = {entry.output for entry in entries}
        written = [t for t in targets if t.exists()]
        for release_file in written:
            _complete_release(release_file)
            assert str(release_file.resolve()) in outputs, f"{release_file.name} was written but not recorded"
        assert len(entries) >= recorded  # never fewer than before
        recorded = len(entries)
        state = ("killed" if child.returncode == -signal.SIGKILL else "finished") + (
            ", written" if target.exists() else ", recorded, not written" if str(target.resolve()) in outputs
            else ", not recorded")
        TALLY.outcomes["kill ledger"][f"{moment}: {state}"] += 1
        TALLY.cases["kill ledger"] += 1
