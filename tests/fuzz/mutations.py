"""Mutating JSON values and file bytes: the damage hand edits and broken downloads do."""

from __future__ import annotations

import copy
import json
from typing import Any

from hypothesis import strategies as st

_NUMBERS = st.one_of(
    st.integers(-(2**70), 2**70),
    st.sampled_from([0, -1, 1, 2**53 + 1, 2**63, 2**64 - 1, 10**400, -(10**30)]),
    st.floats(allow_nan=False, allow_infinity=False),
    st.sampled_from([1e308, -1e-320, 0.5, 1e-9]),
)
_TEXT = st.one_of(st.text(max_size=12), st.sampled_from(["", " ", "*", "ordinal", "nominal", "range", "bins",
                                                        "values", "\x00", "\ud83d\ude00", "a" * 300]))

#: Any JSON value, small.
json_values = st.recursive(
    st.one_of(st.none(), st.booleans(), _NUMBERS, _TEXT),
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(_TEXT, inner, max_size=4)),
    max_leaves=12,
)


def _paths(obj: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [path]
    if isinstance(obj, dict):
        for key, value in obj.items():
            out += _paths(value, (*path, key))
    elif isinstance(obj, list):
        for i, value in enumerate(obj):
            out += _paths(value, (*path, i))
    return out


def _get(obj: Any, path: tuple[Any, ...]) -> Any:
    for key in path:
        obj = obj[key]
    return obj


def mutated(draw: Any, obj: Any, *, steps: int = 3) -> Any:
    """``obj`` after up to ``steps`` random edits: a value replaced, removed, repeated, wrapped
    in a list or object, or nested hundreds of levels deep."""
    obj = copy.deepcopy(obj)
    for _ in range(draw(st.integers(0, steps))):
        paths = _paths(obj)
        path = draw(st.sampled_from(paths))
        action = draw(st.sampled_from(["replace", "replace", "remove", "repeat", "wrap", "nest"]))
        if not path:
            if action in ("replace", "remove"):
                obj = draw(json_values)
            elif action == "wrap":
                obj = [obj]
            continue
        parent, key = _get(obj, path[:-1]), path[-1]
        value = parent[key]
        if action == "replace":
            parent[key] = draw(json_values)
        elif action == "remove":
            del parent[key]
        elif action == "repeat" and isinstance(parent, list):
            parent.insert(key, copy.deepcopy(value))
        elif action == "repeat":
            parent[f"{key} "] = copy.deepcopy(value)
        elif action == "wrap":
            parent[key] = draw(st.sampled_from([[value], {"x": value}]))
        else:
            deep = value
            for _ in range(draw(st.sampled_from([50, 120, 300]))):  # deeper: see dumped()
                deep = [deep] if draw(st.booleans()) else {"g": deep}
            parent[key] = deep
    return obj


def dumped(draw: Any, obj: Any) -> bytes:
    """``obj`` as the bytes of a JSON file, sometimes damaged the way text gets damaged."""
    text = json.dumps(obj, ensure_ascii=draw(st.booleans()))
    data = text.encode("utf-8", "surrogatepass")
    action = draw(st.sampled_from(["none"] * 5 + ["truncate", "flip", "insert", "nan", "bom", "latin1", "deep"]))
    if action == "truncate" and data:
        data = data[: draw(st.integers(0, len(data) - 1))]
    elif action == "flip" and data:
        at = draw(st.integers(0, len(data) - 1))
        data = data[:at] + bytes([draw(st.integers(0, 255))]) + data[at + 1 :]
    elif action == "insert":
        at = draw(st.integers(0, len(data)))
        data = data[:at] + draw(st.sampled_from([b"NaN", b"Infinity", b",", b"]", b"{", b'"', b"\\u", b"\xff"])) + data[at:]
    elif action == "nan":
        data = data.replace(b"1", b"NaN", 1)
    elif action == "bom":
        data = b"\xef\xbb\xbf" + data
    elif action == "latin1":
        data = text.encode("latin-1", "replace")
    elif action == "deep":  # nested past any stack (json.dumps itself could not write it)
        depth = draw(st.sampled_from([1000, 5000]))
        data = b"[" * depth + data + b"]" * depth
    return data
