"""``invoke bench-iteration``: from a code edit to every pod of the job Running, in the local stack, with the
kubelet's image pulls modelled from the standard image's real layer list (clusterspec/data/standard_image.yaml).

The stack is in process: the Kubernetes API emulator on the cluster model (wall clock, ``--compression``; image
pulls on, autoscaler/model/images.py), a moto S3 server on loopback as the cluster's bucket, the cluster's lab
settings published as ``invoke up`` publishes them, and the sample project of the tests (nanoGPT's habits). Each
case edits ``train.py``, runs the real ``lab submit`` (snapshot, upload, objects) and waits for the pods:

- **warm node**: a GPU node that ran a job before (the standard image on disk);
- **new node**: no node of the type yet; the scale-up is decided the moment the pod is pending (the live
  autoscaler's measured reaction, 0.6 s, docs/benchmarks.md, is within the model's tick), so the figure is the
  node's boot (launch, registration, network, device plugin: autoscaler/model/boot.py) plus what the pod adds;
- **new node, image not baked**: the same without the GPU image's pre-pull, to show what it saves.

``lab submit``'s own time (snapshot, upload, API calls) is measured in real seconds; the cluster's part in model
seconds (wall time x compression). The init container's fetch and unpack runs for real too, against the same
bucket (labctl/unpack.py), because the model starts containers without running them. Targets (issue 25): warm under
30 s; new under the node's boot time plus 30 s.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import boto3
import yaml
from kubernetes import config

from autoscaler.emulator import Emulator
from autoscaler.model import ClusterModel, WallClock
from autoscaler.model import images as model_images
from autoscaler.model.adapters import ModelCloud
from autoscaler.model.boot import NodeLifecycle, boot_delay
from autoscaler.model.spec_groups import groups_from_spec
from clusterspec.loader import DEFAULT_SPEC, load_spec
from labctl.cli import run as lab
from provision import lab_settings

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "tests" / "labctl" / "fixtures" / "nanogpt_like"
BUCKET = "dlr-results-123456789012"
GROUP = "dlr-us-west-2-gpu-t4"  # one T4 per node: the quick-experiment group
TARGET_WARM_S = 30.0


def _git(root: Path, *args: str) -> None:
    env = {**os.environ, "GIT_AUTHOR_NAME": "b", "GIT_AUTHOR_EMAIL": "b@x", "GIT_COMMITTER_NAME": "b",
           "GIT_COMMITTER_EMAIL": "b@x"}  # fmt: skip
    subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True, env=env)


@contextlib.contextmanager
def _s3():
    import logging

    from moto.server import ThreadedMotoServer

    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # one line per request otherwise
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    url = f"http://{host}:{port}"
    boto3.client("s3", endpoint_url=url, region_name="us-west-2", aws_access_key_id="b",
                 aws_secret_access_key="b").create_bucket(
        Bucket=BUCKET, CreateBucketConfiguration={"LocationConstraint": "us-west-2"})  # fmt: skip
    try:
        yield url
    finally:
        server.stop()


def _unpack_s(code_url: str, sha: str, s3_url: str, dest: Path) -> float:
    """The init container's work, run for real: fetch the snapshot from the bucket, check it, unpack it."""
    from importlib import resources

    script = resources.files("labctl").joinpath("unpack.py").read_text()
    env = {**os.environ, "LAB_CODE_URL": code_url, "LAB_CODE_SHA256": sha, "LAB_CODE_DIR": str(dest),
           "AWS_ENDPOINT_URL_S3": s3_url, "AWS_ACCESS_KEY_ID": "b", "AWS_SECRET_ACCESS_KEY": "b"}  # fmt: skip
    t0 = time.monotonic()
    subprocess.run([sys.executable, "-c", script], env=env, check=True, capture_output=True)
    return time.monotonic() - t0


class Bench:
    def __init__(self, compression: float, work: Path, s3_url: str, baked: bool = True) -> None:
        spec = load_spec()
        self.compression = compression
        self.model = ClusterModel(WallClock(compression=compression), groups_from_spec(yaml.safe_load(
            Path(DEFAULT_SPEC).read_text())), lifecycle=NodeLifecycle())  # fmt: skip
        self.emu = Emulator(self.model)
        self.emu.__enter__()
        self.emu.install_podgroup_crd()
        self.emu.create_namespace("u-alice")
        admin = self.emu.write_kubeconfig(work / "admin")
        api = config.new_client_from_config(config_file=str(admin))
        lab_settings.apply(api, spec, registry="123456789012.dkr.ecr.us-west-2.amazonaws.com", code_bucket=BUCKET,
                           s3_endpoint=s3_url)  # fmt: skip
        api.close()
        data = yaml.safe_load(admin.read_text())
        for ctx in data["contexts"]:
            ctx["context"]["namespace"] = "u-alice"
        self.kubeconfig = work / "alice"
        self.kubeconfig.write_text(yaml.safe_dump(data))
        self.s3_url = s3_url
        self.baked = baked
        self._orig_baked = model_images.baked
        if not baked:
            model_images.baked = lambda spec: set()

    def close(self) -> None:
        model_images.baked = self._orig_baked
        self.emu.__exit__(None, None, None)

    def _pods(self, job: str) -> list[dict]:
        with self.model.lock:
            return [p for p in self.model.store.list("pods", "u-alice")
                    if (p["metadata"].get("labels") or {}).get("batch.kubernetes.io/job-name") == job]  # fmt: skip

    def run(self, project: Path, job: str, edit: int, deadline_s: float = 120.0) -> dict:
        (project / "train.py").write_text((project / "train.py").read_text() + f"# edit {edit}\n")
        t0 = time.monotonic()
        os.environ["KUBECONFIG"] = str(self.kubeconfig)
        with contextlib.redirect_stdout(open(os.devnull, "w")):  # noqa: SIM115
            lab(["submit", "--gpus", "1", "--gpu-type", "T4", "--name", job, "--path", str(project), "--",
                 "torchrun", "train.py"])  # fmt: skip
        client_s = time.monotonic() - t0
        scaled = False
        while time.monotonic() - t0 < deadline_s:
            pods = self._pods(job)
            if pods and all(p["status"].get("phase") == "Running" for p in pods):
                break
            if pods and not scaled and not any(p["spec"].get("nodeName") for p in pods):
                with self.model.lock:
                    group = self.model.cloud.groups[GROUP]
                    if not any(n["metadata"]["labels"].get("research.cluster/node-group") == GROUP
                               for n in self.model.store.list("nodes")):  # fmt: skip
                        ModelCloud(self.model).set_desired(GROUP, group.desired + 1)
                        scaled = True
            time.sleep(0.02)
        else:
            raise RuntimeError(f"{job}: pods not Running after {deadline_s} s")
        wall_s = time.monotonic() - t0
        pod = self._pods(job)[0]
        init_env = {e["name"]: e.get("value") for e in pod["spec"]["initContainers"][0]["env"]}
        with tempfile.TemporaryDirectory() as tmp:
            unpack = _unpack_s(init_env["LAB_CODE_URL"], init_env["LAB_CODE_SHA256"], self.s3_url, Path(tmp))
        # the client's real seconds count once; the cluster's part is in model seconds: the model runs on the wall
        # clock with durations divided by the compression, so its wall time times the compression
        cluster_s = max(0.0, wall_s - client_s) * self.compression
        return {"job": job, "new_node": scaled, "lab_submit_s": round(client_s, 2), "cluster_s": round(cluster_s, 1),
                "unpack_s": round(unpack, 2), "total_s": round(client_s + cluster_s + unpack, 1)}  # fmt: skip

    def cancel(self, job: str) -> None:
        os.environ["KUBECONFIG"] = str(self.kubeconfig)
        with contextlib.redirect_stdout(open(os.devnull, "w")):  # noqa: SIM115
            lab(["cancel", job])


def node_boot_s() -> float:
    """Launch to a node that can take a GPU pod: registration, network ready, device plugin advertised."""
    lc = NodeLifecycle()
    return boot_delay("g4dn.xlarge") + lc.ready_s + lc.device_plugin_s


def main(compression: float = 10.0, as_json: bool = False) -> dict:
    work = Path(tempfile.mkdtemp(prefix="bench-iteration-"))
    project = work / "nanogpt_like"
    shutil.copytree(SAMPLE, project)
    _git(project, "init", "-q")
    _git(project, "add", ".")
    _git(project, "commit", "-q", "-m", "sample")
    results = {}
    try:
        with _s3() as s3_url:
            for baked in (True, False):
                bench = Bench(compression, work, s3_url, baked=baked)
                try:
                    first = bench.run(
                        project, f"it-{'b' if baked else 'n'}-1", 1, deadline_s=600 / compression + 60
                    )
                    if baked:
                        results["new_node"] = first
                        bench.cancel(first["job"])
                        results["warm_node"] = bench.run(project, "it-b-2", 2)
                    else:
                        results["new_node_not_baked"] = first
                finally:
                    bench.close()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    boot = node_boot_s()
    summary = {
        "compression": compression, "node_boot_s": boot, **results,
        "targets": {"warm_under_s": TARGET_WARM_S, "new_under_s": boot + 30},
        "met": {"warm": results["warm_node"]["total_s"] < TARGET_WARM_S,
                "new": results["new_node"]["total_s"] < boot + 30},
    }  # fmt: skip
    if as_json:
        print(json.dumps(summary, indent=2))
    else:
        print(
            f"code edit to every pod Running (sample project, 1 x T4, standard image {results['warm_node']['job']})"
        )
        for key, label in (("warm_node", "warm node"), ("new_node", "new node"),
                           ("new_node_not_baked", "new node, image not pre-pulled")):  # fmt: skip
            r = results[key]
            print(f"  {label:32s} {r['total_s']:7.1f} s  (lab submit {r['lab_submit_s']:.2f} s, cluster {r['cluster_s']:.1f} s,"
                  f" code fetch+unpack {r['unpack_s']:.2f} s)")  # fmt: skip
        print(f"  targets: warm < {TARGET_WARM_S:.0f} s {'met' if summary['met']['warm'] else 'MISSED'}; new < boot "
              f"{boot:.0f} s + 30 s = {boot + 30:.0f} s {'met' if summary['met']['new'] else 'MISSED'}")  # fmt: skip
    return summary
