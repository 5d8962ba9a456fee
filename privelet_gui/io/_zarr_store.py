"""The store a Zarr release is read through: it checks every chunk as zarr reads it.

Imported only when a Zarr release is opened (it needs zarr, an optional part). Zarr reads
the folder's two ``zarr.json`` documents from here as they were checked before it opened
them (:mod:`privelet_gui.io.zarr_releases`), nothing else of the folder but the chunks of
the noisy matrix, and each chunk only after its size, its SHA-256 (when the release recorded
them) and its values (finite numbers) were checked: a chunk that is missing, truncated,
edited or holds NaN or infinity stops the read with a
:class:`~privelet_gui.io.ReleaseFileError` instead of reading as zeros or as given.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Callable, Mapping
from pathlib import Path

import numpy as np
from zarr.abc.store import ByteRequest
from zarr.core.buffer import Buffer, BufferPrototype, default_buffer_prototype
from zarr.storage import LocalStore

from .errors import ReleaseFileError

__all__ = ["CheckedStore"]


class CheckedStore(LocalStore):
    """A read-only view of the release folder ``root`` (see the module docstring).

    ``documents``: the metadata documents by key, as checked; ``chunks``: the key of every
    chunk of the noisy matrix and its recorded SHA-256 (None: the release recorded none);
    ``chunk_bytes``: the size of each chunk's file; ``invalid`` makes the error of a chunk
    from what is wrong with it.
    """

    def __init__(
        self,
        root: Path,
        documents: Mapping[str, bytes],
        chunks: Mapping[str, str | None],
        chunk_bytes: int,
        invalid: Callable[[str], ReleaseFileError],
    ):
        super().__init__(root, read_only=True)
        self._documents = dict(documents)
        self._chunks = dict(chunks)
        self._chunk_bytes = chunk_bytes
        self._invalid = invalid

    async def get(
        self, key: str, prototype: BufferPrototype | None = None, byte_range: ByteRequest | None = None
    ) -> Buffer | None:
        prototype = prototype or default_buffer_prototype()
        if key in self._documents:
            return prototype.buffer.from_bytes(self._documents[key])
        if key not in self._chunks:
            return None  # not part of a release (zarr looks for version 2 documents too)
        buffer = await super().get(key, prototype, byte_range)
        await asyncio.to_thread(self._check, key, buffer)
        return buffer

    def _check(self, key: str, buffer: Buffer | None) -> None:
        if buffer is None:
            raise self._invalid(f"the chunk {key} of the noisy matrix is missing (its cells would read as zeros)")
        data = buffer.as_numpy_array()
        if data.size != self._chunk_bytes:
            raise self._invalid(f"the chunk {key} holds {data.size:,} bytes, not {self._chunk_bytes:,}: it is truncated")
        expected = self._chunks[key]
        if expected is not None and hashlib.sha256(data.data).hexdigest() != expected:
            raise self._invalid(f"the chunk {key} differs from the checksum recorded when the release was written")
        if not np.isfinite(data.view("<f8")).all():
            raise self._invalid(f"the chunk {key} holds NaN or infinite values")
