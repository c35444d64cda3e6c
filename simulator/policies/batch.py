"""``batch``: ours. The real :class:`autoscaler.controller.Controller` (snapshot, ``core.plan``, act), the same
code ``autoscaler run`` runs, over the model's in-process ``Cluster``/``Cloud`` adapters and the virtual clock.

The controller keeps no timers of its own: its decisions depend on the cluster's state and on time through a few
thresholds. So besides any change in the cluster, its next loop is due when one of those thresholds is crossed:
an idle node reaching the idle threshold, an unregistered instance reaching the boot timeout, and, while pods
are pending, the next scan (spaced out, up to ``PENDING_MAX_S``, while loops change nothing, as a group's
failure back-off does not end sooner than that). A loop that tainted, untainted, evicted or terminated is
followed by another at the next scan: removals progress one step per loop.
"""

from __future__ import annotations

from autoscaler.controller import Controller, ControllerConfig
from autoscaler.core.config import PlannerConfig
from autoscaler.loop import BatchWindow
from simulator.policies.base import Policy, PolicyContext

PENDING_MAX_S = 60.0
PROGRESSING = frozenset({"taint", "untaint", "terminate", "evict"})  # removals go on in the next loop


def controller_config(ctx: PolicyContext) -> ControllerConfig:
    """The configuration ``autoscaler run`` derives from the spec: its ``autoscaler`` section, warm pools, regions."""
    spec = ctx.spec
    planner = PlannerConfig.from_dict(spec.autoscaler.model_dump())
    planner.warm_pool = {
        spec.asg_name(r.name, g): g.warm_pool for r in spec.regions for g in r.node_groups if g.warm_pool
    }
    return ControllerConfig(planner=planner, regions=list(spec.spill_over_order))


class BatchPolicy(Policy):
    name = "batch"
    # what autoscaler.service runs (its defaults)
    batch_window = (BatchWindow(10).idle_s, BatchWindow(10).max_wait_s, BatchWindow(10).lone_idle_s)

    def __init__(self, ctx: PolicyContext, run):
        super().__init__(ctx)
        self.run = run
        self.config = controller_config(ctx)
        self.controller = Controller(ctx.cluster, ctx.cloud, self.config, ctx.clock)
        self.last_run = float("-inf")
        self.acted = False
        self.quiet_pending = 0  # loops in a row with pods pending and nothing done
        self.errors: list[str] = []

    def run_once(self) -> None:
        self.last_run = self.ctx.now_s()
        result = self.controller.run_once()
        self.errors.extend(result.errors)
        self.acted = any(a["action"] in PROGRESSING and a.get("ok", True) for a in result.actions)
        pending = self.run.tracker.pending > 0
        self.quiet_pending = self.quiet_pending + 1 if pending and not self.acted else 0

    def next_wakeup(self) -> float | None:
        scan = self.ctx.scan_interval_s
        if self.acted:
            return self.last_run + scan
        planner = self.config.planner
        due = [t + planner.idle_threshold_s for t in self.run.tracker.idle_since.values()]
        registered = set(self.run.tracker.node_gpus)
        for inst in self.run.model.cloud.instances.values():
            if inst.node_name is None or inst.node_name not in registered:
                due.append(inst.launched_at + planner.boot_timeout_s)
        if self.config.planner.spare_gpus > 0 and self.run.tracker.usage_changed:
            # spare GPUs are topped up once pods took them: within a minute (the live loop: within a scan interval)
            due.append(self.last_run + PENDING_MAX_S)
        if self.run.tracker.pending:
            due.append(self.last_run + min(PENDING_MAX_S, scan * 2 ** max(0, self.quiet_pending - 1)))
        due = [t for t in due if t > self.last_run]
        return min(due) if due else None


class LeanBatchPolicy(BatchPolicy):
    """Ours at the cheap end of its one wait-cost trade-off: ``spare_gpus`` 0, no GPU kept free for the next jobs
    (docs/planner.md, "Spare GPUs"). ``batch`` runs the spec's setting."""

    name = "batch-lean"

    def __init__(self, ctx: PolicyContext, run):
        super().__init__(ctx, run)
        self.config.planner.spare_gpus = 0
