"""``python -m bot.cli``: the ``patchgate`` command."""

import sys

from bot.cli import main

sys.exit(main())
