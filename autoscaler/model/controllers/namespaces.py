"""The namespace controller (pkg/controller/namespace): a namespace being deleted is emptied of every namespaced
object (pods stop first), then its ``kubernetes`` finalizer is removed and it goes."""

from __future__ import annotations

from autoscaler.model.controllers import Controller
from autoscaler.model.controllers.common import delete
from autoscaler.model.store import CLUSTER_SCOPED


class NamespaceController(Controller):
    kinds = ("*",)

    def on_change(self, kind: str, event: str, obj: dict) -> None:
        if kind == "namespaces":
            if event != "DELETED" and obj["metadata"].get("deletionTimestamp"):
                self.dirty.add(obj["metadata"]["name"])
        elif event == "DELETED" and obj["metadata"].get("namespace") in self._terminating:
            self.dirty.add(obj["metadata"]["namespace"])

    @property
    def _terminating(self) -> set[str]:
        return self.model._terminating_namespaces

    def sync(self) -> None:
        work, self.dirty = self.dirty, set()
        for name in sorted(work):
            ns = self.store.find("namespaces", None, name)
            if ns is None or not ns["metadata"].get("deletionTimestamp"):
                self._terminating.discard(name)
                continue
            self._terminating.add(name)
            left = 0
            for kind in list(self.store._objects):
                if kind in self.store.cluster_scoped or kind in CLUSTER_SCOPED:
                    continue
                for obj in list(self.store.kind(kind).values()):
                    if obj["metadata"].get("namespace") != name:
                        continue
                    left += 1
                    if not obj["metadata"].get("deletionTimestamp"):
                        delete(self.model, kind, obj, "Background")
            if left == 0 or not self._remaining(name):
                self.maybe_remove(ns)

    def _remaining(self, name: str) -> bool:
        for kind in self.store._objects:
            if kind in self.store.cluster_scoped:
                continue
            if any(o["metadata"].get("namespace") == name for o in self.store.kind(kind).values()):
                return True
        return False

    def maybe_remove(self, ns: dict) -> None:
        """Drop the ``kubernetes`` finalizer once the namespace is empty; without finalizers it goes."""
        name = ns["metadata"]["name"]
        if self._remaining(name):
            return
        spec = ns.setdefault("spec", {})
        if "kubernetes" in (spec.get("finalizers") or []):
            spec["finalizers"] = [f for f in spec["finalizers"] if f != "kubernetes"]
        if not spec.get("finalizers") and not ns["metadata"].get("finalizers"):
            if self.store.find("namespaces", None, name) is ns:
                self.store.delete("namespaces", None, name)
            self._terminating.discard(name)
        else:
            self.store.modified("namespaces", ns)
