"""Counting the calls of the compiled loops, to show that a release really takes them."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from privelet_gui.engine import _compiled


def counting_loops(monkeypatch: Any, accessor: str, *fields: str) -> list[str]:
    """Have ``_compiled.<accessor>()`` give its loops with ``fields`` counted; returns the list
    of their calls, by field name, in order."""
    loops = getattr(_compiled, accessor)()
    calls: list[str] = []

    def counted(name: str, loop: Callable[..., Any]) -> Callable[..., Any]:
        def run(*arguments: Any) -> Any:
            calls.append(name)
            return loop(*arguments)
        return run

    replaced = dataclasses.replace(loops, **{name: counted(name, getattr(loops, name)) for name in fields})
    monkeypatch.setattr(_compiled, accessor, lambda: replaced)
    return calls
