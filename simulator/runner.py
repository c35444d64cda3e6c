"""One simulated run: a scenario's jobs through the cluster model under one policy, on a virtual clock.

The clock jumps from event to event (``ClusterModel.next_event_time``: submissions, boots, completions, launch
retries, capacity changes). The policy runs at scan-interval granularity (times ``k * scan_interval`` from the
start), and only when the cluster changed in a way a policy can react to (``ModelTracker.changed``, or a new
failed scaling activity) or when its own timer (``Policy.next_wakeup``) is due, never more than once per scan interval. Nothing is skipped that a
loop would have acted on: a loop with nothing changed and no timer due is a no-op for every policy here.

The run ends when every job has finished, or at the horizon (the latest ``submit + duration`` of the trace
plus ``horizon_slack_s``), whichever comes first.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

from autoscaler.loop import due as loop_due
from clusterspec.catalog import instance_types
from clusterspec.scheduler import PROFILES
from clusterspec.spec import Cluster as Spec
from simulator.api_calls import CountingCloud
from simulator.metrics import JobOutcome, Loop, RunRecord, Sample
from simulator.model.adapters import ModelCloud, ModelCluster
from simulator.model.boot import NodeLifecycle
from simulator.model.clock import VirtualClock, to_datetime
from simulator.model.cluster_model import ClusterModel
from simulator.model.pods import DURATION_ANNOTATION
from simulator.model.spec_groups import groups_from_spec
from simulator.policies.base import Policy, PolicyContext
from simulator.rendezvous import Rendezvous
from simulator.traces import Job
from simulator.tracker import ModelTracker
from simulator.waits import NodeTimes, job_waits
from simulator.workload import NAMESPACE, job_pods


@dataclass
class Scenario:
    """A workload to replay: jobs, the regions' capacity limits and capacity events (seconds from the start)."""

    name: str
    description: str
    jobs: list[Job]
    capacity: dict[tuple[str, str], int] = field(default_factory=dict)  # (region, type) -> instances at most
    capacity_events: list[tuple[float, str, str, int | None]] = field(default_factory=list)
    bursts: list | None = None  # explicit bursts (metrics.Burst); None: found in the trace
    horizon_slack_s: float = 2 * 86400.0
    horizon_s: float | None = None  # the run ends here at the latest (s from the start); None: the slack's
    lifecycle: NodeLifecycle | None = None  # the nodes' lifecycle timings (None: simulator/model/boot.py's)
    delete_after_s: float | None = None  # every pod deleted this long after its creation (the churn scenario)


PolicyFactory = Callable[[PolicyContext, "Run"], Policy]


class Run:
    def __init__(
        self,
        scenario: Scenario,
        spec: Spec,
        policy_name: str,
        factory: PolicyFactory,
        scheduler: str = "bin-packing",
    ):
        self.scenario = scenario
        self.spec = spec
        self.clock = VirtualClock()
        self.t0 = self.clock.now()
        self.scan = float(spec.autoscaler.scan_interval_s)
        self.model = ClusterModel(self.clock, capacity=scenario.capacity, lifecycle=scenario.lifecycle)
        self.profile = PROFILES[scheduler]  # provision/scheduler.py: the deployed profile or the default one
        self.model.scheduler.profile = self.profile
        self.regions = list(spec.spill_over_order)
        self.tracker = ModelTracker(self.regions, self.clock.now)
        self.model.subscribe(self.tracker)
        self.node_times = NodeTimes(self.clock.now)  # where each job's wait went (waits.py)
        self.model.subscribe(self.node_times)
        for group in groups_from_spec(spec.model_dump(mode="json")):
            self.model.cloud.add_group(group)
        self.cluster = ModelCluster(self.model)
        mixed = frozenset(  # Terraform gives a group of several instance types a mixed-instances policy
            spec.asg_name(r.name, g) for r in spec.regions for g in r.node_groups if len(g.instance_types) > 1
        )
        self.cloud = CountingCloud(ModelCloud(self.model), self.clock.now, "live", mixed)
        self.ctx = PolicyContext(
            cluster=self.cluster,
            cloud=self.cloud,
            clock=lambda: to_datetime(self.clock.now()),
            spec=spec,
            jobs=scenario.jobs,
            scan_interval_s=self.scan,
        )
        self.gpus_per_node = max(g.gpus for g in self.ctx.gpu_groups())
        self.pods_per_job = {}
        for job in scenario.jobs:
            self.model.queue.push(self.t0 + job.submit_s, self._submit, job)
        for at, region, itype, limit in scenario.capacity_events:
            self.model.cloud.schedule_capacity(self.t0 + at, region, itype, limit)
        self.total_pods = 0
        self.submitted = 0
        self.horizon = (
            self.t0 + scenario.horizon_s
            if scenario.horizon_s is not None
            else self.t0 + max(j.submit_s + j.duration_s for j in scenario.jobs) + scenario.horizon_slack_s
        )
        self.record = RunRecord(policy_name, regions=tuple(self.regions), scheduler=scheduler)
        self._instances_key: tuple | None = None
        self._activities = 0  # failed scaling activities seen by the last loop
        self._provisioned = (0, 0.0)
        if not self.profile.coscheduling:  # distributed jobs start when their last worker runs
            self.model.subscribe(Rendezvous(self.model, self.pods_per_job))
        self.policy = factory(self.ctx, self)
        self.cloud.mode = self.policy.api_mode
        self.record.commitment_discount = self.policy.commitment_discount

    # --- workload ---------------------------------------------------------------------------------------
    def _submit(self, job: Job) -> None:
        pods = job_pods(
            job,
            self.gpus_per_node,
            DURATION_ANNOTATION,
            gangs=self.profile.coscheduling,
            annotations=self.policy.pod_annotations,
        )
        selector = self.policy.node_selector(job)
        if selector:
            for pod in pods:
                pod["spec"]["nodeSelector"] = dict(selector)
        self.pods_per_job[job.id] = len(pods)
        self.total_pods += len(pods)
        self.submitted += 1
        for pod in pods:
            self.model.submit_pod(pod)
            if self.scenario.delete_after_s is not None:
                self.model.queue.push(self.clock.now() + self.scenario.delete_after_s, self._delete, pod)

    def _delete(self, pod: dict) -> None:
        meta = pod["metadata"]
        if self.model.store.find("pods", meta["namespace"], meta["name"]) is pod:
            self.model.delete_pod(meta["namespace"], meta["name"])

    def done(self) -> bool:
        return (
            self.submitted == len(self.scenario.jobs) and self.model.stats.pods_succeeded >= self.total_pods
        )

    # --- measuring ----------------------------------------------------------------------------------------
    def requested_gpus(self) -> int:
        types = instance_types()
        return sum(g.desired * types[g.instance_type].gpus for g in self.model.cloud.groups.values())

    def _instances(self) -> tuple[int, float]:
        cloud = self.model.cloud
        key = (cloud.launched, cloud.terminated)
        if key != self._instances_key:
            types = instance_types()
            gpus = 0
            cost = 0.0
            for inst in cloud.instances.values():
                gpus += types[inst.instance_type].gpus
                cost += cloud.groups[inst.group].spec.get("price_per_hour") or 0.0
            self._instances_key = key
            self._provisioned = (gpus, cost)
        return self._provisioned

    def _sample(self) -> None:
        tr = self.tracker
        gpus, cost = self._instances()
        sample = Sample(
            self.clock.now() - self.t0,
            tr.demand,
            tr.used,
            tr.capacity,
            gpus,
            round(cost, 6),
            tuple(tr.capacity_by_region[r] for r in self.regions),
        )
        samples = self.record.samples
        if samples and _same(samples[-1], sample):
            return
        if samples and samples[-1].t == sample.t:
            samples[-1] = sample
        else:
            samples.append(sample)

    # --- the loop ---------------------------------------------------------------------------------------
    def _grid(self, t: float) -> float:
        return self.t0 + math.ceil((t - self.t0) / self.scan - 1e-9) * self.scan

    def _next_loop(self, last: float | None) -> float:
        now = self.clock.now()
        earliest = now if last is None else max(now, last + self.scan)
        usage = self.policy.loop_on_usage_change
        window = self.policy.batch_window
        if window and self.tracker.new_pending and self.tracker.first_new is not None:
            # the live loop's rule (autoscaler.loop.due): pods pending open a window, closed lone_idle_s after a
            # pod that came alone, idle_s after the last of a burst, max_wait_s after the first at most, without
            # waiting for the scan interval
            tr = self.tracker
            due = loop_due(tr.first_new, tr.last_new, tr.new_count, tr.before_new, *window)
            return max(now, due)
        if self.tracker.changed(usage) or len(self.model.cloud.activities) != self._activities:
            return self._grid(earliest)
        wake = self.policy.next_wakeup()
        if wake is None:
            return math.inf
        return self._grid(max(wake, earliest))

    def _loop(self) -> None:
        groups = self.model.cloud.groups
        desired = {name: g.desired for name, g in groups.items()}
        before = self.requested_gpus()
        self.tracker.clear()
        self._activities = len(self.model.cloud.activities)
        self.policy.run_once()
        t = self.clock.now() - self.t0
        self.record.loops.append(Loop(t, before, self.requested_gpus(), self.tracker.demand))
        for name, g in groups.items():
            if g.desired != desired.get(name):
                self.record.scale_events.append(
                    {"t": t, "group": name, "region": g.region, "from": desired.get(name), "to": g.desired}
                )

    def run(self, progress: Callable[[float], None] | None = None) -> RunRecord:
        last: float | None = None
        self._sample()
        while not self.done():
            ev = self.model.next_event_time()
            loop_at = self._next_loop(last)
            nxt = min(ev if ev is not None else math.inf, loop_at)
            if nxt == math.inf or nxt > self.horizon:
                if nxt != math.inf:  # work left at the horizon: the run (and its bill) goes on until then
                    self.model.advance(self.horizon)
                    self._sample()
                break
            if ev is not None and ev <= loop_at:
                self.model.advance(ev)
            else:
                self.model.advance(loop_at)
                self._loop()
                last = loop_at
            self._sample()
            if progress:
                progress(self.clock.now() - self.t0)
        self.record.end_s = self.clock.now() - self.t0
        self.cloud.finish(self.clock.now(), self.scan, self.policy.publishing_regions)
        self.record.api_calls = self.cloud.total()
        self.record.api_calls_by_region = self.cloud.by_region()
        self.record.api_calls_by_operation = self.cloud.by_operation()
        self.record.gpu_hours_by_model = self._gpu_hours_by_model()
        self.record.jobs = self._outcomes()
        self.record.nodes_bought = sum(1 for inst in self.model.cloud.history if not inst.settled)
        self.record.pods = self.total_pods
        self.record.pods_never_ran = self._never_ran()
        self.record.job_waits = job_waits(self, self.node_times, self.t0)
        return self.record

    def _never_ran(self) -> int:
        """The jobs' pods that never started: per job, its pods less those that did (a replacement of a killed
        pod is the same pod again)."""
        started: dict[str, int] = {}
        for rec in self.model.records.values():
            kind, ns, name = rec.job
            if kind in ("job", "pod-group") and ns == NAMESPACE and rec.started is not None:
                started[name] = started.get(name, 0) + 1
        return sum(max(0, n - started.get(job, 0)) for job, n in self.pods_per_job.items())

    def _gpu_hours_by_model(self) -> dict[str, float]:
        """GPU-hours provisioned per GPU model (T4, V100, ...): how much of the work went to which GPUs."""
        types = instance_types()
        end = self.clock.now()
        out: dict[str, float] = {}
        for inst in self.model.cloud.history:
            itype = types[inst.instance_type]
            if not itype.gpus:
                continue
            hours = itype.gpus * (min(end, inst.terminated_at or end) - inst.launched_at) / 3600
            out[itype.gpu_model] = out.get(itype.gpu_model, 0.0) + hours
        return {k: round(v, 1) for k, v in sorted(out.items())}

    def _outcomes(self) -> dict[str, JobOutcome]:
        by_job: dict[str, list] = {}
        for rec in self.model.records.values():
            kind, ns, name = rec.job
            if kind in ("job", "pod-group") and ns == NAMESPACE:  # a gang is named after its job
                by_job.setdefault(name, []).append(rec)
        out = {}
        for job in self.scenario.jobs:
            recs = by_job.get(job.id, [])
            done = [r for r in recs if r.outcome == "Succeeded"]
            outcome = JobOutcome(job)
            if done and len(done) >= self.pods_per_job.get(job.id, 1):
                outcome.start_s = max(r.started for r in done) - self.t0
                outcome.end_s = max(r.finished for r in done) - self.t0
            killed: dict[float, float] = {}  # attempt (its start) -> when its first pod was killed
            for r in recs:
                if r.outcome in ("Killed", "Evicted") and r.started:
                    killed[r.started] = min(killed.get(r.started, math.inf), r.finished or r.started)
            outcome.kills = len(killed)
            outcome.kill_times = tuple(sorted(t - self.t0 for t in killed.values()))
            out[job.id] = outcome
        return out


def _same(a: Sample, b: Sample) -> bool:
    return (
        a.demand_gpus == b.demand_gpus
        and a.used_gpus == b.used_gpus
        and a.capacity_gpus == b.capacity_gpus
        and a.provisioned_gpus == b.provisioned_gpus
        and a.cost_per_hour == b.cost_per_hour
        and a.capacity_by_region == b.capacity_by_region
    )
