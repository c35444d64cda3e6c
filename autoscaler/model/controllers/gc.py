"""The garbage collector (pkg/controller/garbagecollector): dependents follow their owners by ``ownerReferences``.

- an owner deleted outright (Background, the default) takes every dependent with it, each deleted in turn
  (so a Deployment's ReplicaSets go, then their pods);
- an owner being deleted with the ``foregroundDeletion`` finalizer has its dependents deleted first, then the
  finalizer is removed and the owner goes;
- an owner with the ``orphan`` finalizer keeps its dependents: their references to it are removed, then it goes.

Dependents whose owner never existed are left alone (the simulator's pods name Jobs it never creates); the real
collector would delete them once it confirmed the owner absent.
"""

from __future__ import annotations

from autoscaler.model.controllers import Controller
from autoscaler.model.controllers.common import delete

ORPHAN, FOREGROUND = "orphan", "foregroundDeletion"


class GarbageCollector(Controller):
    kinds = ("*",)

    def __init__(self, model) -> None:
        super().__init__(model)
        self.dependents: dict[str, set[tuple[str, str, str]]] = {}  # owner uid -> (kind, namespace, name)
        self._refs: dict[tuple[str, str, str], tuple[str, ...]] = {}
        self._finalizing: dict[
            str, tuple[str, str, str]
        ] = {}  # owner uid -> key, while it waits for the collector

    def on_change(self, kind: str, event: str, obj: dict) -> None:
        meta = obj["metadata"]
        key = (kind, meta.get("namespace", ""), meta["name"])
        old = self._refs.pop(key, ())
        for uid in old:
            deps = self.dependents.get(uid)
            if deps is not None:
                deps.discard(key)
                if not deps:
                    del self.dependents[uid]
            if event == "DELETED" and uid in self._finalizing:
                self.dirty.add(("finalize", self._finalizing[uid]))
        if event != "DELETED":
            refs = tuple(r.get("uid", "") for r in meta.get("ownerReferences") or () if r.get("uid"))
            if refs:
                self._refs[key] = refs
                for uid in refs:
                    self.dependents.setdefault(uid, set()).add(key)
            if meta.get("deletionTimestamp") and any(
                f in (meta.get("finalizers") or ()) for f in (ORPHAN, FOREGROUND)
            ):
                self._finalizing[meta.get("uid", "")] = key
                self.dirty.add(("finalize", key))
            else:
                self._finalizing.pop(meta.get("uid", ""), None)
        else:
            self._finalizing.pop(meta.get("uid", ""), None)
        if event == "DELETED" and meta.get("uid") in self.dependents:
            self.dirty.add(("owner-gone", meta.get("uid", ""), meta.get("namespace", "")))

    def has_dependents(self, owner: dict) -> bool:
        return bool(self.dependents.get(owner["metadata"].get("uid", "")))

    def _objects(self, uid: str) -> list[tuple[str, dict]]:
        out = []
        for kind, ns, name in sorted(self.dependents.get(uid, ())):
            obj = self.store.find(kind, ns or None, name)
            if obj is not None:
                out.append((kind, obj))
        return out

    def sync(self) -> None:
        work, self.dirty = self.dirty, set()
        for item in sorted(work, key=repr):
            if item[0] == "owner-gone":
                for kind, obj in self._objects(item[1]):
                    refs = obj["metadata"].get("ownerReferences") or []
                    others = [r for r in refs if r.get("uid") != item[1]]
                    if any(self._exists(r, obj) for r in others):
                        obj["metadata"]["ownerReferences"] = others  # another owner still holds it
                        self.store.modified(kind, obj)
                    elif not obj["metadata"].get("deletionTimestamp"):
                        delete(self.model, kind, obj, "Background")
            elif item[0] == "finalize":
                kind, ns, name = item[1]
                owner = self.store.find(kind, ns or None, name)
                if owner is not None:
                    self._finalize(kind, owner)

    def _exists(self, ref: dict, dependent: dict) -> bool:
        for kind in self.store._objects:
            for obj in self.store.kind(kind).values():
                if obj["metadata"].get("uid") == ref.get("uid"):
                    return True
        return False

    def _finalize(self, kind: str, owner: dict) -> None:
        meta = owner["metadata"]
        finalizers = meta.get("finalizers") or []
        uid = meta.get("uid", "")
        if ORPHAN in finalizers:
            for dkind, dep in self._objects(uid):
                dep["metadata"]["ownerReferences"] = [r for r in dep["metadata"].get("ownerReferences") or ()
                                                      if r.get("uid") != uid]  # fmt: skip
                if not dep["metadata"]["ownerReferences"]:
                    del dep["metadata"]["ownerReferences"]
                self.store.modified(dkind, dep)
            self.model.remove_finalizer(kind, owner, ORPHAN)
        elif FOREGROUND in finalizers:
            deps = self._objects(uid)
            for dkind, dep in deps:
                if not dep["metadata"].get("deletionTimestamp"):
                    delete(self.model, dkind, dep, "Foreground")
            if not self._objects(uid):
                self.model.remove_finalizer(kind, owner, FOREGROUND)
