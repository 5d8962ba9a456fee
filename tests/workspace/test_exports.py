"""The app's export job: the rows written as progress, and a cancel that leaves no file."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from privelet_gui.engine import Cancelled, Hierarchy, NominalAttribute, OrdinalAttribute, Schema, privelet_plus
from privelet_gui.workspace import jobs

SCHEMA = Schema([OrdinalAttribute.integer_range("age", 0, 9), NominalAttribute("sex", Hierarchy.flat(["F", "M"]))])


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_an_export_job_reports_the_rows_written_and_stops_on_cancel(tmp_path: Path, fmt):
    slab_cells = 4  # slabs of two ages (4 cells): 5 of them
    release = privelet_plus(np.full(SCHEMA.shape, 3.0), SCHEMA, 1.0)
    reports: list[tuple[float, str]] = []
    done = jobs.export_opened_release(release, tmp_path / f"a.{fmt}", fmt, lambda f, stage: reports.append((f, stage)),
                                      slab_cells=slab_cells)
    assert done == tmp_path / f"a.{fmt}"
    assert reports[0] == (0.0, f"writing a.{fmt}") and reports[-1] == (1.0, f"wrote a.{fmt}")
    assert [stage for _, stage in reports[1:-1]] == [f"writing rows: {rows} of 20" for rows in (4, 8, 12, 16, 20)]

    asked = iter([False, False, True])  # at the start, after the first slab, after the second
    with pytest.raises(Cancelled):
        jobs.export_opened_release(release, tmp_path / f"b.{fmt}", fmt, should_cancel=lambda: next(asked),
                                   slab_cells=slab_cells)
    described = [f"a.{fmt}.metadata.json"] if fmt == "csv" else []  # a CSV file's description beside it
    assert sorted(p.name for p in tmp_path.iterdir()) == [f"a.{fmt}", *described]  # no b, nor its description
