"""`invoke control-plane-status` reads what the bootstrap script wrote (the script's own JSON, via moto SSM)."""

import boto3
import pytest
from moto import mock_aws

from clusterspec.loader import load_spec
from provision.control_plane_status import read_status, report
from tests.provision.terraform.test_control_plane_bootstrap import SCENARIOS, _run, render


@pytest.fixture
def ssm():
    with mock_aws():
        yield boto3.Session(region_name="us-west-2")


def _written_by_script(name: str, member: int, tmp_path) -> str:
    """Run a scenario's bootstrap against the fakes and return the status line it wrote."""
    tmp_path.mkdir()
    case = next(c for c in SCENARIOS if c["name"].startswith(name))
    _run(render(member, tmp_path), case, tmp_path)
    return (tmp_path / "state/ssm" / f"_dlr_control-plane_status_member-{member}").read_text().strip()


def test_reads_the_scripts_status_lines_and_flags_a_failed_member(ssm, tmp_path):
    cluster = load_spec()  # dlr, 3 members, primary us-west-2
    client = ssm.client("ssm")
    client.put_parameter(Name="/dlr/control-plane/init", Value="initialized by i-0 at t", Type="String")
    ok = _written_by_script("member 0 waits", 0, tmp_path / "a")
    failed = _written_by_script("a member EC2 does not list", 1, tmp_path / "b")
    client.put_parameter(Name="/dlr/control-plane/status/member-0", Value=ok, Type="String")
    client.put_parameter(Name="/dlr/control-plane/status/member-1", Value=failed, Type="String")
    init, members = read_status(cluster, ssm)
    assert init.startswith("initialized")
    assert [m.state for m in members] == ["ready", "failed", "missing"]
    assert members[1].ip == "10.0.1.21" and "EC2 does not list" in members[1].message
    lines, code = report(init, members)
    assert code == 1 and len(lines) == 4 and "member-2: missing" in lines[3]


def test_all_ready_is_exit_0_and_in_progress_is_3(ssm):
    cluster = load_spec()
    client = ssm.client("ssm")
    client.put_parameter(Name="/dlr/control-plane/init", Value="initialized by i-0 at t", Type="String")
    for i in range(3):
        value = '{"state":"ready","member":%d,"instance":"i-%d","ip":"10.0.0.%d","attempt":1,"time":"t","message":"m"}'
        client.put_parameter(
            Name=f"/dlr/control-plane/status/member-{i}", Value=value % (i, i, i), Type="String"
        )
    assert report(*read_status(cluster, ssm))[1] == 0
    client.put_parameter(
        Name="/dlr/control-plane/status/member-2",
        Value='{"state":"retrying","member":2,"attempt":2,"message":"kubeadm join: etcd not healthy"}',
        Type="String",
        Overwrite=True,
    )
    assert report(*read_status(cluster, ssm))[1] == 3


def test_no_init_parameter_is_reported_not_raised(ssm):
    init, members = read_status(load_spec(), ssm)
    lines, code = report(init, members)
    assert init is None and code == 1 and "control plane not applied" in lines[0]


def test_instances_that_never_became_nodes_are_listed(monkeypatch):
    """A node's instance with no Node naming it in its providerID: joining within the boot timeout (exit 3),
    never joined after it (exit 1)."""
    from datetime import timedelta

    from provision.control_plane_status import cluster_instances, report_nodes, unjoined_nodes
    from tests.autoscaler.aws_setup import create_groups

    for k, v in {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing"}.items():
        monkeypatch.setenv(k, v)
    cluster = load_spec()
    with mock_aws():
        create_groups(cluster, regions=["us-west-2", "us-east-1"])
        instances = cluster_instances(cluster)
    cpu = sorted(i for i in instances if i[2].endswith("-cpu"))
    assert [i[0] for i in cpu] == ["us-east-1", "us-west-2"]  # the cpu groups' min 1, in each region made
    joined = f"aws:///{cpu[0][0]}a/{cpu[0][1]}"
    launched = cpu[1][3]
    soon = unjoined_nodes(cluster, instances, [joined, ""], launched + timedelta(seconds=60))
    assert [(u.instance, u.late) for u in soon] == [(cpu[1][1], False)]
    lines, code = report_nodes(soon, cluster.autoscaler.boot_timeout_s)
    assert code == 3 and "joining (60 s)" in lines[0]
    late = unjoined_nodes(cluster, instances, [joined], launched + timedelta(hours=1))
    lines, code = report_nodes(late, cluster.autoscaler.boot_timeout_s)
    assert code == 1 and f"node {cpu[1][1]} (us-west-2, dlr-us-west-2-cpu): never joined" in lines[0]
    assert report_nodes(None, 900) == (
        ["nodes: not checked (no kubeconfig: run `invoke kubeconfig` and set KUBECONFIG)"],
        0,
    )
