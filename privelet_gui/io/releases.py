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
atomically and never overwrite an existing file unless asked to. The metadata and its checks are
:mod:`~privelet_gui.io.metadata`'s, the long format :mod:`~privelet_gui.io.long_format`'s: a
Zarr release folder (:mod:`~privelet_gui.io.zarr_releases`) shares both, and this module
dispatches loading and exports to it.

A third entry, ``signature``, holds the file's signature (:mod:`privelet_gui.io.signing`: an
HMAC-SHA-256 of the metadata and the matrix with a key kept beside the privacy ledger). A file
that lacks it (older versions) or fails it still loads, with a warning saying what that means
(:func:`load_release`); so does a file whose ``seeded`` flag and ``bit_source`` disagree, which
is read as seeded.

Exports of a seeded release (reproducible noise: NOT private) are refused unless asked
for, and then say so in the file itself: a first line ``# SEEDED TEST RELEASE ...`` in
CSV, key-value metadata ``privelet.seeded = true`` (and the warning) in Parquet.

Every export describes itself (:func:`export_metadata`: epsilon, neighbours, mechanism, S_A,
the noise scale, the shift to the public total, the count kind, the software version; never
a count): a CSV file in a JSON file beside it, ``NAME.csv.metadata.json``, written atomically
with it (:func:`export_metadata_path`), a Parquet file in its key-value metadata
``privelet.metadata``. An export may add each cell's exact noise standard deviation
(``noisy_count_standard_error``), computed from the release's metadata alone. Text cells of
a CSV export that a spreadsheet would take for a formula (starting with ``=``, ``+``, ``-``,
``@``, a tab or a carriage return, and not a plain number) begin with an apostrophe
(:func:`spreadsheet_safe`); Parquet's typed text columns keep the labels as they are.
"""

from __future__ import annotations

import json
import math
import os
import tokenize
import zipfile
import zlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import numpy as np

from ..engine import (
    InternalError,
    NominalAttribute,
    PrefixSums,
    PriveletError,
    RangeQuery,
    Release,
    Schema,
    SchemaError,
    available_memory,
    byte_size,
    margin95,
)
from ..engine.postprocess import post_processed_counts
from ..engine.progress import CancelCallback, Progress, ProgressCallback
from ._json import loads, shown
from .atomic import atomic_write, check_writable
from .errors import ReleaseFileError
from .long_format import (
    LABEL_SUFFIX,
    SEEDED_WARNING,
    SLAB_CELLS,
    STANDARD_ERROR_COLUMN,
    ExportFormat,
    cell_standard_error_problem,
    cell_standard_errors,
    count_column,
    export_metadata,
    export_metadata_path,
    release_frame,
    spreadsheet_safe,
    write_export_file,
    write_long_format,
)
from .metadata import (
    RELEASE_FORMAT,
    RELEASE_FORMAT_VERSION,
    ReleaseWarning,
    finite_or_none,
    invalid_release,
    release_fields,
    release_holding,
    release_metadata,
    release_warning,
)
from .signing import canonical_json, sign, signature_problem
from .zarr_releases import (
    export_release_chunked,
    is_zarr_release,
    load_zarr_release_metadata,
    open_zarr_release,
    write_export_chunked,
)

# The long format's and the metadata's public names stay importable from here too.
__all__ = [
    "LABEL_SUFFIX",
    "RELEASE_FORMAT",
    "RELEASE_FORMAT_VERSION",
    "SEEDED_WARNING",
    "SLAB_CELLS",
    "STANDARD_ERROR_COLUMN",
    "QueryAnswer",
    "ReleaseWarning",
    "answer_query",
    "cell_standard_error_problem",
    "cell_standard_errors",
    "count_column",
    "export_metadata",
    "export_metadata_path",
    "export_release",
    "load_release",
    "load_release_metadata",
    "parse_where",
    "release_frame",
    "release_metadata",
    "release_warning",
    "save_release",
    "spreadsheet_safe",
    "standard_error_fits",
    "write_export",
    "write_long_format",
]


def save_release(
    release: Release,
    path: str | os.PathLike[str],
    *,
    force: bool = False,
    metadata: Mapping[str, Any] | None = None,
    seed: int | None = None,
) -> dict[str, Any]:
    """Write ``release`` to one ``.npz`` file, atomically, signed (see the module docstring);
    returns the metadata written.

    ``metadata`` (plain JSON values) is stored under ``"extra"``; ``seed`` records the
    seed of a seeded (test) release. An existing file is replaced only with ``force``.
    """
    noisy = np.ascontiguousarray(release.noisy, dtype=np.float64)
    if release.schema is not None and noisy.shape != release.schema.shape:
        raise PriveletError(f"the release's matrix has shape {noisy.shape} but its schema needs {release.schema.shape}")
    meta = release_metadata(release, seed=seed, metadata=metadata)
    text = json.dumps(meta, ensure_ascii=False, allow_nan=False)
    check_writable(path, force=force)
    signature = json.dumps(sign(_signed_content(meta, noisy)))
    with atomic_write(path, force=force) as f:
        np.savez(f, noisy=noisy, metadata=np.array(text), signature=np.array(signature))
    return meta


def _signed_content(meta: Mapping[str, Any], noisy: np.ndarray) -> list[Any]:
    """What a release file's signature covers: its metadata and its matrix's float64 cells."""
    return [b"privelet release file", canonical_json(meta), np.ascontiguousarray(noisy, dtype="<f8")]


def _open_npz(path: str | os.PathLike[str]) -> tuple[np.lib.npyio.NpzFile, Path]:
    p = Path(path)
    try:
        is_file = p.is_file()
    except (OSError, ValueError):  # a name too long for the system, a NUL character
        is_file = False
    if not is_file:
        raise ReleaseFileError(f"no such release file: {p}" if not _exists(p) else f"{p} is not a file")
    try:
        npz = np.load(p, allow_pickle=False)
    except (zipfile.BadZipFile, ValueError, OSError, EOFError, zlib.error, NotImplementedError, RuntimeError) as exc:
        raise ReleaseFileError(f"{p} is not a Privelet release file ({_brief(exc)}); make one with 'privelet release'") from None
    if not isinstance(npz, np.lib.npyio.NpzFile):
        raise ReleaseFileError(f"{p} is a single numpy array, not a Privelet release file")
    return npz, p


def _exists(path: Path) -> bool:
    try:
        return path.exists()
    except (OSError, ValueError):
        return False


def _brief(exc: BaseException) -> str:
    text = str(exc).split("\n")[0]
    return text[:120] if text else type(exc).__name__


def _read_metadata(npz: np.lib.npyio.NpzFile, p: Path) -> dict[str, Any]:
    if "metadata" not in npz.files or "noisy" not in npz.files:
        held = ", ".join(npz.files[:10]) or "nothing"
        raise ReleaseFileError(f"{p} is not a Privelet release file (it holds {held})")
    raw = _read_array(npz, "metadata", p, _check_metadata_header)
    text = str(raw[()])
    meta = loads(text, source=f"{p} (release metadata)", error=ReleaseFileError)
    if not isinstance(meta, dict) or meta.get("format") != RELEASE_FORMAT:
        raise ReleaseFileError(f"{p} is not a Privelet release file (no '{RELEASE_FORMAT}' metadata)")
    version = meta.get("format_version")
    if isinstance(version, bool) or not isinstance(version, int) or not 1 <= version <= RELEASE_FORMAT_VERSION:
        raise ReleaseFileError(
            f"{p} has release format version {shown(version)}; this Privelet Studio reads version "
            f"{RELEASE_FORMAT_VERSION}" + (": update it" if isinstance(version, int) and version > 1 else "")
        )
    return meta


def load_release_metadata(path: str | os.PathLike[str]) -> dict[str, Any]:
    """The JSON metadata of a release file (without loading the matrix), as the file holds it:
    neither checked against its signature (which covers the matrix too) nor its flags
    reconciled; :func:`load_release` does both."""
    if is_zarr_release(path):  # a chunked release folder (privelet_gui.distributed)
        return load_zarr_release_metadata(path)
    npz, p = _open_npz(path)
    with npz:
        return _read_metadata(npz, p)


def load_release(path: str | os.PathLike[str], *, warn: ReleaseWarning | None = None) -> Release:
    """Read a release file back into an engine :class:`~privelet_gui.engine.Release`.

    The schema, calibration, S_A and flags are rebuilt from the metadata, so exact
    variances (``release.variance(query)``) work on the loaded release. Everything is
    checked first (:func:`release_fields`): a file whose metadata or matrix do not make
    a consistent release is refused with a :class:`ReleaseFileError` saying what is wrong.
    A Zarr release folder is opened lazily (:func:`~privelet_gui.io.zarr_releases.open_zarr_release`).

    The signature is checked (:func:`~privelet_gui.io.signing.signature_problem`): a file
    that fails it, lacks it or was signed on another machine loads, and ``warn`` (default:
    :func:`release_warning`) hears what that means and what to do; so does a file read as
    seeded because its flags disagree.
    """
    say = warn or release_warning
    if is_zarr_release(path):
        return open_zarr_release(path, warn=say)
    npz, p = _open_npz(path)
    with npz:
        meta = _read_metadata(npz, p)
        fields = release_fields(meta, p, say)
        noisy = _read_array(npz, "noisy", p, lambda header: _check_matrix_header(header, fields["shape"], p))
        signature = _read_signature(npz, p)
    noisy = np.asarray(noisy, dtype=np.float64)
    if not np.isfinite(noisy).all():
        raise invalid_release(p, "the noisy matrix holds NaN or infinite values")
    release = release_holding(fields, noisy, p)
    problem = signature_problem(signature, _signed_content(meta, noisy), str(p))
    if problem is not None:
        say(problem)
    return release


def _read_signature(npz: np.lib.npyio.NpzFile, p: Path) -> object:
    """The signature a file holds (None: none; a text that says it is damaged: unreadable)."""
    if "signature" not in npz.files:
        return None
    try:
        text = str(_read_array(npz, "signature", p, _check_metadata_header)[()])
        return loads(text, source=f"{p} (signature)", error=ReleaseFileError)
    except ReleaseFileError:
        return "damaged"  # not a signature: signature_problem says it is damaged


_ArrayHeader = tuple[tuple[int, ...], bool, np.dtype]


def _read_array(
    npz: np.lib.npyio.NpzFile, name: str, p: Path, check: Callable[[_ArrayHeader], str | None]
) -> np.ndarray:
    """The array ``name`` of the file, read only after its header (shape, dtype) passed
    ``check`` (which returns what is wrong, or None) and matched the stored size, so that a
    damaged header can neither mislead nor make the reader allocate what the file does not hold."""
    member = f"{name}.npy"
    archive = npz.zip
    if archive is None:  # an open NpzFile has its archive
        raise InternalError("a release file's archive was read after it was closed")
    try:
        info = archive.getinfo(member)
        with archive.open(member) as stream:
            version = np.lib.format.read_magic(stream)
            if version == (1, 0):
                header = np.lib.format.read_array_header_1_0(stream)
            elif version == (2, 0):
                header = np.lib.format.read_array_header_2_0(stream)
            else:
                raise ValueError(f"unknown .npy format version {version}")
            header_bytes = stream.tell()
        problem = check(header)
        if problem is not None:
            raise invalid_release(p, f"the {name} entry {problem}")
        shape, _, dtype = header
        if math.prod(shape) * dtype.itemsize != info.file_size - header_bytes:
            raise invalid_release(p, f"the {name} entry holds {info.file_size - header_bytes:,} bytes, not the "
                              f"{math.prod(shape) * dtype.itemsize:,} its header announces")
        return npz[name]
    except ReleaseFileError:
        raise
    except (zipfile.BadZipFile, ValueError, KeyError, OSError, EOFError, zlib.error, NotImplementedError,
            RuntimeError, SyntaxError, tokenize.TokenError) as exc:
        # damaged data, an unsupported compression, encryption; a header numpy cannot parse
        raise ReleaseFileError(
            f"{p}: the {name} entry cannot be read ({_brief(exc)}); the file is damaged or was written by a tool "
            "with a compression this reader does not support"
        ) from None


def _check_metadata_header(header: _ArrayHeader) -> str | None:
    shape, _, dtype = header
    if shape != () or dtype.kind != "U":
        return f"must be one text value, not an array of shape {shape} and type {dtype}"
    return None


def _check_matrix_header(header: _ArrayHeader, expected: tuple[int, ...], p: Path) -> str | None:
    shape, _, dtype = header
    if dtype.names is not None or dtype.subdtype is not None or dtype.kind not in "fiu":
        return f"must hold real numbers, not values of type {dtype}"
    if shape != expected:
        return f"has shape {shape}, but its schema and metadata need {expected}"
    needed, available = math.prod(shape) * 8, available_memory()
    if available is not None and needed > available:
        return f"needs {byte_size(needed)} of memory, more than the {byte_size(available)} available"
    return None


def standard_error_fits(counts: str) -> bool:
    """Whether exported counts of kind ``counts`` may have a standard error column: only the
    release's own noisy counts, whose noise it describes (post-processed ones are biased)."""
    return counts == "noisy"


def _check_standard_error(release: Release, counts: str, standard_error: bool) -> None:
    if not standard_error:
        return
    if not standard_error_fits(counts):
        raise PriveletError(
            f"a standard error describes the noise of the release's own counts, not {counts} counts (post-processed, "
            "biased): export the noisy counts with the standard error, or these counts without it"
        )
    problem = cell_standard_error_problem(release)  # no schema, or cells answered with a bias
    if problem is not None:
        raise PriveletError(problem)


def export_release(
    release: Release,
    path: str | os.PathLike[str],
    *,
    format: ExportFormat | None = None,
    force: bool = False,
    counts: str = "noisy",
    allow_seeded: bool = False,
    progress: ProgressCallback | None = None,
    should_cancel: CancelCallback | None = None,
    standard_error: bool = False,
    slab_cells: int = SLAB_CELLS,
) -> int:
    """Export the long format (:func:`release_frame`) to CSV (``.csv``, ``.csv.gz``) or Parquet.

    Writes atomically, a CSV file with the JSON that describes it (:func:`export_metadata`)
    beside it, at :func:`export_metadata_path` (both or neither); a Parquet file holds that
    description as key-value metadata ``privelet.metadata``. ``standard_error`` adds each
    cell's exact noise standard deviation (:data:`STANDARD_ERROR_COLUMN`, noisy counts only).
    Returns the number of rows (= cells). By default noisy counts keep
    full precision (they may be negative or fractional: that is the noise, and rounding or
    clipping them biases sums). ``counts="nonnegative"``, ``"integer"`` or
    ``"nonnegative-integer"`` exports counts for users who cannot use those, in a column
    named so: better for small counts and relative errors, worse for big sums. A seeded
    release is refused unless ``allow_seeded``; its export then begins with the line
    ``# `` + :data:`SEEDED_WARNING` (CSV) or carries it as key-value metadata (Parquet:
    ``privelet.seeded``, ``privelet.warning``). :func:`write_export` writes the same to
    an open stream (standard output). ``progress(fraction, stage)`` hears the rows written
    after each slab of about ``slab_cells`` cells (a million); ``should_cancel()`` is checked there
    (:class:`~privelet_gui.engine.Cancelled`, and no file is left).
    """
    _refuse_seeded(release, allow_seeded)
    count_column(counts)  # an unknown kind fails before anything is written
    _check_standard_error(release, counts, standard_error)
    steps = Progress(progress, should_cancel)
    if not isinstance(release.noisy, np.ndarray):  # a lazily opened Zarr release: never read whole
        return export_release_chunked(release, path, format=format, force=force, counts=counts, steps=steps,
                                      standard_error=standard_error, slab_cells=slab_cells)
    return write_export_file(release, post_processed_counts(release.noisy, counts), path, format=format, force=force,
                             counts=counts, steps=steps, standard_error=standard_error, slab_cells=slab_cells)


def write_export(
    release: Release,
    stream: IO[bytes],
    *,
    format: ExportFormat = "csv",
    counts: str = "noisy",
    allow_seeded: bool = False,
    progress: ProgressCallback | None = None,
    standard_error: bool = False,
    slab_cells: int = SLAB_CELLS,
) -> int:
    """:func:`export_release` into an open binary ``stream`` (standard output, a pipe).

    The same rows, count kinds, seeded marks and standard errors as the file export,
    uncompressed; Parquet holds its description, CSV has none (a stream has no file beside
    it: :func:`export_metadata` gives it). Returns the rows. A stream cannot be written
    atomically: a reader sees the rows as they come, and a failure part-way leaves the rows
    written so far (the command line then exits with an error). ``stream`` stays open.
    """
    _refuse_seeded(release, allow_seeded)
    if format not in ("csv", "parquet"):
        raise PriveletError(f"export format must be 'csv' or 'parquet', got {format!r}")
    count_column(counts)
    _check_standard_error(release, counts, standard_error)
    if not isinstance(release.noisy, np.ndarray):
        return write_export_chunked(release, stream, format=format, counts=counts, progress=progress,
                                    standard_error=standard_error, slab_cells=slab_cells)
    noisy = post_processed_counts(release.noisy, counts)
    return write_long_format(release, noisy, stream, format, counts=counts, steps=Progress(progress),
                             standard_error=standard_error, slab_cells=slab_cells)


def _refuse_seeded(release: Release, allow_seeded: bool) -> None:
    if release.seeded and not allow_seeded:
        raise PriveletError(
            "this release was made with a fixed seed (for tests only) and is NOT private: anyone who knows "
            "the seed can remove its noise. Make the release again without a seed, or export it for testing "
            "only with allow_seeded=True (privelet export --allow-seeded); the file will say it is seeded"
        )


# -- queries on a release ----------------------------------------------------------------------------


def _value_label(attribute: Any, text: str) -> str:
    """A text end of an ordinal interval as one of the attribute's labels."""
    if text in attribute.labels:
        return text
    try:
        number = float(text)
    except ValueError:
        return text  # RangeQuery.build reports it with the attribute's values
    if not attribute.is_numeric or not math.isfinite(number):
        return text
    index = attribute.position_of_number(number)
    if index is not None:
        return str(attribute.labels[index])
    if attribute.bins is not None:
        b = attribute.bins
        raise SchemaError(
            f"{text} is outside attribute {attribute.name!r} (bins from {b.start} to {b.stop}, stop excluded)"
        )
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
    the noise, which is a sum of many independent discrete-Laplace terms). A query that
    weighted marginals answer with a bias (no measured marginal holds its attributes
    together) has an infinite variance and no interval: :attr:`biased`.
    """

    query: str
    noisy_count: float
    variance: float
    ci95: tuple[float, float]

    @property
    def biased(self) -> bool:
        return not math.isfinite(self.variance)

    def to_json(self) -> dict[str, Any]:
        """As JSON (null variance and interval for a biased answer)."""
        return {"noisy_count": self.noisy_count, "variance": finite_or_none(self.variance),
                "ci95": None if self.biased else list(self.ci95)}


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
    half = margin95(variance)
    return QueryAnswer(query.describe(), noisy, variance, (noisy - half, noisy + half))
