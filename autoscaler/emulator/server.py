"""The HTTP server: stdlib ThreadingHTTPServer on loopback, JSON replies, chunked watch streams.

Two listeners over one API:

- the **secure port** (HTTPS with the cluster CA's serving certificate, ``emu.secure_url``): every request is
  authenticated (a client certificate of the cluster CA, a ServiceAccount bearer token, else anonymous;
  auth/authn.py) and authorized (RBAC). ``emu.write_kubeconfig()`` writes the admin kubeconfig for it (kubeadm's
  admin.conf: a client certificate in ``system:masters``); the demos and pods use only this port.
- the **insecure port** (plain HTTP, ``emu.url``), kube-apiserver's former ``--insecure-port``: every request is
  ``system:unsecured`` in ``system:masters``. In-process tests and the fault harness use it
  (``write_kubeconfig(path, emu.url)``); ``Emulator(insecure=False)`` and the command line leave it out.
"""

from __future__ import annotations

import contextlib
import json
import logging
import ssl
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qsl, urlsplit

import yaml

from autoscaler.emulator import logs
from autoscaler.emulator.api import KubeApi, Reply
from autoscaler.emulator.auth import authn
from autoscaler.emulator.auth.user import INSECURE
from autoscaler.emulator.errors import StoreError, status_body
from autoscaler.emulator.kubeconfig import write_admin_kubeconfig, write_kubeconfig
from autoscaler.model import ClusterModel, WallClock
from clusterspec.names import AUTOSCALER_NAMESPACE

log = logging.getLogger(__name__)
LOOPBACK = ("127.0.0.1", "::1", "localhost")
# made at start for in-process use (tests, benchmarks, the fault harness): the simulator's workload namespace, the
# benchmarks' and the autoscaler's (`invoke deploy-autoscaler` creates it); the command line starts with the system
# namespaces only, as a new cluster does
IN_PROCESS_NAMESPACES = ("research", "lab", AUTOSCALER_NAMESPACE)
WRITES = frozenset({"POST", "PUT", "PATCH", "DELETE"})


def _warning_header(text: str) -> str:
    """RFC 7234 warn-code 299, as k8s.io/apiserver pkg/warning writes it."""
    return '299 - "' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "kube-emulator/1"
    disable_nagle_algorithm = True  # headers and body are separate writes: no 40 ms delayed-ACK stalls

    def log_message(self, fmt: str, *args) -> None:
        log.debug("%s " + fmt, self.address_string(), *args)

    def _identity(self, api: KubeApi):
        if not self.server.secure:  # type: ignore[attr-defined]
            return INSECURE
        peer = self.connection.getpeercert() if isinstance(self.connection, ssl.SSLSocket) else None
        return authn.authenticate(api, peer or None, self.headers.get("Authorization"))

    def _dispatch(self) -> None:
        url = urlsplit(self.path)
        query = dict(parse_qsl(url.query, keep_blank_values=True))
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        api: KubeApi = self.server.api  # type: ignore[attr-defined]
        latency = self.server.write_latency_s  # type: ignore[attr-defined]
        if latency and self.command in WRITES:
            time.sleep(latency)  # an API server's write path (admission, etcd), outside the model's lock
        if api.stopping:  # a stopped server answers nothing on its kept-alive connections: they are closed
            self.close_connection = True
            return
        warnings: list[str] = []
        try:
            api.ctx.user = self._identity(api)
            api.ctx.headers = {
                k: self.headers.get_all(k) for k in self.headers if k.lower().startswith("impersonate-")
            }
            result = api.handle(self.command, url.path, query, self.headers.get("Content-Type", ""), body)
            warnings = list(api.ctx.warnings)
            if isinstance(result, Reply) and self.command == "GET":
                result = api.as_table(result, self.headers.get("Accept", ""))
            media = (
                api.negotiate(self.headers.get("Accept", ""))
                if isinstance(result, Reply)
                else "application/json"
            )
        except StoreError as e:  # 401 from authentication, 406 from negotiation
            result, media = Reply(e.code, status_body(e.code, e.reason, str(e))), "application/json"
        except Exception as e:  # a bug must not kill the connection silently
            log.exception("emulator error on %s %s", self.command, self.path)
            result, media = (
                Reply(500, status_body(500, "InternalError", f"{type(e).__name__}: {e}")),
                "application/json",
            )
        finally:
            api.ctx.user = None
            api.ctx.headers = None
        if isinstance(result, logs.Text):  # pods/{name}/log: text/plain, chunked while following
            self.send_response(result.status)
            self.send_header("Content-Type", "text/plain")
            if not result.stream:
                data = b"".join(result.chunks)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
                return
            self._write_chunked(result.chunks)
            return
        if isinstance(result, Reply):
            if media == "application/yaml":
                data = yaml.safe_dump(result.body, sort_keys=False).encode()
            else:
                data = json.dumps(result.body).encode()
            self.send_response(result.status)
            self.send_header("Content-Type", media)
            self.send_header("Content-Length", str(len(data)))
            for k, v in result.headers.items():
                self.send_header(k, v)
            for w in warnings:
                self.send_header("Warning", _warning_header(w))
            self.end_headers()
            self.wfile.write(data)
            return
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self._write_chunked(json.dumps(event).encode() + b"\n" for event in result.events)

    def _write_chunked(self, chunks) -> None:
        """The rest of the headers and a chunked body, each chunk sent as it comes (a watch, a followed log);
        an empty chunk would end the body, so none is sent. A client gone away closes the connection."""
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        try:
            for chunk in chunks:
                if chunk:
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                    self.wfile.flush()
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError, ssl.SSLError):
            self.close_connection = True

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = _dispatch


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    ssl_context: ssl.SSLContext | None = None
    secure = False

    def finish_request(self, request, client_address) -> None:
        """The TLS handshake on the connection's own thread (never in the accept loop)."""
        if self.ssl_context is not None:
            try:
                request.settimeout(30)
                request = self.ssl_context.wrap_socket(request, server_side=True)
                request.settimeout(None)
            except (ssl.SSLError, OSError) as e:
                log.debug("TLS handshake from %s failed: %s", client_address, e)
                with contextlib.suppress(OSError):
                    request.close()
                return
        super().finish_request(request, client_address)


def _server_context(certfile: Path, keyfile: Path, cafile: Path) -> ssl.SSLContext:
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    ctx.load_cert_chain(str(certfile), str(keyfile))
    ctx.load_verify_locations(str(cafile))
    ctx.verify_mode = (
        ssl.CERT_OPTIONAL
    )  # client certificates of the cluster CA authenticate; none is anonymous
    return ctx


class Emulator:
    """A local Kubernetes API server backed by a ClusterModel.

    With a wall-clock model a ticker thread advances the model as time passes (boots, completions show up
    in watches by themselves); with a virtual clock the caller advances it (``with emu.model.lock:``).
    ``write_latency_s`` delays every POST, PUT, PATCH and DELETE by that much before it is handled, as a real API
    server's admission and etcd round trip do (reads and watches are not delayed).
    """

    def __init__(
        self,
        model: ClusterModel | None = None,
        host: str = "127.0.0.1",
        port: int = 0,
        watch_history: int = 10_000,
        write_latency_s: float = 0.0,
        *,
        secure_port: int = 0,
        insecure: bool = True,
        namespaces: tuple[str, ...] = IN_PROCESS_NAMESPACES,
        pki=None,
    ) -> None:
        if host not in LOOPBACK:
            raise ValueError(f"the emulator binds only to loopback, not {host!r}")
        self.model = model or ClusterModel(WallClock())
        self._servers: list[_Server] = []
        self._secure = _Server((host, secure_port), _Handler)
        self._secure.secure = True
        self._servers.append(self._secure)
        h, sp = self._secure.server_address[:2]
        self.host, self.secure_port = h, sp
        self._insecure = None
        if insecure:
            self._insecure = _Server((host, port), _Handler)
            self._servers.append(self._insecure)
            self.port = self._insecure.server_address[1]
        else:
            self.port = sp
        self.api = KubeApi(self.model, f"{h}:{sp}", watch_history, pki=pki)
        certfile, keyfile, cafile = self.api.pki.serving_files()
        self._secure.ssl_context = _server_context(certfile, keyfile, cafile)
        for s in self._servers:
            s.api = self.api  # type: ignore[attr-defined]
            s.write_latency_s = write_latency_s  # type: ignore[attr-defined]
        self.api.writes.set_endpoint(h if ":" not in h else "127.0.0.1", sp)
        for ns in namespaces:
            self.create_namespace(ns)
        self._threads: list[threading.Thread] = []
        self._stop = threading.Event()

    def _url(self, port: int, scheme: str) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{scheme}://{host}:{port}"

    @property
    def url(self) -> str:
        """The insecure port's URL (``system:masters``), or the secure one without it."""
        return self._url(self.port, "http") if self._insecure is not None else self.secure_url

    @property
    def secure_url(self) -> str:
        return self._url(self.secure_port, "https")

    def start(self) -> Emulator:
        for s in self._servers:
            serve = threading.Thread(target=s.serve_forever, kwargs={"poll_interval": 0.2}, daemon=True)
            serve.start()
            self._threads.append(serve)
        if not getattr(self.model.clock, "virtual", False):
            tick = threading.Thread(target=self._tick, daemon=True, name="model-ticker")
            tick.start()
            self._threads.append(tick)
        return self

    def _tick(self) -> None:
        while not self._stop.is_set():
            with self.model.lock:
                self.model.advance()
                nxt = self.model.next_event_time()
            wait = 0.5 if nxt is None else min(0.5, self.model.clock.real_seconds_until(nxt))
            self._stop.wait(max(wait, 0.01))

    def stop(self) -> None:
        self._stop.set()
        self.api.stopping = True
        for s in self._servers:
            s.shutdown()
            s.server_close()
        for t in self._threads:
            t.join(timeout=5)
        self.api.pki.close()

    def write_kubeconfig(self, path: str | Path, user: str = "kubernetes-admin",
                         groups: tuple[str, ...] = ("system:masters",), namespace: str = "default") -> Path:  # fmt: skip
        """A kubeconfig for the secure port with a client certificate of the cluster CA (by default kubeadm's
        admin: ``kubernetes-admin`` in ``system:masters``)."""
        cert, key = self.api.pki.client_credentials(user, groups)
        return write_admin_kubeconfig(
            path, self.secure_url, self.api.pki.ca_pem, cert, key, namespace=namespace
        )

    def write_token_kubeconfig(self, path: str | Path, token: str, namespace: str = "default") -> Path:
        """A kubeconfig for the secure port that authenticates with a bearer token (a ServiceAccount's)."""
        return write_admin_kubeconfig(
            path, self.secure_url, self.api.pki.ca_pem, token=token, namespace=namespace
        )

    def apply(self, obj: dict) -> dict:
        """Create ``obj`` as the admin would (through admission); the stored object."""
        from autoscaler.emulator import resources as R
        from autoscaler.emulator.auth.user import INSECURE

        res = R.by_kind(obj["apiVersion"], obj["kind"])
        if res is None:
            raise ValueError(f"the emulator serves no {obj['apiVersion']} {obj['kind']}")
        with self.model.lock:
            self.model.advance()
            out = self.api.writes.create_object(res, obj["metadata"].get("namespace"), json.loads(json.dumps(obj)),
                                                INSECURE)  # fmt: skip
            self.model.settle()
            return out

    def create_namespace(self, name: str, labels: dict | None = None) -> dict:
        """A namespace (its default ServiceAccount and kube-root-ca.crt follow from the controllers)."""
        with self.model.lock:
            ns = self.model.store.find("namespaces", None, name)
        if ns is not None:
            return ns
        return self.apply(
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": labels or {}}}
        )

    def install_podgroup_crd(self) -> dict:
        """The gang scheduler's PodGroup CRD (crds/podgroups.yaml), as `invoke deploy-scheduler` applies it."""
        return self.apply(yaml.safe_load((Path(__file__).parent / "crds" / "podgroups.yaml").read_text()))

    def write_insecure_kubeconfig(self, path: str | Path) -> Path:
        return write_kubeconfig(path, self.url)

    def __enter__(self) -> Emulator:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
