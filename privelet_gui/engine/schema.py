"""Attributes and schemas: the public domain of each column and how to encode it.

An attribute's domain must be public knowledge (a census code list, an age
range), never learned from the data being protected: the presence of a rare
value in a data-derived domain is itself a disclosure.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any, Literal, Union

import numpy as np

from .errors import SchemaError
from .hierarchy import Hierarchy

if TYPE_CHECKING:  # pandas is imported where tables are encoded, not with the engine
    import pandas as pd

__all__ = [
    "Attribute",
    "EncodedColumn",
    "NominalAttribute",
    "NumericBins",
    "OrdinalAttribute",
    "OutOfRange",
    "Schema",
]

OutOfRange = Literal["error", "clamp", "drop"]
_OUT_OF_RANGE = ("error", "clamp", "drop")


@dataclass(frozen=True)
class NumericBins:
    """Equal-width numeric bins ``[start, start + width), ...`` up to ``stop`` (exclusive)."""

    start: float
    stop: float
    width: float

    def __post_init__(self) -> None:
        for name in ("start", "stop", "width"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
                raise SchemaError(f"bins.{name} must be a finite number, got {value!r}")
        if self.width <= 0:
            raise SchemaError(f"bins.width must be positive, got {self.width!r}")
        if self.stop <= self.start:
            raise SchemaError(f"bins.stop ({self.stop!r}) must be greater than bins.start ({self.start!r})")

    @property
    def count(self) -> int:
        return math.ceil((self.stop - self.start) / self.width)

    def positions(self, numbers: np.ndarray) -> np.ndarray:
        """The bin of each number, as float64 (NaN stays NaN): below 0 for numbers under
        ``start``, ``count`` or more for numbers at or past ``stop`` (both outside)."""
        position = np.floor((numbers - self.start) / self.width)
        # The last bin may be narrower than the width: it ends at stop, not at start + count * width.
        return np.where(numbers >= self.stop, np.maximum(position, self.count), position)

    def index_of_number(self, number: float) -> int | None:
        """The bin holding ``number``, or None when it lies outside ``[start, stop)``."""
        index = self.positions(np.array([float(number)]))[0]
        return int(index) if 0 <= index < self.count else None

    def labels(self) -> tuple[str, ...]:
        def fmt(x: float) -> str:
            return str(int(x)) if float(x).is_integer() else repr(float(x))

        edges = [self.start + i * self.width for i in range(self.count)]
        return tuple(f"[{fmt(a)}, {fmt(min(a + self.width, self.stop))})" for a in edges)


@dataclass(frozen=True)
class EncodedColumn:
    """Axis indices of one column's values; ``-1`` marks rows to drop or report."""

    codes: np.ndarray  # integers, one per row; -1 where the value is not in the domain (read-only)
    outside: np.ndarray | None = None  # rows whose number lies outside the range or bins (None: none)
    clamped_rows: np.ndarray | None = None  # rows moved to the first/last value by the clamp policy
    all_valid: bool = False  # known without looking: every code is a valid axis index

    @property
    def clamped(self) -> int:
        return 0 if self.clamped_rows is None else int(self.clamped_rows.sum())


class _AttributeBase(ABC):
    name: str
    column: str | None
    missing: str | None

    @property
    def source_column(self) -> str:
        """The table column this attribute reads (its name unless ``column`` is set)."""
        return self.column or self.name

    @property
    def size(self) -> int:
        return len(self.labels)

    @property
    @abstractmethod
    def labels(self) -> tuple[str, ...]:
        """The domain's values as text, in axis order."""

    @cached_property
    def _label_index(self) -> pd.Index:
        import pandas as pd

        return pd.Index(self.labels)

    def index_of(self, label: object) -> int:
        """Axis index of a domain value given as its text label."""
        pos = self._label_index.get_indexer([str(label)])[0]
        if pos < 0:
            shown = ", ".join(self.labels[:5]) + (", ..." if self.size > 5 else "")
            raise SchemaError(f"{label!r} is not a value of attribute {self.name!r} (values: {shown})")
        return int(pos)

    def encode(self, column: pd.Series, *, categories_memo: dict[str, Any] | None = None) -> EncodedColumn:
        """Axis index of every row (see :class:`EncodedColumn`).

        A categorical column is encoded one distinct value at a time and its rows only
        gathered, which is how tables read from CSV are counted quickly. Chunks of one
        file usually share their categories: give the same ``categories_memo`` dict for
        every chunk of a column and identical categories are encoded only once.
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
            values = self._encode_rows(pd.Series(categories.astype(str), dtype=object))
            memo.update(categories=categories, values=values)
        missing_code = self.index_of(self.missing) if self.missing is not None else -1
        complete = len(raw) == 0 or raw.min() >= 0
        valid = values.codes.min() >= 0 if len(values.codes) else True
        if complete and valid and values.clamped_rows is None and np.array_equal(values.codes, np.arange(len(values.codes))):
            return EncodedColumn(raw, all_valid=True)  # the categories are the labels, in order

        def gathered(per_value: np.ndarray | None) -> np.ndarray | None:
            return None if per_value is None else np.append(per_value, False)[raw]

        # code -1 picks the appended entry; the smallest integer type keeps a chunk's codes small
        lookup = np.append(values.codes, missing_code).astype(np.min_scalar_type(-max(self.size, 2)))
        return EncodedColumn(
            lookup[raw],
            gathered(values.outside),
            gathered(values.clamped_rows),
            all_valid=valid and (complete or missing_code >= 0),
        )

    def _encode_text(self, column: pd.Series) -> tuple[np.ndarray, np.ndarray | None]:
        """Codes of a column matched against the labels as text; also its missing mask
        (None when no value is missing)."""
        missing = _missing_mask(column)
        codes = self._label_index.get_indexer(column.astype(str))
        if missing.any():
            codes[missing] = -1
            return codes, missing
        return codes, None

    def _apply_missing(self, codes: np.ndarray, missing: np.ndarray | None) -> np.ndarray:
        if self.missing is not None and missing is not None and missing.any():
            codes = codes.astype(np.int64)  # a copy: codes may share memory with the table
            codes[missing] = self.index_of(self.missing)
        return codes


@dataclass(frozen=True, eq=True)
class OrdinalAttribute(_AttributeBase):
    """An attribute with an ordered domain, transformed with the Haar wavelet.

    ``values`` lists the domain in order. With ``bins``, the column is parsed as
    numbers and each value falls into an equal-width bin; the labels are the bins.
    ``domain_from_data`` records that the values were learned from the table being
    protected (not private: see the module docstring); it changes nothing else.
    ``out_of_range`` says what to do with a number outside an integer range or
    the bins: ``"error"`` (default), ``"clamp"`` to the first/last value, or
    ``"drop"`` the row. ``missing`` maps empty cells to a declared value.

    Examples
    --------
    >>> age = OrdinalAttribute.integer_range("age", 0, 100)
    >>> age.size, age.labels[:3]
    (101, ('0', '1', '2'))
    """

    name: str
    values: tuple[object, ...] = ()
    bins: NumericBins | None = None
    out_of_range: OutOfRange = "error"
    missing: str | None = None
    column: str | None = None
    domain_from_data: bool = False
    kind: Literal["ordinal"] = field(default="ordinal", init=False)

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
    ):
        object.__setattr__(self, "name", _check_name(name))
        object.__setattr__(self, "values", tuple(values))
        object.__setattr__(self, "bins", bins)
        object.__setattr__(self, "out_of_range", out_of_range)
        object.__setattr__(self, "missing", missing)
        object.__setattr__(self, "column", column)
        object.__setattr__(self, "domain_from_data", bool(domain_from_data))
        object.__setattr__(self, "kind", "ordinal")
        if out_of_range not in _OUT_OF_RANGE:
            raise SchemaError(f"attribute {name!r}: out_of_range must be one of {_OUT_OF_RANGE}, got {out_of_range!r}")
        if bins is not None and self.values:
            raise SchemaError(f"attribute {name!r}: give either values or bins, not both")
        if bins is None and not self.values:
            raise SchemaError(f"attribute {name!r} has an empty domain: list its values, a range or bins")
        labels = self.labels
        dup = _first_duplicate(labels)
        if dup is not None:
            raise SchemaError(f"attribute {name!r}: value {dup!r} is listed twice; each value must appear once")
        if missing is not None and str(missing) not in set(labels):
            raise SchemaError(f"attribute {name!r}: missing={missing!r} is not one of its values; declare it first")

    @classmethod
    def integer_range(cls, name: str, lo: int, hi: int, **options: object) -> OrdinalAttribute:
        """The integers ``lo..hi`` inclusive, parsed from the column as numbers."""
        for bound in (lo, hi):
            if isinstance(bound, bool) or not isinstance(bound, (int, np.integer)):
                raise SchemaError(f"attribute {name!r}: range bounds must be integers, got {bound!r}")
        if hi < lo:
            raise SchemaError(f"attribute {name!r}: range [{lo}, {hi}] is empty; the upper bound must be >= the lower")
        return cls(name, range(int(lo), int(hi) + 1), **options)  # type: ignore[arg-type]

    @cached_property
    def labels(self) -> tuple[str, ...]:
        if self.bins is not None:
            return self.bins.labels()
        return tuple(str(v) for v in self.values)

    @cached_property
    def integer_start(self) -> int | None:
        """The first value when the domain is a run of consecutive integers, else None."""
        vals = self.values
        if not vals or not all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in vals):
            return None
        start = int(vals[0])
        return start if all(int(v) == start + i for i, v in enumerate(vals)) else None

    @property
    def is_numeric(self) -> bool:
        return self.bins is not None or self.integer_start is not None

    def _encode_rows(self, column: pd.Series) -> EncodedColumn:
        if not self.is_numeric:
            codes, missing = self._encode_text(column)
            return EncodedColumn(self._apply_missing(codes, missing))
        if self.bins is None and _is_plain_integer(column):
            # Fast path for integer columns: no parsing, no missing values possible.
            values = column.to_numpy()
            start = self.integer_start
            assert start is not None
            if len(values) and start <= values.min() and values.max() < start + self.size:
                codes = values - values.dtype.type(start) if start else values
                return EncodedColumn(codes, all_valid=True)
            return self._limit(values.astype(np.int64) - start, None)
        missing = _missing_mask(column)
        numbers = _as_numbers(column)
        if self.bins is not None:
            position = self.bins.positions(numbers)
            unparsable = ~missing & np.isnan(numbers)
        else:
            position = numbers - self.integer_start  # type: ignore[operator]
            unparsable = ~missing & (np.isnan(numbers) | (np.floor(numbers) != numbers))
        codes = np.where(missing | unparsable, 0, np.clip(position, -1, self.size)).astype(np.int64)
        encoded = self._limit(codes, missing | unparsable)
        codes = encoded.codes
        codes[unparsable] = -1
        codes[missing] = -1
        return EncodedColumn(self._apply_missing(codes, missing), encoded.outside, encoded.clamped_rows)

    def _limit(self, codes: np.ndarray, skip: np.ndarray | None) -> EncodedColumn:
        """Apply the out-of-range policy to integer positions (``skip`` rows are left alone)."""
        outside = (codes < 0) | (codes >= self.size)
        if skip is not None:
            outside &= ~skip
        if not outside.any():
            return EncodedColumn(codes)
        if self.out_of_range == "clamp":
            np.clip(codes, 0, self.size - 1, out=codes)
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
    """

    name: str
    hierarchy: Hierarchy
    missing: str | None = None
    column: str | None = None
    domain_from_data: bool = False
    kind: Literal["nominal"] = field(default="nominal", init=False)
    level: int | None = None
    finest: Hierarchy | None = None

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
        if missing is not None and missing not in set(hierarchy.leaves):
            raise SchemaError(f"attribute {name!r}: missing={missing!r} is not a leaf of its hierarchy; add it first")

    @property
    def labels(self) -> tuple[str, ...]:
        return self.hierarchy.leaves

    @property
    def out_of_range(self) -> OutOfRange:
        return "error"

    def _encode_rows(self, column: pd.Series) -> EncodedColumn:
        if self.level is not None:
            # The finest values (and the coarse ones themselves) count under their level's node;
            # an unknown value keeps its text (and is reported as outside the domain).
            empty = _missing_mask(column)
            text = column.astype(str)
            coarse = text.map(self._coarse_labels)
            column = coarse.where(coarse.notna(), text).astype(object)
            column[empty] = None
        codes, missing = self._encode_text(column)
        return EncodedColumn(self._apply_missing(codes, missing))

    @cached_property
    def _coarse_labels(self) -> dict[str, str]:
        """Every node label of the finest hierarchy at or below the level -> its node at the level."""
        assert self.finest is not None and self.level is not None
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


Attribute = Union[OrdinalAttribute, NominalAttribute]


def _first_duplicate(labels: Iterable[str]) -> str | None:
    seen: set[str] = set()
    for label in labels:
        if label in seen:
            return label
        seen.add(label)
    return None


def _check_name(name: object) -> str:
    if not isinstance(name, str) or not name.strip():
        raise SchemaError(f"an attribute needs a non-empty name, got {name!r}")
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
    return pd.to_numeric(text, errors="coerce").to_numpy(dtype=np.float64, na_value=np.nan)


class Schema(Sequence[Attribute]):
    """An ordered list of attributes: the axes of the frequency matrix.

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
        try:
            return self._by_name[name]
        except KeyError:
            raise SchemaError(
                f"unknown attribute {name!r}; the schema has {', '.join(map(repr, self.names))}"
            ) from None

    def axes(self, names: Iterable[str]) -> tuple[int, ...]:
        """Sorted axis numbers of the named attributes (duplicates rejected)."""
        if isinstance(names, str):
            names = [names]
        axes = [self.index(n) for n in names]
        if len(set(axes)) != len(axes):
            raise SchemaError(f"an attribute is named twice in {list(names)!r}")
        return tuple(sorted(axes))

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
