"""``python -m ferry ARGS``: the ``ferry`` CLI (see ``ferry --help``)."""

import sys

from ferry._cli import main

sys.exit(main())
