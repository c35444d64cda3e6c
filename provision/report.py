"""Human-readable summaries of the spec: the address plan table and the validation summary."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from clusterspec.addresses import address_plan
from clusterspec.spec import Cluster


def summary(cluster: Cluster) -> str:
    groups = sum(len(r.node_groups) for r in cluster.regions)
    servers = sum(len(s.servers) for s in cluster.sites)
    gpus = sum(v.gpus for s in cluster.sites for v in s.servers)
    return (
        f"cluster {cluster.name}: Kubernetes {cluster.kubernetes.version}, {len(cluster.regions)} regions "
        f"(spill-over {' -> '.join(cluster.spill_over_order)}), {groups} node groups, "
        f"{len(cluster.sites)} physical site(s) with {servers} servers and {gpus} GPUs"
    )


def summary_data(cluster: Cluster) -> dict:
    """`invoke validate --json`: the figures of :func:`summary`, one field each."""
    return {
        "cluster": cluster.name,
        "kubernetes": cluster.kubernetes.version,
        "regions": [r.name for r in cluster.regions],
        "spill_over_order": list(cluster.spill_over_order),
        "node_groups": sum(len(r.node_groups) for r in cluster.regions),
        "sites": [s.name for s in cluster.sites],
        "servers": sum(len(s.servers) for s in cluster.sites),
        "site_gpus": sum(v.gpus for s in cluster.sites for v in s.servers),
    }


def address_table(cluster: Cluster) -> Table:
    table = Table(title=f"Address plan of {cluster.name}")
    for col, justify in (("network", "left"), ("of", "left"), ("CIDR", "left"), ("addresses", "right")):
        table.add_column(col, justify=justify)
    for net in address_plan(cluster):
        table.add_row(net.kind, net.owner, net.cidr, f"{net.hosts:,}")
    return table


def print_address_plan(cluster: Cluster, console: Console | None = None) -> None:
    (console or Console()).print(address_table(cluster))
