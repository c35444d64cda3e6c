"""``invoke demo-researcher``: the researcher's path on the local cluster (docs/researchers.md)."""

from demos.researcher.run import main

__all__ = ["main"]
