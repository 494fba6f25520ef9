"""``python -m marginalia.app [--demo] [PROJECT]`` starts the desktop app."""

import sys

from .main import main

sys.exit(main())
