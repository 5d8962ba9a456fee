"""Engine benchmark on a synthetic table shaped like the paper's Brazil extract.

Run ``python -m privelet_gui.bench`` (``--rows`` to change n, ``--repeat`` for
best-of-k timings). It prints the figures and the ratios the engine's targets
are stated in, each measured in the same run:

- the machine: numpy's SIMD extensions, a uniform's and a log's cost in the cache (the floor
  below is mostly these, and a log is several times dearer where numpy has no AVX-512 for it),
  and the first touch of memory the size of the output, right after as much was freed and 3 s
  after (a virtual machine's host may have taken it back by then: the releases' times below
  then vary by up to that much);
- counting n tuples into M versus a bare ``np.bincount`` over precomputed flat codes, on
  all cores (as by default) and on one thread, the three timed in turn (by the compiled count
  where numba's loops are loaded, as they are here and in the app; a count alone in a fresh
  process keeps numpy's weighted bincount, see ``python -m privelet_gui.io.bench``);
- a Privelet+ release (S_A = {Age, Gender}) versus this project's Basic and the floor below,
  the three timed in turn, and a textbook Basic (``M + rng.laplace(0, 2 / epsilon, M.shape)``,
  which leaks through floating point and is never used for releases);
- the peak additional memory of the release, versus the bytes of M;
- the floor: drawing one uniform and taking one log per coefficient of the Privelet+
  release, on the same threads, and the release's time over it;
- what the threads lose to each other: the voluntary context switches of each Privelet+
  release (a thread waiting for the GIL sleeps), and two one-thread releases run at once in
  two processes (no GIL shared), against one alone;
- Privelet (S_A empty: the whole matrix is one block) against Privelet+, the two timed in
  turn, and its peak additional memory;
- the cost per cell of every mechanism from 2**21 to 2**27 cells (``--series`` runs this
  section alone): the Brazil shape with fewer or more ages (one S_A block per age and
  gender for Privelet+), each the best of four timings at least (a spike of the machine's,
  up to 1.5x a release here, lasts a release or two), the smaller ones of more (up to 20);
- the first exact worst-case variance of the schema;
- the calibration over epsilon (``--calibration`` runs this section alone): how much the
  effective noise scale exceeds lambda, from epsilon = 1e-12 to 1e12, for Basic,
  Privelet+ and Privelet;
- the two noise samplers (``--samplers`` runs this section alone): the cost per
  coefficient of the exact and the standard sampler, and of their random words alone,
  at the Privelet+ release's own noise rate and at a tenth of its epsilon (where the
  exact sampler draws a byte of L's digits beside each 32-bit fair word), the exact one on
  its numpy passes too where numba gives it the compiled loop, and the release with each,
  all drawing from AES-128 counter mode as every unseeded release does.

Every release timed is unseeded, as the product's are: its noise's bits come from AES-128 in
counter mode keyed by the operating system (a seeded generator's would time another source).

The table's values are synthetic (no real person is in it).
"""

from __future__ import annotations

import argparse
import gc
import importlib
import math
import mmap
import multiprocessing
import os
import queue
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable, Hashable, Mapping
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from multiprocessing.queues import Queue
from multiprocessing.synchronize import Barrier
from typing import TypeVar
from unittest.mock import patch

import numpy as np
import pandas as pd

from .engine import (
    Hierarchy,
    NominalAttribute,
    OrdinalAttribute,
    ReleaseSpec,
    Schema,
    VarianceModel,
    _compiled,
    basic,
    frequency_matrix,
    privelet,
    privelet_plus,
)
from .engine._memory import output_array
from .engine.noise import NoiseSampler, Sampler
from .engine.pipeline import worker_count

__all__ = ["brazil_schema", "brazil_table", "main"]


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


def brazil_schema(seed: int = 0) -> Schema:
    """Age 101 (ordinal), Gender 2 (h = 2), Occupation 512 (h = 3), Income 1001 (ordinal)."""
    rng = np.random.default_rng(seed)
    return Schema(
        [
            OrdinalAttribute.integer_range("Age", 0, 100),
            NominalAttribute("Gender", Hierarchy.flat(["Male", "Female"])),
            NominalAttribute("Occupation", occupation_hierarchy(rng)),
            OrdinalAttribute.integer_range("Income", 0, 1000),
        ]
    )


def brazil_table(schema: Schema, rows: int, seed: int = 1) -> pd.DataFrame:
    """A synthetic table: skewed ages, occupations and incomes; categorical text columns."""
    rng = np.random.default_rng(seed)
    age = np.clip(rng.normal(35, 18, rows), 0, 100).astype(np.int16)
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
    before them. A full collection right before each timing walked every object and left the
    caches cold: it added 2 to 3.5 ms to a 14 ms release of 2**21 cells here (in one process,
    alternating), where a release in the app starts with no such walk. The collector stays on
    while they run, as in the app: with it off, counting a table (whose garbage it then keeps)
    took up to twice as long."""
    gc.collect()
    best = float("inf")
    for _ in range(repeat):
        started = time.perf_counter()
        work()
        best = min(best, time.perf_counter() - started)
    return best


def best_in_turn(repeat: int, timers: Mapping[Key, Callable[[], float]]) -> dict[Key, float]:
    """The best of ``repeat`` seconds of each timer (a callable that runs its work and returns
    the seconds it took), the timers taking turns after one untimed round (the first touch of
    a fresh process's memory costs up to 10x): on a shared machine a slow spell then slows
    all of them, not one, and the ratios between them hold. Every other round runs in the
    reverse order, so that no timer always runs after the same one: a release that has just
    freed its output leaves the next one memory the host has not taken back yet (see
    :func:`first_touch`), and in a fixed order Privelet+ always ran after the floor, which
    frees none (0.669 s best of 5 against Basic's 0.448 s in one run, and 0.533-0.570 s for
    the same Privelet+ after another release later in that run)."""
    for timer in timers.values():
        timer()
    best = dict.fromkeys(timers, math.inf)
    names = list(timers)
    for turn in range(repeat):
        for name in reversed(names) if turn % 2 else names:
            best[name] = min(best[name], timers[name]())
    return best


def peak_additional_bytes(work: Callable[[], object]) -> int:
    """Peak resident memory added while ``work`` runs.

    On Linux, the kernel's high-water mark of resident memory (reset before the work) minus
    the resident memory before it: it counts every allocation, the engine's memory-mapped
    arrays included. Elsewhere, tracemalloc's peak (numpy reports its own allocations).
    """
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


def bench_counting(schema: Schema, rows: int, repeat: int) -> np.ndarray:
    """Time counting the synthetic table against a bare bincount; return M.

    The bare bincount and the counting on all cores and on one thread run in turn, ``repeat``
    times after one untimed round (the first touch of a fresh process's memory costs up to
    10x): on a shared machine a slow spell then slows all three, not one of them.
    """
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
        "all cores": partial(best_of, 1, lambda: frequency_matrix(table, schema)),
        "one thread": partial(best_of, 1, lambda: frequency_matrix(table, schema, workers=1)),
    })
    bare, counting, serial = best["bare"], best["all cores"], best["one thread"]
    how = "the compiled count, numba's loops loaded" if _compiled.loaded_count_loop() else "a weighted bincount"
    print(
        f"counting ({how}): frequency_matrix {counting:.3f} s, bare np.bincount {bare:.3f} s, ratio "
        f"{counting / bare:.2f} (target <= 1.3); on one thread {serial:.3f} s, ratio {serial / bare:.2f}"
    )
    return frequency_matrix(table, schema)


def noise_floor(coefficients: int, threads: int) -> float:
    """Seconds to draw one uniform and take one log per coefficient on ``threads`` threads, in
    arrays of 2**17 (as the pipeline's tiles): what the standard sampler's draw cannot beat."""
    tile = 1 << 17
    tiles = -(-coefficients // tile)
    generators = [np.random.default_rng(seed) for seed in range(threads)]
    buffers = [np.empty(tile) for _ in range(threads)]

    def draw(thread: int) -> None:
        generator, buffer = generators[thread], buffers[thread]
        for _ in range(thread, tiles, threads):
            generator.random(out=buffer)
            np.log(buffer, out=buffer)

    started = time.perf_counter()
    with ThreadPoolExecutor(max_workers=threads) as pool:
        list(pool.map(draw, range(threads)))
    return time.perf_counter() - started


def first_touch(nbytes: int, idle: float) -> float:
    """Seconds to fault in ``nbytes`` of fresh memory, as a release's output is (one write a
    page, :func:`~privelet_gui.engine._memory.output_array`), right after as much memory was
    touched and freed and ``idle`` seconds went by. A virtual machine's host may take freed
    memory back (Linux's free page reporting: 2 s after it is freed by default; on the
    machines here as soon as 1 GiB waits, so a release that frees its output gives it back at
    once): the next first touch then pays the host's faults too, and a release's time depends
    on whether the memory it gets had been given back (up to 1.5 s more for 790 MiB here, in
    one release of three to eight at random: the default best of 5 timings is likely to hold
    one without it)."""
    page_values = mmap.PAGESIZE // 8
    earlier = output_array((nbytes // 8,))
    earlier[::page_values] = 1.0
    del earlier
    time.sleep(idle)
    fresh = output_array((nbytes // 8,))
    started = time.perf_counter()
    fresh[::page_values] = 1.0
    return time.perf_counter() - started


def in_cache_costs(repeat: int = 200) -> tuple[float, float]:
    """Nanoseconds per value, one thread, in the L2 cache: drawing a uniform, and taking a log
    (the floor's two steps; numpy's log is vectorised only on some CPUs)."""
    values = np.empty(1 << 14)
    generator = np.random.default_rng(0)
    generator.random(out=values)
    logs = np.empty_like(values)

    def draws() -> None:
        for _ in range(repeat):
            generator.random(out=values)

    def logarithms() -> None:
        for _ in range(repeat):
            np.log(values, out=logs)

    per_value = 1e9 / repeat / values.size
    return best_of(5, draws) * per_value, best_of(5, logarithms) * per_value


_SIMD_NAMED = ("AVX2", "FMA3", "AVX512F", "AVX512_SKX")


def cpu_features() -> str:
    """Which of :data:`_SIMD_NAMED` numpy found on this CPU, or '?' where numpy does not say."""
    for module in ("numpy._core._multiarray_umath", "numpy.core._multiarray_umath"):  # numpy 2, numpy 1
        try:
            features = importlib.import_module(module).__cpu_features__
        except (ImportError, AttributeError):
            continue
        found = [name for name in _SIMD_NAMED if features.get(name)]
        return ", ".join(found) or f"none of {', '.join(_SIMD_NAMED)}"
    return "?"


def context_switches(work: Callable[[], object]) -> int | None:
    """Voluntary context switches of this process while ``work`` runs (a thread that waits for
    the GIL, or for a lock, sleeps: one switch each time); None where they are not counted
    (Windows, which has no ``resource`` module)."""
    try:
        import resource
    except ImportError:
        work()
        return None
    before = resource.getrusage(resource.RUSAGE_SELF).ru_nvcsw
    work()
    return resource.getrusage(resource.RUSAGE_SELF).ru_nvcsw - before


def two_processes(matrix: np.ndarray, schema: Callable[[], Schema], epsilon: float, sa: tuple[str, ...]) -> list[float]:
    """Seconds of one-thread Privelet+ releases of ``matrix`` in two processes started together
    (each warmed up first): what two threads could reach if they did not share the GIL.
    ``schema`` makes the schema in each process (a module-level function: it is pickled)."""
    context = multiprocessing.get_context("spawn")
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "matrix.npy")
        np.save(path, matrix)
        start, results = context.Barrier(2), context.Queue()
        workers = [context.Process(target=_one_thread_release, args=(path, schema, epsilon, sa, start, results))
                   for _ in range(2)]
        for process in workers:
            process.start()
        times: list[float] = []
        while len(times) < len(workers):
            try:
                times.append(results.get(timeout=1.0))
            except queue.Empty:  # a process that died leaves the other waiting at the barrier
                failed = [process.exitcode for process in workers if process.exitcode not in (None, 0)]
                if failed:
                    for process in workers:
                        process.terminate()
                    raise RuntimeError(f"a benchmark process failed (exit code {failed[0]}); its error is above") from None
        for process in workers:
            process.join()
    return sorted(times)


def _one_thread_release(path: str, make_schema: Callable[[], Schema], epsilon: float, sa: tuple[str, ...], start: Barrier,
                        results: Queue[float]) -> None:
    matrix, schema = np.load(path), make_schema()
    privelet_plus(matrix, schema, epsilon, sa, workers=1)  # the first touch of this process's memory
    start.wait()
    started = time.perf_counter()
    privelet_plus(matrix, schema, epsilon, sa, workers=1)
    results.put(time.perf_counter() - started)


def bench_series(epsilon: float, repeat: int) -> None:
    """Print the cost per cell of Basic, Privelet+ and Privelet from 2**21 to 2**27 cells."""
    base = brazil_schema()
    inner = math.prod(base.shape[1:])
    ages = [max(2, round(2**power / inner)) for power in range(21, 28)]
    counts = np.random.default_rng(5).integers(0, 3, (max(ages), *base.shape[1:])).astype(np.float64)
    print("cost per cell, ns, all cores (the Brazil shape with fewer or more ages; target: flat within 1.5x)")
    names = ("Basic", "Privelet+", "Privelet")
    points: dict[tuple[int, str], Callable[[], float]] = {}
    for age in ages:
        schema = Schema([OrdinalAttribute.integer_range("Age", 0, age - 1), *(base[name] for name in base.names[1:])])
        matrix = counts[:age]
        specs = dict(zip(names, (ReleaseSpec(schema, epsilon, "basic"),
                                 ReleaseSpec(schema, epsilon, "privelet+", ("Age", "Gender")),
                                 ReleaseSpec(schema, epsilon, "privelet")), strict=True))
        # Short releases (tens of ms at 2**21 cells) swing more with the machine's noise: more
        # timings for them, about as many seconds' worth as the biggest gets (at most 20).
        timings = min(20, max(4, repeat, round(repeat * 2**27 / matrix.size / 8)))
        for name, spec in specs.items():
            points[age, name] = partial(best_of, max(1, timings // repeat), partial(spec.run, matrix))
    # Every point timed in each of the turns: a slow spell of the machine (seconds long here)
    # then slows one turn of every point, not every timing of a few points.
    best = best_in_turn(repeat, points)
    series = {name: [best[age, name] / (age * inner) * 1e9 for age in ages] for name in names}
    for number, age in enumerate(ages):
        cells = ", ".join(f"{name} {series[name][number]:5.1f}" for name in names)
        print(f"  2^{math.log2(age * inner):.1f} cells ({age} ages): {cells}")
    print("  max / min: " + ", ".join(f"{name} {max(v) / min(v):.2f}" for name, v in series.items()))


def bench_calibration(schema: Schema, sa: tuple[str, ...], rows: int) -> None:
    """Print the excess of the effective noise scale over lambda at every decade of epsilon."""
    from .engine import PriveletError
    from .engine.noise import EPSILON_MAX, EPSILON_MIN

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


def bench_samplers(schema: Schema, matrix: np.ndarray, sa: tuple[str, ...], epsilon: float, repeat: int) -> None:
    """Time the exact and the standard sampler against their random words alone, at the
    Privelet+ release's noise rate and at a tenth of its epsilon (the exact sampler's 64-bit
    fair words), and the release with each sampler."""
    from .engine._memory import recycle_block_buffers
    from .engine.exact import ExactSampler
    from .engine.noise import noise_sampler

    recycle_block_buffers()  # as a release does: freed buffers are reused, not faulted in again

    spec = ReleaseSpec(schema, epsilon, "privelet+", sa)
    rows = int(matrix.sum())
    names: tuple[Sampler, ...] = ("standard", "exact")
    compiled = _compiled.sampler_loops() is not None
    for rate_epsilon in (epsilon, epsilon / 10):
        calibration = spec.replace(epsilon=rate_epsilon).calibration(rows)
        samplers: dict[str, NoiseSampler] = {name: noise_sampler(name, calibration) for name in names}
        exact = samplers["exact"]
        words = {"standard": 1.0, "exact": exact.words_per_draw if isinstance(exact, ExactSampler) else 1.0}
        if compiled:
            samplers[_NUMPY_PASSES] = _OnNumpyPasses(exact)
            words[_NUMPY_PASSES] = words["exact"]
        cost, bits = _sampler_costs(samplers, words, repeat)
        ratio = cost["exact"] / cost["standard"]
        paths = f"compiled; its numpy passes {cost[_NUMPY_PASSES]:.2f}, " if compiled else "numpy passes, "
        print(
            f"samplers at epsilon {rate_epsilon:g}, scale {float(calibration.scale_units):.3g} grid units (ns per coefficient, "
            f"one thread, warm): standard {cost['standard']:.2f} (its random words alone {bits['standard']:.2f}), exact "
            f"{cost['exact']:.2f} ({paths}{words['exact']:g} word{'' if words['exact'] == 1 else 's'} each: "
            f"{bits['exact']:.2f}); exact / standard = {ratio:.2f} (target <= 3; the default if <= 1.5)"
        )
    release = {name: best_of(repeat, partial(spec.replace(sampler=name).run, matrix)) for name in names}
    print(
        f"  Privelet+ release, all cores: standard {release['standard']:.3f} s, exact {release['exact']:.3f} s; "
        f"exact / standard = {release['exact'] / release['standard']:.2f}"
    )


_NUMPY_PASSES = "exact, numpy passes"


class _OnNumpyPasses:
    """The exact sampler with its compiled loops turned off: what it costs without the fast extra."""

    name: Sampler = "exact"

    def __init__(self, sampler: NoiseSampler):
        self.sampler = sampler

    def add(self, units: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        with patch.object(_compiled, "sampler_loops", lambda: None), patch.object(_compiled, "aes_words_loop", lambda: None):
            return self.sampler.add(units, rng)


def _sampler_costs(
    samplers: dict[str, NoiseSampler], words: dict[str, float], repeat: int
) -> tuple[dict[str, float], dict[str, float]]:
    """Nanoseconds per coefficient of each sampler's ``add`` on tile-sized arrays (as the
    pipeline gives them) and of drawing its random words alone (as the samplers draw them:
    :func:`~privelet_gui.engine.bits.random_words`), from AES-128 counter mode as every
    unseeded release does. All take turns, so a busy machine slows them alike; each
    figure is the best of many bursts of 16 tiles (short enough to fall between other
    programs' work), after a first burst that touches the memory."""
    from .engine.bits import random_words, secure_generator

    tile, tiles = 1 << 17, 16
    units = np.zeros(tile)
    generator = secure_generator()
    cost = dict.fromkeys(samplers, math.inf)
    bits = dict.fromkeys(samplers, math.inf)
    for burst in range(10 * repeat + 1):
        for name, sampler in samplers.items():
            started = time.perf_counter()
            for _ in range(tiles):
                sampler.add(units, generator)
            if burst:
                cost[name] = min(cost[name], (time.perf_counter() - started) / (tile * tiles) * 1e9)
            count = round(tile * words[name])
            started = time.perf_counter()
            for _ in range(tiles):
                random_words(generator.bit_generator, count)
            if burst:
                bits[name] = min(bits[name], (time.perf_counter() - started) / (tile * tiles) * 1e9)
    return cost, bits


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m privelet_gui.bench", description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=10_000_000, help="number of tuples n (default 10,000,000)")
    parser.add_argument("--repeat", type=int, default=5, help="best of this many timings (default 5)")
    parser.add_argument("--epsilon", type=float, default=1.0)
    parser.add_argument("--samplers", action="store_true", help="only the noise samplers' section")
    parser.add_argument("--calibration", action="store_true", help="only the calibration section (no table needed)")
    parser.add_argument("--series", action="store_true", help="only the cost per cell from 2**21 to 2**27 cells")
    args = parser.parse_args(argv)

    schema = brazil_schema()
    sa = ("Age", "Gender")
    print(f"schema {schema.shape}, m = {schema.size:,} cells, n = {args.rows:,} tuples, epsilon = {args.epsilon}")
    if _compiled.sampler_loops() is None:
        print("exact sampler, checks and transforms: numpy passes (numba is not installed: "
              "pip install 'privelet-gui[fast]' for their compiled loops)")
    else:
        print("exact sampler, checks and transforms: compiled loops (numba)")
    if args.calibration:
        bench_calibration(schema, sa, args.rows)
        return 0
    if args.series:
        bench_series(args.epsilon, args.repeat)
        return 0
    if args.samplers:
        bench_samplers(schema, frequency_matrix(brazil_table(schema, args.rows), schema), sa, args.epsilon, args.repeat)
        return 0

    uniform, log = in_cache_costs()
    print(f"machine: {os.cpu_count()} cores, numpy SIMD {cpu_features()}; in the L2 cache, one thread: "
          f"a uniform {uniform:.2f} ns, a log {log:.2f} ns (the floor's two steps)")
    nbytes = schema.size * 8
    print(f"  first touch of {nbytes / 2**20:,.0f} MiB (the output's size): {first_touch(nbytes, 0.0):.3f} s "
          f"right after as much was freed, {first_touch(nbytes, 3.0):.3f} s 3 s after (where the host takes "
          "freed memory back, the times below vary by this)")

    started = time.perf_counter()
    first_worst = VarianceModel(schema).worst_case(args.epsilon, sa)
    print(f"first exact worst-case variance: {time.perf_counter() - started:.3f} s ({first_worst:,.0f})")

    matrix = bench_counting(schema, args.rows, args.repeat)
    textbook_rng = np.random.default_rng()
    textbook = best_of(args.repeat, lambda: matrix + textbook_rng.laplace(0.0, 2.0 / args.epsilon, matrix.shape))
    print(f"release: textbook Basic {textbook:.3f} s (one thread)")
    plus_spec = ReleaseSpec(schema, args.epsilon, "privelet+", sa)
    times: dict[str, dict[str, float]] = {}
    coefficients = math.prod(t.n_coefficients for t in plus_spec.plan.transforms)
    for workers, label in ((None, "all cores"), (1, "one thread")):
        threads = worker_count(workers)
        timers = {
            "Privelet+": partial(best_of, 1, partial(privelet_plus, matrix, schema, args.epsilon, sa, workers=workers)),
            "Basic": partial(best_of, 1, partial(basic, matrix, args.epsilon, workers=workers)),
            "floor": partial(noise_floor, coefficients, threads),
        }
        best = best_in_turn(args.repeat, timers)
        plus, ours, floor = best["Privelet+"], best["Basic"], best["floor"]
        times[label] = best
        print(
            f"  {label}: Privelet+ {plus:.3f} s, Basic {ours:.3f} s; Privelet+ / Basic = {plus / ours:.2f} "
            f"(target <= 1.3), Privelet+ / textbook = {plus / textbook:.2f} (target <= 1)"
        )
        print(
            f"    floor (one uniform and one log per coefficient, {coefficients:,} coefficients, {threads} "
            f"thread{'s' if threads > 1 else ''}): {floor:.3f} s; Privelet+ / floor = {plus / floor:.2f} (target <= 4)"
        )

    switches = {label: context_switches(partial(privelet_plus, matrix, schema, args.epsilon, sa, workers=workers))
                for workers, label in ((None, "all cores"), (1, "one thread"))}
    apart = two_processes(matrix, brazil_schema, args.epsilon, sa)
    print(
        f"  threads: voluntary context switches per Privelet+ release {switches['all cores']} on all cores, "
        f"{switches['one thread']} on one thread; two one-thread releases at once in two processes: "
        f"{apart[0]:.3f} and {apart[1]:.3f} s (one alone: {times['one thread']['Privelet+']:.3f} s)"
    )

    # in turn with Privelet+ alone: its freed gigabytes would slow the next release of the turn
    pair = best_in_turn(args.repeat, {
        "Privelet": partial(best_of, 1, partial(privelet, matrix, schema, args.epsilon)),
        "Privelet+": partial(best_of, 1, partial(privelet_plus, matrix, schema, args.epsilon, sa)),
    })
    print(f"  Privelet (S_A empty, all cores, best of {args.repeat}, in turn with Privelet+): {pair['Privelet']:.3f} s "
          f"(Privelet+ {pair['Privelet+']:.3f} s); Privelet / Privelet+ = {pair['Privelet'] / pair['Privelet+']:.2f} "
          "(target <= 2)")

    peak = peak_additional_bytes(lambda: privelet_plus(matrix, schema, args.epsilon, sa))
    print(
        f"memory: peak additional {peak / 2**20:,.0f} MiB for M of {matrix.nbytes / 2**20:,.0f} MiB, "
        f"ratio {peak / matrix.nbytes:.2f} (target <= 3; the noisy output itself is 1.00)"
    )
    peak = peak_additional_bytes(lambda: privelet(matrix, schema, args.epsilon))
    print(f"  Privelet (S_A empty): peak additional {peak / 2**20:,.0f} MiB, ratio {peak / matrix.nbytes:.2f} (target <= 2)")
    bench_calibration(schema, sa, args.rows)
    bench_samplers(schema, matrix, sa, args.epsilon, args.repeat)
    bench_series(args.epsilon, args.repeat)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
