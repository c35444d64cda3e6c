"""Change history for watches: per-kind event logs since the emulator started, compacted like etcd.

A watch from a resourceVersion older than what the log still holds gets ``410 Gone`` (reason Expired), so
clients relist, as with a real API server after compaction. ``compact()`` forces that (tests, or a long
running emulator: the log keeps at most ``max_events`` per kind).
"""

from __future__ import annotations

import copy
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator

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

    def stream(
        self,
        kind: str,
        last: int,
        initial: list[dict],
        render: Callable[[dict], dict | None],
        bookmark: dict | None,
        timeout_s: float,
        bookmark_interval_s: float,
        stopping: Callable[[], bool],
    ) -> Iterator[dict]:
        """Watch events of ``kind`` after resourceVersion ``last``: ``initial`` first, then each logged change
        whose object ``render`` shows (None: filtered out), until ``timeout_s``. With ``bookmark``
        (``{kind, apiVersion}``), a BOOKMARK at the current resourceVersion after each idle interval."""
        yield from initial
        deadline = time.monotonic() + timeout_s
        last_sent = time.monotonic()
        while not stopping():
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return
            out: list[dict] = []
            with self.cond:
                events = self.events_after(kind, last)
                if not events:
                    self.cond.wait(min(remaining, bookmark_interval_s, 0.5))
                    events = self.events_after(kind, last)
                for rv, event_type, obj in events:
                    last = rv
                    shown = render(obj)
                    if shown is not None:
                        out.append({"type": event_type, "object": shown})
                if not out and bookmark and time.monotonic() - last_sent >= bookmark_interval_s:
                    last = max(last, self.model.store.resource_version)
                    out.append(
                        {
                            "type": "BOOKMARK",
                            "object": {**bookmark, "metadata": {"resourceVersion": str(last)}},
                        }
                    )
            if out:
                last_sent = time.monotonic()
                yield from out
