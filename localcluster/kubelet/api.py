"""The process kubelet's client of kube-apiserver: JSON over HTTPS with the kubeconfig's credentials, one kept-alive
connection per thread. Raw JSON rather than the generated client's models, which refuse objects they do not expect
(a nodeInfo without bootID) and cannot send a merge patch to a status subresource."""

from __future__ import annotations

import http.client
import json
import ssl
import threading
import urllib.parse

from kubernetes import client as k8s


class ApiError(RuntimeError):
    def __init__(self, status: int, method: str, path: str, text: str) -> None:
        try:
            message = json.loads(text).get("message", text)
        except ValueError:
            message = text
        super().__init__(f"{method} {path}: {status} {message}"[:500])
        self.status = status


class Api:
    def __init__(self, client: k8s.ApiClient) -> None:
        conf = client.configuration
        url = urllib.parse.urlsplit(conf.host)
        self.host, self.port = url.hostname or "127.0.0.1", url.port or 443
        self.ca_file = conf.ssl_ca_cert
        ctx = ssl.create_default_context(cafile=conf.ssl_ca_cert)
        if conf.cert_file:
            ctx.load_cert_chain(conf.cert_file, conf.key_file)
        self._ctx = ctx
        self._headers = (
            {"Authorization": conf.api_key["authorization"]} if conf.api_key.get("authorization") else {}
        )
        self._local = threading.local()

    def _conn(self) -> http.client.HTTPSConnection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = self._local.conn = http.client.HTTPSConnection(
                self.host, self.port, context=self._ctx, timeout=30
            )
        return conn

    def request(self, method: str, path: str, body=None, query: dict | None = None,
                content_type: str = "application/json", missing_ok: bool = False) -> dict | None:  # fmt: skip
        """The reply's JSON; None for a 404 when ``missing_ok``; ApiError otherwise."""
        if query:
            path += "?" + urllib.parse.urlencode(query)
        data = None if body is None else json.dumps(body).encode()
        headers = {**self._headers, "Accept": "application/json", "Content-Type": content_type}
        for attempt in (0, 1):
            conn = self._conn()
            try:
                conn.request(method, path, body=data, headers=headers)
                reply = conn.getresponse()
                text = reply.read().decode(errors="replace")
                break
            except (http.client.HTTPException, OSError):
                conn.close()
                self._local.conn = None
                if attempt:
                    raise
        if reply.status == 404 and missing_ok:
            return None
        if reply.status >= 300:
            raise ApiError(reply.status, method, path.split("?")[0], text)
        return json.loads(text) if text else {}

    def get(self, path: str, query: dict | None = None) -> dict | None:
        return self.request("GET", path, query=query, missing_ok=True)

    def merge_patch(self, path: str, body: dict) -> dict | None:
        return self.request("PATCH", path, body, content_type="application/merge-patch+json", missing_ok=True)
