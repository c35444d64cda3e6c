"""CrashLoopBackOff as the kubelet keeps it: k8s.io/client-go/util/flowcontrol ``Backoff`` with the kubelet's
``backOffPeriod`` 10 s and ``MaxContainerBackOff`` 300 s (pkg/kubelet/kubelet.go), consulted by kuberuntime's
``doBackOff`` with the time the container last finished:

- a container that exits with no entry (its first exit, or its first after a quiet spell) restarts at once, and
  its entry starts at 10 s;
- exited again within the entry's window after its finish, it waits (``waiting.reason: CrashLoopBackOff``) until
  ``finishedAt + backoff``; then it restarts and the window doubles, up to 300 s;
- an entry not touched for more than twice the maximum (10 minutes: a container that ran that long) is forgotten,
  so the next exit restarts at once again.

The clock is injected (``clock()`` in seconds), so tests step it."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

INITIAL_S = 10.0
MAX_S = 300.0


@dataclass
class _Entry:
    backoff: float
    last_update: float


class Backoff:
    def __init__(self, initial_s: float = INITIAL_S, max_s: float = MAX_S,
                 clock: Callable[[], float] = time.monotonic) -> None:  # fmt: skip
        self.initial_s = initial_s
        self.max_s = max_s
        self.clock = clock
        self._entries: dict[str, _Entry] = {}

    def _expired(self, event: float, entry: _Entry) -> bool:
        return event - entry.last_update > 2 * self.max_s

    def in_backoff_since(self, key: str, event: float) -> bool:
        """Whether a container that finished at ``event`` must still wait (``IsInBackOffSince``)."""
        entry = self._entries.get(key)
        if entry is None or self._expired(event, entry):
            return False
        return self.clock() - event < entry.backoff

    def until(self, key: str, event: float) -> float:
        """When the wait of a container that finished at ``event`` ends."""
        entry = self._entries.get(key)
        return event if entry is None else event + entry.backoff

    def window(self, key: str) -> float:
        entry = self._entries.get(key)
        return entry.backoff if entry is not None else 0.0

    def next(self, key: str, event: float) -> None:
        """The container restarts now (``Next``): its window starts, or doubles up to the maximum."""
        entry = self._entries.get(key)
        if entry is None or self._expired(event, entry):
            entry = self._entries[key] = _Entry(self.initial_s, 0.0)
        else:
            entry.backoff = min(entry.backoff * 2, self.max_s)
        entry.last_update = self.clock()

    def forget(self, prefix: str) -> None:
        for key in [k for k in self._entries if k.startswith(prefix)]:
            del self._entries[key]
