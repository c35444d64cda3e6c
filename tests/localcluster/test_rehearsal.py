"""Everything `invoke up` deploys, with an apply's outputs (localcluster/rehearsal.py, the tail of `make day-one`): the
EFS access points read from AWS (moto, as the apply made them), everything applied to the real kube-apiserver with
no refusal and no warning, and each output read back from the objects the API server holds; a value that did not
cross is found missing."""

from __future__ import annotations

import dataclasses

import boto3
import pytest
import yaml
from moto import mock_aws

from clusterspec.errors import UserError
from clusterspec.loader import load_spec
from localcluster import binaries, day_one, rehearsal

pytestmark = pytest.mark.tool
ACCOUNT = "123456789012"


def _apply_outputs(cluster) -> dict:
    """What outputs.applied returns after an apply, with the file system and its access points made in moto as
    terraform/modules/efs makes them (a researcher's home and results enforcing their uid, the datasets)."""
    efs = boto3.client("efs", region_name=cluster.primary_region)
    fs = efs.create_file_system(CreationToken="day-one")["FileSystemId"]

    def ap(path, uid=None):
        posix = {"PosixUser": {"Uid": uid, "Gid": uid}} if uid is not None else {}
        info = {"OwnerUid": uid or 0, "OwnerGid": uid or 0, "Permissions": "0750"}
        efs.create_access_point(FileSystemId=fs, RootDirectory={"Path": path, "CreationInfo": info}, **posix)

    for u in cluster.users:
        ap(f"/home/{u.name}", u.uid)
        ap(f"/results/{u.name}", u.uid)
    ap("/datasets")
    role = f"arn:aws:iam::{ACCOUNT}:role/{cluster.name}"
    return {
        "autoscaler_role_arn": f"{role}-autoscaler-applied",
        "alertmanager_role_arn": f"{role}-alertmanager-applied",
        "efs_csi_role_arn": f"{role}-efs-csi-applied",
        "alerts_topic_arn": f"arn:aws:sns:{cluster.primary_region}:{ACCOUNT}:{cluster.name}-alerts-applied",
        "bucket_names": {"results": f"{cluster.name}-results-applied"},
        "efs_file_system_ids": {cluster.primary_region: fs},
    }


def test_a_missing_output_is_one_line_naming_it() -> None:
    cluster = load_spec()
    with pytest.raises(UserError) as e:
        day_one.Outputs.applied({"autoscaler_role_arn": "arn:aws:iam::1:role/a"}, cluster)
    (line,) = e.value.lines
    assert "alerts_topic_arn" in line and f"efs_file_system_id ({cluster.primary_region})" in line


def test_the_deploys_with_the_apply_outputs_are_accepted_and_carry_them(kube, tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    cluster = load_spec()
    with mock_aws():
        outputs = day_one.Outputs.applied(_apply_outputs(cluster), cluster)
        manifests = day_one.render(cluster, tmp_path, outputs)
    assert day_one.count(manifests) > 50
    assert [m.label for m in manifests if m.label.startswith("storage")] == [
        "storage efs-csi-node.yaml", "storage volumes.yaml", "storage lab-volumes.yaml"]  # fmt: skip
    # day one publishes the lab settings, every test's one ConfigMap, read back below: held until then
    with kube.singleton("lab-settings"):
        done = day_one.apply(str(binaries.path("kubectl")), kube.admin_kubeconfig, manifests)
        problems = [f"{a.manifest.label}: {line}" for a in done for line in (*a.refusals, *a.warnings)]
        assert not problems, "\n".join(problems)
        assert all(a.returncode == 0 for a in done)
        # the two DaemonSets the emulator accepted (issue 33): on the real API server, with their per-server node terms
        for name in ("nvidia-device-plugin", "dcgm-exporter"):
            got = kube.kubectl("-n", "kube-system", "get", "daemonset", name, "-o", "yaml", check=True)
            terms = yaml.safe_load(got.stdout)["spec"]["template"]["spec"]["affinity"]["nodeAffinity"][
                "requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]  # fmt: skip
            assert all(len(f["values"]) == 1 for t in terms for f in t.get("matchFields", ()))
        assert rehearsal.carries(kube, outputs) == []
        # the seam's other side: a value the deploys did not carry is named
        other = dataclasses.replace(outputs, alert_topic_arn=outputs.alert_topic_arn + "-other")
        assert rehearsal.carries(kube, other) == [
            f"alerts_topic_arn {other.alert_topic_arn}: in none of the configmaps the API server holds"
        ]
