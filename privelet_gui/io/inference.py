"""Proposing a domain for each column from the data: the one rule, for the app and ``privelet schema infer``.

**Not private**: a domain learned from the data discloses its rare values (see
:data:`~privelet_gui.io.schema.INFERRED_DOMAIN_WARNING`); every proposed attribute is
marked ``domain_from_data`` so that the app and the command line keep saying so.

The rule, per column summary (:class:`~privelet_gui.io.summary.ColumnSummary`):

- codes written as numbers (:func:`holds_codes`: two values such as 1/2 for sex, a code
  with a leading zero, industry codes spread too widely for a range): nominal, a flat
  hierarchy of the codes in numeric order (bins would merge codes that mean different things);
- other numbers: ordinal; an integer range when the integers span at most
  :data:`INFER_MAX_RANGE` values, else :data:`INFER_BINS` equal bins with round edges;
- text: nominal, a flat hierarchy of the sorted distinct values;
- an empty column: nominal, the single value ``"(missing)"``.

Missing cells (empty ones, and those holding a text the reading options say means missing:
a column of numbers and ``N`` is numbers) get a value of their own that they count as: a
leaf at the end of the hierarchy, or a value after the last of an ordinal domain. It is
called after the one text meaning missing the column holds when there is exactly one and no
cell is empty (``N``: so that a data dictionary's label for ``N`` applies to it), else
``"(missing)"``.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Sequence
from typing import Any, Literal

import pandas as pd

from ..engine import Hierarchy, NominalAttribute, NumericBins, OrdinalAttribute, Schema, SchemaError
from ..engine.model.schema import Attribute
from .summary import MAX_TRACKED_VALUES, ColumnSummary, ProgressFunction, summarize_frame, summarize_table
from .tables import TableOptions

__all__ = [
    "CODE_MAX_VALUES",
    "CODE_MIN_REPEATS",
    "INFER_BINS",
    "INFER_MAX_RANGE",
    "MISSING_LABEL",
    "free_root_label",
    "guess_kind",
    "holds_codes",
    "infer_attribute",
    "infer_numbers",
    "infer_schema",
    "infer_table_schema",
    "missing_code",
]

#: Integer columns spanning at most this many values become an integer range; wider ones, bins.
INFER_MAX_RANGE = 1000
#: Number of bins proposed for wide or fractional numeric columns.
INFER_BINS = 100
#: The value empty cells of a text column count as.
MISSING_LABEL = "(missing)"
#: Widely spread integers are codes (:func:`holds_codes`) only up to this many distinct values...
CODE_MAX_VALUES = 1000
#: ... each found in this many cells on average (a quantity's values are mostly distinct).
CODE_MIN_REPEATS = 5
# A number written with a leading zero ("01", "0601"): a fixed-width code.
_LEADING_ZERO = re.compile(r"[+-]?0\d")


def holds_codes(column: ColumnSummary) -> bool:
    """Whether a column of numbers holds codes (a category each, not a quantity): proposed
    nominal, since an order or bins would mean nothing, or merge codes. Codes are

    - at most two distinct values (1/2 for sex, 0/1 for yes or no: as ordinal or nominal they
      answer the same queries),
    - numbers written with a leading zero (``01``): a fixed-width code, or
    - non-negative integers spread too widely for a range (more than :data:`INFER_MAX_RANGE`
      apart, such as industry codes 170 to 9920), at most :data:`CODE_MAX_VALUES` of them, each
      in :data:`CODE_MIN_REPEATS` cells or more on average, none of them in most cells: bins of
      a quantity stay bins, whether its values are mostly distinct (incomes) or most people
      have none of it (capital gains: 0 in 96% of the cells, a few hundred amounts besides).

    A guess, like every proposal: the custodian sees it and can change the type.
    """
    values = column.values
    if not column.numeric or not values or column.minimum is None or column.maximum is None:
        return False
    if len(values) <= 2 or any(_LEADING_ZERO.match(value.strip()) for value in values):
        return True
    return (
        column.integer and column.minimum >= 0 and column.maximum - column.minimum + 1 > INFER_MAX_RANGE
        and len(values) <= CODE_MAX_VALUES
        and column.counted is not None and column.counted >= CODE_MIN_REPEATS * len(values)
        and column.most_common is not None and 2 * column.most_common <= column.counted
    )


def guess_kind(column: ColumnSummary) -> Literal["ordinal", "nominal"]:
    """The type :func:`infer_attribute` proposes for the column (without building its domain)."""
    return "ordinal" if column.numeric and column.distinct > 0 and not holds_codes(column) else "nominal"


def infer_numbers(column: ColumnSummary) -> OrdinalAttribute | None:
    """The ordinal domain proposed for a column of numbers, codes or not (an integer range, or
    bins), or None when the column is not numbers float64 holds exactly."""
    lo, hi = column.minimum, column.maximum
    # numbers of every size float64 holds exactly (and whose spread it can divide into bins)
    if not column.numeric or lo is None or hi is None or max(abs(lo), abs(hi)) >= 2.0**53:
        return None
    # A value of their own for missing cells, after the numbers (see the module docstring).
    own: dict[str, Any] = {"missing": missing_code(column), "missing_at_end": True} if column.missing else {}
    if column.integer and hi - lo + 1 <= INFER_MAX_RANGE:
        return OrdinalAttribute.integer_range(column.name, int(lo), int(hi), domain_from_data=True, **own)
    width = _nice_width((hi - lo) / INFER_BINS if hi > lo else 1.0)
    start = math.floor(lo / width) * width
    stop = (math.floor(hi / width) + 1) * width
    try:
        bins = NumericBins(_tidy(start), _tidy(stop), _tidy(width))
    except SchemaError:  # edges float64 cannot tell apart: propose the values themselves
        return None
    return OrdinalAttribute(column.name, bins=bins, domain_from_data=True, **own)


def infer_attribute(column: ColumnSummary) -> Attribute:
    """The proposed attribute for one column (see the module docstring).

    Raises :class:`~privelet_gui.engine.SchemaError` for a text column with more distinct
    values than a summary tracks (``MAX_TRACKED_VALUES``): too many for a domain.
    """
    name = column.name
    numbers = None if holds_codes(column) else infer_numbers(column)
    if numbers is not None:
        return numbers
    if column.values is None:
        raise SchemaError(
            f"column {name!r} has more than {MAX_TRACKED_VALUES:,} distinct values, too many for a domain; "
            "leave it out, or bin or group its values first"
        )
    labels = list(column.values) or [MISSING_LABEL]
    missing = None
    if column.missing:
        missing = missing_code(column)
        if missing not in labels:
            labels.append(missing)
    return NominalAttribute(
        name, Hierarchy.flat(labels, root=free_root_label(labels)), missing=missing, domain_from_data=True
    )


def missing_code(column: ColumnSummary) -> str:
    """The code of the value of its own that a column's missing cells count as (see the
    module docstring): its one text meaning missing, or ``"(missing)"``."""
    occurring = [text for text, _ in column.missing_counts]
    if len(occurring) == 1 and not column.empty:
        return occurring[0]
    taken = set(column.values or ())
    label, k = MISSING_LABEL, 2
    while label in taken:
        label, k = f"{MISSING_LABEL[:-1]} {k})", k + 1
    return label


def infer_schema(table: pd.DataFrame, missing_values: Sequence[str] = ()) -> Schema:
    """Propose a schema from a table held in memory (``missing_values``: texts meaning
    missing, besides empty cells). **Not private** (see the module docstring).

    Examples
    --------
    >>> import pandas as pd
    >>> s = infer_schema(pd.DataFrame({"age": ["30", "41", "17"], "sex": ["1", "2", "2"], "job": ["b", "a", "b"]}))
    >>> [(a.name, a.kind, a.labels[:2], a.domain_from_data) for a in s]
    [('age', 'ordinal', ('17', '18'), True), ('sex', 'nominal', ('1', '2'), True), ('job', 'nominal', ('a', 'b'), True)]
    """
    return _inferred(summarize_frame(table, missing_values))


def infer_table_schema(
    path: str | os.PathLike[str],
    options: TableOptions | None = None,
    *,
    columns: Sequence[str] | None = None,
    progress: ProgressFunction | None = None,
) -> Schema:
    """:func:`infer_schema` of a table file (only ``columns``, if given), read chunk by chunk
    as the app reads it (:func:`~privelet_gui.io.summarize_table`): never held whole.
    **Not private** (see the module docstring)."""
    return _inferred(summarize_table(path, options, progress, columns=columns).columns)


def _inferred(columns: Sequence[ColumnSummary]) -> Schema:
    if not columns:
        raise SchemaError("the table has no columns to infer a schema from")
    return Schema([infer_attribute(column) for column in columns])


def free_root_label(labels: list[str]) -> str:
    """``"*"``, or another root label when ``"*"`` is itself a value (labels are unique in a tree)."""
    taken = set(labels)
    for candidate in ("*", "(all)", "(all values)"):
        if candidate not in taken:
            return candidate
    number = 2
    while f"(all {number})" in taken:
        number += 1
    return f"(all {number})"


def _nice_width(raw: float) -> float:
    """The smallest 1, 2 or 5 times a power of ten that is >= raw."""
    if raw <= 0:
        return 1.0
    exponent = math.floor(math.log10(raw))
    for mantissa in (1, 2, 5, 10):
        width = mantissa * 10.0**exponent
        if width >= raw * (1 - 1e-12):
            return width
    return 10.0 ** (exponent + 1)


def _tidy(x: float) -> int | float:
    """Round away floating-point noise; whole numbers become ints."""
    rounded = round(x, 12)
    return int(rounded) if float(rounded).is_integer() else rounded
