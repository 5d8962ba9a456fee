# PyInstaller runtime hook (packaging/privelet-studio.spec): numba's on-disk cache for the bundle.
#
# The engine's kernels (privelet_gui/engine/kernels) are numba functions with cache=True: the
# first launch compiles them, later launches load the machine code. In the bundle that needs a
# writable cache folder (the bundle's own may be read-only) and a locator that finds the
# kernels' shipped sources and stamps them by their contents (privelet_gui/engine/kernels/
# bundle_cache.py says why numba's own locators do not). Both are set here, before numba is
# imported, unless the environment already sets them.
import os

import platformdirs

os.environ.setdefault(
    "NUMBA_CACHE_DIR", os.path.join(platformdirs.user_cache_dir("privelet-studio", appauthor=False), "numba"))
# numba's frozen-app locator after ours: where the cache folder cannot be written, numba tries its own
os.environ.setdefault(
    "NUMBA_CACHE_LOCATOR_CLASSES",
    "privelet_gui.engine.kernels.bundle_cache.BundleCacheLocator,UserWideCacheLocator")
