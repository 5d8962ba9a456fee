"""Local Dask clusters for the distributed tests, and tables split into several files.

The clusters are module-wide (starting one takes about a second) and their worker
processes are checked to be gone, with their spill folders, when the module ends.
"""

from __future__ import annotations

import contextlib
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("distributed")
pytest.importorskip("zarr")

import psutil
from distributed import Client

from privelet_gui.distributed import dask_client
from privelet_gui.io import read_table, sample_table_path

#: The memory each test worker may use: the 1 GB release must complete within it. (A worker holds
#: dask, numpy, pandas, pyarrow, zarr and numba with the engine's compiled loops itself: at 384 MB,
#: Dask's pause at 80 % of the limit leaves too little for a task.)
WORKER_MEMORY = "512MB"


def _spill_folders() -> set[Path]:
    return set(Path(tempfile.gettempdir()).glob("privelet-dask-*"))


def _children() -> set[int]:
    """Our live child processes, but multiprocessing's resource tracker (started with the
    first worker process, it lives as long as this interpreter, by design)."""
    alive = set()
    for process in psutil.Process().children(recursive=True):
        with contextlib.suppress(psutil.Error):
            if process.status() != psutil.STATUS_ZOMBIE and "resource_tracker" not in " ".join(process.cmdline()):
                alive.add(process.pid)
    return alive


def _no_leftovers(processes: set[int], folders: set[Path]) -> None:
    """No process started with the clusters and no spill folder outlives them."""
    deadline = time.monotonic() + 15
    while _children() - processes and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _children() - processes == set()
    assert _spill_folders() - folders == set()


@pytest.fixture(scope="module")
def clusters() -> Iterator[dict[int, Client]]:
    """Two local clusters, of one and of two worker processes ({1: client, 2: client})."""
    processes, folders = _children(), _spill_folders()
    with dask_client(workers=1, memory_limit=WORKER_MEMORY) as one, dask_client(workers=2, memory_limit=WORKER_MEMORY) as two:
        yield {1: one, 2: two}
    _no_leftovers(processes, folders)


@pytest.fixture(scope="module")
def roomy_clusters() -> Iterator[dict[int, Client]]:
    """Clusters of one and two workers of 1 GB each: a release axis by axis (S_A empty) holds
    each pass of the whole matrix on the cluster (a worker's own needs are about 140 MB)."""
    processes, folders = _children(), _spill_folders()
    with dask_client(workers=1, memory_limit="1GB") as one, dask_client(workers=2, memory_limit="1GB") as two:
        yield {1: one, 2: two}
    _no_leftovers(processes, folders)


@pytest.fixture(scope="module")
def client(clusters: dict[int, Client]) -> Client:
    """The cluster of two worker processes."""
    return clusters[2]


@pytest.fixture(scope="session")
def adult_parts(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The bundled sample as one Parquet file, as 4 Parquet files in a folder, and as 3 CSV
    files (one gzip-compressed) in another."""
    folder = tmp_path_factory.mktemp("adult")
    table = read_table(sample_table_path())
    table.to_parquet(folder / "all.parquet")
    table.to_csv(folder / "all.csv", index=False)
    (folder / "parquet").mkdir()
    (folder / "csv").mkdir()
    for number, rows in enumerate(np.array_split(np.arange(len(table)), 4)):
        table.iloc[rows].to_parquet(folder / "parquet" / f"part-{number}.parquet")
    for number, rows in enumerate(np.array_split(np.arange(len(table)), 3)):
        name = f"part-{number}.csv.gz" if number == 1 else f"part-{number}.csv"
        table.iloc[rows].to_csv(folder / "csv" / name, index=False)
    (folder / "parquet" / "_SUCCESS").write_text("")  # as Spark leaves it: not a table
    return {"all": folder / "all.parquet", "all_csv": folder / "all.csv", "parquet": folder / "parquet",
            "csv": folder / "csv", "table": folder}


def split(table: pd.DataFrame, folder: Path, parts: int) -> Path:
    """Write ``table`` as ``parts`` Parquet files in ``folder``; return the folder."""
    folder.mkdir(parents=True, exist_ok=True)
    for number, rows in enumerate(np.array_split(np.arange(len(table)), parts)):
        table.iloc[rows].to_parquet(folder / f"part-{number:02d}.parquet")
    return folder
