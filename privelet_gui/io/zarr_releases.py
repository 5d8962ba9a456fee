"""Chunked releases on disk: a Zarr folder holding the noisy matrix and a release file's metadata.

A release too large for one machine's memory (made by :mod:`privelet_gui.distributed`) is
a Zarr (version 3) group folder, ``NAME.zarr``:

- the array ``noisy``: float64, the schema's shape, chunked as it was computed and not
  compressed (noisy values do not compress);
- the group attribute ``privelet``: exactly the metadata of a release file
  (:func:`~privelet_gui.io.metadata.release_metadata`). Never a true count, nor n;
- the group attribute ``privelet_checksums``: the SHA-256 of every chunk's file, recorded as
  each chunk was written (``{"algorithm": "sha256", "chunk_shape": [...], "chunks": [...]}``,
  the chunks in C order of the chunk grid); every chunk is stored, even one of zeros;
- the group attribute ``privelet_signature``: the signature (:mod:`privelet_gui.io.signing`)
  of the metadata and the checksums, so of every cell.

:func:`open_zarr_release` opens one lazily: ``release.noisy`` is then a zarr array, whose
indexing reads only the chunks it needs, so that queries (:func:`~privelet_gui.io.answer_query`)
and exports (:func:`export_release_chunked`) never hold the whole matrix.
:func:`~privelet_gui.io.load_release` opens such a folder the same way. Opening reads the two
``zarr.json`` documents with the project's JSON reader and refuses anything but the array a
release is (float64, uncompressed, the metadata's shape), then checks that every chunk's
file is there with its full size; every chunk read is checked against its checksum and for
finite values (:mod:`privelet_gui.io._zarr_store`). A folder written before checksums reads
with a warning, its chunks checked for presence, size and finite values only.

A release folder is written into a temporary folder beside the target and renamed into
place once complete (:class:`ZarrReleaseWriter`): nobody sees a partial release, a failed
or cancelled write leaves nothing behind, and an existing folder is replaced (with
``force``) only if it is itself a Privelet Zarr release. zarr is imported when a Zarr
release is read or written, not with this module (it comes with ``privelet-gui[dask]``).
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import shutil
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType, TracebackType
from typing import IO, Any

import numpy as np

from ..engine import InternalError, PriveletError, Release
from ..engine.progress import Progress, ProgressCallback
from ._json import loads, shown
from .atomic import check_folder
from .errors import OutputExistsError, ReleaseFileError
from .long_format import SLAB_CELLS, ExportFormat, chunk_grid, regular_chunks, write_export_file, write_long_format
from .metadata import (
    RELEASE_FORMAT,
    RELEASE_FORMAT_VERSION,
    ReleaseWarning,
    release_from_metadata,
    release_metadata,
    release_warning,
)
from .signing import canonical_json, sign, signature_problem

__all__ = [
    "CHECKSUMS_ATTRIBUTE",
    "NOISY_ARRAY",
    "SIGNATURE_ATTRIBUTE",
    "ZARR_ATTRIBUTE",
    "ZarrReleaseWriter",
    "check_zarr_target",
    "export_release_chunked",
    "is_zarr_release",
    "load_zarr_release_metadata",
    "open_zarr_release",
    "regular_chunks",
    "save_zarr_release",
    "shift_zarr_chunk",
    "write_export_chunked",
    "write_zarr_chunk",
]

#: The group attribute that holds the release metadata.
ZARR_ATTRIBUTE = "privelet"
#: The group attribute that holds the SHA-256 of every chunk (see the module docstring).
CHECKSUMS_ATTRIBUTE = "privelet_checksums"
#: The group attribute that holds the signature of the metadata and the checksums.
SIGNATURE_ATTRIBUTE = "privelet_signature"
#: The array that holds the noisy matrix.
NOISY_ARRAY = "noisy"
# While a folder is written: one file per chunk holding its SHA-256, written with the chunk
# by whichever process wrote it, gathered into the checksums at the commit.
_DIGESTS = "chunk-digests"
_HEX_DIGEST = re.compile(r"[0-9a-f]{64}")

_INSTALL_HINT = "install the optional part with: pip install 'privelet-gui[dask]'"


def _zarr() -> ModuleType:
    try:
        import zarr
    except ImportError:
        raise ReleaseFileError(f"Zarr releases need the zarr package, which is not installed; {_INSTALL_HINT}") from None
    return zarr


def is_zarr_release(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` is a Zarr folder (a ``zarr.json`` inside): checked without zarr."""
    p = Path(path)
    return p.is_dir() and (p / "zarr.json").is_file()


def _chunk_key(position: tuple[int, ...]) -> str:
    """The store key of the chunk at ``position`` of the chunk grid (the default encoding, ``/``)."""
    return "c/" + "/".join(map(str, position))


def _chunk_positions(shape: tuple[int, ...], chunks: tuple[int, ...]) -> Iterator[tuple[int, ...]]:
    """Every position of the chunk grid, in C order."""
    return np.ndindex(*(max(1, math.ceil(n / c)) for n, c in zip(shape, chunks, strict=True)))


# -- writing ----------------------------------------------------------------------------------------


def check_zarr_target(path: str | os.PathLike[str], *, force: bool = False) -> Path:
    """Fail early, before any long work, if a Zarr release cannot be written at ``path``.

    An existing ``path`` is refused (:class:`~privelet_gui.io.OutputExistsError`) unless
    ``force``, and even then unless it is a Privelet Zarr release: no other folder or file
    is ever replaced.
    """
    target = Path(path)
    if target.exists() or target.is_symlink():
        if not force:
            raise OutputExistsError(target)
        if not _is_privelet_folder(target):
            raise PriveletError(
                f"refusing to replace {target}: it is not a Privelet Zarr release; choose another --out name"
            )
    check_folder(target)
    return target


def _is_privelet_folder(path: Path) -> bool:
    if not is_zarr_release(path) or path.is_symlink():
        return False
    try:
        _read_group(path)
    except ReleaseFileError:
        return False
    return True


class ZarrReleaseWriter:
    """Write a Zarr release folder atomically (see the module docstring).

    Use it as a context manager: entering creates the folder's temporary twin with an
    empty ``noisy`` array of ``shape`` and ``chunks``; chunks are written to
    :attr:`array_path` (:func:`write_zarr_chunk`, from any process that sees the folder);
    :meth:`commit` stores the metadata, the chunks' checksums and the signature, and renames
    the folder into place. Leaving without a commit (an error, a cancel) deletes the temporary folder.
    """

    def __init__(
        self, path: str | os.PathLike[str], shape: tuple[int, ...], chunks: tuple[int, ...], *, force: bool = False
    ):
        self.target = check_zarr_target(path, force=force)
        self.force = force
        self.shape = tuple(int(n) for n in shape)
        self.chunks = tuple(int(n) for n in chunks)
        self.folder = self.target.with_name(f".{self.target.name}.{uuid.uuid4().hex[:12]}.tmp")
        self._committed = False

    @property
    def array_path(self) -> str:
        """Where the chunks of the noisy array are written (an absolute path)."""
        return str((self.folder / NOISY_ARRAY).absolute())

    def __enter__(self) -> ZarrReleaseWriter:
        zarr = _zarr()
        try:
            group = zarr.open_group(str(self.folder), mode="w-")
            group.create_array(
                NOISY_ARRAY, shape=self.shape, chunks=self.chunks, dtype="float64", compressors=None, fill_value=0.0
            )
            (self.folder / _DIGESTS).mkdir()
        except BaseException:
            shutil.rmtree(self.folder, ignore_errors=True)
            raise
        return self

    def commit(self, metadata: Mapping[str, Any]) -> Path:
        """Store ``metadata`` (a release file's), the checksums of the chunks (every chunk must
        have been written) and the signature; then move the finished folder into place."""
        zarr = _zarr()
        text = json.dumps(dict(metadata), ensure_ascii=False, allow_nan=False)  # plain JSON, as in a .npz
        meta = json.loads(text)
        checksums = self._checksums()
        group = zarr.open_group(str(self.folder), mode="r+")
        group.attrs.update({
            ZARR_ATTRIBUTE: meta,
            CHECKSUMS_ATTRIBUTE: checksums,
            SIGNATURE_ATTRIBUTE: sign(_signed_content(meta, checksums)),
        })
        shutil.rmtree(self.folder / _DIGESTS)
        old: Path | None = None
        if self.target.exists():
            check_zarr_target(self.target, force=self.force)  # it may have appeared meanwhile
            old = self.target.with_name(f".{self.target.name}.{uuid.uuid4().hex[:12]}.old")
            os.rename(self.target, old)
        try:
            os.rename(self.folder, self.target)
        except BaseException:
            if old is not None:
                os.rename(old, self.target)
            raise
        self._committed = True
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
        return self.target

    def _checksums(self) -> dict[str, Any]:
        """The checksums attribute, from the digests the chunks' writers left."""
        digests = []
        for position in _chunk_positions(self.shape, self.chunks):
            try:
                digest = (self.folder / _DIGESTS / _digest_name(position)).read_text(encoding="ascii")
            except (OSError, UnicodeDecodeError):
                digest = ""
            if not _HEX_DIGEST.fullmatch(digest):
                raise PriveletError(
                    f"the chunk {_chunk_key(position)} of {self.target.name} was never written completely; "
                    "nothing was saved, make the release again"
                )
            digests.append(digest)
        return {"algorithm": "sha256", "chunk_shape": list(self.chunks), "chunks": digests}

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, traceback: TracebackType | None
    ) -> None:
        if not self._committed:
            shutil.rmtree(self.folder, ignore_errors=True)


def _digest_name(position: tuple[int, ...]) -> str:
    return ".".join(map(str, position))


def _signed_content(meta: Mapping[str, Any], checksums: Mapping[str, Any]) -> list[bytes]:
    """What a Zarr release's signature covers: its metadata and its chunks' checksums."""
    return [b"privelet zarr release", canonical_json(meta), canonical_json(checksums)]


def _writable_array(array_path: str) -> Any:
    """The array at ``array_path``, opened to write every chunk it is given, even one of
    zeros (zarr would otherwise leave it out, and the release could not tell it from a lost one)."""
    return _zarr().open_array(array_path, mode="r+").with_config({"write_empty_chunks": True})


def _record_digests(array_path: str, array: Any, region: tuple[slice, ...]) -> None:
    """Record the SHA-256 of the stored file of each chunk of ``region`` (just written)."""
    ranges = [
        range(part.indices(n)[0] // c, math.ceil(part.indices(n)[1] / c))
        for part, n, c in zip(region, array.shape, array.chunks, strict=True)
    ]
    folder = Path(array_path)
    digests = folder.parent / _DIGESTS
    digests.mkdir(exist_ok=True)
    for position in np.ndindex(*(len(r) for r in ranges)):
        chunk = tuple(r[i] for r, i in zip(ranges, position, strict=True))
        digest = hashlib.sha256((folder / _chunk_key(chunk)).read_bytes()).hexdigest()
        (digests / _digest_name(chunk)).write_text(digest, encoding="ascii")


def write_zarr_chunk(array_path: str, region: tuple[slice, ...], values: np.ndarray) -> int:
    """Write ``values`` at ``region`` of the Zarr array at ``array_path`` and record the
    checksums of its chunks; returns the cells written. ``region`` must cover whole chunks of
    the array (or reach its end), so that processes writing different regions never touch
    the same chunk."""
    array = _writable_array(array_path)
    array[region] = np.asarray(values, dtype=np.float64)
    _record_digests(array_path, array, region)
    return int(np.size(values))


def shift_zarr_chunk(array_path: str, region: tuple[slice, ...], shift: float) -> None:
    """Add ``shift`` to every cell of ``region`` (whole chunks, as for :func:`write_zarr_chunk`)."""
    array = _writable_array(array_path)
    array[region] = np.asarray(array[region], dtype=np.float64) + shift
    _record_digests(array_path, array, region)


def save_zarr_release(
    release: Release,
    path: str | os.PathLike[str],
    *,
    chunks: tuple[int, ...] | None = None,
    force: bool = False,
    metadata: Mapping[str, Any] | None = None,
    seed: int | None = None,
) -> dict[str, Any]:
    """Write a release held in memory as a Zarr release folder; returns the metadata written.

    The arguments are those of :func:`~privelet_gui.io.save_release`, plus the chunk shape
    (default: :func:`regular_chunks`).
    """
    noisy = release.noisy
    if release.schema is not None and tuple(noisy.shape) != release.schema.shape:
        raise PriveletError(f"the release's matrix has shape {noisy.shape} but its schema needs {release.schema.shape}")
    meta = release_metadata(release, seed=seed, metadata=metadata)
    chunk_shape = chunks or regular_chunks(tuple(noisy.shape))
    with ZarrReleaseWriter(path, tuple(noisy.shape), chunk_shape, force=force) as writer:
        for index in chunk_grid(tuple(noisy.shape), chunk_shape):
            write_zarr_chunk(writer.array_path, index, np.asarray(noisy[index]))
        writer.commit(meta)
    return meta


# -- reading ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _ReleaseFolder:
    """A Zarr release folder's documents, read and checked without zarr."""

    path: Path
    meta: dict[str, Any]
    checksums: dict[str, Any] | None  # None: written before checksums
    signature: object
    shape: tuple[int, ...]
    chunks: tuple[int, ...]
    documents: dict[str, bytes]  # the store keys of the two zarr.json documents: their bytes, as checked

    def chunk_digests(self) -> dict[str, str | None]:
        """Each chunk's store key and its recorded SHA-256 (None: none recorded)."""
        keys = [f"{NOISY_ARRAY}/{_chunk_key(position)}" for position in _chunk_positions(self.shape, self.chunks)]
        recorded: list[str | None] = list(self.checksums["chunks"]) if self.checksums is not None else [None] * len(keys)
        return dict(zip(keys, recorded, strict=True))


def _invalid_folder(p: Path, what: str) -> ReleaseFileError:
    return ReleaseFileError(
        f"{p}: not a valid Zarr release: {what}; the folder was damaged or edited: copy it again from where it "
        "was made, or make the release again"
    )


def _document(p: Path, name: str) -> tuple[Any, bytes]:
    """The JSON document ``name`` of the folder ``p`` (and its bytes), read with the project's
    reader: a damaged or deeply nested one is refused, never handed to zarr."""
    location = p / name
    try:
        data = location.read_bytes()
        text = data.decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise _invalid_folder(p, f"{name} cannot be read ({_brief(exc)})") from None
    return loads(text, source=str(location), error=ReleaseFileError), data


def _read_group(p: Path) -> tuple[dict[str, Any], bytes]:
    """The group's attributes (holding release metadata of a version this reads) and its document's bytes."""
    group, data = _document(p, "zarr.json")
    attributes = group.get("attributes") if isinstance(group, dict) else None
    if not (isinstance(group, dict) and group.get("zarr_format") == 3 and group.get("node_type") == "group"
            and isinstance(attributes, dict) and _is_release_metadata(attributes.get(ZARR_ATTRIBUTE))):
        raise ReleaseFileError(f"{p} is a Zarr folder but not a Privelet release (no '{RELEASE_FORMAT}' metadata)")
    version = attributes[ZARR_ATTRIBUTE].get("format_version")
    if isinstance(version, bool) or not isinstance(version, int) or not 1 <= version <= RELEASE_FORMAT_VERSION:
        raise ReleaseFileError(
            f"{p} has release format version {shown(version)}; this Privelet Studio reads version "
            f"{RELEASE_FORMAT_VERSION}" + (": update it" if isinstance(version, int) and version > 1 else "")
        )
    return attributes, data


def _is_release_metadata(meta: object) -> bool:
    return isinstance(meta, dict) and meta.get("format") == RELEASE_FORMAT


def _positive_integers(value: object, count: int | None = None) -> tuple[int, ...] | None:
    if not (isinstance(value, list) and value and (count is None or len(value) == count)):
        return None
    if not all(isinstance(n, int) and not isinstance(n, bool) and 0 < n < 1 << 62 for n in value):
        return None
    return tuple(value)


def _read_folder(path: str | os.PathLike[str]) -> _ReleaseFolder:
    """Read and check a Zarr release's documents (see the module docstring)."""
    p = Path(path)
    if not is_zarr_release(p):
        raise ReleaseFileError(f"{p} is not a Zarr release folder (no zarr.json inside)")
    attributes, group_data = _read_group(p)
    array, array_data = _document(p, f"{NOISY_ARRAY}/zarr.json")
    if not isinstance(array, dict):
        raise _invalid_folder(p, f"{NOISY_ARRAY}/zarr.json is not an object")
    shape = _positive_integers(array.get("shape"))
    grid = array.get("chunk_grid")
    chunks = _positive_integers(grid["configuration"].get("chunk_shape"), len(shape)) if (
        shape is not None and isinstance(grid, dict) and grid.get("name") == "regular"
        and isinstance(grid.get("configuration"), dict)
    ) else None
    expected = {
        "zarr_format": 3,
        "node_type": "array",
        "data_type": "float64",
        "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
        "fill_value": 0.0,
        "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}],
    }
    wrong = [key for key, value in expected.items() if array.get(key) != value]
    if array.get("storage_transformers", []) != []:
        wrong.append("storage_transformers")
    if shape is None or chunks is None or wrong:
        what = ", ".join(wrong + (["shape"] if shape is None else ["chunk_grid"] * (chunks is None)))
        raise _invalid_folder(p, f"its noisy array is not the uncompressed float64 array a release holds ({what} in "
                                 f"{NOISY_ARRAY}/zarr.json)")
    if shape is None or chunks is None:
        raise InternalError("the shape and chunks of the noisy array passed the check that they exist, yet one is missing")
    checksums = attributes.get(CHECKSUMS_ATTRIBUTE)
    if checksums is not None:
        count = math.prod(max(1, math.ceil(n / c)) for n, c in zip(shape, chunks, strict=True))
        digests = checksums.get("chunks") if isinstance(checksums, dict) else None
        if not (isinstance(checksums, dict) and checksums.get("algorithm") == "sha256"
                and checksums.get("chunk_shape") == list(chunks) and isinstance(digests, list) and len(digests) == count
                and all(isinstance(d, str) and _HEX_DIGEST.fullmatch(d) for d in digests)):
            raise _invalid_folder(p, f"its {CHECKSUMS_ATTRIBUTE} do not describe the {count:,} chunks of its noisy array")
    return _ReleaseFolder(
        p, dict(attributes[ZARR_ATTRIBUTE]), checksums, attributes.get(SIGNATURE_ATTRIBUTE), shape, chunks,
        {"zarr.json": group_data, f"{NOISY_ARRAY}/zarr.json": array_data},
    )


def _brief(exc: BaseException) -> str:
    text = str(exc).split("\n")[0]
    return text[:120] if text else type(exc).__name__


def _check_chunk_files(folder: _ReleaseFolder, keys: Mapping[str, object]) -> None:
    """Refuse a folder any of whose chunks is not a file of a whole chunk's size: read through
    zarr, a missing chunk would give zeros."""
    size = 8 * math.prod(folder.chunks)
    for key in keys:
        location = folder.path / key
        try:
            found = location.stat().st_size if location.is_file() else None
        except OSError:
            found = None
        if found is None:
            raise _invalid_folder(folder.path, f"the chunk {key} of the noisy matrix is missing (its cells would read "
                                               "as zeros)")
        if found != size:
            raise _invalid_folder(folder.path, f"the chunk {key} holds {found:,} bytes, not {size:,}: it is truncated")


def load_zarr_release_metadata(path: str | os.PathLike[str]) -> dict[str, Any]:
    """The metadata of a Zarr release (without touching the matrix, or needing zarr)."""
    return _read_folder(path).meta


def open_zarr_release(path: str | os.PathLike[str], *, warn: ReleaseWarning | None = None) -> Release:
    """Open a Zarr release lazily: ``release.noisy`` is a zarr array (index it to read cells;
    ``np.asarray(release.noisy)`` reads them all), every chunk checked as it is read (see the
    module docstring). Schema, calibration and flags are rebuilt from the metadata, so exact
    variances work as on a loaded release file. What a reader must know about the folder's
    signature (and flags) goes to ``warn`` (as for :func:`~privelet_gui.io.load_release`)."""
    folder = _read_folder(path)
    p = folder.path
    digests = folder.chunk_digests()
    _check_chunk_files(folder, digests)
    zarr = _zarr()
    from ._zarr_store import CheckedStore

    store = CheckedStore(p, folder.documents, digests, 8 * math.prod(folder.chunks), lambda what: _invalid_folder(p, what))
    try:
        noisy = zarr.open_group(store=store, mode="r")[NOISY_ARRAY]
    except (KeyError, ValueError, OSError, TypeError) as exc:  # zarr's errors derive from these
        raise ReleaseFileError(f"{p} is not a readable Zarr release ({_brief(exc)})") from None
    say = warn or release_warning
    release = release_from_metadata(folder.meta, noisy, p, say)  # lazy: indexing reads the chunks it needs
    if folder.checksums is None:
        say(f"{p} records no checksums of its chunks: it was written by a Privelet Studio older than them, so a chunk "
            "changed since cannot be detected (missing or truncated chunks and NaN or infinite values still are), "
            "nor can its metadata be checked. Trust its numbers only as far as you trust where it came from.")
    else:
        problem = signature_problem(folder.signature, _signed_content(folder.meta, folder.checksums), str(p))
        if problem is not None:
            say(problem)
    return release


# -- exports ------------------------------------------------------------------------------------------


def export_release_chunked(
    release: Release,
    path: str | os.PathLike[str],
    *,
    format: ExportFormat | None = None,
    force: bool = False,
    counts: str = "noisy",
    steps: Progress | None = None,
    standard_error: bool = False,
    slab_cells: int = SLAB_CELLS,
) -> int:
    """:func:`~privelet_gui.io.export_release` of a lazily opened Zarr release, read one slab
    of ``slab_cells`` cells at a time (:func:`~privelet_gui.io.long_format.write_long_format`), never whole.

    The same rows in the same order (the matrix in C order), the same description (a CSV
    file's beside it) and standard errors. Writes atomically; returns the rows. A seeded
    release is marked as :func:`~privelet_gui.io.export_release` marks it (the caller has
    allowed it). Only the noisy counts themselves: non-negative or whole counts keep the
    total of the whole matrix, which a slab does not see.
    """
    _check_chunked_counts(counts)
    return write_export_file(release, release.noisy, path, format=format, force=force, steps=steps,
                             standard_error=standard_error, slab_cells=slab_cells)


def write_export_chunked(
    release: Release,
    stream: IO[bytes],
    *,
    format: ExportFormat = "csv",
    counts: str = "noisy",
    progress: ProgressCallback | None = None,
    standard_error: bool = False,
    slab_cells: int = SLAB_CELLS,
) -> int:
    """:func:`export_release_chunked` into an open binary ``stream`` (see :func:`~privelet_gui.io.write_export`)."""
    _check_chunked_counts(counts)
    return write_long_format(release, release.noisy, stream, format, steps=Progress(progress),
                             standard_error=standard_error, slab_cells=slab_cells)


def _check_chunked_counts(counts: str) -> None:
    if counts != "noisy":
        raise PriveletError(
            f"{counts} counts keep the total of the whole matrix, so a chunked (Zarr) release exports its noisy "
            "counts only; post-process the exported counts, or release to a .npz file for --counts"
        )
