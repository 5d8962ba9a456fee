"""Errors (and the one warning) raised by the readers and writers.

All the errors are :class:`~privelet_gui.engine.PriveletError` (a ``ValueError``), so the command
line prints them as one line and exits with code 1, and the desktop app shows them in
a dialog. Each message says what is wrong, where, and how to fix it.
"""

from __future__ import annotations

from ..engine.errors import PriveletError

__all__ = ["NotATextTableError", "OutputExistsError", "ReleaseFileError", "TableError", "UnverifiedReleaseWarning"]


class TableError(PriveletError):
    """A table file cannot be read (missing, undecodable, malformed, wrong columns)."""


class NotATextTableError(TableError):
    """The file is no text table at all (an image, a PDF, a spreadsheet renamed .csv): no
    reading option (delimiter, encoding, header) makes it one."""


class OutputExistsError(PriveletError, FileExistsError):
    """The output file exists already and ``force`` was not given.

    Also a :class:`FileExistsError`, so ``except FileExistsError`` catches it too.
    """

    def __init__(self, path: object):
        super().__init__(f"{path} exists already; choose another name or overwrite it (--force / force=True)")
        self.path = str(path)  # not ``filename``: OSError would then format the message differently


class ReleaseFileError(PriveletError):
    """A file is not a valid Privelet release (wrong format, damaged, or from a newer version)."""


class UnverifiedReleaseWarning(UserWarning):
    """A release was read, but what it says cannot be fully trusted: its signature failed, is
    missing or cannot be checked here, or its flags disagree (the message says which, what it
    means and what to do). Raised as a Python warning only by readers given no ``warn`` function."""
