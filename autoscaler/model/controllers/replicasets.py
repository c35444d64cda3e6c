"""The ReplicaSet controller (pkg/controller/replicaset), which also runs ReplicationControllers.

It keeps ``spec.replicas`` active pods matching the selector: orphans that match are adopted, extra pods are
deleted (not yet scheduled, then pending, then not ready, then the newest first: ``ActivePodsWithRanks``), missing
ones created from the template as ``<name>-<5 chars>``. A pod the API refuses (Pod Security, quota, a missing
ServiceAccount) is an event ``FailedCreate`` "Error creating: <the API's message>" and the condition
``ReplicaFailure`` (reason FailedCreate) on the ReplicaSet, retried with back-off; the condition goes once a pod
is created. Status: replicas, fullyLabeledReplicas, readyReplicas, availableReplicas (ready for
``minReadySeconds``), observedGeneration.
"""

from __future__ import annotations

import copy
import datetime as dt

from autoscaler.model.clock import iso
from autoscaler.model.controllers import Controller
from autoscaler.model.controllers.common import (
    controller_of,
    create,
    delete,
    event,
    is_active,
    is_ready,
    owner_ref,
    remove_condition,
    set_condition,
)
from autoscaler.model.pods import selector_matches

RETRY_MAX_S = 300.0


def _ready_since(pod: dict) -> float | None:
    for c in (pod.get("status") or {}).get("conditions") or ():
        if c.get("type") == "Ready" and c.get("status") == "True":
            t = c.get("lastTransitionTime")
            return dt.datetime.fromisoformat(t.replace("Z", "+00:00")).timestamp() if t else 0.0
    return None


class ReplicaSetController(Controller):
    kinds = ("replicasets", "replicationcontrollers", "pods")
    owner_kinds = {"replicasets": ("apps/v1", "ReplicaSet", "replicaset-controller"),
                   "replicationcontrollers": ("v1", "ReplicationController", "replication-controller")}  # fmt: skip

    def __init__(self, model) -> None:
        super().__init__(model)
        self.errors: dict[str, int] = {}
        self._timers: set[str] = set()

    def on_change(self, kind: str, event_type: str, obj: dict) -> None:
        meta = obj["metadata"]
        if kind in self.owner_kinds:
            if event_type != "DELETED":
                self.dirty.add((kind, meta.get("namespace", ""), meta["name"]))
            return
        ref = controller_of(obj)
        if ref is not None:
            kind_of = {"ReplicaSet": "replicasets", "ReplicationController": "replicationcontrollers"}.get(
                ref.get("kind")
            )
            if kind_of:
                self.dirty.add((kind_of, meta.get("namespace", ""), ref.get("name", "")))
        elif event_type == "ADDED" and meta.get("labels"):
            self.dirty.add(("orphan", meta.get("namespace", ""), meta["name"]))

    def sync(self) -> None:
        work, self.dirty = self.dirty, set()
        for kind, ns, name in sorted(work):
            if kind == "orphan":
                self._adopt(ns, name)
                continue
            rs = self.store.find(kind, ns, name)
            if rs is not None:
                self.sync_rs(kind, rs)

    def _selects(self, kind: str, rs: dict, labels: dict) -> bool:
        sel = (rs.get("spec") or {}).get("selector") or {}
        if kind == "replicationcontrollers":
            return bool(sel) and all(labels.get(k) == v for k, v in sel.items())
        return bool(sel) and selector_matches(sel, labels)

    def _adopt(self, ns: str, name: str) -> None:
        pod = self.store.find("pods", ns, name)
        if pod is None or controller_of(pod) is not None or not is_active(pod):
            return
        labels = pod["metadata"].get("labels") or {}
        for kind in self.owner_kinds:
            for rs in self.store.list(kind, ns):
                if not rs["metadata"].get("deletionTimestamp") and self._selects(kind, rs, labels):
                    api_version, k, _ = self.owner_kinds[kind]
                    pod["metadata"].setdefault("ownerReferences", []).append(owner_ref(rs, api_version, k))
                    self.store.modified("pods", pod)
                    self.dirty.add((kind, ns, rs["metadata"]["name"]))
                    return

    def _wake(self, kind: str, ns: str, name: str) -> None:
        self._timers.discard(f"{kind}/{ns}/{name}")
        self.dirty.add((kind, ns, name))

    def sync_rs(self, kind: str, rs: dict) -> None:
        meta, spec = rs["metadata"], rs.get("spec") or {}
        api_version, k, component = self.owner_kinds[kind]
        uid = meta["uid"]
        pods = [
            p
            for p in self.store.list("pods", meta["namespace"])
            if (controller_of(p) or {}).get("uid") == uid
        ]
        status = copy.deepcopy(rs.get("status") or {})
        before = copy.deepcopy(status)
        now = self.model.clock.now()
        stamp = iso(now)
        if not meta.get("deletionTimestamp"):
            active = [p for p in pods if is_active(p)]
            want = int(spec.get("replicas", 1))
            diff = len(active) - want
            key = f"{kind}/{meta['namespace']}/{meta['name']}"
            if diff < 0:
                for _ in range(-diff):
                    made, error = create(self.model, "pods", self._pod(rs, api_version, k))
                    if made is None:
                        event(
                            self.model, rs, "FailedCreate", f"Error creating: {error}", "Warning", component
                        )
                        set_condition(status, "ReplicaFailure", "True", "FailedCreate", error, stamp)
                        n = self.errors[key] = self.errors.get(key, 0) + 1
                        if key not in self._timers:
                            self._timers.add(key)
                            self.later(
                                min(2.0**n, RETRY_MAX_S), self._wake, kind, meta["namespace"], meta["name"]
                            )
                        break
                    self.errors.pop(key, None)
                    remove_condition(status, "ReplicaFailure")
                    event(self.model, rs, "SuccessfulCreate", f"Created pod: {made['metadata']['name']}", "Normal",
                          component)  # fmt: skip
            elif diff > 0:
                ranked = sorted(active, key=lambda p: (bool((p.get("spec") or {}).get("nodeName")),
                                                        p["status"].get("phase") == "Running", is_ready(p),
                                                        -_created(p)))  # fmt: skip
                for p in ranked[:diff]:
                    delete(self.model, "pods", p)
                    event(self.model, rs, "SuccessfulDelete", f"Deleted pod: {p['metadata']['name']}", "Normal",
                          component)  # fmt: skip
            else:
                if remove_condition(status, "ReplicaFailure"):
                    self.errors.pop(key, None)
        pods = [
            p
            for p in self.store.list("pods", meta["namespace"])
            if (controller_of(p) or {}).get("uid") == uid
        ]
        active = [p for p in pods if is_active(p)]
        min_ready = self.model.clock.scale(float(spec.get("minReadySeconds", 0)))
        ready = [p for p in active if is_ready(p)]
        available = [p for p in ready if (_ready_since(p) or 0.0) + min_ready <= now]
        if len(available) < len(ready) and min_ready > 0:
            self.later(
                float(spec.get("minReadySeconds", 0)), self._wake, kind, meta["namespace"], meta["name"]
            )
        labels = ((spec.get("template") or {}).get("metadata") or {}).get("labels") or {}
        status.update(
            replicas=len(active),
            fullyLabeledReplicas=sum(1 for p in active if all((p["metadata"].get("labels") or {}).get(a) == b
                                                              for a, b in labels.items())),
            readyReplicas=len(ready),
            availableReplicas=len(available),
            observedGeneration=meta.get("generation", 1),
        )  # fmt: skip
        if not status.get("conditions"):
            status.pop("conditions", None)
        if status != before and self.store.find(kind, meta["namespace"], meta["name"]) is rs:
            rs["status"] = status
            self.store.modified(kind, rs)

    def _pod(self, rs: dict, api_version: str, kind: str) -> dict:
        template = copy.deepcopy((rs.get("spec") or {}).get("template") or {})
        tmeta = template.get("metadata") or {}
        return {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"generateName": f"{rs['metadata']['name']}-", "namespace": rs["metadata"]["namespace"],
                         "labels": dict(tmeta.get("labels") or {}), "annotations": dict(tmeta.get("annotations") or {}),
                         "ownerReferences": [owner_ref(rs, api_version, kind)]},
            "spec": template.get("spec") or {},
        }  # fmt: skip


def _created(pod: dict) -> float:
    t = pod["metadata"].get("creationTimestamp")
    return dt.datetime.fromisoformat(t.replace("Z", "+00:00")).timestamp() if t else 0.0
