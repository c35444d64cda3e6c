"""``invoke bench-live``: the live controller on the real local control plane (docs/benchmarks.md, "Live controller").

    python -m demos.bench_live [--nodes 5000] [--pods 50000] [--loops 100] [--samples 5] [--events 500]
                               [--workers 16] [--out build/bench-live] [--json]

- The stack: ``localcluster.stack.Stack`` (etcd, kube-apiserver, kube-controller-manager, kube-scheduler as
  kubeadm configures them, and kwok), its folder under ``--out``. kwok holds thousands of nodes: their leases
  last 10 minutes (kwok renews each every 150 s, 33 writes a second at 5,000 nodes instead of 500) and the node
  lifecycle controller's grace period is stretched to match (``NODE_LEASE_S``).
- The cluster: ``--nodes`` m6i.8xlarge Node objects labelled ``kwok.x-k8s.io/node=fake`` (kwok marks them Ready
  and keeps their leases), of a static pool no Auto Scaling group manages (as the lab's own servers), and
  ``--pods`` kubectl-sized Job pods (``autoscaler.core.kubectl_sized``; the API server adds its own managed fields,
  kwok their status) bound to them round-robin, all created by ``--workers`` concurrent API writes.
- AWS: moto on loopback with the spec's tagged groups (``demos.live_sides.Aws``), every write timestamped.
- The real ``autoscaler run`` (admin kubeconfig, ``--boot-timeout 24h``), ``--scan-interval``, ``--batch-idle``
  and ``--lone-pod-idle`` at their defaults (10 s, 1 s, 100 ms) or the values given; with several
  (``--lone-pod-idle 100ms,1s``: the sample's lone pod planned at once, or held for the 1-s window as before;
  ``--scan-interval 10s,1s``: passes every 10 s and on events, or back to back, when a pod often comes while a
  pass is under way and waits for it), one controller after the other on the same loaded cluster, so both ends
  come from one run.
- Decision latency, ``--samples`` times spread over ``--loops`` passes: ``--events`` pending 16-GPU pods that fit
  no group (each owed a NotTriggerScaleUp Event); once the controller has begun writing their Events, one 8-GPU
  pod; the time from just before its create request to the first SetDesiredCapacity / UpdateAutoScalingGroup
  reaching moto is one sample. The burst is then deleted; the pod stays pending (its instance never registers).
- Memory: the RSS (``/proc/PID/status`` VmRSS) of the controller every 0.5 s, and of kube-apiserver, etcd and
  kwok, at the end of loading and at the end.

Figures are printed, nothing about time is asserted. Only processes this module starts are ever signalled.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import random
import signal
import statistics
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path

from autoscaler.core import generate, kubectl_sized
from autoscaler.options import RUN, parse_duration
from autoscaler.options import positive_count as _positive
from clusterspec.names import AUTOSCALER_NAMESPACE
from demos.live_sides import STATIC_TYPE, Aws, Controller, rss_mib
from localcluster.nodes import allocatable
from localcluster.stack import KWOK_LABEL, Stack

ROOT = Path(__file__).resolve().parents[1]
NAMESPACE = "lab"
NODE_LEASE_S = 600  # kwok renews a lease every quarter of it
NODE_GRACE = "15m"  # the node lifecycle controller's --node-monitor-grace-period, above the renew interval
POOL_LABEL = "research.cluster/pool"
WATCHED = ("kube-apiserver", "etcd", "kwok")
# the autoscaler's own defaults of the settings measured, as a report names them ("1s (default)")
DEFAULT = {
    o.flag: f"{o.default} (default)"
    for o in RUN
    if o.flag in ("--batch-idle", "--lone-pod-idle", "--scan-interval")
}


@dataclass
class Options:
    nodes: int = 5_000
    pods: int = 50_000
    loops: int = 100
    samples: int = 5
    events: int = 500
    workers: int = 16
    scan_interval: tuple[str | None, ...] = (None,)  # and its --scan-interval (None: its default, 10s)
    batch_idle: tuple[str | None, ...] = (
        None,
    )  # autoscaler run's --batch-idle, one controller each (None: its default)
    lone_pod_idle: tuple[str | None, ...] = (None,)  # and its --lone-pod-idle: one controller per pair
    ready_timeout_s: float = 600.0
    sample_timeout_s: float = 120.0


@dataclass
class Result:
    load_s: dict = field(default_factory=dict)
    startup_s: float = 0.0
    loops: int = 0
    seconds: float = 0.0
    rss_mib: list[tuple[int, float]] = field(default_factory=list)
    latencies_s: list[float] = field(default_factory=list)
    create_s: list[float] = field(default_factory=list)  # the 8-GPU pod's create request, sent to answered
    missed: int = 0
    events_per_burst: list[int] = field(default_factory=list)
    control_plane_mib: dict = field(default_factory=dict)  # {"loaded"|"end": {process: MiB}}
    write_errors: int = 0
    pass_mean_s: float | None = None  # autoscaler_loop_duration_seconds: sum over count
    pass_cpu_mean_s: float | None = None  # autoscaler_pass_cpu_seconds: the pass thread's CPU, sum over count
    phase_mean_s: dict = field(
        default_factory=dict
    )  # autoscaler_pass_phase_seconds: sum over count, by phase
    why_missed: list[str] = field(default_factory=list)  # the missed samples' pod Events

    def summary(self) -> dict:
        rss = [m for _, m in self.rss_mib]
        lat = sorted(self.latencies_s)
        return {
            "load_s": {k: round(v, 1) for k, v in self.load_s.items()},
            "startup_s": round(self.startup_s, 1),
            "loops": self.loops,
            "seconds": round(self.seconds, 1),
            "rss_start_mib": round(rss[0]) if rss else None,
            "rss_max_mib": round(max(rss)) if rss else None,
            "rss_end_mib": round(rss[-1]) if rss else None,
            "latency_p50_s": round(statistics.median(lat), 3) if lat else None,
            "latency_p95_s": round(_quantile(lat, 0.95), 3) if lat else None,
            "latency_max_s": round(lat[-1], 3) if lat else None,
            "latencies_s": [round(x, 3) for x in self.latencies_s],
            "create_request_s": [round(x, 3) for x in self.create_s],
            "missed_samples": self.missed,
            "events_per_burst": self.events_per_burst,
            "control_plane_mib": self.control_plane_mib,
            "write_errors": self.write_errors,
            "why_missed": self.why_missed,
            "pass_mean_s": round(self.pass_mean_s, 3) if self.pass_mean_s is not None else None,
            "pass_cpu_mean_s": round(self.pass_cpu_mean_s, 3) if self.pass_cpu_mean_s is not None else None,
            "phase_mean_s": {k: round(v, 4) for k, v in self.phase_mean_s.items()},
        }


def _quantile(sorted_values: list[float], q: float) -> float:
    """Nearest-rank quantile (the sample at or above ``q`` of the samples)."""
    k = max(0, min(len(sorted_values) - 1, int(-(-q * len(sorted_values) // 1)) - 1))
    return sorted_values[k]


# --- the objects ---------------------------------------------------------------------------------------------------
def node_body(i: int) -> dict:
    """One static m6i.8xlarge kwok node as a kubelet registers it (capacity in its status)."""
    capacity, alloc = allocatable(STATIC_TYPE)
    name = f"static-{i:05d}"
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": {
                KWOK_LABEL: "fake",
                POOL_LABEL: "cpu",
                "kubernetes.io/hostname": name,
                "kubernetes.io/os": "linux",
                "kubernetes.io/arch": "amd64",
                "type": "kwok",
                "node.kubernetes.io/instance-type": STATIC_TYPE,
                "topology.kubernetes.io/region": "lab",
                "topology.kubernetes.io/zone": "lab-a",
            },
            "annotations": {"node.alpha.kubernetes.io/ttl": "0", "kwok.x-k8s.io/node": "fake"},
        },  # fmt: skip
        "spec": {},
        "status": {"capacity": capacity, "allocatable": alloc},
    }


SERVER_SET = (
    "uid",
    "resourceVersion",
    "creationTimestamp",
    "managedFields",
    "generateName",
    "ownerReferences",
)


def pod_body(name: str, requests: dict, index: int, rng: random.Random, **kw) -> dict:
    """A kubectl-sized pod as its creator sends it: no server-set metadata, no status, no owner (its Job does not
    exist here: the garbage collector would delete the pod)."""
    sized = kubectl_sized.pod(generate.pod(name, requests, namespace=NAMESPACE, **kw), index, rng)
    for k in SERVER_SET:
        sized["metadata"].pop(k, None)
    sized.pop("status", None)
    sized["spec"].pop("nodeName", None)
    if kw.get("node_name"):
        sized["spec"]["nodeName"] = kw["node_name"]
    return {"apiVersion": "v1", "kind": "Pod", **sized}


def claim_and_volume() -> tuple[dict, dict]:
    """The claim every kubectl-sized pod names, bound to its volume (as the pods' spec expects)."""
    claim, volume = kubectl_sized.data_claim(NAMESPACE)
    for obj in (claim, volume):
        for k in ("uid", "resourceVersion", "creationTimestamp", "annotations", "finalizers"):
            obj["metadata"].pop(k, None)  # the PV controller binds them and says so itself
        obj.pop("status", None)
    volume["spec"]["claimRef"].pop("uid", None)
    return claim, volume


# --- the API -------------------------------------------------------------------------------------------------------
class Api:
    """The admin's client with a pool as wide as the writers."""

    def __init__(self, kubeconfig: Path, workers: int) -> None:
        from kubernetes import client, config

        cfg = client.Configuration()
        config.load_kube_config(str(kubeconfig), client_configuration=cfg)
        cfg.connection_pool_maxsize = workers + 4
        self.client = client.ApiClient(cfg)
        self.core = client.CoreV1Api(self.client)
        # the bulk writes as bytes on a pool of their own: the client's per-call validation and serialization cost
        # more CPU than the API server's handling of the write, on a machine of 2 cores
        import urllib3

        self.host = cfg.host
        self.pool = urllib3.PoolManager(
            num_pools=2, maxsize=workers + 4, cert_file=cfg.cert_file, key_file=cfg.key_file,
            ca_certs=cfg.ssl_ca_cert, cert_reqs="CERT_REQUIRED",
        )  # fmt: skip

    def post(self, path: str, body: dict) -> tuple[int, str]:
        r = self.pool.request("POST", f"{self.host}{path}", body=json.dumps(body).encode(),
                              headers={"Content-Type": "application/json"}, preload_content=True)  # fmt: skip
        return r.status, "" if r.status < 300 else r.data.decode(errors="replace")

    def create_all(self, make, count: int, workers: int, progress, what: str) -> int:
        """``make(i)`` -> (kind, body) for i < count, written by ``workers`` threads; the errors counted (a 409 on
        a retry is no error)."""
        errors = 0
        done = 0
        lock = threading.Lock()
        t0 = time.monotonic()

        def one(i: int) -> None:
            nonlocal errors, done
            kind, body = make(i)
            path = "/api/v1/nodes" if kind == "Node" else f"/api/v1/namespaces/{NAMESPACE}/pods"
            for attempt in range(5):
                status, text = self.post(path, body)
                if status < 300 or (status == 409 and attempt):
                    break
                if status not in (429, 500, 503, 504) or attempt == 4:
                    with lock:
                        errors += 1
                    if errors <= 3:
                        progress(f"{what} {i}: {status}: {text[:200]}")
                    break
                time.sleep(0.5 * (attempt + 1))
            with lock:
                done += 1
                if done % 10_000 == 0:
                    progress(f"{done:,} of {count:,} {what}s ({done / (time.monotonic() - t0):,.0f}/s)")

        with ThreadPoolExecutor(workers) as pool:
            list(pool.map(one, range(count)))
        return errors

    def count(self, what: str, **kw) -> int:
        """Objects listed in pages of 500 (the metadata only)."""
        n, token = 0, None
        lister = self.core.list_node if what == "nodes" else self.core.list_pod_for_all_namespaces
        while True:
            page = lister(limit=500, _continue=token, **kw)
            n += len(page.items)
            token = page.metadata._continue
            if not token:
                return n


class EventCounter:
    """NotTriggerScaleUp Events in the pods' namespace as a watch delivers them."""

    def __init__(self, api: Api) -> None:
        self.api = api
        self.count = 0
        self.by_burst: dict[
            str, int
        ] = {}  # per burst (its pods' name less the index): a sample waits for its own
        self._stop = threading.Event()
        threading.Thread(target=self._run, daemon=True, name="events").start()

    def _run(self) -> None:
        from kubernetes import watch

        while not self._stop.is_set():
            try:
                w = watch.Watch()
                for ev in w.stream(self.api.core.list_namespaced_event, NAMESPACE, timeout_seconds=60,
                                   field_selector="reason=NotTriggerScaleUp"):  # fmt: skip
                    if ev["type"] in ("ADDED", "MODIFIED"):
                        self.count += 1
                        burst = _burst_of(ev["object"])
                        self.by_burst[burst] = self.by_burst.get(burst, 0) + 1
                    if self._stop.is_set():
                        return
            except Exception:  # noqa: BLE001 - a dropped watch is opened again
                time.sleep(0.5)

    def stop(self) -> None:
        self._stop.set()


def _burst_of(event) -> str:
    """The burst an Event's pod belongs to: its name less the index (``burst-1-17`` -> ``burst-1``)."""
    name = getattr(getattr(event, "involved_object", None), "name", None) or ""
    return name.rsplit("-", 1)[0]


# --- one run -------------------------------------------------------------------------------------------------------
def start_stack(workdir: Path) -> Stack:
    return Stack(
        workdir,
        kwok_lease_s=NODE_LEASE_S,
        overrides={"kube-controller-manager": {"node-monitor-grace-period": NODE_GRACE}},
    ).start(timeout_s=120)


def _control_plane(stack: Stack) -> dict[str, float]:
    out = {}
    for name in WATCHED:
        proc = stack.processes.running.get(name)
        if proc is not None and (m := rss_mib(proc.pid)) is not None:
            out[name] = round(m)
    return out


def _wait_namespace(api: Api, ns: str, timeout_s: float = 60) -> None:
    """ServiceAccount admission refuses pods until the controller-manager has made ``default``."""
    from kubernetes.client.exceptions import ApiException

    deadline = time.monotonic() + timeout_s
    while True:
        try:
            api.core.read_namespaced_service_account("default", ns)
            return
        except ApiException:
            if time.monotonic() > deadline:
                raise RuntimeError(
                    f"namespace {ns}: no default ServiceAccount after {timeout_s:.0f} s"
                ) from None
            time.sleep(0.2)


def _accounts(api: Api) -> None:
    """The pods' namespace ready for pods, with the account the kubectl-sized pods run as."""
    _wait_namespace(api, NAMESPACE)
    trainer = kubectl_sized.pod(generate.pod("x", {}, namespace=NAMESPACE), 0, random.Random(0))
    api.core.create_namespaced_service_account(
        NAMESPACE, {"metadata": {"name": trainer["spec"]["serviceAccountName"]}}
    )


def load(stack: Stack, api: Api, opts: Options, result: Result, progress) -> None:
    rng = random.Random(1)
    for ns in (NAMESPACE, AUTOSCALER_NAMESPACE):
        api.core.create_namespace({"metadata": {"name": ns}})
    _accounts(api)
    claim, volume = claim_and_volume()
    api.core.create_persistent_volume(volume)
    api.core.create_namespaced_persistent_volume_claim(NAMESPACE, claim)
    t0 = time.monotonic()
    result.write_errors += api.create_all(lambda i: ("Node", node_body(i)), opts.nodes, opts.workers, progress,
                                          "node")  # fmt: skip
    result.load_s["nodes"] = time.monotonic() - t0
    progress(f"{opts.nodes:,} nodes created in {result.load_s['nodes']:.0f} s; creating {opts.pods:,} pods")
    t0 = time.monotonic()
    requests = {"cpu": "2500m", "memory": "10Gi"}

    def pod(i: int):
        return "Pod", pod_body(f"run-{i}", requests, i, rng, node_name=f"static-{i % opts.nodes:05d}")

    result.write_errors += api.create_all(pod, opts.pods, opts.workers, progress, "pod")
    result.load_s["pods"] = time.monotonic() - t0
    progress(
        f"{opts.pods:,} pods created in {result.load_s['pods']:.0f} s; waiting for kwok to mark nodes Ready"
    )
    t0 = time.monotonic()
    deadline = t0 + opts.ready_timeout_s
    while True:
        ready = _ready_nodes(api)
        if ready >= opts.nodes:
            break
        if time.monotonic() > deadline:
            raise RuntimeError(f"only {ready:,} of {opts.nodes:,} nodes Ready after {opts.ready_timeout_s:.0f} s: "
                               f"{stack.processes.tail('kwok')}")  # fmt: skip
        stack.processes.check()
        time.sleep(2)
    result.load_s["ready"] = time.monotonic() - t0
    _wait_claim_bound(api, claim["metadata"]["name"], deadline)
    running = api.count("pods", field_selector="status.phase=Running")
    progress(f"all nodes Ready ({result.load_s['ready']:.0f} s more); {running:,} pods Running")
    result.load_s["running_pods"] = running


def _wait_claim_bound(api: Api, name: str, deadline: float) -> None:
    """Until the PV controller has completed the binding of the pods' claim (``pv.kubernetes.io/bind-completed``):
    before, a pending pod that names it waits on it ("pod has unbound immediate PersistentVolumeClaims"), and the
    controller retries a conflicting bind only on its 15-s resync, so a first sample taken meanwhile measured the
    binding (14 to 17 s), not the autoscaler."""
    while True:
        claim = api.core.read_namespaced_persistent_volume_claim(name, NAMESPACE)
        if (claim.metadata.annotations or {}).get(
            "pv.kubernetes.io/bind-completed"
        ) and claim.spec.volume_name:
            return
        if time.monotonic() > deadline:
            raise RuntimeError(f"the claim {NAMESPACE}/{name} is not bound: {claim.status.phase}")
        time.sleep(0.5)


def _ready_nodes(api: Api) -> int:
    n, token = 0, None
    while True:
        page = api.core.list_node(limit=500, _continue=token, _preload_content=False)
        doc = json.loads(page.data)
        for node in doc["items"]:
            conds = (node.get("status") or {}).get("conditions") or ()
            n += any(c["type"] == "Ready" and c["status"] == "True" for c in conds)
        token = doc["metadata"].get("continue")
        if not token:
            return n


def run(opts: Options, out: Path, progress=lambda what: None) -> dict:
    """Load the stack once, then measure the controller once per ``--batch-idle`` setting (a fresh process each,
    the same cluster): both ends of the setting from one run."""
    from autoscaler.core.bench_sizes import compile_tree

    compile_tree(ROOT)
    loading = Result()
    out.mkdir(parents=True, exist_ok=True)
    stack_dir = Path(tempfile.mkdtemp(prefix="stack-", dir=out))
    progress(f"starting the control plane under {stack_dir}")
    stack = start_stack(stack_dir)
    aws = None
    results: list[tuple[str | None, Result]] = []
    try:
        api = Api(stack.admin_kubeconfig, opts.workers)
        load(stack, api, opts, loading, progress)
        loading.control_plane_mib["loaded"] = _control_plane(stack)
        aws = Aws()
        for k, (idle, lone, scan) in enumerate(settings(opts)):
            result = Result(load_s=dict(loading.load_s), write_errors=loading.write_errors,
                            control_plane_mib=dict(loading.control_plane_mib))  # fmt: skip
            results.append(((idle, lone, scan), result))
            _measure(stack, api, aws, opts, k, out / f"controller-{k}.log", result, progress)
    finally:
        if aws:
            aws.stop()
        stack.stop()
    runs = [{"batch_idle": idle or DEFAULT["--batch-idle"], "lone_pod_idle": lone or DEFAULT["--lone-pod-idle"],
             "scan_interval": scan or DEFAULT["--scan-interval"], "setting": setting_label(opts, idle, lone, scan),
             **r.summary()} for (idle, lone, scan), r in results]  # fmt: skip
    return {"options": asdict(opts), "run": runs[0] if runs else loading.summary(), "runs": runs}


def settings(opts: Options) -> list[tuple[str | None, str | None, str | None]]:
    """The controllers to measure, one after the other: each (--batch-idle, --lone-pod-idle, --scan-interval)."""
    return [
        (b, lone, scan)
        for scan in opts.scan_interval or (None,)
        for b in opts.batch_idle or (None,)
        for lone in opts.lone_pod_idle or (None,)
    ]


def setting_label(opts: Options, idle: str | None, lone: str | None, scan: str | None = None) -> str:
    """A run's name in the report: its batch idle, and its lone-pod idle and scan interval when given."""
    label = idle or DEFAULT["--batch-idle"]
    if opts.lone_pod_idle not in ((), (None,)):
        label += f", lone pod {lone or DEFAULT['--lone-pod-idle']}"
    if opts.scan_interval not in ((), (None,)):
        label += f", scan {scan or DEFAULT['--scan-interval']}"
    return label


def _measure(stack: Stack, api: Api, aws: Aws, opts: Options, setting: int, log: Path, result: Result,
             progress) -> None:  # fmt: skip
    """One controller process at the ``setting``-th pair of ``settings``: its passes, memory and
    decision-latency samples."""
    idle, lone, scan = settings(opts)[setting]
    ctl = None
    stop = threading.Event()
    counter = None
    try:
        given = (("--batch-idle", idle), ("--lone-pod-idle", lone), ("--scan-interval", scan))
        flags = tuple(
            part for flag, value in given if value for part in (flag, value)
        )  # the rest: its defaults
        ctl = Controller(ROOT, stack.admin_kubeconfig, aws.url, None, log, flags)
        counter = EventCounter(api)
        t0 = time.monotonic()
        progress(f"controller started ({setting_label(opts, idle, lone, scan)}); waiting for its first pass")
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
        rng = random.Random(2)
        for k, mark in enumerate(marks):
            _wait(lambda m=mark: (ctl.loops() or 0) >= m, opts.sample_timeout_s * 10, ctl, f"pass {mark}")
            progress(f"pass {ctl.loops()}: decision latency sample {k + 1}/{opts.samples}")
            _sample(api, aws, counter, opts, rng, k, result, ctl, setting)
        end = start_loops + opts.loops
        _wait(lambda: (ctl.loops() or 0) >= end, opts.sample_timeout_s * 10, ctl, f"pass {end}")
        result.loops = (ctl.loops() or 0) - start_loops
        result.seconds = time.monotonic() - t0 - result.startup_s
        result.control_plane_mib["end"] = _control_plane(stack)
        result.pass_mean_s, result.phase_mean_s, result.pass_cpu_mean_s = _pass_mean(ctl)
    finally:
        stop.set()
        if counter:
            counter.stop()
        if ctl:
            ctl.stop()


def _pass_mean(ctl: Controller) -> tuple[float | None, dict[str, float], float | None]:
    """The mean pass, the mean of each of its phases (autoscaler_pass_phase_seconds) and the mean CPU of the pass's
    thread (autoscaler_pass_cpu_seconds), from /metrics."""
    import urllib.request

    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{ctl.metrics_port}/metrics", timeout=5) as r:
            text = r.read().decode()
    except OSError:
        return None, {}, None
    return pass_means(text)


MEANS = ("autoscaler_loop_duration_seconds", "autoscaler_pass_phase_seconds", "autoscaler_pass_cpu_seconds")


def pass_means(text: str) -> tuple[float | None, dict[str, float], float | None]:
    """From a /metrics text: the mean of autoscaler_loop_duration_seconds, of each phase's
    autoscaler_pass_phase_seconds and of autoscaler_pass_cpu_seconds (prometheus_client's parser)."""
    from prometheus_client.parser import text_string_to_metric_families

    sums: dict[tuple[str, str], dict[str, float]] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:  # families untyped in the text are named for each sample
            name, _, part = sample.name.rpartition("_")
            if name in MEANS and part in (
                "sum",
                "count",
            ):
                sums.setdefault((name, sample.labels.get("phase", "")), {})[part] = sample.value

    def mean(key: tuple[str, str]) -> float | None:
        v = sums.get(key, {})
        return v["sum"] / v["count"] if v.get("count") else None

    phases = {phase: m for (name, phase), _ in sums.items()
              if name == "autoscaler_pass_phase_seconds" and (m := mean((name, phase))) is not None}  # fmt: skip
    return mean(("autoscaler_loop_duration_seconds", "")), phases, mean(("autoscaler_pass_cpu_seconds", ""))


def _wait(check, timeout_s: float, ctl: Controller, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while not check():
        if not ctl.alive():
            raise RuntimeError(f"the controller exited before {what}:\n{ctl.tail()}")
        if time.monotonic() > deadline:
            raise RuntimeError(f"the controller did not reach {what} within {timeout_s:.0f} s:\n{ctl.tail()}")
        time.sleep(0.2)


def _sample(api: Api, aws: Aws, counter: EventCounter, opts: Options, rng: random.Random, k: int, result: Result,
            ctl: Controller, setting: int = 0) -> None:  # fmt: skip
    """One decision-latency sample: a burst owed Events, then one pod that needs a new node (names carry the
    setting's number: every setting's pods stay on the same cluster)."""
    before = counter.count
    tag = f"{setting}-{k}" if setting else str(k)
    burst = [f"burst-{tag}-{i}" for i in range(opts.events)]
    own = f"burst-{tag}"  # the earlier bursts' Events may still be coming: this sample waits for its own
    big = {
        "cpu": "4",
        "memory": "16Gi",
        "nvidia.com/gpu": "16",
    }  # no instance type has 16 GPUs: fits no group
    result.write_errors += api.create_all(
        lambda i: ("Pod", pod_body(burst[i], big, i, rng, gpu=True)), len(burst), opts.workers, lambda w: None,
        "burst pod",
    )  # fmt: skip
    deadline = time.monotonic() + opts.sample_timeout_s
    while opts.events and not counter.by_burst.get(own) and time.monotonic() < deadline and ctl.alive():
        time.sleep(0.01)  # until the controller begins writing this burst's Events
    gpu = {"cpu": "32", "memory": "200Gi", "nvidia.com/gpu": "8"}
    body = pod_body(f"decide-{tag}", gpu, k, rng, gpu=True)
    created = time.monotonic()
    api.core.create_namespaced_pod(NAMESPACE, body, _preload_content=False)
    result.create_s.append(time.monotonic() - created)
    deadline = created + opts.sample_timeout_s
    while (at := aws.first_write_after(created)) is None and time.monotonic() < deadline and ctl.alive():
        time.sleep(0.005)
    if at is None:
        result.missed += 1
        events = api.core.list_namespaced_event(NAMESPACE, field_selector=f"involvedObject.name=decide-{tag}")
        result.why_missed.extend(sorted({f"{e.reason}: {e.message}"[:300] for e in events.items}))
    else:
        result.latencies_s.append(at - created)
    result.events_per_burst.append(counter.count - before)
    with ThreadPoolExecutor(opts.workers) as pool:  # the pod stays: it claims the instance it asked for
        list(pool.map(lambda n: api.core.delete_namespaced_pod(n, NAMESPACE, grace_period_seconds=0,
                                                               _preload_content=False), burst))  # fmt: skip


# --- report --------------------------------------------------------------------------------------------------------
def report(result: dict) -> str:
    o = result["options"]
    runs = result.get("runs") or [{"batch_idle": DEFAULT["--batch-idle"], **result["run"]}]
    first = runs[0]
    labels = ", ".join(_label(r) for r in runs)
    lines = [
        f"{o['nodes']:,} kwok nodes, {o['pods']:,} kubectl-sized pods on the real control plane; bursts of "
        f"{o['events']} pods owed Events; settings (batch idle, and what else was given): {labels} (one "
        "controller each, in this order, on the same cluster)",
        f"loading: nodes {first['load_s'].get('nodes')} s, pods {first['load_s'].get('pods')} s, Ready "
        f"{first['load_s'].get('ready')} s ({first['load_s'].get('running_pods'):,} pods Running); write errors "
        f"{first['write_errors']}",
        "",
        "| setting | decision p50 s | p95 | max | samples (missed) | passes (s) | mean pass s | "
        "autoscaler RSS MiB first / max / end | kube-apiserver MiB | etcd MiB | kwok MiB |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in runs:
        cp = r["control_plane_mib"]
        lines.append(
            f"| {_label(r)} | {r['latency_p50_s']} | {r['latency_p95_s']} | {r['latency_max_s']} | "
            f"{len(r['latencies_s'])} ({r['missed_samples']}) | {r['loops']:,} ({r['seconds']}) | "
            f"{r['pass_mean_s']} | {r['rss_start_mib']} / {r['rss_max_mib']} / {r['rss_end_mib']} | "
            + " | ".join(_mem(cp, p) for p in WATCHED)
            + " |"
        )
    lines.append("")
    for r in runs:
        lines.append(
            f"batch idle {_label(r)}: controller start-up {r['startup_s']} s; latencies s: "
            f"{', '.join(map(str, r['latencies_s']))}; the create request itself: "
            f"{', '.join(map(str, r['create_request_s']))}; Events per burst by the scaling call: "
            f"{', '.join(map(str, r['events_per_burst']))}"
        )
        lines += [f"missed: {w}" for w in r["why_missed"]]
        if r.get("phase_mean_s"):
            lines.append(
                f"batch idle {_label(r)}: mean pass by phase s: "
                + ", ".join(f"{k} {v}" for k, v in sorted(r["phase_mean_s"].items(), key=lambda kv: -kv[1]))
                + (
                    f"; the pass thread's own CPU {r['pass_cpu_mean_s']} s of the mean pass's {r['pass_mean_s']} s"
                    " (the rest waits on round trips, for a core or for the interpreter)"
                    if r.get("pass_cpu_mean_s") is not None
                    else ""
                )
            )
        if r["rss_max_mib"] is not None and r["latency_p50_s"] is not None:
            mb = r["rss_max_mib"] * 2**20 / 1e6
            lines.append(
                f"targets at batch idle {_label(r)}: decision p50 under 0.5 s ({r['latency_p50_s']} s: "
                f"{'meets' if r['latency_p50_s'] < 0.5 else 'MISSES'}); autoscaler under 300 MB ({mb:,.0f} MB at "
                f"its peak: {'meets' if mb < 300 else 'MISSES'})"
            )
    return "\n".join(lines)


def _label(run: dict) -> str:
    return run.get("setting") or run["batch_idle"]


def _mem(cp: dict, proc: str) -> str:
    loaded, end = cp.get("loaded", {}).get(proc), cp.get("end", {}).get(proc)
    return f"{loaded} loaded, {end} end"


def _interrupt(signum, frame):
    raise KeyboardInterrupt


def _durations(ap: argparse.ArgumentParser, flag: str, given: str | None, floor_s: float, floor: str,
               example: str) -> tuple[str | None, ...]:  # fmt: skip
    """A comma-separated list of durations, each at least ``floor_s`` (shown as ``floor``); (None,) when not
    given (the autoscaler's default). A bad one ends the command with one line (argparse's exit status 2)."""
    values = tuple(v.strip() for v in given.split(",")) if given else (None,)
    least = f"of at least {floor} " if floor else ""
    for v in values:
        try:
            if v is not None and parse_duration(v) < floor_s:
                raise ValueError(f"{v!r} is less than {floor}")
        except ValueError as e:
            ap.error(f"{flag} {given!r}: {e}; give durations {least}separated by commas, e.g. {example}")
    return values


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m demos.bench_live", description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=_positive, default=Options.nodes, help="kwok nodes (default 5,000)")
    ap.add_argument(
        "--pods", type=_positive, default=Options.pods, help="running pods, spread over the nodes"
    )
    ap.add_argument("--loops", type=_positive, default=Options.loops, help="controller passes to watch")
    ap.add_argument("--samples", type=_positive, default=Options.samples, help="decision latency samples")
    ap.add_argument("--events", type=int, default=Options.events, help="pods owed an Event in each burst")
    ap.add_argument("--workers", type=_positive, default=Options.workers, help="concurrent API writes")
    ap.add_argument("--out", default=str(ROOT / "build" / "bench-live"), help="the stack's folder, the logs")
    ap.add_argument("--json", action="store_true", help="print the result as one JSON object")
    ap.add_argument(
        "--batch-idle",
        help="the autoscaler's --batch-idle (default: its own, 1s); several, "
        "comma-separated (e.g. 1s,250ms): one controller each on the same loaded cluster",
    )
    ap.add_argument(
        "--lone-pod-idle",
        help="the autoscaler's --lone-pod-idle (default: its own, 100ms); several, comma-separated (e.g. "
        "100ms,1s): one controller each (and each --batch-idle) on the same loaded cluster",
    )
    ap.add_argument(
        "--scan-interval",
        help="the autoscaler's --scan-interval (default: its own, 10s); several, comma-separated (10s,1s: 1s runs "
        "passes back to back, and a pod often waits for the pass under way): one controller each",
    )
    ap.add_argument("--churn", type=_positive, metavar="PODS",
                    help="instead: the churn scenario, PODS pending pods each deleted 2 s after creation")  # fmt: skip
    ap.add_argument("--boot-s", type=float, default=30.0, help="with --churn: seconds from launch to Node")
    args = ap.parse_args(argv)
    if args.events < 0:
        ap.error("--events: expected 0 or more pods")
    # each checked before the loading (minutes), as the autoscaler would check it
    idle = _durations(ap, "--batch-idle", args.batch_idle, 0.05, "50ms", "1s,250ms")
    lone = _durations(ap, "--lone-pod-idle", args.lone_pod_idle, 0.0, "", "100ms,1s")
    scan = _durations(ap, "--scan-interval", args.scan_interval, 1.0, "1s", "10s,1s")
    opts = Options(
        args.nodes,
        args.pods,
        args.loops,
        args.samples,
        args.events,
        args.workers,
        scan_interval=scan,
        batch_idle=idle,
        lone_pod_idle=lone,
    )
    started = time.monotonic()

    def progress(what: str) -> None:
        print(f"bench-live: [{time.monotonic() - started:6.1f} s] {what}", file=sys.stderr, flush=True)

    previous = signal.signal(signal.SIGTERM, _interrupt)  # the processes are stopped on the way out (finally)
    try:
        if args.churn:
            from demos.bench_churn import churn, churn_report

            figures = churn(
                args.churn, 2.0, 60.0, args.boot_s, args.workers, Path(args.out).resolve(), progress
            )
            print(json.dumps(figures) if args.json else churn_report(figures))
            return 0
        result = run(opts, Path(args.out).resolve(), progress)
    except (RuntimeError, ValueError) as e:
        print(f"bench-live: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("bench-live: interrupted", file=sys.stderr)
        return 130
    finally:
        signal.signal(signal.SIGTERM, previous)
    result["run"]["wall_s"] = round(time.monotonic() - started, 1)
    print(json.dumps(result) if args.json else report(result))
    with contextlib.suppress(OSError):
        (Path(args.out) / "result.json").write_text(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
