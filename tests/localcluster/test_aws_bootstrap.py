"""The demo's local bootstrap tags each Auto Scaling group exactly as Terraform does (terraform/modules/node_template,
fed by provision/terraform/context.py; tests/provision/terraform/test_node_groups.py holds the module to those
rules with `terraform test`): so the local autoscaler sees every group's GPUs and EFA interfaces as on AWS, and a
multi-node A100 job asking for vpc.amazonaws.com/efa (docs/researchers.md) has a group that can give it."""

from __future__ import annotations

from clusterspec.loader import load_spec
from clusterspec.names import (
    CA_CLUSTER_TAG_PREFIX,
    CA_ENABLED_TAG,
    EFA_RESOURCE,
    NODE_GROUP_LABEL,
    NODE_TEMPLATE_LABEL_TAG,
    NODE_TEMPLATE_RESOURCE_TAG,
    NODE_TEMPLATE_TAINT_TAG,
    PRIORITY_TAG,
)
from localcluster.aws_bootstrap import group_tags
from provision.terraform.context import _node_group


def _terraform_tags(cluster, v: dict) -> dict[str, str]:
    """terraform/modules/node_template's asg_tags for the variables the region root passes it."""
    tags = {
        CA_ENABLED_TAG: "true",
        CA_CLUSTER_TAG_PREFIX + cluster.name: "owned",
        PRIORITY_TAG: str(v["priority"]),
    }
    tags |= {
        NODE_TEMPLATE_LABEL_TAG + k: val for k, val in {**v["labels"], NODE_GROUP_LABEL: v["name"]}.items()
    }
    tags |= {NODE_TEMPLATE_TAINT_TAG + t["key"]: f"{t['value']}:{t['effect']}" for t in v["taints"]}
    if v["gpus"] > 0:
        tags[NODE_TEMPLATE_RESOURCE_TAG + "nvidia.com/gpu"] = str(v["gpus"])
    if v["efa_interfaces"] > 0:
        tags[NODE_TEMPLATE_RESOURCE_TAG + "vpc.amazonaws.com/efa"] = str(v["efa_interfaces"])
    return tags


def test_every_group_is_tagged_as_terraform_tags_it() -> None:
    cluster = load_spec()
    efa_groups = []
    for region in cluster.regions:
        for group in region.node_groups:
            v = _node_group(cluster, region, group)
            got = {t["Key"]: t["Value"] for t in group_tags(cluster, v["name"], group)}
            assert got == _terraform_tags(cluster, v), v["name"]
            if NODE_TEMPLATE_RESOURCE_TAG + EFA_RESOURCE in got:
                efa_groups.append(v["name"])
    assert any("a100" in g or "p4d" in g for g in efa_groups), efa_groups  # the docs' A100 example has one
