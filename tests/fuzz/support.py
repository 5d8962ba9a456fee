"""Case counts for the fuzz targets, and the tally of their outcomes (printed by conftest.py)."""

from __future__ import annotations

import collections
import os
from collections.abc import Callable
from typing import Any

from hypothesis import HealthCheck, settings

from privelet_gui.engine import PriveletError

#: Cases per target in CI, where the whole fuzz suite must stay near a minute on two cores.
CI_CASES = 60
#: Cases per target in a by-hand run (``PRIVELET_FUZZ=1``, or ``PRIVELET_FUZZ=<n>``).
BY_HAND_CASES = 1000


def by_hand() -> bool:
    """Whether this is a by-hand run (``PRIVELET_FUZZ`` set to anything but 0)."""
    return os.environ.get("PRIVELET_FUZZ", "0") not in ("", "0")


def fuzz_cases(ci: int = CI_CASES) -> int:
    """Cases for one target: ``ci`` in CI, 1,000 (or ``PRIVELET_FUZZ=<n>``, n > 1) by hand."""
    if not by_hand():
        return ci
    value = os.environ["PRIVELET_FUZZ"]
    return int(value) if value.isdigit() and int(value) > 1 else BY_HAND_CASES


def fuzz(ci: int = CI_CASES) -> Callable[[Any], Any]:
    """Hypothesis settings of a fuzz target (the derandomized project profile, more cases)."""
    return settings(
        max_examples=fuzz_cases(ci),
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
    )


class Tally:
    """Outcomes per target: cases run, valid results, PriveletErrors (by class)."""

    def __init__(self) -> None:
        self.cases: collections.Counter[str] = collections.Counter()
        self.outcomes: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)

    def valid(self, target: str) -> None:
        self.cases[target] += 1
        self.outcomes[target]["valid"] += 1

    def refused(self, target: str, error: PriveletError) -> None:
        self.cases[target] += 1
        self.outcomes[target][type(error).__name__] += 1


TALLY = Tally()


#: The longest message a refusal may have: it says what and where, it never quotes a file.
MAX_MESSAGE = 1500


def outcome(target: str, call: Callable[[], Any]) -> tuple[Any, PriveletError | None]:
    """``(result, None)`` or ``(None, error)`` for a PriveletError, tallied for ``target``; any
    other exception propagates (and fails the test). A refusal must say something, briefly."""
    try:
        result = call()
    except PriveletError as error:
        message = str(error)
        assert message.strip(), f"{type(error).__name__} without a message"
        assert len(message) <= MAX_MESSAGE, f"a message of {len(message):,} characters: {message[:300]}..."
        TALLY.refused(target, error)
        return None, error
    TALLY.valid(target)
    return result, None
