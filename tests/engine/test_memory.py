"""How much memory there is (container limits included), and byte sizes for people."""

def test_byte_sizes_read_naturally():
    from privelet_gui.engine.memory import byte_size

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
    from privelet_gui.engine.memory import available_memory

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
