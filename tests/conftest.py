"""Test-wide settings: headless Qt, deterministic property tests, shared data location."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

# Property tests draw their examples from a fixed seed so that CI runs are reproducible.
settings.register_profile(
    "project", derandomize=True, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile("project")

#: Real third-party data shared beside the checkout (CI has it; a fresh clone does not).
SHARED_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"


@pytest.fixture
def shared_data() -> Path:
    """``../shared/data``, or skip the test (saying why) when it is absent."""
    if not SHARED_DATA.is_dir():
        pytest.skip(f"needs the shared datasets at {SHARED_DATA}, which a fresh clone does not have")
    return SHARED_DATA
