"""Errors of the planner's input: one clear line per problem, never a traceback."""

from __future__ import annotations


class SnapshotError(Exception):
    """A snapshot that cannot be planned: ``lines`` holds one line per problem (where, what, what is right)."""

    exit_code = 2

    def __init__(self, lines: list[str] | str):
        self.lines = [lines] if isinstance(lines, str) else list(lines)
        super().__init__("\n".join(self.lines))
