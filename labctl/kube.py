"""The researcher's side of the Kubernetes API (the official client, the current kubeconfig)."""

from __future__ import annotations

import contextlib
import json
import queue
import re
import threading
import time
from collections.abc import Iterator

from kubernetes import client, config
from kubernetes.client.exceptions import ApiException
from kubernetes.config.config_exception import ConfigException

from clusterspec.names import JOB_NAME_LABEL, LAB_SETTINGS_CONFIGMAP, LAB_SETTINGS_KEY, LAB_SETTINGS_NAMESPACE
from clusterspec.scheduler import POD_GROUP_API
from labctl import jobs
from labctl.errors import JobFailed, LabError

TENSORBOARD_PORT = 6006
_RANK_PREFIX = re.compile(r"^\[rank(\d+)\]:", re.M)
_GROUP, _VERSION = POD_GROUP_API.split("/")


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
        except Exception as e:  # noqa: BLE001 - malformed YAML or shape: one line, not the client's traceback
            import yaml

            where = kubeconfig or "~/.kube/config"
            what = (str(e).splitlines() or [type(e).__name__])[0]
            if isinstance(e, yaml.YAMLError):
                mark = getattr(e, "problem_mark", None)
                what = f"not YAML ({getattr(e, 'problem', None) or what}" + (
                    f" at line {mark.line + 1}, column {mark.column + 1})" if mark else ")"
                )
            else:
                what = f"not a kubeconfig ({what}): it needs clusters, users, contexts and current-context"
            raise LabError(
                f"kubeconfig {where}: {what}; your admin makes yours with `invoke add-user NAME`"
            ) from None
        if context:
            contexts, _ = config.list_kube_config_contexts(config_file=kubeconfig)
            active = next(c for c in contexts if c["name"] == context)
        self.default_namespace = (active.get("context") or {}).get("namespace") or "default"
        self.kubeconfig, self.context = kubeconfig, context
        self.batch = client.BatchV1Api(self.api_client)
        self.core = client.CoreV1Api(self.api_client)
        self.custom = client.CustomObjectsApi(self.api_client)

    def close(self) -> None:
        self.api_client.close()

    # --- the cluster's settings and who we are --------------------------------------------------------------
    def settings_text(self) -> str:
        where = f"ConfigMap {LAB_SETTINGS_NAMESPACE}/{LAB_SETTINGS_CONFIGMAP}"
        try:
            cm = self.core.read_namespaced_config_map(LAB_SETTINGS_CONFIGMAP, LAB_SETTINGS_NAMESPACE)
        except ApiException as e:
            if e.status == 404:
                raise LabError(
                    f"the cluster publishes no lab settings ({where}); your admin writes them with "
                    "`invoke lab-settings` (invoke up and add-user do too), or give --settings FILE"
                ) from None
            raise LabError(f"reading the cluster's settings ({where}): {_reason(e)}") from None
        except Exception as e:  # noqa: BLE001 - no route, refused connection, TLS: one line, not a traceback
            raise LabError(
                f"the cluster does not answer ({type(e).__name__}); is the VPN connected?"
            ) from None
        text = (cm.data or {}).get(LAB_SETTINGS_KEY)
        if not text:
            raise LabError(f"{where} has no {LAB_SETTINGS_KEY}; ask your admin to run `invoke lab-settings`")
        return text

    def whoami(self) -> str | None:
        """The user name the API server sees for this kubeconfig (SelfSubjectReview, `kubectl auth whoami`)."""
        try:
            review = client.AuthenticationV1Api(self.api_client).create_self_subject_review(
                {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}
            )
            return review.status.user_info.username
        except Exception:  # noqa: BLE001 - an older server without the API: the certificate says it too
            return None

    # --- submit ----------------------------------------------------------------------------------------
    def submit(self, req: jobs.JobRequest, docs: list[dict], dry_run: bool = False) -> list[dict]:
        """Create the Job, then its other objects owned by it; on any failure delete what was made. With
        ``dry_run`` the API server admits and defaults every object but stores none (``dryRun=All``)."""
        kw = {"dry_run": "All"} if dry_run else {}
        first = docs[0]
        if len(docs) > 1:  # no pod before its Service (rank 0's name) and PodGroup exist: created suspended
            first = {**first, "spec": {**first["spec"], "suspend": True}}
        try:
            job = self.api_client.sanitize_for_serialization(
                self.batch.create_namespaced_job(req.namespace, first, **kw)
            )
        except ApiException as e:
            raise LabError(f"the cluster refused job {req.name!r}: {_reason(e)}") from None
        job["metadata"].setdefault("uid", "00000000-0000-0000-0000-000000000000")  # a dry run may have none
        ref = jobs.owner(job)
        made = [job]
        try:
            for doc in docs[1:]:
                doc = {**doc, "metadata": {**doc["metadata"], "ownerReferences": [ref]}}
                if doc["kind"] == "Service":
                    obj = self.core.create_namespaced_service(req.namespace, doc, **kw)
                elif doc["kind"] == "ConfigMap":
                    obj = self.core.create_namespaced_config_map(req.namespace, doc, **kw)
                elif doc["kind"] == "NetworkPolicy":  # the job's pods to each other (issue 26: default-deny)
                    obj = client.NetworkingV1Api(self.api_client).create_namespaced_network_policy(
                        req.namespace, doc, **kw
                    )
                else:
                    obj = self.custom.create_namespaced_custom_object(
                        _GROUP, _VERSION, req.namespace, "podgroups", doc, **kw
                    )
                made.append(self.api_client.sanitize_for_serialization(obj))
            if (
                len(docs) > 1 and not dry_run
            ):  # a dry run's Job does not exist to resume: it shows suspend: true
                resumed = self.batch.patch_namespaced_job(
                    req.name, req.namespace, {"spec": {"suspend": False}}
                )
                made[0] = self.api_client.sanitize_for_serialization(resumed)
        except ApiException as e:
            if not dry_run:  # the Job first: what it owns goes with it even where a delete below is refused
                with contextlib.suppress(LabError):
                    self.cancel(req.namespace, req.name)
            why = _reason(e)
            if e.status == 404 and len(made) < len(docs) and docs[len(made)]["kind"] == "PodGroup":
                why = (
                    "the cluster has no PodGroup kind (scheduler-plugins' coscheduling is not installed); "
                    "submit with --no-gang"
                )
            raise LabError(f"the cluster refused part of job {req.name!r} (nothing is left): {why}") from None
        return made

    # --- follow ----------------------------------------------------------------------------------------
    def jobs(self, namespace: str) -> list:
        return self.batch.list_namespaced_job(namespace, label_selector=f"{jobs.TOOL_LABEL}=lab").items

    def pods(self, namespace: str, job: str) -> list:
        pods = self.core.list_namespaced_pod(namespace, label_selector=f"{JOB_NAME_LABEL}={job}").items
        return sorted(pods, key=lambda p: int((p.metadata.annotations or {}).get(jobs.INDEX_ANNOTATION, 0)))

    def status_rows(self, namespace: str) -> list[dict]:
        """Every job of lab's in the namespace with its state and reason (labctl/status.py)."""
        from labctl import status

        plain = self.api_client.sanitize_for_serialization
        found = sorted(self.jobs(namespace), key=lambda j: j.metadata.name)
        try:
            events = plain(self.core.list_namespaced_event(namespace).items)
        except ApiException:
            events = []  # the reasons without the Events: states still
        try:  # raw: the client's models refuse a node whose nodeInfo lacks a field the API does not require
            nodes = json.loads(self.core.list_node(_preload_content=False).data)["items"]
            regions = {n["metadata"]["name"]: (n["metadata"].get("labels") or {}).get("topology.kubernetes.io/region", "?")
                       for n in nodes}  # fmt: skip
        except ApiException:
            regions = {}
        return [
            status.row(plain(j), plain(self.pods(namespace, j.metadata.name)), events, regions) for j in found
        ]

    def get_job(self, namespace: str, name: str):
        try:
            return self.batch.read_namespaced_job(name, namespace)
        except ApiException as e:
            if e.status == 404:
                raise LabError(
                    f"no job {name!r} in namespace {namespace}; `lab status` lists yours"
                ) from None
            raise LabError(f"reading job {name!r}: {_reason(e)}") from None

    def _log(self, namespace: str, pod: str, job: str, **kw) -> str:
        try:
            return self.core.read_namespaced_pod_log(pod, namespace, container="main", **kw)
        except ApiException as e:
            # a container still starting: 'container "main" ... is waiting to start: ...'
            raise LabError(f"job {job!r}: {_reason(e)}") from None

    def rank0_pod(self, namespace: str, job: str):
        """The pod holding global rank 0: the one whose output has torchrun's ``[rank0]:`` lines (under c10d the
        rendezvous assigns node ranks), else node index 0 (lab's static rendezvous makes the index the node rank)."""
        pods = [p for p in self.pods(namespace, job) if p.spec.node_name]
        if len(pods) > 1:
            for pod in pods:
                try:
                    text = self._log(namespace, pod.metadata.name, job, limit_bytes=1 << 20)
                except LabError:
                    continue
                if any(int(m) == 0 for m in _RANK_PREFIX.findall(text)):
                    return pod
        return None

    # --- the job's state, for logs and status ------------------------------------------------------------------
    @staticmethod
    def finished(job) -> str | None:
        """``Complete`` or ``Failed`` once the Job controller says so, else None."""
        for c in (job.status.conditions or []) if job.status else []:
            if c.type in ("Complete", "Failed") and c.status == "True":
                return c.type
        return None

    @staticmethod
    def init_failure(pod) -> tuple[str, int, str] | None:
        """(container, exit code, reason) of an init container (the code, the deps step) that failed."""
        for cs in (pod.status.init_container_statuses or []) if pod.status else []:
            for state in (cs.state, cs.last_state):
                term = state.terminated if state else None
                if term is not None and term.exit_code:
                    return cs.name, term.exit_code, term.reason or "Error"
        return None

    @staticmethod
    def main_exit(pod) -> int | None:
        for cs in (pod.status.container_statuses or []) if pod.status else []:
            if cs.name == "main" and cs.state and cs.state.terminated is not None:
                return cs.state.terminated.exit_code
        return None

    @staticmethod
    def starting(pod) -> str | None:
        """Why the pod's command has no output yet, or None once it has started."""
        if pod.status is None or not pod.spec.node_name:
            return "not on a node yet"
        for cs in pod.status.init_container_statuses or []:
            if cs.state and cs.state.terminated is not None and cs.state.terminated.exit_code == 0:
                continue
            if cs.state and cs.state.running is not None:
                return f"its {cs.name} step is running"
            return f"its {cs.name} step is waiting"
        for cs in pod.status.container_statuses or []:
            if cs.name == "main" and cs.state and cs.state.waiting is not None:
                return f"its command is waiting ({cs.state.waiting.reason or 'ContainerCreating'})"
        if pod.status.phase == "Pending":
            return "it is starting"
        return None

    def _container_log(self, namespace: str, pod: str, container: str) -> str:
        try:
            return self.core.read_namespaced_pod_log(pod, namespace, container=container)
        except ApiException as e:
            return f"(its output cannot be read: {_reason(e)})\n"

    def _init_failed(self, namespace: str, job: str, pod, failure: tuple[str, int, str]) -> Iterator[str]:
        name, code, reason = failure
        text = self._container_log(namespace, pod.metadata.name, name)
        if text.startswith(
            "(its output cannot be read"
        ):  # the kubelet's copy of its last lines, in the status
            # (terminationMessagePolicy FallbackToLogsOnError, labctl/jobs.py)
            cs = next(c for c in pod.status.init_container_statuses if c.name == name)
            term = cs.state.terminated or cs.last_state.terminated
            text = (term.message or "").rstrip() + "\n" if term.message else text
        yield text
        self.exit_code = code
        step = "installing its requirements" if name == "deps" else "fetching its code"
        raise JobFailed(
            f"job {job!r}: its {name} step ({step}) failed with exit code {code} ({reason}) before the command ran; "
            "its output is above"
        )

    def logs(self, namespace: str, job: str, index: int | None, follow: bool) -> Iterator[str]:
        """The output of the job's rank-0 pod (or node ``index``'s), its ``main`` container; with ``follow`` it
        waits through start-up and follows until it exits (``exit_code`` then holds the command's status). A pod
        that is gone (the Job failed, its node was given back) is read from ``$LOG_DIR`` instead; an init step
        that failed (code, deps) shows its own output and reason."""
        self.exit_code, self.exit_reason = 0, ""
        said = None
        while True:
            job_obj = self.get_job(namespace, job)
            pod = None
            at = 0 if index is None else index
            if index is None:
                pod = self.rank0_pod(namespace, job)
            if pod is None:
                pods = [p for p in self.pods(namespace, job) if self._index(p) == at]
                pod = pods[-1] if pods else None
            done = self.finished(job_obj)
            if pod is None and (
                done or (job_obj.status and (job_obj.status.failed or job_obj.status.succeeded))
            ):
                yield from self.kept_log(namespace, job_obj, at)
                if done == "Failed":
                    self.exit_code = 1
                return
            failure = self.init_failure(pod) if pod is not None else None
            if failure:
                yield from self._init_failed(namespace, job, pod, failure)
            why = "its pod is not created yet" if pod is None else self.starting(pod)
            if why is None:
                break
            if not follow:
                raise LabError(f"job {job!r} has no output yet: {why}; `lab status` shows where it is")
            if why != said:
                import sys

                print(f"lab: waiting for {job}: {why}", file=sys.stderr, flush=True)
                said = why
            time.sleep(1)
        name = pod.metadata.name
        if not follow:
            yield self._log(namespace, name, job)
            code = self.main_exit(pod)
            self.exit_code = code or 0
            return
        try:
            resp = self.core.read_namespaced_pod_log(
                name, namespace, container="main", follow=True, _preload_content=False
            )
        except ApiException as e:
            raise LabError(f"job {job!r}: {_reason(e)}") from None
        try:
            for chunk in resp.stream():
                yield chunk.decode(errors="replace")
        finally:
            resp.release_conn()
        self.exit_code = self._wait_exit(namespace, name)

    def _wait_exit(self, namespace: str, pod_name: str, timeout_s: float = 30.0) -> int:
        """The command's exit status once its pod says it (the stream ends as the container does)."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            try:
                pod = self.core.read_namespaced_pod(pod_name, namespace)
            except ApiException:
                self.exit_reason = (
                    "its pod is gone before the command ended (cancelled, or its node was lost)"
                )
                return 1
            code = self.main_exit(pod)
            if pod.metadata.deletion_timestamp is not None and (code is None or code >= 128):
                # deleted while it ran: a kubelet stops it (SIGTERM, exit 143) and the pod may still be read
                # before it goes; either way the command did not end by itself
                self.exit_reason = (
                    "its pod is gone before the command ended (cancelled, or its node was lost)"
                )
                return 1
            if code is not None:
                return code
            time.sleep(0.5)
        return 1

    def kept_log(self, namespace: str, job, index: int, timeout_s: float = 120.0) -> Iterator[str]:
        """A gone pod's output from ``$LOG_DIR/logs/node-<index>.log`` (labctl/entry.py tees it there): read by a
        short-lived pod that mounts the results volume read-only, as the researcher's uid, owned by the Job."""
        import sys

        name = f"logs-{job.metadata.name}"[:55].rstrip("-") + f"-{index}"
        path = f"{jobs.MOUNTS['results']}/{job.metadata.name}/logs/node-{index}.log"
        print(f"lab: job {job.metadata.name!r}: the pod of index {index} is gone; its output kept in {path}:",
              file=sys.stderr, flush=True)  # fmt: skip
        spec = job.spec.template.spec
        uid = spec.security_context.run_as_user if spec.security_context else None
        image = spec.containers[0].image
        owner = jobs.owner(self.api_client.sanitize_for_serialization(job))
        body = reader_pod(namespace, name, image, path, owner, uid)
        try:
            self.core.create_namespaced_pod(namespace, body)
        except ApiException as e:
            if e.status != 409:
                raise LabError(f"reading {path}: {_reason(e)}") from None
        try:
            deadline = time.monotonic() + timeout_s
            while True:
                pod = self.core.read_namespaced_pod(name, namespace)
                if pod.status and pod.status.phase in ("Succeeded", "Failed"):
                    break
                if time.monotonic() > deadline:
                    raise LabError(
                        f"reading {path}: pod {name} did not run in {timeout_s:.0f} s; see lab status"
                    )
                time.sleep(0.5)
            text = self.core.read_namespaced_pod_log(name, namespace, container="cat")
            if pod.status.phase == "Failed":
                raise LabError(
                    f"job {job.metadata.name!r}: no output kept for index {index} ({text.strip()})"
                )
            yield text
        finally:
            with contextlib.suppress(ApiException):
                self.core.delete_namespaced_pod(name, namespace, grace_period_seconds=0)

    def all_logs(self, namespace: str, job: str, follow: bool) -> Iterator[str]:
        """Every pod's output, each line prefixed with its node rank (``[node 1]``; torchrun's own ``[rankN]:`` stays
        on its workers' lines), in time order (the kubelet's timestamps); with ``follow`` until every pod exits."""
        job_obj = self.get_job(namespace, job)
        pods = [p for p in self.pods(namespace, job) if p.spec.node_name]
        yield from self._gone_logs(namespace, job_obj, {self._index(p) for p in pods})
        if not pods:
            if self.finished(job_obj) or (
                job_obj.status and (job_obj.status.failed or job_obj.status.succeeded)
            ):
                return  # every pod gone: their output came from $LOG_DIR above
            raise LabError(
                f"job {job!r} has no pod on a node yet, so no output; `lab status` shows where it is"
            )
        if not follow:
            lines = []
            for pod in pods:
                text = self._log(namespace, pod.metadata.name, job, timestamps=True)
                for ln in text.splitlines(keepends=True):
                    stamp, _, rest = ln.partition(" ")
                    lines.append((stamp, self._index(pod), rest))
            for _, i, rest in sorted(lines, key=lambda x: (x[0], x[1])):
                yield f"[node {i}] {rest}"
            return
        q: queue.Queue = queue.Queue()

        def pump(pod) -> None:
            i = self._index(pod)
            try:
                resp = self.core.read_namespaced_pod_log(
                    pod.metadata.name, namespace, container="main", follow=True, _preload_content=False
                )
                rest = ""
                for chunk in resp.stream():
                    rest += chunk.decode(errors="replace")
                    *full, rest = rest.split("\n")
                    for ln in full:
                        q.put(f"[node {i}] {ln}\n")
                if rest:
                    q.put(f"[node {i}] {rest}\n")
                resp.release_conn()
            except ApiException as e:
                q.put(f"[node {i}] lab: {_reason(e)}\n")
            finally:
                q.put(None)

        threads = [threading.Thread(target=pump, args=(p,), daemon=True) for p in pods]
        for th in threads:
            th.start()
        done = 0
        while done < len(threads):
            item = q.get()
            if item is None:
                done += 1
            else:
                yield item

    def _gone_logs(self, namespace: str, job, present: set[int]) -> Iterator[str]:
        """For ``--all``: the output of each node whose pod is gone once the job has ended or lost pods (the Job
        failed and its surviving pods were deleted, a node was given back), read from ``$LOG_DIR`` as ``lab logs``
        reads it, each line prefixed with its node."""
        status = job.status
        if not (self.finished(job) or (status and (status.failed or status.succeeded))):
            return
        nodes = job.spec.completions or job.spec.parallelism or 1
        for i in range(nodes):
            if i in present:
                continue
            try:
                text = "".join(self.kept_log(namespace, job, i))
            except LabError as e:
                yield f"[node {i}] lab: {e.lines[0]}\n"
                continue
            for ln in text.splitlines(keepends=True):
                yield f"[node {i}] {ln if ln.endswith(chr(10)) else ln + chr(10)}"

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
                    _GROUP, _VERSION, namespace, "podgroups", name
                ),
            ),
            ("hostfile", lambda: self.core.delete_namespaced_config_map(jobs.hostfile_name(name), namespace)),
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
    def tensorboard(
        self, namespace: str, job: str, image: str | None, timeout_s: float = 300, uid: int | None = None
    ) -> str:
        """TensorBoard on the job's LOG_DIR; ``image`` None: the job's own (the standard image has tensorboard)."""
        found = self.get_job(namespace, job)
        image = image or found.spec.template.spec.containers[0].image
        owner = self.api_client.sanitize_for_serialization(found)
        name = tensorboard_name(job)
        body = tensorboard_pod(namespace, job, image, jobs.owner(owner), uid)
        deadline = time.monotonic() + timeout_s
        made = 0
        while True:
            try:
                pod = self.core.read_namespaced_pod(name, namespace)
            except ApiException as e:
                if e.status != 404:
                    raise LabError(f"reading pod {name}: {_reason(e)}") from None
                # none yet, or gone with its node (the pod garbage collector deletes a lost node's pods): again
                if made >= 3:
                    raise LabError(f"TensorBoard pod {name} went away {made} times; see lab status") from None
                try:
                    pod = self.core.create_namespaced_pod(namespace, body)
                except ApiException as e2:
                    if e2.status != 409:
                        raise LabError(f"creating pod {name}: {_reason(e2)}") from None
                    continue
                made += 1
            if pod.status and pod.status.pod_ip:
                return f"http://{pod.status.pod_ip}:{TENSORBOARD_PORT}/"
            if time.monotonic() > deadline:
                raise LabError(
                    f"TensorBoard pod {name} has no address after {timeout_s:.0f} s; see lab status"
                )
            time.sleep(1)


def helper_security(uid: int | None) -> dict:
    """The pod security context of the pods `lab` starts beside a job (the reader of a gone pod's output,
    TensorBoard): restricted Pod Security and the tenancy policy's one group (provision/tenancy.py: runAsGroup the
    researcher's, ``supplementalGroupsPolicy: Strict``), as the job's own pods (labctl/jobs.py). Without Strict the
    real API server refuses the pod (research-tenant-pods), as it refused the reader."""
    return {
        "runAsUser": uid or 65534,
        "runAsGroup": uid or 65534,
        "runAsNonRoot": True,
        "supplementalGroupsPolicy": "Strict",
        "seccompProfile": {"type": "RuntimeDefault"},
    }


def reader_pod(namespace: str, name: str, image: str, path: str, owner_ref: dict, uid: int | None) -> dict:
    """A pod that prints one file of the results volume (read-only) and ends: restricted, as the job's uid."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "labels": {jobs.TOOL_LABEL: "lab"},
                     "ownerReferences": [owner_ref]},
        "spec": {
            "restartPolicy": "Never",
            "containers": [{
                "name": "cat",
                "image": image,
                "command": ["cat", path],
                "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}},
                "volumeMounts": [{"name": "results", "mountPath": jobs.MOUNTS["results"], "readOnly": True}],
                "securityContext": {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}},
            }],
            "securityContext": helper_security(uid),
            "volumes": [{"name": "results", "persistentVolumeClaim": {"claimName": "results", "readOnly": True}}],
            "enableServiceLinks": False,
        },
    }  # fmt: skip


def tensorboard_name(job: str) -> str:
    return f"tb-{job}"[:63].rstrip("-")


def tensorboard_pod(namespace: str, job: str, image: str, owner_ref: dict, uid: int | None = None) -> dict:
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
                    "securityContext": {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}},
                }
            ],
            "securityContext": helper_security(uid),
            "volumes": [
                {"name": "results", "persistentVolumeClaim": {"claimName": "results", "readOnly": True}}
            ],
            "enableServiceLinks": False,
        },
    }
