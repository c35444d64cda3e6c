"""Three of kube-controller-manager's controllers that give every namespace what its pods need:

- the ServiceAccount controller (pkg/controller/serviceaccount ``serviceaccounts_controller.go``): a ``default``
  ServiceAccount in every active namespace, re-made if deleted;
- the root CA publisher (pkg/controller/certificates/rootcacertpublisher): the ``kube-root-ca.crt`` ConfigMap
  (``ca.crt``: the cluster CA) in every namespace, which the ``kube-api-access-*`` projected volumes read;
- the token controller (``tokens_controller.go``): a Secret of type ``kubernetes.io/service-account-token``
  annotated ``kubernetes.io/service-account.name`` gets ``token``, ``ca.crt`` and ``namespace`` (and the
  ServiceAccount's uid); one whose ServiceAccount is gone is deleted. Since 1.24 such Secrets exist only when a
  user creates them.

The CA and the token signer are the API server's (``model.cluster_ca_pem``, ``model.legacy_token``), set by an API
server serving the model; without them (the simulator) only the ServiceAccounts are made.
"""

from __future__ import annotations

import base64

from autoscaler.model.controllers import Controller

ROOT_CA = "kube-root-ca.crt"
TOKEN_TYPE = "kubernetes.io/service-account-token"
SA_NAME = "kubernetes.io/service-account.name"
SA_UID = "kubernetes.io/service-account.uid"


class ServiceAccountController(Controller):
    kinds = ("namespaces", "serviceaccounts", "configmaps", "secrets")

    def on_change(self, kind: str, event: str, obj: dict) -> None:
        meta = obj["metadata"]
        if kind == "namespaces":
            if event != "DELETED":
                self.dirty.add(("ns", meta["name"]))
        elif kind == "serviceaccounts" and event == "DELETED":
            self.dirty.add(("ns", meta.get("namespace", "")))
            self.dirty.add(("sa-gone", meta.get("namespace", ""), meta["name"]))
        elif kind == "configmaps" and meta["name"] == ROOT_CA and event != "ADDED":
            self.dirty.add(("ns", meta.get("namespace", "")))
        elif kind == "secrets" and event != "DELETED" and obj.get("type") == TOKEN_TYPE:
            self.dirty.add(("secret", meta.get("namespace", ""), meta["name"]))

    def _active(self, name: str) -> bool:
        ns = self.store.find("namespaces", None, name)
        return ns is not None and not ns["metadata"].get("deletionTimestamp")

    def sync(self) -> None:
        work, self.dirty = self.dirty, set()
        for item in sorted(work):
            if item[0] == "ns" and self._active(item[1]):
                self._namespace(item[1])
            elif item[0] == "secret":
                self._secret(item[1], item[2])
            elif item[0] == "sa-gone":
                for s in list(self.store.list("secrets", item[1])):
                    if (
                        s.get("type") == TOKEN_TYPE
                        and (s["metadata"].get("annotations") or {}).get(SA_NAME) == item[2]
                    ):
                        self.store.delete("secrets", item[1], s["metadata"]["name"])

    def _namespace(self, name: str) -> None:
        if self.store.find("serviceaccounts", name, "default") is None:
            self.store.create("serviceaccounts", {"apiVersion": "v1", "kind": "ServiceAccount",
                                                  "metadata": {"name": "default", "namespace": name}})  # fmt: skip
        pem = self.model.cluster_ca_pem
        if pem is None:
            return
        data = {"ca.crt": pem.decode() if isinstance(pem, bytes) else pem}
        cm = self.store.find("configmaps", name, ROOT_CA)
        annotations = {"kubernetes.io/description": "Contains a CA bundle that can be used to verify the "
                       "kube-apiserver when using internal endpoints such as the internal service IP or "
                       "kubernetes.default.svc. No other usage is guaranteed across distributions of Kubernetes "
                       "clusters."}  # fmt: skip
        if cm is None:
            self.store.create("configmaps", {"apiVersion": "v1", "kind": "ConfigMap",
                                             "metadata": {"name": ROOT_CA, "namespace": name, "annotations": annotations},
                                             "data": data})  # fmt: skip
        elif cm.get("data") != data:
            cm["data"] = data
            self.store.modified("configmaps", cm)

    def _secret(self, ns: str, name: str) -> None:
        secret = self.store.find("secrets", ns, name)
        if secret is None:
            return
        annotations = secret["metadata"].setdefault("annotations", {})
        sa = self.store.find("serviceaccounts", ns, annotations.get(SA_NAME, ""))
        if sa is None:
            self.store.delete("secrets", ns, name)
            return
        if (secret.get("data") or {}).get("token") or self.model.legacy_token is None:
            return
        token = self.model.legacy_token(sa, secret)
        data = secret.setdefault("data", {})
        data["token"] = base64.b64encode(token.encode()).decode()
        data["namespace"] = base64.b64encode(ns.encode()).decode()
        if self.model.cluster_ca_pem is not None:
            pem = self.model.cluster_ca_pem
            data["ca.crt"] = base64.b64encode(pem if isinstance(pem, bytes) else pem.encode()).decode()
        annotations[SA_UID] = sa["metadata"]["uid"]
        self.store.modified("secrets", secret)
