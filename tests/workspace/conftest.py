"""The workspace tests' table: the bundled sample, read once, in a fresh workspace per test."""

from __future__ import annotations

import pytest

from privelet_gui import io as pio
from privelet_gui.workspace import Workspace


@pytest.fixture(scope="session")
def sample_summary() -> pio.TableSummary:
    return pio.summarize_table(pio.sample_table_path(), pio.sniff_table(pio.sample_table_path()))


@pytest.fixture
def workspace(sample_summary: pio.TableSummary) -> Workspace:
    """A workspace holding the sample with its schema."""
    ws = Workspace()
    ws.set_table(sample_summary, schema=pio.load_schema(pio.sample_schema_path()))
    return ws
