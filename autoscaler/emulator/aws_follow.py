"""Nodes that follow the instances of real (or moto's) Auto Scaling groups: the demo's Kubernetes side.

Every ``interval_s`` the follower lists the groups through a ``Cloud`` (the AWS adapter pointed at a moto
server) and mirrors them into the model: a new group becomes an external model group (same name, labels,
taints, allocatable), a new instance is attached (its node registers after the family's boot delay, counted
from the instance's launch time and compressed by the model's clock), an instance gone from its group (or
Terminating) is detached, which kills its pods and removes its node. A group missing from a listing (its
region failed) is left as it is.
"""

from __future__ import annotations

import logging
import threading
from datetime import datetime

from autoscaler.interfaces import Cloud
from autoscaler.model import ClusterModel

log = logging.getLogger(__name__)
GONE_STATES = (
    "Terminating",
    "Terminating:Wait",
    "Terminating:Proceed",
    "Terminated",
    "Detaching",
    "Detached",
)


def _epoch(value: str | None) -> float | None:
    if not value:
        return None
    return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()


class AwsFollower:
    def __init__(self, model: ClusterModel, cloud: Cloud, interval_s: float = 1.0) -> None:
        self.model = model
        self.cloud = cloud
        self.interval_s = interval_s
        self.errors = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def sync_once(self) -> None:
        groups = self.cloud.list_groups()  # outside the model's lock: it is network I/O
        with self.model.lock:
            self.model.advance()
            for g in groups:
                self._sync_group(g)

    def _sync_group(self, g: dict) -> None:
        model = self.model
        group = model.cloud.groups.get(g["name"])
        if group is None:
            spec = {k: v for k, v in g.items() if k != "instances"}
            spec["desired"] = 0
            group = model.cloud.add_group(spec, external=True)
        group.desired = int(g["desired"])
        live = {i["id"]: i for i in g.get("instances", []) if i.get("state") not in GONE_STATES}
        for inst in list(group.live()):
            if inst.id not in live:
                model.detach_instance(inst.id, "terminated in AWS")
        known = {i.id for i in group.live()}
        now = model.now()
        for iid, i in live.items():
            if iid not in known:
                launched = _epoch(i.get("launched_at"))
                zone = i.get("zone") or group.spec["zones"][0]
                model.attach_instance(g["name"], iid, zone, min(launched or now, now))

    def _run(self) -> None:
        last = None  # the last failure's reason: logged once, not on every tick
        while not self._stop.is_set():
            try:
                self.sync_once()
                if last is not None:
                    log.warning("following AWS works again after %d failed listing(s)", self.errors)
                last = None
            except Exception as e:  # a failed listing is retried on the next tick
                self.errors += 1
                reason = f"{type(e).__name__}: {e}"
                if reason != last:
                    log.warning(
                        "following AWS failed (retried every %.1f s, said once): %s", self.interval_s, reason
                    )
                last = reason
            self._stop.wait(self.interval_s)

    def start(self) -> AwsFollower:
        self._thread = threading.Thread(target=self._run, daemon=True, name="aws-follower")
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)
