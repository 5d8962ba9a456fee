"""Memory for the engine's big arrays, and reuse of its per-block buffers.

Measured problems and their remedies:

- Big arrays (M, the noisy output: hundreds of MB). numpy asks the kernel for
  transparent huge pages on large allocations; where huge pages are set to
  "madvise" with direct compaction (common on virtual machines), first touching
  828 MB took 0.3 to 1.8 s in a fresh process, measured here (0.07 s once warm).
  :func:`zeros` maps private anonymous memory instead, with ordinary pages: zeroed
  lazily by the OS (0.34 s for 828 MB, steadily), given back when the array is
  freed; ``populate=True`` obtains them all at once, for arrays that would otherwise
  be touched page by page. Not with ``MAP_POPULATE``: Python's ``mmap`` holds the GIL
  through that call, which froze the app's window for 0.3 s at the start of every
  big count (measured here); ``madvise(MADV_POPULATE_WRITE)`` through ctypes, which
  releases the GIL, does the same (0.34 s for 828 MB), and a strided write of one
  value per page (numpy releases the GIL) where the kernel lacks it (before Linux 5.14).
- A release's output (and a big block's intermediate), written once, every cell: it is
  mapped with ``madvise(MADV_HUGEPAGE)`` (:func:`output_array`), so that its first touch
  costs one fault per 2 MiB instead of per 4 KiB: 0.09 s instead of 0.33 to 0.58 s for
  828 MB here, on one thread or two (ordinary pages did not fault faster on two threads).
  Where the kernel has no huge page at hand it gives ordinary ones. :func:`release_pages`
  gives an intermediate's memory back as soon as it has been read.
- A release's output faulted in by its writers, a block at a time between their
  computations, cost up to 0.75 s of a Privelet+ release on one thread (Brazil shape,
  790 MB; 0.11 s when populated at once, huge pages or not): :func:`prefaulted` populates
  it from a background thread, ahead of the writers, while they work. Measured here
  (in one process, releases alternating with and without it, medians of 6):
  Privelet+ on one thread 3.73 s to 3.10 s, Basic on one thread 3.97 s to 1.78 s; on both
  cores of two, no change then (2.20 s and 2.25 s, 1.30 s and 1.29 s), and 2 % slower once
  the rest had been made faster (0.651-0.658 s against 0.640-0.643 s): the populating then
  has no idle core to run on, so a release asks for it only when one is left.
- Block buffers (a few MB each, allocated and freed hundreds of times per release).
  glibc returns them to the OS right away and every block pays page faults again
  (about 2x slower). :func:`recycle_block_buffers` raises glibc's trim threshold so
  that up to 256 MiB of freed heap is kept for reuse. Other platforms: no change.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import functools
import math
import mmap
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import numpy as np

__all__ = [
    "available_memory",
    "byte_size",
    "output_array",
    "prefaulted",
    "recycle_block_buffers",
    "release_pages",
    "scattered_zeros",
    "zeros",
]

_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3
_tuned = False

# Arrays from this size on come from an anonymous memory map.
_MAPPED_BYTES = 64 << 20


def zeros(shape: int | tuple[int, ...], *, populate: bool = False) -> np.ndarray:
    """A float64 array of zeros; large ones are mapped lazily (see the module docstring).

    ``populate=True`` has every page provided now, in this thread and without holding
    the GIL, instead of one page fault per page at first touch, each taken by whichever
    thread writes there, GIL held or not.
    """
    count = math.prod(shape) if isinstance(shape, tuple) else int(shape)
    nbytes = count * 8
    if nbytes < _MAPPED_BYTES:
        return np.zeros(shape)
    # anonymous memory: zero-filled, released with the array
    if hasattr(mmap, "MAP_ANONYMOUS"):  # POSIX
        memory = mmap.mmap(-1, nbytes, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    else:  # Windows: backed by the paging file
        memory = mmap.mmap(-1, nbytes)
    array = np.frombuffer(memory, dtype=np.float64, count=count)
    if populate:
        _populate(array)
    return array.reshape(shape)


def output_array(shape: tuple[int, ...]) -> np.ndarray:
    """An array of ``shape`` (float64) whose every cell the caller writes: large ones mapped
    with huge pages where the kernel has them (see the module docstring; zero until written),
    small ones not even zeroed (the allocator's reused memory would be cleared for nothing:
    0.7 ms of a 17 ms release of 2**21 cells)."""
    count = math.prod(shape)
    if count * 8 < _MAPPED_BYTES:
        return np.empty(shape)
    array = zeros(count)
    libc = _libc() if sys.platform.startswith("linux") else None
    if libc is not None:  # a request: refused (EINVAL) where huge pages are off, harmless then
        libc.madvise(ctypes.c_void_p(array.ctypes.data), ctypes.c_size_t(array.nbytes), _MADV_HUGEPAGE)
    return array.reshape(shape)


def scattered_zeros(count: int) -> np.ndarray:
    """``count`` float64 zeros for writes scattered all over them (a frequency matrix counted
    row by row): large ones mapped with huge pages where the kernel has them, as
    :func:`output_array` maps them (zero until written). With ordinary pages each of ten million
    scattered writes into 828 MB faults a page of its own: 0.8 to 1.6 s here, against 0.13 s."""
    return np.zeros(count) if count * 8 < _MAPPED_BYTES else output_array((count,))


@contextlib.contextmanager
def prefaulted(array: np.ndarray) -> Iterator[None]:
    """While the block runs, a background thread has the kernel provide the pages of
    ``array`` (a fresh :func:`output_array` that other threads are writing), in order and in
    pieces, ahead of the writers; it stops when the block ends (see the module docstring).

    Only the kernel's ``MADV_POPULATE_WRITE``, which faults pages in without writing to
    them, so values the writers have put there stay; where the kernel lacks it (or the
    array is an ordinary small one) nothing is done.
    """
    if array.nbytes < _MAPPED_BYTES or not sys.platform.startswith("linux") or _libc() is None:
        yield
        return
    stop = threading.Event()
    # where the kernel refuses (before Linux 5.14), the writers fault the pages in themselves
    thread = threading.Thread(target=_kernel_populate, args=(array, stop), name="privelet-prefault", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()


def release_pages(array: np.ndarray) -> None:
    """Give back to the operating system the whole pages of ``array``, a contiguous part of
    a large array of :func:`output_array` that is no longer needed (reading them afterwards
    gives zeros)."""
    root: object = array
    while True:  # numpy 2 holds the map through a memoryview (numpy 1 directly)
        if isinstance(root, np.ndarray) and root.base is not None:
            root = root.base
        elif isinstance(root, memoryview):
            root = root.obj
        else:
            break
    if not isinstance(root, mmap.mmap) or not sys.platform.startswith("linux"):
        return
    libc = _libc()
    start, end = array.ctypes.data, array.ctypes.data + array.nbytes
    first, last = -(-start // mmap.PAGESIZE) * mmap.PAGESIZE, end // mmap.PAGESIZE * mmap.PAGESIZE
    if libc is not None and last > first:
        libc.madvise(ctypes.c_void_p(first), ctypes.c_size_t(last - first), _MADV_DONTNEED)


_MADV_DONTNEED = 4
_MADV_HUGEPAGE = 14
_MADV_POPULATE_WRITE = 23  # Linux 5.14 and later
_PAGE_VALUES = mmap.PAGESIZE // 8
#: How much :func:`_populate` faults in per call (a multiple of the page size).
_POPULATE_BYTES = 4 << 20


def _populate(array: np.ndarray) -> None:
    """Fault in every page of ``array`` (a fresh zero mapping) without holding the GIL.

    In pieces of :data:`_POPULATE_BYTES`: populating holds the process's memory-map lock,
    and a thread that maps memory meanwhile (a table reader allocating a chunk) waits for
    it, holding the GIL if it has it. One call for 790 MB froze the app's window for
    0.26-0.29 s at the start of a big count (stall_bench). On a virtual machine whose host
    provides memory when it is first touched, a piece of 32 MiB took up to 90 ms, and the
    background prefault of a release's output (:func:`prefaulted`) stalled the window as long,
    time and again (stall_bench: 99th percentile up to 150 ms); 4 MiB pieces keep the gaps
    near those without prefaulting (99th percentile 29-40 ms), at no cost to the release.
    """
    covered = _kernel_populate(array)
    if covered < array.nbytes:
        flat = array.reshape(-1)
        flat[covered // 8 :: _PAGE_VALUES] = 0.0  # one write a page, without the GIL


def _kernel_populate(array: np.ndarray, stop: threading.Event | None = None) -> int:
    """Have the kernel fault in the pages of ``array`` (``MADV_POPULATE_WRITE``, which writes
    nothing), in pieces of :data:`_POPULATE_BYTES` from the start (see :func:`_populate`),
    until done, refused (not Linux, or before Linux 5.14) or ``stop`` is set; the bytes covered."""
    libc = _libc() if sys.platform.startswith("linux") else None
    start = position = array.ctypes.data
    end = start + array.nbytes
    # ctypes releases the GIL for each call; 0 means done (EINVAL: an older kernel).
    while libc is not None and position < end and not (stop is not None and stop.is_set()):
        size = min(_POPULATE_BYTES, end - position)
        if libc.madvise(ctypes.c_void_p(position), ctypes.c_size_t(size), _MADV_POPULATE_WRITE) != 0:
            break
        position += size
    return position - start


@functools.cache
def _libc() -> ctypes.CDLL | None:
    """The C library (its functions release the GIL while they run), or None."""
    try:
        return ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
    except OSError:
        return None


def recycle_block_buffers() -> None:
    """Keep freed block buffers for reuse (glibc only; applied once per process)."""
    global _tuned
    if _tuned or not sys.platform.startswith("linux"):
        return
    _tuned = True
    try:
        mallopt = _libc().mallopt  # type: ignore[union-attr]
    except AttributeError:  # no C library, or not glibc (e.g. musl): keep its defaults
        return
    mallopt(_M_MMAP_THRESHOLD, _MAPPED_BYTES)
    mallopt(_M_TRIM_THRESHOLD, 256 << 20)


def available_memory(proc: Path = Path("/proc"), cgroups: Path = Path("/sys/fs/cgroup")) -> int | None:
    """Memory the operating system can give without swapping, in bytes; None where it is
    not known (Linux only: MemAvailable, or less when this process's control group has a
    memory limit, as in containers)."""
    known = [value for value in (_meminfo_available(proc), _cgroup_headroom(proc, cgroups)) if value is not None]
    return min(known) if known else None


def _meminfo_available(proc: Path) -> int | None:
    try:
        for line in (proc / "meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def _cgroup_headroom(proc: Path, cgroups: Path) -> int | None:
    """Limit minus use (not counting reclaimable file cache) of this process's memory
    control group: cgroup v2 (the "0::" line) or v1 (the "memory" controller)."""
    try:
        lines = (proc / "self" / "cgroup").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        number, controllers, path = ([*line.split(":", 2), "", ""])[:3]
        if number == "0" and not controllers:
            folder, limit_file, usage_file, cache_key = cgroups / path.lstrip("/"), "memory.max", "memory.current", "inactive_file"
        elif "memory" in controllers.split(","):
            folder = cgroups / "memory" / path.lstrip("/")
            limit_file, usage_file, cache_key = "memory.limit_in_bytes", "memory.usage_in_bytes", "total_inactive_file"
        else:
            continue
        try:
            limit = (folder / limit_file).read_text().strip()
            usage = int((folder / usage_file).read_text())
            stats = dict(item.split() for item in (folder / "memory.stat").read_text().splitlines() if " " in item)
        except (OSError, ValueError):
            continue
        if limit == "max" or int(limit) >= 1 << 62:  # no limit set
            continue
        return max(int(limit) - (usage - int(stats.get(cache_key, 0))), 0)
    return None


def byte_size(count: int) -> str:
    """``count`` bytes for people: "7.6 MiB", "1.6 GiB"."""
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if count >= 1 << shift:
            return f"{count / (1 << shift):.1f} {unit}"
    return f"{count} bytes"
