"""Objects kept by a list and then a watch (client-go's reflector): one list, then a watch from its resourceVersion;
a dropped or expired watch (410 Gone) lists again. :class:`Pods`: every bound pod (``spec.nodeName!=``), as the
kubelet's pod config source keeps ``spec.nodeName=<node>``; :class:`Nodes`: the nodes of a label selector, as the
kubelet watches its own Node. The kubelet reads :meth:`Watched.snapshot` on each tick; ``on_event`` (called from
the watch's thread after every list and every change) wakes it, so a new pod or node is seen at once rather than at
the next tick."""

from __future__ import annotations

import contextlib
import http.client
import json
import logging
import threading
import urllib.parse
from collections.abc import Callable

from localcluster.kubelet.api import Api

log = logging.getLogger(__name__)
SELECTOR = "spec.nodeName!="
WATCH_TIMEOUT_S = 300


class Watched:
    def __init__(self, api: Api, path: str, params: dict[str, str], name: str,
                 on_event: Callable[[], None] = lambda: None) -> None:  # fmt: skip
        self.api = api
        self.path, self.params, self.name = path, params, name
        self.on_event = on_event
        self._items: dict[str, dict] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._synced = threading.Event()
        self._conn: http.client.HTTPSConnection | None = None
        self._thread = threading.Thread(target=self._run, daemon=True, name=f"process-kubelet-{name}")

    def start(self) -> Watched:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        conn = self._conn
        if conn is not None and conn.sock is not None:
            with contextlib.suppress(OSError):
                conn.sock.shutdown(2)  # wakes the watch's read
        self._thread.join(timeout=10)

    @property
    def synced(self) -> bool:
        return self._synced.is_set()

    def snapshot(self) -> list[dict]:
        with self._lock:
            return list(self._items.values())

    def _list(self) -> str:
        reply = self.api.get(self.path, self.params) or {}
        with self._lock:
            self._items = {p["metadata"]["uid"]: p for p in reply.get("items") or ()}
        self._synced.set()
        self.on_event()
        return reply.get("metadata", {}).get("resourceVersion", "")

    def _watch(self, rv: str) -> str | None:
        """Applies the watch's events; the resourceVersion to go on from, or None to list again."""
        query = urllib.parse.urlencode({**self.params, "watch": "1", "resourceVersion": rv,
                                        "allowWatchBookmarks": "true", "timeoutSeconds": str(WATCH_TIMEOUT_S)})  # fmt: skip
        conn = self._conn = http.client.HTTPSConnection(self.api.host, self.api.port, context=self.api._ctx,
                                                        timeout=WATCH_TIMEOUT_S + 30)  # fmt: skip
        try:
            conn.request(
                "GET", f"{self.path}?{query}", headers={**self.api._headers, "Accept": "application/json"}
            )
            reply = conn.getresponse()
            if reply.status != 200:
                return None
            while not self._stop.is_set():
                line = reply.readline()
                if not line:
                    return rv  # the server ended the watch: go on from where it was
                event = json.loads(line)
                kind, obj = event.get("type"), event.get("object") or {}
                if kind == "ERROR":
                    return None  # 410 Gone and the like: list again
                rv = obj.get("metadata", {}).get("resourceVersion", rv)
                if kind == "BOOKMARK":
                    continue
                uid = obj["metadata"]["uid"]
                with self._lock:
                    if kind == "DELETED":
                        self._items.pop(uid, None)
                    else:
                        self._items[uid] = obj
                self.on_event()
            return rv
        finally:
            conn.close()
            self._conn = None

    def _run(self) -> None:
        rv: str | None = None
        while not self._stop.is_set():
            try:
                if rv is None:
                    rv = self._list()
                rv = self._watch(rv)
            except Exception as e:  # the API server restarting, a dropped connection: list again shortly
                if not self._stop.is_set():
                    log.info("the process kubelet's %s watch failed (listing again): %s", self.name, e)
                rv = None
                self._stop.wait(0.5)


class Pods(Watched):
    def __init__(self, api: Api, on_event: Callable[[], None] = lambda: None) -> None:
        super().__init__(api, "/api/v1/pods", {"fieldSelector": SELECTOR}, "pods", on_event)


class Nodes(Watched):
    def __init__(self, api: Api, selector: str, on_event: Callable[[], None] = lambda: None) -> None:
        super().__init__(api, "/api/v1/nodes", {"labelSelector": selector}, "nodes", on_event)
