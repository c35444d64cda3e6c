"""Hypothesis strategies for random small clusters and bursts, and the settings the core's properties use."""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

# Modest example counts: the whole core suite stays within its CPU budget. Raise with CORE_EXAMPLES=500.
PROPERTIES = settings(
    max_examples=int(os.environ.get("CORE_EXAMPLES", "40")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
REGIONS = ["r1", "r2"]
TAINT = {"key": "dedicated", "value": "x", "effect": "NoSchedule"}


@st.composite
def groups(draw) -> list[dict]:
    out = []
    for i in range(draw(st.integers(1, 4))):
        region = draw(st.sampled_from(REGIONS))
        desired = draw(st.integers(0, 2))
        out.append(
            {
                "name": f"g{i}",
                "region": region,
                "zones": [f"{region}a"],
                "instance_type": "m6i.2xlarge",
                "min": 0,
                "max": desired + draw(st.integers(0, 6)),
                "desired": desired,  # not registered: capacity already on its way
                "labels": {"pool": draw(st.sampled_from(["a", "b"]))},
                "taints": [TAINT] if draw(st.booleans()) else [],
                "priority": draw(st.integers(0, 2)),
                "allocatable": {
                    "cpu": f"{draw(st.integers(2, 16))}",
                    "memory": f"{draw(st.integers(4, 64))}Gi",
                    "nvidia.com/gpu": str(draw(st.sampled_from([0, 1, 4, 8]))),
                    "pods": str(draw(st.integers(3, 20))),
                },
                "instances": [
                    {"id": f"i-{i}-{j}", "state": "Pending", "launched_at": "2025-01-31T11:59:00Z"}
                    for j in range(desired)
                ],
            }
        )
    return out


@st.composite
def pod(draw, name: str, node: str | None = None) -> dict:
    req = {"cpu": f"{draw(st.integers(1, 40)) * 100}m", "memory": f"{draw(st.integers(1, 16))}Gi"}
    gpus = draw(st.sampled_from([0, 0, 0, 1, 2, 4, 8]))
    if gpus:
        req["nvidia.com/gpu"] = str(gpus)
    container: dict = {"name": "c", "resources": {"requests": req}}
    spec: dict = {"containers": [container]}
    labels: dict = {}
    if draw(st.integers(0, 4)) == 0:
        spec["nodeSelector"] = {"pool": draw(st.sampled_from(["a", "b"]))}
    if draw(st.booleans()):
        spec["tolerations"] = [{"key": "dedicated", "operator": "Exists"}]
    if draw(st.integers(0, 5)) == 0:
        container["ports"] = [{"containerPort": 80, "hostPort": 8080}]
    if draw(st.integers(0, 5)) == 0:
        labels["app"] = "solo"
        spec["affinity"] = {
            "podAntiAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": [
                    {
                        "topologyKey": "kubernetes.io/hostname",
                        "labelSelector": {"matchLabels": {"app": "solo"}},
                    }
                ]
            }
        }
    elif draw(st.integers(0, 5)) == 0:
        labels["app"] = "spread"
        spec["topologySpreadConstraints"] = [
            {
                "maxSkew": 2,
                "topologyKey": "kubernetes.io/hostname",
                "whenUnsatisfiable": "DoNotSchedule",
                "labelSelector": {"matchLabels": {"app": "spread"}},
            }
        ]
    status = {"phase": "Pending"}
    if node:
        spec["nodeName"] = node
        status = {"phase": "Running"}
    return {"metadata": {"name": name, "namespace": "lab", "labels": labels}, "spec": spec, "status": status}


@st.composite
def snapshots(draw) -> dict:
    gs = draw(groups())
    nodes, pods = [], []
    for i in range(draw(st.integers(0, 4))):
        g = draw(st.sampled_from(gs))
        name = f"n{i}"
        labels = dict(g["labels"], **{"research.cluster/node-group": g["name"]})
        nodes.append(
            {
                "metadata": {"name": name, "labels": labels},
                "spec": {"taints": list(g["taints"])},
                "status": {"allocatable": dict(g["allocatable"])},
            }
        )
        g["desired"] += 1
        g["max"] += 1
        if draw(st.booleans()):
            bound = draw(pod(f"run-{i}", node=name))
            bound["spec"].pop("affinity", None)
            bound["metadata"]["labels"] = {}
            bound["spec"]["containers"][0].pop("ports", None)
            bound["spec"]["containers"][0]["resources"]["requests"] = {"cpu": "1", "memory": "1Gi"}
            pods.append(bound)
    for i in range(draw(st.integers(0, 25))):
        pods.append(draw(pod(f"p{i}")))
    for gang in range(draw(st.integers(0, 2))):
        size = draw(st.integers(2, 4))
        member = draw(pod(f"gang{gang}-0"))
        for j in range(size):
            p = {
                "metadata": {
                    "name": f"gang{gang}-{j}",
                    "namespace": "lab",
                    "labels": {"scheduling.x-k8s.io/pod-group": f"gang{gang}"},
                },
                "spec": member["spec"],
                "status": {"phase": "Pending"},
            }
            p["metadata"]["labels"].update({k: v for k, v in member["metadata"]["labels"].items()})
            pods.append(p)
    return {"now": "2025-01-31T12:00:00Z", "regions": REGIONS, "groups": gs, "nodes": nodes, "pods": pods}
