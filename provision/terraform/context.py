"""The values each Jinja root template receives: plain data computed from the spec, nothing decided in Jinja."""

from __future__ import annotations

import json
import os
from pathlib import Path

from clusterspec import catalog, kubelet_reserved
from clusterspec.errors import UserError
from clusterspec.names import AUTOSCALER_IRSA_SUBJECT
from clusterspec.spec import Cluster, Region
from provision import flannel, mtu, scheduler, tunnels
from provision.operations_tf import operations_context
from provision.researchers_tf import researchers_context
from provision.terraform.settings import AMI_DIR, AWS_PROVIDER_VERSION, GLOBAL, MODULES, Backend


def alias(region: str) -> str:
    """Provider alias of a region: ``us-east-1`` -> ``us_east_1``."""
    return region.replace("-", "_")


def ami_id(region: str, ami_dir: Path = AMI_DIR) -> str:
    """The baked AMI's id from ``build/ami/<region>.json``, or "" (launch templates then resolve the SSM
    parameter at launch)."""
    path = ami_dir / f"{region}.json"
    if not path.exists():
        return ""
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as e:
        raise UserError(
            f"{path}: not readable JSON ({e}); rebuild it with the image task or delete it"
        ) from None
    value = data.get("ami_id") if isinstance(data, dict) else None
    if not isinstance(value, str) or not value.startswith("ami-"):
        raise UserError(f"{path}: field ami_id is {value!r}; expected an AMI id like ami-0123456789abcdef0")
    if data.get("ec2_endpoint"):
        raise UserError(
            f"{path}: records a local bake against {data['ec2_endpoint']}; that AMI does not exist in AWS "
            f"(run `invoke bake-ami --region {region}` or delete the file)"
        )
    if data.get("region", region) != region:
        raise UserError(f"{path}: field region is {data['region']!r}; expected {region!r} (the file's name)")
    return value


def cluster_cidrs(cluster: Cluster) -> list[str]:
    """Every network allowed to reach cluster services: VPCs, sites, the pod network and the VPN pool."""
    return (
        [r.cidr for r in cluster.regions]
        + [s.cidr for s in cluster.sites]
        + [cluster.kubernetes.pod_cidr, cluster.vpn.client_cidr]
    )


def node_cidrs(cluster: Cluster) -> list[str]:
    """The networks nodes have their addresses in: every VPC and the physical sites (flannel VXLAN, NFS)."""
    return [r.cidr for r in cluster.regions] + [s.cidr for s in cluster.sites]


def _node_group(cluster: Cluster, region: Region, group) -> dict:
    return {
        "module": f"node_group_{alias(group.name)}",
        "name": cluster.asg_name(region.name, group),
        "instance_types": list(group.instance_types),
        "spot": group.spot,
        "min_size": group.min,
        "max_size": group.max,
        "labels": dict(sorted(group.labels.items())),
        "taints": [{"key": t.key, "value": t.value, "effect": t.effect} for t in group.taints],
        "gpus": group.gpus,
        "priority": group.priority,
        "root_volume_gib": group.root_volume_gib,
        "kubelet_reserved": kubelet_reserved.for_instance_types(list(group.instance_types)),
        # EFA interfaces: the fewest among the types (a spot group's override may be any of them)
        "efa_interfaces": min(catalog.instance_types()[t].efa for t in group.instance_types),
    }


def _lab_repositories(cluster: Cluster) -> list[str]:
    """The lab's own ECR repositories (provision/lab_images.py): the autoscaler's, the standard image's (pre-pulled
    at bake time) and one mirror per third-party image of provision/data/images.yaml."""
    from provision import lab_images

    names = [lab_images.autoscaler_repository(cluster), lab_images.standard_repository(cluster)]
    names += [lab_images.mirror_repository(cluster, i) for i in lab_images.third_party()]
    return sorted(set(names))


def _common(cluster: Cluster, backend: Backend, out_dir: Path, root: str) -> dict:
    return {
        "cluster": cluster.name,
        "backend": {"bucket": backend.bucket, "region": backend.region},
        "state_key": backend.key(root),
        "global_state_key": backend.key(GLOBAL),
        "provider_version": AWS_PROVIDER_VERSION,
        "modules": os.path.relpath(MODULES, out_dir / root),
        "tags": {"research.cluster/cluster": cluster.name, "managed-by": "terraform"},
    }


def global_context(cluster: Cluster, backend: Backend, out_dir: Path) -> dict:
    return _common(cluster, backend, out_dir, GLOBAL) | {
        "researchers": {u.name: cluster.researchers.namespace(u.name) for u in cluster.users},  # issue 15
        "researchers_roles": bool(cluster.users)
        and {"datasets", "results"} <= set(cluster.storage.s3.buckets),
        "autoscaler_subject": AUTOSCALER_IRSA_SUBJECT,
        "researchers_repository": f"{cluster.name}/{cluster.researchers.ecr_repository}",
        "region": cluster.primary_region,
        "regions": [r.name for r in cluster.regions],  # issue 26: the image builder's regions
        "bucket_purposes": list(cluster.storage.s3.buckets),
        "noncurrent_version_days": cluster.storage.s3.noncurrent_version_days,
        "site_names": [s.name for s in cluster.sites],
        "site_gateways": [v.name for s in cluster.sites for v in s.servers if "gateway" in v.roles],
        "psk_ssm_prefix": cluster.vpn.psk_ssm_prefix,
        "operations": operations_context(cluster),  # issue 29: roots/global/operations.tf.j2
    }


def region_context(
    cluster: Cluster, region_name: str, backend: Backend, out_dir: Path, ami_dir: Path
) -> dict:
    region = cluster.region(region_name)
    order = cluster.spill_over_order
    primary = cluster.primary_region
    earlier = order[: order.index(region_name)]
    t = cluster.vpn.tunnel
    ctx = _common(cluster, backend, out_dir, region_name) | {
        "region": region_name,
        "is_primary": region_name == primary,
        "lab_repositories": _lab_repositories(cluster),
        "primary_region": primary,
        "primary_state_key": backend.key(primary),
        "vpc_cidr": region.cidr,
        "zones": list(region.zones),
        "cluster_cidrs": cluster_cidrs(cluster),
        "node_cidrs": node_cidrs(cluster),
        "ami_id": ami_id(region_name, ami_dir),
        "ami_ssm_parameter": f"/{cluster.name}/ami/gpu-worker",
        "kubeadm_prefix": f"/{cluster.name}/kubeadm",
        "scheduler": scheduler.control_plane_files(),
        "flannel_manifest": flannel.manifest(cluster),  # issue 26: kept in the repository, images by digest
        "api_dns_name": f"api.{cluster.domain}",
        "domain": cluster.domain,
        "node_groups": [_node_group(cluster, region, g) for g in region.node_groups],
        "sites": {
            s.name: {
                "cidr": s.cidr,
                "public_ip": s.gateway.public_ip,
                "bgp_asn": s.gateway.bgp_asn,
                "inside_cidrs": tunnels.inside_cidrs(cluster, region_name, s.name),
            }
            for s in cluster.sites
        },
        "amazon_side_asn": tunnels.amazon_asns(cluster)[region_name],
        "tunnel": {
            "ike_version": t.ike_version,
            "ike_encryption": list(t.ike_encryption),
            "ike_integrity": list(t.ike_integrity),
            "dh_groups": list(t.dh_groups),
            "esp_encryption": list(t.esp_encryption),
            "esp_integrity": list(t.esp_integrity),
            "ike_lifetime_s": t.ike_lifetime_s,
            "esp_lifetime_s": t.esp_lifetime_s,
            "dpd_timeout_s": t.dpd_timeout_s,
        },
        "psk_ssm_prefix": cluster.vpn.psk_ssm_prefix,
        "efs": {
            "enabled": cluster.storage.efs.enabled,
            "throughput_mode": cluster.storage.efs.throughput_mode,
            "mount": cluster.storage.efs.mount,
            # each researcher's access points (terraform/modules/efs); the SSH machines' own set in the primary
            "users": [{"name": u.name, "uid": u.uid} for u in cluster.users],
            "shell_access_points": region_name == primary and bool(cluster.researchers.ssh_machines),
        },
        "peers": [
            {"region": p, "alias": alias(p), "cidr": cluster.region(p).cidr, "module": f"peering_{alias(p)}"}
            for p in earlier
        ],
    }
    if ctx["is_primary"]:
        cp = cluster.kubernetes.control_plane
        routes = {f"vpc-{r.name}": r.cidr for r in cluster.regions if r.name != region_name}
        routes |= {f"site-{s.name}": s.cidr for s in cluster.sites}
        routes["pods"] = cluster.kubernetes.pod_cidr
        if not cluster.vpn.split_tunnel:
            routes["internet"] = "0.0.0.0/0"  # full tunnel: laptops reach the internet through the VPC's NAT
        # what laptops may open beyond the VPC's API, SSH and DNS (terraform/modules/client_vpn, issue 26): every
        # port of every pod; with a full tunnel HTTP(S) to the internet. Never a node's own ports.
        egress = {"pods": {"cidr": cluster.kubernetes.pod_cidr, "proto": "-1", "from": None, "to": None}}
        if not cluster.vpn.split_tunnel:
            egress |= {f"internet-{n}": {"cidr": "0.0.0.0/0", "proto": "tcp", "from": p, "to": p}
                       for n, p in (("https", 443), ("http", 80))}  # fmt: skip
        ctx |= {
            "control_plane": {"count": cp.count, "instance_type": cp.instance_type},
            "kubernetes": {
                "version": cluster.kubernetes.version,
                "pod_cidr": cluster.kubernetes.pod_cidr,
                "service_cidr": cluster.kubernetes.service_cidr,
            },
            "pod_mtu": mtu.pod_mtu(cluster.vpn.tunnel),
            "client_vpn": {
                "client_cidr": cluster.vpn.client_cidr,
                "split_tunnel": cluster.vpn.split_tunnel,
                "routes": routes,
                "egress": egress,
                "zones": list(region.zones[:2]),
            },
            "hosts": {v.name: v.ip for s in cluster.sites for v in s.servers},
        }
    ctx["researchers"] = researchers_context(cluster, region_name)  # issue 15: roots/region/researchers.tf.j2
    ctx["operations"] = operations_context(cluster)  # issue 29: roots/region/operations.tf.j2
    return ctx
