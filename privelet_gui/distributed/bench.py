"""Benchmark: counting and releasing a table of many Parquet files on local Dask clusters.

Run ``python -m privelet_gui.distributed.bench`` (by hand; it takes minutes). It writes
(once, then reuses) ``--rows`` synthetic rows shaped like the paper's Brazil extract
(:func:`privelet_gui.bench.brazil_table`) in ``--files`` Parquet files, then times:

- the one-machine path: ``count_table`` file by file into one matrix, ``ReleaseSpec.run``
  (all cores), ``save_release``;
- ``count_dataset`` and ``release_to_zarr`` on a local cluster of each ``--workers`` count,

with the peak resident memory of this process (one machine) and of each worker process
(sampled every 0.2 s). Privelet+ with S_A = {Age, Gender}, as in ``privelet_gui.bench``.
The table's values are synthetic (no real person is in it).
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

from ..bench import brazil_schema, brazil_table
from ..engine import ReleaseSpec
from ..io import count_table, save_release
from .cluster import dask_client
from .counting import count_dataset
from .layout import release_layout
from .release import release_to_zarr

__all__ = ["main"]

_SAMPLE_SECONDS = 0.2


def write_files(folder: Path, rows: int, files: int) -> list[Path]:
    """``rows`` synthetic rows in ``files`` Parquet files (kept when they are already there)."""
    folder.mkdir(parents=True, exist_ok=True)
    schema = brazil_schema()
    paths = []
    for number, part in enumerate(np.array_split(np.arange(rows), files)):
        path = folder / f"part-{number:03d}-{len(part)}.parquet"
        if not path.exists():
            brazil_table(schema, len(part), seed=1 + number).to_parquet(path, index=False)
        paths.append(path)
    return paths


class _PeakMemory:
    """The peak resident memory of each worker of a cluster, sampled in a background thread."""

    def __init__(self, client: object):
        self.client = client
        self.peaks: dict[str, int] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def __enter__(self) -> _PeakMemory:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _sample(self) -> None:
        while not self._stop.is_set():
            try:
                sizes = self.client.run(_rss)  # type: ignore[attr-defined]
            except Exception:  # the cluster is closing: the last samples stand
                return
            for worker, size in sizes.items():
                self.peaks[worker] = max(self.peaks.get(worker, 0), int(size))
            self._stop.wait(_SAMPLE_SECONDS)


def _rss() -> int:
    import psutil  # type: ignore[import-untyped]  # comes with distributed

    return int(psutil.Process().memory_info().rss)


def _own_peak() -> int:
    with open("/proc/self/status") as handle:
        for line in handle:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m privelet_gui.distributed.bench", description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=100_000_000, help="number of tuples n (default 100,000,000)")
    parser.add_argument("--files", type=int, default=16, help="Parquet files (default 16)")
    parser.add_argument("--workers", default="1,2", help="local cluster sizes to time (default 1,2)")
    parser.add_argument("--data", type=Path, help="folder of the Parquet files (default: a temporary one)")
    parser.add_argument("--skip-one-machine", action="store_true", help="time the clusters only")
    args = parser.parse_args(argv)

    schema = brazil_schema()
    spec = ReleaseSpec(schema, 1.0, sa=("Age", "Gender"))
    scratch = Path(tempfile.mkdtemp(prefix="privelet-bench-"))
    folder = args.data or scratch / "table"
    try:
        started = time.perf_counter()
        files = write_files(folder, args.rows, args.files)
        size = sum(p.stat().st_size for p in files)
        print(f"table: {args.rows:,} rows in {len(files)} Parquet files, {size / 2**20:,.0f} MiB "
              f"({time.perf_counter() - started:.1f} s to have them); matrix {schema.shape} = {schema.size:,} cells "
              f"({8 * schema.size / 2**20:,.0f} MiB)")

        if not args.skip_one_machine:
            started = time.perf_counter()
            matrix = np.zeros(schema.shape)
            for path in files:
                part, _ = count_table(path, schema)
                matrix += part
                del part
            counted = time.perf_counter() - started
            release = spec.run(matrix, rng=np.random.default_rng(1))
            released = time.perf_counter() - started - counted
            save_release(release, scratch / "one.npz")
            total = time.perf_counter() - started
            print(f"one machine: count {counted:.1f} s, release {released:.1f} s, write {total - counted - released:.1f} s, "
                  f"total {total:.1f} s; peak memory of the process {_own_peak() / 2**20:,.0f} MiB")
            del matrix, release

        for workers in (int(w) for w in args.workers.split(",")):
            with dask_client(workers=workers) as client:
                with _PeakMemory(client) as memory:
                    started = time.perf_counter()
                    counts = count_dataset(client, files, schema, release_layout(spec).chunks)
                    counted = time.perf_counter() - started
                    release_to_zarr(client, counts.matrix, spec, scratch / f"dask-{workers}.zarr", rows=counts.rows,
                                    rng=np.random.default_rng(1))
                    total = time.perf_counter() - started
                    del counts
                peaks = ", ".join(f"{peak / 2**20:,.0f}" for peak in sorted(memory.peaks.values()))
                print(f"dask, {workers} worker(s): count {counted:.1f} s, release and write {total - counted:.1f} s, "
                      f"total {total:.1f} s; peak memory per worker {peaks} MiB")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
