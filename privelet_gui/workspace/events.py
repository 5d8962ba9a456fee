"""Plain change events for the Qt-free workspace (napari's evented-model habit, without Qt).

A model announces changes through :class:`Event` objects; views connect callbacks. The
desktop app's Qt adapters forward them to Qt signals; tests connect plain functions.

>>> changed = Event()
>>> seen = []
>>> _ = changed.connect(seen.append)
>>> changed.emit("age")
>>> seen
['age']
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["Event"]

Callback = Callable[..., Any]


class Event:
    """Callbacks called in the order they were connected, with the arguments of :meth:`emit`."""

    def __init__(self) -> None:
        self._callbacks: list[Callback] = []

    def connect(self, callback: Callback) -> Callback:
        """Call ``callback`` on every :meth:`emit`; returns it (usable as a decorator)."""
        self._callbacks.append(callback)
        return callback

    def disconnect(self, callback: Callback) -> None:
        """Stop calling ``callback`` (a no-op if it is not connected)."""
        if callback in self._callbacks:
            self._callbacks.remove(callback)

    def emit(self, *args: Any) -> None:
        for callback in list(self._callbacks):
            callback(*args)
