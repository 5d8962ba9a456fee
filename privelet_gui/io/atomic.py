"""Atomic file writes: a temporary file in the target folder, then one rename.

A reader never sees a half-written file, and an interrupted or failed write leaves the
target untouched (and no temporary file behind). A write killed outright (SIGKILL, power
loss) cannot delete its temporary file; the next write to the same target does: the name
``.<target>.<host>-<pid>-<random>.tmp`` says which process made it, and a file whose
process is gone is removed (one whose process still runs is another writer's, left alone).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import socket
import time
import uuid
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import IO, Any

from .errors import OutputExistsError

__all__ = ["atomic_files", "atomic_write", "check_folder", "check_writable", "remove_abandoned"]


def check_writable(path: str | os.PathLike[str], *, force: bool = False) -> Path:
    """Fail early, before any long work, if ``path`` cannot be written.

    Raises :class:`OutputExistsError` when the file exists and ``force`` is false, and
    :class:`FileNotFoundError` when its folder does not exist.
    """
    target = Path(path)
    if target.is_dir():
        raise IsADirectoryError(f"{target} is a folder; give a file name")
    if target.exists() and not force:
        raise OutputExistsError(target)
    check_folder(target)
    return target


def check_folder(target: Path) -> None:
    """Raise :class:`FileNotFoundError`, naming the fix, when ``target``'s folder does not exist."""
    if not target.parent.is_dir():
        raise FileNotFoundError(
            f"cannot write {target}: the folder {target.parent} does not exist; create it or choose another folder"
        )


@contextlib.contextmanager
def atomic_write(
    path: str | os.PathLike[str],
    *,
    force: bool = False,
    mode: str = "wb",
    encoding: str | None = None,
    newline: str | None = None,
) -> Iterator[IO[Any]]:
    """Open a temporary file beside ``path``; on success, rename it to ``path``.

    ``mode`` is ``"wb"`` (default) or ``"w"`` (text; ``encoding`` defaults to UTF-8).
    If the block raises (including ``KeyboardInterrupt``), the temporary file is deleted
    and ``path`` is left as it was. Without ``force``, an existing ``path`` is never
    replaced: :class:`OutputExistsError` is raised, before the block runs and again at
    the rename if the file appeared meanwhile.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> with atomic_write(folder / "out.txt", mode="w") as f:
    ...     _ = f.write("hello")
    >>> (folder / "out.txt").read_text()
    'hello'
    """
    if mode not in ("wb", "w"):
        raise ValueError(f"mode must be 'wb' or 'w', got {mode!r}")
    target = check_writable(path, force=force)
    remove_abandoned(target)
    temp, fd = _open_temp(target)
    try:
        if mode == "wb":
            handle: IO[Any] = os.fdopen(fd, "wb")
        else:
            handle = os.fdopen(fd, "w", encoding=encoding or "utf-8", newline=newline)
    except BaseException:
        os.close(fd)
        temp.unlink(missing_ok=True)
        raise
    try:
        with handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        _commit(temp, target, force)
    except BaseException:
        temp.unlink(missing_ok=True)
        raise


@contextlib.contextmanager
def atomic_files(paths: Sequence[str | os.PathLike[str]], *, force: bool = False) -> Iterator[list[IO[bytes]]]:
    """Write files that belong together (an export and the JSON that describes it) as one:
    each to a temporary file beside it (binary handles, in the order of ``paths``), all
    renamed into place only once the block has written every one.

    A block that raises (a cancel, a full disk) leaves every target as it was and no
    temporary file. Should a rename fail (another writer made the file meanwhile), the files
    this call already renamed into place are removed, so that none is left without the
    others (with ``force``, the files they had replaced are gone already: a rename cannot be
    undone). Without ``force`` no existing file is replaced, as for :func:`atomic_write`.
    """
    targets = [check_writable(path, force=force) for path in paths]
    temps: list[Path] = []
    handles: list[IO[bytes]] = []
    try:
        for target in targets:
            remove_abandoned(target)
            temp, fd = _open_temp(target)
            temps.append(temp)
            try:
                handles.append(os.fdopen(fd, "wb"))
            except BaseException:
                os.close(fd)
                raise
        yield handles
        for handle in handles:
            handle.flush()
            os.fsync(handle.fileno())
            handle.close()
        committed: list[Path] = []
        try:
            for temp, target in zip(temps, targets, strict=True):
                _commit(temp, target, force)
                committed.append(target)
        except BaseException:
            for target in committed:
                target.unlink(missing_ok=True)
            raise
    finally:
        for handle in handles:
            handle.close()
        for temp in temps:
            temp.unlink(missing_ok=True)


def _open_temp(target: Path) -> tuple[Path, int]:
    """A new temporary file beside ``target`` (named for this process) and its descriptor."""
    # Created with O_EXCL and mode 0o666 so that the user's umask applies, as for any new file.
    temp = target.with_name(f".{target.name}.{_HOST}-{os.getpid()}-{uuid.uuid4().hex[:12]}.tmp")
    return temp, os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o666)


# Which machine made a temporary file: a process number means something only there (a
# folder may be shared over the network).
_HOST = hashlib.sha1(socket.gethostname().encode("utf-8", "replace")).hexdigest()[:8]
_TEMP = re.compile(r"(?P<host>[0-9a-f]{8})-(?P<pid>[0-9]+)-[0-9a-f]{12}")
# Temporary files of versions before the process number was in the name: removed when
# untouched this long (a write renames its file within seconds of its last byte).
_OLD_TEMP = re.compile(r"[0-9a-f]{12}")
_OLD_TEMP_SECONDS = 3600.0


def remove_abandoned(target: Path) -> list[Path]:
    """Delete the temporary files of writes to ``target`` whose process is gone (killed
    before it could clean up); returns them. Files of running writers are kept."""
    removed: list[Path] = []
    prefix = f".{target.name}."
    try:
        entries = list(os.scandir(target.parent))
    except OSError:
        return removed
    for entry in entries:
        name = entry.name
        if not (name.startswith(prefix) and name.endswith(".tmp")):
            continue
        middle = name[len(prefix) : -len(".tmp")]
        made_by = _TEMP.fullmatch(middle)
        if made_by is not None:
            pid = int(made_by["pid"])
            if made_by["host"] != _HOST or pid == os.getpid() or _process_alive(pid):
                continue
        elif not _OLD_TEMP.fullmatch(middle) or not _untouched_for(entry, _OLD_TEMP_SECONDS):
            continue
        with contextlib.suppress(OSError):
            os.unlink(entry.path)
            removed.append(Path(entry.path))
    return removed


def _process_alive(pid: int) -> bool:
    """Whether process ``pid`` runs (POSIX; elsewhere it is assumed to, and nothing is removed)."""
    if os.name != "posix":
        return True
    try:
        os.kill(pid, 0)  # signal 0: nothing is sent, only whether the process exists is checked
    except ProcessLookupError:
        return False
    except PermissionError:  # it exists, as another user's
        return True
    except OSError:
        return True
    return True


def _untouched_for(entry: os.DirEntry[str], seconds: float) -> bool:
    try:
        return time.time() - entry.stat(follow_symlinks=False).st_mtime > seconds
    except OSError:
        return False


def _commit(temp: Path, target: Path, force: bool) -> None:
    if force:
        os.replace(temp, target)
        return
    try:
        # A hard link fails if the target exists: no window in which another writer's
        # file could be replaced.
        os.link(temp, target)
    except FileExistsError:
        raise OutputExistsError(target) from None
    except OSError:
        # Filesystems without hard links: check, then rename (a tiny race window).
        if target.exists():
            raise OutputExistsError(target) from None
        os.replace(temp, target)
        return
    temp.unlink()
