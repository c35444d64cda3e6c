"""User-facing errors: each problem is one line naming the file, the field and what would be right."""

from __future__ import annotations


class UserError(Exception):
    """Bad input from a user: printed as lines, exit status 2, never a traceback."""

    exit_code = 2

    def __init__(self, lines: list[str] | str):
        self.lines = [lines] if isinstance(lines, str) else list(lines)
        super().__init__("\n".join(self.lines))


class SpecError(UserError):
    """The cluster spec is invalid."""


def field_path(loc: tuple | list) -> str:
    """``("regions", 1, "cidr")`` -> ``regions[1].cidr``."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + str(part)
    return out or "(top level)"
