"""The process kubelet: an agent of kube-apiserver for the Nodes labelled ``localcluster.lab/kubelet=process``
(kwok keeps those labelled ``kwok.x-k8s.io/node=fake``), as the kubelet is one for its node:

- each node: its serving endpoint on the node's InternalIP (server.py, a certificate by CSR: certs.py) written to
  ``status.daemonEndpoints.kubeletEndpoint.Port``; its Ready condition posted when taken and every
  ``STATUS_REPORT_S``; its Lease in kube-node-lease renewed every ``LEASE_RENEW_S`` (the kubelet's
  ``nodeLeaseDurationSeconds`` 40 s, renewed at a quarter of it);
- its nodes and the pods bound to them, kept by lists and watches (informer.py), stepped every ``interval_s`` while
  a pod has a process to follow, else when a watch says something changed or a timer (a lease, a status report, an
  admission retry) is due, at most ``IDLE_S`` apart: each container of this
  repository's images runs as a local process (containers.py, process.py), init containers in order and then the
  containers, restarted under the pod's restartPolicy with CrashLoopBackOff (pods.py, backoff.py); the pod's
  status (phase, conditions, container and init container statuses, podIP from the node's podCIDR in
  127.128.0.0/14, hostIP) written to ``pods/status`` whenever it changes;
- a pod whose images it cannot run has no process and is shown Running (pods.py);
- a deleted pod (``deletionTimestamp``): SIGTERM to its processes, SIGKILL once its grace period has passed, its
  final status written and then the pod deleted with ``gracePeriodSeconds=0`` (its uid as precondition); a pod
  gone from the API without that (force-deleted) has its processes killed;
- :meth:`ProcessKubelet.stop` kills every process it started (they are this process's children, where a real
  node's containers outlive a kubelet restart).
"""

from __future__ import annotations

import ipaddress
import logging
import threading
import time
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from kubernetes import client as k8s

from localcluster import retry
from localcluster.kubelet import logs
from localcluster.kubelet.api import Api, ApiError
from localcluster.kubelet.backoff import Backoff
from localcluster.kubelet.certs import serving_certificate
from localcluster.kubelet.containers import Resolver
from localcluster.kubelet.images import runnable
from localcluster.kubelet.informer import Nodes, Pods
from localcluster.kubelet.pods import Box, PodRun
from localcluster.kubelet.process import iso
from localcluster.kubelet.server import KubeletServer
from localcluster.kubelet.streaming import StreamingServer

log = logging.getLogger(__name__)
LABEL = "localcluster.lab/kubelet"
VALUE = "process"
LEASE_RENEW_S = 10.0
LEASE_DURATION_S = 40
STATUS_REPORT_S = 60.0
ADMIT_RETRY_S = 2.0
IDLE_S = 5.0  # the longest wait while no pod has a process to follow (the watches wake the loop at once)


def _q(s: str) -> str:
    return urllib.parse.quote(s, safe="")


@dataclass
class NodeState:
    name: str
    ip: str
    server: KubeletServer
    pod_cidr: str = ""
    lease_at: float = 0.0
    status_at: float = 0.0
    taken_at: str = ""  # the conditions' lastTransitionTime: they do not change while this kubelet runs


class ProcessKubelet:
    def __init__(self, client: k8s.ApiClient, root: Path, interval_s: float = 0.25,
                 clock: Callable[[], float] = time.monotonic, selector: str = f"{LABEL}={VALUE}") -> None:  # fmt: skip
        """``selector``: the nodes it owns (a narrower one where several kubelets share a control plane)."""
        self.api = Api(client)
        self.selector = selector
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)
        self.interval_s = interval_s
        self.clock = clock
        self.backoff = Backoff(clock=clock)
        self.resolver = Resolver(self.api, self.root)
        self.nodes: dict[str, NodeState] = {}
        self.pods: dict[str, PodRun] = {}  # uid -> run
        self._written: dict[str, dict] = {}  # uid -> the status last written
        self._refused: dict[str, tuple[str, float]] = {}  # uid -> (why it could not start, when to try again)
        self._deleted: set[str] = set()
        self._wake = threading.Event()
        self.informer = Pods(self.api, self._wake.set)
        self.node_informer = Nodes(self.api, selector, self._wake.set)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.errors = 0
        self.streaming = StreamingServer(self.root / "kubelet-streaming.log")

    # --- nodes -------------------------------------------------------------------------------------------
    def _nodes(self) -> None:
        if not self.node_informer.synced:
            return
        items = self.node_informer.snapshot()
        names = {n["metadata"]["name"] for n in items}
        for name in [n for n in self.nodes if n not in names]:
            self.nodes.pop(name).server.stop()
        for node in items:
            name = node["metadata"]["name"]
            state = self.nodes.get(name)
            if state is None:
                try:
                    state = self.nodes[name] = self._take(node)
                except Exception as e:  # noqa: BLE001 (one node's trouble must not stop the others)
                    self.errors += 1
                    log.warning("the process kubelet could not take node %s (tried again): %s", name, e)
                    continue
            state.pod_cidr = node["spec"].get("podCIDR") or ""
            now = self.clock()
            if now - state.lease_at >= LEASE_RENEW_S:
                self._lease(node)
                state.lease_at = now
            if now - state.status_at >= STATUS_REPORT_S:
                self._node_status(state)
                state.status_at = now

    def _take(self, node: dict) -> NodeState:
        name = node["metadata"]["name"]
        addresses = (node.get("status") or {}).get("addresses") or ()
        ip = next((a["address"] for a in addresses if a["type"] == "InternalIP"), "127.0.0.1")
        if not ipaddress.ip_address(ip).is_loopback:
            raise ValueError(f"node {name}: InternalIP {ip} is not a loopback address (127.0.0.0/8)")
        cert, key = serving_certificate(self.api, name, ip, self.root / "nodes" / name)
        server = KubeletServer(
            self.api, name, ip, cert, key, self._logs, self._streams, self.streaming
        ).start()
        log.info("process kubelet took node %s (%s:%d)", name, ip, server.port)
        return NodeState(name, ip, server, taken_at=iso(time.time()))

    def _node_status(self, state: NodeState) -> None:
        now = iso(time.time())

        def cond(kind: str, ok: bool, reason: str, message: str) -> dict:
            return {"type": kind, "status": "True" if ok else "False", "reason": reason, "message": message,
                    "lastHeartbeatTime": now, "lastTransitionTime": state.taken_at}  # fmt: skip

        conditions = [
            cond(
                "MemoryPressure",
                False,
                "KubeletHasSufficientMemory",
                "kubelet has sufficient memory available",
            ),
            cond("DiskPressure", False, "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
            cond("PIDPressure", False, "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
            cond("Ready", True, "KubeletReady", "kubelet is posting ready status"),
        ]
        body = {
            "status": {
                "conditions": conditions,
                "daemonEndpoints": {"kubeletEndpoint": {"Port": state.server.port}},
            }
        }
        # node conditions merge by type (strategic merge), as the kubelet's status patch does
        self.api.request("PATCH", f"/api/v1/nodes/{_q(state.name)}/status", body,
                         content_type="application/strategic-merge-patch+json")  # fmt: skip

    def _lease(self, node: dict) -> None:
        name = node["metadata"]["name"]
        path = f"/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/{_q(name)}"
        renew = time.strftime("%Y-%m-%dT%H:%M:%S.000000Z", time.gmtime())
        spec = {"holderIdentity": name, "leaseDurationSeconds": LEASE_DURATION_S, "renewTime": renew}
        if self.api.merge_patch(path, {"spec": spec}) is None:
            owner = {"apiVersion": "v1", "kind": "Node", "name": name, "uid": node["metadata"]["uid"]}
            body = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                    "metadata": {"name": name, "namespace": "kube-node-lease", "ownerReferences": [owner]},
                    "spec": spec}  # fmt: skip
            self.api.request("POST", "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases", body)

    # --- pods --------------------------------------------------------------------------------------------
    def _pod_ip(self, state: NodeState) -> str:
        if not state.pod_cidr:
            return state.ip
        net = ipaddress.ip_network(state.pod_cidr)
        used = {r.pod_ip for r in self.pods.values()}
        for host in net.hosts():
            if str(host) not in used:
                return str(host)
        return state.ip

    def _admit(self, pod: dict, state: NodeState) -> PodRun:
        meta, spec = pod["metadata"], pod["spec"]
        folder = self.root / "pods" / f"{meta['namespace']}_{meta['name']}_{meta['uid']}"
        folder.mkdir(parents=True, exist_ok=True)
        pod_ip = self._pod_ip(state)
        # the downward API's status.podIP/hostIP are the addresses this kubelet gives the pod now (the kubelet's
        # makeEnvironmentVariables takes them from the sandbox), not yet in the status the pod was read with
        pod = {**pod, "status": {**(pod.get("status") or {}), "podIP": pod_ip, "hostIP": state.ip}}
        runs = runnable(pod)
        mounts = self.resolver.volumes(pod, folder) if runs else {}
        services = self.resolver.services(meta["namespace"]) if runs else []

        def box(c: dict, init: bool) -> Box:
            made = self.resolver.container(pod, c, folder, mounts, services) if runs else None
            return Box(c["name"], c.get("image", ""), made, init)

        inits = [box(c, True) for c in spec.get("initContainers") or ()]
        mains = [box(c, False) for c in spec.get("containers") or ()]
        return PodRun(pod, folder, inits, mains, self.backoff, state.ip, pod_ip, self.clock)

    def _pods(self) -> None:
        if not self.informer.synced:
            return
        seen: set[str] = set()
        for pod in self.informer.snapshot():
            state = self.nodes.get(pod["spec"].get("nodeName", ""))
            if state is None:
                continue  # not a node of this kubelet
            meta = pod["metadata"]
            uid = meta["uid"]
            seen.add(uid)
            if uid in self._deleted:
                continue  # deleted by this kubelet; the watch has not said so yet
            run = self.pods.get(uid)
            if run is None:
                if (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
                    if meta.get("deletionTimestamp"):
                        self._delete(meta)
                    continue  # finished before this kubelet took the node
                if meta.get("deletionTimestamp") and uid in self._refused:
                    self._delete(meta)  # never started: nothing to stop
                    continue
                run = self._try_admit(pod, state)
                if run is None:
                    continue
            if meta.get("deletionTimestamp"):
                grace = meta.get("deletionGracePeriodSeconds")
                run.terminate(float(grace if grace is not None else 30))
        for uid in [u for u in self.pods if u not in seen]:  # gone without us: force-deleted
            self.pods.pop(uid).kill()
            self.streaming.close_pod(uid)
            self._written.pop(uid, None)
            self.backoff.forget(uid + "/")
        for uid in [u for u in self._refused if u not in seen]:
            del self._refused[uid]
        self._deleted &= seen

    def _try_admit(self, pod: dict, state: NodeState) -> PodRun | None:
        """The pod admitted, or None while what it refers to cannot be resolved (a Secret or ServiceAccount not
        there yet): its containers wait with ``CreateContainerConfigError`` and the kubelet tries again."""
        meta = pod["metadata"]
        uid = meta["uid"]
        refused = self._refused.get(uid)
        if refused is not None and self.clock() < refused[1]:
            return None
        try:
            run = self.pods[uid] = self._admit(pod, state)
        except (ApiError, OSError, ValueError) as e:
            message = str(e)[:300]
            self._refused[uid] = (message, self.clock() + ADMIT_RETRY_S)
            if refused is None or refused[0] != message:
                names = [c["name"] for c in pod["spec"].get("containers") or ()]
                status = {"phase": "Pending", "hostIP": state.ip, "containerStatuses": [
                    {"name": n, "image": next(c.get("image", "") for c in pod["spec"]["containers"] if c["name"] == n),
                     "imageID": "", "ready": False, "started": False, "restartCount": 0,
                     "state": {"waiting": {"reason": "CreateContainerConfigError", "message": message}}}
                    for n in names]}  # fmt: skip
                path = f"/api/v1/namespaces/{_q(meta['namespace'])}/pods/{_q(meta['name'])}/status"
                self.api.merge_patch(path, {"metadata": {"uid": uid}, "status": status})
            return None
        self._refused.pop(uid, None)
        return run

    def _delete(self, meta: dict) -> None:
        path = f"/api/v1/namespaces/{_q(meta['namespace'])}/pods/{_q(meta['name'])}"
        body = {"apiVersion": "v1", "kind": "DeleteOptions", "gracePeriodSeconds": 0,
                "preconditions": {"uid": meta["uid"]}}  # fmt: skip
        try:
            self.api.request("DELETE", path, body, missing_ok=True)
        except ApiError as e:
            if e.status != 409:  # 409: another pod of that name now (precondition failed)
                raise

    def _step(self) -> None:
        for uid, run in list(self.pods.items()):
            run.step()
            ended = run.finished() or run.kill_at is not None  # a restart keeps them: the sandbox stays
            # read once: a process that ends during this step (the status write below takes a while on a loaded
            # API server) has its streams closed, then its pod deleted, in the next step, never deleted first
            alive = run.alive()
            if run.processes and not run.closed and ended and not alive:
                self.streaming.close_pod(uid)  # its execs and port-forwards end with it
                run.closed = True
            status = run.status()
            if status != self._written.get(uid):
                path = f"/api/v1/namespaces/{_q(run.namespace)}/pods/{_q(run.name)}/status"
                try:
                    if self.api.merge_patch(path, {"metadata": {"uid": uid}, "status": status}) is None:
                        continue  # gone: the next listing forgets it
                except ApiError as e:
                    if (
                        e.status != 409
                    ):  # 409: another pod of that name now; the next listing forgets this one
                        raise
                    continue
                self._written[uid] = status
            if run.kill_at is not None and not alive:
                self._delete({"namespace": run.namespace, "name": run.name, "uid": uid})
                self._deleted.add(uid)
                self.pods.pop(uid, None)
                self._written.pop(uid, None)
                self.backoff.forget(uid + "/")

    def sync_once(self) -> None:
        self._nodes()
        self._pods()
        self._step()

    # --- logs --------------------------------------------------------------------------------------------
    def _logs(self, namespace: str, pod: str, container: str, opts: logs.Options) -> tuple[int, object]:
        """(status, chunks or message) of a container's log (kubelet ``validateContainerLogStatus``)."""
        run = next((r for r in list(self.pods.values()) if (r.namespace, r.name) == (namespace, pod)), None)
        box = run.box(container) if run is not None else None
        if run is None or box is None:
            return 404, f'container "{container}" in pod "{pod}" not found'
        if box.spec is None:
            return 200, iter(())  # no process, no output
        if opts.previous:
            if len(box.runs) < 2:
                return 400, f'previous terminated container "{container}" in pod "{pod}" not found'
            target = box.runs[-2]
        else:
            target = box.current
            if target is None:
                reason = (
                    "PodInitializing"
                    if box.init is False and run.phase() == "Pending"
                    else "ContainerCreating"
                )
                return 400, f'container "{container}" in pod "{pod}" is waiting to start: {reason}'
        return 200, logs.read(target.log, opts, target.poll)

    # --- exec and port-forward --------------------------------------------------------------------------
    def _streams(self, namespace: str, pod: str, container: str | None) -> tuple[int, object]:
        """(status, message or target) of an exec in ``container`` or a port-forward to the pod (``None``): the
        container's environment, working directory and uid/gid as its process runs with them (containers.py),
        the pod's address and its processes' sessions (each run leads its own), for streaming.py."""
        run = next((r for r in list(self.pods.values()) if (r.namespace, r.name) == (namespace, pod)), None)
        if run is None:
            return 404, f'pod "{pod}" not found on this node'
        target = {"pod": f"{namespace}/{pod}", "uid": run.uid, "address": run.pod_ip,
                  "sessions": [b.current.pid for b in run.boxes() if b.alive() and b.current.pid]}  # fmt: skip
        if container is None:
            if not run.processes:
                return (
                    400,
                    f'pod "{pod}" runs no process on this host (its images are not of this repository)',
                )
            return 200, target
        box = run.box(container)
        if box is None:
            return 404, f'container not found ("{container}")'
        if box.spec is None:
            return (
                400,
                f'container "{container}" in pod "{pod}" runs no process on this host (image {box.image})',
            )
        if not box.alive():
            return 400, f'container "{container}" in pod "{pod}" is not running'
        spec = box.spec
        target.update(env=[f"{k}={v}" for k, v in spec.env.items()], dir=spec.cwd,
                      user=list(spec.user) if spec.user is not None else None)  # fmt: skip
        return 200, target

    # --- the loop ----------------------------------------------------------------------------------------
    def next_wait(self) -> float:
        """Seconds until the next step: ``interval_s`` while a pod has a process to follow (its exit, a restart,
        a grace period) or is being admitted; else until the next lease renewal or status report, at most
        ``IDLE_S`` (a watch event wakes the loop before that)."""
        for run in self.pods.values():
            if run.kill_at is not None or (run.processes and (run.alive() or not run.finished())):
                return self.interval_s
        if self._refused:
            return self.interval_s
        if any(n["metadata"]["name"] not in self.nodes for n in self.node_informer.snapshot()):
            return self.interval_s  # a node not taken yet (its taking failed): tried again soon
        now = self.clock()
        due = [s.lease_at + LEASE_RENEW_S - now for s in self.nodes.values()]
        due += [s.status_at + STATUS_REPORT_S - now for s in self.nodes.values()]
        return max(self.interval_s, min([IDLE_S, *due]))

    def _run(self) -> None:
        retry.every(self.next_wait, self._stop, self.sync_once, "the process kubelet", log, self._failed,
                    wake=self._wake)  # fmt: skip

    def _failed(self) -> None:
        self.errors += 1

    def start(self) -> ProcessKubelet:
        self.informer.start()
        self.node_informer.start()
        self._thread = threading.Thread(target=self._run, daemon=True, name="process-kubelet")
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout=10)
        self.informer.stop()
        self.node_informer.stop()
        for run in self.pods.values():
            run.kill()
        for state in self.nodes.values():
            state.server.stop()
        self.streaming.stop()
