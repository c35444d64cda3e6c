"""A list-then-watch cache of one kind of Kubernetes object (the informer pattern of client-go).

``sync()`` lists the objects page by page (``limit``/``continue``) and remembers the list's resourceVersion;
``watch_once()`` streams changes from that resourceVersion until the server ends the watch, applying each event
to the cache (bookmarks just advance the resourceVersion); a ``410 Gone`` (the version is too old) makes the next
round relist. ``run()`` does this until stopped, backing off after errors.

Silence is bounded: the server is asked to end each watch after ``watch_timeout_s`` (a quiet, healthy watch thus
ends cleanly and is renewed), and the socket read timeout is ``silence_s``: a watch that sends nothing (no event,
no bookmark) for that long is dropped and the cache relisted. ``age()`` is how long ago the cache was last
confirmed current (a list, an event, a bookmark, or a watch the server ended cleanly); the controller starts no
scale-down and /readyz fails while it is above the bound. A watch that ended with no line at all is confirmed only
once a one-item list shows the server has reached the cache's version (kube-apiserver takes a watch from a version
it has not reached, as after a restart on fresh versions, and stays silent: that relists).

Recovery: a watch that was established and then broke (a connection cut mid-stream, after it delivered an event or
stayed open for a second) is resumed from the last resourceVersion at once, without a relist and without growing
the back-off: the API answers, only the connection failed. The back-off (``backoff_s`` doubling to
``max_backoff_s``) grows only over consecutive failed lists or very short watches (client-go's reflector calls a
watch that lasted under a second with no event "very short", ``watchHandler``), and resets after a healthy watch, so
a cache is never older than about ``max_backoff_s`` plus a list while the API answers. client-go resets
its back-off only after two minutes without one (``NewExponentialBackoffManager(800ms, 30s, 2m, ...)`` in
``NewReflectorWithOptions``), so watches cut every few seconds push it to 30 s; we deliberately differ. Objects are kept as plain dicts shaped as
``kubectl get -o json`` prints them (with ``kind`` and ``apiVersion`` filled in); for the kinds
:mod:`autoscaler.core.lean` knows (Pod, Node, PodDisruptionBudget, PersistentVolumeClaim, PersistentVolume,
StorageClass) only the fields something here reads are kept:
list pages and watch lines are decoded straight into the lean form (:mod:`autoscaler.core.decode`, one pass
each), so the cache's memory follows the number of objects, not their size; the pods of one Job on one node share
one spec, and the specs of a Job's pods on other nodes share their containers, tolerations and the rest
(:func:`autoscaler.core.lean.share_parts`).
"""

from __future__ import annotations

import json
import logging
import socket
import threading
import time
from collections.abc import Callable

from kubernetes import watch
from kubernetes.client.exceptions import ApiException
from urllib3.exceptions import ReadTimeoutError

from autoscaler import metrics
from autoscaler.core import decode, lean

log = logging.getLogger("autoscaler.informer")


def object_key(obj: dict) -> str:
    meta = obj.get("metadata") or {}
    return f"{meta.get('namespace') or ''}/{meta.get('name')}"


class _LeanWatch(watch.Watch):
    """The client's Watch, each line decoded once by :func:`autoscaler.core.decode.watch_event` (lean objects)."""

    def __init__(self, kind: str, shared: dict):
        super().__init__(return_type="object")
        self._kind = kind
        self._shared = shared

    def unmarshal_event(self, data, return_type):
        if not data or data.isspace():
            return None
        event = decode.watch_event(data, self._kind, self._shared)
        if event is not None and event["type"] != "ERROR":
            meta = event["object"].get("metadata") if isinstance(event["object"], dict) else None
            if isinstance(meta, dict) and meta.get("resourceVersion"):
                self.resource_version = meta["resourceVersion"]
        return event


class Gone(Exception):
    """The watch's resourceVersion is too old (HTTP 410): relist."""


# a watch open this long, or that delivered anything, proves the API answers (client-go)
HEALTHY_WATCH_S = 1.0


def _silent(err: BaseException) -> bool:
    """A read timeout: the watch sent nothing for ``silence_s`` (the server may be wedged): relist."""
    seen: set[int] = set()
    while err is not None and id(err) not in seen:
        seen.add(id(err))
        if isinstance(err, ReadTimeoutError | socket.timeout | TimeoutError):
            return True
        err = err.__cause__ or err.__context__
    return False


class Informer:
    def __init__(
        self,
        name: str,
        list_call: Callable,
        kind: str,
        api_version: str,
        *,
        page_size: int = 500,
        watch_timeout_s: int = 300,
        silence_s: float | None = None,
        request_timeout_s: float = 30.0,
        on_event: Callable[[str, dict], None] | None = None,
        clock: Callable[[], float] = time.monotonic,
        lean_objects: bool = True,
        backoff_s: float = 1.0,
        max_backoff_s: float = 30.0,
    ):
        """``list_call``: the client's list function (e.g. ``CoreV1Api.list_pod_for_all_namespaces``);
        ``on_event(type, obj)`` hears every change after it is applied (ADDED, MODIFIED, DELETED);
        ``lean_objects``: keep only the fields read (:mod:`autoscaler.core.lean`) when the kind has a schema
        there; False keeps whole objects. ``backoff_s``/``max_backoff_s``: the wait after a failed list or a very
        short watch, doubling up to the cap."""
        self.name = name
        self.backoff_s = backoff_s
        self.max_backoff_s = max(backoff_s, max_backoff_s)
        self._list = list_call
        self.kind = kind
        self.api_version = api_version
        self.page_size = page_size
        self.watch_timeout_s = watch_timeout_s
        self.silence_s = silence_s if silence_s is not None else watch_timeout_s + 30
        self._clock = clock
        self.request_timeout_s = request_timeout_s  # each page of a list
        self._fresh_at: float | None = None  # when the cache was last confirmed current
        self._on_event = on_event
        self.lean = lean_objects and kind in lean.SCHEMAS
        self._transform = lean.TRANSFORMS[kind] if self.lean else None
        self._shared: dict = {}  # equal pod specs kept once (lean.lean_pods)
        self._parts: dict = {}  # equal parts of objects kept once (lean.share_parts)
        self._items: dict[str, dict] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._watch: watch.Watch | None = None
        self.resource_version: str | None = None
        self.synced = threading.Event()
        self.relists = 0  # full lists so far
        self.pages = 0  # list requests so far
        self.watches = 0  # watch requests so far
        self.applied = 0  # watch events applied so far
        self.received = 0  # watch lines received so far (events and bookmarks)
        self.resumed = 0  # broken watches resumed without a relist
        self.backoff = backoff_s  # the wait after the next failure

    # -- reading ----------------------------------------------------------------------------------------------
    def items(self) -> list[dict]:
        with self._lock:
            return list(self._items.values())

    def get(self, key: str) -> dict | None:
        with self._lock:
            return self._items.get(key)

    def age(self) -> float | None:
        """Seconds since the cache was last confirmed current; None before the first list."""
        at = self._fresh_at
        return None if at is None else max(0.0, self._clock() - at)

    def _confirmed(self) -> None:
        self._fresh_at = self._clock()

    # -- list ---------------------------------------------------------------------------------------------------
    def sync(self) -> None:
        """List every object, page by page, and replace the cache."""
        items: dict[str, dict] = {}
        token = None
        started = self._clock()
        shared: dict = {}  # a relist starts afresh: the specs of pods gone are not kept
        parts: dict = {}
        done: dict = {}  # the specs whose parts are shared already, for this list only
        while True:
            kwargs = {
                "limit": self.page_size,
                "_preload_content": False,
                "_request_timeout": self.request_timeout_s,
            }
            if token:
                kwargs["_continue"] = token
            try:
                resp = self._list(**kwargs)
                self.pages += 1
            except ApiException as e:
                if e.status == 410 and token:  # the continue token expired mid-list: start over
                    items, token = {}, None
                    continue
                raise
            if self.lean:
                page, meta = decode.list_page(resp.data, self.kind, shared)
            else:
                body = json.loads(resp.data)
                page, meta = body.get("items") or [], body.get("metadata") or {}
            for obj in page:
                if self.lean:
                    obj = lean.share_parts(obj, parts, done)
                obj.setdefault("kind", self.kind)
                obj.setdefault("apiVersion", self.api_version)
                items[object_key(obj)] = obj
            token = meta.get("continue")
            if not token:
                break
        with self._lock:
            self._items = items
            self._shared = shared
            self._parts = parts
            self.resource_version = meta.get("resourceVersion")
        self._fresh_at = started  # current as of the first page's request
        self.relists += 1
        self.synced.set()

    # -- watch --------------------------------------------------------------------------------------------------
    def watch_once(self) -> None:
        """Apply changes from ``resource_version`` until the server closes the watch; Gone on 410."""
        # events stay plain dicts; lean ones decoded in one pass
        self._watch = _LeanWatch(self.kind, self._shared) if self.lean else watch.Watch(return_type="object")
        self.watches += 1
        try:
            stream = self._watch.stream(
                self._list,
                resource_version=self.resource_version,
                allow_watch_bookmarks=True,
                timeout_seconds=self.watch_timeout_s,
                _request_timeout=(10, self.silence_s),
            )
            started, received = self._clock(), self.received
            for event in stream:
                self._apply(event["type"], event["raw_object"], lean_already=self.lean)
                if self._stop.is_set():
                    return
            if self.received == received:
                self._check_reached()
            self._fresh_at = max(
                self._fresh_at or 0.0, started
            )  # the server ended a quiet watch: nothing missed
        except ApiException as e:
            if e.status == 410:
                raise Gone(str(e.reason)) from None
            raise
        finally:
            self._watch = None

    def _check_reached(self) -> None:
        """After a watch that sent nothing at all: whether the server has reached our resourceVersion. kube-apiserver
        takes a watch from a version it has not reached (a client's after the server restarted on fresh, lower
        versions) and sends nothing, not even a bookmark, until its timeout, for ever: the cache would be frozen and
        look current. A one-item list from that version (``NotOlderThan``) answers 504 ResourceVersionTooLarge
        there: Gone, relist."""
        if not self.resource_version:
            return
        try:
            self._list(limit=1, resource_version=self.resource_version, resource_version_match="NotOlderThan",
                       _preload_content=False, _request_timeout=self.request_timeout_s)  # fmt: skip
        except ApiException as e:
            if e.status == 504 and "ResourceVersionTooLarge" in str(e.body or ""):
                raise Gone(f"the server has not reached version {self.resource_version}") from None
            raise

    def _apply(self, kind: str, obj: dict, lean_already: bool = False) -> None:
        rv = (obj.get("metadata") or {}).get("resourceVersion")
        self.received += 1
        self._confirmed()
        if kind == "BOOKMARK":
            self.resource_version = rv or self.resource_version
            return
        if self._transform is not None and not lean_already:
            obj = self._transform(obj, self._shared)
        if self.lean:
            obj = lean.share_parts(obj, self._parts)
        obj.setdefault("kind", self.kind)
        obj.setdefault("apiVersion", self.api_version)
        key = object_key(obj)
        self.applied += 1
        with self._lock:
            if kind == "DELETED":
                self._items.pop(key, None)
            else:
                self._items[key] = obj
            self.resource_version = rv or self.resource_version
        if self._on_event is not None:
            self._on_event(kind, obj)

    # -- the loop -------------------------------------------------------------------------------------------------
    def run(self, backoff_s: float | None = None, max_backoff_s: float | None = None) -> None:
        """List, then watch, until ``stop()``. A watch the server ends is renewed from its resourceVersion; one that
        broke after it was established (an event, or a second open) is resumed from there at once; 410 Gone, a
        silent watch (no line for ``silence_s``) or a failed list relists, after a back-off that doubles only while
        lists fail or watches end at once, and resets after a healthy watch."""
        if backoff_s is not None:
            self.backoff_s = self.backoff = backoff_s
        if max_backoff_s is not None:
            self.max_backoff_s = max(self.backoff_s, max_backoff_s)
        need_list = not self.synced.is_set()
        while not self._stop.is_set():
            started, received = self._clock(), self.received
            try:
                if need_list:
                    self.sync()
                    need_list = False
                started, received, applied = self._clock(), self.received, self.applied
                self.watch_once()
                if self.applied == applied and self._clock() - started < 1.0:
                    self._stop.wait(1.0)  # a watch ended at once with nothing: do not spin on it
                self.backoff = self.backoff_s
            except Gone:
                log.info("watch expired; relisting", extra={"informer": self.name})
                need_list = True
            except Exception as e:  # noqa: BLE001 - the cache keeps serving; retried after a back-off
                metrics.API_ERRORS.labels("kubernetes", self.name, "watch").inc()
                # established (it delivered something, or stayed open), then broke; an HTTP error answer is not
                # a cut connection (a 504 "Too large resource version" after a server restart: relist)
                healthy = (
                    not need_list
                    and not isinstance(e, ApiException)
                    and (self.received > received or self._clock() - started >= HEALTHY_WATCH_S)
                )
                if healthy and not _silent(e):
                    # established, then cut: the API answers; resume from the last version (410 relists)
                    log.info("watch broke; resuming", extra={"informer": self.name, "error": str(e)})
                    self.resumed += 1
                    self.backoff = self.backoff_s
                    continue
                log.warning("list/watch failed", extra={"informer": self.name, "error": str(e)})
                need_list = True  # a silent or broken watch: the list is the fresh truth (and resets the RV)
                if healthy:
                    self.backoff = self.backoff_s  # silent after a healthy start: relist without waiting long
                if self._stop.wait(self.backoff):
                    break
                self.backoff = min(self.backoff * 2, self.max_backoff_s)

    def start(self) -> threading.Thread:
        thread = threading.Thread(target=self.run, name=f"informer-{self.name}", daemon=True)
        thread.start()
        return thread

    def stop(self) -> None:
        self._stop.set()
        w = self._watch
        if w is not None:
            w.stop()
