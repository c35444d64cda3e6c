"""The researcher's errors: one line with the reason and what would be right, exit status 2."""

from __future__ import annotations

from clusterspec.errors import UserError


class LabError(UserError):
    """Bad input or a refused request: printed as one line, nothing created."""


class JobFailed(LabError):
    """The job failed (an init step, the command): its reason in one line, exit status 1."""

    code = 1
