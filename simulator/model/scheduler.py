"""An incremental scheduler: binds Pending pods to Ready, schedulable nodes with the planner's predicate
(``autoscaler.core.fit.pod_fits_node``) and scores the feasible nodes as kube-scheduler does.

Scoring follows a :class:`clusterspec.scheduler.Profile` (the deployed configuration is read from
``provision/scheduler.py``, not copied): NodeResourcesFit with its strategy (``MostAllocated`` or
``LeastAllocated``) and per-resource weights, NodeResourcesBalancedAllocation when the profile has it, each plugin
times its weight, the highest total wins and ties are broken at random (seeded), as ``selectHost`` does
(kubernetes pkg/scheduler/schedule_one.go; the plugins in pkg/scheduler/framework/plugins/noderesources).
Integer arithmetic as there: CPU in millicores, memory in bytes, scores 0-100; for CPU and memory a pod without
a request counts as 100m / 200 MB; an extended resource (GPUs) the pod does not request is left out of its score.
Without ``percentageOfNodesToScore`` (the default profile) the adaptive number of feasible nodes is searched
from a rotating start (``numFeasibleNodesToFind``): every node below 100 nodes.

A pod is placed only by the scheduler it names (``spec.schedulerName``, default ``default-scheduler``), and only while
that scheduler runs (``schedulers``: the control plane's ``default-scheduler`` always; the gang scheduler
``research-gang-scheduler``): a pod naming any other scheduler
stays Pending, untouched (no condition, no event), as no kube-scheduler picks it up. Gangs (``pods.gang_key``: the
``scheduling.x-k8s.io/pod-group`` label) are placed tentatively and bound only when every member fits, and only by a
scheduler with Coscheduling (the gang scheduler's profile); ``default-scheduler`` binds every pod on its own,
whatever its labels. A gang's size is the
``research.cluster/pod-group-size`` annotation (the simulator's workload), else every member seen.

A pass runs only when something changed (a pod arrived, capacity was freed or added, a node changed), and
then only over the pods that could now fit: new pods when nothing was freed, every pending pod otherwise.
Within a pass a pod shape (requests, tolerations, selectors, affinity) that did not fit is not tried again,
and pods needing more GPUs than any node has free are rejected without a scan.
"""

from __future__ import annotations

import random
from collections.abc import Callable

from autoscaler.core.errors import SnapshotError
from autoscaler.core.fit import pod_fits_node
from clusterspec.scheduler import BIN_PACKING, DEFAULT_SCHEDULER, GANG_SCHEDULER, Profile
from simulator.model import pods as P
from simulator.model.quantity import parse_quantity

GPU = "nvidia.com/gpu"
EPS = 1e-9
MAX_NODE_SCORE = 100
# pkg/scheduler/util/pod_resources.go: what a pod without a CPU or memory request counts for scoring
DEFAULT_MILLI_CPU = 100
DEFAULT_MEMORY = 200 * 1024 * 1024
MIN_FEASIBLE_NODES = 100  # schedule_one.go minFeasibleNodesToFind
MIN_FEASIBLE_PERCENTAGE = 5
_SCORED = frozenset({"cpu", "memory"})  # counted on every node even for pods that request none


def deployed_profile() -> Profile:
    """The profile the cluster runs (clusterspec/scheduler.py ``BIN_PACKING``); a caller may pass another."""
    return BIN_PACKING


def score_units(resource: str, value: float) -> int:
    """A quantity in the integer units kube-scheduler scores in (millicores for CPU, else the plain value)."""
    return round(value * 1000) if resource == "cpu" else round(value)


def nonzero(resource: str, req: dict[str, float]) -> int:
    """The pod's request of ``resource`` for scoring: CPU and memory never count as 0."""
    value = score_units(resource, req.get(resource, 0.0))
    if value == 0 and resource == "cpu":
        return DEFAULT_MILLI_CPU
    if value == 0 and resource == "memory":
        return DEFAULT_MEMORY
    return value


def most_requested(requested: int, capacity: int) -> int:
    if capacity == 0:
        return 0
    return min(requested, capacity) * MAX_NODE_SCORE // capacity


def least_requested(requested: int, capacity: int) -> int:
    if capacity == 0 or requested > capacity:
        return 0
    return (capacity - requested) * MAX_NODE_SCORE // capacity


class NodeInfo:
    __slots__ = ("name", "node", "pods", "free", "alloc", "used", "schedulable", "bucket")

    def __init__(self, node: dict) -> None:
        self.name = node["metadata"]["name"]
        self.node = node
        self.pods: list[dict] = []
        alloc = (node.get("status") or {}).get("allocatable") or {}
        self.free = {r: parse_quantity(q) for r, q in alloc.items()}
        self.alloc = {r: score_units(r, v) for r, v in self.free.items()}
        self.used: dict[str, int] = {}  # requests of the pods on the node, as scoring counts them
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
        profile: Profile | None = None,
        seed: int = 0,
    ) -> None:
        self.schedulers: dict[str, bool] = {}  # running scheduler name -> whether it has Coscheduling
        self.waiting: dict[str, dict] = {}  # uid -> pending pod naming a scheduler that does not run
        self.profile = profile or deployed_profile()
        self.rng = random.Random(seed)
        self.next_start = 0  # where the next search for feasible nodes starts (sampling only)
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
        req = self.req(pod)
        for r, q in req.items():
            ni.free[r] = ni.free.get(r, 0.0) - q
        for r in _SCORED.union(req):
            ni.used[r] = ni.used.get(r, 0) + nonzero(r, req)
        ni.pods.append(pod)
        self._rebucket(ni)

    def _unreserve(self, ni: NodeInfo, pod: dict) -> None:
        req = self.req(pod)
        for r, q in req.items():
            ni.free[r] = ni.free.get(r, 0.0) + q
        for r in _SCORED.union(req):
            ni.used[r] = ni.used.get(r, 0) - nonzero(r, req)
        ni.pods.remove(pod)
        self._rebucket(ni)

    @property
    def profile(self) -> Profile:
        return self._profile

    @profile.setter
    def profile(self, profile: Profile) -> None:
        """The scoring every scheduler uses (the gang scheduler's configuration copies the control plane's); the
        control plane's ``default-scheduler`` never has Coscheduling, the gang scheduler has it when the profile does."""
        self._profile = profile
        self.schedulers = {DEFAULT_SCHEDULER: False, GANG_SCHEDULER: profile.coscheduling}

    @property
    def gangs(self) -> bool:
        """Whether gangs bind all-or-nothing: only with Coscheduling in the profile."""
        return self.profile.coscheduling

    @staticmethod
    def scheduler_name(pod: dict) -> str:
        return (pod.get("spec") or {}).get("schedulerName") or DEFAULT_SCHEDULER

    def gang_of(self, pod: dict) -> tuple | None:
        return P.gang_key(pod) if self.schedulers.get(self.scheduler_name(pod)) else None

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
        alloc = (node.get("status") or {}).get("allocatable") or {}
        free = {r: parse_quantity(q) for r, q in alloc.items()}  # allocatable may change (a device plugin)
        for pod in ni.pods:
            for r, q in self.req(pod).items():
                free[r] = free.get(r, 0.0) - q
        ni.free = free
        ni.alloc = {r: score_units(r, parse_quantity(q)) for r, q in alloc.items()}
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
        key = self.gang_of(pod)
        if key:
            self._gang_active[key] = self._gang_active.get(key, 0) + d

    def add_pending(self, pod: dict) -> None:
        uid = pod["metadata"]["uid"]
        if self.scheduler_name(pod) not in self.schedulers:
            self.waiting[uid] = pod
            return
        self.pending[uid] = pod
        self._new.add(uid)
        key = self.gang_of(pod)
        if key:
            self._gang_pending.setdefault(key, {})[uid] = pod

    def remove_pending(self, pod: dict) -> None:
        """A pending pod was deleted."""
        if self._drop_pending(pod) and self.gang_of(pod):
            self._capacity_changed = True  # a gang of undeclared size may now be complete

    def _drop_pending(self, pod: dict) -> bool:
        uid = pod["metadata"]["uid"]
        if self.pending.pop(uid, None) is None:
            self.waiting.pop(uid, None)
            return False
        self._new.discard(uid)
        key = self.gang_of(pod)
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
        """The node kube-scheduler would pick: the highest score among the feasible nodes it looks at."""
        req = self.req(pod)
        g = int(req.get(GPU, 0.0) + 1 - EPS) if req.get(GPU, 0.0) > 0 else 0
        if g > max_gpus:
            return None, f"Insufficient {GPU}" if max_gpus >= 0 else "no schedulable node"
        reason = "no node has room for the pod's requests"
        to_find = self._feasible_to_find()
        if to_find is None:  # every feasible node is scored: only the nodes with the GPUs free need a look
            candidates = [ni for b in self._buckets if b >= g for ni in self._buckets[b].values()]
        else:
            candidates = self._rotated()
        best: NodeInfo | None = None
        best_score = -1
        ties = 0
        found = 0
        processed = 0
        for ni in candidates:
            if to_find is not None and found >= to_find:
                break
            processed += 1
            if not ni.schedulable:
                continue
            free = ni.free
            if any(q > free.get(r, 0.0) + EPS for r, q in req.items()):
                continue
            self.attempts += 1
            try:
                why = pod_fits_node(pod, ni.node, ni.pods)
            except SnapshotError as e:  # a pod the planner cannot read cannot be placed either
                return None, f"invalid pod: {e}"
            if why is not None:
                reason = why
                continue
            found += 1
            score = self.score(req, ni)
            if score > best_score:
                best, best_score, ties = ni, score, 1
            elif score == best_score:  # selectHost: each of the n best is kept with probability 1/n
                ties += 1
                if self.rng.randrange(ties) == 0:
                    best = ni
        if to_find is not None and self.nodes:
            self.next_start = (self.next_start + processed) % len(self.nodes)
        return (best, "") if best is not None else (None, reason)

    def _feasible_to_find(self) -> int | None:
        """numFeasibleNodesToFind: None when every feasible node is scored."""
        total = len(self.nodes)
        pct = self.profile.percentage_of_nodes_to_score
        if total < MIN_FEASIBLE_NODES or pct == 100:
            return None
        if not pct:
            pct = max(MIN_FEASIBLE_PERCENTAGE, 50 - total // 125)
        return max(MIN_FEASIBLE_NODES, total * pct // 100)

    def _rotated(self) -> list[NodeInfo]:
        nodes = list(self.nodes.values())
        start = self.next_start % len(nodes) if nodes else 0
        return nodes[start:] + nodes[:start]

    def score(self, req: dict[str, float], ni: NodeInfo) -> int:
        """The weighted sum of the profile's score plugins for the pod on the node."""
        p = self.profile
        total = p.weight("NodeResourcesFit") * self._fit_score(req, ni)
        if p.balanced:
            total += p.weight("NodeResourcesBalancedAllocation") * self._balanced_score(req, ni)
        return total

    def _fit_score(self, req: dict[str, float], ni: NodeInfo) -> int:
        scorer = most_requested if self.profile.strategy == "MostAllocated" else least_requested
        score = weights = 0
        for r, w in self.profile.resources:
            alloc = ni.alloc.get(r, 0)
            if alloc == 0 or (r not in ("cpu", "memory") and req.get(r, 0.0) <= 0):
                continue  # an extended resource the pod does not request is not scored
            requested = ni.used.get(r, 0) + nonzero(r, req)
            score += scorer(requested, alloc) * w
            weights += w
        return score // weights if weights else 0

    def _balanced_score(self, req: dict[str, float], ni: NodeInfo) -> int:
        fractions = []
        for r in self.profile.balanced:
            alloc = ni.alloc.get(r, 0)
            if alloc == 0 or (r not in ("cpu", "memory") and req.get(r, 0.0) <= 0):
                continue
            requested = ni.used.get(r, 0) + nonzero(r, req)
            fractions.append(min(1.0, requested / alloc))
        if len(fractions) == 2:
            std = abs(fractions[0] - fractions[1]) / 2
        elif len(fractions) > 2:
            mean = sum(fractions) / len(fractions)
            std = (sum((f - mean) ** 2 for f in fractions) / len(fractions)) ** 0.5
        else:
            std = 0.0
        return int((1 - std) * MAX_NODE_SCORE)

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
            key = self.gang_of(pod)
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
