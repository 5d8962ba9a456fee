"""The engine's big arrays: lazily mapped or populated at once, zero-filled, independent."""

import numpy as np
import pytest

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
