"""The engine's big arrays: lazily mapped or populated at once, zero-filled, independent."""

from pathlib import Path

import numpy as np
import pytest

from privelet_gui.engine import _memory
from privelet_gui.engine._memory import _MAPPED_BYTES, zeros


@pytest.mark.parametrize("populate", [False, True])
def test_large_zeros_are_zero_filled_writable_and_independent(populate):
    cells = _MAPPED_BYTES // 8  # the smallest size that is mapped rather than allocated
    first, second = zeros((cells // 4, 4), populate=populate), zeros(cells, populate=populate)
    assert first.shape == (cells // 4, 4) and second.shape == (cells,)
    assert first.dtype == second.dtype == np.float64
    assert not first.any() and not second.any()
    first[::1024] = 1.0
    assert first.sum() == 4 * (cells // 4 // 1024) and not second.any()  # every 1024th row of 4


@pytest.mark.parametrize("cells", [7, _MAPPED_BYTES // 8])
def test_zeros_for_scattered_writes_are_zero_and_writable_at_any_size(cells, monkeypatch):
    advised = []
    libc = _memory._libc()
    if libc is not None:  # the large one is mapped with huge pages asked for
        monkeypatch.setattr(_memory, "_libc", lambda: type("Libc", (), {"madvise": lambda *a: advised.append(a[-1])})())
    counts = _memory.scattered_zeros(cells)
    assert counts.shape == (cells,) and counts.dtype == np.float64 and not counts.any()
    counts[:: max(1, cells // 5)] += 1.0
    assert counts.sum() == len(range(0, cells, max(1, cells // 5)))
    assert advised == ([_memory._MADV_HUGEPAGE] if libc is not None and cells * 8 >= _MAPPED_BYTES else [])


def test_small_zeros_are_ordinary_arrays():
    small = zeros((3, 2), populate=True)
    assert small.shape == (3, 2) and not small.any() and small.flags.owndata


def test_zeros_work_where_mmap_has_no_posix_flags(monkeypatch):
    # Windows' mmap module has no MAP_* constants: anonymous memory is asked for without them.
    import mmap as real_mmap
    import types

    from privelet_gui.engine import _memory

    calls = []

    def windows_mmap(fileno, length, *args, **kwargs):
        calls.append((fileno, length, args, kwargs))
        return real_mmap.mmap(fileno, length)

    monkeypatch.setattr(_memory, "mmap", types.SimpleNamespace(mmap=windows_mmap))
    array = _memory.zeros(_MAPPED_BYTES // 8, populate=True)
    assert calls == [(-1, _MAPPED_BYTES, (), {})]
    assert array.size == _MAPPED_BYTES // 8 and not array[:: 1 << 16].any()


def test_byte_sizes_read_naturally():
    from privelet_gui.engine._memory import byte_size

    assert [byte_size(n) for n in (512, 4 << 10, 7_999_999, 3 << 30)] == ["512 bytes", "4.0 KiB", "7.6 MiB", "3.0 GiB"]


def _fake_system(root, meminfo_kib: int, cgroup_lines: str, files: dict[str, str]):
    proc, cgroups = root / "proc", root / "cgroup"
    (proc / "self").mkdir(parents=True)
    (proc / "meminfo").write_text(f"MemTotal: 99999999 kB\nMemAvailable: {meminfo_kib} kB\n")
    (proc / "self" / "cgroup").write_text(cgroup_lines)
    for name, text in files.items():
        (cgroups / name).parent.mkdir(parents=True, exist_ok=True)
        (cgroups / name).write_text(text)
    return proc, cgroups


def test_available_memory_honours_container_limits(tmp_path):
    from privelet_gui.engine._memory import available_memory

    gib = 1 << 30
    # no limit: MemAvailable
    proc, cgroups = _fake_system(tmp_path / "a", 8 << 20, "0::/user.slice\n", {"user.slice/memory.max": "max\n"})
    assert available_memory(proc, cgroups) == 8 * gib
    # cgroup v2 limit of 2 GiB, 1.5 GiB used of which 0.5 GiB reclaimable cache: 1 GiB left
    proc, cgroups = _fake_system(
        tmp_path / "b",
        8 << 20,
        "0::/docker/abc\n",
        {
            "docker/abc/memory.max": f"{2 * gib}\n",
            "docker/abc/memory.current": f"{3 * gib // 2}\n",
            "docker/abc/memory.stat": f"anon 1\ninactive_file {gib // 2}\n",
        },
    )
    assert available_memory(proc, cgroups) == gib
    # cgroup v1 (hybrid: the v2 line leads nowhere), limit 4 GiB, 3 GiB used, none reclaimable
    proc, cgroups = _fake_system(
        tmp_path / "c",
        8 << 20,
        "4:memory:/job\n0::/\n",
        {
            "memory/job/memory.limit_in_bytes": f"{4 * gib}\n",
            "memory/job/memory.usage_in_bytes": f"{3 * gib}\n",
            "memory/job/memory.stat": "total_inactive_file 0\n",
        },
    )
    assert available_memory(proc, cgroups) == gib
    # nothing readable (not Linux): unknown
    assert available_memory(tmp_path / "none", tmp_path / "none") is None


@pytest.mark.parametrize("kernel_populates", [True, False], ids=["madvise", "strided-write"])
def test_populated_arrays_are_zero_and_never_hold_the_gil(monkeypatch, kernel_populates):
    """Populating a big count matrix must not freeze other threads (the app's window): a
    thread that ticks every millisecond sees no gap much longer than the populating takes
    to release the GIL, with the kernel's madvise and with the strided-write fallback."""
    import threading
    import time

    if not kernel_populates:
        monkeypatch.setattr(_memory, "_libc", lambda: None)
    gaps: list[float] = []
    stop = threading.Event()

    def tick() -> None:
        last = time.perf_counter()
        while not stop.is_set():
            time.sleep(0.001)
            now = time.perf_counter()
            gaps.append(now - last)
            last = now

    ticker = threading.Thread(target=tick)
    ticker.start()
    try:
        time.sleep(0.02)
        started = time.perf_counter()
        array = _memory.zeros(256 << 20 >> 3, populate=True)  # 256 MiB
        took = time.perf_counter() - started
        time.sleep(0.02)
    finally:
        stop.set()
        ticker.join()
    assert array.shape == (256 << 20 >> 3,) and not array[::4096].any()
    assert max(gaps) < max(0.05, took / 2), (max(gaps), took)  # the GIL was not held throughout


@pytest.mark.parametrize("fails_at", [None, 0, 2], ids=["madvise", "no-madvise", "madvise-stops"])
def test_populating_goes_in_pieces_so_that_other_threads_can_map_memory(monkeypatch, fails_at):
    """The kernel holds the memory-map lock while it populates; a thread that maps memory
    meanwhile waits, holding the GIL if it has it (a table reader): 0.26 s of frozen window
    at the start of a 790 MB count. Each madvise call covers at most _POPULATE_BYTES, the
    calls cover the array in order, and where the kernel refuses the rest is written page by
    page."""
    import ctypes

    calls: list[tuple[int, int]] = []

    class FakeLibc:
        def madvise(self, address: ctypes.c_void_p, size: ctypes.c_size_t, advice: int) -> int:
            if fails_at is not None and len(calls) == fails_at:
                return -1
            calls.append((int(address.value or 0), int(size.value)))
            return 0

    monkeypatch.setattr(_memory, "_libc", lambda: FakeLibc())
    monkeypatch.setattr(_memory.sys, "platform", "linux")
    nbytes = _memory._MAPPED_BYTES + 5 * _memory._POPULATE_BYTES + 3 * 4096  # mapped, and many pieces
    array = _memory.zeros(nbytes // 8, populate=True)
    base = array.ctypes.data
    assert all(size <= _memory._POPULATE_BYTES for _, size in calls)
    assert [address for address, _ in calls] == [base + i * _memory._POPULATE_BYTES for i in range(len(calls))]
    covered = sum(size for _, size in calls)
    assert covered == (nbytes if fails_at is None else fails_at * _memory._POPULATE_BYTES)
    assert array.shape == (nbytes // 8,) and not array.any()


@pytest.mark.skipif(not __import__("sys").platform.startswith("linux"), reason="pages are given back on Linux only")
def test_release_pages_gives_back_the_whole_pages_of_a_mapped_array():
    # The kernel's zero page shows that a page was given back (its memory is the OS's again);
    # numpy 2 holds the map through a memoryview, numpy 1 directly: both must be found.
    from privelet_gui.engine._memory import output_array, release_pages

    rows = output_array((16, _MAPPED_BYTES // 8 // 16))
    rows[...] = 1.0
    release_pages(rows[3:9])
    page = _memory.mmap.PAGESIZE // 8
    start, stop = 3 * rows.shape[1], 9 * rows.shape[1]
    flat = rows.reshape(-1)
    first, last = -(-start // page) * page, stop // page * page  # the whole pages inside
    assert not flat[first:last].any()
    assert (flat[:start] == 1.0).all() and (flat[stop:] == 1.0).all()
    assert (flat[start:first] == 1.0).all() and (flat[last:stop] == 1.0).all()  # parts of pages stay


def test_release_pages_leaves_ordinary_arrays_alone():
    from privelet_gui.engine._memory import release_pages

    values = np.ones((4, 1024))
    release_pages(values[1:3])
    assert (values == 1.0).all()


def _kernel_populates() -> bool:
    """Whether this kernel has MADV_POPULATE_WRITE (Linux 5.14 and later)."""
    if not __import__("sys").platform.startswith("linux") or _memory._libc() is None:
        return False
    import ctypes

    probe = _memory.zeros(_MAPPED_BYTES // 8)
    return _memory._libc().madvise(ctypes.c_void_p(probe.ctypes.data), ctypes.c_size_t(4096), _memory._MADV_POPULATE_WRITE) == 0


def _resident_bytes() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS in /proc/self/status")


@pytest.mark.skipif(not _kernel_populates(), reason="needs Linux's MADV_POPULATE_WRITE (Linux 5.14 and later)")
def test_prefaulting_provides_the_pages_and_keeps_what_the_writers_wrote_meanwhile():
    """The background thread makes the output resident without writing to it: values that
    writers put there before, during and after its passage all stay."""
    import threading
    import time

    from privelet_gui.engine._memory import prefaulted

    cells = 4 * _MAPPED_BYTES // 8  # 256 MiB
    array = zeros(cells)  # ordinary pages: with huge ones, the writers' few writes would fault in all
    before = _resident_bytes()
    array[:: 1 << 16] = 1.0  # written before
    with prefaulted(array):
        array[7 :: 1 << 16] = 2.0  # written while it runs
        deadline = time.monotonic() + 30
        while _resident_bytes() - before < 0.9 * array.nbytes and time.monotonic() < deadline:
            time.sleep(0.01)
        grown = _resident_bytes() - before
    assert not [t for t in threading.enumerate() if t.name == "privelet-prefault"]  # joined when the block ends
    assert grown >= 0.9 * array.nbytes, grown  # provided, though the writers touched only 1 page in 128
    array[11 :: 1 << 16] = 3.0
    counts = {value: int((array == value).sum()) for value in (1.0, 2.0, 3.0)}
    assert counts == {1.0: cells >> 16, 2.0: cells >> 16, 3.0: cells >> 16}
    assert int((array == 0.0).sum()) == cells - 3 * (cells >> 16)


@pytest.mark.parametrize("fails_at", [None, 2], ids=["madvise", "older-kernel"])
def test_prefaulting_goes_in_order_in_pieces_and_never_writes(monkeypatch, fails_at):
    """In pieces of at most _POPULATE_BYTES, in order from the start; where the kernel refuses,
    it stops (no fallback that writes: the writers' values would be overwritten)."""
    import ctypes
    import threading

    from privelet_gui.engine._memory import output_array, prefaulted

    calls: list[tuple[int, int, int]] = []
    finished = threading.Event()

    class FakeLibc:
        def madvise(self, address: ctypes.c_void_p, size: ctypes.c_size_t, advice: int) -> int:
            if fails_at is not None and len(calls) == fails_at:
                finished.set()
                return -1
            calls.append((int(address.value or 0), int(size.value), advice))
            if sum(size for _, size, _ in calls) >= array.nbytes:
                finished.set()
            return 0

    monkeypatch.setattr(_memory.sys, "platform", "linux")
    nbytes = _memory._MAPPED_BYTES + 5 * _memory._POPULATE_BYTES + 3 * 4096  # mapped, and many pieces
    array = output_array((nbytes // 8,))
    array[:: 4096] = 5.0
    monkeypatch.setattr(_memory, "_libc", lambda: FakeLibc())
    with prefaulted(array):
        assert finished.wait(10)
    base = array.ctypes.data
    assert [address for address, _, _ in calls] == [base + i * _memory._POPULATE_BYTES for i in range(len(calls))]
    assert all(size <= _memory._POPULATE_BYTES and advice == _memory._MADV_POPULATE_WRITE for _, size, advice in calls)
    assert sum(size for _, size, _ in calls) == (nbytes if fails_at is None else fails_at * _memory._POPULATE_BYTES)
    assert (array[:: 4096] == 5.0).all() and int((array != 0).sum()) == array[:: 4096].size


def test_small_or_unmapped_arrays_are_not_prefaulted(monkeypatch):
    from privelet_gui.engine._memory import prefaulted

    monkeypatch.setattr(_memory, "_libc", lambda: pytest.fail("a small array needs no kernel call"))
    small = np.ones(1000)
    with prefaulted(small):
        small[3] = 2.0
    assert small.sum() == 1001.0
