"""Entry script for frozen builds (PyInstaller): the same as the privelet-gui command."""

from privelet_gui.gui.app import main

raise SystemExit(main())
