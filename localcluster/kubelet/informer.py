"""The pods bound to nodes, kept by a list and then a watch (client-go's reflector, as the kubelet's pod config
source keeps ``spec.nodeName=<node>``): one list of every bound pod (``spec.nodeName!=``), then a watch from its
resourceVersion; a dropped or expired watch (410 Gone) lists again. The kubelet reads :meth:`Pods.snapshot` on
each tick and keeps the pods of its own nodes."""

from __future__ import annotations

import contextlib
import http.client
import json
import logging
import threading
import urllib.parse

from localcluster.kubelet.api import Api

log = logging.getLogger(__name__)
SELECTOR = "spec.nodeName!="
WATCH_TIMEOUT_S = 300


class Pods:
    def __init__(self, api: Api) -> None:
        self.api = api
        self._pods: dict[str, dict] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._synced = threading.Event()
        self._conn: http.client.HTTPSConnection | None = None
        self._thread = threading.Thread(target=self._run, daemon=True, name="process-kubelet-pods")

    def start(self) -> Pods:
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
            return list(self._pods.values())

    def _list(self) -> str:
        reply = self.api.get("/api/v1/pods", {"fieldSelector": SELECTOR}) or {}
        with self._lock:
            self._pods = {p["metadata"]["uid"]: p for p in reply.get("items") or ()}
        self._synced.set()
        return reply.get("metadata", {}).get("resourceVersion", "")

    def _watch(self, rv: str) -> str | None:
        """Applies the watch's events; the resourceVersion to go on from, or None to list again."""
        query = urllib.parse.urlencode({"fieldSelector": SELECTOR, "watch": "1", "resourceVersion": rv,
                                        "allowWatchBookmarks": "true", "timeoutSeconds": str(WATCH_TIMEOUT_S)})  # fmt: skip
        conn = self._conn = http.client.HTTPSConnection(self.api.host, self.api.port, context=self.api._ctx,
                                                        timeout=WATCH_TIMEOUT_S + 30)  # fmt: skip
        try:
            conn.request(
                "GET", f"/api/v1/pods?{query}", headers={**self.api._headers, "Accept": "application/json"}
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
                        self._pods.pop(uid, None)
                    else:
                        self._pods[uid] = obj
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
                    log.info("the process kubelet's pod watch failed (listing again): %s", e)
                rv = None
                self._stop.wait(0.5)
