"""Signatures of release files: which files this machine wrote, unchanged since.

Every release file (``.npz``) and Zarr release folder is signed when it is written: an
HMAC-SHA-256 of its content (the canonical JSON of its metadata, and its noisy matrix: the
matrix's bytes in a ``.npz``, the SHA-256 of every chunk in a Zarr folder), keyed with a
random 256-bit key kept beside the privacy ledger (``release-signing.key`` in the ledger's
folder, :func:`signing_key_path`), made on first use and readable by its owner only.
Reading a release checks its signature (:func:`signature_problem`).

What a valid signature guarantees: that the file is, byte for byte in what it means, the one
Privelet Studio wrote on a machine holding this key; an edit of its counts or of its
metadata (epsilon relabelled with a recomputed scale, a shift to the total added, the seeded
flag cleared) made afterwards without the key is detected. What it does not: it proves
nothing to anyone else. The key is a secret shared with nobody, so only a machine holding it
can check a signature (a file from another machine, or from a version older than signatures,
reads with a warning that it cannot be checked), and whoever holds it (the custodian, or
anyone who can read the custodian's data folder) can sign any file: a signature detects
edits, it does not prove authorship to a third party. Nor does it vouch that the release was
private: it vouches that the file is as it was written.

No Qt here: the command line and the desktop app both use it.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import os
import re
import secrets
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ..engine.errors import PriveletError
from .ledger import LEDGER_ENVIRONMENT, ledger_path

__all__ = [
    "SIGNATURE_ALGORITHM",
    "canonical_json",
    "sign",
    "signature_problem",
    "signing_key",
    "signing_key_path",
]

#: The signature's algorithm, as a signature names it.
SIGNATURE_ALGORITHM = "HMAC-SHA256"
_KEY_NAME = "release-signing.key"
_KEY_BYTES = 32
_KEY_TEXT = re.compile(r"[0-9a-f]{64}\n?")
_HEX_MAC = re.compile(r"[0-9a-f]{64}")


def signing_key_path() -> Path:
    """Where the signing key lives: beside the privacy ledger (:func:`~privelet_gui.io.ledger.ledger_path`)."""
    return ledger_path().with_name(_KEY_NAME)


def _read_key(path: Path) -> bytes | None:
    """The key in ``path`` (None: there is none); PriveletError when it cannot be used."""
    try:
        text = path.read_text(encoding="ascii")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise PriveletError(f"the release signing key {path} cannot be read ({exc})") from None
    if not _KEY_TEXT.fullmatch(text):
        raise PriveletError(
            f"the release signing key {path} is damaged (it must hold 64 hexadecimal digits); move it away and a "
            "new one is made (files signed with the old key then read as signed on another machine)"
        )
    return bytes.fromhex(text[:64])


def signing_key() -> bytes:
    """This machine's signing key, made on first use (owner-only permissions, written whole
    before it appears, so that two processes starting at once end up with the same key)."""
    path = signing_key_path()
    key = _read_key(path)
    if key is not None:
        return key
    temporary = path.with_name(f".{_KEY_NAME}.{secrets.token_hex(6)}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        handle = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            os.write(handle, (secrets.token_hex(_KEY_BYTES) + "\n").encode("ascii"))
            os.fsync(handle)
        finally:
            os.close(handle)
        with contextlib.suppress(FileExistsError):  # another process made one meanwhile: theirs is the key
            os.link(temporary, path)
    except OSError as exc:
        raise PriveletError(
            f"cannot make the release signing key {path} ({exc.strerror or exc}); make the privacy ledger's folder "
            f"writable or point {LEDGER_ENVIRONMENT} at a ledger in another folder"
        ) from None
    finally:
        with contextlib.suppress(OSError):
            temporary.unlink()
    made = _read_key(path)
    if made is None:  # linked above, by this process or another, then removed by someone
        raise PriveletError(
            f"the release signing key {path} was removed as soon as it was made; check what else uses the privacy "
            "ledger's folder, then try again"
        )
    return made


def _key_id(key: bytes) -> str:
    """A name for a key that reveals nothing of it: which key signed a file."""
    return hashlib.sha256(b"privelet release signing key\0" + key).hexdigest()[:16]


def canonical_json(value: Any) -> bytes:
    """The one text of a JSON value that its signature covers (sorted keys, no spaces, ASCII)."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=True, allow_nan=False).encode("ascii")


def _mac(key: bytes, parts: Iterable[Any]) -> str:
    """HMAC-SHA-256 of ``parts`` (bytes-like), each preceded by its length so that no two
    different sequences of parts give the same message."""
    mac = hmac.new(key, digestmod=hashlib.sha256)
    for part in parts:
        view = memoryview(part).cast("B")
        mac.update(len(view).to_bytes(8, "big"))
        mac.update(view)
    return mac.hexdigest()


def sign(parts: Iterable[Any]) -> dict[str, str]:
    """The signature of a file whose content is ``parts`` (bytes-like, C-contiguous), with
    this machine's key (made now if there is none)."""
    key = signing_key()
    return {"algorithm": SIGNATURE_ALGORITHM, "key_id": _key_id(key), "mac": _mac(key, parts)}


def signature_problem(signature: object, parts: Iterable[Any], where: str) -> str | None:
    """What a reader of the release ``where`` must know about its signature ``signature``
    (None: none, or the object a file holds) over its content ``parts``; None when it is
    valid. Never raises for a bad signature: old and foreign files stay readable, with the
    warning this returns."""
    if signature is None:
        return (
            f"{where} carries no signature: it was written by a Privelet Studio older than signatures or by another "
            "program, so changes made to it since (to its counts, its epsilon, its noise scale, its seeded flag) "
            "cannot be detected. Trust its numbers only as far as you trust where it came from."
        )
    if not (isinstance(signature, dict) and signature.get("algorithm") == SIGNATURE_ALGORITHM
            and isinstance(signature.get("key_id"), str) and isinstance(signature.get("mac"), str)
            and _HEX_MAC.fullmatch(signature["mac"])):
        return _failed(where, "its signature is damaged")
    try:
        key = _read_key(signing_key_path())
    except PriveletError as exc:
        return f"{where} cannot be checked: {exc}"
    if key is None or not hmac.compare_digest(signature["key_id"], _key_id(key)):
        return (
            f"{where} was signed on another machine (or with a signing key this machine no longer has), so this one "
            "cannot check it: changes made to it since it was written cannot be detected here. Check it on the "
            "machine that made it, or trust its numbers only as far as you trust where it came from."
        )
    if not hmac.compare_digest(signature["mac"], _mac(key, parts)):
        return _failed(where, "its content does not match its signature")
    return None


def _failed(where: str, what: str) -> str:
    return (
        f"{where} FAILED its signature check ({what}): it was changed after Privelet Studio wrote it, in its counts "
        "or in its metadata (epsilon, noise scale, shift to the total, seeded flag), so its answers and error bars "
        "cannot be trusted. Do not publish it: use the original file, or make the release again."
    )
