"""``step``: an AWS step-scaling policy on GPU utilization, as a lab without a Kubernetes-aware autoscaler has it.

One Auto Scaling group (the first region's highest-priority group with the most GPUs per node, which every pod
fits) carries two CloudWatch alarms on the cluster's GPU reservation (GPUs requested by running and pending pods
over the GPUs of the group's registered nodes, a custom metric; with no node and some demand it counts as far
above the target):

- scale out when the metric is at least ``high`` for ``high_periods`` one-minute periods: add
  ``steps`` nodes by how far above ``high`` it is (a few nodes per alarm), then a cooldown;
- scale in when it is below ``low`` for ``low_periods`` periods: remove one node, then a cooldown. The Auto
  Scaling group picks the instance by its termination policy (the oldest here), blind to the pods on it, so
  scale-in can kill running jobs.

No spill-over: a step policy belongs to one group in one region; a launch that fails is retried by the group.
"""

from __future__ import annotations

from dataclasses import dataclass

from autoscaler.sim.policies.base import Policy, PolicyContext
from autoscaler.sim.policies.view import ClusterView, group_gpus, node_gpus

PERIOD_S = 60.0


@dataclass(frozen=True)
class StepSettings:
    high: float = 0.8
    high_periods: int = 3
    low: float = 0.4
    low_periods: int = 15
    # (lower bound of metric minus high, nodes to add); the last step whose bound is reached applies
    steps: tuple[tuple[float, int], ...] = ((0.0, 1), (0.2, 2), (0.5, 4))
    cooldown_s: float = 300.0


class StepPolicy(Policy):
    loop_on_usage_change = True
    name = "step"

    def __init__(self, ctx: PolicyContext, settings: StepSettings | None = None):
        super().__init__(ctx)
        self.s = settings or StepSettings()
        groups = [g for g in ctx.gpu_groups() if g.region == ctx.spec.spill_over_order[0]]
        largest = max(g.gpus for g in groups)
        self.group = next(g for g in groups if g.gpus == largest)  # preference order: priority first
        self.high_since: float | None = None
        self.low_since: float | None = None
        self.cooldown_until = 0.0
        self.blocked = (
            False  # the alarm is due but the group cannot act (at its max or min): wait for a change
        )

    def metric(self, view: ClusterView) -> float:
        capacity = sum(node_gpus(n) for n in view.nodes_of(self.group.name))
        demand = view.demand_gpus()
        if capacity == 0:
            return float("inf") if demand else 0.0
        return demand / capacity

    def run_once(self) -> None:
        now = self.ctx.now_s()
        view = ClusterView.read(self.ctx.cluster, self.ctx.cloud)
        value = self.metric(view)
        self.high_since = (
            (self.high_since if self.high_since is not None else now) if value >= self.s.high else None
        )
        self.low_since = (
            (self.low_since if self.low_since is not None else now) if value < self.s.low else None
        )
        self.blocked = False
        group = view.by_name.get(self.group.name)
        if now < self.cooldown_until or group is None:
            return
        if self.high_since is not None and now - self.high_since >= self.s.high_periods * PERIOD_S:
            add = max(n for bound, n in self.s.steps if value - self.s.high >= bound)
            target = min(group["max"], group["desired"] + add)
            if target > group["desired"]:
                self.ctx.cloud.set_desired(self.group.name, target)
                self.cooldown_until = now + self.s.cooldown_s
            else:
                self.blocked = True
        elif self.low_since is not None and now - self.low_since >= self.s.low_periods * PERIOD_S:
            live = [
                i for i in group.get("instances", []) if i.get("state") not in ("terminated", "terminating")
            ]
            if len(live) > group["min"] and group_gpus(group):
                oldest = min(live, key=lambda i: (str(i.get("launched_at")), i["id"]))
                self.ctx.cloud.terminate_instance(self.group.name, oldest["id"])
                self.cooldown_until = now + self.s.cooldown_s
                self.low_since = now
            else:
                self.blocked = True

    def next_wakeup(self) -> float | None:
        if self.blocked:
            return None
        due = []
        if self.high_since is not None:
            due.append(self.high_since + self.s.high_periods * PERIOD_S)
        if self.low_since is not None:
            due.append(self.low_since + self.s.low_periods * PERIOD_S)
        if not due:
            return None
        return max(min(due), self.cooldown_until)
