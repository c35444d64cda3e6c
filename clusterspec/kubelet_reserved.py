"""Room for the system on every node: the kubelet's kubeReserved, systemReserved and evictionHard, computed per
instance type as amazon-eks-ami's nodeadm computes them (nodeadm/internal/kubelet/config.go):

- ``getCPUMillicoresToReserve``: 6% of the first core, 1% of the second, 0.5% of the third and fourth, 0.25% of
  every further core (ranges 0-1000-2000-4000-total millicores, percentages 600/100/50/25 in 1/100 %);
- ``getMemoryMebibytesToReserve``: 11 MiB per pod the node may run plus 255 MiB (max pods: the kubelet's default
  110 here: flannel, not the VPC CNI, so no ENI limit), and 1 GiB of ephemeral storage;
- eviction at memory.available < 100Mi, nodefs.available < 10%, nodefs.inodesFree < 5% (nodeadm's defaults).

nodeadm sets no systemReserved amounts (only its cgroup); ours reserves what the host's own daemons take on a GPU
node (journald, the SSM agent, containerd's shims, nvidia-persistenced, fabric manager and DCGM on HGX): 100m
CPU, 512 MiB and 1 GiB of ephemeral storage, as the Kubernetes guide "Reserve Compute Resources for System
Daemons" describes. The same numbers reach the lab's servers (the Chef cookbook computes them from the
server's cores with the same formula, libraries/kubelet_reserved.rb) and the cloud joins (a KubeletConfiguration
patch per instance type, terraform/modules/node_join).
"""

from __future__ import annotations

MAX_PODS = 110  # the kubelet's default (KubeletConfiguration maxPods)
EVICTION_HARD = {"memory.available": "100Mi", "nodefs.available": "10%", "nodefs.inodesFree": "5%"}
SYSTEM_RESERVED = {"cpu": "100m", "memory": "512Mi", "ephemeral-storage": "1Gi"}


def cpu_millicores_to_reserve(vcpus: int) -> int:
    total = vcpus * 1000
    ranges = [0, 1000, 2000, 4000, total]
    reserved = 0
    for i, pct in enumerate([600, 100, 50, 25]):
        start, end = ranges[i], ranges[i + 1]
        if total > start:
            reserved += (min(total, end) - start) * pct // 10000
    return reserved


def memory_mebibytes_to_reserve(max_pods: int = MAX_PODS) -> int:
    return 11 * max_pods + 255


def kubelet_config(vcpus: int, max_pods: int = MAX_PODS) -> dict:
    """The KubeletConfiguration fields for a machine with VCPUS cores."""
    return {
        "maxPods": max_pods,
        "kubeReserved": {
            "cpu": f"{cpu_millicores_to_reserve(vcpus)}m",
            "memory": f"{memory_mebibytes_to_reserve(max_pods)}Mi",
            "ephemeral-storage": "1Gi",
        },
        "systemReserved": dict(SYSTEM_RESERVED),
        "evictionHard": dict(EVICTION_HARD),
    }


ROOT_VOLUME_GIB = 200  # clusterspec.spec NodeGroup.root_volume_gib's default: the node's file system


def _pct(value: str, of: int) -> int:
    return of * int(value.rstrip("%")) // 100


def allocatable(
    vcpus: int, memory_gib: float, disk_gib: int = ROOT_VOLUME_GIB, max_pods: int = MAX_PODS
) -> dict:
    """What the kubelet of a node with these cores, memory and root volume reports as allocatable under
    :func:`kubelet_config`: capacity less kubeReserved, systemReserved and the hard eviction thresholds (the
    kubelet's ``GetNodeAllocatableReservation``: memory.available and nodefs.available count, CPU has none).
    The planner's node templates (clusterspec.catalog) and the nodes the local cluster registers
    (localcluster/nodes.py) both come from here, so a pod the planner fits on a new node fits on the node that
    registers (issue 33's differential check found the two 40m of CPU apart on a g4dn.xlarge)."""
    conf = kubelet_config(vcpus, max_pods)
    mi, gi_ki = 1024, 1024 * 1024
    cpu_m = vcpus * 1000 - cpu_millicores_to_reserve(vcpus) - int(SYSTEM_RESERVED["cpu"].rstrip("m"))
    mem_ki = int(memory_gib * gi_ki)
    reserved_mi = memory_mebibytes_to_reserve(max_pods) + int(SYSTEM_RESERVED["memory"].rstrip("Mi"))
    reserved_mi += int(EVICTION_HARD["memory.available"].rstrip("Mi"))
    disk_ki = disk_gib * gi_ki
    reserved_disk_ki = 2 * gi_ki + _pct(EVICTION_HARD["nodefs.available"], disk_ki)  # kube + system 1Gi each
    return {
        "cpu": f"{cpu_m}m",
        "memory": f"{mem_ki - reserved_mi * mi}Ki",
        "pods": str(conf["maxPods"]),
        "ephemeral-storage": f"{disk_ki - reserved_disk_ki}Ki",
    }


def for_instance_types(types: list[str]) -> dict[str, dict]:
    """Instance type => its KubeletConfiguration fields (the types of a group, for its launch template)."""
    from clusterspec import catalog

    table = catalog.instance_types()
    return {t: kubelet_config(table[t].vcpu) for t in types}
