"""Where each burst's wait goes on the real stack (issue 33's simulator check): a watch of the demo's pods and the
nodes, stamped with the wall clock as the demo's own process sees them, joined with the autoscaler's decisions
(its JSON log) and the instances' launch times (the embedded AWS).

Per pod: created -> the autoscaler's first scale-up after it -> its node's instance launched -> the Node
registered -> Ready -> GPUs advertised -> the pod bound -> Running. Per burst the pod that finished last is the
one its wait is made of; ``phases.json`` in the demo's out folder holds every record."""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from kubernetes import client as k8s
from kubernetes import watch

GPU = "nvidia.com/gpu"
PHASES = ("decided", "launched", "registered", "ready", "plugin", "gpus", "bound", "running")


@dataclass
class Recorder:
    """Watches pods of ``namespace`` and every node; first wall time (epoch) each reached each state."""

    api: k8s.ApiClient
    namespace: str
    pods: dict[str, dict[str, float]] = field(default_factory=dict)  # pod -> state -> t (+ "node")
    pod_nodes: dict[str, str] = field(default_factory=dict)
    nodes: dict[str, dict[str, float]] = field(default_factory=dict)
    node_ids: dict[str, str] = field(default_factory=dict)  # node -> instance id
    plugins: dict[str, float] = field(default_factory=dict)  # node -> its device plugin pod Running
    _stop: threading.Event = field(default_factory=threading.Event)
    _threads: list[threading.Thread] = field(default_factory=list)

    def start(self) -> Recorder:
        for target in (self._watch_pods, self._watch_nodes, self._watch_plugins):
            t = threading.Thread(target=self._loop, args=(target,), daemon=True)
            t.start()
            self._threads.append(t)
        return self

    def stop(self) -> None:
        self._stop.set()

    def _loop(self, target) -> None:
        while not self._stop.is_set():
            try:
                target()
            except Exception:  # a broken watch: resume
                time.sleep(0.2)

    def _watch_pods(self) -> None:
        core = k8s.CoreV1Api(self.api)
        for ev in watch.Watch().stream(core.list_namespaced_pod, self.namespace, timeout_seconds=30):
            if self._stop.is_set():
                return
            now = time.time()
            p = ev["object"]
            rec = self.pods.setdefault(p.metadata.name, {"created": now})
            if p.spec.node_name:
                rec.setdefault("bound", now)
                self.pod_nodes[p.metadata.name] = p.spec.node_name
            if p.status.phase in ("Running", "Succeeded"):
                rec.setdefault("running", now)

    def _watch_plugins(self) -> None:
        core = k8s.CoreV1Api(self.api)
        for ev in watch.Watch().stream(core.list_namespaced_pod, "kube-system", timeout_seconds=30):
            if self._stop.is_set():
                return
            p = ev["object"]
            owner = (p.metadata.owner_references or [None])[0]
            plugin = owner is not None and owner.name == "nvidia-device-plugin"
            if plugin and p.status.phase == "Running" and p.spec.node_name:
                self.plugins.setdefault(p.spec.node_name, time.time())

    def _watch_nodes(self) -> None:
        core = k8s.CoreV1Api(self.api)
        for ev in watch.Watch().stream(core.list_node, timeout_seconds=30):
            if self._stop.is_set():
                return
            now = time.time()
            n = ev["object"]
            rec = self.nodes.setdefault(n.metadata.name, {"registered": now})
            if n.spec.provider_id:
                self.node_ids[n.metadata.name] = n.spec.provider_id.rsplit("/", 1)[-1]
            taints = {t.key for t in n.spec.taints or ()}
            ready = any(c.type == "Ready" and c.status == "True" for c in n.status.conditions or ())
            if ready and not taints & {
                "node.kubernetes.io/not-ready",
                "node.cloudprovider.kubernetes.io/uninitialized",
            }:
                rec.setdefault("ready", now)
            if int((n.status.allocatable or {}).get(GPU, 0) or 0):
                rec.setdefault("gpus", now)

    def save(self, path: Path, launched: dict[str, float], decisions: list[float],
             syncs: list[tuple[float, float]] = (), passes: list[float] = ()) -> dict:  # fmt: skip
        for node, t in self.plugins.items():
            if node in self.nodes:
                self.nodes[node]["plugin"] = t
        doc = {"pods": self.pods, "pod_nodes": self.pod_nodes, "nodes": self.nodes, "node_ids": self.node_ids,
               "launched": launched, "decisions": decisions, "agent_syncs": list(syncs), "passes": list(passes)}  # fmt: skip
        path.write_text(json.dumps(doc, indent=1))
        return doc


def epoch(text: str | None) -> float | None:
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp() if text else None
    except ValueError:
        return None


def passes(log: Path) -> list[float]:
    """Wall times (epoch) at which the autoscaler's passes ended, from its JSON log."""
    return _times(log, lambda r: r.get("message") == "pass")


def _times(log: Path, keep) -> list[float]:
    out = []
    for line in log.read_text().splitlines() if log.exists() else ():
        try:
            r = json.loads(line)
        except ValueError:
            continue
        if keep(r):
            out.append(datetime.fromisoformat(r["time"].replace("Z", "+00:00")).timestamp())
    return sorted(out)


def scale_ups(log: Path) -> list[float]:
    """Wall times (epoch) of the autoscaler's set_desired actions that raised a group, from its JSON log."""
    return _times(log, lambda r: r.get("message") == "action" and r.get("action") == "set_desired"
                  and r.get("desired", 0) > r.get("from", 0))  # fmt: skip


def pod_phases(doc: dict, pod: str) -> dict[str, float | None]:
    """Wall seconds after the pod's creation at which it reached each of ``PHASES`` (None: never)."""
    rec = doc["pods"][pod]
    c = rec["created"]
    node = doc["pod_nodes"].get(pod)
    n = doc["nodes"].get(node or "", {})
    iid = doc["node_ids"].get(node or "")
    decided = next((t for t in doc["decisions"] if t >= c - 0.5), None)
    at = {"decided": decided, "launched": doc["launched"].get(iid or ""), "registered": n.get("registered"),
          "ready": n.get("ready"), "plugin": n.get("plugin"), "gpus": n.get("gpus"), "bound": rec.get("bound"), "running": rec.get("running")}  # fmt: skip
    return {k: (None if v is None else round(v - c, 2)) for k, v in at.items()}


def burst_table(doc: dict, bursts: dict[str, list[str]], compression: float) -> list[str]:
    """One line per burst: the last pod to run, its phases in model seconds after its creation."""
    lines = [f"{'burst':<28} {'pod':<16} " + " ".join(f"{p:>10}" for p in PHASES)]
    for title, prefixes in bursts.items():
        pods = [
            p for p in doc["pods"] if any(p.startswith(x) for x in prefixes) and "running" in doc["pods"][p]
        ]
        if not pods:
            continue
        last = max(pods, key=lambda p: doc["pods"][p]["running"])
        ph = pod_phases(doc, last)
        cells = " ".join(f"{'-' if v is None else f'{v * compression:.0f}':>10}" for v in ph.values())
        lines.append(f"{title[:28]:<28} {last[:16]:<16} {cells}")
    return lines


def to_registered(doc: dict, prefixes: tuple[str, ...]) -> float:
    """Wall seconds from a burst's first pod to the registration of the last node its pods ran on that registered
    after it (0 when every one of them was there before): the autoscaler's decisions, the launches and the boot
    delays; what comes after it (Ready, the device plugin, binding, running) is the stack's node pipeline."""
    pods = [p for p in doc["pods"] if p.startswith(prefixes)]
    if not pods:
        return 0.0
    start = min(doc["pods"][p]["created"] for p in pods)
    latest = 0.0
    for p in pods:
        registered = doc["nodes"].get(doc["pod_nodes"].get(p, ""), {}).get("registered")
        if registered is not None and registered > start:
            latest = max(latest, registered - start)
    return latest


def to_pass(doc: dict, prefixes: tuple[str, ...]) -> float | None:
    """Wall seconds from a burst's last pod's creation to the end of the autoscaler's first pass after it: the
    pass that planned for the whole burst (its batching window and its plan; None: no pass came)."""
    pods = [doc["pods"][p]["created"] for p in doc["pods"] if p.startswith(prefixes)]
    if not pods:
        return None
    last = max(pods)
    return next((t - last for t in doc.get("passes", ()) if t >= last), None)


BURSTS = {"try": ("try",), "exp": ("exp",), "sweep": ("sweep",)}  # the demo's waves (scenarios.DEMO_PREFIXES)


def read(out: Path) -> dict | None:
    path = Path(out) / "phases.json"
    return json.loads(path.read_text()) if path.exists() else None


def to_passes(doc: dict, compression: float) -> list[float | None]:
    """Each wave's time from its last pod to the autoscaler's pass that planned for all of it, model seconds."""
    return [None if (t := to_pass(doc, p)) is None else t * compression for p in BURSTS.values()]
