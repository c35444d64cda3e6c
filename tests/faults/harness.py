"""The fault harness: the real ``autoscaler run`` processes against a moto server and the real control plane
(localcluster/), with faults injected on the wire, and every invariant checked by clients the autoscaler does not
share (kubectl, the Kubernetes client as the cluster's admin, boto3), never by its own logs.

- AWS: moto (with the demo's capacity limits and failed scaling activities, localcluster.aws_server) behind
  *doors*: one HTTP endpoint per client, each with its own faults (a delay or an error per API action). A delayed
  request is delivered only if its client still waits for it when the delay ends (a client that timed out and
  closed its connection sent nothing AWS would act on): a simplification stated in docs/autoscaler.md.
- Kubernetes: kube-apiserver behind a TLS-terminating reverse proxy per replica (tests/faults/kube_proxy.py) that
  forwards the replica's own credentials: its pods watches gated (stalled, or every event lagging), every request
  slowed, the pods API failing, watches cut, Lease writes refused, and the replica cut off (a partition: the
  connections hang, as dropped packets make them).
- ``FAULTS_CODE=/path/to/checkout`` runs the autoscaler of another checkout (the base commit) against the same
  scenarios: each one fails there.
"""

from __future__ import annotations

import io
import json
import os
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

from localcluster.processes import free_port
from tests.support import wait_until  # noqa: F401 - the faults' tests import it from here

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


# -- AWS ------------------------------------------------------------------------------------------------------------
class NodeGone(Exception):
    """The Node is not there (deleted). Defined here, not in conftest.py: pytest imports conftest.py as a module of
    its own (``conftest``) besides ``tests.faults.conftest``, so a class defined there is two classes, and a test's
    ``except`` of the one it imported missed the other."""


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


# -- the autoscaler -------------------------------------------------------------------------------------------------
class Replica:
    """One ``autoscaler run`` process (of ``CODE``), talking to Kubernetes through its own proxy (its kubeconfig) and
    to AWS through its own door."""

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
    from localcluster import binaries

    out = subprocess.run([str(binaries.path("kubectl")), "--kubeconfig", str(kubeconfig), *args, "-o", "json"], capture_output=True,
                         text=True, timeout=60, check=True)  # fmt: skip
    return json.loads(out.stdout)
