"""The log of unexpected errors: where it is, what a record holds, and that it never holds data."""

from __future__ import annotations

import sys
import threading
from pathlib import Path

import pytest

from privelet_gui import __version__
from privelet_gui.engine import Cancelled, PriveletError
from privelet_gui.error_log import (
    ERROR_LOG_ENVIRONMENT,
    MAX_BYTES,
    describe_error,
    error_log_path,
    is_unexpected,
    log_unexpected_error,
)

#: A value no code contains: a cell of the user's table, as far as the log is concerned.
PLANTED = "ZQX-planted-cell-7731"


def _fail_with_data(cell: str) -> None:
    table = {"cell": cell}  # a local variable holding the data
    try:
        int(table["cell"])
    except ValueError as exc:
        raise RuntimeError(f"could not convert {cell!r} in {table}") from exc


def _raised() -> RuntimeError:
    try:
        _fail_with_data(PLANTED)
    except RuntimeError as exc:
        return exc
    raise AssertionError("_fail_with_data did not raise")


def test_the_log_is_in_the_state_folder_unless_the_environment_names_one(monkeypatch, tmp_path):
    monkeypatch.setenv(ERROR_LOG_ENVIRONMENT, str(tmp_path / "chosen.log"))
    assert error_log_path() == tmp_path / "chosen.log"
    monkeypatch.delenv(ERROR_LOG_ENVIRONMENT)
    if sys.platform.startswith("linux"):
        monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
        assert error_log_path() == tmp_path / "state" / "privelet-studio" / "errors.log"
    else:
        assert error_log_path().name == "errors.log" and "privelet-studio" in str(error_log_path())


def test_a_record_holds_the_type_code_locations_and_versions_but_no_value():
    record = describe_error(_raised(), where="a test")
    assert record.startswith("--- ") and "unexpected error in a test" in record
    assert f"Privelet Studio {__version__}" in record and "Python 3." in record
    lines = record.splitlines()
    # the chain, outermost first, each with the functions it went through and their code lines
    assert lines.index("RuntimeError") < lines.index("caused by:") < lines.index("ValueError")
    assert any(line.startswith("  test_error_log.py:") and line.endswith("in _fail_with_data") for line in lines)
    # tests/ is not installed code: its lines of source are not shown, only where it is
    assert not any("int(table" in line for line in lines)
    # the message, the local variables and the argument are nowhere
    assert PLANTED not in record and "could not convert" not in record and "invalid literal" not in record


def test_installed_code_is_shown_relative_to_its_package_with_its_source_line(tmp_path):
    from privelet_gui.io import load_schema

    (tmp_path / f"{PLANTED}.json").write_text("{")
    with pytest.raises(PriveletError) as caught:
        load_schema(tmp_path / f"{PLANTED}.json")
    record = describe_error(caught.value)
    frames = [line for line in record.splitlines() if line.startswith("  privelet_gui/io/")]
    assert frames and all(": " in line for line in frames)  # our own code: with its line of source
    assert str(tmp_path) not in record and PLANTED not in record  # never the file's name or folder


def test_logging_appends_records_and_rotates_past_the_cap(tmp_path, monkeypatch):
    path = tmp_path / "state" / "errors.log"
    monkeypatch.setenv(ERROR_LOG_ENVIRONMENT, str(path))
    assert log_unexpected_error(_raised(), where="one") == path  # the folder is made
    assert log_unexpected_error(KeyError(PLANTED), where="two") == path
    text = path.read_text()
    assert text.count("--- ") == 2 and "in one" in text and "KeyError" in text and PLANTED not in text
    path.write_text("x" * MAX_BYTES)
    assert log_unexpected_error(_raised()) == path
    assert path.with_name("errors.log.1").stat().st_size == MAX_BYTES  # the old log kept once
    assert path.read_text().startswith("--- ")


def test_logging_never_raises(tmp_path, monkeypatch):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    monkeypatch.setenv(ERROR_LOG_ENVIRONMENT, str(blocker / "errors.log"))  # its folder is a file
    assert log_unexpected_error(_raised()) is None


def test_a_chain_that_loops_ends():
    first, second = ValueError("a"), KeyError("b")
    first.__context__, second.__context__ = second, first
    assert describe_error(first).count("while handling:") == 2


def test_user_errors_and_cancels_are_not_logged():
    assert not is_unexpected(PriveletError("a bad file"))
    assert not is_unexpected(FileNotFoundError("gone"))
    assert not is_unexpected(Cancelled())
    assert is_unexpected(KeyError("a bug")) and is_unexpected(MemoryError())


def test_the_app_hook_logs_unhandled_errors_then_calls_the_previous_hooks(tmp_path, monkeypatch):
    from privelet_gui.gui.app import error_hook

    path = tmp_path / "errors.log"
    monkeypatch.setenv(ERROR_LOG_ENVIRONMENT, str(path))
    seen: list[object] = []
    monkeypatch.setattr(sys, "excepthook", lambda kind, error, trace: seen.append(("sys", kind)))
    monkeypatch.setattr(threading, "excepthook", lambda event: seen.append(("thread", event.exc_type)))
    told: list[Path | None] = []
    with error_hook(told.append):
        error = _raised()
        sys.excepthook(type(error), error, error.__traceback__)
        worker = threading.Thread(target=_fail_with_data, args=(PLANTED,))
        worker.start()
        worker.join()
    assert seen == [("sys", RuntimeError), ("thread", RuntimeError)]
    assert told == [path, path]
    text = path.read_text()
    assert text.count("--- ") == 2 and "in the app" in text and "in a thread" in text and PLANTED not in text
    # restored on leaving: the hooks before it again
    assert [hook.__name__ for hook in (sys.excepthook, threading.excepthook)] == ["<lambda>", "<lambda>"]
