"""How long the app's GUI thread stops answering during a release (the workflow issue's
"no stall over 50 ms" target). A benchmark, not a test: the figures depend on the machine.

``python -m privelet_gui.gui.stall_bench [--rows N] [--ages A] [--data DIR]`` writes (once) a
synthetic Brazil-shaped CSV of N rows (default 10 million) over A ages (default 101: the
Brazil census matrix, 101 x 2 x 512 x 1001 cells), opens it in a main window (offscreen unless a display is set), runs a Privelet+
release with S_A = {Age, Gender} and prints the gaps between the ticks of a 10 ms timer on
the GUI thread: the longest, the 99th percentile, how many passed 50 ms, and for each of the
longest the stage the release was in and where the GUI thread was (sampled by a watchdog
thread while the tick was late). Settings, the privacy ledger and the copies of unsaved work
are temporary files.
"""

from __future__ import annotations

import argparse
import itertools
import os
import sys
import tempfile
import threading
import time
import traceback
from pathlib import Path

#: A gap longer than this is a stall (the issue's target).
STALL_MS = 50.0
_TICK_MS = 10


def _gui_thread_stack(thread_id: int) -> str:
    frame = sys._current_frames().get(thread_id)
    if frame is None:
        return "(no frame)"
    lines = traceback.format_stack(frame)[-12:]
    return "".join(line for line in lines).rstrip()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--rows", type=int, default=10_000_000, help="rows of the synthetic table (default 10 million)")
    parser.add_argument("--ages", type=int, default=101,
                        help="values of Age (default 101, the Brazil matrix; fewer make a smaller one)")
    parser.add_argument("--data", type=Path, default=Path(tempfile.gettempdir()) / "privelet-stall-bench",
                        help="folder that keeps the table between runs")
    parser.add_argument("--show", type=int, default=5, help="how many of the longest gaps to describe")
    args = parser.parse_args(argv)
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen" if not os.environ.get("DISPLAY") else "xcb")
    scratch = Path(tempfile.mkdtemp(prefix="privelet-stall-"))
    os.environ["PRIVELET_STUDIO_SETTINGS"] = str(scratch / "settings.ini")
    os.environ["PRIVELET_LEDGER"] = str(scratch / "ledger.sqlite")
    os.environ["PRIVELET_RECOVERY"] = str(scratch / "recovery")

    from .. import io as pio
    from ..bench import brazil_schema
    from ..engine import PriveletError
    from ..io.bench import write_brazil_csv

    args.data.mkdir(parents=True, exist_ok=True)
    schema = brazil_schema(ages=args.ages)
    table = args.data / f"brazil-{args.rows}-{args.ages}-ages.csv"
    if not table.exists():
        print(f"writing {table} ({args.rows:,} rows)...", flush=True)
        partial = table.with_suffix(".partial")  # an interrupted run leaves no table to be read as whole
        write_brazil_csv(partial, args.rows, ages=args.ages)
        partial.replace(table)

    from PySide6.QtCore import QTimer
    from PySide6.QtWidgets import QApplication

    from .main_window import MainWindow

    app = QApplication.instance() or QApplication([])
    window = MainWindow()
    window.resize(1200, 800)
    window.show()
    loaded = threading.Event()
    window.tableLoaded.connect(lambda *_: loaded.set())
    window.open_table(table, pio.sniff_table(table), schema=schema)
    while not loaded.is_set():
        app.processEvents()
        time.sleep(0.01)
    window.document.set_privacy(mechanism="privelet+")  # not the default, the best strategy: it would be chosen first
    window.document.set_sa(("Age", "Gender"))
    try:
        window.document.release_job()
    except PriveletError as exc:  # run_release would ask in a modal box, and a benchmark has no one to answer it
        print("not ready to release:", exc, file=sys.stderr)
        return 1

    ticks: list[tuple[float, str]] = []
    stage = ["starting"]
    samples: dict[int, str] = {}  # tick index -> where the GUI thread was while that tick was late
    window.runner.progressed.connect(lambda _g, _f, text: stage.__setitem__(0, text))
    timer = QTimer()
    timer.setInterval(_TICK_MS)
    timer.timeout.connect(lambda: ticks.append((time.perf_counter(), stage[0])))
    done = threading.Event()
    outcome: list[object] = []

    def finished(result: object) -> None:
        outcome.append(result)
        done.set()

    window.releaseFinished.connect(finished)
    gui_thread = threading.get_ident()

    def watch() -> None:  # samples the GUI thread's stack whenever a tick is late
        while not done.is_set():
            time.sleep(STALL_MS / 2000)
            if ticks and time.perf_counter() - ticks[-1][0] > STALL_MS / 1000:
                samples.setdefault(len(ticks), _gui_thread_stack(gui_thread))

    watchdog = threading.Thread(target=watch, daemon=True)
    timer.start()
    started = time.perf_counter()
    watchdog.start()
    if not window.run_release():
        print("the release did not start:", window.release_panel.blockers.text(), file=sys.stderr)
        return 1
    while not done.is_set():
        app.processEvents()
        time.sleep(0.001)
    elapsed = time.perf_counter() - started
    timer.stop()
    watchdog.join()
    gaps = sorted(((b[0] - a[0]) * 1000, i + 1, b[1]) for i, (a, b) in enumerate(itertools.pairwise(ticks)))
    values = [g for g, _, _ in gaps]
    print(f"release of {args.rows:,} rows into {schema.size:,} cells: {elapsed:.2f} s, "
          f"{len(ticks):,} ticks of {_TICK_MS} ms asked")
    print(f"GUI thread gaps: longest {values[-1]:.0f} ms, 99th percentile {values[int(0.99 * (len(values) - 1))]:.0f} ms, "
          f"{sum(v > STALL_MS for v in values)} over {STALL_MS:.0f} ms")
    for gap, index, at in reversed(gaps[-args.show:]):
        print(f"  {gap:6.0f} ms during {at!r}")
        if index in samples:
            print("         " + samples[index].replace("\n", "\n         "))
    window.tasks.shutdown()  # not window.close(): that would ask what to do with the unsaved release
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
