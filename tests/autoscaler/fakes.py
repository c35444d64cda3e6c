"""In-memory implementations of the two interfaces and object builders for the controller's tests.

They keep what a real cluster and cloud would keep (objects, taints, desired sizes) and record every change,
so a test can assert both the outcome and that a dry run changed nothing. ``fail`` injects errors per method.
"""

from __future__ import annotations

import copy
from datetime import datetime

from clusterspec.names import NODE_GROUP_LABEL


def iso(t: datetime) -> str:
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


def pod(name, *, cpu="1", memory="1Gi", gpus=0, node=None, phase=None, owner="ReplicaSet", namespace="research",
        selector=None, created=None, annotations=None):  # fmt: skip
    requests = {"cpu": cpu, "memory": memory}
    if gpus:
        requests["nvidia.com/gpu"] = str(gpus)
    spec = {"containers": [{"name": "main", "image": "trainer", "resources": {"requests": requests}}]}
    if gpus:
        spec["tolerations"] = [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]
    if selector:
        spec["nodeSelector"] = selector
    if node:
        spec["nodeName"] = node
    meta = {"name": name, "namespace": namespace, "uid": f"uid-{name}", "annotations": annotations or {}}
    if created:
        meta["creationTimestamp"] = iso(created)
    if owner:
        meta["ownerReferences"] = [{"apiVersion": "apps/v1", "kind": owner, "name": f"{name}-owner", "uid": "o",
                                    "controller": True}]  # fmt: skip
    status = {"phase": phase or ("Running" if node else "Pending")}
    if node:
        status["startTime"] = iso(created) if created else "2026-01-01T00:00:00Z"
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec, "status": status}


def node(
    name, group: dict, instance_id: str, *, created: datetime, ready=True, taints=None, annotations=None
):
    zone = group["zones"][0]
    labels = {**group.get("labels", {}), NODE_GROUP_LABEL: group["name"], "kubernetes.io/hostname": name,
              "topology.kubernetes.io/zone": zone, "topology.kubernetes.io/region": group["region"]}  # fmt: skip
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": labels,
            "annotations": dict(annotations or {}),
            "creationTimestamp": iso(created),
        },  # fmt: skip
        "spec": {
            "providerID": f"aws:///{zone}/{instance_id}",
            "taints": list(taints or group.get("taints", [])),
        },
        "status": {
            "allocatable": dict(group["allocatable"]),
            "capacity": dict(group["allocatable"]),
            "conditions": [
                {"type": "Ready", "status": "True" if ready else "False", "lastTransitionTime": iso(created)}
            ],  # fmt: skip
        },
    }


def group(name, region, instance_type, *, min=0, max=10, desired=0, labels=None, taints=None, allocatable,
          priority=0, price=1.0):  # fmt: skip
    return {"name": name, "region": region, "zones": [f"{region}a"], "instance_type": instance_type, "min": min,
            "max": max, "desired": desired, "labels": dict(labels or {}), "taints": list(taints or []),
            "allocatable": allocatable, "priority": priority, "price_per_hour": price, "instances": []}  # fmt: skip


GPU_TAINT = {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}
V100 = {"cpu": "63260m", "memory": "470000Mi", "nvidia.com/gpu": "8", "pods": "110"}
CPU8 = {"cpu": "7820m", "memory": "30000Mi", "pods": "110"}


class _Failing:
    def __init__(self):
        self.fail: dict[str, list[Exception]] = {}  # method -> errors to raise, one per call
        self.changes: list[tuple] = []

    def _maybe_fail(self, method: str) -> None:
        errors = self.fail.get(method)
        if errors:
            raise errors.pop(0)


class FakeCluster(_Failing):
    def __init__(self, pods=(), nodes=(), pdbs=()):
        super().__init__()
        self.pods = {f"{p['metadata']['namespace']}/{p['metadata']['name']}": p for p in pods}
        self.nodes = {n["metadata"]["name"]: n for n in nodes}
        self.pdbs = list(pdbs)
        self.events: list[tuple[str, str, str, str]] = []
        self.state: dict[str, str] = {}
        self.status: dict[str, str] = {}
        self.refuse_evictions: set[str] = set()

    def list_pods(self):
        self._maybe_fail("list_pods")
        return copy.deepcopy(list(self.pods.values()))

    def list_nodes(self):
        self._maybe_fail("list_nodes")
        return copy.deepcopy(list(self.nodes.values()))

    def list_pdbs(self):
        return copy.deepcopy(self.pdbs)

    # fresh reads from the API (the live adapter's bypass the watch caches; here list_* is the truth already,
    # which a test may make differ from the snapshot it passes)
    def read_node(self, name):
        self._maybe_fail("read_node")
        return copy.deepcopy(self.nodes.get(name))

    def read_nodes(self):
        self._maybe_fail("read_nodes")
        return copy.deepcopy(list(self.nodes.values()))

    def read_pods_on_node(self, name):
        self._maybe_fail("read_pods_on_node")
        return copy.deepcopy([p for p in self.pods.values() if p["spec"].get("nodeName") == name])

    def taint_node(self, name, taint):
        self._maybe_fail("taint_node")
        taints = self.nodes[name]["spec"].setdefault("taints", [])
        if not any(t["key"] == taint["key"] for t in taints):
            taints.append(dict(taint))
        self.changes.append(("taint", name))

    def untaint_node(self, name, key):
        self._maybe_fail("untaint_node")
        spec = self.nodes[name]["spec"]
        spec["taints"] = [t for t in spec.get("taints", []) if t["key"] != key]
        self.changes.append(("untaint", name))

    def annotate_node(self, name, annotations):
        self._maybe_fail("annotate_node")
        current = self.nodes[name]["metadata"].setdefault("annotations", {})
        for k, v in annotations.items():
            if v is None:
                current.pop(k, None)
            else:
                current[k] = v
        self.changes.append(("annotate", name))

    def evict_pod(self, namespace, name):
        self._maybe_fail("evict_pod")
        key = f"{namespace}/{name}"
        if key in self.refuse_evictions:
            return False
        self.pods.pop(key, None)
        self.changes.append(("evict", key))
        return True

    def delete_node(self, name):
        self._maybe_fail("delete_node")
        self.nodes.pop(name, None)
        self.changes.append(("delete_node", name))

    def record_event(self, pod, reason, message, type="Normal"):  # noqa: A002
        self._maybe_fail("record_event")
        meta = pod["metadata"]
        self.events.append((f"{meta['namespace']}/{meta['name']}", reason, message, type))
        self.changes.append(("event", meta["name"]))

    def read_state(self):
        self._maybe_fail("read_state")
        self.state_reads = getattr(self, "state_reads", 0) + 1
        return dict(self.state)

    def write_state(self, data):
        self._maybe_fail("write_state")
        self.state = dict(data)
        self.changes.append(("write_state",))

    def write_status(self, data):
        self.status = dict(data)
        self.changes.append(("write_status",))


class FakeCloud(_Failing):
    """Groups in the snapshot format; ``set_desired`` launches instances (``launch=False`` leaves them out)."""

    def __init__(self, groups, *, launch=True, clock=None):
        """``clock``: launch times of new instances come from ``clock.now()``."""
        super().__init__()
        self.clock = clock
        self.groups = {g["name"]: g for g in groups}
        self.launch = launch
        self.failures: list[dict] = []
        self._next = 0

    def add_instance(self, group: str, launched_at: str) -> str:
        self._next += 1
        iid = f"i-{self._next:017x}"
        self.groups[group]["instances"].append({"id": iid, "state": "InService", "launched_at": launched_at})
        return iid

    def list_groups(self):
        self._maybe_fail("list_groups")
        return copy.deepcopy(list(self.groups.values()))

    def set_desired(self, group, desired):
        self._maybe_fail("set_desired")
        g = self.groups[group]
        if not g["min"] <= desired <= g["max"]:
            raise ValueError(f"desired {desired} outside [{g['min']}, {g['max']}]")
        while self.launch and len(g["instances"]) < desired:
            self.add_instance(group, iso(self.clock.now()))
        g["desired"] = desired
        self.changes.append(("set_desired", group, desired))

    def terminate_instance(self, group, instance_id):
        self._maybe_fail("terminate_instance")
        g = self.groups[group]
        if instance_id not in {i["id"] for i in g["instances"]}:
            raise ValueError(f"{instance_id} is not in {group}")
        g["instances"] = [i for i in g["instances"] if i["id"] != instance_id]
        g["desired"] -= 1
        self.changes.append(("terminate", group, instance_id))

    def scaling_failures(self, since):
        self._maybe_fail("scaling_failures")
        return [f for f in self.failures if datetime.fromisoformat(f["at"].replace("Z", "+00:00")) >= since]
