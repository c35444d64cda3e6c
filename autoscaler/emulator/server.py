"""The HTTP server: stdlib ThreadingHTTPServer on loopback, JSON replies, chunked watch streams."""

from __future__ import annotations

import json
import logging
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qsl, urlsplit

from autoscaler.emulator import logs
from autoscaler.emulator.api import KubeApi, Reply, status_body
from autoscaler.emulator.kubeconfig import write_kubeconfig
from autoscaler.model import ClusterModel, WallClock

log = logging.getLogger(__name__)
LOOPBACK = ("127.0.0.1", "::1", "localhost")
WRITES = frozenset({"POST", "PUT", "PATCH", "DELETE"})


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "kube-emulator/1"
    disable_nagle_algorithm = True  # headers and body are separate writes: no 40 ms delayed-ACK stalls

    def log_message(self, fmt: str, *args) -> None:
        log.debug("%s " + fmt, self.address_string(), *args)

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
        try:
            result = api.handle(self.command, url.path, query, self.headers.get("Content-Type", ""), body)
            if isinstance(result, Reply) and self.command == "GET":
                result = api.as_table(result, self.headers.get("Accept", ""))
        except Exception as e:  # a bug must not kill the connection silently
            log.exception("emulator error on %s %s", self.command, self.path)
            result = Reply(500, status_body(500, "InternalError", f"{type(e).__name__}: {e}"))
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
            data = json.dumps(result.body).encode()
            self.send_response(result.status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for k, v in result.headers.items():
                self.send_header(k, v)
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
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _dispatch


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True


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
    ) -> None:
        if host not in LOOPBACK:
            raise ValueError(f"the emulator binds only to loopback, not {host!r}")
        self.model = model or ClusterModel(WallClock())
        self._httpd = _Server((host, port), _Handler)
        h, p = self._httpd.server_address[:2]
        self.host, self.port = h, p
        self.api = KubeApi(self.model, f"{h}:{p}", watch_history)
        self._httpd.api = self.api  # type: ignore[attr-defined]
        self._httpd.write_latency_s = write_latency_s  # type: ignore[attr-defined]
        self._threads: list[threading.Thread] = []
        self._stop = threading.Event()

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    def start(self) -> Emulator:
        serve = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.2}, daemon=True)
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
        self._httpd.shutdown()
        self._httpd.server_close()
        for t in self._threads:
            t.join(timeout=5)

    def write_kubeconfig(self, path: str | Path) -> Path:
        return write_kubeconfig(path, self.url)

    def __enter__(self) -> Emulator:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
