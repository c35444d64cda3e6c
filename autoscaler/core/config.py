"""The planner's knobs, with the defaults of cluster.yaml's ``autoscaler`` section."""

from __future__ import annotations

from dataclasses import dataclass, field, fields

from autoscaler.core.errors import SnapshotError


@dataclass
class PlannerConfig:
    idle_threshold_s: float = 600  # an empty node is removed after this long without non-DaemonSet pods
    boot_timeout_s: float = 900  # an instance not registered as a node after this is a failure
    dead_node_timeout_s: float = (
        1200  # unready this long: removed (cluster-autoscaler --scale-down-unready-time)
    )
    max_new_nodes_per_loop: int = 1000  # cap on new nodes requested in one plan, over all groups
    max_scale_in_fraction: float = (
        0.1  # at most this share of the nodes starts removal in one plan (at least 1)
    )
    priority_cutoff: int = -10  # pods with a lower priority never trigger scale-up
    warm_pool: dict[str, int] = field(default_factory=dict)  # group -> idle nodes to keep ready
    # GPUs kept free on GPU nodes (registered or launching) for the next jobs, so that they start without waiting
    # for a boot; 0: none, the cheapest (docs/planner.md, "Spare GPUs")
    spare_gpus: int = 0
    backoff_base_s: float = 60  # first back-off after a failed scaling activity
    backoff_max_s: float = 1800  # back-off doubles per consecutive failure up to this
    max_events: int = 100_000  # cap on pod events in one plan (the rest are counted, not listed)
    drift_deadline_s: float = (
        0  # drifted nodes still busy this long: reported overdue (0: never; core/drift.py)
    )

    @classmethod
    def from_dict(cls, data: dict, where: str = "config") -> PlannerConfig:
        """From a mapping such as cluster.yaml's ``autoscaler`` section; unknown keys are ignored.

        A wrong type raises SnapshotError with one line per field."""
        errors = []
        kept = {}
        for f in fields(cls):
            if f.name not in data:
                continue
            value = data[f.name]
            if f.name == "warm_pool":
                ok = isinstance(value, dict) and all(
                    isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in value.values()
                )
                expected = "a mapping of group name to a number of nodes"
            else:
                ok = isinstance(value, int | float) and not isinstance(value, bool)
                ok = ok and (f.name == "priority_cutoff" or value >= 0)
                expected = "an integer" if f.name == "priority_cutoff" else "a non-negative number"
            if not ok:
                errors.append(f"{where}.{f.name}: expected {expected}, got {value!r}")
            else:
                kept[f.name] = value
        if errors:
            raise SnapshotError(errors)
        return cls(**kept)

    @classmethod
    def from_spec(cls, spec: dict) -> PlannerConfig:
        """From cluster.yaml data: its ``autoscaler`` section plus each node group's ``warm_pool``, keyed by the
        Auto Scaling group name ``<cluster>-<region>-<group>``."""
        section = dict(spec.get("autoscaler") or {})
        warm = dict(section.get("warm_pool") or {})
        for region in spec.get("regions") or ():
            for group in region.get("node_groups") or ():
                if group.get("warm_pool"):
                    warm[f"{spec.get('name')}-{region.get('name')}-{group.get('name')}"] = group["warm_pool"]
        section["warm_pool"] = warm
        deadline_h = (spec.get("operations") or {}).get("drift_deadline_h")
        if isinstance(deadline_h, int | float) and not isinstance(deadline_h, bool):
            section["drift_deadline_s"] = deadline_h * 3600
        return cls.from_dict(section, "autoscaler")
