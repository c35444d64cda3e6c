"""``exec`` and ``portForward`` on the process kubelet, as the kubelet serves them: it authorizes the request and
proxies the upgraded connection to its container runtime's streaming server (pkg/kubelet/server/server.go
``proxyStream``). Here that server is ``kubelet-streaming`` (localcluster/go/kubelet-streaming, on
k8s.io/kubelet/pkg/cri/streaming, built by ``make tools``), one per process kubelet on a Unix socket only it
reaches, started at the first request. Each request is passed on with the container as the kubelet resolved it
(containers.py ``Spec``: environment, working directory, uid/gid; the pod's address and its processes' sessions)
in the header ``X-Localcluster-Target``; the bytes then flow both ways unchanged (SPDY/3.1 from kube-apiserver).
"""

from __future__ import annotations

import contextlib
import json
import os
import selectors
import shutil
import socket
import ssl
import subprocess
import tempfile
import threading
from pathlib import Path

from localcluster import binaries

TARGET_HEADER = "X-Localcluster-Target"
BINARY = "kubelet-streaming"


class Unavailable(RuntimeError):
    """The streaming server is not built or did not start."""


class StreamingServer:
    """The kubelet's streaming server process, started on first use and stopped with the kubelet."""

    def __init__(self, log: Path) -> None:
        self.log = log
        self._lock = threading.Lock()
        self._proc: subprocess.Popen | None = None
        self._dir: str | None = None
        self.socket = ""
        # pod uid -> its port-forwards' connections to the server
        self._open: dict[str, set[socket.socket]] = {}

    def _ensure(self) -> str:
        with self._lock:
            if self._proc is not None and self._proc.poll() is None:
                return self.socket
            try:
                exe = binaries.path(BINARY)
            except binaries.Missing as e:
                raise Unavailable(str(e)) from None
            if self._dir is None:  # short: a Unix socket's path has at most 107 bytes
                self._dir = tempfile.mkdtemp(prefix="kubelet-streaming-")
            self.socket = os.path.join(self._dir, "s.sock")
            self.log.parent.mkdir(parents=True, exist_ok=True)
            with open(self.log, "ab") as err:
                proc = subprocess.Popen([str(exe), f"--socket={self.socket}"], stdout=subprocess.PIPE,
                                        stderr=err, stdin=subprocess.DEVNULL, start_new_session=True)  # fmt: skip
            line = proc.stdout.readline() if proc.stdout else b""
            if not line.startswith(b"serving on"):
                proc.kill()
                proc.wait()
                raise Unavailable(f"{BINARY} did not start (its log: {self.log})")
            self._proc = proc
            return self.socket

    def connect(self, pod_uid: str | None = None) -> socket.socket:
        """A connection to the server; for a port-forward into the pod ``pod_uid``, kept until :meth:`release`."""
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            s.connect(self._ensure())
        except OSError:
            s.close()
            raise
        if pod_uid is not None:
            with self._lock:
                self._open.setdefault(pod_uid, set()).add(s)
        return s

    def release(self, pod_uid: str, s: socket.socket) -> None:
        with self._lock:
            self._open.get(pod_uid, set()).discard(s)
            if not self._open.get(pod_uid, True):
                del self._open[pod_uid]

    def close_pod(self, pod_uid: str) -> None:
        """Ends the pod's streams, as the end of a pod's containers ends the commands exec'd in them (the server
        kills each one's session: kubectl exec reports exit code 137) and the forwards into it."""
        with self._lock:
            conns = self._open.pop(pod_uid, set())
            up = self._proc is not None and self._proc.poll() is None
        for s in conns:
            with contextlib.suppress(OSError):
                s.shutdown(socket.SHUT_RDWR)
        if up:
            with contextlib.suppress(OSError, Unavailable), self.connect() as s:
                s.settimeout(10)
                s.sendall(
                    f"POST /kill/{pod_uid} HTTP/1.1\r\nHost: kubelet\r\nConnection: close\r\n\r\n".encode()
                )
                while s.recv(4096):
                    pass

    def stop(self) -> None:
        with self._lock:
            if self._proc is not None:
                self._proc.terminate()  # it kills the commands it runs, then exits
                try:
                    self._proc.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    self._proc.kill()
                    self._proc.wait()
                if self._proc.stdout:
                    self._proc.stdout.close()
                self._proc = None
            if self._dir is not None:
                shutil.rmtree(self._dir, ignore_errors=True)
                self._dir = None


def request_head(requestline: str, headers, target: dict) -> bytes:
    """The request as it came (its line and headers) with the target the kubelet resolved; a client's own
    ``X-Localcluster-Target`` is dropped."""
    lines = [requestline]
    lines += [f"{k}: {v}" for k, v in headers.items() if k.lower() != TARGET_HEADER.lower()]
    lines.append(f"{TARGET_HEADER}: {json.dumps(target, separators=(',', ':'))}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


def splice(tls: ssl.SSLSocket, other: socket.socket) -> None:
    """Copies bytes both ways until both sides have closed, in one thread (an SSL connection must not be read and
    written by two threads at once). Both peers read and write at once (kube-apiserver, kubelet-streaming: Go), so a
    blocking write here cannot wait on a read here."""
    sel = selectors.DefaultSelector()
    sel.register(tls, selectors.EVENT_READ)
    sel.register(other, selectors.EVENT_READ)
    open_ = {tls, other}
    try:
        while open_:
            ready = [k.fileobj for k, _ in sel.select(timeout=None if not tls.pending() else 0)]
            if tls in open_ and tls.pending() and tls not in ready:
                ready.append(tls)
            for src in ready:
                dst = other if src is tls else tls
                try:
                    if src is tls:
                        tls.setblocking(False)  # readable may be a TLS record that holds no data
                        try:
                            data = tls.recv(65536)
                        except ssl.SSLWantReadError:
                            continue
                        finally:
                            tls.setblocking(True)
                    else:
                        data = other.recv(65536)
                except (ConnectionError, ssl.SSLError, OSError):
                    data = b""
                if data:
                    try:
                        dst.sendall(data)
                    except (ConnectionError, ssl.SSLError, OSError):
                        return
                    continue
                sel.unregister(src)
                open_.discard(src)
                with contextlib.suppress(OSError, ssl.SSLError):
                    if dst is other:
                        other.shutdown(socket.SHUT_WR)
                    else:
                        return  # the streaming server has ended the exchange: so does the kubelet
    finally:
        sel.close()
        other.close()
