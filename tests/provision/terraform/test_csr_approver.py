"""Node identity (issue 36): the control plane's `approve-csrs`, bootstrap.sh verbatim, run with the real kubectl
against the local stack's kube-apiserver and the real aws CLI against EC2 in moto: kubelet client requests made by a
join token's identity (impersonated: the API server records the requester as it would a token's), cases in
data/csr_approver_cases.yaml; and kubeadm's blanket auto-approval binding deleted on every run."""

from __future__ import annotations

import base64
import datetime as dt
import ipaddress
import json
import os
import random
import re
import subprocess
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from tests.autoscaler.moto_fixtures import _moto_server, moto_url  # noqa: F401 - fixtures
from tests.provision.terraform.tf_files import MODULES
from tests.support import ROOT, aws_cli, load_yaml

HERE = ROOT / "tests/provision/terraform"
CASES = load_yaml(HERE / "data/csr_approver_cases.yaml")
BOOTSTRAP = MODULES / "control_plane/scripts/bootstrap.sh"
KEY = ec.generate_private_key(ec.SECP256R1())
KUBELET_USAGES = ["digital signature", "client auth"]
ACCOUNT = "123456789012"  # moto's


def _request(cn: str, o: str, sans: list[str], key=KEY) -> str:
    name = x509.Name([x509.NameAttribute(NameOID.ORGANIZATION_NAME, o),
                      x509.NameAttribute(NameOID.COMMON_NAME, f"system:node:{cn}")])  # fmt: skip
    builder = x509.CertificateSigningRequestBuilder().subject_name(name)
    if sans:
        alt = [x509.DNSName(s[4:]) if s.startswith("DNS:") else x509.IPAddress(ipaddress.ip_address(s[3:]))
               for s in sans]  # fmt: skip
        builder = builder.add_extension(x509.SubjectAlternativeName(alt), critical=False)
    pem = builder.sign(key, hashes.SHA256()).public_bytes(serialization.Encoding.PEM)
    return base64.b64encode(pem).decode()


def _launch(url: str, region: str, launched_s_ago: int) -> dict:
    import boto3
    from moto.ec2.models import ec2_backends

    ec2 = boto3.client("ec2", endpoint_url=url, region_name=region)
    image = ec2.describe_images()["Images"][0]["ImageId"]
    got = ec2.run_instances(ImageId=image, MinCount=1, MaxCount=1, InstanceType="m5.large")["Instances"][0]
    # an instance launched earlier (or later) than now: EC2's LaunchTime, as DescribeInstances will return it
    instance = ec2_backends[ACCOUNT][region].get_instance(got["InstanceId"])
    instance.launch_time = instance.launch_time - dt.timedelta(seconds=launched_s_ago)
    return {"name": got["PrivateDnsName"], "id": got["InstanceId"], "ip": got["PrivateIpAddress"],
            "zone": got["Placement"]["AvailabilityZone"]}  # fmt: skip


def _publish_key(url: str, tmp: Path, role: dict, instance_id: str, bucket: str):
    """What an instance does before kubeadm join (bootstrap.sh publish_kubelet_key, the node_join script's twin):
    make the kubelet's key and put its hash at node-keys/<aws:userid>, as a session of its role that EC2 names
    after the instance (STS in moto). Returns the private key the kubelet would load."""
    import boto3

    creds = boto3.client("sts", endpoint_url=url, region_name="us-west-2").assume_role(
        RoleArn=role["Arn"], RoleSessionName=instance_id
    )["Credentials"]
    root, bin_dir = tmp / instance_id, tmp / instance_id / "bin"
    bin_dir.mkdir(parents=True)
    (bin_dir / "aws").symlink_to(aws_cli())
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin", "HOME": str(tmp), "AWS_ENDPOINT_URL": url,
           "AWS_ACCESS_KEY_ID": creds["AccessKeyId"], "AWS_SECRET_ACCESS_KEY": creds["SecretAccessKey"],
           "AWS_SESSION_TOKEN": creds["SessionToken"], "AWS_EC2_METADATA_DISABLED": "true"}  # fmt: skip
    script = (f"set -euo pipefail\nMEMBER=0\nsource {BOOTSTRAP}\nREGION=us-west-2 NODE_KEYS_BUCKET={bucket}\n"
              f"publish_kubelet_key {root}\n")  # fmt: skip
    done = subprocess.run(["bash", "-c", script], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    pem = (root / "var/lib/kubelet/pki/kubelet-client.key.tmp").read_bytes()
    return serialization.load_pem_private_key(pem, None)


class Case:
    """One case's world: instances in moto, lab servers, Nodes and requests in the API server, all named for this
    test alone (the API server is shared by the run)."""

    def __init__(self, kube, url: str, tmp_path: Path, case: dict):
        self.kube, self.url, self.tmp, self.case = kube, url, tmp_path, case
        self.names: dict[str, dict] = {}
        self.csrs: dict[str, str] = {}  # key -> CSR name
        self.nodes: list[str] = []
        self.ns = kube.namespace("csr")
        self.keys: dict[str, object] = {}  # instance KEY -> the private key its kubelet files requests with
        self.cluster = kube.unique("c")
        self.bucket = kube.unique("node-keys").lower()[:63]
        self.roles = self._roles_and_bucket()
        token_id = "".join(random.choices("abcdefghijklmnopqrstuvwxyz0123456789", k=6))
        group = f"system:bootstrappers:{kube.unique('t')}"
        self.binding = kube.unique("csr-test-bootstrap")
        binding = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
                   "metadata": {"name": self.binding},
                   "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                               "name": "system:node-bootstrapper"},
                   "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": group}]}  # fmt: skip
        kube.kubectl("create", "-f", "-", input=json.dumps(binding), check=True)
        self.token = [f"--as=system:bootstrap:{token_id}", "--as-group=system:bootstrappers", f"--as-group={group}",
                      "--as-group=system:authenticated"]  # fmt: skip
        for key, spec in (case.get("instances") or {}).items():
            spec = spec or {}
            self.names[key] = _launch(url, spec.get("region", "us-west-2"), spec.get("launched_s_ago", 0))
            publishes = spec.get("publishes", "node")
            if publishes:
                role = self.roles[publishes]
                self.keys[key] = _publish_key(url, tmp_path, role, self.names[key]["id"], self.bucket)
            if spec.get("node"):
                self._node(self.names[key]["name"])
            if spec.get("joined"):  # registered under another name, its providerID the instance's
                i = self.names[key]
                self._node(kube.unique("renamed"), f"aws:///{i['zone']}/{i['id']}")
        lab = {
            kube.unique(key): {"name": "", "ip": ip, "key": key}
            for key, ip in (case.get("lab") or {}).items()
        }
        for name, server in lab.items():
            self.names[server["key"]] = {"name": name, "ip": server["ip"], "id": "-"}
        if lab:
            cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "research-node-names", "namespace": self.ns},
                  "data": {"names": " ".join(lab)}}  # fmt: skip
            kube.kubectl("create", "-f", "-", input=json.dumps(cm), check=True)

    def _roles_and_bucket(self) -> dict:
        import boto3

        iam = boto3.client("iam", endpoint_url=self.url, region_name="us-east-1")
        trust = json.dumps({"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "sts:AssumeRole",
                            "Principal": {"Service": "ec2.amazonaws.com"}}]})  # fmt: skip
        roles = {
            kind: iam.create_role(
                RoleName=f"{self.cluster}-{kind.replace('_', '-')}", AssumeRolePolicyDocument=trust
            )["Role"]
            for kind in ("node", "control_plane")
        }
        s3 = boto3.client("s3", endpoint_url=self.url, region_name="us-west-2")
        s3.create_bucket(Bucket=self.bucket, CreateBucketConfiguration={"LocationConstraint": "us-west-2"})
        return roles

    def _node(self, name: str, provider_id: str | None = None) -> None:
        node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name},
                "spec": {"providerID": provider_id} if provider_id else {}}  # fmt: skip
        self.kube.kubectl("create", "-f", "-", input=json.dumps(node), check=True)
        self.nodes.append(name)

    def text(self, template: str) -> str:
        """``{a}``: the name of instance or lab server a; ``{a.id}``, ``{a.ip}``: its id and address."""

        def sub(m):
            got = self.names[m.group(1)]
            return got[m.group(2) or "name"]

        return re.sub(r"\{(\w+)(?:\.(id|ip))?\}", sub, template)

    def create(self, c: dict) -> None:
        target = self.names.get(c["for"], {"name": c["for"], "ip": ""})
        sans = [("DNS:" + target["name"]) if s == "DNS:self" else ("IP:" + target["ip"]) if s == "IP:self"
                else self.text(s) for s in c.get("sans", [])]  # fmt: skip
        name = self.kube.unique(f"csr-{c['key']}")
        body = {"apiVersion": "certificates.k8s.io/v1", "kind": "CertificateSigningRequest", "metadata": {"name": name},
                "spec": {"signerName": "kubernetes.io/kube-apiserver-client-kubelet",
                         "request": _request(target["name"], c.get("o", "system:nodes"), sans, self._key(c)),
                         "usages": c.get("usages", KUBELET_USAGES)}}  # fmt: skip
        who = self.token
        if c.get("username") == "node":  # the kubelet's own renewal, with the identity it has
            who = [
                f"--as=system:node:{target['name']}",
                "--as-group=system:nodes",
                "--as-group=system:authenticated",
            ]
        self.kube.kubectl(*who, "create", "-f", "-", input=json.dumps(body), check=True)
        self.csrs[c["key"]] = name

    def _key(self, c: dict):
        """The instance's own kubelet key, unless the request is a token holder's (signer: token) or no key of
        that instance exists (lab servers, names of no instance)."""
        if c.get("signer") == "token" or c["for"] not in self.keys:
            return ec.generate_private_key(ec.SECP256R1())
        return self.keys[c["for"]]

    def approve_csrs(self, run: str) -> subprocess.CompletedProcess:
        from localcluster import binaries

        bin_dir, etc = self.tmp / run / "bin", self.tmp / run / "root/etc/kubernetes"
        bin_dir.mkdir(parents=True)
        etc.mkdir(parents=True)
        (bin_dir / "kubectl").symlink_to(binaries.path("kubectl"))
        (bin_dir / "aws").symlink_to(aws_cli())
        (etc / "admin.conf").symlink_to(self.kube.admin_kubeconfig)
        url = "http://127.0.0.1:9" if self.case.get("ec2_fails") else self.url  # the discard port: refused
        env = {"PATH": f"{bin_dir}:/usr/bin:/bin", "CP_ROOT": str(self.tmp / run / "root"), "HOME": str(self.tmp / run),
               "AWS_ENDPOINT_URL": url, "AWS_MAX_ATTEMPTS": "1", "CP_NODE_NAMES_NAMESPACE": self.ns,
               "CLUSTER": self.cluster, "REGION": "us-west-2", "NODE_KEYS_BUCKET": self.bucket,
               **{k: os.environ[k] for k in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_EC2_METADATA_DISABLED")}}  # fmt: skip
        script = f"set -euo pipefail\nMEMBER=0\nsource {BOOTSTRAP}\napprove_csrs\n"
        return subprocess.run(["bash", "-c", script], env=env, capture_output=True, text=True, timeout=180)

    def conditions(self, key: str) -> list[str]:
        got = json.loads(self.kube.kubectl("get", "csr", self.csrs[key], "-o", "json", check=True).stdout)
        return [c["type"] for c in (got.get("status") or {}).get("conditions") or []]

    def annotations(self, key: str) -> dict:
        got = json.loads(self.kube.kubectl("get", "csr", self.csrs[key], "-o", "json", check=True).stdout)
        return got["metadata"].get("annotations") or {}

    def close(self) -> None:
        for name in self.csrs.values():
            self.kube.kubectl("delete", "csr", name, "--ignore-not-found")
        for name in self.nodes:
            self.kube.kubectl("delete", "node", name, "--ignore-not-found")
        self.kube.kubectl("delete", "clusterrolebinding", self.binding, "--ignore-not-found")
        self.kube.kubectl("delete", "namespace", self.ns, "--wait=false")


def _decided(journal: str, names: dict[str, str]) -> tuple[list[str], list[str]]:
    keys = {v: k for k, v in names.items()}
    approved = [keys[n] for n in re.findall(r"approve-csrs: approved (\S+) for", journal) if n in keys]
    denied = [keys[n] for n in re.findall(r"approve-csrs: denying (\S+):", journal) if n in keys]
    return sorted(approved), sorted(denied)


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_approve_csrs(case, kube, moto_url, tmp_path):  # noqa: F811 - fixture
    world = Case(kube, moto_url, tmp_path, case)
    # the approver decides every pending bootstrap request of the cluster: one test at a time makes them
    with kube.singleton("csr-approver"):
        try:
            if case.get("before"):
                for c in case["before"]:
                    world.create(c)
                done = world.approve_csrs("before")
                assert done.returncode == 0, done.stderr
                assert _decided(done.stderr, world.csrs)[0] == sorted(c["key"] for c in case["before"]), (
                    done.stderr
                )
            for c in case["csrs"]:
                world.create(c)
            got = json.loads(
                kube.kubectl("get", "csr", world.csrs[case["csrs"][0]["key"]], "-o", "json").stdout
            )
            assert got["spec"]["username"].startswith(("system:bootstrap:", "system:node:"))
            kubeadms = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
                        "metadata": {"name": "kubeadm:node-autoapprove-bootstrap"},
                        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                                    "name": "system:certificates.k8s.io:certificatesigningrequests:nodeclient"},
                        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group",
                                      "name": "system:bootstrappers:kubeadm:default-node-token"}]}  # fmt: skip
            kube.kubectl(
                "apply", "-f", "-", input=json.dumps(kubeadms), check=True
            )  # as kubeadm init makes it
            done = world.approve_csrs("run")
            assert done.returncode == 0, done.stderr
            ours = {c["key"]: world.csrs[c["key"]] for c in case["csrs"]}
            assert _decided(done.stderr, ours) == (sorted(case["approved"]), sorted(case["denied"])), (
                done.stderr
            )
            for key in case["approved"]:  # approved in the API server, remembering node and instance
                assert world.conditions(key) == ["Approved"]
                target = world.names[next(c["for"] for c in case["csrs"] if c["key"] == key)]
                assert world.annotations(key) == {"research.cluster/node": target["name"],
                                                  "research.cluster/instance": target["id"]}  # fmt: skip
            for key in case["denied"]:
                assert world.conditions(key) == ["Denied"]
            for key, says in (case.get("says") or {}).items():  # the journal's line for that request
                lines = [line for line in done.stderr.splitlines() if f" {world.csrs[key]}" in line]
                assert any(world.text(says) in line for line in lines), done.stderr
            # kubeadm's blanket auto-approval of bootstrap requests is gone (kubeadm upgrade apply makes it again)
            assert (
                kube.kubectl("get", "clusterrolebinding", "kubeadm:node-autoapprove-bootstrap").returncode
                != 0
            )
        finally:
            world.close()


def test_the_approver_and_serve_joins_each_run_on_their_own_unit():
    """Withdrawing the certificates (serve-joins) is its own unit and timer: it never waits on gc-nodes' EC2
    calls (before, one oneshot unit ran gc-nodes, then serve-joins)."""
    text = BOOTSTRAP.read_text()
    units = {}
    for block in text.split('cat >"$root/etc/systemd/system/')[1:]:
        name, body = block.split('"', 1)
        units[name] = body.split("\nUNIT", 1)[0]
    execs = {n: [line for line in b.splitlines() if line.startswith("ExecStart=")] for n, b in units.items()}
    assert execs["cluster-node-lifecycle.service"] == [
        "ExecStart=/usr/local/sbin/cluster-control-plane gc-nodes"
    ]
    assert execs["cluster-serve-joins.service"] == [
        "ExecStart=/usr/local/sbin/cluster-control-plane serve-joins"
    ]
    assert execs["cluster-csr-approver.service"] == [
        "ExecStart=/usr/local/sbin/cluster-control-plane approve-csrs"
    ]
    for timer in ("cluster-serve-joins", "cluster-csr-approver"):
        assert f"systemctl enable --now {timer}.timer" in text


def test_the_certificate_exporters_folder_holds_certificates_and_never_a_key(tmp_path):
    """Issue 36: what `publish` copies for the certificate exporter (provision/monitoring.py EXPORTED_CERTIFICATES)
    from a control plane's real layout: kubeadm's *.crt beside their keys, kubeconfigs with embedded client keys,
    the kubelet's pem holding certificate and key."""
    import datetime as dt

    from cryptography.hazmat.primitives.serialization import Encoding, NoEncryption, PrivateFormat

    root = tmp_path / "root"
    k = root / "etc/kubernetes"
    (k / "pki/etcd").mkdir(parents=True)
    (root / "var/lib/kubelet/pki").mkdir(parents=True)
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "kubernetes")])
    now = dt.datetime.now(dt.UTC)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(KEY.public_key())
            .serial_number(1).not_valid_before(now).not_valid_after(now + dt.timedelta(days=1))
            .sign(KEY, hashes.SHA256()).public_bytes(Encoding.PEM))  # fmt: skip
    key = KEY.private_bytes(Encoding.PEM, PrivateFormat.PKCS8, NoEncryption())
    for folder in (k / "pki", k / "pki/etcd"):
        (folder / "ca.crt").write_bytes(cert)
        (folder / "ca.key").write_bytes(key)
    (k / "admin.conf").write_text(
        "users:\n- name: kubernetes-admin\n  user:\n"
        f"    client-certificate-data: {base64.b64encode(cert).decode()}\n"
        f"    client-key-data: {base64.b64encode(key).decode()}\n"
    )
    (root / "var/lib/kubelet/pki/kubelet-client-current.pem").write_bytes(cert + key)
    script = f"set -euo pipefail\nMEMBER=0\nsource {BOOTSTRAP}\nroot={root}\nexport_certificates\n"
    done = subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr
    out = k / "exported-certificates"
    assert sorted(p.name for p in out.iterdir()) == [
        "admin.conf.crt",
        "ca.crt",
        "etcd-ca.crt",
        "kubelet-client.crt",
    ]
    for path in out.iterdir():
        text = path.read_bytes()
        assert b"PRIVATE KEY" not in text and text.startswith(b"-----BEGIN CERTIFICATE-----"), path.name
        x509.load_pem_x509_certificate(text)
        assert path.stat().st_mode & 0o777 == 0o644
