"""The kinds the researcher's path needs, served by the emulator when installed: ``install(emulator)``.

Opt-in (tests and ``invoke demo-researcher`` call it; the autoscaler's tests and ``make demo`` do not). The
resource table is the process's: tests call ``unregister()`` when done.

- ``batch/v1`` Jobs, with the Job controller's part done at create time (kubernetes pkg/controller/job): one pod
  per index for ``completionMode: Indexed`` (parallelism pods, at most completions), named
  ``<job>-<index>-<5 chars>``, labelled ``batch.kubernetes.io/job-name``, ``batch.kubernetes.io/controller-uid``
  (and the legacy ``job-name``, ``controller-uid``) and ``batch.kubernetes.io/job-completion-index``, annotated
  with the index, ``spec.hostname`` ``<job>-<index>``, the ``JOB_COMPLETION_INDEX`` env var from that
  annotation, and a controller ownerReference. ``status`` (active, succeeded, failed, Complete/Failed
  conditions) is computed from the pods on read. Deleting a Job deletes its pods, as the garbage collector
  does for ``propagationPolicy: Background``. Create is refused (422 Invalid) as the API server's validation
  refuses it (pkg/apis/batch/validation): restartPolicy other than Never/OnFailure, Indexed without
  completions, a name that is not a DNS-1123 label of at most 63 characters (it becomes a label value).
- ``certificates.k8s.io/v1`` CertificateSigningRequests, with the ``approval`` subresource and the
  ``kubernetes.io/kube-apiserver-client`` signer of kube-controller-manager (pkg/controller/certificates/signer):
  once Approved, the request is signed by the emulator's own CA with the CSR's subject, usage client auth, for
  ``spec.expirationSeconds`` (at least 600, default one year as ``--cluster-signing-duration``); usages other
  than digital signature, key encipherment and client auth (or without client auth) get a Failed condition
  (SignerValidationFailure). Creates are refused when the request is not a PEM CERTIFICATE REQUEST with a
  valid signature.
- plain CRUD (the emulator's generic handling) for Services, PersistentVolumeClaims, PersistentVolumes,
  ServiceAccounts, rbac.authorization.k8s.io Roles, RoleBindings, ClusterRoles, ClusterRoleBindings, and
  scheduling.x-k8s.io PodGroups; Namespaces gain create and delete (deleting one deletes what it holds).

Not modelled: authentication and RBAC enforcement (the emulator has none), the CSR's requester identity.
"""

from __future__ import annotations

import base64
import copy
import datetime as dt
import json
import re
import secrets
import string

from autoscaler.emulator import resources as R
from autoscaler.emulator.api import KubeApi, Reply
from autoscaler.model import store as S
from autoscaler.model.store import AlreadyExists, Invalid, NotFound

CSR_PLURAL = "certificatesigningrequests"
SIGNER = "kubernetes.io/kube-apiserver-client"
CLIENT_USAGES = {"digital signature", "key encipherment", "client auth"}
KNOWN_USAGES = CLIENT_USAGES | {
    "signing", "content commitment", "key agreement", "data encipherment", "cert sign", "crl sign",
    "encipher only", "decipher only", "any", "server auth", "code signing", "email protection", "s/mime",
    "ipsec end system", "ipsec tunnel", "ipsec user", "timestamping", "ocsp signing", "microsoft sgc",
    "netscape sgc",
}  # fmt: skip
DEFAULT_DURATION_S = 365 * 24 * 3600
_DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_RW = ("create", "delete", "get", "list", "patch", "update", "watch")

EXTRA = [
    R.Resource("batch", "v1", "jobs", "Job", True, "jobs", _RW),
    R.Resource("", "v1", "services", "Service", True, "services", _RW, ("svc",)),
    R.Resource("", "v1", "persistentvolumeclaims", "PersistentVolumeClaim", True, "pvcs", _RW, ("pvc",)),
    R.Resource("", "v1", "persistentvolumes", "PersistentVolume", False, "pvs", _RW, ("pv",)),
    R.Resource("", "v1", "serviceaccounts", "ServiceAccount", True, "serviceaccounts", _RW, ("sa",)),
    R.Resource("rbac.authorization.k8s.io", "v1", "roles", "Role", True, "roles", _RW),
    R.Resource("rbac.authorization.k8s.io", "v1", "rolebindings", "RoleBinding", True, "rolebindings", _RW),
    R.Resource("rbac.authorization.k8s.io", "v1", "clusterroles", "ClusterRole", False, "clusterroles", _RW),
    R.Resource(
        "rbac.authorization.k8s.io",
        "v1",
        "clusterrolebindings",
        "ClusterRoleBinding",
        False,
        "clusterrolebindings",
        _RW,
    ),  # fmt: skip
    R.Resource("scheduling.x-k8s.io", "v1alpha1", "podgroups", "PodGroup", True, "podgroups", _RW),
    R.Resource(
        "certificates.k8s.io", "v1", CSR_PLURAL, "CertificateSigningRequest", False, "csrs", _RW, ("csr",)
    ),
]
CLUSTER_KINDS = {r.store for r in EXTRA if not r.namespaced}
NAMESPACED_STORES = [r.store for r in EXTRA if r.namespaced]


def register() -> None:
    """Add the kinds to the emulator's resource table (idempotent; discovery lists them from then on)."""
    for res in EXTRA:
        if (res.group, res.version, res.plural) not in R.BY_PATH:
            R.RESOURCES.append(res)
            R.BY_PATH[(res.group, res.version, res.plural)] = res
    S.CLUSTER_SCOPED = S.CLUSTER_SCOPED | CLUSTER_KINDS


def unregister() -> None:
    """Take the kinds out of the resource table again (tests: the table is the process's, not one emulator's)."""
    for res in EXTRA:
        if R.BY_PATH.get((res.group, res.version, res.plural)) is res:
            R.RESOURCES.remove(res)
            del R.BY_PATH[(res.group, res.version, res.plural)]
    S.CLUSTER_SCOPED = S.CLUSTER_SCOPED - CLUSTER_KINDS


def install(emulator) -> ResearcherApi:
    """Serve the researcher's kinds on a running or new Emulator (wraps its ``api.handle``)."""
    register()
    ext = ResearcherApi(emulator.api)
    emulator.api.handle = ext.handle
    return ext


def _status(code: int, reason: str, message: str) -> dict:
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "message": message,
            "reason": reason, "code": code}  # fmt: skip


def _suffix(n: int = 5) -> str:
    alphabet = "bcdfghjklmnpqrstvwxz2456789"  # apimachinery's utilrand alphanumerics
    return "".join(secrets.choice(alphabet) for _ in range(n))


class ResearcherApi:
    def __init__(self, api: KubeApi) -> None:
        self.api = api
        self.model = api.model
        self.inner = api.handle
        self.namespaces: dict[str, dict] = {}
        self.ca_key, self.ca_cert = _new_ca()

    @property
    def ca_pem(self) -> bytes:
        from cryptography.hazmat.primitives import serialization

        return self.ca_cert.public_bytes(serialization.Encoding.PEM)

    # --- routing ---------------------------------------------------------------------------------------
    def handle(self, method: str, path: str, query: dict[str, str], content_type: str, body: bytes):
        parts = [p for p in path.split("/") if p]
        method = method.upper()
        try:
            payload = json.loads(body) if body else None
        except ValueError:
            payload = None
        try:
            if parts[:3] == ["api", "v1", "namespaces"]:
                reply = self._namespace(method, parts[3:], query, content_type, body, payload)
                if reply is not None:
                    return reply
            if parts[:3] == ["apis", "batch", "v1"]:
                reply = self._jobs(method, parts[3:], query, content_type, body, payload)
                if reply is not None:
                    return reply
            if parts[:4] == ["apis", "certificates.k8s.io", "v1", CSR_PLURAL]:
                reply = self._csrs(method, parts[4:], payload)
                if reply is not None:
                    return reply
        except S.StoreError as e:
            return Reply(e.code, _status(e.code, e.reason, str(e)))
        return self.inner(method, path, query, content_type, body)

    # --- namespaces ------------------------------------------------------------------------------------
    def _namespace(self, method, rest, query, content_type, body, payload):
        if method == "POST" and not rest:
            name = ((payload or {}).get("metadata") or {}).get("name", "")
            if not _DNS1123_LABEL.match(name) or len(name) > 63:
                raise Invalid(f'Namespace "{name}" is invalid: metadata.name: must be a DNS-1123 label')
            if name in self.namespaces:
                raise AlreadyExists(f'namespaces "{name}" already exists')
            ns = copy.deepcopy(payload)
            ns.update(apiVersion="v1", kind="Namespace", status={"phase": "Active"})
            ns["metadata"].update(uid=f"ns-{name}", resourceVersion=str(self.model.store.resource_version))
            ns.setdefault("spec", {"finalizers": ["kubernetes"]})
            self.namespaces[name] = ns
            return Reply(201, copy.deepcopy(ns))
        if len(rest) == 1 and method == "GET" and rest[0] in self.namespaces:
            return Reply(200, copy.deepcopy(self.namespaces[rest[0]]))
        if len(rest) == 1 and method == "DELETE":
            name = rest[0]
            ns = self.namespaces.pop(name, None) or self.api._namespace(name)
            with self.model.lock:
                self.model.advance()
                for job in self.model.store.list("jobs", name):
                    self._delete_job_pods(job)
                for kind in [*NAMESPACED_STORES, "pods", "configmaps", "leases", "poddisruptionbudgets"]:
                    for obj in list(self.model.store.list(kind, name)):
                        self.model.delete(kind, name, obj["metadata"]["name"])
            ns = copy.deepcopy(ns)
            ns["status"] = {"phase": "Terminating"}
            return Reply(200, ns)
        if not rest and method == "GET" and query.get("watch") not in ("1", "true"):
            reply = self.inner(method, "/api/v1/namespaces", query, content_type, body)
            have = {n["metadata"]["name"] for n in reply.body.get("items", [])}
            reply.body["items"] += [
                copy.deepcopy(n) for k, n in sorted(self.namespaces.items()) if k not in have
            ]
            return reply
        return None

    # --- jobs ------------------------------------------------------------------------------------------
    def _jobs(self, method, rest, query, content_type, body, payload):
        namespace = rest[1] if len(rest) >= 2 and rest[0] == "namespaces" else None
        tail = rest[2:] if namespace else rest
        if tail[:1] != ["jobs"]:
            return None
        if method == "POST" and len(tail) == 1 and namespace:
            job = self._validate_job(payload, namespace)
            reply = self.inner(method, "/".join(["", "apis", "batch", "v1", *rest]), query, content_type,
                               json.dumps(job).encode())  # fmt: skip
            if reply.status == 201:
                with self.model.lock:
                    self._start_pods(reply.body)
                reply.body["status"] = self._job_status(reply.body)
            return reply
        if method == "DELETE" and len(tail) == 2 and namespace:
            with self.model.lock:
                job = self.model.store.find("jobs", namespace, tail[1])
                if job is not None:
                    self._delete_job_pods(job)
            return None
        if method == "GET":
            reply = self.inner(
                method, "/".join(["", "apis", "batch", "v1", *rest]), query, content_type, body
            )
            if isinstance(reply, Reply) and reply.status == 200:
                with self.model.lock:
                    items = reply.body.get("items") if reply.body.get("kind") == "JobList" else [reply.body]
                    for job in items or []:
                        if job.get("kind", "Job") == "Job" and "spec" in job:
                            job["status"] = self._job_status(job)
            return reply
        return None

    def _validate_job(self, job, namespace: str) -> dict:
        if not isinstance(job, dict):
            raise Invalid("expected a Job object")
        job = copy.deepcopy(job)
        meta = job.setdefault("metadata", {})
        name = meta.get("name", "")
        spec = job.get("spec") or {}
        template = spec.get("template") or {}
        pod_spec = template.get("spec") or {}
        errors = []
        if not _DNS1123_LABEL.match(name) or len(name) > 63:
            errors.append("metadata.name: must be a DNS-1123 label of at most 63 characters")
        if pod_spec.get("restartPolicy") not in ("Never", "OnFailure"):
            errors.append(
                'spec.template.spec.restartPolicy: Unsupported value: supported values: "OnFailure", "Never"'
            )
        if not pod_spec.get("containers"):
            errors.append("spec.template.spec.containers: Required value")
        mode = spec.get("completionMode", "NonIndexed")
        if mode == "Indexed" and spec.get("completions") is None:
            errors.append("spec.completions: Required value: when completion mode is Indexed")
        for key in ("completions", "parallelism", "backoffLimit"):
            if spec.get(key) is not None and spec[key] < 0:
                errors.append(f"spec.{key}: Invalid value: must be greater than or equal to 0")
        if errors:
            raise Invalid(f'Job.batch "{name}" is invalid: ' + "; ".join(errors))
        uid = f"{secrets.token_hex(4)}-j0b5-4000-8000-{secrets.token_hex(6)}"
        generated = {"batch.kubernetes.io/controller-uid": uid, "controller-uid": uid,
                     "batch.kubernetes.io/job-name": name, "job-name": name}  # fmt: skip
        spec.setdefault("selector", {"matchLabels": {"batch.kubernetes.io/controller-uid": uid}})
        spec.setdefault("parallelism", 1)
        spec.setdefault("completions", 1 if mode == "NonIndexed" else spec.get("completions"))
        spec.setdefault("backoffLimit", 6)
        spec.setdefault("suspend", False)
        template.setdefault("metadata", {}).setdefault("labels", {}).update(generated)
        job["spec"] = spec
        meta.setdefault("annotations", {})["research.cluster/emulator-controller-uid"] = uid
        return job

    def _start_pods(self, job: dict) -> None:
        meta, spec = job["metadata"], job["spec"]
        if spec.get("suspend"):
            return
        indexed = spec.get("completionMode") == "Indexed"
        count = min(spec.get("parallelism", 1), spec.get("completions") or spec.get("parallelism", 1))
        owner = {"apiVersion": "batch/v1", "kind": "Job", "name": meta["name"], "uid": meta["uid"],
                 "controller": True, "blockOwnerDeletion": True}  # fmt: skip
        for index in range(count):
            template = copy.deepcopy(spec["template"])
            pmeta = template.get("metadata") or {}
            pspec = template["spec"]
            labels = dict(pmeta.get("labels") or {})
            annotations = dict(pmeta.get("annotations") or {})
            if indexed:
                labels["batch.kubernetes.io/job-completion-index"] = str(index)
                annotations["batch.kubernetes.io/job-completion-index"] = str(index)
                pspec["hostname"] = f"{meta['name']}-{index}"
                for c in pspec.get("containers", []) + pspec.get("initContainers", []):
                    env = c.setdefault("env", [])
                    if not any(e.get("name") == "JOB_COMPLETION_INDEX" for e in env):
                        env.append({"name": "JOB_COMPLETION_INDEX", "valueFrom": {"fieldRef": {
                            "fieldPath": "metadata.annotations['batch.kubernetes.io/job-completion-index']"}}})  # fmt: skip
            prefix = f"{meta['name']}-{index}-" if indexed else f"{meta['name']}-"
            pod = {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {
                    "name": prefix + _suffix(),
                    "namespace": meta["namespace"],
                    "labels": labels,
                    "annotations": annotations,
                    "ownerReferences": [owner],
                },
                "spec": pspec,
            }
            self.model.create("pods", pod)

    def _pods_of(self, job: dict) -> list[dict]:
        uid = job["metadata"]["uid"]
        return [
            p for p in self.model.store.list("pods", job["metadata"]["namespace"])
            if any(o.get("uid") == uid and o.get("controller") for o in p["metadata"].get("ownerReferences") or [])
        ]  # fmt: skip

    def _delete_job_pods(self, job: dict) -> None:
        """The garbage collector's cascade: every pod the Job owns, controlled or not (e.g. its TensorBoard)."""
        uid = job["metadata"]["uid"]
        owned = [
            p for p in self.model.store.list("pods", job["metadata"]["namespace"])
            if any(o.get("uid") == uid for o in p["metadata"].get("ownerReferences") or [])
        ]  # fmt: skip
        for pod in owned:
            self.model.delete("pods", pod["metadata"]["namespace"], pod["metadata"]["name"])

    def _job_status(self, job: dict) -> dict:
        phases = [p["status"].get("phase") for p in self._pods_of(job)]
        active = sum(ph in ("Pending", "Running") for ph in phases)
        succeeded, failed = phases.count("Succeeded"), phases.count("Failed")
        status: dict = {
            "active": active,
            "succeeded": succeeded,
            "failed": failed,
            "ready": phases.count("Running"),
        }
        now = dt.datetime.fromtimestamp(self.model.now(), dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        if failed > job["spec"].get("backoffLimit", 6):
            status["conditions"] = [{"type": "Failed", "status": "True", "reason": "BackoffLimitExceeded",
                                     "lastTransitionTime": now}]  # fmt: skip
        elif succeeded >= (job["spec"].get("completions") or 1):
            status["conditions"] = [{"type": "Complete", "status": "True", "lastTransitionTime": now}]
        return status

    # --- certificate signing requests ------------------------------------------------------------------
    def _csrs(self, method, rest, payload):
        if method == "POST" and not rest:
            self._validate_csr(payload)
            return None  # stored by the generic handler
        if len(rest) == 2 and rest[1] == "approval" and method == "PUT":
            return Reply(200, self._approve(rest[0], payload))
        if len(rest) == 2 and rest[1] == "status" and method == "GET":
            return self.inner("GET", f"/apis/certificates.k8s.io/v1/{CSR_PLURAL}/{rest[0]}", {}, "", b"")
        return None

    def _validate_csr(self, obj) -> None:
        from cryptography import x509

        spec = (obj or {}).get("spec") or {}
        name = ((obj or {}).get("metadata") or {}).get("name", "")
        problems = []
        try:
            csr = x509.load_pem_x509_csr(base64.b64decode(spec.get("request", "")))
            if not csr.is_signature_valid:
                problems.append("spec.request: Invalid value: the request's signature is not valid")
        except ValueError:
            problems.append("spec.request: Invalid value: PEM block type must be CERTIFICATE REQUEST")
        if "/" not in (spec.get("signerName") or ""):
            problems.append("spec.signerName: Required value: a fully qualified name like example.com/signer")
        usages = spec.get("usages") or []
        if not usages:
            problems.append("spec.usages: Required value")
        problems += [f"spec.usages: Unsupported value: {u!r}" for u in usages if u not in KNOWN_USAGES]
        if spec.get("expirationSeconds") is not None and spec["expirationSeconds"] < 600:
            problems.append(
                "spec.expirationSeconds: Invalid value: may not specify a duration less than 600 seconds"
            )
        if problems:
            raise Invalid(
                f'CertificateSigningRequest.certificates.k8s.io "{name}" is invalid: ' + "; ".join(problems)
            )

    def _approve(self, name: str, payload) -> dict:
        conditions = ((payload or {}).get("status") or {}).get("conditions") or []
        types = {c.get("type") for c in conditions if c.get("status", "True") == "True"}
        if {"Approved", "Denied"} <= types:
            raise Invalid("status.conditions: Approved and Denied conditions are mutually exclusive")
        with self.model.lock:
            self.model.advance()
            current = self.model.store.find("csrs", None, name)
            if current is None:
                raise NotFound(f'certificatesigningrequests.certificates.k8s.io "{name}" not found')
            csr = copy.deepcopy(current)
            now = dt.datetime.fromtimestamp(self.model.now(), dt.UTC)
            stamp = now.strftime("%Y-%m-%dT%H:%M:%SZ")
            status = csr.setdefault("status", {})
            status["conditions"] = [
                {**c, "lastUpdateTime": stamp, "lastTransitionTime": stamp, "status": c.get("status", "True")}
                for c in conditions
            ]
            if "Approved" in types and csr["spec"].get("signerName") == SIGNER:
                self._sign(csr, now)
            self.model.store.replace("csrs", csr, check_version=False)
            out = copy.deepcopy(csr)
        out["metadata"].pop("namespace", None)
        out.update(apiVersion="certificates.k8s.io/v1", kind="CertificateSigningRequest")
        return out

    def _sign(self, csr: dict, now: dt.datetime) -> None:
        """kube-controller-manager's kube-apiserver-client signer: validate usages, then issue."""
        from cryptography import x509
        from cryptography.hazmat.primitives import hashes, serialization
        from cryptography.x509.oid import ExtendedKeyUsageOID

        spec = csr["spec"]
        usages = set(spec.get("usages") or [])
        conditions = csr["status"]["conditions"]
        if "client auth" not in usages or not usages <= CLIENT_USAGES:
            conditions.append({"type": "Failed", "status": "True", "reason": "SignerValidationFailure",
                               "message": "invalid usage for client certificate: " + ", ".join(sorted(usages))})  # fmt: skip
            return
        request = x509.load_pem_x509_csr(base64.b64decode(spec["request"]))
        duration = min(spec.get("expirationSeconds") or DEFAULT_DURATION_S, DEFAULT_DURATION_S)
        key_usage = {
            "digital_signature": "digital signature" in usages,
            "key_encipherment": "key encipherment" in usages,
        }
        cert = (
            x509.CertificateBuilder()
            .subject_name(request.subject)
            .issuer_name(self.ca_cert.subject)
            .public_key(request.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - dt.timedelta(minutes=5))
            .not_valid_after(now + dt.timedelta(seconds=duration))
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(
                x509.KeyUsage(
                    content_commitment=False,
                    data_encipherment=False,
                    key_agreement=False,
                    key_cert_sign=False,
                    crl_sign=False,
                    encipher_only=False,
                    decipher_only=False,
                    **key_usage,
                ),  # fmt: skip
                critical=True,
            )
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False)
            .sign(self.ca_key, hashes.SHA256())
        )
        csr["status"]["certificate"] = base64.b64encode(
            cert.public_bytes(serialization.Encoding.PEM)
        ).decode()


def _new_ca():
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "emulator-ca@" + "".join(
        secrets.choice(string.digits) for _ in range(10)))])  # fmt: skip
    now = dt.datetime.now(dt.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(days=1))
        .not_valid_after(now + dt.timedelta(days=3650))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    return key, cert
