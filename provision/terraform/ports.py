"""Which component uses which port, between which parties: the table `invoke check-terraform` holds every
security-group ingress rule of the modules to (provision/terraform/seams.py, rule ``ports``). A rule the table does
not list opens more than the parties that use it; a table entry no rule opens is a component that cannot work.

Parties are named as the module sees them: ``prefix-list:<name>`` (modules/network: ``cluster`` = every VPC, the
sites, the pod network and the VPN pool; ``nodes`` = every VPC and the sites, where nodes have addresses: pods
reach a node's own ports from its address too, flannel masquerades pod traffic leaving the overlay),
``sg:<name>`` (members of that group), ``var.<name>`` (the networks the caller passes).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

KUBEADM = 'Kubernetes docs, "Ports and Protocols" (control plane and worker nodes)'


@dataclass(frozen=True)
class Opening:
    module: str
    group: str  # the security group (its resource name in the module)
    source: str  # the party it admits
    proto: str  # tcp, udp, icmp, or -1 (everything)
    lo: int
    hi: int

    def describe(self) -> str:
        what = "every protocol" if self.proto == "-1" else (
            f"{self.proto} {self.lo}" if self.lo == self.hi else f"{self.proto} {self.lo}-{self.hi}")  # fmt: skip
        if self.proto == "icmp":
            what = "icmp"
        return f"{what} into {self.module}.{self.group} from {self.source}"


@dataclass(frozen=True)
class Port:
    component: str
    opening: Opening
    cite: str


def _p(component: str, module: str, group: str, source: str, proto: str, lo: int, hi: int, cite: str) -> Port:
    return Port(component, Opening(module, group, source, proto, lo, hi), cite)


PORTS = [
    _p("kube-apiserver", "network", "cluster", "prefix-list:cluster", "tcp", 6443, 6443, KUBEADM),
    _p("path MTU discovery (ICMP fragmentation needed)", "network", "cluster", "prefix-list:cluster", "icmp", -1, -1,
       "Amazon EC2 User Guide, \"Path MTU Discovery\": allow ICMP Destination Unreachable: Fragmentation Needed"),
    _p("kubelet API (kube-apiserver, metrics scrapers)", "network", "cluster", "prefix-list:nodes", "tcp", 10250,
       10250, KUBEADM),
    _p("flannel VXLAN", "network", "cluster", "prefix-list:nodes", "udp", 8472, 8472,
       "flannel Documentation/backends.md, vxlan: UDP 8472 (the Linux kernel's port)"),
    _p("etcd client and peer", "network", "control_plane", "sg:control_plane", "tcp", 2379, 2380, KUBEADM),
    _p("EFS mounts (NFSv4.1)", "efs", "nfs", "var.client_prefix_list_id", "tcp", 2049, 2049,
       "Amazon EFS User Guide, \"Using VPC security groups\": mount targets admit TCP 2049 from the clients"),
    _p("Route 53 Resolver inbound (sites' DNS)", "resolver", "resolver", "var.client_cidrs", "udp", 53, 53,
       "Route 53 Developer Guide, \"Security groups for inbound endpoints\": UDP and TCP 53"),
    _p("Route 53 Resolver inbound (sites' DNS)", "resolver", "resolver", "var.client_cidrs", "tcp", 53, 53,
       "Route 53 Developer Guide, \"Security groups for inbound endpoints\": UDP and TCP 53"),
    _p("the pod gateway (any port of a pod: TensorBoard, notebooks)", "pod_gateway", "forward", "var.client_cidrs",
       "-1", -1, -1, "docs/architecture.md, pod gateways: forwarded traffic keeps the pod's own port"),
    _p("researchers' SSH", "ssh_machines", "ssh", "var.client_security_group_id", "tcp", 22, 22,
       "docs/researchers.md, SSH machines: from the Client VPN endpoint only (its ENIs translate the laptops' "
       "addresses: AWS Client VPN Administrator Guide, \"Security groups\")"),
    _p("EFA (libfabric, NCCL over SRD) between a group's nodes", "node_group", "efa", "sg:efa", "-1", -1, -1,
       "Amazon EC2 User Guide, \"Get started with EFA\": all traffic to and from the security group itself"),
    # AWS-managed endpoints, never a security group of ours: the site gateway's IKE and NAT-T to the VPN tunnels
    # and BGP inside them (AWS Site-to-Site VPN User Guide, "Your customer gateway device": UDP 500, UDP 4500,
    # TCP 179 over the tunnel's inside addresses).
    _p("IKE (site-to-site VPN)", "aws-vpn", "-", "site gateways", "udp", 500, 500,
       "AWS Site-to-Site VPN User Guide, customer gateway firewall: UDP 500"),
    _p("IPsec NAT traversal", "aws-vpn", "-", "site gateways", "udp", 4500, 4500,
       "AWS Site-to-Site VPN User Guide, customer gateway firewall: UDP 4500"),
    _p("BGP over the tunnels", "aws-vpn", "-", "site gateways", "tcp", 179, 179,
       "AWS Site-to-Site VPN User Guide, dynamic routing: BGP TCP 179 inside the tunnel"),
]  # fmt: skip


# Ports only the cluster's nodes may reach (issue 36): no egress rule of these groups (machines where researchers
# have shells) may cover them. A node's ingress admits the node networks (prefix-list:nodes), which hold the SSH
# machines' addresses too, so the machines' own group is where they are refused.
NODES_ONLY = [
    _p("flannel VXLAN", "network", "cluster", "prefix-list:nodes", "udp", 8472, 8472,
       "flannel Documentation/backends.md, vxlan: an unauthenticated overlay; a packet from a shell is a pod's"),
    _p("kubelet API", "network", "cluster", "prefix-list:nodes", "tcp", 10250, 10250,
       KUBEADM + ": the kubelet serves the API server and metrics scrapers"),
]  # fmt: skip
SHELL_GROUPS = [("ssh_machines", "ssh")]  # (module, security group) of machines with researchers' shells


def _ref(expr: str) -> tuple[str, str] | None:
    m = re.search(r"\b(aws_security_group|aws_ec2_managed_prefix_list)\.(\w+)(?:\[\d+\])?\.id\b", expr)
    if m:
        return m[1], m[2]
    m = re.search(r"\bvar\.(\w+)", expr)
    return ("var", m[1]) if m else None


def party(module: str, expr: str) -> str:
    ref = _ref(expr)
    return ref[1] if ref and ref[0] == "aws_security_group" else (f"var.{ref[1]}" if ref else expr)


def source(module: str, body: dict) -> str:
    for key in ("prefix_list_id", "referenced_security_group_id", "cidr_ipv4"):
        if key not in body:
            continue
        expr = str(body[key])
        if key == "cidr_ipv4" and "each." in expr:
            expr = str(body.get("for_each", ""))
        ref = _ref(expr)
        if ref is None:
            return expr.strip('"')
        kind, name = ref
        return {"aws_security_group": f"sg:{name}", "aws_ec2_managed_prefix_list": f"prefix-list:{name}"}.get(
            kind, f"var.{name}"
        )
    return "?"
