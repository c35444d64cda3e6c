"""Pause the cyclic garbage collector while building many small objects.

Parsing a 50,000-pod snapshot allocates millions of dicts and tuples and none of them is garbage yet; with the
collector running, generation scans take most of the time. Reference counting still frees memory as usual.

The objects made while paused would all sit in the youngest generation, and the first collection after the
pause would walk every one of them (a tenth of a 50,000-pod parse). They are moved to the oldest generation
instead (``gc.freeze`` then ``gc.unfreeze``: two list splices, no walk), where the collector still finds them in
its full collections, as it finds any long-lived object. CPython starts those by how many objects survived
its younger collections, which this move bypasses, so a long-running process whose passes run paused calls a
:class:`FullCollection` after each pass: cyclic garbage that any thread left young when a pause ended is then
found within a minute, not whenever CPython's count comes round (measured: the live controller grew 247 -> 300
MiB over 1,000 passes without it; docs/benchmarks.md, "Live controller").
"""

from __future__ import annotations

import gc
import logging
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager


@contextmanager
def gc_paused() -> Iterator[None]:
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.freeze()
            gc.unfreeze()
            gc.enable()


class FullCollection:
    """A full collection of the cyclic collector at most once every ``every_s`` seconds, for a long-running
    process to call after each pass (autoscaler/service.py); each call returns whether it collected."""

    def __init__(self, every_s: float = 60.0, monotonic: Callable[[], float] = time.monotonic) -> None:
        self.every_s = every_s
        self._monotonic = monotonic
        self._last = monotonic()

    def __call__(self) -> bool:
        if self._monotonic() - self._last < self.every_s:
            return False
        started = time.perf_counter()
        found = gc.collect()
        self._last = self._monotonic()
        logging.getLogger("autoscaler.gc").debug(
            "full collection: %d unreachable objects in %.3f s", found, time.perf_counter() - started
        )
        return True
