"""Numbers for people (privelet_gui.formatting): worked values from the issue, round trips, one style per table."""

from __future__ import annotations

import math
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from privelet_gui.formatting import (
    SCIENTIFIC_FROM,
    fmt_bytes,
    fmt_count,
    fmt_number,
    fmt_numbers,
    table_is_scientific,
)

_DIGITS = str.maketrans("⁰¹²³⁴⁵⁶⁷⁸⁹⁻", "0123456789-")


def parse(text: str) -> float:
    """The number a person reads in ``text`` ("6,072", "1.516 × 10³⁰")."""
    mantissa, _, exponent = text.replace(",", "").partition(" × 10")
    return float(mantissa) * 10.0 ** int(exponent.translate(_DIGITS) or 0)


def test_the_issues_memory_figure_gets_a_sane_form():
    # shown as "(11079594256323768.0 TB)": that many TiB in bytes
    assert fmt_bytes(11079594256323768.0 * 1024**4) == "1.2 × 10²⁸ bytes"
    assert [fmt_bytes(n) for n in (0, 512, 4 << 10, 7_999_999, 3 << 30, 5 << 40, 1023.97 * 1024)] == [
        "0 bytes", "512 bytes", "4.0 KiB", "7.6 MiB", "3.0 GiB", "5.0 TiB", "1.0 MiB",
    ]
    assert fmt_bytes(float("nan")) == "n/a"


def test_numbers_below_ten_billion_keep_their_grouped_digits():
    # "6.072e+09" stood among grouped digits
    assert fmt_number(6.072e9) == "6,072,000,000"
    assert fmt_number(SCIENTIFIC_FROM) == "1.000 × 10¹⁰" and fmt_number(9_999_999_999.0) == "9,999,999,999"
    assert fmt_number(1.516e30) == "1.516 × 10³⁰"
    assert fmt_number(0.00001234) == "1.234 × 10⁻⁵"
    assert [fmt_number(x) for x in (0.0, 12.5, -0.5, float("inf"), None)] == ["0", "12.5", "-0.5", "n/a", "n/a"]
    assert [fmt_count(x) for x in (14_452.3, 51_319.0, 3.14159, 0.0)] == ["14,452", "51,319", "3.1", "0.0"]


def test_one_table_one_style():
    # the demo's bounds (plain Privelet's worst case next to Basic's) in one style, then a huge one
    plain = [2.83e8, 1.35e7, 6.072e9]
    assert fmt_numbers(plain) == ["283,000,000", "13,500,000", "6,072,000,000"]
    assert fmt_numbers([*plain, 1.2e31]) == ["2.830 × 10⁸", "1.350 × 10⁷", "6.072 × 10⁹", "1.200 × 10³¹"]
    assert not table_is_scientific([None, float("nan"), 0.0, 5.0])
    # counts follow the table's style too
    assert fmt_count(14_452.3, scientific_form=True) == "1.445 × 10⁴"
    assert fmt_count(0.0, scientific_form=True) == "0"


finite = st.floats(min_value=-1e300, max_value=1e300, allow_nan=False)


@given(finite)
def test_a_number_reads_back_to_four_significant_digits(x):
    text = fmt_number(x)
    assert "e" not in text  # never a programmer's exponent
    assert parse(text) == pytest.approx(x, rel=5e-4, abs=1e-300)  # abs: parse() underflows below 1e-308
    grouped = re.fullmatch(r"-?\d{1,3}(,\d{3})*", text)
    if grouped:  # grouped digits: an integer of at most 10 digits, exact to the unit
        assert len(text.replace(",", "").lstrip("-")) <= 10 and abs(parse(text) - x) <= 0.5


@given(st.lists(finite, min_size=1, max_size=8))
def test_every_value_of_a_table_has_the_tables_style(values):
    texts = fmt_numbers(values)
    styles = {" × 10" in t for t, v in zip(texts, values) if v != 0}
    assert len(styles) <= 1
    assert [parse(t) for t in texts] == pytest.approx(values, rel=5e-4, abs=1e-300)


@given(st.floats(min_value=0, max_value=1e40, allow_nan=False))
def test_a_byte_size_has_a_unit_and_at_most_four_digits_before_the_point(n):
    text = fmt_bytes(n)
    number, unit = text.rsplit(" ", 1)
    assert unit in ("bytes", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB")
    if unit == "bytes":
        assert parse(number) == pytest.approx(n, rel=0.05, abs=0.5)
    else:
        power = ("KiB", "MiB", "GiB", "TiB", "PiB", "EiB").index(unit) + 1
        assert 1.0 <= float(number) < 1024 and float(number) * 1024**power == pytest.approx(n, rel=0.05)


def test_the_qt_widgets_re_export_the_same_functions():
    from privelet_gui.qt import widgets

    assert widgets.fmt_number is fmt_number and widgets.fmt_bytes is fmt_bytes and widgets.fmt_count is fmt_count
    assert math.isclose(parse(widgets.fmt_number(2.5e13)), 2.5e13)
