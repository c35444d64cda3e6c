"""The ClusterRole aggregation controller (pkg/controller/clusterroleaggregation): a ClusterRole with an
``aggregationRule`` gets the rules of every ClusterRole its selectors match (``admin``, ``edit`` and ``view`` take
the ``rbac.authorization.k8s.io/aggregate-to-*`` roles, and whatever a CRD's installer labels so)."""

from __future__ import annotations

from autoscaler.model.controllers import Controller
from autoscaler.model.pods import selector_matches


class ClusterRoleAggregation(Controller):
    kinds = ("clusterroles",)

    def on_change(self, kind: str, event_type: str, obj: dict) -> None:
        self.dirty.add(kind)

    def sync(self) -> None:
        self.dirty.clear()
        roles = self.store.list("clusterroles")
        for role in sorted(roles, key=lambda r: r["metadata"]["name"]):
            selectors = ((role.get("aggregationRule") or {}).get("clusterRoleSelectors")) or None
            if selectors is None:
                continue
            rules: list[dict] = []
            for other in sorted(roles, key=lambda r: r["metadata"]["name"]):
                if other is role:
                    continue
                if any(selector_matches(s, other["metadata"].get("labels") or {}) for s in selectors):
                    for rule in other.get("rules") or ():
                        if rule not in rules:
                            rules.append(rule)
            if (role.get("rules") or []) != rules:
                role["rules"] = rules
                self.store.modified("clusterroles", role)
