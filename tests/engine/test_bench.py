"""The benchmark's measurements (python -m privelet_gui.bench): what threads lose to each other, and
figures whose ratios are stated timed in turn."""

from __future__ import annotations

import gc
import time

import numpy as np
import pytest

from privelet_gui.bench import best_in_turn, best_of, context_switches, two_processes
from privelet_gui.engine import Hierarchy, NominalAttribute, OrdinalAttribute, Schema


def small_schema() -> Schema:
    return Schema([OrdinalAttribute.integer_range("age", 0, 3),
                   NominalAttribute("job", Hierarchy.from_nested({"*": {"a": ["a1", "a2"], "b": ["b1", "b2", "b3"]}})),
                   OrdinalAttribute.integer_range("income", 0, 99)])


SCHEMA = small_schema()


def test_two_processes_time_one_release_each():
    matrix = np.random.default_rng(0).integers(0, 5, SCHEMA.shape).astype(float)
    times = two_processes(matrix, small_schema, 1.0, ("age",))
    assert len(times) == 2 and times == sorted(times) and 0 < times[0] < 60


def broken_schema() -> Schema:
    raise ValueError("no schema here")


def test_a_process_that_fails_stops_the_measurement_at_once():
    started = time.perf_counter()
    with pytest.raises(RuntimeError, match="a benchmark process failed"):
        two_processes(np.zeros(SCHEMA.shape), broken_schema, 1.0, ("age",))
    assert time.perf_counter() - started < 30  # not the other process's wait at the barrier


def test_context_switches_count_a_threads_waits():
    # a sleeping thread switches at least once per sleep
    assert context_switches(lambda: [time.sleep(0.001) for _ in range(20)]) >= 20


def test_timers_take_turns_after_an_untimed_round_and_keep_their_best():
    calls: list[str] = []
    seconds = {"a": iter([0.5, 3.0, 5.0, 4.0]), "b": iter([0.1, 2.0, 7.0, 1.0])}

    def timer(name: str):
        def run() -> float:
            calls.append(name)
            return next(seconds[name])
        return run

    best = best_in_turn(3, {"a": timer("a"), "b": timer("b")})
    # the first round (the fastest here) is not counted; every other round in reverse
    assert calls == ["a", "b", "a", "b", "b", "a", "a", "b"]
    assert best == {"a": 3.0, "b": 1.0}


def test_no_timer_always_runs_after_the_same_one():
    calls: list[str] = []

    def timer(name: str):
        def run() -> float:
            calls.append(name)
            return 1.0
        return run

    best_in_turn(3, {name: timer(name) for name in "abc"})
    assert calls == list("abc" "abc" "cba" "abc")
    # (a release that frees its output speeds up the next: each timer must follow more than one)
    for name in "abc":
        assert len({calls[i - 1] for i in range(3, len(calls)) if calls[i] == name}) >= 2


def test_the_garbage_is_collected_once_before_the_timings_not_before_each():
    full_collections: list[int] = []

    def count(phase: str, info: dict[str, int]) -> None:
        if phase == "start" and info["generation"] == 2:
            full_collections.append(1)

    gc.callbacks.append(count)
    try:
        best_of(5, lambda: None)
    finally:
        gc.callbacks.remove(count)
    assert full_collections == [1]


def test_first_touch_waits_the_idle_time_between_the_free_and_the_touch(monkeypatch):
    from privelet_gui import bench

    slept: list[float] = []
    monkeypatch.setattr(bench.time, "sleep", slept.append)
    assert bench.first_touch(64 << 20, 0.0) > 0 and bench.first_touch(64 << 20, 3.0) > 0
    assert slept == [0.0, 3.0]


def test_the_floors_steps_are_timed_per_value_and_the_cpu_features_named():
    from privelet_gui import bench

    uniform, log = bench.in_cache_costs(repeat=2)
    assert 0 < uniform < 1e3 and 0 < log < 1e3  # nanoseconds a value, not seconds a call
    features = bench.cpu_features()
    assert features == "?" or features.startswith(("AVX", "FMA", "none of"))
