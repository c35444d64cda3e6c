"""The DaemonSet controller's side of the model: which nodes a DaemonSet's pod lands on, with what tolerations,
and the device plugin DaemonSets that make a node advertise its GPUs and EFA interfaces.

- ``DEFAULT_TOLERATIONS``: what the DaemonSet controller adds to every daemon pod
  (pkg/controller/daemon/util/daemonset_util.go ``AddOrUpdateDaemonPodTolerations``): not-ready and unreachable
  NoExecute (no tolerationSeconds: daemon pods stay on failed nodes), disk/memory/pid-pressure and unschedulable
  NoSchedule, and network-unavailable NoSchedule for hostNetwork pods. It does *not* add a not-ready
  NoSchedule toleration: a daemon pod without its own lands on a new node once the node is Ready.
- ``admits``: the node passes the template's nodeSelector and required node affinity, and its NoSchedule and
  NoExecute taints are tolerated (the scheduler's NodeAffinity and TaintToleration filters, which daemon pods
  go through since Kubernetes 1.12).
- ``device_plugin_daemonsets``: NVIDIA's k8s-device-plugin (``nvidia.com/gpu``) and AWS's EFA device plugin
  (``vpc.amazonaws.com/efa``) as a cluster runs them: in kube-system, ``system-node-critical``, tolerating every
  NoSchedule taint (so they reach every GPU group, whatever its taints); EFA only on the instance types that
  have EFA (the aws-efa-k8s-device-plugin chart selects by ``node.kubernetes.io/instance-type``). Neither is
  hostNetwork, so their containers start only when the node's network is ready.
"""

from __future__ import annotations

from simulator.model.taints import NOT_READY, UNREACHABLE, UNSCHEDULABLE, untolerated

GPU = "nvidia.com/gpu"
EFA = "vpc.amazonaws.com/efa"
DEVICE_PLUGIN_ANNOTATION = "research.cluster/model-device-plugin"  # resources a model DaemonSet advertises
EFA_INSTANCE_TYPES = ("p3dn.24xlarge", "p4d.24xlarge", "p4de.24xlarge", "p5.48xlarge", "p5e.48xlarge")


def default_tolerations(host_network: bool) -> list[dict]:
    out = [
        {"key": NOT_READY, "operator": "Exists", "effect": "NoExecute"},
        {"key": UNREACHABLE, "operator": "Exists", "effect": "NoExecute"},
        {"key": "node.kubernetes.io/disk-pressure", "operator": "Exists", "effect": "NoSchedule"},
        {"key": "node.kubernetes.io/memory-pressure", "operator": "Exists", "effect": "NoSchedule"},
        {"key": "node.kubernetes.io/pid-pressure", "operator": "Exists", "effect": "NoSchedule"},
        {"key": UNSCHEDULABLE, "operator": "Exists", "effect": "NoSchedule"},
    ]
    if host_network:
        out.append(
            {"key": "node.kubernetes.io/network-unavailable", "operator": "Exists", "effect": "NoSchedule"}
        )
    return out


def pod_tolerations(template_spec: dict) -> list[dict]:
    """The template's tolerations plus the controller's defaults the template does not already carry."""
    own = list(template_spec.get("tolerations") or [])
    for t in default_tolerations(bool(template_spec.get("hostNetwork"))):
        if not any(o.get("key") == t["key"] and o.get("effect") == t["effect"] for o in own):
            own.append(t)
    return own


def _expression_holds(expr: dict, labels: dict) -> bool:
    key, op, values = expr.get("key"), expr.get("operator"), expr.get("values") or []
    if op == "In":
        return key in labels and labels[key] in values
    if op == "NotIn":
        return not (key in labels and labels[key] in values)
    if op == "Exists":
        return key in labels
    if op == "DoesNotExist":
        return key not in labels
    if op in ("Gt", "Lt") and key in labels and values:
        try:
            have, want = int(labels[key]), int(values[0])
        except ValueError:
            return False
        return have > want if op == "Gt" else have < want
    return False


def admits(template_spec: dict, node: dict) -> bool:
    labels = node["metadata"].get("labels") or {}
    if any(labels.get(k) != v for k, v in (template_spec.get("nodeSelector") or {}).items()):
        return False
    required = ((template_spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution"
    ) or {}
    terms = required.get("nodeSelectorTerms")
    fields = {"metadata.name": node["metadata"]["name"]}

    def term_holds(term: dict) -> bool:  # an empty term matches no node
        exprs, by_field = term.get("matchExpressions") or [], term.get("matchFields") or []
        return (
            bool(exprs or by_field)
            and all(_expression_holds(e, labels) for e in exprs)
            and all(_expression_holds(e, fields) for e in by_field)
        )

    if terms and not any(term_holds(t) for t in terms):
        return False
    taints = (node.get("spec") or {}).get("taints")
    return untolerated(pod_tolerations(template_spec), taints) is None


# device plugin images and what their pods register with the kubelet (the add-ons `invoke up` deploys:
# deploy/addons/*.yaml.j2)
PLUGIN_IMAGES = {"nvcr.io/nvidia/k8s-device-plugin": GPU, "eks/aws-efa-k8s-device-plugin": EFA}


def advertised_by(ds: dict) -> tuple[str, ...]:
    """Resources a device plugin DaemonSet ``ds`` advertises: the model's own (by annotation) or one of the real
    plugins by its image (empty for other DaemonSets)."""
    value = (ds["metadata"].get("annotations") or {}).get(DEVICE_PLUGIN_ANNOTATION) or ""
    found = [r for r in value.split(",") if r]
    for c in (((ds.get("spec") or {}).get("template") or {}).get("spec") or {}).get("containers") or ():
        repo = (c.get("image") or "").split("@", 1)[0].rsplit(":", 1)[0]
        for prefix, resource in PLUGIN_IMAGES.items():
            if repo.endswith(prefix) and resource not in found:
                found.append(resource)
    return tuple(found)


def _device_plugin(name: str, image: str, resource: str, affinity: dict | None) -> dict:
    spec = {
        "priorityClassName": "system-node-critical",
        "tolerations": [
            {"operator": "Exists", "effect": "NoSchedule"},
            {"key": "CriticalAddonsOnly", "operator": "Exists"},
        ],
        "containers": [
            {
                "name": name,
                "image": image,
                "securityContext": {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}},
                "volumeMounts": [{"name": "device-plugin", "mountPath": "/var/lib/kubelet/device-plugins"}],
            }
        ],
        "volumes": [{"name": "device-plugin", "hostPath": {"path": "/var/lib/kubelet/device-plugins"}}],
    }
    if affinity:
        spec["affinity"] = affinity
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {
            "name": name,
            "namespace": "kube-system",
            "labels": {"app.kubernetes.io/name": name},
            "annotations": {DEVICE_PLUGIN_ANNOTATION: resource},
        },
        "spec": {
            "selector": {"matchLabels": {"app.kubernetes.io/name": name}},
            "updateStrategy": {"type": "RollingUpdate"},
            "template": {"metadata": {"labels": {"app.kubernetes.io/name": name}}, "spec": spec},
        },
    }


def device_plugin_daemonsets() -> list[dict]:
    efa_affinity = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {
                        "matchExpressions": [
                            {
                                "key": "node.kubernetes.io/instance-type",
                                "operator": "In",
                                "values": list(EFA_INSTANCE_TYPES),
                            }
                        ]
                    }
                ]
            }
        }
    }
    return [
        _device_plugin(
            "nvidia-device-plugin-daemonset", "nvcr.io/nvidia/k8s-device-plugin:v0.17.0", GPU, None
        ),
        _device_plugin(
            "aws-efa-k8s-device-plugin-daemonset",
            "602401143452.dkr.ecr.us-west-2.amazonaws.com/eks/aws-efa-k8s-device-plugin:v0.5.6",
            EFA,
            efa_affinity,
        ),
    ]
