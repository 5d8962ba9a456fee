"""When Qt cannot open a window, say which system package to install.

On a fresh Linux desktop Qt's xcb platform plugin may not load because a library it needs
(libxcb-icccm4, libxcb-keysyms1, ...) is not installed. Qt then aborts with a message that
names another library (xcb-cursor0) or none. :func:`platform_failure_handler` is a Qt message
handler, installed while the QApplication is made: on Qt's fatal "no platform plugin" message
it asks the system's loader (``ldd``) which libraries of the plugin are missing, prints the
packages that hold them and exits with status 1 instead of aborting.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable, Mapping
from pathlib import Path

from PySide6.QtCore import QLibraryInfo, QMessageLogContext, QtMsgType, qFormatLogMessage

__all__ = ["PACKAGES", "README_PACKAGES", "advice", "missing_libraries", "platform_failure_handler", "xcb_plugin"]

#: Libraries of Qt's xcb plugin that desktops may lack: file name -> (Debian/Ubuntu package, Fedora package).
PACKAGES: dict[str, tuple[str, str]] = {
    "libxcb-cursor.so.0": ("libxcb-cursor0", "xcb-util-cursor"),
    "libxcb-icccm.so.4": ("libxcb-icccm4", "xcb-util-wm"),
    "libxcb-keysyms.so.1": ("libxcb-keysyms1", "xcb-util-keysyms"),
    "libxcb-image.so.0": ("libxcb-image0", "xcb-util-image"),
    "libxcb-render-util.so.0": ("libxcb-render-util0", "xcb-util-renderutil"),
    "libxcb-util.so.1": ("libxcb-util1", "xcb-util"),
    "libxcb-randr.so.0": ("libxcb-randr0", "libxcb"),
    "libxcb-render.so.0": ("libxcb-render0", "libxcb"),
    "libxcb-shape.so.0": ("libxcb-shape0", "libxcb"),
    "libxcb-shm.so.0": ("libxcb-shm0", "libxcb"),
    "libxcb-sync.so.1": ("libxcb-sync1", "libxcb"),
    "libxcb-xfixes.so.0": ("libxcb-xfixes0", "libxcb"),
    "libxcb-xkb.so.1": ("libxcb-xkb1", "libxcb"),
    "libxcb.so.1": ("libxcb1", "libxcb"),
    "libxkbcommon-x11.so.0": ("libxkbcommon-x11-0", "libxkbcommon-x11"),
    "libxkbcommon.so.0": ("libxkbcommon0", "libxkbcommon"),
    "libX11-xcb.so.1": ("libx11-xcb1", "libX11-xcb"),
    "libX11.so.6": ("libx11-6", "libX11"),
    "libEGL.so.1": ("libegl1", "libglvnd-egl"),
    "libGL.so.1": ("libgl1", "libglvnd-glx"),
    "libfontconfig.so.1": ("libfontconfig1", "fontconfig"),
    "libdbus-1.so.3": ("libdbus-1-3", "dbus-libs"),
}

#: The Debian/Ubuntu packages README.md lists ("System packages (Linux)").
README_PACKAGES = tuple(dict.fromkeys(debian for debian, _ in PACKAGES.values()))

# "libfoo.so.1 => not found" (ldd), or the loader's own refusal of a library it found broken.
_NOT_FOUND = re.compile(r"^\s*(\S+\.so[.\d]*)\s+=>\s+not found", re.MULTILINE)
_LOAD_ERROR = re.compile(r"error while loading shared libraries: (\S+\.so[.\d]*):")


def xcb_plugin() -> Path:
    """Qt's xcb platform plugin, where this Qt keeps its plugins."""
    return Path(QLibraryInfo.path(QLibraryInfo.LibraryPath.PluginsPath)) / "platforms" / "libqxcb.so"


def _ldd(library: Path) -> str:
    """What the system's loader says of ``library``'s dependencies ('' if ldd is not there)."""
    ldd = shutil.which("ldd")
    if ldd is None or not library.is_file():
        return ""
    try:
        result = subprocess.run([ldd, str(library)], capture_output=True, text=True, timeout=20, check=False)
    except (OSError, subprocess.SubprocessError):
        return ""
    return result.stdout + result.stderr


def missing_libraries(library: Path, lookup: Callable[[Path], str] = _ldd) -> list[str]:
    """File names of the libraries ``library`` needs that the loader cannot find, in ldd's order.

    ``lookup`` returns the loader's report on a library (``ldd``'s output; tests give a fake).
    """
    report = lookup(library)
    names = [*_NOT_FOUND.findall(report), *(Path(m).name for m in _LOAD_ERROR.findall(report))]
    return list(dict.fromkeys(names))


def advice(missing: list[str], environ: Mapping[str, str]) -> str:
    """What to do, for a custodian: the packages to install, or why there is no window."""
    if missing:
        known = [PACKAGES[name] for name in missing if name in PACKAGES]
        lines = [f"Privelet Studio cannot open a window: Qt's X11 (xcb) plugin needs {', '.join(missing)}, "
                 "which the system does not have."]
        if known:
            debian = " ".join(dict.fromkeys(d for d, _ in known))
            fedora = " ".join(dict.fromkeys(f for _, f in known))
            lines.append(f"Install them:  sudo apt install {debian}   (Debian, Ubuntu)")
            lines.append(f"           or  sudo dnf install {fedora}   (Fedora)")
        lines.append("README.md ('System packages (Linux)') lists every package the app needs.")
        return "\n".join(lines)
    if not environ.get("DISPLAY") and not environ.get("WAYLAND_DISPLAY"):
        return ("Privelet Studio cannot open a window: there is no display (DISPLAY and WAYLAND_DISPLAY are not set). "
                "Start it from a desktop session; for a scripted run (--screenshots) without a screen, set "
                "QT_QPA_PLATFORM=offscreen.")
    return ("Privelet Studio cannot open a window: Qt could not load its platform plugin (its message is above). "
            "Run again with QT_DEBUG_PLUGINS=1 to see why; README.md ('System packages (Linux)') lists the "
            "packages the app needs.")


def _diagnose() -> list[str]:
    """The missing libraries of the xcb plugin, if xcb is the platform Qt was loading."""
    requested = os.environ.get("QT_QPA_PLATFORM", "xcb")
    if not sys.platform.startswith("linux") or "xcb" not in requested:
        return []
    return missing_libraries(xcb_plugin())


def platform_failure_handler(
    previous: Callable[[QtMsgType, QMessageLogContext, str], None] | None,
    *,
    diagnose: Callable[[], list[str]] = _diagnose,
    exit_process: Callable[[int], None] = os._exit,
) -> Callable[[QtMsgType, QMessageLogContext, str], None]:
    """A Qt message handler that turns Qt's fatal "no platform plugin" into advice and exit 1.

    Other messages go to ``previous`` (the handler it replaces), or to stderr as Qt prints them.
    """

    def handler(kind: QtMsgType, context: QMessageLogContext, message: str) -> None:
        if kind == QtMsgType.QtFatalMsg and "platform plugin" in message:
            print(qFormatLogMessage(kind, context, message), file=sys.stderr)
            print("\n" + advice(diagnose(), os.environ), file=sys.stderr, flush=True)
            # Qt aborts (a core dump) once a fatal message is handled: leave first, plainly.
            exit_process(1)
        elif previous is not None:
            previous(kind, context, message)
        else:
            print(qFormatLogMessage(kind, context, message), file=sys.stderr)

    return handler
