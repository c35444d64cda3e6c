"""Kubernetes Events off the decision path: a bounded, rate-limited, aggregating writer on a thread of its own.

It follows the Kubernetes event recorder (k8s.io/client-go, tools/record):

- ``event.go``: generating an Event never blocks: the recorder hands it to a queue of ``maxQueuedEvents`` (1000)
  with ``DropIfChannelFull`` (``ActionOrDrop``) and a goroutine writes it (``recordToSink``). A write that the
  server rejects (a StatusError: 4xx) is abandoned; a transport error is tried again (``maxTriesPerEvent``, the
  first wait randomised); a PATCH that finds the Event gone (404) creates it anew; once shut down, every queued
  Event is tried only once.
- ``events_cache.go``, ``EventCorrelator.EventCorrelate``: (1) ``EventAggregator``: Events of one source about one
  object with the same type and reason that differ only by message, seen with 10 distinct messages within 600 s
  (``defaultAggregateMaxEvents``, ``defaultAggregateIntervalInSeconds``), become one Event whose message starts
  "(combined from similar events): "; (2) ``eventLogger``: an Event identical to one already written (same key:
  source, object, type, reason, message) is not created again: the existing one is PATCHed (strategic merge)
  with ``count`` + 1, ``lastTimestamp`` and ``message``; (3) ``EventSourceObjectSpamFilter``: a token bucket
  per source + object, burst 25, refilled 1 per 300 s (``defaultSpamBurst``, ``defaultSpamQPS``), skips the
  rest. The three caches are LRUs of 4096 entries (``maxLruCacheEntries``).

Where this differs, on purpose: the queue holds ``capacity`` Events and a full queue drops the new one (the
recorder's channel does the same), but a write is tried ``max_tries`` times (not 12 times 10 s apart) so that
an API that is down empties the queue into the drop counter instead of holding it for two minutes an Event;
writes go through a writer-wide token bucket (``qps``/``burst``, kube-scheduler's client defaults 50/100);
and closing drains for a bounded time, then counts what is left as dropped. Every drop is counted in
``autoscaler_events_dropped_total{reason}``: ``queue_full``, ``spam_filter``, ``api_error``, ``rejected``,
``shutdown``.

The API is reached through a sink (``create(event) -> event``, ``patch(namespace, name, patch) -> event``;
``EventNotFound`` / ``EventRejected`` classify errors), so the writer has no Kubernetes client of its own:
:class:`autoscaler.adapters.kubernetes.KubeCluster` gives it one with a connection pool of its own.
"""

from __future__ import annotations

import logging
import queue
import random
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Protocol

from autoscaler import metrics

log = logging.getLogger("autoscaler.events")

LRU_ENTRIES = 4096  # maxLruCacheEntries
AGGREGATE_MAX_EVENTS = 10  # defaultAggregateMaxEvents
AGGREGATE_INTERVAL_S = 600.0  # defaultAggregateIntervalInSeconds
SPAM_BURST = 25  # defaultSpamBurst
SPAM_QPS = 1.0 / 300.0  # defaultSpamQPS
COMBINED_PREFIX = "(combined from similar events): "  # EventAggregatorByReasonMessageFunc
MAX_QUEUED = 1000  # maxQueuedEvents
MESSAGE_MAX = 1024  # the API server rejects longer core/v1 Event messages


class EventNotFound(Exception):
    """The Event to PATCH is gone (HTTP 404): it is created anew."""


class EventRejected(Exception):
    """The API server refused the Event (a 4xx other than 404/409/429): it is abandoned, never retried."""


class EventSink(Protocol):
    def create(self, event: dict) -> dict: ...
    def patch(self, namespace: str, name: str, patch: dict) -> dict: ...


class _LRU:
    def __init__(self, size: int = LRU_ENTRIES):
        self.size, self.data = size, OrderedDict()

    def get(self, key):
        value = self.data.get(key)
        if value is not None:
            self.data.move_to_end(key)
        return value

    def put(self, key, value) -> None:
        self.data[key] = value
        self.data.move_to_end(key)
        if len(self.data) > self.size:
            self.data.popitem(last=False)


class TokenBucket:
    """client-go's flowcontrol token bucket: starts full with ``burst`` tokens, refills at ``qps``."""

    def __init__(self, qps: float, burst: int, now: float):
        self.qps, self.burst, self.tokens, self.at = qps, burst, float(burst), now

    def _refill(self, now: float) -> None:
        self.tokens = min(float(self.burst), self.tokens + max(0.0, now - self.at) * self.qps)
        self.at = max(self.at, now)

    def try_accept(self, now: float) -> bool:
        self._refill(now)
        if self.tokens >= 1.0:
            self.tokens -= 1.0
            return True
        return False

    def wait_s(self, now: float) -> float:
        """Seconds until a token is available (0 when one is)."""
        self._refill(now)
        return 0.0 if self.tokens >= 1.0 else (1.0 - self.tokens) / self.qps


def _source(e: dict) -> tuple:
    src, obj = e.get("source") or {}, e.get("involvedObject") or {}
    return (src.get("component"), src.get("host"), obj.get("kind"), obj.get("namespace"), obj.get("name"),
            obj.get("uid"), obj.get("apiVersion"))  # fmt: skip


def event_key(e: dict) -> tuple:
    """getEventKey: source, object (with fieldPath), type, reason, message."""
    return (*_source(e), (e.get("involvedObject") or {}).get("fieldPath"), e.get("type"), e.get("reason"),
            e.get("message"))  # fmt: skip


def spam_key(e: dict) -> tuple:
    """getSpamKey: source and object."""
    return _source(e)


def aggregate_key(e: dict) -> tuple:
    """EventAggregatorByReasonFunc: source, object, type, reason and the reporting controller and instance."""
    return (
        *_source(e),
        e.get("type"),
        e.get("reason"),
        e.get("reportingComponent"),
        e.get("reportingInstance"),
    )


@dataclass
class _Aggregate:
    messages: set
    last: float


@dataclass
class _Logged:
    count: int
    first: str
    name: str
    resource_version: str | None


def _stamp(t: float) -> str:
    return datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class Correlator:
    """EventCorrelator: aggregate, then count (PATCH instead of a new Event), then the spam filter.

    ``correlate`` returns ``(event, patch)`` (``patch`` None: create ``event``) or None (the spam filter skips it).
    ``clock`` is seconds since the epoch (a virtual clock in tests)."""

    def __init__(self, clock: Callable[[], float], *, lru: int = LRU_ENTRIES, max_events: int = AGGREGATE_MAX_EVENTS,
                 interval_s: float = AGGREGATE_INTERVAL_S, burst: int = SPAM_BURST, qps: float = SPAM_QPS):  # fmt: skip
        self.clock = clock
        self.max_events, self.interval_s, self.burst, self.qps = max_events, interval_s, burst, qps
        self._aggregates, self._logged, self._spam = _LRU(lru), _LRU(lru), _LRU(lru)

    def cache_sizes(self) -> tuple[int, int, int]:
        """Entries in the aggregator's, the logger's and the spam filter's caches (each an LRU)."""
        return len(self._aggregates.data), len(self._logged.data), len(self._spam.data)

    def correlate(self, event: dict) -> tuple[dict, dict | None] | None:
        now = self.clock()
        event, key = self._aggregate(event, now)
        event, patch = self._observe(event, key)
        bucket = self._spam.get(spam_key(event))
        if bucket is None:
            bucket = TokenBucket(self.qps, self.burst, now)
        self._spam.put(spam_key(event), bucket)
        if not bucket.try_accept(now):
            return None
        return event, patch

    def _aggregate(self, event: dict, now: float) -> tuple[dict, tuple]:
        akey = aggregate_key(event)
        record = self._aggregates.get(akey)
        if record is None or now - record.last > self.interval_s:
            record = _Aggregate(set(), now)
        record.messages.add(event.get("message"))
        record.last = now
        self._aggregates.put(akey, record)
        if len(record.messages) < self.max_events:
            return event, event_key(event)
        record.messages.pop()  # the set never grows past the threshold
        obj = event["involvedObject"]
        combined = {
            **event,
            "metadata": {
                "name": f"{obj.get('name')}.{int(now * 1e9):x}",
                "namespace": event["metadata"]["namespace"],
            },
            "message": (COMBINED_PREFIX + (event.get("message") or ""))[:MESSAGE_MAX],
            "count": 1,
            "firstTimestamp": _stamp(now),
            "lastTimestamp": _stamp(now),
        }
        return combined, akey

    def _observe(self, event: dict, key: tuple) -> tuple[dict, dict | None]:
        last = self._logged.get(key)
        patch = None
        if last is not None and last.count > 0:
            event = {**event, "metadata": {**event["metadata"], "name": last.name},
                     "firstTimestamp": last.first, "count": last.count + 1}  # fmt: skip
            # what CreateTwoWayMergePatch yields against a copy with count 0, lastTimestamp 0 and no message
            patch = {
                "count": event["count"],
                "lastTimestamp": event["lastTimestamp"],
                "message": event["message"],
            }
        self._logged.put(key, _Logged(event.get("count") or 1, event.get("firstTimestamp"), event["metadata"]["name"],
                                      last.resource_version if last else None))  # fmt: skip
        return event, patch

    def update_state(self, written: dict) -> None:
        """After a write: remember the server's name and resourceVersion (eventLogger.updateState)."""
        meta = written.get("metadata") or {}
        self._logged.put(event_key(written), _Logged(written.get("count") or 1, written.get("firstTimestamp"),
                                                     meta.get("name"), meta.get("resourceVersion")))  # fmt: skip


class EventWriter:
    """Writes Events from its own thread. ``submit`` is O(1) and never blocks: it builds the Event and puts it on
    a bounded queue, or drops it (counted) when the queue is full or the writer is closed."""

    def __init__(self, sink: EventSink, *, component: str, instance: str = "", clock: Callable[[], float] = time.time,
                 capacity: int = MAX_QUEUED, qps: float | None = 50.0, burst: int = 100, max_tries: int = 3,
                 retry_s: float = 1.0, correlator: Correlator | None = None):  # fmt: skip
        self.sink, self.component, self.instance, self.clock = sink, component, instance or component, clock
        self.capacity, self.max_tries, self.retry_s = capacity, max_tries, retry_s
        self.correlator = correlator or Correlator(clock)
        self._rate = TokenBucket(qps, burst, time.monotonic()) if qps else None
        self._queue: queue.Queue = queue.Queue(maxsize=capacity)
        self._closed = threading.Event()  # no more submissions; retries stop waiting
        self._thread: threading.Thread | None = None
        self._start_lock = threading.Lock()
        self._seq = 0
        self.written = {"create": 0, "patch": 0}
        self.dropped: dict[str, int] = {}

    # -- the caller's side ---------------------------------------------------------------------------------
    def submit(self, involved: dict, reason: str, message: str, type: str = "Normal") -> bool:  # noqa: A002
        """Queue an Event about ``involved`` (an object reference: kind, apiVersion, name, namespace, uid...).
        False when it was dropped (queue full, writer closed)."""
        if self._closed.is_set():
            self._drop("shutdown")
            return False
        if self._thread is None:
            self.start()
        try:
            self._queue.put_nowait(self.build(involved, reason, message, type))
        except queue.Full:
            self._drop("queue_full")
            return False
        metrics.EVENTS_QUEUED.set(self._queue.qsize())
        return True

    def build(self, involved: dict, reason: str, message: str, type: str = "Normal") -> dict:  # noqa: A002
        """The core/v1 Event as the recorder makes it (makeEvent): named ``<object>.<unix nanoseconds, hex>``
        (a sequence number keeps names of one instant apart), first and last seen now, count 1."""
        now = self.clock()
        self._seq += 1
        return {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {
                "name": f"{involved.get('name')}.{int(now * 1e9) + self._seq:x}",
                "namespace": involved.get("namespace") or "default",
            },
            "involvedObject": {k: v for k, v in involved.items() if v is not None},
            "reason": reason,
            "message": message[:MESSAGE_MAX],
            "type": type,
            "source": {"component": self.component},
            "reportingComponent": self.component,
            "reportingInstance": self.instance,
            "firstTimestamp": _stamp(now),
            "lastTimestamp": _stamp(now),
            "count": 1,
        }

    def pending(self) -> int:
        """Events queued or being written."""
        return self._queue.unfinished_tasks

    def start(self) -> None:
        with self._start_lock:
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="event-writer", daemon=True)
                self._thread.start()

    def flush(self, timeout_s: float) -> bool:
        """Wait (at most ``timeout_s``) until every queued Event is written or given up; True when done."""
        deadline = time.monotonic() + timeout_s
        with self._queue.all_tasks_done:
            while self._queue.unfinished_tasks:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._queue.all_tasks_done.wait(left)
        return True

    def close(self, timeout_s: float = 5.0) -> int:
        """Stop taking Events, write what is queued for at most ``timeout_s`` (each tried once, as the recorder
        does once shut down), and count the rest as dropped; returns how many were dropped so."""
        self._closed.set()
        if self._thread is None:
            self.start()
        self.flush(timeout_s)
        left = 0
        while True:
            try:
                self._queue.get_nowait()
            except queue.Empty:
                break
            self._queue.task_done()
            left += 1
        if left:
            self._drop("shutdown", left)
        metrics.EVENTS_QUEUED.set(0)
        return left

    # -- the writer's thread ----------------------------------------------------------------------------------
    def _drop(self, reason: str, n: int = 1) -> None:
        self.dropped[reason] = self.dropped.get(reason, 0) + n
        metrics.EVENTS_DROPPED.labels(reason).inc(n)

    def _run(self) -> None:
        while True:
            event = self._queue.get()
            try:
                self._record(event)
            except Exception:  # noqa: BLE001 - the writer thread must outlive any one bad Event
                log.exception("event writer")
                self._drop("api_error")
            finally:
                self._queue.task_done()
                metrics.EVENTS_QUEUED.set(self._queue.qsize())

    def _throttle(self) -> None:
        if self._rate is None:
            return
        while not self._rate.try_accept(time.monotonic()):
            if self._closed.wait(self._rate.wait_s(time.monotonic())):
                return  # closing: the drain is bounded by close()'s timeout, not by the rate

    def _record(self, event: dict) -> None:
        correlated = self.correlator.correlate(event)
        if correlated is None:
            self._drop("spam_filter")
            return
        event, patch = correlated
        for attempt in range(1, self.max_tries + 1):
            self._throttle()
            try:
                written = self._write(event, patch)
            except EventRejected as e:
                log.warning("event rejected", extra={"reason": event["reason"], "error": str(e)})
                self._drop("rejected")
                return
            except Exception as e:  # noqa: BLE001 - transport errors and 5xx: tried again
                if attempt >= self.max_tries or self._closed.is_set():
                    log.warning("event not written", extra={"reason": event["reason"], "error": str(e)})
                    self._drop("api_error")
                    return
                delay = self.retry_s * (random.random() if attempt == 1 else 1.0)  # noqa: S311 - jitter only
                if self._closed.wait(delay):
                    self._drop("api_error")
                    return
                continue
            self.correlator.update_state(
                written if isinstance(written, dict) and written.get("metadata") else event
            )
            return

    def _write(self, event: dict, patch: dict | None) -> dict:
        meta = event["metadata"]
        if patch is not None:
            try:
                written = self.sink.patch(meta["namespace"], meta["name"], patch)
                self.written["patch"] += 1
                metrics.EVENTS_WRITTEN.labels("patch").inc()
                return written
            except EventNotFound:
                pass  # the Event expired (the API server keeps them an hour): create it anew
        written = self.sink.create(
            {**event, "metadata": {k: v for k, v in meta.items() if k != "resourceVersion"}}
        )
        self.written["create"] += 1
        metrics.EVENTS_WRITTEN.labels("create").inc()
        return written
