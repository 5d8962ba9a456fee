"""Copies of unsaved work that outlive a crash: the app's recovery folder.

While a project has unsaved changes, the app keeps a copy of it (the same JSON as a project
file, with every path absolute) in a *slot* of its own in the recovery folder: ``<id>.json``
beside ``<id>.lock``, which the running app holds locked (``flock`` on POSIX, ``msvcrt`` on
Windows). The operating system releases that lock when the process ends, however it ends, so
a copy whose lock can be taken is an *orphan*: its app crashed, was killed or lost power
before the work was saved or discarded. The next start offers it back. A slot is removed when
its project is saved or discarded, and when the app closes normally.

The folder is ``recovery`` in the user's data folder (platformdirs: for example
``~/.local/share/privelet-studio/recovery`` on Linux), or the folder named by the environment
variable ``PRIVELET_RECOVERY`` (the tests use temporary ones). A copy holds what a project
file holds (settings, domains, hierarchies, the table's path), never data or counts.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

from ..engine.errors import PriveletError
from ._json import loads
from .atomic import atomic_write
from .project import Project, project_from_json, project_to_json

__all__ = ["RECOVERY_ENVIRONMENT", "Orphan", "RecoverySlot", "RecoveryStore", "recovery_folder"]

#: The environment variable naming another recovery folder (tests, scripted runs).
RECOVERY_ENVIRONMENT = "PRIVELET_RECOVERY"
_FORMAT = "privelet-recovery"
_VERSION = 1


def recovery_folder() -> Path:
    """Where copies of unsaved work are kept: ``$PRIVELET_RECOVERY``, or the user's data folder."""
    chosen = os.environ.get(RECOVERY_ENVIRONMENT)
    if chosen:
        return Path(chosen).expanduser()
    import platformdirs

    return platformdirs.user_data_path("privelet-studio", appauthor=False) / "recovery"


class _Lock:
    """An exclusive, non-blocking lock on a file, held until :meth:`release` or the process ends."""

    def __init__(self, path: Path):
        self.path = path
        self._handle: IO[bytes] | None = None

    def acquire(self) -> bool:
        """Take the lock (creating the file); False if another process holds it."""
        handle = open(self.path, "a+b")  # noqa: SIM115  (held open while locked)
        try:
            if os.name == "nt":
                import msvcrt

                handle.seek(0)
                msvcrt.locking(handle.fileno(), msvcrt.LK_NBLCK, 1)  # type: ignore[attr-defined]
            else:
                import fcntl

                fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            handle.close()
            return False
        self._handle = handle
        return True

    def release(self) -> None:
        if self._handle is not None:
            self._handle.close()  # closing the file releases the lock
            self._handle = None


@dataclass(frozen=True)
class Orphan:
    """A copy left by an app that ended without saving or discarding it (see the module
    docstring); claimed (locked) by this process until :meth:`discard` or :meth:`release`.

    ``project`` is None when the copy cannot be read (``problem`` says why): it is kept, never
    deleted without the user's word.
    """

    path: Path
    saved_at: datetime | None
    project_path: Path | None
    project: Project | None
    problem: str | None
    _lock: _Lock

    def discard(self) -> None:
        """Delete the copy (the user recovered it into a slot of their own, or does not want it)."""
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()
        self._lock.release()
        with contextlib.suppress(OSError):
            self._lock.path.unlink()

    def release(self) -> None:
        """Leave the copy where it is, for the next start."""
        self._lock.release()


class RecoverySlot:
    """This app's copy of its unsaved work; the lock is taken, and the files made, at the first
    :meth:`write`."""

    def __init__(self, folder: Path):
        self.folder = folder
        name = uuid.uuid4().hex
        self.path = folder / f"{name}.json"
        self._lock = _Lock(folder / f"{name}.lock")
        self._locked = False

    def write(self, project: Project, project_path: Path | None) -> None:
        """Replace the copy with ``project`` (atomically: a crash during the write keeps the last copy).

        Raises OSError when the folder cannot be written (the caller says so and goes on).
        """
        if not self._locked:
            self.folder.mkdir(parents=True, exist_ok=True)
            if not self._lock.acquire():  # a fresh random name: only a broken file system gets here
                raise OSError(f"cannot lock {self._lock.path}")
            self._locked = True
        document = {
            "format": _FORMAT,
            "version": _VERSION,
            "saved_at": datetime.now(UTC).isoformat(timespec="seconds"),
            "project_path": str(project_path.absolute()) if project_path is not None else None,
            # absolute paths: the copy is read from the recovery folder, not beside the project
            "project": project_to_json(_absolute(project)),
        }
        with atomic_write(self.path, force=True, mode="w", encoding="utf-8") as f:
            json.dump(document, f, ensure_ascii=False)

    def discard(self) -> None:
        """Remove the copy: the work is saved, discarded or gone with the closing app."""
        if not self._locked:
            return
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()
        self._lock.release()
        self._locked = False
        with contextlib.suppress(OSError):
            self._lock.path.unlink()

    @property
    def exists(self) -> bool:
        return self._locked and self.path.is_file()


class RecoveryStore:
    """The recovery folder: a :class:`RecoverySlot` for this app, and the orphans of others."""

    def __init__(self, folder: str | os.PathLike[str] | None = None):
        self.folder = Path(folder) if folder is not None else recovery_folder()

    def slot(self) -> RecoverySlot:
        return RecoverySlot(self.folder)

    def orphans(self) -> list[Orphan]:
        """The copies no running app holds, newest first, each claimed by this process
        (another app starting now does not offer them too)."""
        try:
            names = sorted(entry.name for entry in os.scandir(self.folder) if entry.name.endswith(".json"))
        except OSError:  # no folder yet: nothing was ever kept
            return []
        found = []
        for name in names:
            path = self.folder / name
            lock = _Lock(path.with_suffix(".lock"))
            if not lock.acquire():
                continue  # its app is running
            if not path.is_file():  # discarded meanwhile by its app
                lock.release()
                continue
            found.append(_read(path, lock))
        oldest = datetime.min.replace(tzinfo=UTC)
        return sorted(found, key=lambda orphan: orphan.saved_at or oldest, reverse=True)


def _read(path: Path, lock: _Lock) -> Orphan:
    try:
        obj: Any = loads(path.read_text(encoding="utf-8"), source=str(path), error=PriveletError)
        if not isinstance(obj, dict) or obj.get("format") != _FORMAT:
            raise PriveletError("not a copy of unsaved work")
        if obj.get("version") != _VERSION:
            raise PriveletError(f"written by another version of Privelet Studio (version {obj.get('version')!r})")
        project = project_from_json(obj.get("project"))
        saved_at = datetime.fromisoformat(str(obj.get("saved_at")))
        if saved_at.tzinfo is None:
            saved_at = saved_at.replace(tzinfo=UTC)
        where = obj.get("project_path")
        project_path = Path(where) if isinstance(where, str) and where else None
    except (PriveletError, OSError, UnicodeDecodeError, ValueError) as exc:
        return Orphan(path, None, None, None, str(exc), lock)
    return Orphan(path, saved_at, project_path, project, None, lock)


def _absolute(project: Project) -> Project:
    if project.table_path is None or project.table_path.is_absolute():
        return project
    return dataclasses.replace(project, table_path=project.table_path.absolute())
