"""The real local cluster for `lab`'s end-to-end tests: moto, the real control plane with what `invoke up` deploys,
the real `autoscaler run`, alice's namespace and kubeconfig from the CSR API, the lab settings published
(demos/researcher/run.py ``local_cluster``), every node the process kubelet's, so that the jobs' pods run as local
processes with the Job's environment, uid and volumes. One per test process (session scope), as envtest shares one
control plane: each test names its own jobs and :meth:`RealLab.clean` removes them after it."""

from __future__ import annotations

import contextlib
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path

NAMESPACE = "u-alice"
JOB_NAME = "batch.kubernetes.io/job-name"


@dataclass
class RealLab:
    kubeconfig: Path  # alice's
    admin: Path
    moto_url: str
    root: Path  # the process kubelet's folder: pods/<ns>_<pod>_<uid>, claims/<ns>_<claim>
    _api: object = field(default=None, repr=False)

    def api(self):
        if self._api is None:
            from kubernetes import config

            self._api = config.new_client_from_config(config_file=str(self.admin))
        return self._api

    def _dict(self, obj) -> dict:
        return self.api().sanitize_for_serialization(obj)

    def job(self, name: str) -> dict | None:
        from kubernetes import client
        from kubernetes.client.exceptions import ApiException

        try:
            return self._dict(client.BatchV1Api(self.api()).read_namespaced_job(name, NAMESPACE))
        except ApiException as e:
            if e.status == 404:
                return None
            raise

    def pods(self, job: str) -> list[dict]:
        from kubernetes import client

        items = client.CoreV1Api(self.api()).list_namespaced_pod(
            NAMESPACE, label_selector=f"{JOB_NAME}={job}"
        )
        return [self._dict(p) for p in items.items]

    def wait(self, job: str, timeout_s: float = 240.0) -> dict:
        """The Job once it is Complete or Failed."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            obj = self.job(job) or {}
            conds = {c["type"]: c["status"] for c in (obj.get("status") or {}).get("conditions") or ()}
            if conds.get("Complete") == "True" or conds.get("Failed") == "True":
                return obj
            time.sleep(0.5)
        raise AssertionError(
            f"job {job} did not finish in {timeout_s} s: {(self.job(job) or {}).get('status')}"
        )

    def gone(self, job: str, timeout_s: float = 60.0) -> None:
        """Until no pod of ``job`` is left (the Job controller lets them go once it has counted them)."""
        deadline = time.monotonic() + timeout_s
        while self.pods(job):
            if time.monotonic() > deadline:
                raise AssertionError(f"pods of {job} still there after {timeout_s} s")
            time.sleep(0.5)

    def pod_folders(self, job: str) -> list[Path]:
        return sorted(p for p in (self.root / "pods").iterdir() if p.name.startswith(f"{NAMESPACE}_{job}-"))

    def claim(self, name: str) -> Path:
        return self.root / "claims" / f"{NAMESPACE}_{name}"

    def tails(self, job: str, lines: int = 30) -> str:
        """The last lines of every container run's log of the job's pods: what a failed assertion shows."""
        out = []
        for folder in self.pod_folders(job):
            for log in sorted((folder / "logs").rglob("*")):
                if log.is_file():
                    text = log.read_text(errors="replace").splitlines()[-lines:]
                    out.append(f"--- {folder.name}/{log.relative_to(folder)}\n" + "\n".join(text))
        return "\n".join(out)

    def use(self, monkeypatch, tmp_path: Path) -> None:
        """`lab` as alice: her kubeconfig, no container engine, nothing of the caller's AWS or lab settings."""
        for k in ("LAB_SETTINGS", "LAB_REGISTRY", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
            monkeypatch.delenv(k, raising=False)
        monkeypatch.setenv("KUBECONFIG", str(self.kubeconfig))
        monkeypatch.setenv("LAB_ENGINE", "")
        monkeypatch.setenv("LAB_USER", "alice")
        monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
        monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
        monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))

    def clean(self) -> None:
        """Every job of alice's and its pods gone (their GPUs back in her quota), as `lab cancel` leaves them."""
        from kubernetes import client

        batch, core = client.BatchV1Api(self.api()), client.CoreV1Api(self.api())
        for j in batch.list_namespaced_job(NAMESPACE).items:
            with contextlib.suppress(Exception):
                batch.delete_namespaced_job(j.metadata.name, NAMESPACE, propagation_policy="Foreground",
                                            grace_period_seconds=0)  # fmt: skip
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if not batch.list_namespaced_job(NAMESPACE).items and not [
                p
                for p in core.list_namespaced_pod(NAMESPACE).items
                if p.metadata.labels and JOB_NAME in p.metadata.labels
            ]:
                return
            time.sleep(0.5)


@contextlib.contextmanager
def started(out: Path):
    """The cluster up for the life of the block."""
    from clusterspec.loader import load_spec
    from demos.researcher.run import local_cluster
    from localcluster.kubelet.images import open_folder

    pods = open_folder("lab-e2e-pods-")  # the pods run as alice's uid: a folder she may enter
    try:
        with local_cluster(load_spec(), out, out / "secrets", say=lambda s: None, pods=pods) as (
            added,
            url,
            admin,
        ):
            lab = RealLab(kubeconfig=added.kubeconfig, admin=admin, moto_url=url, root=pods)
            try:
                yield lab
            finally:
                if lab._api is not None:
                    lab._api.close()
    finally:
        shutil.rmtree(pods, ignore_errors=True)
