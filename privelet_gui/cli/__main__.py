"""``python -m privelet_gui.cli``: the same as the ``privelet`` command."""

import sys

from . import main

sys.exit(main())
