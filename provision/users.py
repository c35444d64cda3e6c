"""Researcher access: a namespace with RBAC and volumes, a kubeconfig and a Client VPN certificate per user.

``add_user`` (``invoke add-user NAME``), for a user listed in the spec's ``users``:

1. the namespace ``<researchers.namespace_prefix><name>`` (labelled with the user);
2. RBAC: the built-in ClusterRole ``edit`` bound in that namespace, ``research-viewer`` (provision/tenancy.py)
   bound cluster-wide (a researcher sees every job, pod and node, changes only their own and reads only their own
   pods' logs); the subject is the user named by the certificate's CN,
   in the group ``research:users`` (its O);
3. the PersistentVolumeClaims ``home``, ``datasets`` and ``results`` the jobs mount, bound to the static volumes
   of deploy/storage (provision/storage.py), which mount through the user's EFS access points: Terraform makes
   those from the spec's ``users`` (terraform/modules/efs), so a new user's volumes follow ``invoke up`` and
   ``invoke render-storage``;
4. a kubeconfig with a client certificate from the cluster's own CA through the CertificateSigningRequest API:
   the key is generated here (``cryptography``, EC P-256: Kubernetes accepts it) and never leaves this machine; the CSR names the signer
   ``kubernetes.io/kube-apiserver-client``, is approved by the admin running the task and its certificate
   waited for; the server and its CA come from the admin's own kubeconfig;
5. a Client VPN client certificate from the VPN CA this module keeps outside the repository (the CA whose
   certificate the Client VPN endpoint trusts; ``invoke vpn-ca`` creates it with the endpoint's server
   certificate and imports them into ACM before the first ``invoke up``: provision/vpn_ca.py). Every key of that
   CA is RSA 2048 with SHA-256 signatures: Client VPN accepts RSA 1024 and 2048-bit keys only (Client VPN
   Administrator Guide, "Mutual authentication").

Keys and certificates go to ``~/.local/share/research-cluster`` (mode 0600 files in 0700 folders) unless told
otherwise, never into the repository, never into logs.

``remove_user`` deletes the bindings and the namespace (after confirmation, by the task) and revokes the VPN
certificate: its serial goes into the CA's revocation list (``crl.pem``), which is imported into the Client VPN
endpoint (``ImportClientCertificateRevocationList``). Kubernetes cannot revoke a client certificate: the user
loses access because their bindings are gone (the certificate still authenticates, with no permission beyond
``system:authenticated``'s discovery), and it expires after ``CERT_DAYS``.
"""

from __future__ import annotations

import base64
import datetime as dt
import json
import os
import re
import secrets
import time
from dataclasses import dataclass
from pathlib import Path

import yaml
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from clusterspec.errors import UserError
from clusterspec.names import USER_LABEL
from clusterspec.spec import Cluster

USERS_GROUP = "research:users"
SIGNER = "kubernetes.io/kube-apiserver-client"
CERT_DAYS = 365
CA_DAYS = 3650
SERVER_CERT_DAYS = 825
VPN_KEY_BITS = 2048  # Client VPN: RSA 1024 or 2048 only; 2048 is the one still considered strong
DEFAULT_HOME = Path(os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share") / "research-cluster"


def _private(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    path.chmod(0o600)


def _key_pem(key) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


def _pem(cert) -> bytes:
    return cert.public_bytes(serialization.Encoding.PEM)


def _vpn_key():
    return rsa.generate_private_key(public_exponent=65537, key_size=VPN_KEY_BITS)


def _key_usage(**allowed: bool) -> x509.KeyUsage:
    names = ("digital_signature", "content_commitment", "key_encipherment", "data_encipherment", "key_agreement",
             "key_cert_sign", "crl_sign", "encipher_only", "decipher_only")  # fmt: skip
    return x509.KeyUsage(**{n: allowed.get(n, False) for n in names})


def check_user(spec: Cluster, name: str) -> None:
    if name not in {u.name for u in spec.users}:
        known = ", ".join(u.name for u in spec.users) or "none"
        raise UserError(
            f"cluster.yaml: users: no user {name!r} (listed: {known}); add them with their uid and ssh_keys first"
        )


# --- the VPN CA --------------------------------------------------------------------------------------------
class VpnCa:
    """A small CA on the admin's machine: ca.key (0600), ca.crt, issued.json (serials by user), crl.pem."""

    def __init__(self, folder: Path, cluster: str) -> None:
        self.folder = Path(folder)
        self.cluster = cluster

    @property
    def cert_path(self) -> Path:
        return self.folder / "ca.crt"

    @property
    def crl_path(self) -> Path:
        return self.folder / "crl.pem"

    @property
    def key_path(self) -> Path:
        return self.folder / "ca.key"

    def exists(self) -> bool:
        return self.key_path.exists()

    def create(self) -> bool:
        """Make the CA (RSA 2048, ten years) unless there is one; True when it was made now."""
        if self.key_path.exists():
            return False
        key = _vpn_key()
        name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, f"{self.cluster} client VPN CA")])
        now = dt.datetime.now(dt.UTC)
        cert = (
            x509.CertificateBuilder()
            .subject_name(name)
            .issuer_name(name)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - dt.timedelta(minutes=5))
            .not_valid_after(now + dt.timedelta(days=CA_DAYS))
            .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
            .add_extension(_key_usage(key_cert_sign=True, crl_sign=True), critical=True)
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
            .sign(key, hashes.SHA256())
        )
        _private(self.key_path, _key_pem(key))
        self.cert_path.write_bytes(_pem(cert))
        return True

    def _load(self):
        self.create()
        key = serialization.load_pem_private_key(self.key_path.read_bytes(), None)
        if not (isinstance(key, rsa.RSAPrivateKey) and key.key_size in (1024, 2048)):
            kind = f"RSA {key.key_size}" if isinstance(key, rsa.RSAPrivateKey) else "EC"
            raise UserError(
                f"{self.key_path}: the VPN CA has an {kind} key, which Client VPN refuses (RSA 1024 or 2048 only): "
                f"move {self.folder} aside, run `invoke vpn-ca` for a new one and reissue every laptop's "
                "certificate (`invoke rotate-certificates --vpn-user NAME`)"
            )
        return key, x509.load_pem_x509_certificate(self.cert_path.read_bytes())

    def _leaf(self, subject: str, key, days: int, usage, san: str | None = None):
        ca_key, ca_cert = self._load()
        now = dt.datetime.now(dt.UTC)
        builder = (
            x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, subject)]))
            .issuer_name(ca_cert.subject)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - dt.timedelta(minutes=5))
            .not_valid_after(min(now + dt.timedelta(days=days), ca_cert.not_valid_after_utc))
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(_key_usage(digital_signature=True, key_encipherment=True), critical=True)
            .add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
            .add_extension(
                x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False
            )
        )
        if san:
            builder = builder.add_extension(x509.SubjectAlternativeName([x509.DNSName(san)]), critical=False)
        return builder.sign(ca_key, hashes.SHA256()), ca_cert

    def issue_server(self, domain: str) -> tuple[bytes, bytes, bytes]:
        """(key PEM, certificate PEM, chain PEM) of a Client VPN server certificate ``vpn.<domain>``."""
        key = _vpn_key()
        name = f"vpn.{domain}"
        cert, ca_cert = self._leaf(name, key, SERVER_CERT_DAYS, ExtendedKeyUsageOID.SERVER_AUTH, san=name)
        return _key_pem(key), _pem(cert), _pem(ca_cert)

    def _issued(self) -> dict:
        path = self.folder / "issued.json"
        return json.loads(path.read_text()) if path.exists() else {}

    def _save_issued(self, issued: dict) -> None:
        (self.folder / "issued.json").write_text(json.dumps(issued, indent=1, sort_keys=True) + "\n")

    def issue(self, user: str, domain: str) -> tuple[bytes, bytes, int]:
        """(key PEM, certificate PEM, serial) of a new client certificate for ``user`` (RSA 2048, clientAuth)."""
        key = _vpn_key()
        # CN = the user: IAM Roles Anywhere maps it to the session tag x509Subject/CN, which names their own S3
        # prefix (terraform/modules/researcher_access)
        cert, _ = self._leaf(user, key, CERT_DAYS, ExtendedKeyUsageOID.CLIENT_AUTH)
        serial = cert.serial_number
        issued = self._issued()
        issued.setdefault(user, []).append({"serial": str(serial), "revoked": False})
        self._save_issued(issued)
        return _key_pem(key), _pem(cert), serial

    def revoke(self, user: str) -> list[int]:
        """Revoke every certificate issued to ``user``; rewrite crl.pem. The serials revoked now."""
        ca_key, ca_cert = self._load()
        issued = self._issued()
        newly = []
        for rec in issued.get(user, []):
            if not rec["revoked"]:
                rec["revoked"] = True
                rec["revoked_at"] = dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
                newly.append(int(rec["serial"]))
        self._save_issued(issued)
        self.write_crl(ca_key, ca_cert, issued)
        return newly

    def write_crl(self, ca_key=None, ca_cert=None, issued: dict | None = None) -> Path:
        if ca_key is None:
            ca_key, ca_cert = self._load()
        issued = self._issued() if issued is None else issued
        now = dt.datetime.now(dt.UTC)
        builder = (
            x509.CertificateRevocationListBuilder()
            .issuer_name(ca_cert.subject)
            .last_update(now)
            .next_update(now + dt.timedelta(days=180))
        )
        for recs in issued.values():
            for rec in recs:
                if rec["revoked"]:
                    when = dt.datetime.strptime(rec["revoked_at"], "%Y-%m-%dT%H:%M:%SZ").replace(
                        tzinfo=dt.UTC
                    )
                    builder = builder.add_revoked_certificate(
                        x509.RevokedCertificateBuilder()
                        .serial_number(int(rec["serial"]))
                        .revocation_date(when)
                        .build()
                    )
        crl = builder.sign(ca_key, hashes.SHA256())
        self.crl_path.write_bytes(crl.public_bytes(serialization.Encoding.PEM))
        return self.crl_path


# --- Kubernetes objects --------------------------------------------------------------------------------------
def namespace_objects(spec: Cluster, user: str) -> list[dict]:
    """The namespace (Pod Security labels), its quota, limit range and network policies (provision/tenancy.py),
    its two bindings and its three volume claims, in creation order."""
    from provision import tenancy

    ns = spec.researchers.namespace(user)
    labels = {USER_LABEL: user, "app.kubernetes.io/managed-by": "research-cluster"}
    subject = {"kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": user}
    objs = [
        *tenancy.namespace_objects(spec, user),
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "RoleBinding",
            "metadata": {"name": f"{user}-edit", "namespace": ns, "labels": labels},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "edit"},
            "subjects": [subject],
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": {"name": f"research-view-{user}", "labels": labels},
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "ClusterRole",
                "name": tenancy.VIEWER_ROLE,
            },
            "subjects": [subject],
        },
    ]
    from provision.storage import claims, lab_claims

    objs += claims(spec, ns, labels) + lab_claims(spec, ns, labels)
    return objs


@dataclass
class AddedUser:
    namespace: str
    kubeconfig: Path
    vpn_cert: Path
    vpn_key: Path
    created: list[str]
    aws_config: Path | None = (
        None  # None: no researcher_access output yet (the global root without the VPN CA)
    )


SIGNING_HELPER = "aws_signing_helper"


def aws_config_text(spec: Cluster, user: str, access: dict, cert: Path, key: Path) -> str:
    """The researcher's AWS profile: credentials from IAM Roles Anywhere for their VPN certificate (one hour, renewed
    by aws_signing_helper at every call), for `lab submit`'s uploads; AWS_PROFILE=<cluster> selects it."""
    helper = (f"{SIGNING_HELPER} credential-process --certificate {cert} --private-key {key} "
              f"--trust-anchor-arn {access['trust_anchor_arn']} --profile-arn {access['profile_arn']} "
              f"--role-arn {access['role_arn']}")  # fmt: skip
    return f"[profile {spec.name}]\nregion = {spec.primary_region}\ncredential_process = {helper}\n"


def researcher_access(out: Path | None = None) -> dict | None:
    """The global root's researcher_access output (trust anchor, profile, role), None before it exists."""
    from provision.terraform import outputs

    try:
        return outputs.global_output("researcher_access", **({"out": out} if out else {}))
    except UserError:
        return None


def _create(api_client, obj: dict) -> str:
    """Create one object; an existing one is left as it is. Returns "created" or "exists"."""
    from kubernetes import utils
    from kubernetes.utils import FailToCreateError

    try:
        utils.create_from_dict(api_client, obj)
        return "created"
    except FailToCreateError as e:
        if all(getattr(x, "status", None) == 409 for x in e.api_exceptions):
            return "exists"
        first = e.api_exceptions[0]
        raise UserError(
            f"creating {obj['kind']} {obj['metadata']['name']}: {first.status} {first.reason}"
        ) from None


def _update_existing(api_client, obj: dict) -> bool:
    """Bring an existing quota or viewer binding to what this version makes (a cluster from before issue 36: no
    CPU and memory quota; the cluster-wide binding to the built-in ``view``, which reads every namespace's logs).
    A binding's roleRef cannot change: it is replaced. True when something was changed."""
    from kubernetes import client
    from kubernetes.client.exceptions import ApiException

    name = obj["metadata"]["name"]
    try:
        if obj["kind"] == "ResourceQuota":
            core, ns = client.CoreV1Api(api_client), obj["metadata"]["namespace"]
            if (core.read_namespaced_resource_quota(name, ns).spec.hard or {}) == obj["spec"]["hard"]:
                return False
            core.patch_namespaced_resource_quota(name, ns, {"spec": obj["spec"]})
            return True
        if obj["kind"] == "ClusterRoleBinding":
            rbac = client.RbacAuthorizationV1Api(api_client)
            if rbac.read_cluster_role_binding(name).role_ref.name == obj["roleRef"]["name"]:
                return False
            rbac.delete_cluster_role_binding(name)
            return _create(api_client, obj) == "created"
    except ApiException as e:
        raise UserError(f"updating {obj['kind']} {name}: {e.status} {e.reason}") from None
    return False


def _label_namespace(api_client, ns: dict) -> None:
    from kubernetes import client
    from kubernetes.client.exceptions import ApiException

    try:
        client.CoreV1Api(api_client).patch_namespace(
            ns["metadata"]["name"], {"metadata": {"labels": ns["metadata"]["labels"]}}
        )
    except ApiException as e:
        raise UserError(f"labelling Namespace {ns['metadata']['name']}: {e.status} {e.reason}") from None


def _admin_cluster(kubeconfig: str | None) -> tuple[str, str | None]:
    """The server and CA data of the admin's current context (the researcher's kubeconfig reuses them)."""
    from kubernetes import config

    path = Path(kubeconfig or os.environ.get("KUBECONFIG") or Path.home() / ".kube" / "config")
    data = yaml.safe_load(path.read_text())
    _, active = config.list_kube_config_contexts(config_file=str(path))
    cluster = next(c["cluster"] for c in data["clusters"] if c["name"] == active["context"]["cluster"])
    ca = cluster.get("certificate-authority-data")
    if not ca and cluster.get("certificate-authority"):
        ca = base64.b64encode(Path(cluster["certificate-authority"]).read_bytes()).decode()
    return cluster["server"], ca


def request_client_certificate(api_client, user: str, timeout_s: float = 60, group: str = USERS_GROUP,
                               seconds: int = CERT_DAYS * 24 * 3600) -> tuple[bytes, bytes, str]:  # fmt: skip
    """(key PEM, certificate PEM, CSR name) through the CertificateSigningRequest API, approved by the caller."""
    from kubernetes import client

    key = ec.generate_private_key(ec.SECP256R1())
    csr = (
        x509.CertificateSigningRequestBuilder()
        .subject_name(
            x509.Name(
                [
                    x509.NameAttribute(NameOID.ORGANIZATION_NAME, group),
                    x509.NameAttribute(NameOID.COMMON_NAME, user),
                ]
            )
        )  # fmt: skip
        .sign(key, hashes.SHA256())
    )
    name = f"{'research-user' if group == USERS_GROUP else 'research-operator'}-{user}-{secrets.token_hex(3)}"
    certs = client.CertificatesV1Api(api_client)
    certs.create_certificate_signing_request(
        {
            "apiVersion": "certificates.k8s.io/v1",
            "kind": "CertificateSigningRequest",
            "metadata": {"name": name, "labels": {USER_LABEL: user}},
            "spec": {
                "request": base64.b64encode(csr.public_bytes(serialization.Encoding.PEM)).decode(),
                "signerName": SIGNER,
                "usages": ["digital signature", "client auth"],
                "expirationSeconds": seconds,
            },
        }
    )
    body = certs.read_certificate_signing_request(name)
    body.status = client.V1CertificateSigningRequestStatus(
        conditions=[
            client.V1CertificateSigningRequestCondition(
                type="Approved",
                status="True",
                reason="ResearchClusterAddUser",
                message=f"invoke add-user {user}",
            )
        ]
    )
    certs.replace_certificate_signing_request_approval(name, body)
    deadline = time.monotonic() + timeout_s
    while True:
        status = certs.read_certificate_signing_request(name).status
        failed = [c for c in status.conditions or [] if c.type in ("Failed", "Denied")]
        if failed:
            raise UserError(
                f"certificate request {name} {failed[0].type.lower()}: {failed[0].message or failed[0].reason}"
            )
        if status.certificate:
            return _key_pem(key), base64.b64decode(status.certificate), name
        if time.monotonic() > deadline:
            raise UserError(f"certificate request {name} was approved but not signed within {timeout_s:.0f} s: "
                            "is kube-controller-manager running with --cluster-signing-cert-file?")  # fmt: skip
        time.sleep(0.5)


def kubeconfig_text(
    spec: Cluster, user: str, server: str, ca_data: str | None, key: bytes, cert: bytes
) -> str:
    cluster: dict = {"server": server}
    if ca_data:
        cluster["certificate-authority-data"] = ca_data
    ctx = f"{user}@{spec.name}"
    doc = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": spec.name, "cluster": cluster}],
        "users": [
            {
                "name": user,
                "user": {
                    "client-certificate-data": base64.b64encode(cert).decode(),
                    "client-key-data": base64.b64encode(key).decode(),
                },
            }
        ],  # fmt: skip
        "contexts": [
            {
                "name": ctx,
                "context": {
                    "cluster": spec.name,
                    "user": user,
                    "namespace": spec.researchers.namespace(user),
                },
            }
        ],  # fmt: skip
        "current-context": ctx,
    }
    return yaml.safe_dump(doc, sort_keys=False)


def annotate_service_account(api_client, namespace: str, role_arn: str) -> None:
    """Give the namespace's default ServiceAccount its S3 role (IRSA; the pod identity webhook reads this)."""
    from kubernetes import client
    from kubernetes.client.exceptions import ApiException

    core = client.CoreV1Api(api_client)
    patch = {"metadata": {"annotations": {"eks.amazonaws.com/role-arn": role_arn}}}
    try:
        core.patch_namespaced_service_account("default", namespace, patch)
    except ApiException as e:
        if e.status != 404:
            raise UserError(f"annotating {namespace}/default: {e.status} {e.reason}") from None
        core.create_namespaced_service_account(
            namespace, {"metadata": {"name": "default", **patch["metadata"]}}
        )


def add_user(spec: Cluster, user: str, admin_kubeconfig: str | None = None, home: Path | None = None,
             timeout_s: float = 60, role_arn: str | None = None, access: dict | None = None) -> AddedUser:  # fmt: skip
    from kubernetes import config

    check_user(spec, user)
    home = Path(home or DEFAULT_HOME)
    api_client = config.new_client_from_config(config_file=admin_kubeconfig)
    try:
        created = []
        for obj in namespace_objects(spec, user):
            if _create(api_client, obj) == "created":
                created.append(f"{obj['kind']} {obj['metadata']['name']}")
            elif obj["kind"] == "Namespace":  # a namespace from before issue 26 gets its Pod Security labels
                _label_namespace(api_client, obj)
            elif _update_existing(api_client, obj):
                created.append(f"updated {obj['kind']} {obj['metadata']['name']}")
        if role_arn:
            annotate_service_account(api_client, spec.researchers.namespace(user), role_arn)
            created.append(f"S3 role {role_arn} on ServiceAccount default")
        from provision import lab_settings  # the new uid in the settings `lab` reads (docs/researchers.md)

        lab_settings.apply(api_client, spec, code_bucket=lab_settings.results_bucket(spec))
        key, cert, _ = request_client_certificate(api_client, user, timeout_s)
    finally:
        api_client.close()
    server, ca = _admin_cluster(admin_kubeconfig)
    out = home / "users" / user
    kubeconfig = out / "kubeconfig"
    _private(kubeconfig, kubeconfig_text(spec, user, server, ca, key, cert).encode())
    vpn_key, vpn_cert, _ = VpnCa(home / "vpn-ca", spec.name).issue(user, spec.domain)
    _private(out / "vpn-client.key", vpn_key)
    (out / "vpn-client.crt").write_bytes(vpn_cert)
    access = researcher_access() if access is None else access
    aws_config = None
    if access:  # paths as they will be on the laptop: next to the config in ~/.config/research-cluster
        laptop = Path("~/.config/research-cluster")
        aws_config = out / "aws-config"
        aws_config.write_text(
            aws_config_text(spec, user, access, laptop / "vpn-client.crt", laptop / "vpn-client.key")
        )
    return AddedUser(spec.researchers.namespace(user), kubeconfig, out / "vpn-client.crt", out / "vpn-client.key",
                     created, aws_config)  # fmt: skip


# --- operators: their own short-lived identities; admin.conf is break-glass --------------------------------------
OPERATORS_GROUP = "research:operators"
OPERATOR_BINDING = "research-operators"
MAX_OPERATOR_HOURS = 12


def operator_binding() -> dict:
    return {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
            "metadata": {"name": OPERATOR_BINDING, "labels": {"app.kubernetes.io/managed-by": "research-cluster"}},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin"},
            "subjects": [{"kind": "Group", "apiGroup": "rbac.authorization.k8s.io", "name": OPERATORS_GROUP}]}  # fmt: skip


def operator_kubeconfig(spec: Cluster, name: str, admin_kubeconfig: str | None, out: Path, hours: int = 8,
                        timeout_s: float = 60) -> Path:  # fmt: skip
    """A kubeconfig for operator NAME with a certificate of the cluster's CA valid HOURS (at most 12): CN = NAME
    (what the API server's audit log names), O = research:operators (bound to cluster-admin). The admin kubeconfig
    (fetched from SSM by the operator role) only approves the request; day-to-day work never uses it."""
    from kubernetes import config

    if not 1 <= hours <= MAX_OPERATOR_HOURS:
        raise UserError(
            f"--duration {hours}: an operator's certificate lasts 1 to {MAX_OPERATOR_HOURS} hours"
        )
    if not re.fullmatch(r"[a-z][a-z0-9._-]{0,62}", name) or name in {u.name for u in spec.users}:
        raise UserError(
            f"--name {name!r}: an operator's own name (lower case, not a researcher's), e.g. jdoe"
        )
    api_client = config.new_client_from_config(config_file=admin_kubeconfig)
    try:
        _create(api_client, operator_binding())
        key, cert, _ = request_client_certificate(api_client, name, timeout_s, OPERATORS_GROUP, hours * 3600)
    finally:
        api_client.close()
    server, ca = _admin_cluster(admin_kubeconfig)
    text = kubeconfig_text(spec, name, server, ca, key, cert)
    doc = yaml.safe_load(text)
    doc["contexts"][0]["context"].pop("namespace", None)
    _private(out, yaml.safe_dump(doc, sort_keys=False).encode())
    return out


def remove_plan(spec: Cluster, user: str) -> list[str]:
    """What remove_user deletes, for the confirmation prompt and --dry-run."""
    ns = spec.researchers.namespace(user)
    return [
        f"ClusterRoleBinding research-view-{user}",
        f"RoleBinding {ns}/{user}-edit",
        f"Namespace {ns} (every job, pod and claim in it; the volumes' data stays)",
        f"CertificateSigningRequests labelled {USER_LABEL}={user}",
        f"{user} from the readers of the lab settings (RoleBinding kube-public/research-lab-settings-reader)",
        f"the VPN certificates of {user} (revoked in crl.pem; imported into Client VPN and IAM Roles Anywhere)",
    ]


def remove_user(spec: Cluster, user: str, admin_kubeconfig: str | None = None, home: Path | None = None,
                vpn_endpoint: str | None = None, region: str | None = None,
                access: dict | None = None) -> list[str]:  # fmt: skip
    from kubernetes import client, config
    from kubernetes.client.exceptions import ApiException

    home = Path(home or DEFAULT_HOME)
    ns = spec.researchers.namespace(user)
    api_client = config.new_client_from_config(config_file=admin_kubeconfig)
    done = []
    rbac, core, certs = (
        client.RbacAuthorizationV1Api(api_client),
        client.CoreV1Api(api_client),
        client.CertificatesV1Api(api_client),
    )
    calls = [
        (
            f"ClusterRoleBinding research-view-{user}",
            lambda: rbac.delete_cluster_role_binding(f"research-view-{user}"),
        ),
        (f"RoleBinding {ns}/{user}-edit", lambda: rbac.delete_namespaced_role_binding(f"{user}-edit", ns)),
        (f"Namespace {ns}", lambda: core.delete_namespace(ns)),
    ]
    try:
        for what, call in calls:
            try:
                call()
                done.append(what)
            except ApiException as e:
                if e.status != 404:
                    raise UserError(f"deleting {what}: {e.status} {e.reason}") from None
        for csr in certs.list_certificate_signing_request(label_selector=f"{USER_LABEL}={user}").items:
            certs.delete_certificate_signing_request(csr.metadata.name)
            done.append(f"CertificateSigningRequest {csr.metadata.name}")
        # their name out of the settings' readers (their certificate stays valid)
        from provision import lab_settings

        lab_settings.apply(api_client, spec, exclude=(user,))
        done.append(f"{user} out of the lab settings' readers")
    finally:
        api_client.close()
    ca = VpnCa(home / "vpn-ca", spec.name)
    serials = ca.revoke(user)
    done.append(f"revoked {len(serials)} VPN certificate(s); revocation list {ca.crl_path}")
    if vpn_endpoint:
        import_crl(ca.crl_path, vpn_endpoint, region or spec.primary_region)
        done.append(f"imported the revocation list into {vpn_endpoint}")
    anchor = access.get("trust_anchor_arn") if access else (researcher_access() or {}).get("trust_anchor_arn")
    if anchor:
        import_roles_anywhere_crl(ca.crl_path, anchor, spec.name)
        done.append(f"imported the revocation list for the trust anchor {anchor}: no more AWS credentials")
    else:
        done.append(
            "no researchers' trust anchor (global output researcher_access): no AWS credentials to revoke"
        )
    return done


def import_roles_anywhere_crl(crl_path: Path, trust_anchor_arn: str, cluster: str, client=None) -> str:
    """Load the CA's revocation list into IAM Roles Anywhere for the researchers' trust anchor (replacing the one
    imported before): a revoked certificate gets no credentials. Returns the CRL's id."""
    import boto3

    region = trust_anchor_arn.split(":")[3]
    ra = client or boto3.client("rolesanywhere", region_name=region)
    name, data = f"{cluster}-researchers", crl_path.read_bytes()
    for crl in ra.list_crls().get("crls", []):
        if crl.get("name") == name and crl.get("trustAnchorArn") == trust_anchor_arn:
            ra.update_crl(crlId=crl["crlId"], crlData=data)
            return crl["crlId"]
    return ra.import_crl(name=name, crlData=data, trustAnchorArn=trust_anchor_arn, enabled=True)["crl"][
        "crlId"
    ]


def import_crl(crl_path: Path, endpoint_id: str, region: str) -> None:
    """Load the CA's revocation list into the Client VPN endpoint (it replaces the previous one)."""
    import boto3

    boto3.client("ec2", region_name=region).import_client_vpn_client_certificate_revocation_list(
        ClientVpnEndpointId=endpoint_id, CertificateRevocationList=crl_path.read_text()
    )
