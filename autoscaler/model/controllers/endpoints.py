"""The Endpoints and EndpointSlice controllers (pkg/controller/endpoint, pkg/controller/endpointslice): for each
Service with a selector, the pods it selects that have an IP, by readiness (``publishNotReadyAddresses`` lists the
not-ready ones as ready), with the Service's ports resolved against the pods' named container ports. The
Endpoints object has the Service's name; the EndpointSlice is ``<service>-<5 chars>``, labelled
``kubernetes.io/service-name`` and managed by ``endpointslice-controller.k8s.io``. Services without a selector
are left to whoever writes their endpoints (the API server writes ``kubernetes``'s)."""

from __future__ import annotations

from autoscaler.model.controllers import Controller
from autoscaler.model.controllers.common import is_deleting, is_ready, is_terminal, suffix

MANAGED_BY = "endpointslice-controller.k8s.io"


def _target_port(port: dict, pod: dict):
    target = port.get("targetPort", port.get("port"))
    if isinstance(target, int):
        return target
    if isinstance(target, str) and target.isdigit():
        return int(target)
    for c in (pod.get("spec") or {}).get("containers") or ():
        for p in c.get("ports") or ():
            if p.get("name") == target and p.get("protocol", "TCP") == port.get("protocol", "TCP"):
                return p.get("containerPort")
    return None


class EndpointsController(Controller):
    kinds = ("services", "pods")

    def on_change(self, kind: str, event_type: str, obj: dict) -> None:
        meta = obj["metadata"]
        ns = meta.get("namespace", "")
        if kind == "services":
            self.dirty.add((ns, meta["name"], event_type == "DELETED"))
        elif ns in self.model._services_by_ns:
            for name in self.model._services_by_ns[ns]:
                self.dirty.add((ns, name, False))

    def sync(self) -> None:
        work, self.dirty = self.dirty, set()
        index = self.model._services_by_ns
        for ns, name, gone in sorted(work):
            svc = self.store.find("services", ns, name)
            if svc is None or gone:
                index.get(ns, set()).discard(name)
                for kind in ("endpoints", "endpointslices"):
                    for obj in list(self.store.list(kind, ns)):
                        owner = (obj["metadata"].get("labels") or {}).get("kubernetes.io/service-name")
                        if (
                            kind == "endpoints" and obj["metadata"]["name"] == name and name != "kubernetes"
                        ) or (
                            kind == "endpointslices"
                            and owner == name
                            and (obj["metadata"].get("labels") or {}).get(
                                "endpointslice.kubernetes.io/managed-by"
                            )
                            == MANAGED_BY
                        ):
                            self.store.delete(kind, ns, obj["metadata"]["name"])
                continue
            selector = (svc.get("spec") or {}).get("selector")
            if not selector:
                continue
            index.setdefault(ns, set()).add(name)
            self._reconcile(svc, selector)

    def _reconcile(self, svc: dict, selector: dict) -> None:
        meta, spec = svc["metadata"], svc.get("spec") or {}
        ns, name = meta["namespace"], meta["name"]
        publish = bool(spec.get("publishNotReadyAddresses"))
        ready, not_ready, slice_eps = [], [], []
        ports: list[dict] = []
        for pod in sorted(self.store.list("pods", ns), key=lambda p: p["metadata"]["name"]):
            labels = pod["metadata"].get("labels") or {}
            if not all(labels.get(k) == v for k, v in selector.items()):
                continue
            ip = (pod.get("status") or {}).get("podIP")
            if not ip or is_terminal(pod):
                continue
            ok = (is_ready(pod) or publish) and not is_deleting(pod)
            address = {"ip": ip, "nodeName": (pod.get("spec") or {}).get("nodeName", ""),
                       "targetRef": {"kind": "Pod", "name": pod["metadata"]["name"], "namespace": ns,
                                     "uid": pod["metadata"]["uid"]}}  # fmt: skip
            pspec = pod.get("spec") or {}
            if pspec.get("hostname") and pspec.get("subdomain") == name:
                address["hostname"] = pspec["hostname"]
            (ready if ok else not_ready).append(address)
            ep = {"addresses": [ip], "conditions": {"ready": ok, "serving": ok or is_ready(pod),
                                                       "terminating": is_deleting(pod)},
                  "targetRef": address["targetRef"], "nodeName": address["nodeName"]}  # fmt: skip
            if "hostname" in address:
                ep["hostname"] = address["hostname"]
            slice_eps.append(ep)
            if not ports:
                for p in spec.get("ports") or ():
                    tp = _target_port(p, pod)
                    if tp is not None:
                        entry = {"port": tp, "protocol": p.get("protocol", "TCP")}
                        if p.get("name"):
                            entry["name"] = p["name"]
                        ports.append(entry)
        subset: dict = {}
        if ready:
            subset["addresses"] = ready
        if not_ready:
            subset["notReadyAddresses"] = not_ready
        if subset and ports:
            subset["ports"] = ports
        endpoints = {"apiVersion": "v1", "kind": "Endpoints",
                     "metadata": {"name": name, "namespace": ns, "labels": dict(meta.get("labels") or {})},
                     "subsets": [subset] if subset and ports else []}  # fmt: skip
        current = self.store.find("endpoints", ns, name)
        if current is None:
            self.store.create("endpoints", endpoints)
        elif current.get("subsets") != endpoints["subsets"]:
            current["subsets"] = endpoints["subsets"]
            self.store.modified("endpoints", current)
        labels = {**(meta.get("labels") or {}), "kubernetes.io/service-name": name,
                  "endpointslice.kubernetes.io/managed-by": MANAGED_BY}  # fmt: skip
        mine = [s for s in self.store.list("endpointslices", ns)
                if (s["metadata"].get("labels") or {}).get("kubernetes.io/service-name") == name
                and (s["metadata"].get("labels") or {}).get("endpointslice.kubernetes.io/managed-by") == MANAGED_BY]  # fmt: skip
        body = {"addressType": "IPv4", "endpoints": slice_eps, "ports": ports}
        if not mine:
            self.store.create("endpointslices", {"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
                                                 "metadata": {"name": f"{name}-{suffix()}", "namespace": ns,
                                                              "labels": labels,
                                                              "ownerReferences": [{"apiVersion": "v1", "kind": "Service",
                                                                                   "name": name, "uid": meta["uid"],
                                                                                   "controller": True,
                                                                                   "blockOwnerDeletion": True}]},
                                                 **body})  # fmt: skip
        else:
            s = mine[0]
            if any(s.get(k) != v for k, v in body.items()):
                s.update(body)
                self.store.modified("endpointslices", s)
