"""``python -m marginalia ...`` runs the command line (the same as ``marginalia-cli ...``)."""

import sys

from .cli import main

sys.exit(main())
