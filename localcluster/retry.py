"""The local cluster's agents' loop: one step every interval until stopped, a failure retried on the next tick and
said once per distinct reason (the node agent, the process kubelet)."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable


def every(interval_s: float, stop: threading.Event, step: Callable[[], None], what: str,
          log: logging.Logger, failed: Callable[[], None] = lambda: None) -> None:  # fmt: skip
    """Run ``step`` every ``interval_s`` until ``stop`` is set; ``failed`` is called on each failure."""
    last = None
    while not stop.is_set():
        try:
            step()
            last = None
        except Exception as e:  # retried on the next tick, said once
            failed()
            reason = f"{type(e).__name__}: {e}"[:300]
            if reason != last:
                log.warning("%s failed (retried every %.2f s): %s", what, interval_s, reason)
            last = reason
        stop.wait(interval_s)
