"""What every ``privelet`` command shares: the parser class, common options, argument
types, progress bars and notes, and one-line errors.

Nothing heavy is imported here: ``privelet --help`` and ``--version`` must start at once,
so the engine, numpy and pandas are imported by the command that needs them.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from collections.abc import Callable
from typing import IO, TYPE_CHECKING, NoReturn

if TYPE_CHECKING:
    from ..engine import Schema
    from ..io import TableOptions

__all__ = [
    "SEED_WARNING",
    "Parser",
    "ProgressBar",
    "UsageError",
    "common_options",
    "epsilon_type",
    "fmt",
    "loud",
    "missing_action",
    "note",
    "one_line",
    "parse_sa",
    "progress_bar",
    "queries_type",
    "read_options",
    "seed_type",
    "table_options",
]

SEED_WARNING = (
    "WARNING: --seed makes the noise reproducible. A seeded release is NOT private: anyone who "
    "knows the seed can remove the noise. Use --seed for tests only, never for publication."
)


class UsageError(Exception):
    """A command-line usage error found after parsing (exit code 2)."""


class ProgressBar:
    """A one-line progress bar on stderr, redrawn with carriage returns, throttled.

    Call it as ``bar(fraction, stage)``; :meth:`close` ends the line. Disabled bars do nothing.
    """

    def __init__(self, stream: IO[str] | None = None, *, enabled: bool = True, interval: float = 0.1, width: int = 30):
        self.stream = stream if stream is not None else sys.stderr
        self.enabled = enabled
        self.interval = interval
        self.width = width
        self._last = -math.inf
        self._shown = False
        self._length = 0

    def __call__(self, fraction: float, stage: str) -> None:
        if not self.enabled:
            return
        now = time.monotonic()
        if fraction < 1.0 and now - self._last < self.interval:
            return
        self._last = now
        fraction = min(max(fraction, 0.0), 1.0)
        filled = round(fraction * self.width)
        line = f"{stage[:40]:<40} [{'#' * filled}{'.' * (self.width - filled)}] {fraction:4.0%}"
        pad = max(self._length - len(line), 0)
        self.stream.write("\r" + line + " " * pad)
        self.stream.flush()
        self._length = len(line)
        self._shown = True

    def close(self) -> None:
        if self._shown:
            self.stream.write("\n")
            self.stream.flush()
            self._shown = False
            self._length = 0


class Parser(argparse.ArgumentParser):
    """argparse with one-line errors (``privelet release: error: ...``) and exit code 2."""

    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        self.exit(2, f"{self.prog}: error: {message}\n")


def common_options(*, sub: bool) -> argparse.ArgumentParser:
    """--debug and --quiet, accepted before or after the command."""
    parent = argparse.ArgumentParser(add_help=False)
    default = argparse.SUPPRESS if sub else False
    parent.add_argument("--debug", action="store_true", default=default, help="show a traceback on errors")
    parent.add_argument("--quiet", "-q", action="store_true", default=default, help="no progress bars or notes")
    return parent


def table_options(parser: argparse.ArgumentParser) -> None:
    """The options that say how to read a table file."""
    group = parser.add_argument_group("reading the table")
    group.add_argument("--delimiter", metavar="C", help="column separator (default: sniffed among , ; | TAB; 'tab' for TAB)")
    group.add_argument("--encoding", default="utf-8", help="text encoding (default: utf-8; a BOM is skipped)")
    group.add_argument("--no-header", action="store_true", help="the first row is data (columns are column_1, column_2, ...)")


def epsilon_type(text: str) -> float:
    """``--epsilon``: a number the engine accepts (a usage error otherwise)."""
    from ..engine import PriveletError
    from ..engine.noise import check_epsilon

    try:
        return check_epsilon(float(text))
    except ValueError as exc:  # float() failing, or the engine's check (a PriveletError)
        message = str(exc) if isinstance(exc, PriveletError) else f"epsilon must be a number, got {text!r}"
        raise argparse.ArgumentTypeError(message) from None


def queries_type(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"the number of queries must be an integer, got {text!r}") from None
    if value < 5:
        raise argparse.ArgumentTypeError(f"give at least 5 queries (one per coverage quintile), got {text!r}")
    return value


def seed_type(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"the seed must be a non-negative integer, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"the seed must be a non-negative integer, got {text!r}")
    return value


def missing_action(parser: argparse.ArgumentParser) -> Callable[[argparse.Namespace], int]:
    """The handler of a command group run without an action: a usage error."""

    def handler(args: argparse.Namespace) -> int:
        raise UsageError(f"{parser.prog}: choose an action (see '{parser.prog} --help')")

    return handler


def note(args: argparse.Namespace, message: str) -> None:
    """A note on stderr, unless ``--quiet``."""
    if not args.quiet:
        print(message, file=sys.stderr)


def read_options(args: argparse.Namespace) -> TableOptions:
    """How to read the table, from the reading options (see :func:`table_options`)."""
    from ..io import TableOptions

    delimiter = args.delimiter
    if delimiter is not None and delimiter.lower() in ("tab", "\\t"):
        delimiter = "\t"
    return TableOptions(delimiter=delimiter, encoding=args.encoding, header=not args.no_header)


def parse_sa(text: str | None, schema: Schema) -> tuple[str, ...]:
    """``--sa``: a list of names, ``auto`` (the recommended S_A, the default) or ``none``."""
    from ..engine import recommend_sa

    if text is None or text.strip().lower() == "auto":
        return recommend_sa(schema)
    if text.strip().lower() in ("none", ""):
        return ()
    names = tuple(n.strip() for n in text.split(",") if n.strip())
    schema.axes(names)  # unknown or repeated names: a one-line error
    return names


def progress_bar(args: argparse.Namespace) -> ProgressBar:
    """The command's progress bar (off with ``--quiet``)."""
    return ProgressBar(sys.stderr, enabled=not args.quiet)


def fmt(x: float) -> str:
    """A variance or bound for a terminal: grouped digits, or scientific when large."""
    return f"{x:,.6g}" if abs(x) < 1e6 else f"{x:.4e}"


def loud(message: str) -> str:
    """A privacy warning framed in ``!`` so that it cannot be missed."""
    width = 78
    words, lines, line = message.split(), [], ""
    for word in words:
        if len(line) + len(word) + 1 > width - 4:
            lines.append(line)
            line = word
        else:
            line = f"{line} {word}".strip()
    lines.append(line)
    bar = "!" * width
    return "\n".join([bar, *(f"! {text:<{width - 4}} !" for text in lines), bar])


def one_line(exc: BaseException) -> str:
    """An error as one line (an OSError as its reason and file)."""
    from ..engine import PriveletError

    if isinstance(exc, OSError) and not isinstance(exc, PriveletError) and exc.strerror:
        text = f"{exc.strerror}: {exc.filename}" if exc.filename is not None else exc.strerror
    else:
        text = str(exc)
    return " ".join(text.split()) or type(exc).__name__
