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

import gzip
import io
import json
import math
import os
import re
import tokenize
import warnings
import zipfile
import zlib
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any, Literal

import numpy as np
import pandas as pd

from .. import __version__
from ..engine import (
    BIT_SOURCE,
    NEIGHBOURS,
    READABLE_SAMPLERS,
    InternalError,
    NoiseCalibration,
    NominalAttribute,
    PrefixSums,
    PriveletError,
    QueryBatch,
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
from ..engine.spec import MARGINALS, MECHANISMS, STRATEGIES, ReleaseSpec, axes_schema, mechanism_name
from ._json import is_finite_number, loads, shown
from .atomic import atomic_files, atomic_write, check_writable
from .errors import ReleaseFileError, UnverifiedReleaseWarning
from .schema import schema_from_json, schema_to_json
from .signing import canonical_json, sign, signature_problem

__all__ = [
    "RELEASE_FORMAT",
    "RELEASE_FORMAT_VERSION",
    "SEEDED_WARNING",
    "STANDARD_ERROR_COLUMN",
    "QueryAnswer",
    "ReleaseWarning",
    "answer_query",
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
        bound = release.spec.paper_bound()
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
        "strategies": list(release.strategies),
        "marginals": [[list(names), weight] for names, weight in release.marginals],
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
            "rho": release.rho,  # the calibration's, as a JSON number
            "influence": int(cal.influence),
            "grid_exponent": int(cal.grid_exponent),
            "units": int(cal.units),
        },
        "coefficient_variance": float(release.coefficient_variance),
        # Weighted marginals answer some boxes with a bias: their worst case is then none (null).
        "paper_bound": _finite_or_none(bound),
        "exact_worst_case_variance": _finite_or_none(release.worst_case_variance),
        "shape": list(release.noisy.shape),
        "schema": None if schema is None else schema_to_json(schema),
        "seeded": bool(release.seeded),
        "seed": seed,
        "domain_from_data": [] if schema is None else list(schema.domain_from_data),
        "post_processing": _post_processing(release),
        "extra": dict(metadata or {}),
    }


def _finite_or_none(value: float) -> float | None:
    return float(value) if math.isfinite(value) else None


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


#: Where :func:`load_release` says what a reader must know about a file it loads (its signature,
#: flags that disagree): a function of the message.
ReleaseWarning = Callable[[str], None]


def release_warning(message: str) -> None:
    """The default :data:`ReleaseWarning`: a Python warning (:class:`UnverifiedReleaseWarning`)."""
    warnings.warn(UnverifiedReleaseWarning(message), stacklevel=3)


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
    from .zarr_releases import is_zarr_release, load_zarr_release_metadata

    if is_zarr_release(path):  # a chunked release folder (privelet_gui.distributed)
        return load_zarr_release_metadata(path)
    npz, p = _open_npz(path)
    with npz:
        return _read_metadata(npz, p)


def load_release(path: str | os.PathLike[str], *, warn: ReleaseWarning | None = None) -> Release:
    """Read a release file back into an engine :class:`~privelet_gui.engine.Release`.

    The schema, calibration, S_A and flags are rebuilt from the metadata, so exact
    variances (``release.variance(query)``) work on the loaded release. Everything is
    checked first (:func:`_release_fields`): a file whose metadata or matrix do not make
    a consistent release is refused with a :class:`ReleaseFileError` saying what is wrong.
    A Zarr release folder is opened lazily (:func:`~privelet_gui.io.zarr_releases.open_zarr_release`).

    The signature is checked (:func:`~privelet_gui.io.signing.signature_problem`): a file
    that fails it, lacks it or was signed on another machine loads, and ``warn`` (default:
    :func:`release_warning`) hears what that means and what to do; so does a file read as
    seeded because its flags disagree.
    """
    from .zarr_releases import is_zarr_release, open_zarr_release

    say = warn or release_warning
    if is_zarr_release(path):
        return open_zarr_release(path, warn=say)
    npz, p = _open_npz(path)
    with npz:
        meta = _read_metadata(npz, p)
        fields = _release_fields(meta, p, say)
        noisy = _read_array(npz, "noisy", p, lambda header: _check_matrix_header(header, fields["shape"], p))
        signature = _read_signature(npz, p)
    noisy = np.asarray(noisy, dtype=np.float64)
    if not np.isfinite(noisy).all():
        raise _invalid(p, "the noisy matrix holds NaN or infinite values")
    release = _release_holding(fields, noisy, p)
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


def release_from_metadata(meta: Mapping[str, Any], noisy: Any, p: Path, warn: ReleaseWarning) -> Release:
    """The release that ``meta`` describes (checked as :func:`load_release` checks it),
    holding ``noisy`` (an array, or a lazily read one: anything with ``shape`` and
    indexing); errors name the file ``p``, and ``warn`` hears what a reader must know."""
    return _release_holding(_release_fields(meta, p, warn), noisy, p)


def _release_holding(fields: dict[str, Any], noisy: Any, p: Path) -> Release:
    shape = tuple(noisy.shape)
    if shape != fields["shape"]:
        raise _invalid(p, f"the matrix has shape {shape}, the metadata says {fields['shape']}")
    return Release(noisy=noisy, **{key: value for key, value in fields.items() if key != "shape"})


# -- checking a release file ------------------------------------------------------------------------


def _invalid(p: Path, what: str) -> ReleaseFileError:
    return ReleaseFileError(
        f"{p}: not a valid release: {what}; the file was damaged or edited, make it again with 'privelet release'"
    )




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
            raise _invalid(p, f"the {name} entry {problem}")
        shape, _, dtype = header
        if math.prod(shape) * dtype.itemsize != info.file_size - header_bytes:
            raise _invalid(p, f"the {name} entry holds {info.file_size - header_bytes:,} bytes, not the "
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


def _number(meta: Mapping[str, Any], key: str, p: Path, *, positive: bool = True) -> float:
    value = meta.get(key)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise _invalid(p, f'"{key}" must be a number, got {shown(value)}')
    try:
        number = float(value)
    except OverflowError:
        number = math.inf
    if not math.isfinite(number) or (number <= 0 if positive else number < 0):
        raise _invalid(p, f'"{key}" must be a {"positive" if positive else "non-negative"} finite number, '
                          f"got {shown(value)}")
    return number


def _integer(meta: Mapping[str, Any], key: str, p: Path, lo: int, hi: int) -> int:
    value = meta.get(key)
    if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
        raise _invalid(p, f'"{key}" must be an integer from {lo} to {hi}, got {shown(value)}')
    return value


def _text_list(meta: Mapping[str, Any], key: str, p: Path) -> tuple[str, ...]:
    value = meta.get(key)
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise _invalid(p, f'"{key}" must be a list of attribute names, got {shown(value)}')
    return tuple(value)


def _marginals_list(meta: Mapping[str, Any], p: Path) -> tuple[tuple[tuple[str, ...], int], ...]:
    value = meta.get("marginals")
    if not isinstance(value, list) or not all(
        isinstance(entry, list) and len(entry) == 2 and isinstance(entry[0], list)
        and all(isinstance(name, str) for name in entry[0])
        and isinstance(entry[1], int) and not isinstance(entry[1], bool) for entry in value
    ):
        raise _invalid(p, f'"marginals" must be a list of [attribute names, integer weight], got {shown(value)}')
    return tuple((tuple(names), weight) for names, weight in value)


def _release_fields(meta: Mapping[str, Any], p: Path, warn: ReleaseWarning) -> dict[str, Any]:
    """The fields of a :class:`Release` from checked metadata (and ``shape``: the matrix's).

    Refused: an unknown mechanism, neighbour relation or sampler; epsilon, rho, scale and
    the calibration's fields that are not finite numbers of the right kind; a calibration
    whose epsilon, neighbours or rho differ from the release's, or whose noise is smaller
    than the mechanism needs; S_A, rho or the mechanism inconsistent with the schema; a shape
    that is not a list of positive integers or differs from the schema's. Read as seeded
    (and said to ``warn``): a release whose seeded flag and bit source disagree (:func:`_seeded`).
    """
    mechanism = meta.get("mechanism")
    if mechanism not in (*MECHANISMS, STRATEGIES, MARGINALS):
        raise _invalid(p, f'"mechanism" must be one of {", ".join((*MECHANISMS, STRATEGIES, MARGINALS))}, '
                          f"got {shown(mechanism)}")
    neighbours = meta.get("neighbours")
    if neighbours not in NEIGHBOURS:
        raise _invalid(p, f'"neighbours" must be one of {", ".join(NEIGHBOURS)}, got {shown(neighbours)}')
    sampler = meta.get("sampler")
    if sampler not in READABLE_SAMPLERS:
        raise _invalid(p, f'"sampler" must be one of {", ".join(READABLE_SAMPLERS)}, got {shown(sampler)}')
    epsilon = _number(meta, "epsilon", p)
    rho = _number(meta, "rho", p)
    scale = _number(meta, "scale", p)
    sa = _text_list(meta, "sa", p)
    strategies = _text_list(meta, "strategies", p) if "strategies" in meta else ()
    marginals = _marginals_list(meta, p) if "marginals" in meta else ()
    for key in ("seeded",):
        if not isinstance(meta.get(key), bool):
            raise _invalid(p, f'"{key}" must be true or false, got {shown(meta.get(key))}')
    seed = meta.get("seed")
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int) or seed < 0 or not meta["seeded"]):
        raise _invalid(p, f'"seed" must be empty, or for a seeded release a non-negative integer, got {shown(seed)}')
    for key in ("coefficient_variance", "paper_bound", "exact_worst_case_variance", "nominal_scale"):
        if key in meta and not (key in ("paper_bound", "exact_worst_case_variance") and meta[key] is None):
            _number(meta, key, p, positive=False)
    shape_value = meta.get("shape")
    if not (isinstance(shape_value, list) and shape_value and all(
        isinstance(n, int) and not isinstance(n, bool) and n > 0 for n in shape_value
    )):
        raise _invalid(p, f'"shape" must be a list of positive integers, got {shown(shape_value)}')
    shape = tuple(shape_value)
    cal = meta.get("calibration")
    if not isinstance(cal, Mapping):
        raise _invalid(p, f'"calibration" must be an object, got {shown(cal)}')
    if _number(cal, "epsilon", p) != epsilon:
        raise _invalid(p, f"the calibration's epsilon {cal['epsilon']!r} differs from the release's {epsilon!r}")
    if cal.get("neighbours") != neighbours:
        raise _invalid(p, f"the calibration's neighbours {shown(cal.get('neighbours'))} differ from the release's")
    if _number(cal, "rho", p) != rho:
        raise _invalid(p, f"the calibration's rho {cal['rho']!r} differs from the release's {rho!r}")
    calibration = NoiseCalibration(
        epsilon=epsilon,
        neighbours=neighbours,
        rho=cal["rho"],
        influence=_integer(cal, "influence", p, 1, 1 << 62),
        grid_exponent=_integer(cal, "grid_exponent", p, -1074, 1023),
        units=_integer(cal, "units", p, 1, 1 << 62),
    )
    if calibration.excess < 0:
        raise _invalid(p, "the calibration's noise is smaller than the sensitivity needs (units x grid < s x rho)")
    if not math.isclose(calibration.scale, scale, rel_tol=1e-9):
        raise _invalid(p, f'"scale" {scale!r} differs from its calibration\'s {calibration.scale!r}')
    schema = _release_schema(meta.get("schema"), shape, p)
    if schema is None and mechanism != "basic":
        raise _invalid(p, f"a {mechanism_name(mechanism)} release needs its schema, and the file holds none")
    try:
        # The spec checks S_A against the schema (a release without one is Basic over plain axes).
        spec = ReleaseSpec(schema if schema is not None else axes_schema(shape), epsilon, mechanism,
                           () if mechanism in (STRATEGIES, MARGINALS) else sa, neighbours, strategies=strategies,
                           marginals=marginals)
    except PriveletError as exc:
        raise _invalid(p, str(exc)) from None
    if spec.label != mechanism or spec.effective_sa != sa or (mechanism != STRATEGIES and spec.sa != sa):
        raise _invalid(p, f"S_A {{{', '.join(sa)}}} does not fit the mechanism {mechanism_name(mechanism)}")
    if spec.rho != rho:
        raise _invalid(p, f"rho is {rho!r}, but this schema and S_A give {spec.rho}")
    return {
        "epsilon": epsilon,
        "sa": sa,
        "strategies": strategies,
        "marginals": spec.marginals,
        "rho": cal["rho"],
        "scale": scale,
        "mechanism": mechanism,
        "neighbours": neighbours,
        "calibration": calibration,
        "schema": schema,
        "seeded": _seeded(meta, p, warn),
        "sampler": sampler,
        "total_shift": _total_shift(meta, p),
        "shape": shape,
    }


def _seeded(meta: Mapping[str, Any], p: Path, warn: ReleaseWarning) -> bool:
    """Whether to read the release as seeded: when its ``seeded`` flag says so, and also when
    its ``bit_source`` names anything but the OS-keyed generator of unseeded releases.

    Two flags that disagree mean an edited or damaged file. It is read as seeded, not
    refused: a seeded file read as private would be exported without its mark (its noise can
    be removed by anyone who has the seed), while a private file read as seeded only needs
    ``--allow-seeded`` (in the app, a confirmation) and is marked; and the file stays readable.
    """
    flag, source = meta["seeded"], meta.get("bit_source")
    if source is None:  # files written before bit_source was recorded
        return bool(flag)
    if not isinstance(source, str):
        raise _invalid(p, f'"bit_source" must be text, got {shown(source)}')
    if flag != (source != BIT_SOURCE):
        warn(
            f"{p}: its seeded flag ({str(flag).lower()}) and its bit source ({shown(source)}) disagree, so the file was "
            "edited or damaged. It is read as a SEEDED TEST RELEASE (not private): exporting it needs --allow-seeded "
            "(in the app, a confirmation) and the export is marked as seeded. Do not publish it."
        )
    return bool(flag) or source != BIT_SOURCE


def _release_schema(obj: object, shape: tuple[int, ...], p: Path) -> Schema | None:
    if obj is None:
        return None
    try:
        schema = schema_from_json(obj, source=f"{p} (schema)")
    except PriveletError as exc:
        raise ReleaseFileError(str(exc)) from None
    if schema.shape != shape:
        raise _invalid(p, f'"shape" is {list(shape)}, but the schema needs {list(schema.shape)}')
    return schema


def _total_shift(meta: Mapping[str, Any], p: Path) -> float | None:
    """The recorded shift to the public total (files written before it existed have none)."""
    post = meta.get("post_processing")
    if post is None:
        return None
    if not isinstance(post, Mapping):
        raise _invalid(p, f'"post_processing" must be an object, got {shown(post)}')
    shift = post.get("total_shift")
    if shift is None:
        return None
    if isinstance(shift, bool) or not isinstance(shift, (int, float)) or not is_finite_number(shift):
        raise _invalid(p, f'"post_processing.total_shift" must be a finite number, got {shown(shift)}')
    if meta.get("neighbours") != "replace":
        raise _invalid(p, "it records a shift to the public total under add/remove neighbours, where the total is not public")
    return float(shift)




# -- exports -------------------------------------------------------------------------------------

COUNT_COLUMN = "noisy_count"


def count_column(counts: str = "noisy") -> str:
    """The export's count column: ``noisy_count``, or e.g. ``noisy_count_nonnegative`` so
    that post-processed counts are never mistaken for the release's own."""
    post_processed_counts(np.zeros(1), counts)  # refuses an unknown kind
    return COUNT_COLUMN if counts == "noisy" else f"{COUNT_COLUMN}_{counts.replace('-', '_')}"


#: The column beside an attribute's codes that holds their display labels (when it has some).
LABEL_SUFFIX = "_label"


# A spreadsheet opening a CSV file runs a cell starting with one of these as a formula
# (=HYPERLINK(...), +cmd|...), unless the cell is a plain number.
_FORMULA_START = re.compile(r"[=+\-@\t\r]")
_PLAIN_NUMBER = re.compile(r"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?")


def spreadsheet_safe(text: str) -> str:
    """``text`` as a CSV export writes it: with an apostrophe before it when a spreadsheet
    would take it for a formula (it starts with ``=``, ``+``, ``-``, ``@``, a tab or a carriage
    return and is not a plain number such as ``-5``), else as it is.

    >>> spreadsheet_safe("=SUM(A1:A9)"), spreadsheet_safe("-5"), spreadsheet_safe("[0, 10)")
    ("'=SUM(A1:A9)", '-5', '[0, 10)')
    """
    if _FORMULA_START.match(text) and not _PLAIN_NUMBER.fullmatch(text):
        return "'" + text
    return text


def _spreadsheet_safe_index(texts: pd.Index) -> pd.Index:
    """:func:`spreadsheet_safe` of every text of an index, at pandas' speed (ranges are long)."""
    column = pd.Series(texts, dtype=object).astype(str)
    risky = column.str.match(_FORMULA_START.pattern) & ~column.str.fullmatch(_PLAIN_NUMBER.pattern)
    if not risky.any():
        return texts
    return pd.Index(column.mask(risky, "'" + column), dtype=object)


@dataclass(frozen=True)
class ExportAxis:
    """One attribute's columns in the long format: its codes, and (when it has display
    labels) a ``<name>_label`` column beside them; each column categorical, every text once."""

    name: str
    codes: pd.Index  # the values in axis order (the categories of the code column)
    label_name: str | None = None  # the label column, or None
    labels: pd.Index | None = None  # the distinct display labels (two codes may share one)
    label_of: np.ndarray | None = None  # axis position -> index into ``labels``

    def spreadsheet_safe(self) -> ExportAxis:
        """This axis with its column names and texts as :func:`spreadsheet_safe` writes them
        (for CSV; two texts never become one, since only texts that are not numbers change)."""
        return replace(
            self,
            name=spreadsheet_safe(self.name),
            codes=_spreadsheet_safe_index(self.codes),
            label_name=None if self.label_name is None else spreadsheet_safe(self.label_name),
            labels=None if self.labels is None else _spreadsheet_safe_index(self.labels),
        )

    def columns(self, positions: np.ndarray) -> dict[str, pd.Categorical]:
        """The columns of cells at axis ``positions`` (integers)."""
        out = {self.name: pd.Categorical.from_codes(positions, categories=self.codes)}
        if self.label_name is not None:
            if self.labels is None or self.label_of is None:
                raise InternalError(f"the axis {self.name!r} has a label column but no labels")
            out[self.label_name] = pd.Categorical.from_codes(self.label_of[positions], categories=self.labels)
        return out


def export_axes(release: Release, shape: tuple[int, ...]) -> list[ExportAxis]:
    """The export's attribute columns (see :class:`ExportAxis`), names checked to be unique."""
    schema = release.schema
    axes: list[ExportAxis] = []
    if schema is None:
        axes = [ExportAxis(f"axis_{i}", pd.Index([str(j) for j in range(n)], dtype=object)) for i, n in enumerate(shape)]
    for attribute in schema or ():
        codes = pd.Index(list(attribute.labels), dtype=object)
        display = attribute.display_labels
        if display is None:
            axes.append(ExportAxis(attribute.name, codes))
            continue
        labels, label_of = np.unique(np.asarray(display, dtype=object), return_inverse=True)
        axes.append(ExportAxis(attribute.name, codes, attribute.name + LABEL_SUFFIX, pd.Index(labels, dtype=object),
                               label_of.astype(np.min_scalar_type(max(len(labels) - 1, 0)))))
    taken: dict[str, str] = {}
    for axis in axes:
        for column, what in ((axis.name, "an attribute's column"), (axis.label_name, f"the label column of {axis.name!r}")):
            if column is None:
                continue
            if column in taken or column.startswith(COUNT_COLUMN):
                other = taken.get(column, "the count column")
                raise SchemaError(f"{what} would be called {column!r} in the export, like {other}: rename it")
            taken[column] = "an attribute" if column == axis.name else what
    return axes


def release_frame(release: Release, *, counts: str = "noisy") -> pd.DataFrame:
    """The long format: one row per cell, a code column per attribute (and a ``<name>_label``
    column beside it when the attribute has display labels), then the counts.

    Rows follow the matrix in C order (the last attribute varies fastest). Code and label
    columns are categorical (each text stored once). ``counts`` (one of
    :data:`~privelet_gui.engine.postprocess.COUNT_KINDS`) projects the counts onto
    non-negative ones with the same total and/or rounds them to whole counts; the
    column is then named after it (:func:`count_column`). Exports write the same rows a
    slab at a time (:func:`write_long_format`).
    """
    noisy = post_processed_counts(release.noisy, counts)
    shape = noisy.shape
    return _cells_frame(noisy, tuple(slice(0, n) for n in shape), shape, export_axes(release, shape), counts)


def _cells_frame(
    noisy: Any, index: tuple[slice, ...], shape: tuple[int, ...], axes: list[ExportAxis], counts: str,
    errors_of: Release | None = None,
) -> pd.DataFrame:
    """The long-format rows of the box ``index`` of ``noisy`` (counts of kind ``counts``
    already), with categorical code (and label) columns over all the values, and with
    ``errors_of`` that release's noise standard deviation of each cell (:func:`cell_standard_errors`)."""
    values = np.asarray(noisy[index], dtype=np.float64)
    extents = values.shape
    columns: dict[str, Any] = {}
    for axis, export in enumerate(axes):
        start = range(shape[axis])[index[axis]].start
        inner = math.prod(extents[axis + 1 :])
        outer = math.prod(extents[:axis])
        dtype = np.min_scalar_type(max(shape[axis] - 1, 0))
        columns.update(export.columns(np.tile(np.repeat(np.arange(start, start + extents[axis], dtype=dtype), inner), outer)))
    flat = values.reshape(-1)
    columns[count_column(counts)] = flat.astype(np.int64) if counts.endswith("integer") else flat
    if errors_of is not None:
        columns[STANDARD_ERROR_COLUMN] = cell_standard_errors(errors_of, index)
    return pd.DataFrame(columns, copy=False)


#: The column of each cell's exact noise standard deviation (``standard_error=True``).
STANDARD_ERROR_COLUMN = f"{COUNT_COLUMN}_standard_error"
# Single-cell queries whose variances are computed at once (three int64 arrays of this many rows per axis).
_ERROR_BATCH = 1 << 16


def cell_standard_errors(release: Release, box: tuple[slice, ...] | None = None) -> np.ndarray:
    """The exact standard deviation of the noise in each cell of ``box`` (default: the whole
    matrix), flat in C order: the square root of :meth:`~privelet_gui.engine.Release.variances`
    of the single-cell queries (of the release as it is, shifted to the public total or not).

    It depends on the schema, epsilon, S_A, the mechanism and the neighbours only: never on
    the data, and never on the noisy counts themselves.
    """
    schema = release.schema
    if schema is None:
        raise PriveletError("this release has no schema, so the noise of its cells cannot be worked out: "
                            "export it without the standard error")
    box = box or tuple(slice(0, n) for n in schema.shape)
    positions, nodes = [], []
    for attribute, part in zip(schema, box, strict=True):
        axis = np.arange(*part.indices(attribute.size), dtype=np.int64)
        positions.append(axis)
        # a nominal cell is the query of its leaf's node; an ordinal one has none (-1)
        leaves = attribute.hierarchy.layout.leaf_nodes if isinstance(attribute, NominalAttribute) else None
        nodes.append(np.full(len(axis), -1, dtype=np.int64) if leaves is None else leaves[axis].astype(np.int64))
    extents = tuple(len(axis) for axis in positions)
    total = math.prod(extents)
    out = np.empty(total)
    for begin in range(0, total, _ERROR_BATCH):
        cells = np.unravel_index(np.arange(begin, min(begin + _ERROR_BATCH, total)), extents)
        lo = np.stack([axis[cell] for axis, cell in zip(positions, cells, strict=True)], axis=1)
        node = np.stack([axis[cell] for axis, cell in zip(nodes, cells, strict=True)], axis=1)
        out[begin : begin + len(lo)] = release.variances(QueryBatch(lo, lo, node))
    return np.sqrt(out)


# Cells per slab of an export (8 MiB of counts): its rows are made, written and dropped.
_SLAB_CELLS = 1 << 20


def regular_chunks(shape: tuple[int, ...], cells: int = _SLAB_CELLS) -> tuple[int, ...]:
    """A chunk shape of at most about ``cells`` cells, cut along the leading axes only, so
    that each chunk is one contiguous run of the C-ordered matrix.

    >>> regular_chunks((100, 2, 512, 1001), 1 << 20)
    (1, 2, 512, 1001)
    >>> regular_chunks((10, 30), 100)
    (3, 30)
    """
    if math.prod(shape) <= cells:
        return tuple(shape)
    for axis in range(len(shape)):
        inner = math.prod(shape[axis + 1 :])
        if inner <= cells:
            return (1,) * axis + (min(shape[axis], max(1, cells // inner)),) + tuple(shape[axis + 1 :])
    return tuple(shape)  # not reached: the last axis has inner size 1


def chunk_grid(shape: tuple[int, ...], chunks: tuple[int, ...]) -> Iterator[tuple[slice, ...]]:
    """The chunks of ``shape`` (regular ``chunks``, smaller at the ends) in C order."""
    counts = [max(1, -(-n // c)) for n, c in zip(shape, chunks, strict=True)]
    for position in np.ndindex(*counts):
        yield tuple(slice(i * c, min((i + 1) * c, n)) for i, c, n in zip(position, chunks, shape, strict=True))


def write_long_format(
    release: Release,
    noisy: Any,
    handle: IO[bytes],
    fmt: ExportFormat,
    *,
    gz: bool = False,
    counts: str = "noisy",
    steps: Progress | None = None,
    standard_error: bool = False,
) -> int:
    """The long format (:func:`release_frame`) of ``noisy`` (the release's counts of kind
    ``counts``: a numpy array, or a Zarr array read a slab at a time) into the binary
    ``handle``, as CSV (gzip-compressed if ``gz``) or Parquet; returns the rows.

    One slab of about a million cells at a time: memory stays that of one slab whatever
    the size of the release. ``steps`` hears how many rows are written after each slab, and
    a cancel there stops the export (an atomic file is then removed). A seeded release is
    marked in the file (see the module docstring); a Parquet file holds its
    :func:`export_metadata`, and with ``standard_error`` every row its cell's noise standard
    deviation (:data:`STANDARD_ERROR_COLUMN`). CSV text is :func:`spreadsheet_safe`.
    """
    steps = steps or Progress()
    shape = tuple(int(n) for n in noisy.shape)
    axes = export_axes(release, shape)
    errors_of = release if standard_error else None
    total, rows = math.prod(shape), 0
    slabs = chunk_grid(shape, regular_chunks(shape, _SLAB_CELLS))

    def written(count: int) -> None:
        nonlocal rows
        rows += count
        steps.report(rows / total, f"writing rows: {rows:,} of {total:,}")

    if fmt == "csv":
        binary: Any = gzip.GzipFile(fileobj=handle, mode="wb") if gz else handle
        text = io.TextIOWrapper(binary, encoding="utf-8", newline="")
        try:
            if release.seeded:
                text.write(f"# {SEEDED_WARNING}\n")
            safe = [axis.spreadsheet_safe() for axis in axes]
            for index in slabs:
                frame = _cells_frame(noisy, index, shape, safe, counts, errors_of)
                frame.to_csv(text, index=False, header=rows == 0, lineterminator="\n")
                written(len(frame))
            text.flush()
        finally:
            text.detach()  # the caller's file stays open: atomic_write syncs and renames it
            if gz:
                binary.close()  # writes the gzip trailer (the file itself stays open)
        return rows
    import pyarrow as pa
    import pyarrow.parquet as pq

    marks = {
        **seeded_marks(release.seeded),
        PARQUET_METADATA_KEY: json.dumps(
            export_metadata(release, counts=counts, standard_error=standard_error), allow_nan=False
        ).encode(),
    }
    writer: Any = None
    try:
        for index in slabs:
            frame = _cells_frame(noisy, index, shape, axes, counts, errors_of)
            table = pa.Table.from_pandas(frame, preserve_index=False)
            table = table.replace_schema_metadata({**(table.schema.metadata or {}), **marks})
            if writer is None:
                writer = pq.ParquetWriter(handle, table.schema)
            writer.write_table(table)
            written(table.num_rows)
    finally:
        if writer is not None:
            writer.close()
    return rows


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


#: The JSON file beside a CSV export that describes it: ``cells.csv`` -> ``cells.csv.metadata.json``.
METADATA_SUFFIX = ".metadata.json"
#: The Parquet key-value metadata holding the same description.
PARQUET_METADATA_KEY = b"privelet.metadata"
EXPORT_FORMAT = "privelet-export"
EXPORT_FORMAT_VERSION = 1


def export_metadata_path(path: str | os.PathLike[str], format: ExportFormat | None = None) -> Path | None:
    """The JSON file that describes an export to ``path`` (CSV), or None (Parquet holds its
    description itself)."""
    p = Path(path)
    fmt, _ = _export_format(p, format)
    return p.with_name(p.name + METADATA_SUFFIX) if fmt == "csv" else None


def export_metadata(release: Release, *, counts: str = "noisy", standard_error: bool = False) -> dict[str, Any]:
    """What an export says about itself (plain JSON): how its counts were made (mechanism,
    epsilon, neighbours, S_A, the noise scale, the shift to the public total), which column
    holds which counts, and the software. Never a count, nor the number of rows under
    add/remove neighbours (the shift is there only when the number of rows is public)."""
    described = {"noisy": "the release's own noisy counts: unbiased, may be negative or fractional"}
    meta: dict[str, Any] = {
        "format": EXPORT_FORMAT,
        "format_version": EXPORT_FORMAT_VERSION,
        "software": "privelet-gui",
        "software_version": __version__,
        "exported": datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z"),
        "mechanism": release.mechanism,
        "epsilon": float(release.epsilon),
        "neighbours": release.neighbours,
        "sa": list(release.sa),
        "strategies": list(release.strategies),
        "marginals": [[list(names), weight] for names, weight in release.marginals],
        "noise_scale": float(release.scale),
        "nominal_scale": float(release.nominal_scale),
        "rho": release.rho,
        "sampler": release.sampler,
        "post_processing": _post_processing(release),
        "count_column": count_column(counts),
        "counts": counts,
        "counts_description": described.get(
            counts, f"{counts} counts post-processed from the noisy ones (biased for big sums)"
        ),
        "standard_error_column": STANDARD_ERROR_COLUMN if standard_error else None,
        "seeded": bool(release.seeded),
        "domain_from_data": [] if release.schema is None else list(release.schema.domain_from_data),
    }
    if standard_error:
        meta["standard_error_description"] = (
            "the exact standard deviation of the noise in each cell's noisy count, computed from epsilon, S_A, "
            "the mechanism and the schema alone (never from the data)"
        )
    if release.seeded:
        meta["warning"] = SEEDED_WARNING
    return meta


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
    if release.schema is None:
        raise PriveletError("this release has no schema, so the noise of its cells cannot be worked out: "
                            "export it without the standard error")


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
    progress: ProgressCallback | None = None,
    should_cancel: CancelCallback | None = None,
    standard_error: bool = False,
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
    after each slab of about a million cells; ``should_cancel()`` is checked there
    (:class:`~privelet_gui.engine.Cancelled`, and no file is left).
    """
    _refuse_seeded(release, allow_seeded)
    count_column(counts)  # an unknown kind fails before anything is written
    _check_standard_error(release, counts, standard_error)
    steps = Progress(progress, should_cancel)
    if not isinstance(release.noisy, np.ndarray):  # a lazily opened Zarr release: never read whole
        from .zarr_releases import export_release_chunked

        return export_release_chunked(release, path, format=format, force=force, counts=counts, steps=steps,
                                      standard_error=standard_error)
    return write_export_file(release, post_processed_counts(release.noisy, counts), path, format=format, force=force,
                             counts=counts, steps=steps, standard_error=standard_error)


def write_export_file(
    release: Release,
    noisy: Any,
    path: str | os.PathLike[str],
    *,
    format: ExportFormat | None = None,
    force: bool = False,
    counts: str = "noisy",
    steps: Progress | None = None,
    standard_error: bool = False,
) -> int:
    """:func:`write_long_format` of ``noisy`` (the release's counts of kind ``counts``, a numpy
    or Zarr array) into the file ``path``, atomically, with a CSV file's description beside
    it (written with it: both or neither); returns the rows."""
    p = Path(path)
    fmt, gz = _export_format(p, format)
    sidecar = export_metadata_path(p, fmt)
    targets = [p] if sidecar is None else [p, sidecar]
    for target in targets:
        check_writable(target, force=force)
    with atomic_files(targets, force=force) as handles:
        rows = write_long_format(release, noisy, handles[0], fmt, gz=gz, counts=counts, steps=steps,
                                 standard_error=standard_error)
        if sidecar is not None:
            meta = {**export_metadata(release, counts=counts, standard_error=standard_error), "file": p.name,
                    "rows": rows}
            handles[1].write((json.dumps(meta, indent=2, ensure_ascii=False, allow_nan=False) + "\n").encode())
    return rows


def write_export(
    release: Release,
    stream: IO[bytes],
    *,
    format: ExportFormat = "csv",
    counts: str = "noisy",
    allow_seeded: bool = False,
    progress: ProgressCallback | None = None,
    standard_error: bool = False,
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
        from .zarr_releases import write_export_chunked

        return write_export_chunked(release, stream, format=format, counts=counts, progress=progress,
                                    standard_error=standard_error)
    noisy = post_processed_counts(release.noisy, counts)
    return write_long_format(release, noisy, stream, format, counts=counts, steps=Progress(progress),
                             standard_error=standard_error)


def _refuse_seeded(release: Release, allow_seeded: bool) -> None:
    if release.seeded and not allow_seeded:
        raise PriveletError(
            "this release was made with a fixed seed (for tests only) and is NOT private: anyone who knows "
            "the seed can remove its noise. Make the release again without a seed, or export it for testing "
            "only with allow_seeded=True (privelet export --allow-seeded); the file will say it is seeded"
        )


def seeded_marks(seeded: bool) -> dict[bytes, bytes]:
    """The Parquet key-value metadata that says whether a release is seeded (and, if so, why not to publish it)."""
    marks = {b"privelet.seeded": b"true" if seeded else b"false"}
    if seeded:
        marks[b"privelet.warning"] = SEEDED_WARNING.encode()
    return marks


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
        return {"noisy_count": self.noisy_count, "variance": _finite_or_none(self.variance),
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

