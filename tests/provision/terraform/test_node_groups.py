"""Node groups: one ASG per spec group with the autoscaler's tags, and Terraform never fights the autoscaler."""

import shutil
import subprocess

from clusterspec.names import (
    CA_CLUSTER_TAG_PREFIX,
    CA_ENABLED_TAG,
    NODE_GROUP_LABEL,
    NODE_TEMPLATE_LABEL_TAG,
    NODE_TEMPLATE_RESOURCE_TAG,
    NODE_TEMPLATE_TAINT_TAG,
    PRIORITY_TAG,
)
from provision.terraform.hcl import inline
from tests.provision.terraform.tf_files import MODULES, module_calls, resources
from tests.support import require_tool


def _group_calls(rendered, region):
    return {b["name"]: b for n, b in module_calls(rendered / region).items() if n.startswith("node_group_")}


def test_one_group_module_per_spec_group_named_like_the_planner(cluster, rendered):
    for region in cluster.regions:
        calls = _group_calls(rendered, region.name)
        assert sorted(calls) == sorted(cluster.asg_name(region.name, g) for g in region.node_groups)
        for g in region.node_groups:
            body = calls[cluster.asg_name(region.name, g)]
            assert body["instance_types"] == g.instance_types and body["spot"] is g.spot
            assert (body["min_size"], body["max_size"], body["gpus"]) == (g.min, g.max, g.gpus)
            assert body["labels"] == g.labels
            assert body["taints"] == [t.model_dump() for t in g.taints]
            assert body["join_region"] == cluster.primary_region


def test_every_asg_ignores_desired_capacity_and_carries_the_computed_tags():
    groups = [(d.name, n, b) for d in MODULES.iterdir() for n, b in resources(d, "aws_autoscaling_group")]
    assert groups, "no aws_autoscaling_group in the modules"
    for module, name, body in groups:
        assert "desired_capacity" in body["lifecycle"][0]["ignore_changes"], f"{module}.{name}"
        # no lowering of desired capacity may let AWS choose a (busy) instance: the autoscaler terminates by id
        assert body["protect_from_scale_in"] is True, f"{module}.{name}"
        dynamic_tags = [d["tag"] for d in body.get("dynamic", []) if "tag" in d]
        assert dynamic_tags and dynamic_tags[0]["for_each"] == "${module.node_template.asg_tags}"
        assert dynamic_tags[0]["content"][0]["key"] == "${tag.key}"


def test_launch_template_requires_imdsv2_and_encrypts_the_root_volume():
    ((name, lt),) = resources(MODULES / "node_group", "aws_launch_template")
    assert lt["metadata_options"][0]["http_tokens"] == "required"
    ebs = lt["block_device_mappings"][0]["ebs"][0]
    assert ebs["encrypted"] is True and ebs["kms_key_id"] == "${var.kms_key_arn}"
    ((name, cp),) = resources(MODULES / "control_plane", "aws_instance")
    assert cp["metadata_options"][0]["http_tokens"] == "required"
    assert cp["root_block_device"][0]["encrypted"] is True


def test_spot_groups_use_a_mixed_instances_policy():
    ((name, asg),) = resources(MODULES / "node_group", "aws_autoscaling_group")
    dynamic = {k: v for d in asg["dynamic"] for k, v in d.items()}
    assert dynamic["mixed_instances_policy"]["for_each"] == "${var.spot ? [1] : []}"
    assert dynamic["launch_template"]["for_each"] == "${var.spot ? [] : [1]}"


def test_user_data_joins_with_the_groups_labels_and_taints():
    script = (MODULES / "node_join/templates/cluster-join.sh.tftpl").read_text()
    assert "labels='${node_labels}'" in script and "--node-labels=$labels" in script
    assert "--register-with-taints=${taints}" in script
    assert "aws ssm get-parameter --region '${join_region}' --with-decryption" in script
    assert "kubeadm join '${api_endpoint}'" in script
    join = module_calls(MODULES / "node_group")["join"]
    assert join["node_labels"] == "${module.node_template.kubelet_node_labels}"
    assert join["taints"] == "${module.node_template.kubelet_taints}"
    assert join["kubelet_reserved"] == "${var.kubelet_reserved}"
    ((_, lt),) = resources(MODULES / "node_group", "aws_launch_template")
    assert lt["user_data"] == "${base64encode(module.join.user_data)}"


def _run_block(index: int, cluster, region: str, group) -> str:
    name = cluster.asg_name(region, group)
    tags = {
        CA_ENABLED_TAG: "true",
        CA_CLUSTER_TAG_PREFIX + cluster.name: "owned",
        NODE_TEMPLATE_LABEL_TAG + NODE_GROUP_LABEL: name,
        PRIORITY_TAG: str(group.priority),
    }
    tags |= {NODE_TEMPLATE_LABEL_TAG + k: v for k, v in group.labels.items()}
    tags |= {NODE_TEMPLATE_TAINT_TAG + t.key: f"{t.value}:{t.effect}" for t in group.taints}
    if group.gpus:
        tags[NODE_TEMPLATE_RESOURCE_TAG + "nvidia.com/gpu"] = str(group.gpus)
    asserts = "".join(
        f"  assert {{\n    condition     = output.asg_tags[{inline(k)}] == {inline(v)}\n"
        f"    error_message = {inline(f'{name}: tag {k}')}\n  }}\n"
        for k, v in tags.items()
    )
    asserts += (
        f"  assert {{\n    condition     = strcontains(output.kubelet_node_labels, {inline(f'{NODE_GROUP_LABEL}={name}')})\n"
        f"    error_message = {inline(f'{name}: node-group label')}\n  }}\n"
    )
    variables = {
        "cluster": cluster.name,
        "asg_name": name,
        "labels": group.labels,
        "taints": [t.model_dump() for t in group.taints],
        "gpus": group.gpus,
        "priority": group.priority,
    }
    lines = "".join(f"    {k} = {inline(v)}\n" for k, v in variables.items())
    return f'run "group_{index}" {{\n  command = plan\n  variables {{\n{lines}  }}\n{asserts}}}\n'


def test_terraform_computes_the_spec_groups_tags(cluster, rendered, tmp_path):
    """Terraform evaluates node_template for every spec group; the expected tags come from the spec."""
    terraform = require_tool("terraform")
    module = tmp_path / "node_template"
    shutil.copytree(MODULES / "node_template", module, ignore=shutil.ignore_patterns("tests", ".terraform*"))
    (module / "tests").mkdir()
    runs = [
        _run_block(i, cluster, r.name, g)
        for i, (r, g) in enumerate((r, g) for r in cluster.regions for g in r.node_groups)
    ]
    (module / "tests" / "spec_groups.tftest.hcl").write_text("\n".join(runs))
    result = subprocess.run([terraform, "test", "-no-color"], cwd=module, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"{len(runs)} passed, 0 failed" in result.stdout
