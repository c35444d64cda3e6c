"""Watches the cluster model (as a watch would: every object change) and keeps what the runner needs cheaply.

- GPU totals: demand (pods not finished), used (running pods), capacity (registered nodes, per region);
- which nodes are idle (no running non-DaemonSet pod) and since when;
- ``dirty``: something a scaling policy may react to happened (a node registered or removed, a node's last
  pod finished), or ``new_pending``: pods created since the last loop that are still pending (a pod the
  scheduler bound at once needs no loop). Pods that only start or finish on a still-busy node do not count.
"""

from __future__ import annotations

from simulator.model import pods as P
from simulator.model.quantity import parse_quantity

GPU = "nvidia.com/gpu"


class ModelTracker:
    def __init__(self, regions: list[str], now) -> None:
        self.regions = list(regions)
        self._now = now
        self.pods: dict[str, tuple[str, int, str | None]] = {}  # uid -> (phase, gpus, node)
        self.node_gpus: dict[str, tuple[str, int]] = {}  # node -> (region, gpus)
        self.node_sig: dict[str, tuple] = {}  # node -> (Ready status, taints): a change may make it usable
        self.busy: dict[str, int] = {}  # node -> running non-DaemonSet pods
        self.idle_since: dict[str, float] = {}
        self.demand = 0
        self.used = 0
        self.capacity_by_region = dict.fromkeys(self.regions, 0)
        self.dirty = True
        self.pending = 0
        self.new_pending: set[str] = set()
        self.first_new: float | None = None  # when the first and last of new_pending were created
        self.last_new: float | None = None
        self.new_count = 0  # pods first pending since the last loop (the live window's events)
        self.before_new: float | None = (
            None  # the pod first pending before first_new (an earlier window's last)
        )
        self._heard: float | None = None
        self.usage_changed = True  # GPU demand, use or capacity moved (for policies that watch utilization)

    def changed(self, usage: bool = False) -> bool:
        return self.dirty or bool(self.new_pending) or (usage and self.usage_changed)

    def clear(self) -> None:
        self.dirty = False
        self.usage_changed = False
        self.new_pending.clear()
        self.first_new = self.last_new = None
        self.new_count = 0

    @property
    def capacity(self) -> int:
        return sum(self.capacity_by_region.values())

    def __call__(self, kind: str, event: str, obj: dict) -> None:
        if kind == "pods":
            self._pod(event, obj)
        elif kind == "nodes":
            self._node(event, obj)

    # --- nodes ----------------------------------------------------------------------------------------
    def _node(self, event: str, node: dict) -> None:
        name = node["metadata"]["name"]
        if event == "ADDED":
            labels = node["metadata"].get("labels") or {}
            region = labels.get("topology.kubernetes.io/region", "")
            gpus = int(parse_quantity((node.get("status") or {}).get("allocatable", {}).get(GPU, 0)))
            self.node_gpus[name] = (region, gpus)
            self.node_sig[name] = _usability(node)
            if region in self.capacity_by_region:
                self.capacity_by_region[region] += gpus
            self.busy.setdefault(name, 0)
            self.idle_since[name] = self._now()
            self.dirty = self.usage_changed = True
        elif event == "MODIFIED" and name in self.node_gpus:
            # the node lifecycle (simulator/model/boot.py): GPUs appear when the device plugin has registered,
            # the node turns Ready and loses its not-ready taints; annotations alone change nothing here
            region, old = self.node_gpus[name]
            gpus = int(parse_quantity((node.get("status") or {}).get("allocatable", {}).get(GPU, 0)))
            if gpus != old:
                self.node_gpus[name] = (region, gpus)
                if region in self.capacity_by_region:
                    self.capacity_by_region[region] += gpus - old
                self.dirty = self.usage_changed = True
            sig = _usability(node)
            if self.node_sig.get(name) != sig:
                self.node_sig[name] = sig
                self.dirty = True
        elif event == "DELETED":
            self.node_sig.pop(name, None)
            region, gpus = self.node_gpus.pop(name, ("", 0))
            if region in self.capacity_by_region:
                self.capacity_by_region[region] -= gpus
            self.busy.pop(name, None)
            self.idle_since.pop(name, None)
            self.dirty = self.usage_changed = True

    # --- pods -----------------------------------------------------------------------------------------
    def _pod(self, event: str, pod: dict) -> None:
        if P.is_daemonset(pod):
            return
        uid = pod["metadata"]["uid"]
        old = self.pods.get(uid)
        if event == "DELETED":
            new = None
            if old is not None and old[0] == "Pending":
                self.dirty = True  # what was bought for it may be cancelled
        else:
            phase = (pod.get("status") or {}).get("phase", "Pending")
            gpus = old[1] if old else int(P.requests(pod).get(GPU, 0.0))
            new = (phase, gpus, (pod.get("spec") or {}).get("nodeName"))
        if old == new:
            return
        if old is not None:
            self._apply(old, -1)
        if new is not None:
            self._apply(new, +1)
            if new[0] in P.TERMINAL:
                self.pods.pop(uid, None)
            else:
                self.pods[uid] = new
        else:
            self.pods.pop(uid, None)
        if old is None and new is not None and new[0] == "Pending":
            self.new_pending.add(uid)
            self.last_new = self._now()
            if self.first_new is None:
                self.first_new = self.last_new
                self.before_new = self._heard
            self._heard = self.last_new
            self.new_count += 1
        elif new is None or new[0] != "Pending":
            self.new_pending.discard(uid)

    def _apply(self, state: tuple[str, int, str | None], sign: int) -> None:
        phase, gpus, node = state
        if phase in P.TERMINAL:
            return
        self.usage_changed = True
        self.demand += sign * gpus
        if phase == "Pending":
            self.pending += sign
        if phase == "Running":
            self.used += sign * gpus
            if node in self.busy:
                self.busy[node] += sign
                if self.busy[node] == 0:
                    self.idle_since[node] = self._now()
                    self.dirty = True
                elif sign > 0 and self.busy[node] == 1:
                    self.idle_since.pop(node, None)


def _usability(node: dict) -> tuple:
    status = node.get("status") or {}
    ready = next((c.get("status") for c in status.get("conditions") or () if c.get("type") == "Ready"), None)
    taints = tuple(
        sorted((t.get("key"), t.get("effect")) for t in (node.get("spec") or {}).get("taints") or ())
    )
    return ready, taints, bool((node.get("spec") or {}).get("unschedulable"))
