"""The engine's compiled loops: every hot kernel, written once.

Each kernel is a numba function declared where it is defined (``@njit(cache=True, nogil=True, error_model="numpy")``):
it is compiled the first time a release uses it, then loaded from numba's cache (next to the
module, or in the user's cache folder where that is read-only, as in the bundle), and it
releases the GIL, so that a release's threads run in parallel. Nothing outside this package
imports numba. Arrays are passed as 3-D views ``(outer, axis, inner)`` of a block, so that one
kernel serves every axis of any block.
"""
