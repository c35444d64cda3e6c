"""Change history for watches: per-kind event logs since the emulator started, compacted like etcd.

A watch from a resourceVersion older than what the log still holds gets ``410 Gone`` (reason Expired), so
clients relist, as with a real API server after compaction. ``compact()`` forces that (tests, or a long
running emulator: the log keeps at most ``max_events`` per kind).
"""

from __future__ import annotations

import copy
import threading
from collections import deque

from autoscaler.model import ClusterModel


class WatchHub:
    def __init__(self, model: ClusterModel, max_events: int = 10_000) -> None:
        self.model = model
        self.cond = threading.Condition(model.lock)
        self.max_events = max_events
        self._log: dict[str, deque[tuple[int, str, dict]]] = {}
        with model.lock:
            self._oldest = model.store.resource_version  # events after this are in the log
            self._compacted: dict[str, int] = {}
            model.subscribe(self._on_change)

    def _on_change(self, kind: str, event_type: str, obj: dict) -> None:
        with self.cond:
            log = self._log.setdefault(kind, deque())
            log.append((int(obj["metadata"]["resourceVersion"]), event_type, copy.deepcopy(obj)))
            if len(log) > self.max_events:
                self._compacted[kind] = log.popleft()[0]
            self.cond.notify_all()

    def too_old(self, kind: str, rv: int) -> bool:
        """Whether events after ``rv`` may be missing from the log."""
        return rv < max(self._oldest, self._compacted.get(kind, 0))

    def events_after(self, kind: str, rv: int) -> list[tuple[int, str, dict]]:
        out = []
        for entry in reversed(self._log.get(kind, ())):
            if entry[0] <= rv:
                break
            out.append(entry)
        return out[::-1]

    def compact(self) -> int:
        """Drop every logged event; watches from older resourceVersions get 410 Gone. Returns the current RV."""
        with self.cond:
            rv = self.model.store.resource_version
            for kind in list(self._log) + list(self.model.store._objects):
                self._compacted[kind] = rv
                self._log.pop(kind, None)
            self._oldest = rv
            return rv
