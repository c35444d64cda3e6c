"""The live controller's pass in one process, without the real stack (docs/benchmarks.md, "A live pass").

    python -m demos.bench_pass [--nodes 5000] [--pods 50000] [--passes 10] [--changes 100] [--profile FILE]

The real :class:`~autoscaler.adapters.kubernetes.KubeCluster` with its informers' caches filled from list pages of
objects of the size a real API server returns (``--nodes`` m6i.8xlarge Nodes as kwok keeps them, ``--pods``
kubectl-sized Job pods bound to them round-robin: ``autoscaler.core.kubectl_sized``, as ``invoke bench-live``
creates them), decoded as the informers decode them (``Informer.sync`` on pages of 500); only the ConfigMaps, the
Events and the fresh read of the pending pods stay in memory (the state as written, Events dropped, the read
answered from the cache). AWS: the spec's groups (cluster.yaml) in memory, every write recorded.

Each measured pass: ``--changes`` bound pods change (a new resourceVersion, as a kubelet's status update does) and
one new 8-GPU pod arrives pending, through the pods informer's watch path (``Informer._apply``); then the
Controller's ``run_once``, as ``autoscaler run`` calls it. Printed: the CPU seconds of each pass (this process's
``time.process_time``; nothing else runs in it), whether the pass wrote the new desired capacity, and the
process's RSS and peak RSS (``/proc/self/status``). ``--profile FILE``: cProfile of the measured passes. Figures
are printed, never asserted.
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import json
import pstats
import random
import statistics
import time
from types import SimpleNamespace

import yaml

from autoscaler import malloc
from autoscaler.adapters.events import EventWriter
from autoscaler.adapters.kubernetes import KubeCluster
from autoscaler.controller import Controller, ControllerConfig
from autoscaler.core import generate, kubectl_sized
from autoscaler.core.config import PlannerConfig
from autoscaler.core.gcpause import FullCollection
from autoscaler.options import positive_count
from demos.bench_live import NAMESPACE, node_body
from demos.live_sides import REGIONS
from simulator.model.spec_groups import groups_from_spec

PAGE = 500
GPU = {"cpu": "32", "memory": "200Gi", "nvidia.com/gpu": "8"}
RUNNING = {"cpu": "2500m", "memory": "10Gi"}


def _status(path: str) -> dict[str, float]:
    out = {}
    with open(path) as f:
        for line in f:
            if line.startswith(("VmRSS:", "VmHWM:")):
                out[line.split(":")[0]] = int(line.split()[1]) / 1024
    return out


def _lister(count: int, make):
    """A list call answering pages of ``PAGE`` objects ``make(i)`` for i < ``count``, each made when asked for (so
    the process never holds more than a page of whole objects)."""

    def call(limit=None, _continue=None, **_):
        start = int(_continue or 0)
        end = min(count, start + PAGE)
        meta = {"resourceVersion": "1", "continue": str(end) if end < count else None}
        return SimpleNamespace(
            data=json.dumps({"metadata": meta, "items": [make(i) for i in range(start, end)]}).encode()
        )

    return call


def kwok_node(i: int) -> dict:
    """A static node as the API server returns it once kwok keeps it (server fields, Ready)."""
    n = node_body(i)
    at = "2026-12-07T10:00:00Z"
    n["metadata"].update(uid=f"node-{i:08d}", resourceVersion=str(100 + i), creationTimestamp=at)
    n["status"]["conditions"] = [
        {"type": t, "status": "True" if t == "Ready" else "False", "lastHeartbeatTime": at,
         "lastTransitionTime": at, "reason": "KubeletReady" if t == "Ready" else "KubeletHasSufficient", "message": ""}
        for t in ("Ready", "MemoryPressure", "DiskPressure", "PIDPressure")
    ]  # fmt: skip
    n["status"]["nodeInfo"] = {"kubeletVersion": "fake", "kernelVersion": "6.1", "osImage": "kwok"}
    return n


def running_pod(i: int, nodes: int, rng: random.Random) -> dict:
    p = kubectl_sized.pod(generate.pod(f"run-{i}", RUNNING, namespace=NAMESPACE, node_name=f"static-{i % nodes:05d}"),
                          i, rng)  # fmt: skip
    p["status"]["phase"] = "Running"
    return p


def pending_pod(name: str, i: int, rng: random.Random, created: str) -> dict:
    p = kubectl_sized.pod(generate.pod(name, GPU, namespace=NAMESPACE, gpu=True), i, rng)
    p["metadata"].update(creationTimestamp=created, resourceVersion=str(5_000_000 + i))
    return p


class Cloud:
    """The spec's groups in memory; ``set_desired`` is recorded (no instance launches: the pods stay pending)."""

    def __init__(self, groups: list[dict]):
        self.groups = {g["name"]: g for g in groups}
        self.writes: list[tuple[str, int]] = []
        self.unread_regions: list[str] = []

    def list_groups(self):
        return [dict(g, instances=list(g["instances"])) for g in self.groups.values()]

    def set_desired(self, group, desired):
        self.groups[group]["desired"] = desired
        self.writes.append((group, desired))

    def terminate_instance(self, group, instance_id):
        raise AssertionError("no scale-down here: no instance exists")

    def scaling_failures(self, since):
        return []


class _NoSink:
    def create(self, event):
        return event

    def patch(self, namespace, name, patch):
        return patch


class Cluster(KubeCluster):
    """The real adapter; its ConfigMaps in memory, the fresh pending read answered from the cache."""

    state: dict = {}  # noqa: RUF012 - replaced per instance on write

    def read_state(self):
        return dict(self.state)

    def write_state(self, data):
        self.state = dict(data)

    def write_status(self, data):
        pass

    def read_pending_pods(self):
        return [p for p in self.informers["pods"].items() if (p.get("status") or {}).get("phase") == "Pending"
                and not (p.get("spec") or {}).get("nodeName")]  # fmt: skip


def build(nodes: int, pods: int) -> tuple[Cluster, Cloud, Controller]:
    from kubernetes import client

    rng = random.Random(1)
    claim, volume = kubectl_sized.data_claim(NAMESPACE)
    kube = Cluster(client.ApiClient(), namespace="research-autoscaler")
    lists = {"pods": (pods, lambda i: running_pod(i, nodes, rng)), "nodes": (nodes, kwok_node),
             "pvcs": (1, lambda i: claim), "pvs": (1, lambda i: volume)}  # fmt: skip
    for name, informer in kube.informers.items():
        informer._list = _lister(*lists.get(name, (0, None)))
    kube.sync()
    kube.events = EventWriter(_NoSink(), component="bench")
    spec = yaml.safe_load(open(generate.__file__.rsplit("/autoscaler/", 1)[0] + "/cluster.yaml"))  # noqa: SIM115
    regions = REGIONS.split(",")
    cloud = Cloud(groups_from_spec(spec, regions))
    config = ControllerConfig(planner=PlannerConfig(boot_timeout_s=86_400.0), regions=regions,
                              delete_delay_after_taint_s=5.0, confirm_scale_up_above=10.0,
                              aws_consistency_window_s=30.0)  # fmt: skip
    return kube, cloud, Controller(kube, cloud, config, time.time)


def _count(text: str) -> int:
    return 0 if text.strip() == "0" else positive_count(text)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m demos.bench_pass", description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=positive_count, default=5_000, help="kwok nodes (default 5,000)")
    ap.add_argument("--pods", type=positive_count, default=50_000, help="running pods (default 50,000)")
    ap.add_argument(
        "--passes", type=positive_count, default=10, help="measured passes (after two warm-up passes)"
    )
    ap.add_argument(
        "--changes", type=_count, default=100, help="bound pods changed before each pass (default 100)"
    )
    ap.add_argument("--profile", metavar="FILE", help="cProfile the measured passes into FILE; print the top")
    ap.add_argument("--no-parse-cache", action="store_true", help="parse every object each pass (as before)")
    ap.add_argument("--json", action="store_true", help="one JSON object")
    args = ap.parse_args(argv)
    t0 = time.process_time()
    kube, cloud, ctl = build(args.nodes, args.pods)
    load_cpu = time.process_time() - t0
    if args.no_parse_cache:
        ctl._parse_cache = None
    pods = kube.informers["pods"]
    rng = random.Random(2)
    running = [k for k in pods._items if k.startswith(f"{NAMESPACE}/run-")]
    full = FullCollection()
    cpu, wrote, errors = [], [], []
    prof = cProfile.Profile() if args.profile else None
    version = 10_000_000
    for k in range(2 + args.passes):
        for key in rng.sample(running, min(args.changes, len(running))):  # a kubelet's status update
            version += 1
            obj = pods.get(key)
            changed = dict(obj, metadata=dict(obj["metadata"], resourceVersion=str(version)),
                           status=dict(obj["status"], podIP=f"100.65.{version % 250}.{version % 200}"))  # fmt: skip
            pods._apply("MODIFIED", changed, lean_already=True)
        created = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() - 5))
        pods._apply("ADDED", pending_pod(f"decide-{k}", k, rng, created))
        before = len(cloud.writes)
        gc_before = gc.get_count()
        if prof is not None and k >= 2:
            prof.enable()
        c = time.process_time()
        result = ctl.run_once()
        spent = time.process_time() - c
        if prof is not None:
            prof.disable()
        del gc_before
        full()
        malloc.trim()
        if k >= 2:
            cpu.append(spent)
            wrote.append(len(cloud.writes) > before)
            errors.extend(result.errors)
    mem = _status("/proc/self/status")
    cache = getattr(ctl, "_parse_cache", None)
    out = {
        "nodes": args.nodes,
        "pods": args.pods,
        "changes_per_pass": args.changes,
        "load_cpu_s": round(load_cpu, 2),
        "pass_cpu_s": [round(x, 3) for x in cpu],
        "pass_cpu_p50_s": round(statistics.median(cpu), 3),
        "pass_cpu_max_s": round(max(cpu), 3),
        "passes_that_wrote_desired": f"{sum(wrote)}/{len(wrote)}",
        "parsed_last_pass": None if cache is None else f"{cache.parsed} parsed, {cache.hits} from the cache",
        "parse_cache_objects": None if cache is None else len(cache),
        "rss_mib": round(mem.get("VmRSS", 0)),
        "peak_rss_mib": round(mem.get("VmHWM", 0)),
        "errors": sorted(set(errors))[:5],
    }
    if args.json:
        print(json.dumps(out))
    else:
        for k, v in out.items():
            print(f"{k:>26}: {v}")
    if prof is not None:
        prof.dump_stats(args.profile)
        pstats.Stats(args.profile).sort_stats("cumulative").print_stats(45)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
