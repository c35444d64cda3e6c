"""AWS API calls per region, counted as each policy's real counterpart makes them.

A policy reaches the cloud through :class:`CountingCloud` (its ``ctx.cloud``), which forwards to the model and
records, per region and operation, the calls the real client would make:

- ``live`` (ours, ``autoscaler/adapters/aws.py``): every loop, in every region that has groups,
  ``DescribeAutoScalingGroups`` (one page per 50 groups: the API's default MaxRecords) and
  ``DescribeScalingActivities`` (the controller reads failures every loop); ``DescribeInstances`` when a
  region's groups list instances it has not seen (one call per 500 ids); ``DescribeLaunchTemplateVersions``
  for a group's launch template when its cached copy is older than 300 s (groups with a mixed-instances
  policy name their type in the overrides and need none); ``DescribeInstanceTypes`` once per region and type.
  The controller runs every scan interval; the simulator skips loops that could change nothing
  (docs/simulator.md), so the reads of the skipped loops are added at the end (:meth:`CountingCloud.finish`).
- ``cluster-autoscaler`` (its AWS provider, ``cloudprovider/aws``): each process refreshes its group cache once
  a minute (``refreshInterval``), two reads per region it manages (the tag-based discovery and
  ``DescribeAutoScalingGroups``), and one ``DescribeScalingActivities`` per group whose desired size exceeds its
  instances (``createPlaceholdersForDesiredNonStartedInstances`` / ``isNodeGroupAvailable``); a region no
  process manages (``ca-primary``'s others) gets no calls. Its corrections after giving up are one
  ``SetDesiredCapacity`` per node (``policies/ca_like.py``).
- ``aws`` (target tracking): scaling is done inside AWS (CloudWatch alarms, the group's own launches), so only
  the lab's metric publisher calls: ``PutMetricData`` once a minute per region (every metric in one call) and
  ``SetInstanceProtection`` per group when protections change (up to 50 instances a call).
- ``static``: the one ``SetDesiredCapacity`` per group.

Writes (``SetDesiredCapacity``, ``TerminateInstanceInAutoScalingGroup``) are counted where they are made.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable
from datetime import datetime

from simulator.model.adapters import ModelCloud

TEMPLATE_TTL_S = 300.0  # autoscaler/adapters/aws.py _TEMPLATE_TTL_S
GROUPS_PER_PAGE = 50
IDS_PER_CALL = 500
CA_REFRESH_S = 60.0
PUBLISH_PERIOD_S = 60.0
PROTECTION_IDS_PER_CALL = 50
MODES = ("live", "cluster-autoscaler", "aws", "static")


class CountingCloud:
    """``interfaces.Cloud`` over the model, counting the AWS calls of the policy's real counterpart."""

    def __init__(
        self, inner: ModelCloud, now: Callable[[], float], mode: str, mixed: frozenset[str] = frozenset()
    ) -> None:
        if mode not in MODES:
            raise ValueError(f"unknown API accounting {mode!r}; known: {', '.join(MODES)}")
        self.inner = inner
        self.now = now
        self.mode = mode
        self.mixed = (
            mixed  # groups with a mixed-instances policy: their type is in the overrides, no template
        )
        self.calls: dict[str, Counter[str]] = {}
        self.loops = 0  # loops whose reads were counted as they happened
        self._seen: dict[str, set[str]] = {}
        self._template_read: dict[str, float] = {}
        self._templates: Counter[str] = Counter()
        self._types: set[tuple[str, str]] = set()
        self._ca_last: dict[str, float] = {}  # per region: the last cache refresh of the process managing it
        self._ca_refreshes: Counter[str] = Counter()
        self._start = now()

    # --- bookkeeping ------------------------------------------------------------------------------------
    def count(self, region: str, operation: str, n: int = 1) -> None:
        if n:
            self.calls.setdefault(region, Counter())[operation] += n

    def _region(self, group: str) -> str:
        return self.inner.model.cloud.groups[group].region

    def _regions(self, groups: list[dict]) -> dict[str, list[dict]]:
        out: dict[str, list[dict]] = {}
        for g in groups:
            out.setdefault(g["region"], []).append(g)
        return out

    # --- interfaces.Cloud -------------------------------------------------------------------------------
    def list_groups(self, regions=None) -> list[dict]:
        """Every group, or those of ``regions`` (a cluster-autoscaler process reads only the regions it manages)."""
        groups = self.inner.list_groups()
        if regions is not None:
            groups = [g for g in groups if g["region"] in regions]
        if self.mode == "live":
            self._live_reads(groups)
        elif self.mode == "cluster-autoscaler":
            self._ca_reads(groups)
        return groups

    def scaling_failures(self, since: datetime) -> list[dict]:
        if self.mode == "live":
            for region in self._regions(self.inner.model.cloud.list_groups()):
                self.count(region, "DescribeScalingActivities")
        return self.inner.scaling_failures(since)

    def set_desired(self, group: str, desired: int) -> None:
        if self.mode != "aws":  # target tracking's changes are made by the Auto Scaling service itself
            self.count(self._region(group), "SetDesiredCapacity")
        self.inner.set_desired(group, desired)

    def terminate_instance(self, group: str, instance_id: str) -> None:
        if self.mode != "aws":
            self.count(self._region(group), "TerminateInstanceInAutoScalingGroup")
        self.inner.terminate_instance(group, instance_id)

    # --- what each client reads ---------------------------------------------------------------------------
    def _live_reads(self, groups: list[dict]) -> None:
        self.loops += 1
        now = self.now()
        for region, gs in self._regions(groups).items():
            self.count(region, "DescribeAutoScalingGroups", math.ceil(len(gs) / GROUPS_PER_PAGE))
            seen = self._seen.setdefault(region, set())
            ids = {i["id"] for g in gs for i in g.get("instances", ())}
            new = ids - seen
            self.count(region, "DescribeInstances", math.ceil(len(new) / IDS_PER_CALL))
            self._seen[region] = ids
            for g in gs:
                if (region, g["instance_type"]) not in self._types:
                    self._types.add((region, g["instance_type"]))
                    self.count(region, "DescribeInstanceTypes")
                if g["name"] in self.mixed:
                    continue
                if now - self._template_read.get(g["name"], -math.inf) >= TEMPLATE_TTL_S:
                    self._template_read[g["name"]] = now
                    self._templates[g["name"]] += 1
                    self.count(region, "DescribeLaunchTemplateVersions")

    def _ca_reads(self, groups: list[dict]) -> None:
        now = self.now()
        for region, gs in self._regions(groups).items():
            if now - self._ca_last.get(region, -math.inf) < CA_REFRESH_S:
                continue
            self._ca_last[region] = now
            self._ca_refreshes[region] += 1
            self.count(region, "DescribeAutoScalingGroups", 2 * math.ceil(len(gs) / GROUPS_PER_PAGE))
            placeholders = sum(1 for g in gs if g["desired"] > len(g.get("instances", ())))
            self.count(region, "DescribeScalingActivities", placeholders)

    def protect(self, group: str, changed: int) -> None:
        """The target-tracking publisher changed the scale-in protection of ``changed`` instances of a group."""
        self.count(self._region(group), "SetInstanceProtection", math.ceil(changed / PROTECTION_IDS_PER_CALL))

    def finish(self, end: float, scan_interval_s: float, publishing: tuple[str, ...] = ()) -> None:
        """Add the periodic calls the simulation did not make one by one: the reads of the live controller's
        skipped loops (and its launch-template refreshes, due every 300 s whatever the loops did), the
        cluster-autoscaler cache refreshes of the minutes without a loop, and the target-tracking publisher's
        metric in the regions in ``publishing``."""
        span = max(0.0, end - self._start)
        groups = list(self.inner.model.cloud.groups.values())
        if self.mode == "live":
            skipped = max(0, math.floor(span / scan_interval_s) + 1 - self.loops)
            per_region: Counter[str] = Counter(g.region for g in groups)
            for region, n in per_region.items():
                self.count(region, "DescribeAutoScalingGroups", skipped * math.ceil(n / GROUPS_PER_PAGE))
                self.count(region, "DescribeScalingActivities", skipped)
            due = math.floor(span / TEMPLATE_TTL_S) + 1
            for g in groups:
                if g.name not in self.mixed:
                    made = self._templates[g.name]
                    self.count(g.region, "DescribeLaunchTemplateVersions", max(0, due - made))
        elif self.mode == "cluster-autoscaler":  # each process refreshes once a minute, with work or without
            per_region = Counter(g.region for g in groups)
            for region, done in self._ca_refreshes.items():
                skipped = max(0, math.floor(span / CA_REFRESH_S) + 1 - done)
                pages = math.ceil(per_region[region] / GROUPS_PER_PAGE)
                self.count(region, "DescribeAutoScalingGroups", skipped * 2 * pages)
        for region in publishing:
            self.count(region, "PutMetricData", math.floor(span / PUBLISH_PERIOD_S) + 1)
        self.loops = 0

    # --- results ------------------------------------------------------------------------------------------
    def by_region(self) -> dict[str, int]:
        return {r: sum(c.values()) for r, c in sorted(self.calls.items())}

    def by_operation(self) -> dict[str, int]:
        total: Counter[str] = Counter()
        for c in self.calls.values():
            total.update(c)
        return dict(sorted(total.items()))

    def total(self) -> int:
        return sum(self.by_region().values())
