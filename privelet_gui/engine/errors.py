"""Exceptions raised by the engine.

Every message says what is wrong, where, and how to fix it, so that the command
line can print it as is and the desktop app can show it in a dialog.
"""

from __future__ import annotations

__all__ = [
    "Cancelled",
    "DomainError",
    "HierarchyError",
    "InternalError",
    "PriveletError",
    "SchemaError",
    "shown",
]


def shown(value: object) -> str:
    """A value as a message quotes it: ``repr``, shortened, so that no message holds a
    megabyte of nested JSON or a number of thousands of digits."""
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() >= 200:
        return f"an integer of about {int(value.bit_length() * 0.30103):,} digits"
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


class PriveletError(ValueError):
    """Base class of every input error the engine reports to a user."""


class HierarchyError(PriveletError):
    """A hierarchy is malformed (duplicate labels, empty groups, bad nesting)."""


class SchemaError(PriveletError):
    """An attribute or schema is malformed, or an argument does not fit it."""


class DomainError(PriveletError):
    """Table values fall outside an attribute's declared domain."""

    def __init__(self, message: str, *, attribute: str, examples: tuple[object, ...] = (), count: int = 0):
        super().__init__(message)
        self.attribute = attribute
        self.examples = examples
        self.count = count


class Cancelled(Exception):
    """Raised between chunks or axes when the caller's ``should_cancel()`` returns True.

    Not a :class:`PriveletError`: cancelling is a request, not a mistake.
    """


class InternalError(RuntimeError):
    """A bug: an invariant of the engine failed. Not a :class:`PriveletError` (the input is not
    at fault): the command line and the app report it with the error log, never as a data error."""
