"""`invoke etcd-backup`/`etcd-restore`/`etcd-verify` (provision/operations/etcd.py): the steps in etcd's disaster
recovery order through a recording SSM runner, failures stopping before anything is lost; a three-member restore
of one snapshot with a real etcd on loopback (each member its own name and peer URL, one membership); `verify` on a
snapshot the members' script took; the SSM runner against moto."""

from __future__ import annotations

import subprocess

import boto3
import pytest
from moto import mock_aws

from clusterspec.errors import UserError
from clusterspec.loader import load_spec
from provision.operations import etcd
from provision.operations.ssm import Member, Result, SsmRunner, control_plane_members
from tests.provision.etcd_server import free_port, start_etcd, write_pki
from tests.support import require_tool

MEMBERS = [
    Member(0, "i-0aaa", "10.0.0.10"),
    Member(1, "i-0bbb", "10.0.32.10"),
    Member(2, "i-0ccc", "10.0.64.10"),
]
KMS = "arn:aws:kms:us-west-2:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab"


class Runner:
    """Answers each step as the members' script would; ``fail`` = {step: instance} makes that member fail it."""

    def __init__(self, fail=None):
        self.steps: list[tuple[str, list[str], str]] = []
        self.fail = fail or {}

    def run(self, ids, script, timeout_s=600, comment=""):
        last = script.strip().splitlines()[-1]  # the command after the install
        step = next(s for s in ("backup", "stop", "restore", "start") if f"cluster-etcd {s}" in last)
        self.steps.append((step, list(ids), script))
        out = {}
        for i, iid in enumerate(ids):
            bad = self.fail.get(step) == iid
            stdout = ""
            if step == "stop":
                stdout = f"name=cp-{i}\npeer=https://10.0.{32 * i}.10:2380\n"
            if step == "backup" and i == 1:
                stdout = "s3://dlr-etcd-backups-123456789012/snapshots/20261201T120000Z-rev42.db\n"
            out[iid] = Result(
                iid, "Failed" if bad else "Success", 1 if bad else 0, stdout, "boom" if bad else ""
            )
        return out


def test_backup_installs_the_script_everywhere_and_the_leader_uploads():
    spec = load_spec()
    runner = Runner()
    url = etcd.backup(spec, runner, MEMBERS, "dlr-etcd-backups-123456789012", KMS)
    assert url == "s3://dlr-etcd-backups-123456789012/snapshots/20261201T120000Z-rev42.db"
    ((step, ids, script),) = runner.steps
    assert ids == [m.instance_id for m in MEMBERS]
    assert "BUCKET=dlr-etcd-backups-123456789012" in script and f"KMS_KEY_ARN={KMS}" in script
    assert "OnUnitActiveSec=6h" in script and script.rstrip().endswith("/usr/local/sbin/cluster-etcd backup")


def test_restore_stops_every_member_then_restores_one_membership_then_starts_them_at_once():
    spec = load_spec()
    runner = Runner()
    etcd.restore(spec, runner, MEMBERS, "b", "snapshots/x.db", KMS, say=lambda _: None)
    assert [s for s, _, _ in runner.steps] == ["stop", "restore", "start"]
    assert all(ids == [m.instance_id for m in MEMBERS] for _, ids, _ in runner.steps)
    restore = runner.steps[1][2]
    initial = "cp-0=https://10.0.0.10:2380,cp-1=https://10.0.32.10:2380,cp-2=https://10.0.64.10:2380"
    assert f"restore s3://b/snapshots/x.db {initial} dlr-restore-" in restore


@pytest.mark.parametrize("step,hint", [("stop", "nothing was restored"), ("restore", "etcd stays stopped")])
def test_a_failed_step_stops_the_restore_with_what_to_do(step, hint):
    runner = Runner(fail={step: "i-0bbb"})
    with pytest.raises(UserError) as e:
        etcd.restore(load_spec(), runner, MEMBERS, "b", "snapshots/x.db", KMS, say=lambda _: None)
    assert [s for s, _, _ in runner.steps][-1] == step, "no later step runs"
    assert e.value.lines[0].startswith(f"{step} failed on member 1 (i-0bbb): Failed, exit 1: boom")
    assert hint in e.value.lines[-1]


def test_the_plan_says_when_fewer_members_run_than_the_spec_has():
    lines = etcd.restore_plan(load_spec(), MEMBERS[:1], "b", "snapshots/x.db")
    assert "1 running control-plane member(s)" in lines[0]
    assert "only 1 of 3 members run" in lines[-1]


def test_a_three_member_cluster_restored_from_one_snapshot_serves_the_keys(tmp_path):
    require_tool("etcdctl")
    pki = write_pki(tmp_path / "pki")
    source = start_etcd(tmp_path / "old", pki, "old-0")
    source.ctl("put", "/registry/configmaps/default/a", "one")
    snapshot = tmp_path / "snap.db"
    source.ctl("snapshot", "save", str(snapshot))
    source.stop()
    ports = [free_port() for _ in range(3)]
    initial = ",".join(f"cp-{i}=https://127.0.0.1:{p}" for i, p in enumerate(ports))
    env = {
        "CLUSTER": "dlr",
        "REGION": "us-west-2",
        "CLUSTER_ETCD_ENV": "/nonexistent",
        "PATH": "/usr/bin:/bin",
    }
    for i, p in enumerate(ports):
        done = subprocess.run(["bash", str(etcd.SCRIPT), "restore-data", str(snapshot), str(tmp_path / f"cp-{i}"),
                               f"cp-{i}", f"https://127.0.0.1:{p}", initial, "t"], env=env, capture_output=True,
                              text=True)  # fmt: skip
        assert done.returncode == 0, done.stderr
    import threading

    members: list = [None] * 3

    def boot(i):  # the members start at once: each waits for a quorum
        members[i] = start_etcd(tmp_path / f"cp-{i}", pki, f"cp-{i}", peer_port=ports[i], new_cluster=False)

    threads = [threading.Thread(target=boot, args=(i,)) for i in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    try:
        assert all(members)
        for m in members:
            assert (
                m.ctl("get", "/registry/configmaps/default/a", "--print-value-only").stdout.strip() == "one"
            )
        listed = members[0].ctl("member", "list").stdout
        assert all(f"cp-{i}" in listed for i in range(3))
    finally:
        for m in members:
            if m:
                m.stop()


def test_verify_restores_a_snapshot_and_counts_its_resources(tmp_path):
    require_tool("etcdctl")
    pki = write_pki(tmp_path / "pki")
    source = start_etcd(tmp_path / "a", pki, "a")
    for i in range(3):
        source.ctl("put", f"/registry/pods/u-alice/train-{i}", "x")
    source.ctl("put", "/registry/namespaces/u-alice", "x")
    snapshot = tmp_path / "snap.db"
    source.ctl("snapshot", "save", str(snapshot))
    source.stop()
    lines = []
    got = etcd.verify(snapshot, say=lines.append)
    assert got.keys == 4 and got.by_resource == {"pods": 3, "namespaces": 1} and got.revision >= 5
    assert lines[0].startswith(f"restored {snapshot}")


def test_verify_refuses_what_is_no_snapshot(tmp_path):
    require_tool("etcdctl")
    bad = tmp_path / "bad.db"
    bad.write_bytes(b"not a snapshot")
    with pytest.raises(UserError, match="the restore failed"):
        etcd.verify(bad, say=lambda _: None)


@mock_aws
def test_the_ssm_runner_and_the_member_lookup_against_moto():
    spec = load_spec()
    ec2 = boto3.client("ec2", region_name="us-west-2")
    for i in (1, 0):
        ec2.run_instances(ImageId="ami-12c6146b", MinCount=1, MaxCount=1, TagSpecifications=[{
            "ResourceType": "instance", "Tags": [{"Key": "Name", "Value": f"dlr-control-plane-{i}"},
                                                 {"Key": "research.cluster/control-plane", "Value": "dlr"}]}])  # fmt: skip
    members = control_plane_members(spec)
    assert [m.index for m in members] == [0, 1]
    results = SsmRunner("us-west-2", sleep=lambda _: None).run([m.instance_id for m in members], "true", 60)
    assert set(results) == {m.instance_id for m in members} and all(
        r.status == "Success" for r in results.values()
    )


@mock_aws
def test_no_control_plane_is_one_line():
    with pytest.raises(UserError, match="no running control-plane instance of dlr in us-west-2"):
        control_plane_members(load_spec())
