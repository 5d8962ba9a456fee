"""Workload files and workload descriptions (``privelet bounds/release/advise --workload``).

A workload file lists range-count queries, one per query, in the syntax of
``privelet query --where`` (:func:`~privelet_gui.io.releases.parse_where`):

- CSV (``.csv``, ``.tsv``, ``.txt``): a header of attribute names, then one query per row;
  each cell is a condition's value (``20..30``, ``65..``, ``Male``, a hierarchy group), an
  empty cell leaves the attribute unconstrained::

      age,sex,occupation
      20..29,,Technical
      65..,Female,

- JSON (``.json``): a list of queries (or ``{"queries": [...]}``), each a list of
  ``name=value`` conditions or an object ``{"age": "20..29"}``.

A workload description names built-in workloads, or a file; several descriptions are
combined (every query counted once):

- ``paper`` or ``paper:N``: the paper's random workload of N queries (default 10,000; seeded);
- ``marginals:K[,K...]`` or ``marginals:K[,K...]:A[/G],B[/G],...``: every cell of the
  K-way marginals of all attributes or of the listed ones; ``/G`` queries an ordinal
  attribute in blocks of G values and a nominal one at hierarchy level G (``age/5``,
  ``native-country/2``);
- anything else: a workload file.
"""

from __future__ import annotations

import csv
import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..engine import PriveletError, QueryBatch, Schema, Workload, marginals, paper_workload
from .releases import parse_where

__all__ = ["read_workload", "workload_from_description", "workloads_from_descriptions"]


def _read_rows(path: Path) -> list[list[str]]:
    """Each query of a file as ``name=value`` clauses."""
    try:
        text = path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError:
        raise PriveletError(f"{path}: a workload file must be UTF-8 text") from None
    if path.suffix.lower() == ".json":
        try:
            data: Any = json.loads(text)
        except json.JSONDecodeError as exc:
            raise PriveletError(f"{path}: not valid JSON ({exc.msg}, line {exc.lineno}); fix the file") from None
        if isinstance(data, dict) and "queries" in data:
            data = data["queries"]
        if not isinstance(data, list):
            raise PriveletError(f'{path}: a JSON workload is a list of queries, or {{"queries": [...]}}')
        out = []
        for number, query in enumerate(data, start=1):
            if isinstance(query, dict):
                out.append([f"{name}={value}" for name, value in query.items()])
            elif isinstance(query, list) and all(isinstance(c, str) for c in query):
                out.append(list(query))
            else:
                raise PriveletError(
                    f'{path}: query {number} must be a list of "name=value" conditions or an object '
                    f'{{"name": "value"}}, got {query!r}'
                )
        return out
    delimiter = "\t" if path.suffix.lower() == ".tsv" else ","
    rows = list(csv.reader(text.splitlines(), delimiter=delimiter))
    if not rows:
        raise PriveletError(f"{path} is empty: give a header of attribute names, then one query per row")
    header = [h.strip() for h in rows[0]]
    out = []
    for number, row in enumerate(rows[1:], start=2):
        if not any(cell.strip() for cell in row):
            continue
        if len(row) > len(header):
            raise PriveletError(f"{path}, line {number}: {len(row)} cells but the header names {len(header)} attributes")
        out.append([f"{name}={cell.strip()}" for name, cell in zip(header, row, strict=False) if cell.strip()])
    return out


def read_workload(path: str | os.PathLike[str], schema: Schema) -> Workload:
    """The queries of a workload file (module docstring) on ``schema``.

    Errors name the file, the query (line or number) and what to fix.
    """
    p = Path(path)
    if not p.is_file():
        raise PriveletError(f"no such workload file: {p}")
    queries = []
    for number, clauses in enumerate(_read_rows(p), start=1):
        try:
            queries.append(parse_where(schema, clauses))
        except PriveletError as exc:
            raise PriveletError(f"{p}, query {number}: {exc}") from None
    if not queries:
        raise PriveletError(f"{p} lists no query: add one query per row (or per list entry)")
    return Workload.of_queries(schema, QueryBatch.of(queries), name=p.name)


def _ways(text: str) -> list[int]:
    try:
        return [int(k) for k in text.split(",") if k.strip()]
    except ValueError:
        raise PriveletError(f"marginals:K needs whole numbers K (e.g. marginals:1,2), got {text!r}") from None


def workload_from_description(text: str, schema: Schema, *, base: str | os.PathLike[str] | None = None) -> Workload:
    """One workload description (module docstring); files are found relative to ``base``."""
    kind, _, rest = text.strip().partition(":")
    if kind == "paper":
        if not rest:
            return paper_workload(schema)
        try:
            return paper_workload(schema, int(rest))
        except ValueError:
            raise PriveletError(f"paper:N needs a whole number of queries, got {rest!r}") from None
    if kind == "marginals":
        ways_text, _, attributes_text = rest.partition(":")
        if not ways_text:
            raise PriveletError("say which marginals: marginals:1, marginals:2 or marginals:1,2")
        names: list[str] | None = None
        grains: dict[str, int] = {}
        if attributes_text:
            names = []
            for item in attributes_text.split(","):
                name, _, grain = item.strip().partition("/")
                names.append(name)
                if grain:
                    try:
                        grains[name] = int(grain)
                    except ValueError:
                        raise PriveletError(f"{item!r}: the grain after / is a whole number (age/5)") from None
        return marginals(schema, _ways(ways_text), names, grains=grains)
    path = Path(text)
    if base is not None and not path.is_absolute():
        path = Path(base) / path
    if not path.exists():
        raise PriveletError(
            f"{text!r} is neither a workload (paper, paper:N, marginals:K[:A,B/G]) nor an existing file"
        )
    return read_workload(path, schema)


def workloads_from_descriptions(texts: Sequence[str], schema: Schema) -> Workload:
    """Several descriptions combined into one workload (every query counted once)."""
    if not texts:
        return paper_workload(schema)
    parts = [workload_from_description(t, schema) for t in texts]
    return parts[0].combine(*parts[1:]) if len(parts) > 1 else parts[0]
