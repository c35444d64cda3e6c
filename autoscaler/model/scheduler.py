"""An incremental scheduler: binds Pending pods to Ready, schedulable nodes with the planner's predicate
(``autoscaler.core.fit.pod_fits_node``).

A pass runs only when something changed (a pod arrived, capacity was freed or added, a node changed), and
then only over the pods that could now fit: new pods when nothing was freed, every pending pod otherwise.
Within a pass a pod shape (requests, tolerations, selectors, affinity) that did not fit is not tried again,
and pods needing more GPUs than any node has free are rejected without a scan. Nodes are bucketed by free GPUs
and scanned smallest-fitting bucket first (best fit for GPUs, CPU-only pods to GPU-less nodes first).
Gangs (``pods.gang_key``) are placed tentatively and bound only when every member fits.
"""

from __future__ import annotations

from collections.abc import Callable

from autoscaler.core.errors import SnapshotError
from autoscaler.core.fit import pod_fits_node
from autoscaler.model import pods as P
from autoscaler.model.quantity import parse_quantity

GPU = "nvidia.com/gpu"
EPS = 1e-9


class NodeInfo:
    __slots__ = ("name", "node", "pods", "free", "schedulable", "bucket")

    def __init__(self, node: dict) -> None:
        self.name = node["metadata"]["name"]
        self.node = node
        self.pods: list[dict] = []
        alloc = (node.get("status") or {}).get("allocatable") or {}
        self.free = {r: parse_quantity(q) for r, q in alloc.items()}
        self.schedulable = False
        self.bucket: int | None = None


def _node_schedulable(node: dict) -> bool:
    if (node.get("spec") or {}).get("unschedulable"):
        return False
    for c in (node.get("status") or {}).get("conditions") or ():
        if c.get("type") == "Ready":
            return c.get("status") == "True"
    return False


class Scheduler:
    def __init__(
        self,
        on_bind: Callable[[dict, str], None],
        on_unschedulable: Callable[[dict, str], None],
    ) -> None:
        self.on_bind = on_bind
        self.on_unschedulable = on_unschedulable
        self.nodes: dict[str, NodeInfo] = {}
        self.pending: dict[str, dict] = {}  # uid -> pod, in arrival order
        self._new: set[str] = set()
        self._capacity_changed = False
        self._buckets: dict[int, dict[str, NodeInfo]] = {}
        self._req: dict[str, dict[str, float]] = {}
        self._sig: dict[str, str] = {}
        self._gang_pending: dict[tuple, dict[str, dict]] = {}
        self._gang_active: dict[tuple, int] = {}
        self.passes = 0
        self.attempts = 0

    # --- bookkeeping -------------------------------------------------------------------------------------
    def req(self, pod: dict) -> dict[str, float]:
        uid = pod["metadata"]["uid"]
        r = self._req.get(uid)
        if r is None:
            r = self._req[uid] = P.requests(pod)
        return r

    def _signature(self, pod: dict) -> str:
        uid = pod["metadata"]["uid"]
        s = self._sig.get(uid)
        if s is None:
            spec = pod.get("spec") or {}
            s = self._sig[uid] = repr(
                (
                    sorted(self.req(pod).items()),
                    spec.get("tolerations"),
                    spec.get("nodeSelector"),
                    spec.get("affinity"),
                )
            )
        return s

    def _rebucket(self, ni: NodeInfo) -> None:
        if ni.bucket is not None:
            self._buckets[ni.bucket].pop(ni.name, None)
            ni.bucket = None
        if ni.schedulable:
            b = int(ni.free.get(GPU, 0.0) + EPS)
            self._buckets.setdefault(b, {})[ni.name] = ni
            ni.bucket = b

    def _reserve(self, ni: NodeInfo, pod: dict) -> None:
        for r, q in self.req(pod).items():
            ni.free[r] = ni.free.get(r, 0.0) - q
        ni.pods.append(pod)
        self._rebucket(ni)

    def _unreserve(self, ni: NodeInfo, pod: dict) -> None:
        for r, q in self.req(pod).items():
            ni.free[r] = ni.free.get(r, 0.0) + q
        ni.pods.remove(pod)
        self._rebucket(ni)

    def add_node(self, node: dict) -> None:
        ni = NodeInfo(node)
        self.nodes[ni.name] = ni
        ni.schedulable = _node_schedulable(node)
        self._rebucket(ni)
        self._capacity_changed = True

    def node_changed(self, node: dict) -> None:
        """The node's spec or status changed (taints, unschedulable, Ready, allocatable)."""
        ni = self.nodes.get(node["metadata"]["name"])
        if ni is None:
            return
        ni.node = node
        # allocatable changes as device plugins register (nvidia.com/gpu appears): free = allocatable - requests
        free = {
            r: parse_quantity(q) for r, q in ((node.get("status") or {}).get("allocatable") or {}).items()
        }
        for pod in ni.pods:
            for r, q in self.req(pod).items():
                free[r] = free.get(r, 0.0) - q
        ni.free = free
        ni.schedulable = _node_schedulable(node)
        self._rebucket(ni)
        self._capacity_changed = True

    def remove_node(self, name: str) -> list[dict]:
        """Forget the node; returns the pods that were on it."""
        ni = self.nodes.pop(name, None)
        if ni is None:
            return []
        ni.schedulable = False
        self._rebucket(ni)
        for pod in ni.pods:
            self._active_gang_delta(pod, -1)
        return list(ni.pods)

    def _active_gang_delta(self, pod: dict, d: int) -> None:
        key = P.gang_key(pod)
        if key:
            self._gang_active[key] = self._gang_active.get(key, 0) + d

    def add_pending(self, pod: dict) -> None:
        uid = pod["metadata"]["uid"]
        self.pending[uid] = pod
        self._new.add(uid)
        key = P.gang_key(pod)
        if key:
            self._gang_pending.setdefault(key, {})[uid] = pod

    def remove_pending(self, pod: dict) -> None:
        """A pending pod was deleted."""
        if self._drop_pending(pod) and P.gang_key(pod):
            self._capacity_changed = True  # a gang of undeclared size may now be complete

    def _drop_pending(self, pod: dict) -> bool:
        uid = pod["metadata"]["uid"]
        if self.pending.pop(uid, None) is None:
            return False
        self._new.discard(uid)
        key = P.gang_key(pod)
        if key:
            members = self._gang_pending.get(key, {})
            members.pop(uid, None)
            if not members:
                self._gang_pending.pop(key, None)
        return True

    def add_bound(self, pod: dict, node_name: str) -> bool:
        """A pod bound outside the scheduler (DaemonSet, binding API); False when the node is unknown."""
        ni = self.nodes.get(node_name)
        if ni is None:
            return False
        self._drop_pending(pod)
        self._reserve(ni, pod)
        self._active_gang_delta(pod, +1)
        return True

    def release(self, pod: dict) -> None:
        """A bound pod ended or was deleted: its node has room again."""
        ni = self.nodes.get((pod.get("spec") or {}).get("nodeName") or "")
        uid = pod["metadata"]["uid"]
        if ni is not None and any(p is pod for p in ni.pods):
            self._unreserve(ni, pod)
            self._active_gang_delta(pod, -1)
            self._capacity_changed = True
        self._req.pop(uid, None)
        self._sig.pop(uid, None)

    def forget(self, pod: dict) -> None:
        self.remove_pending(pod)
        self.release(pod)

    @property
    def dirty(self) -> bool:
        return self._capacity_changed or bool(self._new)

    def pods_on(self, node_name: str) -> list[dict]:
        ni = self.nodes.get(node_name)
        return list(ni.pods) if ni else []

    # --- placement ---------------------------------------------------------------------------------------
    def _max_free_gpus(self) -> int:
        return max((b for b, nodes in self._buckets.items() if nodes), default=-1)

    def _find(self, pod: dict, max_gpus: int) -> tuple[NodeInfo | None, str]:
        req = self.req(pod)
        g = int(req.get(GPU, 0.0) + 1 - EPS) if req.get(GPU, 0.0) > 0 else 0
        if g > max_gpus:
            return None, f"Insufficient {GPU}" if max_gpus >= 0 else "no schedulable node"
        reason = "no node has room for the pod's requests"
        for b in sorted(k for k in self._buckets if k >= g):
            for ni in list(self._buckets[b].values()):
                free = ni.free
                if any(q > free.get(r, 0.0) + EPS for r, q in req.items()):
                    continue
                self.attempts += 1
                try:
                    why = pod_fits_node(pod, ni.node, ni.pods)
                except SnapshotError as e:  # a pod the planner cannot read cannot be placed either
                    return None, f"invalid pod: {e}"
                if why is None:
                    return ni, ""
                reason = why
        return None, reason

    def run(self) -> int:
        """One scheduling pass; returns how many pods it bound."""
        if not self.dirty:
            return 0
        self.passes += 1
        if self._capacity_changed:
            candidates = list(self.pending.values())
        else:
            candidates = [p for uid, p in self.pending.items() if uid in self._new]
        self._capacity_changed = False
        self._new.clear()
        if not candidates:
            return 0
        max_gpus = self._max_free_gpus()  # an upper bound for the whole pass: binding only lowers it
        failed: dict[str, str] = {}
        seen_gangs: set[tuple] = set()
        bound = 0
        for pod in candidates:
            if pod["metadata"]["uid"] not in self.pending:
                continue
            key = P.gang_key(pod)
            if key is None:
                sig = self._signature(pod)
                if sig in failed:
                    self.on_unschedulable(pod, failed[sig])
                    continue
                ni, why = self._find(pod, max_gpus)
                if ni is None:
                    failed[sig] = why
                    self.on_unschedulable(pod, why)
                    continue
                self._commit([(ni, pod)])
                bound += 1
                continue
            if key in seen_gangs:
                continue
            seen_gangs.add(key)
            members = list(self._gang_pending.get(key, {}).values())
            size = P.gang_size(pod) or (len(members) + self._gang_active.get(key, 0))
            if len(members) + self._gang_active.get(key, 0) < size:
                for m in members:
                    self.on_unschedulable(m, f"waiting for the gang's other pods ({len(members)}/{size})")
                continue
            sig = "gang:" + "|".join(sorted(self._signature(m) for m in members))
            why = failed.get(sig)
            if why is None:
                placed, why = self._place_gang(members, max_gpus)
                if placed is not None:
                    self._commit(placed)
                    bound += len(placed)
                    continue
                failed[sig] = why
            for m in members:
                self.on_unschedulable(m, f"gang of {size} does not fit: {why}")
        return bound

    def _place_gang(self, members: list[dict], max_gpus: int):
        placed: list[tuple[NodeInfo, dict]] = []
        order = sorted(members, key=lambda p: -self.req(p).get(GPU, 0.0))
        for m in order:
            ni, why = self._find(m, max_gpus)
            if ni is None:
                for pni, pm in reversed(placed):
                    self._unreserve(pni, pm)
                return None, why
            self._reserve(ni, m)
            placed.append((ni, m))
        for pni, pm in placed:  # _commit reserves again
            self._unreserve(pni, pm)
        return placed, ""

    def _commit(self, placed: list[tuple[NodeInfo, dict]]) -> None:
        for ni, pod in placed:
            self._drop_pending(pod)
            self._reserve(ni, pod)
            self._active_gang_delta(pod, +1)
        for ni, pod in placed:
            self.on_bind(pod, ni.name)
