"""Researchers as tenants: what keeps one researcher's namespace from reaching the nodes, the control plane,
the other namespaces and more than its share of GPUs (issue 26, docs/researchers.md "Tenancy").

Per researcher's namespace (``invoke add-user`` creates them with the namespace, :func:`namespace_objects`):

- Pod Security: ``baseline`` enforced (no privileged container, host namespace, hostPath volume, hostPort, added
  capability beyond the default set, ...), ``restricted`` warned and audited, pinned to the spec's minor
  (Kubernetes "Pod Security Admission": pin the version so an upgrade does not change what is refused);
- a ResourceQuota: the researcher's GPUs (``users[].gpu_quota``, else ``researchers.quota.gpus``), pods and
  Services, so one namespace cannot take every GPU of the cluster;
- a LimitRange: requests for containers that give none (BestEffort pods would otherwise be the first evicted
  and escape the scheduler's accounting);
- NetworkPolicies (enforced by kube-router's policy controller beside flannel, :func:`cluster_objects`):
  ``default-deny-ingress`` (nothing reaches a pod unless a policy says so), ``from-laptops`` (the published
  ports, ``researchers.quota.published_ports``: TensorBoard, notebooks, from the pod gateways' identity pods, the
  only way into the overlay from the VPN and the sites), and per multi-node job the policy ``lab submit`` creates (labctl/jobs.py ``network_policy_manifest``) (its
  pods reach each other on every port: rendezvous, NCCL/gloo).

Cluster-wide (:func:`cluster_objects`, ``invoke deploy-tenancy``, also run by ``invoke up``):

- a ValidatingAdmissionPolicy (built into kube-apiserver since 1.30, CEL) bound to every researcher's namespace:
  a pod there may not tolerate the control plane's or the pod gateways' taints, nor every taint (``operator:
  Exists`` without a key), and may not name its node (``spec.nodeName`` bypasses the scheduler and its taint
  checks). Pod Security ``baseline`` allows both, and a pod tolerating the control-plane taint lands next to
  etcd, admin.conf and the control plane's instance role;
- kube-router (``--run-firewall`` only: no routing, no service proxy; the network policy controller k3s embeds
  beside flannel) on every node; the pod gateways' identity pods. The GPU metrics (DCGM) and the autoscaler's
  metrics answer the monitoring namespace only: their policies ship with them (deploy/addons, deploy/manifests).

Why kube-router's controller and not Canal's Calico: the cluster needs exactly the Kubernetes NetworkPolicy API.
kube-router's controller is one DaemonSet with read-only RBAC and no CRDs or datastore of its own, so its whole
manifest is kept here (deploy/tenancy/kube-router.yaml.j2, from the project's v2.11.1 firewall DaemonSet) and
reviewed like ours; Canal adds Calico's ~20 CRDs, a typha/felix pair and its own IPAM configuration that must be
kept from fighting flannel's. Both enforce with iptables on the node that hosts the destination pod.
"""

from __future__ import annotations

from pathlib import Path

import jinja2
import yaml

from clusterspec.names import GPU_RESOURCE, MONITORING_NAMESPACE, USER_LABEL
from clusterspec.spec import Cluster

REPO = Path(__file__).resolve().parent.parent
TEMPLATES = REPO / "deploy" / "tenancy"
OUT = REPO / "build" / "deploy" / "tenancy.yaml"

POLICY_NAME = "research-tenant-pods"
CONTROL_PLANE_TAINT = "node-role.kubernetes.io/control-plane"
POD_GATEWAY_TAINT = "research.cluster/pod-gateway"
FORBIDDEN_TAINTS = (CONTROL_PLANE_TAINT, POD_GATEWAY_TAINT)
TOLERATION_MESSAGE = (
    "pods in researcher namespaces may not tolerate the control plane's or the pod gateways' taints "
    f"({', '.join(FORBIDDEN_TAINTS)}), nor every taint (operator Exists without a key)"
)
NODE_NAME_MESSAGE = "pods in researcher namespaces may not set spec.nodeName: the scheduler places them"
# The pod gateways' identity pods (deploy/tenancy/pod-gateway.yaml.j2): the gateways translate what they forward
# into the overlay to their identity pod's address, so a NetworkPolicy can name "from a laptop or a site".
GATEWAY_NAMESPACE = "pod-gateway"
GATEWAY_IDENTITY_LABELS = {"app.kubernetes.io/name": "pod-gateway-identity"}
PSA = "pod-security.kubernetes.io/"
# The owner's uid on their namespace (the admin's to set: a researcher has no verb on Namespace objects); the
# tenant policy reads it (``namespaceObject``) and holds every pod there to that uid and its group (gid == uid,
# chef's users recipe and the EFS access points).
UID_LABEL = "research.cluster/uid"
MANAGED = {"app.kubernetes.io/managed-by": "research-cluster"}
# What a container that says nothing gets (LimitRange defaults); lab's jobs always say (3 CPUs, 12 GiB per GPU).
# Requests only: a default *limit* also lands on containers that set requests and no limit (LimitRanger fills
# each missing limit), and lab's jobs request 12 GiB per GPU without a memory limit: a 2 GiB default limit made
# their pods invalid ("must be less than or equal to memory limit"), found by tests/provision/test_tenancy.py.
DEFAULT_REQUEST = {"cpu": "250m", "memory": "512Mi"}


def user_uid(spec: Cluster, user: str) -> int:
    u = next((u for u in spec.users if u.name == user), None)
    if u is None:
        from clusterspec.errors import UserError

        raise UserError(f"cluster.yaml: users: no user {user!r}; add them with their uid first")
    return u.uid


def namespace_labels(spec: Cluster, user: str) -> dict[str, str]:
    version = f"v{spec.kubernetes.minor}"
    return {
        USER_LABEL: user,
        UID_LABEL: str(user_uid(spec, user)),
        **MANAGED,
        f"{PSA}enforce": "restricted",
        f"{PSA}enforce-version": version,
        f"{PSA}warn": "restricted",
        f"{PSA}warn-version": version,
        f"{PSA}audit": "restricted",
        f"{PSA}audit-version": version,
    }


def gpu_quota(spec: Cluster, user: str) -> int:
    u = next((u for u in spec.users if u.name == user), None)
    return u.gpu_quota if u is not None and u.gpu_quota is not None else spec.researchers.quota.gpus


def resource_quota(spec: Cluster, user: str, labels: dict) -> dict:
    q = spec.researchers.quota
    return {
        "apiVersion": "v1",
        "kind": "ResourceQuota",
        "metadata": {"name": "researcher", "namespace": spec.researchers.namespace(user), "labels": labels},
        "spec": {
            "hard": {
                f"requests.{GPU_RESOURCE}": str(gpu_quota(spec, user)),
                "pods": str(q.pods),
                "services": str(q.services),
                "requests.cpu": str(q.cpus),
                "requests.memory": f"{q.memory_gib}Gi",
                "services.nodeports": "0",
                "services.loadbalancers": "0",
            }
        },
    }


def limit_range(spec: Cluster, user: str, labels: dict) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "LimitRange",
        "metadata": {"name": "researcher-defaults", "namespace": spec.researchers.namespace(user), "labels": labels},
        "spec": {"limits": [{"type": "Container", "defaultRequest": dict(DEFAULT_REQUEST)}]},
    }  # fmt: skip


def gateway_peer() -> dict:
    return {
        "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": GATEWAY_NAMESPACE}},
        "podSelector": {"matchLabels": dict(GATEWAY_IDENTITY_LABELS)},
    }


def network_policies(spec: Cluster, user: str, labels: dict) -> list[dict]:
    ns = spec.researchers.namespace(user)
    ports = [{"protocol": "TCP", "port": p} for p in spec.researchers.quota.published_ports]
    return [
        {
            "apiVersion": "networking.k8s.io/v1",
            "kind": "NetworkPolicy",
            "metadata": {"name": "default-deny-ingress", "namespace": ns, "labels": labels},
            "spec": {"podSelector": {}, "policyTypes": ["Ingress"]},
        },
        {
            "apiVersion": "networking.k8s.io/v1",
            "kind": "NetworkPolicy",
            "metadata": {"name": "from-laptops", "namespace": ns, "labels": labels},
            "spec": {"podSelector": {}, "policyTypes": ["Ingress"], "ingress": [{"from": [gateway_peer()], "ports": ports}]},
        },
    ]  # fmt: skip


def namespace_objects(spec: Cluster, user: str) -> list[dict]:
    """The namespace with its Pod Security labels, then its quota, limit range and network policies."""
    labels = {USER_LABEL: user, **MANAGED}
    ns = {"apiVersion": "v1", "kind": "Namespace",
          "metadata": {"name": spec.researchers.namespace(user), "labels": namespace_labels(spec, user)}}  # fmt: skip
    return [ns, resource_quota(spec, user, labels), limit_range(spec, user, labels),
            *network_policies(spec, user, labels)]  # fmt: skip


def toleration_expression() -> str:
    keys = ", ".join(f"'{k}'" for k in FORBIDDEN_TAINTS)
    return (
        "!has(object.spec.tolerations) || object.spec.tolerations.all(t, "
        f"has(t.key) && t.key != '' && !(t.key in [{keys}]))"
    )


NODE_NAME_EXPRESSION = (
    "request.operation != 'CREATE' || !has(object.spec.nodeName) || object.spec.nodeName == ''"
)
CLAIMS_POLICY_NAME = "research-tenant-claims"
# Who binds claims: kube-controller-manager's PersistentVolume binder (kubeadm runs it with
# --use-service-account-credentials; without, as the controller manager itself).
BINDERS = ("system:serviceaccount:kube-system:persistent-volume-binder", "system:kube-controller-manager")
# Pod Security restricted's volume types (pod-security-admission policy/check_restrictedVolumes.go) less csi: an
# inline csi volume names its driver's volume itself, around the claims and their PersistentVolumes' claimRef.
TENANT_VOLUMES = (
    "configMap",
    "secret",
    "emptyDir",
    "persistentVolumeClaim",
    "projected",
    "downwardAPI",
    "ephemeral",
)
UID_MISSING_MESSAGE = (
    f"researcher namespaces carry their owner's uid in the label {UID_LABEL}; ask your admin to run "
    "`invoke add-user NAME` again"
)
RUN_AS_USER_MESSAGE = (
    "pods in researcher namespaces run as their owner's uid (the namespace's label "
    f"{UID_LABEL}): set spec.securityContext.runAsUser to it; a container may only repeat it"
)
GROUPS_MESSAGE = (
    "pods in researcher namespaces run with their owner's group only: spec.securityContext.runAsGroup set to the "
    "owner's uid (a container may only repeat it), supplementalGroups and fsGroup nothing else, and "
    "supplementalGroupsPolicy Strict (no group from the image's /etc/group)"
)
VOLUMES_MESSAGE = (
    "pods in researcher namespaces mount their namespace's claims, configMap, secret, emptyDir, projected, "
    "downwardAPI and ephemeral volumes only: no inline nfs, iscsi, csi, hostPath or other volume"
)
CLAIM_MESSAGE = (
    "claims in researcher namespaces bind their own namespace's volumes only (spec.volumeName "
    "<namespace>-<volume>), or none"
)


def on_create(expression: str) -> str:
    """EXPRESSION on a pod's creation and on its ephemeral containers; a pod's other updates pass (its spec's
    security context and volumes cannot change, and a pod from before the policy must keep losing its finalizers)."""
    return f"(request.operation == 'UPDATE' && request.subResource == '') || ({expression})"


def _containers_all(pred: str) -> str:
    """PRED (over ``c``) for every container, init container and ephemeral container of the pod."""
    parts = [f"object.spec.containers.all(c, {pred})"]
    for key in ("initContainers", "ephemeralContainers"):
        parts.append(f"(!has(object.spec.{key}) || object.spec.{key}.all(c, {pred}))")
    return " && ".join(parts)


def _pod_field(field: str) -> str:
    return f"has(object.spec.securityContext) && has(object.spec.securityContext.{field})"


def run_as_user_expression() -> str:
    own = "!has(c.securityContext) || !has(c.securityContext.runAsUser) || c.securityContext.runAsUser == variables.uid"
    return (f"{_pod_field('runAsUser')} && object.spec.securityContext.runAsUser == variables.uid && "
            + _containers_all(own))  # fmt: skip


def groups_expression() -> str:
    own = "!has(c.securityContext) || !has(c.securityContext.runAsGroup) || c.securityContext.runAsGroup == variables.uid"
    sc = "object.spec.securityContext"
    return (
        f"{_pod_field('runAsGroup')} && {sc}.runAsGroup == variables.uid && "
        f"(!has({sc}.supplementalGroups) || {sc}.supplementalGroups.all(g, g == variables.uid)) && "
        f"(!has({sc}.fsGroup) || {sc}.fsGroup == variables.uid) && "
        f"has({sc}.supplementalGroupsPolicy) && {sc}.supplementalGroupsPolicy == 'Strict' && "
        + _containers_all(own)
    )


def volumes_expression() -> str:
    allowed = " || ".join(f"has(v.{t})" for t in TENANT_VOLUMES)
    return f"!has(object.spec.volumes) || object.spec.volumes.all(v, {allowed})"


UID_VARIABLE = (
    f"has(namespaceObject.metadata.labels) && '{UID_LABEL}' in namespaceObject.metadata.labels ? "
    f"int(namespaceObject.metadata.labels['{UID_LABEL}']) : -1"
)


def claim_suffixes(spec: Cluster) -> list[str]:
    """The volumes a researcher's namespace has (``<namespace>-<suffix>``, provision/storage.py)."""
    from provision import storage

    return [*spec.researchers.volumes, *storage.lab_claim_names(spec)]


def claim_expression(spec: Cluster) -> str:
    suffixes = ", ".join(f"'{s}'" for s in claim_suffixes(spec))
    binders = ", ".join(f"'{b}'" for b in BINDERS)
    return (
        "!has(object.spec.volumeName) || object.spec.volumeName == '' || "
        f"request.userInfo.username in [{binders}] || "
        "(request.operation == 'UPDATE' && has(oldObject.spec.volumeName) && "
        "oldObject.spec.volumeName == object.spec.volumeName) || "
        f"[{suffixes}].exists(s, object.spec.volumeName == namespaceObject.metadata.name + '-' + s)"
    )


def policies(spec: Cluster) -> list[dict]:
    """The tenant ValidatingAdmissionPolicies: pods, then claims."""
    uid_message = (
        "'pods in namespace ' + namespaceObject.metadata.name + ' run as uid ' + string(variables.uid) + "
        "' (its label " + UID_LABEL + "): set spec.securityContext.runAsUser to ' + string(variables.uid) + "
        "'; a container may only repeat it'"
    )
    group_message = (
        "'pods in namespace ' + namespaceObject.metadata.name + ' run with group ' + string(variables.uid) + "
        "' only: spec.securityContext.runAsGroup ' + string(variables.uid) + ' (a container may only repeat it), "
        "supplementalGroups and fsGroup nothing else, supplementalGroupsPolicy Strict'"
    )
    pods = {
        "name": POLICY_NAME,
        "resources": ["pods", "pods/ephemeralcontainers"],
        "variables": [{"name": "uid", "expression": UID_VARIABLE}],
        "validations": [
            {"expression": toleration_expression(), "message": TOLERATION_MESSAGE},
            {"expression": NODE_NAME_EXPRESSION, "message": NODE_NAME_MESSAGE},
            {"expression": on_create("variables.uid > 0"), "message": UID_MISSING_MESSAGE},
            {"expression": on_create(run_as_user_expression()), "message": RUN_AS_USER_MESSAGE,
             "message_expression": uid_message},
            {"expression": on_create(groups_expression()), "message": GROUPS_MESSAGE,
             "message_expression": group_message},
            {"expression": on_create(volumes_expression()), "message": VOLUMES_MESSAGE},
        ],
    }  # fmt: skip
    claims = {
        "name": CLAIMS_POLICY_NAME,
        "resources": ["persistentvolumeclaims"],
        "variables": [],
        "validations": [{"expression": claim_expression(spec), "message": CLAIM_MESSAGE}],
    }
    return [pods, claims]


def render_templates(spec: Cluster) -> list[dict]:
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(TEMPLATES), undefined=jinja2.StrictUndefined,
                             keep_trailing_newline=True, trim_blocks=True, lstrip_blocks=True)  # fmt: skip
    from provision import images

    values = {
        "policies": policies(spec),
        "tenant_label": USER_LABEL,
        "gateway_namespace": GATEWAY_NAMESPACE,
        "gateway_labels": GATEWAY_IDENTITY_LABELS,
        "pod_cidr": spec.kubernetes.pod_cidr,
        "images": images.pinned(["kube-router", "pause"], spec),
        "minor": spec.kubernetes.minor,
        "monitoring_namespace": MONITORING_NAMESPACE,
    }
    docs = []
    for name in (
        "admission-policy.yaml.j2",
        "kube-router.yaml.j2",
        "pod-gateway.yaml.j2",
        "system-policies.yaml.j2",
    ):
        docs += [d for d in yaml.safe_load_all(env.get_template(name).render(**values)) if d]
    return docs


VIEWER_ROLE = "research-viewer"
# What every researcher reads cluster-wide (provision/users.py binds it): the jobs, pods and nodes `lab status` and
# kubectl show, to see what the cluster is busy with. Not the built-in `view`: it reads every namespace's pods/log
# (a job's log holds its arguments, paths and whatever it prints) and ConfigMaps; logs are read in one's own
# namespace only, through `edit` there.
VIEWER_RULES = [
    {"apiGroups": [""], "resources": ["pods", "nodes", "namespaces", "events", "resourcequotas"],
     "verbs": ["get", "list", "watch"]},
    {"apiGroups": ["batch"], "resources": ["jobs"], "verbs": ["get", "list", "watch"]},
    {"apiGroups": ["scheduling.x-k8s.io"], "resources": ["podgroups"], "verbs": ["get", "list", "watch"]},
]  # fmt: skip


def viewer_role() -> dict:
    return {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
            "metadata": {"name": VIEWER_ROLE, "labels": dict(MANAGED)}, "rules": VIEWER_RULES}  # fmt: skip


PODGROUP_EDITOR_ROLE = "research-podgroups-edit"


def podgroup_editor_role() -> dict:
    """The gang scheduler's PodGroups in the built-in ``edit`` (and ``admin``) role, which researchers hold in their
    own namespace (provision/users.py): ``lab submit`` creates a gang job's PodGroup and ``lab cancel`` deletes it.
    ``edit`` covers only built-in kinds; a CRD's join it through the aggregation labels, as the real API server's
    refusal showed (issue 33: the emulator authorized every request)."""
    labels = {**MANAGED, "rbac.authorization.k8s.io/aggregate-to-edit": "true",
              "rbac.authorization.k8s.io/aggregate-to-admin": "true"}  # fmt: skip
    return {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
            "metadata": {"name": PODGROUP_EDITOR_ROLE, "labels": labels},
            "rules": [{"apiGroups": ["scheduling.x-k8s.io"], "resources": ["podgroups"],
                       "verbs": ["get", "list", "watch", "create", "update", "patch", "delete"]}]}  # fmt: skip


NODE_NAMES_CONFIGMAP = "research-node-names"


def node_names(spec: Cluster) -> dict:
    """The lab's servers that join as nodes (roles worker or gateway: the cookbook's kubernetes_join), by name: the
    control plane's CSR approver (terraform/modules/control_plane, ``approve-csrs``) approves a bootstrap token's
    request for a node name only if it is one of these or a running EC2 instance's private DNS name."""
    names = sorted(
        s.name for site in spec.sites for s in site.servers if {"worker", "gateway"} & set(s.roles)
    )
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": NODE_NAMES_CONFIGMAP, "namespace": "kube-system", "labels": dict(MANAGED)},
            "data": {"names": " ".join(names)}}  # fmt: skip


def cluster_objects(spec: Cluster) -> list[dict]:
    return [viewer_role(), podgroup_editor_role(), node_names(spec), *render_templates(spec)]


def write(spec: Cluster, out: Path = OUT) -> Path:
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(yaml.safe_dump_all(cluster_objects(spec), sort_keys=False))
    return out


def deploy(spec: Cluster, *, out: Path = OUT, dry_run: bool = False, kubectl: str | None = None) -> Path:
    """``invoke deploy-tenancy`` (and ``invoke up`` once the API answers): render, then ``kubectl apply
    --server-side`` the cluster-wide objects; ``dry_run`` only writes ``out``."""
    from provision import images
    from provision import kubectl as kubectl_cli

    path = write(spec, out)
    if not dry_run:
        exe = kubectl_cli.ready(path, kubectl)
        images.check_pinned(path, cluster=spec)
        kubectl_cli.apply(exe, path, field_manager="research-cluster-tenancy")
    return path
