"""flannel, the pod network, from the repository (issue 26): ``deploy/flannel/kube-flannel.yaml.j2`` rendered with
the spec's pod network and the pod MTU (provision/mtu.py), its images by digest (provision/data/images.yaml). The
control plane's member 0 applies the result (the control_plane module's ``flannel_manifest``); nothing of it is
downloaded at boot, where a release asset could be replaced under its URL."""

from __future__ import annotations

import json
from pathlib import Path

import jinja2
import yaml

from clusterspec.spec import Cluster
from provision import checkout, images, mtu

TEMPLATE = Path(__file__).resolve().parent.parent / "deploy" / "flannel" / "kube-flannel.yaml.j2"
VERSION = "v0.26.1"  # flannel-io/flannel release the objects follow
IMAGES = {"flannel": f"docker.io/flannel/flannel:{VERSION}", "cni_plugin": "docker.io/flannel/flannel-cni-plugin:v1.5.1-flannel2"}  # fmt: skip


def render(cluster: Cluster) -> list[dict]:
    """The objects, in apply order, images pinned."""
    pod_mtu = mtu.pod_mtu(cluster.vpn.tunnel)
    cni_conf = {
        "name": "cbr0",
        "cniVersion": "0.3.1",
        "plugins": [
            {"type": "flannel", "delegate": {"hairpinMode": True, "mtu": pod_mtu, "isDefaultGateway": True}},
            {"type": "portmap", "capabilities": {"portMappings": True}},
        ],
    }
    net_conf = {"Network": cluster.kubernetes.pod_cidr, "EnableNFTables": False, "Backend": {"Type": "vxlan"}}
    text = jinja2.Template(checkout.require(TEMPLATE).read_text(), undefined=jinja2.StrictUndefined).render(
        cni_conf=json.dumps(cni_conf),
        net_conf=json.dumps(net_conf),
        images=IMAGES,
    )
    return images.pin_docs([d for d in yaml.safe_load_all(text) if d], cluster)


def manifest(cluster: Cluster) -> str:
    """The manifest the control plane applies (``kubectl apply -f -``)."""
    return yaml.safe_dump_all(render(cluster), sort_keys=False)
