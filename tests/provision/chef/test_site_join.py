"""A site server's way in: DNS forwarding of the cluster domain to the Resolver inbound endpoint, and AWS
credentials from IAM Roles Anywhere through credential_process, checked with botocore itself (the same config
format the AWS CLI reads)."""

from __future__ import annotations

import configparser
import json
import os

import boto3
import pytest

from clusterspec.errors import UserError
from clusterspec.loader import load_spec
from provision.chef.attributes import node_attributes
from tests.provision.chef.support import OUTPUTS, generate, outputs_copy, render, write_lock, write_outputs

pytestmark = pytest.mark.tool  # Ruby renders the templates

HELPER = """#!/bin/bash
# fake aws_signing_helper: records its arguments, answers as credential_process must (AWS CLI docs, version 1)
echo "$*" > "{log}"
printf '{{"Version": 1, "AccessKeyId": "ASIAFAKEFAKEFAKE", "SecretAccessKey": "fake-secret",
  "SessionToken": "fake-token", "Expiration": "2099-01-01T00:00:00Z"}}'
"""


def test_resolved_forwards_only_the_cluster_domain_to_the_inbound_endpoint(tmp_path):
    _, node_json = generate(load_spec(), tmp_path)
    conf = configparser.ConfigParser()
    conf.read_string(render("resolved-cluster.conf.erb", node_json))
    assert conf["Resolve"]["DNS"].split() == OUTPUTS["us-west-2"]["resolver_inbound_ips"]["value"]
    # routing-only: other names keep the site's DNS; the primary file system's name only the primary VPC answers
    efs = OUTPUTS["us-west-2"]["efs_dns_name"]["value"]
    assert conf["Resolve"]["Domains"].split() == ["~research.internal", f"~{efs}"]


def test_credential_process_profile_gives_botocore_the_role_credentials(tmp_path):
    attrs, node_json = generate(load_spec(), tmp_path)
    node = json.loads(node_json.read_text())
    helper, log = tmp_path / "aws_signing_helper", tmp_path / "helper-args"
    helper.write_text(HELPER.format(log=log))
    helper.chmod(0o755)
    # the cookbook's defaults (attributes/default.rb), with the helper replaced by the fake
    node["cluster_node"] |= {"site_pki_dir": "/etc/cluster-node/pki", "signing_helper": str(helper)}
    node["cluster_node"]["aws_profile"] = "cluster-site"
    node_json.write_text(json.dumps(node))
    config = tmp_path / "aws-config"
    config.write_text(render("aws-config.erb", node_json))

    env = {
        "AWS_CONFIG_FILE": str(config),
        "AWS_PROFILE": "cluster-site",
        "AWS_SHARED_CREDENTIALS_FILE": "/dev/null",
    }
    saved = {k: os.environ.get(k) for k in [*env, "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"]}
    try:
        os.environ.pop("AWS_ACCESS_KEY_ID", None)
        os.environ.pop("AWS_SECRET_ACCESS_KEY", None)
        os.environ.update(env)
        session = boto3.Session()
        creds = session.get_credentials().get_frozen_credentials()
    finally:
        for k, v in saved.items():
            os.environ.pop(k, None) if v is None else os.environ.__setitem__(k, v)
    assert (creds.access_key, creds.token) == ("ASIAFAKEFAKEFAKE", "fake-token")
    assert session.region_name == "us-west-2"
    site = attrs["cluster_node"]["site_credentials"]
    args = log.read_text().split()
    assert args[0] == "credential-process"
    assert dict(zip(args[1::2], args[2::2], strict=True)) == {
        "--certificate": "/etc/cluster-node/pki/server.crt",
        "--private-key": "/etc/cluster-node/pki/server.key",
        "--trust-anchor-arn": site["trust_anchor_arn"],
        "--profile-arn": site["profile_arn"],
        "--role-arn": site["role_arn"],
    }


@pytest.mark.parametrize(
    ("root", "change", "expect"),
    [
        ("global", {"site_access": {"value": {"role_arn": "x"}}}, "site_access should hold trust_anchor_arn"),
        ("us-west-2", {"resolver_inbound_ips": {"value": ["a", "b"]}}, "'a' is not an IPv4 address"),
    ],
)
def test_missing_or_broken_join_outputs_are_one_line(tmp_path, root, change, expect):
    docs = outputs_copy()
    docs[root] |= change
    with pytest.raises(UserError) as err:
        node_attributes(
            load_spec(), "lab", write_outputs(tmp_path, docs), ami_dir=write_lock(tmp_path / "ami").parent
        )
    assert len(err.value.lines) == 1 and expect in err.value.lines[0], err.value.lines
