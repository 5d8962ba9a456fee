"""The log of unexpected errors: what a bug report needs, never the user's data.

**Where**: ``errors.log`` in the user's state folder (platformdirs: ``$XDG_STATE_HOME/privelet-studio``,
by default ``~/.local/state/privelet-studio``, on Linux; ``~/Library/Application Support/privelet-studio``
on macOS; ``%LOCALAPPDATA%\\privelet-studio`` on Windows), or the file named by the environment
variable ``PRIVELET_ERROR_LOG`` (the tests use a temporary one). Past :data:`MAX_BYTES` the log
is renamed ``errors.log.1`` (replacing an older one) and a new one begun.

**What**: one record per unexpected error (a bug, not a problem with the user's input, which the
app explains itself): the time (UTC), the versions of Privelet Studio, Python and Qt's binding,
the platform, where in the app it happened, the exception's type and its traceback as code
locations (file, line, function, and that line of the program's source), causes included.

**Never**: the exception's message, local variables or any other value, since these can quote a
cell of the table, a label, a count or a file name; nor a path outside the installed code (a
frame of other code is shown by its file name only, without its line of source). This is why
the log is not :func:`traceback.format_exception`, which prints the message.
"""

from __future__ import annotations

import contextlib
import os
import platform
import sys
import sysconfig
import traceback
from datetime import UTC, datetime
from pathlib import Path

__all__ = [
    "ERROR_LOG_ENVIRONMENT",
    "MAX_BYTES",
    "bug_report_text",
    "describe_error",
    "error_log_path",
    "is_unexpected",
    "issue_tracker",
    "log_unexpected_error",
]

#: The environment variable naming another log file (tests).
ERROR_LOG_ENVIRONMENT = "PRIVELET_ERROR_LOG"
#: Past this size the log is rotated (one older file kept), so it never grows without bound.
MAX_BYTES = 1 << 20
#: The attribute a logged exception carries (the log's path, or None if it could not be written),
#: so that an error seen by two handlers (a task's and the dialog showing it) is logged once.
_LOGGED = "_privelet_error_logged"
#: How many causes (``raise ... from``, errors while handling another) a record follows.
_MAX_CHAIN = 8


def error_log_path() -> Path:
    """Where unexpected errors are logged: ``$PRIVELET_ERROR_LOG``, or the user's state folder."""
    chosen = os.environ.get(ERROR_LOG_ENVIRONMENT)
    if chosen:
        return Path(chosen)
    import platformdirs

    return platformdirs.user_state_path("privelet-studio", appauthor=False) / "errors.log"


def is_unexpected(error: BaseException) -> bool:
    """Whether ``error`` is a bug to log, not a problem the user can fix from its message.

    A :class:`~privelet_gui.engine.PriveletError` (bad input, with what to do) and an
    :class:`OSError` (a file that cannot be read or written) are the user's to fix; a
    cancellation is no error at all.
    """
    from .engine import Cancelled, PriveletError

    return not isinstance(error, (PriveletError, OSError, Cancelled))


def describe_error(error: BaseException, *, where: str = "") -> str:
    """The log record of ``error``: versions, platform, its type and code locations, no values.

    Examples
    --------
    >>> def read(cell):
    ...     raise KeyError(cell)
    >>> try:
    ...     read("a cell value")
    ... except KeyError as exc:
    ...     record = describe_error(exc, where="a doctest")
    >>> "KeyError" in record, "a cell value" in record
    (True, False)
    """
    from . import __version__

    header = [
        f"--- {datetime.now(UTC).strftime('%Y-%m-%dT%H:%M:%SZ')} unexpected error" + (f" in {where}" if where else ""),
        f"Privelet Studio {__version__}; Python {platform.python_version()}{_qt_binding()}; {platform.platform()}",
    ]
    lines: list[str] = []
    current: BaseException | None = error
    seen: set[int] = set()
    while current is not None and id(current) not in seen and len(seen) < _MAX_CHAIN:
        seen.add(id(current))
        kind = type(current)
        lines.append(f"{kind.__module__}.{kind.__qualname__}" if kind.__module__ != "builtins" else kind.__qualname__)
        for frame in traceback.extract_tb(current.__traceback__):
            place, ours = _code_file(frame.filename)
            line = f"  {place}:{frame.lineno} in {frame.name}"
            if ours and frame.line:
                line += f": {frame.line.strip()}"
            lines.append(line)
        if current.__cause__ is not None:
            lines.append("caused by:")
            current = current.__cause__
        elif current.__context__ is not None and not current.__suppress_context__:
            lines.append("while handling:")
            current = current.__context__
        else:
            current = None
    return "\n".join(header + lines) + "\n"


def log_unexpected_error(error: BaseException, *, where: str = "") -> Path | None:
    """Append the record of ``error`` to the log; its path, or None if the log cannot be written.

    Never raises: failing to log must not hide the error being logged (the caller still shows it).
    An error already logged is not written again: its first record's path is returned.
    """
    if hasattr(error, _LOGGED):
        logged: Path | None = getattr(error, _LOGGED)
        return logged
    path = error_log_path()
    try:
        record = describe_error(error, where=where)
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.is_file() and path.stat().st_size + len(record) > MAX_BYTES:
            path.replace(path.with_name(path.name + ".1"))
        with open(path, "a", encoding="utf-8") as log:
            log.write(record)
    except Exception:  # whatever the reason (a read-only disk, a bug here), the app goes on
        _mark_logged(error, None)
        return None
    _mark_logged(error, path)
    return path


def _mark_logged(error: BaseException, path: Path | None) -> None:
    # An exception type that takes no attributes is logged again if it is seen again.
    with contextlib.suppress(AttributeError, TypeError):
        setattr(error, _LOGGED, path)


def issue_tracker() -> str | None:
    """The project's issue tracker, from the package metadata (pyproject's ``[project.urls]`` Issues),
    or None when the package is not installed (a source tree run without installing it)."""
    from importlib.metadata import PackageNotFoundError, metadata

    try:
        urls = metadata("privelet-gui").get_all("Project-URL") or []
    except PackageNotFoundError:
        return None
    for entry in urls:
        label, _, url = entry.partition(",")
        if label.strip().lower() == "issues":
            return url.strip()
    return None


def bug_report_text(error: BaseException, log: Path | None) -> str:
    """What a user is told about a bug: that it is one (not a problem with their data or files), where
    its record is (``log``, None if it could not be written) and where to report it.

    Examples
    --------
    >>> text = bug_report_text(KeyError("x"), Path("errors.log"))
    >>> text.startswith("This is a bug in Privelet Studio (KeyError), not a problem with your data")
    True
    >>> "errors.log" in text
    True
    """
    tracker = issue_tracker()
    where = f"at {tracker}" if tracker else "to the people who gave you Privelet Studio"
    logged = (f"Its details (never your data) are in the log of unexpected errors, {log}: attach it"
              if log is not None else "The log of unexpected errors could not be written: describe what you did")
    return (f"This is a bug in Privelet Studio ({type(error).__name__}), not a problem with your data or files. "
            f"Please report it {where}. {logged}.")


def _qt_binding() -> str:
    """``; PySide6 X.Y.Z`` when the app's Qt binding is loaded (the command line does not load it)."""
    binding = sys.modules.get("PySide6")
    version = getattr(binding, "__version__", None)
    return f"; PySide6 {version}" if version else ""


def _code_roots() -> list[tuple[Path, str]]:
    """Folders of installed code, each with the name a log shows for it (no user name, no home)."""
    package = Path(__file__).resolve().parent
    roots = [(package, package.name)]
    bundle = getattr(sys, "_MEIPASS", None)  # a PyInstaller bundle's folder
    if bundle:
        roots.append((Path(bundle).resolve(), "bundle"))
    paths = sysconfig.get_paths()
    for key in ("purelib", "platlib"):
        roots.append((Path(paths[key]).resolve(), "site-packages"))
    for key in ("stdlib", "platstdlib"):
        roots.append((Path(paths[key]).resolve(), "python"))
    return roots


def _code_file(filename: str) -> tuple[str, bool]:
    """``filename`` as the log shows it, and whether it is installed code (whose lines may be shown)."""
    try:
        resolved = Path(filename).resolve()
    except (OSError, ValueError):
        return Path(filename).name, False
    for root, name in _code_roots():
        if resolved.is_relative_to(root):
            return f"{name}/{resolved.relative_to(root).as_posix()}", True
    # Other code (a user's script, a plugin): by its file name only, and its source never.
    return Path(filename).name or "<unknown>", False
