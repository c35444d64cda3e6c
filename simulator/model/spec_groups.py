"""Groups in the snapshot format from the cluster spec as plain data (``yaml.safe_load(cluster.yaml)``).

Kept free of ``provision`` so the model has no dependency on the spec model; names follow
``<cluster>-<region>-<group>`` (``Cluster.asg_name``), as Terraform names the Auto Scaling groups.
"""

from __future__ import annotations

from clusterspec.catalog import instance_type
from clusterspec.names import NODE_GROUP_LABEL


def asg_name(cluster: str, region: str, group: str) -> str:
    return f"{cluster}-{region}-{group}"


def groups_from_spec(spec: dict, regions: list[str] | None = None) -> list[dict]:
    """One group per (region, node group) with the first instance type offered in the region."""
    out = []
    for region in spec.get("regions") or ():
        if regions is not None and region["name"] not in regions:
            continue
        for g in region.get("node_groups") or ():
            itype = next(
                (
                    instance_type(t)
                    for t in g["instance_types"]
                    if instance_type(t).offered_in(region["name"])
                ),
                None,
            )
            if itype is None:
                continue
            name = asg_name(spec["name"], region["name"], g["name"])
            out.append(
                {
                    "name": name,
                    "region": region["name"],
                    "zones": list(region.get("zones") or [f"{region['name']}a"]),
                    "instance_type": itype.name,
                    "min": int(g.get("min", 0)),
                    "max": int(g["max"]),
                    "desired": int(g.get("min", 0)),
                    "labels": {**(g.get("labels") or {}), NODE_GROUP_LABEL: name},
                    "taints": [dict(t) for t in g.get("taints") or ()],
                    "allocatable": itype.allocatable(),
                    "priority": int(g.get("priority", 0)),
                    "price_per_hour": itype.price_in(region["name"]),
                    "spot": bool(g.get("spot", False)),
                    "instances": [],
                    "x-vpc-cidr": region["cidr"],  # the model's node addresses come from its subnets
                }
            )
    return out
