"""Undoable changes and the history that holds them, without Qt.

Every edit of the workspace is a :class:`Change` with ``redo`` and ``undo``, pushed on a
:class:`History`. :class:`UndoHistory` is the plain implementation (tests, scripts); the
desktop app passes an adapter that wraps each change in a ``QUndoCommand`` on its
``QUndoStack``, so the app's Undo menu and the undo view show the same changes.

>>> history = UndoHistory()
>>> values = {"epsilon": 1.0}
>>> history.push(FieldChange("Set epsilon", values.__setitem__, {"epsilon": 1.0}, {"epsilon": 0.5}))
>>> values, history.can_undo
({'epsilon': 0.5}, True)
>>> history.undo()
>>> values
{'epsilon': 1.0}
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any, Protocol

from .events import Event

__all__ = ["Change", "CompositeChange", "FieldChange", "History", "UndoHistory"]


class Change:
    """One undoable edit. ``redo`` applies it (also the first time), ``undo`` reverts it.

    A change whose ``merge_key`` is set may absorb the next change with the same key
    (typing in a spin box is one change, not one per keystroke); a change that ends up
    doing nothing is ``obsolete`` and is dropped from the history.
    """

    text: str = ""
    merge_key: object | None = None

    def redo(self) -> None:
        raise NotImplementedError

    def undo(self) -> None:
        raise NotImplementedError

    @property
    def obsolete(self) -> bool:
        return False

    def merge(self, later: Change) -> bool:
        """Absorb ``later`` (already applied) into this change; False if it cannot."""
        return False


class FieldChange(Change):
    """Set named fields through ``apply(name, value)``: from ``before`` to ``after`` and back."""

    def __init__(
        self,
        text: str,
        apply: Callable[[str, Any], None],
        before: Mapping[str, Any],
        after: Mapping[str, Any],
        *,
        merge_key: object | None = None,
        done: Callable[[], None] | None = None,
    ):
        self.text = text
        self._apply = apply
        self.before = dict(before)
        self.after = dict(after)
        self.merge_key = merge_key
        self._done = done

    def _set(self, values: Mapping[str, Any]) -> None:
        for name, value in values.items():
            self._apply(name, value)
        if self._done is not None:
            self._done()

    def redo(self) -> None:
        self._set(self.after)

    def undo(self) -> None:
        self._set(self.before)

    @property
    def obsolete(self) -> bool:
        return self.before == self.after

    def merge(self, later: Change) -> bool:
        if not isinstance(later, FieldChange) or later.merge_key is None or later.merge_key != self.merge_key:
            return False
        for name, value in later.before.items():
            self.before.setdefault(name, value)
        self.after.update(later.after)
        return True


class CompositeChange(Change):
    """Several changes undone and redone as one (a macro)."""

    def __init__(self, text: str, changes: list[Change] | None = None):
        self.text = text
        self.changes: list[Change] = list(changes or [])

    def redo(self) -> None:
        for change in self.changes:
            change.redo()

    def undo(self) -> None:
        for change in reversed(self.changes):
            change.undo()

    @property
    def obsolete(self) -> bool:
        return all(change.obsolete for change in self.changes)


class History(Protocol):
    """Where changes go: :class:`UndoHistory`, or the app's ``QUndoStack`` adapter."""

    clean_changed: Event

    def push(self, change: Change) -> None:
        """Apply ``change`` (its ``redo``) and record it, unless it turns out obsolete."""

    def group(self, text: str) -> Any:
        """A context manager: the changes pushed inside it are undone and redone as one."""

    def clear(self) -> None:
        """Forget every change (a new document)."""

    def set_clean(self) -> None:
        """Mark the current state as saved."""

    def is_clean(self) -> bool:
        """Whether the state is the one last marked saved."""


class UndoHistory:
    """A plain undo/redo history (the Qt-free :class:`History`)."""

    def __init__(self) -> None:
        self._changes: list[Change] = []
        self._index = 0  # changes[:index] are applied
        self._clean: int | None = 0
        self._group: CompositeChange | None = None
        self.clean_changed = Event()
        self.changed = Event()

    @property
    def can_undo(self) -> bool:
        return self._index > 0

    @property
    def can_redo(self) -> bool:
        return self._index < len(self._changes)

    @property
    def texts(self) -> list[str]:
        """The text of every applied change, oldest first."""
        return [change.text for change in self._changes[: self._index]]

    def __len__(self) -> int:
        return len(self._changes)

    def push(self, change: Change) -> None:
        change.redo()
        if self._group is not None:
            self._group.changes.append(change)
            return
        self._record(change)

    def _record(self, change: Change) -> None:
        was_clean = self.is_clean()
        last = self._changes[self._index - 1] if self._index > 0 and self._index != self._clean else None
        if last is not None and last.merge_key is not None and last.merge(change):
            self._drop_redo()
            if last.obsolete:
                self._changes.pop()
                self._index -= 1
        elif change.obsolete:
            return  # it did nothing: the history (and what can be redone) stays as it was
        else:
            self._drop_redo()
            self._changes.append(change)
            self._index += 1
        self._announce(was_clean)

    def _drop_redo(self) -> None:
        """A new change replaces the changes that were undone."""
        del self._changes[self._index :]
        if self._clean is not None and self._clean > self._index:
            self._clean = None  # the saved state can no longer be reached

    @contextmanager
    def group(self, text: str) -> Iterator[None]:
        if self._group is not None:  # nested: part of the outer group
            yield
            return
        self._group = CompositeChange(text)
        try:
            yield
        finally:
            group, self._group = self._group, None
            if group.changes:
                self._record(group)

    def undo(self) -> None:
        if self.can_undo:
            was_clean = self.is_clean()
            self._index -= 1
            self._changes[self._index].undo()
            self._announce(was_clean)

    def redo(self) -> None:
        if self.can_redo:
            was_clean = self.is_clean()
            self._changes[self._index].redo()
            self._index += 1
            self._announce(was_clean)

    def clear(self) -> None:
        was_clean = self.is_clean()
        self._changes.clear()
        self._index = 0
        self._clean = 0
        self._announce(was_clean)

    def set_clean(self) -> None:
        was_clean = self.is_clean()
        self._clean = self._index
        self._announce(was_clean)

    def is_clean(self) -> bool:
        return self._clean == self._index

    def _announce(self, was_clean: bool) -> None:
        self.changed.emit()
        if self.is_clean() != was_clean:
            self.clean_changed.emit(self.is_clean())
