"""Create a spec's node groups in moto, tagged as Terraform tags them (a test bootstrap, not a stand-in)."""

from __future__ import annotations

import boto3

from clusterspec.names import (
    CA_CLUSTER_TAG_PREFIX,
    CA_ENABLED_TAG,
    NODE_TEMPLATE_LABEL_TAG,
    NODE_TEMPLATE_TAINT_TAG,
    PRIORITY_TAG,
)
from clusterspec.spec import Cluster

SESSION = boto3.Session()  # one session: clients made from it share the loaded service models


def _tag(name: str, key: str, value: str) -> dict:
    return {"ResourceId": name, "ResourceType": "auto-scaling-group", "Key": key, "Value": value,
            "PropagateAtLaunch": False}  # fmt: skip


def group_tags(cluster: str, name: str, labels: dict, taints: list[dict], priority: int) -> list[dict]:
    tags = [_tag(name, CA_ENABLED_TAG, "true"), _tag(name, CA_CLUSTER_TAG_PREFIX + cluster, "owned")]
    tags += [_tag(name, NODE_TEMPLATE_LABEL_TAG + k, v) for k, v in labels.items()]
    tags += [_tag(name, NODE_TEMPLATE_TAINT_TAG + t["key"], f"{t['value']}:{t['effect']}") for t in taints]
    tags.append(_tag(name, PRIORITY_TAG, str(priority)))
    return tags


def create_groups(
    spec: Cluster, endpoint_url: str | None = None, regions: list[str] | None = None
) -> list[str]:
    """One launch template and ASG per node group per region, as Terraform makes them; returns ASG names."""
    names = []
    for region in spec.regions:
        if regions and region.name not in regions:
            continue
        kw = {"region_name": region.name, "endpoint_url": endpoint_url}
        ec2, asg = SESSION.client("ec2", **kw), SESSION.client("autoscaling", **kw)
        for g in region.node_groups:
            name = spec.asg_name(region.name, g)
            lt = ec2.create_launch_template(
                LaunchTemplateName=name,
                LaunchTemplateData={"ImageId": "ami-12c6146b", "InstanceType": g.instance_type},
            )["LaunchTemplate"]
            ref = {"LaunchTemplateId": lt["LaunchTemplateId"], "Version": "$Latest"}
            if len(g.instance_types) > 1:
                placement = {
                    "MixedInstancesPolicy": {
                        "LaunchTemplate": {
                            "LaunchTemplateSpecification": ref,
                            "Overrides": [{"InstanceType": t} for t in g.instance_types],
                        }
                    }
                }
            else:
                placement = {"LaunchTemplate": ref}
            asg.create_auto_scaling_group(
                AutoScalingGroupName=name,
                MinSize=g.min,
                MaxSize=g.max,
                DesiredCapacity=g.min,
                AvailabilityZones=list(region.zones),
                NewInstancesProtectedFromScaleIn=True,  # terraform/modules/node_group: protect_from_scale_in
                Tags=group_tags(spec.name, name, g.labels, [t.model_dump() for t in g.taints], g.priority),
                **placement,
            )
            names.append(name)
    return names
