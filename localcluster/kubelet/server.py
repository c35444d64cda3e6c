"""The kubelet's HTTPS endpoint on a node's InternalIP (a 127.x address) and ``daemonEndpoints.kubeletEndpoint``
port, where kube-apiserver proxies ``pods/log``: ``GET /containerLogs/{namespace}/{pod}/{container}`` (logs.py)
and ``/healthz``. Clients authenticate with a certificate of the cluster CA (the API server's
``--kubelet-client-certificate``) and are authorized by a SubjectAccessReview of ``nodes/proxy``, as the kubelet's
webhook authorizer asks. ``exec``, ``attach`` and ``portForward`` are not served (404)."""

from __future__ import annotations

import ssl
import threading
import urllib.parse
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from localcluster.kubelet import logs
from localcluster.kubelet.api import Api

# (namespace, pod, container, options) -> (HTTP status, message or chunks)
Lookup = Callable[[str, str, str, logs.Options], tuple[int, object]]


def _subject(cert: dict) -> tuple[str, list[str]]:
    fields = [f for rdn in cert.get("subject", ()) for f in rdn]
    return (
        next((v for k, v in fields if k == "commonName"), ""),
        [v for k, v in fields if k == "organizationName"],
    )


class KubeletServer:
    def __init__(self, api: Api, node: str, ip: str, cert: Path, key: Path, lookup: Lookup) -> None:
        self.api, self.node, self.lookup = api, node, lookup
        self._allowed: dict[tuple[str, tuple[str, ...]], bool] = {}
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(str(cert), str(key))
        ctx.verify_mode = ssl.CERT_REQUIRED
        ctx.load_verify_locations(cafile=api.ca_file)
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:
                pass

            def _reply(self, code: int, text: str) -> None:
                body = (text + "\n").encode()
                self.send_response(code)
                self.send_header("Content-Type", "text/plain; charset=utf-8")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_GET(self) -> None:  # noqa: N802 (http.server's name)
                url = urllib.parse.urlsplit(self.path)
                parts = [urllib.parse.unquote(p) for p in url.path.strip("/").split("/")]
                if parts == ["healthz"]:
                    return self._reply(200, "ok")
                user, groups = _subject(self.connection.getpeercert() or {})
                if not server.allowed(user, groups):
                    return self._reply(
                        403, f"Forbidden (user={user}, verb=get, resource=nodes, subresource=proxy)"
                    )
                if len(parts) != 4 or parts[0] != "containerLogs":
                    return self._reply(404, "404 page not found")
                try:
                    opts = logs.Options.parse(dict(urllib.parse.parse_qsl(url.query)))
                except logs.BadRequest as e:
                    return self._reply(400, str(e))
                code, answer = server.lookup(parts[1], parts[2], parts[3], opts)
                if code != 200:
                    return self._reply(code, str(answer))
                self.send_response(200)
                self.send_header("Content-Type", "text/plain")
                self.send_header("Connection", "close")
                self.end_headers()
                try:
                    for chunk in answer:
                        self.wfile.write(chunk)
                        self.wfile.flush()
                except (BrokenPipeError, ConnectionResetError, ssl.SSLError):
                    pass
                self.close_connection = True

        self.httpd = ThreadingHTTPServer((ip, 0), Handler)
        self.httpd.daemon_threads = True
        self.httpd.socket = ctx.wrap_socket(self.httpd.socket, server_side=True)
        self.port = self.httpd.server_address[1]
        self._thread = threading.Thread(target=self.httpd.serve_forever, daemon=True, name=f"kubelet-{ip}")

    def allowed(self, user: str, groups: list[str]) -> bool:
        """A SubjectAccessReview of ``get nodes/proxy`` on this node (the kubelet's webhook authorization)."""
        key = (user, tuple(groups))
        if key not in self._allowed:
            review = self.api.request("POST", "/apis/authorization.k8s.io/v1/subjectaccessreviews", {
                "apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
                "spec": {"user": user, "groups": groups, "resourceAttributes": {
                    "verb": "get", "resource": "nodes", "subresource": "proxy", "name": self.node}},
            })  # fmt: skip
            self._allowed[key] = bool(((review or {}).get("status") or {}).get("allowed"))
        return self._allowed[key]

    def start(self) -> KubeletServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
