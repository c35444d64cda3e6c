"""``invoke demo-researcher``: the researcher's path on the local cluster (docs/researchers.md)."""

from labctl.demo.run import main

__all__ = ["main"]
