"""The StatefulSet controller (pkg/controller/statefulset), the part a client sees: pods ``<name>-<ordinal>`` with
the ``statefulset.kubernetes.io/pod-name`` and ``apps.kubernetes.io/pod-index`` labels, ``hostname`` and
``subdomain`` (``serviceName``); ``OrderedReady`` creates the next ordinal only once the ones before it are Running
and Ready, ``Parallel`` all at once; scaling down removes the highest ordinals first; a deleted pod is re-made
under its name. Refused pods are ``FailedCreate`` events as for ReplicaSets. Status: replicas, readyReplicas,
currentReplicas, updatedReplicas, availableReplicas, observedGeneration."""

from __future__ import annotations

import copy

from autoscaler.model.controllers import Controller
from autoscaler.model.controllers.common import (
    controller_of,
    create,
    delete,
    event,
    is_active,
    is_ready,
    owner_ref,
)

COMPONENT = "statefulset-controller"


class StatefulSetController(Controller):
    kinds = ("statefulsets", "pods")

    def on_change(self, kind: str, event_type: str, obj: dict) -> None:
        meta = obj["metadata"]
        if kind == "statefulsets":
            if event_type != "DELETED":
                self.dirty.add((meta.get("namespace", ""), meta["name"]))
            return
        ref = controller_of(obj)
        if ref is not None and ref.get("kind") == "StatefulSet":
            self.dirty.add((meta.get("namespace", ""), ref.get("name", "")))

    def sync(self) -> None:
        work, self.dirty = self.dirty, set()
        for ns, name in sorted(work):
            sts = self.store.find("statefulsets", ns, name)
            if sts is not None and not sts["metadata"].get("deletionTimestamp"):
                self._sync(sts)

    def _sync(self, sts: dict) -> None:
        meta, spec = sts["metadata"], sts.get("spec") or {}
        ns, name, uid = meta["namespace"], meta["name"], meta["uid"]
        replicas = int(spec.get("replicas", 1))
        parallel = spec.get("podManagementPolicy") == "Parallel"
        pods = {
            p["metadata"]["name"]: p
            for p in self.store.list("pods", ns)
            if (controller_of(p) or {}).get("uid") == uid
        }
        for ordinal in range(replicas):
            pname = f"{name}-{ordinal}"
            pod = pods.get(pname)
            if pod is not None:
                if not parallel and not (is_active(pod) and is_ready(pod)):
                    break
                continue
            made, error = create(self.model, "pods", self._pod(sts, ordinal))
            if made is None:
                event(self.model, sts, "FailedCreate", f"create Pod {pname} in StatefulSet {name} failed error: {error}",
                      "Warning", COMPONENT)  # fmt: skip
                break
            event(self.model, sts, "SuccessfulCreate", f"create Pod {pname} in StatefulSet {name} successful", "Normal",
                  COMPONENT)  # fmt: skip
            if not parallel:
                break
        for pname, pod in sorted(pods.items(), key=lambda kv: -int(kv[0].rsplit("-", 1)[-1] or 0)):
            ordinal = int(pname.rsplit("-", 1)[-1]) if pname.rsplit("-", 1)[-1].isdigit() else -1
            if ordinal >= replicas and is_active(pod):
                delete(self.model, "pods", pod)
                event(self.model, sts, "SuccessfulDelete", f"delete Pod {pname} in StatefulSet {name} successful",
                      "Normal", COMPONENT)  # fmt: skip
                if not parallel:
                    break
        live = [
            p
            for p in self.store.list("pods", ns)
            if (controller_of(p) or {}).get("uid") == uid and is_active(p)
        ]
        ready = sum(1 for p in live if is_ready(p))
        status = {"replicas": len(live), "readyReplicas": ready, "currentReplicas": len(live),
                  "updatedReplicas": len(live), "availableReplicas": ready,
                  "observedGeneration": meta.get("generation", 1), "collisionCount": 0}  # fmt: skip
        if status != sts.get("status"):
            sts["status"] = status
            self.store.modified("statefulsets", sts)

    def _pod(self, sts: dict, ordinal: int) -> dict:
        meta, spec = sts["metadata"], sts.get("spec") or {}
        template = copy.deepcopy(spec.get("template") or {})
        tmeta = template.get("metadata") or {}
        pspec = template.get("spec") or {}
        name = f"{meta['name']}-{ordinal}"
        pspec.setdefault("hostname", name)
        if spec.get("serviceName"):
            pspec.setdefault("subdomain", spec["serviceName"])
        labels = {**(tmeta.get("labels") or {}), "statefulset.kubernetes.io/pod-name": name,
                  "apps.kubernetes.io/pod-index": str(ordinal)}  # fmt: skip
        return {"apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": name, "namespace": meta["namespace"], "labels": labels,
                             "annotations": dict(tmeta.get("annotations") or {}),
                             "ownerReferences": [owner_ref(sts, "apps/v1", "StatefulSet")]},
                "spec": pspec}  # fmt: skip
