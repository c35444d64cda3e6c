"""GPU add-ons: the NVIDIA device plugin, the DCGM exporter and the AWS EFA device plugin, rendered from the spec.

Which nodes run them comes from the spec, exactly: a cloud node carries ``research.cluster/node-group=<ASG name>``
(Terraform's node template), a lab server joins under its own name (Chef's kubeadm join), so the required node
affinity has one label term for the GPU node groups and one ``metadata.name`` term for the GPU servers (the
DaemonSet controller evaluates both; the autoscaler's new-node overhead sees the label term). Tolerations are
exactly the taints those nodes carry. Images follow the driver branch (``clusterspec/data/gpu_stack.yaml``).

``deploy_addons`` is what ``invoke deploy-addons`` runs, and what ``invoke up`` calls once the API answers.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import jinja2
import yaml

from clusterspec import drivers
from clusterspec.errors import UserError
from clusterspec.names import MONITORING_NAMESPACE, NODE_GROUP_LABEL
from clusterspec.spec import Cluster, Taint
from provision import checkout, hardware
from provision import images as images_by_digest
from provision import kubectl as kubectl_cli

REPO = Path(__file__).resolve().parent.parent
TEMPLATES = REPO / "deploy" / "addons"
OUT = REPO / "build" / "deploy" / "addons.yaml"
NAMESPACE = "kube-system"
DCGM_PORT = 9400
NAME_FIELD = "metadata.name"


@dataclass(frozen=True)
class Target:
    """The nodes one add-on runs on: cloud node groups (by ASG name) and lab servers (by node name)."""

    node_groups: tuple[str, ...]
    servers: tuple[str, ...]
    taints: tuple[Taint, ...]

    def __bool__(self) -> bool:
        return bool(self.node_groups or self.servers)

    def affinity(self) -> dict:
        terms = []
        if self.node_groups:
            terms.append(
                {
                    "matchExpressions": [
                        {"key": NODE_GROUP_LABEL, "operator": "In", "values": list(self.node_groups)}
                    ]
                }
            )
        # One term per server: the API server takes a single value for a node field selector with In or NotIn
        # (`must be only one value when operator is 'In' or 'NotIn' for node field selector`); terms are ORed.
        terms += [
            {"matchFields": [{"key": NAME_FIELD, "operator": "In", "values": [s]}]} for s in self.servers
        ]
        return {
            "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": terms}}
        }

    def tolerations(self) -> list[dict]:
        return [
            {"key": t.key, "operator": "Equal", "value": t.value, "effect": t.effect}
            if t.value
            else {"key": t.key, "operator": "Exists", "effect": t.effect}
            for t in self.taints
        ]


def _unique_taints(taints) -> tuple[Taint, ...]:
    seen: dict[tuple, Taint] = {}
    for t in taints:
        seen.setdefault((t.key, t.value, t.effect), t)
    return tuple(seen[k] for k in sorted(seen))


def gpu_target(cluster: Cluster) -> Target:
    """Every GPU node of the spec: node groups whose instance types have GPUs, servers with GPUs."""
    groups, servers, taints = [], [], []
    for region in cluster.spill_over_order:
        for g in cluster.region(region).node_groups:
            if any(hardware.hardware(t).gpus for t in g.instance_types):
                groups.append(cluster.asg_name(region, g))
                taints += g.taints
    for site in cluster.sites:
        for s in site.servers:
            if s.gpus and "worker" in s.roles:
                servers.append(s.name)
                taints += s.taints
    return Target(tuple(groups), tuple(servers), _unique_taints(taints))


def efa_target(cluster: Cluster) -> Target:
    """The node groups with an EFA instance type (a group mixing EFA and non-EFA types is included: the plugin
    advertises nothing where there is no adapter). Lab servers have no EFA."""
    groups, taints = [], []
    for region in cluster.spill_over_order:
        for g in cluster.region(region).node_groups:
            if any(hardware.hardware(t).efa for t in g.instance_types):
                groups.append(cluster.asg_name(region, g))
                taints += g.taints
    return Target(tuple(groups), (), _unique_taints(taints))


def images(cluster: Cluster) -> dict[str, str]:
    try:
        return drivers.addon_images(cluster.software.nvidia_driver.branch)
    except ValueError as e:
        raise UserError(f"software.nvidia_driver.branch: {e}") from None


NODE_LOCAL_DNS_IP = "169.254.20.10"  # the address the Kubernetes docs use for NodeLocal DNSCache
NODE_CACHE_IMAGE = "registry.k8s.io/dns/k8s-dns-node-cache:1.26.4"


def node_local_dns(cluster: Cluster) -> dict:
    """NodeLocal DNSCache's values: its link-local address, the kube-dns Service address (the tenth of the service
    network, kubeadm's clusterDNS) it also answers, the cluster's zones."""
    import ipaddress

    service_ip = str(ipaddress.ip_network(cluster.kubernetes.service_cidr)[10])
    return {
        "local_ip": NODE_LOCAL_DNS_IP,
        "service_ip": service_ip,
        "cluster_zones": ["cluster.local", "in-addr.arpa", "ip6.arpa"],
        "image": NODE_CACHE_IMAGE,
    }


def render(cluster: Cluster) -> list[dict]:
    """The add-on objects in apply order; an add-on with no node to run on is left out."""
    gpus, efa = gpu_target(cluster), efa_target(cluster)

    def labels(name: str, component: str = "gpu-addon") -> str:
        return json.dumps(
            {
                "app.kubernetes.io/name": name,
                "app.kubernetes.io/part-of": cluster.name,
                "app.kubernetes.io/component": component,
            }
        )

    values = {
        "namespace": NAMESPACE,
        "labels": labels,
        "selector": lambda name: json.dumps({"app.kubernetes.io/name": name}),
        "images": images(cluster),
        "dcgm_port": DCGM_PORT,
        "monitoring_namespace": MONITORING_NAMESPACE,
        "gpu_affinity": json.dumps(gpus.affinity()),
        "gpu_tolerations": json.dumps(gpus.tolerations()),
        "efa_affinity": json.dumps(efa.affinity()),
        "efa_tolerations": json.dumps(efa.tolerations()),
    }
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(checkout.require(TEMPLATES)),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
    )
    values["dns"] = node_local_dns(cluster)
    # NodeLocal DNSCache on every node of every region (not a GPU add-on: DNS answered where it is asked)
    selected = [("node-local-dns", True), ("nvidia-device-plugin", gpus), ("dcgm-exporter", gpus),
                ("efa-device-plugin", efa)]  # fmt: skip
    docs: list[dict] = []
    for name, target in selected:
        if target:
            text = env.get_template(f"{name}.yaml.j2").render(**values)
            docs.extend(d for d in yaml.safe_load_all(text) if d)
    return images_by_digest.pin_docs(docs, cluster)


def write(cluster: Cluster, out: Path = OUT) -> Path:
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("---\n".join(yaml.safe_dump(d, sort_keys=False) for d in render(cluster)))
    return out


def deploy_addons(
    cluster: Cluster, *, out: Path = OUT, dry_run: bool = False, kubectl: str | None = None
) -> Path:
    """Render the add-ons and ``kubectl apply --server-side`` them; UserError when there is no cluster to apply to.

    ``invoke up`` calls this once the API server answers; ``dry_run`` only writes ``out``.
    """
    path = write(cluster, out)
    if dry_run:
        return path
    exe = kubectl_cli.ready(path, kubectl)
    images_by_digest.check_pinned(path, cluster=cluster)
    kubectl_cli.apply(exe, path, field_manager="research-cluster-addons")
    return path
