"""Small builders for model tests: groups and pods as Kubernetes dicts."""

from __future__ import annotations

from simulator.model import DURATION_ANNOTATION, ClusterModel, VirtualClock

GPU_TOLERATION = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
GPU_TAINT = {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}


def group(name: str = "g8", instance_type: str = "p3.16xlarge", region: str = "us-west-2", **kw) -> dict:
    g = {
        "name": name,
        "region": region,
        "zones": [f"{region}a", f"{region}b"],
        "instance_type": instance_type,
        "min": 0,
        "max": 10,
        "desired": 0,
        "labels": {"research.cluster/pool": "gpu"},
        "taints": [dict(GPU_TAINT)],
    }
    g.update(kw)
    return g


def pod(
    name: str,
    gpus: int = 8,
    cpu: str = "4",
    duration: float | None = 600,
    namespace: str = "research",
    labels: dict | None = None,
    annotations: dict | None = None,
    job: str | None = None,
) -> dict:
    requests = {"cpu": cpu, "memory": "8Gi"}
    if gpus:
        requests["nvidia.com/gpu"] = str(gpus)
    ann = dict(annotations or {})
    if duration is not None:
        ann[DURATION_ANNOTATION] = str(duration)
    meta = {"name": name, "namespace": namespace, "labels": dict(labels or {}), "annotations": ann}
    if job:
        meta["ownerReferences"] = [
            {"apiVersion": "batch/v1", "kind": "Job", "name": job, "uid": job, "controller": True}
        ]
        meta["labels"]["batch.kubernetes.io/job-name"] = job
    return {
        "metadata": meta,
        "spec": {
            "containers": [{"name": "main", "image": "train", "resources": {"requests": requests}}],
            "tolerations": [dict(GPU_TOLERATION)],
        },
    }


def gang(job: str, size: int, gpus: int = 8, duration: float = 600) -> list[dict]:
    """A declared gang: an Indexed Job's pods labelled with their PodGroup (scheduling.x-k8s.io/pod-group) and naming
    the gang scheduler (only it places a group whole)."""
    pods = []
    for i in range(size):
        p = pod(f"{job}-{i}", gpus=gpus, duration=duration, job=job)
        p["metadata"]["labels"]["batch.kubernetes.io/job-completion-index"] = str(i)
        p["metadata"]["labels"]["scheduling.x-k8s.io/pod-group"] = job
        p["spec"]["schedulerName"] = "research-gang-scheduler"
        pods.append(p)
    return pods


def model(*groups: dict, **kw) -> ClusterModel:
    return ClusterModel(VirtualClock(start=0.0), list(groups), **kw)


def phases(m: ClusterModel, namespace: str = "research") -> dict[str, str]:
    return {
        p["metadata"]["name"]: p["status"]["phase"]
        for p in m.pods()
        if p["metadata"]["namespace"] == namespace
    }


def run_until_quiet(m: ClusterModel, until: float) -> None:
    while (t := m.next_event_time()) is not None and t <= until:
        m.advance(t)
    m.advance(until)
