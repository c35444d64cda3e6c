"""Karpenter's configuration from the cluster spec, as its best users would write it for this lab.

- ``instance_types``: the kwok provider's ``INSTANCE_TYPES_FILE_PATH`` file. Every instance type the spec's node
  groups name, with its vCPUs, memory and GPUs (``nvidia.com/gpu``) from the catalog
  (``clusterspec/data/instance_types.yaml``), and one offering per zone of every region that prices it, at the
  catalog's on-demand price for that region (capacity type ``spot`` for spot groups' types, at the same price:
  the catalog holds no spot prices, and the benchmark's pods tolerate no spot taint).
- ``node_pools``: one NodePool per node group (one per GPU type), restricted to the group's instance types and
  capacity type and to ``zones`` (one region's, as real deployments run Karpenter, one per cluster; or every
  region's, the idealised peer). The group's labels and taints, a weight from its priority (higher first, as our
  autoscaler's priority order), GPU and CPU limits from ``max`` nodes in each region it spans, and consolidation
  on (``WhenEmptyOrUnderutilized`` after ``consolidate_after_s``).
- ``node_class``: the KWOKNodeClass they all name.
"""

from __future__ import annotations

from clusterspec import catalog
from clusterspec.names import GPU_RESOURCE
from clusterspec.spec import Cluster, NodeGroup

NODE_CLASS = "lab"
CAPACITY_TYPE = "karpenter.sh/capacity-type"
ZONE = "topology.kubernetes.io/zone"
INSTANCE_TYPE = "node.kubernetes.io/instance-type"


def _groups(spec: Cluster) -> dict[str, NodeGroup]:
    """The node groups by name (the same in every region in this spec; the first region's wins otherwise)."""
    out: dict[str, NodeGroup] = {}
    for region in spec.regions:
        for group in region.node_groups:
            out.setdefault(group.name, group)
    return out


def _capacity_type(group: NodeGroup) -> str:
    return "spot" if group.spot else "on-demand"


def zones(spec: Cluster, regions: list[str] | None = None) -> list[str]:
    """The zones of ``regions`` (default: all of the spec's), in spill-over order."""
    names = regions or spec.spill_over_order
    return [z for name in names for z in spec.region(name).zones]


def instance_types(spec: Cluster) -> list[dict]:
    """The kwok provider's instance types: the spec's, offered in every zone of every region that prices them."""
    kinds: dict[str, set[str]] = {}
    for group in _groups(spec).values():
        for name in group.instance_types:
            kinds.setdefault(name, set()).add(_capacity_type(group))
    out = []
    for name in sorted(kinds):
        row = catalog.instance_type(name)
        resources = {
            "cpu": str(row.vcpu),
            "memory": f"{round(row.memory_gib * 1024)}Mi",
            "ephemeral-storage": "100Gi",
            "pods": "110",
        }
        if row.gpus:
            resources[GPU_RESOURCE] = str(row.gpus)
        offerings = [
            {
                "Price": row.price[region.name],
                "Available": True,
                "Requirements": [
                    {"key": CAPACITY_TYPE, "operator": "In", "values": [capacity]},
                    {"key": ZONE, "operator": "In", "values": [zone]},
                ],
            }
            for region in spec.regions
            if row.offered_in(region.name)
            for zone in region.zones
            for capacity in sorted(kinds[name])
        ]
        out.append(
            {
                "name": name,
                "architecture": "amd64",
                "operatingSystems": ["linux"],
                "resources": resources,
                "offerings": offerings,
            }
        )
    return out


def node_class() -> dict:
    return {
        "apiVersion": "karpenter.kwok.sh/v1alpha1",
        "kind": "KWOKNodeClass",
        "metadata": {"name": NODE_CLASS},
    }


def node_pools(spec: Cluster, regions: list[str], consolidate_after_s: int) -> list[dict]:
    """One NodePool per node group, over the zones of ``regions``."""
    groups = _groups(spec)
    lowest = min(g.priority for g in groups.values())
    pools = []
    for group in groups.values():
        row = catalog.instance_type(group.instance_type)
        spanned = [r for r in regions if any(g.name == group.name for g in spec.region(r).node_groups)]
        limits = {"cpu": str(group.max * row.vcpu * len(spanned))}
        if row.gpus:
            limits[GPU_RESOURCE] = str(group.max * row.gpus * len(spanned))
        pools.append(
            {
                "apiVersion": "karpenter.sh/v1",
                "kind": "NodePool",
                "metadata": {"name": group.name},
                "spec": {
                    "weight": min(100, 1 + group.priority - lowest),
                    "template": {
                        "metadata": {"labels": dict(group.labels)},
                        "spec": {
                            "nodeClassRef": {
                                "group": "karpenter.kwok.sh",
                                "kind": "KWOKNodeClass",
                                "name": NODE_CLASS,
                            },
                            "requirements": [
                                {
                                    "key": INSTANCE_TYPE,
                                    "operator": "In",
                                    "values": list(group.instance_types),
                                },
                                {"key": CAPACITY_TYPE, "operator": "In", "values": [_capacity_type(group)]},
                                {"key": ZONE, "operator": "In", "values": zones(spec, spanned)},
                            ],
                            "taints": [t.model_dump(exclude_defaults=True) for t in group.taints],
                            "expireAfter": "Never",
                        },
                    },
                    "limits": limits,
                    "disruption": {
                        "consolidationPolicy": "WhenEmptyOrUnderutilized",
                        "consolidateAfter": f"{consolidate_after_s}s",
                        "budgets": [{"nodes": "100%"}],
                    },
                },
            }
        )
    return pools


def capacity_limits(limits: dict[tuple[str, str], int]) -> str:
    """Our moto server's limits (``aws_server --limit REGION/TYPE=N``) as our Karpenter main's CAPACITY_LIMITS."""
    return ",".join(f"{region}/{itype}={n}" for (region, itype), n in sorted(limits.items()))
