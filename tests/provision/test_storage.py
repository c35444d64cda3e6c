"""Storage manifests: valid for Kubernetes (kubernetes-validate --strict), every claim add-user creates meets
the volume reserved for it through its EFS access point, and the access point lookup against moto."""

from __future__ import annotations

import boto3
import pytest
from kubernetes_validate import validate
from kubernetes_validate.utils import latest_version
from moto import mock_aws

from clusterspec.errors import UserError
from clusterspec.loader import load_spec
from provision import storage
from provision.users import namespace_objects

SPEC = load_spec()
CSI = "arn:aws:iam::123456789012:role/dlr-efs-csi-node"  # global output efs_csi_role_arn
EFS = "fs-0123456789abcdef0"
DATASETS = "fsap-00000000000000d00"


def _efs(**changes) -> storage.EfsVolumes:
    aps = {u.name: {"home": f"fsap-{u.uid:017x}", "results": f"fsap-{u.uid + 1:017x}"} for u in SPEC.users}
    return storage.EfsVolumes(
        **({"file_system_id": EFS, "access_points": aps, "datasets": DATASETS} | changes)
    )


def test_every_manifest_passes_kubernetes_validate_strict() -> None:
    manifests = storage.render_storage(SPEC, _efs(), CSI)
    docs = [d for ds in manifests.values() for d in ds]
    assert {d["kind"] for d in docs} == {"CSIDriver", "ServiceAccount", "ClusterRole", "ClusterRoleBinding",
                                         "DaemonSet", "PersistentVolume"}  # fmt: skip
    for doc in docs:
        validate(doc, latest_version(), strict=True)


def test_each_claim_meets_its_reserved_volume_through_its_access_point() -> None:
    efs = _efs()
    rendered = storage.render_storage(SPEC, efs, CSI)
    pvs = {v["metadata"]["name"]: v for v in rendered["volumes.yaml"]}
    lab_pvs = {v["metadata"]["name"]: v for v in rendered["lab-volumes.yaml"]}
    for user in SPEC.users:
        claims = [o for o in namespace_objects(SPEC, user.name) if o["kind"] == "PersistentVolumeClaim"]
        names = ["home", "datasets", "results", "lab-home", "lab-datasets", "lab-results"]
        assert [c["metadata"]["name"] for c in claims] == names
        for claim in claims[3:]:  # the lab NAS's: reserved for this claim alone, as the EFS ones
            pv = lab_pvs[claim["spec"]["volumeName"]]
            assert pv["spec"]["claimRef"] == {"namespace": claim["metadata"]["namespace"],
                                              "name": claim["metadata"]["name"]}  # fmt: skip
            assert pv["spec"]["accessModes"] == claim["spec"]["accessModes"]
        for claim in claims[:3]:
            pv = pvs[claim["spec"]["volumeName"]]
            assert pv["spec"]["claimRef"] == {
                "namespace": claim["metadata"]["namespace"],
                "name": claim["metadata"]["name"],
            }
            assert pv["spec"]["accessModes"] == claim["spec"]["accessModes"]
            assert pv["spec"]["storageClassName"] == claim["spec"]["storageClassName"] == ""
            # TLS, as the file-system policy demands; no iam (the lab's nodes have no instance credentials);
            # no fixed mount target: efs-utils resolves the one in the node's own zone, by the primary
            # region's name wherever the node is
            assert pv["spec"]["mountOptions"] == ["tls", "iam", f"region={SPEC.primary_region}"]
            assert "volumeAttributes" not in pv["spec"]["csi"]
    alice = efs.access_points["alice"]
    assert pvs["u-alice-home"]["spec"]["csi"]["volumeHandle"] == f"{EFS}::{alice['home']}"
    assert pvs["u-alice-results"]["spec"]["csi"]["volumeHandle"] == f"{EFS}::{alice['results']}"
    assert pvs["u-alice-datasets"]["spec"]["csi"]["volumeHandle"] == f"{EFS}::{DATASETS}"
    assert pvs["u-alice-datasets"]["spec"]["csi"]["readOnly"] is True


def test_the_node_plugin_resolves_with_the_nodes_own_resolver() -> None:
    (ds,) = [
        d for d in storage.render_storage(SPEC, _efs(), CSI)["efs-csi-node.yaml"] if d["kind"] == "DaemonSet"
    ]
    pod = ds["spec"]["template"]["spec"]
    assert pod["hostNetwork"] is True and pod["dnsPolicy"] == "Default"


def test_the_node_plugin_signs_its_mounts_as_its_own_role() -> None:
    """Issue 26: the file-system policy lets only <cluster>-efs-csi-node use the jobs' access points; the plugin
    gets that role through its ServiceAccount's projected token (IRSA), audience sts.amazonaws.com."""
    (ds,) = [
        d for d in storage.render_storage(SPEC, _efs(), CSI)["efs-csi-node.yaml"] if d["kind"] == "DaemonSet"
    ]
    pod = ds["spec"]["template"]["spec"]
    plugin = next(c for c in pod["containers"] if c["name"] == "efs-plugin")
    env = {e["name"]: e.get("value") for e in plugin["env"]}
    assert env["AWS_ROLE_ARN"] == CSI
    token = next(v for v in pod["volumes"] if v["name"] == "aws-iam-token")["projected"]["sources"][0]
    assert token["serviceAccountToken"]["audience"] == "sts.amazonaws.com"
    mount = next(m for m in plugin["volumeMounts"] if m["name"] == "aws-iam-token")
    assert env["AWS_WEB_IDENTITY_TOKEN_FILE"] == mount["mountPath"] + "/token"


def test_the_csi_role_comes_from_the_global_outputs(tmp_path) -> None:
    import json

    from clusterspec.errors import UserError

    out = tmp_path / "outputs.json"
    with pytest.raises(UserError, match="not found"):
        storage.csi_role_arn(out)
    out.write_text(json.dumps({"efs_csi_role_arn": {"value": CSI}}))
    assert storage.csi_role_arn(out) == CSI


def test_lab_volumes_are_each_researchers_own_folder_bound_to_their_claim() -> None:
    """Issue 36: no lab volume any namespace's claim could bind (claimRef: that researcher's claim alone), each on
    the researcher's own folder of the export (datasets shared read-only), scheduled on the NAS's site only."""
    lab = storage.render_storage(SPEC, _efs(), CSI)["lab-volumes.yaml"]
    got = {v["metadata"]["name"]: (v["spec"]["claimRef"], v["spec"]["nfs"]) for v in lab}
    assert got["u-alice-lab-home"] == (
        {"namespace": "u-alice", "name": "lab-home"},
        {"server": "10.16.0.5", "path": "/export/home/alice", "readOnly": False},
    )
    assert got["u-bob-lab-results"] == (
        {"namespace": "u-bob", "name": "lab-results"},
        {"server": "10.16.0.5", "path": "/export/results/bob", "readOnly": False},
    )
    assert got["u-bob-lab-datasets"][1] == {
        "server": "10.16.0.5",
        "path": "/export/datasets",
        "readOnly": True,
    }
    assert len(got) == len(SPEC.users) * 3
    for v in lab:
        term = v["spec"]["nodeAffinity"]["required"]["nodeSelectorTerms"][0]["matchExpressions"][0]
        assert term == {"key": "research.cluster/site", "operator": "In", "values": ["lab"]}
    # each namespace's claims name exactly its own volumes
    ns_claims = {
        c["metadata"]["name"]: c["spec"]["volumeName"] for c in storage.lab_claims(SPEC, "u-bob", {})
    }
    assert ns_claims == {"lab-home": "u-bob-lab-home", "lab-datasets": "u-bob-lab-datasets",
                         "lab-results": "u-bob-lab-results"}  # fmt: skip


@pytest.mark.parametrize(
    "changes,reason",
    [
        (
            {"file_system_id": "fs-nothex"},
            "--efs-id 'fs-nothex': expected a file system id like fs-0123456789abcdef0",
        ),
        (
            {"access_points": {}},
            f"{EFS}: no access point for alice's home (/home/alice); apply the primary region's",
        ),
        ({"datasets": ""}, f"{EFS}: no access point for /datasets"),
    ],
)
def test_bad_or_missing_ids_are_one_line(changes, reason) -> None:
    with pytest.raises(UserError) as e:
        storage.render_storage(SPEC, _efs(**changes), CSI)
    assert e.value.lines[0].startswith(reason)


def test_access_point_lookup_matches_path_and_uid(monkeypatch) -> None:
    """terraform/modules/efs's access points as DescribeAccessPoints returns them (moto): a researcher's by root
    directory and enforced uid, /datasets by its path and no enforced identity; the SSH machines' (same
    directories, no uid) and another uid's are never chosen."""
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    with mock_aws():
        efs = boto3.client("efs", region_name="us-west-2")
        fs = efs.create_file_system(CreationToken="t")["FileSystemId"]

        def ap(path, uid=None):
            posix = {"PosixUser": {"Uid": uid, "Gid": uid}} if uid is not None else {}
            info = {"OwnerUid": uid or 0, "OwnerGid": uid or 0, "Permissions": "0750"}
            return efs.create_access_point(
                FileSystemId=fs, RootDirectory={"Path": path, "CreationInfo": info}, **posix
            )["AccessPointId"]

        ap("/home/alice")  # the SSH machines' (no enforced identity)
        ap("/home/alice", 9999)  # not alice's uid
        want = {u.name: {v: ap(f"/{v}/{u.name}", u.uid) for v in ("home", "results")} for u in SPEC.users}
        datasets = ap("/datasets")
        found = storage.lookup_access_points(SPEC, fs, "us-west-2")
        assert found == storage.EfsVolumes(fs, want, datasets)
        storage.check_efs(SPEC, found)
        with pytest.raises(UserError, match="--efs-id 'fs-x'"):
            storage.lookup_access_points(SPEC, "fs-x", "us-west-2")


def test_no_aws_credentials_is_one_line_even_with_both_values_given(tmp_path, monkeypatch) -> None:
    """`invoke render-storage --efs-id fs-... --csi-role-arn arn:...` still reads the access points from AWS:
    without credentials that is one line naming the call, not botocore's traceback (issue 37)."""
    import pytest

    from clusterspec.errors import UserError
    from clusterspec.loader import load_spec
    from provision.storage import lookup_access_points

    for k in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE"):
        monkeypatch.delenv(k, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")  # no instance role either, and no request for one
    with pytest.raises(UserError) as e:
        lookup_access_points(load_spec(), "fs-0123456789abcdef0", "us-west-2")
    (line,) = e.value.lines
    assert line == ("--efs-id fs-0123456789abcdef0: DescribeAccessPoints in us-west-2 failed (Unable to locate "
                    "credentials); the access points are read with your AWS credentials (aws sts get-caller-identity)")  # fmt: skip
