"""Test-wide settings: headless Qt, deterministic property tests, shared data location, and
the app's settings kept away from the user's."""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

# The app's settings (recent files, window geometry, last folders) go to a folder of this test
# run, for this process and every app or command it starts (privelet_gui.gui.settings reads
# this variable); tests/gui/conftest.py gives each test a fresh folder of its own.
_SETTINGS = tempfile.mkdtemp(prefix="privelet-test-settings-")
os.environ["PRIVELET_STUDIO_SETTINGS"] = _SETTINGS
atexit.register(shutil.rmtree, _SETTINGS, True)

# The privacy ledger: never the user's. The whole session (subprocesses too) points at a
# temporary file, and each test gets a fresh one of its own (see ``private_ledger``); the
# user's own ledger (where it is before this run points elsewhere) must be left as it was
# (``users_ledger_untouched``), and so must the release signing key beside it.
from privelet_gui.io.ledger import ledger_path  # noqa: E402  (after QT_QPA_PLATFORM, before PRIVELET_LEDGER)
from privelet_gui.io.signing import signing_key_path  # noqa: E402

USERS_LEDGER = ledger_path()
USERS_SIGNING_KEY = signing_key_path()
_SESSION_LEDGER = Path(tempfile.mkdtemp(prefix="privelet-test-ledger-")) / "ledger.sqlite3"
os.environ["PRIVELET_LEDGER"] = str(_SESSION_LEDGER)

# The log of unexpected errors (privelet_gui.error_log): never the user's either; the tests that
# read it point PRIVELET_ERROR_LOG at a file of their own.
_ERROR_LOG = Path(tempfile.mkdtemp(prefix="privelet-test-errors-"))
os.environ["PRIVELET_ERROR_LOG"] = str(_ERROR_LOG / "errors.log")
atexit.register(shutil.rmtree, _ERROR_LOG, True)

# Copies of unsaved work (privelet_gui.io.recovery): never in the user's recovery folder
# (``users_recovery_folder_untouched``); the app's tests get a fresh folder each (tests/gui/conftest.py).
from privelet_gui.io.recovery import recovery_folder  # noqa: E402  (before PRIVELET_RECOVERY)

USERS_RECOVERY = recovery_folder()
_RECOVERY = tempfile.mkdtemp(prefix="privelet-test-recovery-")
os.environ["PRIVELET_RECOVERY"] = _RECOVERY
atexit.register(shutil.rmtree, _RECOVERY, True)

# Property tests draw their examples from a fixed seed so that CI runs are reproducible.
settings.register_profile(
    "project", derandomize=True, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile("project")

#: Real third-party data shared beside the checkout (CI has it; a fresh clone does not).
#: ``PRIVELET_SHARED_DATA`` points elsewhere (a git worktree that is not beside it).
SHARED_DATA = Path(os.environ.get("PRIVELET_SHARED_DATA") or Path(__file__).resolve().parents[1].parent / "shared" / "data")


def _state(path: Path) -> tuple[int, int] | None:
    """A file's size and modification time (None: there is no such file)."""
    try:
        info = path.stat()
    except OSError:
        return None
    return info.st_size, info.st_mtime_ns


@pytest.fixture(scope="session", autouse=True)
def users_ledger_untouched() -> object:
    """Fail the run if the user's own ledger or signing key was created or changed while the tests ran."""
    before = {path: _state(path) for path in (USERS_LEDGER, USERS_SIGNING_KEY)}
    yield
    for path, state in before.items():
        if _state(path) != state:
            pytest.fail(
                f"the user's {path.name} {path} was {'created' if state is None else 'changed'} by the test run "
                "(every test must use a temporary ledger and key: PRIVELET_LEDGER)", pytrace=False
            )


def _folder_state(folder: Path) -> dict[str, tuple[int, int] | None] | None:
    """Each file of a folder and its state (None: there is no such folder)."""
    if not folder.is_dir():
        return None
    return {entry.name: _state(folder / entry.name) for entry in os.scandir(folder)}


@pytest.fixture(scope="session", autouse=True)
def users_recovery_folder_untouched() -> object:
    """Fail the run if the user's own recovery folder was created or changed while the tests ran."""
    before = _folder_state(USERS_RECOVERY)
    yield
    if _folder_state(USERS_RECOVERY) != before:
        pytest.fail(
            f"the user's recovery folder {USERS_RECOVERY} was changed by the test run (every test must use "
            "a temporary one: PRIVELET_RECOVERY)", pytrace=False
        )


@pytest.fixture(autouse=True)
def private_ledger(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh, empty privacy ledger for every test (``PRIVELET_LEDGER``)."""
    path = tmp_path_factory.mktemp("ledger") / "ledger.sqlite3"
    monkeypatch.setenv("PRIVELET_LEDGER", str(path))
    return path


@pytest.fixture
def shared_data() -> Path:
    """``../shared/data``, or skip the test (saying why) when it is absent."""
    if not SHARED_DATA.is_dir():
        pytest.skip(f"needs the shared datasets at {SHARED_DATA}, which a fresh clone does not have")
    return SHARED_DATA
