"""Where the app keeps its own files in the user's data folder (the ledger, copies of unsaved work)."""

from __future__ import annotations

import os
from pathlib import Path


def user_data_location(environment: str, name: str) -> Path:
    """``$environment`` if set (tests, scripted runs), else ``name`` in the user's data folder
    (platformdirs: for example ``~/.local/share/privelet-studio`` on Linux)."""
    chosen = os.environ.get(environment)
    if chosen:
        return Path(chosen).expanduser()
    import platformdirs

    return platformdirs.user_data_path("privelet-studio", appauthor=False) / name
