"""Jobs to Kubernetes pods, the way a researcher would submit them.

- A job that fits on one node is one pod (a plain Job's pod).
- A job bigger than one node becomes an Indexed Job: ``ceil(gpus / gpus_per_node)`` pods of up to a full node
  each (e.g. 20 GPUs on 8-GPU nodes: 8 + 8 + 4), labelled ``batch.kubernetes.io/job-name`` and
  ``batch.kubernetes.io/job-completion-index`` so the planner and the scheduler treat them as one gang.
- Resources: each pod requests its GPUs; CPU and memory are the job's totals from the trace split in proportion
  to GPUs, or, when the trace has none, ``CPU_PER_GPU`` CPUs and ``MEMORY_GIB_PER_GPU`` GiB per GPU: the share
  of the smallest GPU node of the spec (g4dn.xlarge: 4 vCPUs, 16 GiB for 1 GPU) left after the kubelet's
  reservations and a DaemonSet's room, so a pod never needs more CPU or memory per GPU than any GPU node offers.
- Pods tolerate the ``nvidia.com/gpu`` taint (GPU groups carry it) and no other (spot groups stay unused).
- Gangs: with a scheduler profile that has Coscheduling, a multi-node job is declared as a gang the way the
  deployed gang scheduler needs it: label ``scheduling.x-k8s.io/pod-group`` (the job's name), its size
  (``research.cluster/pod-group-size``, the PodGroup's ``minMember``) and ``schedulerName`` of the gang
  scheduler. Without Coscheduling its pods are scheduled one by one; a distributed job's work only starts when
  all its workers run (they wait at the rendezvous), so its pods carry ``RENDEZVOUS_ANNOTATION`` instead of a
  duration and the runner ends them together (``simulator/rendezvous.py``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from clusterspec.names import (
    CPU_PER_GPU,
    JOB_INDEX_LABEL,
    JOB_NAME_LABEL,
    MEMORY_GIB_PER_GPU,
    POD_GROUP_LABEL,
    POD_GROUP_SIZE_ANNOTATION,
)
from clusterspec.names import GPU_RESOURCE as GPU
from clusterspec.scheduler import GANG_SCHEDULER
from simulator.traces import Job

RENDEZVOUS_ANNOTATION = "research.cluster/rendezvous-duration-s"  # run time once every worker runs
NAMESPACE = "research"


@dataclass(frozen=True)
class PodShape:
    gpus: int
    cpu_m: int
    memory_mi: int


def split_job(job: Job, gpus_per_node: int) -> list[PodShape]:
    """The pods of ``job``: as many full nodes as needed, the remainder in the last pod."""
    if gpus_per_node < 1:
        raise ValueError("gpus_per_node must be at least 1")
    count = math.ceil(job.gpus / gpus_per_node)
    gpus = [gpus_per_node] * (count - 1) + [job.gpus - gpus_per_node * (count - 1)]
    shapes = []
    for g in gpus:
        share = g / job.gpus
        cpus = job.cpus * share if job.cpus is not None else g * CPU_PER_GPU
        mem = job.memory_gib * share if job.memory_gib is not None else g * MEMORY_GIB_PER_GPU
        shapes.append(PodShape(gpus=g, cpu_m=max(1, round(cpus * 1000)), memory_mi=max(1, round(mem * 1024))))
    return shapes


def job_pods(
    job: Job,
    gpus_per_node: int,
    duration_annotation: str,
    *,
    gangs: bool = True,
    annotations: dict[str, str] | None = None,
) -> list[dict]:
    """The job's pods as Kubernetes objects (``kubectl get pod -o json`` shape), still Pending.

    ``duration_annotation`` names the annotation the cluster model reads to finish a running pod; ``gangs``:
    the scheduler has Coscheduling (a multi-node job is a declared gang); ``annotations`` go on every pod
    (e.g. cluster-autoscaler's ``safe-to-evict``).
    """
    shapes = split_job(job, gpus_per_node)
    indexed = len(shapes) > 1
    pods = []
    for i, shape in enumerate(shapes):
        labels = {JOB_NAME_LABEL: job.id, "job-name": job.id}
        notes = dict(annotations or {})
        extra_spec = {}
        if indexed:
            labels[JOB_INDEX_LABEL] = str(i)
            if gangs:
                labels[POD_GROUP_LABEL] = job.id
                notes[POD_GROUP_SIZE_ANNOTATION] = str(len(shapes))
                extra_spec["schedulerName"] = GANG_SCHEDULER
        if indexed and not gangs:
            notes[RENDEZVOUS_ANNOTATION] = f"{job.duration_s:g}"
        else:
            notes[duration_annotation] = f"{job.duration_s:g}"
        requests = {"cpu": f"{shape.cpu_m}m", "memory": f"{shape.memory_mi}Mi"}
        if shape.gpus:
            requests[GPU] = str(shape.gpus)
        pods.append(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {
                    "name": f"{job.id}-{i}" if indexed else job.id,
                    "namespace": NAMESPACE,
                    "labels": labels,
                    "annotations": notes,
                    "ownerReferences": [
                        {
                            "apiVersion": "batch/v1",
                            "kind": "Job",
                            "name": job.id,
                            "uid": f"uid-{job.id}",
                            "controller": True,
                        }
                    ],
                },
                "spec": {
                    **extra_spec,
                    "restartPolicy": "Never",
                    "containers": [
                        {
                            "name": "train",
                            "image": "research/train:latest",
                            "resources": {"requests": requests, "limits": {GPU: str(shape.gpus)}}
                            if shape.gpus
                            else {"requests": requests},
                        }
                    ],
                    "tolerations": [{"key": GPU, "operator": "Exists", "effect": "NoSchedule"}],
                },
                "status": {"phase": "Pending"},
            }
        )
    return pods


def peak_gpu_demand(jobs: list[Job]) -> int:
    """The most GPUs in use at once if every job started at its submission (the size a static cluster needs)."""
    deltas = sorted(
        [(j.submit_s, j.gpus) for j in jobs] + [(j.submit_s + j.duration_s, -j.gpus) for j in jobs]
    )
    peak = level = 0
    for _, d in sorted(deltas, key=lambda x: (x[0], x[1])):
        level += d
        peak = max(peak, level)
    return peak
