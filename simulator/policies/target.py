"""``target-tracking``: AWS Auto Scaling as its best users set it up for a GPU cluster without a
Kubernetes-aware autoscaler.

One Auto Scaling group per GPU type of the spec in the first region (T4: ``gpu-t4``, one GPU per node; V100:
``gpu-v100x8``, eight), each with a target-tracking policy on its own GPU-reservation metric, published every
minute by a small exporter: the GPUs requested by the pods meant for the group over the GPUs of its registered
nodes (an empty group counts as one node, so the metric is defined at zero and the first scale-out is
proportional too). Pods meant for a group: those running on its nodes, and of the pending ones, one-GPU pods on
the T4 group up to what its maximum size can still hold, every other pending pod on the V100 group. Pods carry no
selector: the scheduler places them on whichever node has room (MostAllocated: the fullest).

The arithmetic is the service's (Amazon EC2 Auto Scaling user guide, "Target tracking scaling policies" and
"Set the default instance warmup"):

- The policy creates two CloudWatch alarms: the high one fires after 3 consecutive one-minute datapoints above the
  target, the low one after 15 consecutive datapoints below 90% of it.
- On the high alarm, the new desired capacity is ``ceil(current * metric / target)`` where ``current`` leaves out
  instances still in their warm-up (300 s, the documented default instance warmup), whose capacity is already
  in the desired size; it only grows (never above the group's max).
- On the low alarm, the same arithmetic shrinks the group, never below its min, and not while an instance is in
  warm-up. The exporter keeps instance scale-in protection on every node with a running pod (and on instances
  still booting), so the group only removes idle instances; a decrement it cannot carry out waits until an
  instance becomes idle (the service terminates it as soon as its protection is removed).

No spill-over to other regions: each group scales alone.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime

from simulator.policies.base import GroupRef, Policy, PolicyContext
from simulator.policies.view import ClusterView, is_active, is_daemonset_pod, node_gpus, pod_gpus

PERIOD_S = 60.0
GPU_MODEL_LABEL = "research.cluster/gpu-model"


@dataclass(frozen=True)
class TargetSettings:
    target: float = 0.9
    high_periods: int = 3
    low_periods: int = 15
    low_ratio: float = 0.9  # the low alarm's threshold relative to the target
    warmup_s: float = 300.0


@dataclass
class Tracker:
    """One group's target-tracking policy state: alarm streaks, protections, decrements still owed."""

    ref: GroupRef
    high_since: float | None = None
    low_since: float | None = None
    owed: int = 0  # instances the group should lose but cannot while they are protected
    protected: frozenset[str] = frozenset()
    last_action: float = float("-inf")
    warm_until: float | None = None


def desired_after(current: int, metric: float, target: float) -> int:
    """Target tracking's new capacity: proportional to how far the metric is from the target."""
    return math.ceil(current * metric / target - 1e-9)


class TargetTrackingPolicy(Policy):
    loop_on_usage_change = True
    name = "target-tracking"
    api_mode = "aws"

    def __init__(self, ctx: PolicyContext, settings: TargetSettings | None = None):
        super().__init__(ctx)
        self.s = settings or TargetSettings()
        first = ctx.spec.spill_over_order[0]
        region = ctx.spec.region(first)
        by_model: dict[str, GroupRef] = {}
        for ref in ctx.gpu_groups():
            if ref.region != first:
                continue
            group = next(g for g in region.node_groups if ctx.spec.asg_name(first, g) == ref.name)
            model = group.labels.get(GPU_MODEL_LABEL, ref.name)
            if model in ("t4", "v100") and model not in by_model:
                by_model[model] = ref
        self.large = by_model["v100"]
        self.small = by_model.get("t4")  # one-GPU jobs, while it has room; None: a spec without T4s
        self.trackers = {r.name: Tracker(r) for r in (self.small, self.large) if r is not None}
        self.publishing_regions = (first,)
        self.last_run = float("-inf")

    # --- the metric -----------------------------------------------------------------------------------
    def demand(self, view: ClusterView) -> dict[str, int]:
        """GPUs meant for each tracked group: running on its nodes, plus the pending pods assigned to it."""
        group_of = {n["metadata"]["name"]: view.node_group(n) for n in view.nodes}
        out = dict.fromkeys(self.trackers, 0)
        pending_small = pending_other = 0
        for p in view.pods:
            if not is_active(p) or is_daemonset_pod(p):
                continue
            gpus = pod_gpus(p)
            node = p.get("spec", {}).get("nodeName")
            if node:
                group = group_of.get(node)
                if group in out:
                    out[group] += gpus
            elif gpus == 1:
                pending_small += 1
            else:
                pending_other += gpus
        to_small = 0
        if self.small is not None:
            room = self.small.max * self.small.gpus - out[self.small.name]
            to_small = max(0, min(pending_small, room))
            out[self.small.name] += to_small
        out[self.large.name] += pending_other + pending_small - to_small
        return out

    def metric(self, view: ClusterView, ref: GroupRef, demand: dict[str, int] | None = None) -> float:
        demand = demand if demand is not None else self.demand(view)
        capacity = sum(node_gpus(n) for n in view.nodes_of(ref.name))
        return demand[ref.name] / max(capacity, ref.gpus)

    # --- the loop -------------------------------------------------------------------------------------
    def run_once(self) -> None:
        now = self.last_run = self.ctx.now_s()
        view = ClusterView.read(self.ctx.cluster, self.ctx.cloud)
        demand = self.demand(view)
        for tracker in self.trackers.values():
            group = view.by_name.get(tracker.ref.name)
            if group is not None:
                self._track(now, view, tracker, group, demand)

    def _instances(self, view: ClusterView, group: dict) -> tuple[list[dict], set[str], set[str]]:
        """The group's live instances, those still warming up and those protected (busy or booting)."""
        live = list(group.get("instances", ()))
        node_of = {}
        for n in view.nodes_of(group["name"]):
            pid = n.get("spec", {}).get("providerID") or ""
            node_of[pid.rsplit("/", 1)[-1]] = n["metadata"]["name"]
        now = self.ctx.now_s()
        warming = {i["id"] for i in live if now - _launched(i) < self.s.warmup_s}
        busy = set()
        for i in live:
            name = node_of.get(i["id"])
            if name is None or any(not is_daemonset_pod(p) for p in view.pods_on.get(name, ())):
                busy.add(i["id"])  # booting (no node yet) or running a pod
        return live, warming, busy

    def _track(self, now: float, view: ClusterView, t: Tracker, group: dict, demand: dict[str, int]) -> None:
        live, warming, busy = self._instances(view, group)
        t.warm_until = max((_launched(i) + self.s.warmup_s for i in live if i["id"] in warming), default=None)
        if busy != t.protected:  # the exporter's SetInstanceProtection calls
            self.ctx.cloud.protect(group["name"], len(busy ^ t.protected))
            t.protected = frozenset(busy)
        value = self.metric(view, t.ref, demand)
        high = value > self.s.target
        low = value < self.s.target * self.s.low_ratio
        t.high_since = (t.high_since if t.high_since is not None else now) if high else None
        t.low_since = (t.low_since if t.low_since is not None else now) if low else None
        current = max(1, len(live) - len(warming))  # an empty group counts as one node, as the metric does
        # CloudWatch invokes an Auto Scaling action again every minute while its alarm stays in ALARM
        ready = now - t.last_action >= PERIOD_S
        if t.high_since is not None and now - t.high_since >= self.s.high_periods * PERIOD_S and ready:
            target = min(group["max"], desired_after(current, value, self.s.target))
            t.owed = 0
            t.last_action = now
            if target > group["desired"]:
                self.ctx.cloud.set_desired(group["name"], target)
                group["desired"] = target
        elif (
            t.low_since is not None
            and now - t.low_since >= self.s.low_periods * PERIOD_S
            and ready
            and not warming
        ):
            target = max(group["min"], desired_after(current, value, self.s.target))
            t.owed = max(0, len(live) - target)
            t.last_action = now
        self._pay_owed(t, group, live, busy)

    def _pay_owed(self, t: Tracker, group: dict, live: list[dict], busy: set[str]) -> None:
        """Terminate owed instances among the unprotected (idle) ones, oldest first."""
        idle = sorted((i for i in live if i["id"] not in busy), key=lambda i: (_launched(i), i["id"]))
        for inst in idle:
            if t.owed <= 0 or group["desired"] <= group["min"]:
                break
            self.ctx.cloud.terminate_instance(group["name"], inst["id"])
            group["desired"] -= 1
            t.owed -= 1

    def next_wakeup(self) -> float | None:
        due = []
        for t in self.trackers.values():
            if t.high_since is not None:
                due.append(max(t.high_since + self.s.high_periods * PERIOD_S, t.last_action + PERIOD_S))
            if t.low_since is not None:
                at = max(t.low_since + self.s.low_periods * PERIOD_S, t.last_action + PERIOD_S)
                due.append(max(at, t.warm_until or at))
        due = [d for d in due if d > self.last_run]
        return min(due) if due else None


def _launched(instance: dict) -> float:
    at = instance.get("launched_at")
    return datetime.fromisoformat(at).timestamp() if at else 0.0
