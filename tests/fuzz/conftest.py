"""Prints the fuzz targets' tally after the run (see tests/fuzz/__init__.py)."""

from __future__ import annotations

from typing import Any

from .support import TALLY


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if not TALLY.cases:
        return
    terminalreporter.section("fuzz targets: cases and outcomes (failures are reported above)")
    for target in sorted(TALLY.cases):
        outcomes = ", ".join(f"{name} {count}" for name, count in sorted(TALLY.outcomes[target].items()))
        terminalreporter.write_line(f"{target:<28} {TALLY.cases[target]:>6} cases: {outcomes}")
