"""Hierarchy files: ARX CSV and nested JSON, errors, and every real hierarchy in ../shared/data."""

from __future__ import annotations

import warnings

import pytest

from privelet_gui.engine import Hierarchy, HierarchyError
from privelet_gui.io import (
    HierarchyLabelWarning,
    OutputExistsError,
    hierarchy_from_arx_rows,
    hierarchy_summary,
    hierarchy_to_arx_rows,
    read_arx_hierarchy,
    read_hierarchy,
    write_arx_hierarchy,
    write_hierarchy,
)

OCCUPATION = "Tech-support;Technical;*\nCraft-repair;Technical;*\nSales;Nontechnical;*\n"


def test_reads_the_arx_layout():
    h = read_arx_hierarchy(OCCUPATION)
    assert h.leaves == ("Tech-support", "Craft-repair", "Sales")
    assert h.height == 3
    assert h.leaf_range("Technical") == (0, 2)
    assert h.root.label == "*"


@pytest.mark.parametrize("sep", [";", ",", "|", "\t"])
def test_separators_are_sniffed(sep):
    assert read_arx_hierarchy(OCCUPATION.replace(";", sep)) == read_arx_hierarchy(OCCUPATION)


def test_crlf_bom_blank_lines_and_trailing_separator(tmp_path):
    path = tmp_path / "h.csv"
    path.write_bytes(b"\xef\xbb\xbf" + OCCUPATION.replace("\n", ";\r\n").encode() + b"\r\n\r\n")
    assert read_hierarchy(path) == read_arx_hierarchy(OCCUPATION)


def test_labels_with_the_separator_are_quoted_and_round_trip(tmp_path):
    h = Hierarchy.from_nested({"*": {"Asia": ["Korea, South", 'Say "hi"'], "Europe;West": ["France"]}})
    path = tmp_path / "h.csv"
    write_hierarchy(h, path)
    assert read_hierarchy(path) == h
    comma = write_arx_hierarchy(h, delimiter=",")
    assert '"Korea, South"' in comma
    assert read_arx_hierarchy(comma, delimiter=",") == h


def test_leaf_order_is_row_order_and_groups_are_gathered():
    text = "Tech-support;Technical;*\nOther-service;Other;*\nCraft-repair;Technical;*\nSales;Other;*\n"
    h = read_arx_hierarchy(text)
    # Technical's rows are gathered at its first row; otherwise row order is kept.
    assert h.leaves == ("Tech-support", "Craft-repair", "Other-service", "Sales")
    grouped = "Tech-support;Technical;*\nCraft-repair;Technical;*\nOther-service;Other;*\nSales;Other;*\n"
    assert read_arx_hierarchy(grouped).leaves == ("Tech-support", "Craft-repair", "Other-service", "Sales")


def test_single_child_groups_are_valid():
    h = read_arx_hierarchy("Armed-Forces;Military;*\nSales;Civil;*\nClerk;Civil;*\n")
    assert h.leaves == ("Armed-Forces", "Sales", "Clerk")
    assert h.height == 3
    assert h.leaf_range("Military") == (0, 1)
    # an only child's level carries no coefficient: a tree of only-children has rho 2
    assert read_arx_hierarchy("a;A;*\nb;B;*\n").rho == 2


def test_a_group_repeating_its_only_child_collapses():
    """'x;x;*' is x repeated one level up (ARX padding): the level is dropped."""
    h = read_arx_hierarchy("Guam;Micronesia;Oceania;*\nNauru;Micronesia;Oceania;*\nFiji;Fiji;Oceania;*\n")
    assert h.leaves == ("Guam", "Nauru", "Fiji")
    fiji = next(n for n in h.nodes() if n.label == "Fiji")
    assert fiji.depth == 3  # directly under Oceania
    assert h.height == 4
    # and the writer pads short branches the same way, so unbalanced trees round-trip
    unbalanced = Hierarchy.from_nested({"*": ["x", {"G": ["a", {"H": ["b", "c"]}]}]})
    rows = hierarchy_to_arx_rows(unbalanced)
    assert rows[0] == ["x", "x", "x", "*"]
    assert {len(r) for r in rows} == {4}
    assert hierarchy_from_arx_rows(rows) == unbalanced


def test_a_label_reused_at_a_higher_level_is_renamed_with_a_warning():
    text = "Guam;Micronesia;Oceania;*\nMicronesia;Micronesia;Oceania;*\nFiji;Melanesia;Oceania;*\n"
    with pytest.warns(HierarchyLabelWarning, match=r"'Micronesia' -> 'Micronesia \(level 1\)'"):
        h = read_arx_hierarchy(text)
    assert h.leaves == ("Guam", "Micronesia", "Fiji")  # leaves keep their text: they match the data
    assert h.leaf_range("Micronesia (level 1)") == (0, 2)
    with pytest.raises(HierarchyError, match="'Micronesia' is used at level 0 and at level 1"):
        read_arx_hierarchy(text, rename=False)
    # the renamed label is an ordinary label afterwards: no warning on the way back
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert read_arx_hierarchy(write_arx_hierarchy(h)) == h


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("a;G;*\nb;*\n", r"rows have different lengths: line 1 has 3 columns but line 2 has 2"),
        ("a;G;*\nb;H;*\nc;G;*;x\n", r"line 3 has 4"),
        ("a;G;*\na;H;*\n", r"leaf 'a' is listed twice, on lines 1 and 2"),
        ("a;G;X;*\nb;G;Y;*\n", r"'G' \(level 1\) can be generalised to 'X' \(line 1\) or to 'Y' \(line 2\)"),
        ("a;G;*\nb;;*\n", r"line 2, column 2 is empty"),
        ("a;G;*\nb;G;ALL\n", r"one root for every row, but it holds '\*' and 'ALL' \(line 2\)"),
        ("a\nb\n", r"at least two columns"),
        ("", r"no rows"),
    ],
)
def test_arx_errors_say_what_and_where(text, message):
    with pytest.raises(HierarchyError, match=message):
        read_arx_hierarchy(text)


def test_errors_name_the_file(tmp_path):
    path = tmp_path / "bad.csv"
    path.write_text("a;G;*\na;H;*\n")
    with pytest.raises(HierarchyError, match=rf"^{path}: leaf 'a' is listed twice"):
        read_hierarchy(path)
    with pytest.raises(HierarchyError, match="no such hierarchy file"):
        read_hierarchy(tmp_path / "missing.csv")


def test_json_hierarchies(tmp_path):
    h = read_arx_hierarchy(OCCUPATION)
    path = tmp_path / "h.json"
    write_hierarchy(h, path)
    assert path.read_text().startswith("{")
    assert read_hierarchy(path) == h
    # JSON content is recognised without the extension too
    other = tmp_path / "h.hier"
    other.write_text(path.read_text())
    assert read_hierarchy(other) == h
    bad = tmp_path / "bad.json"
    bad.write_text('{"*": {"A": ["x"], "A": ["y"]}}')
    with pytest.raises(HierarchyError, match="'A' is used twice"):
        read_hierarchy(bad)
    bad.write_text('{"*": ["x", ')
    with pytest.raises(HierarchyError, match="not valid JSON"):
        read_hierarchy(bad)
    bad.write_text('{"*": {"A": []}}')
    with pytest.raises(HierarchyError, match="empty"):
        read_hierarchy(bad)


def test_writes_are_not_overwritten_without_force(tmp_path):
    h = read_arx_hierarchy(OCCUPATION)
    path = tmp_path / "h.csv"
    write_hierarchy(h, path)
    with pytest.raises(OutputExistsError):
        write_hierarchy(h, path)
    write_hierarchy(Hierarchy.flat(["a", "b"]), path, force=True)
    assert read_hierarchy(path).leaves == ("a", "b")
    with pytest.raises(HierarchyError, match="cannot tell the hierarchy format"):
        write_hierarchy(h, tmp_path / "h.xyz")


# Every real hierarchy in ../shared/data: (file, leaves, height, nodes per level from the root).
REAL = [
    ("adult_arx/adult_hierarchy_age.csv", 100, 5, [1, 5, 10, 20, 100]),
    ("adult_arx/adult_hierarchy_education.csv", 16, 4, [1, 3, 5, 16]),
    ("adult_arx/adult_hierarchy_marital-status.csv", 7, 3, [1, 2, 7]),
    ("adult_arx/adult_hierarchy_native-country.csv", 41, 3, [1, 5, 41]),
    ("adult_arx/adult_hierarchy_occupation.csv", 14, 3, [1, 3, 14]),
    ("adult_arx/adult_hierarchy_race.csv", 5, 2, [1, 5]),
    ("adult_arx/adult_hierarchy_salary-class.csv", 2, 2, [1, 2]),
    ("adult_arx/adult_hierarchy_sex.csv", 2, 2, [1, 2]),
    ("adult_arx/adult_hierarchy_workclass.csv", 8, 3, [1, 3, 8]),
    ("census_income_kdd/hierarchy_detailed_occupation_recode.csv", 47, 3, [1, 15, 47]),
    ("census_income_kdd/hierarchy_detailed_industry_recode.csv", 52, 3, [1, 24, 52]),
    ("hierarchies/soc2018/hierarchy_soc2018_detailed.csv", 867, 5, [1, 23, 98, 459, 867]),
    ("hierarchies/naics2017/hierarchy_naics2017_6digit.csv", 1057, 6, [1, 20, 99, 311, 709, 1057]),
    ("hierarchies/country_m49/hierarchy_country_name_m49.csv", 248, 4, [1, 5, 17, 248]),
    ("hierarchies/country_m49/hierarchy_country_iso3_m49.csv", 248, 4, [1, 5, 17, 248]),
]


@pytest.mark.parametrize(("name", "leaves", "height", "per_level"), REAL, ids=[r[0].split("/")[-1] for r in REAL])
def test_every_real_hierarchy_reads_writes_and_reads_back(shared_data, tmp_path, name, leaves, height, per_level):
    path = shared_data / name
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        h = read_hierarchy(path)
    facts = hierarchy_summary(h)
    assert (h.size, h.height, facts["nodes_per_level"]) == (leaves, height, per_level)
    # Leaves are exactly the file's first column (the values the data holds).
    first_column = [line.split(";")[0] for line in path.read_text(encoding="utf-8").splitlines() if line]
    assert sorted(h.leaves) == sorted(first_column)
    renamed = [str(w.message) for w in caught if issubclass(w.category, HierarchyLabelWarning)]
    if "country_name" in name:
        assert renamed and "'Micronesia' -> 'Micronesia (level 1)'" in renamed[0]
    else:
        assert not renamed
    for suffix in ("csv", "json"):
        out = tmp_path / f"copy.{suffix}"
        write_hierarchy(h, out)
        again = read_hierarchy(out)
        assert again == h
        assert again.leaves == h.leaves
    # Files already grouped by parent are written back byte for byte (modulo line ends).
    regrouped = ("country_name", "occupation.csv", "education", "native-country", "marital")
    if not any(part in name for part in regrouped):
        assert (tmp_path / "copy.csv").read_text() == path.read_text(encoding="utf-8").replace("\r\n", "\n")


# -- hostile hierarchy files ------------------------------------------------------------------------


def test_deep_or_wide_hierarchy_files_are_refused_before_any_recursion(tmp_path):
    deep = tmp_path / "deep.json"
    deep.write_text('{"*": ' + '{"g": ' * 2000 + '["x"]' + "}" * 2001)
    with pytest.raises(HierarchyError, match="nested 2,002 levels deep"):
        read_hierarchy(deep)
    high = tmp_path / "high.json"
    high.write_text('{"*": ' + "".join(f'{{"g{i}": ' for i in range(150)) + '["x"]' + "}" * 151)
    with pytest.raises(HierarchyError, match="nested more than 100 levels deep"):
        read_hierarchy(high)
    wide = tmp_path / "wide.csv"
    wide.write_text(";".join(f"level{i}" for i in range(3000)) + ";*\n")
    with pytest.raises(HierarchyError, match="line 1 has 3001 columns, more than the 100 levels"):
        read_hierarchy(wide)


def test_hostile_json_hierarchies_and_options_are_refused(tmp_path):
    path = tmp_path / "h.json"
    for text, message in [
        ('{"*": [' + "9" * 5000 + "]}", "more than 4,300 digits"),
        ('{"*": [NaN]}', "NaN is not a number"),
        ('{"*": ["\\udc00"]}', "lone surrogate"),
    ]:
        path.write_text(text)
        with pytest.raises(HierarchyError, match=message):
            read_hierarchy(path)
    with pytest.raises(HierarchyError, match="other than a quote or a line break"):
        read_arx_hierarchy("a;*\n", delimiter='"')
    with pytest.raises(HierarchyError, match="unknown encoding 'nope'"):
        read_arx_hierarchy(tmp_path / "h.json", encoding="nope")
    with pytest.raises(HierarchyError, match="no such hierarchy file"):
        read_hierarchy(tmp_path / ("x" * 5000 + ".csv"))  # a name too long for the system


def test_a_quote_left_open_is_refused_not_read_as_a_label_with_line_breaks():
    # found by the fuzz tests: the open quote swallowed the next lines into one label, which
    # was written back quoted and then read as another hierarchy
    with pytest.raises(HierarchyError, match=r"ending on line 3 has a label holding a line break .*quote left open"):
        read_arx_hierarchy('a;"G\nb;G\nc;G;*\n', delimiter=";")
    with pytest.raises(HierarchyError, match="save the hierarchy as JSON"):
        write_arx_hierarchy(Hierarchy.from_nested({"*": ["two\nlines"]}))


def test_a_label_holding_a_record_separator_is_one_label():
    # found by the fuzz tests: str.splitlines cut the sniffing sample at \x1e, \x1c, \x85, U+2028
    for char in "\x1c\x1d\x1e\x85\u2028\x0b\x0c":
        hierarchy = Hierarchy.flat([f"0{char}"], root="root")
        assert read_arx_hierarchy(write_arx_hierarchy(hierarchy)) == hierarchy
