"""Reading JSON files that people edit by hand or that arrive damaged.

:func:`loads` refuses, with a :class:`~privelet_gui.engine.PriveletError` of the caller's
class, what :func:`json.loads` would let through or fail on with another exception: ``NaN``
and ``Infinity`` (not JSON), a key given twice in one object (the first would be lost without
a word), integers of more than 4,300 digits (a ``ValueError`` from Python's int limit) and
nesting deep enough to exhaust the interpreter's stack (a ``RecursionError``).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from typing import Any

import numpy as np

from ..engine.errors import PriveletError, shown

__all__ = ["is_finite_number", "loads", "shown"]


# The nesting depth at which reading stops, well below the interpreter's stack limit, so that
# a deep file is refused the same way whatever the caller's own stack (the app's is deeper).
# Room for the deepest hierarchy a project's draft may hold (two levels of JSON per level).
_MAX_DEPTH = 256


class _Refused(Exception):
    """A value JSON allows but these files must not hold (raised from the parser's hooks)."""


def _no_constants(name: str) -> Any:
    raise _Refused(f"{name} is not a number JSON allows; write a finite number")


_DUPLICATE = "the key {key!r} appears twice in one object; keep one of them"


def _no_duplicates(message: str) -> Callable[[list[tuple[str, Any]]], dict[str, Any]]:
    def build(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key, value in pairs:
            if key in out:
                raise _Refused(message.format(key=key))
            out[key] = value
        return out

    return build


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise _Refused(f"the number {text[:40]} is too large for a float; write a number of normal size")
    return value


def _check_strings(value: Any) -> None:
    """Refuse text that no file can hold: a lone surrogate (an unpaired ``\\ud800`` escape)."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
        elif isinstance(item, str) and _SURROGATE.search(item):
            raise _Refused(f"the text {item[:40]!r} holds an unpaired \\u escape (a lone surrogate); remove it")


_SURROGATE = re.compile("[\ud800-\udfff]")
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")
_STRING = re.compile(r'"(?:[^"\\]|\\.)*"')


def _depth(text: str) -> int:
    """How deep the brackets of JSON ``text`` nest (strings skipped), without recursion."""
    bare = np.frombuffer(_STRING.sub("", text).encode("utf-8", "surrogatepass"), dtype=np.uint8)
    steps = np.isin(bare, _OPENING).astype(np.int32) - np.isin(bare, _CLOSING)
    return int(np.cumsum(steps).max(initial=0))


_OPENING = np.frombuffer(b"[{", dtype=np.uint8)
_CLOSING = np.frombuffer(b"]}", dtype=np.uint8)


def loads(text: str, *, source: str, error: type[PriveletError], duplicate: str = _DUPLICATE) -> Any:
    """The JSON value of ``text``, or ``error`` naming ``source`` and what is wrong.

    ``duplicate`` is the message for a key given twice (``{key}`` is replaced by the key).

    Examples
    --------
    >>> loads('{"a": [1, 2.5]}', source="x.json", error=PriveletError)
    {'a': [1, 2.5]}
    >>> loads('{"a": NaN}', source="x.json", error=PriveletError)
    Traceback (most recent call last):
    ...
    privelet_gui.engine.errors.PriveletError: x.json: NaN is not a number JSON allows; write a finite number
    """
    depth = _depth(text)
    if depth > _MAX_DEPTH:
        raise error(f"{source}: the JSON is nested {depth:,} levels deep, more than the {_MAX_DEPTH} it may be")
    try:
        value = json.loads(
            text, parse_constant=_no_constants, parse_float=_finite, object_pairs_hook=_no_duplicates(duplicate)
        )
        if _SURROGATE_ESCAPE.search(text) or _SURROGATE.search(text):  # rare: walk the value only then
            _check_strings(value)
        return value
    except json.JSONDecodeError as exc:
        raise error(
            f"{source}: not valid JSON: {exc.msg} at line {exc.lineno}, column {exc.colno}; "
            "check commas, quotes and brackets"
        ) from None
    except _Refused as exc:
        raise error(f"{source}: {exc}") from None
    except RecursionError:
        raise error(f"{source}: the JSON is nested too deeply to read (thousands of levels); is the file damaged?") from None
    except ValueError:  # Python's limit on the digits of an integer
        raise error(f"{source}: a number in the JSON has more than 4,300 digits; write numbers of normal size") from None


def is_finite_number(value: float) -> bool:
    """Whether a JSON number is finite as a float (an integer beyond every float is not)."""
    try:
        return math.isfinite(float(value))
    except OverflowError:
        return False
