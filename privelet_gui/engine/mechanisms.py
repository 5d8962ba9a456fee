"""The release mechanisms as functions: Basic, Privelet and Privelet+.

Each is a thin call into :class:`~privelet_gui.engine.spec.ReleaseSpec`, which holds
every rule of a release; the work itself is :mod:`privelet_gui.engine.pipeline`.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Iterable

import numpy as np

from .errors import PriveletError
from .kernels.counts import count_cells
from .model.hierarchy import Hierarchy
from .model.schema import NominalAttribute, OrdinalAttribute, Schema
from .noise.calibration import Neighbours
from .progress import CancelCallback, ProgressCallback
from .spec import SAMPLER, Mechanism, Release, ReleaseSpec, axes_schema

__all__ = ["SAMPLER", "Release", "basic", "prepare_kernels", "privelet", "privelet_plus"]


def privelet_plus(
    matrix: np.ndarray,
    schema: Schema,
    epsilon: float,
    sa: Iterable[str] = (),
    rng: np.random.Generator | None = None,
    *,
    neighbours: Neighbours = "replace",
    progress: ProgressCallback | None = None,
    should_cancel: CancelCallback | None = None,
    mechanism: Mechanism | None = None,
    workers: int | None = None,
    public_total: bool | None = None,
) -> Release:
    """Privelet+ (docs/math.md, "Strategies"): the wavelets on the attributes outside ``sa``, noise, reconstruction.

    ``matrix`` is M (non-negative integer counts, shape ``schema.shape``). ``rng`` is for
    reproducible tests only; by default the noise is seeded from OS entropy. The S_A
    blocks are processed by ``workers`` threads (default: one per CPU core); the result
    does not depend on their number. ``public_total`` (default: under replace-one-tuple
    neighbours) shifts the release to the public number of rows (:class:`ReleaseSpec`).

    Parameters
    ----------
    matrix : numpy.ndarray
        M: non-negative integer counts (any numeric dtype), shape ``schema.shape``.
    schema : Schema
        The attributes of M's axes, in axis order.
    epsilon : float
        The privacy budget, in ``[1e-12, 1e12]``; smaller means more noise.
    sa : iterable of str, default ()
        S_A: names of the attributes left untransformed (any order; a single string is refused).
    rng : numpy.random.Generator, optional
        For reproducible tests only: the release is then marked ``seeded`` and must not be
        published. Default: the noise is keyed from the operating system's entropy.
    neighbours : {"replace", "add-remove"}, default "replace"
        The neighbouring notion: replace one record (sensitivity doubled) or add/remove one.
    progress : callable ``(fraction, stage)``, optional
        Called with the fraction done (0..1) and a stage label.
    should_cancel : callable ``() -> bool``, optional
        Polled between blocks; True stops the release with :class:`Cancelled`.
    workers : int, optional
        Threads (at least 1). Default: by size (:func:`thread_count`); the result does not depend on it.
    public_total : bool, optional
        Shift the release so that its total is the number of rows. Default (None): yes under
        ``"replace"`` neighbours, where that number is public; True under ``"add-remove"`` is refused.
    mechanism : {"privelet+", "privelet", "basic"}, optional
        The mechanism recorded; default ``"privelet+"`` (the release's label follows S_A:
        empty is Privelet, every attribute is Basic).

    Returns
    -------
    Release
        The noisy matrix (float64, shape ``schema.shape``) and how it was made.

    Raises
    ------
    PriveletError
        ``epsilon`` outside :data:`EPSILON_MIN` .. :data:`EPSILON_MAX` or too small for this
        strategy's grid; ``neighbours`` or ``public_total`` not allowed; ``matrix`` not of shape
        ``schema.shape`` or holding a negative, fractional, NaN or infinite count, or a count of
        2^53 or more; a table too large for exact rounding; a release that would not fit in the
        memory available; ``workers`` not a positive integer.
    SchemaError
        ``sa`` names an unknown or repeated attribute, or is a single string.
    Cancelled
        ``should_cancel()`` returned True between blocks.

    Examples
    --------
    >>> from privelet_gui.engine import Hierarchy, NominalAttribute, OrdinalAttribute, Schema
    >>> schema = Schema([OrdinalAttribute.integer_range("age", 0, 15),
    ...                  NominalAttribute("sex", Hierarchy.flat(["F", "M"]))])
    >>> m = np.ones(schema.shape)
    >>> r = privelet_plus(m, schema, epsilon=1.0, sa=["sex"], rng=np.random.default_rng(7))
    >>> r.noisy.shape, r.rho, r.mechanism, round(r.scale, 4)  # lambda = 10, exceeded by < 2**-20
    ((16, 2), 5, 'privelet+', 10.0)
    """
    names = sa if isinstance(sa, str) else tuple(sa)  # a string is refused by the spec, by name
    spec = ReleaseSpec(schema, epsilon, mechanism or "privelet+", names, neighbours, public_total=public_total)  # type: ignore[arg-type]
    return spec.run(matrix, rng=rng, progress=progress, should_cancel=should_cancel, workers=workers)


def privelet(
    matrix: np.ndarray,
    schema: Schema,
    epsilon: float,
    rng: np.random.Generator | None = None,
    *,
    neighbours: Neighbours = "replace",
    progress: ProgressCallback | None = None,
    should_cancel: CancelCallback | None = None,
    workers: int | None = None,
    public_total: bool | None = None,
) -> Release:
    """Privelet: :func:`privelet_plus` with S_A empty (every attribute transformed).

    Parameters
    ----------
    matrix : numpy.ndarray
        M: non-negative integer counts (any numeric dtype), shape ``schema.shape``.
    schema : Schema
        The attributes of M's axes, in axis order.
    epsilon : float
        The privacy budget, in ``[1e-12, 1e12]``; smaller means more noise.
    rng : numpy.random.Generator, optional
        For reproducible tests only: the release is then marked ``seeded`` and must not be
        published. Default: the noise is keyed from the operating system's entropy.
    neighbours : {"replace", "add-remove"}, default "replace"
        The neighbouring notion: replace one record (sensitivity doubled) or add/remove one.
    progress : callable ``(fraction, stage)``, optional
        Called with the fraction done (0..1) and a stage label.
    should_cancel : callable ``() -> bool``, optional
        Polled between blocks; True stops the release with :class:`Cancelled`.
    workers : int, optional
        Threads (at least 1). Default: by size (:func:`thread_count`); the result does not depend on it.
    public_total : bool, optional
        Shift the release so that its total is the number of rows. Default (None): yes under
        ``"replace"`` neighbours, where that number is public; True under ``"add-remove"`` is refused.

    Returns
    -------
    Release
        The noisy matrix (float64, shape ``schema.shape``) and how it was made.

    Raises
    ------
    PriveletError
        ``epsilon`` outside :data:`EPSILON_MIN` .. :data:`EPSILON_MAX` or too small for this
        strategy's grid; ``neighbours`` or ``public_total`` not allowed; ``matrix`` not of shape
        ``schema.shape`` or holding a negative, fractional, NaN or infinite count, or a count of
        2^53 or more; a table too large for exact rounding; a release that would not fit in the
        memory available; ``workers`` not a positive integer.
    Cancelled
        ``should_cancel()`` returned True between blocks.
    """
    spec = ReleaseSpec(schema, epsilon, "privelet", (), neighbours, public_total=public_total)
    return spec.run(matrix, rng=rng, progress=progress, should_cancel=should_cancel, workers=workers)


def basic(
    matrix: np.ndarray,
    epsilon: float,
    rng: np.random.Generator | None = None,
    *,
    schema: Schema | None = None,
    neighbours: Neighbours = "replace",
    progress: ProgressCallback | None = None,
    should_cancel: CancelCallback | None = None,
    workers: int | None = None,
    public_total: bool | None = None,
) -> Release:
    """Basic (Dwork et al.): noise of scale 2/epsilon (replace) on every cell of M.

    Equivalent to Privelet+ with every attribute in S_A. ``schema`` is optional and,
    when given, is recorded in the release.

    Parameters
    ----------
    matrix : numpy.ndarray
        M: non-negative integer counts, at least one cell; any shape when ``schema`` is None.
    epsilon : float
        The privacy budget, in ``[1e-12, 1e12]``; smaller means more noise.
    rng : numpy.random.Generator, optional
        For reproducible tests only: the release is then marked ``seeded`` and must not be
        published. Default: the noise is keyed from the operating system's entropy.
    schema : Schema, optional
        The attributes of M's axes, recorded in the release; default: plain ordinal axes
        ``axis_0, axis_1, ...`` (not recorded).
    neighbours : {"replace", "add-remove"}, default "replace"
        The neighbouring notion: replace one record (sensitivity doubled) or add/remove one.
    progress : callable ``(fraction, stage)``, optional
        Called with the fraction done (0..1) and a stage label.
    should_cancel : callable ``() -> bool``, optional
        Polled between blocks; True stops the release with :class:`Cancelled`.
    workers : int, optional
        Threads (at least 1). Default: by size (:func:`thread_count`); the result does not depend on it.
    public_total : bool, optional
        Shift the release so that its total is the number of rows. Default (None): yes under
        ``"replace"`` neighbours, where that number is public; True under ``"add-remove"`` is refused.

    Returns
    -------
    Release
        The noisy matrix (float64, the shape of ``matrix``); its ``schema`` is None unless one was given.

    Raises
    ------
    PriveletError
        ``epsilon`` outside :data:`EPSILON_MIN` .. :data:`EPSILON_MAX` or too small for this
        strategy's grid; ``neighbours`` or ``public_total`` not allowed; ``matrix`` empty or not of
        shape ``schema.shape``, or holding a negative, fractional, NaN or infinite count, or a count of
        2^53 or more; a table too large for exact rounding; a release that would not fit in the
        memory available; ``workers`` not a positive integer.
    Cancelled
        ``should_cancel()`` returned True between blocks.
    """
    matrix = np.asarray(matrix, dtype=np.float64)
    if matrix.ndim == 0 or matrix.size == 0:
        raise PriveletError(
            f"Basic needs a frequency matrix with at least one cell, got an array of shape {matrix.shape}"
        )
    spec = ReleaseSpec(
        schema if schema is not None else axes_schema(matrix.shape), epsilon, "basic", (), neighbours,
        public_total=public_total,
    )
    release = spec.run(matrix, rng=rng, progress=progress, should_cancel=should_cancel, workers=workers)
    return release if schema is not None else dataclasses.replace(release, schema=None)


def prepare_kernels() -> float:
    """Compile, or load from numba's cache, every compiled loop a release uses, counting included
    (each kernel is otherwise compiled the first time a release needs it); returns the seconds it
    took. It releases a tiny table with each of the paper's strategies and both samplers, and with trees, at an epsilon
    where draws often start again (so that the retry loop is loaded too). Seeded: nothing of it
    is ever published.

    Returns
    -------
    float
        Wall-clock seconds the compilation or loading took.
    """
    started = time.perf_counter()
    schema = Schema([OrdinalAttribute.integer_range("x", 0, 4),
                     NominalAttribute("y", Hierarchy.from_nested({"*": {"a": ["1", "2"], "b": ["3"]}}))])
    counts = np.arange(schema.size, dtype=np.float64).reshape(schema.shape)
    for sampler in ("exact", "standard"):
        ReleaseSpec(schema, 1e9, "privelet", sampler=sampler).run(counts, seed=0)
    ReleaseSpec(schema, 1e9, "strategies", strategies=("tree-2", "hierarchy")).run(counts, seed=0)
    count_cells(np.zeros(1, dtype=np.intp), np.zeros(1))  # counting a table's rows
    return time.perf_counter() - started
