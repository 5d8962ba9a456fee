"""Attributes and schemas: the public domain of each column and how to encode it.

An attribute's domain must be public knowledge (a census code list, an age
range), never learned from the data being protected: the presence of a rare
value in a data-derived domain is itself a disclosure.
"""

from __future__ import annotations

import decimal
import math
import operator
import re
import sys
from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from functools import cache, cached_property
from typing import TYPE_CHECKING, Any, Literal, overload

import numpy as np

from ..errors import InternalError, SchemaError, shown
from ..memory import byte_size
from .hierarchy import Hierarchy

if TYPE_CHECKING:  # pandas is imported where tables are encoded, not with the engine
    import pandas as pd

__all__ = [
    "MAX_AXIS_VALUES",
    "MAX_MISSING_VALUES",
    "RANGE_BOUNDS",
    "Attribute",
    "EncodedColumn",
    "NominalAttribute",
    "NumericBins",
    "OrdinalAttribute",
    "OutOfRange",
    "Schema",
    "check_missing_values",
]

OutOfRange = Literal["error", "clamp", "drop"]
_OUT_OF_RANGE = ("error", "clamp", "drop")

#: The most values one integer range or set of bins may have. Their labels are computed, not
#: stored, but the frequency matrix still holds a float64 cell per value (512 MiB for this axis
#: alone): a wider domain is refused before anything is built, with the memory it would need.
MAX_AXIS_VALUES = 1 << 26

# Integer ranges lie within the 64-bit integers, where every position is computed exactly.
_INT64_MIN = -(1 << 63)
_INT64_MAX = (1 << 63) - 1
#: The smallest first and the largest last value of an integer range.
RANGE_BOUNDS = (_INT64_MIN, _INT64_MAX)
# Below this magnitude every integer is a float64, so integral floats convert exactly.
_FLOAT_INTEGERS = 2.0**53
# How numbers are written in a table cell (ASCII digits only, as pandas and CSV files write them).
_PLAIN_INTEGER = re.compile(r"[+-]?[0-9]{1,18}")
_DECIMAL_NUMBER = re.compile(r"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?")
_INFINITY = {"inf": 1, "+inf": 1, "infinity": 1, "+infinity": 1, "-inf": -1, "-infinity": -1}
#: The most texts meaning "missing" one table or column may name (real tables use one or two).
MAX_MISSING_VALUES = 100
_MAX_MISSING_TEXT = 200
# Room for any exponent, so that comparing a written number with a bound never rounds.
_EXACT = decimal.Context(prec=64, Emax=decimal.MAX_EMAX, Emin=decimal.MIN_EMIN, traps=[decimal.InvalidOperation])


def _too_wide(name: str, what: str, count: int) -> SchemaError:
    return SchemaError(
        f"attribute {name!r}: {what} has {count:,} values, more than the {MAX_AXIS_VALUES:,} one axis may hold "
        f"(its frequency matrix alone would need {byte_size(8 * count)}); group the numbers into bins"
    )


def _format_edge(x: float) -> str:
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return str(int(x)) if x.is_integer() else repr(x)


def _exact_float(name: str, value: object) -> float:
    """``value`` as a float64, refused unless it is a finite number float64 holds exactly."""
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise SchemaError(f"bins.{name} must be a finite number, got {shown(value)}")
    try:
        exact = float(value) == value
    except OverflowError:
        exact = False
    if not exact or not math.isfinite(float(value)):
        raise SchemaError(f"bins.{name} must be a finite number that float64 holds exactly, got {shown(value)}")
    return float(value)


@dataclass(frozen=True)
class NumericBins:
    """Numeric bins: equal-width ``[start, start + width), ...`` up to ``stop`` (exclusive), or
    the bins between given edges (:meth:`from_edges`: ``[e0, e1), [e1, e2), ...``), with
    optional open ends.

    With ``open_below`` a first bin ``(-inf, start)`` holds every number below ``start``; with
    ``open_above`` a last bin ``[stop, inf)`` every number from ``stop`` on (income brackets:
    below 0, 0, 1 to 10,000, ..., 150,000 and more). Numbers outside the bins (only past an
    end that is not open) follow the attribute's ``out_of_range`` policy.

    Bin ``i`` holds the numbers ``x`` with ``edge(i) <= x < edge(i + 1)``: for equal widths
    ``start + k * width`` in float64 with the last bin ending at ``stop``, exactly the
    intervals its labels show. Numbers are compared as float64 values.

    Parameters
    ----------
    start : float
        The first bin's lower edge (an exact float64 number).
    stop : float
        Where the last closed bin ends (excluded); greater than ``start``.
    width : float, optional
        The bins' width (positive); None only for bins between edges.
    edges : tuple of float, optional, keyword-only
        The edges, increasing (use :meth:`from_edges`); then ``start`` and ``stop`` are the
        first and last edge and ``width`` is None.
    open_below : bool, default False, keyword-only
        Add a first bin ``(-inf, start)``.
    open_above : bool, default False, keyword-only
        Add a last bin ``[stop, inf)``.

    Raises
    ------
    SchemaError
        A width that is not positive or too small for the numbers' float64 spacing, ``stop``
        not above ``start``, edges not increasing or fewer than two, both a width and edges,
        a span float64 cannot hold, more bins than one axis may hold, or an open flag that is
        not a bool.

    Examples
    --------
    >>> income = NumericBins.from_edges([0, 1, 10_000, 150_000], open_below=True, open_above=True)
    >>> income.count, list(income.labels())
    (5, ['(-inf, 0)', '[0, 1)', '[1, 10000)', '[10000, 150000)', '[150000, inf)'])
    >>> income.index_of_number(-3.5), income.index_of_number(2e6)
    (0, 4)
    >>> NumericBins(0, 30, 10).labels(clamped=True)[:]  # a clamped first and last bin hold all beyond
    ('(-inf, 10)', '[10, 20)', '[20, inf)')
    """

    start: float
    stop: float
    width: float | None = None  # None for bins between given edges
    edges: tuple[float, ...] | None = field(default=None, kw_only=True)
    open_below: bool = field(default=False, kw_only=True)
    open_above: bool = field(default=False, kw_only=True)
    _inner: int = field(init=False, repr=False, compare=False, default=0)

    def __post_init__(self) -> None:
        for flag in ("open_below", "open_above"):
            if not isinstance(getattr(self, flag), bool):
                raise SchemaError(f"bins.{flag} must be true or false, got {shown(getattr(self, flag))}")
        if self.edges is not None:
            self._check_edges()
            return
        start, stop = _exact_float("start", self.start), _exact_float("stop", self.stop)
        if self.width is None:
            raise SchemaError("bins need a width (equal-width bins) or a list of edges (NumericBins.from_edges)")
        width = _exact_float("width", self.width)
        if width <= 0:
            raise SchemaError(f"bins.width must be positive, got {self.width!r}")
        if stop <= start:
            raise SchemaError(f"bins.stop ({self.stop!r}) must be greater than bins.start ({self.start!r})")
        if not math.isfinite(stop - start):
            raise SchemaError(
                f"bins from {self.start!r} to {self.stop!r} span more than float64 can hold (the largest number is "
                f"{sys.float_info.max:.4g}); use a narrower range, with an open end (open_below, open_above) or "
                "out_of_range clamp or drop for the numbers beyond it"
            )
        # Consecutive edges must be distinct floats, else bins would be empty or share a label.
        if width < 4 * float(np.spacing(max(abs(start), abs(stop)))):
            raise SchemaError(
                f"bins.width {self.width!r} is too small for numbers as large as {max(abs(start), abs(stop))!r}: "
                "float64 cannot tell the bin edges apart; use wider bins"
            )
        ratio = (stop - start) / width
        if ratio + self.open_below + self.open_above > MAX_AXIS_VALUES:
            raise SchemaError(
                f"bins from {self.start!r} to {self.stop!r} of width {self.width!r} make {math.ceil(ratio):,} bins, "
                f"more than the {MAX_AXIS_VALUES:,} one axis may hold; use wider bins"
            )
        # The first count whose bins reach stop, counted with the float edges the labels show.
        count = max(math.ceil(ratio), 1)
        while count > 1 and start + (count - 1) * width >= stop:
            count -= 1
        while start + count * width < stop:
            count += 1
        object.__setattr__(self, "_inner", count)

    def _check_edges(self) -> None:
        edges = self.edges
        if self.width is not None:
            raise SchemaError("bins have either a width (equal-width bins) or a list of edges, not both")
        if isinstance(edges, (str, bytes)) or not isinstance(edges, Sequence):
            raise SchemaError(f"bins.edges must be a list of numbers in increasing order, got {shown(edges)}")
        if len(edges) < 2:
            raise SchemaError(f"bins.edges needs at least two numbers (the first bin's ends), got {shown(list(edges))}")
        if len(edges) - 1 + self.open_below + self.open_above > MAX_AXIS_VALUES:
            raise SchemaError(
                f"{len(edges) - 1:,} bins between edges, more than the {MAX_AXIS_VALUES:,} one axis may hold"
            )
        exact = tuple(_exact_float(f"edges[{k}]", value) for k, value in enumerate(edges))
        for k in range(1, len(exact)):
            if exact[k] <= exact[k - 1]:
                raise SchemaError(
                    f"bins.edges must increase: edges[{k}] = {shown(edges[k])} is not greater than "
                    f"edges[{k - 1}] = {shown(edges[k - 1])}"
                )
        if (self.start, self.stop) != (exact[0], exact[-1]):
            raise SchemaError("bins.start and bins.stop are the first and last edge; make them with NumericBins.from_edges")
        object.__setattr__(self, "edges", exact)
        object.__setattr__(self, "_inner", len(exact) - 1)

    @classmethod
    def from_edges(cls, edges: Iterable[float], *, open_below: bool = False, open_above: bool = False) -> NumericBins:
        """The bins ``[edges[0], edges[1]), [edges[1], edges[2]), ...`` (increasing, exact float64
        numbers), with an open first and/or last bin as asked.

        Parameters
        ----------
        edges : iterable of float
            At least two numbers, increasing.
        open_below : bool, default False, keyword-only
            Add a first bin ``(-inf, edges[0])``.
        open_above : bool, default False, keyword-only
            Add a last bin ``[edges[-1], inf)``.

        Returns
        -------
        NumericBins

        Raises
        ------
        SchemaError
            Fewer than two edges, edges not increasing or not exact float64 numbers, or too many bins.
        """
        items = tuple(edges)
        if len(items) < 2:
            raise SchemaError(f"bins.edges needs at least two numbers (the first bin's ends), got {shown(list(items))}")
        first, last = items[0], items[-1]
        return cls(first, last, edges=items, open_below=open_below, open_above=open_above)

    @property
    def count(self) -> int:
        """The number of bins (open ends included)."""
        return self._inner + self.open_below + self.open_above

    @property
    def uniform(self) -> bool:
        """Whether the bins are equal-width and closed at both ends (``start``, ``stop`` and
        ``width`` say everything about them)."""
        return self.edges is None and not self.open_below and not self.open_above

    @property
    def lowest(self) -> float:
        """The smallest number a bin holds (-inf with an open first bin)."""
        return -math.inf if self.open_below else float(self.start)

    @property
    def highest(self) -> float:
        """Where the bins end, excluded (inf with an open last bin)."""
        return math.inf if self.open_above else float(self.stop)

    def _inner_edge(self, k: int) -> float:
        if self.edges is not None:
            return self.edges[k]
        if self.width is None:
            raise InternalError("bins without edges have no width")
        return float(self.stop) if k >= self._inner else float(self.start) + k * float(self.width)

    def edge(self, i: int) -> float:
        """The lower edge of bin ``i`` (-inf for an open first bin); ``edge(count)`` is where
        the last bin ends (``stop``, or inf for an open last bin).

        Parameters
        ----------
        i : int
            A bin, ``0 <= i <= count``.

        Returns
        -------
        float
        """
        if self.open_below:
            if i <= 0:
                return -math.inf
            i -= 1
        if i > self._inner:
            return math.inf
        return self._inner_edge(i)

    @cached_property
    def _edge_array(self) -> np.ndarray:
        if self.edges is None:
            raise InternalError("bins without edges were asked for their edge array")
        return np.asarray(self.edges, dtype=np.float64)

    def _inner_positions(self, numbers: np.ndarray) -> np.ndarray:
        """The closed bins' positions (below 0 under ``start``, ``_inner`` or more from ``stop`` on)."""
        if self.edges is not None:
            index = np.searchsorted(self._edge_array, numbers, side="right") - 1
            return np.where(np.isnan(numbers), np.nan, index.astype(np.float64))
        if self.width is None:
            raise InternalError("bins without edges have no width")
        start, stop, width, count = float(self.start), float(self.stop), float(self.width), self._inner
        with np.errstate(invalid="ignore", over="ignore"):
            guess = np.floor((numbers - start) / width)
            inside = (numbers >= start) & (numbers < stop)
            index = np.clip(np.where(inside, guess, 0), 0, count - 1)
            # Division rounds: move to the bin whose float edges hold the number, as the labels say.
            index -= inside & (numbers < start + index * width)
            index += inside & (index + 1 < count) & (numbers >= start + (index + 1) * width)
        return np.where(inside, index, np.where(numbers >= stop, np.maximum(guess, count), guess))

    def positions(self, numbers: np.ndarray) -> np.ndarray:
        """The bin of each number, as float64 (NaN stays NaN): below 0 for numbers under
        the first bin, ``count`` or more for numbers past the last (both outside; never with
        open ends).

        Parameters
        ----------
        numbers : numpy.ndarray
            Numbers (any shape; converted to float64).

        Returns
        -------
        numpy.ndarray
            float64, ``numbers``' shape.
        """
        numbers = np.asarray(numbers, dtype=np.float64)
        index = self._inner_positions(numbers)
        if self.open_below:
            index = np.where(numbers < float(self.start), 0.0, index + 1)
        if self.open_above:
            index = np.where(numbers >= float(self.stop), float(self.count - 1), index)
        return index

    def index_of_number(self, number: float) -> int | None:
        """The bin holding ``number``, or None when it lies outside every bin.

        Parameters
        ----------
        number : float
            A number (an int too large for float64 counts as +/-inf).

        Returns
        -------
        int or None
            ``0 <= index < count``, or None.
        """
        try:
            value = float(number)
        except OverflowError:
            value = math.inf if number > 0 else -math.inf
        index = self.positions(np.array([value]))[0]
        return int(index) if 0 <= index < self.count else None

    def labels(self, *, clamped: bool = False) -> Sequence[str]:
        """``"[a, b)"`` for each bin (``"(-inf, b)"`` and ``"[a, inf)"`` for open ones), computed
        when asked for (nothing is stored). ``clamped``: numbers beyond the first and last bins
        are counted in them (``out_of_range="clamp"``), so those say they are open.

        Parameters
        ----------
        clamped : bool, default False, keyword-only
            Label the first and last bins as open (see above).

        Returns
        -------
        sequence of str
            ``count`` labels, in bin order.
        """
        return _BinLabels(self, clamped)


class _ComputedLabels(Sequence[str]):
    """A domain's labels computed from their positions, never stored (integer ranges, bins):
    a range of 60 million values costs nothing until a label is asked for, and finding a
    label's position is arithmetic. Slices are tuples; equal to a tuple of the same labels."""

    @abstractmethod
    def __len__(self) -> int:
        """The number of labels."""

    @abstractmethod
    def label(self, i: int) -> str:
        """The label at position ``0 <= i < len(self)``."""

    @abstractmethod
    def position(self, label: str) -> int | None:
        """The position of ``label``, or None when it is not one of the labels."""

    @overload
    def __getitem__(self, index: int) -> str: ...

    @overload
    def __getitem__(self, index: slice) -> tuple[str, ...]: ...

    def __getitem__(self, index: int | slice) -> str | tuple[str, ...]:
        size = len(self)
        if isinstance(index, slice):
            return tuple(self.label(i) for i in range(*index.indices(size)))
        i = operator.index(index)
        if i < 0:
            i += size
        if not 0 <= i < size:
            raise IndexError(f"label position {index} is outside 0..{size - 1}")
        return self.label(i)

    def __iter__(self) -> Iterator[str]:
        return (self.label(i) for i in range(len(self)))

    def __contains__(self, value: object) -> bool:
        return isinstance(value, str) and self.position(value) is not None

    def index(self, value: object, start: int = 0, stop: int | None = None) -> int:
        found = self.position(value) if isinstance(value, str) else None
        end = len(self) if stop is None else stop
        if found is None or not start <= found < end:
            raise ValueError(f"{value!r} is not one of the labels")
        return found

    def count(self, value: object) -> int:
        return int(value in self)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (_ComputedLabels, tuple)):
            return len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=True))
        return NotImplemented

    def __hash__(self) -> int:
        return hash(tuple(self))  # equal to the tuple of its labels, so hashed as one (slow when huge: rare)

    def __repr__(self) -> str:
        first = ", ".join(map(repr, self[:3])) + (", ..." if len(self) > 3 else "")
        return f"{type(self).__name__}({len(self):,} labels: {first})"


class _RangeLabels(_ComputedLabels):
    """``str(start + i)``: the labels of an integer range. When numbers beyond it are clamped
    to its ends, those say so: ``"<=0"`` and ``">=99"`` (their plain text still finds them,
    as files written before name them)."""

    def __init__(self, values: range, clamped: bool = False):
        self._values = values
        self._clamped = clamped

    def __len__(self) -> int:
        return len(self._values)

    def label(self, i: int) -> str:
        text = str(self._values[i])
        if self._clamped and len(self._values) > 1:
            if i == 0:
                return f"<={text}"
            if i == len(self._values) - 1:
                return f">={text}"
        return text

    def position(self, label: str) -> int | None:
        # Only the canonical text of an integer is a label ("7", not "07", "+7" or "7.0").
        if self._clamped and label[:2] in ("<=", ">="):
            found = self.position(label[2:])
            return found if found is not None and self.label(found) == label else None
        if len(label) > 20 or not _CANONICAL_INTEGER.fullmatch(label):
            return None
        value = int(label)
        return value - self._values.start if value in self._values else None


_CANONICAL_INTEGER = re.compile(r"0|-?[1-9][0-9]*")


class _BinLabels(_ComputedLabels):
    """``"[a, b)"``: the labels of bins, ``"(-inf, b)"`` and ``"[a, inf)"`` for open ones (and,
    when ``clamped``, for the first and last, which then hold every number beyond them: their
    closed form still finds them, as files written before name them)."""

    _FORM = re.compile(r"([\[(])([^,\s]+), ([^,\s]+)\)")

    def __init__(self, bins: NumericBins, clamped: bool = False):
        self._bins = bins
        self._clamped = clamped

    def __len__(self) -> int:
        return self._bins.count

    def label(self, i: int) -> str:
        return self._text(i, open_ends=self._clamped)

    def _text(self, i: int, *, open_ends: bool) -> str:
        lower, upper = self._bins.edge(i), self._bins.edge(i + 1)
        if open_ends and i == 0:
            lower = -math.inf
        if open_ends and i == self._bins.count - 1:
            upper = math.inf
        if lower == -math.inf:
            return f"(-inf, {_format_edge(upper)})"
        return f"[{_format_edge(lower)}, {_format_edge(upper)})"

    def position(self, label: str) -> int | None:
        form = self._FORM.fullmatch(label)
        if form is None:
            return None
        if form.group(2) == "-inf":
            i = 0
        else:
            try:
                lower = float(form.group(2))
            except ValueError:
                return None
            if not math.isfinite(lower):
                return None
            found = self._bins.index_of_number(lower)
            if found is None:
                return None
            i = found
        if label == self.label(i):
            return i
        if self._clamped and i in (0, self._bins.count - 1) and label == self._text(i, open_ends=False):
            return i
        return None


class _AppendedLabels(_ComputedLabels):
    """The labels of a computed domain (a range, bins) and one more after them: the value of
    its own that missing cells count as (``missing_at_end``)."""

    def __init__(self, base: _ComputedLabels, last: str):
        self._base = base
        self._last = last

    def __len__(self) -> int:
        return len(self._base) + 1

    def label(self, i: int) -> str:
        return self._last if i == len(self._base) else self._base.label(i)

    def position(self, label: str) -> int | None:
        return len(self._base) if label == self._last else self._base.position(label)


def check_missing_values(values: object, where: str) -> tuple[str, ...]:
    """Texts meaning "missing" (``["N", "NA"]``), checked: a list of distinct, non-blank, one-line
    texts, at most :data:`MAX_MISSING_VALUES` of them. Empty cells are always missing, so they
    need no text. ``where`` names the setting in messages (``"attribute 'AGEP'"``)."""
    if isinstance(values, str) or not isinstance(values, Iterable):
        raise SchemaError(
            f"{where}: the values meaning missing are a list of texts, e.g. [\"N\", \"NA\"], got {shown(values)}"
        )
    items = tuple(values)
    if len(items) > MAX_MISSING_VALUES:
        raise SchemaError(f"{where}: {len(items):,} values meaning missing, more than {MAX_MISSING_VALUES}; name fewer")
    seen: set[str] = set()
    for item in items:
        if not isinstance(item, str):
            raise SchemaError(f"{where}: a value meaning missing must be text (as the table holds it), got {shown(item)}")
        if not item.strip():
            raise SchemaError(f"{where}: empty cells are always missing; list only texts such as \"N\" or \"NA\"")
        if len(item) > _MAX_MISSING_TEXT or "\n" in item or "\r" in item:
            raise SchemaError(f"{where}: {shown(item)} is not a cell's text (one line of at most {_MAX_MISSING_TEXT} characters)")
        if item in seen:
            raise SchemaError(f"{where}: {item!r} is listed twice among the values meaning missing")
        seen.add(item)
    return items


@dataclass(frozen=True)
class EncodedColumn:
    """Axis indices of one column's values; ``-1`` marks rows to drop or report."""

    codes: np.ndarray  # integers, one per row; -1 where the value is not in the domain (read-only)
    outside: np.ndarray | None = None  # rows whose number lies outside the range or bins (None: none)
    clamped_rows: np.ndarray | None = None  # rows moved to the first/last value by the clamp policy
    all_valid: bool = False  # known without looking: every code is a valid axis index
    missing_rows: np.ndarray | None = None  # rows with a missing cell that no value counts (code -1; None: none)

    @property
    def clamped(self) -> int:
        return 0 if self.clamped_rows is None else int(self.clamped_rows.sum())


class _AttributeBase(ABC):
    name: str
    column: str | None
    missing: str | None
    missing_values: tuple[str, ...] | None
    drop_missing: bool

    @property
    def source_column(self) -> str:
        """The table column this attribute reads (its name unless ``column`` is set)."""
        return self.column or self.name

    @property
    def size(self) -> int:
        return len(self.labels)

    @property
    def display_labels(self) -> tuple[str, ...] | None:
        """The text shown for each value in axis order (see :mod:`privelet_gui.engine.hierarchy`),
        or None when the attribute has no display labels (its values are shown as they are)."""
        return None

    def _check_missing_options(self) -> None:
        """The missing-value settings common to both kinds (called at the end of ``__init__``)."""
        if self.missing_values is not None:
            object.__setattr__(
                self, "missing_values", check_missing_values(self.missing_values, f"attribute {self.name!r}")
            )
            taken = self._value_among(self.missing_values)
            if taken is not None:
                raise SchemaError(
                    f"attribute {self.name!r}: a cell holding {taken!r} is one of its values, so {taken!r} cannot also "
                    "mean missing (such cells would silently count as missing); remove it from the texts meaning missing"
                )
        if self.drop_missing and self.missing is not None:
            raise SchemaError(
                f"attribute {self.name!r}: missing cells either count as {self.missing!r} or are dropped, not both; "
                "remove one of the two settings"
            )

    def _value_among(self, texts: Iterable[str]) -> str | None:
        """The first of ``texts`` that a cell holds for one of the domain's values (as counting
        reads it), or None. ``missing`` itself is left out: its cells count as it either way."""
        return next((text for text in texts if text != self.missing and self._is_value_text(text)), None)

    @abstractmethod
    def _is_value_text(self, text: str) -> bool:
        """Whether a cell holding ``text`` counts as one of the domain's declared values."""

    def _missing_index(self) -> int:
        """The axis index missing cells count as (``missing`` is set)."""
        return self.index_of(self.missing)

    def _missing_rows(self, column: pd.Series) -> np.ndarray:
        """Rows whose cell is missing: empty (NA, blank text) or one of ``missing_values``."""
        missing = _missing_mask(column)
        if self.missing_values:
            missing = missing | cell_text(column).isin(self.missing_values).to_numpy(dtype=bool, na_value=False)
        return missing

    def _resolved(self, codes: np.ndarray, missing: np.ndarray | None, **report: Any) -> EncodedColumn:
        """Codes with the missing rows counted as the ``missing`` value, or left at -1 and
        reported (``missing_rows``) for the counter to drop or refuse."""
        if missing is None or not missing.any():
            return EncodedColumn(codes, **report)
        codes = codes.astype(np.int64)  # a copy: codes may share memory with the table
        if self.missing is not None:
            codes[missing] = self._missing_index()
            return EncodedColumn(codes, **report)
        codes[missing] = -1
        return EncodedColumn(codes, missing_rows=missing, **report)

    @property
    @abstractmethod
    def labels(self) -> Sequence[str]:
        """The domain's values as text, in axis order."""

    @cached_property
    def _label_index(self) -> pd.Index:
        import pandas as pd

        return pd.Index(self.labels)

    def position_of(self, label: str) -> int | None:
        """The axis index of the value whose text label is ``label``, or None when it is not
        one (arithmetic for ranges and bins: nothing as large as the domain is built).

        Parameters
        ----------
        label : str
            A value's text label.

        Returns
        -------
        int or None
            ``0 <= index < size``, or None.
        """
        labels = self.labels
        if isinstance(labels, _ComputedLabels):
            return labels.position(label)
        pos = int(self._label_index.get_indexer(pd_index([label]))[0])
        return pos if pos >= 0 else None

    def index_of(self, label: object) -> int:
        """Axis index of a domain value given as its text label.

        Parameters
        ----------
        label : object
            A value, compared by its text (``str(label)``).

        Returns
        -------
        int
            ``0 <= index < size``.

        Raises
        ------
        SchemaError
            It is not a value of the attribute (the message shows the first values).
        """
        pos = self.position_of(str(label))
        if pos is None:
            first = ", ".join(self.labels[:5]) + (", ..." if self.size > 5 else "")
            raise SchemaError(f"{shown(label)} is not a value of attribute {self.name!r} (values: {first})")
        return pos

    def encode(self, column: pd.Series, *, categories_memo: dict[str, Any] | None = None) -> EncodedColumn:
        """Axis index of every row (see :class:`EncodedColumn`).

        A categorical column is encoded one distinct value at a time and its rows only
        gathered, which is how tables read from CSV are counted quickly. Chunks of one
        file usually share their categories: give the same ``categories_memo`` dict for
        every chunk of a column and identical categories are encoded only once.

        Parameters
        ----------
        column : pandas.Series
            The attribute's column of one chunk of the table.
        categories_memo : dict, optional, keyword-only
            A dict kept across the chunks of one column (see above).

        Returns
        -------
        EncodedColumn
            Each row's axis index (negative where the row is missing or outside the domain), and
            which rows were outside, clamped or missing.
        """
        import pandas as pd

        if isinstance(column.dtype, pd.CategoricalDtype):
            return self._encode_categorical(column, {} if categories_memo is None else categories_memo)
        return self._encode_rows(column)

    @abstractmethod
    def _encode_rows(self, column: pd.Series) -> EncodedColumn:
        """Axis index of every row of a plain (not categorical) column."""

    def _encode_categorical(self, column: pd.Series, memo: dict[str, Any]) -> EncodedColumn:
        import pandas as pd

        raw = column.cat.codes.to_numpy()  # -1 marks an empty cell
        categories = column.cat.categories
        known = memo.get("categories")
        # the same values of the same type (1 and 1.0 are equal but not the same label)
        if known is not None and known.dtype == categories.dtype and known.equals(categories):
            values = memo["values"]
        else:
            values = self._encode_rows(pd.Series(categories, dtype=categories.dtype))
            memo.update(categories=categories, values=values)
        missing_code = self._missing_index() if self.missing is not None else -1
        complete = len(raw) == 0 or raw.min() >= 0
        valid = values.codes.min() >= 0 if len(values.codes) else True
        if complete and valid and values.clamped_rows is None and np.array_equal(values.codes, np.arange(len(values.codes))):
            return EncodedColumn(raw, all_valid=True)  # the categories are the labels, in order

        def gathered(per_value: np.ndarray | None, empty_cell: bool = False) -> np.ndarray | None:
            return None if per_value is None else np.append(per_value, empty_cell)[raw]

        # code -1 picks the appended entry; the smallest integer type keeps a chunk's codes small
        lookup = np.append(values.codes, missing_code).astype(np.min_scalar_type(-max(self.size, 2)))
        missing_rows = None
        if missing_code < 0 and (not complete or values.missing_rows is not None):
            # empty cells (code -1) and categories meaning missing, which no value counts
            per_value = values.missing_rows if values.missing_rows is not None else np.zeros(len(categories), bool)
            missing_rows = gathered(per_value, empty_cell=True)
        return EncodedColumn(
            lookup[raw],
            gathered(values.outside),
            gathered(values.clamped_rows),
            all_valid=valid and (complete or missing_code >= 0),
            missing_rows=missing_rows,
        )

    def _encode_text(self, column: pd.Series) -> EncodedColumn:
        """Codes of a column matched against the labels as text, missing cells resolved."""
        missing = self._missing_rows(column)
        codes = self._label_index.get_indexer(pd_index(cell_text(column)))
        return self._resolved(codes, missing if missing.any() else None)


def pd_index(values: Sequence[str] | pd.Series) -> pd.Index:
    """``values`` as a pandas Index (what ``Index.get_indexer`` takes)."""
    import pandas as pd

    return pd.Index(values)


@dataclass(frozen=True, eq=True)
class OrdinalAttribute(_AttributeBase):
    """An attribute with an ordered domain, transformed with the Haar wavelet.

    ``values`` lists the domain in order; a run of consecutive integers is kept as a
    ``range`` (given as a range or as a list: the same attribute either way), whose
    labels are computed, not stored. Its numbers are compared exactly, whatever their size.
    With ``bins`` (:class:`NumericBins`: equal widths or given edges, with open ends or
    not), the column is parsed as numbers and each value falls into its bin; the labels are
    the bins (``"[0, 1000)"``, ``"[150000, inf)"``).
    ``domain_from_data`` records that the values were learned from the table being
    protected (not private: see the module docstring); it changes nothing else.
    ``out_of_range`` says what to do with a number outside an integer range or
    the bins: ``"error"`` (default), ``"clamp"`` to the first/last value, or
    ``"drop"`` the row. Clamped first and last values hold every number beyond them, and
    their labels say so: ``"<=0"`` and ``">=99"`` for a range, ``"(-inf, 10)"`` and
    ``"[190000, inf)"`` for bins (their plain labels still name them, as files written
    before do).

    Missing cells are empty ones and, with ``missing_values``, cells holding one of those
    texts (``("N",)``; None: only empty cells, or the table's own list when a reader
    supplies one, see :meth:`Schema.with_default_missing_values`); a text that a cell holds
    for one of the domain's values is refused there (such cells would silently count as
    missing), ``missing`` itself excepted. They count as the value
    ``missing``, or are dropped (``drop_missing``: each one reported by the counter), or
    else stop the counting with an error. ``missing`` is one of the values, or with
    ``missing_at_end`` a value of its own placed after the last one: the domain then has one
    more value (an integer range of 0..99 becomes 101 values; the Haar transform pads to the
    next power of two as before, so a domain of exactly 2^k values doubles its padding and
    adds one level, rho + 1). A range query over the numbers leaves it out unless it reaches
    the end of the axis; a query over the whole axis includes it.

    Parameters
    ----------
    name : str
        The attribute's name (non-empty text, unique in its schema).
    values : iterable, default ()
        The domain in order (text or numbers, each once; a range for consecutive integers);
        empty when ``bins`` is given.
    bins : NumericBins, optional, keyword-only
        Numeric bins instead of ``values``.
    out_of_range : {"error", "clamp", "drop"}, default "error", keyword-only
        See above.
    missing : str, optional, keyword-only
        The value missing cells count as (see above); None: they are dropped or refused.
    column : str, optional, keyword-only
        The table column to read; default: ``name``.
    domain_from_data : bool, default False, keyword-only
        See above.
    missing_values : iterable of str, optional, keyword-only
        Texts that mean missing (see above); None: only empty cells, or the table's own list.
    drop_missing : bool, default False, keyword-only
        Drop rows whose cell is missing (each reported by the counter).
    missing_at_end : bool, default False, keyword-only
        ``missing`` is a value of its own after the last one (see above).

    Raises
    ------
    SchemaError
        An empty or duplicated domain, both ``values`` and ``bins``, an unknown ``out_of_range``,
        ``missing`` that is not a value (or, with ``missing_at_end``, is one), a text of
        ``missing_values`` that is a value, or a flag that is not a bool.

    Examples
    --------
    >>> age = OrdinalAttribute.integer_range("age", 0, 100)
    >>> age.size, age.labels[:3], age.values
    (101, ('0', '1', '2'), range(0, 101))
    >>> age == OrdinalAttribute("age", list(range(101)))
    True
    """

    name: str
    values: Sequence[object] = ()
    bins: NumericBins | None = None
    out_of_range: OutOfRange = "error"
    missing: str | None = None
    column: str | None = None
    domain_from_data: bool = False
    kind: Literal["ordinal"] = field(default="ordinal", init=False)
    missing_values: tuple[str, ...] | None = None
    drop_missing: bool = False
    missing_at_end: bool = False

    def __init__(
        self,
        name: str,
        values: Iterable[object] = (),
        *,
        bins: NumericBins | None = None,
        out_of_range: OutOfRange = "error",
        missing: str | None = None,
        column: str | None = None,
        domain_from_data: bool = False,
        missing_values: Iterable[str] | None = None,
        drop_missing: bool = False,
        missing_at_end: bool = False,
    ):
        object.__setattr__(self, "name", _check_name(name))
        domain = _domain(name, values)
        object.__setattr__(self, "values", domain)
        object.__setattr__(self, "bins", bins)
        object.__setattr__(self, "out_of_range", out_of_range)
        object.__setattr__(self, "missing", missing)
        object.__setattr__(self, "column", column)
        object.__setattr__(self, "domain_from_data", bool(domain_from_data))
        object.__setattr__(self, "kind", "ordinal")
        object.__setattr__(self, "missing_values", missing_values)
        object.__setattr__(self, "drop_missing", drop_missing)
        object.__setattr__(self, "missing_at_end", missing_at_end)
        for flag in ("drop_missing", "missing_at_end"):
            if not isinstance(getattr(self, flag), bool):
                raise SchemaError(f"attribute {name!r}: {flag} must be true or false, got {getattr(self, flag)!r}")
        if missing is not None and (not isinstance(missing, str) or not missing):
            raise SchemaError(f"attribute {name!r}: missing must be a value's text label, got {shown(missing)}")
        if out_of_range not in _OUT_OF_RANGE:
            raise SchemaError(f"attribute {name!r}: out_of_range must be one of {_OUT_OF_RANGE}, got {out_of_range!r}")
        if bins is not None and not isinstance(bins, NumericBins):
            raise SchemaError(f"attribute {name!r}: bins must be NumericBins, got {type(bins).__name__}")
        if bins is not None and len(domain):
            raise SchemaError(f"attribute {name!r}: give either values or bins, not both")
        if bins is None and not len(domain):
            raise SchemaError(f"attribute {name!r} has an empty domain: list its values, a range or bins")
        if isinstance(domain, tuple):  # ranges and bins have distinct labels by construction
            dup = _first_duplicate(self._value_labels)
            if dup is not None:
                raise SchemaError(f"attribute {name!r}: value {dup!r} is listed twice; each value must appear once")
        if missing_at_end:
            if missing is None:
                raise SchemaError(
                    f"attribute {name!r}: missing_at_end needs the label of that value of its own ('missing', "
                    "e.g. \"(missing)\")"
                )
            if _position(self._value_labels, missing) is not None:
                raise SchemaError(
                    f"attribute {name!r}: {missing!r} is already one of its values, so it cannot also be a value of its "
                    "own after them; choose another label, or count missing cells as that value (no missing_at_end)"
                )
        elif missing is not None and self.position_of(str(missing)) is None:
            raise SchemaError(
                f"attribute {name!r}: missing={missing!r} is not one of its values; declare it first, or make it a "
                "value of its own at the end of the domain (missing_at_end)"
            )
        self._check_missing_options()

    @classmethod
    def integer_range(cls, name: str, lo: int, hi: int, **options: Any) -> OrdinalAttribute:
        """The integers ``lo..hi`` inclusive, parsed from the column as numbers.

        Parameters
        ----------
        name : str
            The attribute's name.
        lo, hi : int
            The first and last integer, ``lo <= hi`` (not bools).
        **options
            The keyword-only options of :class:`OrdinalAttribute` (``out_of_range``, ``missing``, ...).

        Returns
        -------
        OrdinalAttribute
            ``hi - lo + 1`` values (one more with ``missing_at_end``).

        Raises
        ------
        SchemaError
            Bounds that are not integers, an empty range, or options refused by the constructor.
        """
        for bound in (lo, hi):
            if isinstance(bound, bool) or not isinstance(bound, (int, np.integer)):
                raise SchemaError(f"attribute {name!r}: range bounds must be integers, got {shown(bound)}")
        lo, hi = int(lo), int(hi)
        if hi < lo:
            raise SchemaError(f"attribute {name!r}: range [{lo}, {hi}] is empty; the upper bound must be >= the lower")
        return cls(name, range(lo, hi + 1), **options)

    @cached_property
    def labels(self) -> Sequence[str]:
        base = self._value_labels
        if not self.missing_at_end:
            return base
        if self.missing is None:
            raise InternalError(f"attribute {self.name!r}: the missing values sit at the end, but no label names them")
        return _AppendedLabels(base, self.missing) if isinstance(base, _ComputedLabels) else (*base, self.missing)

    @cached_property
    def _value_labels(self) -> Sequence[str]:
        """The labels of the declared values (the range, the bins or the listed values)."""
        clamped = self.out_of_range == "clamp"
        if self.bins is not None:
            return self.bins.labels(clamped=clamped)
        if isinstance(self.values, range):
            return _RangeLabels(self.values, clamped)
        return tuple(str(v) for v in self.values)

    @property
    def _value_count(self) -> int:
        """How many declared values the domain has (all but a value of its own for missing cells)."""
        return self.size - 1 if self.missing_at_end else self.size

    @property
    def integer_start(self) -> int | None:
        """The first value when the domain is a run of consecutive integers, else None."""
        return self.values.start if isinstance(self.values, range) else None

    @property
    def is_numeric(self) -> bool:
        return self.bins is not None or self.integer_start is not None

    def position_of_number(self, number: float) -> int | None:
        """The value a cell holding ``number`` is counted as (a bin, or a whole number of the
        range; outside them, the first or last value when clamped), or None when it is counted
        as none (outside and not clamped, not whole for a range, or the domain is not numeric).

        Parameters
        ----------
        number : float
            A cell's number.

        Returns
        -------
        int or None
            The axis index, or None.
        """
        if self.bins is not None:
            index = self.bins.index_of_number(number)
            if index is None and self.out_of_range == "clamp" and not math.isnan(number):
                index = 0 if number < self.bins.lowest else self.bins.count - 1
            return index
        start = self.integer_start
        if start is None or not (math.isfinite(number) and float(number).is_integer()):
            return None
        position = int(number) - start
        if self.out_of_range == "clamp":
            return min(max(position, 0), self._value_count - 1)
        return position if 0 <= position < self._value_count else None

    def _is_value_text(self, text: str) -> bool:
        if self.bins is not None:
            number = _number_in(text)
            return number is not None and self.bins.index_of_number(number) is not None
        if isinstance(self.values, range):
            value = _exact_number(text.strip())
            return value is not None and self.values.start <= value < self.values.stop
        return _position(self._value_labels, text) is not None

    @cached_property
    def _number_markers(self) -> bool:
        """Whether a text meaning missing is written like a number (``-1``, ``999``): then an
        integer column may hold it."""
        return any(_DECIMAL_NUMBER.fullmatch(text.strip()) for text in self.missing_values or ())

    def _encode_rows(self, column: pd.Series) -> EncodedColumn:
        if not self.is_numeric:
            return self._encode_text(column)
        if self.bins is None and _is_plain_integer(column) and not self._number_markers:
            # Fast path for integer columns: no parsing, no missing values possible.
            values = column.to_numpy()
            start = self.integer_start
            if start is None:
                raise InternalError(f"attribute {self.name!r}: an integer domain without a first value")
            if len(values) and start <= int(values.min()) and int(values.max()) < start + self._value_count:
                # Positions in int64: small integer types could not hold them, and uint64 does
                # not mix with the other axes' signed codes.
                plain = start == 0 and np.can_cast(values.dtype, np.intp)
                codes = values if plain else values.astype(np.int64) - np.int64(start)
                return EncodedColumn(codes, all_valid=True)
        if self.bins is not None:
            missing = self._missing_rows(column)
            numbers = _as_numbers(column)
            unparsable = ~missing & np.isnan(numbers)
            position = np.where(missing | unparsable, 0, np.clip(self.bins.positions(numbers), -1, self._value_count))
            codes = position.astype(np.int64)
        else:
            codes, missing, unparsable = _integer_positions(column, self.values)  # type: ignore[arg-type]
            if self.missing_values:
                missing = missing | self._missing_rows(column)
                unparsable &= ~missing
        encoded = self._limit(codes, missing | unparsable)
        codes = encoded.codes
        codes[unparsable] = -1
        codes[missing] = -1
        return self._resolved(
            codes, missing if missing.any() else None, outside=encoded.outside, clamped_rows=encoded.clamped_rows
        )

    def _limit(self, codes: np.ndarray, skip: np.ndarray | None) -> EncodedColumn:
        """Apply the out-of-range policy to integer positions (``skip`` rows are left alone)."""
        count = self._value_count  # a value of its own for missing cells is no number's position
        outside = (codes < 0) | (codes >= count)
        if skip is not None:
            outside &= ~skip
        if not outside.any():
            return EncodedColumn(codes)
        if self.out_of_range == "clamp":
            np.clip(codes, 0, count - 1, out=codes)
            return EncodedColumn(codes, clamped_rows=outside)
        codes[outside] = -1
        return EncodedColumn(codes, outside)


@dataclass(frozen=True, eq=True)
class NominalAttribute(_AttributeBase):
    """An unordered attribute with a hierarchy, transformed with the nominal wavelet.

    The hierarchy's leaves are the domain; its leaf order is the axis order.
    ``domain_from_data`` records that the leaves were learned from the table being
    protected (not private: see the module docstring); it changes nothing else.

    With ``level`` (2 or more; the root is level 1) the domain is coarser than the
    hierarchy: its values are the nodes of that level (and the leaves above it), while
    the column still holds the finest values, each counted under its ancestor at that
    level (native-country counted by continent). :attr:`hierarchy` is then the hierarchy
    cut at that level and :attr:`finest` the full one (``finest`` as an argument is for copies:
    with ``level``, it is the hierarchy that is cut).

    Missing cells (empty ones, and those holding one of ``missing_values``: see
    :class:`OrdinalAttribute`) count as the leaf ``missing``, or are dropped
    (``drop_missing``), or else stop the counting with an error.

    Parameters
    ----------
    name : str
        The attribute's name (non-empty text, unique in its schema).
    hierarchy : Hierarchy
        The hierarchy; its leaves are the domain (cut at ``level`` when given).
    missing : str, optional, keyword-only
        The leaf missing cells count as; None: they are dropped or refused.
    column : str, optional, keyword-only
        The table column to read; default: ``name``.
    domain_from_data : bool, default False, keyword-only
        See above.
    missing_values : iterable of str, optional, keyword-only
        Texts that mean missing (see above); None: only empty cells, or the table's own list.
    drop_missing : bool, default False, keyword-only
        Drop rows whose cell is missing (each reported by the counter).
    level : int, optional, keyword-only
        The hierarchy level the domain is at (2 .. height); None: its leaves.
    finest : Hierarchy, optional, keyword-only
        For copies only (see above).

    Raises
    ------
    SchemaError
        ``hierarchy`` not a :class:`Hierarchy`, ``level`` outside 2 .. height, ``missing`` not
        a leaf, a text of ``missing_values`` that is a value, or ``drop_missing`` not a bool.
    """

    name: str
    hierarchy: Hierarchy
    missing: str | None = None
    column: str | None = None
    domain_from_data: bool = False
    kind: Literal["nominal"] = field(default="nominal", init=False)
    level: int | None = None
    finest: Hierarchy | None = None
    missing_values: tuple[str, ...] | None = None
    drop_missing: bool = False

    def __init__(
        self,
        name: str,
        hierarchy: Hierarchy,
        *,
        missing: str | None = None,
        column: str | None = None,
        domain_from_data: bool = False,
        level: int | None = None,
        finest: Hierarchy | None = None,
        missing_values: Iterable[str] | None = None,
        drop_missing: bool = False,
    ):
        object.__setattr__(self, "name", _check_name(name))
        if not isinstance(hierarchy, Hierarchy):
            raise SchemaError(f"attribute {name!r}: hierarchy must be a Hierarchy, got {type(hierarchy).__name__}")
        object.__setattr__(self, "level", level)
        if level is not None and finest is not None:  # a copy (dataclasses.replace) passes both back
            hierarchy = finest
        object.__setattr__(self, "finest", hierarchy)
        if level is not None:
            if isinstance(level, bool) or not isinstance(level, int) or not 2 <= level <= hierarchy.height:
                raise SchemaError(
                    f"attribute {name!r}: level must be a whole number from 2 to {hierarchy.height} (the hierarchy's "
                    f"levels below the root), got {level!r}"
                )
            hierarchy = hierarchy.cut(level)
        object.__setattr__(self, "hierarchy", hierarchy)
        object.__setattr__(self, "missing", missing)
        object.__setattr__(self, "column", column)
        object.__setattr__(self, "domain_from_data", bool(domain_from_data))
        object.__setattr__(self, "kind", "nominal")
        object.__setattr__(self, "missing_values", missing_values)
        object.__setattr__(self, "drop_missing", drop_missing)
        if not isinstance(drop_missing, bool):
            raise SchemaError(f"attribute {name!r}: drop_missing must be true or false, got {drop_missing!r}")
        # Counted at a level, the missing value is a leaf of the full hierarchy, counted under its node at the level.
        if missing is not None and missing not in set(self.finest.leaves):  # type: ignore[union-attr]
            raise SchemaError(f"attribute {name!r}: missing={missing!r} is not a leaf of its hierarchy; add it first")
        self._check_missing_options()

    @property
    def labels(self) -> tuple[str, ...]:
        return self.hierarchy.leaves

    @property
    def display_labels(self) -> tuple[str, ...] | None:
        return self.hierarchy.leaf_display_labels

    @property
    def out_of_range(self) -> OutOfRange:
        return "error"

    def _is_value_text(self, text: str) -> bool:
        if self.level is not None:  # the column holds the finest values, or the level's own
            return text in self._coarse_labels
        h = self.hierarchy
        return text in h and h.layout.fanout[h.index_of(text)] == 0

    def _missing_index(self) -> int:
        missing = self.missing if self.level is None else self._coarse_labels[str(self.missing)]
        return self.index_of(missing)

    def _encode_rows(self, column: pd.Series) -> EncodedColumn:
        if self.level is not None:
            # The finest values (and the coarse ones themselves) count under their level's node;
            # an unknown value keeps its text (and is reported as outside the domain).
            empty = self._missing_rows(column)
            text = column.astype(str)
            coarse = text.map(self._coarse_labels)
            column = coarse.where(coarse.notna(), text).astype(object)
            column[empty] = None
        return self._encode_text(column)

    @cached_property
    def _coarse_labels(self) -> dict[str, str]:
        """Every node label of the finest hierarchy at or below the level -> its node at the level."""
        if self.finest is None or self.level is None:
            raise InternalError(f"attribute {self.name!r}: coarse labels asked of an attribute with no hierarchy level")
        lay = self.finest.layout
        labels = self.finest.labels
        out: dict[str, str] = {}
        for node in range(self.finest.n_nodes):
            if lay.depth[node] < self.level and lay.fanout[node] > 0:
                continue  # a group above the level spans several values of the domain
            top = node
            while lay.depth[top] > self.level:
                top = int(lay.parent[top])
            out[labels[node]] = labels[top]
        return out


Attribute = OrdinalAttribute | NominalAttribute


def _domain(name: str, values: Iterable[object]) -> range | tuple[object, ...]:
    """An ordinal domain as stored: a range for consecutive integers (checked to fit the
    64-bit integers and one axis, before anything is built), else a tuple."""
    if isinstance(values, range) and values.step == 1:
        domain = values
    else:
        items = tuple(values)
        if not items or not all(_is_integer(v) for v in items):
            return items
        first = int(items[0])  # type: ignore[call-overload]
        if any(int(v) != first + i for i, v in enumerate(items)):  # type: ignore[call-overload]
            return items
        domain = range(first, first + len(items))
    if domain.stop <= domain.start:
        return ()
    lo, hi = domain.start, domain.stop - 1
    if lo < _INT64_MIN or hi > _INT64_MAX:
        raise SchemaError(
            f"attribute {name!r}: range [{_short_int(lo)}, {_short_int(hi)}] goes beyond the 64-bit integers "
            f"({_INT64_MIN} to {_INT64_MAX}); use bins for such numbers"
        )
    if hi - lo + 1 > MAX_AXIS_VALUES:
        raise _too_wide(name, f"range [{lo}, {hi}]", hi - lo + 1)
    return domain


def _position(labels: Sequence[str], label: str) -> int | None:
    """The position of ``label`` among ``labels`` (arithmetic for computed ones), or None."""
    if isinstance(labels, _ComputedLabels):
        return labels.position(label)
    return labels.index(label) if label in labels else None


def _is_integer(value: object) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


def _short_int(value: int) -> str:
    text = str(value) if value.bit_length() < 200 else f"an integer of about {int(value.bit_length() * 0.30103):,} digits"
    return text


def _first_duplicate(labels: Iterable[str]) -> str | None:
    seen: set[str] = set()
    for label in labels:
        if label in seen:
            return label
        seen.add(label)
    return None


def _check_name(name: object) -> str:
    if not isinstance(name, str) or not name.strip():
        raise SchemaError(f"an attribute needs a non-empty name, got {shown(name)}")
    return name


def _is_plain_integer(column: pd.Series) -> bool:
    return isinstance(column.dtype, np.dtype) and column.dtype.kind in "iu"


def _missing_mask(column: pd.Series) -> np.ndarray:
    """Empty cells: NA values, and blank text in text columns."""
    import pandas as pd

    missing = column.isna().to_numpy()
    if column.dtype == object or isinstance(column.dtype, pd.StringDtype):
        missing = missing | (column.astype("string").str.strip() == "").fillna(True).to_numpy(dtype=bool)
    return missing


def _as_numbers(column: pd.Series) -> np.ndarray:
    import pandas as pd

    if pd.api.types.is_numeric_dtype(column.dtype) and not pd.api.types.is_bool_dtype(column.dtype):
        return column.to_numpy(dtype=np.float64, na_value=np.nan)
    text = column.astype("string").str.strip()
    numbers = pd.to_numeric(text, errors="coerce").to_numpy(dtype=np.float64, na_value=np.nan)
    if not pandas_reads_text_exactly(pd.__version__):
        # Before pandas 3.1, to_numeric misreads numbers of 17 digits by an ulp ("0.04999999999999999"
        # became 0.0499999999999999), which moves a number on a bin edge into the next bin: the cells it
        # did read as numbers are read again by Python's float, which rounds correctly.
        parsed = ~np.isnan(numbers)
        numbers[parsed] = text.to_numpy(dtype=object)[parsed].astype(np.float64)
    return numbers


@cache
def pandas_reads_text_exactly(version: str) -> bool:
    """Whether pandas ``version`` reads text as it is: from 3.1, numbers correctly rounded (fast_float)
    and CSV values past a NUL byte. 2.1.4 to 3.0 misread numbers of 17 digits by an ulp and end a
    value at a NUL byte: the readers then work around it (:func:`_as_numbers`, io.tables)."""
    major, minor = (int(part) for part in re.findall(r"\d+", version)[:2])
    return (major, minor) >= (3, 1)


def cell_text(column: pd.Series) -> pd.Series:
    """The text of each cell as a CSV file would hold it, missing cells kept missing.

    A whole float below 2**53 reads as an integer (20.0 is "20": an integer column with
    empty cells becomes float when it goes through pandas), infinities as "inf" and
    "-inf"; other floats keep pandas' text ("2.5", "1e+16"). Each cell's text depends on
    its value alone, never on the other cells: a table read in chunks gives 20.0 the same
    text in every chunk, so its rows are counted under one label. Used wherever typed
    values meet text labels.
    """
    import pandas as pd

    if not pd.api.types.is_float_dtype(column.dtype):
        return column.astype("str")
    values = column.to_numpy(dtype=np.float64, na_value=np.nan)
    with np.errstate(invalid="ignore"):
        whole = np.isfinite(values) & (np.floor(values) == values) & (np.abs(values) < _FLOAT_INTEGERS)
    text = np.empty(len(values), dtype=object)
    text[whole] = values[whole].astype(np.int64).astype(str)
    text[~whole] = column[~whole].astype("str").to_numpy(dtype=object)
    return pd.Series(text, index=column.index, dtype="str").mask(np.isnan(values))


def _integer_positions(column: pd.Series, domain: range) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(positions, missing, unparsable)`` of a column against an integer range, exactly.

    A position is ``value - start`` inside the range, ``-1`` below it and ``len(domain)``
    above it; no value passes through float64 unless the column holds floats already (whose
    values are exact), so 2**53 + 1 is never 2**53 and a uint64 never wraps.
    """
    import pandas as pd

    size = len(domain)
    lo, hi = domain.start, domain.stop - 1
    dtype = column.dtype
    if pd.api.types.is_integer_dtype(dtype) and not pd.api.types.is_bool_dtype(dtype):
        missing = column.isna().to_numpy(dtype=bool)
        native: np.dtype = getattr(dtype, "numpy_dtype", None) or np.dtype(dtype)  # type: ignore[arg-type]
        values = column.to_numpy(dtype=native, na_value=0) if missing.any() else column.to_numpy(dtype=native)
        # uint64 values past the int64 range are above every range (which lies within int64)
        huge = values > _INT64_MAX if native.kind == "u" and native.itemsize == 8 else np.zeros(len(values), bool)
        wide = values.astype(np.int64)
        return _place(wide, ~huge & (wide < lo), huge | (wide > hi), lo, size), missing, np.zeros(len(values), bool)
    if pd.api.types.is_float_dtype(dtype):
        numbers = column.to_numpy(dtype=np.float64, na_value=np.nan)
        missing = np.isnan(numbers)
        with np.errstate(invalid="ignore"):
            whole = np.isfinite(numbers) & (np.floor(numbers) == numbers)
            unparsable = ~missing & np.isfinite(numbers) & ~whole
            fits = whole & (numbers >= -(2.0**63)) & (numbers < 2.0**63)  # exactly an int64
        wide = np.where(fits, numbers, 0).astype(np.int64)
        below = (fits & (wide < lo)) | (~fits & ~unparsable & ~missing & (numbers < 0))
        above = (fits & (wide > hi)) | (~fits & ~unparsable & ~missing & (numbers > 0))
        return _place(wide, below, above, lo, size), missing, unparsable
    # Text: each distinct value is parsed once, exactly.
    text = column.astype("string").str.strip()
    missing = (text.isna() | (text == "")).to_numpy(dtype=bool, na_value=True)
    codes, uniques = pd.factorize(text)
    if not len(uniques):
        return np.zeros(len(column), np.int64), missing, np.zeros(len(column), bool)
    positions, unparsable = _parse_integers(np.asarray(uniques, dtype=object), lo, hi)
    taken = np.where(codes < 0, 0, codes)
    rows_unparsable = unparsable[taken] & ~missing
    return np.where(missing, 0, positions[taken]), missing, rows_unparsable


def _place(values: np.ndarray, below: np.ndarray, above: np.ndarray, lo: int, size: int) -> np.ndarray:
    """Positions of int64 ``values``: -1 below the range, ``size`` above it, else value - lo."""
    positions = np.full(len(values), size, dtype=np.int64)
    positions[below] = -1
    inside = ~below & ~above
    positions[inside] = values[inside] - np.int64(lo)
    return positions


def _parse_integers(texts: np.ndarray, lo: int, hi: int) -> tuple[np.ndarray, np.ndarray]:
    """Positions (as :func:`_integer_positions`) and an unparsable mask of distinct texts.

    Numbers are written as in a CSV file: ``42``, ``+42``, ``42.0``, ``4.2e1``, ``inf``.
    A text that is not a number, or a number that is not whole, is unparsable.
    """
    import pandas as pd

    size = hi - lo + 1
    positions = np.zeros(len(texts), dtype=np.int64)
    unparsable = np.zeros(len(texts), dtype=bool)
    plain = pd.Series(texts, dtype="string").str.fullmatch(_PLAIN_INTEGER.pattern).to_numpy(dtype=bool, na_value=False)
    if plain.any():  # at most 18 digits: an int64 for sure
        wide = pd.Series(texts[plain]).astype(np.int64).to_numpy()
        positions[plain] = _place(wide, wide < lo, wide > hi, lo, size)
    for i in np.flatnonzero(~plain):
        value = _exact_number(texts[i])
        if value is None:
            unparsable[i] = True
        elif value < lo:
            positions[i] = -1
        elif value > hi:
            positions[i] = size
        else:
            positions[i] = int(value) - lo
    return positions, unparsable


def _number_in(text: str) -> float | None:
    """The float64 a cell holding ``text`` is read as by bins (:func:`_as_numbers`), or None."""
    stripped = text.strip()
    if stripped.lower() in _INFINITY or (len(stripped) <= 4000 and _DECIMAL_NUMBER.fullmatch(stripped)):
        return float(stripped)
    return None


def _exact_number(text: str) -> decimal.Decimal | int | None:
    """The whole number ``text`` writes (infinities as +-2**64, beyond every range), or None."""
    sign = _INFINITY.get(text.lower())
    if sign is not None:
        return sign * (1 << 64)
    if len(text) > 4000 or not _DECIMAL_NUMBER.fullmatch(text):
        return None
    try:
        value = decimal.Decimal(text)
        whole = value == value.to_integral_value(context=_EXACT)
    except decimal.DecimalException:
        return None
    return value if whole else None



class Schema(Sequence[Attribute]):
    """An ordered list of attributes: the axes of the frequency matrix.

    Parameters
    ----------
    attributes : iterable of Attribute
        The attributes in axis order: at least one, names unique.

    Raises
    ------
    SchemaError
        No attribute, an entry that is not an :class:`OrdinalAttribute` or
        :class:`NominalAttribute`, or a name used twice.

    Examples
    --------
    >>> from privelet_gui.engine import Hierarchy
    >>> s = Schema([OrdinalAttribute.integer_range("age", 0, 99),
    ...             NominalAttribute("sex", Hierarchy.flat(["F", "M"]))])
    >>> s.shape, s["sex"].size, s.index("age")
    ((100, 2), 2, 0)
    """

    def __init__(self, attributes: Iterable[Attribute]):
        attrs = tuple(attributes)
        if not attrs:
            raise SchemaError("a schema needs at least one attribute")
        seen: set[str] = set()
        for a in attrs:
            if not isinstance(a, (OrdinalAttribute, NominalAttribute)):
                raise SchemaError(f"schema entries must be OrdinalAttribute or NominalAttribute, got {type(a).__name__}")
            if a.name in seen:
                raise SchemaError(f"attribute name {a.name!r} is used twice; attribute names must be unique")
            seen.add(a.name)
        self._attributes = attrs
        self._by_name = {a.name: i for i, a in enumerate(attrs)}

    @property
    def attributes(self) -> tuple[Attribute, ...]:
        return self._attributes

    @property
    def domain_from_data(self) -> tuple[str, ...]:
        """Attributes whose domain was learned from the data (a privacy warning)."""
        return tuple(a.name for a in self._attributes if a.domain_from_data)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(a.name for a in self._attributes)

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(a.size for a in self._attributes)

    @property
    def size(self) -> int:
        """m, the number of cells of the frequency matrix."""
        return math.prod(self.shape)

    def index(self, name: str) -> int:  # type: ignore[override]
        """The axis of the attribute called ``name``.

        Parameters
        ----------
        name : str
            An attribute's name.

        Returns
        -------
        int
            ``0 <= axis < len(schema)``.

        Raises
        ------
        SchemaError
            No attribute has that name (the message lists them).
        """
        try:
            return self._by_name[name]
        except KeyError:
            raise SchemaError(
                f"unknown attribute {name!r}; the schema has {', '.join(map(repr, self.names))}"
            ) from None

    def axes(self, names: Iterable[str]) -> tuple[int, ...]:
        """Sorted axis numbers of the named attributes (duplicates rejected).

        Parameters
        ----------
        names : iterable of str
            Attribute names (a single string is one name).

        Returns
        -------
        tuple of int
            Ascending.

        Raises
        ------
        SchemaError
            An unknown name, or a name given twice.
        """
        if isinstance(names, str):
            names = [names]
        axes = [self.index(n) for n in names]
        if len(set(axes)) != len(axes):
            raise SchemaError(f"an attribute is named twice in {list(names)!r}")
        return tuple(sorted(axes))

    def with_default_missing_values(self, values: Iterable[str]) -> Schema:
        """This schema with ``values`` (a table's texts meaning missing, e.g. its reading
        options') as the ``missing_values`` of every attribute that names none of its own
        (``missing_values=None``); attributes with their own list keep it. A text that is a
        value of such an attribute is refused, naming the attribute (give it its own list).

        Parameters
        ----------
        values : iterable of str
            The table's texts meaning missing.

        Returns
        -------
        Schema
            Itself when ``values`` is empty.

        Raises
        ------
        SchemaError
            A text that is a value of an attribute without its own list, or texts that are not valid.
        """
        markers = check_missing_values(values, "the table's reading options")
        if not markers:
            return self
        for a in self._attributes:
            taken = a._value_among(markers) if a.missing_values is None else None
            if taken is not None:
                raise SchemaError(
                    f"the table's texts meaning missing include {taken!r}, but a cell holding it is a value of "
                    f"attribute {a.name!r} (it would silently count as missing): "
                    f"give {a.name!r} texts meaning missing of its own (without {taken!r}), or take {taken!r} out of "
                    "the table's"
                )
        return Schema(
            a if a.missing_values is not None else replace(a, missing_values=markers)
            for a in self._attributes
        )

    def __getitem__(self, key: int | str) -> Attribute:  # type: ignore[override]
        if isinstance(key, str):
            return self._attributes[self.index(key)]
        return self._attributes[key]

    def __len__(self) -> int:
        return len(self._attributes)

    def __iter__(self) -> Iterator[Attribute]:
        return iter(self._attributes)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Schema) and other._attributes == self._attributes

    def __hash__(self) -> int:
        return hash(self._attributes)

    def __repr__(self) -> str:
        inner = ", ".join(f"{a.name}:{a.kind}[{a.size}]" for a in self._attributes)
        return f"Schema({inner})"
