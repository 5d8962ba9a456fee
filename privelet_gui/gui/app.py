"""Entry point of the desktop app: ``privelet-gui`` and ``python -m privelet_gui``.

``privelet-gui --demo`` opens the bundled sample; ``--screenshots DIR`` walks every
step on it (one release included), saves one PNG per step into DIR and exits with 0.
It works headless with ``QT_QPA_PLATFORM=offscreen``.

While the app runs, an error that nothing handled (in a slot, an event handler or a thread)
goes to the log of unexpected errors (:mod:`privelet_gui.error_log`: never the user's data),
then to Python's own hook (a traceback on stderr), and the window says where the log is
(Help > Report a problem).
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import tempfile
import threading
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from PySide6.QtWidgets import QApplication

    from ..io.recovery import RecoveryStore
    from .main_window import MainWindow
    from .settings import Settings

__all__ = ["DESKTOP_ID", "create_application", "error_hook", "main", "open_main_window", "parse_args"]

#: The desktop entry's name (packaging/DESKTOP_ID.desktop) and the AppStream component id.
DESKTOP_ID = "org.priveletstudio.studio"


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    from .. import __version__

    parser = argparse.ArgumentParser(
        prog="privelet-gui",
        description="Privelet Studio: publish frequency tables under differential privacy (Privelet, Privelet+).",
    )
    parser.add_argument("files", nargs="*", type=Path, help="a table, project (.privelet) or hierarchy to open")
    parser.add_argument("--demo", action="store_true", help="open the bundled sample (UCI Adult) with its hierarchies")
    parser.add_argument(
        "--screenshots",
        type=Path,
        metavar="DIR",
        help="walk every step on the sample (with --demo), save one PNG per step into DIR, then exit",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    return parser.parse_args(argv)


def create_application(argv: Sequence[str] | None = None) -> QApplication:
    """The QApplication (reused if one exists), with names for QSettings and the desktop.

    If Qt cannot load a platform plugin while making it, the process prints which system
    packages to install and exits with status 1 (see :mod:`.system_libraries`).
    """
    from PySide6.QtCore import qInstallMessageHandler
    from PySide6.QtWidgets import QApplication

    from .. import __version__
    from ..qt import icons
    from .settings import APPLICATION, ORGANIZATION
    from .system_libraries import platform_failure_handler

    existing = QApplication.instance()
    if existing is None:
        handler = platform_failure_handler(None)
        previous = qInstallMessageHandler(handler)
        try:
            app = QApplication([sys.argv[0] if sys.argv else "privelet-gui", *(argv or [])])
        finally:
            qInstallMessageHandler(previous)  # only the start needs it: Qt's own handler again
    elif isinstance(existing, QApplication):
        app = existing
    else:
        raise RuntimeError("a QCoreApplication without widgets is running; the app needs a QApplication")
    app.setApplicationName(APPLICATION)
    app.setOrganizationName(ORGANIZATION)
    app.setOrganizationDomain("privelet.example")
    app.setApplicationVersion(__version__)
    app.setApplicationDisplayName("Privelet Studio")
    app.setDesktopFileName(DESKTOP_ID)  # Wayland matches the window to its desktop entry
    app.setWindowIcon(icons.app_icon())
    return app


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    app = create_application()
    windows: list[MainWindow] = []

    def tell_window(path: Path | None) -> None:
        for window in windows:
            window.unexpected_error_logged(path)

    with error_hook(tell_window):
        if args.screenshots is not None:
            from ..io.recovery import RecoveryStore
            from .settings import Settings

            # A scripted tour reads and writes no user settings (recent files, geometry) and no
            # copies of unsaved work: its own, in a folder that is gone when it ends; the same
            # screenshots on every machine.
            with tempfile.TemporaryDirectory(prefix="privelet-tour-") as folder:
                return _tour(args, Settings.in_folder(folder), RecoveryStore(Path(folder) / "recovery"))
        windows.append(open_main_window(args))  # kept (referenced) until the event loop ends
        return int(app.exec())


@contextlib.contextmanager
def error_hook(notify: Callable[[Path | None], None] | None = None) -> Iterator[None]:
    """While the block runs, log every error nothing handled, then pass it to the hooks before.

    ``sys.excepthook`` (PySide6 calls it for an exception in a slot or an event handler) and
    ``threading.excepthook`` write the record (:func:`~privelet_gui.error_log.log_unexpected_error`)
    and call ``notify`` with the log's path (None if it could not be written) before the previous
    hook runs (the default prints the traceback). Both hooks are restored when the block ends.
    """
    from ..error_log import log_unexpected_error

    previous_hook = sys.excepthook
    previous_thread_hook = threading.excepthook

    def logged(error: BaseException, where: str) -> None:
        path = log_unexpected_error(error, where=where)
        if notify is not None:
            try:
                notify(path)
            except Exception as exc:  # the hook itself must not fail: the original error still gets reported
                log_unexpected_error(exc, where="the unexpected-error hook")

    def hook(kind: type[BaseException], error: BaseException, trace: TracebackType | None) -> None:
        if not issubclass(kind, KeyboardInterrupt):
            logged(error.with_traceback(trace), "the app")
        previous_hook(kind, error, trace)

    def thread_hook(event: threading.ExceptHookArgs) -> None:
        if event.exc_value is not None and not issubclass(event.exc_type, SystemExit):
            logged(event.exc_value, "a thread")
        previous_thread_hook(event)

    sys.excepthook = hook
    threading.excepthook = thread_hook
    try:
        yield
    finally:
        sys.excepthook = previous_hook
        threading.excepthook = previous_thread_hook


def open_main_window(args: argparse.Namespace) -> MainWindow:
    """The main window, fitted to its screen and shown, offering back the unsaved work of a run
    that crashed (if any), with the files of ``args`` opened."""
    from .main_window import MainWindow
    from .screen import keep_on_screen

    window = MainWindow()
    keep_on_screen(window)  # a default or saved size may exceed this screen (a scale factor, another screen)
    window.show()
    window.offer_recovery()
    if args.demo:
        window.open_sample()
    for path in args.files:
        window.open_path(path)
    return window


def _tour(args: argparse.Namespace, settings: Settings, recovery: RecoveryStore) -> int:
    """``--screenshots``: walk every step on the sample with ``settings`` and ``recovery``, save
    the PNGs, close."""
    from .dialogs import HeadlessDialogs
    from .main_window import MainWindow
    from .tour import run_tour

    window = MainWindow(settings, recovery=recovery)
    window.dialogs = HeadlessDialogs()
    window.resize(1280, 860)
    window.show()
    window.open_sample()
    for path in args.files:
        window.open_path(path)
    code = run_tour(window, args.screenshots)
    window.document.mark_saved()  # nothing to ask on close in a scripted tour
    window.close()
    settings.sync()
    return code


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
