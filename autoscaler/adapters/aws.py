"""The AWS side (:class:`autoscaler.interfaces.Cloud`): Auto Scaling groups across every configured region.

Groups are discovered by the cluster-autoscaler tags (``k8s.io/cluster-autoscaler/enabled`` and
``k8s.io/cluster-autoscaler/<cluster>``), so groups made by other tools work too. An API failure in one region
is logged and counted and that region is left out of this loop; the others go on. botocore's adaptive retry
mode absorbs throttling. Sizes are checked here before any call (AWS rejects a desired capacity outside
[min, max], and so must we, since moto does not).

No lowering of desired capacity may let AWS choose which instance dies: every group is made to protect its
instances from scale-in (``protect``: NewInstancesProtectedFromScaleIn on the group, SetInstanceProtection on the
instances it already has), and instances leave only by TerminateInstanceInAutoScalingGroup on that instance.
Writes go through clients of their own with a deadline (one attempt, ``write_timeout_s``) shorter than the gap
between a leader's renew deadline and the lease's expiry, so a deposed leader's write cannot land after another
replica starts acting (autoscaler.leader). Groups fail alone: a launch template that cannot be read keeps the
group with its last known instance type and reports a failure for it (the planner backs it off and spills its
pods); ``unread_regions`` names the regions whose groups or activities could not be read in this pass.
"""

from __future__ import annotations

import logging
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

import boto3
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError

from autoscaler import metrics
from autoscaler.adapters import aws_models, failures, node_template
from autoscaler.core.timeutil import show_time
from clusterspec import catalog
from clusterspec.names import CA_CLUSTER_TAG_PREFIX, CA_ENABLED_TAG, EFA_RESOURCE, PRIORITY_TAG

log = logging.getLogger("autoscaler.aws")

AWS_ERRORS = (BotoCoreError, ClientError)
_TEMPLATE_TTL_S = 300.0
_ACTIVITY_HORIZON = timedelta(
    hours=1
)  # a launch activity lasts far less; older ones end the read  # launch template versions ($Latest/$Default) are re-read this often


_TRANSIENT = {
    "Throttling",
    "ThrottlingException",
    "RequestLimitExceeded",
    "ResourceContention",
    "ServiceUnavailable",
}


class CloudError(Exception):
    """A request the adapter refuses or AWS rejected (one line, names the group). ``permanent``: retrying the
    same request will not help (a ValidationError, a size the group cannot take): the controller backs the group
    off instead of asking again every pass."""

    def __init__(self, message: str, *, permanent: bool = False):
        super().__init__(message)
        self.permanent = permanent


def _permanent(err: Exception) -> bool:
    if not isinstance(err, ClientError):
        return False
    status = err.response.get("ResponseMetadata", {}).get("HTTPStatusCode") or 400
    return 400 <= status < 500 and err.response.get("Error", {}).get("Code") not in _TRANSIENT


@dataclass
class _Known:
    """What the last discovery saw of a group: enough to check a request before making it."""

    region: str
    min: int
    max: int
    desired: int
    instances: set[str] = field(default_factory=set)


def _launch_template(version: object, image: object) -> dict:
    """The snapshot's ``launch_template`` (docs/snapshot.md) from what AWS reports; an image that is no AMI id (a
    ``resolve:ssm:`` alias AWS did not resolve) is left out, so it never makes a node look drifted."""
    out = {}
    if isinstance(version, str | int) and str(version) and not str(version).startswith("$"):
        out["version"] = str(version)
    if isinstance(image, str) and image.startswith("ami-"):
        out["image"] = image
    return {"launch_template": out} if out else {}


class AwsCloud:
    def __init__(
        self,
        cluster_name: str,
        regions: list[str],
        *,
        endpoint_url: str | None = None,
        session: boto3.Session | None = None,
        max_attempts: int = 8,
        write_timeout_s: float = 4.0,
    ):
        self.cluster_name = cluster_name
        self.regions = list(regions)
        # without a session: one whose clients know only the operations called here (aws_models, ~10 MiB less)
        self._session = session or aws_models.session()
        self._config = Config(
            retries={"mode": "adaptive", "total_max_attempts": max_attempts},  # attempts, first included
            connect_timeout=5,
            read_timeout=30,
            user_agent_extra="research-autoscaler",
        )
        # writes: one attempt, connect + read within ``write_timeout_s`` (a failed write is retried next pass)
        self.write_timeout_s = write_timeout_s
        self._write_config = Config(
            retries={"mode": "standard", "total_max_attempts": 1},
            connect_timeout=min(1.0, write_timeout_s / 2),
            read_timeout=max(0.5, write_timeout_s - min(1.0, write_timeout_s / 2)),
            user_agent_extra="research-autoscaler",
        )
        self._endpoint_url = endpoint_url
        self._clients: dict[tuple[str, str], object] = {}
        self.unread_regions: set[str] = set()  # regions whose groups or activities this pass could not read
        self._group_types: dict[
            str, str
        ] = {}  # group -> last instance type read (kept when a template is gone)
        self._problems: dict[
            str, tuple[datetime, str]
        ] = {}  # group -> (since, why its template cannot be read)
        self._unprotected: dict[
            str, tuple[bool, list[str]]
        ] = {}  # group -> (flag off, unprotected instances)
        self._known: dict[str, _Known] = {}
        self._capacity: dict[tuple[str, str], catalog.InstanceType | None] = {}
        self._templates: dict[tuple, tuple[float, dict]] = {}
        self._launched: dict[str, dict[str, datetime]] = {}  # region -> instance id -> launch time
        self._current_templates: dict[str, tuple] = {}  # group -> (version, image) new instances get
        self._images: dict[str, str] = {}  # instance id -> the AMI it runs (drift: autoscaler/core/drift.py)
        self._pool: ThreadPoolExecutor | None = None  # the regions' reads, side by side (_each_region)

    # -- clients ------------------------------------------------------------------------------------------
    def client(self, service: str, region: str):
        """The boto3 client for ``service`` in ``region`` (tests register botocore event hooks on it)."""
        key = (service, region)
        if key not in self._clients:
            self._clients[key] = self._session.client(
                service, region_name=region, endpoint_url=self._endpoint_url, config=self._config
            )
        return self._clients[key]

    def write_client(self, region: str):
        """The Auto Scaling client for writes: one attempt within ``write_timeout_s``."""
        key = ("autoscaling-write", region)
        if key not in self._clients:
            self._clients[key] = self._session.client(
                "autoscaling", region_name=region, endpoint_url=self._endpoint_url, config=self._write_config
            )
        return self._clients[key]

    def _error(self, region: str, operation: str, err: Exception) -> None:
        metrics.API_ERRORS.labels("aws", region, operation).inc()
        log.warning("aws call failed", extra={"region": region, "operation": operation, "error": str(err)})

    # -- Cloud: discovery -----------------------------------------------------------------------------------
    def _each_region(self, fn, regions: list[str]) -> list[tuple[str, object, BaseException | None]]:
        """``fn(region)`` for every region, side by side (a pass waits for the slowest region, not their sum):
        (region, result, the AWS error it raised or None), in the order given. Clients are made here first (a
        boto3 session makes them one at a time); other errors are raised."""
        for region in regions:
            self.client("autoscaling", region), self.client("ec2", region)

        def one(region: str):
            try:
                return region, fn(region), None
            except AWS_ERRORS as e:
                return region, None, e

        if len(regions) <= 1:
            return [one(r) for r in regions]
        if self._pool is None:
            self._pool = ThreadPoolExecutor(len(self.regions), thread_name_prefix="aws-read")
        return list(self._pool.map(one, regions))

    def list_groups(self) -> list[dict]:
        groups: list[dict] = []
        self.unread_regions = set()
        for region, found, error in self._each_region(self._region_groups, self.regions):
            for name in [n for n, k in self._known.items() if k.region == region]:
                del self._known[name]
            if error is not None:
                self._error(region, "DescribeAutoScalingGroups", error)
                self.unread_regions.add(region)
                continue
            for group in found:
                self._known[group["name"]] = _Known(
                    region=region,
                    min=group["min"],
                    max=group["max"],
                    desired=group["desired"],
                    instances={i["id"] for i in group["instances"]},
                )
            groups.extend(found)
        return groups

    def _region_groups(self, region: str) -> list[dict]:
        asg = self.client("autoscaling", region)
        cluster_tag = CA_CLUSTER_TAG_PREFIX + self.cluster_name
        raw = []
        pages = asg.get_paginator("describe_auto_scaling_groups").paginate(
            Filters=[{"Name": "tag-key", "Values": [cluster_tag]}]
        )
        for page in pages:
            for g in page["AutoScalingGroups"]:
                tags = {t["Key"]: t.get("Value", "") for t in g.get("Tags", [])}
                if cluster_tag in tags and tags.get(CA_ENABLED_TAG, "").lower() == "true":
                    raw.append((g, tags))
        launched = self._launch_times(
            region, [i["InstanceId"] for g, _ in raw for i in g.get("Instances", [])]
        )
        out = []
        for g, tags in raw:
            name = g["AutoScalingGroupName"]
            try:
                out.append(self._group(region, g, tags, launched))
            except (node_template.TemplateTagError, CloudError, *AWS_ERRORS) as e:
                metrics.API_ERRORS.labels("aws", region, "NodeTemplate").inc()
                log.warning("group left out", extra={"group": name, "error": str(e)})
                continue
            self._unprotected[name] = (
                not g.get("NewInstancesProtectedFromScaleIn"),
                [
                    i["InstanceId"]
                    for i in g.get("Instances", [])
                    if not i.get("ProtectedFromScaleIn") and i.get("LifecycleState") == "InService"
                ],
            )
        return out  # list_groups remembers them (_known), once every region is read

    def _group(self, region: str, g: dict, tags: dict[str, str], launched: dict[str, datetime]) -> dict:
        name = g["AutoScalingGroupName"]
        try:
            itype = self._instance_type(region, g)
        except (CloudError, *AWS_ERRORS) as e:
            if name not in self._group_types:
                raise
            itype = self._group_types[
                name
            ]  # the group stays, with its last known type, and is reported failing
            if name not in self._problems:
                self._problems[name] = (datetime.now(UTC), f"launch template cannot be read: {e}"[:500])
            self._error(region, "DescribeLaunchTemplateVersions", e)
        else:
            self._group_types[name] = itype
            self._problems.pop(name, None)
        labels, taints, resources = node_template.from_tags(tags)
        capacity = self._instance_capacity(region, itype)
        allocatable = dict(capacity.allocatable()) if capacity else {}
        if EFA_RESOURCE not in resources:
            # EFA only where the launch template gives the interfaces, which its group declares with the
            # node-template tag (terraform/modules/node_group sets both from one variable); the type alone is not
            # enough: a template without EFA interfaces gives a node no vpc.amazonaws.com/efa
            allocatable.pop(EFA_RESOURCE, None)
        allocatable.update(resources)
        try:
            priority = int(tags.get(PRIORITY_TAG, "0"))
        except ValueError:
            raise CloudError(f"tag {PRIORITY_TAG}={tags[PRIORITY_TAG]!r} is not an integer") from None
        group = {
            "name": name,
            "region": region,
            "zones": sorted(g.get("AvailabilityZones", [])),
            "instance_type": itype,
            "min": int(g["MinSize"]),
            "max": int(g["MaxSize"]),
            "desired": int(g["DesiredCapacity"]),
            "labels": {**node_template.well_known_labels(name, region, itype), **labels},
            "taints": taints,
            "priority": priority,
            "instances": [
                {
                    "id": i["InstanceId"],
                    "state": i.get("LifecycleState", "InService"),  # as Auto Scaling reports it
                    "zone": i.get("AvailabilityZone"),
                    "launched_at": show_time(launched.get(i["InstanceId"])),
                    **_launch_template(
                        (i.get("LaunchTemplate") or {}).get("Version"), self._images.get(i["InstanceId"])
                    ),
                }
                for i in g.get("Instances", [])
            ],
        }
        current = self._current_templates.get(name)
        if current is not None:
            group.update(_launch_template(*current))
        if allocatable:
            group["allocatable"] = allocatable
        price = capacity.price_in(region) if capacity else None
        if price is not None:
            group["price_per_hour"] = price
        return group

    def _launch_times(self, region: str, ids: list[str]) -> dict[str, datetime]:
        """Launch time per instance; an instance's never changes, so only new instances are looked up."""
        known = self._launched.setdefault(region, {})
        new = [i for i in ids if i not in known]
        ec2 = self.client("ec2", region)
        for start in range(0, len(new), 500):
            try:
                pages = ec2.get_paginator("describe_instances").paginate(InstanceIds=new[start : start + 500])
                for page in pages:
                    for res in page["Reservations"]:
                        for inst in res["Instances"]:
                            if inst.get("LaunchTime"):
                                known[inst["InstanceId"]] = inst["LaunchTime"]
                            if inst.get("ImageId"):
                                self._images[inst["InstanceId"]] = inst["ImageId"]
            except AWS_ERRORS as e:  # launch times only refine boot timeouts; the groups stay usable
                self._error(region, "DescribeInstances", e)
        self._launched[region] = {i: known[i] for i in ids if i in known}  # forget instances that are gone
        if len(self._images) > 2 * max(1, sum(len(v) for v in self._launched.values())):
            live = {i for v in self._launched.values() for i in v}
            self._images = {i: a for i, a in self._images.items() if i in live}
        return self._launched[region]

    # -- instance types --------------------------------------------------------------------------------------
    def _instance_type(self, region: str, g: dict) -> str:
        mixed = g.get("MixedInstancesPolicy")
        if mixed:
            lt = mixed["LaunchTemplate"]
            for override in lt.get("Overrides") or []:
                if override.get("InstanceType"):
                    # the type comes from the override, so the template is not read: drift by the version the
                    # group names (terraform/modules/node_group names a number), not by image
                    version = lt["LaunchTemplateSpecification"].get("Version")
                    self._current_templates[g["AutoScalingGroupName"]] = (version, None)
                    return override["InstanceType"]
            return self._template_type(region, lt["LaunchTemplateSpecification"], g["AutoScalingGroupName"])
        if g.get("LaunchTemplate"):
            return self._template_type(region, g["LaunchTemplate"], g["AutoScalingGroupName"])
        if g.get("LaunchConfigurationName"):
            asg = self.client("autoscaling", region)
            found = asg.describe_launch_configurations(
                LaunchConfigurationNames=[g["LaunchConfigurationName"]]
            )
            for lc in found["LaunchConfigurations"]:
                return lc["InstanceType"]
        raise CloudError(f"group {g['AutoScalingGroupName']} has no launch template or configuration")

    def _template_type(self, region: str, spec: dict, group: str | None = None) -> str:
        data = self._template_data(region, spec, group)
        if not data.get("InstanceType"):
            ref = spec.get("LaunchTemplateId") or spec.get("LaunchTemplateName")
            raise CloudError(f"launch template {ref} names no instance type")
        return data["InstanceType"]

    def _template_data(self, region: str, spec: dict, group: str | None = None) -> dict:
        """The launch template version's data (cached a while); records the version number and image the
        group's new instances get."""
        version = spec.get("Version") or "$Default"
        ref = {"LaunchTemplateId": spec["LaunchTemplateId"]} if spec.get("LaunchTemplateId") else {}
        if not ref:
            ref = {"LaunchTemplateName": spec["LaunchTemplateName"]}
        key = (region, tuple(ref.values()), version)
        cached = self._templates.get(key)
        if cached and time.monotonic() - cached[0] < _TEMPLATE_TTL_S:
            data = cached[1]
        else:
            ec2 = self.client("ec2", region)
            # ResolveAlias: an image given as resolve:ssm:<parameter> is shown as the AMI it resolves to now, so
            # a new image published to the parameter (invoke bake-ami) is drift too (EC2 API reference,
            # DescribeLaunchTemplateVersions)
            found = ec2.describe_launch_template_versions(**ref, Versions=[version], ResolveAlias=True)[
                "LaunchTemplateVersions"
            ]
            if not found:
                raise CloudError(f"launch template {next(iter(ref.values()))} version {version} not found")
            data = dict(found[0].get("LaunchTemplateData", {}))
            data["x-version"] = str(found[0].get("VersionNumber") or "")
            self._templates[key] = (time.monotonic(), data)
        if group is not None:
            self._current_templates[group] = (data.get("x-version"), data.get("ImageId"))
        return data

    def _instance_capacity(self, region: str, itype: str) -> catalog.InstanceType | None:
        """From DescribeInstanceTypes (cached for the process), else the bundled table, else None."""
        key = (region, itype)
        if key not in self._capacity:
            try:
                found = self.client("ec2", region).describe_instance_types(InstanceTypes=[itype])[
                    "InstanceTypes"
                ]
                self._capacity[key] = node_template.instance_type_from_ec2(found[0]) if found else None
            except AWS_ERRORS as e:
                code = getattr(e, "response", {}).get("Error", {}).get("Code", "")
                if code != "InvalidInstanceType":
                    self._error(region, "DescribeInstanceTypes", e)
                    return catalog.instance_types().get(itype)  # not cached: ask again next loop
                self._capacity[key] = None
            if self._capacity[key] is None:
                self._capacity[key] = catalog.instance_types().get(itype)
        return self._capacity[key]

    # -- Cloud: actions ------------------------------------------------------------------------------------
    def _lookup(self, group: str) -> _Known:
        try:
            return self._known[group]
        except KeyError:
            raise CloudError(
                f"group {group} is not a discovered group of cluster {self.cluster_name}"
            ) from None

    def set_desired(self, group: str, desired: int) -> None:
        known = self._lookup(group)
        if not known.min <= desired <= known.max:
            raise CloudError(
                f"group {group}: desired {desired} is outside [{known.min}, {known.max}]", permanent=True
            )
        try:
            self.write_client(known.region).set_desired_capacity(
                AutoScalingGroupName=group, DesiredCapacity=desired, HonorCooldown=False
            )
        except AWS_ERRORS as e:
            self._error(known.region, "SetDesiredCapacity", e)
            raise CloudError(
                f"group {group}: SetDesiredCapacity {desired} failed: {e}", permanent=_permanent(e)
            ) from None
        known.desired = desired

    def terminate_instance(self, group: str, instance_id: str) -> None:
        known = self._lookup(group)
        if instance_id not in known.instances:
            raise CloudError(f"instance {instance_id} is not in group {group}")
        if known.desired - 1 < known.min:
            raise CloudError(
                f"group {group}: terminating {instance_id} would go below the minimum {known.min}"
            )
        try:
            self.write_client(known.region).terminate_instance_in_auto_scaling_group(
                InstanceId=instance_id, ShouldDecrementDesiredCapacity=True
            )
        except AWS_ERRORS as e:
            self._error(known.region, "TerminateInstanceInAutoScalingGroup", e)
            raise CloudError(f"group {group}: terminating {instance_id} failed: {e}") from None
        known.desired -= 1
        known.instances.discard(instance_id)

    def unprotected_groups(self) -> list[str]:
        """Groups seen by the last discovery that do not yet protect all their instances from scale-in."""
        return sorted(
            g for g, (flag_off, ids) in self._unprotected.items() if g in self._known and (flag_off or ids)
        )

    def protect(self, group: str) -> None:
        """Adopt a group: protect new instances from scale-in (NewInstancesProtectedFromScaleIn) and the instances
        it has (SetInstanceProtection, 50 per call), so that no lowering of desired capacity can pick one."""
        known = self._lookup(group)
        flag_off, ids = self._unprotected.get(group, (False, []))
        asg = self.write_client(known.region)
        try:
            if flag_off:
                asg.update_auto_scaling_group(
                    AutoScalingGroupName=group, NewInstancesProtectedFromScaleIn=True
                )
            for start in range(0, len(ids), 50):
                asg.set_instance_protection(
                    AutoScalingGroupName=group, InstanceIds=ids[start : start + 50], ProtectedFromScaleIn=True
                )
        except AWS_ERRORS as e:
            self._error(known.region, "SetInstanceProtection", e)
            raise CloudError(f"group {group}: protecting its instances from scale-in failed: {e}") from None
        self._unprotected[group] = (False, [])

    # -- Cloud: failures -------------------------------------------------------------------------------------
    def scaling_failures(self, since: datetime) -> list[dict]:
        out: list[dict] = []
        ours = {r: {n for n, k in self._known.items() if k.region == r} for r in self.regions}
        read = [r for r in self.regions if ours[r]]
        for region, found, error in self._each_region(
            lambda r: self._region_failures(r, ours[r], since), read
        ):
            if error is not None:
                self._error(region, "DescribeScalingActivities", error)
                self.unread_regions.add(region)
                continue
            out.extend(found)
        for name, (at, message) in sorted(self._problems.items()):
            known = self._known.get(name)
            if known is not None:  # reported with the time it was first seen: the planner counts it once
                out.append({"group": name, "region": known.region, "reason": "unknown", "message": message,
                            "at": show_time(at), "missing": 0})  # fmt: skip
        return out

    def _region_failures(self, region: str, ours: set[str], since: datetime) -> list[dict]:
        """Failed activities of our groups that ENDED at or after ``since`` (an activity that started before the
        last pass may fail after it). Activities come newest start first; reading stops once they started more
        than ``_ACTIVITY_HORIZON`` before ``since``."""
        out = []
        horizon = since - _ACTIVITY_HORIZON
        pages = self.client("autoscaling", region).get_paginator("describe_scaling_activities").paginate()
        for page in pages:
            older = False
            for act in page["Activities"]:
                started = act.get("StartTime")
                if started and started < horizon:
                    older = True
                    continue
                ended = act.get("EndTime") or started
                if act.get("AutoScalingGroupName") not in ours or act.get("StatusCode") not in (
                    "Failed",
                    "Cancelled",
                ):
                    continue
                if ended is None or ended < since:
                    continue
                message = act.get("StatusMessage") or act.get("Description", "")
                out.append(
                    {
                        "group": act["AutoScalingGroupName"],
                        "region": region,
                        "reason": failures.classify(message),
                        "message": message,
                        "at": show_time(ended),
                        "missing": failures.missing_instances(act.get("Description", "")),
                    }
                )
            if older:
                break
        return out
