"""What every ``privelet`` command shares: the parser class, common options, argument
types, progress bars and notes, and one-line errors.

Nothing heavy is imported here: ``privelet --help`` and ``--version`` must start at once,
so the engine, numpy and pandas are imported by the command that needs them.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
from collections.abc import Callable, Sequence
from typing import IO, TYPE_CHECKING, Any, NoReturn

if TYPE_CHECKING:
    from ..engine import SaRule, Schema
    from ..io import TableOptions

__all__ = [
    "SEED_WARNING",
    "Parser",
    "ProgressBar",
    "UsageError",
    "common_options",
    "epsilon_type",
    "fit_words",
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
    """Progress of a command on stderr: a bar in a terminal, plain lines in a log.

    In a terminal, a tqdm bar as wide as the terminal (asked again at each redraw, so that
    resizing it works), redrawn at most every ``interval`` seconds, with the stage label
    shortened at a word boundary to what fits. Anywhere else (a pipe, a file, CI), one plain
    line ``" 40% counting rows"`` each time the work advanced ``plain_step`` more, or after
    ``plain_interval`` seconds of slower progress, and at 100%: no carriage returns in logs.

    Call it as ``bar(fraction, stage)``; :meth:`close` ends the bar (its line in a terminal)
    and lets the next task start a new one. Disabled bars do nothing.
    """

    #: Columns a bar keeps for itself besides the label: ": 100%|", at least 10 of bar, "| 00:00:00".
    _FIXED = 7 + 10 + 10

    def __init__(self, stream: IO[str] | None = None, *, enabled: bool = True, interval: float = 0.1,
                 plain_step: float = 0.1, plain_interval: float = 5.0):
        self.stream = stream if stream is not None else sys.stderr
        self.enabled = enabled
        self.interval = interval
        self.plain_step = plain_step
        self.plain_interval = plain_interval
        self.terminal = _is_terminal(self.stream)
        self._bar: Any = None  # the tqdm bar of the task under way (a terminal)
        self._last_time = -math.inf
        self._last_fraction: float | None = None  # the last fraction shown

    def __call__(self, fraction: float, stage: str) -> None:
        if not self.enabled:
            return
        fraction = min(max(fraction, 0.0), 1.0)
        now = time.monotonic()
        if self.terminal:
            if fraction < 1.0 and now - self._last_time < self.interval:
                return
            self._draw(fraction, stage)
        elif self._plain_line_due(fraction, now):
            self.stream.write(f"{fraction:4.0%} {stage}\n")
            self.stream.flush()
        else:
            return
        self._last_time = now
        self._last_fraction = fraction

    def _plain_line_due(self, fraction: float, now: float) -> bool:
        last = self._last_fraction
        if last is None or fraction < last:  # the first line of a task (or a new one)
            return True
        if fraction >= 1.0:
            return last < 1.0
        return fraction >= last + self.plain_step or (fraction > last and now - self._last_time >= self.plain_interval)

    def _draw(self, fraction: float, stage: str) -> None:
        from tqdm import tqdm  # only when a bar is drawn: `privelet --help` stays instant

        width = _columns(self.stream)
        label = fit_words(stage, width - self._FIXED)
        if self._bar is None:  # a new task: tqdm draws its first state itself
            # position=0: one bar at a time, never drawn below another (tqdm's nested bars)
            self._bar = tqdm(total=1.0, initial=fraction, desc=label, file=self.stream, ncols=width, position=0,
                             leave=True, bar_format="{desc}: {percentage:3.0f}%|{bar}| {elapsed}", mininterval=0)
            return
        if width < self._bar.ncols:
            # A narrower terminal: tqdm would pad the new line with spaces to the old width,
            # past the new edge. Erase the line instead, and let a fresh printer forget the old width.
            self.stream.write("\r\x1b[K")
            self._bar.sp = tqdm.status_printer(self.stream)
        self._bar.ncols = width
        self._bar.n = fraction
        self._bar.set_description_str(label, refresh=False)
        self._bar.refresh()

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()  # leaves the finished bar on its line and ends the line
            self._bar = None
        self._last_fraction = None
        self._last_time = -math.inf


def fit_words(text: str, width: int) -> str:
    """``text`` cut at a word boundary to at most ``width`` characters ("..." where it was cut).

    >>> fit_words("transforming age, sex: 11 of 11 slabs done", 24)
    'transforming age...'
    >>> fit_words("counting rows", 40), fit_words("counting rows", 5)
    ('counting rows', '')
    """
    if len(text) <= width:
        return text
    kept = ""
    for word in text.split():
        candidate = f"{kept} {word}" if kept else word
        if len(candidate) + 3 > width:
            break
        kept = candidate
    return kept.rstrip(",;:") + "..." if kept else ""  # not even one word fits: the bar goes without a label


def _is_terminal(stream: IO[str]) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # no isatty, or a closed stream
        return False


def _columns(stream: IO[str]) -> int:
    """The width of the terminal ``stream`` writes to (80 if it cannot tell)."""
    try:
        return os.get_terminal_size(stream.fileno()).columns or 80
    except (AttributeError, ValueError, OSError):
        return 80


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
    group.add_argument("--delimiter", metavar="C", type=delimiter_type,
                       help="column separator (default: sniffed among , ; | TAB; 'tab' for TAB)")
    group.add_argument("--encoding", default="utf-8", type=encoding_type,
                       help="text encoding (default: utf-8; a BOM is skipped)")
    group.add_argument("--no-header", action="store_true", help="the first row is data (columns are column_1, column_2, ...)")
    group.add_argument("--missing", metavar="TEXTS", action="append", type=missing_type, default=[],
                       help="texts that mean a missing value in every column, comma-separated (e.g. N or N,NA; "
                            "repeatable); empty cells are always missing. A schema attribute's own "
                            "\"missing_values\" replace them for its column")


def delimiter_type(text: str) -> str:
    """``--delimiter``: one character that can separate columns ('tab' or '\\t' for TAB), or a
    usage error saying which ones can."""
    from ..engine import PriveletError
    from ..io import TableOptions

    delimiter = "\t" if text.lower() in ("tab", "\\t") else text
    try:
        TableOptions(delimiter=delimiter)
    except PriveletError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return delimiter


def encoding_type(text: str) -> str:
    """``--encoding``: a text encoding Python knows, or a usage error."""
    from ..engine import PriveletError
    from ..io import TableOptions

    try:
        TableOptions(encoding=text)
    except PriveletError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return text


def missing_type(text: str) -> tuple[str, ...]:
    """``--missing``: comma-separated texts meaning missing (checked as the reading options check them)."""
    from ..engine import PriveletError
    from ..io import parse_missing_values

    try:
        return parse_missing_values(text)
    except PriveletError as exc:
        raise argparse.ArgumentTypeError(str(exc).removeprefix("reading options: ")) from None


def epsilon_type(text: str) -> float:
    """``--epsilon``: a number the engine accepts (a usage error otherwise)."""
    from ..engine import PriveletError, check_epsilon

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

    markers = tuple(dict.fromkeys(text for group in args.missing for text in group))  # each once, in order
    return TableOptions(delimiter=args.delimiter, encoding=args.encoding, header=not args.no_header,
                        missing_values=markers)


def parse_sa(text: str | None, schema: Schema) -> tuple[SaRule, tuple[str, ...]]:
    """``--sa`` as a rule of :func:`~privelet_gui.engine.resolve_sa` and the S_A it gives:
    ``recommended`` (the paper's rule, the default; ``auto``, its earlier name, too), ``best``
    (the least expected error on the workload), or S_A given as a list of names or ``none``."""
    from ..engine import SA_RULE_ALIASES, SA_RULES, check_sa_rule

    word = "recommended" if text is None else text.strip().lower()
    rule = check_sa_rule(word) if word in SA_RULES or word in SA_RULE_ALIASES else "given"
    if rule != "given" or word in ("none", ""):
        return rule, ()
    names = tuple(n.strip() for n in (text or "").split(",") if n.strip())
    schema.axes(names)  # unknown or repeated names: a one-line error
    return "given", names


def progress_bar(args: argparse.Namespace) -> ProgressBar:
    """The command's progress bar (off with ``--quiet``)."""
    return ProgressBar(sys.stderr, enabled=not args.quiet)


def fmt(x: float, *, scientific: bool | None = None) -> str:
    """A variance or bound for a terminal: grouped digits, or scientific when large (or as
    ``scientific`` says, so that a column keeps one style: :func:`fmt_column`)."""
    if scientific is None:
        scientific = abs(x) >= 1e6
    return f"{x:.4e}" if scientific else f"{x:,.6g}"


def fmt_column(values: Sequence[float]) -> list[str]:
    """The numbers of one table column in one style: all scientific when any is large."""
    scientific = any(abs(x) >= 1e6 for x in values)
    return [fmt(x, scientific=scientific) for x in values]


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
