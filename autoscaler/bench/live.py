"""The live controller under load: the real ``autoscaler run`` process against the Kubernetes API emulator holding
N nodes and M kubectl-sized pods, and an in-process moto server for AWS (docs/benchmarks.md, "Live controller").

    python -m autoscaler.bench.live [--nodes 5000] [--pods 50000] [--loops 1000] [--samples 5] [--events 500]
                                    [--write-latency-ms 5] [--baseline REF] [--json]

- The cluster: ``--nodes`` Ready nodes (m6i.8xlarge, kubectl-sized: managed fields, 50 images...) of a static
  group the cloud does not manage (as the lab's own servers), each running ``pods / nodes`` kubectl-sized Job
  pods, loaded straight into the model before the emulator serves; AWS: the spec's tagged Auto Scaling groups
  (cluster.yaml) in moto, every write the controller sends timestamped when it arrives.
- Every write to the Kubernetes API (Events, taints, the state ConfigMap, the leader lease) waits
  ``--write-latency-ms`` in the emulator, as admission and etcd make a real API server's writes wait.
- Memory: the controller's RSS (``/proc/PID/status`` VmRSS) sampled every 0.5 s over ``--loops`` passes
  (``autoscaler_loops_total``): at the first pass, its maximum, at the end, and whether it is steady (the mean
  over the last tenth of the passes within 5% of the mean over the tenth before the middle).
- Decision latency, ``--samples`` times spread over the run: ``--events`` pending pods that fit no group appear
  (each pass owes each of them a NotTriggerScaleUp Event); once the controller has begun writing them, one
  8-GPU pod appears, and the time from its creation to the first SetDesiredCapacity / UpdateAutoScalingGroup
  reaching AWS is one sample; then the burst is deleted. The pod stays pending: it claims the instance it asked
  for, which never registers (no node follows AWS here; ``--boot-timeout 24h`` keeps the controller from
  replacing it), so the next sample's pod needs a new one again.
- ``--baseline REF``: the same run with the controller of REF's code (``git archive``), for ratios.

Figures are printed, nothing about time is asserted. Only processes this module starts are ever signalled.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import logging
import os
import random
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from dataclasses import asdict, dataclass, field
from pathlib import Path
from urllib.parse import parse_qs

from autoscaler.core import generate, kubectl_sized
from autoscaler.options import positive_count as _positive

ROOT = Path(__file__).resolve().parents[2]
WRITES = ("SetDesiredCapacity", "UpdateAutoScalingGroup")
STATIC_TYPE = "m6i.8xlarge"
NAMESPACE = "lab"
REGIONS = "us-west-2,us-east-1,us-east-2"


@dataclass
class Options:
    nodes: int = 5_000
    pods: int = 50_000
    loops: int = 1_000
    samples: int = 5
    events: int = 500
    write_latency_ms: float = 5.0
    scan_interval: str = "1s"
    ready_timeout_s: float = 900.0
    sample_timeout_s: float = 120.0


@dataclass
class Run:
    code: str
    loops: int = 0
    seconds: float = 0.0
    rss_mib: list[tuple[int, float]] = field(default_factory=list)  # (loops done, MiB)
    latencies_s: list[float] = field(default_factory=list)
    missed: int = 0  # samples with no scaling call within the timeout
    events_per_burst: list[int] = field(default_factory=list)
    startup_s: float = 0.0
    errors: list[str] = field(default_factory=list)

    def summary(self) -> dict:
        rss = [m for _, m in self.rss_mib]
        after = [m for n, m in self.rss_mib if n >= 1] or rss
        out = {
            "code": self.code,
            "loops": self.loops,
            "seconds": round(self.seconds, 1),
            "startup_s": round(self.startup_s, 1),
            "rss_start_mib": round(after[0]) if after else None,
            "rss_max_mib": round(max(rss)) if rss else None,
            "rss_end_mib": round(rss[-1]) if rss else None,
            "steady": steady(self.rss_mib, self.loops),
            "latency_p50_s": round(statistics.median(self.latencies_s), 2) if self.latencies_s else None,
            "latency_max_s": round(max(self.latencies_s), 2) if self.latencies_s else None,
            "latencies_s": [round(x, 2) for x in self.latencies_s],
            "missed_samples": self.missed,
            "events_per_burst": self.events_per_burst,
        }
        if self.errors:
            out["errors"] = self.errors
        return out


def steady(samples: list[tuple[int, float]], loops: int) -> dict | None:
    """Mean RSS over the last tenth of the passes against the tenth before the middle: steady within 5%."""
    if loops < 10:
        return None
    tenth = loops / 10
    mid = [m for n, m in samples if 4 * tenth <= n < 5 * tenth]
    end = [m for n, m in samples if n >= 9 * tenth]
    if not mid or not end:
        return None
    growth = statistics.mean(end) / statistics.mean(mid) - 1
    return {"growth": round(growth, 3), "steady": abs(growth) <= 0.05}


# --- AWS -----------------------------------------------------------------------------------------------------------
class Aws:
    """moto on loopback (with the demo's DescribeScalingActivities), the spec's groups, every write timestamped."""

    def __init__(self) -> None:
        from moto.moto_server.werkzeug_app import (
            DomainDispatcherApplication,
            MotoRequestHandler,
            create_backend_app,
        )
        from werkzeug.serving import make_server

        from autoscaler.demo import aws_server

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
        from autoscaler.demo.bootstrap import create_groups
        from clusterspec.loader import load_spec

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
        from autoscaler.demo import aws_server

        self._server.shutdown()
        aws_server.uninstall()


# --- Kubernetes ----------------------------------------------------------------------------------------------------
def _sized_pod(name: str, requests: dict, index: int, rng: random.Random, **kw) -> dict:
    lean = generate.pod(name, requests, namespace=NAMESPACE, **kw)
    return kubectl_sized.pod(lean, index, rng)


def load_cluster(opts: Options, rng: random.Random):
    """The model with ``opts.nodes`` kubectl-sized nodes of a static group, each running its share of the pods."""
    from autoscaler.model import ClusterModel, WallClock

    model = ClusterModel(WallClock(), terminated_pod_ttl_s=60.0)
    size = max(1, opts.nodes)
    group = {"name": "lab-static", "region": "lab", "zones": ["lab-a"], "instance_type": STATIC_TYPE,
             "min": size, "max": size, "desired": size, "labels": {"research.cluster/pool": "cpu"}, "taints": []}  # fmt: skip
    with model.lock:
        model.cloud.add_group(group, booted=True)
        nodes = model.nodes()
        for i, node in enumerate(nodes):
            _enrich_node(node, kubectl_sized.node(node, i, rng, STATIC_TYPE))
        # the claim every kubectl-sized pod names, bound to its volume: without it kube-scheduler (and the planner,
        # which honours it) leaves every pod unschedulable (`persistentvolumeclaim "research-data" not found`)
        claim, volume = kubectl_sized.data_claim(NAMESPACE)
        model.store.create("persistentvolumes", volume, uid=volume["metadata"]["uid"])
        model.store.create("persistentvolumeclaims", claim, uid=claim["metadata"]["uid"])
        per_node, extra = divmod(opts.pods, len(nodes))
        index = 0
        for i, node in enumerate(nodes):
            name = node["metadata"]["name"]
            for j in range(per_node + (1 if i < extra else 0)):
                pod = _sized_pod(
                    f"run-{i}-{j}", {"cpu": "2500m", "memory": "10Gi"}, index, rng, node_name=name
                )
                sized_status = pod.pop("status")
                stored = model.submit_pod(pod)
                for k, v in sized_status.items():
                    stored["status"].setdefault(k, v)
                index += 1
        model.settle()
    return model


def _enrich_node(node: dict, sized: dict) -> None:
    """The model's node (its own name, labels, taints, allocatable, conditions) with the kubectl-sized rest."""
    meta, smeta = node["metadata"], sized["metadata"]
    meta["managedFields"] = smeta["managedFields"]
    meta["annotations"] = {**smeta.get("annotations", {}), **(meta.get("annotations") or {})}
    meta["labels"] = {**smeta["labels"], **meta["labels"]}
    status = node.setdefault("status", {})
    for k in ("images", "nodeInfo", "addresses", "daemonEndpoints", "runtimeHandlers", "capacity"):
        status.setdefault(k, sized["status"][k])


class ListCache:
    """The pods list pages of the informer's first list (``limit=500``), prepared before the controller starts and
    served while no pod changes. kube-apiserver answers lists from its watch cache with every object serialized
    once (the cacher's ``cachingObject``); the emulator copies each object of each page, which at 50,000
    kubectl-sized pods takes it longer than the controller's 120 s start-up bound on a shared 2-core machine. Any
    change to a pod drops the pages (later lists are served by the emulator as usual)."""

    PAGE = "500"

    def __init__(self, api, model) -> None:
        self._handle = api.handle
        self.pages: dict[tuple[str, str | None], object] = {}
        self.hits = 0
        model.subscribe(self._changed)
        api.handle = self.handle  # the emulator's one entry point, as tests/faults wraps it

    def _changed(self, kind: str, event: str, obj: dict) -> None:
        if kind == "pods":
            self.pages.clear()

    def warm(self, path: str = "/api/v1/pods") -> int:
        token = None
        while True:
            query = {"limit": self.PAGE} | ({"continue": token} if token else {})
            reply = self._handle("GET", path, query, "", b"")
            self.pages[(path, token)] = reply
            token = reply.body["metadata"].get("continue")
            if not token:
                return len(self.pages)

    def handle(self, method, path, query, content_type, body):
        if method == "GET" and set(query) <= {"limit", "continue"} and query.get("limit") == self.PAGE:
            hit = self.pages.get((path, query.get("continue")))
            if hit is not None:
                self.hits += 1
                return hit
        return self._handle(method, path, query, content_type, body)


# --- the controller ------------------------------------------------------------------------------------------------
class Controller:
    def __init__(self, tree: Path, kubeconfig: Path, aws_url: str, opts: Options, log: Path) -> None:
        with socketless_port() as port:
            self.metrics_port = port
        argv = [sys.executable, "-m", "autoscaler", "run", "--cluster-name", "dlr", "--regions", REGIONS,
                "--kubeconfig", str(kubeconfig), "--aws-endpoint-url", aws_url, "--metrics-port",
                str(self.metrics_port), "--scan-interval", opts.scan_interval, "--boot-timeout", "24h"]  # fmt: skip
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "KUBECONFIG")}
        env |= {"PYTHONPATH": str(tree), "POD_NAME": "bench-live", "AWS_ACCESS_KEY_ID": "bench",
                "AWS_SECRET_ACCESS_KEY": "bench", "AWS_DEFAULT_REGION": "us-west-2"}  # fmt: skip
        self.log = log
        self.proc = subprocess.Popen(argv, cwd=tree, env=env, stdout=subprocess.DEVNULL,
                                     stderr=log.open("w"), start_new_session=True)  # fmt: skip

    def alive(self) -> bool:
        return self.proc.poll() is None

    def rss_mib(self) -> float | None:
        try:
            with open(f"/proc/{self.proc.pid}/status") as f:
                for line in f:
                    if line.startswith("VmRSS:"):
                        return int(line.split()[1]) / 1024
        except OSError:
            return None
        return None

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


@contextlib.contextmanager
def socketless_port():
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    yield port


# --- one run -------------------------------------------------------------------------------------------------------
def run_once(tree: Path, label: str, opts: Options, progress=lambda what: None) -> Run:
    from autoscaler.emulator import Emulator

    result = Run(label)
    rng = random.Random(1)
    progress(f"{label}: loading {opts.nodes:,} nodes and {opts.pods:,} kubectl-sized pods into the model")
    model = load_cluster(opts, rng)
    aws = Aws()
    emu = Emulator(model, write_latency_s=opts.write_latency_ms / 1000)
    progress(f"{label}: preparing the pods list pages (as the API server's watch cache has them serialized)")
    ListCache(emu.api, model).warm()
    emu.start()
    stop = threading.Event()
    with tempfile.TemporaryDirectory(prefix="bench-live-") as tmp:
        kubeconfig = emu.write_kubeconfig(Path(tmp) / "kubeconfig")
        ctl = Controller(tree, kubeconfig, aws.url, opts, Path(tmp) / "controller.log")
        try:
            t0 = time.monotonic()
            progress(f"{label}: controller started; waiting for its first pass")
            _wait(lambda: (ctl.loops() or 0) >= 1, opts.ready_timeout_s, ctl, "its first pass")
            result.startup_s = time.monotonic() - t0

            def sample_rss():
                while not stop.wait(0.5):
                    rss, n = ctl.rss_mib(), ctl.loops()
                    if rss is not None and n is not None:
                        result.rss_mib.append((n, rss))

            threading.Thread(target=sample_rss, daemon=True).start()
            start_loops = ctl.loops() or 1
            marks = [start_loops + (k + 1) * opts.loops // (opts.samples + 1) for k in range(opts.samples)]
            for k, mark in enumerate(marks):
                _wait(lambda m=mark: (ctl.loops() or 0) >= m, opts.sample_timeout_s * 10, ctl, f"pass {mark}")
                progress(f"{label}: pass {ctl.loops()}: decision latency sample {k + 1}/{opts.samples}")
                _sample(model, aws, opts, rng, k, result, ctl)
            end = start_loops + opts.loops
            last = -1
            while (n := ctl.loops() or 0) < end:
                if not ctl.alive():
                    raise RuntimeError(f"the controller exited: {ctl.tail()}")
                if n // 100 != last // 100:
                    progress(f"{label}: pass {n:,} of {end:,}, RSS {ctl.rss_mib() or 0:,.0f} MiB")
                last = n
                time.sleep(1)
            result.loops = (ctl.loops() or 0) - start_loops
            result.seconds = time.monotonic() - t0 - result.startup_s
        finally:
            stop.set()
            ctl.stop()
            emu.stop()
            aws.stop()
    return result


def _wait(check, timeout_s: float, ctl: Controller, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while not check():
        if not ctl.alive():
            raise RuntimeError(f"the controller exited before {what}:\n{ctl.tail()}")
        if time.monotonic() > deadline:
            raise RuntimeError(f"the controller did not reach {what} within {timeout_s:.0f} s:\n{ctl.tail()}")
        time.sleep(0.2)


def _events(model) -> int:
    with model.lock:
        return len(model.store.list("events"))


def _sample(model, aws: Aws, opts: Options, rng: random.Random, k: int, result: Run, ctl: Controller) -> None:
    """One decision-latency sample: a burst owed Events, then one pod that needs a new node."""
    burst = []
    before = _events(model)
    with model.lock:
        for i in range(opts.events):  # 16 GPUs: no instance type has that many, so each pod fits no group
            p = _sized_pod(
                f"burst-{k}-{i}", {"cpu": "4", "memory": "16Gi", "nvidia.com/gpu": "16"}, i, rng, gpu=True
            )
            p.pop("status")
            burst.append(model.submit_pod(p))
    deadline = time.monotonic() + opts.sample_timeout_s
    while opts.events and _events(model) == before and time.monotonic() < deadline and ctl.alive():
        time.sleep(0.01)  # until the controller begins writing this burst's Events
    gpu = {"cpu": "32", "memory": "200Gi", "nvidia.com/gpu": "8"}
    pod = _sized_pod(f"decide-{k}", gpu, k, rng, gpu=True)
    pod.pop("status")
    with model.lock:
        model.submit_pod(pod)
        created = time.monotonic()
    deadline = created + opts.sample_timeout_s
    while (at := aws.first_write_after(created)) is None and time.monotonic() < deadline and ctl.alive():
        time.sleep(0.01)
    if at is None:
        result.missed += 1
    else:
        result.latencies_s.append(at - created)
    result.events_per_burst.append(_events(model) - before)
    with (
        model.lock
    ):  # the pod stays: it claims the instance it asked for (which never registers, see --boot-timeout)
        for p in burst:
            model.delete_pod(NAMESPACE, p["metadata"]["name"])


# --- baseline and report -------------------------------------------------------------------------------------------
def run(opts: Options, baseline: str | None = None, progress=lambda what: None) -> dict:
    from autoscaler.core.bench_sizes import checkout, compile_tree, resolve

    compile_tree(ROOT)
    runs = [run_once(ROOT, "current", opts, progress).summary()]
    if baseline:
        with checkout(baseline) as tree:
            runs.append(run_once(tree, f"baseline {resolve(baseline)}", opts, progress).summary())
    out = {"options": asdict(opts), "runs": runs}
    if baseline:
        cur, base = runs
        out["ratios"] = {
            f: round(cur[f] / base[f], 2) if cur.get(f) and base.get(f) else None
            for f in ("rss_start_mib", "rss_max_mib", "rss_end_mib", "latency_p50_s", "latency_max_s")
        }
    return out


def report(result: dict) -> str:
    o = result["options"]
    lines = [
        f"{o['nodes']:,} nodes, {o['pods']:,} kubectl-sized pods, {o['write_latency_ms']:g} ms per API write, "
        f"bursts of {o['events']} pods owed Events, scan interval {o['scan_interval']}",
        "",
        "| code | passes | s | start-up s | RSS start MiB | max | end | steady (growth) | decision p50 s | max | "
        "samples (missed) | Events per burst |",
        "|" + "---|" * 12,
    ]
    for r in result["runs"]:
        st = r["steady"]
        steady_text = "n/a" if st is None else f"{'yes' if st['steady'] else 'NO'} ({st['growth']:+.1%})"
        lines.append(
            f"| {r['code']} | {r['loops']:,} | {r['seconds']:,} | {r['startup_s']} | {r['rss_start_mib']} "
            f"| {r['rss_max_mib']} | {r['rss_end_mib']} | {steady_text} | {r['latency_p50_s']} | {r['latency_max_s']} "
            f"| {len(r['latencies_s'])} ({r['missed_samples']}) | {', '.join(map(str, r['events_per_burst']))} |"
        )
    if result.get("ratios"):
        lines += ["", "new/baseline: " + ", ".join(f"{k} {v}" for k, v in result["ratios"].items())]
    cur = result["runs"][0]
    if cur["rss_max_mib"] is not None:
        lines.append(
            f"targets: controller under 300 MB ({cur['rss_max_mib'] * 2**20 / 1e6:,.0f} MB at its peak: "
            f"{'meets' if cur['rss_max_mib'] * 2**20 < 300e6 else 'MISSES'}); decision latency at most 2 s "
            f"(max {cur['latency_max_s']} s: "
            f"{'meets' if cur['latency_max_s'] is not None and cur['latency_max_s'] <= 2 else 'MISSES'})"
        )
    return "\n".join(lines)


def _count(text: str) -> int:
    value = _positive(text) if text not in ("0",) else 0
    return value


def _interrupt(signum, frame):
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m autoscaler.bench.live", description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=_positive, default=Options.nodes)
    ap.add_argument(
        "--pods", type=_positive, default=Options.pods, help="running pods, spread over the nodes"
    )
    ap.add_argument("--loops", type=_positive, default=Options.loops, help="controller passes to watch")
    ap.add_argument("--samples", type=_positive, default=Options.samples, help="decision latency samples")
    ap.add_argument("--events", type=_count, default=Options.events, help="pods owed an Event in each burst")
    ap.add_argument("--write-latency-ms", type=float, default=Options.write_latency_ms)
    ap.add_argument("--scan-interval", default=Options.scan_interval)
    ap.add_argument(
        "--baseline", metavar="REF", help="also run REF's controller and print new/baseline ratios"
    )
    ap.add_argument("--json", action="store_true", help="print the result as one JSON object")
    args = ap.parse_args(argv)
    if args.write_latency_ms < 0:
        ap.error("--write-latency-ms: expected 0 or more milliseconds")
    opts = Options(args.nodes, args.pods, args.loops, args.samples, args.events, args.write_latency_ms,
                   args.scan_interval)  # fmt: skip
    started = time.monotonic()

    def progress(what: str) -> None:
        print(f"bench-live: [{time.monotonic() - started:6.1f} s] {what}", file=sys.stderr, flush=True)

    previous = signal.signal(signal.SIGTERM, _interrupt)  # the controller is stopped on the way out (finally)
    try:
        result = run(opts, args.baseline, progress)
    except (RuntimeError, ValueError) as e:
        print(f"bench-live: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("bench-live: interrupted", file=sys.stderr)
        return 130
    finally:
        signal.signal(signal.SIGTERM, previous)
    print(json.dumps(result) if args.json else report(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
