"""The local cluster's nodes: one Node per instance of the spec's Auto Scaling groups in the embedded AWS (moto),
registered as the instance's kubelet registers it on AWS, and kwok for its heartbeats and its pods.

A node's life, the delays of ``simulator/model/boot.py`` (their sources there) divided by ``compression``:

    instance launched --boot_delay(type)--> the kubelet registers the Node: NotReady (KubeletNotReady), with the
        group's labels and taints from its join (node_template's --node-labels and --register-with-taints, the
        topology and instance-type labels the join script adds), providerID aws:///<zone>/<id>, capacity from
        the instance type and allocatable less the join's KubeletConfiguration reservations, and the
        uninitialized taint of --cloud-provider=external; the API server's TaintNodesByCondition adds not-ready
    --cloud_init_s--> the cloud controller's part (this agent): the uninitialized taint goes
    --ready_s--> the network is up: kwok takes the node (its label), posts Ready and keeps its lease; the
        node lifecycle controller (the real kube-controller-manager) removes the not-ready taint. With
        ``process_nodes`` "gpu" a GPU node, with "all" every node, is taken by the process kubelet instead
        (localcluster/kubelet/: its label), which runs the pods of this repository's images there as local
        processes (a researcher's job, and the pods `lab` starts beside it on CPU nodes: TensorBoard, the reader
        of a gone pod's kept output)
    --device_plugin_s after the NVIDIA (EFA) device plugin DaemonSet's pod runs there--> nvidia.com/gpu
        (vpc.amazonaws.com/efa) in capacity and allocatable
    instance gone from its group, or terminating --> the Node is deleted (the cloud node lifecycle controller)

``boot=False`` with ``NodeLifecycle.instant()`` registers a Node the moment its instance is in its group, Ready
(kwok's), untainted but for the group's taints and with its GPUs: kwok's registration, as Karpenter's kwok
provider registers its nodes (``invoke bench-peers`` puts the two side by side).

The agent polls the embedded AWS every ``interval_s`` while a node is on its way (an instance not yet registered,
a node not yet initialised, Ready or with its devices advertised, a node the autoscaler tainted to delete); with
none, every ``idle_s`` at most, and never longer than the shortest boot delay of its groups: a node registers at
its instance's launch time plus its boot delay, so an instance first seen a little later registers just as early.
With ``watch`` (``start()``), it also watches the pods pending on no node and the Nodes: a pending pod (what a
scale-up answers) keeps it at ``interval_s`` from then until ``BUSY_S`` after the last such event, a Node's change
wakes it at once, and the shortest boot delay no longer caps ``idle_s`` (an idle cluster polls AWS rarely; a
scale-up the autoscaler makes for a pod is polled for as closely as before).

Every address is a loopback one: the node's InternalIP is 127.x.y.z, made from its instance id; its name is the
instance's resource-name hostname on AWS (<instance id>.<region>.compute.internal).
"""

from __future__ import annotations

import functools
import logging
import threading
import time
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime

from kubernetes import client as k8s

from clusterspec import catalog, kubelet_reserved
from clusterspec.names import NODE_GROUP_LABEL, TO_BE_DELETED_TAINTS
from localcluster import retry
from localcluster.kubelet.agent import LABEL as PROCESS_LABEL
from localcluster.kubelet.agent import VALUE as PROCESS_VALUE
from localcluster.kubelet.api import Api
from localcluster.kubelet.informer import Watched
from localcluster.stack import KWOK_LABEL
from simulator.model.boot import NodeLifecycle, boot_delay

log = logging.getLogger(__name__)
GONE = ("Terminating", "Terminating:Wait", "Terminating:Proceed", "Terminated", "Detaching", "Detached")
UNINITIALIZED = "node.cloudprovider.kubernetes.io/uninitialized"
GPU = "nvidia.com/gpu"
EFA = "vpc.amazonaws.com/efa"
# resource -> the DaemonSet (kube-system) of deploy/addons that advertises it; a name that is not a rendered
# DaemonSet's leaves every node without the resource (tests/localcluster/test_nodes.py renders them)
PLUGINS = {GPU: "nvidia-device-plugin", EFA: "aws-efa-k8s-device-plugin"}
BUSY_S = 30.0  # with watch: polling at interval_s this long after the last event of a pod pending on no node


def loopback_ip(instance_id: str) -> str:
    n = int(instance_id.rsplit("-", 1)[-1][-6:], 16)
    return f"127.{(n >> 16) & 255}.{(n >> 8) & 255}.{max(1, n & 255)}"


def allocatable(instance_type: str) -> tuple[dict[str, str], dict[str, str]]:
    """(capacity, allocatable) without device-plugin resources: the instance's cores, memory and root volume, and
    what its kubelet reports under the join's KubeletConfiguration (clusterspec.kubelet_reserved.allocatable,
    the formula the planner's templates use too)."""
    t = catalog.instance_types()[instance_type]
    conf = kubelet_reserved.kubelet_config(t.vcpu)
    capacity = {"cpu": str(t.vcpu), "memory": f"{int(t.memory_gib * 1024 * 1024)}Ki", "pods": str(conf["maxPods"]),
                "ephemeral-storage": f"{kubelet_reserved.ROOT_VOLUME_GIB}Gi"}  # fmt: skip
    return capacity, kubelet_reserved.allocatable(t.vcpu, t.memory_gib)


def node_body(g: dict, instance_id: str, zone: str, uninitialized: bool = True) -> dict:
    """The Node an instance of group ``g`` registers, as its kubelet registers it on AWS: NotReady, the group's
    labels and taints (its join's --node-labels and --register-with-taints) with the topology and instance-type
    labels, providerID, capacity and allocatable (no device-plugin resources yet), a loopback InternalIP, and the
    uninitialized taint of --cloud-provider=external while the cloud controller has not initialised it."""
    itype = g["instance_type"]
    name = f"{instance_id}.{g['region']}.compute.internal"  # AWS's resource-name hostname
    capacity, alloc = allocatable(itype)
    labels = {**g.get("labels", {}), NODE_GROUP_LABEL: g["name"], "kubernetes.io/hostname": name,
              "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64",
              "topology.kubernetes.io/region": g["region"], "topology.kubernetes.io/zone": zone,
              "node.kubernetes.io/instance-type": itype}  # fmt: skip
    taints = [dict(t) for t in g.get("taints") or ()]
    if uninitialized:
        taints.append({"key": UNINITIALIZED, "value": "true", "effect": "NoSchedule"})
    ip = loopback_ip(instance_id)
    return {
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name, "labels": labels},
        "spec": {"providerID": f"aws:///{zone}/{instance_id}", "taints": taints},
        "status": {
            "capacity": capacity, "allocatable": alloc,
            "addresses": [{"type": "InternalIP", "address": ip}, {"type": "Hostname", "address": name}],
            "conditions": [{"type": "Ready", "status": "False", "reason": "KubeletNotReady",
                            "message": "container runtime network not ready: NetworkReady=false "
                                       "reason:NetworkPluginNotReady message:Network plugin returns error: "
                                       "cni plugin not initialized"}],
            "nodeInfo": {"kubeletVersion": "v1.35.4", "containerRuntimeVersion": "containerd://2.2.6",
                         "operatingSystem": "linux", "architecture": "amd64", "machineID": instance_id,
                         "systemUUID": instance_id, "bootID": instance_id, "kernelVersion": "", "osImage": "",
                         "kubeProxyVersion": ""},
        },
    }  # fmt: skip


@dataclass
class Tracked:
    name: str
    group: dict
    instance: dict
    registered_at: float
    initialised: bool = False
    ready: bool = False
    plugins_seen: dict[str, float] = field(default_factory=dict)
    advertised: set[str] = field(default_factory=set)


def _epoch(value: str | None) -> float | None:
    return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp() if value else None


class NodeAgent:
    """Follows the groups of ``cloud`` (the autoscaler's AWS adapter on the embedded AWS) into Nodes of ``api``."""

    def __init__(self, cloud, api: k8s.ApiClient, compression: float = 1.0, interval_s: float = 0.5,
                 lifecycle: NodeLifecycle | None = None, process_nodes: str = "",
                 boot: bool = True, boot_s: float | None = None, idle_s: float | None = None,
                 watch: bool = False) -> None:  # fmt: skip
        if process_nodes not in ("", "gpu", "all"):
            raise ValueError(f"process_nodes: {process_nodes!r}, want '', 'gpu' or 'all'")
        self.cloud = cloud
        self.process_nodes = process_nodes
        self.boot = boot  # False: no boot delay, the Node registers once its instance is in its group
        self.boot_s = boot_s  # seconds from launch to registration for every type, instead of boot_delay's
        self.core = k8s.CoreV1Api(api)
        self.compression = compression
        self.interval_s = interval_s
        # the longest wait with no node on its way (without the watches capped by the shortest boot delay); by
        # default interval_s: the agent polls at one pace, as the benchmarks that time removals expect
        self.idle_s = interval_s if idle_s is None else idle_s
        self._in_flight = True  # until the first sync says otherwise
        self._soonest_boot = 0.0  # seconds: the shortest boot delay of the groups last seen
        self._wake = threading.Event()
        self._busy_until = 0.0  # monotonic: polling at interval_s until then (a pod pending on no node)
        self._pending: Watched | None = None
        self._nodes: Watched | None = None
        if watch:
            client = Api(api)
            self._pending = Watched(client, "/api/v1/pods", {"fieldSelector": "spec.nodeName=,status.phase=Pending"},
                                    "pending-pods", self._pod_event)  # fmt: skip
            self._nodes = Watched(client, "/api/v1/nodes", {}, "nodes", self._wake.set)
        self.lifecycle = lifecycle or NodeLifecycle()
        self.nodes: dict[str, Tracked] = {}  # instance id -> node
        self.errors = 0
        self._plugin_pods: dict[str, dict[str, float]] | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._pool = ThreadPoolExecutor(8, thread_name_prefix="node-agent")
        self._plugins_lock = threading.Lock()
        self._plugins_looked = 0.0  # when the last sync listed the device plugin pods
        self.syncs: deque[tuple[float, float]] = deque(maxlen=2000)  # (start, seconds) of the last syncs

    def _s(self, model_seconds: float) -> float:
        return model_seconds / self.compression

    def sync_once(self, now: float | None = None) -> None:
        now = time.time() if now is None else now
        self._in_flight = True  # a sync that fails is retried at the short interval
        groups = self.cloud.list_groups()
        live: dict[str, tuple[dict, dict]] = {}
        for g in groups:
            for i in g.get("instances", ()):
                if i.get("state") not in GONE:
                    live[i["id"]] = (g, i)
        for iid in [iid for iid in self.nodes if iid not in live]:
            self._delete(self.nodes.pop(iid))
        self._plugin_pods = None  # kube-system's device plugin pods, read once a sync when a node needs them
        steps = []
        in_flight = False
        for iid, (g, i) in live.items():
            tracked = self.nodes.get(iid)
            if tracked is None:
                launched = _epoch(i.get("launched_at")) or now
                if not self.boot or now - launched >= self._boot_delay(g):
                    steps.append(functools.partial(self._register_as, iid, g, i, now))
                else:
                    in_flight = True
                continue
            steps.append(functools.partial(self._advance, tracked, now))
        self._side_by_side(steps)
        self.syncs.append((now, time.time() - now))
        for n in self.nodes.values():
            wanted = {r for r in (GPU, EFA) if r in n.group.get("allocatable", {})}
            if not (n.initialised and n.ready and wanted <= n.advertised):
                in_flight = True
        self._in_flight = in_flight
        self._soonest_boot = min((self._boot_delay(g) for g in groups), default=0.0) if self.boot else 0.0

    def _side_by_side(self, steps: list) -> None:
        """Each node's steps at once, as each node's kubelet and the cloud controller act on their own: one after
        the other, a burst of 44 nodes took seconds a sync (minutes of model time at the demo's 60x, issue 33).
        Every step runs; the first failure is raised after (the sync is retried)."""
        futures = [self._pool.submit(step) for step in steps]
        errors = [f.exception() for f in futures if f.exception() is not None]
        if errors:
            raise errors[0]

    def _register_as(self, iid: str, g: dict, i: dict, now: float) -> None:
        self.nodes[iid] = self._register(g, i, now)

    def _boot_delay(self, g: dict) -> float:
        return self.boot_s if self.boot_s is not None else self._s(boot_delay(g["instance_type"]))

    def _pod_event(self) -> None:
        self._busy_until = time.monotonic() + BUSY_S
        self._wake.set()

    def next_wait(self) -> float:
        """``interval_s`` while a node is on its way (or, watching, while a pod waits on no node and for ``BUSY_S``
        after); else ``idle_s``, which without the watches is no longer than the shortest boot delay (an instance
        launched now is seen before it is due to register)."""
        if self._in_flight:
            return self.interval_s
        if self._pending is None or self._nodes is None:
            return max(self.interval_s, min(self.idle_s, self._soonest_boot))
        if not (self._pending.synced and self._nodes.synced) or time.monotonic() < self._busy_until:
            return self.interval_s
        if self._pending.snapshot():
            return self.interval_s
        for node in self._nodes.snapshot():
            if any(
                t.get("key") in TO_BE_DELETED_TAINTS for t in (node.get("spec") or {}).get("taints") or ()
            ):
                return self.interval_s  # its instance is about to go: its Node goes right after
        return self.idle_s

    def _register(self, g: dict, i: dict, now: float) -> Tracked:
        life = self.lifecycle
        initialised = not life.cloud_controller or life.cloud_init_s <= 0
        body = node_body(g, i["id"], i.get("zone") or "", uninitialized=not initialised)
        ready = (
            life.ready_s <= 0
        )  # its taker (kwok or the process kubelet) at once: it posts Ready, keeps the lease
        if ready:
            key, value = self.taker(g)
            body["metadata"]["labels"][key] = value
            body["status"]["conditions"] = []
        advertised = set()
        if not life.device_plugins:  # no device plugin DaemonSets: the resources are there from the start
            for r in (GPU, EFA):
                if r in g.get("allocatable", {}):
                    body["status"]["capacity"][r] = body["status"]["allocatable"][r] = g["allocatable"][r]
                    advertised.add(r)
        self.core.create_node(body)
        return Tracked(body["metadata"]["name"], g, i, now, initialised, ready, advertised=advertised)

    def _advance(self, n: Tracked, now: float) -> None:
        age = now - n.registered_at
        if not n.initialised and age >= self._s(self.lifecycle.cloud_init_s):
            node = self.core.read_node(n.name)
            taints = [t for t in node.spec.taints or () if t.key != UNINITIALIZED]
            taints = [{k: v for k, v in (("key", t.key), ("value", t.value), ("effect", t.effect)) if v is not None}
                      for t in taints]  # fmt: skip
            self.core.patch_node(n.name, {"spec": {"taints": taints or None}})
            n.initialised = True
        if not n.ready and age >= self._s(self.lifecycle.ready_s):
            # kwok takes the node: its node-initialize stage posts Ready and it keeps the node's lease (or the
            # process kubelet, which does the same and runs the node's pods)
            self.core.patch_node(n.name, {"metadata": {"labels": dict([self.taker(n.group)])}})
            n.ready = True
        if n.ready:
            self._device_plugins(n, now)

    def taker(self, group: dict) -> tuple[str, str]:
        """The label of whoever takes a Ready node of ``group``: kwok, or the process kubelet for GPU nodes."""
        if self.process_nodes == "all" or (
            self.process_nodes == "gpu" and GPU in group.get("allocatable", {})
        ):
            return PROCESS_LABEL, PROCESS_VALUE
        return KWOK_LABEL, "fake"

    def _device_plugins(self, n: Tracked, now: float) -> None:
        wanted = {r for r in (GPU, EFA) if r in n.group.get("allocatable", {})} - n.advertised
        if not wanted:
            return
        with self._plugins_lock:
            if self._plugin_pods is None:
                found: dict[str, dict[str, float]] = {}
                for p in self.core.list_namespaced_pod("kube-system").items:
                    if p.status.phase == "Running" and p.metadata.owner_references and p.spec.node_name:
                        # the device plugin registers device_plugin_s after its pod started, not after this
                        # agent noticed it (a sync later); startTime is in whole seconds: no earlier than the
                        # last look that did not see it, no later than now
                        t = p.status.start_time.timestamp() if p.status.start_time else now
                        started = min(now, max(t, self._plugins_looked))
                        found.setdefault(p.spec.node_name, {})[p.metadata.owner_references[0].name] = started
                self._plugin_pods = found
                self._plugins_looked = now
        running = self._plugin_pods.get(n.name, {})
        for r in wanted:
            if PLUGINS[r] in running:
                n.plugins_seen.setdefault(r, running[PLUGINS[r]])
            seen = n.plugins_seen.get(r)
            if seen is not None and now - seen >= self._s(self.lifecycle.device_plugin_s):
                q = n.group["allocatable"][r]
                self.core.patch_node_status(n.name, {"status": {"capacity": {r: q}, "allocatable": {r: q}}})
                n.advertised.add(r)

    def _delete(self, n: Tracked) -> None:
        try:
            self.core.delete_node(n.name)
        except k8s.ApiException as e:
            if e.status != 404:
                raise

    def _run(self) -> None:
        retry.every(self.next_wait, self._stop, self.sync_once, "the node agent", log, self._failed,
                    wake=self._wake)  # fmt: skip

    def _failed(self) -> None:
        self.errors += 1

    def start(self) -> NodeAgent:
        for informer in (self._pending, self._nodes):
            if informer is not None:
                informer.start()
        self._thread = threading.Thread(target=self._run, daemon=True, name="node-agent")
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout=10)
        self._pool.shutdown(wait=False, cancel_futures=True)
        for informer in (self._pending, self._nodes):
            if informer is not None:
                informer.stop()
