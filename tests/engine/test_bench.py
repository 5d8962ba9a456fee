"""The benchmark's measurements (python -m privelet_gui.bench): what threads lose to each other, and
figures whose ratios are stated timed in turn."""

from __future__ import annotations

import gc

import numpy as np

from privelet_gui.bench import best_in_turn, best_of, peak_additional_bytes
from privelet_gui.engine import Hierarchy, NominalAttribute, OrdinalAttribute, Schema


def small_schema() -> Schema:
    return Schema([OrdinalAttribute.integer_range("age", 0, 3),
                   NominalAttribute("job", Hierarchy.from_nested({"*": {"a": ["a1", "a2"], "b": ["b1", "b2", "b3"]}})),
                   OrdinalAttribute.integer_range("income", 0, 99)])


SCHEMA = small_schema()


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


def test_the_peak_memory_of_work_is_what_it_holds_at_most():
    def hold() -> np.ndarray:
        big = np.ones(64 << 17)  # 64 MiB, touched
        return big

    assert 60 << 20 < peak_additional_bytes(hold) < 100 << 20


def test_the_threads_timed_are_one_two_and_every_core():
    from privelet_gui.bench import thread_choices
    from privelet_gui.engine import usable_cores

    choices = thread_choices()
    assert choices[0] == 1 and choices[-1] == usable_cores() and choices == sorted(set(choices))
