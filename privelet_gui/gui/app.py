"""Entry point of the desktop app: ``privelet-gui`` and ``python -m privelet_gui``.

``privelet-gui --demo`` opens the bundled sample; ``--screenshots DIR`` walks every
step on it (one release included), saves one PNG per step into DIR and exits with 0.
It works headless with ``QT_QPA_PLATFORM=offscreen``.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

__all__ = ["create_application", "main", "parse_args"]


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


def create_application(argv: Sequence[str] | None = None):  # type: ignore[no-untyped-def]
    """The QApplication (reused if one exists), with names for QSettings and the desktop."""
    from PySide6.QtWidgets import QApplication

    from .. import __version__
    from ..qt import icons
    from .settings import APPLICATION, ORGANIZATION

    app = QApplication.instance()
    if app is None:
        app = QApplication([sys.argv[0] if sys.argv else "privelet-gui", *(argv or [])])
    app.setApplicationName(APPLICATION)
    app.setOrganizationName(ORGANIZATION)
    app.setOrganizationDomain("privelet.example")
    app.setApplicationVersion(__version__)
    app.setApplicationDisplayName("Privelet Studio")
    app.setDesktopFileName("privelet-studio")
    app.setWindowIcon(icons.app_icon())
    return app


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    app = create_application()
    from .main_window import MainWindow

    window = MainWindow()
    if args.screenshots is not None:
        from .dialogs import HeadlessDialogs

        window.dialogs = HeadlessDialogs()
        window.resize(1280, 860)
    window.show()
    if args.demo or args.screenshots is not None:
        window.open_sample()
    for path in args.files:
        window.open_path(path)
    if args.screenshots is not None:
        from .tour import run_tour

        code = run_tour(window, args.screenshots)
        window.document.mark_saved()  # nothing to ask on close in a scripted tour
        window.close()
        return code
    return int(app.exec())


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
