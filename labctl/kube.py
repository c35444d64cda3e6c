"""The researcher's side of the Kubernetes API (the official client, the current kubeconfig)."""

from __future__ import annotations

import time
from collections.abc import Iterator

from kubernetes import client, config
from kubernetes.client.exceptions import ApiException
from kubernetes.config.config_exception import ConfigException

from clusterspec.names import JOB_NAME_LABEL
from labctl import jobs
from labctl.errors import LabError

TENSORBOARD_PORT = 6006


def _reason(e: ApiException) -> str:
    import json

    try:
        return json.loads(e.body).get("message") or e.reason
    except (TypeError, ValueError):
        return str(e.reason)


class Kube:
    def __init__(self, kubeconfig: str | None = None, context: str | None = None) -> None:
        import os

        kubeconfig = (
            kubeconfig or os.environ.get("KUBECONFIG") or None
        )  # read now, not at the client's import
        try:
            self.api_client = config.new_client_from_config(config_file=kubeconfig, context=context)
            _, active = config.list_kube_config_contexts(config_file=kubeconfig)
        except (ConfigException, OSError) as e:
            raise LabError(
                f"kubeconfig: {str(e).rstrip('.')}; your admin makes yours with `invoke add-user NAME` (docs/researchers.md)"
            ) from None
        if context:
            contexts, _ = config.list_kube_config_contexts(config_file=kubeconfig)
            active = next(c for c in contexts if c["name"] == context)
        self.default_namespace = (active.get("context") or {}).get("namespace") or "default"
        self.batch = client.BatchV1Api(self.api_client)
        self.core = client.CoreV1Api(self.api_client)
        self.custom = client.CustomObjectsApi(self.api_client)

    def close(self) -> None:
        self.api_client.close()

    # --- submit ----------------------------------------------------------------------------------------
    def submit(self, req: jobs.JobRequest, settings) -> dict:
        """Create the Job, then its Service and PodGroup owned by it; on any failure delete what was made."""
        try:
            job = self.api_client.sanitize_for_serialization(
                self.batch.create_namespaced_job(req.namespace, jobs.job_manifest(req, settings))
            )
        except ApiException as e:
            raise LabError(f"the cluster refused job {req.name!r}: {_reason(e)}") from None
        ref = jobs.owner(job)
        try:
            if req.nodes > 1:
                self.core.create_namespaced_service(req.namespace, jobs.service_manifest(req, ref))
                client.NetworkingV1Api(self.api_client).create_namespaced_network_policy(
                    req.namespace, jobs.network_policy_manifest(req, ref)
                )
            if req.gang:
                self.custom.create_namespaced_custom_object(
                    "scheduling.x-k8s.io",
                    "v1alpha1",
                    req.namespace,
                    "podgroups",
                    jobs.podgroup_manifest(req, ref),
                )
        except ApiException as e:
            self.cancel(req.namespace, req.name)
            why = _reason(e)
            if e.status == 404 and req.gang:
                why = (
                    "the cluster has no PodGroup kind (scheduler-plugins' coscheduling is not installed); "
                    "submit without --gang"
                )
            raise LabError(f"the cluster refused part of job {req.name!r} (nothing is left): {why}") from None
        return job

    # --- follow ----------------------------------------------------------------------------------------
    def jobs(self, namespace: str) -> list:
        return self.batch.list_namespaced_job(namespace, label_selector=f"{jobs.TOOL_LABEL}=lab").items

    def pods(self, namespace: str, job: str) -> list:
        pods = self.core.list_namespaced_pod(namespace, label_selector=f"{JOB_NAME_LABEL}={job}").items
        return sorted(pods, key=lambda p: int((p.metadata.annotations or {}).get(jobs.INDEX_ANNOTATION, 0)))

    def get_job(self, namespace: str, name: str):
        try:
            return self.batch.read_namespaced_job(name, namespace)
        except ApiException as e:
            if e.status == 404:
                raise LabError(
                    f"no job {name!r} in namespace {namespace}; `lab status` lists yours"
                ) from None
            raise LabError(f"reading job {name!r}: {_reason(e)}") from None

    def logs(self, namespace: str, job: str, index: int, follow: bool) -> Iterator[str]:
        """The output of the job's pod ``index`` (its ``main`` container); with ``follow`` until it exits."""
        self.get_job(namespace, job)
        pods = [p for p in self.pods(namespace, job) if self._index(p) == index]
        if not pods:
            raise LabError(f"job {job!r} has no pod of index {index} yet; `lab status` shows where it is")
        pod = pods[-1]
        name = pod.metadata.name
        if (
            not pod.spec.node_name
        ):  # the API server has no log location for it: an empty reply would say nothing
            raise LabError(
                f"job {job!r}: pod {name} is not on a node yet, so it has no output; `lab status` shows why"
            )
        try:
            if not follow:
                yield self.core.read_namespaced_pod_log(name, namespace, container="main")
                return
            resp = self.core.read_namespaced_pod_log(
                name, namespace, container="main", follow=True, _preload_content=False
            )
        except (
            ApiException
        ) as e:  # a container still starting: 'container "main" ... is waiting to start: ...'
            raise LabError(f"job {job!r}: {_reason(e)}") from None
        try:
            for chunk in resp.stream():
                yield chunk.decode(errors="replace")
        finally:
            resp.release_conn()

    @staticmethod
    def _index(pod) -> int:
        return int((pod.metadata.annotations or {}).get(jobs.INDEX_ANNOTATION, 0))

    def cancel(self, namespace: str, name: str) -> list[str]:
        """Delete the job with its pods, Service, PodGroup and TensorBoard (each also owned by the Job)."""
        gone = []
        calls = [
            (
                "job",
                lambda: self.batch.delete_namespaced_job(name, namespace, propagation_policy="Background"),
            ),
            ("service", lambda: self.core.delete_namespaced_service(name, namespace)),
            (
                "podgroup",
                lambda: self.custom.delete_namespaced_custom_object(
                    "scheduling.x-k8s.io", "v1alpha1", namespace, "podgroups", name
                ),
            ),
            ("tensorboard", lambda: self.core.delete_namespaced_pod(tensorboard_name(name), namespace)),
        ]
        for what, call in calls:
            try:
                call()
                gone.append(what)
            except ApiException as e:
                if e.status != 404:
                    raise LabError(f"deleting the {what} of {name!r}: {_reason(e)}") from None
        for pod in self.pods(namespace, name):  # the job controller's garbage collection, done eagerly
            try:
                self.core.delete_namespaced_pod(pod.metadata.name, namespace)
            except ApiException as e:
                if e.status != 404:
                    raise
        return gone

    # --- tensorboard -----------------------------------------------------------------------------------
    def tensorboard(self, namespace: str, job: str, image: str, timeout_s: float = 300) -> str:
        owner = self.api_client.sanitize_for_serialization(self.get_job(namespace, job))
        name = tensorboard_name(job)
        try:
            pod = self.core.read_namespaced_pod(name, namespace)
        except ApiException as e:
            if e.status != 404:
                raise LabError(f"reading pod {name}: {_reason(e)}") from None
            pod = self.core.create_namespaced_pod(
                namespace, tensorboard_pod(namespace, job, image, jobs.owner(owner))
            )
        deadline = time.monotonic() + timeout_s
        while not (pod.status and pod.status.pod_ip):
            if time.monotonic() > deadline:
                raise LabError(
                    f"TensorBoard pod {name} has no address after {timeout_s:.0f} s; see lab status"
                )
            time.sleep(1)
            pod = self.core.read_namespaced_pod(name, namespace)
        return f"http://{pod.status.pod_ip}:{TENSORBOARD_PORT}/"


def tensorboard_name(job: str) -> str:
    return f"tb-{job}"[:63].rstrip("-")


def tensorboard_pod(namespace: str, job: str, image: str, owner_ref: dict) -> dict:
    """TensorBoard on the job's LOG_DIR, read-only from the results volume, on a CPU node.

    It binds all addresses: the pod network is routed to the VPN (docs/architecture.md), so the pod's own
    address opens from a laptop on the VPN; no Service or port-forward is involved."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": tensorboard_name(job),
            "namespace": namespace,
            "labels": {jobs.TOOL_LABEL: "lab", "research.cluster/tensorboard-for": job},
            "ownerReferences": [owner_ref],
        },
        "spec": {
            "restartPolicy": "Always",
            "containers": [
                {
                    "name": "tensorboard",
                    "image": image,
                    "command": [
                        "tensorboard",
                        f"--logdir={jobs.MOUNTS['results']}/{job}",
                        "--bind_all",
                        f"--port={TENSORBOARD_PORT}",
                    ],
                    "ports": [{"name": "http", "containerPort": TENSORBOARD_PORT}],
                    "resources": {"requests": {"cpu": "500m", "memory": "1Gi"}, "limits": {"memory": "4Gi"}},
                    "volumeMounts": [
                        {"name": "results", "mountPath": jobs.MOUNTS["results"], "readOnly": True}
                    ],
                }
            ],
            "volumes": [
                {"name": "results", "persistentVolumeClaim": {"claimName": "results", "readOnly": True}}
            ],
            "enableServiceLinks": False,
        },
    }
