"""The privacy-budget ledger: every release made on this machine, and the epsilon each table has spent.

Releasing the same table again spends more of its privacy budget: under sequential
composition the epsilons of all releases of a table add up. The ledger keeps one row
per release in a local SQLite database: the time (UTC), how the input table is known
(below), epsilon, the neighbouring notion, S_A, the mechanism, the sampler, whether the
noise was seeded, and the release file written. It holds no count, no number of rows
and no file name of the table.

**How a table is known.** By its rows, not its bytes: the fingerprint of the multiset of
its parsed rows (:mod:`~privelet_gui.io.row_fingerprint`, computed while the table is
counted), which another row order, line ends, quoting or file format do not change. The
fingerprint of the file's bytes (HMAC-SHA-256) is kept beside it as a hint: it knows the
table before it is counted (the app's line before a release) and a release of other
columns of the same file. And the custodian may name a dataset (``--dataset``), and link
files to it (``privelet ledger link``): a label of their own, stored only when given.
Releases that share any of these (a fingerprint of rows, of a file, or a dataset) are of
one table, and so are, in turn, the releases that share one with those. Both fingerprints
are keyed with a random 256-bit salt made when the ledger is created and kept only in it:
off this machine they mean nothing, and without the ledger nobody can check whether a
given table was ever released here.

**Where**: ``ledger.sqlite3`` in the user's data folder (platformdirs: for example
``~/.local/share/privelet-studio`` on Linux, ``~/Library/Application Support`` on
macOS, ``%LOCALAPPDATA%`` on Windows), or the file named by the environment variable
``PRIVELET_LEDGER`` (the tests and ``--screenshots`` use a temporary one). The file
is readable by its owner only where the platform allows it.

**Composition** is one rule, :func:`add_release`, used for every total: the question
before a release, what it has spent afterwards, ``privelet ledger`` and the app's ledger
view. Totals are kept per neighbouring notion (an add/remove epsilon and a replace epsilon
measure different things); seeded releases are counted apart: they are not private at all,
so they must never be published, whatever epsilon they name.

**A release is recorded before its noise is drawn** (:func:`spend_budget`): the question
is answered on what the ledger holds, and in one transaction the ledger checks that
nothing was recorded for the table since (another release at the same time: then it asks
again) and records the release. If the noise is never drawn (an error, a cancel) the entry
is removed; if the process is killed, it stays: the ledger may count a release nobody saw,
never miss one that was written.

**Damage is never a fresh start.** A new ledger is written whole and then put in place, so
a ledger file that is short, truncated, missing a table, with another salt than its
releases were recorded with, or with values that are not what was recorded, is refused with
a one-line message naming the file and how to restore it, instead of "spent nothing yet".
Each release carries an HMAC of what it records, keyed with the salt. A ledger another
program holds is reported as locked; one that cannot be written, as read-only.

No Qt here: the command line and the desktop app both use it.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import hmac
import json
import math
import os
import secrets
import sqlite3
import tempfile
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol

from ..engine import NEIGHBOURS, Cancelled, InternalError, PriveletError, Release, ReleaseSpec
from ._user_data import user_data_location
from .row_fingerprint import RowFingerprint

__all__ = [
    "COMPOSITION_TEXT",
    "LEDGER_ENVIRONMENT",
    "LOCK_TIMEOUT",
    "RELEASE_COLUMNS",
    "SHORT_FINGERPRINT",
    "BudgetCheck",
    "Ledger",
    "LedgerEntry",
    "LedgerError",
    "LedgerReport",
    "PlannedRelease",
    "Reservation",
    "Spending",
    "TableKeys",
    "add_release",
    "check_budget",
    "check_dataset_name",
    "ledger_path",
    "ledger_report",
    "spend_budget",
    "spending_summary",
    "table_keys_text",
]

#: The environment variable naming another ledger file (tests, screenshots).
LEDGER_ENVIRONMENT = "PRIVELET_LEDGER"
_SCHEMA_VERSION = 2
#: The columns of a listing of the ledger's releases (``privelet ledger`` and the app's ledger view).
RELEASE_COLUMNS = ("id", "time (UTC)", "table", "epsilon", "neighbours", "mechanism", "sampler", "seeded", "S_A", "output")
#: How many characters of a fingerprint a listing shows (the table's short name).
SHORT_FINGERPRINT = 12
#: Seconds a ledger waits for another program's hold on it before it says it is locked (a
#: release holds it for the few milliseconds of its question's check and its record).
LOCK_TIMEOUT = 10.0
#: The longest dataset name the ledger takes.
DATASET_NAME_LENGTH = 200
_CHUNK = 1 << 20
_SALT_HEX = 64
_SQLITE_HEADER = 100  # bytes: no SQLite database is shorter

_LINKS_SQL = "CREATE TABLE links (fingerprint TEXT PRIMARY KEY, dataset TEXT NOT NULL, mac TEXT NOT NULL)"
_TABLES_SQL = (
    "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    "CREATE TABLE releases ("
    " id INTEGER PRIMARY KEY AUTOINCREMENT, created TEXT NOT NULL, fingerprint TEXT NOT NULL,"
    " epsilon REAL NOT NULL, neighbours TEXT NOT NULL, sa TEXT NOT NULL, mechanism TEXT NOT NULL,"
    " sampler TEXT NOT NULL, seeded INTEGER NOT NULL, output TEXT, rows TEXT, dataset TEXT, mac TEXT)",
    "CREATE INDEX releases_by_table ON releases (fingerprint)",
    _LINKS_SQL,
)


def ledger_path() -> Path:
    """Where the ledger lives: ``$PRIVELET_LEDGER``, or the user's data folder."""
    return user_data_location(LEDGER_ENVIRONMENT, "ledger.sqlite3")


class LedgerError(PriveletError):
    """The ledger cannot be read or written: damaged, locked, read-only or out of reach."""


def check_dataset_name(name: str) -> str:
    """A dataset's name as the ledger keeps it (stripped), or LedgerError saying what is wrong."""
    text = name.strip()
    if not text or len(text) > DATASET_NAME_LENGTH or any(not c.isprintable() for c in text):
        raise LedgerError(f"a dataset's name is 1 to {DATASET_NAME_LENGTH} printable characters, got {name!r}")
    return text


@dataclass(frozen=True)
class TableKeys:
    """How the ledger knows a table: the fingerprint of its file's bytes, of its parsed rows
    (None where they were not counted here, e.g. on a cluster), and the custodian's dataset."""

    file: str
    rows: str | None = None
    dataset: str | None = None


def table_keys_text(keys: TableKeys) -> str:
    """How the ledger knows a table, for people (one line each)."""
    lines = [f"Fingerprint of its rows: {keys.rows}"] if keys.rows is not None else []
    lines.append(f"Fingerprint of its file: {keys.file}")
    if keys.dataset is not None:
        lines.append(f"Dataset: {keys.dataset}")
    return "\n".join(lines)


class Spends(Protocol):
    """What composition reads of a release: its epsilon, its neighbouring notion, and whether it was seeded."""

    @property
    def epsilon(self) -> float: ...

    @property
    def neighbours(self) -> str: ...

    @property
    def seeded(self) -> bool: ...


@dataclass(frozen=True)
class PlannedRelease:
    """What the ledger records of a release, known before its noise is drawn."""

    epsilon: float
    neighbours: str
    sa: tuple[str, ...]
    mechanism: str
    sampler: str
    seeded: bool = False

    @classmethod
    def of_spec(cls, spec: ReleaseSpec, *, seeded: bool = False) -> PlannedRelease:
        """The release ``spec`` makes; ``seeded`` when it is given a generator (a test release)."""
        return cls(float(spec.epsilon), spec.neighbours, tuple(spec.effective_sa), spec.label, spec.sampler, seeded)

    @classmethod
    def of_release(cls, release: Release) -> PlannedRelease:
        """What a release already made records."""
        return cls(float(release.epsilon), release.neighbours, tuple(release.sa), release.mechanism, release.sampler,
                   bool(release.seeded))


@dataclass(frozen=True)
class LedgerEntry:
    """One release recorded in the ledger."""

    id: int
    created: str  # UTC, ISO 8601
    file_fingerprint: str
    row_fingerprint: str | None
    dataset: str | None
    epsilon: float
    neighbours: str
    sa: tuple[str, ...]
    mechanism: str
    sampler: str
    seeded: bool
    output: str | None

    @property
    def keys(self) -> TableKeys:
        return TableKeys(self.file_fingerprint, self.row_fingerprint, self.dataset)

    def cells(self, table: str) -> tuple[str, ...]:
        """The entry as text, one per :data:`RELEASE_COLUMNS`; ``table`` is its table's name."""
        return (
            str(self.id), self.created, table, f"{self.epsilon:g}", self.neighbours,
            self.mechanism, self.sampler, "yes (not private)" if self.seeded else "no",
            "{" + ", ".join(self.sa) + "}", self.output or "(not written)",
        )

    def to_json(self) -> dict[str, object]:
        return {
            "id": self.id,
            "created": self.created,
            "file_fingerprint": self.file_fingerprint,
            "row_fingerprint": self.row_fingerprint,
            "dataset": self.dataset,
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
    """What one table has spent: epsilon per neighbouring notion (sequential composition).

    ``table`` names it for people (its datasets, or the start of a fingerprint);
    ``entries`` are the ledger's releases of it; ``fingerprints`` and ``datasets`` how it is known.
    """

    table: str
    epsilon: dict[str, float] = dataclasses.field(default_factory=dict)  # neighbours -> total of the unseeded
    releases: int = 0  # unseeded releases
    seeded: int = 0  # seeded (test) releases: not private, counted apart
    entries: tuple[int, ...] = ()
    fingerprints: tuple[str, ...] = ()
    datasets: tuple[str, ...] = ()

    @property
    def any(self) -> bool:
        return bool(self.releases or self.seeded)

    def to_json(self) -> dict[str, object]:
        return {"table": self.table, "epsilon": self.epsilon, "releases": self.releases, "seeded": self.seeded,
                "entries": list(self.entries), "fingerprints": list(self.fingerprints), "datasets": list(self.datasets)}


def add_release(spending: Spending, release: Spends, *, entry: int | None = None) -> Spending:
    """``spending`` with one more release: THE rule of composition, used for every total.

    Sequential composition per neighbouring notion: an unseeded release adds its epsilon to
    its notion's total; a seeded one (not private: never to be published) is counted apart
    and adds no epsilon. ``entry`` is the release's id in the ledger, if it has one.
    """
    entries = (*spending.entries, entry) if entry is not None else spending.entries
    if release.seeded:
        return dataclasses.replace(spending, seeded=spending.seeded + 1, entries=entries)
    totals = dict(spending.epsilon)
    totals[release.neighbours] = totals.get(release.neighbours, 0.0) + float(release.epsilon)
    return dataclasses.replace(spending, epsilon=totals, releases=spending.releases + 1, entries=entries)


def spending_summary(spending: Spending) -> str:
    """How much a table has spent, for people: ``"epsilon 1.5 (replace) in 2 releases"``."""
    if not spending.any:
        return "nothing yet"
    parts = _epsilon_parts(spending.epsilon)
    text = (" and ".join(parts) + f" in {spending.releases} release{'s' * (spending.releases != 1)}") if parts else ""
    if spending.seeded:
        seeded = _seeded_text(spending.seeded)
        text = f"{text}, and {seeded}" if text else seeded
    return text


def _epsilon_parts(totals: dict[str, float]) -> list[str]:
    return [f"epsilon {total:g} ({notion})" for notion, total in sorted(totals.items())]


def _seeded_text(count: int) -> str:
    return f"{count} seeded test release{'s' * (count != 1)} (not private)"


#: Sequential composition, for people: said wherever a table's total is shown.
COMPOSITION_TEXT = (
    "Under sequential composition the epsilons of a table's releases add up (per neighbouring notion: "
    "replace-one and add/remove budgets are kept apart): the total is what an attacker who has every one "
    "of these releases can learn about anyone in the table."
)


@dataclass(frozen=True)
class BudgetCheck:
    """What a table has spent and what one more release of it adds: the question asked before
    its noise is drawn (the command line and the app both ask it).

    Made by :func:`check_budget`. ``spent`` is the table's spending before this release;
    :attr:`must_ask` says whether to ask (a table with no release yet spends without a question).
    """

    ledger: Ledger
    keys: TableKeys
    spent: Spending
    epsilon: float
    neighbours: str
    seeded: bool = False

    @property
    def must_ask(self) -> bool:
        """Whether the table has spent something already (then the custodian is asked first)."""
        return self.spent.any

    def after(self) -> Spending:
        """What the table has spent once this release is made (:func:`add_release`)."""
        return add_release(self.spent, self)

    def spends_text(self) -> str:
        """``"this release spends epsilon 0.5 more (replace)"``."""
        if self.seeded:
            return (f"this release is a seeded test release (epsilon {self.epsilon:g}, {self.neighbours}): not "
                    "private, counted apart")
        return f"this release spends epsilon {self.epsilon:g} more ({self.neighbours})"

    def total_after_text(self) -> str:
        """``"epsilon 1.5 (replace)"``: the table's total once this release is made."""
        after = self.after()
        text = " and ".join(_epsilon_parts(after.epsilon)) or "no epsilon"
        return f"{text}, and {_seeded_text(after.seeded)}" if after.seeded else text

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


def check_budget(ledger: Ledger, keys: TableKeys, epsilon: float, neighbours: str, *, seeded: bool = False) -> BudgetCheck:
    """What the table known by ``keys`` has spent, for a release of ``epsilon`` under ``neighbours``."""
    return BudgetCheck(ledger, keys, ledger.spent(keys), float(epsilon), neighbours, seeded)


@dataclass
class Reservation:
    """A release recorded in the ledger before its noise is drawn (:func:`spend_budget`)."""

    check: BudgetCheck  # the question the release was made under (what was spent before it)
    entry: int  # its id in the ledger
    drawn: bool = False

    def mark_drawn(self) -> None:
        """The noise is drawn: from now on the entry stays, whatever fails."""
        self.drawn = True

    @property
    def spent_after(self) -> Spending:
        """What the table has spent with this release."""
        return add_release(self.check.spent, self.check, entry=self.entry)


@contextmanager
def spend_budget(
    ledger: Ledger,
    keys: TableKeys,
    release: PlannedRelease,
    ask: Callable[[BudgetCheck], bool],
    *,
    output: str | os.PathLike[str] | None = None,
) -> Iterator[Reservation]:
    """The rule before a release's noise is drawn (``privelet release`` and the app).

    Looks up what the table has spent and, if anything, ``ask(check)`` whether to spend more
    (no: Cancelled). Then, in one transaction, checks that no release of the table was
    recorded since the question (one made at the same time elsewhere: then asks again, with
    it counted) and records this one. Draw the noise inside the ``with`` block and call
    :meth:`Reservation.mark_drawn`; an error or a cancel before that removes the entry
    (nobody saw any noise), while one after it keeps it.

    Call it once the table is counted (counting spends nothing; drawing the noise does), so
    that a table that cannot be read is reported by its reader.
    """
    while True:
        check = check_budget(ledger, keys, release.epsilon, release.neighbours, seeded=release.seeded)
        if check.must_ask and not ask(check):
            raise Cancelled("nothing released: the table's privacy budget was not spent")
        entry = ledger.record_unless_spent_since(check, release, output=output)
        if entry is not None:
            break
    reservation = Reservation(check, entry)
    try:
        yield reservation
    except BaseException:
        if not reservation.drawn:
            with contextlib.suppress(PriveletError):  # then it stays: counted, never drawn (the safe side)
                ledger.forget(entry)
        raise


@dataclass(frozen=True)
class LedgerReport:
    """Everything the ledger holds, for ``privelet ledger`` and the app's ledger view."""

    path: Path
    releases: list[LedgerEntry]
    tables: list[Spending]  # per table, in the order of their first release
    links: dict[str, str]  # file fingerprint -> dataset, as the custodian linked them

    def table_of(self, entry: LedgerEntry) -> Spending:
        """The table ``entry`` is a release of."""
        return next(table for table in self.tables if entry.id in table.entries)

    def table_for(self, keys: TableKeys) -> Spending | None:
        """The table known by ``keys`` (None: no release of it yet)."""
        datasets = {keys.dataset, self.links.get(keys.file)} - {None}
        return next((table for table in self.tables
                     if keys.file in table.fingerprints or keys.rows in table.fingerprints
                     or datasets & set(table.datasets)), None)

    def rows(self) -> list[tuple[str, ...]]:
        """Each release as the text of :data:`RELEASE_COLUMNS` (its table by its name)."""
        return [entry.cells(self.table_of(entry).table) for entry in self.releases]

    def to_json(self) -> dict[str, object]:
        return {
            "ledger": str(self.path),
            "releases": [{**entry.to_json(), "table": self.table_of(entry).table} for entry in self.releases],
            "tables": [spending.to_json() for spending in self.tables],
            "links": [{"file_fingerprint": file, "dataset": dataset} for file, dataset in sorted(self.links.items())],
        }


def ledger_report(ledger: Ledger | None = None) -> LedgerReport:
    """Every release in ``ledger`` (default: :func:`ledger_path`'s) and what each table spent."""
    return (ledger if ledger is not None else Ledger()).report()


class Ledger:
    """The ledger database at ``path`` (default :func:`ledger_path`), created on first use.

    ``timeout``: how many seconds to wait for another program's hold on the ledger before
    it is reported as locked (default :data:`LOCK_TIMEOUT`).

    Examples
    --------
    >>> import tempfile
    >>> folder = Path(tempfile.mkdtemp())
    >>> table = folder / "t.csv"
    >>> _ = table.write_text("age\\n1\\n2\\n")
    >>> ledger = Ledger(folder / "ledger.sqlite3")
    >>> keys = ledger.table_keys([table])
    >>> _ = ledger.record(keys, PlannedRelease(0.5, "replace", (), "privelet", "exact"), output="r.npz")
    >>> spending_summary(ledger.spent(keys))
    'epsilon 0.5 (replace) in 1 release'
    """

    def __init__(self, path: str | os.PathLike[str] | None = None, *, timeout: float | None = None):
        self.path = Path(path) if path is not None else ledger_path()
        self.timeout = timeout if timeout is not None else LOCK_TIMEOUT

    # -- the database -------------------------------------------------------------------------
    @contextmanager
    def _transaction(self, write: bool = False) -> Iterator[_Open]:
        """The checked ledger in a transaction (``write``: one that holds other writers off
        until it ends, so that what it read stays true while it writes)."""
        if not self.path.exists():
            self._create()
        try:
            connection = sqlite3.connect(self.path, timeout=self.timeout, isolation_level=None)
        except (OSError, sqlite3.Error) as exc:
            raise self._problem(exc) from None
        try:
            try:
                connection.execute("BEGIN IMMEDIATE" if write else "BEGIN")
                opened = self._check(connection)
                if opened.version < _SCHEMA_VERSION:
                    connection.execute("ROLLBACK")
                    self._upgrade(connection)
                    connection.execute("BEGIN IMMEDIATE" if write else "BEGIN")
                    opened = self._check(connection)
                yield opened
                connection.execute("COMMIT")
            except BaseException:
                if connection.in_transaction:
                    with contextlib.suppress(sqlite3.Error):
                        connection.execute("ROLLBACK")
                raise
        except sqlite3.Error as exc:
            raise self._problem(exc) from None
        finally:
            connection.close()

    def _create(self) -> None:
        """A new ledger, written whole in a temporary file and then put in place (so that a
        ledger file that is not whole is always damage, never a ledger being made)."""
        folder = self.path.parent
        try:
            folder.mkdir(parents=True, exist_ok=True)
            handle, name = tempfile.mkstemp(prefix=f".{self.path.name}.", suffix=".new", dir=folder)  # owner only
            os.close(handle)
        except OSError as exc:
            raise self._cannot_open(exc) from None
        temporary = Path(name)
        try:
            connection = sqlite3.connect(temporary, isolation_level=None)
            try:
                connection.execute("BEGIN")
                for statement in _TABLES_SQL:
                    connection.execute(statement)
                connection.execute("INSERT INTO meta VALUES ('version', ?)", (str(_SCHEMA_VERSION),))
                connection.execute("INSERT INTO meta VALUES ('salt', ?)", (secrets.token_hex(_SALT_HEX // 2),))
                connection.execute("COMMIT")
            finally:
                connection.close()
            try:
                os.link(temporary, self.path)  # never over a ledger made meanwhile
            except FileExistsError:
                pass  # another release made it first: that one is the ledger
            except OSError:  # a file system without hard links
                if not self.path.exists():
                    os.replace(temporary, self.path)
        except (OSError, sqlite3.Error) as exc:
            raise self._cannot_open(exc) from None
        finally:
            with contextlib.suppress(OSError):
                temporary.unlink()

    def _check(self, connection: sqlite3.Connection) -> _Open:
        """The ledger, once its file is whole, its tables are there and every release and link
        in them is what was recorded (in a transaction: a hot journal left by a killed write is
        rolled back first)."""
        tables = {row[0] for row in connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        page_size = connection.execute("PRAGMA page_size").fetchone()[0]
        pages = connection.execute("PRAGMA page_count").fetchone()[0]
        journal = connection.execute("PRAGMA journal_mode").fetchone()[0]
        size = self.path.stat().st_size
        if size < _SQLITE_HEADER:
            raise self._damaged(f"it is {size} bytes long: an empty file, not a ledger")
        if journal != "wal" and size != page_size * pages:
            raise self._damaged(f"it is {size:,} bytes long where its {pages:,} pages fill {page_size * pages:,}: "
                                "it was cut short or written over")
        problems = connection.execute("PRAGMA quick_check").fetchall()
        if problems != [("ok",)]:
            raise self._damaged(f"SQLite finds it damaged: {problems[0][0]}")
        for table in ("meta", "releases"):
            if table not in tables:
                raise self._damaged(f"its '{table}' table is gone")
        meta = dict(connection.execute("SELECT key, value FROM meta").fetchall())
        version_text = meta.get("version")
        try:
            version = int(str(version_text))
        except ValueError:
            raise self._damaged(f"its version is {version_text!r}, not a number") from None
        if version > _SCHEMA_VERSION:
            raise LedgerError(f"the privacy ledger {self.path} was written by a newer Privelet Studio: update this one")
        if version < 1:
            raise self._damaged(f"its version is {version}")
        if version >= 2 and "links" not in tables:
            raise self._damaged("its 'links' table is gone")
        salt = meta.get("salt")
        if not isinstance(salt, str) or len(salt) != _SALT_HEX or any(c not in "0123456789abcdef" for c in salt):
            raise self._damaged("its salt is missing or is not a salt")
        return _Open.read(self, connection, version, bytes.fromhex(salt))

    def _upgrade(self, connection: sqlite3.Connection) -> None:
        """A version 1 ledger (fingerprints of files only) made version 2: rows, datasets, links, HMACs."""
        connection.execute("BEGIN IMMEDIATE")
        try:
            opened = self._check(connection)
            if opened.version == 1:
                for column in ("rows", "dataset", "mac"):
                    connection.execute(f"ALTER TABLE releases ADD COLUMN {column} TEXT")
                connection.execute(_LINKS_SQL)
                for entry in opened.entries:
                    connection.execute("UPDATE releases SET mac = ? WHERE id = ?", (opened.seal(entry), entry.id))
                connection.execute("UPDATE meta SET value = ? WHERE key = 'version'", (str(_SCHEMA_VERSION),))
            connection.execute("COMMIT")
        except BaseException:
            if connection.in_transaction:
                connection.execute("ROLLBACK")
            raise

    def _damaged(self, what: str) -> LedgerError:
        return LedgerError(
            f"the privacy ledger {self.path} is damaged ({what}), so what its tables have spent is not known and "
            f"no release is recorded. Restore {self.path.name} from a backup of {self.path.parent}; if you have none, "
            "move it away to start an empty ledger (the epsilon spent so far is then no longer counted)"
        )

    def _cannot_open(self, exc: BaseException) -> LedgerError:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        return LedgerError(
            f"cannot open the privacy ledger {self.path} ({reason}); make its folder writable or point "
            f"{LEDGER_ENVIRONMENT} at another file"
        )

    def _problem(self, exc: sqlite3.Error | OSError) -> LedgerError:
        """What an SQLite error means for the custodian."""
        text = str(exc).lower()
        if "locked" in text or "busy" in text:
            return LedgerError(
                f"the privacy ledger {self.path} is locked by another program (a release being recorded, or a "
                f"program that has it open) for more than {self.timeout:g} s; try again once it has finished"
            )
        unwritable = not os.access(self.path, os.W_OK) or not os.access(self.path.parent, os.W_OK)
        if "readonly" in text or "read-only" in text or ("unable to open" in text and unwritable):
            writable = "the file" if not os.access(self.path, os.W_OK) else "its folder"
            return LedgerError(
                f"the privacy ledger {self.path} is read-only ({writable} cannot be written), so no release can be "
                f"recorded; make {self.path.name} and {self.path.parent} writable"
            )
        if isinstance(exc, sqlite3.OperationalError) and "unable to open" in text:
            return self._cannot_open(exc)
        return self._damaged(f"SQLite: {exc}")

    # -- fingerprints ------------------------------------------------------------------------
    def fingerprint_file(self, path: str | os.PathLike[str]) -> str:
        """The salted fingerprint of a table file's bytes."""
        return self.fingerprint_files([path])

    def fingerprint_files(self, paths: Sequence[str | os.PathLike[str]]) -> str:
        """The salted fingerprint of a table split in several files (a dataset, in order): of
        their bytes, each file's preceded by its length when there are several (one file:
        the same as :meth:`fingerprint_file`)."""
        with self._transaction() as opened:
            salt = opened.salt
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

    def row_fingerprint(self) -> RowFingerprint:
        """An empty fingerprint of a table's rows, keyed with this ledger's salt: give it to
        :func:`~privelet_gui.io.count_table`, which fills it as it counts.

        A release's first look at the ledger: one that is damaged, locked or cannot be
        written is refused here, before the table is counted."""
        with self._transaction(write=True) as opened:
            # SQLite finds a file it cannot write only when it writes: a write that changes nothing
            opened.connection.execute("UPDATE meta SET value = value WHERE key = 'version'")
            return RowFingerprint(hmac.new(opened.salt, b"rows", hashlib.sha256).digest())

    def table_keys(
        self,
        files: Sequence[str | os.PathLike[str]],
        *,
        rows: RowFingerprint | None = None,
        dataset: str | None = None,
    ) -> TableKeys:
        """How this ledger knows the table in ``files``, whose rows ``rows`` fingerprinted (if
        counted here), in the custodian's ``dataset`` (if named)."""
        return TableKeys(
            self.fingerprint_files(files),
            rows.hexdigest() if rows is not None else None,
            check_dataset_name(dataset) if dataset is not None else None,
        )

    # -- reading -----------------------------------------------------------------------------
    def entries(self) -> list[LedgerEntry]:
        """Every release, oldest first."""
        with self._transaction() as opened:
            return opened.entries

    def spent(self, keys: TableKeys) -> Spending:
        """What the table known by ``keys`` has spent so far."""
        with self._transaction() as opened:
            return opened.spent(keys)

    def tables(self) -> list[Spending]:
        """What every table in the ledger has spent, in the order of their first release."""
        return self.report().tables

    def report(self) -> LedgerReport:
        """Every release and what each table spent (:class:`LedgerReport`)."""
        with self._transaction() as opened:
            entries, links = opened.entries, opened.links
        tables = _Tables(entries, links)
        return LedgerReport(self.path, entries, [tables.spending(group) for group in tables.groups()], links)

    # -- writing -----------------------------------------------------------------------------
    def record(
        self, keys: TableKeys, release: PlannedRelease | Release, *, output: str | os.PathLike[str] | None = None
    ) -> int:
        """Record that ``release`` was made from the table known by ``keys``; returns its entry id."""
        planned = release if isinstance(release, PlannedRelease) else PlannedRelease.of_release(release)
        with self._transaction(write=True) as opened:
            return opened.insert(keys, planned, output)

    def record_unless_spent_since(
        self, check: BudgetCheck, release: PlannedRelease, *, output: str | os.PathLike[str] | None = None
    ) -> int | None:
        """Record ``release`` if the table has spent nothing since ``check`` was made (in one
        transaction); returns its entry id, or None when another release of it came between."""
        with self._transaction(write=True) as opened:
            if opened.spent(check.keys).entries != check.spent.entries:
                return None
            return opened.insert(check.keys, release, output)

    def forget(self, entry: int) -> None:
        """Remove the entry of a release whose noise was never drawn (see :func:`spend_budget`)."""
        with self._transaction(write=True) as opened:
            opened.connection.execute("DELETE FROM releases WHERE id = ?", (entry,))

    def set_output(self, entry: int, output: str | os.PathLike[str]) -> None:
        """Note where a recorded release was written (the app records it before it is saved)."""
        with self._transaction(write=True) as opened:
            opened.connection.execute("UPDATE releases SET output = ? WHERE id = ?", (str(output), entry))

    def link(self, files: Sequence[str | os.PathLike[str]], dataset: str) -> TableKeys:
        """Link the table file(s) ``files`` to the custodian's ``dataset``: their releases and
        the dataset's are then one table. Returns the keys of the file(s)."""
        keys = self.table_keys(files, dataset=dataset)
        if keys.dataset is None:
            raise InternalError("a link to a dataset without a dataset's name")
        with self._transaction(write=True) as opened:
            opened.connection.execute(
                "INSERT OR REPLACE INTO links (fingerprint, dataset, mac) VALUES (?, ?, ?)",
                (keys.file, keys.dataset, opened.mac(["link", keys.file, keys.dataset])),
            )
        return keys


@dataclass(frozen=True)
class _Open:
    """A checked ledger in a transaction: its connection, version, salt, releases and links."""

    ledger: Ledger
    connection: sqlite3.Connection
    version: int
    salt: bytes
    entries: list[LedgerEntry]
    links: dict[str, str]  # file fingerprint -> dataset

    @classmethod
    def read(cls, ledger: Ledger, connection: sqlite3.Connection, version: int, salt: bytes) -> _Open:
        """The ledger's releases and links, each checked (once upgraded: against its HMAC too)."""
        opened = cls(ledger, connection, version, salt, [], {})
        columns = "id, created, fingerprint, epsilon, typeof(epsilon), neighbours, sa, mechanism, sampler, seeded, output"
        if version >= 2:
            columns += ", rows, dataset, mac"
        rows = connection.execute(f"SELECT {columns} FROM releases ORDER BY id").fetchall()
        opened.entries.extend(opened._entry(row) for row in rows)
        if version >= 2:
            for file, dataset, mac in connection.execute("SELECT fingerprint, dataset, mac FROM links"):
                if not (isinstance(file, str) and isinstance(dataset, str) and isinstance(mac, str)
                        and hmac.compare_digest(mac, opened.mac(["link", file, dataset]))):
                    raise ledger._damaged(f"the link of a file to the dataset {dataset!r} does not match the ledger's salt")
                opened.links[file] = dataset
        return opened

    def mac(self, fields: list[object]) -> str:
        return hmac.new(self.salt, json.dumps(fields, separators=(",", ":")).encode(), hashlib.sha256).hexdigest()

    def seal(self, entry: LedgerEntry | tuple[str, TableKeys, PlannedRelease]) -> str:
        """The HMAC of what a release records (all but its output, noted later)."""
        planned: LedgerEntry | PlannedRelease
        if isinstance(entry, LedgerEntry):
            created, keys, planned = entry.created, entry.keys, entry
        else:
            created, keys, planned = entry
        return self.mac([
            "release", created, keys.file, keys.rows, keys.dataset, float(planned.epsilon).hex(), planned.neighbours,
            list(planned.sa), planned.mechanism, planned.sampler, bool(planned.seeded),
        ])

    def _entry(self, row: tuple[Any, ...]) -> LedgerEntry:
        number, created, file, epsilon, kind, neighbours, sa, mechanism, sampler, seeded, output = row[:11]
        rows, dataset, mac = row[11:] if len(row) > 11 else (None, None, None)

        def bad(what: str) -> LedgerError:
            return self.ledger._damaged(f"release {number}: {what}")

        if kind not in ("real", "integer") or not math.isfinite(epsilon) or epsilon <= 0:
            raise bad(f"its epsilon is {epsilon!r}, not a positive number")
        if neighbours not in NEIGHBOURS:
            raise bad(f"its neighbouring notion is {neighbours!r}")
        if seeded not in (0, 1) or isinstance(seeded, float):
            raise bad(f"its seeded flag is {seeded!r}")
        try:
            parsed_sa = json.loads(sa) if isinstance(sa, str) else None
        except ValueError:
            parsed_sa = None
        if not isinstance(parsed_sa, list) or not all(isinstance(name, str) for name in parsed_sa):
            raise bad(f"its S_A is {sa!r}")
        texts = {"time": created, "table fingerprint": file, "mechanism": mechanism, "sampler": sampler}
        for what, value in texts.items():
            if not isinstance(value, str) or not value:
                raise bad(f"its {what} is {value!r}")
        for what, value in {"row fingerprint": rows, "dataset": dataset, "output": output}.items():
            if value is not None and not isinstance(value, str):
                raise bad(f"its {what} is {value!r}")
        entry = LedgerEntry(
            id=number, created=created, file_fingerprint=file, row_fingerprint=rows, dataset=dataset,
            epsilon=float(epsilon), neighbours=neighbours, sa=tuple(parsed_sa), mechanism=mechanism, sampler=sampler,
            seeded=bool(seeded), output=output,
        )
        if self.version >= 2 and not (isinstance(mac, str) and hmac.compare_digest(mac, self.seal(entry))):
            raise bad("what it records does not match the ledger's salt (the salt was replaced, or the release edited)")
        return entry

    def spent(self, keys: TableKeys) -> Spending:
        tables = _Tables(self.entries, self.links)
        return tables.spending(tables.group_of(keys), keys)

    def insert(self, keys: TableKeys, release: PlannedRelease, output: str | os.PathLike[str] | None) -> int:
        created = datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")
        cursor = self.connection.execute(
            "INSERT INTO releases (created, fingerprint, rows, dataset, epsilon, neighbours, sa, mechanism, sampler,"
            " seeded, output, mac) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                created, keys.file, keys.rows, keys.dataset, float(release.epsilon), release.neighbours,
                json.dumps(list(release.sa)), release.mechanism, release.sampler, int(release.seeded),
                None if output is None else str(output), self.seal((created, keys, release)),
            ),
        )
        return int(cursor.lastrowid or 0)


class _Tables:
    """Which releases are of one table: those that share a fingerprint (of rows or of a
    file) or a dataset, a file linked to a dataset counting as that dataset; and, in turn,
    those that share one with them."""

    def __init__(self, entries: list[LedgerEntry], links: dict[str, str]):
        self._entries = entries
        self._links = links
        self._parent: dict[str, str] = {}
        for entry in entries:
            self._join(self._names(entry.keys))

    def _names(self, keys: TableKeys) -> list[str]:
        names = [f"file {keys.file}"]
        if keys.rows is not None:
            names.append(f"rows {keys.rows}")
        for dataset in (keys.dataset, self._links.get(keys.file)):
            if dataset is not None:
                names.append(f"dataset {dataset}")
        return names

    def _root(self, name: str) -> str:
        parent = self._parent
        parent.setdefault(name, name)
        while parent[name] != name:
            parent[name] = parent[parent[name]]  # path halving
            name = parent[name]
        return name

    def _join(self, names: list[str]) -> str:
        root = self._root(names[0])
        for name in names[1:]:
            other = self._root(name)
            if other != root:
                self._parent[other] = root
        return root

    def group_of(self, keys: TableKeys) -> list[LedgerEntry]:
        """The releases of the table known by ``keys`` (which may join tables known apart so far)."""
        root = self._join(self._names(keys))
        return [entry for entry in self._entries if self._root(f"file {entry.file_fingerprint}") == root]

    def groups(self) -> list[list[LedgerEntry]]:
        """The releases of each table, tables in the order of their first release."""
        groups: dict[str, list[LedgerEntry]] = {}
        for entry in self._entries:
            groups.setdefault(self._root(f"file {entry.file_fingerprint}"), []).append(entry)
        return list(groups.values())

    def spending(self, group: list[LedgerEntry], keys: TableKeys | None = None) -> Spending:
        """What the releases ``group`` (of one table, known also by ``keys``) have spent."""
        known = [entry.keys for entry in group] + ([keys] if keys is not None else [])
        fingerprints = _unique(name for k in known for name in (k.rows, k.file) if name is not None)
        datasets = sorted({name for k in known for name in (k.dataset, self._links.get(k.file)) if name is not None})
        spending = Spending(
            ", ".join(datasets) or fingerprints[0][:SHORT_FINGERPRINT], fingerprints=tuple(fingerprints),
            datasets=tuple(datasets),
        )
        for entry in group:
            spending = add_release(spending, entry, entry=entry.id)
        return spending


def _unique(names: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(names))
