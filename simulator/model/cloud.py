"""The cloud side of the model: Auto Scaling groups, instances, regional capacity and scaling activities.

Semantics follow EC2 Auto Scaling: ``set_desired`` above ``max`` (or below ``min``) is a ValidationError; a
larger desired capacity launches instances, spread over the group's zones; when the region has less capacity
for the instance type than asked, what fits launches, a failed activity (InsufficientInstanceCapacity,
``missing`` = the shortfall) is recorded, desired capacity stays where it was set and the group retries every
``launch_retry_s``; a smaller desired capacity terminates instances without pods first (pending ones, then
idle nodes, newest first). Instances boot: lifecycle state ``Pending`` -> ``InService`` (EC2 ``running``) after INSTANCE_RUNNING_S,
then the node registers after the family's boot delay (``boot.py``).

"""

from __future__ import annotations

import copy
import ipaddress
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

from clusterspec.catalog import instance_types
from simulator.model.boot import INSTANCE_RUNNING_S, boot_delay
from simulator.model.clock import iso, to_datetime
from simulator.model.event_queue import EventQueue

PENDING, RUNNING, TERMINATED = "Pending", "InService", "Terminated"  # Auto Scaling lifecycle states


class ValidationError(ValueError):
    """What the Auto Scaling API answers with ValidationError (sizes out of range, unknown instance)."""


@dataclass
class Instance:
    id: str
    group: str
    region: str
    zone: str
    instance_type: str
    launched_at: float
    state: str = PENDING
    node_name: str | None = None
    private_ip: str = ""
    registered_at: float | None = None  # when its node joined
    terminated_at: float | None = None
    settled: bool = False  # part of the cluster from the start: its node registers Ready, devices advertised
    _snap: dict | None = field(default=None, repr=False, compare=False)

    def snapshot(self) -> dict:
        """The snapshot entry, shared between calls until the state changes (read-only, like all lists)."""
        if self._snap is None or self._snap["state"] != self.state:
            self._snap = {
                "id": self.id,
                "state": self.state,
                "launched_at": iso(self.launched_at),
                "zone": self.zone,
                "instance_type": self.instance_type,
            }
        return self._snap


@dataclass
class Group:
    spec: dict  # the snapshot-format dict it was built from (labels, taints, allocatable, price...)
    desired: int
    instances: list[Instance] = field(default_factory=list)
    retry_scheduled: bool = False

    @property
    def name(self) -> str:
        return self.spec["name"]

    @property
    def region(self) -> str:
        return self.spec["region"]

    @property
    def instance_type(self) -> str:
        return self.spec["instance_type"]

    def live(self) -> list[Instance]:
        return [i for i in self.instances if i.state != TERMINATED]

    def snapshot(self) -> dict:
        """A new top-level dict; nested values (labels, taints, allocatable) are shared and read-only."""
        out = {k: v for k, v in self.spec.items() if k != "instances"}
        out["desired"] = self.desired
        out["instances"] = [i.snapshot() for i in self.instances if i.state != TERMINATED]
        return out


def _private_ip(g: Group, zone: str, n: int, group_index: int) -> str:
    """An address for the ``n``-th instance: in its zone's private subnet when the group knows its VPC
    (``x-vpc-cidr``; the subnet is the address plan's ``cidrsubnet(vpc, 3, zone index)``), else a made-up one."""
    vpc = g.spec.get("x-vpc-cidr")
    if not vpc:
        return f"10.{group_index % 200 + 20}.{(n >> 8) & 255}.{n & 255}"
    zones = g.spec.get("zones") or []
    subnets = list(ipaddress.ip_network(vpc).subnets(prefixlen_diff=3))
    subnet = subnets[zones.index(zone) if zone in zones else 0]
    return str(subnet.network_address + 10 + n % (subnet.num_addresses - 20))


def _fill_defaults(spec: dict) -> dict:
    spec = copy.deepcopy(spec)
    itype = instance_types().get(spec["instance_type"])
    spec.setdefault("zones", [f"{spec['region']}a"])
    spec.setdefault("min", 0)
    spec.setdefault("labels", {})
    spec.setdefault("taints", [])
    spec.setdefault("priority", 0)
    if itype is not None:
        spec.setdefault("allocatable", itype.allocatable())
        spec.setdefault("price_per_hour", itype.price_in(spec["region"]))
    if "allocatable" not in spec:
        raise ValidationError(f"group {spec['name']}: unknown instance type and no allocatable given")
    return spec


class CloudModel:
    def __init__(
        self,
        now: Callable[[], float],
        queue: EventQueue,
        *,
        on_running: Callable[[Instance], None],
        on_booted: Callable[[Instance], None],
        on_terminated: Callable[[Instance, str], None],
        has_pods: Callable[[Instance], bool],
        settle: Callable[[], None] = lambda: None,
        boot_delays: dict[str, float] | None = None,
        capacity: dict | None = None,
        launch_retry_s: float = 120.0,
        seed: int = 0,
        scale: Callable[[float], float] = lambda s: s,
    ) -> None:
        self._now = now
        self._scale = scale
        self._queue = queue
        self._on_running = on_running
        self._on_booted = on_booted
        self._on_terminated = on_terminated
        self._has_pods = has_pods
        self._settle = settle  # the Kubernetes side schedules what is due before the cloud acts
        self.boot_delays = dict(boot_delays or {})
        self.capacity: dict[tuple[str, str], int] = {}
        for key, limit in (capacity or {}).items():
            region, itype = key.split("/", 1) if isinstance(key, str) else key
            self.capacity[(region, itype)] = int(limit)
        self.launch_retry_s = launch_retry_s
        self.groups: dict[str, Group] = {}
        self.instances: dict[str, Instance] = {}  # live instances by id
        self.history: list[Instance] = []  # every instance ever launched or attached (GPU-hours, cost)
        self.activities: list[dict] = []  # failed scaling activities, oldest first
        self.api_calls: Counter[str] = Counter()
        self.launched = 0
        self.terminated = 0
        self._seed = seed
        self._ids = 0
        self._ips = 0

    # --- groups ------------------------------------------------------------------------------------------
    def add_group(self, spec: dict, *, booted: bool = True) -> Group:
        """Add a group; its initial ``desired`` instances start already running (booted) unless told not."""
        spec = _fill_defaults(spec)
        group = Group(spec=spec, desired=0)
        self.groups[group.name] = group
        desired = int(spec.get("desired", spec["min"]))
        if desired:
            group.desired = desired
            for _ in range(desired):
                self._launch(group, booted=booted)
        return group

    def group(self, name: str) -> Group:
        try:
            return self.groups[name]
        except KeyError:
            raise ValidationError(f"AutoScalingGroup name not found - {name}") from None

    def list_groups(self) -> list[dict]:
        self.api_calls["list_groups"] += 1
        self._settle()
        return [g.snapshot() for g in self.groups.values()]

    # --- capacity ----------------------------------------------------------------------------------------
    def set_capacity(self, region: str, instance_type: str, limit: int | None) -> None:
        """Instances of the type the region can hold at once (None: unlimited); short groups retry now."""
        if limit is None:
            self.capacity.pop((region, instance_type), None)
        else:
            self.capacity[(region, instance_type)] = int(limit)
        for g in self.groups.values():
            if g.region == region and g.instance_type == instance_type:
                self._reconcile(g)

    def schedule_capacity(self, at: float, region: str, instance_type: str, limit: int | None) -> None:
        """A capacity event at model time ``at`` (e.g. a burst of InsufficientInstanceCapacity)."""
        self._queue.push(at, self.set_capacity, region, instance_type, limit)

    def _room(self, region: str, itype: str) -> int | None:
        limit = self.capacity.get((region, itype))
        if limit is None:
            return None
        used = sum(
            1
            for i in self.instances.values()
            if i.region == region and i.instance_type == itype and i.state != TERMINATED
        )
        return max(0, limit - used)

    # --- scaling -----------------------------------------------------------------------------------------
    def set_desired(self, name: str, desired: int) -> None:
        self.api_calls["set_desired"] += 1
        self._settle()
        g = self.group(name)
        desired = int(desired)
        if desired > g.spec["max"]:
            raise ValidationError(
                f"New SetDesiredCapacity value {desired} is above max value {g.spec['max']} for the AutoScalingGroup."
            )
        if desired < g.spec["min"]:
            raise ValidationError(
                f"New SetDesiredCapacity value {desired} is below min value {g.spec['min']} for the AutoScalingGroup."
            )
        g.desired = desired
        self._reconcile(g)

    def terminate_instance(self, name: str, instance_id: str) -> None:
        """TerminateInstanceInAutoScalingGroup with ShouldDecrementDesiredCapacity."""
        self.api_calls["terminate_instance"] += 1
        self._settle()
        g = self.group(name)
        inst = self.instances.get(instance_id)
        if inst is None or inst.group != name or inst.state == TERMINATED:
            raise ValidationError(
                f"Instance Id not found - No managed instance found for instance ID {instance_id}"
            )
        if g.desired - 1 < g.spec["min"]:
            raise ValidationError(
                f"Currently, desiredSize equals minSize ({g.spec['min']}). Terminating instance"
                " without replacement will violate group's min size constraint."
            )
        g.desired -= 1
        self.terminate(inst, "terminated by TerminateInstanceInAutoScalingGroup")

    def scaling_failures(self, since) -> list[dict]:
        self.api_calls["scaling_failures"] += 1
        t = since.timestamp()
        out = []
        for a in reversed(self.activities):
            if a["_t"] < t:
                break
            out.append({k: v for k, v in a.items() if k != "_t"})
        return out[::-1]

    def _reconcile(self, g: Group) -> None:
        live = g.live()
        need = g.desired - len(live)
        if need > 0:
            room = self._room(g.region, g.instance_type)
            n = need if room is None else min(need, room)
            for _ in range(n):
                self._launch(g)
            if n < need:
                self._fail(g, need - n)
        elif need < 0:
            for inst in self._termination_order(live)[:-need]:
                self.terminate(inst, "terminated because the group's desired capacity was lowered")

    def _termination_order(self, live: list[Instance]) -> list[Instance]:
        def rank(i: Instance):
            if i.node_name is None:
                cls = 0
            elif not self._has_pods(i):
                cls = 1
            else:
                cls = 2
            return (cls, -i.launched_at)

        return sorted(live, key=rank)

    def _fail(self, g: Group, missing: int) -> None:
        now = self._now()
        zone = g.spec["zones"][0]
        self.activities.append(
            {
                "group": g.name,
                "reason": "insufficient-capacity",
                "message": (
                    f"Launching {missing} new EC2 instances. Status Reason: InsufficientInstanceCapacity - "
                    f"We currently do not have sufficient {g.instance_type} capacity in the Availability Zone "
                    f"you requested ({zone}). Our system will be working on provisioning additional capacity. "
                    "Launching EC2 instance failed."
                ),
                "at": to_datetime(now),
                "missing": missing,
                "_t": now,
            }
        )
        if not g.retry_scheduled:
            g.retry_scheduled = True
            self._queue.push(now + self._scale(self.launch_retry_s), self._retry, g.name)

    def _retry(self, name: str) -> None:
        g = self.groups.get(name)
        if g is not None:
            g.retry_scheduled = False
            self._reconcile(g)

    # --- instances ---------------------------------------------------------------------------------------
    def _next_id(self) -> str:
        self._ids += 1
        return f"i-{(self._seed << 32) + self._ids:017x}"

    def _zone(self, g: Group) -> str:
        counts = Counter(i.zone for i in g.live())
        return min(g.spec["zones"], key=lambda z: (counts[z], g.spec["zones"].index(z)))

    def _launch(self, g: Group, booted: bool = False) -> Instance:
        now = self._now()
        return self.attach(g.name, self._next_id(), self._zone(g), now, booted=booted)

    def attach(
        self, group: str, instance_id: str, zone: str, launched_at: float, booted: bool = False
    ) -> Instance:
        """Track an instance (launched by the model or found outside it) and schedule its boot."""
        g = self.group(group)
        inst = Instance(
            id=instance_id,
            group=group,
            region=g.region,
            zone=zone,
            instance_type=g.instance_type,
            launched_at=launched_at,
        )
        self._ips += 1
        inst.private_ip = _private_ip(g, zone, self._ips, list(self.groups).index(group))
        self.instances[instance_id] = inst
        self.history.append(inst)
        g.instances.append(inst)
        self.launched += 1
        if booted:
            inst.settled = True
            self._running(inst)
            self._booted(inst)
            return inst
        self._boot(inst, launched_at)
        return inst

    def _boot(self, inst: Instance, start: float) -> None:
        delay = self._scale(boot_delay(inst.instance_type, self.boot_delays))
        self._queue.push(start + min(self._scale(INSTANCE_RUNNING_S), delay), self._running, inst)
        self._queue.push(start + delay, self._booted, inst)

    def _running(self, inst: Instance) -> None:
        if inst.state == PENDING:
            inst.state = RUNNING
            self._on_running(inst)

    def _booted(self, inst: Instance) -> None:
        if inst.state == RUNNING and inst.node_name is None:
            inst.registered_at = self._now()
            self._on_booted(inst)

    def terminate(self, inst: Instance, why: str) -> None:
        if inst.state == TERMINATED:
            return
        inst.state = TERMINATED
        inst.terminated_at = self._now()
        self.terminated += 1
        self.instances.pop(inst.id, None)
        g = self.groups.get(inst.group)
        if g is not None:
            g.instances = [i for i in g.instances if i is not inst]
        self._on_terminated(inst, why)
