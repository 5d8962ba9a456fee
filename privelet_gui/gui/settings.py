"""Persistent user settings (QSettings): window geometry, recent files, last folders.

Settings carry a version and are migrated on start (Orange3's ``migrate_settings``).

They live where Qt keeps the user's settings, unless the environment variable
``PRIVELET_STUDIO_SETTINGS`` names a folder: then in an INI file there. The test suite sets
it (tests/conftest.py, and a fresh folder per test in tests/gui/conftest.py), so that neither
the tests nor the app processes they start touch the user's real settings; scripted runs
(``--screenshots``) use :meth:`Settings.in_folder` on a temporary folder.
"""

from __future__ import annotations

import os
from pathlib import Path

from PySide6.QtCore import QByteArray, QSettings

__all__ = ["MAX_RECENT", "SETTINGS_ENV", "SETTINGS_VERSION", "Settings"]

SETTINGS_VERSION = 1
MAX_RECENT = 10
ORGANIZATION = "Privelet"
APPLICATION = "Privelet Studio"
#: The environment variable naming a folder to keep the settings in instead of the user's.
SETTINGS_ENV = "PRIVELET_STUDIO_SETTINGS"
_FILE_NAME = "settings.ini"


class Settings:
    """A thin typed wrapper over QSettings (by default the user's, or see :data:`SETTINGS_ENV`)."""

    def __init__(self, qsettings: QSettings | None = None):
        if qsettings is None:
            folder = os.environ.get(SETTINGS_ENV)
            qsettings = QSettings(str(Path(folder) / _FILE_NAME), QSettings.Format.IniFormat) if folder else QSettings()
        self._s = qsettings
        self._migrate()

    @classmethod
    def in_folder(cls, folder: str | Path) -> Settings:
        """Settings kept in an INI file in ``folder`` (a scripted run's temporary folder)."""
        return cls(QSettings(str(Path(folder) / _FILE_NAME), QSettings.Format.IniFormat))

    @property
    def location(self) -> Path:
        """The file (or, for the Windows registry, the key) the settings are written to."""
        return Path(self._s.fileName())

    @property
    def qsettings(self) -> QSettings:
        return self._s

    def _migrate(self) -> None:
        stored = str(self._s.value("settings/version", 0) or 0)
        version = int(stored) if stored.isdigit() else 0  # a hand-edited file must not stop the app
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
        if isinstance(value, str):  # INI files store a list of one as a plain string
            value = [value]
        return [Path(str(v)) for v in value if v] if isinstance(value, list) else []

    def add_recent_file(self, path: Path) -> None:
        path = Path(path).absolute()
        recent = [p for p in self.recent_files() if p != path]
        recent.insert(0, path)
        self._s.setValue("files/recent", [str(p) for p in recent[:MAX_RECENT]])

    def clear_recent_files(self) -> None:
        self._s.setValue("files/recent", [])

    # -- last folders ---------------------------------------------------------------------
    def last_folder(self, kind: str) -> Path | None:
        """The folder a file of ``kind`` was last opened from or saved to, if it still exists."""
        value = self._s.value(f"folders/{kind}", "")
        return Path(str(value)) if value and Path(str(value)).is_dir() else None

    def set_last_folder(self, kind: str, path: Path) -> None:
        folder = path if path.is_dir() else path.parent
        self._s.setValue(f"folders/{kind}", str(folder))

    def sync(self) -> None:
        self._s.sync()
