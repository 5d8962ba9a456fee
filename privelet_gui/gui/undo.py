"""The workspace's history on a ``QUndoStack``: each change becomes one ``QUndoCommand``.

The Undo and Redo actions, their shortcuts and the undo view are Qt's; the changes are
the workspace's own (:mod:`privelet_gui.workspace.history`), so every edit the app makes
is undoable exactly as it is in a plain :class:`~privelet_gui.workspace.UndoHistory`.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import shiboken6
from PySide6.QtGui import QUndoCommand, QUndoStack

from ..workspace import Change, Event

__all__ = ["UndoStackHistory"]

# Commands whose change may merge with the next one (the changes decide, by their merge keys).
_MERGEABLE = 4101


class _Command(QUndoCommand):
    def __init__(self, change: Change):
        super().__init__(change.text)
        self.change = change

    def redo(self) -> None:
        self.change.redo()
        if self.change.obsolete:
            self.setObsolete(True)  # a change that did nothing: QUndoStack drops it

    def undo(self) -> None:
        self.change.undo()

    def id(self) -> int:
        return _MERGEABLE if self.change.merge_key is not None else -1

    def mergeWith(self, other: QUndoCommand) -> bool:
        if not isinstance(other, _Command) or not self.change.merge(other.change):
            return False
        if self.change.obsolete:
            self.setObsolete(True)
        return True


class UndoStackHistory:
    """A :class:`~privelet_gui.workspace.History` that pushes onto ``stack``."""

    def __init__(self, stack: QUndoStack):
        self.stack = stack
        self.clean_changed = Event()
        stack.cleanChanged.connect(self._clean_changed)

    def _clean_changed(self, clean: bool) -> None:
        # The stack's destructor clears it, which announces a change of the clean state from a
        # stack that is already gone: a listener asking it anything would raise.
        if shiboken6.isValid(self.stack):
            self.clean_changed.emit(clean)

    def push(self, change: Change) -> None:
        self.stack.push(_Command(change))

    @contextmanager
    def group(self, text: str) -> Iterator[None]:
        self.stack.beginMacro(text)
        try:
            yield
        finally:
            self.stack.endMacro()

    def undo(self) -> None:
        self.stack.undo()

    def redo(self) -> None:
        self.stack.redo()

    @property
    def can_undo(self) -> bool:
        return self.stack.canUndo()

    @property
    def can_redo(self) -> bool:
        return self.stack.canRedo()

    def clear(self) -> None:
        self.stack.clear()

    def set_clean(self) -> None:
        self.stack.setClean()

    def is_clean(self) -> bool:
        return self.stack.isClean()
