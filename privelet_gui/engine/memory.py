"""How much memory there is, and how much a release needs (the refusals that name the fix)."""

from __future__ import annotations

from pathlib import Path

from .errors import PriveletError

__all__ = ["available_memory", "byte_size", "check_memory"]


def available_memory(proc: Path = Path("/proc"), cgroups: Path = Path("/sys/fs/cgroup")) -> int | None:
    """Memory the operating system can give without swapping, in bytes; None where it is
    not known (Linux only: MemAvailable, or less when this process's control group has a
    memory limit, as in containers).

    Parameters
    ----------
    proc : pathlib.Path, default ``/proc``
        The proc file system to read ``meminfo`` and ``self/cgroup`` from (tests pass a fake one).
    cgroups : pathlib.Path, default ``/sys/fs/cgroup``
        Where the control groups are mounted.

    Returns
    -------
    int or None
        Bytes available (at least 0), or None where neither figure can be read.
    """
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
    """``count`` bytes for people: "7.6 MiB", "1.6 GiB".

    Parameters
    ----------
    count : int
        A number of bytes (non-negative).

    Returns
    -------
    str
        One decimal in GiB, MiB or KiB (powers of 1024), or ``"N bytes"`` below 1 KiB.
    """
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if count >= 1 << shift:
            return f"{count / (1 << shift):.1f} {unit}"
    return f"{count} bytes"


def check_memory(needed: int) -> None:
    """Refuse, with what to do, a release that would not fit in the memory available now
    (instead of being killed by the operating system half way)."""
    available = available_memory()
    if available is not None and needed > available:
        raise PriveletError(
            f"this release needs about {byte_size(needed)} of memory besides the matrix, but only "
            f"{byte_size(available)} are available; put more attributes in S_A (the release then "
            "works block by block), exclude attributes, use coarser domains, or close other programs"
        )
