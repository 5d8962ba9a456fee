"""Engine benchmark on a synthetic table shaped like the paper's Brazil extract.

Run ``python -m privelet_gui.bench`` (``--rows`` to change n, ``--repeat`` for best-of-k
timings). It prints the figures and the ratios the engine's targets are stated in, each measured
in the same run:

- counting n tuples into M against a bare ``np.bincount`` over precomputed flat codes;
- Basic, Privelet+ (S_A = {Age, Gender}), Privelet (S_A empty) and the release's default (the
  best strategy for the paper's workload) at Brazil scale on one thread, two threads and every
  core, timed in turns, with the ratios Privelet+ / Basic, Privelet / Privelet+ and
  best / Privelet+, and the default number of threads against one; on one thread also the user
  CPU time, which leaves out the system's (the page faults of fresh memory, which vary a lot on
  some machines);
- the peak additional memory of each mechanism against the bytes of M (``--big`` adds Privelet
  at about 4 x 10^8 cells);
- the threads on a small release (2-D 1024 x 1024 Privelet) at 1, 2 and every core, and the
  default;
- the first release in a fresh process with numba's cache empty (every kernel it uses compiled)
  against a second one, each in a process of its own (``--first-run`` runs this section alone);
- the calibration over epsilon (``--calibration`` runs this section alone);
- the two noise samplers' cost per measurement, and of their AES blocks alone (``--samplers``).

Every release timed is unseeded, as the product's are. The table's values are synthetic (no real
person is in it).
"""

from __future__ import annotations

import argparse
import gc
import math
import os
import subprocess
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable, Hashable, Mapping
from functools import partial
from typing import TypeVar

import numpy as np
import pandas as pd

from .engine import (
    EPSILON_MAX,
    EPSILON_MIN,
    Hierarchy,
    NominalAttribute,
    OrdinalAttribute,
    PriveletError,
    ReleaseSpec,
    Schema,
    best_strategy,
    frequency_matrix,
    paper_workload,
    prepare_kernels,
    thread_count,
    usable_cores,
)
from .engine.descriptions import describe_measurements

__all__ = ["brazil_schema", "brazil_table", "main", "occupation_hierarchy"]


def occupation_hierarchy(rng: np.random.Generator, leaves: int = 512) -> Hierarchy:
    """512 occupations in major groups of uneven size (height 3, like the paper's)."""
    sizes: list[int] = []
    while sum(sizes) < leaves:
        sizes.append(min(int(rng.integers(4, 41)), leaves - sum(sizes)))
    groups: dict[str, list[str]] = {}
    first = 0
    for g, size in enumerate(sizes):
        groups[f"major-{g:02d}"] = [f"occ-{i:03d}" for i in range(first, first + size)]
        first += size
    return Hierarchy.from_nested({"*": groups})


def brazil_schema(seed: int = 0, ages: int = 101) -> Schema:
    """Age 101 (ordinal), Gender 2 (h = 2), Occupation 512 (h = 3), Income 1001 (ordinal)."""
    rng = np.random.default_rng(seed)
    return Schema(
        [
            OrdinalAttribute.integer_range("Age", 0, ages - 1),
            NominalAttribute("Gender", Hierarchy.flat(["Male", "Female"])),
            NominalAttribute("Occupation", occupation_hierarchy(rng)),
            OrdinalAttribute.integer_range("Income", 0, 1000),
        ]
    )


def brazil_table(schema: Schema, rows: int, seed: int = 1) -> pd.DataFrame:
    """A synthetic table: skewed ages, occupations and incomes; categorical text columns."""
    rng = np.random.default_rng(seed)
    age = np.clip(rng.normal(35, 18, rows), 0, schema["Age"].size - 1).astype(np.int16)
    occupations = schema["Occupation"].labels
    popularity = 1.0 / np.arange(1, len(occupations) + 1) ** 0.8
    occupation = rng.choice(len(occupations), rows, p=popularity / popularity.sum())
    income = np.clip(rng.lognormal(5.0, 1.0, rows), 0, 1000).astype(np.int16)
    return pd.DataFrame(
        {
            "Age": age,
            "Gender": pd.Categorical.from_codes(rng.integers(0, 2, rows), categories=pd.Index(schema["Gender"].labels)),
            "Occupation": pd.Categorical.from_codes(occupation, categories=pd.Index(occupations)),
            "Income": income,
        }
    )


Key = TypeVar("Key", bound=Hashable)  # what names a timer


def best_of(repeat: int, work: Callable[[], object]) -> float:
    """The best of ``repeat`` timings of ``work``, the garbage of earlier work collected once
    before them (not before each: a full collection leaves the caches cold)."""
    gc.collect()
    best = float("inf")
    for _ in range(repeat):
        started = time.perf_counter()
        work()
        best = min(best, time.perf_counter() - started)
    return best


def best_in_turn(repeat: int, timers: Mapping[Key, Callable[[], float]]) -> dict[Key, float]:
    """The best of ``repeat`` seconds of each timer (a callable that runs its work and returns
    the seconds it took), the timers taking turns after one untimed round (the first touch of a
    fresh process's memory costs more): a slow spell of a shared machine then slows all of them,
    not one, and the ratios between them hold. Every other round runs in the reverse order, so
    that no timer always runs after the same one."""
    for timer in timers.values():
        timer()
    best = dict.fromkeys(timers, math.inf)
    names = list(timers)
    for turn in range(repeat):
        for name in reversed(names) if turn % 2 else names:
            best[name] = min(best[name], timers[name]())
    return best


def peak_additional_bytes(work: Callable[[], object]) -> int:
    """Peak resident memory added while ``work`` runs: on Linux the kernel's high-water mark
    (reset before the work) minus the resident memory before it; elsewhere tracemalloc's peak."""
    gc.collect()
    if sys.platform.startswith("linux") and os.path.exists("/proc/self/clear_refs"):
        before = _status_bytes("VmRSS")
        with open("/proc/self/clear_refs", "w") as handle:
            handle.write("5")  # reset the peak (VmHWM) to the current resident size
        result = work()
        peak = _status_bytes("VmHWM") - before
        del result
        return peak
    tracemalloc.start()
    try:
        result = work()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    del result
    return peak


def _status_bytes(field: str) -> int:
    with open("/proc/self/status") as handle:
        for line in handle:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    raise OSError(f"no {field} in /proc/self/status")


def thread_choices() -> list[int]:
    """1, 2 and every usable core (without repeats)."""
    return sorted({1, min(2, usable_cores()), usable_cores()})


def bench_counting(schema: Schema, rows: int, repeat: int) -> np.ndarray:
    """Time counting the synthetic table against a bare bincount; return M."""
    table = brazil_table(schema, rows)
    flat = np.ravel_multi_index(
        [
            table["Age"].to_numpy(np.int64),
            table["Gender"].cat.codes.to_numpy(np.int64),
            table["Occupation"].cat.codes.to_numpy(np.int64),
            table["Income"].to_numpy(np.int64),
        ],
        schema.shape,
    )
    best = best_in_turn(repeat, {
        "bare": partial(best_of, 1, lambda: np.bincount(flat, minlength=schema.size)),
        "counting": partial(best_of, 1, lambda: frequency_matrix(table, schema)),
    })
    print(f"counting: frequency_matrix {best['counting']:.3f} s, bare np.bincount {best['bare']:.3f} s, "
          f"ratio {best['counting'] / best['bare']:.2f}")
    return frequency_matrix(table, schema)


def release_specs(schema: Schema, epsilon: float) -> dict[str, ReleaseSpec]:
    """The releases timed and measured: Basic, Privelet+ (S_A = {Age, Gender}), Privelet, and
    Best, the release's default (the best strategy for the paper's workload)."""
    plus = ReleaseSpec(schema, epsilon, "privelet+", ("Age", "Gender"))
    return {
        "Basic": ReleaseSpec(schema, epsilon, "basic"),
        "Privelet+": plus,
        "Privelet": ReleaseSpec(schema, epsilon, "privelet"),
        "Best": best_strategy(plus, paper_workload(schema), marginals=True).spec,
    }


def bench_releases(schema: Schema, matrix: np.ndarray, epsilon: float, repeat: int) -> None:
    """Basic, Privelet+, Privelet and the best strategy at 1, 2 and all cores (and the default), timed in turns."""
    specs = release_specs(schema, epsilon)
    threads = thread_choices()
    user_cpu: dict[str, float] = {}  # one thread: the best user CPU seconds (page faults are system time)

    def timed(name: str, spec: ReleaseSpec, workers: int | None) -> float:
        gc.collect()
        user, started = os.times().user, time.perf_counter()
        spec.run(matrix, workers=workers)
        seconds = time.perf_counter() - started
        if workers == 1:
            user_cpu[name] = min(user_cpu.get(name, math.inf), os.times().user - user)
        return seconds

    timers = {(name, workers): partial(timed, name, spec, workers)
              for name, spec in specs.items() for workers in (*threads, None)}
    best = best_in_turn(repeat, timers)
    default = thread_count(matrix.size)
    print(f"releases at Brazil scale ({matrix.size:,} cells), best of {repeat} in turns "
          f"(the default is {default} thread{'s' if default > 1 else ''} here; Best is the release's default, "
          f"the best strategy for the paper's workload: {describe_measurements(specs['Best'])}):")
    for name in specs:
        cells = ", ".join(f"{workers} thread{'s' if workers > 1 else ''} {best[name, workers]:.3f} s" for workers in threads)
        print(f"  {name:9s}: {cells}, default {best[name, None]:.3f} s; one thread's user CPU {user_cpu[name]:.3f} s")
    print(f"  one thread's user CPU (the system's time, page faults among it, left out): "
          f"Privelet+ / Basic = {user_cpu['Privelet+'] / user_cpu['Basic']:.2f}, "
          f"Privelet / Privelet+ = {user_cpu['Privelet'] / user_cpu['Privelet+']:.2f}, "
          f"Best / Privelet+ = {user_cpu['Best'] / user_cpu['Privelet+']:.2f}")
    for workers in (*threads, None):
        label = "default" if workers is None else f"{workers} thread{'s' if workers > 1 else ''}"
        plus, basic, plain = best["Privelet+", workers], best["Basic", workers], best["Privelet", workers]
        print(f"  {label}: Privelet+ / Basic = {plus / basic:.2f} (target <= 1.3), "
              f"Privelet / Privelet+ = {plain / plus:.2f} (target <= 2), "
              f"Best / Privelet+ = {best['Best', workers] / plus:.2f}")
    for name in specs:
        print(f"  {name}: default / one thread = {best[name, None] / best[name, 1]:.2f} (target <= 1); "
              f"all cores / one thread = {best[name, threads[-1]] / best[name, 1]:.2f} (target <= 1)")


def bench_memory(schema: Schema, matrix: np.ndarray, epsilon: float, big: bool) -> None:
    """Peak additional memory of each mechanism against M's bytes (target <= 2)."""
    specs = release_specs(schema, epsilon)
    for name, spec in specs.items():
        peak = peak_additional_bytes(partial(spec.run, matrix))
        print(f"memory, {name}: peak additional {peak / 2**20:,.0f} MiB for M of {matrix.nbytes / 2**20:,.0f} MiB, "
              f"ratio {peak / matrix.nbytes:.2f} (target <= 2)")
    if big:
        ages = round(4e8 / math.prod(schema.shape[1:]))
        wide = brazil_schema(ages=ages)
        counts = np.random.default_rng(5).integers(0, 2, wide.shape).astype(np.float64)
        peak = peak_additional_bytes(partial(ReleaseSpec(wide, epsilon, "privelet").run, counts))
        print(f"memory, Privelet at {counts.size:,} cells: peak additional {peak / 2**20:,.0f} MiB for M of "
              f"{counts.nbytes / 2**20:,.0f} MiB, ratio {peak / counts.nbytes:.2f} (target <= 2)")


def bench_small_threads(epsilon: float, repeat: int) -> None:
    """2-D 1024 x 1024 Privelet at 1, 2 and all cores, and the default."""
    schema = Schema([OrdinalAttribute.integer_range("x", 0, 1023), OrdinalAttribute.integer_range("y", 0, 1023)])
    counts = np.random.default_rng(3).integers(0, 5, schema.shape).astype(np.float64)
    spec = ReleaseSpec(schema, epsilon, "privelet")
    threads = thread_choices()
    best = best_in_turn(max(repeat, 5), {workers: partial(best_of, 3, partial(spec.run, counts, workers=workers))
                                         for workers in (*threads, None)})
    cells = ", ".join(f"{workers} thread{'s' if workers > 1 else ''} {best[workers] * 1e3:.1f} ms" for workers in threads)
    print(f"threads, 2-D 1024 x 1024 Privelet: {cells}, default ({thread_count(counts.size)}) "
          f"{best[None] * 1e3:.1f} ms; default / one thread = {best[None] / best[1]:.2f} (target <= 1)")


def bench_first_run() -> None:
    """The README's first command's release (``privelet release --demo``: the bundled sample read,
    counted, released and saved) in a fresh process with numba's cache in an empty folder, then
    again in another process with that cache: the whole process's time each."""
    with tempfile.TemporaryDirectory() as folder:
        environment = {**os.environ, "NUMBA_CACHE_DIR": os.path.join(folder, "numba"),
                       "PRIVELET_LEDGER": os.path.join(folder, "ledger.sqlite3")}
        command = [sys.executable, "-m", "privelet_gui.cli", "release", "--demo", "--quiet", "--yes", "--force",
                   "--out", os.path.join(folder, "demo.npz")]
        seconds = []
        for _ in range(2):
            started = time.perf_counter()
            subprocess.run(command, env=environment, capture_output=True, check=True)
            seconds.append(time.perf_counter() - started)
    print(f"first run: privelet release --demo in a fresh process {seconds[0]:.2f} s with numba's cache empty, "
          f"{seconds[1]:.2f} s with it filled; ratio {seconds[0] / seconds[1]:.1f} (target <= 5)")


def bench_calibration(schema: Schema, sa: tuple[str, ...], rows: int) -> None:
    """Print the excess of the effective noise scale over lambda at every other decade of epsilon."""
    specs = {
        "Basic": ReleaseSpec(schema, 1.0, "basic"),
        "Privelet+": ReleaseSpec(schema, 1.0, "privelet+", sa),
        "Privelet": ReleaseSpec(schema, 1.0, "privelet"),
    }
    print(f"calibration, n = {rows:,}: effective scale / lambda - 1 (target < 1e-6 at every accepted epsilon)")
    low, high = round(math.log10(EPSILON_MIN)), round(math.log10(EPSILON_MAX))
    for exponent in range(low, high + 1, 2):
        epsilon = 10.0**exponent
        cells = []
        for name, spec in specs.items():
            try:
                calibration = spec.replace(epsilon=epsilon).calibration(rows)
                cells.append(f"{name} {calibration.scale / calibration.nominal_scale - 1:.3g}")
            except PriveletError as exc:  # an epsilon this schema cannot serve
                cells.append(f"{name} refused ({str(exc).split(': ')[0]})")
        print(f"  epsilon 1e{exponent:+03d}: " + ", ".join(cells))


def bench_samplers(schema: Schema, sa: tuple[str, ...], epsilon: float, repeat: int) -> None:
    """Nanoseconds per measurement of each sampler's noise on 2**20 zeros (one thread), and of
    the AES blocks alone, at the Privelet+ release's noise rate and at a tenth of its epsilon."""
    from .engine.noise.bits import BlockCipher, release_key
    from .engine.noise.samplers import NoiseSampler

    count = 1 << 20
    z = np.zeros(count, dtype=np.int64)
    out = np.empty(count)
    ones = np.ones(1, dtype=np.int64)
    dens = np.ones(count, dtype=np.int64)
    positions = np.arange(count, dtype=np.uint64)
    cipher = BlockCipher(release_key())
    inputs = np.zeros((count, 2), dtype=np.uint64)
    inputs[:, 0] = positions
    spec = ReleaseSpec(schema, epsilon, "privelet+", sa)
    for rate in (epsilon, epsilon / 10):
        calibration = spec.replace(epsilon=rate).calibration(1)
        timers = {name: partial(best_of, 1, partial(NoiseSampler(name, calibration).add, z, out, count, ones, dens,
                                                      np.zeros(1, dtype=np.uint64), positions, cipher))
                  for name in ("exact", "standard")}
        timers["aes"] = partial(best_of, 1, partial(cipher.blocks, inputs))
        best = best_in_turn(repeat, timers)
        cost = {name: seconds / count * 1e9 for name, seconds in best.items()}
        print(f"samplers at epsilon {rate:g} (scale {float(calibration.scale_units):.3g} grid units), ns per measurement, "
              f"one thread: exact {cost['exact']:.2f}, standard {cost['standard']:.2f}, their AES blocks alone "
              f"{cost['aes']:.2f}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m privelet_gui.bench", description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=10_000_000, help="number of tuples n (default 10,000,000)")
    parser.add_argument("--repeat", type=int, default=5, help="best of this many timings (default 5)")
    parser.add_argument("--epsilon", type=float, default=1.0)
    parser.add_argument("--big", action="store_true", help="also the memory of Privelet at about 4 x 10^8 cells")
    parser.add_argument("--samplers", action="store_true", help="only the noise samplers' section")
    parser.add_argument("--calibration", action="store_true", help="only the calibration section (no table needed)")
    parser.add_argument("--first-run", action="store_true", help="only the first run's compilation")
    args = parser.parse_args(argv)

    schema = brazil_schema()
    sa = ("Age", "Gender")
    print(f"schema {schema.shape}, m = {schema.size:,} cells, n = {args.rows:,} tuples, epsilon = {args.epsilon}; "
          f"{usable_cores()} usable cores")
    if args.calibration:
        bench_calibration(schema, sa, args.rows)
        return 0
    if args.first_run:
        bench_first_run()
        return 0
    print(f"kernels compiled or loaded in {prepare_kernels():.2f} s")
    if args.samplers:
        bench_samplers(schema, sa, args.epsilon, args.repeat)
        return 0
    matrix = bench_counting(schema, args.rows, args.repeat)
    bench_releases(schema, matrix, args.epsilon, args.repeat)
    bench_memory(schema, matrix, args.epsilon, args.big)
    bench_small_threads(args.epsilon, args.repeat)
    bench_samplers(schema, sa, args.epsilon, args.repeat)
    bench_calibration(schema, sa, args.rows)
    bench_first_run()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
