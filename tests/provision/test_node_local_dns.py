"""DNS answered in every region: NodeLocal DNSCache's rendered configuration (deploy/addons/node-local-dns.yaml.j2)
binds the link-local address and the kube-dns Service address kubeadm gives pods, sends names outside the cluster
to the node's own resolver (the region's), asks CoreDNS only for cluster zones, and runs on every node of every
region and site (tolerating every taint the spec and the project put on nodes)."""

from __future__ import annotations

import ipaddress
import re

import kubernetes_validate

from clusterspec.loader import load_spec
from provision import addons


def _docs():
    cluster = load_spec()
    return cluster, {(d["kind"], d["metadata"]["name"]): d for d in addons.render(cluster)}


def _server_blocks(corefile: str) -> dict[str, str]:
    return {m[1]: m[2] for m in re.finditer(r"^(\S+):53 \{\n(.*?)^\}", corefile, re.M | re.S)}


def test_the_corefile_answers_locally_and_forwards_by_zone():
    cluster, docs = _docs()
    kube_dns = str(ipaddress.ip_network(cluster.kubernetes.service_cidr)[10])  # kubeadm's clusterDNS
    blocks = _server_blocks(docs[("ConfigMap", "node-local-dns")]["data"]["Corefile"])
    assert set(blocks) == {"cluster.local", "in-addr.arpa", "ip6.arpa", "."}
    for zone, body in blocks.items():
        assert f"bind 169.254.20.10 {kube_dns}" in body, zone
        assert "cache" in body and "loop" in body
        upstream = "__PILLAR__UPSTREAM__SERVERS__" if zone == "." else "__PILLAR__CLUSTER__DNS__"
        assert f"forward . {upstream}" in body, zone
    ds = docs[("DaemonSet", "node-local-dns")]
    [c] = ds["spec"]["template"]["spec"]["containers"]
    assert c["args"][c["args"].index("-localip") + 1] == f"169.254.20.10,{kube_dns}"
    assert c["args"][c["args"].index("-upstreamsvc") + 1] == "kube-dns-upstream"
    assert (
        ds["spec"]["template"]["spec"]["dnsPolicy"] == "Default"
    )  # its own upstream: the node's resolv.conf
    assert docs[("Service", "kube-dns-upstream")]["spec"]["selector"] == {"k8s-app": "kube-dns"}
    for doc in docs.values():
        kubernetes_validate.validate(doc, cluster.kubernetes.minor + ".0", strict=True)


def test_it_runs_on_every_node_of_every_region():
    cluster, docs = _docs()
    spec = docs[("DaemonSet", "node-local-dns")]["spec"]["template"]["spec"]
    assert "nodeSelector" not in spec and "affinity" not in spec
    taints = {(t.key, t.effect) for r in cluster.regions for g in r.node_groups for t in g.taints}
    taints |= {("research.cluster/pod-gateway", "NoSchedule"), ("node-role.kubernetes.io/control-plane", "NoSchedule"),
               ("node.kubernetes.io/not-ready", "NoExecute")}  # fmt: skip
    for key, effect in taints:
        assert any(t.get("operator") == "Exists" and t.get("key", key) == key and t.get("effect", effect) == effect
                   for t in spec["tolerations"]), (key, effect)  # fmt: skip
