"""The plan: what the controller should do, in the documented JSON shape (docs/planner.md)."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Plan:
    scale_up: dict[str, int] = field(default_factory=dict)  # group -> new nodes
    desired: dict[str, int] = field(default_factory=dict)  # group -> desired capacity to set (changed only)
    unschedulable: list[dict] = field(default_factory=list)  # {pod, reason}
    scale_down: list[dict] = field(default_factory=list)  # {node, group, instance_id, action, reason}
    node_states: dict[str, str] = field(
        default_factory=dict
    )  # node (or instance id when unregistered) -> state
    node_reasons: dict[str, str] = field(default_factory=dict)
    group_state: dict[str, dict] = field(default_factory=dict)  # carried to the next snapshot
    events: list[dict] = field(default_factory=list)  # {pod, reason, message}
    annotations: dict[str, dict[str, str | None]] = field(default_factory=dict)  # node -> {key: value | None}
    placements: dict[str, str] = field(default_factory=dict)  # pod -> node / upcoming:<g>:<i> / new:<g>:<i>
    stats: dict[str, int] = field(default_factory=dict)
    drift: dict[str, dict] = field(
        default_factory=dict
    )  # drifted node -> {group, reason, since, overdue, pods}

    def state_counts(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for s in self.node_states.values():
            counts[s] = counts.get(s, 0) + 1
        return dict(sorted(counts.items()))

    def to_dict(self, placements: bool = False) -> dict:
        out = {
            "scale_up": dict(self.scale_up),
            "desired": dict(self.desired),
            "unschedulable": list(self.unschedulable),
            "scale_down": list(self.scale_down),
            "annotations": dict(self.annotations),
            "node_states": dict(self.node_states),
            "node_reasons": dict(self.node_reasons),
            "node_state_counts": self.state_counts(),
            "group_state": dict(self.group_state),
            "events": list(self.events),
            "stats": dict(self.stats),
        }
        if placements:
            out["placements"] = dict(self.placements)
        if self.drift:
            out["drift"] = dict(self.drift)
        return out
