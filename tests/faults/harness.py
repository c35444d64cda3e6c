"""The fault harness: the real ``autoscaler run`` processes against a moto server and the Kubernetes API emulator,
with faults injected on the wire, and every invariant checked by clients the autoscaler does not share (kubectl,
boto3), never by its own logs.

- AWS: moto (with the demo's capacity limits and failed scaling activities, autoscaler.demo.aws_server) behind
  *doors*: one HTTP endpoint per client, each with its own faults (a delay or an error per API action). A delayed
  request is delivered only if its client still waits for it when the delay ends (a client that timed out and
  closed its connection sent nothing AWS would act on): a simplification stated in docs/autoscaler.md.
- Kubernetes: the emulator, its pods watches gated (stalled, or every event lagging), every request slowed, or the
  pods API failing; and per replica a TCP proxy that can cut the replica off from the API (a partition: the
  connections hang, as dropped packets make them).
- ``FAULTS_CODE=/path/to/checkout`` runs the autoscaler of another checkout (the base commit) against the same
  scenarios: each one fails there.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import queue
import re
import select
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import parse_qs

from moto.moto_server.werkzeug_app import DomainDispatcherApplication, MotoRequestHandler, create_backend_app
from werkzeug.serving import make_server

from autoscaler.emulator.api import Reply, WatchStream, status_body

ROOT = Path(__file__).resolve().parents[2]
CODE = Path(os.environ.get("FAULTS_CODE") or ROOT)  # the autoscaler under test
WRITES = {
    "SetDesiredCapacity",
    "TerminateInstanceInAutoScalingGroup",
    "UpdateAutoScalingGroup",
    "SetInstanceProtection",
}
AWS_ENV = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_DEFAULT_REGION": "us-west-2",
}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_until(check, timeout_s: float, what: str, step: float = 0.2):
    """A correctness wait (a bound on how long a fault may last, never a performance figure)."""
    deadline = time.monotonic() + timeout_s
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"not reached within {timeout_s:g} s: {what}")
        time.sleep(step)


# -- AWS ------------------------------------------------------------------------------------------------------------
def _peer_closed(sock) -> bool:
    try:
        ready, _, _ = select.select([sock], [], [], 0)
        return bool(ready) and sock.recv(1, socket.MSG_PEEK) == b""
    except OSError:
        return True


@dataclass
class Door:
    """One endpoint onto the shared moto backend; ``delay``/``fail`` per action (optionally per group); ``late``
    holds a request that long and then delivers it whatever its client did meanwhile (a request the network kept,
    which AWS still accepts: a signed request is valid for minutes); ``stale`` answers a read as AWS answered it that
    many seconds ago (a lagging replica of AWS's eventually consistent state)."""

    app: object
    name: str
    delay: dict[str, float] = field(default_factory=dict)
    late: dict[str, float] = field(default_factory=dict)
    stale: dict[str, float] = field(default_factory=dict)
    fail: dict[str, tuple[int, str, str | None]] = field(
        default_factory=dict
    )  # action -> (status, code, group)
    writes: list[dict] = field(default_factory=list)  # delivered to AWS: {action, group, at}
    dropped: list[dict] = field(default_factory=list)  # abandoned by their client before delivery
    calls: dict[str, int] = field(default_factory=dict)
    _answers: dict[str, list] = field(
        default_factory=dict
    )  # read -> [(at, status, headers, body)], oldest first

    def __post_init__(self):
        self.server = make_server(
            "127.0.0.1", 0, self._wsgi, threaded=True, request_handler=MotoRequestHandler
        )
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_port}"

    def _wsgi(self, environ, start_response):
        body = environ["wsgi.input"].read(int(environ.get("CONTENT_LENGTH") or 0))
        params = {k: v[0] for k, v in parse_qs(body.decode(errors="replace")).items()}
        action, group = params.get("Action", ""), params.get("AutoScalingGroupName")
        self.calls[action] = self.calls.get(action, 0) + 1
        if self.late.get(action):
            time.sleep(
                self.late[action]
            )  # in the network; the client gave up long ago, AWS gets it all the same
        if self.stale.get(action):
            return self._stale(environ, body, params, start_response, self.stale[action])
        delay = self.delay.get(action)
        if delay:
            sock, end = environ.get("werkzeug.socket"), time.monotonic() + delay
            while time.monotonic() < end:
                time.sleep(0.05)
                if sock is not None and _peer_closed(sock):
                    self.dropped.append({"action": action, "group": group, "at": time.monotonic()})
                    start_response("499 Client Closed Request", [])
                    return [b""]
        fail = self.fail.get(action)
        if fail and (fail[2] is None or fail[2] == group):
            status, code, _ = fail
            xml = (f"<ErrorResponse><Error><Type>Sender</Type><Code>{code}</Code><Message>injected {code}</Message>"
                   "</Error><RequestId>f</RequestId></ErrorResponse>")  # fmt: skip
            start_response(f"{status} Injected", [("Content-Type", "text/xml")])
            return [xml.encode()]
        environ["wsgi.input"] = io.BytesIO(body)
        out = list(self.app(environ, start_response))
        if action in WRITES:
            self.writes.append({"action": action, "group": group, "at": time.monotonic(), "params": params})
        return out

    def _stale(self, environ, body: bytes, params: dict, start_response, lag_s: float):
        """AWS's answer now is recorded; the one given is the newest recorded at least ``lag_s`` ago (else the oldest)."""
        scope = re.search(r"Credential=[^/]*/[^/]*/([^/]*)/", environ.get("HTTP_AUTHORIZATION", ""))
        key = (
            (scope.group(1) if scope else "") + "?" + "&".join(f"{k}={v}" for k, v in sorted(params.items()))
        )
        got: dict = {}

        def capture(status, headers, exc_info=None):
            got["status"], got["headers"] = status, headers

        environ["wsgi.input"] = io.BytesIO(body)
        data = b"".join(self.app(environ, capture))
        now = time.monotonic()
        history = self._answers.setdefault(key, [])
        history.append((now, got["status"], got["headers"], data))
        old = [a for a in history if a[0] <= now - lag_s]
        answer = old[-1] if old else history[0]
        del history[: max(0, history.index(answer))]  # older than the answer given: never given again
        start_response(answer[1], answer[2])
        return [answer[3]]

    def stop(self):
        self.server.shutdown()


class Aws:
    def __init__(self):
        self.app = DomainDispatcherApplication(create_backend_app)
        self.doors: list[Door] = []

    def door(self, name: str) -> Door:
        d = Door(self.app, name)
        self.doors.append(d)
        return d

    def stop(self):
        for d in self.doors:
            d.stop()


# -- Kubernetes -------------------------------------------------------------------------------------------------------
@dataclass
class Request:
    """One request the emulator answered (the harness's record of the API's view, for ordering checks)."""

    at: float
    method: str
    path: str
    query: dict
    status: int | None  # None for a watch


class KubeFaults:
    """Wraps ``KubeApi.handle`` (the emulator's one entry point). Pods watches go through a gate that holds their
    events while ``stall`` is on and delivers each ``lag_s`` after it happened; ``fail_pods`` answers every pods read
    with 500; ``delay_s`` slows every request; ``cut_watches_s`` breaks every watch (of any kind) that long after it
    opened (the connection closes mid-stream, as a load balancer dropping long connections does);
    ``fail_lease_writes_of`` answers 500 to Lease writes by those holders (a replica whose renewals fail while the
    rest of its traffic passes); ``hooks`` run after each request (a binder that acts right after a read);
    ``requests`` records what was answered."""

    def __init__(self, api):
        self.api = api
        self._handle = api.handle
        self.stall = False
        self.lag_s = 0.0
        self.fail_pods = False
        self.delay_s = 0.0
        self.cut_watches_s = 0.0
        self.fail_lease_writes_of: set[str] = set()
        self.hooks: list = []  # fn(method, path, query) after the request was answered
        self.requests: list[Request] = []
        self.watch_cuts = 0
        api.handle = self.handle

    def handle(self, method, path, query, content_type, body):
        if self.delay_s:
            time.sleep(self.delay_s)
        pods = path.rstrip("/").endswith("/pods")
        if pods and method == "GET" and self.fail_pods:
            return Reply(500, status_body(500, "InternalError", "injected: etcd is unavailable"))
        if "/leases" in path and method in ("PUT", "POST") and self.fail_lease_writes_of:
            holder = (json.loads(body or b"{}").get("spec") or {}).get("holderIdentity")
            if holder in self.fail_lease_writes_of:
                return Reply(500, status_body(500, "InternalError", "injected: lease write refused"))
        result = self._handle(method, path, query, content_type, body)
        watching = isinstance(result, WatchStream)
        self.requests.append(Request(time.monotonic(), method, path, dict(query),
                                     None if watching else getattr(result, "status", None)))  # fmt: skip
        for hook in list(self.hooks):
            hook(method, path, query)
        if watching and (pods or self.cut_watches_s):
            end = time.monotonic() + self.cut_watches_s if self.cut_watches_s else None
            return WatchStream(self._gate(result.events, pods, end))
        return result

    def _cut(self, end: float | None) -> None:
        """Past ``end``: a broken connection (the emulator's server closes it without the last chunk, so the client
        sees the response end prematurely)."""
        if end is not None and time.monotonic() >= end:
            self.watch_cuts += 1
            raise ConnectionResetError("injected: watch connection cut")

    def _gate(self, events, pods: bool, end: float | None):
        q: queue.Queue = queue.Queue()
        done = object()

        def pump():
            try:
                for ev in events:
                    q.put((time.monotonic(), ev))
            finally:
                q.put((time.monotonic(), done))

        threading.Thread(target=pump, daemon=True).start()
        while not self.api.stopping:
            self._cut(end)
            try:
                at, ev = q.get(timeout=0.2)
            except queue.Empty:
                continue
            while pods and not self.api.stopping and (self.stall or time.monotonic() < at + self.lag_s):
                self._cut(end)
                time.sleep(0.05)
            if ev is done:
                return
            yield ev


class Proxy:
    """A TCP proxy from a port of its own to the emulator; ``cut()`` partitions (connections hang, new ones too)."""

    def __init__(self, target_port: int):
        self.target = ("127.0.0.1", target_port)
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self.cut_off = threading.Event()
        self._conns: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while True:
            try:
                client, _ = self.sock.accept()
            except OSError:
                return
            self._conns.append(client)
            if self.cut_off.is_set():
                continue  # accepted, never answered: the client's timeouts decide
            try:
                upstream = socket.create_connection(self.target)
            except OSError:
                client.close()
                continue
            self._conns.append(upstream)
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pump, args=(a, b), daemon=True).start()

    def _pump(self, src, dst):
        while True:
            try:
                data = src.recv(65536)
            except OSError:
                data = b""
            while self.cut_off.is_set():  # a partition: nothing passes, nothing is closed
                time.sleep(0.1)
            if not data:
                for s in (src, dst):
                    with contextlib.suppress(OSError):
                        s.shutdown(socket.SHUT_RDWR)
                return
            try:
                dst.sendall(data)
            except OSError:
                return

    def cut(self):
        self.cut_off.set()

    def stop(self):
        self.cut_off.clear()
        self.sock.close()
        for c in self._conns:
            with contextlib.suppress(OSError):
                c.close()


# -- the autoscaler -------------------------------------------------------------------------------------------------
class Replica:
    """One ``autoscaler run`` process (of ``CODE``), talking to Kubernetes through its own proxy and to AWS through
    its own door."""

    def __init__(self, name: str, kubeconfig: Path, door: Door, tmp: Path, *, leader_elect: bool = False,
                 flags: tuple = (), env: dict | None = None):  # fmt: skip
        self.name, self.door = name, door
        self.metrics_port = free_port()
        self.log = tmp / f"{name}.log"
        argv = [sys.executable, "-m", "autoscaler", "run", "--cluster-name", "dlr", "--regions",
                "us-west-2,us-east-1", "--kubeconfig", str(kubeconfig), "--aws-endpoint-url", door.url,
                "--metrics-port", str(self.metrics_port), "--scan-interval", "1s", "--idle-threshold", "8s",
                "--boot-timeout", "60s", *(["--leader-elect"] if leader_elect else []), *flags]  # fmt: skip
        environ = {**os.environ, **AWS_ENV, "PYTHONPATH": str(CODE), "POD_NAME": name,
                   "AUTOSCALER_MAX_CACHE_AGE": "10s", **(env or {})}  # fmt: skip
        environ.pop("KUBECONFIG", None)
        self.proc = subprocess.Popen(argv, cwd=CODE, env=environ, stdout=subprocess.DEVNULL,
                                     stderr=self.log.open("w"))  # fmt: skip

    def get(self, path: str) -> tuple[int, str]:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.metrics_port}{path}", timeout=3) as r:
                return r.status, r.read().decode()
        except urllib.error.HTTPError as e:
            return e.code, e.read().decode()
        except OSError:
            return 0, ""

    def metric(self, name: str, **labels) -> float | None:
        want = ",".join(f'{k}="{v}"' for k, v in sorted(labels.items()))
        for line in self.get("/metrics")[1].splitlines():
            key, _, value = line.rpartition(" ")
            if key == name or key == f"{name}{{{want}}}":
                return float(value)
        return None

    def alive(self) -> bool:
        return self.proc.poll() is None

    def stop(self):
        if self.alive():
            self.proc.terminate()
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def tail(self, n: int = 30) -> str:
        return "\n".join(self.log.read_text().splitlines()[-n:]) if self.log.exists() else ""


def kubectl(kubeconfig: Path, *args: str) -> dict:
    out = subprocess.run(["kubectl", "--kubeconfig", str(kubeconfig), *args, "-o", "json"], capture_output=True,
                         text=True, timeout=60, check=True)  # fmt: skip
    return json.loads(out.stdout)
