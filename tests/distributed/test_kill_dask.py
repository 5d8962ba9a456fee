"""Kill test of ``privelet release --dask``: killed (SIGKILL) at random moments, it never leaves a
Zarr release on disk that the privacy ledger did not record (issue 39, item 17).

The release records itself in the ledger before its noise is drawn and its folder appears under
its final name only once complete, so after any kill each folder there is must be complete and
recorded. CI kills it 3 times (a local cluster starts for each run); ``PRIVELET_FUZZ=1`` more.
The schedule is seeded; where each kill lands is up to the machine.
"""

from __future__ import annotations

import contextlib
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from privelet_gui.io import read_table, sample_schema_path, sample_table_path
from privelet_gui.io.ledger import Ledger
from privelet_gui.io.zarr_releases import load_zarr_release_metadata

from ..fuzz.support import by_hand

pytestmark = pytest.mark.skipif(os.name != "posix", reason="SIGKILL and process groups are POSIX")

KILLS = 10 if by_hand() else 3


def _release(table: Path, out: Path, ledger: Path) -> subprocess.Popen[bytes]:
    """The release in a process group of its own (its cluster's workers die with it)."""
    return subprocess.Popen(
        [sys.executable, "-m", "privelet_gui.cli", "release", str(table), "--schema", str(sample_schema_path()),
         "--epsilon", "1", "--mechanism", "privelet", "--dask", "--dask-workers", "1", "--out", str(out), "--yes",
         "-q"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
        env={**os.environ, "PRIVELET_LEDGER": str(ledger)},
    )


def _kill(child: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError):  # it finished first
        os.killpg(child.pid, signal.SIGKILL)
    child.wait()


def test_a_killed_dask_release_never_leaves_an_unrecorded_release(tmp_path):
    table = tmp_path / "adult.parquet"
    read_table(sample_table_path()).to_parquet(table)
    ledger = tmp_path / "ledger.sqlite3"
    rng = random.Random("kill dask")
    started = time.perf_counter()
    first = _release(table, tmp_path / "whole.zarr", ledger)
    assert first.wait(timeout=300) == 0
    whole = time.perf_counter() - started
    outcomes = []
    for kill in range(KILLS):
        target = tmp_path / f"release-{kill}.zarr"
        child = _release(table, target, ledger)
        time.sleep(rng.uniform(0.3, 1.05) * whole)
        _kill(child)
        recorded = {entry.output for entry in Ledger(ledger).entries()}  # opens undamaged
        for folder in tmp_path.glob("*.zarr"):
            load_zarr_release_metadata(folder)  # complete: its metadata reads and its signature checks
            assert str(folder.resolve()) in recorded, f"{folder.name} is on disk but the ledger never recorded it"
        outcomes.append(("written" if target.exists() else "absent")
                        + (", recorded" if str(target.resolve()) in recorded else ""))
    assert (tmp_path / "whole.zarr").exists()
    print("kills:", outcomes)
