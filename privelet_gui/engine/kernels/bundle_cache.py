"""Where a frozen app (the PyInstaller bundle) keeps the kernels' compiled machine code.

numba caches a function next to its source file, or in ``NUMBA_CACHE_DIR``, keyed by the path
of that file and a stamp of its contents. In the bundle neither works as is: a module's
``co_filename`` is relative (``privelet_gui/engine/kernels/noise.py``), so numba looks for the
source in the current folder and, not finding it, falls back to a folder named after the
current folder (a new cache wherever the app is started from); and its stamp for a frozen app
is the executable's hash, which differs between ``privelet-gui`` and ``privelet``, so each
command would discard what the other compiled.

:class:`BundleCacheLocator` resolves the path in the bundle, where the spec ships the kernels'
sources as data files, caches in ``NUMBA_CACHE_DIR`` (the bundle's runtime hook,
packaging/pyi_rth_kernel_cache.py, sets it to the user's cache folder) and stamps each file by
its contents: both commands share one cache, from any folder, and a bundle whose kernels
changed compiles them again. numba uses it when ``NUMBA_CACHE_LOCATOR_CLASSES`` names it (the
runtime hook sets that too); outside a frozen app it declines, and numba's own locators apply.
"""

from __future__ import annotations

import functools
import hashlib
import os
import sys
from typing import Any

from numba.core import caching, config  # CACHE_DIR: numba sets it from NUMBA_CACHE_DIR at run time

__all__ = ["BundleCacheLocator"]


@functools.cache
def _content_stamp(path: str, mtime_ns: int, size: int) -> bytes:
    """The SHA-256 of a source file (memoised per version of the file)."""
    with open(path, "rb") as source:
        return hashlib.sha256(source.read()).digest()


class BundleCacheLocator(caching.UserProvidedCacheLocator):
    """numba's ``NUMBA_CACHE_DIR`` locator for a frozen app's modules whose sources it ships."""

    @classmethod
    def from_function(cls, py_func: Any, py_file: str) -> BundleCacheLocator | None:
        bundle = getattr(sys, "_MEIPASS", None)
        if not getattr(sys, "frozen", False) or bundle is None or not getattr(config, "CACHE_DIR", ""):
            return None
        source = os.path.join(bundle, py_file)  # an absolute py_file stays as it is
        if not os.path.isfile(source):
            return None  # a module whose source the bundle does not ship: numba's other locators
        return super().from_function(py_func, source)  # None where the cache folder is not writable

    def get_source_stamp(self) -> bytes:
        status = os.stat(self._py_file)
        return _content_stamp(self._py_file, status.st_mtime_ns, status.st_size)
