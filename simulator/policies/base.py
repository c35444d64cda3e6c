"""What every simulated policy gets and offers.

A policy acts only through ``interfaces.Cluster`` and ``interfaces.Cloud`` and reads time only from the injected
clock. The runner calls :meth:`Policy.run_once` at scan-interval granularity whenever the cluster changed or the
policy's own timer (:meth:`Policy.next_wakeup`) is due, so a week can be jumped through event by event.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from autoscaler.interfaces import Cloud, Cluster
from clusterspec.spec import Cluster as Spec
from simulator.traces import Job
from simulator.workload import GPU


@dataclass(frozen=True)
class GroupRef:
    name: str  # the Auto Scaling group's name (the planner's group name)
    region: str
    gpus: int
    priority: int
    max: int


@dataclass
class PolicyContext:
    cluster: Cluster
    cloud: Cloud
    clock: Callable[[], datetime]
    spec: Spec
    jobs: list[Job]
    scan_interval_s: float

    def now_s(self) -> float:
        return self.clock().timestamp()

    def gpu_groups(self) -> list[GroupRef]:
        """The groups the workload's pods can use (GPU groups whose only taint is the GPU one), in preference
        order: region spill-over order, then group priority (highest first)."""
        out = []
        for region in self.spec.spill_over_order:
            groups = [
                g
                for g in self.spec.region(region).node_groups
                if g.gpus > 0 and all(t.key == GPU for t in g.taints)
            ]
            for g in sorted(groups, key=lambda g: -g.priority):
                out.append(GroupRef(self.spec.asg_name(region, g), region, g.gpus, g.priority, g.max))
        return out


class Policy:
    """A scaling policy under simulation.

    Besides its loop, a policy says how the workload is submitted for it (``pod_annotations`` on every pod,
    :meth:`node_selector` per job), how its AWS calls are counted (``api_mode``, ``simulator/api_calls.py``)
    and what discount its instances get from a commitment (``commitment_discount``)."""

    name = "policy"
    loop_on_usage_change = (
        False  # True: a loop whenever GPU demand, use or capacity changes (utilization policies)
    )
    api_mode = "live"
    # the live process's pass timing (autoscaler.loop.due): a pending pod opens a window and the pass runs
    # lone_idle_s after a pod that came alone, once no new one came for idle_s after a burst's, at most max_wait_s
    # after the first: (idle_s, max_wait_s, lone_idle_s); None: loops on the scan-interval grid
    batch_window: tuple[float, float, float] | None = None
    pod_annotations: dict[str, str] = {}
    commitment_discount = 0.0
    publishing_regions: tuple[str, ...] = ()  # regions where it publishes a CloudWatch metric every minute

    def node_selector(self, job: Job) -> dict[str, str] | None:
        """A nodeSelector the lab would put on the job's pods under this policy (None: none)."""
        return None

    def __init__(self, ctx: PolicyContext):
        self.ctx = ctx

    def run_once(self) -> None:
        raise NotImplementedError

    def next_wakeup(self) -> float | None:
        """When (POSIX seconds on the injected clock) the policy needs a loop even if nothing changes; None if
        only a change in the cluster can make it act."""
        return None
