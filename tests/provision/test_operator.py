"""Operator access on day one: every instance's role lets the Session Manager agent in, no cluster security group
opens SSH, only the operator role reads the admin kubeconfig that member 0 publishes, and `invoke kubeconfig` and
`invoke publish-oidc` read it (and sa.pub) from SSM (moto)."""

from __future__ import annotations

import json
import stat

import boto3
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from moto import mock_aws

from clusterspec.errors import UserError
from clusterspec.loader import load_spec
from provision import irsa, operator
from tests.provision.terraform.tf_files import MODULES, parse

KUBECONFIG = "apiVersion: v1\nkind: Config\nclusters:\n- name: dlr\n  cluster: {server: https://api.research.internal:6443}\n"
AGENT = {"ssm:UpdateInstanceInformation", "ssmmessages:CreateControlChannel", "ssmmessages:CreateDataChannel",
         "ssmmessages:OpenControlChannel", "ssmmessages:OpenDataChannel"}  # fmt: skip


@pytest.fixture(scope="module")
def spec():
    return load_spec()


@pytest.fixture
def aws(monkeypatch):
    for k, v in {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing"}.items():
        monkeypatch.setenv(k, v)
    with mock_aws():
        yield boto3.client("ssm", region_name="us-west-2")


def _data(path):
    return {n: b for e in parse(path).get("data", []) for t in e.values() for n, b in t.items()}


def _statements(path, doc):
    return _data(path)[doc]["statement"]


def test_every_instance_role_carries_the_session_manager_agent():
    (stmt,) = _statements(MODULES / "iam/operator.tf", "session_manager")
    assert set(stmt["actions"]) == AGENT
    attachments = {n: b for r in parse(MODULES / "iam/operator.tf")["resource"]
                   for t, v in r.items() if t == "aws_iam_role_policy_attachment" for n, b in v.items()}  # fmt: skip
    assert set(attachments["session_manager"]["for_each"]) == {"node", "control-plane"}
    (ssh,) = _statements(MODULES / "ssh_machines/main.tf", "session_manager")
    assert set(ssh["actions"]) == AGENT
    # the pod gateways use the node profile (pod_gateway's instance_profile_name is the node's)


def test_no_cluster_security_group_opens_ssh():
    text = (MODULES / "network/security_groups.tf").read_text()
    ports = parse(MODULES / "network/security_groups.tf")["locals"][0]["cluster_ports"]
    assert "ssh" not in ports and all(p[1] != 22 for p in ports.values())
    assert "22" not in [w.strip(",]") for w in text.split()]


def test_only_the_operator_role_reads_the_admin_kubeconfig():
    name = "${local.ssm}/control-plane/admin-kubeconfig"
    readers = []
    for path, doc in [("iam/main.tf", "node"), ("iam/control_plane.tf", "control_plane"),
                      ("iam/operator.tf", "operator")]:  # fmt: skip
        for s in _statements(MODULES / path, doc):
            if name in s["resources"] and "ssm:GetParameter" in s["actions"]:
                readers.append(doc)
    assert readers == ["operator"]
    (publish,) = (s for s in _statements(MODULES / "iam/control_plane.tf", "control_plane")
                  if s.get("sid") == "PublishOperatorAccess")  # fmt: skip
    assert publish["actions"] == ["ssm:PutParameter"] and name in publish["resources"]


def test_invoke_kubeconfig_writes_it_private(aws, spec, tmp_path):
    aws.put_parameter(
        Name="/dlr/control-plane/admin-kubeconfig", Value=KUBECONFIG, Type="SecureString", Tier="Advanced"
    )
    out = operator.fetch_kubeconfig(spec, tmp_path / "kube" / "dlr.conf")
    assert out.read_text() == KUBECONFIG
    assert stat.S_IMODE(out.stat().st_mode) == 0o600


def test_before_member_0_published_it_one_line_says_what_to_do(aws, spec, tmp_path):
    with pytest.raises(
        UserError,
        match=r"^/dlr/control-plane/admin-kubeconfig \(us-west-2\): not found: .*control-plane-status",
    ):
        operator.fetch_kubeconfig(spec, tmp_path / "dlr.conf")
    assert not (tmp_path / "dlr.conf").exists()


def test_publish_oidc_reads_sa_pub_from_ssm(aws, spec):
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    aws.put_parameter(Name="/dlr/control-plane/sa-pub", Value=pem.decode(), Type="String")
    s3 = boto3.client("s3", region_name="us-west-2")
    s3.create_bucket(Bucket="dlr-oidc-1", CreateBucketConfiguration={"LocationConstraint": "us-west-2"})
    issuer = irsa.issuer_url("dlr-oidc-1", "us-west-2")
    irsa.publish(irsa.oidc_documents(operator.fetch_sa_pub(spec), issuer), "dlr-oidc-1", "us-west-2")
    jwks = json.loads(s3.get_object(Bucket="dlr-oidc-1", Key="keys.json")["Body"].read())
    assert jwks["keys"][0]["kid"] == irsa.key_id(key.public_key())


def test_member_0_publishes_both_for_operators():
    text = (MODULES / "control_plane/scripts/bootstrap.sh").read_text()
    assert (
        '--name "/$CLUSTER/control-plane/admin-kubeconfig" --value "file://$root/etc/kubernetes/admin.conf"'
        in text
    )
    assert '--name "/$CLUSTER/control-plane/sa-pub" --value "file://$pki/sa.pub"' in text
