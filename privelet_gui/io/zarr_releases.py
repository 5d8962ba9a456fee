"""Chunked releases on disk: a Zarr folder holding the noisy matrix and a release file's metadata.

A release too large for one machine's memory (made by :mod:`privelet_gui.distributed`) is
a Zarr (version 3) group folder, ``NAME.zarr``:

- the array ``noisy``: float64, the schema's shape, chunked as it was computed and not
  compressed (noisy values do not compress);
- the group attribute ``privelet``: exactly the metadata of a release file
  (:func:`~privelet_gui.io.releases.release_metadata`). Never a true count, nor n.

:func:`open_zarr_release` opens one lazily: ``release.noisy`` is then a zarr array, whose
indexing reads only the chunks it needs, so that queries (:func:`~privelet_gui.io.answer_query`)
and exports (:func:`export_release_chunked`) never hold the whole matrix.
:func:`~privelet_gui.io.load_release` opens such a folder the same way.

A release folder is written into a temporary folder beside the target and renamed into
place once complete (:class:`ZarrReleaseWriter`): nobody sees a partial release, a failed
or cancelled write leaves nothing behind, and an existing folder is replaced (with
``force``) only if it is itself a Privelet Zarr release. zarr is imported when a Zarr
release is read or written, not with this module (it comes with ``privelet-gui[dask]``).
"""

from __future__ import annotations

import json
import os
import shutil
import uuid
from collections.abc import Mapping
from pathlib import Path
from types import ModuleType, TracebackType
from typing import IO, Any

import numpy as np

from ..engine import PriveletError, Release
from ..engine.progress import Progress, ProgressCallback
from .atomic import check_folder
from .errors import OutputExistsError, ReleaseFileError
from .releases import (
    RELEASE_FORMAT,
    RELEASE_FORMAT_VERSION,
    ExportFormat,
    chunk_grid,
    regular_chunks,
    release_from_metadata,
    release_metadata,
    write_export_file,
    write_long_format,
)

__all__ = [
    "NOISY_ARRAY",
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
#: The array that holds the noisy matrix.
NOISY_ARRAY = "noisy"

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
        meta = json.loads((path / "zarr.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    attributes = meta.get("attributes") if isinstance(meta, dict) else None
    return isinstance(attributes, dict) and _is_release_metadata(attributes.get(ZARR_ATTRIBUTE))


def _is_release_metadata(meta: object) -> bool:
    return isinstance(meta, dict) and meta.get("format") == RELEASE_FORMAT


class ZarrReleaseWriter:
    """Write a Zarr release folder atomically (see the module docstring).

    Use it as a context manager: entering creates the folder's temporary twin with an
    empty ``noisy`` array of ``shape`` and ``chunks``; chunks are written to
    :attr:`array_path` (:func:`write_zarr_chunk`, from any process that sees the folder);
    :meth:`commit` stores the metadata and renames the folder into place. Leaving without
    a commit (an error, a cancel) deletes the temporary folder.
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
        except BaseException:
            shutil.rmtree(self.folder, ignore_errors=True)
            raise
        return self

    def commit(self, metadata: Mapping[str, Any]) -> Path:
        """Store ``metadata`` (a release file's) and move the finished folder into place."""
        zarr = _zarr()
        text = json.dumps(dict(metadata), ensure_ascii=False, allow_nan=False)  # plain JSON, as in a .npz
        group = zarr.open_group(str(self.folder), mode="r+")
        group.attrs[ZARR_ATTRIBUTE] = json.loads(text)
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

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, traceback: TracebackType | None
    ) -> None:
        if not self._committed:
            shutil.rmtree(self.folder, ignore_errors=True)


def write_zarr_chunk(array_path: str, region: tuple[slice, ...], values: np.ndarray) -> int:
    """Write ``values`` at ``region`` of the Zarr array at ``array_path``; returns the cells
    written. ``region`` must cover whole chunks of the array (or reach its end), so that
    processes writing different regions never touch the same chunk."""
    zarr = _zarr()
    array = zarr.open_array(array_path, mode="r+")
    array[region] = np.asarray(values, dtype=np.float64)
    return int(np.size(values))


def shift_zarr_chunk(array_path: str, region: tuple[slice, ...], shift: float) -> None:
    """Add ``shift`` to every cell of ``region`` (whole chunks, as for :func:`write_zarr_chunk`)."""
    zarr = _zarr()
    array = zarr.open_array(array_path, mode="r+")
    array[region] = np.asarray(array[region], dtype=np.float64) + shift


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


def _open_group(path: str | os.PathLike[str]) -> tuple[Any, Path, dict[str, Any]]:
    p = Path(path)
    if not is_zarr_release(p):
        raise ReleaseFileError(f"{p} is not a Zarr release folder (no zarr.json inside)")
    zarr = _zarr()
    try:
        group = zarr.open_group(str(p), mode="r")
        meta = group.attrs.get(ZARR_ATTRIBUTE)
    except (ValueError, OSError, TypeError) as exc:  # zarr's errors derive from these
        raise ReleaseFileError(f"{p} is not a readable Zarr release ({_brief(exc)})") from None
    if not _is_release_metadata(meta):
        raise ReleaseFileError(f"{p} is a Zarr folder but not a Privelet release (no '{RELEASE_FORMAT}' metadata)")
    meta = dict(meta)
    version = meta.get("format_version")
    if not isinstance(version, int) or version > RELEASE_FORMAT_VERSION:
        raise ReleaseFileError(
            f"{p} has release format version {version!r}; this Privelet Studio reads version "
            f"{RELEASE_FORMAT_VERSION}: update it"
        )
    return group, p, meta


def _brief(exc: BaseException) -> str:
    text = str(exc).split("\n")[0]
    return text[:120] if text else type(exc).__name__


def load_zarr_release_metadata(path: str | os.PathLike[str]) -> dict[str, Any]:
    """The metadata of a Zarr release (without touching the matrix)."""
    return _open_group(path)[2]


def open_zarr_release(path: str | os.PathLike[str]) -> Release:
    """Open a Zarr release lazily: ``release.noisy`` is a zarr array (index it to read cells;
    ``np.asarray(release.noisy)`` reads them all). Schema, calibration and flags are rebuilt
    from the metadata, so exact variances work as on a loaded release file."""
    group, p, meta = _open_group(path)
    try:
        noisy = group[NOISY_ARRAY]
    except (KeyError, ValueError, OSError) as exc:
        raise ReleaseFileError(f"{p}: the noisy matrix is missing ({_brief(exc)})") from None
    if str(noisy.dtype) != "float64":
        raise ReleaseFileError(f"{p}: the noisy matrix holds {noisy.dtype}, a release holds float64")
    return release_from_metadata(meta, noisy, p)  # lazy: indexing reads the chunks it needs


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
) -> int:
    """:func:`~privelet_gui.io.export_release` of a lazily opened Zarr release, read one slab
    of cells at a time (:func:`~privelet_gui.io.releases.write_long_format`), never whole.

    The same rows in the same order (the matrix in C order), the same description (a CSV
    file's beside it) and standard errors. Writes atomically; returns the rows. A seeded
    release is marked as :func:`~privelet_gui.io.export_release` marks it (the caller has
    allowed it). Only the noisy counts themselves: non-negative or whole counts keep the
    total of the whole matrix, which a slab does not see.
    """
    _check_chunked_counts(counts)
    return write_export_file(release, release.noisy, path, format=format, force=force, steps=steps,
                             standard_error=standard_error)


def write_export_chunked(
    release: Release,
    stream: IO[bytes],
    *,
    format: ExportFormat = "csv",
    counts: str = "noisy",
    progress: ProgressCallback | None = None,
    standard_error: bool = False,
) -> int:
    """:func:`export_release_chunked` into an open binary ``stream`` (see :func:`~privelet_gui.io.write_export`)."""
    _check_chunked_counts(counts)
    return write_long_format(release, release.noisy, stream, format, steps=Progress(progress),
                             standard_error=standard_error)


def _check_chunked_counts(counts: str) -> None:
    if counts != "noisy":
        raise PriveletError(
            f"{counts} counts keep the total of the whole matrix, so a chunked (Zarr) release exports its noisy "
            "counts only; post-process the exported counts, or release to a .npz file for --counts"
        )
