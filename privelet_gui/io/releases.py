"""Release files (one self-describing ``.npz``), long-format exports, and queries on releases.

A release file holds two entries:

- ``noisy``: the noisy frequency matrix (float64, the schema's shape);
- ``metadata``: JSON text with everything needed to interpret and audit it: the
  schema (hierarchies inlined), epsilon, S_A, mechanism, neighbour relation, rho, the
  noise scale, sampler and bit source, the noise calibration (grid exponent, units, influence),
  the paper's bound and the exact worst-case variance, the software version, the
  creation time (UTC), whether (and with which seed) the noise was seeded, which
  domains were learned from the data, and the post-processing (``post_processing``:
  the shift to the public total, from which the raw matrix is ``noisy - total_shift``).

It never holds a true count. Under replace-one-tuple neighbours the number of rows is
public, and a release shifted to it sums to it; under add/remove it appears nowhere. Files are written
atomically and never overwrite an existing file unless asked to.

Exports of a seeded release (reproducible noise: NOT private) are refused unless asked
for, and then say so in the file itself: a first line ``# SEEDED TEST RELEASE ...`` in
CSV, key-value metadata ``privelet.seeded = true`` (and the warning) in Parquet.
"""

from __future__ import annotations

import gzip
import io
import json
import math
import os
import zipfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pandas as pd

from .. import __version__
from ..engine import (
    Z95,
    NoiseCalibration,
    NominalAttribute,
    PrefixSums,
    PriveletError,
    RangeQuery,
    Release,
    Schema,
    SchemaError,
    paper_bound,
)
from ..engine.bits import BIT_SOURCE
from ..engine.postprocess import post_processed_counts
from .atomic import atomic_write, check_writable
from .errors import ReleaseFileError
from .schema import schema_from_json, schema_to_json

__all__ = [
    "RELEASE_FORMAT",
    "RELEASE_FORMAT_VERSION",
    "SEEDED_WARNING",
    "QueryAnswer",
    "answer_query",
    "count_column",
    "export_release",
    "load_release",
    "load_release_metadata",
    "parse_where",
    "release_frame",
    "release_metadata",
    "save_release",
]

RELEASE_FORMAT = "privelet-release"
RELEASE_FORMAT_VERSION = 1

ExportFormat = Literal["csv", "parquet"]


# -- metadata ----------------------------------------------------------------------------------


def release_metadata(
    release: Release, *, seed: int | None = None, metadata: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """The JSON metadata stored with a release (see the module docstring)."""
    schema = release.schema
    cal = release.calibration
    if schema is not None:
        bound = paper_bound(schema, release.epsilon, release.sa, neighbours=release.neighbours)
    else:  # Basic without a schema: 2 s^2 m / epsilon^2
        bound = 2.0 * cal.multiplicity**2 * release.noisy.size / release.epsilon**2
    if seed is not None and not release.seeded:
        raise PriveletError("a seed was given for a release made without one; pass the seed used to make it")
    if metadata is not None:
        try:
            json.dumps(metadata, allow_nan=False)
        except (TypeError, ValueError) as exc:
            raise PriveletError(f"release metadata must be plain JSON values: {exc}") from None
    return {
        "format": RELEASE_FORMAT,
        "format_version": RELEASE_FORMAT_VERSION,
        "software": "privelet-gui",
        "software_version": __version__,
        "created": datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z"),
        "mechanism": release.mechanism,
        "epsilon": float(release.epsilon),
        "sa": list(release.sa),
        "neighbours": release.neighbours,
        "rho": release.rho,
        "scale": float(release.scale),
        "nominal_scale": float(release.nominal_scale),
        "sampler": release.sampler,
        # a seeded release drew from the caller's generator, every other one from AES keyed by the OS
        "bit_source": "seeded generator (tests only)" if release.seeded else BIT_SOURCE,
        "calibration": {
            "epsilon": float(cal.epsilon),
            "neighbours": cal.neighbours,
            "rho": cal.rho,
            "influence": int(cal.influence),
            "grid_exponent": int(cal.grid_exponent),
            "units": int(cal.units),
        },
        "coefficient_variance": float(release.coefficient_variance),
        "paper_bound": float(bound),
        "exact_worst_case_variance": float(release.worst_case_variance),
        "shape": list(release.noisy.shape),
        "schema": None if schema is None else schema_to_json(schema),
        "seeded": bool(release.seeded),
        "seed": seed,
        "domain_from_data": [] if schema is None else list(schema.domain_from_data),
        "post_processing": _post_processing(release),
        "extra": dict(metadata or {}),
    }


def _post_processing(release: Release) -> dict[str, Any]:
    """What was done to the mechanism's output (only public information was used)."""
    if release.total_shift is None:
        return {"public_total": False, "total_shift": None}
    return {
        "public_total": True,
        "total_shift": float(release.total_shift),
        "description": "every cell was shifted by total_shift so that the total equals the number of rows, "
                       "which replace-one-tuple neighbours make public; the raw release is noisy - total_shift",
    }


def save_release(
    release: Release,
    path: str | os.PathLike[str],
    *,
    force: bool = False,
    metadata: Mapping[str, Any] | None = None,
    seed: int | None = None,
) -> dict[str, Any]:
    """Write ``release`` to one ``.npz`` file, atomically; returns the metadata written.

    ``metadata`` (plain JSON values) is stored under ``"extra"``; ``seed`` records the
    seed of a seeded (test) release. An existing file is replaced only with ``force``.
    """
    noisy = np.ascontiguousarray(release.noisy, dtype=np.float64)
    if release.schema is not None and noisy.shape != release.schema.shape:
        raise PriveletError(f"the release's matrix has shape {noisy.shape} but its schema needs {release.schema.shape}")
    meta = release_metadata(release, seed=seed, metadata=metadata)
    text = json.dumps(meta, ensure_ascii=False, allow_nan=False)
    check_writable(path, force=force)
    with atomic_write(path, force=force) as f:
        np.savez(f, noisy=noisy, metadata=np.array(text))
    return meta


def _open_npz(path: str | os.PathLike[str]) -> tuple[np.lib.npyio.NpzFile, Path]:
    p = Path(path)
    if not p.is_file():
        raise ReleaseFileError(f"no such release file: {p}" if not p.exists() else f"{p} is not a file")
    try:
        npz = np.load(p, allow_pickle=False)
    except (zipfile.BadZipFile, ValueError, OSError, EOFError) as exc:
        raise ReleaseFileError(f"{p} is not a Privelet release file ({_brief(exc)}); make one with 'privelet release'") from None
    if not isinstance(npz, np.lib.npyio.NpzFile):
        raise ReleaseFileError(f"{p} is a single numpy array, not a Privelet release file")
    return npz, p


def _brief(exc: BaseException) -> str:
    text = str(exc).split("\n")[0]
    return text[:120] if text else type(exc).__name__


def _read_metadata(npz: np.lib.npyio.NpzFile, p: Path) -> dict[str, Any]:
    if "metadata" not in npz.files or "noisy" not in npz.files:
        raise ReleaseFileError(f"{p} is not a Privelet release file (it holds {', '.join(npz.files) or 'nothing'})")
    try:
        raw = npz["metadata"]
        meta = json.loads(str(raw[()]))
    except (ValueError, zipfile.BadZipFile, OSError, EOFError) as exc:
        raise ReleaseFileError(f"{p}: the release metadata is damaged ({_brief(exc)})") from None
    if not isinstance(meta, dict) or meta.get("format") != RELEASE_FORMAT:
        raise ReleaseFileError(f"{p} is not a Privelet release file (no '{RELEASE_FORMAT}' metadata)")
    version = meta.get("format_version")
    if not isinstance(version, int) or version > RELEASE_FORMAT_VERSION:
        raise ReleaseFileError(
            f"{p} has release format version {version!r}; this Privelet Studio reads version "
            f"{RELEASE_FORMAT_VERSION}: update it"
        )
    return meta


def load_release_metadata(path: str | os.PathLike[str]) -> dict[str, Any]:
    """The JSON metadata of a release file (without loading the matrix)."""
    from .zarr_releases import is_zarr_release, load_zarr_release_metadata

    if is_zarr_release(path):  # a chunked release folder (privelet_gui.distributed)
        return load_zarr_release_metadata(path)
    npz, p = _open_npz(path)
    with npz:
        return _read_metadata(npz, p)


def load_release(path: str | os.PathLike[str]) -> Release:
    """Read a release file back into an engine :class:`~privelet_gui.engine.Release`.

    The schema, calibration, S_A and flags are rebuilt from the metadata, so exact
    variances (``release.variance(query)``) work on the loaded release. A Zarr release
    folder is opened lazily (:func:`~privelet_gui.io.zarr_releases.open_zarr_release`).
    """
    from .zarr_releases import is_zarr_release, open_zarr_release

    if is_zarr_release(path):
        return open_zarr_release(path)
    npz, p = _open_npz(path)
    with npz:
        meta = _read_metadata(npz, p)
        try:
            noisy = np.asarray(npz["noisy"], dtype=np.float64)
        except (ValueError, zipfile.BadZipFile, OSError, EOFError) as exc:
            raise ReleaseFileError(f"{p}: the noisy matrix is damaged ({_brief(exc)})") from None
    return release_from_metadata(meta, noisy, p)


def release_from_metadata(meta: Mapping[str, Any], noisy: Any, p: Path) -> Release:
    """The release that ``meta`` describes, holding ``noisy`` (an array, or a lazily read
    one: anything with ``shape`` and indexing); errors name the file ``p``."""
    try:
        schema = None if meta.get("schema") is None else schema_from_json(meta["schema"], source=f"{p} (schema)")
        cal = meta["calibration"]
        calibration = NoiseCalibration(
            epsilon=float(cal["epsilon"]),
            neighbours=cal["neighbours"],
            rho=cal["rho"],
            influence=int(cal["influence"]),
            grid_exponent=int(cal["grid_exponent"]),
            units=int(cal["units"]),
        )
        release = Release(
            noisy=noisy,
            epsilon=float(meta["epsilon"]),
            sa=tuple(meta["sa"]),
            rho=meta["rho"],
            scale=float(meta["scale"]),
            mechanism=meta["mechanism"],
            neighbours=meta["neighbours"],
            calibration=calibration,
            schema=schema,
            seeded=bool(meta["seeded"]),
            sampler=str(meta["sampler"]),
            total_shift=_total_shift(meta),
        )
    except (KeyError, TypeError) as exc:
        raise ReleaseFileError(f"{p}: the release metadata is incomplete ({_brief(exc)})") from None
    shape = tuple(noisy.shape)
    if schema is not None and shape != schema.shape:
        raise ReleaseFileError(f"{p}: the matrix has shape {shape} but its schema needs {schema.shape}")
    if tuple(meta.get("shape", shape)) != shape:
        raise ReleaseFileError(f"{p}: the matrix has shape {shape}, the metadata says {tuple(meta['shape'])}")
    return release


def _total_shift(meta: Mapping[str, Any]) -> float | None:
    """The recorded shift to the public total (files written before it existed have none)."""
    post = meta.get("post_processing") or {}
    shift = post.get("total_shift")
    if shift is None:
        return None
    if isinstance(shift, bool) or not isinstance(shift, (int, float)) or not math.isfinite(shift):
        raise ReleaseFileError(f"the release metadata's total_shift must be a number, got {shift!r}")
    if meta.get("neighbours") != "replace":
        raise ReleaseFileError("the release metadata records a shift to the public total under add/remove neighbours")
    return float(shift)


# -- exports -------------------------------------------------------------------------------------

COUNT_COLUMN = "noisy_count"


def count_column(counts: str = "noisy") -> str:
    """The export's count column: ``noisy_count``, or e.g. ``noisy_count_nonnegative`` so
    that post-processed counts are never mistaken for the release's own."""
    post_processed_counts(np.zeros(1), counts)  # refuses an unknown kind
    return COUNT_COLUMN if counts == "noisy" else f"{COUNT_COLUMN}_{counts.replace('-', '_')}"


def release_frame(release: Release, *, counts: str = "noisy") -> pd.DataFrame:
    """The long format: one row per cell, a label column per attribute, then the counts.

    Rows follow the matrix in C order (the last attribute varies fastest). Label
    columns are categorical (each label stored once). ``counts`` (one of
    :data:`~privelet_gui.engine.postprocess.COUNT_KINDS`) projects the counts onto
    non-negative ones with the same total and/or rounds them to whole counts; the
    column is then named after it (:func:`count_column`).
    """
    noisy = post_processed_counts(release.noisy, counts)
    schema = release.schema
    if schema is not None:
        names = list(schema.names)
        labels = [list(a.labels) for a in schema]
    else:
        names = [f"axis_{i}" for i in range(noisy.ndim)]
        labels = [[str(j) for j in range(n)] for n in noisy.shape]
    if COUNT_COLUMN in names:
        raise SchemaError(f"an attribute is called {COUNT_COLUMN!r}, the name of the count column; rename it")
    columns: dict[str, Any] = {}
    shape = noisy.shape
    for axis, (name, cats) in enumerate(zip(names, labels, strict=True)):
        inner = math.prod(shape[axis + 1 :])
        outer = math.prod(shape[:axis])
        dtype = np.min_scalar_type(max(len(cats) - 1, 0))
        codes = np.tile(np.repeat(np.arange(len(cats), dtype=dtype), inner), outer)
        columns[name] = pd.Categorical.from_codes(codes, categories=pd.Index(cats, dtype=object))
    values = noisy.reshape(-1)
    columns[count_column(counts)] = values.astype(np.int64) if counts.endswith("integer") else values
    return pd.DataFrame(columns, copy=False)


def _export_format(path: Path, given: str | None) -> tuple[ExportFormat, bool]:
    name = path.name.lower()
    gz = name.endswith(".gz")
    if given is not None:
        if given not in ("csv", "parquet"):
            raise PriveletError(f"export format must be 'csv' or 'parquet', got {given!r}")
        return given, gz and given == "csv"  # type: ignore[return-value]
    if name.endswith((".csv", ".csv.gz", ".txt")):
        return "csv", gz
    if name.endswith((".parquet", ".pq")):
        return "parquet", False
    raise PriveletError(f"cannot tell the export format from {path.name!r}; use a .csv or .parquet name, or give the format")


#: What every export of a seeded release says, in the file itself.
SEEDED_WARNING = (
    "SEEDED TEST RELEASE - NOT PRIVATE: its noise was made with a fixed seed, and anyone who knows "
    "or guesses the seed can remove it. For tests only: never publish this file."
)


def export_release(
    release: Release,
    path: str | os.PathLike[str],
    *,
    format: ExportFormat | None = None,
    force: bool = False,
    counts: str = "noisy",
    allow_seeded: bool = False,
) -> int:
    """Export the long format (:func:`release_frame`) to CSV (``.csv``, ``.csv.gz``) or Parquet.

    Writes atomically; returns the number of rows (= cells). By default noisy counts keep
    full precision (they may be negative or fractional: that is the noise, and rounding or
    clipping them biases sums). ``counts="nonnegative"``, ``"integer"`` or
    ``"nonnegative-integer"`` exports counts for users who cannot use those, in a column
    named so: better for small counts and relative errors, worse for big sums. A seeded
    release is refused unless ``allow_seeded``; its export then begins with the line
    ``# `` + :data:`SEEDED_WARNING` (CSV) or carries it as key-value metadata (Parquet:
    ``privelet.seeded``, ``privelet.warning``).
    """
    if release.seeded and not allow_seeded:
        raise PriveletError(
            "this release was made with a fixed seed (for tests only) and is NOT private: anyone who knows "
            "the seed can remove its noise. Make the release again without a seed, or export it for testing "
            "only with allow_seeded=True (privelet export --allow-seeded); the file will say it is seeded"
        )
    if not isinstance(release.noisy, np.ndarray):  # a lazily opened Zarr release: never read whole
        from .zarr_releases import export_release_chunked

        return export_release_chunked(release, path, format=format, force=force, counts=counts)
    p = Path(path)
    fmt, gz = _export_format(p, format)
    count_column(counts)  # an unknown kind fails before anything is written
    check_writable(p, force=force)
    frame = release_frame(release, counts=counts)
    with atomic_write(p, force=force) as f:
        if fmt == "csv" and release.seeded:
            _write_marked_csv(frame, f, gz)
        elif fmt == "csv":
            frame.to_csv(f, index=False, compression="gzip" if gz else None, chunksize=1 << 18, lineterminator="\n")
        else:
            _write_parquet(frame, f, seeded=release.seeded)
    return len(frame)


def _write_marked_csv(frame: pd.DataFrame, handle: Any, gz: bool) -> None:
    """CSV whose first line is the seeded-release warning (inside the gzip stream for .gz)."""
    binary = gzip.GzipFile(fileobj=handle, mode="wb") if gz else handle
    text = io.TextIOWrapper(binary, encoding="utf-8", newline="")
    text.write(f"# {SEEDED_WARNING}\n")
    frame.to_csv(text, index=False, chunksize=1 << 18, lineterminator="\n")
    text.flush()
    text.detach()  # leaves the file open: atomic_write closes it
    if gz:
        binary.close()  # ends the gzip stream


def seeded_marks(seeded: bool) -> dict[bytes, bytes]:
    """The Parquet key-value metadata that says whether a release is seeded (and, if so, why not to publish it)."""
    marks = {b"privelet.seeded": b"true" if seeded else b"false"}
    if seeded:
        marks[b"privelet.warning"] = SEEDED_WARNING.encode()
    return marks


def _write_parquet(frame: pd.DataFrame, handle: Any, *, seeded: bool) -> None:
    """Parquet with ``privelet.seeded`` (and, when seeded, ``privelet.warning``) key-value metadata."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.Table.from_pandas(frame, preserve_index=False)
    table = table.replace_schema_metadata({**(table.schema.metadata or {}), **seeded_marks(seeded)})
    pq.write_table(table, handle)


# -- queries on a release ----------------------------------------------------------------------------


def _value_label(attribute: Any, text: str) -> str:
    """A text end of an ordinal interval as one of the attribute's labels."""
    if text in attribute.labels:
        return text
    try:
        number = float(text)
    except ValueError:
        return text  # RangeQuery.build reports it with the attribute's values
    if attribute.bins is not None and math.isfinite(number):
        b = attribute.bins
        index = b.index_of_number(number)
        if index is None:
            raise SchemaError(
                f"{text} is outside attribute {attribute.name!r} (bins from {b.start} to {b.stop}, stop excluded)"
            )
        return attribute.labels[index]
    if attribute.integer_start is not None and number.is_integer():
        return str(int(number))
    return text


def parse_where(schema: Schema, clauses: Sequence[str]) -> RangeQuery:
    """A box query from ``name=value`` clauses (as in ``privelet query --where``).

    ``value`` is a hierarchy node label (nominal), or for an ordinal attribute one value
    or an inclusive range ``first..last`` (either end may be left open). For binned
    attributes a number selects the bin that holds it.

    Examples
    --------
    >>> from privelet_gui.engine import Hierarchy, NominalAttribute, OrdinalAttribute, Schema
    >>> s = Schema([OrdinalAttribute.integer_range("age", 0, 99),
    ...             NominalAttribute("sex", Hierarchy.flat(["F", "M"]))])
    >>> q = parse_where(s, ["age=20..30", "sex=F"])
    >>> q.lo, q.hi
    ((20, 0), (30, 0))
    """
    constraints: dict[str, object] = {}
    for clause in clauses:
        name, sep, value = clause.partition("=")
        name, value = name.strip(), value.strip()
        if not sep or not name or not value:
            raise SchemaError(f"a condition is written name=value (e.g. age=20..30), got {clause!r}")
        attribute = schema[schema.index(name)]
        if name in constraints:
            raise SchemaError(f"attribute {name!r} is constrained twice; combine the conditions into one")
        if isinstance(attribute, NominalAttribute) or value in attribute.labels or ".." not in value:
            constraints[name] = value if isinstance(attribute, NominalAttribute) else _value_label(attribute, value)
            continue
        first, _, last = value.partition("..")
        first, last = first.strip(), last.strip()
        constraints[name] = (
            _value_label(attribute, first) if first else None,
            _value_label(attribute, last) if last else None,
        )
    return RangeQuery.build(schema, constraints)


@dataclass(frozen=True)
class QueryAnswer:
    """A query's noisy answer, its exact noise variance and a 95% interval.

    The interval is ``noisy_count +/- 1.96 sqrt(variance)`` (normal approximation of
    the noise, which is a sum of many independent discrete-Laplace terms).
    """

    query: str
    noisy_count: float
    variance: float
    ci95: tuple[float, float]

    def to_json(self) -> dict[str, Any]:
        return {"noisy_count": self.noisy_count, "variance": self.variance, "ci95": list(self.ci95)}


def answer_query(release: Release, query: RangeQuery, prefix: PrefixSums | None = None) -> QueryAnswer:
    """Answer a box query on a release, with its exact noise variance.

    With ``prefix`` (the release's :class:`~privelet_gui.engine.PrefixSums`) the count
    takes 2^d look-ups instead of a sum over the box.
    """
    if prefix is not None:
        noisy = prefix.box_sum(query.lo, query.hi)
    else:
        box = tuple(slice(lo, hi + 1) for lo, hi in zip(query.lo, query.hi, strict=False))
        noisy = float(release.noisy[box].sum())
    variance = float(release.variance(query))
    half = Z95 * math.sqrt(variance)
    return QueryAnswer(query.describe(), noisy, variance, (noisy - half, noisy + half))

