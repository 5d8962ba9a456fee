"""``python -m privelet_gui`` opens the desktop app (the same as ``privelet-gui``)."""

from .gui.app import main

if __name__ == "__main__":
    raise SystemExit(main())
