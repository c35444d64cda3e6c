"""Kubernetes Cluster Autoscaler as it runs on AWS, with its defaults (CA 1.30, cloudprovider/aws).

CA's AWS provider manages the Auto Scaling groups of one region per process (the SDK session and the group
discovery are regional), so a lab with three regions runs it in one of two ways, and the simulator has both:

- ``ca-regional``: one process per region. Each lists every pod and node of the cluster (the API server is one)
  and scales only its own region's groups, with its own back-offs and timers; the nodes other processes have
  requested are invisible to it until they register, so for a while each buys for the same pending pods.
- ``ca-primary``: one process, in the primary region: the other regions' groups are never used.
- ``ca-ideal``: one process choosing among all three regions' groups. No real deployment can do this; it is
  kept as an idealised bound on what cluster-autoscaler's logic could do (it flatters CA).

Each process, every loop (the scan interval):

- **New pods wait.** When every pod CA would scale up for is new, it waits: the oldest under 2 s, or, if any of
  them asks for a GPU, the oldest GPU pod under 30 s (core/static_autoscaler.go ``allPodsAreNew``,
  ``unschedulablePodTimeBuffer`` 2 s and ``unschedulablePodWithGpuTimeBuffer`` 30 s, hard-coded; "waiting one
  iteration for more"). Scale-down is skipped in such a loop too (``DisableScaleDownForLoop``).
- **Scale-up, one node group per loop.** Pending pods that fit on free room of registered nodes (of any region:
  CA's snapshot holds every Node) or on nodes its own groups already requested (desired minus registered, shaped
  like the group) are left alone. For the rest, each of its groups not backed off gets a First-Fit Decreasing
  estimate of the new nodes it needs (up to its max); the expander picks ONE group (``priority``: region
  spill-over order and group priority, then ``least-waste`` of GPUs) and only that group grows. Pods are taken
  one by one: CA knows no gangs.
- **The group cache.** The AWS provider reads its groups (sizes, instances) once a minute (aws_manager.go
  ``refreshInterval``, 1 min, ``Refresh`` -> ``asgCache.regenerate``); between reads CA works on its cache,
  which its own writes update (``setAsgSizeNoLock`` sets ``curSize``).
- **Capacity that never arrives.** The provisioning clock of a group (``max_node_provision_s``, 15 min,
  ``--max-node-provision-time``) restarts at every increase: clusterstate's ``RegisterOrUpdateScaleUp`` moves
  the scale-up request's time and ``ExpectedAddTime`` to now when a group already scaling grows again. When the
  requested nodes have not registered by then, CA gives up on them and backs the group off (5 min, doubling up
  to 30 min), so the next loop tries another group.
- **Failed scaling activities, read.** At each cache refresh a group whose desired size exceeds its instances
  gets placeholder instances, and ``isNodeGroupAvailable`` reads the group's scaling activities: a ``Failed`` one
  since the group's last update marks the placeholders unfulfillable, and clusterstate then gives up on them at
  once and backs the group off (fail fast, instead of waiting 15 min).
- **Giving up is one call per node.** CA deletes the nodes it gave up on (``deleteCreatedNodesWithErrors``,
  ``removeOldUnregisteredNodes`` -> ``DeleteNodes``), and the AWS provider lowers the group by one
  ``SetDesiredCapacity`` per placeholder (auto_scaling_groups.go ``DeleteInstances`` ->
  ``decreaseAsgSizeByOneNoLock``; CA 1.31 and later read the group and set it once).
- **Scale-down.** A node of its own groups whose requested share (the GPU share on GPU nodes) stays under
  ``utilization`` for ``unneeded_s`` (10 min), whose pods could all run elsewhere, is removed, not within
  ``delay_after_add_s`` of a scale-up: empty nodes up to ``max_empty_bulk_delete`` per loop, else one busy node
  per loop whose pods are evicted (Job pods carry a controller, so CA evicts them), then after ``grace_s`` the
  instance is terminated and the node deleted. A job whose pod is evicted is killed (it restarts from scratch).
  The unneeded timers run on during the cooldown after a scale-up (CA updates its unneeded nodes every loop and
  only holds the deletion back; the loop that scales up returns before that step and leaves them as they were).
- **Protected jobs** (``-protected``): the lab annotates training pods
  ``cluster-autoscaler.kubernetes.io/safe-to-evict: "false"`` (CA FAQ "What types of pods can prevent CA from
  removing a node?"); a node running one is never drained, so only empty nodes go.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import UTC, datetime

from clusterspec.names import TO_BE_DELETED_TAINT
from simulator.policies.base import Policy, PolicyContext
from simulator.policies.binpack import Bins, decreasing, pack_new_nodes, take, template_node
from simulator.policies.view import (
    GPU,
    ClusterView,
    RegionCloud,
    allocatable,
    created_at,
    instance_id_of,
    is_daemonset_pod,
    node_ready,
    requests,
)


@dataclass(frozen=True)
class CaSettings:
    max_node_provision_s: float = 900.0
    backoff_s: float = 300.0
    max_backoff_s: float = 1800.0
    unneeded_s: float = 600.0
    utilization: float = 0.5
    delay_after_add_s: float = 600.0
    max_empty_bulk_delete: int = 10
    grace_s: float = 30.0
    refresh_s: float = 60.0  # the AWS provider's group cache refresh (cloudprovider/aws refreshInterval)
    new_pod_s: float = 2.0  # static_autoscaler.go unschedulablePodTimeBuffer
    new_gpu_pod_s: float = 30.0  # static_autoscaler.go unschedulablePodWithGpuTimeBuffer
    per_node_corrections: bool = True  # CA 1.30: one SetDesiredCapacity per placeholder it gives up on
    max_node_startup_s: float = 900.0  # clusterstate MaxNodeStartupTime: a young unready node is NotStarted
    # GPU nodes carry the label CA's AWS provider reads (k8s.amazonaws.com/accelerator), so a node that does not
    # advertise its GPUs yet counts as unready (FilterOutNodesWithUnreadyResources); False: CA sees a Ready node
    # without GPUs and scales up again for the pods that do not fit on it
    gpu_label: bool = True


SAFE_TO_EVICT = "cluster-autoscaler.kubernetes.io/safe-to-evict"


class CaInstance:
    """One cluster-autoscaler process, scaling the groups of ``regions`` (None: of every region)."""

    def __init__(self, ctx: PolicyContext, settings: CaSettings, regions: tuple[str, ...] | None):
        self.ctx = replace(ctx, cloud=RegionCloud(ctx.cloud, regions))  # its AWS clients: its regions only
        self.regions = regions
        self.s = settings
        self.rank = {g.name: i for i, g in enumerate(ctx.gpu_groups())}
        self.cache: dict[str, dict] = {}  # the AWS provider's group cache (asgCache), refreshed once a minute
        self.waiting_since: dict[str, float] = {}  # group -> since when it has requested, unregistered nodes
        self.backoff_until: dict[str, float] = {}
        self.backoff_len: dict[str, float] = {}
        self.unneeded_since: dict[str, float] = {}
        self.draining: dict[str, tuple[float, str, str]] = {}  # node -> (terminate at, group, instance)
        self.last_scale_up = float("-inf")
        self.increased_at: dict[str, float] = {}  # group -> its last increase (the group's lastUpdateTime)
        self.last_refresh = float("-inf")
        self.uncovered = False  # pending pods not yet provided for: the next loop looks again
        self.new_until: float | None = None  # the pods it would scale for are all new until then
        self.last_run = float("-inf")

    # --- the loop -------------------------------------------------------------------------------------
    def run_once(self) -> None:
        now = self.last_run = self.ctx.now_s()
        refreshed = self._refresh(now)
        view = ClusterView(
            self.ctx.cluster.list_pods(), self.ctx.cluster.list_nodes(), list(self.cache.values())
        )
        self._finish_drains(now)
        if refreshed:
            self._failed_activities(now, view)
        self._provision_timeouts(now, view)
        up = self._scale_up(now, view)
        if up == "scaled":
            return  # static_autoscaler.RunOnce returns after a scale-up: unneeded timers stay as they were
        candidates = self._unneeded(now, view)
        # all-new pods: "waiting one iteration for more", and no real scale-down in this loop either
        if up != "waiting" and now - self.last_scale_up >= self.s.delay_after_add_s:
            self._scale_down(view, candidates)

    def next_wakeup(self) -> float | None:
        due = [t for t, _, _ in self.draining.values()]
        if self.increased_at:  # placeholders waiting: the next cache refresh reads the scaling activities
            due.append(self.last_refresh + self.s.refresh_s)
        due += [t + self.s.max_node_provision_s for t in self.waiting_since.values()]
        due += [t + self.s.unneeded_s for t in self.unneeded_since.values()]
        if self.unneeded_since:
            due.append(self.last_scale_up + self.s.delay_after_add_s)
        if self.new_until is not None:
            due.append(self.new_until)
        if self.uncovered:
            due += list(self.backoff_until.values())
        if self.uncovered and not self.backoff_until:
            due.append(self.last_run + self.ctx.scan_interval_s)
        # a deadline already passed did not lead to an action (a group at its min...): only a change can
        due = [t for t in due if t > self.last_run]
        return min(due) if due else None

    # --- the group cache ------------------------------------------------------------------------------
    def _refresh(self, now: float) -> bool:
        """Read the groups when the cache is a minute old (or empty): the AWS provider's ``Refresh``."""
        if now - self.last_refresh < self.s.refresh_s:
            return False
        self.last_refresh = now
        self.cache = {g["name"]: g for g in self.ctx.cloud.list_groups()}
        return True

    def _set_desired(self, name: str, desired: int) -> None:
        self.ctx.cloud.set_desired(name, desired)
        self.cache[name]["desired"] = desired  # setAsgSizeNoLock: curSize

    # --- scale-up -------------------------------------------------------------------------------------
    def _registered(self, view: ClusterView) -> dict[str, int]:
        """Per group of its own, the registered nodes clusterstate counts against the target size: Ready and
        long unready ones, not those still starting (``GetUpcomingNodes``: NotStarted nodes are upcoming)."""
        out = dict.fromkeys(view.by_name, 0)
        for n in view.nodes:
            g = view.node_group(n)
            if g in out and self._readiness(view, n) != "not-started":
                out[g] += 1
        return out

    def _readiness(self, view: ClusterView, node: dict) -> str:
        """ "ready", "not-started" (unready and registered less than 15 min ago) or "unready", as clusterstate's
        ``updateReadinessStats`` over ``kube_util.GetNodeReadiness`` (the Ready condition; the not-ready,
        disk-pressure and network-unavailable taints) and, with the GPU label, the GPU processor's
        ``FilterOutNodesWithUnreadyResources``."""
        ready = node_ready(node)
        if ready and self.s.gpu_label:
            group = view.by_name.get(view.node_group(node))
            if group is not None and allocatable(group).get(GPU) and not allocatable(node).get(GPU):
                ready = False
        if ready:
            return "ready"
        if created_at(node) + self.s.max_node_startup_s > self.ctx.now_s():
            return "not-started"
        return "unready"

    def _give_up(self, name: str, group: dict, keep: int, now: float) -> None:
        """Desired back to ``keep`` nodes and the group backed off (5 min, doubling up to 30). CA deletes the
        nodes it gives up on, and the AWS provider lowers the group by one call per placeholder."""
        if group["desired"] > keep:
            if self.s.per_node_corrections:
                for desired in range(group["desired"] - 1, keep - 1, -1):
                    self._set_desired(name, desired)
            else:
                self._set_desired(name, keep)
        length = min(self.backoff_len.get(name, self.s.backoff_s / 2) * 2, self.s.max_backoff_s)
        self.backoff_len[name] = length
        self.backoff_until[name] = now + length
        self.waiting_since.pop(name, None)
        self.increased_at.pop(name, None)

    def _failed_activities(self, now: float, view: ClusterView) -> None:
        """At a cache refresh, read the scaling activities of groups with placeholders (desired above their
        instances); a failure since the group's last increase: give up on the placeholders now."""
        short = {
            name: g
            for name, g in view.by_name.items()
            if name in self.increased_at and g["desired"] > len(_live(g))
        }
        for name in [n for n in self.increased_at if n not in short]:
            del self.increased_at[name]  # every requested instance exists: nothing to read for it
        if not short:
            return
        since = datetime.fromtimestamp(min(self.increased_at[n] for n in short), UTC)
        failed = {f["group"] for f in self.ctx.cloud.scaling_failures(since)}
        for name, group in short.items():
            if name in failed:
                self._give_up(name, group, len(_live(group)), now)

    def _provision_timeouts(self, now: float, view: ClusterView) -> None:
        registered = self._registered(view)
        for name, group in view.by_name.items():
            if group["desired"] <= registered[name]:
                self.waiting_since.pop(name, None)
                continue
            since = self.waiting_since.setdefault(name, now)
            if now - since >= self.s.max_node_provision_s:
                self._give_up(name, group, registered[name], now)

    def _all_new(self, pods: list[dict], now: float) -> float | None:
        """Until when every one of ``pods`` counts as new (static_autoscaler.go ``allPodsAreNew``): the oldest
        is under 2 s old, or the oldest that asks for a GPU is under 30 s old; None when they do not."""
        created = [created_at(p) for p in pods]
        oldest = min(created)
        if oldest + self.s.new_pod_s > now:
            return oldest + self.s.new_pod_s
        gpu = [t for p, t in zip(pods, created, strict=True) if requests(p).get(GPU)]
        if gpu and min(gpu) + self.s.new_gpu_pod_s > now:
            return min(gpu) + self.s.new_gpu_pod_s
        return None

    def _scale_up(self, now: float, view: ClusterView) -> str | None:
        """ "scaled", "waiting" (the pods are all new), or None."""
        self.uncovered = False
        self.new_until = None
        pending = view.pending()
        if not pending:
            return None
        bins = Bins()
        for node in view.nodes:
            if _unschedulable(node) or self._readiness(view, node) == "not-started":
                continue  # a node of its own still starting is one of the upcoming nodes below
            free = allocatable(node)
            for p in view.pods_on[node["metadata"]["name"]]:
                take(requests(p), free)
            bins.add(node, free)
        registered = self._registered(view)
        for name, group in view.by_name.items():
            for _ in range(max(0, group["desired"] - registered[name])):
                bins.add(template_node(group), allocatable(group))
        rest = [p for p in decreasing(pending) if bins.place(p) is None]
        if not rest:
            return None
        self.uncovered = True  # pending pods not provided for: the next loop looks again
        self.new_until = self._all_new(rest, now)
        if self.new_until is not None:
            return "waiting"
        options = []
        for name, group in view.by_name.items():
            room = group["max"] - group["desired"]
            if room <= 0 or self.backoff_until.get(name, 0.0) > now:
                continue
            count, placed, waste = pack_new_nodes(rest, group, room)
            if placed:
                options.append((self.rank.get(name, len(self.rank)), waste, name, group, count))
        if not options:
            return None
        _, _, name, group, count = min(options, key=lambda o: o[:3])
        self._set_desired(name, group["desired"] + count)
        self.waiting_since[name] = now  # RegisterOrUpdateScaleUp: the clock restarts at every increase
        self.increased_at[name] = now
        self.last_scale_up = now
        return "scaled"  # other groups may be needed for the rest: the next loop looks again

    # --- scale-down -----------------------------------------------------------------------------------
    def _finish_drains(self, now: float) -> None:
        for node, (at, group, instance) in list(self.draining.items()):
            if at > now:
                continue
            self._terminate(group, instance)  # the node object goes with the instance
            del self.draining[node]

    def _terminate(self, group: str, instance: str) -> None:
        self.ctx.cloud.terminate_instance(group, instance)
        if group in self.cache:
            self.cache[group]["desired"] -= 1  # TerminateInstanceInAutoScalingGroup decrements: curSize--

    def _unneeded(self, now: float, view: ClusterView) -> list[tuple[dict, list[dict]]]:
        """Update the unneeded timers (every loop, cooldown or not); the nodes unneeded for long enough."""
        candidates = []
        for node in view.nodes:
            name = node["metadata"]["name"]
            if name in self.draining or view.node_group(node) not in view.by_name:
                self.unneeded_since.pop(name, None)
                continue
            pods = [p for p in view.pods_on[name] if not is_daemonset_pod(p)]
            if _utilization(node, pods) >= self.s.utilization or not self._movable(view, node, pods):
                self.unneeded_since.pop(name, None)
                continue
            since = self.unneeded_since.setdefault(name, now)
            if now - since >= self.s.unneeded_s:
                candidates.append((node, pods))
        live = {n["metadata"]["name"] for n in view.nodes}
        for name in [n for n in self.unneeded_since if n not in live]:
            del self.unneeded_since[name]
        return candidates

    def _scale_down(self, view: ClusterView, candidates: list[tuple[dict, list[dict]]]) -> None:
        registered = self._registered(view)
        removed_empty = 0
        removed_busy = False
        for node, pods in candidates:
            group = view.node_group(node)
            instance = instance_id_of(node)
            if instance is None or registered[group] <= view.by_name[group]["min"]:
                continue
            name = node["metadata"]["name"]
            if not pods and removed_empty < self.s.max_empty_bulk_delete:
                self._terminate(group, instance)
                removed_empty += 1
            elif pods and not removed_busy:
                self.ctx.cluster.taint_node(
                    name, {"key": TO_BE_DELETED_TAINT, "value": "", "effect": "NoSchedule"}
                )
                for p in pods:
                    self.ctx.cluster.evict_pod(
                        p["metadata"].get("namespace", "default"), p["metadata"]["name"]
                    )
                self.draining[name] = (self.ctx.now_s() + self.s.grace_s, group, instance)
                removed_busy = True
            else:
                continue
            registered[group] -= 1
            self.unneeded_since.pop(name, None)

    def _movable(self, view: ClusterView, node: dict, pods: list[dict]) -> bool:
        """Whether every pod could run on another registered node's free room (and may be evicted at all)."""
        if not pods:
            return True
        if any((p["metadata"].get("annotations") or {}).get(SAFE_TO_EVICT) == "false" for p in pods):
            return False  # CA's drain rules: a pod annotated safe-to-evict=false blocks the node's removal
        bins = Bins()
        for other in view.nodes:
            oname = other["metadata"]["name"]
            if other is node or oname in self.draining or _unschedulable(other):
                continue
            free = allocatable(other)
            for p in view.pods_on[oname]:
                take(requests(p), free)
            if free.get(GPU, 0.0) > 0 or not any(requests(p).get(GPU) for p in pods):
                bins.add(other, free)
        return all(bins.place(p) is not None for p in decreasing(pods))


class CaPolicy(Policy):
    """cluster-autoscaler as deployed: ``deployment`` says which processes run (the module's docstring)."""

    loop_on_usage_change = True
    api_mode = "cluster-autoscaler"
    deployment = "ideal"
    name = "ca-ideal"

    def __init__(self, ctx: PolicyContext, settings: CaSettings | None = None):
        super().__init__(ctx)
        s = settings or CaSettings()
        regions = tuple(ctx.spec.spill_over_order)
        if self.deployment == "ideal":
            self.instances = [CaInstance(ctx, s, None)]
        elif self.deployment == "primary":
            self.instances = [CaInstance(ctx, s, regions[:1])]
        else:
            self.instances = [CaInstance(ctx, s, (r,)) for r in regions]

    def run_once(self) -> None:
        for instance in self.instances:  # each process on its own; none sees the others' requests
            instance.run_once()

    def next_wakeup(self) -> float | None:
        due = [t for t in (i.next_wakeup() for i in self.instances) if t is not None]
        return min(due) if due else None


class CaIdealPolicy(CaPolicy):
    """One process over every region's groups: no real deployment (an idealised bound)."""


class CaIdealProtectedPolicy(CaIdealPolicy):
    name = "ca-ideal-protected"
    pod_annotations = {SAFE_TO_EVICT: "false"}


class CaRegionalPolicy(CaPolicy):
    """One process per region, as a three-region cluster runs it."""

    deployment = "regional"
    name = "ca-regional"


class CaRegionalProtectedPolicy(CaRegionalPolicy):
    name = "ca-regional-protected"
    pod_annotations = {SAFE_TO_EVICT: "false"}


class CaPrimaryPolicy(CaPolicy):
    """One process, in the primary region (the first of the spill-over order)."""

    deployment = "primary"
    name = "ca-primary"


class CaPrimaryProtectedPolicy(CaPrimaryPolicy):
    name = "ca-primary-protected"
    pod_annotations = {SAFE_TO_EVICT: "false"}


def _live(group: dict) -> list[dict]:
    return [i for i in group.get("instances", ()) if i.get("state") not in ("terminated", "terminating")]


def _unschedulable(node: dict) -> bool:
    spec = node.get("spec") or {}
    return bool(spec.get("unschedulable")) or any(
        t.get("key") == TO_BE_DELETED_TAINT for t in spec.get("taints") or ()
    )


def _utilization(node: dict, pods: list[dict]) -> float:
    """CA's utilization: the GPU share on GPU nodes, else the larger of the CPU and memory shares."""
    alloc = allocatable(node)
    used: dict[str, float] = {}
    for p in pods:
        take({r: -q for r, q in requests(p).items()}, used)
    if alloc.get(GPU):
        return used.get(GPU, 0.0) / alloc[GPU]
    shares = [used.get(r, 0.0) / alloc[r] for r in ("cpu", "memory") if alloc.get(r)]
    return max(shares, default=0.0)
