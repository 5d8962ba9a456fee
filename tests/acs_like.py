"""A small table shaped like a state ACS extract, for tests of missing values and code labels.

Columns as the NIST excerpts of the ACS PUMS have them (``/work/shared/data/nist_acs_ma``):
PUMA codes, AGEP ages, SEX 1/2, INDP industry codes and their INDP_CAT category, PINCP
incomes and NOC own children, with ``N`` where the ACS has no value (people under 16 have no
industry, under 15 no income). The rows are fixed (not drawn): tests assert their counts.
Beside the table: a data dictionary in the NIST layout, ARX hierarchies of INDP by category
(codes, and the labelled twin with category names in place of their codes).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

__all__ = ["ACS_ROWS", "INDP_CATEGORY", "AcsFiles", "write_acs_like"]

#: INDP code -> INDP_CAT category code (real ACS codes).
INDP_CATEGORY = {"170": "0", "180": "0", "770": "3", "3390": "4", "7860": "11", "8680": "14"}
_CATEGORY_LABELS = {
    "N": "N/A (less than 16 years old, or last worked more than 5 years ago, or never worked)",
    "0": "AGR: Agriculture, Forestry, Fishing and Hunting",
    "3": "CON: Construction",
    "4": "MFG: Manufacturing",
    "11": "EDU: Educational Services",
    "14": "ENT: Arts, Entertainment, Recreation, Accommodation and Food Services",
}
_CATEGORY_NAMES = {"0": "AGR", "3": "CON", "4": "MFG", "11": "EDU", "14": "ENT"}

#: PUMA, AGEP, SEX, INDP, INDP_CAT, PINCP, NOC: 12 rows, 4 of them children (N in INDP and
#: INDP_CAT), 3 of those under 15 (N in PINCP), 2 with N children (NOC).
ACS_ROWS: tuple[tuple[str, ...], ...] = (
    ("25-00503", "34", "1", "8680", "14", "22000.0", "1"),
    ("25-00503", "8", "2", "N", "N", "N", "N"),
    ("25-00703", "51", "2", "7860", "11", "61000.0", "0"),
    ("25-00703", "15", "1", "N", "N", "0.0", "0"),
    ("25-00703", "47", "1", "770", "3", "58000.0", "2"),
    ("25-01000", "3", "1", "N", "N", "N", "N"),
    ("25-01000", "62", "2", "3390", "4", "74000.0", "0"),
    ("25-01300", "29", "2", "170", "0", "31000.0", "0"),
    ("25-01300", "12", "2", "N", "N", "N", "0"),
    ("25-02800", "44", "1", "180", "0", "45000.0", "3"),
    ("25-02800", "38", "2", "8680", "14", "12000.0", "1"),
    ("25-02800", "71", "1", "3390", "4", "39000.0", "0"),
)
_HEADER = ("PUMA", "AGEP", "SEX", "INDP", "INDP_CAT", "PINCP", "NOC")


@dataclass(frozen=True)
class AcsFiles:
    """Where :func:`write_acs_like` put the table and the files beside it."""

    table: Path
    dictionary: Path
    hierarchy: Path  # INDP -> INDP_CAT code -> *
    labelled: Path  # the same rows with category names in place of the category codes


def write_acs_like(folder: Path) -> AcsFiles:
    """Write the table (CSV), its data dictionary and the INDP hierarchies into ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    table = folder / "acs.csv"
    table.write_text("\n".join(",".join(row) for row in (_HEADER, *ACS_ROWS)) + "\n", encoding="utf-8")
    dictionary = folder / "data_dictionary.json"
    dictionary.write_text(json.dumps({
        "PUMA": {"description": "Public use microdata area code",
                 "values": {"25-00503": "Middlesex County--Waltham City", "25-00703": "Essex County (East)",
                            "25-01000": "Peabody City", "25-01300": "Billerica", "25-02800": "Woburn",
                            "48-02101": "Ellis County"}},
        "AGEP": {"description": "Person's age", "values": {"min": 0, "max": 99}},
        "SEX": {"description": "Person's gender", "values": {"1": "Male", "2": "Female"}},
        "INDP": {"description": "Industry codes", "link": "https://www2.census.gov/"},
        "INDP_CAT": {"description": "Industry categories", "values": _CATEGORY_LABELS},
    }, indent=2), encoding="utf-8")
    hierarchy = folder / "hierarchy_INDP.csv"
    hierarchy.write_text("".join(f"{code};{cat};*\n" for code, cat in INDP_CATEGORY.items()), encoding="utf-8")
    labelled = folder / "hierarchy_INDP_labelled.csv"
    labelled.write_text(
        "".join(f"{code};{_CATEGORY_NAMES[cat]};*\n" for code, cat in INDP_CATEGORY.items()), encoding="utf-8"
    )
    return AcsFiles(table, dictionary, hierarchy, labelled)
