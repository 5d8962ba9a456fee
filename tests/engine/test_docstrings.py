"""Every public name of the engine is documented in numpydoc form (issue 42 item 6).

Each function in ``privelet_gui.engine.__all__`` that takes parameters has a ``Parameters``
section naming each of them, and a ``Returns`` (or ``Yields``) section unless its return
annotation is None; each class documents its constructor's parameters (a ``Parameters``
section, or ``Attributes`` for a dataclass) and its public methods as functions. An
override without a docstring of its own is documented by the method it overrides
(``inspect.getdoc``). A name added to ``__all__`` without such a docstring fails here.
"""

from __future__ import annotations

import dataclasses
import inspect
import re
from collections.abc import Callable, Iterator

import pytest

import privelet_gui.engine as engine

_UNDERLINE = re.compile(r"^-{3,}$")
# "name : type", "a, b : type", "*others", "**changes" (numpydoc parameter lines)
_ENTRY = re.compile(r"^(\*{0,2}[A-Za-z_][A-Za-z0-9_]*(?:\s*,\s*\*{0,2}[A-Za-z_][A-Za-z0-9_]*)*)\s*(?::.*)?$")


def sections(doc: str) -> dict[str, list[str]]:
    """The numpydoc sections of a cleaned docstring: title -> its lines."""
    lines = doc.splitlines()
    out: dict[str, list[str]] = {}
    current: list[str] | None = None
    i = 0
    while i < len(lines):
        if i + 1 < len(lines) and lines[i].strip() and _UNDERLINE.match(lines[i + 1].strip()):
            current = out.setdefault(lines[i].strip(), [])
            i += 2
            continue
        if current is not None:
            current.append(lines[i])
        i += 1
    return out


def documented_names(lines: list[str]) -> set[str]:
    """The names a Parameters / Attributes section documents (its unindented entries)."""
    names: set[str] = set()
    for line in lines:
        if not line.strip() or line[0].isspace():
            continue
        match = _ENTRY.match(line.strip())
        if match:
            names.update(part.strip().lstrip("*") for part in match.group(1).split(","))
    return names


def parameters(signature: inspect.Signature) -> list[str]:
    return [name for name in signature.parameters if name not in ("self", "cls")]


def returns_none(signature: inspect.Signature) -> bool:
    """Whether the return annotation says None (the engine is annotated throughout)."""
    return signature.return_annotation in (None, "None")


def public_methods(cls: type) -> Iterator[tuple[str, Callable[..., object]]]:
    """Methods (plain, class and static) the class or its engine bases define, by name."""
    seen: set[str] = set()
    for klass in cls.__mro__:
        if not klass.__module__.startswith("privelet_gui.engine"):
            continue
        for name, member in vars(klass).items():
            if name.startswith("_") or name in seen:
                continue
            seen.add(name)
            if isinstance(member, (staticmethod, classmethod)) or inspect.isfunction(member):
                yield name, getattr(cls, name)


def documented_callables() -> Iterator[tuple[str, object]]:
    for name in engine.__all__:
        obj = getattr(engine, name)
        if inspect.isclass(obj):
            if issubclass(obj, BaseException):
                continue  # the errors take a message only
            yield name, obj
            for method_name, method in public_methods(obj):
                yield f"{name}.{method_name}", method
        elif inspect.isfunction(obj):
            yield name, obj


CALLABLES = dict(documented_callables())


def problems_of_function(function: Callable[..., object]) -> list[str]:
    signature = inspect.signature(function)
    doc = inspect.getdoc(function) or ""
    found = sections(doc)
    out = []
    wanted = parameters(signature)
    if wanted:
        if "Parameters" not in found:
            out.append("no Parameters section")
        else:
            missing = [p for p in wanted if p not in documented_names(found["Parameters"])]
            if missing:
                out.append(f"Parameters does not name {', '.join(missing)}")
    if not returns_none(signature) and not ({"Returns", "Yields"} & set(found)):
        out.append("no Returns section")
    return out


def problems_of_class(cls: type) -> list[str]:
    try:
        signature = inspect.signature(cls)
    except (TypeError, ValueError):
        return []
    wanted = [
        p.name for p in signature.parameters.values() if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
    ]
    init = vars(cls).get("__init__")  # a constructor docstring of its own (TreeStrategy's) counts too
    if not wanted:
        return []
    doc = "\n".join(filter(None, [inspect.getdoc(cls), inspect.getdoc(init) if init is not None else None]))
    found = sections(doc)
    titles = ("Parameters", "Attributes") if dataclasses.is_dataclass(cls) else ("Parameters",)
    documented: set[str] = set()
    present = [t for t in titles if t in found]
    if not present:
        return [f"no {' or '.join(titles)} section"]
    for title in present:
        documented |= documented_names(found[title])
    missing = [p for p in wanted if p not in documented]
    return [f"{'/'.join(present)} does not name {', '.join(missing)}"] if missing else []


@pytest.mark.parametrize("name", sorted(CALLABLES))
def test_numpydoc_sections(name: str) -> None:
    obj = CALLABLES[name]
    problems = problems_of_class(obj) if inspect.isclass(obj) else problems_of_function(obj)  # type: ignore[arg-type]
    assert not problems, f"{name}: {'; '.join(problems)}"


def test_every_public_function_is_checked() -> None:
    functions = [n for n in engine.__all__ if inspect.isfunction(getattr(engine, n))]
    classes = [n for n in engine.__all__ if inspect.isclass(getattr(engine, n))]
    assert len(functions) >= 38 and len(classes) >= 40
    assert set(functions) <= set(CALLABLES)


def test_the_check_catches_an_undocumented_name() -> None:
    def documented(table: object, *, rows: int = 0) -> int:
        """Count.

        Parameters
        ----------
        table : object
            A table.
        rows : int, default 0
            Rows.

        Returns
        -------
        int
        """
        return rows

    def undocumented(table: object, rows: int = 0) -> int:
        """Count ``table``."""
        return rows

    def half(table: object, rows: int = 0) -> None:
        """Count.

        Parameters
        ----------
        table : object
            A table.
        """

    assert problems_of_function(documented) == []
    assert problems_of_function(undocumented) == ["no Parameters section", "no Returns section"]
    assert problems_of_function(half) == ["Parameters does not name rows"]
