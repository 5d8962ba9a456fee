"""The release's kept worker threads (privelet_gui/engine/_threads.py) and how the pipeline
waits for them: reused from one release to the next, a forked child's own, and never still
writing when a cancelled or failed run returns."""

from __future__ import annotations

import multiprocessing
import os
import threading
import time

import numpy as np
import pytest

from privelet_gui.engine import (
    Cancelled,
    Hierarchy,
    NominalAttribute,
    OrdinalAttribute,
    Schema,
    _threads,
    postprocess,
    privelet_plus,
)
from privelet_gui.engine import pipeline as pipeline_module
from privelet_gui.engine.progress import Progress


def _schema() -> Schema:
    return Schema([OrdinalAttribute.integer_range("a", 0, 7), NominalAttribute("n", Hierarchy.flat(["x", "y", "z"])),
                   OrdinalAttribute.integer_range("o", 0, 40)])


def test_releases_run_on_the_same_kept_threads(monkeypatch):
    monkeypatch.setattr(pipeline_module, "_BLOCK_CELLS", 64)  # eight blocks, on two threads
    schema = _schema()
    counts = np.ones(schema.shape)
    seen: list[set[int]] = []
    real_run = pipeline_module._BlockPipeline.run

    def recording(self, *arguments, **options):
        seen[-1].add(threading.get_ident())
        return real_run(self, *arguments, **options)

    monkeypatch.setattr(pipeline_module._BlockPipeline, "run", recording)
    for _ in range(3):
        seen.append(set())
        privelet_plus(counts, schema, 1.0, ("a",), np.random.default_rng(1), workers=2)
    assert seen[0] and seen[0] == seen[1] == seen[2]  # the same threads each time, none started anew
    assert threading.main_thread().ident not in seen[0]


def test_a_cancelled_run_returns_only_when_its_running_parts_are_done():
    started: list[int] = []
    finished: list[int] = []

    def fill(number: int) -> None:
        started.append(number)
        time.sleep(0.05)
        finished.append(number)

    reports = []
    steps = Progress(lambda fraction, stage: reports.append(fraction), lambda: len(reports) >= 1)
    with pytest.raises(Cancelled):
        pipeline_module._run_parts(fill, 40, 2, steps, "transform", "block")
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


def test_slab_sums_on_kept_threads_are_the_one_thread_sums():
    noisy = np.random.default_rng(3).normal(0.0, 1e6, (16, 300, 1001))
    assert postprocess.matrix_sum(noisy, workers=2) == postprocess.matrix_sum(noisy, workers=1)


def _pool_threads_in_child(queue) -> None:
    queue.put(_threads.kept_pool(2).submit(os.getpid).result(timeout=10))


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork on this platform")
def test_a_forked_child_makes_its_own_pool():
    _threads.kept_pool(2).submit(int).result()  # the parent's pool, with its threads running
    context = multiprocessing.get_context("fork")
    queue = context.Queue()
    child = context.Process(target=_pool_threads_in_child, args=(queue,))
    child.start()
    try:
        assert queue.get(timeout=20) == child.pid  # ran on the child's own threads, no hang
    finally:
        child.join(timeout=20)
    assert child.exitcode == 0
