"""Jobs as a researcher submits them, on the real API server: a batch/v1 Job per job (Indexed, one pod per
node, for a job bigger than one node) with the pod template the simulator's rule gives
(``simulator.workload.job_pods``), and for a gang its PodGroup (scheduler-plugins) of ``minMember`` pods.
The real Job controller makes the pods; kwok runs them on their nodes and completes them after their duration
(model seconds over the compression, kwok's ``pod-complete.stage.kwok.x-k8s.io/delay`` annotation, and its
``jitter-delay`` the same: the stage's jitter defaults to 5 s and kwok takes a jitter below the delay as the delay,
so without it every pod completed 5 wall seconds after it ran, whatever its duration)."""

from __future__ import annotations

from clusterspec.names import JOB_INDEX_LABEL, JOB_NAME_LABEL, POD_GROUP_LABEL
from simulator.model.pods import DURATION_ANNOTATION
from simulator.traces import Job
from simulator.workload import job_pods

KWOK_COMPLETE_DELAY = "pod-complete.stage.kwok.x-k8s.io/delay"
KWOK_COMPLETE_JITTER = (
    "pod-complete.stage.kwok.x-k8s.io/jitter-delay"  # kwok's Stage.Delay: jitter <= delay wins
)
PODGROUP_API = ("scheduling.x-k8s.io", "v1alpha1", "podgroups")


def objects(job: Job, namespace: str, compression: float = 1.0, gpus_per_node: int = 8) -> list[dict]:
    """The PodGroup (for a gang) and the Job, in creation order."""
    pods = job_pods(job, gpus_per_node, DURATION_ANNOTATION)
    first = pods[0]
    labels = {k: v for k, v in first["metadata"]["labels"].items()
              if k not in (JOB_NAME_LABEL, "job-name", JOB_INDEX_LABEL)}  # fmt: skip
    annotations = dict(first["metadata"]["annotations"])
    delay = f"{max(job.duration_s / compression, 0.001):.3f}s"
    annotations[KWOK_COMPLETE_DELAY] = annotations[KWOK_COMPLETE_JITTER] = delay
    n = len(pods)
    spec = {
        "completions": n,
        "parallelism": n,
        "backoffLimit": 0,
        "template": {"metadata": {"labels": labels, "annotations": annotations}, "spec": first["spec"]},
    }
    if n > 1:
        spec["completionMode"] = "Indexed"
    out = []
    if POD_GROUP_LABEL in labels:
        out.append({"apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup",
                    "metadata": {"name": labels[POD_GROUP_LABEL], "namespace": namespace},
                    "spec": {"minMember": n}})  # fmt: skip
    out.append({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": job.id, "namespace": namespace},
                "spec": spec})  # fmt: skip
    return out


def pods_of(job: Job, gpus_per_node: int = 8) -> int:
    return len(job_pods(job, gpus_per_node, DURATION_ANNOTATION))


def submit(api, job: Job, namespace: str, compression: float = 1.0) -> None:
    """Create the job's objects through the API (kubernetes.client.ApiClient)."""
    from kubernetes import client as k8s

    for obj in objects(job, namespace, compression):
        if obj["kind"] == "PodGroup":
            group, version, plural = PODGROUP_API
            k8s.CustomObjectsApi(api).create_namespaced_custom_object(group, version, namespace, plural, obj)
        else:
            k8s.BatchV1Api(api).create_namespaced_job(namespace, obj)
