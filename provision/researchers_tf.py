"""Values the researchers' root template (terraform/roots/region/researchers.tf.j2) reads: the ECR repository
in every region (replicated from the primary), and in the primary region the pod-network gateway and the SSH
machines. Plain data from the spec; nothing is decided in Jinja."""

from __future__ import annotations

from clusterspec import kubelet_reserved
from clusterspec.names import IMAGE_ROOT_GIB
from clusterspec.spec import Cluster


def researchers_context(cluster: Cluster, region: str) -> dict:
    r = cluster.researchers
    primary = region == cluster.primary_region
    masquerade = [reg.cidr for reg in cluster.regions if reg.name == region]
    masquerade += [cluster.vpn.client_cidr] + [s.cidr for s in cluster.sites]
    return {
        "ecr_repository": f"{cluster.name}/{r.ecr_repository}",
        "replicate_to": [x for x in cluster.spill_over_order if x != region] if primary else [],
        "pod_gateway": {
            "instance_type": r.pod_gateway.instance_type,
            "count": r.pod_gateway.count,
            "client_cidrs": masquerade,
            "kubelet_reserved": kubelet_reserved.for_instance_types([r.pod_gateway.instance_type]),
            "root_volume_gib": IMAGE_ROOT_GIB,
        },
        "ssh_groups": [
            {"name": g.name, "instance_type": g.instance_type, "count": g.count, "gpus": g.gpus}
            for g in r.ssh_machines
        ],
        "users": [{"name": u.name, "uid": u.uid, "ssh_keys": list(u.ssh_keys)} for u in cluster.users],
        "vpn_client_cidr": cluster.vpn.client_cidr,
    }
