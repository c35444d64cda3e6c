"""Glue for invoke tasks: user errors become one line each on stderr and exit status 2, never a traceback."""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable

from invoke.exceptions import Exit

from clusterspec.errors import UserError


def user_errors(fn: Callable) -> Callable:
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except UserError as e:
            for line in e.lines:
                print(line, file=sys.stderr)
            raise Exit(code=e.exit_code) from None
        except KeyboardInterrupt:
            print("interrupted", file=sys.stderr)
            raise Exit(code=130) from None

    return wrapper
