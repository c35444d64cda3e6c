"""``python -m autoscaler``: the same as the ``autoscaler`` command."""

import sys

from autoscaler.cli import main

sys.exit(main(process=True))
