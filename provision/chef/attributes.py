"""Node attributes for a site's servers (``build/chef/<site>.json``), from the spec and the Terraform outputs.

No secret is ever written here: the VPN pre-shared keys and the kubeadm join token are named by their SSM
parameters and read by the cookbook at converge time.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from clusterspec import catalog
from clusterspec.errors import UserError
from clusterspec.spec import Cluster
from provision import mtu, tunnels
from provision.chef import bgp, image_scripts, outputs, strongswan
from provision.packer import record

ROOT = Path(__file__).resolve().parents[2]
OUT_DIR = ROOT / "build" / "chef"
SITE_LABEL = "research.cluster/site"
GPU_MODEL_LABEL = "research.cluster/gpu-model"
# maxwell, pascal, ...: what decides the driver flavour
GPU_ARCHITECTURE_LABEL = "research.cluster/gpu-architecture"
NFS_OPTIONS = "rw,sync,no_subtree_check,root_squash"
NFS_MOUNT_OPTIONS = "nfsvers=4.2,hard,noatime,_netdev"
API_PORT = 6443
# A site gateway that is no worker joins as the cloud's pod gateways do (terraform/modules/pod_gateway): a
# flannel member for the routes, tainted so no job lands there.
POD_GATEWAY_TAINT = {"key": "research.cluster/pod-gateway", "value": "true", "effect": "NoSchedule"}
POD_GATEWAY_LABEL = ("research.cluster/role", "pod-gateway")
AMI_DIR = ROOT / "build" / "ami"
# The GPU stack in the image's package lock: what the physical servers must run at exactly the image's versions
# (driver and its libraries, fabric manager, CUDA and its libraries, containerd, the container toolkit, Kubernetes).
STACK_PACKAGES = re.compile(
    r"^(nvidia-|libnvidia-|cuda-|lib(cublas|cufft|cufile|curand|cusolver|cusparse|npp|nvjitlink|nvjpeg|nvfatbin)"
    r"|containerd\.io$|kubelet$|kubeadm$|kubectl$|cri-tools$|kubernetes-cni$)"
)


def _server(cluster: Cluster, site_name: str, s) -> dict:
    labels = {SITE_LABEL: site_name}
    if s.gpu_model:
        labels[GPU_MODEL_LABEL] = s.gpu_model
        labels[GPU_ARCHITECTURE_LABEL] = catalog.gpu_models()[s.gpu_model].architecture
    taints = [t.model_dump() for t in s.taints]
    if "gateway" in s.roles and "worker" not in s.roles:
        labels[POD_GATEWAY_LABEL[0]] = POD_GATEWAY_LABEL[1]
        taints.append(POD_GATEWAY_TAINT)
    labels |= s.labels  # the spec's own labels win (e.g. a shorter gpu-model name shared with the cloud)
    return {
        "ip": s.ip,
        "roles": list(s.roles),
        "gpus": s.gpus,
        "gpu_model": s.gpu_model,
        "labels": dict(sorted(labels.items())),
        "taints": taints,
    }


def _pod_routing(cluster: Cluster, site) -> dict:
    """The site gateway routes the pod network for the site's machines that are no nodes (issue 15): it is a
    flannel member and masquerades what they send into the pod network, so pods answer to its overlay address."""
    return {"pod_cidr": cluster.kubernetes.pod_cidr, "sources": [site.cidr]}


def _nfs(cluster: Cluster) -> dict | None:
    nfs = cluster.storage.nfs
    if nfs is None:
        return None
    server = next(s for s in cluster.site(nfs.site).servers if s.name == nfs.server)
    # Exactly the hosts NFS clients are: the sites' servers, each by its address (pods reach it through their
    # node's address: flannel masquerades traffic leaving the pod network; the lab's volumes schedule on the NAS's
    # site only, provision/storage.py). Not the VPCs: with AUTH_SYS any host allowed may claim any uid, and a VPC
    # holds the researchers' SSH machines, the pod gateways and every autoscaled node.
    clients = [f"{s.ip}/32" for site in cluster.sites for s in site.servers if s.name != nfs.server]
    from provision.storage import LAB_SHARED_READ_ONLY

    exports = [{**e.model_dump(), "per_user": e.path.rstrip("/").rsplit("/", 1)[-1] not in LAB_SHARED_READ_ONLY}
               for e in nfs.exports]  # fmt: skip
    return {
        "site": nfs.site,
        "server": nfs.server,
        "server_ip": server.ip,
        "exports": exports,
        "clients": clients,
        "export_options": NFS_OPTIONS,
        "mount_options": NFS_MOUNT_OPTIONS,
    }


def _vpn(cluster: Cluster, site, outputs_dir: Path, placeholders: bool) -> dict | None:
    gateway = next((s for s in site.servers if "gateway" in s.roles), None)
    if gateway is None:
        return None
    t = cluster.vpn.tunnel
    found_tunnels = []
    for i, region in enumerate(cluster.regions):
        found = (
            outputs.placeholder_tunnels(cluster, i, region.name, site.name)
            if placeholders
            else outputs.site_tunnels(outputs_dir, region.name, site.name)
        )
        planned = tunnels.inside_cidrs(cluster, region.name, site.name)
        for n, tunnel in enumerate(found, start=1):
            if tunnel["inside_cidr"] != planned[n - 1]:
                raise UserError(
                    f"{outputs_dir / region.name / 'outputs.json'}: site_vpn_tunnels.{site.name}[{n - 1}]"
                    f".inside_cidr is {tunnel['inside_cidr']}, the tunnel plan says {planned[n - 1]}; "
                    "run `invoke up` so that the VPN module sets the planned inside addresses"
                )
            found_tunnels.append(
                {
                    "name": f"{region.name}-tunnel{n}",
                    "region": region.name,
                    **tunnel,
                    # route-based: any flow may use either tunnel; the XFRM interface decides what enters it
                    "local_ts": [strongswan.ANY],
                    "remote_ts": [strongswan.ANY],
                    "if_id": strongswan.if_id(i, n),
                    "interface": strongswan.interface(i, region.name, n),
                    "bgp": bgp.session(cluster, i, tunnel, n),
                }
            )
    return {
        "gateway": gateway.name,
        "public_ip": site.gateway.public_ip,
        "private_ip": site.gateway.private_ip,
        "ike_version": t.ike_version,
        "ike_proposals": strongswan.ike_proposal(t),
        "esp_proposals": strongswan.esp_proposal(t),
        "ike_lifetime_s": t.ike_lifetime_s,
        "esp_lifetime_s": t.esp_lifetime_s,
        "dpd_timeout_s": t.dpd_timeout_s,
        "tunnel_mtu": mtu.tunnel_mtu(t),
        "tcp_mss": mtu.tcp_mss(t),
        "pod_mtu": mtu.pod_mtu(t),
        "bgp": bgp.gateway(cluster, site),
        "tunnels": found_tunnels,
    }


def _kubernetes(cluster: Cluster, outputs_dir: Path, placeholders: bool) -> dict:
    primary = cluster.primary_region
    endpoint = None if placeholders else outputs.api_endpoint(outputs_dir, primary)
    return {
        "version": cluster.kubernetes.version,
        "minor": cluster.kubernetes.minor,
        "kubeadm_api_version": "v1beta4",  # every supported minor (1.35+); v1beta3 is deprecated
        "api_endpoint": endpoint or f"api.{cluster.domain}:{API_PORT}",
        "parameter_region": primary,
        "join_token_parameter": f"/{cluster.name}/kubeadm/join-token",
        "ca_cert_hash_parameter": f"/{cluster.name}/kubeadm/ca-cert-hash",
    }


def _package_lock(cluster: Cluster, ami_dir: Path, placeholders: bool) -> dict | None:
    """The stack's packages from the last real bake (``build/ami/package-lock.json``), checked against the spec."""
    if placeholders and not (ami_dir / record.LOCK_FILE).exists():
        return None
    lock = record.load_package_lock(ami_dir)
    packages = {n: v for n, v in lock["packages"].items() if STACK_PACKAGES.match(n)}
    sw, source = cluster.software, ami_dir / record.LOCK_FILE
    driver_utils = f"nvidia-utils-{sw.nvidia_driver.branch}-server"
    expected = {
        "kubelet": (cluster.kubernetes.version, "kubernetes.version"),
        "containerd.io": (sw.containerd, "software.containerd"),
        "nvidia-container-toolkit": (sw.nvidia_container_toolkit, "software.nvidia_container_toolkit"),
        driver_utils: (sw.nvidia_driver.version, "software.nvidia_driver.version"),
    }
    for name, (version, field) in expected.items():
        have = packages.get(name)
        if have is None or not have.startswith(f"{version}-"):
            raise UserError(
                f"{source}: {name} is {have or 'missing'}, not cluster.yaml's {field} {version}; "
                "bake the image again (`invoke bake-ami`)"
            )
    if f"cuda-toolkit-{sw.cuda.replace('.', '-')}" not in packages:
        raise UserError(
            f"{source}: no cuda-toolkit-{sw.cuda.replace('.', '-')} (cluster.yaml software.cuda); bake again"
        )
    return {
        "ami_name": lock.get("ami_name"),
        "source_ami": lock.get("source_ami"),
        "packages": dict(sorted(packages.items())),
    }


def _dns(cluster: Cluster, outputs_dir: Path, placeholders: bool) -> dict:
    """Where the servers resolve the cluster's private zone and the primary EFS file system's name (which only
    the primary VPC answers, issue 15): the Resolver inbound endpoint (primary region)."""
    primary = cluster.primary_region
    servers = (
        outputs.placeholder_resolver_ips(cluster)
        if placeholders
        else outputs.resolver_ips(outputs_dir, primary)
    )
    names = []
    if cluster.storage.efs.enabled:
        names.append(
            outputs.placeholder_efs_dns_name(cluster)
            if placeholders
            else outputs.efs_dns_name(outputs_dir, primary)
        )
    return {"domain": cluster.domain, "servers": servers, "forwarded_names": names}


def _site_credentials(cluster: Cluster, outputs_dir: Path, placeholders: bool) -> dict:
    """IAM Roles Anywhere: the ARNs aws_signing_helper exchanges the server's certificate against."""
    arns = outputs.placeholder_site_access(cluster) if placeholders else outputs.site_access(outputs_dir)
    return {"region": cluster.primary_region, **arns}


def node_attributes(
    cluster: Cluster,
    site_name: str,
    outputs_dir: Path = outputs.OUTPUTS_DIR,
    *,
    placeholders: bool = False,
    ami_dir: Path = AMI_DIR,
) -> dict:
    """The JSON a site's servers converge with (``chef-client -j``): run list plus ``cluster_node`` attributes."""
    try:
        site = cluster.site(site_name)
    except KeyError as e:
        raise UserError(f"--site: {e.args[0]}") from None
    scripts = image_scripts.script_attributes(cluster, site_name)
    env = scripts["environment"]
    attrs = {
        "cluster": cluster.name,
        "domain": cluster.domain,
        "site": site.name,
        "site_cidr": site.cidr,
        "placeholders": placeholders,
        "software": {
            "ubuntu": env["UBUNTU_VERSION"],
            "nvidia_driver": {
                "branch": int(env["NVIDIA_DRIVER_BRANCH"]),
                "version": env["NVIDIA_DRIVER_VERSION"],
                "flavour": env["NVIDIA_DRIVER_FLAVOUR"],
                "package": env["NVIDIA_DRIVER_PACKAGE"],
            },
            "cuda": env["CUDA_VERSION"],
            "containerd": env["CONTAINERD_VERSION"],
            "nvidia_container_toolkit": env["NVIDIA_CONTAINER_TOOLKIT_VERSION"],
        },
        "image_scripts": scripts,
        "servers": {s.name: _server(cluster, site.name, s) for s in site.servers},
        "users": [u.model_dump() for u in cluster.users],  # admin: true -> the sudo group (admin_group)
        "nfs": _nfs(cluster),
        "vpn": _vpn(cluster, site, outputs_dir, placeholders),
        "kubernetes": _kubernetes(cluster, outputs_dir, placeholders),
        "package_lock": _package_lock(cluster, ami_dir, placeholders),
        "dns": _dns(cluster, outputs_dir, placeholders),
        "pod_routing": _pod_routing(cluster, site),
        "site_credentials": _site_credentials(cluster, outputs_dir, placeholders),
    }
    return {"run_list": ["recipe[cluster_node]"], "cluster_node": attrs}


def write_node_attributes(
    cluster: Cluster,
    site_name: str,
    outputs_dir: Path = outputs.OUTPUTS_DIR,
    out_dir: Path = OUT_DIR,
    *,
    placeholders: bool = False,
    cookbook_files: Path = image_scripts.FILES_DIR,
    ami_dir: Path = AMI_DIR,
) -> Path:
    """Write ``<out_dir>/<site>.json`` and refresh the cookbook's copy of the image scripts."""
    data = node_attributes(cluster, site_name, outputs_dir, placeholders=placeholders, ami_dir=ami_dir)
    image_scripts.copy_scripts(cookbook_files)
    out = out_dir / f"{site_name}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(data, indent=2) + "\n")
    return out
