"""Entry script for frozen builds (PyInstaller): the same as the privelet command."""

from privelet_gui.cli import main

raise SystemExit(main())
