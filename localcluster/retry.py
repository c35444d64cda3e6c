"""The local cluster's agents' loop: one step every interval until stopped, a failure retried on the next tick and
said once per distinct reason (the node agent, the process kubelet).

The interval may be a function, asked after every step: an agent with nothing in flight waits longer (the idle
local cluster costs little CPU), and a ``wake`` event (set by a watch when something changed) ends the wait at once,
so a longer idle interval delays nothing the agent is told about."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable


def every(interval_s: float | Callable[[], float], stop: threading.Event, step: Callable[[], None], what: str,
          log: logging.Logger, failed: Callable[[], None] = lambda: None,
          wake: threading.Event | None = None) -> None:  # fmt: skip
    """Run ``step`` every ``interval_s`` (seconds, or a function giving them after each step) until ``stop`` is
    set; ``failed`` is called on each failure; ``wake`` set ends a wait early (set it too when setting ``stop``)."""
    last = None
    while not stop.is_set():
        wait = interval_s if not callable(interval_s) else None
        try:
            step()
            last = None
        except Exception as e:  # retried on the next tick, said once
            failed()
            reason = f"{type(e).__name__}: {e}"[:300]
            if reason != last:
                log.warning("%s failed (retried): %s", what, reason)
            last = reason
        if wait is None:
            try:
                wait = interval_s()
            except Exception:  # noqa: BLE001 - the interval is advice; a broken one must not stop the loop
                wait = 1.0
        if wake is None:
            stop.wait(wait)
        else:
            wake.wait(wait)
            wake.clear()
