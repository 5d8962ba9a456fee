"""Copies of unsaved work that outlive a crash: the app's recovery folder.

While a project has unsaved changes, or a release no file holds yet, the app keeps a copy in
a *slot* of its own in the recovery folder: ``<id>.json`` (the project as a project file
holds it, every path absolute, and what the release is), ``<id>-<n>.npz`` (the release, as
File > Save release writes it) and ``<id>.lock``, which the running app holds locked
(``flock`` on POSIX, ``msvcrt`` on Windows). The operating system releases that lock when
the process ends, however it ends, so a copy whose lock can be taken is an *orphan*: its app
crashed, was killed or lost power before the work was saved or discarded. The next start
offers it back. A slot's parts go when the project is saved or discarded, when the release
is exported or dropped, and when the app closes normally.

A copy is read as untrusted: its release's epsilon and mechanism are taken from the release
file (which must be one of the copy's own, and agree with the description), its ledger entry is
noted as the release's file only if it records that release and no file yet, the project file
it names becomes where Save goes only if it is one (or is not there yet), and a lock file that
cannot be one (a folder, a FIFO) leaves its copy alone instead of stopping the app's start.

The folder is ``recovery`` in the user's data folder (platformdirs: for example
``~/.local/share/privelet-studio/recovery`` on Linux), or the folder named by the environment
variable ``PRIVELET_RECOVERY`` (the tests use temporary ones). A copy holds what a project
file and a release file hold (settings, domains, hierarchies, the table's path; the noisy
counts), never the data or a true count.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import re
import shutil
import stat
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ..engine import Release
from ..engine.errors import InternalError, PriveletError
from ._json import is_finite_number, loads, shown
from ._user_data import user_data_location
from .atomic import atomic_write, remove_abandoned
from .ledger import Ledger, LedgerEntry
from .project import PROJECT_SUFFIX, Project, load_project, project_from_json, project_to_json
from .releases import load_release_metadata, save_release

__all__ = [
    "RECOVERY_ENVIRONMENT",
    "KeptRelease",
    "Orphan",
    "OrphanRelease",
    "RecoverySlot",
    "RecoveryStore",
    "recovery_folder",
]

#: The environment variable naming another recovery folder (tests, scripted runs).
RECOVERY_ENVIRONMENT = "PRIVELET_RECOVERY"
_FORMAT = "privelet-recovery"
_VERSION = 1


def recovery_folder() -> Path:
    """Where copies of unsaved work are kept: ``$PRIVELET_RECOVERY``, or the user's data folder."""
    return user_data_location(RECOVERY_ENVIRONMENT, "recovery")


class _Lock:
    """An exclusive, non-blocking lock on a file, held until :meth:`release` or the process ends."""

    def __init__(self, path: Path):
        self.path = path
        self._handle: int | None = None  # the open file's descriptor, while locked

    def acquire(self) -> bool:
        """Take the lock (creating the file); False if another process holds it, or if it
        cannot be taken: the name is a folder, a FIFO or a device (opened without waiting,
        never locked), or the folder cannot be written."""
        try:
            handle = os.open(self.path, os.O_RDWR | os.O_CREAT | getattr(os, "O_NONBLOCK", 0), 0o600)
        except OSError:
            return False
        try:
            if not stat.S_ISREG(os.fstat(handle).st_mode):
                raise OSError(f"{self.path} is not a file")
            if os.name == "nt":
                import msvcrt

                os.lseek(handle, 0, os.SEEK_SET)
                msvcrt.locking(handle, msvcrt.LK_NBLCK, 1)  # type: ignore[attr-defined]
            else:
                import fcntl

                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(handle)
            return False
        self._handle = handle
        return True

    def release(self) -> None:
        if self._handle is not None:
            os.close(self._handle)  # closing the file releases the lock
            self._handle = None


@dataclass(frozen=True)
class KeptRelease:
    """A release no file holds yet, as a slot keeps it: with the metadata its release file gets
    and its entry in the privacy ledger (where the file it is saved to is noted)."""

    release: Release
    metadata: Mapping[str, Any] = field(default_factory=dict)
    ledger_entry: int | None = None


@dataclass(frozen=True)
class OrphanRelease:
    """The release an orphan holds: its file in the recovery folder and what it is."""

    path: Path
    epsilon: float
    mechanism: str
    created: str | None
    ledger_entry: int | None


@dataclass
class Orphan:
    """A copy left by an app that ended without saving or discarding it (see the module
    docstring); claimed (locked) by this process until :meth:`discard` or :meth:`leave`.

    ``project`` is None when the copy holds no project (only a release) or when it cannot be
    read (``problem`` then says why: it is kept, never deleted without the user's word);
    ``release`` is the release it holds, if any.
    """

    path: Path
    saved_at: datetime | None
    project_path: Path | None
    project: Project | None
    release: OrphanRelease | None
    problem: str | None
    _lock: _Lock
    _document: dict[str, Any] | None = None

    @property
    def holds_work(self) -> bool:
        return self.project is not None or self.release is not None

    def save_release(self, target: Path) -> None:
        """Write the release to ``target`` (atomically, replacing it) and note it in the privacy
        ledger as the release's file; the orphan then holds it no more (:meth:`forget_release`).

        Raises OSError when it cannot be written; PriveletError when the ledger cannot note it,
        or its entry does not record this release (:func:`_entry_problem`; the file is written then).
        """
        if self.release is None:
            raise InternalError("an orphan without a release was asked to save it")
        if target.resolve() == self.release.path.resolve():
            raise OSError(f"{target.name} is the recovery copy itself; choose a file outside {target.parent}")
        with self.release.path.open("rb") as source, atomic_write(target, force=True) as copy:
            shutil.copyfileobj(source, copy, 1 << 20)
        entry = self.release.ledger_entry
        self.forget_release()
        if entry is None:
            return
        try:
            ledger = Ledger()
            problem = _entry_problem(entry, next((e for e in ledger.entries() if e.id == entry), None),
                                     load_release_metadata(target))
            if problem is None:
                ledger.set_output(entry, target.resolve())
        except PriveletError as exc:
            raise PriveletError(f"wrote {target.name}, but could not note it in the privacy ledger: {exc}") from None
        if problem is not None:
            raise PriveletError(f"wrote {target.name}, but left the privacy ledger as it was: {problem}")

    def forget_release(self) -> None:
        """The release is saved elsewhere: the copy keeps the project only (or goes)."""
        if self.release is not None:
            path, self.release = self.release.path, None
            self._rewrite("release")
            with contextlib.suppress(FileNotFoundError):
                path.unlink()

    def forget_project(self) -> None:
        """The project is recovered: the copy keeps the release only (or goes)."""
        self.project = None
        self._rewrite("project")

    def _rewrite(self, part: str) -> None:
        if not self.holds_work:
            self.discard()
        elif self._document is not None:
            self._document[part] = None
            _write_document(self.path, self._document)

    def discard(self) -> None:
        """Delete the copy (with what a write killed half way left of it): the user recovered
        it (into a slot of their own), or does not want it."""
        _delete_copy(self.path, self.release.path if self.release is not None else None, self._lock)
        remove_abandoned(self.path)
        _remove_abandoned_releases(self.path)

    def leave(self) -> None:
        """Leave the copy where it is, for the next start."""
        self._lock.release()


class RecoverySlot:
    """This app's copy of its unsaved work; the lock is taken, and the files made, at the first
    :meth:`write`. One thread at a time."""

    def __init__(self, folder: Path):
        self.folder = folder
        self._name = uuid.uuid4().hex
        self.path = folder / f"{self._name}.json"
        self._lock = _Lock(folder / f"{self._name}.lock")
        self._locked = False
        self._kept: Release | None = None  # the release the slot's release file holds
        self.release_path: Path | None = None  # that file: <id>-<n>.npz, the n-th release kept
        self._releases = 0

    def write(self, project: Project | None, project_path: Path | None, release: KeptRelease | None = None) -> None:
        """Replace the copy with ``project`` and ``release`` (either may be None, not both).

        Atomically: a crash during the write keeps the last copy, its description and its
        release file matching (another release goes to a file of its own, the old one is deleted
        once the description names the new). The release file is written only when the release
        is another than the one it holds already. Raises OSError when the folder cannot be
        written (the caller says so and goes on).
        """
        if not self._locked:
            self.folder.mkdir(parents=True, exist_ok=True)
            if not self._lock.acquire():  # a fresh random name: only a broken file system gets here
                raise OSError(f"cannot lock {self._lock.path}")
            self._locked = True
        replaced = None
        if release is not None and release.release is not self._kept:
            self._releases += 1
            path = self.folder / f"{self._name}-{self._releases}.npz"
            save_release(release.release, path, force=True, metadata=release.metadata)
            replaced, self.release_path, self._kept = self.release_path, path, release.release
        elif release is None:
            replaced, self.release_path, self._kept = self.release_path, None, None
        document = {
            "format": _FORMAT,
            "version": _VERSION,
            "saved_at": datetime.now(UTC).isoformat(timespec="seconds"),
            "project_path": str(project_path.absolute()) if project_path is not None else None,
            # absolute paths: the copy is read from the recovery folder, not beside the project
            "project": project_to_json(_absolute(project)) if project is not None else None,
            "release": None if release is None or self.release_path is None else {
                "file": self.release_path.name,
                "epsilon": release.release.epsilon,
                "mechanism": release.release.mechanism,
                "created": release.metadata.get("created"),
                "ledger_entry": release.ledger_entry,
            },
        }
        _write_document(self.path, document)
        if replaced is not None:
            with contextlib.suppress(FileNotFoundError):
                replaced.unlink()

    def discard(self) -> None:
        """Remove the copy: the work is saved, discarded or gone with the closing app."""
        if not self._locked:
            return
        _delete_copy(self.path, self.release_path, self._lock)
        self._kept, self.release_path, self._locked = None, None, False

    @property
    def exists(self) -> bool:
        return self._locked and self.path.is_file()


def _delete_copy(copy: Path, release: Path | None, lock: _Lock) -> None:
    """Delete a copy's description and release file, then give up its lock and delete that."""
    for part in (copy, release):
        if part is not None:
            with contextlib.suppress(FileNotFoundError):
                part.unlink()
    lock.release()
    with contextlib.suppress(OSError):  # another app may have it open on Windows: left behind, harmless
        lock.path.unlink()


def _remove_abandoned_releases(copy: Path) -> None:
    """Delete the temporary files of release files of the copy ``copy`` (``<id>.json``) whose
    writer was killed half way (the release files are ``<id>-<n>.npz``)."""
    stem = copy.stem
    with contextlib.suppress(OSError):
        for entry in os.scandir(copy.parent):
            name = entry.name
            if name.startswith(f".{stem}-") and name.endswith(".tmp") and ".npz." in name:
                remove_abandoned(copy.parent / name[1 : name.index(".npz.") + len(".npz")])


def _write_document(path: Path, document: Mapping[str, Any]) -> None:
    with atomic_write(path, force=True, mode="w", encoding="utf-8") as f:
        json.dump(document, f, ensure_ascii=False)


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
        obj: Any = loads(path.read_text(encoding="utf-8-sig"), source=str(path), error=PriveletError)
        if not isinstance(obj, dict) or obj.get("format") != _FORMAT:
            raise PriveletError("not a copy of unsaved work")
        if obj.get("version") != _VERSION:
            raise PriveletError(f"written by another version of Privelet Studio (version {obj.get('version')!r})")
        project = project_from_json(obj["project"]) if obj.get("project") is not None else None
        release = _release_part(path, obj.get("release"))
        if project is None and release is None:
            raise PriveletError("it holds neither a project nor a release")
        saved_at = datetime.fromisoformat(str(obj.get("saved_at")))
        if saved_at.tzinfo is None:
            saved_at = saved_at.replace(tzinfo=UTC)
        project_path = _project_path(obj.get("project_path"))
    except (PriveletError, OSError, UnicodeDecodeError, ValueError, KeyError, TypeError) as exc:
        return Orphan(path, None, None, None, None, str(exc), lock)
    return Orphan(path, saved_at, project_path, project, release, None, lock, obj)


def _release_part(path: Path, part: Any) -> OrphanRelease | None:
    """The release a copy's description ``part`` names: one of the copy's own release files
    (``<id>-<n>.npz``), whose metadata (read from the file, not the description) must agree
    with what the description says of it."""
    if part is None:
        return None
    if not isinstance(part, dict) or not isinstance(part.get("file"), str):
        raise PriveletError("its release is not described")
    if not re.fullmatch(re.escape(path.stem) + r"-[1-9][0-9]{0,8}\.npz", part["file"]):
        raise PriveletError(f"its release file {shown(part['file'])} is not one of this copy's ({path.stem}-<n>.npz)")
    file = path.parent / part["file"]
    if not file.is_file():
        raise PriveletError(f"its release file {file.name} is missing")
    epsilon, mechanism = part.get("epsilon"), part.get("mechanism")
    if (not isinstance(epsilon, int | float) or isinstance(epsilon, bool) or not is_finite_number(epsilon)
            or not isinstance(mechanism, str)):
        raise PriveletError("its release's epsilon or mechanism is not given")
    meta = load_release_metadata(file)
    if (meta.get("epsilon"), meta.get("mechanism")) != (float(epsilon), mechanism):
        raise PriveletError(
            f"its description (epsilon {shown(float(epsilon))}, mechanism {shown(mechanism)}) does not match its "
            f"release file (epsilon {shown(meta.get('epsilon'))}, mechanism {shown(meta.get('mechanism'))}): one of "
            "them was edited"
        )
    entry = part.get("ledger_entry")
    extra = meta.get("extra")
    created = extra.get("created") if isinstance(extra, dict) else None
    return OrphanRelease(file, float(epsilon), mechanism, created if isinstance(created, str) else None,
                         entry if isinstance(entry, int) and not isinstance(entry, bool) else None)


def _project_path(where: object) -> Path | None:
    """The project file a copy's work was last saved to (where Save goes once it is recovered):
    an absolute path naming a project file, or nothing yet under a project file's name. Any
    other (None: Save asks where) so that an edited description cannot make Save overwrite
    another file."""
    if not isinstance(where, str) or not where:
        return None
    candidate = Path(where)
    if not candidate.is_absolute():
        return None
    if not candidate.exists():
        return candidate if candidate.suffix == PROJECT_SUFFIX else None
    try:
        load_project(candidate)
    except (PriveletError, OSError, ValueError):
        return None
    return candidate


def _entry_problem(number: int, entry: LedgerEntry | None, meta: dict[str, Any]) -> str | None:
    """Why the ledger entry ``number`` (``entry``: None if there is none) must not be noted
    as the file of the release whose metadata is ``meta`` (None: it may). A copy's
    description names its entry; an edited one could name another release's."""
    if entry is None:
        return f"the copy names ledger entry {number}, which the ledger does not hold"
    recorded = (entry.epsilon, entry.mechanism, entry.neighbours, entry.sampler, entry.seeded)
    if recorded != tuple(meta.get(key) for key in ("epsilon", "mechanism", "neighbours", "sampler", "seeded")):
        return (f"the copy names ledger entry {number}, which records another release (epsilon {entry.epsilon:g}, "
                f"{entry.mechanism}): the copy's description was edited")
    if entry.output is not None:
        return f"ledger entry {number} notes this release as written to {entry.output} already"
    return None


def _absolute(project: Project) -> Project:
    if project.table_path is None or project.table_path.is_absolute():
        return project
    return dataclasses.replace(project, table_path=project.table_path.absolute())
