"""Pause the cyclic garbage collector while building many small objects.

Parsing a 50,000-pod snapshot allocates millions of dicts and tuples and none of them is garbage yet; with the
collector running, generation scans take most of the time. Reference counting still frees memory as usual.

The objects made while paused would all sit in the youngest generation, and the first collection after the
pause would walk every one of them (a tenth of a 50,000-pod parse). They are moved to the oldest generation
instead (``gc.freeze`` then ``gc.unfreeze``: two list splices, no walk), where the collector still finds them in
its full collections, as it finds any long-lived object.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
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
