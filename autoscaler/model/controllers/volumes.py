"""The PersistentVolume controller's binder and the protection controllers (pkg/controller/volume):

- a claim naming a volume (``volumeName``, static binding) is bound to it when the volume is free or reserved for
  it (``claimRef``) and offers the size and access modes: both ``Bound``, the volume's ``claimRef`` filled in; a claim
  without a volume and with ``storageClassName: ""`` is bound to the smallest free volume of no class that fits;
  a claim of a class waits (``Pending``: no provisioner runs here); a volume without a claim is ``Available``, one
  whose claim is gone ``Released`` (Retain);
- ``kubernetes.io/pvc-protection`` comes off a claim being deleted once no pod that is not terminated uses it,
  ``kubernetes.io/pv-protection`` off a volume being deleted once it is not bound.
"""

from __future__ import annotations

from autoscaler.model.controllers import Controller
from autoscaler.model.controllers.common import is_terminal
from autoscaler.model.quantity import parse_quantity

PVC_PROTECTION = "kubernetes.io/pvc-protection"
PV_PROTECTION = "kubernetes.io/pv-protection"


def _size(obj: dict, path: tuple[str, ...]) -> float:
    node = obj
    for p in path:
        node = (node or {}).get(p) or {}
    return parse_quantity(node.get("storage", "0")) if isinstance(node, dict) else 0.0


class VolumeController(Controller):
    kinds = ("persistentvolumes", "persistentvolumeclaims", "pods")

    def on_change(self, kind: str, event_type: str, obj: dict) -> None:
        if kind == "pods":
            if event_type == "DELETED" or is_terminal(obj):
                for v in (obj.get("spec") or {}).get("volumes") or ():
                    claim = (v.get("persistentVolumeClaim") or {}).get("claimName")
                    if claim:
                        self.dirty.add(("pvc", obj["metadata"].get("namespace", ""), claim))
            return
        meta = obj["metadata"]
        self.dirty.add(
            ("pvc" if kind == "persistentvolumeclaims" else "pv", meta.get("namespace", ""), meta["name"])
        )

    def sync(self) -> None:
        work, self.dirty = self.dirty, set()
        for kind, ns, name in sorted(work):
            if kind == "pvc":
                pvc = self.store.find("persistentvolumeclaims", ns, name)
                if pvc is not None:
                    self._claim(pvc)
            else:
                pv = self.store.find("persistentvolumes", None, name)
                if pv is not None:
                    self._volume(pv)

    def _fits(self, pv: dict, pvc: dict) -> bool:
        if _size(pv, ("spec", "capacity")) < _size(pvc, ("spec", "resources", "requests")):
            return False
        modes = set((pv.get("spec") or {}).get("accessModes") or ())
        return set((pvc.get("spec") or {}).get("accessModes") or ()) <= modes

    def _claim(self, pvc: dict) -> None:
        meta, spec = pvc["metadata"], pvc.get("spec") or {}
        if meta.get("deletionTimestamp"):
            if PVC_PROTECTION in (meta.get("finalizers") or ()) and not self._in_use(pvc):
                self.model.remove_finalizer("persistentvolumeclaims", pvc, PVC_PROTECTION)
            return
        if (pvc.get("status") or {}).get("phase") == "Bound":
            return
        pv = None
        if spec.get("volumeName"):
            pv = self.store.find("persistentvolumes", None, spec["volumeName"])
            ref = ((pv or {}).get("spec") or {}).get("claimRef") or {}
            if pv is None or (
                ref and (ref.get("namespace"), ref.get("name")) != (meta["namespace"], meta["name"])
            ):
                return
            if (pv.get("status") or {}).get("phase") == "Bound" and ref.get("uid") not in (None, meta["uid"]):
                return
        elif spec.get("storageClassName", "") == "":
            free = [v for v in self.store.list("persistentvolumes")
                    if not (v.get("spec") or {}).get("claimRef") and not (v.get("spec") or {}).get("storageClassName")
                    and self._fits(v, pvc)]  # fmt: skip
            pv = min(
                free, key=lambda v: (_size(v, ("spec", "capacity")), v["metadata"]["name"]), default=None
            )
        if pv is None or not self._fits(pv, pvc):
            return
        pv.setdefault("spec", {})["claimRef"] = {"kind": "PersistentVolumeClaim", "namespace": meta["namespace"],
                                                 "name": meta["name"], "uid": meta["uid"], "apiVersion": "v1",
                                                 "resourceVersion": meta.get("resourceVersion", "")}  # fmt: skip
        pv["status"] = {"phase": "Bound"}
        self.store.modified("persistentvolumes", pv)
        spec["volumeName"] = pv["metadata"]["name"]
        pvc["status"] = {"phase": "Bound", "accessModes": list((pv.get("spec") or {}).get("accessModes") or ()),
                         "capacity": dict((pv.get("spec") or {}).get("capacity") or {})}  # fmt: skip
        ann = meta.setdefault("annotations", {})
        ann["pv.kubernetes.io/bind-completed"] = "yes"
        self.store.modified("persistentvolumeclaims", pvc)

    def _in_use(self, pvc: dict) -> bool:
        name = pvc["metadata"]["name"]
        for pod in self.store.list("pods", pvc["metadata"]["namespace"]):
            if is_terminal(pod):
                continue
            for v in (pod.get("spec") or {}).get("volumes") or ():
                if (v.get("persistentVolumeClaim") or {}).get("claimName") == name:
                    return True
        return False

    def _volume(self, pv: dict) -> None:
        meta, spec = pv["metadata"], pv.get("spec") or {}
        ref = spec.get("claimRef")
        phase = (pv.get("status") or {}).get("phase")
        if meta.get("deletionTimestamp"):
            if PV_PROTECTION in (meta.get("finalizers") or ()) and phase != "Bound":
                self.model.remove_finalizer("persistentvolumes", pv, PV_PROTECTION)
            return
        if ref:
            claim = self.store.find("persistentvolumeclaims", ref.get("namespace"), ref.get("name", ""))
            if claim is not None:
                self.dirty.add(("pvc", ref.get("namespace", ""), ref.get("name", "")))
                return
            if phase == "Bound" and ref.get("uid"):
                pv["status"] = {"phase": "Released"}
                self.store.modified("persistentvolumes", pv)
                return
        want = "Available" if not ref or not ref.get("uid") else phase
        if phase in (None, "Pending") and want:
            pv["status"] = {"phase": want}
            self.store.modified("persistentvolumes", pv)
        if ref and not ref.get("uid"):
            self.dirty.add(("pvc", ref.get("namespace", ""), ref.get("name", "")))
