"""How long an instance takes from launch to a Ready node, per instance family (model seconds).

GPU families load drivers, pull large images and (p4d/p5) bring up EFA, so they take minutes; CPU nodes
about a minute and a half. Override with ``ClusterModel(boot_delays={"p4d": 300, "default": 60})``.
"""

from __future__ import annotations

DEFAULT_BOOT_DELAYS: dict[str, float] = {
    "p2": 240.0,
    "p3": 270.0,
    "p3dn": 300.0,
    "p4d": 330.0,
    "p5": 360.0,
    "g4dn": 180.0,
    "g5": 180.0,
    "g6": 180.0,
    "default": 90.0,  # CPU families
}
INSTANCE_RUNNING_S = 40.0  # EC2 state pending -> running; the node registers later, at the boot delay


def boot_delay(instance_type: str, delays: dict[str, float] | None = None) -> float:
    table = {**DEFAULT_BOOT_DELAYS, **(delays or {})}
    family = instance_type.split(".", 1)[0]
    if instance_type in table:
        return float(table[instance_type])
    return float(table.get(family, table["default"]))
