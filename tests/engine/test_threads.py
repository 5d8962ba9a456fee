"""How a release waits for its worker threads: never still writing when a cancelled or failed
run returns, and their sums are the one thread's."""

from __future__ import annotations

import time

import numpy as np
import pytest

from privelet_gui.engine import Cancelled, postprocess
from privelet_gui.engine.pipeline import run_parts
from privelet_gui.engine.progress import Progress


def test_a_cancelled_run_returns_only_when_its_running_parts_are_done():
    started: list[int] = []
    finished: list[int] = []

    def fill(number: int, scratch: object) -> None:
        started.append(number)
        time.sleep(0.05)
        finished.append(number)

    reports = []
    steps = Progress(lambda fraction, stage: reports.append(fraction), lambda: len(reports) >= 1)
    with pytest.raises(Cancelled):
        run_parts(fill, 40, 2, bytes(16), steps, "transform", "block")
    assert sorted(started) == sorted(finished)  # nothing left running that could still write
    assert len(started) < 40  # the queued parts were dropped


def test_a_failed_slab_leaves_no_slab_running():
    finished: list[tuple[int, ...]] = []

    def work(index: tuple[int, ...]) -> None:
        if index == (0,):
            raise ValueError("a bad slab")
        time.sleep(0.05)
        finished.append(index)

    with pytest.raises(ValueError, match="a bad slab"):
        postprocess._by_slabs(work, [(i,) for i in range(6)], 2)
    count = len(finished)
    time.sleep(0.2)
    assert len(finished) == count  # nothing went on after the error was raised


def test_slab_sums_on_threads_are_the_one_thread_sums():
    noisy = np.random.default_rng(3).normal(0.0, 1e6, (16, 300, 1001))
    assert postprocess.matrix_sum(noisy, workers=2) == postprocess.matrix_sum(noisy, workers=1)
