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
    """Privelet: :func:`privelet_plus` with S_A empty (every attribute transformed)."""
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
    """Compile, or load from numba's cache, every compiled loop a release uses (each kernel is
    otherwise compiled the first time a release needs it); returns the seconds it took. It
    releases a tiny table with each of the paper's strategies and both samplers, and with trees, at an epsilon
    where draws often start again (so that the retry loop is loaded too). Seeded: nothing of it
    is ever published."""
    started = time.perf_counter()
    schema = Schema([OrdinalAttribute.integer_range("x", 0, 4),
                     NominalAttribute("y", Hierarchy.from_nested({"*": {"a": ["1", "2"], "b": ["3"]}}))])
    counts = np.arange(schema.size, dtype=np.float64).reshape(schema.shape)
    for sampler in ("exact", "standard"):
        ReleaseSpec(schema, 1e9, "privelet", sampler=sampler).run(counts, seed=0)
    ReleaseSpec(schema, 1e9, "strategies", strategies=("tree-2", "hierarchy")).run(counts, seed=0)
    return time.perf_counter() - started
