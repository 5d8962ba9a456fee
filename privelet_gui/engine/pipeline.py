"""The release pipeline: M measured, rounded, noised and reconstructed, one block at a time.

:class:`~privelet_gui.engine.spec.ReleaseSpec` decides what to release; this module runs it.
Every measurement's noise depends on its global position and the release's key alone
(docs/math.md, "Random bits"), so how the work is cut and how many threads do it are speed
choices that never change a value.

- **Blocks** (:meth:`ReleasePipeline.blocks`): the separable axes (S_A) are measured value by
  value, so M is cut into boxes along them, each whole along the other axes, of about
  ``Sizing.block_cells`` cells. A block's counts are checked and converted to int64, measured
  along each transformed axis in turn (exact integer numerators), rounded and noised, then
  reconstructed along the axes in ascending order into the output (:meth:`release_block`): the
  order every path follows, so that the floats are the same however the work is cut.
- **Big blocks** (S_A empty, or a block of more than ``Sizing.big_block_cells`` cells): in three
  passes over a split of the block's axes into leading axes B and the rest A, chosen so that
  the intermediate T (values along B, measurements along A) is the smallest whose pencils stay
  wide (:class:`_BigBlock`). Pass 1 measures each slab (one position along B) along A into T;
  pass 2 takes pencils (every B position, a range of A measurements), measures them along B,
  noises them and reconstructs them along B, back into T; pass 3 reconstructs each slab along A
  into the output. When the big block is the whole release, the output is made in T's own
  memory (one matrix in memory, not two): each slab is written once every slab under it has
  been read.

The public block API (:meth:`ReleasePipeline.blocks`, :meth:`release_block`, and the passes of
:meth:`big_block`) is what :mod:`privelet_gui.distributed` runs on a cluster.
"""

from __future__ import annotations

import itertools
import math
import os
import threading
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from .errors import InternalError, PriveletError
from .kernels import counts as count_kernels
from .noise.bits import BlockCipher
from .noise.calibration import NoiseCalibration, Sampler
from .noise.samplers import NoiseSampler
from .progress import Progress
from .strategies.plan import StrategyPlan, as_3d

__all__ = ["DEFAULT_SIZING", "BigBlock", "ReleasePipeline", "Scratch", "Sizing", "run_parts", "thread_count", "usable_cores"]

Index = tuple[slice, ...]


@dataclass(frozen=True)
class Sizing:
    """How a release cuts its work (speed choices only: no value depends on them).

    ``block_cells``: cells of a block along S_A; ``big_block_cells``: a block with more cells
    goes through the three passes; ``pencil_cells``: measurements of a pencil in pass 2;
    ``pencil_rows``: the most measurements along B (wider pencils read T in longer runs);
    ``cells_per_thread``: the default number of threads is one per this many cells.

    Attributes
    ----------
    block_cells : int, default 2**19
        See above.
    big_block_cells : int, default 2**22
        See above.
    pencil_cells : int, default 2**17
        See above.
    pencil_rows : int, default 2**10
        See above.
    cells_per_thread : int, default 2**20
        See above.
    """

    block_cells: int = 1 << 19
    big_block_cells: int = 1 << 22
    pencil_cells: int = 1 << 17
    pencil_rows: int = 1 << 10
    cells_per_thread: int = 1 << 20


#: The sizing a release uses unless told otherwise.
DEFAULT_SIZING = Sizing()


def usable_cores() -> int:
    """The CPUs this process may run on (its affinity where the platform says, else all).

    Returns
    -------
    int
        At least 1.
    """
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def thread_count(cells: int, workers: int | None = None, sizing: Sizing = DEFAULT_SIZING) -> int:
    """``workers`` if given (at least 1), else one thread per ``sizing.cells_per_thread`` cells, at
    most one per usable core: small releases stay on one thread, where more only wait.

    Parameters
    ----------
    cells : int
        Cells of the matrix to release.
    workers : int, optional
        The caller's choice of threads (a positive int); None: by size.
    sizing : Sizing, default :data:`DEFAULT_SIZING`
        Gives ``cells_per_thread``.

    Returns
    -------
    int
        Threads to use, at least 1.

    Raises
    ------
    PriveletError
        ``workers`` is not a positive integer (a bool is refused).
    """
    if workers is not None:
        if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
            raise PriveletError(f"workers must be a positive integer, got {workers!r}")
        return workers
    return max(1, min(usable_cores(), cells // sizing.cells_per_thread))


_PROBLEMS = {
    count_kernels.NEGATIVE: "a negative or fractional count (a negative one)",
    count_kernels.FRACTIONAL: "a negative or fractional count (a fractional one)",
    count_kernels.NOT_FINITE: "NaN or an infinite count",
    count_kernels.TOO_LARGE: "a count of 2^53 or more",
}


def checked_counts(counts: np.ndarray, out: np.ndarray) -> int:
    """``counts`` (any layout) as int64 into ``out`` (flat), checked; returns their total."""
    flat = np.ascontiguousarray(counts, dtype=np.float64).reshape(-1)
    problem, total = count_kernels.checked_counts(flat, out)
    if problem != count_kernels.FINE:
        raise PriveletError(
            f"the matrix holds {_PROBLEMS[problem]}: a frequency matrix holds counts of rows "
            "(non-negative whole numbers); count the table with frequency_matrix or count_table"
        )
    return int(total)


class Scratch:
    """One thread's working memory for a release: growing int64 and float64 buffers, and its
    own AES context (contexts are not shared between threads).

    Parameters
    ----------
    key : bytes
        The release's AES key (:mod:`~privelet_gui.engine.noise.bits`).
    """

    def __init__(self, key: bytes):
        self.cipher = BlockCipher(key)
        self._buffers: dict[tuple[str, int], np.ndarray] = {}

    def array(self, kind: str, slot: int, shape: tuple[int, ...]) -> np.ndarray:
        """A buffer of ``shape``, reused (grown when too small) for each ``(kind, slot)``.

        Parameters
        ----------
        kind : {"int", "float"}
            int64 for ``"int"``, float64 otherwise.
        slot : int
            Which of the kind's buffers (a pipeline alternates between slots 0 and 1).
        shape : tuple of int
            The shape wanted.

        Returns
        -------
        numpy.ndarray
            A view of the buffer with that shape; its values are left over from earlier use.
        """
        size = math.prod(shape)
        buffer = self._buffers.get((kind, slot))
        if buffer is None or buffer.size < size:
            buffer = self._buffers[kind, slot] = np.empty(size, dtype=np.int64 if kind == "int" else np.float64)
        return buffer[:size].reshape(shape)


class ReleasePipeline:
    """The work of one release: its strategy, noise calibration and sampler (see the module docstring).

    Parameters
    ----------
    plan : StrategyPlan
        Each axis's strategy.
    calibration : NoiseCalibration
        The grid and sensitivity (:meth:`ReleaseSpec.calibration`).
    sampler : {"exact", "standard"}
        The noise sampler.
    sizing : Sizing, default :data:`DEFAULT_SIZING`
        How the work is cut (no value depends on it).
    """

    def __init__(self, plan: StrategyPlan, calibration: NoiseCalibration, sampler: Sampler, sizing: Sizing = DEFAULT_SIZING):
        self.plan = plan
        self.calibration = calibration
        self.sizing = sizing
        self.noise = NoiseSampler(sampler, calibration)
        self.transformed = plan.transformed_axes

    # -- the blocks along S_A ------------------------------------------------------------------
    def blocks(self) -> list[Index]:
        """The boxes of M a release works on: along the separable axes, innermost first, as many
        values as keep a block near ``sizing.block_cells`` cells (and a 32nd of M); every other
        axis whole.

        Returns
        -------
        list of tuple of slice
            One index into M per block, in C order; together they cover M once.
        """
        shape = self.plan.shape
        whole = math.prod(shape[axis] for axis in self.transformed)
        # at most block_cells, and small enough to make some 32 blocks (threads share them out,
        # progress moves on) where the separable axes allow
        target = min(self.sizing.block_cells, max(whole, math.prod(shape) // 32))
        room = max(1, target // whole)
        steps = [1] * len(shape)
        for axis in self.transformed:
            steps[axis] = shape[axis]
        for axis in reversed(self.plan.separable_axes):
            steps[axis] = max(1, min(shape[axis], room))
            room //= shape[axis]
            if room < 1:
                break
        ranges = [range(0, size, step) for size, step in zip(shape, steps)]
        return [
            tuple(slice(start, min(start + step, size)) for start, step, size in zip(starts, steps, shape))
            for starts in itertools.product(*ranges)
        ]

    def is_big(self, index: Index) -> bool:
        """Whether the block ``index`` goes through the three passes.

        Parameters
        ----------
        index : tuple of slice
            A block, as :meth:`blocks` gives it.

        Returns
        -------
        bool
            True when some axis is transformed and the block has more than ``sizing.big_block_cells`` cells.
        """
        return bool(self.transformed) and _cells(index) > self.sizing.big_block_cells

    def release(
        self, matrix: np.ndarray, key: bytes, steps: Progress, threads: int, *, overwrite_input: bool = False,
    ) -> tuple[np.ndarray, int]:
        """The noisy matrix and the total of M (see the module docstring).

        Parameters
        ----------
        matrix : numpy.ndarray
            M, float64, shape ``plan.shape``.
        key : bytes
            The release's key; every noise value is a function of it and its position.
        steps : Progress
            Progress and cancellation.
        threads : int
            Threads to use (at least 1).
        overwrite_input : bool, default False, keyword-only
            Write the release into ``matrix`` when it is C-contiguous and writable.

        Returns
        -------
        tuple of (numpy.ndarray, int)
            The noisy matrix (float64, ``matrix``'s shape) and the total of M.

        Raises
        ------
        PriveletError
            A negative, fractional, NaN or infinite count, or one of 2^53 or more.
        Cancelled
            ``steps`` was cancelled.
        """
        blocks = self.blocks()
        in_place = overwrite_input and matrix.flags.c_contiguous and matrix.flags.writeable
        if len(blocks) == 1 and self.is_big(blocks[0]) and not in_place:  # the output in T's memory
            big = self.big_block(blocks[0])
            return big.release(matrix, None, key, steps, threads)
        noisy = matrix if in_place else np.empty(matrix.shape)
        totals = [0] * len(blocks)
        big_numbers = [number for number, index in enumerate(blocks) if self.is_big(index)]
        for order, number in enumerate(big_numbers):  # one big block at a time, on every thread
            part = steps.slice(order / len(blocks), (order + 1) / len(blocks))
            index = blocks[number]
            totals[number] = self.big_block(index).release(matrix[index], noisy[index], key, part, threads)[1]
        small = sorted(set(range(len(blocks))) - set(big_numbers))

        def fill(number: int, scratch: Scratch) -> None:
            index = blocks[small[number]]
            totals[small[number]] = self.release_block(matrix[index], noisy[index], index, scratch)

        remaining = steps.slice(len(big_numbers) / len(blocks), 1.0)
        run_parts(fill, len(small), threads, key, remaining, "transform, noise and inverse", "block")
        return noisy, sum(totals)

    def release_block(self, counts: np.ndarray, out: np.ndarray, index: Index, scratch: Scratch) -> int:
        """Release one block (``counts``, the block of M at ``index``) into ``out``; returns its total.

        Parameters
        ----------
        counts : numpy.ndarray
            The block of M at ``index`` (any layout).
        out : numpy.ndarray
            float64, the block's shape; receives the noisy block.
        index : tuple of slice
            The block's place in M (its noise depends on it).
        scratch : Scratch
            The calling thread's buffers and cipher.

        Returns
        -------
        int
            The total of ``counts``.

        Raises
        ------
        PriveletError
            A negative, fractional, NaN or infinite count, or one of 2^53 or more.
        """
        shape = counts.shape
        current = scratch.array("int", 0, shape)
        total = checked_counts(counts, current.reshape(-1))
        slot = 0
        for axis in self.transformed:
            strategy = self.plan.strategies[axis]
            following = scratch.array("int", 1 - slot, _changed(current.shape, axis, strategy.n_measurements))
            strategy.forward(as_3d(current, axis), as_3d(following, axis))
            current, slot = following, 1 - slot
        # with nothing to reconstruct, the noisy measurements are the release: straight into out
        direct = not self.transformed and out.flags.c_contiguous
        values = out if direct else scratch.array("float", 0, current.shape)
        self._noise(current, values, index, scratch.cipher)
        slot = 0
        for axis in self.transformed:  # ascending, in every path: the same floats however the work is cut
            strategy = self.plan.strategies[axis]
            target_shape = _changed(values.shape, axis, strategy.size)
            last = axis == self.transformed[-1]
            target = out if last and out.flags.c_contiguous else scratch.array("float", 1 - slot, target_shape)
            strategy.reconstruct(as_3d(values, axis), as_3d(target, axis))
            values, slot = target, 1 - slot
        if values is not out:
            out[...] = values
        return total

    def _noise(self, z: np.ndarray, out: np.ndarray, index: Index, cipher: BlockCipher,
               columns: slice | None = None) -> None:
        """Noise the measurements ``z`` of the box ``index`` (its measurement shape) into ``out``;
        ``columns``: only these positions along the last axis (a pencil)."""
        dens, positions = self.axis_tables(index)
        if columns is not None:
            dens[-1], positions[-1] = dens[-1][columns], positions[-1][columns]
        self.noise.add(z.reshape(-1), out.reshape(-1), z.shape[-1], _outer(dens[:-1], np.multiply),
                       dens[-1], _outer(positions[:-1], np.add), positions[-1], cipher)

    def axis_tables(self, index: Index) -> tuple[list[np.ndarray], list[np.ndarray]]:
        """Per axis of the box ``index``: its measurements' denominators and position terms.

        Parameters
        ----------
        index : tuple of slice
            A box of M.

        Returns
        -------
        tuple of (list of numpy.ndarray, list of numpy.ndarray)
            Per axis, the int64 denominators (ones along separable axes) and the uint64 position
            terms of its measurements.
        """
        dens, positions = [], []
        for axis, (part, strategy) in enumerate(zip(index, self.plan.strategies)):
            stride = np.uint64(self.plan.position_strides[axis])
            if strategy.separable:
                dens.append(np.ones(part.stop - part.start, dtype=np.int64))
                positions.append(np.arange(part.start, part.stop, dtype=np.uint64) * stride)
            else:
                dens.append(strategy.denominators)
                positions.append(np.arange(strategy.n_measurements, dtype=np.uint64) * stride)
        return dens, positions

    def big_block(self, index: Index) -> BigBlock:
        """The three passes of the block ``index``.

        Parameters
        ----------
        index : tuple of slice
            A block of M (:meth:`blocks`).

        Returns
        -------
        BigBlock
        """
        return BigBlock(self, index)


class BigBlock:
    """A big block's three passes (see the module docstring), each over any group of its parts:
    slabs (one position along B: passes 1 and 3) or columns of the intermediate (A measurements:
    pass 2). The one-machine release and the cluster's tasks run the same methods.

    Parameters
    ----------
    pipeline : ReleasePipeline
        The release this block belongs to.
    index : tuple of slice
        The block's place in M.
    """

    def __init__(self, pipeline: ReleasePipeline, index: Index):
        self.pipeline = pipeline
        self.index = index
        plan = pipeline.plan
        self.shape = tuple(part.stop - part.start for part in index)
        self.measurements = tuple(
            size if s.separable else s.n_measurements for size, s in zip(self.shape, plan.strategies)
        )
        self.split = self._split()
        self.b_axes = tuple(a for a in pipeline.transformed if a < self.split)
        self.a_axes = tuple(a for a in pipeline.transformed if a >= self.split)
        self.slabs = math.prod(self.shape[: self.split])
        self.slab_shape = self.shape[self.split :]
        self.slab_measurements = math.prod(self.measurements[self.split :])
        self.pass_names = (f"transform pass 1 of 3, transforming {self._names(self.a_axes)}",
                           f"transform pass 2 of 3, transforming {self._names(self.b_axes)}, adding noise, inverting",
                           f"transform pass 3 of 3, inverting {self._names(self.a_axes)}")

    def _split(self) -> int:
        """The split point p (B = axes before it): the smallest intermediate whose B side has at most
        ``sizing.pencil_rows`` measurements (the first split if none has)."""
        limit = self.pipeline.sizing.pencil_rows
        candidates = [p for p in range(1, len(self.shape)) if math.prod(self.measurements[:p]) <= limit]
        if not candidates:
            return 1
        return min(candidates, key=lambda p: math.prod(self.shape[:p]) * math.prod(self.measurements[p:]))

    def _names(self, axes: tuple[int, ...]) -> str:
        return ", ".join(self.pipeline.plan.axis_name(a) for a in axes) or "no axis"

    @cached_property
    def pencils(self) -> list[slice]:
        """Pass 2's column ranges on one machine (about ``sizing.pencil_cells`` measurements each)."""
        rows = math.prod(self.measurements[: self.split])
        width = max(1, self.pipeline.sizing.pencil_cells // rows)
        return [slice(start, min(start + width, self.slab_measurements))
                for start in range(0, self.slab_measurements, width)]

    def release(
        self, counts: np.ndarray, out: np.ndarray | None, key: bytes, steps: Progress, threads: int,
    ) -> tuple[np.ndarray, int]:
        """Release the block's ``counts`` into ``out`` (None: into the intermediate's own memory,
        returned); returns the output and the block's total.

        Parameters
        ----------
        counts : numpy.ndarray
            The block of M (its shape).
        out : numpy.ndarray or None
            float64, the block's shape; None: the output is made in the intermediate's memory.
        key : bytes
            The release's key.
        steps : Progress
            Progress and cancellation.
        threads : int
            Threads to use (at least 1).

        Returns
        -------
        tuple of (numpy.ndarray, int)
            The noisy block (``out``, or a new array) and the total of ``counts``.

        Raises
        ------
        PriveletError
            A negative, fractional, NaN or infinite count, or one of 2^53 or more.
        Cancelled
            ``steps`` was cancelled.
        """
        table = np.empty((self.slabs, self.slab_measurements), dtype=np.int64)
        by_slab = counts.reshape(self.slabs, *self.slab_shape) if counts.flags.c_contiguous else None
        totals = [0] * self.slabs

        def measure(slab: int, scratch: Scratch) -> None:
            source = self._slab(counts, slab)[None] if by_slab is None else by_slab[slab : slab + 1]
            totals[slab] = self.measure_slabs(source, table[slab : slab + 1], scratch)

        def noise(number: int, scratch: Scratch) -> None:
            columns = self.pencils[number]
            values = scratch.array("float", 2, (self.slabs, columns.stop - columns.start))
            self.noise_columns(table[:, columns], columns.start, values, scratch)
            table.view(np.float64)[:, columns] = values

        run_parts(measure, self.slabs, threads, key, steps.slice(0.0, 0.3), self.pass_names[0], "slab")
        run_parts(noise, len(self.pencils), threads, key, steps.slice(0.3, 0.8), self.pass_names[1], "tile")
        rows = table.view(np.float64)
        if out is None:
            return self._reconstruct_in_place(rows, key, steps.slice(0.8, 1.0), threads), sum(totals)
        run_parts(lambda slab, scratch: self._reconstruct_into(rows[slab : slab + 1], self._slab(out, slab), scratch),
                  self.slabs, threads, key, steps.slice(0.8, 1.0), self.pass_names[2], "slab")
        return out, sum(totals)

    def _slab(self, array: np.ndarray, slab: int) -> np.ndarray:
        """Slab ``slab`` of a block-shaped array: the A axes' box at one B position."""
        position = np.unravel_index(slab, self.shape[: self.split])
        return array[tuple(int(p) for p in position)]

    def _reconstruct_into(self, rows: np.ndarray, out: np.ndarray, scratch: Scratch) -> None:
        target = out if out.flags.c_contiguous else scratch.array("float", 3, out.shape)
        self.reconstruct_slabs(rows, target.reshape(1, *self.slab_shape), scratch)
        if target is not out:
            out[...] = target

    # -- the passes, each over a group of parts -------------------------------------------------
    def measure_slabs(self, counts: np.ndarray, out: np.ndarray, scratch: Scratch) -> int:
        """Pass 1: slabs ``counts`` (k, *slab_shape), checked and measured along A, into ``out``
        (int64, (k, slab_measurements)); returns their total.

        Parameters
        ----------
        counts : numpy.ndarray
            k slabs, shape ``(k, *slab_shape)``.
        out : numpy.ndarray
            int64, shape ``(k, slab_measurements)``.
        scratch : Scratch
            The calling thread's buffers.

        Returns
        -------
        int
            The total of ``counts``.

        Raises
        ------
        PriveletError
            A negative, fractional, NaN or infinite count, or one of 2^53 or more.
        """
        current = scratch.array("int", 0, counts.shape)
        total = checked_counts(counts, current.reshape(-1))
        slot = 0
        written = False
        for number, axis in enumerate(self.a_axes):
            strategy = self.pipeline.plan.strategies[axis]
            local = axis - self.split + 1
            shape = _changed(current.shape, local, strategy.n_measurements)
            written = number == len(self.a_axes) - 1 and out.flags.c_contiguous
            following = out.reshape(shape) if written else scratch.array("int", 1 - slot, shape)
            strategy.forward(as_3d(current, local), as_3d(following, local))
            current, slot = following, 1 - slot
        if not written:
            out[...] = current.reshape(out.shape)
        return total

    def noise_columns(self, columns: np.ndarray, first: int, out: np.ndarray, scratch: Scratch) -> None:
        """Pass 2: columns ``first``, ``first + 1``, ... of the intermediate (int64, (slabs, w)),
        measured along B, noised and reconstructed along B, into ``out`` (float64, (slabs, w)).

        Parameters
        ----------
        columns : numpy.ndarray
            int64, shape ``(slabs, w)``: columns of the intermediate after pass 1.
        first : int
            The index of the first column (the noise depends on positions).
        out : numpy.ndarray
            float64, shape ``(slabs, w)``.
        scratch : Scratch
            The calling thread's buffers and cipher.
        """
        width = columns.shape[1]
        current = scratch.array("int", 0, (*self.shape[: self.split], width))
        current.reshape(self.slabs, width)[...] = columns
        slot = 0
        for axis in self.b_axes:
            strategy = self.pipeline.plan.strategies[axis]
            following = scratch.array("int", 1 - slot, _changed(current.shape, axis, strategy.n_measurements))
            strategy.forward(as_3d(current, axis), as_3d(following, axis))
            current, slot = following, 1 - slot
        values = scratch.array("float", 0, current.shape)
        den_rows, den_cols, positions_rows, positions_cols = self._noise_tables
        span = slice(first, first + width)
        self.pipeline.noise.add(current.reshape(-1), values.reshape(-1), width, den_rows, den_cols[span],
                                positions_rows, positions_cols[span], scratch.cipher)
        slot = 0
        written = False
        for number, axis in enumerate(self.b_axes):
            strategy = self.pipeline.plan.strategies[axis]
            shape = _changed(values.shape, axis, strategy.size)
            written = number == len(self.b_axes) - 1 and out.flags.c_contiguous
            target = out.reshape(shape) if written else scratch.array("float", 1 - slot, shape)
            strategy.reconstruct(as_3d(values, axis), as_3d(target, axis))
            values, slot = target, 1 - slot
        if not written:
            out[...] = values.reshape(out.shape)

    @cached_property
    def _noise_tables(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Denominators and positions of the B measurements (rows) and the A measurements (columns)."""
        dens, positions = self.pipeline.axis_tables(self.index)
        b = self.split
        return (_outer(dens[:b], np.multiply), _outer(dens[b:], np.multiply),
                _outer(positions[:b], np.add), _outer(positions[b:], np.add))

    def reconstruct_slabs(self, rows: np.ndarray, out: np.ndarray, scratch: Scratch) -> None:
        """Pass 3: noisy rows (float64, (k, slab_measurements)) reconstructed along A into ``out``
        (float64, C-contiguous (k, *slab_shape)).

        Parameters
        ----------
        rows : numpy.ndarray
            float64, shape ``(k, slab_measurements)``: noisy rows after pass 2.
        out : numpy.ndarray
            float64, C-contiguous, shape ``(k, *slab_shape)``.
        scratch : Scratch
            The calling thread's buffers.
        """
        current = rows.reshape(len(rows), *self.measurements[self.split :])
        slot = 0
        for number, axis in enumerate(self.a_axes):
            strategy = self.pipeline.plan.strategies[axis]
            local = axis - self.split + 1
            shape = _changed(current.shape, local, strategy.size)
            target = out if number == len(self.a_axes) - 1 else scratch.array("float", 1 - slot, shape)
            strategy.reconstruct(as_3d(current, local), as_3d(target, local))
            current, slot = target, 1 - slot
        if not self.a_axes:
            out[...] = current

    def _reconstruct_in_place(self, rows: np.ndarray, key: bytes, steps: Progress, threads: int) -> np.ndarray:
        """Pass 3 with the output in the intermediate's memory: slab s's values go where slabs up to
        s lie, so each slab is copied out first and written once every slab before it is copied."""
        size = math.prod(self.slab_shape)
        flat = rows.reshape(-1)
        frontier = _Frontier(self.slabs)

        def reconstruct(slab: int, scratch: Scratch) -> None:
            source = scratch.array("float", 2, (1, self.slab_measurements))
            source[0] = rows[slab]
            frontier.read(slab)
            frontier.wait_until_read(slab)
            self.reconstruct_slabs(source, flat[slab * size : (slab + 1) * size].reshape(1, *self.slab_shape), scratch)

        try:
            run_parts(reconstruct, self.slabs, threads, key, steps, self.pass_names[2], "slab")
        finally:
            frontier.abort()
        return flat[: self.slabs * size].reshape(self.shape)


class _Frontier:
    """Which slabs have been read, for pass 3 in place: a slab may be written once every slab
    before it has been read (slabs are handed out in order, and reading one never waits)."""

    def __init__(self, count: int):
        self._done = [False] * count
        self._next = 0  # every slab before this one has been read
        self._condition = threading.Condition()
        self._aborted = False

    def read(self, slab: int) -> None:
        with self._condition:
            self._done[slab] = True
            while self._next < len(self._done) and self._done[self._next]:
                self._next += 1
            self._condition.notify_all()

    def wait_until_read(self, slab: int) -> None:
        with self._condition:
            self._condition.wait_for(lambda: self._next > slab or self._aborted)
            if self._aborted and self._next <= slab:
                raise InternalError("pass 3 stopped before the slabs under this one were read")

    def abort(self) -> None:
        with self._condition:
            self._aborted = True
            self._condition.notify_all()


def run_parts(work: Callable[[int, Scratch], None], count: int, threads: int, key: bytes, steps: Progress,
              stage: str, part: str) -> None:
    """Run ``work(0..count-1, scratch)`` on ``threads`` threads, each with its own scratch,
    reporting progress and honouring cancel in order. Each report says how many parts of
    ``stage`` are done ("...: 11 of 148 slabs done")."""

    def label(done: int) -> str:
        return f"{stage}: {done:,} of {count:,} {part}{'s' if count != 1 else ''} done"

    if threads == 1 or count <= 1:
        scratch = Scratch(key)
        for number in range(count):
            work(number, scratch)
            steps.report((number + 1) / count, label(number + 1))
        return
    local = threading.local()

    def task(number: int) -> None:
        scratch = getattr(local, "scratch", None)
        if scratch is None:
            scratch = local.scratch = Scratch(key)
        work(number, scratch)

    pool = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="privelet")
    window: deque[Future[None]] = deque()
    submitted = 0
    try:
        for number in range(count):
            while submitted < count and len(window) < 2 * threads:
                window.append(pool.submit(task, submitted))
                submitted += 1
            window.popleft().result()
            steps.report((number + 1) / count, label(number + 1))
    finally:  # on error or cancel: drop the parts not started, wait for the running ones
        for future in window:
            future.cancel()
        wait(window)
        pool.shutdown(wait=True)


def _changed(shape: tuple[int, ...], axis: int, size: int) -> tuple[int, ...]:
    return (*shape[:axis], size, *shape[axis + 1 :])


def _cells(index: Index) -> int:
    return math.prod(part.stop - part.start for part in index)


def _outer(vectors: list[np.ndarray], combine: np.ufunc) -> np.ndarray:
    """The flattened outer product (or sum) of per-axis vectors: one value per row of a box."""
    if not vectors:
        return np.array([1 if combine is np.multiply else 0], dtype=np.int64 if combine is np.multiply else np.uint64)
    out = vectors[0]
    for vector in vectors[1:]:
        out = combine.outer(out, vector).reshape(-1)
    return out

