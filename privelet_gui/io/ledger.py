"""The privacy-budget ledger: every release made on this machine, and the epsilon each table has spent.

Releasing the same table again spends more of its privacy budget: under sequential
composition the epsilons of all releases of a table add up. The ledger keeps one row
per release in a local SQLite database: the time (UTC), a salted fingerprint of the
input table, epsilon, the neighbouring notion, S_A, the mechanism, the sampler,
whether the noise was seeded, and the release file written. It holds no count, no
number of rows and no file name of the table.

**The fingerprint** is HMAC-SHA-256 of the table file's bytes, keyed with a random
256-bit salt made when the ledger is created and kept only in it. The bytes, not the
file name: a renamed or copied file is the same data and must add to the same
budget, whatever schema or S_A each release used (the people in it are the same). It
misses the same data saved in another format; and the salt makes fingerprints
meaningless off this machine: without it nobody can check whether a given file was
ever released here.

**Where**: ``ledger.sqlite3`` in the user's data folder (platformdirs: for example
``~/.local/share/privelet-studio`` on Linux, ``~/Library/Application Support`` on
macOS, ``%LOCALAPPDATA%`` on Windows), or the file named by the environment variable
``PRIVELET_LEDGER`` (the tests and ``--screenshots`` use a temporary one). The file
is readable by its owner only where the platform allows it.

Totals are kept per neighbouring notion (an add/remove epsilon and a replace epsilon
measure different things); seeded releases are counted apart: they are not private
at all, so they must never be published, whatever epsilon they name.

No Qt here: the command line and the desktop app both use it.
"""

from __future__ import annotations

import dataclasses
import hashlib
import hmac
import json
import os
import secrets
import sqlite3
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from ..engine import Cancelled, PriveletError, Release
from ._user_data import user_data_location

__all__ = [
    "COMPOSITION_TEXT",
    "LEDGER_ENVIRONMENT",
    "RELEASE_COLUMNS",
    "SHORT_FINGERPRINT",
    "BudgetCheck",
    "Ledger",
    "LedgerEntry",
    "LedgerReport",
    "Spending",
    "ask_before_spending",
    "check_budget",
    "ledger_path",
    "ledger_report",
    "spending_summary",
]

#: The environment variable naming another ledger file (tests, screenshots).
LEDGER_ENVIRONMENT = "PRIVELET_LEDGER"
_SCHEMA_VERSION = 1
#: The columns of a listing of the ledger's releases (``privelet ledger`` and the app's ledger view).
RELEASE_COLUMNS = ("id", "time (UTC)", "table", "epsilon", "neighbours", "mechanism", "sampler", "seeded", "S_A", "output")
#: How many characters of a fingerprint a listing shows (the table's short name).
SHORT_FINGERPRINT = 12
_CHUNK = 1 << 20


def ledger_path() -> Path:
    """Where the ledger lives: ``$PRIVELET_LEDGER``, or the user's data folder."""
    return user_data_location(LEDGER_ENVIRONMENT, "ledger.sqlite3")


@dataclass(frozen=True)
class LedgerEntry:
    """One release recorded in the ledger."""

    id: int
    created: str  # UTC, ISO 8601
    fingerprint: str
    epsilon: float
    neighbours: str
    sa: tuple[str, ...]
    mechanism: str
    sampler: str
    seeded: bool
    output: str | None

    def cells(self) -> tuple[str, ...]:
        """The entry as text, one per :data:`RELEASE_COLUMNS`."""
        return (
            str(self.id), self.created, self.fingerprint[:SHORT_FINGERPRINT], f"{self.epsilon:g}", self.neighbours,
            self.mechanism, self.sampler, "yes (not private)" if self.seeded else "no",
            "{" + ", ".join(self.sa) + "}", self.output or "(not written)",
        )

    def to_json(self) -> dict[str, object]:
        return {
            "id": self.id,
            "created": self.created,
            "fingerprint": self.fingerprint,
            "epsilon": self.epsilon,
            "neighbours": self.neighbours,
            "sa": list(self.sa),
            "mechanism": self.mechanism,
            "sampler": self.sampler,
            "seeded": self.seeded,
            "output": self.output,
        }


@dataclass(frozen=True)
class Spending:
    """What one table has spent: epsilon per neighbouring notion (sequential composition)."""

    fingerprint: str
    epsilon: dict[str, float]  # neighbours -> total epsilon of the unseeded releases
    releases: int  # unseeded releases
    seeded: int  # seeded (test) releases: not private, counted apart

    @property
    def any(self) -> bool:
        return bool(self.releases or self.seeded)

    def to_json(self) -> dict[str, object]:
        return {"fingerprint": self.fingerprint, "epsilon": self.epsilon, "releases": self.releases, "seeded": self.seeded}


def spending_summary(spending: Spending) -> str:
    """How much a table has spent, for people: ``"epsilon 1.5 (replace) in 2 releases"``."""
    if not spending.any:
        return "nothing yet"
    parts = _epsilon_parts(spending.epsilon)
    text = (" and ".join(parts) + f" in {spending.releases} release{'s' * (spending.releases != 1)}") if parts else ""
    if spending.seeded:
        seeded = f"{spending.seeded} seeded test release{'s' * (spending.seeded != 1)} (not private)"
        text = f"{text}, and {seeded}" if text else seeded
    return text


def _epsilon_parts(totals: dict[str, float]) -> list[str]:
    return [f"epsilon {total:g} ({notion})" for notion, total in sorted(totals.items())]


#: Sequential composition, for people: said wherever a table's total is shown.
COMPOSITION_TEXT = (
    "Under sequential composition the epsilons of a table's releases add up (per neighbouring notion: "
    "replace-one and add/remove budgets are kept apart): the total is what an attacker who has every one "
    "of these releases can learn about anyone in the table."
)


@dataclass(frozen=True)
class BudgetCheck:
    """What a table has spent and what one more release of it adds: the question asked before
    its noise is drawn (the command line and the app both ask it, and record through it).

    Made by :func:`check_budget`. ``spent`` is the table's spending before this release;
    :attr:`must_ask` says whether to ask (a table with no release yet spends without a question).
    """

    ledger: Ledger
    fingerprint: str
    spent: Spending
    epsilon: float
    neighbours: str

    @property
    def must_ask(self) -> bool:
        """Whether the table has spent something already (then the custodian is asked first)."""
        return self.spent.any

    def totals_after(self) -> dict[str, float]:
        """The table's epsilon per neighbouring notion once this release is made."""
        totals = dict(self.spent.epsilon)
        totals[self.neighbours] = totals.get(self.neighbours, 0.0) + self.epsilon
        return totals

    def after(self, release: Release) -> Spending:
        """What the table has spent once ``release`` (made under this check) is recorded."""
        if release.seeded:  # counted apart, as the ledger's totals count it
            return dataclasses.replace(self.spent, seeded=self.spent.seeded + 1)
        totals = dict(self.spent.epsilon)
        totals[release.neighbours] = totals.get(release.neighbours, 0.0) + float(release.epsilon)
        return dataclasses.replace(self.spent, epsilon=totals, releases=self.spent.releases + 1)

    def spends_text(self) -> str:
        """``"this release spends epsilon 0.5 more (replace)"``."""
        return f"this release spends epsilon {self.epsilon:g} more ({self.neighbours})"

    def total_after_text(self) -> str:
        """``"epsilon 1.5 (replace)"``: the table's total once this release is made."""
        return " and ".join(_epsilon_parts(self.totals_after()))

    def summary(self) -> str:
        """One line: what the table has spent and what this release adds (the command line's note)."""
        if not self.must_ask:
            return f"this table has spent nothing yet; {self.spends_text()}"
        return (
            f"this table has already spent {spending_summary(self.spent)} (privacy ledger {self.ledger.path}); "
            f"{self.spends_text()}"
        )

    def question(self) -> str:
        """The whole question: what was spent, what this release adds, the new total and what it means."""
        said = self.summary()
        return (
            f"{said[:1].upper()}{said[1:]}. Afterwards this table will have spent {self.total_after_text()}. "
            f"{COMPOSITION_TEXT}"
        )

    def record(self, release: Release, *, output: str | os.PathLike[str] | None = None) -> int:
        """Record ``release`` (made from this table) in the ledger; returns its entry id.

        Call it as soon as the noise is drawn, before the release is written or shown:
        if anything fails afterwards, the ledger errs on the side of counting a release
        that nobody saw.
        """
        return self.ledger.record(self.fingerprint, release, output=output)


def check_budget(
    ledger: Ledger, files: Sequence[str | os.PathLike[str]], epsilon: float, neighbours: str
) -> BudgetCheck:
    """Fingerprint the table's file(s) and look up what the table has spent, for a release of
    ``epsilon`` under ``neighbours``."""
    fingerprint = ledger.fingerprint_files(files)
    return BudgetCheck(ledger, fingerprint, ledger.spent(fingerprint), float(epsilon), neighbours)


def ask_before_spending(
    ledger: Ledger,
    files: Sequence[str | os.PathLike[str]],
    epsilon: float,
    neighbours: str,
    ask: Callable[[BudgetCheck], bool],
) -> BudgetCheck:
    """The rule before a release's noise is drawn (``privelet release`` and the app): look up
    what the table has spent and, if it has spent anything, ``ask(check)`` whether to spend
    more; returns the check to record the release through, or raises Cancelled.

    Call it once the table is counted (counting spends nothing; drawing the noise does), so
    that a table that cannot be read is reported by its reader.
    """
    check = check_budget(ledger, files, epsilon, neighbours)
    if check.must_ask and not ask(check):
        raise Cancelled("nothing released: the table's privacy budget was not spent")
    return check


@dataclass(frozen=True)
class LedgerReport:
    """Everything the ledger holds, for ``privelet ledger`` and the app's ledger view."""

    path: Path
    releases: list[LedgerEntry]
    tables: list[Spending]  # per table, in the order of their first release

    def to_json(self) -> dict[str, object]:
        return {
            "ledger": str(self.path),
            "releases": [entry.to_json() for entry in self.releases],
            "tables": [spending.to_json() for spending in self.tables],
        }


def ledger_report(ledger: Ledger | None = None) -> LedgerReport:
    """Every release in ``ledger`` (default: :func:`ledger_path`'s) and what each table spent."""
    ledger = ledger if ledger is not None else Ledger()
    return LedgerReport(ledger.path, ledger.entries(), ledger.totals())


class Ledger:
    """The ledger database at ``path`` (default :func:`ledger_path`), created on first use.

    Examples
    --------
    >>> import tempfile, numpy as np
    >>> from privelet_gui.engine import OrdinalAttribute, Schema, privelet_plus
    >>> folder = Path(tempfile.mkdtemp())
    >>> table = folder / "t.csv"
    >>> _ = table.write_text("age\\n1\\n2\\n")
    >>> ledger = Ledger(folder / "ledger.sqlite3")
    >>> mark = ledger.fingerprint_file(table)
    >>> release = privelet_plus(np.ones(4), Schema([OrdinalAttribute.integer_range("age", 0, 3)]), 0.5)
    >>> _ = ledger.record(mark, release, output="r.npz")
    >>> spending_summary(ledger.spent(mark))
    'epsilon 0.5 (replace) in 1 release'
    """

    def __init__(self, path: str | os.PathLike[str] | None = None):
        self.path = Path(path) if path is not None else ledger_path()

    @contextmanager
    def _connect(self) -> Iterator[sqlite3.Connection]:
        new = not self.path.exists()
        try:
            if new:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                # Created for its owner only: fingerprints and release history are the custodian's.
                os.close(os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
            connection = sqlite3.connect(self.path, timeout=10)
        except (OSError, sqlite3.Error) as exc:
            raise PriveletError(
                f"cannot open the privacy ledger {self.path} ({exc}); make its folder writable or point "
                f"{LEDGER_ENVIRONMENT} at another file"
            ) from None
        try:
            with connection:
                self._prepare(connection)
                yield connection
        except sqlite3.DatabaseError as exc:
            raise PriveletError(
                f"the privacy ledger {self.path} is damaged or not a ledger ({exc}); move it away to start a new "
                "one (the epsilon already spent is then no longer counted)"
            ) from None
        finally:
            connection.close()

    @staticmethod
    def _prepare(connection: sqlite3.Connection) -> None:
        connection.execute("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
        connection.execute(
            "CREATE TABLE IF NOT EXISTS releases ("
            " id INTEGER PRIMARY KEY AUTOINCREMENT, created TEXT NOT NULL, fingerprint TEXT NOT NULL,"
            " epsilon REAL NOT NULL, neighbours TEXT NOT NULL, sa TEXT NOT NULL, mechanism TEXT NOT NULL,"
            " sampler TEXT NOT NULL, seeded INTEGER NOT NULL, output TEXT)"
        )
        connection.execute("CREATE INDEX IF NOT EXISTS releases_by_table ON releases (fingerprint)")
        version = connection.execute("SELECT value FROM meta WHERE key = 'version'").fetchone()
        if version is None:
            connection.execute("INSERT INTO meta VALUES ('version', ?)", (str(_SCHEMA_VERSION),))
            connection.execute("INSERT INTO meta VALUES ('salt', ?)", (secrets.token_hex(32),))
        elif int(version[0]) > _SCHEMA_VERSION:
            raise PriveletError("the privacy ledger was written by a newer Privelet Studio: update this one")

    def _salt(self, connection: sqlite3.Connection) -> bytes:
        return bytes.fromhex(connection.execute("SELECT value FROM meta WHERE key = 'salt'").fetchone()[0])

    # -- fingerprints ------------------------------------------------------------------------
    def fingerprint_file(self, path: str | os.PathLike[str]) -> str:
        """The salted fingerprint of a table file's bytes (see the module docstring)."""
        return self.fingerprint_files([path])

    def fingerprint_files(self, paths: Sequence[str | os.PathLike[str]]) -> str:
        """The salted fingerprint of a table split in several files (a dataset, in order): of
        their bytes, each file's preceded by its length when there are several (one file:
        the same as :meth:`fingerprint_file`)."""
        with self._connect() as connection:
            salt = self._salt(connection)
        digest = hmac.new(salt, digestmod=hashlib.sha256)
        for path in paths:
            try:
                if len(paths) > 1:
                    digest.update(os.path.getsize(path).to_bytes(8, "big"))
                with open(path, "rb") as handle:
                    while chunk := handle.read(_CHUNK):
                        digest.update(chunk)
            except OSError as exc:
                raise PriveletError(f"cannot read {path} to find what it has spent: {exc.strerror or exc}") from None
        return digest.hexdigest()

    # -- reading -----------------------------------------------------------------------------
    def entries(self) -> list[LedgerEntry]:
        """Every release, oldest first."""
        with self._connect() as connection:
            rows = connection.execute(
                "SELECT id, created, fingerprint, epsilon, neighbours, sa, mechanism, sampler, seeded, output "
                "FROM releases ORDER BY id"
            ).fetchall()
        return [
            LedgerEntry(
                id=row[0], created=row[1], fingerprint=row[2], epsilon=row[3], neighbours=row[4],
                sa=tuple(json.loads(row[5])), mechanism=row[6], sampler=row[7], seeded=bool(row[8]), output=row[9],
            )
            for row in rows
        ]

    def spent(self, fingerprint: str) -> Spending:
        """What the table with this fingerprint has spent so far."""
        with self._connect() as connection:
            rows = connection.execute(
                "SELECT neighbours, seeded, SUM(epsilon), COUNT(*) FROM releases WHERE fingerprint = ? "
                "GROUP BY neighbours, seeded",
                (fingerprint,),
            ).fetchall()
        return _spending(fingerprint, rows)

    def totals(self) -> list[Spending]:
        """What every table in the ledger has spent, in the order of their first release."""
        with self._connect() as connection:
            rows = connection.execute(
                "SELECT fingerprint, neighbours, seeded, SUM(epsilon), COUNT(*), MIN(id) FROM releases "
                "GROUP BY fingerprint, neighbours, seeded ORDER BY MIN(id)"
            ).fetchall()
        order: dict[str, list[tuple[str, int, float, int]]] = {}
        for fingerprint, neighbours, seeded, total, count, _ in rows:
            order.setdefault(fingerprint, []).append((neighbours, seeded, total, count))
        return [_spending(fingerprint, groups) for fingerprint, groups in order.items()]

    # -- writing -----------------------------------------------------------------------------
    def record(self, fingerprint: str, release: Release, *, output: str | os.PathLike[str] | None = None) -> int:
        """Record that ``release`` was made from the table with ``fingerprint``; returns its row id."""
        created = datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")
        with self._connect() as connection:
            cursor = connection.execute(
                "INSERT INTO releases (created, fingerprint, epsilon, neighbours, sa, mechanism, sampler, seeded, output)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    created, fingerprint, float(release.epsilon), release.neighbours, json.dumps(list(release.sa)),
                    release.mechanism, release.sampler, int(release.seeded), None if output is None else str(output),
                ),
            )
            return int(cursor.lastrowid or 0)

    def set_output(self, entry: int, output: str | os.PathLike[str]) -> None:
        """Note where a recorded release was written (the app records it before it is saved)."""
        with self._connect() as connection:
            connection.execute("UPDATE releases SET output = ? WHERE id = ?", (str(output), entry))


def _spending(fingerprint: str, groups: list[tuple[str, int, float, int]]) -> Spending:
    epsilon: dict[str, float] = {}
    releases = seeded = 0
    for neighbours, is_seeded, total, count in groups:
        if is_seeded:
            seeded += count
        else:
            epsilon[neighbours] = epsilon.get(neighbours, 0.0) + total
            releases += count
    return Spending(fingerprint=fingerprint, epsilon=epsilon, releases=releases, seeded=seeded)
