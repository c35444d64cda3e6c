"""IMDSv2 only, hop limit 1, on every launch template and instance: a pod's packets to 169.254.169.254 cross one
more hop (the pod's network namespace) and so never reach the node's role (EC2 User Guide, "Configure the
instance metadata options": a hop limit of 1 keeps the token response from leaving the instance)."""

from tests.provision.terraform.tf_files import all_resources, module_dirs


def test_every_launch_template_and_instance_requires_tokens_with_hop_limit_1():
    checked = []
    for module in module_dirs():
        for rtype, name, body in all_resources(module):
            if rtype not in ("aws_launch_template", "aws_instance"):
                continue
            (options,) = body.get("metadata_options") or [None]
            assert options, f"{module.name}: {rtype}.{name} has no metadata_options"
            assert options.get("http_tokens") == "required", f"{module.name}: {rtype}.{name}"
            assert options.get("http_put_response_hop_limit") == 1, f"{module.name}: {rtype}.{name}"
            assert options.get("http_endpoint", "enabled") == "enabled"
            checked.append(f"{module.name}.{name}")
    assert {"node_group.this", "control_plane.member"} <= set(checked)
