"""The demo's local bootstrap: the spec's node groups as launch templates and Auto Scaling groups in moto.

This is NOT a stand-in for Terraform (``terraform/``, docs/terraform.md, which builds the real groups with their
networks, IAM and user data); it only gives the embedded AWS the groups the autoscaler discovers, named and
tagged the way Terraform names and tags them (terraform/modules/node_template): ``<cluster>-<region>-<group>``, the
cluster-autoscaler discovery tags, the node-template labels (the group's own and ``research.cluster/node-group``),
taints and resources (``nvidia.com/gpu``, and ``vpc.amazonaws.com/efa`` where every type of the group has EFA
interfaces: the fewest of them, as the launch template gives), and the group priority. A job that asks for EFA (a
multi-node A100 job, docs/researchers.md) therefore finds a group that can give it, as on AWS.
"""

from __future__ import annotations

import boto3

from clusterspec import catalog
from clusterspec.names import (
    CA_CLUSTER_TAG_PREFIX,
    CA_ENABLED_TAG,
    EFA_RESOURCE,
    GPU_RESOURCE,
    NODE_GROUP_LABEL,
    NODE_TEMPLATE_LABEL_TAG,
    NODE_TEMPLATE_RESOURCE_TAG,
    NODE_TEMPLATE_TAINT_TAG,
    PRIORITY_TAG,
)
from clusterspec.spec import Cluster as Spec

DEMO_AMI = "ami-12c6146b"  # one of moto's built-in images


def _tag(group: str, key: str, value: str) -> dict:
    return {
        "ResourceId": group,
        "ResourceType": "auto-scaling-group",
        "Key": key,
        "Value": value,
        "PropagateAtLaunch": False,
    }


def group_tags(spec: Spec, name: str, group) -> list[dict]:
    tags = [_tag(name, CA_ENABLED_TAG, "true"), _tag(name, CA_CLUSTER_TAG_PREFIX + spec.name, "owned")]
    labels = {**group.labels, NODE_GROUP_LABEL: name}
    tags += [_tag(name, NODE_TEMPLATE_LABEL_TAG + k, v) for k, v in labels.items()]
    tags += [_tag(name, NODE_TEMPLATE_TAINT_TAG + t.key, f"{t.value}:{t.effect}") for t in group.taints]
    if group.gpus:
        tags.append(_tag(name, NODE_TEMPLATE_RESOURCE_TAG + GPU_RESOURCE, str(group.gpus)))
    efa = min(catalog.instance_types()[t].efa for t in group.instance_types)
    if efa:
        tags.append(_tag(name, NODE_TEMPLATE_RESOURCE_TAG + EFA_RESOURCE, str(efa)))
    tags.append(_tag(name, PRIORITY_TAG, str(group.priority)))
    return tags


def create_groups(spec: Spec, endpoint_url: str, regions: list[str]) -> list[str]:
    """One launch template and Auto Scaling group per node group in each of ``regions``; the ASG names."""
    session = boto3.Session(aws_access_key_id="demo", aws_secret_access_key="demo")
    names = []
    for region_name in regions:
        region = spec.region(region_name)
        ec2 = session.client("ec2", region_name=region_name, endpoint_url=endpoint_url)
        asg = session.client("autoscaling", region_name=region_name, endpoint_url=endpoint_url)
        for g in region.node_groups:
            name = spec.asg_name(region_name, g)
            template = ec2.create_launch_template(
                LaunchTemplateName=name,
                LaunchTemplateData={"ImageId": DEMO_AMI, "InstanceType": g.instance_type},
            )["LaunchTemplate"]
            asg.create_auto_scaling_group(
                AutoScalingGroupName=name,
                LaunchTemplate={"LaunchTemplateId": template["LaunchTemplateId"], "Version": "$Latest"},
                MinSize=g.min,
                MaxSize=g.max,
                DesiredCapacity=g.min,
                AvailabilityZones=list(region.zones),
                NewInstancesProtectedFromScaleIn=True,  # as terraform/modules/node_group makes them
                Tags=group_tags(spec, name, g),
            )
            names.append(name)
    return names
