"""kube-controller-manager's CSR signer (pkg/controller/certificates/signer) for ``kubernetes.io/kube-apiserver-
client``: an Approved request without a certificate is signed by the cluster CA (through ``model.sign_csr``, the
serving API server's CA) for ``spec.expirationSeconds`` (default and cap ``--cluster-signing-duration``, one year), with the
request's subject; usages other than digital signature, key encipherment and client auth, or without client
auth, get a ``Failed`` condition (``SignerValidationFailure``). Other signers are left to their own signers."""

from __future__ import annotations

from autoscaler.model.clock import iso
from autoscaler.model.controllers import Controller
from autoscaler.model.controllers.common import has_condition

SIGNER = "kubernetes.io/kube-apiserver-client"
CLIENT_USAGES = {"digital signature", "key encipherment", "client auth"}


class CsrSigner(Controller):
    kinds = ("certificatesigningrequests",)

    def on_change(self, kind: str, event_type: str, obj: dict) -> None:
        if event_type != "DELETED":
            self.dirty.add(obj["metadata"]["name"])

    def sync(self) -> None:
        work, self.dirty = self.dirty, set()
        for name in sorted(work):
            csr = self.store.find("certificatesigningrequests", None, name)
            if csr is None or self.model.sign_csr is None:
                continue
            spec, status = csr.get("spec") or {}, csr.setdefault("status", {})
            if spec.get("signerName") != SIGNER or status.get("certificate"):
                continue
            if (
                not has_condition(status, "Approved")
                or has_condition(status, "Denied")
                or has_condition(status, "Failed")
            ):
                continue
            usages = set(spec.get("usages") or ())
            if "client auth" not in usages or not usages <= CLIENT_USAGES:
                status.setdefault("conditions", []).append({
                    "type": "Failed", "status": "True", "reason": "SignerValidationFailure",
                    "message": "invalid usage for client certificate: " + ", ".join(sorted(usages)),
                    "lastUpdateTime": iso(self.model.clock.now()), "lastTransitionTime": iso(self.model.clock.now())})  # fmt: skip
            else:
                status["certificate"] = self.model.sign_csr(csr)
            self.store.modified("certificatesigningrequests", csr)
