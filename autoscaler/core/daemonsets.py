"""The DaemonSet pods on new nodes.

A DaemonSet's pod runs on every node whose labels and taints admit it, so a new node of a group offers its
allocatable less the requests of the DaemonSets that would run there, its host ports are taken, and the
scheduler's InterPodAffinity and PodTopologySpread filters see the DaemonSet pods' labels and anti-affinity on
it like any pod's (as cluster-autoscaler's node templates do: simulator/node_info_utils.go adds the DaemonSet
pods to each template node before the scheduler's filters run on it). The DaemonSets are learnt from their pods
in the snapshot: one pod per DaemonSet stands for all of them.
"""

from __future__ import annotations

import dataclasses

from autoscaler.core.fit import static_reason
from autoscaler.core.model import Group, Pod
from autoscaler.core.podspec import PodShape


def _template_shape(shape: PodShape) -> PodShape:
    """The DaemonSet's pod as any node would get it: the DaemonSet controller pins each pod to its node with a
    ``metadata.name`` field requirement, which says nothing about a new node; its label terms still do."""
    if not shape.affinity_terms:
        return shape
    terms = tuple((labels, ()) for labels, _fields in shape.affinity_terms if labels)
    return dataclasses.replace(shape, affinity_terms=terms, by_name=False)


def daemonset_pods(pods: list[Pod]) -> list[tuple[PodShape, str, dict]]:
    """One (shape, namespace, labels) per DaemonSet (by namespace and owner name) among the snapshot's pods."""
    seen: dict[tuple[str, str], tuple[PodShape, str, dict]] = {}
    for p in pods:
        if p.daemonset and p.owner_name is not None and (p.namespace, p.owner_name) not in seen:
            seen[(p.namespace, p.owner_name)] = (_template_shape(p.shape), p.namespace, p.labels)
    return list(seen.values())


def with_daemonset_overhead(groups: list[Group], pods: list[Pod]) -> list[Group]:
    """The groups, each with its new nodes' allocatable less the requests of the DaemonSets it admits, their host
    ports and the DaemonSet pods themselves."""
    daemons = daemonset_pods(pods)
    if not daemons:
        return groups
    out = []
    for g in groups:
        overhead: dict[str, int] = {}
        ports: set = set()
        runs = []
        for shape, namespace, labels in daemons:
            if static_reason(shape, g.labels, g.taints) is None:
                for resource, q in shape.requests:
                    overhead[resource] = overhead.get(resource, 0) + q
                ports |= shape.host_ports
                runs.append((shape, namespace, labels))
        if runs:
            alloc = {r: max(0, q - overhead.get(r, 0)) for r, q in g.allocatable.items()}
            g = dataclasses.replace(g, allocatable=alloc, ports=frozenset(ports), daemonsets=tuple(runs))
        out.append(g)
    return out
