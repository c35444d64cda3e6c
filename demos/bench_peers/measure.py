"""What one run measured: the cluster as the API shows it, sampled, and the autoscaler process's resources.

The watcher lists the benchmark namespace's pods and every Node each ``interval_s`` (as the benchmark's admin:
its calls are not counted as the autoscaler's) and keeps, for every Node, when it was first and last seen and its
instance type and zone; for every pod, when it was first seen Running. ``Figures`` turns that into the table's
row: nodes bought (Nodes that appeared after the submission), their peak cost per hour (the catalog's on-demand
price in the zone's region), seconds from the submission to every pod Running, pods never Running, partial gangs
(jobs of several pods with some but not all Running at the end), nodes still up ``after_s`` after the pods
vanished.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from kubernetes import client as k8s

from clusterspec import catalog
from clusterspec.names import JOB_NAME_LABEL
from simulator.workload import NAMESPACE

ZONE = "topology.kubernetes.io/zone"
INSTANCE_TYPE = "node.kubernetes.io/instance-type"


def region_of(zone: str) -> str:
    return zone.rstrip("abcdefghijklmnopqrstuvwxyz")


def price(itype: str, zone: str) -> float:
    try:
        return catalog.instance_type(itype).price_in(region_of(zone)) or 0.0
    except KeyError:
        return 0.0


@dataclass
class NodeSeen:
    first: float
    last: float
    itype: str
    zone: str
    gone: bool = False


@dataclass
class Watcher:
    core: k8s.CoreV1Api
    interval_s: float = 0.5
    nodes: dict[str, NodeSeen] = field(default_factory=dict)
    running_at: dict[str, float] = field(default_factory=dict)
    bound_now: dict[str, str] = field(default_factory=dict)  # pod -> the node it is bound to, a node up now
    jobs: dict[str, str] = field(default_factory=dict)  # pod -> job
    pods_now: set[str] = field(default_factory=set)
    running_now: set[str] = field(default_factory=set)
    samples: list[tuple[float, int, int, int, float]] = field(
        default_factory=list
    )  # t, pending, running, nodes, $/h
    baseline: set[str] = field(default_factory=set)
    t0: float = 0.0

    def __post_init__(self) -> None:
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def sample(self) -> None:
        now = time.monotonic()
        nodes = self.core.list_node().items
        pods = self.core.list_namespaced_pod(NAMESPACE).items
        names = set()
        for n in nodes:
            name = n.metadata.name
            names.add(name)
            labels = n.metadata.labels or {}
            seen = self.nodes.get(name)
            if seen is None:
                self.nodes[name] = NodeSeen(now, now, labels.get(INSTANCE_TYPE, "?"), labels.get(ZONE, "?"))
            else:
                seen.last, seen.gone = now, False
        for name, seen in self.nodes.items():
            if name not in names:
                seen.gone = True
        self.pods_now, self.running_now, self.bound_now = set(), set(), {}
        for p in pods:
            if p.metadata.deletion_timestamp is not None:
                continue
            name = p.metadata.name
            self.pods_now.add(name)
            self.jobs.setdefault(name, (p.metadata.labels or {}).get(JOB_NAME_LABEL, name))
            if p.spec.node_name in names:
                self.bound_now[name] = p.spec.node_name
            if p.status.phase == "Running":
                self.running_now.add(name)
                self.running_at.setdefault(name, now)
        bought = [s for n, s in self.nodes.items() if n not in self.baseline and not s.gone]
        cost = sum(price(s.itype, s.zone) for s in bought)
        self.samples.append(
            (
                now - self.t0,
                len(self.pods_now) - len(self.running_now),
                len(self.running_now),
                len(bought),
                cost,
            )
        )

    def _run(self) -> None:
        while not self._stop.is_set():
            with contextlib.suppress(Exception):  # the next sample retries
                self.sample()
            self._stop.wait(self.interval_s)

    def start(self, baseline: set[str] | None = None) -> Watcher:
        """Sampling from now on; ``baseline``: the Nodes not bought (default: every Node up now)."""
        self.sample()
        self.baseline = set(self.nodes) if baseline is None else set(baseline)
        self.samples.clear()
        self.t0 = time.monotonic()
        self._thread = threading.Thread(target=self._run, daemon=True, name="watcher")
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=30)

    def bought(self) -> dict[str, NodeSeen]:
        return {n: s for n, s in self.nodes.items() if n not in self.baseline}

    def up_now(self) -> int:
        return sum(1 for s in self.bought().values() if not s.gone)


@dataclass
class ProcessUse:
    cpu_s: float
    peak_rss_mib: float


def process_use(pid: int) -> ProcessUse:
    """CPU seconds (user + system) and peak resident memory of a running process, from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    ticks = os.sysconf("SC_CLK_TCK")
    cpu = (int(fields[11]) + int(fields[12])) / ticks
    hwm = 0.0
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            hwm = int(line.split()[1]) / 1024
    return ProcessUse(cpu, hwm)


def figures(
    w: Watcher, submitted: list[str], all_running_s: float | None, nodes_after: int, running_at_end: set[str],
    ran: set[str] | None = None, bound_at_end: dict[str, str] | None = None,
) -> dict:  # fmt: skip
    """The run's row; ``running_at_end``: the pods Running when the benchmark deleted them; ``ran``: those seen
    Running before it deleted them (default: every pod ever seen Running); ``bound_at_end``: pod -> the node, up
    then, it was bound to when the benchmark deleted them."""
    bought = w.bought()
    ran = set(w.running_at) if ran is None else ran
    never = [p for p in submitted if p not in ran]
    members: dict[str, list[str]] = {}
    for p in submitted:
        members.setdefault(w.jobs.get(p, p), []).append(p)
    partial = 0
    for pods in members.values():
        if len(pods) > 1:
            ran = sum(1 for p in pods if p in running_at_end)
            partial += 0 < ran < len(pods)
    return {
        "nodes_bought": len(bought),
        "peak_cost_per_h": round(max((s[4] for s in w.samples), default=0.0), 2),
        "all_running_s": None if all_running_s is None else round(all_running_s, 1),
        "pods_never_run": len(never),
        # of those, the ones bound to a node, still up, that never ran them: the node agent's (kwok's) doing, not
        # the autoscaler's (which brought the capacity kube-scheduler bound them to)
        "pods_bound_never_ran": {p: (bound_at_end or {})[p] for p in never if p in (bound_at_end or {})},
        "partial_gangs": partial,
        "nodes_up_after": nodes_after,
        "bought_by_type": _by_type(bought),
    }


def _by_type(bought: dict[str, NodeSeen]) -> dict[str, int]:
    out: dict[str, int] = {}
    for s in bought.values():
        key = f"{s.itype}@{region_of(s.zone)}"
        out[key] = out.get(key, 0) + 1
    return dict(sorted(out.items()))
