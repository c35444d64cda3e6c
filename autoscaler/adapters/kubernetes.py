"""The Kubernetes side (:class:`autoscaler.interfaces.Cluster`) over the official ``kubernetes`` client.

Pods, nodes, PodDisruptionBudgets, PersistentVolumeClaims, PersistentVolumes and StorageClasses are served from
list-then-watch caches (:mod:`.informer`), so a pass reads
no API at all; writes go straight to the API server: taints through a patch guarded by the node's
resourceVersion (a conflict re-reads and retries), evictions through the policy/v1 Eviction subresource (a 429
from a budget is an answer, not an error: the pod is tried again in a later pass, never forced), and two
ConfigMaps in the autoscaler's namespace: the persisted state and a status for people to read.
Transient API errors (5xx, 429 on writes other than evictions, connection errors) are retried with tenacity.
Events (on pods, and one per group decision on the status ConfigMap) never hold a pass up: they are queued to
an Event writer with a thread and a connection pool of its own (:mod:`autoscaler.adapters.events`).
"""

from __future__ import annotations

import json
import logging
import os
import threading
from collections import deque
from collections.abc import Callable

from kubernetes import client, config
from kubernetes.client.exceptions import ApiException
from tenacity import retry, retry_if_exception, stop_after_attempt, wait_exponential
from urllib3.exceptions import HTTPError

from autoscaler import metrics
from autoscaler.adapters.events import EventNotFound, EventRejected, EventWriter
from autoscaler.adapters.informer import Informer, object_key
from clusterspec.names import AUTOSCALER_COMPONENT as COMPONENT
from clusterspec.names import AUTOSCALER_NAMESPACE as DEFAULT_NAMESPACE
from clusterspec.names import (
    CORDONED_BY_AUTOSCALER_ANNOTATION,
    SCALE_DOWN_ABORTED_ANNOTATION,
    STATE_CONFIGMAP,
    STATUS_CONFIGMAP,
)

log = logging.getLogger("autoscaler.kubernetes")


def _transient(err: BaseException) -> bool:
    if isinstance(err, ApiException):
        return err.status in (409, 429, 500, 502, 503, 504) or err.status == 0
    return isinstance(err, HTTPError | ConnectionError | TimeoutError)


_retry = retry(
    retry=retry_if_exception(_transient),
    stop=stop_after_attempt(4),
    wait=wait_exponential(multiplier=0.2, max=2.0),
    reraise=True,
)


def api_client(kubeconfig: str | None = None) -> client.ApiClient:
    """A client from ``kubeconfig`` (or $KUBECONFIG), else the in-cluster service account, else ~/.kube/config."""
    path = kubeconfig or os.environ.get("KUBECONFIG")
    if path:
        return config.new_client_from_config(config_file=path)
    if os.environ.get("KUBERNETES_SERVICE_HOST"):
        cfg = client.Configuration()
        config.load_incluster_config(client_configuration=cfg)
        return client.ApiClient(cfg)
    return config.new_client_from_config()


POD_EVENTS_KEPT = (
    10_000  # pod events remembered for the check between a removal's reads and its Node deletion
)


# the API server answers a list as metadata only (apimachinery's PartialObjectMetadataList)
METADATA_LIST = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"
READ_BY_NAME_MAX = 8  # a purchase for this many pods or fewer is confirmed by reading each of them


class NodeChanged(RuntimeError):
    """A Node deletion's precondition failed (HTTP 409): the Node changed since it was read."""


def is_pending(pod: dict) -> bool:
    return (pod.get("status") or {}).get("phase", "Pending") == "Pending" and not (pod.get("spec") or {}).get(
        "nodeName"
    )


class KubeCluster:
    def __init__(
        self,
        api: client.ApiClient,
        *,
        namespace: str = DEFAULT_NAMESPACE,
        on_pending_pod: Callable[[dict], None] | None = None,
        page_size: int = 500,
        watch_timeout_s: int = 60,
        silence_s: float = 90.0,
        request_timeout_s: float = 10.0,
        lean_objects: bool = True,
        max_backoff_s: float = 30.0,
    ):
        """``on_pending_pod`` hears of each pod that becomes demand: newly pending, or its scheduling gates lifted
        (the loop's batching window; not a pending pod's later changes, as kube-scheduler's retries rewrite its
        condition, nor a DaemonSet's pod, as each new node gets several: both held the window open to its 10-s
        limit through a scale-up, issues 33 and 38);
        ``lean_objects``: the caches keep only the fields read (autoscaler/core/lean.py), False whole objects;
        ``max_backoff_s``: the caches' longest wait between failed lists (the live process: two scan intervals)."""
        self.api = api
        self.core = client.CoreV1Api(api)
        self.policy = client.PolicyV1Api(api)
        self.storage = client.StorageV1Api(api)
        self.namespace = namespace
        self.on_pending_pod = on_pending_pod
        self.request_timeout_s = request_timeout_s  # every read and write that is not a watch
        self._t = request_timeout_s
        kw = {"page_size": page_size, "watch_timeout_s": watch_timeout_s, "silence_s": silence_s,
              "request_timeout_s": request_timeout_s, "lean_objects": lean_objects,
              "max_backoff_s": max_backoff_s}  # fmt: skip
        self._events_lock = threading.Lock()
        self._pod_seq = 0  # pod events applied so far
        self._pod_events: deque = deque(maxlen=POD_EVENTS_KEPT)  # (seq, node, pod) of bound pods, newest last
        self._pending_since: dict[str, int] = {}  # pending pod -> the event that first showed it pending
        self._demand: set[str] = set()  # pending pods without scheduling gates (on_pending_pod heard of each)
        self._landed: set[str] = set()  # nodes the watch has shown a pod (not a DaemonSet's) bound to
        self._pass_mark: int | None = None  # the pod events the running pass covers (mark_pass)
        self._relists_seen = 0  # the pods cache's relists when mark_pass last forgot the pods they dropped
        self.informers = {
            "pods": Informer(
                "pods", self.core.list_pod_for_all_namespaces, "Pod", "v1", on_event=self._pod_event, **kw
            ),
            "nodes": Informer("nodes", self.core.list_node, "Node", "v1", **kw),
            "pdbs": Informer(
                "pdbs",
                self.policy.list_pod_disruption_budget_for_all_namespaces,
                "PodDisruptionBudget",
                "policy/v1",
                **kw,
            ),
            # what kube-scheduler's VolumeBinding reads (autoscaler/core/volumes.py): a pod whose claims are not
            # bound yet gets no node, one whose volume is on one node gets that node
            "pvcs": Informer(
                "pvcs",
                self.core.list_persistent_volume_claim_for_all_namespaces,
                "PersistentVolumeClaim",
                "v1",
                **kw,
            ),
            "pvs": Informer("pvs", self.core.list_persistent_volume, "PersistentVolume", "v1", **kw),
            "storageclasses": Informer(
                "storageclasses", self.storage.list_storage_class, "StorageClass", "storage.k8s.io/v1", **kw
            ),
        }

    # -- caches -----------------------------------------------------------------------------------------------
    def sync(self) -> None:
        """List everything once (``--once``, ``autoscaler snapshot``: no watches)."""
        for informer in self.informers.values():
            informer.sync()

    def start(self) -> None:
        """List, then watch, each kind in a thread of its own."""
        for informer in self.informers.values():
            informer.start()

    def stop(self) -> None:
        for informer in self.informers.values():
            informer.stop()

    def synced(self) -> bool:
        return all(i.synced.is_set() for i in self.informers.values())

    def wait_synced(self, timeout_s: float) -> bool:
        return all(i.synced.wait(timeout_s) for i in self.informers.values())

    def cache_ages(self) -> dict[str, float | None]:
        """Per cache, seconds since it was last confirmed current (None: never listed)."""
        return {name: i.age() for name, i in self.informers.items()}

    def _pod_event(self, kind: str, pod: dict) -> None:
        node = (pod.get("spec") or {}).get("nodeName") if kind != "DELETED" else None
        pending = kind != "DELETED" and is_pending(pod)
        demand = pending and not (pod.get("spec") or {}).get("schedulingGates") and not _daemonset_pod(pod)
        key = object_key(pod)
        with self._events_lock:
            new_demand = demand and key not in self._demand
            if demand:
                self._demand.add(key)
            else:
                self._demand.discard(key)
            self._pod_seq += 1
            if node:
                self._pod_events.append((self._pod_seq, node, pod))
                if not _daemonset_pod(pod):
                    self._landed.add(node)
            if pending:
                self._pending_since.setdefault(key, self._pod_seq)
            else:
                self._pending_since.pop(key, None)
        if new_demand and self.on_pending_pod is not None:
            self.on_pending_pod(pod)

    def landed_nodes(self, present: set[str]) -> set[str]:
        """The nodes of ``present`` that the pods watch has shown a pod (not a DaemonSet's) bound to since this
        process started; the names of nodes gone are forgotten."""
        with self._events_lock:
            self._landed &= present
            return set(self._landed)

    def mark_pass(self) -> None:
        """A pass starts (the loop calls this as it closes the batching window): the pods the watch first shows
        pending after this moment belong to the next window, which their events open, and :meth:`list_pods` leaves
        them out of this pass. Without it a pass whose first read is slow plans on the first pod of a burst that
        began meanwhile and buys for it alone, then again for the rest."""
        pods = self.informers["pods"]
        with self._events_lock:
            self._pass_mark = self._pod_seq
            if pods.relists != self._relists_seen:  # a relist may have dropped pods no DELETED event named
                self._relists_seen = pods.relists
                for k in [k for k in self._pending_since if pods.get(k) is None]:
                    del self._pending_since[k]
                self._demand = {k for k in self._demand if pods.get(k) is not None}

    def pod_event_mark(self) -> int:
        """A mark in the pods watch's stream of events (before a removal's fresh read)."""
        with self._events_lock:
            return self._pod_seq

    def pods_seen_on(self, node: str, mark: int) -> list[dict] | None:
        """The pods the watch showed bound to ``node`` (added or changed) since ``mark``; None when more events came
        than are kept, so nothing can be said."""
        with self._events_lock:
            if self._pod_seq - mark > len(self._pod_events) and len(self._pod_events) == POD_EVENTS_KEPT:
                return None
            return [p for seq, n, p in self._pod_events if seq > mark and n == node]

    def list_pods(self) -> list[dict]:
        """The cached pods, less those first shown pending after the running pass began (:meth:`mark_pass`)."""
        pods = self.informers["pods"].items()
        with self._events_lock:
            mark = self._pass_mark
            if mark is None or self._pod_seq == mark:
                return pods
            later = {k for k, seq in self._pending_since.items() if seq > mark}
        if not later:
            return pods
        kept = [p for p in pods if not (object_key(p) in later and is_pending(p))]
        log.debug("pods left to the next window", extra={"pods": len(pods) - len(kept)})
        return kept

    def list_nodes(self) -> list[dict]:
        return self.informers["nodes"].items()

    def list_pdbs(self) -> list[dict]:
        return self.informers["pdbs"].items()

    def list_storage(self) -> dict[str, list[dict]]:
        """The claims, volumes and storage classes, under their snapshot keys (docs/snapshot.md)."""
        return {
            "persistentvolumeclaims": self.informers["pvcs"].items(),
            "persistentvolumes": self.informers["pvs"].items(),
            "storageclasses": self.informers["storageclasses"].items(),
        }

    # -- fresh reads (before anything is terminated: never the caches) -----------------------------------------
    def _read(self, what: str, fn, **kwargs) -> dict:
        try:
            resp = _retry(fn)(_preload_content=False, _request_timeout=self.request_timeout_s, **kwargs)
        except ApiException as e:
            self._count(what, "read", e)
            raise RuntimeError(f"read {what}: HTTP {e.status} {e.reason}") from None
        except (HTTPError, OSError) as e:
            self._count(what, "read", e)
            raise RuntimeError(f"read {what}: {e}") from None
        return json.loads(resp.data)

    def read_node(self, name: str) -> dict | None:
        """The Node as the API server has it now; None when it does not exist."""
        try:
            return self._read(f"node {name}", self.core.read_node, name=name)
        except RuntimeError as e:
            if "HTTP 404" in str(e):
                return None
            raise

    def read_nodes(self) -> list[dict]:
        return self._read("nodes", self.core.list_node).get("items") or []

    def read_pods_on_node(self, name: str) -> list[dict]:
        """The pods bound to the node now (fieldSelector spec.nodeName, as kubectl drain lists them)."""
        body = self._read(
            f"pods on {name}", self.core.list_pod_for_all_namespaces, field_selector=f"spec.nodeName={name}"
        )
        return body.get("items") or []

    def read_pending_pods(self, keys: list[str] | None = None) -> list[dict]:
        """The pods pending and bound to no node now (fieldSelector ``spec.nodeName=,status.phase=Pending``), as
        their metadata only (a PartialObjectMetadataList, as client-go's metadata client asks for it: names and
        uids are what a purchase is confirmed against), of ``keys`` (``namespace/name``) or of all. Up to
        ``READ_BY_NAME_MAX`` keys, one list per key in its namespace with ``metadata.name`` in the selector too,
        which the API server answers from that one object (a selector over every pod took 0.2 to 0.5 s at 50,000
        pods on a loaded API server, on the decision's path); the role lists pods, it does not get them."""
        selector = "spec.nodeName=,status.phase=Pending"
        if keys is not None and len(keys) <= READ_BY_NAME_MAX:
            out = []
            for key in keys:
                namespace, _, name = key.partition("/")
                body = self._read(f"pod {key}", self.core.list_namespaced_pod, namespace=namespace,
                                  field_selector=f"metadata.name={name},{selector}",
                                  _headers={"Accept": METADATA_LIST})  # fmt: skip
                out.extend(body.get("items") or [])
            return out
        body = self._read(
            "pending pods",
            self.core.list_pod_for_all_namespaces,
            field_selector=selector,
            _headers={"Accept": METADATA_LIST},
        )
        return body.get("items") or []

    # -- writes ---------------------------------------------------------------------------------------------------
    def _count(self, where: str, operation: str, err: Exception) -> None:
        metrics.API_ERRORS.labels("kubernetes", where, operation).inc()
        log.warning(
            "kubernetes call failed", extra={"where": where, "operation": operation, "error": str(err)}
        )

    def _call(self, where: str, operation: str, fn, *args, **kwargs):
        try:
            return _retry(fn)(*args, **kwargs)
        except ApiException as e:
            self._count(where, operation, e)
            raise RuntimeError(f"{operation} {where}: HTTP {e.status} {e.reason}") from None
        except (HTTPError, OSError) as e:
            self._count(where, operation, e)
            raise RuntimeError(f"{operation} {where}: {e}") from None

    def _set_taints(self, name: str, change: Callable[[list[dict]], list[dict] | None], extra=None) -> None:
        """Read the node, change its taints, patch them guarded by resourceVersion (a conflict retries).
        ``extra(node)`` adds to the same patch (``{"spec": ..., "metadata": {"annotations": ...}}``), or None."""

        def attempt():
            node = json.loads(
                self.core.read_node(name, _preload_content=False, _request_timeout=self._t).data
            )
            taints = (node.get("spec") or {}).get("taints") or []
            wanted = change(list(taints))
            more = extra(node) if extra is not None else None
            if wanted is None and not more:
                return
            body = {"metadata": {"resourceVersion": node["metadata"]["resourceVersion"]}, "spec": {}}
            if wanted is not None:
                body["spec"]["taints"] = wanted
            for part, values in (more or {}).items():
                body.setdefault(part, {}).update(values)
            self.core.patch_node(name, body, _request_timeout=self._t)

        self._call(name, "patch node taints", attempt)

    def mark_for_removal(self, name: str, taint: dict) -> None:
        """Taint the node and cordon it (spec.unschedulable, as cluster-autoscaler's
        ``--cordon-node-before-terminating`` does in ``taints.MarkToBeDeleted``), in one patch guarded by its
        resourceVersion; a node someone else cordoned stays theirs (no annotation, never uncordoned by us)."""

        def add(taints):
            if any(t.get("key") == taint["key"] and t.get("effect") == taint["effect"] for t in taints):
                return None
            return [*taints, {k: taint[k] for k in ("key", "value", "effect") if taint.get(k) is not None}]

        def cordon(node):
            annotations = (node.get("metadata") or {}).get("annotations") or {}
            out: dict = {}
            if SCALE_DOWN_ABORTED_ANNOTATION in annotations:
                out["metadata"] = {"annotations": {SCALE_DOWN_ABORTED_ANNOTATION: None}}
            if not (node.get("spec") or {}).get("unschedulable"):
                out["spec"] = {"unschedulable": True}
                out.setdefault("metadata", {"annotations": {}})["annotations"][
                    CORDONED_BY_AUTOSCALER_ANNOTATION
                ] = "true"
            return out

        self._set_taints(name, add, cordon)

    def unmark(self, name: str, keys: list[str], annotations: dict[str, str | None] | None = None) -> None:
        """Remove the to-be-deleted taints ``keys``, uncordon the node when we cordoned it, and merge
        ``annotations`` (None removes a key), in one patch guarded by the node's resourceVersion."""

        def remove(taints):
            kept = [t for t in taints if t.get("key") not in keys]
            return None if len(kept) == len(taints) else kept

        def uncordon(node):
            meta = node.get("metadata") or {}
            wanted = {
                k: v for k, v in (annotations or {}).items() if (meta.get("annotations") or {}).get(k) != v
            }
            out: dict = {}
            if CORDONED_BY_AUTOSCALER_ANNOTATION in (meta.get("annotations") or {}):
                out["spec"] = {"unschedulable": False}
                wanted[CORDONED_BY_AUTOSCALER_ANNOTATION] = None
            if wanted:
                out["metadata"] = {"annotations": wanted}
            return out

        self._set_taints(name, remove, uncordon)

    def taint_node(self, name: str, taint: dict) -> None:
        def add(taints):
            if any(t.get("key") == taint["key"] and t.get("effect") == taint["effect"] for t in taints):
                return None
            return [*taints, {k: taint[k] for k in ("key", "value", "effect") if taint.get(k) is not None}]

        self._set_taints(name, add)

    def untaint_node(self, name: str, key: str) -> None:
        def remove(taints):
            kept = [t for t in taints if t.get("key") != key]
            return None if len(kept) == len(taints) else kept

        self._set_taints(name, remove)

    def annotate_node(self, name: str, annotations: dict[str, str | None]) -> None:
        self._call(
            name,
            "annotate node",
            self.core.patch_node,
            name,
            {"metadata": {"annotations": annotations}},
            _request_timeout=self._t,
        )

    def evict_pod(self, namespace: str, name: str) -> bool:
        body = {
            "apiVersion": "policy/v1",
            "kind": "Eviction",
            "metadata": {"name": name, "namespace": namespace},
        }
        try:
            self.core.create_namespaced_pod_eviction(name, namespace, body, _request_timeout=self._t)
        except ApiException as e:
            if e.status == 429:
                return False  # a disruption budget refuses it now: a later pass tries again
            if e.status == 404:
                return True  # already gone
            self._count(f"{namespace}/{name}", "evict pod", e)
            raise RuntimeError(f"evict {namespace}/{name}: HTTP {e.status} {e.reason}") from None
        return True

    def delete_node(self, name: str, uid: str | None = None, resource_version: str | None = None) -> None:
        """Delete the Node (a 404 is success). With ``uid``/``resource_version``: only the Node as it was read
        (DeleteOptions preconditions; HTTP 409 raises NodeChanged: it changed since, nothing is deleted)."""
        body = None
        if uid or resource_version:
            body = client.V1DeleteOptions(
                preconditions=client.V1Preconditions(uid=uid, resource_version=resource_version)
            )

        def delete():
            try:
                self.core.delete_node(name, body=body, _request_timeout=self._t)
            except ApiException as e:
                if e.status == 409 and body is not None:
                    raise NodeChanged(
                        f"delete node {name}: it changed since it was read ({e.reason})"
                    ) from None
                if e.status != 404:
                    raise

        self._call(name, "delete node", delete)

    # -- Events (off the decision path: autoscaler.adapters.events) -------------------------------------------------
    @property
    def events(self) -> EventWriter:
        """The Event writer: its own thread and its own connection pool, so a slow Event never waits in front of
        (or behind) the pass's requests; made on first use."""
        writer = self.__dict__.get("_event_writer")
        if writer is None:
            sink = KubeEventSink(client.ApiClient(self.api.configuration), self.request_timeout_s)
            instance = os.environ.get("POD_NAME", COMPONENT)
            writer = self.__dict__["_event_writer"] = EventWriter(
                sink, component=COMPONENT, instance=instance
            )
        return writer

    @events.setter
    def events(self, writer: EventWriter) -> None:
        self.__dict__["_event_writer"] = writer

    def record_event(self, pod: dict, reason: str, message: str, type: str = "Normal") -> bool:  # noqa: A002
        """Queue an Event on the pod; returns at once (False: dropped, the writer's queue is full)."""
        meta = pod.get("metadata") or {}
        ref = {"apiVersion": "v1", "kind": "Pod", "name": meta.get("name"),
               "namespace": meta.get("namespace") or "default", "uid": meta.get("uid"),
               "resourceVersion": meta.get("resourceVersion")}  # fmt: skip
        return self.events.submit(ref, reason, message, type)

    def record_node_event(self, node: dict, reason: str, message: str, type: str = "Normal") -> bool:  # noqa: A002
        """Queue an Event on a Node (``kubectl describe node`` shows it; cluster-autoscaler writes its scale-down
        Events there too, e.g. ScaleDownFailed)."""
        meta = node.get("metadata") or {}
        ref = {"apiVersion": "v1", "kind": "Node", "name": meta.get("name"), "uid": meta.get("uid")}
        return self.events.submit(ref, reason, message, type)

    def record_status_event(self, reason: str, message: str, type: str = "Normal") -> bool:  # noqa: A002
        """Queue an Event about the whole autoscaler (one per group decision: ScaledUpGroup, FailedToScaleUpGroup)
        on its status ConfigMap, as cluster-autoscaler's LogEventRecorder does on cluster-autoscaler-status
        (``kubectl -n research-autoscaler describe cm research-autoscaler-status``)."""
        ref = {"apiVersion": "v1", "kind": "ConfigMap", "name": STATUS_CONFIGMAP, "namespace": self.namespace,
               "uid": self.__dict__.get("_status_uid")}  # fmt: skip
        return self.events.submit(ref, reason, message, type)

    def flush_events(self, timeout_s: float) -> bool:
        """Wait, at most ``timeout_s``, until the queued Events are written; True when they are."""
        writer = self.__dict__.get("_event_writer")
        return writer is None or writer.flush(timeout_s)

    def close_events(self, timeout_s: float = 5.0) -> int:
        """On shutdown: write the queued Events for at most ``timeout_s``; returns how many were dropped."""
        writer = self.__dict__.get("_event_writer")
        if writer is None:
            return 0
        dropped = writer.close(timeout_s)
        close = getattr(writer.sink, "close", None)
        if close is not None and not writer.pending():
            close()
        return dropped

    # -- ConfigMaps -------------------------------------------------------------------------------------------------
    def _read_configmap(self, name: str) -> dict[str, str]:
        def read():
            try:
                return json.loads(
                    self.core.read_namespaced_config_map(
                        name, self.namespace, _preload_content=False, _request_timeout=self._t
                    ).data
                )
            except ApiException as e:
                if e.status == 404:
                    return {}
                raise

        return (self._call(name, "read configmap", read) or {}).get("data") or {}

    def _write_configmap(self, name: str, data: dict[str, str]) -> None:
        body = {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {
                "name": name,
                "namespace": self.namespace,
                "labels": {"app.kubernetes.io/name": COMPONENT},
            },
            "data": data,
        }

        def write():
            try:
                return self.core.replace_namespaced_config_map(
                    name, self.namespace, body, _request_timeout=self._t
                )
            except ApiException as e:
                if e.status != 404:
                    raise
                return self.core.create_namespaced_config_map(self.namespace, body, _request_timeout=self._t)

        written = self._call(name, "write configmap", write)
        if name == STATUS_CONFIGMAP:  # the object the group Events are about (record_status_event)
            self.__dict__["_status_uid"] = getattr(getattr(written, "metadata", None), "uid", None)

    def read_state(self) -> dict[str, str]:
        return self._read_configmap(STATE_CONFIGMAP)

    def write_state(self, data: dict[str, str]) -> None:
        self._write_configmap(STATE_CONFIGMAP, data)

    def write_status(self, data: dict[str, str]) -> None:
        """The status ConfigMap (``kubectl -n research-autoscaler get cm research-autoscaler-status -o yaml``)."""
        self._write_configmap(STATUS_CONFIGMAP, data)


class KubeEventSink:
    """The Event writer's way to the API (autoscaler.adapters.events.EventSink): create, and PATCH a repeat
    (strategic merge, as client-go's EventSinkImpl.Patch). No retries here: the writer decides."""

    def __init__(self, api: client.ApiClient, request_timeout_s: float):
        self.api, self.core, self.timeout = api, client.CoreV1Api(api), request_timeout_s

    def close(self) -> None:
        self.api.close()

    def create(self, event: dict) -> dict:
        meta = event["metadata"]
        return self._call(f"{meta['namespace']}/{meta['name']}", "create event", False,
                          self.core.create_namespaced_event, meta["namespace"], event)  # fmt: skip

    def patch(self, namespace: str, name: str, patch: dict) -> dict:
        return self._call(f"{namespace}/{name}", "patch event", True, self.core.patch_namespaced_event, name,
                          namespace, patch, _content_type="application/strategic-merge-patch+json")  # fmt: skip

    def _call(self, where: str, operation: str, patching: bool, fn, *args, **kwargs) -> dict:
        try:
            resp = fn(*args, _preload_content=False, _request_timeout=self.timeout, **kwargs)
        except ApiException as e:
            if e.status == 404 and patching:
                raise EventNotFound(where) from None
            metrics.API_ERRORS.labels("kubernetes", where, operation).inc()
            if 400 <= e.status < 500 and e.status != 429:  # a StatusError: abandoned, as recordEvent does
                raise EventRejected(f"{operation} {where}: HTTP {e.status} {e.reason}") from None
            raise RuntimeError(f"{operation} {where}: HTTP {e.status} {e.reason}") from None
        except (HTTPError, OSError) as e:
            metrics.API_ERRORS.labels("kubernetes", where, operation).inc()
            raise RuntimeError(f"{operation} {where}: {e}") from None
        return json.loads(resp.data)


def _daemonset_pod(pod: dict) -> bool:
    owners = (pod.get("metadata") or {}).get("ownerReferences") or ()
    return any(isinstance(o, dict) and o.get("kind") == "DaemonSet" for o in owners)
