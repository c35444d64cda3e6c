"""The two sides of the live benchmarks (``invoke bench-live``, demos/bench_live.py; the churn run,
demos/bench_churn.py) that are not Kubernetes: AWS as moto on loopback with the spec's tagged groups, every scaling
write timestamped as it arrives (:class:`Aws`), and the real ``autoscaler run`` process with its memory and passes
read from outside (:class:`Controller`). Only processes this module starts are ever signalled."""

from __future__ import annotations

import contextlib
import io
import logging
import os
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path
from urllib.parse import parse_qs

from localcluster.processes import free_port

ROOT = Path(__file__).resolve().parents[1]
WRITES = ("SetDesiredCapacity", "UpdateAutoScalingGroup")
STATIC_TYPE = (
    "m6i.8xlarge"  # the nodes of a static group the cloud does not manage (as the lab's own servers)
)
REGIONS = "us-west-2,us-east-1,us-east-2"


def rss_mib(pid: int) -> float | None:
    """The process's resident memory (``/proc/PID/status`` VmRSS), in MiB; None once it is gone."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


class Aws:
    """moto on loopback (with the demo's DescribeScalingActivities), the spec's groups, every write timestamped."""

    def __init__(self) -> None:
        from moto.moto_server.werkzeug_app import (
            DomainDispatcherApplication,
            MotoRequestHandler,
            create_backend_app,
        )
        from werkzeug.serving import make_server

        from localcluster import aws_server

        logging.getLogger("werkzeug").setLevel(logging.WARNING)  # no line per request
        aws_server.install({})
        self._app = DomainDispatcherApplication(create_backend_app)
        self.writes: list[tuple[float, str, str | None]] = []  # (monotonic time of arrival, action, group)
        self._server = make_server(
            "127.0.0.1", 0, self._wsgi, threaded=True, request_handler=MotoRequestHandler
        )
        threading.Thread(target=self._server.serve_forever, daemon=True, name="moto").start()
        self.url = f"http://127.0.0.1:{self._server.server_port}"
        urllib.request.urlopen(urllib.request.Request(f"{self.url}/moto-api/reset", method="POST")).read()
        from clusterspec.loader import load_spec
        from localcluster.aws_bootstrap import create_groups

        spec = load_spec(str(ROOT / "cluster.yaml"))
        create_groups(spec, self.url, [r for r in REGIONS.split(",") if r in spec.spill_over_order])

    def _wsgi(self, environ, start_response):
        at = time.monotonic()
        body = environ["wsgi.input"].read(int(environ.get("CONTENT_LENGTH") or 0))
        params = {k: v[0] for k, v in parse_qs(body.decode(errors="replace")).items()}
        if params.get("Action") in WRITES:
            self.writes.append((at, params["Action"], params.get("AutoScalingGroupName")))
        environ["wsgi.input"] = io.BytesIO(body)
        return self._app(environ, start_response)

    def first_write_after(self, t: float) -> float | None:
        return next((at for at, _, _ in list(self.writes) if at >= t), None)

    def stop(self) -> None:
        from localcluster import aws_server

        self._server.shutdown()
        aws_server.uninstall()


class Controller:
    def __init__(
        self,
        tree: Path,
        kubeconfig: Path,
        aws_url: str,
        scan_interval: str | None,
        log: Path,
        flags: tuple = (),
    ) -> None:
        """``scan_interval``: None leaves the autoscaler's own (or the one ``flags`` give)."""
        self.metrics_port = free_port()
        scan = ("--scan-interval", scan_interval) if scan_interval else ()
        argv = [sys.executable, "-m", "autoscaler", "run", "--cluster-name", "dlr", "--regions", REGIONS,
                "--kubeconfig", str(kubeconfig), "--aws-endpoint-url", aws_url, "--metrics-port",
                str(self.metrics_port), *scan, "--boot-timeout", "24h", *flags]  # fmt: skip
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "KUBECONFIG")}
        env |= {"PYTHONPATH": str(tree), "POD_NAME": "bench-live", "AWS_ACCESS_KEY_ID": "bench",
                "AWS_SECRET_ACCESS_KEY": "bench", "AWS_DEFAULT_REGION": "us-west-2"}  # fmt: skip
        self.log = log
        self.proc = subprocess.Popen(argv, cwd=tree, env=env, stdout=subprocess.DEVNULL,
                                     stderr=log.open("w"), start_new_session=True)  # fmt: skip

    def alive(self) -> bool:
        return self.proc.poll() is None

    def rss_mib(self) -> float | None:
        return rss_mib(self.proc.pid)

    def loops(self) -> int | None:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.metrics_port}/metrics", timeout=5) as r:
                text = r.read().decode()
        except (OSError, urllib.error.URLError):
            return None
        total = 0.0
        for line in text.splitlines():
            if line.startswith("autoscaler_loops_total{"):
                total += float(line.rsplit(" ", 1)[1])
        return int(total)

    def tail(self, n: int = 15) -> str:
        return "\n".join(self.log.read_text(errors="replace").splitlines()[-n:]) if self.log.exists() else ""

    def stop(self) -> None:
        if self.alive():
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGTERM)  # its own session: only what this module started
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(10)
