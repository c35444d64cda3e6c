"""The kubelet's HTTPS endpoint on a node's InternalIP (a 127.x address) and ``daemonEndpoints.kubeletEndpoint``
port, where kube-apiserver proxies ``pods/log``: ``GET /containerLogs/{namespace}/{pod}/{container}`` (logs.py)
and ``/healthz``; ``/exec/{namespace}/{pod}[/{uid}]/{container}`` and ``/portForward/{namespace}/{pod}[/{uid}]``
(GET or POST), whose upgraded connection it proxies to its streaming server (streaming.py), as the kubelet proxies
them to its container runtime's. kube-apiserver 1.35 speaks SPDY/3.1 to the kubelet for both: kubectl's WebSocket
(v5.channel.k8s.io) is translated to SPDY for exec (k8s.io/apiserver/pkg/util/proxy/streamtranslator.go) and
port-forward's SPDY is tunnelled through kubectl's WebSocket (streamtunnel.go). Clients authenticate with a
certificate of the cluster CA (the API server's ``--kubelet-client-certificate``) and are authorized by a
SubjectAccessReview of ``nodes/proxy`` with the request's verb (GET: get, POST: create), as the kubelet's webhook
authorizer asks (pkg/kubelet/server/auth.go). ``attach`` is not served (404): a container's process has no stdin
here, and its output is its log."""

from __future__ import annotations

import ssl
import threading
import urllib.parse
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from localcluster.kubelet import logs
from localcluster.kubelet.api import Api
from localcluster.kubelet.streaming import StreamingServer, Unavailable, request_head, splice

# (namespace, pod, container, options) -> (HTTP status, message or chunks)
Lookup = Callable[[str, str, str, logs.Options], tuple[int, object]]
# (namespace, pod, container or None for a port-forward) -> (HTTP status, message or the target: streaming.py)
StreamLookup = Callable[[str, str, str | None], tuple[int, object]]
VERBS = {"GET": "get", "POST": "create"}  # pkg/kubelet/server/auth.go, for the methods served


def _subject(cert: dict) -> tuple[str, list[str]]:
    fields = [f for rdn in cert.get("subject", ()) for f in rdn]
    return (
        next((v for k, v in fields if k == "commonName"), ""),
        [v for k, v in fields if k == "organizationName"],
    )


class KubeletServer:
    def __init__(self, api: Api, node: str, ip: str, cert: Path, key: Path, lookup: Lookup,
                 streams: StreamLookup | None = None, streaming: StreamingServer | None = None) -> None:  # fmt: skip
        self.api, self.node, self.lookup = api, node, lookup
        self.streams, self.streaming = streams, streaming
        self._allowed: dict[tuple[str, tuple[str, ...], str], bool] = {}
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(str(cert), str(key))
        ctx.verify_mode = ssl.CERT_REQUIRED
        ctx.load_verify_locations(cafile=api.ca_file)
        server = self

        class Handler(BaseHTTPRequestHandler):
            # unbuffered: what follows an upgrade request's head stays in the connection, for the proxy
            rbufsize = 0

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
                if parts == ["healthz"] and self.command == "GET":
                    return self._reply(200, "ok")
                user, groups = _subject(self.connection.getpeercert() or {})
                verb = VERBS[self.command]
                if not server.allowed(user, groups, verb):
                    return self._reply(
                        403, f"Forbidden (user={user}, verb={verb}, resource=nodes, subresource=proxy)"
                    )
                if parts[0] in ("exec", "portForward"):
                    return self._stream(parts)
                if len(parts) != 4 or parts[0] != "containerLogs" or self.command != "GET":
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

            do_POST = do_GET  # noqa: N815 (http.server's name): exec and portForward take both

            def _stream(self, parts: list[str]) -> None:
                exec_ = parts[0] == "exec"
                if (exec_ and len(parts) not in (4, 5)) or (not exec_ and len(parts) not in (3, 4)):
                    return self._reply(404, "404 page not found")
                if server.streams is None or server.streaming is None:
                    return self._reply(404, "404 page not found")
                code, target = server.streams(parts[1], parts[2], parts[-1] if exec_ else None)
                if code != 200:
                    return self._reply(code, str(target))
                assert isinstance(target, dict)
                try:
                    backend = server.streaming.connect(None if exec_ else target["uid"])
                except (Unavailable, OSError) as e:
                    return self._reply(503, f"the kubelet's streaming server is not available: {e}")
                self.close_connection = True
                try:
                    backend.sendall(request_head(self.requestline, self.headers, target))
                    splice(self.connection, backend)
                except OSError as e:
                    backend.close()
                    return self._reply(503, f"the kubelet's streaming server is not available: {e}")
                finally:
                    server.streaming.release(target["uid"], backend)

        self.httpd = ThreadingHTTPServer((ip, 0), Handler)
        self.httpd.daemon_threads = True
        self.httpd.socket = ctx.wrap_socket(self.httpd.socket, server_side=True)
        self.port = self.httpd.server_address[1]
        self._thread = threading.Thread(target=self.httpd.serve_forever, daemon=True, name=f"kubelet-{ip}")

    def allowed(self, user: str, groups: list[str], verb: str = "get") -> bool:
        """A SubjectAccessReview of ``nodes/proxy`` on this node with ``verb`` (the kubelet's webhook
        authorization)."""
        key = (user, tuple(groups), verb)
        if key not in self._allowed:
            review = self.api.request("POST", "/apis/authorization.k8s.io/v1/subjectaccessreviews", {
                "apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
                "spec": {"user": user, "groups": groups, "resourceAttributes": {
                    "verb": verb, "resource": "nodes", "subresource": "proxy", "name": self.node}},
            })  # fmt: skip
            self._allowed[key] = bool(((review or {}).get("status") or {}).get("allowed"))
        return self._allowed[key]

    def start(self) -> KubeletServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
