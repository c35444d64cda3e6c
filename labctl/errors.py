"""The researcher's errors: one line with the reason and what would be right, exit status 2."""

from __future__ import annotations

from clusterspec.errors import UserError


class LabError(UserError):
    """Bad input or a refused request: printed as one line, nothing created."""
