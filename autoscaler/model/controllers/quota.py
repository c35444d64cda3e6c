"""The resource quota controller (pkg/controller/resourcequota): each ResourceQuota's ``status.hard`` follows its
``spec.hard`` and ``status.used`` what its namespace's objects count (autoscaler/model/quota.py)."""

from __future__ import annotations

from autoscaler.model import quota as Q
from autoscaler.model.controllers import Controller


class QuotaController(Controller):
    kinds = ("*",)

    def on_change(self, kind: str, event_type: str, obj: dict) -> None:
        ns = obj["metadata"].get("namespace")
        if kind == "resourcequotas" or (ns and ns in self.model._quota_namespaces):
            self.dirty.add(ns or "")

    def sync(self) -> None:
        work, self.dirty = self.dirty, set()
        for ns in sorted(work):
            quotas = self.store.list("resourcequotas", ns)
            if quotas:
                self.model._quota_namespaces.add(ns)
            else:
                self.model._quota_namespaces.discard(ns)
            for q in quotas:
                kinds = Q.counted_kinds(q)
                objects = {}
                for plural, group in kinds:
                    # built-in kinds are stored by plural, custom resources as plural.group
                    store = plural if plural in self.store._objects or not group else f"{plural}.{group}"
                    objects[(plural, group)] = self.store.list(store, ns)
                used = Q.used(q, objects)
                hard = dict(((q.get("spec") or {}).get("hard")) or {})
                status = {"hard": hard, "used": {r: Q.format_quantity(r, used.get(r, 0.0)) for r in hard}}
                if q.get("status") != status:
                    q["status"] = status
                    self.store.modified("resourcequotas", q)
