"""Generated project files (valid, then damaged): shared by the io and the app fuzz tests."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import strategies as st

from privelet_gui.io.project import PROJECT_FORMAT, PROJECT_VERSION

from .mutations import dumped, mutated
from .test_schema_files import schema_objects

_LABELS = st.text(min_size=1, max_size=6).filter(str.strip)


@st.composite
def draft_trees(draw: Any, depth: int = 0) -> dict[str, Any]:
    """A hierarchy being edited: groups may be empty and labels repeat (that is why it is a draft)."""
    node: dict[str, Any] = {"label": draw(_LABELS)}
    if depth == 0 or (depth < 4 and draw(st.booleans())):
        node["children"] = [draw(draft_trees(depth + 1)) for _ in range(draw(st.integers(0, 3)))]
    return node


@st.composite
def project_objects(draw: Any) -> dict[str, Any]:
    """A valid project file's object; its table path, when it has one, is table.csv."""
    schema = draw(st.one_of(st.none(), schema_objects(files=False)))  # projects inline their hierarchies
    names = [] if schema is None else [a["name"] for a in schema["attributes"]]
    drafts: dict[str, Any] = {}
    for i in range(draw(st.integers(0, 2))):
        name = f"draft {i}"
        if draw(st.booleans()):
            drafts[name] = {"column": name, "tree": draw(draft_trees()), "domain_from_data": draw(st.booleans())}
        else:
            drafts[name] = {"column": name, "values": draw(st.lists(_LABELS, max_size=4))}
        names.append(name)
    sa = draw(st.lists(st.sampled_from(names), unique=True)) if names else []
    table = draw(st.sampled_from([None, "table.csv"]))
    options = draw(st.one_of(st.none(), st.fixed_dictionaries({
        "delimiter": st.sampled_from([None, ",", ";", "\t"]), "encoding": st.sampled_from(["utf-8", "latin-1"]),
        "header": st.booleans(), "format": st.sampled_from([None, "csv"]),
    })))
    return {
        "format": PROJECT_FORMAT,
        "version": PROJECT_VERSION,
        "saved_by": "Privelet Studio (fuzz)",
        "table": {"path": table, "options": options},
        "schema": schema,
        "attribute_order": names,
        "drafts": drafts,
        "privacy": {
            "epsilon": draw(st.sampled_from([0.1, 0.5, 1.0, 2.0, 1e-3, 10])),
            "sa": sa,
            "neighbours": draw(st.sampled_from(["replace", "add-remove"])),
            "mechanism": draw(st.sampled_from(["privelet+", "privelet", "basic"])),
        },
        "counting": {"invalid": draw(st.sampled_from(["error", "drop"]))},
    }


@st.composite
def project_files(draw: Any) -> tuple[dict[str, Any], Any, bytes]:
    """(valid object, damaged object, file bytes): damage to the values and to the text."""
    obj = draw(project_objects())
    damaged = mutated(draw, obj)
    return obj, damaged, dumped(draw, damaged)


def intact(obj: Any, damaged: Any, data: bytes) -> bool:
    """Whether the file holds ``obj`` unharmed (then it must load)."""
    written = (json.dumps(obj, ensure_ascii=True).encode(), json.dumps(obj, ensure_ascii=False).encode())
    return damaged == obj and data.removeprefix(b"\xef\xbb\xbf") in written
