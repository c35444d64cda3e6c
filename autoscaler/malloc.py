"""Handing memory the C allocator keeps back to the system, for the long-lived controller process.

Each pass builds and drops tens of MiB (the parsed snapshot, the plan); CPython returns its small-object arenas
when they empty, but what went through glibc's malloc (lists, large dicts' tables, response bodies) stays in the
allocator's free lists, and each thread that allocates (the informers decoding pages, the Event writer, the HTTP
server) gets an arena of its own that keeps its free memory for itself. So the process:

- caps the number of arenas (``mallopt(M_ARENA_MAX)``, as the ``MALLOC_ARENA_MAX`` environment variable does;
  glibc's default is 8 per core), before its threads start;
- calls ``malloc_trim(0)`` after each pass, which returns the free pages of every arena to the system (glibc
  2.8 and later: not only the top of the heap).

Both are glibc's (``man 3 mallopt``, ``man 3 malloc_trim``); on another C library (musl, macOS) they do nothing.
The figures are in docs/benchmarks.md ("Live controller").
"""

from __future__ import annotations

import ctypes
import ctypes.util
import logging

log = logging.getLogger("autoscaler.malloc")

M_ARENA_MAX = -8  # glibc malloc.h
ARENAS = 2  # the main thread's and one shared by the others


def _glibc():
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        return libc if hasattr(libc, "malloc_trim") and hasattr(libc, "mallopt") else None
    except OSError:
        return None


_LIBC = _glibc()


def available() -> bool:
    return _LIBC is not None


def limit_arenas(arenas: int = ARENAS) -> bool:
    """At most ``arenas`` malloc arenas from now on (call before threads start); False without glibc."""
    if _LIBC is None:
        return False
    return bool(_LIBC.mallopt(M_ARENA_MAX, arenas))


def trim() -> bool:
    """Return the allocator's free memory to the system; whether any was (False without glibc)."""
    if _LIBC is None:
        return False
    return bool(_LIBC.malloc_trim(0))
