"""The disruptive changes of a saved plan, read from ``terraform show -json`` (Terraform's "JSON Output Format":
``resource_changes[]`` with ``address``, ``module_address``, ``type``, ``change.actions``, ``change.before``,
``change.after``, ``change.after_unknown``, ``change.replace_paths`` and ``action_reason``).

Disruptive, and so shown and confirmed before ``invoke up`` applies:
- every deletion, and every replacement (``["delete", "create"]`` or ``["create", "delete"]``), with the
  arguments that force it (``replace_paths``) or Terraform's reason;
- in-place updates of what runs jobs or carries traffic: instances, Auto Scaling groups, launch templates,
  anything of the control plane, VPN connections (tunnel option changes renegotiate the tunnels) and the
  VPN and customer gateways;
- a lowered Auto Scaling ``max_size``: when the new maximum is below the desired capacity, Auto Scaling lowers
  the desired capacity to it and terminates instances (UpdateAutoScalingGroup, Auto Scaling API reference).
"""

from __future__ import annotations

from dataclasses import dataclass

# Resource types whose in-place update is disruptive.
DISRUPTIVE_UPDATES = {
    "aws_instance": "instance",
    "aws_autoscaling_group": "Auto Scaling group",
    "aws_launch_template": "launch template (new instances boot the new version)",
    "aws_vpn_connection": "VPN connection (tunnels may renegotiate)",
    "aws_vpn_gateway": "VPN gateway",
    "aws_customer_gateway": "customer gateway",
}
CONTROL_PLANE_MODULE = "module.control_plane"
_REASONS = {
    "replace_because_tainted": "tainted",
    "replace_because_cannot_update": "an argument cannot be updated in place",
    "replace_by_request": "-replace was requested",
    "replace_by_triggers": "replace_triggered_by",
    "delete_because_no_resource_config": "no longer in the configuration",
    "delete_because_no_module": "its module is no longer called",
    "delete_because_wrong_repetition": "count/for_each changed",
    "delete_because_count_index": "count shrank",
    "delete_because_each_key": "for_each key removed",
    "delete_because_no_move_target": "moved target missing",
}


@dataclass(frozen=True)
class Disruption:
    action: str  # "delete", "replace", "update"
    address: str
    detail: str

    def __str__(self) -> str:
        return f"{self.action:<8} {self.address}" + (f"  ({self.detail})" if self.detail else "")


def _changed(before: dict, after: dict, unknown: dict) -> list[str]:
    keys = sorted(set(before) | set(after))
    return [
        k
        for k in keys
        if k not in ("tags_all",) and (before.get(k) != after.get(k) or unknown.get(k) is True)
    ]


def _paths(paths: list) -> str:
    return ", ".join(".".join(str(p) for p in path) for path in paths or [])


def _max_size(before: dict, after: dict) -> str | None:
    old, new = before.get("max_size"), after.get("max_size")
    if isinstance(old, int) and isinstance(new, int) and new < old:
        desired = before.get("desired_capacity")
        note = (
            f"; desired capacity {desired} drops to {new}, instances are terminated"
            if (desired or 0) > new
            else ""
        )
        return f"max_size lowered {old} -> {new}{note}"
    return None


def disruptions(plan: dict) -> list[Disruption]:
    out = []
    for rc in plan.get("resource_changes", []):
        if rc.get("mode", "managed") != "managed":
            continue
        change = rc.get("change", {})
        actions = change.get("actions", [])
        before, after = change.get("before") or {}, change.get("after") or {}
        address, rtype = rc["address"], rc.get("type", address_type(rc["address"]))
        reason = _REASONS.get(rc.get("action_reason", ""), rc.get("action_reason", ""))
        if "delete" in actions and "create" in actions:
            forced = _paths(change.get("replace_paths"))
            detail = f"{forced} forces replacement" if forced else reason
            order = "new one first" if actions[0] == "create" else "old one destroyed first"
            out.append(Disruption("replace", address, f"{detail}; {order}" if detail else order))
        elif "delete" in actions:
            out.append(Disruption("delete", address, reason))
        elif "update" in actions:
            lowered = _max_size(before, after) if rtype == "aws_autoscaling_group" else None
            in_control_plane = (rc.get("module_address") or "").startswith(
                CONTROL_PLANE_MODULE
            ) or address.startswith(CONTROL_PLANE_MODULE + ".")
            if lowered or rtype in DISRUPTIVE_UPDATES or in_control_plane:
                changed = _changed(before, after, change.get("after_unknown") or {})
                detail = "; ".join(
                    x for x in (lowered, "changes " + ", ".join(changed) if changed else "") if x
                )
                out.append(Disruption("update", address, detail))
    return out


def address_type(address: str) -> str:
    """The resource type of an address (``module.a.aws_x.y["k"]`` -> ``aws_x``)."""
    parts = [p for p in address.split(".") if p]
    while parts and parts[0] in ("module", "data"):
        parts = parts[2:] if parts[0] == "module" else parts[1:]
    return parts[0] if parts else ""
