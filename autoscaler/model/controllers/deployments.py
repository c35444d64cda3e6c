"""The Deployment controller (pkg/controller/deployment): a ReplicaSet per pod template, named
``<deployment>-<pod-template-hash>`` with the ``pod-template-hash`` label in its selector and template, revision
annotations; ``RollingUpdate`` scales the new ReplicaSet up within ``maxSurge`` and the old ones down within
``maxUnavailable`` (percentages of ``replicas``, surge rounded up, unavailable down), ``Recreate`` scales the old
ones to 0 and waits for their pods to go. Old ReplicaSets beyond ``revisionHistoryLimit`` are deleted.

Status: replicas, updatedReplicas, readyReplicas, availableReplicas, unavailableReplicas, observedGeneration and
the conditions ``Available`` (MinimumReplicasAvailable / MinimumReplicasUnavailable), ``Progressing``
(NewReplicaSetCreated, FoundNewReplicaSet, ReplicaSetUpdated, NewReplicaSetAvailable, ProgressDeadlineExceeded
after ``progressDeadlineSeconds``) and ``ReplicaFailure``, copied from the new ReplicaSet (the reason a refused pod
gave: ``pods "x" is forbidden: violates PodSecurity ...``). Events ``ScalingReplicaSet`` "Scaled up replica set x
from 0 to 2".

The hash is FNV-32a of the template, as ``controller.ComputeHash`` takes it, over the template's JSON rather than
Go's object dump, so its value differs from a real cluster's; it is stable and changes with the template.
"""

from __future__ import annotations

import copy
import datetime as dt
import json
import math

from autoscaler.model.clock import iso
from autoscaler.model.controllers import Controller
from autoscaler.model.controllers.common import (
    controller_of,
    create,
    delete,
    event,
    has_condition,
    owner_ref,
    set_condition,
)

COMPONENT = "deployment-controller"
HASH_LABEL = "pod-template-hash"
REVISION = "deployment.kubernetes.io/revision"
SAFE = "bcdfghjklmnpqrstvwxz2456789"


def fnv32a(data: bytes) -> int:
    h = 0x811C9DC5
    for b in data:
        h ^= b
        h = (h * 0x01000193) & 0xFFFFFFFF
    return h


def safe_encode(text: str) -> str:
    """apimachinery rand.SafeEncodeString: each byte mapped into the alphabet without vowels and look-alikes."""
    return "".join(SAFE[b % len(SAFE)] for b in text.encode())


def template_hash(template: dict, collisions: int = 0) -> str:
    data = json.dumps(template, sort_keys=True, separators=(",", ":")).encode()
    if collisions:
        data += str(collisions).encode()
    return safe_encode(str(fnv32a(data)))


def _resolve(value, replicas: int, round_up: bool) -> int:
    if isinstance(value, str) and value.endswith("%"):
        x = float(value[:-1]) * replicas / 100.0
        return int(math.ceil(x)) if round_up else int(math.floor(x))
    return int(value or 0)


def _epoch(stamp: str | None) -> float:
    return dt.datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp() if stamp else 0.0


class DeploymentController(Controller):
    kinds = ("deployments", "replicasets")

    def on_change(self, kind: str, event_type: str, obj: dict) -> None:
        meta = obj["metadata"]
        if kind == "deployments":
            if event_type != "DELETED":
                self.dirty.add((meta.get("namespace", ""), meta["name"]))
            return
        ref = controller_of(obj)
        if ref is not None and ref.get("kind") == "Deployment":
            self.dirty.add((meta.get("namespace", ""), ref.get("name", "")))

    def sync(self) -> None:
        work, self.dirty = self.dirty, set()
        for ns, name in sorted(work):
            d = self.store.find("deployments", ns, name)
            if d is not None and not d["metadata"].get("deletionTimestamp"):
                self.sync_deployment(d)

    def _wake(self, ns: str, name: str) -> None:
        self.dirty.add((ns, name))

    def sync_deployment(self, d: dict) -> None:
        meta, spec = d["metadata"], d.get("spec") or {}
        ns = meta["namespace"]
        uid = meta["uid"]
        owned = [
            rs for rs in self.store.list("replicasets", ns) if (controller_of(rs) or {}).get("uid") == uid
        ]
        template = copy.deepcopy(spec.get("template") or {})
        status = copy.deepcopy(d.get("status") or {})
        before = copy.deepcopy(status)
        h = template_hash(template, int(status.get("collisionCount", 0)))
        new = next((rs for rs in owned if (rs["metadata"].get("labels") or {}).get(HASH_LABEL) == h), None)
        old = [rs for rs in owned if rs is not new]
        replicas = int(spec.get("replicas", 1))
        now = self.model.clock.now()
        stamp = iso(now)
        revisions = [int((rs["metadata"].get("annotations") or {}).get(REVISION, "0")) for rs in owned]
        if spec.get("paused"):
            self._status(d, status, before, new, owned, replicas, stamp)
            return
        strategy = (spec.get("strategy") or {}).get("type", "RollingUpdate")
        if new is None:
            if strategy == "Recreate" and any(self._pods(rs) for rs in old):
                pass  # wait for the old pods to go before the new ReplicaSet
            else:
                new = self._new_rs(d, template, h, max(revisions, default=0) + 1, 0)
                if new is None:
                    self._status(d, status, before, None, owned, replicas, stamp)
                    return
                set_condition(status, "Progressing", "True", "NewReplicaSetCreated",
                              f'Created new replica set "{new["metadata"]["name"]}"', stamp)  # fmt: skip
                owned.append(new)
        elif (new["metadata"].get("annotations") or {}).get(REVISION) != str(
            max(revisions, default=1)
        ) and old:
            ann = new["metadata"].setdefault("annotations", {})
            ann[REVISION] = str(max(revisions) + 1)
            self.store.modified("replicasets", new)
        if strategy == "Recreate":
            for rs in old:
                self._scale(d, rs, 0)
            if new is not None and not any(self._pods(rs) for rs in old):
                self._scale(d, new, replicas)
        else:
            ru = (spec.get("strategy") or {}).get("rollingUpdate") or {}
            surge = _resolve(ru.get("maxSurge", "25%"), replicas, True)
            unavailable = _resolve(ru.get("maxUnavailable", "25%"), replicas, False)
            if surge == 0 and unavailable == 0:
                unavailable = 1
            total = sum(int((rs.get("spec") or {}).get("replicas", 0)) for rs in owned)
            if new is not None:
                current = int((new.get("spec") or {}).get("replicas", 0))
                target = replicas if not old else min(replicas, current + max(0, replicas + surge - total))
                if target != current:
                    self._scale(d, new, target)
            # scale old ones down, keeping at least replicas - maxUnavailable available
            available = sum(int((rs.get("status") or {}).get("availableReplicas", 0)) for rs in owned)
            min_available = replicas - unavailable
            can_remove = max(0, available - min_available)
            new_unavailable = 0
            if new is not None:
                new_unavailable = int((new.get("spec") or {}).get("replicas", 0)) - int(
                    (new.get("status") or {}).get("availableReplicas", 0)
                )
            for rs in sorted(old, key=lambda r: r["metadata"].get("creationTimestamp", "")):
                current = int((rs.get("spec") or {}).get("replicas", 0))
                if current == 0:
                    continue
                # old ReplicaSets' unavailable pods go first, whatever the budget (cleanupUnhealthyReplicas)
                unhealthy = current - int((rs.get("status") or {}).get("availableReplicas", 0))
                drop = (
                    min(current, unhealthy + can_remove)
                    if not new_unavailable or unhealthy
                    else min(current, can_remove)
                )
                if drop > 0:
                    self._scale(d, rs, current - drop)
                    can_remove -= max(0, drop - unhealthy)
        self._cleanup(
            d, [rs for rs in old if self.store.find("replicasets", ns, rs["metadata"]["name"]) is rs]
        )
        owned = [
            rs for rs in self.store.list("replicasets", ns) if (controller_of(rs) or {}).get("uid") == uid
        ]
        self._status(d, status, before, new, owned, replicas, stamp)

    def _pods(self, rs: dict) -> list[dict]:
        uid = rs["metadata"]["uid"]
        return [
            p
            for p in self.store.list("pods", rs["metadata"]["namespace"])
            if (controller_of(p) or {}).get("uid") == uid
        ]

    def _new_rs(self, d: dict, template: dict, h: str, revision: int, replicas: int) -> dict | None:
        meta = d["metadata"]
        tpl = copy.deepcopy(template)
        tpl.setdefault("metadata", {}).setdefault("labels", {})[HASH_LABEL] = h
        selector = copy.deepcopy((d.get("spec") or {}).get("selector") or {})
        selector.setdefault("matchLabels", {})[HASH_LABEL] = h
        spec = d.get("spec") or {}
        rs = {
            "apiVersion": "apps/v1",
            "kind": "ReplicaSet",
            "metadata": {
                "name": f"{meta['name']}-{h}",
                "namespace": meta["namespace"],
                "labels": {**((template.get("metadata") or {}).get("labels") or {}), HASH_LABEL: h},
                "annotations": {REVISION: str(revision), "deployment.kubernetes.io/desired-replicas": str(spec.get("replicas", 1)),
                                "deployment.kubernetes.io/max-replicas": str(int(spec.get("replicas", 1)) + _resolve(
                                    ((spec.get("strategy") or {}).get("rollingUpdate") or {}).get("maxSurge", "25%"),
                                    int(spec.get("replicas", 1)), True))},
                "ownerReferences": [owner_ref(d, "apps/v1", "Deployment")],
            },
            "spec": {"replicas": replicas, "minReadySeconds": spec.get("minReadySeconds", 0), "selector": selector,
                     "template": tpl},
        }  # fmt: skip
        made, error = create(self.model, "replicasets", rs)
        if made is None:
            event(self.model, d, "FailedCreate", f"Failed to create new replica set {rs['metadata']['name']}: {error}",
                  "Warning", COMPONENT)  # fmt: skip
        return made

    def _scale(self, d: dict, rs: dict, replicas: int) -> None:
        current = int((rs.get("spec") or {}).get("replicas", 0))
        if current == replicas:
            return
        rs.setdefault("spec", {})["replicas"] = replicas
        ann = rs["metadata"].setdefault("annotations", {})
        ann["deployment.kubernetes.io/desired-replicas"] = str((d.get("spec") or {}).get("replicas", 1))
        rs["metadata"]["generation"] = int(rs["metadata"].get("generation", 1)) + 1
        self.store.modified("replicasets", rs)
        word = "up" if replicas > current else "down"
        event(self.model, d, "ScalingReplicaSet", f"Scaled {word} replica set {rs['metadata']['name']} from {current} "
              f"to {replicas}", "Normal", COMPONENT)  # fmt: skip

    def _cleanup(self, d: dict, old: list[dict]) -> None:
        limit = int((d.get("spec") or {}).get("revisionHistoryLimit", 10))
        idle = [rs for rs in old if int((rs.get("spec") or {}).get("replicas", 0)) == 0
                and int((rs.get("status") or {}).get("replicas", 0)) == 0]  # fmt: skip
        idle.sort(key=lambda rs: int((rs["metadata"].get("annotations") or {}).get(REVISION, "0")))
        for rs in idle[: max(0, len(idle) - limit)]:
            delete(self.model, "replicasets", rs)

    def _status(self, d, status, before, new, owned, replicas, stamp) -> None:
        meta, spec = d["metadata"], d.get("spec") or {}
        total = sum(int((rs.get("status") or {}).get("replicas", 0)) for rs in owned)
        ready = sum(int((rs.get("status") or {}).get("readyReplicas", 0)) for rs in owned)
        available = sum(int((rs.get("status") or {}).get("availableReplicas", 0)) for rs in owned)
        updated = int(((new or {}).get("status") or {}).get("replicas", 0))
        status.update(observedGeneration=meta.get("generation", 1), replicas=total, updatedReplicas=updated,
                      readyReplicas=ready, availableReplicas=available,
                      unavailableReplicas=max(0, total - available) if total else replicas)  # fmt: skip
        for k in ("replicas", "updatedReplicas", "readyReplicas", "availableReplicas", "unavailableReplicas"):
            if not status[k]:
                status.pop(k)
        unavailable = _resolve(((spec.get("strategy") or {}).get("rollingUpdate") or {}).get("maxUnavailable", "25%"),
                               replicas, False) if (spec.get("strategy") or {}).get("type", "RollingUpdate") == "RollingUpdate" else 0  # fmt: skip
        if available >= replicas - unavailable:
            set_condition(
                status,
                "Available",
                "True",
                "MinimumReplicasAvailable",
                "Deployment has minimum availability.",
                stamp,
            )
        else:
            set_condition(status, "Available", "False", "MinimumReplicasUnavailable",
                          "Deployment does not have minimum availability.", stamp)  # fmt: skip
        failure = next((c for c in ((new or {}).get("status") or {}).get("conditions") or ()
                        if c.get("type") == "ReplicaFailure" and c.get("status") == "True"), None)  # fmt: skip
        if failure is not None:
            set_condition(
                status,
                "ReplicaFailure",
                "True",
                failure.get("reason", "FailedCreate"),
                failure.get("message", ""),
                stamp,
            )
        else:
            status["conditions"] = [
                c for c in status.get("conditions") or () if c.get("type") != "ReplicaFailure"
            ]
        if new is not None:
            name = new["metadata"]["name"]
            complete = updated == replicas and available == replicas and total == replicas
            if complete:
                set_condition(status, "Progressing", "True", "NewReplicaSetAvailable",
                              f'ReplicaSet "{name}" has successfully progressed.', stamp)  # fmt: skip
            elif not has_condition(status, "Progressing") or self._progressed(status, before):
                set_condition(
                    status,
                    "Progressing",
                    "True",
                    "ReplicaSetUpdated",
                    f'ReplicaSet "{name}" is progressing.',
                    stamp,
                )
            deadline = spec.get("progressDeadlineSeconds")
            prog = next((c for c in status.get("conditions") or () if c.get("type") == "Progressing"), None)
            if not complete and deadline is not None and prog is not None and prog.get("status") == "True":
                due = _epoch(prog.get("lastUpdateTime")) + self.model.clock.scale(float(deadline))
                if self.model.clock.now() >= due:
                    set_condition(status, "Progressing", "False", "ProgressDeadlineExceeded",
                                  f'ReplicaSet "{name}" has timed out progressing.', stamp)  # fmt: skip
                else:
                    self.model.queue.push(due, self._wake, meta["namespace"], meta["name"])
        if status != before and self.store.find("deployments", meta["namespace"], meta["name"]) is d:
            d["status"] = status
            self.store.modified("deployments", d)

    @staticmethod
    def _progressed(status: dict, before: dict) -> bool:
        keys = ("updatedReplicas", "readyReplicas", "availableReplicas", "replicas")
        return any(status.get(k) != before.get(k) for k in keys)
