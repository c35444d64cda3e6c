"""The control-plane bootstrap as Terraform renders it, run with bash against fakes: ordering, retries with
back-off, removal of dead etcd members and the status a task reads (scenarios in
data/control_plane_scenarios.yaml, each naming the kubeadm/etcd rule it follows)."""

import base64
import gzip
import json
import os
import re
import shutil
import subprocess
import time

import pytest
import yaml

from clusterspec.loader import load_spec
from provision import flannel, scheduler
from provision.terraform.hcl import inline
from tests.provision.terraform.tf_files import MODULES
from tests.support import ROOT, load_yaml, require_tool

HERE = ROOT / "tests/provision/terraform"
SCENARIOS = load_yaml(HERE / "data/control_plane_scenarios.yaml")
FAKE = HERE / "fakes/control_plane_fake.sh"
COMMANDS = ["kubeadm", "aws", "curl", "getent", "sleep", "systemctl", "kubectl", "sysctl"]
USER_DATA_LIMIT = 16 * 1024  # EC2 user data, before base64 (the module sends it gzipped: base64gzip)
ISSUER = "https://dlr-oidc-0123.s3.us-west-2.amazonaws.com"  # global output service_account_issuer_url
TARGET_GROUP = "arn:aws:elasticloadbalancing:us-west-2:123456789012:targetgroup/dlr-api/0123456789abcdef"
SCHEDULER = scheduler.control_plane_files()  # what the region root passes (provision/terraform/context.py)
ETCD_BACKUP = {  # ../etcd_backup's outputs, as the primary region's root passes them (issue 29)
    "bucket": "dlr-etcd-backups-123456789012",
    "every_h": 6,
    "status_parameter": "/dlr/etcd/last-backup",
    "metric_namespace": "dlr/etcd",
}


# the module's own pattern for the scripts' comment lines (main.tf local.comment_lines), as HCL
COMMENTS = re.search(
    r'^\s*comment_lines\s*=\s*(".*")$', (MODULES / "control_plane/main.tf").read_text(), re.M
)[1]


def render(member: int, cwd) -> str:
    terraform = require_tool("terraform")
    values = {
        "cluster": "dlr",
        "index": member,
        "region": "us-west-2",
        "endpoint": "api.research.internal:6443",
        "api_host": "api.research.internal",
        "lb_dns_name": "dlr-api-0123.elb.us-west-2.amazonaws.com",
        "kubernetes_version": "1.35.0",
        "pod_cidr": "10.128.0.0/14",
        "service_cidr": "10.96.0.0/16",
        "join_prefix": "/dlr/kubeadm",
        "status_prefix": "/dlr/control-plane/status",
        "init_parameter": "/dlr/control-plane/init",
        "kms_key_arn": "arn:aws:kms:us-west-2:123456789012:key/abc",
        "flannel_manifest": flannel.manifest(load_spec()),  # kept in the repository (issue 26)
        "scheduler_config": SCHEDULER["config"],
        "scheduler_file": SCHEDULER["config_file"],
        "scheduler_kubeadm": SCHEDULER["kubeadm"],
        "service_account_issuer": ISSUER,
        "etcd_backup": ETCD_BACKUP,
        "target_group_arn": TARGET_GROUP,
    }
    template = inline(str(MODULES / "control_plane/templates/control_plane.sh.tftpl"))
    bootstrap = inline(str(MODULES / "control_plane/scripts/bootstrap.sh"))
    etcd = inline(str(MODULES / "control_plane/scripts/etcd.sh"))
    expression = (
        f"jsonencode(templatefile({template}, merge({inline(values)}, "
        f'{{bootstrap = replace(file({bootstrap}), {COMMENTS}, ""), '
        f"etcd_script = file({etcd})}})))"
    )
    result = subprocess.run(
        [terraform, "console"], input=expression, cwd=cwd, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    return json.loads(json.loads(result.stdout))


@pytest.fixture(scope="module")
def scripts(tmp_path_factory):
    cwd = tmp_path_factory.mktemp("render")
    return {m: render(m, cwd) for m in (0, 1, 2)}


def test_rendered_script_is_shellcheck_clean_and_fits_in_user_data(scripts, tmp_path):
    shellcheck = require_tool("shellcheck", str(ROOT / ".venv/bin/shellcheck"))
    path = tmp_path / "user-data.sh"
    path.write_text(scripts[0])
    assert len(gzip.compress(scripts[0].encode())) < USER_DATA_LIMIT
    result = subprocess.run([shellcheck, "-S", "warning", str(path)], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout
    assert "MEMBER='0'" in scripts[0] and "MEMBER='2'" in scripts[2]


def _in_order(calls: list[str], expected: list[str]) -> None:
    i = 0
    for want in expected:
        while i < len(calls) and want not in calls[i]:
            i += 1
        assert i < len(calls), f"no call containing {want!r} after the earlier ones; calls:\n" + "\n".join(
            calls
        )
        i += 1


def _run(script: str, case: dict, tmp_path):
    fakes = tmp_path / "bin"
    fakes.mkdir()
    for name in COMMANDS:
        (fakes / name).symlink_to(FAKE)
    state = tmp_path / "state"
    (state / "ssm").mkdir(parents=True)
    for name, value in case.get("ssm", {}).items():
        value = str(value).replace("{now}", str(int(time.time())))  # a join request written just now
        (state / "ssm" / name.replace("/", "_")).write_text(value + "\n")
    path = tmp_path / "user-data.sh"
    path.write_text(script)
    env = {
        "PATH": f"{fakes}:/usr/bin:/bin",
        "FAKE_STATE": str(state),
        "CP_ROOT": str(tmp_path / "root"),
        "CP_WAIT_S": "60",
        "CP_ATTEMPTS": "3",
        "HOME": str(tmp_path),
    } | {k: str(v) for k, v in case.get("env", {}).items()}
    result = subprocess.run(
        [shutil.which("bash") or "/bin/bash", str(path), *case.get("args", [])],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    calls = (state / "calls").read_text().splitlines()
    return result, calls, state


@pytest.mark.parametrize("case", SCENARIOS, ids=[c["name"] for c in SCENARIOS])
def test_bootstrap_scenario(case, scripts, tmp_path):
    result, calls, state = _run(scripts[case["member"]], case, tmp_path)
    assert result.returncode == case["exit"], result.stderr
    _in_order(calls, case.get("order", []))
    for want, n in case.get("count", {}).items():
        assert sum(want in c for c in calls) == n, (want, calls)
    for never in case.get("absent", []):
        assert not [c for c in calls if never in c], never
    if "state" in case:  # the bootstrap reports; the timers' commands (args) do not
        status = json.loads(
            (state / "ssm" / f"_dlr_control-plane_status_member-{case['member']}").read_text()
        )
        assert status["state"] == case["state"] and status["member"] == case["member"]
        assert status["instance"] == "i-0self" and status["ip"] == case["env"]["FAKE_SELF_IP"]
        assert case.get("message", "") in status["message"]
    for name, value in case.get("ssm_after", {}).items():
        assert (state / "ssm" / name.replace("/", "_")).read_text().startswith(value)
    for name in case.get("ssm_gone", []):
        assert not (state / "ssm" / name.replace("/", "_")).exists(), name
    for text in case.get("flannel", []):
        assert text in (state / "kubectl-stdin").read_text()
    if case["exit"] != 0:
        assert "FAILED" in result.stderr or "failed:" in result.stderr


def test_configs_with_secrets_are_private_and_removed(scripts, tmp_path):
    case = next(c for c in SCENARIOS if c["name"].startswith("a joining member"))
    result, _, _ = _run(scripts[2], case, tmp_path)
    assert result.returncode == 0
    conf = tmp_path / "root/etc/kubernetes/bootstrap"
    assert oct(conf.stat().st_mode & 0o777) == "0o700"
    assert not (conf / "join.yaml").exists()
    unit = (tmp_path / "root/etc/systemd/system/publish-join-token.service").read_text()
    assert "ExecStart=/usr/local/sbin/cluster-control-plane publish" in unit
    assert os.access(tmp_path / "root/usr/local/sbin/cluster-control-plane", os.X_OK)


def test_init_config_is_kubeadm_v1beta4(scripts, tmp_path):
    case = dict(SCENARIOS[0], env=dict(SCENARIOS[0]["env"], FAKE_INIT_FAILS=99))
    result, _, _ = _run(scripts[0], case, tmp_path)
    assert result.returncode == 1  # the config stays for inspection when init fails
    docs = list(yaml.safe_load_all((tmp_path / "root/etc/kubernetes/bootstrap/init.yaml").read_text()))
    assert [(d["apiVersion"], d["kind"]) for d in docs] == [
        ("kubeadm.k8s.io/v1beta4", "InitConfiguration"),
        ("kubeadm.k8s.io/v1beta4", "ClusterConfiguration"),
    ]
    cluster = docs[1]
    assert cluster["controlPlaneEndpoint"] == "api.research.internal:6443"
    assert cluster["kubernetesVersion"] == "v1.35.0"
    assert cluster["networking"] == {"podSubnet": "10.128.0.0/14", "serviceSubnet": "10.96.0.0/16"}
    assert (
        "certificateKey" not in docs[0]
    )  # issue 26: no certificates uploaded at init (serve_joins does, per join)
    # IRSA: tokens carry the S3-published issuer first (kube-apiserver signs with the first), the old one still
    # accepted; the JWKS is where `invoke publish-oidc` writes it.
    assert cluster["apiServer"]["extraArgs"][:3] == [
        {"name": "service-account-issuer", "value": ISSUER},
        {"name": "service-account-issuer", "value": "https://kubernetes.default.svc.cluster.local"},
        {"name": "service-account-jwks-uri", "value": f"{ISSUER}/keys.json"},
    ]
    # The deployed scheduler profile: kube-scheduler loads the file every member wrote (docs/scheduler.md).
    assert cluster["scheduler"] == scheduler.kubeadm_scheduler_patch()["scheduler"]
    written = (tmp_path / "root" / SCHEDULER["config_file"].lstrip("/")).read_text()
    assert yaml.safe_load(written) == scheduler.control_plane_config()


def test_joining_members_write_the_same_scheduler_profile(scripts, tmp_path):
    """kubeadm join --control-plane takes the ClusterConfiguration (the --config flag and the volume) from the
    cluster's kubeadm-config ConfigMap, so every member must hold the file it names."""
    case = next(c for c in SCENARIOS if c["name"].startswith("a joining member"))
    result, _, _ = _run(scripts[2], case, tmp_path)
    assert result.returncode == 0, result.stderr
    written = (tmp_path / "root" / SCHEDULER["config_file"].lstrip("/")).read_text()
    assert yaml.safe_load(written) == scheduler.control_plane_config()


def test_etcd_encryption_at_rest_and_the_audit_log(scripts, tmp_path):
    """Issue 36: kube-apiserver encrypts Secrets in etcd with a key made on the instance at init (stored in SSM for
    the joiners, never in the rendered user data), and writes an audit log by a policy, both files mounted into its
    static pod through kubeadm's ClusterConfiguration."""
    case = dict(SCENARIOS[0], env=dict(SCENARIOS[0]["env"], FAKE_INIT_FAILS=99))
    _, _, state = _run(scripts[0], case, tmp_path)
    root = tmp_path / "root"
    cluster = list(yaml.safe_load_all((root / "etc/kubernetes/bootstrap/init.yaml").read_text()))[1]
    args = {a["name"]: a["value"] for a in cluster["apiServer"]["extraArgs"]}
    assert args["encryption-provider-config"] == "/etc/kubernetes/encryption/config.yaml"
    assert args["audit-policy-file"] == "/etc/kubernetes/audit/policy.yaml"
    assert args["audit-log-path"] == "/var/log/kubernetes/audit/audit.log"
    mounts = {v["name"]: v for v in cluster["apiServer"]["extraVolumes"]}
    assert (
        mounts["encryption"]["hostPath"] == "/etc/kubernetes/encryption" and mounts["encryption"]["readOnly"]
    )
    assert mounts["audit-policy"]["mountPath"] == "/etc/kubernetes/audit"
    config_path = root / "etc/kubernetes/encryption/config.yaml"
    assert oct(config_path.stat().st_mode & 0o777) == "0o600"
    config = yaml.safe_load(config_path.read_text())
    assert config["kind"] == "EncryptionConfiguration"
    provider = config["resources"][0]["providers"][0]["secretbox"]["keys"][0]["secret"]
    assert len(base64.b64decode(provider)) == 32  # secretbox's 32-byte key
    assert config["resources"][0]["providers"][-1] == {
        "identity": {}
    }  # what was written before stays readable
    stored = (state / "ssm" / "_dlr_kubeadm_encryption-key").read_text().strip()
    assert stored == provider and provider not in scripts[0] and provider not in scripts[1]
    policy = yaml.safe_load((root / "etc/kubernetes/audit/policy.yaml").read_text())
    assert policy["kind"] == "Policy" and policy["rules"][-1] == {"level": "Metadata"}
    secrets_rule = next(r for r in policy["rules"] if any("secrets" in g.get("resources", [])
                                                          for g in r.get("resources", [])))  # fmt: skip
    assert secrets_rule["level"] == "Metadata"  # never a Secret's body in the log


def test_a_joining_member_reads_the_encryption_key_from_ssm(scripts, tmp_path):
    case = next(c for c in SCENARIOS if c["name"].startswith("a joining member"))
    case = dict(
        case, ssm=dict(case.get("ssm", {}), **{"/dlr/kubeadm/encryption-key": "a2V5" * 10 + "a2V5a2U="})
    )
    result, _, _ = _run(scripts[2], case, tmp_path)
    assert result.returncode == 0, result.stderr
    config = yaml.safe_load((tmp_path / "root/etc/kubernetes/encryption/config.yaml").read_text())
    assert (
        config["resources"][0]["providers"][0]["secretbox"]["keys"][0]["secret"] == "a2V5" * 10 + "a2V5a2U="
    )


def test_a_joining_member_publishes_its_kubelets_key_before_kubeadm_join(scripts, tmp_path):
    """Node identity (issue 36): a joining member's kubelet also bootstraps with the join token, so the member
    publishes its kubelet key's hash as node-keys/<its aws:userid> (the approver on a joined member checks it)."""
    import hashlib

    from cryptography.hazmat.primitives import serialization

    case = next(c for c in SCENARIOS if c["name"].startswith("a joining member"))
    result, _, _ = _run(scripts[2], case, tmp_path)
    assert result.returncode == 0, result.stderr
    pem = (tmp_path / "root/var/lib/kubelet/pki/kubelet-client.key.tmp").read_bytes()
    spki = (
        serialization.load_pem_private_key(pem, None)
        .public_key()
        .public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
    )
    published = tmp_path / "state/s3/AROAEXAMPLECONTROL001:i-0member"
    assert published.read_text().strip() == hashlib.sha256(spki).hexdigest()
    calls = (tmp_path / "state/calls").read_text().splitlines()
    put = max(i for i, c in enumerate(calls) if c.startswith("aws s3 cp"))
    assert "s3://dlr-etcd-backups-123456789012/node-keys/AROAEXAMPLECONTROL001:i-0member" in calls[put]
    join = max(i for i, c in enumerate(calls) if c.startswith("kubeadm join") and "phase" not in c)
    assert put < join
