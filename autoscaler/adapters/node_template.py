"""What a node of an Auto Scaling group will look like before it exists (scale from zero).

Labels, taints and resources come from the cluster-autoscaler node-template tags on the group
(``k8s.io/cluster-autoscaler/node-template/label/<key>=<value>``, ``.../taint/<key>=<value>:<Effect>``,
``.../resources/<resource>=<quantity>``); capacity from EC2's DescribeInstanceTypes, with the bundled table
(:mod:`clusterspec.catalog`) as the fallback, both reduced by the same system reservations.
"""

from __future__ import annotations

from clusterspec import catalog
from clusterspec.names import (
    NODE_GROUP_LABEL,
    NODE_TEMPLATE_LABEL_TAG,
    NODE_TEMPLATE_RESOURCE_TAG,
    NODE_TEMPLATE_TAINT_TAG,
)

_EFFECTS = {"NoSchedule", "PreferNoSchedule", "NoExecute"}


class TemplateTagError(ValueError):
    """A node-template tag that cannot be read (named in the message)."""


def parse_taint(key: str, value: str) -> dict:
    """``value:Effect`` (or ``:Effect`` / ``Effect``) -> ``{"key", "value", "effect"}``."""
    raw, sep, effect = value.rpartition(":")
    if not sep:
        raw, effect = "", value
    if effect not in _EFFECTS:
        raise TemplateTagError(
            f"taint tag {key!r}={value!r}: the effect must be one of {', '.join(sorted(_EFFECTS))}"
        )
    return {"key": key, "value": raw, "effect": effect}


def from_tags(tags: dict[str, str]) -> tuple[dict[str, str], list[dict], dict[str, str]]:
    """(labels, taints, resources) from a group's tags."""
    labels: dict[str, str] = {}
    taints: list[dict] = []
    resources: dict[str, str] = {}
    for key, value in sorted(tags.items()):
        if key.startswith(NODE_TEMPLATE_LABEL_TAG):
            labels[key[len(NODE_TEMPLATE_LABEL_TAG) :]] = value
        elif key.startswith(NODE_TEMPLATE_TAINT_TAG):
            taints.append(parse_taint(key[len(NODE_TEMPLATE_TAINT_TAG) :], value))
        elif key.startswith(NODE_TEMPLATE_RESOURCE_TAG):
            resources[key[len(NODE_TEMPLATE_RESOURCE_TAG) :]] = value
    return labels, taints, resources


def well_known_labels(group: str, region: str, instance_type: str) -> dict[str, str]:
    """The labels every node of the group carries whatever its tags say (kubelet and our user data set them)."""
    return {
        "kubernetes.io/os": "linux",
        "node.kubernetes.io/instance-type": instance_type,
        "topology.kubernetes.io/region": region,
        NODE_GROUP_LABEL: group,
    }


def instance_type_from_ec2(info: dict) -> catalog.InstanceType:
    """A catalog row built from one DescribeInstanceTypes entry (prices from the bundled table when known)."""
    name = info["InstanceType"]
    gpus = sum(int(g.get("Count", 0)) for g in (info.get("GpuInfo") or {}).get("Gpus", []))
    gpu_model = next(iter((info.get("GpuInfo") or {}).get("Gpus", [])), {}).get("Name")
    known = catalog.instance_types().get(name)
    return catalog.InstanceType(
        name=name,
        vcpu=int(info["VCpuInfo"]["DefaultVCpus"]),
        memory_gib=int(info["MemoryInfo"]["SizeInMiB"]) / 1024,
        gpus=gpus,
        gpu_model=gpu_model,
        price=dict(known.price) if known else {},
        efa=int(((info.get("NetworkInfo") or {}).get("EfaInfo") or {}).get("MaximumEfaInterfaces", 0))
        if (info.get("NetworkInfo") or {}).get("EfaSupported")
        else 0,
    )
