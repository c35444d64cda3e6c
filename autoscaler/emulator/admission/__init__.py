"""The admission chain, in kube-apiserver's order of its default plugins (pkg/kubeapiserver/options/plugins.go
``AllOrderedPlugins``): mutating first, then validating.

| plugin | what it does here |
|---|---|
| NamespaceLifecycle | no new object in a namespace that does not exist (404 ``namespaces "x" not found``) or is terminating (403); ``default``, ``kube-system``, ``kube-public`` may not be deleted |
| LimitRanger | container defaults and the LimitRanges' min/max/ratio (:mod:`.quota`) |
| ServiceAccount | a pod's ServiceAccount (``default``) must exist; its token as the ``kube-api-access-*`` projected volume in every container |
| Priority | ``priorityClassName`` to ``priority`` and ``preemptionPolicy`` (the built-in ``system-*-critical`` classes too) |
| DefaultStorageClass, StorageObjectInUseProtection | a claim without a class gets the default one; claims and volumes get their protection finalizers |
| PodSecurity | :mod:`.podsecurity` |
| ValidatingAdmissionPolicy | :mod:`.policies` (CEL by cel-python) |
| ResourceQuota | :mod:`.quota` |
| CertificateApproval, CertificateSigning, CertificateSubjectRestriction | approving a request needs ``approve`` on its signer; no ``system:masters`` client certificates |

RBAC's own escalation checks (pkg/registry/rbac) run here too, for Roles, ClusterRoles and their bindings.
Taints of new nodes (TaintNodesByCondition) and pods' not-ready/unreachable tolerations (DefaultTolerationSeconds)
are the model's, which the simulator shares.
"""

from __future__ import annotations

import base64
import secrets

from autoscaler.emulator.admission.podsecurity import PodSecurity
from autoscaler.emulator.admission.policies import ValidatingAdmissionPolicies
from autoscaler.emulator.admission.quota import LimitRanger, ResourceQuota
from autoscaler.emulator.auth.rbac import Attributes, compact
from autoscaler.emulator.auth.user import MASTERS, UserInfo
from autoscaler.emulator.errors import Forbidden, forbidden, not_found

IMMORTAL_NAMESPACES = ("default", "kube-system", "kube-public")
TOKEN_MOUNT = "/var/run/secrets/kubernetes.io/serviceaccount"
SUFFIX_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"  # apimachinery utilrand
DEFAULT_SC_ANNOTATION = "storageclass.kubernetes.io/is-default-class"
NAMESPACE_EXEMPT = {"namespaces", "selfsubjectaccessreviews", "subjectaccessreviews", "localsubjectaccessreviews",
                    "selfsubjectrulesreviews", "tokenreviews", "selfsubjectreviews"}  # fmt: skip


def suffix(n: int = 5) -> str:
    return "".join(secrets.choice(SUFFIX_ALPHABET) for _ in range(n))


class Admission:
    def __init__(self, api) -> None:
        self.api = api
        self.limits = LimitRanger(api)
        self.quota = ResourceQuota(api)
        self.pod_security = PodSecurity(api)
        self.policies = ValidatingAdmissionPolicies(api)
        self.webhooks: list = []  # emulated webhooks of images the emulator knows (kubelet/webhooks.py)

    @property
    def store(self):
        return self.api.model.store

    def admit(self, op: str, res, obj: dict, old: dict | None, namespace: str | None, user: UserInfo,
              sub: str = "") -> None:  # fmt: skip
        """Run the chain on ``obj`` (mutated in place); raise the first refusal."""
        self.mutate(op, res, obj, old, namespace, user, sub)
        self.validate(op, res, obj, old, namespace, user, sub)

    def mutate(self, op: str, res, obj: dict, old: dict | None, namespace: str | None, user: UserInfo,
               sub: str = "") -> None:  # fmt: skip
        """The mutating plugins (before a generated name is given: their refusals name the generateName)."""
        plural = res.plural
        if op == "CREATE" and not sub:
            self._lifecycle(res, namespace, (obj.get("metadata") or {}).get("name", ""))
        self.limits.mutate(op, plural, obj, namespace or "", sub)
        if plural == "pods" and op == "CREATE" and not sub:
            self._service_account(obj, namespace or "default")
            self._priority(obj)
        if plural == "persistentvolumeclaims" and op == "CREATE":
            self._default_storage_class(obj)
        if op == "CREATE" and plural in ("persistentvolumeclaims", "persistentvolumes"):
            fin = (
                "kubernetes.io/pvc-protection"
                if plural == "persistentvolumeclaims"
                else "kubernetes.io/pv-protection"
            )
            finalizers = obj["metadata"].setdefault("finalizers", [])
            if fin not in finalizers:
                finalizers.append(fin)
        for hook in self.webhooks:
            hook(op, res, obj, old, namespace, user, sub)

    def validate(self, op: str, res, obj: dict, old: dict | None, namespace: str | None, user: UserInfo,
                 sub: str = "") -> None:  # fmt: skip
        """The validating plugins (after validation, on the object as it will be stored)."""
        plural = res.plural
        self.limits.validate(op, plural, obj, namespace or "", sub)
        self.pod_security.validate(op, plural, obj, old, namespace, sub)
        if plural in ("roles", "clusterroles", "rolebindings", "clusterrolebindings") and op in (
            "CREATE",
            "UPDATE",
        ):
            self._rbac_escalation(res, obj, namespace, user)
        if plural == "certificatesigningrequests":
            self._certificates(op, obj, old, user, sub)
        self.policies.validate(op, res, obj, old, namespace, user, sub)
        if op in ("CREATE", "UPDATE") and not sub:
            self.quota.validate(op, res, obj, old, namespace, sub)

    # --- NamespaceLifecycle ------------------------------------------------------------------------------
    def _lifecycle(self, res, namespace: str | None, name: str) -> None:
        if not res.namespaced or res.plural in NAMESPACE_EXEMPT or not namespace:
            return
        ns = self.store.find("namespaces", None, namespace)
        if ns is None:
            raise not_found("", "namespaces", namespace)
        if (ns.get("status") or {}).get("phase") == "Terminating" or ns["metadata"].get("deletionTimestamp"):
            err = forbidden(
                res.group,
                res.plural,
                name,
                f"unable to create new content in namespace {namespace} because it is being terminated",
            )
            err.details["causes"] = [{"reason": "NamespaceTerminating", "field": "metadata.namespace",
                                      "message": f"namespace {namespace} is being terminated"}]  # fmt: skip
            raise err

    def deletable(self, namespace: str) -> None:
        if namespace in IMMORTAL_NAMESPACES:
            raise forbidden("", "namespaces", namespace, "this namespace may not be deleted")

    # --- ServiceAccount ----------------------------------------------------------------------------------
    def _service_account(self, pod: dict, namespace: str) -> None:
        spec = pod.setdefault("spec", {})
        if (pod["metadata"].get("annotations") or {}).get("kubernetes.io/config.mirror"):
            return
        name = spec.get("serviceAccountName") or spec.get("serviceAccount") or "default"
        spec["serviceAccountName"] = name
        spec["serviceAccount"] = name
        sa = self.store.find("serviceaccounts", namespace, name)
        pod_name = pod["metadata"].get("name") or pod["metadata"].get("generateName", "")
        if sa is None:
            raise forbidden("", "pods", pod_name, f"error looking up service account {namespace}/{name}: "
                            f'serviceaccount "{name}" not found')  # fmt: skip
        if not spec.get("imagePullSecrets") and sa.get("imagePullSecrets"):
            spec["imagePullSecrets"] = [dict(s) for s in sa["imagePullSecrets"]]
        automount = spec.get("automountServiceAccountToken")
        if automount is None:
            automount = sa.get("automountServiceAccountToken")
        if automount is False:
            return
        containers = [*(spec.get("initContainers") or ()), *(spec.get("containers") or ())]
        if all(
            any(m.get("mountPath") == TOKEN_MOUNT for m in c.get("volumeMounts") or ()) for c in containers
        ):
            return
        volume = f"kube-api-access-{suffix()}"
        spec.setdefault("volumes", []).append({
            "name": volume,
            "projected": {
                "defaultMode": 420,
                "sources": [
                    {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
                    {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
                    {"downwardAPI": {"items": [{"path": "namespace", "fieldRef": {
                        "apiVersion": "v1", "fieldPath": "metadata.namespace"}}]}},
                ],
            },
        })  # fmt: skip
        for c in containers:
            mounts = c.setdefault("volumeMounts", [])
            if not any(m.get("mountPath") == TOKEN_MOUNT for m in mounts):
                mounts.append({"name": volume, "readOnly": True, "mountPath": TOKEN_MOUNT})

    # --- Priority ----------------------------------------------------------------------------------------
    def _priority(self, pod: dict) -> None:
        spec = pod.setdefault("spec", {})
        name = spec.get("priorityClassName")
        pod_name = pod["metadata"].get("name") or pod["metadata"].get("generateName", "")
        if name:
            pc = self.store.find("priorityclasses", None, name)
            if pc is None:
                raise forbidden("", "pods", pod_name, f"no PriorityClass with name {name} was found")
        else:
            pc = next((p for p in self.store.list("priorityclasses") if p.get("globalDefault")), None)
            if pc is not None:
                spec["priorityClassName"] = pc["metadata"]["name"]
        value = pc.get("value", 0) if pc else 0
        if spec.get("priority") is not None and spec["priority"] != value:
            raise forbidden("", "pods", pod_name, f"the integer value of priority ({spec['priority']}) must not be "
                            f"provided in pod spec; priority admission controller computed {value} from the given "
                            "PriorityClass name")  # fmt: skip
        spec["priority"] = value
        spec.setdefault("preemptionPolicy", (pc or {}).get("preemptionPolicy") or "PreemptLowerPriority")

    # --- storage -----------------------------------------------------------------------------------------
    def _default_storage_class(self, pvc: dict) -> None:
        spec = pvc.setdefault("spec", {})
        if "storageClassName" in spec:
            return
        defaults = [sc for sc in self.store.list("storageclasses")
                    if (sc["metadata"].get("annotations") or {}).get(DEFAULT_SC_ANNOTATION) == "true"]  # fmt: skip
        if defaults:
            newest = max(
                defaults, key=lambda sc: (sc["metadata"].get("creationTimestamp", ""), sc["metadata"]["name"])
            )
            spec["storageClassName"] = newest["metadata"]["name"]

    # --- RBAC escalation ---------------------------------------------------------------------------------
    def _rbac_escalation(self, res, obj: dict, namespace: str | None, user: UserInfo) -> None:
        if MASTERS in user.groups:
            return
        authz = self.api.authorizer
        ns = namespace or ""
        plural = res.plural
        name = obj["metadata"].get("name", "")
        if plural in ("roles", "clusterroles"):
            allowed, _ = authz.allows(
                Attributes(user, "escalate", "rbac.authorization.k8s.io", plural, "", ns, name)
            )
            if allowed:
                return
            rules = obj.get("rules") or []
            missing = authz.confirm_no_escalation(user, ns, rules)
        else:
            ref = obj.get("roleRef") or {}
            ref_plural = "clusterroles" if ref.get("kind") == "ClusterRole" else "roles"
            allowed, _ = authz.allows(Attributes(user, "bind", "rbac.authorization.k8s.io", ref_plural, "", ns,
                                                 ref.get("name", "")))  # fmt: skip
            if allowed:
                return
            rules = authz._role_rules(ref, ns, [])
            missing = authz.confirm_no_escalation(user, ns, rules)
        if missing:
            groups = "[" + " ".join(f'"{g}"' for g in user.groups) + "]"
            text = (f'user "{user.name}" (groups={groups}) is attempting to grant RBAC permissions not currently held:\n'
                    + "\n".join(compact(r) for r in missing))  # fmt: skip
            raise forbidden("rbac.authorization.k8s.io", plural, name, text)

    # --- certificates ------------------------------------------------------------------------------------
    def _certificates(self, op: str, csr: dict, old: dict | None, user: UserInfo, sub: str) -> None:
        signer = (csr.get("spec") or {}).get("signerName", "")
        name = csr["metadata"].get("name", "")
        if op == "CREATE" and not sub and signer == "kubernetes.io/kube-apiserver-client":
            from cryptography import x509
            from cryptography.x509.oid import NameOID

            try:
                req = x509.load_pem_x509_csr(base64.b64decode((csr.get("spec") or {}).get("request", "")))
            except ValueError:
                return  # validation reports it
            orgs = [a.value for a in req.subject.get_attributes_for_oid(NameOID.ORGANIZATION_NAME)]
            if MASTERS in orgs:
                raise forbidden("certificates.k8s.io", "certificatesigningrequests", name,
                                f"use of {signer} signer with system:masters group is not allowed")  # fmt: skip
        if sub == "approval" and op == "UPDATE" and not self._signer_allows(user, "approve", signer):
            raise forbidden("certificates.k8s.io", "certificatesigningrequests", name,
                            f'user not permitted to approve requests with signerName "{signer}"')  # fmt: skip
        if (
            sub == "status"
            and op == "UPDATE"
            and (csr.get("status") or {}).get("certificate")
            != ((old or {}).get("status") or {}).get("certificate")
            and not self._signer_allows(user, "sign", signer)
        ):
            raise forbidden("certificates.k8s.io", "certificatesigningrequests", name,
                            f'user not permitted to sign requests with signerName "{signer}"')  # fmt: skip

    def _signer_allows(self, user: UserInfo, verb: str, signer: str) -> bool:
        authz = self.api.authorizer
        domain = signer.split("/", 1)[0]
        for n in (signer, f"{domain}/*"):
            if authz.allows(Attributes(user, verb, "certificates.k8s.io", "signers", "", "", n))[0]:
                return True
        return False


__all__ = ["Admission", "Forbidden", "suffix"]
