"""The control plane's etcd script (terraform/modules/control_plane/scripts/etcd.sh) against a real etcd
(Debian's etcd-server, `make tools`) on loopback, with TLS as kubeadm sets it up: keys written, the script's
backup (uploads through a recording `aws` on PATH: SSE-KMS with the cluster key, the sha256 and revision in the
object's metadata, the CA and service-account keys beside it, the record in SSM), the script's restore into a
new data directory with a new member name and peer URL, a second etcd started on it: the keys read back."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import tarfile
from pathlib import Path

import pytest

from tests.autoscaler.moto_fixtures import _moto_server, moto_url  # noqa: F401 - fixtures
from tests.provision.etcd_server import free_port, start_etcd, write_pki
from tests.provision.terraform.tf_files import MODULES
from tests.support import ROOT, aws_cli, require_tool

SCRIPT = MODULES / "control_plane/scripts/etcd.sh"
KEY = "arn:aws:kms:us-west-2:123456789012:key/0f1e2d3c-aaaa-bbbb-cccc-123456789012"

# Records every call and plays S3 with a directory: `s3 cp FILE s3://B/K` keeps the file and its metadata,
# `s3 cp s3://B/K FILE` gives it back, `s3api head-object` answers the recorded sha256.
FAKE_AWS = r"""#!/bin/bash
printf '%s\n' "$(printf '%q ' "$@")" >> "$FAKE_S3/calls"
if [[ $1 == s3 && $2 == cp ]]; then
  shift 2; args=(); meta=""
  while (($#)); do case $1 in --metadata) meta=$2; shift 2;; --sse|--sse-kms-key-id) shift 2;; --only-show-errors) shift;; *) args+=("$1"); shift;; esac; done
  src=${args[0]} dst=${args[1]}
  if [[ $dst == s3://* ]]; then mkdir -p "$FAKE_S3/$(dirname "${dst#s3://}")"; cp "$src" "$FAKE_S3/${dst#s3://}"; echo "$meta" > "$FAKE_S3/${dst#s3://}.meta"
  else cp "$FAKE_S3/${src#s3://}" "$dst"; fi
elif [[ $1 == s3api && $2 == head-object ]]; then
  sed -n 's/.*sha256=\([0-9a-f]*\).*/\1/p' "$FAKE_S3/$4/$6.meta"
fi
"""


@pytest.fixture
def pki(tmp_path):
    return write_pki(tmp_path / "pki")


@pytest.fixture
def source(tmp_path, pki):
    require_tool("etcdctl")
    e = start_etcd(tmp_path / "etcd-a", pki, "cp-0")
    yield e
    e.stop()


def _env(tmp_path: Path, etcd_endpoint: str, pki: Path, **extra) -> dict:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    (bin_dir / "aws").write_text(FAKE_AWS)
    (bin_dir / "aws").chmod(0o755)
    (tmp_path / "s3").mkdir(exist_ok=True)
    return {
        "PATH": f"{bin_dir}:{os.environ['PATH']}",
        "FAKE_S3": str(tmp_path / "s3"),
        "CLUSTER_ETCD_ENV": str(tmp_path / "none.env"),
        "CLUSTER": "dlr",
        "REGION": "us-west-2",
        "BUCKET": "dlr-etcd-backups-123456789012",
        "KMS_KEY_ARN": KEY,
        "PKI": str(pki),
        "ENDPOINT": etcd_endpoint,
        "DATA_DIR": str(tmp_path / "data"),
        "MANIFESTS": str(tmp_path / "manifests"),
        "WAIT_S": "30",
        **extra,
    }


def _run(env: dict, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", str(SCRIPT), *args], env=env, capture_output=True, text=True, timeout=120)


def test_the_script_is_shellcheck_clean():
    shellcheck = require_tool("shellcheck", str(ROOT / ".venv/bin/shellcheck"))
    result = subprocess.run([shellcheck, "-S", "style", str(SCRIPT)], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout


def test_backup_then_restore_into_a_new_data_directory_reads_the_keys_back(tmp_path, pki, source):
    keys = {f"/registry/namespaces/ns-{i}": f"value-{i}" for i in range(50)}
    keys["/registry/secrets/kube-system/bootstrap"] = "s3cr3t"
    for k, v in keys.items():
        source.ctl("put", k, v)
    (tmp_path / "data").mkdir()  # the member's data directory: the script snapshots into it
    env = _env(tmp_path, source.client_url, pki)

    backup = _run(env, "backup", "--any-member")
    assert backup.returncode == 0, backup.stderr
    url = backup.stdout.strip()
    assert url.startswith("s3://dlr-etcd-backups-123456789012/snapshots/") and url.endswith(".db")
    s3 = tmp_path / "s3"
    snapshot = s3 / url.removeprefix("s3://")
    calls = (s3 / "calls").read_text().splitlines()
    uploads = [shlex.split(c) for c in calls if c.startswith("s3 cp ")]
    assert len(uploads) == 2 and all(
        u[u.index("--sse") : u.index("--sse") + 2] == ["--sse", "aws:kms"] for u in uploads
    )
    assert all(u[u.index("--sse-kms-key-id") + 1] == KEY for u in uploads), "encrypted with the cluster key"
    meta = dict(kv.split("=") for kv in (Path(str(snapshot) + ".meta").read_text().strip().split(",")))
    assert len(meta["sha256"]) == 64 and int(meta["revision"]) >= len(keys)
    pki_tar = next((s3 / "dlr-etcd-backups-123456789012/pki").glob("*.tar.gz"))
    with tarfile.open(pki_tar) as t:
        assert set(t.getnames()) >= {"ca.key", "sa.key", "sa.pub", "etcd/ca.key", "front-proxy-ca.key"}
    record = next(shlex.split(c) for c in calls if c.startswith("ssm put-parameter"))
    assert record[record.index("--name") + 1] == "/dlr/etcd/last-backup"
    assert json.loads(record[record.index("--value") + 1])["key"] == url.split("/", 3)[3]
    assert any(c.startswith("cloudwatch put-metric-data --namespace dlr/etcd") for c in calls)
    assert not list((tmp_path / "data").iterdir()), "the snapshot file is removed after the upload"

    source.stop()  # the cluster is gone; the snapshot brings it back with a new member (name and peer URL)
    port = free_port()
    peer = f"https://127.0.0.1:{port}"
    restored = tmp_path / "etcd-b"
    local = tmp_path / "downloaded.db"
    local.write_bytes(snapshot.read_bytes())
    result = _run(
        env, "restore-data", str(local), str(restored), "cp-new", peer, f"cp-new={peer}", "dlr-restore-1"
    )
    assert result.returncode == 0, result.stderr
    again = start_etcd(restored, pki, "cp-new", peer_port=port, new_cluster=False)
    try:
        for k, v in keys.items():
            assert again.ctl("get", k, "--print-value-only").stdout.strip() == v
        members = again.ctl("member", "list", "-w", "json").stdout
        assert [m["name"] for m in json.loads(members)["members"]] == ["cp-new"]
    finally:
        again.stop()


def test_restore_swaps_the_data_directory_only_after_the_sha256_matches(tmp_path, pki, source):
    source.ctl("put", "/registry/pods/a", "1")
    (tmp_path / "data").mkdir()
    env = _env(tmp_path, source.client_url, pki)
    url = _run(env, "backup", "--any-member").stdout.strip()
    manifests = tmp_path / "manifests.restore"  # what `stop` leaves: the static pods moved out of the way
    manifests.mkdir()
    port = free_port()
    (manifests / "etcd.yaml").write_text(
        "spec:\n  containers:\n  - command:\n    - etcd\n    - --name=cp-1\n"
        f"    - --initial-advertise-peer-urls=https://127.0.0.1:{port}\n    image: registry.k8s.io/etcd:3.6.5-0\n"
    )
    (tmp_path / "manifests").mkdir()
    (tmp_path / "data" / "old-marker").write_text("the data before")

    bad = _run({**env, "SNAPSHOT_SHA256": "0" * 64}, "restore", str(tmp_path / "s3" / url.removeprefix("s3://")),
               f"cp-1=https://127.0.0.1:{port}", "t1")  # fmt: skip
    assert bad.returncode == 1 and "not restoring" in bad.stderr
    assert (tmp_path / "data" / "old-marker").exists(), "nothing swapped on a bad snapshot"

    good = _run(env, "restore", url, f"cp-1=https://127.0.0.1:{port}", "t1")
    assert good.returncode == 0, good.stderr
    kept = list(tmp_path.glob("data.before-*"))
    assert len(kept) == 1 and (kept[0] / "old-marker").exists(), "the old data directory is kept beside"
    source.stop()
    again = start_etcd(tmp_path / "data", pki, "cp-1", peer_port=port, new_cluster=False)
    try:
        assert again.ctl("get", "/registry/pods/a", "--print-value-only").stdout.strip() == "1"
    finally:
        again.stop()


def test_the_user_data_installs_the_script_its_settings_and_the_timer(tmp_path):
    from tests.provision.terraform.test_control_plane_bootstrap import ETCD_BACKUP, SCENARIOS, _run, render

    script = render(1, tmp_path)
    case = next(c for c in SCENARIOS if c["name"].startswith("a joining member"))
    result, calls, _ = _run(script, case, tmp_path)
    assert result.returncode == 0, result.stderr
    root = tmp_path / "root"
    installed = root / "usr/local/sbin/cluster-etcd"
    assert installed.read_text().strip() == SCRIPT.read_text().strip() and os.access(installed, os.X_OK)
    env = (root / "etc/cluster-etcd.env").read_text()
    assert oct((root / "etc/cluster-etcd.env").stat().st_mode & 0o777) == "0o600"
    assert f"BUCKET='{ETCD_BACKUP['bucket']}'" in env and "KMS_KEY_ARN='arn:aws:kms:" in env
    timer = (root / "etc/systemd/system/cluster-etcd-backup.timer").read_text()
    assert "OnUnitActiveSec=6h" in timer
    assert (
        "ExecStart=/usr/local/sbin/cluster-etcd backup"
        in (root / "etc/systemd/system/cluster-etcd-backup.service").read_text()
    )
    assert "systemctl enable cluster-etcd-backup.timer" in calls


def test_invoke_etcd_backup_installs_what_the_user_data_installs(tmp_path):
    """Members made before the script existed get it from `invoke etcd-backup` (provision/operations/etcd.py):
    the same files as the user data writes (the same spec, bucket and key)."""
    from clusterspec.loader import load_spec
    from provision.operations.etcd import install_script
    from tests.provision.terraform.test_control_plane_bootstrap import ETCD_BACKUP, SCENARIOS, _run, render

    case = next(c for c in SCENARIOS if c["name"].startswith("a joining member"))
    user_data = tmp_path / "user-data"
    user_data.mkdir()
    assert _run(render(1, user_data), case, user_data)[0].returncode == 0
    kms = "arn:aws:kms:us-west-2:123456789012:key/abc"  # what render() passes
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "systemctl").write_text("#!/bin/sh\nexit 0\n")
    (bin_dir / "systemctl").chmod(0o755)
    root = tmp_path / "invoke-root"
    done = subprocess.run(["bash", "-c", install_script(load_spec(), ETCD_BACKUP["bucket"], kms)],
                          env={"PATH": f"{bin_dir}:/usr/bin:/bin", "CP_ROOT": str(root)}, capture_output=True,
                          text=True)  # fmt: skip
    assert done.returncode == 0, done.stderr
    for path in ("usr/local/sbin/cluster-etcd", "etc/systemd/system/cluster-etcd-backup.timer",
                 "etc/systemd/system/cluster-etcd-backup.service"):  # fmt: skip
        assert (root / path).read_text() == (user_data / "root" / path).read_text(), path
    env = dict(line.split("=", 1) for line in (root / "etc/cluster-etcd.env").read_text().splitlines())
    want = dict(
        line.split("=", 1) for line in (user_data / "root/etc/cluster-etcd.env").read_text().splitlines()
    )
    assert {k: v.strip("'") for k, v in env.items()} == {k: v.strip("'") for k, v in want.items()}


def test_ship_audit_uploads_the_rotated_audit_logs_encrypted_and_keeps_what_failed(tmp_path, moto_url):  # noqa: F811
    """Issue 36, the API audit log's shipping: `cluster-etcd ship-audit` (cluster-audit-ship.timer) with the real
    aws CLI against S3 and KMS in moto: each rotated file (kube-apiserver's audit-<time>.log) goes to
    s3://BUCKET/audit/<instance>/ gzipped under the cluster's KMS key and leaves the disk; the file being written
    stays; an upload that fails keeps its gzip for the next run, which ships it."""
    import gzip

    import boto3

    s3 = boto3.client("s3", endpoint_url=moto_url, region_name="us-west-2")
    key = boto3.client("kms", endpoint_url=moto_url, region_name="us-west-2").create_key()["KeyMetadata"][
        "Arn"
    ]
    bucket = "dlr-etcd-backups-123456789012"
    logs = tmp_path / "audit"
    logs.mkdir()
    (logs / "audit.log").write_text('{"kind":"Event","stage":"ResponseComplete"}\n')
    rotated = {f"audit-2026-12-07T0{h}-00-00.000.log": f'{{"kind":"Event","n":{h}}}\n' for h in (1, 2)}
    for name, text in rotated.items():
        (logs / name).write_text(text)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "aws").symlink_to(aws_cli())
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin", "HOME": str(tmp_path), "CLUSTER_ETCD_ENV": str(tmp_path / "none.env"),
           "CLUSTER": "dlr", "REGION": "us-west-2", "BUCKET": bucket, "KMS_KEY_ARN": key,
           "AUDIT_LOG_DIR": str(logs), "INSTANCE_ID": "i-0member", "AWS_ENDPOINT_URL": moto_url,
           "AWS_DEFAULT_REGION": "us-west-2", "AWS_MAX_ATTEMPTS": "1",
           **{k: os.environ[k] for k in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_EC2_METADATA_DISABLED")}}  # fmt: skip

    done = _run(env, "ship-audit")  # no bucket yet: the upload fails, the gzip stays
    assert sorted(p.name for p in logs.iterdir()) == sorted(["audit.log", *(f"{n}.gz" for n in rotated)])
    assert "NoSuchBucket" in done.stderr

    s3.create_bucket(Bucket=bucket, CreateBucketConfiguration={"LocationConstraint": "us-west-2"})
    done = _run(env, "ship-audit")
    assert done.returncode == 0, done.stderr
    assert [p.name for p in logs.iterdir()] == ["audit.log"]  # the file being written stays
    for name, text in rotated.items():
        got = s3.get_object(Bucket=bucket, Key=f"audit/i-0member/{name}.gz")
        assert (got["ServerSideEncryption"], got["SSEKMSKeyId"]) == ("aws:kms", key)
        assert gzip.decompress(got["Body"].read()).decode() == text
