"""`invoke etcd-backup`, `invoke etcd-restore` and `invoke etcd-verify` (docs/operations.md, "etcd").

The members' script (terraform/modules/control_plane/scripts/etcd.sh, installed as /usr/local/sbin/cluster-etcd)
does the work on each member; this module runs it through SSM Run Command, in the order etcd's disaster recovery
needs ("Restoring a cluster", etcd.io v3.5 op-guide/recovery): every member stops, every member restores the same
snapshot with its own name and peer URL and the whole new membership, every member starts (at once: each waits
for a quorum). ``verify`` restores a snapshot on this machine with a real etcd on loopback and counts what is in it.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import boto3
from botocore.exceptions import BotoCoreError, ClientError

from clusterspec.errors import UserError
from clusterspec.spec import Cluster
from provision import checkout
from provision.operations.ssm import Member, Result
from provision.terraform.settings import DEFAULT_OUT, MODULES

SCRIPT = MODULES / "control_plane" / "scripts" / "etcd.sh"
Say = Callable[[str], None]


def bucket_name(cluster: Cluster, outputs: Path = DEFAULT_OUT, session: boto3.Session | None = None) -> str:
    """The snapshots' bucket: the primary region's Terraform output, else its name by convention."""
    path = outputs / cluster.primary_region / "outputs.json"
    if path.exists():
        value = (json.loads(path.read_text()).get("etcd_backup_bucket") or {}).get("value")
        if value:
            return value
    session = session or boto3.Session(region_name=cluster.primary_region)
    try:
        account = session.client("sts", region_name=cluster.primary_region).get_caller_identity()["Account"]
    except (BotoCoreError, ClientError) as e:
        raise UserError(
            f"cannot tell the etcd snapshots' bucket: no {path} and no AWS identity ({e})"
        ) from None
    return f"{cluster.name}-etcd-backups-{account}"


def cluster_key(cluster: Cluster, session: boto3.Session | None = None) -> str:
    """The primary region's cluster key (alias/<cluster>, terraform/modules/kms)."""
    session = session or boto3.Session(region_name=cluster.primary_region)
    try:
        kms = session.client("kms", region_name=cluster.primary_region)
        return kms.describe_key(KeyId=f"alias/{cluster.name}")["KeyMetadata"]["Arn"]
    except (BotoCoreError, ClientError) as e:
        raise UserError(
            f"cannot read alias/{cluster.name} in {cluster.primary_region}: {e}".splitlines()[0]
        ) from None


def install_script(cluster: Cluster, bucket: str, kms_key_arn: str) -> str:
    """What the user data installs (templates/control_plane.sh.tftpl, install_etcd_backup), for members that
    predate it or run an older script: the script, its settings and the timer. Idempotent."""
    every = cluster.operations.backups.etcd_every_h
    env = "\n".join(f"{k}={shlex.quote(v)}" for k, v in {
        "CLUSTER": cluster.name, "REGION": cluster.primary_region, "BUCKET": bucket, "KMS_KEY_ARN": kms_key_arn,
        "STATUS_PARAMETER": f"/{cluster.name}/etcd/last-backup", "METRIC_NAMESPACE": f"{cluster.name}/etcd",
    }.items())  # fmt: skip
    return f"""set -euo pipefail
root=${{CP_ROOT:-}}
install -D -m 0700 /dev/stdin "$root/usr/local/sbin/cluster-etcd" <<'CLUSTER_ETCD_SCRIPT'
{checkout.require(SCRIPT).read_text()}
CLUSTER_ETCD_SCRIPT
install -D -m 0600 /dev/stdin "$root/etc/cluster-etcd.env" <<'CLUSTER_ETCD_ENV'
{env}
CLUSTER_ETCD_ENV
install -D -m 0644 /dev/stdin "$root/etc/systemd/system/cluster-etcd-backup.service" <<'UNIT'
[Unit]
Description=etcd snapshot to S3 (the etcd leader takes it)
After=kubelet.service
[Service]
Type=oneshot
Environment=AWS_DEFAULT_REGION={cluster.primary_region}
ExecStart=/usr/local/sbin/cluster-etcd backup
UNIT
install -D -m 0644 /dev/stdin "$root/etc/systemd/system/cluster-etcd-backup.timer" <<'UNIT'
[Unit]
Description=etcd snapshots every {every} h
[Timer]
OnBootSec=20min
OnUnitActiveSec={every}h
RandomizedDelaySec=2min
[Install]
WantedBy=timers.target
UNIT
systemctl daemon-reload
systemctl enable cluster-etcd-backup.timer
systemctl start cluster-etcd-backup.timer
"""


def _failed(what: str, results: dict[str, Result], members: list[Member], hint: str) -> UserError:
    names = {m.instance_id: f"member {m.index} ({m.instance_id})" for m in members}
    lines = [f"{what} failed on {names.get(r.instance_id, r.instance_id)}: {r.status}, exit {r.code}: "
             f"{(r.stderr.strip().splitlines() or [''])[-1]}" for r in results.values() if not r.ok]  # fmt: skip
    return UserError([*lines, hint])


def backup(cluster: Cluster, runner, members: list[Member], bucket: str, kms_key_arn: str) -> str:
    """Install or update the script on every member, then snapshot: the etcd leader uploads; its URL."""
    ids = [m.instance_id for m in members]
    script = install_script(cluster, bucket, kms_key_arn) + "/usr/local/sbin/cluster-etcd backup\n"
    results = runner.run(ids, script, 900, "etcd snapshot (invoke etcd-backup)")
    if not all(r.ok for r in results.values()):
        raise _failed(
            "the snapshot", results, members, "nothing was uploaded by those members; see their output"
        )
    urls = [line for r in results.values() for line in r.stdout.splitlines() if line.startswith("s3://")]
    if len(urls) != 1:
        raise UserError(
            f"expected one snapshot from the etcd leader, got {len(urls)}: {', '.join(urls) or 'none'}"
        )
    return urls[0]


@dataclass(frozen=True)
class Snapshot:
    key: str
    size: int
    time: datetime


def list_snapshots(cluster: Cluster, bucket: str, session: boto3.Session | None = None) -> list[Snapshot]:
    """The bucket's snapshots, newest first."""
    session = session or boto3.Session(region_name=cluster.primary_region)
    s3 = session.client("s3", region_name=cluster.primary_region)
    try:
        pages = s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix="snapshots/")
        found = [
            Snapshot(o["Key"], o["Size"], o["LastModified"]) for p in pages for o in p.get("Contents", [])
        ]
    except (BotoCoreError, ClientError) as e:
        raise UserError(f"cannot list s3://{bucket}/snapshots/: {e}".splitlines()[0]) from None
    return sorted(found, key=lambda s: s.time, reverse=True)


def restore_plan(cluster: Cluster, members: list[Member], bucket: str, key: str) -> list[str]:
    expected = cluster.kubernetes.control_plane.count
    lines = [
        f"restore s3://{bucket}/{key} into the etcd of {len(members)} running control-plane member(s) of "
        f"{cluster.name}: " + ", ".join(f"{m.index} ({m.instance_id}, {m.private_ip})" for m in members),
        "every member: stop etcd and kube-apiserver, restore the snapshot into a new data directory (the old one "
        "is kept beside it), start; the cluster's state goes back to the snapshot's time",
    ]
    if len(members) < expected:
        lines.append(
            f"only {len(members)} of {expected} members run: the restored cluster has {len(members)}; replace the "
            'others afterwards (`invoke up`): they join it (docs/operations.md, "etcd")'
        )
    return lines


def restore(cluster: Cluster, runner, members: list[Member], bucket: str, key: str, kms_key_arn: str,
            say: Say = print) -> None:  # fmt: skip
    ids = [m.instance_id for m in members]
    say(f"installing the etcd script on {len(ids)} member(s), then stopping etcd and kube-apiserver")
    script = install_script(cluster, bucket, kms_key_arn) + "/usr/local/sbin/cluster-etcd stop\n"
    stopped = runner.run(ids, script, 600, "etcd restore: stop")
    if not all(r.ok for r in stopped.values()):
        raise _failed("stop", stopped, members, "nothing was restored; `invoke etcd-restore --start` puts the "
                      "static pods back on every member")  # fmt: skip
    flags = {}
    for iid, r in stopped.items():
        found = dict(re.findall(r"^(name|peer)=(\S+)$", r.stdout, re.M))
        if set(found) != {"name", "peer"}:
            raise UserError(f"{iid}: `cluster-etcd stop` did not print the member's name and peer URL; nothing was "
                            "restored; `invoke etcd-restore --start` puts the static pods back")  # fmt: skip
        flags[iid] = found
    initial = ",".join(sorted(f"{f['name']}={f['peer']}" for f in flags.values()))
    token = f"{cluster.name}-restore-{datetime.now(UTC):%Y%m%dT%H%M%SZ}"
    say(f"restoring on every member: --initial-cluster {initial} --initial-cluster-token {token}")
    restored = runner.run(ids, f"/usr/local/sbin/cluster-etcd restore {shlex.quote(f's3://{bucket}/{key}')} "
                               f"{shlex.quote(initial)} {shlex.quote(token)}", 1800, "etcd restore: restore")  # fmt: skip
    if not all(r.ok for r in restored.values()):
        raise _failed("restore", restored, members, "etcd stays stopped; members that restored kept their previous "
                      "data as /var/lib/etcd.before-<time>: fix the cause and run the restore again "
                      "(docs/operations.md, \"etcd\")")  # fmt: skip
    say("starting etcd and kube-apiserver on every member at once (each waits for a quorum)")
    started = runner.run(ids, "/usr/local/sbin/cluster-etcd start", 900, "etcd restore: start")
    if not all(r.ok for r in started.values()):
        raise _failed("start", started, members, "see the member's `crictl logs` of etcd; the data before the "
                      "restore is /var/lib/etcd.before-<time>")  # fmt: skip
    say(f"restored: etcd answers on every member, at the state of {key}")


def start(runner, members: list[Member]) -> None:
    started = runner.run(
        [m.instance_id for m in members], "/usr/local/sbin/cluster-etcd start", 900, "etcd: start"
    )
    if not all(r.ok for r in started.values()):
        raise _failed("start", started, members, "see the member's kubelet and etcd logs")


# --- verify: a snapshot restored on this machine ---------------------------------------------------------------
@dataclass
class Verified:
    revision: int
    keys: int
    by_resource: Counter


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _tool(name: str) -> str:
    path = shutil.which(name)
    if not path:
        raise UserError(f"{name} is not installed: apt-get install etcd-server etcd-client (`make tools`)")
    return path


def fetch(source: str, folder: Path, cluster: Cluster, session: boto3.Session | None = None) -> Path:
    """A local copy of a snapshot: a file as it is, s3://bucket/key downloaded (its sha256 checked)."""
    if not source.startswith("s3://"):
        path = Path(source)
        if not path.is_file():
            raise UserError(f"{source}: no such snapshot file")
        return path
    bucket, _, key = source.removeprefix("s3://").partition("/")
    session = session or boto3.Session(region_name=cluster.primary_region)
    s3 = session.client("s3", region_name=cluster.primary_region)
    path = folder / Path(key).name
    try:
        s3.download_file(bucket, key, str(path))
        want = s3.head_object(Bucket=bucket, Key=key).get("Metadata", {}).get("sha256")
    except (BotoCoreError, ClientError) as e:
        raise UserError(f"cannot download {source}: {e}".splitlines()[0]) from None
    import hashlib

    got = hashlib.sha256(path.read_bytes()).hexdigest()
    if want and want != got:
        raise UserError(f"{source}: sha256 {got}, but the snapshot was recorded as {want}")
    return path


def verify(snapshot: Path, say: Say = print, timeout_s: float = 60) -> Verified:
    """Restore ``snapshot`` with the members' own script into a temporary data directory, start a real etcd on
    loopback on it, and count its keys (by Kubernetes resource: /registry/<resource>/...)."""
    etcd, etcdctl = _tool("etcd"), _tool("etcdctl")
    with tempfile.TemporaryDirectory(prefix="etcd-verify-") as tmp:
        data = Path(tmp) / "data"
        peer = f"http://127.0.0.1:{_free_port()}"
        client = f"http://127.0.0.1:{_free_port()}"
        env = {**os.environ, "CLUSTER": "verify", "REGION": "none", "CLUSTER_ETCD_ENV": "/nonexistent"}
        done = subprocess.run(["bash", str(checkout.require(SCRIPT)), "restore-data", str(snapshot), str(data),
                               "verify", peer, f"verify={peer}", "verify"], env=env, capture_output=True,
                              text=True, timeout=300)  # fmt: skip
        if done.returncode != 0:
            raise UserError(
                f"{snapshot}: the restore failed: {(done.stderr.strip().splitlines() or [''])[-1]}"
            )
        say(f"restored {snapshot} into {data}")
        log = open(Path(tmp) / "etcd.log", "wb")  # noqa: SIM115 - the process writes it until stopped
        proc = subprocess.Popen([etcd, "--name=verify", f"--data-dir={data}", f"--listen-client-urls={client}",
                                 f"--advertise-client-urls={client}", f"--listen-peer-urls={peer}",
                                 f"--initial-advertise-peer-urls={peer}", f"--initial-cluster=verify={peer}"],
                                stdout=log, stderr=log, stdin=subprocess.DEVNULL)  # fmt: skip
        ctl = [etcdctl, f"--endpoints={client}"]
        try:
            deadline = time.monotonic() + timeout_s
            while subprocess.run(
                [*ctl, "endpoint", "health"], capture_output=True, env={"ETCDCTL_API": "3"}
            ).returncode:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise UserError(f"{snapshot}: etcd did not start on the restored data; see {log.name}")
                time.sleep(0.2)
            say(f"etcd serves the restored data on {client}")
            status = json.loads(subprocess.run([*ctl, "endpoint", "status", "-w", "json"], capture_output=True,
                                               text=True, env={"ETCDCTL_API": "3"}, check=True).stdout)  # fmt: skip
            keys = subprocess.run([*ctl, "get", "", "--prefix", "--keys-only"], capture_output=True, text=True,
                                  env={"ETCDCTL_API": "3"}, check=True).stdout.split()  # fmt: skip
        finally:
            proc.terminate()
            proc.wait(10)
            log.close()
    by = Counter(
        k.split("/")[2] if k.startswith("/registry/") and k.count("/") >= 2 else "(other)" for k in keys
    )
    return Verified(int(status[0]["Status"]["header"]["revision"]), len(keys), by)
