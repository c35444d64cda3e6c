"""The plan as text for people (``autoscaler plan`` without ``--json``)."""

from __future__ import annotations

from autoscaler.core.model import Snapshot
from autoscaler.core.result import Plan


def render(plan: Plan, snapshot: Snapshot, limit: int = 10) -> str:
    s = plan.stats
    lines = [
        f"{s['pending_pods']} pending pod(s) in {s['pod_classes']} class(es): {s['placed_existing']} on free room, "
        f"{s['placed_upcoming']} on nodes already launching, {s['placed_new']} on new nodes, "
        f"{s['unschedulable']} unschedulable"
    ]
    groups = {g.name: g for g in snapshot.groups}
    if plan.desired:
        lines.append("")
        lines.append("Groups:")
        for name, want in plan.desired.items():
            g = groups[name]
            new = plan.scale_up.get(name, 0)
            extra = f", +{new} new" if new else ""
            lines.append(f"  {name} ({g.region}): desired {g.desired} -> {want}{extra} (max {g.max})")
    if plan.scale_down:
        lines.append("")
        lines.append("Scale down:")
        for a in plan.scale_down:
            who = a["node"] or f"instance {a['instance_id']}"
            lines.append(f"  {a['action']:<9} {who} ({a['group']}): {a['reason']}")
    if plan.unschedulable:
        lines.append("")
        lines.append(f"Unschedulable ({len(plan.unschedulable)}):")
        by_reason: dict[str, list[str]] = {}
        for u in plan.unschedulable:
            by_reason.setdefault(u["reason"], []).append(u["pod"])
        for reason, pods in list(by_reason.items())[:limit]:
            more = f" and {len(pods) - 3} more" if len(pods) > 3 else ""
            lines.append(f"  {', '.join(pods[:3])}{more}: {reason}")
        if len(by_reason) > limit:
            lines.append(f"  ... and {len(by_reason) - limit} more reasons")
    backoff = {g: st for g, st in plan.group_state.items() if st.get("backoff_until")}
    if backoff:
        lines.append("")
        lines.append("Backing off:")
        for g, st in backoff.items():
            last = st.get("last_failure") or {}
            lines.append(
                f"  {g}: until {st['backoff_until']} after {st['failures']} failure(s), last {last.get('reason')}"
            )
    counts = plan.state_counts()
    if counts:
        lines.append("")
        lines.append("Nodes: " + ", ".join(f"{state} {n}" for state, n in counts.items()))
    return "\n".join(lines)
