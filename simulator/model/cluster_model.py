"""The cluster model: cloud groups and instances, Kubernetes nodes and pods, a scheduler, on one clock.

Time is injected (``clock.py``); everything that happens later (boots, pod completions, launch retries,
capacity events) sits in an event queue, and ``advance(to)`` runs it up to ``to``. The simulator jumps from
``next_event_time()`` to the next; a server on a wall clock would advance to its ``now()`` from a ticker thread.

Kubernetes objects are plain dicts in an :class:`~simulator.model.store.ObjectStore` (``kubectl get -o
json`` shape); readers get the live objects and must not mutate them. The model is not thread-safe: a
threaded caller holds ``model.lock`` around every call.
"""

from __future__ import annotations

import copy
import re
import secrets
import threading
from collections import deque
from dataclasses import dataclass, field

from simulator.model import daemons as D
from simulator.model import objects as O
from simulator.model import pods as P
from simulator.model import taints as T
from simulator.model.boot import NodeLifecycle
from simulator.model.clock import VirtualClock, WallClock, iso
from simulator.model.cloud import CloudModel, Instance
from simulator.model.disruption import budget_status, refusing_budget
from simulator.model.event_queue import EventQueue
from simulator.model.scheduler import Scheduler
from simulator.model.store import Invalid, ObjectStore

STATE_CONFIGMAP = ("kube-system", "research-autoscaler-state")
SUFFIX_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"  # the API server's generateName suffixes


def suffix(n: int = 5) -> str:
    return "".join(secrets.choice(SUFFIX_ALPHABET) for _ in range(n))


@dataclass
class PodRecord:
    """One pod's history, kept after the pod object is garbage-collected (the simulator's wait times)."""

    namespace: str
    name: str
    job: tuple
    created: float
    started: float | None = None
    finished: float | None = None
    outcome: str | None = None  # Succeeded, Killed, Evicted, Deleted
    node: str | None = None


@dataclass
class ModelStats:
    pods_submitted: int = 0
    pods_bound: int = 0
    pods_succeeded: int = 0
    pods_killed: int = 0  # running pods whose node went away under them
    pods_evicted: int = 0
    evictions_refused: int = 0  # by a PodDisruptionBudget
    pods_restarted: int = 0  # replacement pods created for killed or evicted Job pods
    nodes_registered: int = 0
    killed_jobs: set = field(default_factory=set)  # (job key, start time) of each killed job run

    @property
    def jobs_killed(self) -> int:
        return len(self.killed_jobs)


class ClusterModel:
    def __init__(
        self,
        clock: VirtualClock | WallClock | None = None,
        groups: list[dict] = (),
        *,
        boot_delays: dict[str, float] | None = None,
        lifecycle: NodeLifecycle | None = None,
        capacity: dict | None = None,
        launch_retry_s: float = 120.0,
        daemonsets: list[dict] = (),
        restart_jobs: bool = True,
        terminated_pod_ttl_s: float | None = 600.0,
        event_ttl_s: float = 3600.0,
        record_model_events: bool = False,
        state_configmap: tuple[str, str] = STATE_CONFIGMAP,
        seed: int = 0,
    ) -> None:
        self.clock = clock or VirtualClock()
        self.lock = threading.RLock()
        self.queue = EventQueue()
        self.store = ObjectStore(self.clock.now)
        self.stats = ModelStats()
        self.records: dict[str, PodRecord] = {}
        self.restart_jobs = restart_jobs
        self.terminated_pod_ttl_s = terminated_pod_ttl_s
        self.event_ttl_s = event_ttl_s
        self.record_model_events = record_model_events
        self.lifecycle = lifecycle or NodeLifecycle()
        self._daemon_pods: dict[tuple[str, str, str], dict] = {}  # (ds namespace, ds name, node) -> its pod
        self._awaiting_network: dict[str, list[dict]] = {}  # node -> bound pods whose containers wait for it
        self._network_up: set[str] = set()  # nodes whose network plugin is ready (Ready when heard from)
        self.state_configmap = state_configmap
        self.scheduler = Scheduler(self._bind, self._unschedulable)
        self._running: dict[str, dict] = {}  # uid -> running pod with a completion event
        self._node_instance: dict[str, Instance] = {}
        self._terminated: deque[tuple[float, dict]] = deque()
        self._events: deque[tuple[float, dict]] = deque()
        self._restarts = 0
        self._flushing = False
        self.cloud = CloudModel(
            self.clock.now,
            self.queue,
            on_running=lambda inst: None,
            on_booted=self._register_node,
            on_terminated=self._instance_gone,
            has_pods=self._instance_has_pods,
            settle=self._flush,
            boot_delays=boot_delays,
            capacity=capacity,
            launch_retry_s=launch_retry_s,
            seed=seed,
            scale=self.clock.scale,
        )
        given = {(d["metadata"].get("namespace", "default"), d["metadata"]["name"]) for d in daemonsets}
        plugins = D.device_plugin_daemonsets() if self.lifecycle.device_plugins else []
        for ds in [*daemonsets, *(p for p in plugins if ("kube-system", p["metadata"]["name"]) not in given)]:
            self.store.create("daemonsets", copy.deepcopy(ds))
        for g in groups:
            self.cloud.add_group(g)
        self._flush()

    # --- time --------------------------------------------------------------------------------------------
    def now(self) -> float:
        return self.clock.now()

    def next_event_time(self) -> float | None:
        return self.queue.next_time()

    def advance(self, to: float | None = None) -> None:
        """Run every event due up to ``to`` (default: the clock's now), scheduling after each instant."""
        to = self.clock.now() if to is None else float(to)
        self._flush()  # what changed at the current instant is scheduled before time moves
        while True:
            due = self.queue.pop_due(to)
            if not due:
                break
            t = due[0][0]
            if t > self.clock.now():
                self.clock.set(t)
            for _, fn, args in due:
                fn(*args)
            self._flush()
        if to > self.clock.now():
            self.clock.set(to)
        self._gc(self.clock.now())
        self._flush()

    def _flush(self) -> None:
        if self._flushing:  # a write during a pass: the outer pass goes on until nothing is left
            return
        self._flushing = True
        try:
            while self.scheduler.dirty:
                self.scheduler.run()
        finally:
            self._flushing = False

    settle = _flush  # schedule what changed at this instant (reads and actions do it by themselves)

    def _gc(self, now: float) -> None:
        ttl = self.terminated_pod_ttl_s
        while ttl is not None and self._terminated and self._terminated[0][0] <= now - ttl:
            _, pod = self._terminated.popleft()
            meta = pod["metadata"]
            if self.store.find("pods", meta["namespace"], meta["name"]) is pod:
                self.store.delete("pods", meta["namespace"], meta["name"])
        while self._events and self._events[0][0] <= now - self.event_ttl_s:
            _, ev = self._events.popleft()
            meta = ev["metadata"]
            if self.store.find("events", meta["namespace"], meta["name"]) is ev:
                self.store.delete("events", meta["namespace"], meta["name"])

    def subscribe(self, listener) -> None:
        """``listener(kind, event_type, obj)`` on every change of a Kubernetes object."""
        self.store.listeners.append(listener)

    # --- reads -------------------------------------------------------------------------------------------
    def pods(self) -> list[dict]:
        self._flush()
        return self.store.list("pods")

    def nodes(self) -> list[dict]:
        self._flush()
        return self.store.list("nodes")

    def pdbs(self) -> list[dict]:
        """PodDisruptionBudgets with a current ``status``."""
        out = []
        for pdb in self.store.list("poddisruptionbudgets"):
            ns = pdb["metadata"]["namespace"]
            pdb["status"] = budget_status(pdb, self.store.list("pods", ns))
            out.append(pdb)
        return out

    def pod(self, namespace: str, name: str) -> dict:
        self._flush()
        return self.store.get("pods", namespace, name)

    def node(self, name: str) -> dict:
        return self.store.get("nodes", None, name)

    # --- nodes -------------------------------------------------------------------------------------------
    def _register_node(self, inst: Instance) -> None:
        """The kubelet registers the Node: NotReady and tainted (unless the instance was part of the cluster from
        the start), without the resources its device plugins will advertise; the lifecycle follows (boot.py)."""
        group = self.cloud.groups[inst.group]
        lc = self.lifecycle
        now = self.clock.now()
        settled = inst.settled
        ready = settled or lc.ready_s <= 0
        uninitialized = lc.cloud_controller and not settled and lc.cloud_init_s > 0
        withheld: tuple[str, ...] = ()
        if not settled:
            # the node as it will be once Ready decides which device plugins will run there
            final = O.node_object(inst, group.spec, now)
            withheld = tuple(
                r
                for ds in self.store.list("daemonsets")
                for r in D.advertised_by(ds)
                if r in group.spec["allocatable"]
                and D.admits(ds["spec"]["template"].get("spec") or {}, final)
            )
        node = O.node_object(
            inst, group.spec, now, ready=ready, uninitialized=uninitialized, withheld=withheld
        )
        name = node["metadata"]["name"]
        self.store.create("nodes", node)
        self.store.create("leases", O.node_lease(node, now))
        inst.node_name = name
        self._node_instance[name] = inst
        self.scheduler.add_node(node)
        self.stats.nodes_registered += 1
        self._model_event(node, "RegisteredNode", f"Node {name} event: Registered Node {name} in Controller")
        if uninitialized:
            self.queue.push(now + self.clock.scale(lc.cloud_init_s), self._cloud_initialised, name, node)
        if ready:
            self._network_up.add(name)
        else:
            self.queue.push(now + self.clock.scale(lc.ready_s), self._kubelet_ready, name, node)
        self._sync_daemons(node)

    def _live_node(self, name: str, node: dict) -> dict | None:
        """The node if it is still the same object in the store (not deleted, not replaced by another)."""
        current = self.store.find("nodes", None, name)
        same = current is not None and current["spec"].get("providerID") == node["spec"].get("providerID")
        return current if same else None

    def _cloud_initialised(self, name: str, node: dict) -> None:
        node = self._live_node(name, node)
        if node is not None and O.drop_taint(node, T.UNINITIALIZED):
            self._node_modified(node)

    def _kubelet_ready(self, name: str, node: dict) -> None:
        node = self._live_node(name, node)
        if node is None or name not in self._node_instance:
            return
        self._network_up.add(name)
        self._make_ready(name, node)

    def _make_ready(self, name: str, node: dict) -> None:
        O.set_ready(node, iso(self.clock.now()))
        self._renew_lease(name)
        self._node_modified(node)
        for pod in self._awaiting_network.pop(name, ()):
            meta = pod["metadata"]
            if self.store.find("pods", meta["namespace"], meta["name"]) is pod and not P.is_terminal(pod):
                self._run_containers(pod, node)

    def _renew_lease(self, name: str) -> None:
        """The kubelet renews its Lease every 10 s; the model writes it only when the kubelet is heard from
        after a change (registration, Ready, back from silence), not every 10 s."""
        lease = self.store.find("leases", O.NODE_LEASE_NAMESPACE, name)
        if lease is not None:
            lease["spec"]["renewTime"] = O.micro(self.clock.now())
            self.store.modified("leases", lease)

    def _drop_lease(self, name: str) -> None:
        if self.store.find("leases", O.NODE_LEASE_NAMESPACE, name) is not None:
            self.store.delete("leases", O.NODE_LEASE_NAMESPACE, name)  # garbage-collected with its Node

    def _node_modified(self, node: dict) -> None:
        """Store a node the model changed; the scheduler and the DaemonSet controller react."""
        self.store.modified("nodes", node)
        self.scheduler.node_changed(node)
        self._sync_daemons(node)

    def _sync_daemons(self, node: dict) -> None:
        """As the DaemonSet controller does: a pod of every DaemonSet that admits the node and has none there."""
        name = node["metadata"]["name"]
        if name not in self._node_instance and name not in self.scheduler.nodes:
            return
        for ds in self.store.list("daemonsets"):
            meta = ds["metadata"]
            key = (meta.get("namespace", "default"), meta["name"], name)
            pod = self._daemon_pods.get(key)
            if pod is not None and not P.is_terminal(pod):
                pm = pod["metadata"]
                if self.store.find("pods", pm["namespace"], pm["name"]) is pod:
                    continue
            if not D.admits(((ds.get("spec") or {}).get("template") or {}).get("spec") or {}, node):
                continue
            pod = O.daemon_pod(ds, node)
            pod["metadata"]["name"] = f"{pod['metadata'].pop('generateName')}{suffix()}"
            self._daemon_pods[key] = self.submit_pod(pod)

    def _instance_has_pods(self, inst: Instance) -> bool:
        return any(not P.is_daemonset(p) for p in self.scheduler.pods_on(inst.node_name or ""))

    def _instance_gone(self, inst: Instance, why: str) -> None:
        name = inst.node_name
        if name:
            self._remove_node(name, "InstanceTerminated", f"instance {inst.id} was {why}")

    def _remove_node(self, name: str, reason: str, message: str) -> None:
        inst = self._node_instance.pop(name, None)
        if inst is not None:
            inst.node_name = None
        self._awaiting_network.pop(name, None)
        self._network_up.discard(name)
        for key in [k for k in self._daemon_pods if k[2] == name]:
            del self._daemon_pods[key]
        for pod in self.scheduler.remove_node(name):
            self._kill(pod, reason, message)
        if self.store.find("nodes", None, name) is not None:
            self.store.delete("nodes", None, name)
            self._drop_lease(name)

    def _edit_node(self, name: str, fn) -> None:
        self._flush()
        node = self.store.get("nodes", None, name)
        if fn(node) is not False:
            self._node_modified(node)

    def taint_node(self, name: str, taint: dict) -> None:
        def edit(node):
            taints = node["spec"].setdefault("taints", [])
            if any(t["key"] == taint["key"] and t.get("effect") == taint.get("effect") for t in taints):
                return False
            entry = {k: taint[k] for k in ("key", "value", "effect") if taint.get(k) is not None}
            entry.setdefault("timeAdded", iso(self.clock.now()))
            taints.append(entry)

        self._edit_node(name, edit)

    def untaint_node(self, name: str, key: str) -> None:
        self._edit_node(name, lambda node: O.drop_taint(node, key))

    def annotate_node(self, name: str, annotations: dict[str, str | None]) -> None:
        def edit(node):
            current = node["metadata"].setdefault("annotations", {})
            for k, v in annotations.items():
                if v is None:
                    current.pop(k, None)
                else:
                    current[k] = str(v)

        self._edit_node(name, edit)

    def delete_node(self, name: str) -> None:
        """Delete the Node object; its pods die with it (the instance is left to the cloud)."""
        self._flush()
        self.store.get("nodes", None, name)
        self._remove_node(name, "NodeDeleted", f"node {name} was deleted")

    # --- pods --------------------------------------------------------------------------------------------
    def submit_pod(self, pod: dict) -> dict:
        """Create a pod (Pending, or bound at once when spec.nodeName names a node)."""
        pod.setdefault("apiVersion", "v1")
        pod.setdefault("kind", "Pod")
        spec = pod.setdefault("spec", {})
        if not spec.get("containers"):
            raise Invalid("spec.containers: Required value")
        T.add_default_tolerations(spec, self.lifecycle.toleration_s)  # DefaultTolerationSeconds admission
        qos = (pod.get("status") or {}).get("qosClass") or "Burstable"
        pod["status"] = {"phase": "Pending", "qosClass": qos}
        self.store.create("pods", pod)
        meta = pod["metadata"]
        now = self.clock.now()
        self.records[meta["uid"]] = PodRecord(meta["namespace"], meta["name"], P.job_key(pod), now)
        self.stats.pods_submitted += 1
        node_name = spec.get("nodeName")
        if node_name:
            if self.scheduler.add_bound(pod, node_name):
                self._bind(pod, node_name)
            else:
                self._finish(pod, "Failed", "NodeNotFound", f"node {node_name} does not exist")
        else:
            self.scheduler.add_pending(pod)
        return pod

    def _bind(self, pod: dict, node_name: str) -> None:
        pod["spec"]["nodeName"] = node_name
        node = self.store.find("nodes", None, node_name)
        self.stats.pods_bound += 1
        self._model_event(pod, "Scheduled", f"Successfully assigned {pod['metadata']['name']} to {node_name}")
        if node is not None and not O.is_ready(node) and not pod["spec"].get("hostNetwork"):
            # no pod network before the CNI is up: the kubelet cannot create the sandbox yet
            pod["status"] = O.creating_status(pod, node, iso(self.clock.now()))
            self.store.modified("pods", pod)
            self._awaiting_network.setdefault(node_name, []).append(pod)
            return
        self._run_containers(pod, node)

    def _run_containers(self, pod: dict, node: dict | None) -> None:
        """The kubelet starts the pod's containers."""
        now = self.clock.now()
        node_name = pod["spec"]["nodeName"]
        pod["status"] = O.running_status(pod, node, iso(now))
        self.store.modified("pods", pod)
        rec = self.records.get(pod["metadata"]["uid"])
        if rec is not None:
            rec.started, rec.node = now, node_name
        seconds = P.duration(pod)
        if seconds is not None:
            self._running[pod["metadata"]["uid"]] = pod
            self.queue.push(now + self.clock.scale(seconds), self._complete, pod)
        if node is not None and P.is_daemonset(pod):
            ds = self.store.find("daemonsets", pod["metadata"]["namespace"], P.owner_name(pod) or "")
            resources = D.advertised_by(ds) if ds is not None else ()
            if resources:
                delay = self.clock.scale(self.lifecycle.device_plugin_s)
                self.queue.push(now + delay, self._advertise, node_name, node, pod, resources)

    def _advertise(self, name: str, node: dict, pod: dict, resources: tuple[str, ...]) -> None:
        """The device plugin has registered with the kubelet, which reports its devices in the node status."""
        node = self._live_node(name, node)
        inst = self._node_instance.get(name)
        if node is None or inst is None or P.is_terminal(pod) or pod["status"].get("phase") != "Running":
            return
        if O.advertise(node, self.cloud.groups[inst.group].spec, resources):
            self._node_modified(node)

    def _complete(self, pod: dict) -> None:
        """The containers exit after the pod's duration: with its exit code (annotation, default 0), the pod
        Succeeded or, non-zero and restartPolicy Never, Failed (reason Error), as the kubelet reports it."""
        if self._running.get(pod["metadata"]["uid"]) is not pod:
            return
        code = P.exit_code(pod)
        if code == 0:
            self._finish(pod, "Succeeded", "Completed", "")
        else:
            self._finish(pod, "Failed", "Error", "", exit_code=code)

    def _unschedulable(self, pod: dict, why: str) -> None:
        status = pod["status"]
        if status.get("conditions"):
            return  # reported once; later passes do not churn resourceVersions
        message = f"0/{len(self.scheduler.nodes)} nodes are available: {why}."
        status["conditions"] = [O.unschedulable_condition(message, iso(self.clock.now()))]
        self.store.modified("pods", pod)
        self._model_event(pod, "FailedScheduling", status["conditions"][0]["message"], "Warning")

    def _finish(self, pod: dict, phase: str, reason: str, message: str, exit_code: int | None = None) -> None:
        """Move a pod to Succeeded or Failed and free its room."""
        now = self.clock.now()
        t = iso(now)
        uid = pod["metadata"]["uid"]
        self._running.pop(uid, None)
        self.scheduler.forget(pod)
        O.finish_status(pod["status"], phase, reason, message, t, exit_code)
        self.store.modified("pods", pod)
        rec = self.records.get(uid)
        if rec is not None:
            rec.finished, rec.outcome = now, ("Succeeded" if phase == "Succeeded" else "Killed")
        if phase == "Succeeded":
            self.stats.pods_succeeded += 1
        self._terminated.append((now, pod))

    def _kill(self, pod: dict, reason: str, message: str) -> None:
        if P.is_daemonset(pod):
            self.scheduler.forget(pod)
            self._running.pop(pod["metadata"]["uid"], None)
            meta = pod["metadata"]
            if self.store.find("pods", meta["namespace"], meta["name"]) is pod:
                self.store.delete("pods", meta["namespace"], meta["name"])
            return
        if P.is_terminal(pod):
            return
        running = pod["status"].get("phase") == "Running"
        start = pod["status"].get("startTime")
        self._finish(pod, "Failed", reason, message)
        if not running:
            return
        self.stats.pods_killed += 1
        self.stats.killed_jobs.add((P.job_key(pod), start))
        self._model_event(pod, "Killing", f"Stopping container: {message}", "Warning")
        self._restart(pod)
        gang = P.distributed_key(pod)
        if gang is not None:  # a distributed job dies with any of its workers
            for other in self.store.list("pods", pod["metadata"]["namespace"]):
                if other["status"].get("phase") == "Running" and P.distributed_key(other) == gang:
                    self._kill(
                        other, "GangMemberLost", f"pod {pod['metadata']['name']} of the gang was killed"
                    )

    def _restart(self, pod: dict) -> None:
        """As a Job controller does: a replacement for a Job pod that was killed or evicted (pods of a Job object
        the simulator creates no Job objects)."""
        if not (self.restart_jobs and P.is_job_pod(pod)):
            return
        self._restarts += 1
        old = pod["metadata"]
        base = re.sub(r"-r\d+$", "", old["name"])
        meta = {
            "name": f"{base}-r{self._restarts}",
            "namespace": old["namespace"],
            "labels": dict(old.get("labels") or {}),
            "annotations": dict(old.get("annotations") or {}),
        }
        if old.get("ownerReferences"):
            meta["ownerReferences"] = copy.deepcopy(old["ownerReferences"])
        spec = copy.deepcopy(pod["spec"])
        spec.pop("nodeName", None)
        self.stats.pods_restarted += 1
        self.submit_pod({"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec})

    def delete_pod(self, namespace: str, name: str) -> dict:
        self._flush()
        pod = self.store.get("pods", namespace, name)
        uid = pod["metadata"]["uid"]
        self._running.pop(uid, None)
        self.scheduler.forget(pod)
        rec = self.records.get(uid)
        if rec is not None and rec.outcome is None:
            rec.finished, rec.outcome = self.clock.now(), "Deleted"
        return self.store.delete("pods", namespace, name)

    def evict_pod(self, namespace: str, name: str) -> bool:
        """The Eviction API: False when a PodDisruptionBudget allows no disruption now (HTTP 429)."""
        self._flush()
        pod = self.store.get("pods", namespace, name)
        pdbs = self.store.list("poddisruptionbudgets", namespace)
        if pdbs and refusing_budget(pod, pdbs, self.store.list("pods", namespace)) is not None:
            self.stats.evictions_refused += 1
            return False
        running = pod["status"].get("phase") == "Running"
        self._model_event(pod, "Evicted", "Evicted by the Eviction API", "Normal")
        self.delete_pod(namespace, name)
        rec = self.records.get(pod["metadata"]["uid"])
        if rec is not None:
            rec.outcome = "Evicted"
        self.stats.pods_evicted += 1
        if running and not P.is_daemonset(pod):
            self._restart(pod)
        return True

    # --- events, state, leases and other plain objects ---------------------------------------------------
    def record_event(self, obj: dict, reason: str, message: str, type: str = "Normal") -> dict:
        """A core/v1 Event about ``obj`` (a pod or node)."""
        name = f"{obj['metadata']['name']}.{len(self._events) + self.store.resource_version:x}"
        event = O.event_object(obj, name, reason, message, type, iso(self.clock.now()))
        return self.add_event(event)

    def add_event(self, event: dict) -> dict:
        self.store.create("events", event)
        self._events.append((self.clock.now(), event))
        return event

    def _model_event(self, obj: dict, reason: str, message: str, type: str = "Normal") -> None:
        if self.record_model_events:
            event = self.record_event(obj, reason, message, type)
            event["source"] = {"component": "cluster-model"}
            event["reportingComponent"] = "cluster-model"

    def read_state(self) -> dict[str, str]:
        ns, name = self.state_configmap
        cm = self.store.find("configmaps", ns, name)
        return dict((cm or {}).get("data") or {})

    def write_state(self, data: dict[str, str]) -> None:
        ns, name = self.state_configmap
        cm = self.store.find("configmaps", ns, name)
        if cm is None:
            self.store.create(
                "configmaps",
                {
                    "apiVersion": "v1",
                    "kind": "ConfigMap",
                    "metadata": {"name": name, "namespace": ns},
                    "data": dict(data),
                },
            )
        else:
            cm["data"] = dict(data)
            self.store.modified("configmaps", cm)
