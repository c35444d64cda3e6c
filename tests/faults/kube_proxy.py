"""Kubernetes faults on the wire: a TLS-terminating reverse proxy on loopback in front of the real kube-apiserver.

Each autoscaler replica talks to its own :class:`ApiProxy` (its kubeconfig names the proxy, with a serving
certificate from a local CA of the harness's own); the proxy forwards every request to kube-apiserver over TLS
(verifying the API server's CA) with the client's own ``Authorization`` header, so the API server authenticates
the autoscaler's ServiceAccount token and RBAC applies exactly as without the proxy. The faults, shared by a world's
proxies (:class:`KubeFaults`), are what a network or an overloaded API server does:

- ``stall``: pods watch events are held while it is on (the connection stays open and silent);
- ``lag_s``: every pods watch event is delivered that long after kube-apiserver sent it;
- ``fail_pods``: every read of the pods API (list and watch) is answered with that status (500, or 429 with
  ``Retry-After``) and a Status body as kube-apiserver writes one, without reaching the API server;
- ``delay_s``: every request waits that long before it is forwarded;
- ``cut_watches_s``: every watch (of any kind) is cut that long after it opened: the connection closes mid-stream,
  without the last chunk, as a load balancer dropping long connections does;
- ``fail_lease_writes_of``: Lease writes (PUT, POST) whose ``spec.holderIdentity`` is one of those are answered
  500 (a replica whose renewals fail while the rest of its traffic passes);
- ``hooks``: ``fn(method, path, query)`` run after kube-apiserver answered a request and before its client gets
  the answer (a binder that acts right after a read);
- ``intercept``: ``fn(method, path, query, body)`` run before a request is forwarded; it may wait (a slow API), and
  an answer ``(status, reason)`` is sent as kube-apiserver's Status without forwarding (None forwards);
- per proxy, ``cut()``: a partition. Nothing passes either way and nothing is closed: requests hang, watches go
  silent, new connections are accepted and never answered; the client's timeouts decide.

``requests`` records what kube-apiserver answered (its time, method, path, query, status; None for a watch), the
harness's record of the API's view for ordering checks.
"""

from __future__ import annotations

import contextlib
import datetime
import http.client
import ipaddress
import json
import queue
import socket
import ssl
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

HOP = {"connection", "keep-alive", "transfer-encoding", "content-length", "proxy-connection", "te", "trailer",
       "upgrade"}  # fmt: skip


@dataclass
class Request:
    """One request kube-apiserver answered through a proxy."""

    at: float
    method: str
    path: str
    query: dict
    status: int | None  # None for a watch
    client: str = ""


@dataclass
class KubeFaults:
    stall: bool = False
    lag_s: float = 0.0
    fail_pods: int = 0
    delay_s: float = 0.0
    cut_watches_s: float = 0.0
    fail_lease_writes_of: set[str] = field(default_factory=set)
    hooks: list = field(default_factory=list)
    intercept: list = field(default_factory=list)
    requests: list[Request] = field(default_factory=list)
    watch_cuts: int = 0
    delivered: dict[str, set[str]] = field(
        default_factory=dict
    )  # client -> pods ("ns/name") its watches delivered
    stopping: threading.Event = field(default_factory=threading.Event)


def status_body(code: int, reason: str, message: str) -> bytes:
    return json.dumps({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                       "message": message, "reason": reason, "code": code}).encode()  # fmt: skip


def write_pki(folder: Path) -> tuple[Path, Path, Path]:
    """A local CA and a serving certificate for 127.0.0.1 signed by it: (ca.crt, proxy.crt, proxy.key)."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    folder.mkdir(parents=True, exist_ok=True)
    now = datetime.datetime.now(datetime.UTC)
    ca_key, key = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "fault-proxy-ca")])
    ca = (x509.CertificateBuilder().subject_name(ca_name).issuer_name(ca_name).public_key(ca_key.public_key())
          .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(minutes=5))
          .not_valid_after(now + datetime.timedelta(days=1))
          .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
          .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True,
                                       content_commitment=False, key_encipherment=False, data_encipherment=False,
                                       key_agreement=False, encipher_only=False, decipher_only=False), critical=True)
          .sign(ca_key, hashes.SHA256()))  # fmt: skip
    leaf = (x509.CertificateBuilder().subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "fault-proxy")]))
            .issuer_name(ca_name).public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5)).not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
                           critical=False)
            .add_extension(x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
            .sign(ca_key, hashes.SHA256()))  # fmt: skip
    paths = folder / "ca.crt", folder / "proxy.crt", folder / "proxy.key"
    paths[0].write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    paths[1].write_bytes(leaf.public_bytes(serialization.Encoding.PEM))
    paths[2].write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))  # fmt: skip
    paths[2].chmod(0o600)
    return paths


class _Cut(Exception):
    """The connection is closed mid-stream (an injected cut, or the client went away)."""


class ApiProxy:
    """One replica's way to kube-apiserver (``upstream``, verified with ``upstream_ca``)."""

    def __init__(
        self, name: str, faults: KubeFaults, upstream: str, upstream_ca: Path, cert: Path, key: Path
    ):
        self.name, self.faults = name, faults
        u = urlsplit(upstream)
        self.upstream = (u.hostname, u.port)
        self.client_ctx = ssl.create_default_context(cafile=str(upstream_ca))
        self.server_ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.server_ctx.load_cert_chain(str(cert), str(key))
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.url = f"https://127.0.0.1:{self.port}"
        self.cut_off = threading.Event()
        self._stopped = threading.Event()
        self._socks: list[socket.socket] = []
        self._idle: list[http.client.HTTPSConnection] = []
        self._lock = threading.Lock()
        threading.Thread(target=self._accept, daemon=True, name=f"proxy-{name}").start()

    # -- control
    def cut(self) -> None:
        self.cut_off.set()

    def stop(self) -> None:
        self._stopped.set()
        self.cut_off.clear()
        with contextlib.suppress(OSError):
            self.sock.close()
        with self._lock:
            for c in self._idle:
                c.close()
            self._idle.clear()
        for s in list(self._socks):
            with contextlib.suppress(OSError):
                s.shutdown(socket.SHUT_RDWR)
            with contextlib.suppress(OSError):
                s.close()

    def _done(self) -> bool:
        return self._stopped.is_set() or self.faults.stopping.is_set()

    def _hold(self) -> None:
        """While partitioned: nothing passes (nothing is closed either)."""
        while self.cut_off.is_set() and not self._done():
            time.sleep(0.05)
        if self._done():
            raise _Cut

    # -- connections
    def _accept(self) -> None:
        while not self._done():
            try:
                raw, _ = self.sock.accept()
            except OSError:
                return
            self._socks.append(raw)
            threading.Thread(target=self._serve, args=(raw,), daemon=True).start()

    def _upstream(self) -> http.client.HTTPSConnection:
        """An idle connection to kube-apiserver, else a new one (a replica's reconnects after a cut pay the TLS
        handshake with the proxy, as with a load balancer, not a second one with the API server)."""
        with self._lock:
            if self._idle:
                return self._idle.pop()
        return http.client.HTTPSConnection(*self.upstream, context=self.client_ctx, timeout=3600)

    def _serve(self, raw: socket.socket) -> None:
        upstream, reusable = None, False
        try:
            if self.cut_off.is_set():  # accepted during a partition: never answered
                while not self._done():
                    time.sleep(0.1)
                return
            conn = self.server_ctx.wrap_socket(raw, server_side=True)
            rfile = conn.makefile("rb")
            while not self._done():
                request = _read_request(rfile)
                if request is None:
                    return
                if upstream is None:
                    upstream = self._upstream()
                reusable = False
                keep = self._handle(conn, upstream, *request)
                reusable = keep  # an answer read whole leaves the connection to kube-apiserver idle
                if not keep:
                    return
        except (_Cut, OSError, ssl.SSLError, http.client.HTTPException):
            return
        finally:
            if upstream is not None and reusable and not self._done():
                with self._lock:
                    self._idle.append(upstream)
            elif upstream is not None:
                upstream.close()
            with contextlib.suppress(OSError):
                raw.close()

    def _handle(self, conn, upstream, method: str, target: str, headers: list, body: bytes) -> bool:
        f = self.faults
        u = urlsplit(target)
        path, query = u.path, {k: v[0] for k, v in parse_qs(u.query).items()}
        watching = query.get("watch") in ("1", "true") or "/watch/" in path
        pods = path.rstrip("/").endswith("/pods")
        self._hold()
        if f.delay_s:
            time.sleep(f.delay_s)
        self._hold()
        if pods and method == "GET" and f.fail_pods:
            code = f.fail_pods
            reason = "TooManyRequests" if code == 429 else "InternalError"
            extra = [("Retry-After", "1")] if code == 429 else []
            _respond(conn, code, [("Content-Type", "application/json"), *extra],
                     status_body(code, reason, f"injected: the pods API answers {code}"))  # fmt: skip
            return True
        for fn in list(f.intercept):
            answer = fn(method, path, query, body)
            if answer is not None:
                code, reason = answer
                _respond(conn, code, [("Content-Type", "application/json")],
                         status_body(code, reason, f"injected: {reason}"))  # fmt: skip
                return True
        if "/leases" in path and method in ("PUT", "POST") and f.fail_lease_writes_of:
            holder = ((json.loads(body or b"{}").get("spec")) or {}).get("holderIdentity")
            if holder in f.fail_lease_writes_of:
                _respond(conn, 500, [("Content-Type", "application/json")],
                         status_body(500, "InternalError", "injected: lease write refused"))  # fmt: skip
                return True
        send = [(k, v) for k, v in headers if k.lower() not in HOP and k.lower() != "host"]
        send.append(("Host", f"{self.upstream[0]}:{self.upstream[1]}"))
        upstream.putrequest(method, target, skip_host=True, skip_accept_encoding=True)
        for k, v in send:
            upstream.putheader(k, v)
        if body or method in ("POST", "PUT", "PATCH"):
            upstream.putheader("Content-Length", str(len(body)))
        upstream.endheaders(body or None)
        resp = upstream.getresponse()
        out = [(k, v) for k, v in resp.getheaders() if k.lower() not in HOP]
        streaming = watching and resp.status == 200
        data = b"" if streaming else resp.read()
        f.requests.append(Request(time.monotonic(), method, path, query, None if streaming else resp.status,
                                  self.name))  # fmt: skip
        for hook in list(f.hooks):
            hook(method, path, query)
        self._hold()
        if not streaming:
            _respond(conn, resp.status, out, data, reason=resp.reason)
            return True
        self._stream(conn, resp, out, pods)
        return False

    def _stream(self, conn, resp, headers: list, pods: bool) -> None:
        """A watch: each event a chunk, through the gate (pods: stall and lag), cut after ``cut_watches_s``."""
        f = self.faults
        end = time.monotonic() + f.cut_watches_s if f.cut_watches_s else None
        head = [f"HTTP/1.1 {resp.status} {resp.reason}\r\n".encode()]
        head += [f"{k}: {v}\r\n".encode() for k, v in headers]
        head.append(b"Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n")
        conn.sendall(b"".join(head))
        q: queue.Queue = queue.Queue()
        done = object()

        def pump():
            try:
                while True:
                    line = resp.readline()
                    if not line:
                        break
                    q.put((time.monotonic(), line))
            except (OSError, ValueError, AttributeError, http.client.HTTPException):
                pass  # AttributeError: http.client, as a cut closes the response under this read
            finally:
                q.put((time.monotonic(), done))

        threading.Thread(target=pump, daemon=True).start()

        def cut_due():
            if end is not None and time.monotonic() >= end:
                f.watch_cuts += 1
                resp.close()
                raise _Cut("injected: watch connection cut")

        try:
            while not self._done():
                cut_due()
                try:
                    at, line = q.get(timeout=0.2)
                except queue.Empty:
                    continue
                while pods and not self._done() and (f.stall or time.monotonic() < at + f.lag_s):
                    cut_due()
                    time.sleep(0.05)
                self._hold()
                if line is done:
                    conn.sendall(b"0\r\n\r\n")
                    return
                conn.sendall(b"%x\r\n%s\r\n" % (len(line), line))
                if pods:
                    self._delivered(line)
        finally:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)
            resp.close()

    def _delivered(self, line: bytes) -> None:
        try:
            meta = json.loads(line).get("object", {}).get("metadata") or {}
        except ValueError:
            return
        self.faults.delivered.setdefault(self.name, set()).add(f"{meta.get('namespace')}/{meta.get('name')}")


def _read_request(rfile) -> tuple | None:
    line = rfile.readline(65537)
    if not line or line in (b"\r\n", b"\n"):
        return None
    method, target, _ = line.decode("latin-1").split(" ", 2)
    headers = []
    while True:
        h = rfile.readline(65537)
        if h in (b"\r\n", b"\n", b""):
            break
        k, _, v = h.decode("latin-1").partition(":")
        headers.append((k.strip(), v.strip()))
    length = next((int(v) for k, v in headers if k.lower() == "content-length"), 0)
    chunked = any(k.lower() == "transfer-encoding" and "chunked" in v.lower() for k, v in headers)
    if chunked:
        parts = []
        while True:
            size = int(rfile.readline().split(b";")[0].strip() or b"0", 16)
            if not size:
                rfile.readline()
                break
            parts.append(rfile.read(size))
            rfile.readline()
        body = b"".join(parts)
    else:
        body = rfile.read(length) if length else b""
    return method, target, headers, body


def _respond(conn, status: int, headers: list, body: bytes, reason: str = "") -> None:
    reason = reason or http.client.responses.get(status, "")
    head = [f"HTTP/1.1 {status} {reason}\r\n".encode()]
    head += [f"{k}: {v}\r\n".encode() for k, v in headers]
    head.append(f"Content-Length: {len(body)}\r\n\r\n".encode())
    conn.sendall(b"".join(head) + body)
