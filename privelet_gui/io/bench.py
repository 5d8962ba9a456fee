"""Benchmark: counting a large CSV file versus pandas just reading it.

Run ``python -m privelet_gui.io.bench`` (``--rows`` to change n, ``--repeat`` for
best-of-k timings, ``--keep`` to keep the file). It writes a synthetic CSV of
``--rows`` rows and 4 columns shaped like the paper's Brazil extract (Age 0..100,
Gender as text, Occupation as text out of 512 labels, Income 0..1000; skewed
distributions, no real person) to a temporary folder, then times, each in a fresh
Python process:

(a) pandas reading the whole file with the options and dtypes :func:`count_table`
    uses (C parser, the four columns, ``dtype="category"``, only empty cells missing);
(b) :func:`privelet_gui.io.count_table` streaming it into the frequency matrix
    (101 x 2 x 512 x 1001 = 103,527,424 cells, 828 MB of float64), as a release counts
    it: with the privacy ledger's fingerprint of its rows;
(c) for reference, only obtaining those 828 MB from the operating system the way
    (b) does (a cost that (a) does not have and (b) cannot avoid; (b) overlaps it with
    parsing);
(d) for reference, (b) without the fingerprint of the rows (what the fingerprint costs).

It prints both times, their ratio (target <= 1.3) and the peak resident memory of
(b) (target < 1 GB), measured as ``ru_maxrss`` of the child process (everything the
process ever held at once: interpreter, libraries, the matrix and the chunks in flight).
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

__all__ = ["main", "write_brazil_csv"]

COLUMNS = ("Age", "Gender", "Occupation", "Income")


def write_brazil_csv(path: Path, rows: int, *, ages: int = 101, seed: int = 1, block: int = 2_000_000) -> None:
    """Write the synthetic table (header + ``rows`` rows, comma-separated, LF) of
    ``brazil_schema(ages=ages)`` to ``path``."""
    import pyarrow as pa
    import pyarrow.csv as pacsv

    from ..bench import brazil_schema, brazil_table

    schema = brazil_schema(ages=ages)
    options = pacsv.WriteOptions(include_header=False, quoting_style="none")
    with open(path, "wb") as f:
        f.write((",".join(COLUMNS) + "\n").encode())
        done = 0
        while done < rows:
            n = min(block, rows - done)
            frame = brazil_table(schema, n, seed=seed + done)
            table = pa.table(
                {
                    "Age": pa.array(frame["Age"].to_numpy()),
                    "Gender": pa.array(frame["Gender"].astype(str).to_numpy(), type=pa.string()),
                    "Occupation": pa.array(frame["Occupation"].astype(str).to_numpy(), type=pa.string()),
                    "Income": pa.array(frame["Income"].to_numpy()),
                }
            )
            pacsv.write_csv(table, f, options)
            done += n


_CHILD = r"""
import json, resource, sys, time
mode, path, chunksize = sys.argv[1], sys.argv[2], int(sys.argv[3])
import pandas as pd
from privelet_gui.bench import brazil_schema
import numpy as np
from privelet_gui.io import count_table
schema = brazil_schema()
if mode == "touch":
    started = time.perf_counter()
    m = np.zeros(schema.size)
    m[::512] = 0.0  # touch every page, as counting does
    seconds = time.perf_counter() - started
    rows = 0
elif mode == "pandas":
    started = time.perf_counter()
    frame = pd.read_csv(path, sep=",", engine="c", dtype="category", usecols=list(schema.names),
                        keep_default_na=False, na_values=[""])
    seconds = time.perf_counter() - started
    rows = len(frame)
else:
    from privelet_gui.io.row_fingerprint import RowFingerprint
    rows = RowFingerprint(bytes(32)) if mode == "count" else None  # as a release counts (the ledger's salt)
    started = time.perf_counter()
    matrix, report = count_table(path, schema, chunksize=chunksize or None, rows=rows)
    seconds = time.perf_counter() - started
    rows = report.rows_counted
    if matrix.shape != schema.shape or matrix.sum() != rows:
        raise RuntimeError("the counts do not add up to the rows counted")
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * (1 if sys.platform == "darwin" else 1024)
print(json.dumps({"seconds": seconds, "peak_bytes": peak, "rows": rows}))
"""


def _child(mode: str, path: Path, chunksize: int | None) -> dict[str, float]:
    result = subprocess.run(
        [sys.executable, "-c", _CHILD, mode, str(path), str(chunksize or 0)],
        capture_output=True,
        text=True,
        check=False,
    )
    if result.returncode != 0:
        raise RuntimeError(f"the {mode} run failed:\n{result.stderr}")
    return json.loads(result.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m privelet_gui.io.bench", description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=10_000_000, help="rows of the CSV file (default 10,000,000)")
    parser.add_argument("--repeat", type=int, default=3, help="best of this many runs of each (default 3)")
    parser.add_argument("--chunksize", type=int, default=None, help="rows per chunk (default: count_table's)")
    parser.add_argument("--keep", action="store_true", help="keep the temporary folder and print its path")
    args = parser.parse_args(argv)

    folder = Path(tempfile.mkdtemp(prefix="privelet-bench-"))
    try:
        path = folder / "brazil.csv"
        started = time.perf_counter()
        write_brazil_csv(path, args.rows)
        size = path.stat().st_size
        print(f"wrote {args.rows:,} rows x 4 columns, {size / 1e6:,.0f} MB, in {time.perf_counter() - started:.1f} s")
        from ..bench import brazil_schema

        cells = brazil_schema().size
        print(f"schema Age 101 x Gender 2 x Occupation 512 x Income 1001 = {cells:,} cells ({cells * 8 / 1e6:,.0f} MB float64)")
        runs: dict[str, list[dict[str, float]]] = {"pandas": [], "count": [], "touch": [], "plain": []}
        for _ in range(max(args.repeat, 1)):
            for mode in runs:  # interleaved, so drifts in machine load hit all
                runs[mode].append(_child(mode, path, args.chunksize))
        read = min(r["seconds"] for r in runs["pandas"])
        count = min(r["seconds"] for r in runs["count"])
        peak = max(r["peak_bytes"] for r in runs["count"])
        read_peak = max(r["peak_bytes"] for r in runs["pandas"])
        print(f"(a) pandas read_csv (whole file, same dtypes): best {read:.2f} s of "
              + ", ".join(f"{r['seconds']:.2f}" for r in runs["pandas"]) + f"; peak RSS {read_peak / 2**20:,.0f} MiB")
        print(f"(b) count_table (chunked, into M, fingerprinting the rows): best {count:.2f} s of "
              + ", ".join(f"{r['seconds']:.2f}" for r in runs["count"]))
        touch = min(r["seconds"] for r in runs["touch"])
        print(f"(c) for reference, a fresh process obtaining M's 828 MB as count_table does: best "
              f"{touch:.2f} s of " + ", ".join(f"{r['seconds']:.2f}" for r in runs["touch"]))
        plain = min(r["seconds"] for r in runs["plain"])
        print(f"(d) for reference, (b) without fingerprinting the rows: best {plain:.2f} s of "
              + ", ".join(f"{r['seconds']:.2f}" for r in runs["plain"]))
        print(f"ratio (b)/(a): {count / read:.2f} (target <= 1.3)")
        print(f"ratio (b)/(d), what fingerprinting the rows costs: {count / plain:.2f}")
        print(f"ratio without obtaining M's memory, ((b) - (c)) / (a): {(count - touch) / read:.2f}")
        print(f"peak memory of count_table: {peak / 2**20:,.0f} MiB = {peak / 1e9:.2f} GB "
              "(ru_maxrss of its process, interpreter and libraries included; target < 1 GB)")
        print(f"throughput: {args.rows / count / 1e6:.1f} million rows/s, {size / count / 1e6:.0f} MB/s")
    finally:
        if args.keep:
            print(f"kept {folder}")
        else:
            shutil.rmtree(folder, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())


