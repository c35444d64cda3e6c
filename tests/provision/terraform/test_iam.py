"""IAM: the autoscaler's permissions are exactly the documented list; the node role stays scoped."""

import re

from tests.provision.terraform.tf_files import MODULES, parse
from tests.support import ROOT

DOC = ROOT / "docs/terraform.md"


def _policy(module_file: str, name: str) -> list[dict]:
    for entry in parse(MODULES / "iam" / module_file).get("data", []):
        if "aws_iam_policy_document" in entry and name in entry["aws_iam_policy_document"]:
            return entry["aws_iam_policy_document"][name]["statement"]
    raise AssertionError(f"no policy document {name}")


def _documented() -> dict[str, tuple[str, bool]]:
    """action -> (resource column, conditioned?) from the table after the autoscaler-iam marker."""
    text = DOC.read_text().split("<!-- autoscaler-iam", 1)[1]
    rows = re.findall(r"^\| `([a-z0-9]+:\w+)` \|([^|]+)\|([^|]*)\|$", text, re.M)
    return {action: (resource.strip(), bool(condition.strip())) for action, resource, condition in rows}


def test_autoscaler_policy_is_the_documented_list():
    documented = _documented()
    assert len(documented) == 12
    granted = {}
    for statement in _policy("autoscaler.tf", "autoscaler"):
        conditioned = bool(statement.get("condition"))
        for action in statement["actions"]:
            granted[action] = ("`*`" if statement["resources"] == ["*"] else "scoped", conditioned)
    assert set(granted) == set(documented)
    for action, (resource, conditioned) in documented.items():
        assert conditioned == granted[action][1], action
        assert (resource == "`*`") == (granted[action][0] == "`*`"), action


def test_scaling_actions_require_the_clusters_ownership_tag():
    (scale,) = [s for s in _policy("autoscaler.tf", "autoscaler") if s.get("sid") == "ScaleOwnedGroups"]
    assert sorted(scale["actions"]) == [
        "autoscaling:SetDesiredCapacity",
        "autoscaling:SetInstanceProtection",
        "autoscaling:TerminateInstanceInAutoScalingGroup",
    ]
    (adopt,) = [s for s in _policy("autoscaler.tf", "autoscaler") if s.get("sid") == "AdoptOwnedGroupsOnly"]
    assert adopt["actions"] == ["autoscaling:UpdateAutoScalingGroup"]
    nulls = {c["variable"] for c in adopt["condition"] if c["test"] == "Null" and c["values"] == ["true"]}
    assert {
        "autoscaling:MaxSize",
        "autoscaling:MinSize",
        "autoscaling:LaunchTemplateVersionSpecified",
    } <= nulls
    (condition,) = scale["condition"]
    assert condition["test"] == "StringEquals"
    assert condition["variable"] == "aws:ResourceTag/k8s.io/cluster-autoscaler/${var.cluster}"
    assert condition["values"] == ["owned"]


def test_node_role_has_no_write_or_wildcard_beyond_ecr_login():
    for statement in _policy("main.tf", "node"):
        if statement["resources"] == ["*"]:
            assert statement["actions"] == ["ecr:GetAuthorizationToken"]
        for action in statement["actions"]:
            assert not action.endswith("*"), action
            assert not action.startswith(("iam:", "ec2:", "autoscaling:")), action
