"""Numbers, counts and byte sizes for people: one home for the app, the workspace and the CLI.

Pure functions, no Qt and no numpy. Two rules the app keeps everywhere:

- a number is written with grouped digits ("6,072,000,000") up to :data:`SCIENTIFIC_FROM`
  and in scientific form ("1.516 × 10³⁰") from there, so that a custodian never has to count
  digits nor read a programmer's "e+30";
- a table uses one style for all its numbers: :func:`table_is_scientific` decides it once
  from every value shown, and the values are then formatted with ``scientific_form=`` that answer
  (:func:`fmt_numbers` does both for one list).

>>> fmt_number(6_072_000_000.0)
'6,072,000,000'
>>> fmt_numbers([14_452.3, 1.516e30])
['1.445 × 10⁴', '1.516 × 10³⁰']
>>> fmt_bytes(1.2182e28)
'1.2 × 10²⁸ bytes'
"""

from __future__ import annotations

import math
from collections.abc import Iterable

__all__ = [
    "SCIENTIFIC_FROM",
    "counted",
    "fmt_bytes",
    "fmt_count",
    "fmt_number",
    "fmt_numbers",
    "scientific",
    "table_is_scientific",
]

#: From this magnitude on, numbers are written in scientific form (below: at most 10 digits, 13 characters).
SCIENTIFIC_FROM = 1e10
# Below this magnitude, a plain decimal needs more zeros than digits: scientific form too.
_SMALLEST_PLAIN = 1e-4

_SUPERSCRIPTS = str.maketrans("0123456789-", "⁰¹²³⁴⁵⁶⁷⁸⁹⁻")

# Binary units, as the engine's memory messages use them; past the last, scientific bytes.
_BYTE_UNITS = ("KiB", "MiB", "GiB", "TiB", "PiB", "EiB")


def scientific(x: float, digits: int = 4) -> str:
    """``x`` as ``m × 10ⁿ`` with ``digits`` significant digits ("6.072 × 10⁹").

    >>> scientific(-0.000123, 2)
    '-1.2 × 10⁻⁴'
    """
    mantissa, exponent = f"{x:.{max(digits - 1, 0)}e}".split("e")
    return f"{mantissa} × 10{str(int(exponent)).translate(_SUPERSCRIPTS)}"


def _needs_scientific(x: float) -> bool:
    ax = abs(x)
    return ax >= SCIENTIFIC_FROM or 0 < ax < _SMALLEST_PLAIN


def table_is_scientific(values: Iterable[float | None]) -> bool:
    """Whether a table holding ``values`` writes all of them in scientific form: when any
    one of them needs it (huge, or tiny but not zero); ``None``, NaN and infinities do not count."""
    return any(v is not None and math.isfinite(v) and _needs_scientific(v) for v in values)


def fmt_number(x: float | None, digits: int = 4, *, scientific_form: bool | None = None) -> str:
    """A readable number: grouped digits, or scientific form when huge or tiny.

    ``scientific_form`` forces the style (a table's, from :func:`table_is_scientific`);
    ``None`` chooses from ``x`` alone. Zero is "0" in either style, and a value that is not
    finite is "n/a".

    >>> fmt_number(30_162.0), fmt_number(0.12345), fmt_number(30_162.0, scientific_form=True)
    ('30,162', '0.1235', '3.016 × 10⁴')
    """
    if x is None or not math.isfinite(x):
        return "n/a"
    if x == 0:
        return "0"
    if scientific_form if scientific_form is not None else _needs_scientific(x):
        return scientific(x, digits)
    if abs(x) >= 1000:
        return f"{x:,.0f}"
    return f"{x:.{digits}g}"


def counted(count: int, noun: str, plural: str | None = None) -> str:
    """``count`` (grouped digits) and ``noun``, in the plural unless the count is one.

    >>> counted(1, "row"), counted(12_000, "row"), counted(5, "hierarchy", "hierarchies")
    ('1 row', '12,000 rows', '5 hierarchies')
    """
    return f"{count:,} {noun if count == 1 else plural or noun + 's'}"


def fmt_count(x: float | None, *, scientific_form: bool | None = None) -> str:
    """A count or a ± margin, rounded to what is meaningful: whole units from 100 on,
    one decimal below (same styles as :func:`fmt_number`).

    >>> fmt_count(14_452.3), fmt_count(3.14159), fmt_count(2.5e13)
    ('14,452', '3.1', '2.500 × 10¹³')
    """
    if x is None or not math.isfinite(x):
        return "n/a"
    if scientific_form if scientific_form is not None else _needs_scientific(x):
        return "0" if x == 0 else scientific(x, 4)
    if abs(x) >= 100:
        return f"{x:,.0f}"
    return f"{x:.1f}"


def fmt_numbers(values: Iterable[float | None], digits: int = 4) -> list[str]:
    """Every value of one table in one style (see :func:`table_is_scientific`).

    >>> fmt_numbers([30_162.0, 6.072e9])
    ['30,162', '6,072,000,000']
    """
    values = list(values)
    style = table_is_scientific(values)
    return [fmt_number(v, digits, scientific_form=style) for v in values]


def fmt_bytes(n: float) -> str:
    """A memory size: "512 bytes", "7.6 MiB", "3.0 GiB", up to exbibytes; beyond, scientific bytes.

    >>> fmt_bytes(512), fmt_bytes(7_999_999), fmt_bytes(3 << 30), fmt_bytes(float("inf"))
    ('512 bytes', '7.6 MiB', '3.0 GiB', 'n/a')
    """
    if not math.isfinite(n) or n < 0:
        return "n/a"
    if n < 1024:
        return f"{n:,.0f} bytes"
    for power, unit in enumerate(_BYTE_UNITS, start=1):
        scaled = round(n / 1024**power, 1)
        if scaled < 1024:  # rounded first: 1023.97 KiB is "1.0 MiB", not "1024.0 KiB"
            return f"{scaled:.1f} {unit}"
    return f"{scientific(n, 2)} bytes"
