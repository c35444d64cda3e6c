"""The DaemonSet controller's status (pkg/controller/daemon ``updateDaemonSetStatus``); its pods are placed by the
model (cluster_model ``_sync_daemons``: a pod per node the template admits, bound to it): desiredNumberScheduled
(nodes that should run one), currentNumberScheduled, numberReady, numberAvailable, numberUnavailable,
updatedNumberScheduled, numberMisscheduled, observedGeneration, as ``kubectl rollout status daemonset`` reads."""

from __future__ import annotations

from autoscaler.model import daemons as D
from autoscaler.model.controllers import Controller
from autoscaler.model.controllers.common import controller_of, is_active, is_ready


class DaemonSetStatus(Controller):
    kinds = ("daemonsets", "pods", "nodes")

    def on_change(self, kind: str, event_type: str, obj: dict) -> None:
        if kind == "daemonsets":
            if event_type != "DELETED":
                self.dirty.add((obj["metadata"].get("namespace", ""), obj["metadata"]["name"]))
        elif kind == "pods":
            ref = controller_of(obj)
            if ref is not None and ref.get("kind") == "DaemonSet":
                self.dirty.add((obj["metadata"].get("namespace", ""), ref.get("name", "")))
        else:
            self.dirty.add("*")

    def sync(self) -> None:
        work, self.dirty = self.dirty, set()
        if "*" in work:
            work = {
                (d["metadata"].get("namespace", ""), d["metadata"]["name"])
                for d in self.store.list("daemonsets")
            }
        nodes = self.store.list("nodes")
        for ns, name in sorted(work):
            ds = self.store.find("daemonsets", ns, name)
            if ds is None:
                continue
            tpl = ((ds.get("spec") or {}).get("template") or {}).get("spec") or {}
            wanted = {n["metadata"]["name"] for n in nodes if D.admits(tpl, n)}
            pods = [p for p in self.store.list("pods", ns) if (controller_of(p) or {}).get("uid") == ds["metadata"]["uid"]
                    and is_active(p)]  # fmt: skip
            on = {p["spec"].get("nodeName") for p in pods}
            ready = sum(1 for p in pods if is_ready(p))
            status = {
                "desiredNumberScheduled": len(wanted),
                "currentNumberScheduled": len(on & wanted),
                "numberMisscheduled": len(on - wanted),
                "numberReady": ready,
                "numberAvailable": ready,
                "updatedNumberScheduled": len(on & wanted),
                "observedGeneration": ds["metadata"].get("generation", 1),
            }
            if len(wanted) - ready:
                status["numberUnavailable"] = len(wanted) - ready
            if ds.get("status") != status:
                ds["status"] = status
                self.store.modified("daemonsets", ds)
