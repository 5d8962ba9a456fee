"""Persistent user settings (QSettings): window geometry, recent files, last folders.

Settings carry a version and are migrated on start (Orange3's ``migrate_settings``).
Tests point QSettings at a temporary folder (see tests/gui/conftest.py).
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QByteArray, QSettings

__all__ = ["MAX_RECENT", "SETTINGS_VERSION", "Settings"]

SETTINGS_VERSION = 1
MAX_RECENT = 10
ORGANIZATION = "Privelet"
APPLICATION = "Privelet Studio"


class Settings:
    """A thin typed wrapper over QSettings."""

    def __init__(self, qsettings: QSettings | None = None):
        self._s = qsettings if qsettings is not None else QSettings()
        self._migrate()

    @property
    def qsettings(self) -> QSettings:
        return self._s

    def _migrate(self) -> None:
        version = int(self._s.value("settings/version", 0) or 0)
        if version < 1:
            # Version 0 (none stored): nothing to carry over.
            self._s.setValue("settings/version", SETTINGS_VERSION)

    # -- window -------------------------------------------------------------------------
    def geometry(self) -> QByteArray | None:
        value = self._s.value("window/geometry")
        return value if isinstance(value, QByteArray) and not value.isEmpty() else None

    def set_geometry(self, value: QByteArray) -> None:
        self._s.setValue("window/geometry", value)

    def window_state(self) -> QByteArray | None:
        value = self._s.value("window/state")
        return value if isinstance(value, QByteArray) and not value.isEmpty() else None

    def set_window_state(self, value: QByteArray) -> None:
        self._s.setValue("window/state", value)

    # -- recent files --------------------------------------------------------------------
    def recent_files(self) -> list[Path]:
        value = self._s.value("files/recent", [])
        if isinstance(value, str):
            value = [value]
        return [Path(v) for v in (value or []) if v]

    def add_recent_file(self, path: Path) -> None:
        path = Path(path).absolute()
        recent = [p for p in self.recent_files() if p != path]
        recent.insert(0, path)
        self._s.setValue("files/recent", [str(p) for p in recent[:MAX_RECENT]])

    def clear_recent_files(self) -> None:
        self._s.setValue("files/recent", [])

    # -- last folders ---------------------------------------------------------------------
    def last_folder(self, kind: str) -> str:
        value = self._s.value(f"folders/{kind}", "")
        if value and Path(str(value)).is_dir():
            return str(value)
        return str(Path.home())

    def set_last_folder(self, kind: str, path: Path) -> None:
        folder = path if path.is_dir() else path.parent
        self._s.setValue(f"folders/{kind}", str(folder))

    def sync(self) -> None:
        self._s.sync()
