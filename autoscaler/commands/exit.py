"""Ending a one-shot command's process at once, once its output is out."""

from __future__ import annotations

import logging
import os
import sys


def exit_now(args, status: int = 0) -> None:
    """End the process at once with ``status`` when the command is the whole process (``args.process``), without
    freeing its objects one by one: after a 50,000-pod plan that is millions of objects and about a quarter of a
    second, which the operating system reclaims at once. Output and log handlers are flushed first; with
    ``main()`` called in-process (tests), this returns and the command returns as usual."""
    if not getattr(args, "process", False):
        return
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(status)
