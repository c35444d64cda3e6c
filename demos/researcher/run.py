"""The researcher's path, end to end on the local cluster of ``make demo`` (moto + the real control plane +
the REAL ``autoscaler run``), with the researcher's own tools:

1. ``invoke add-user alice``'s code: namespace, RBAC, claims, a kubeconfig through the CSR API, a VPN certificate
   (keys in a temporary folder outside the repository, removed at the end);
2. the cluster's settings for ``lab`` published (what ``invoke up`` does: ConfigMap kube-public/research-lab-settings,
   the results bucket a moto S3 bucket here);
3. ``lab submit --gpus 8 --nodes 2`` with alice's kubeconfig and no container engine: the code's snapshot uploaded
   by its content hash, the standard image (it has the project's requirements), an Indexed Job of two 8-GPU pods
   that name the gang scheduler;
4. the autoscaler scales a GPU group up (each decision shown as it logs it), the nodes boot and are the process
   kubelet's (localcluster/kubelet/): both pods run the code as local processes;
5. ``lab tensorboard``: the URL, then ``lab status`` and ``lab cancel``.

Fails (exit status 1) when the job's pods are not all running within the deadline.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

from clusterspec.loader import load_spec
from clusterspec.names import AUTOSCALER_NAMESPACE
from demos.autoscaler_demo.events import stamp
from demos.autoscaler_demo.processes import Child, Children
from demos.autoscaler_demo.run import (
    COMPRESSION,
    DemoFailed,
    _child_env,
    _wait_for_log,
    autoscaler_child,
)
from demos.autoscaler_demo.watch import Watcher
from demos.day_one import wait_for_autoscaler
from labctl.cli import run as lab
from localcluster import aws_cluster, binaries
from localcluster.aws_bootstrap import create_groups
from provision import deploy, lab_settings
from provision.users import add_user

JOB = "resnet-demo"
# the node agent, watching pods pending on no node and the Nodes, polls the embedded AWS this seldom while nothing
# is on its way: scale-ups answer pending pods, which it hears at once (issue 37: the idle local cluster's CPU)
IDLE_POLL_S = 10.0
TRAIN = """import os
rank = int(os.environ["NODE_RANK"])
print(f"rank {rank} of {os.environ['NNODES']} nodes, {os.environ['NPROC_PER_NODE']} GPUs each; logs in {os.environ['LOG_DIR']}")
"""


def _project(root: Path) -> Path:
    proj = root / "resnet"
    proj.mkdir(parents=True, exist_ok=True)
    (proj / "train.py").write_text(TRAIN)
    (proj / "requirements.txt").write_text("torch>=2.3\ntensorboard\n")  # the standard image has both
    (proj / ".dockerignore").write_text("*.ckpt\n")
    (proj / "old.ckpt").write_bytes(b"\0" * 1024)
    return proj


def _say(text: str) -> None:
    print(text, flush=True)


def _pods_folder(out: Path, say) -> Path:
    """``out/pods``, unless a folder above it is closed to other users: the pods run as their researchers' uids,
    which must reach their folders (kubelet.py ``closed_folder``); then a folder of its own under the temp dir."""
    from localcluster.kubelet.images import closed_folder, open_folder

    pods = (out / "pods").resolve()
    pods.mkdir(parents=True, exist_ok=True)
    if os.geteuid() == 0 and (closed := closed_folder(pods)) is not None:
        pods = open_folder("lab-pods-")
        atexit.register(shutil.rmtree, pods, True)
        say(f"the pods' folders are in {pods} ({closed} is closed to the researchers' uids)")
    return pods


def bind_local_volumes(api, namespace: str) -> list[str]:
    """Storage as on AWS, locally: a volume for each of the researcher's claims, bound to it by ``claimRef`` (on
    AWS the EFS access points' volumes `invoke render-storage` makes; here the kubelet's folders hold the data). A
    claim nothing binds leaves its pods Pending with `pod has unbound immediate PersistentVolumeClaims`, at
    kube-scheduler and at the planner alike, and no node is bought for them."""
    from kubernetes import client

    core = client.CoreV1Api(api)
    lines = []
    existing = {v.metadata.name for v in core.list_persistent_volume().items}
    for pvc in core.list_namespaced_persistent_volume_claim(namespace).items:
        if pvc.status and pvc.status.phase == "Bound":
            continue
        name = pvc.spec.volume_name or f"local-{namespace}-{pvc.metadata.name}"  # the volume it names, if any
        if name in existing:
            continue
        core.create_persistent_volume({
            "apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": name},
            "spec": {"capacity": dict(pvc.spec.resources.requests or {"storage": "1Gi"}),
                     "accessModes": list(pvc.spec.access_modes or ["ReadWriteMany"]),
                     "storageClassName": pvc.spec.storage_class_name or "",
                     "persistentVolumeReclaimPolicy": "Retain",
                     "claimRef": {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "namespace": namespace,
                                  "name": pvc.metadata.name, "uid": pvc.metadata.uid},
                     "hostPath": {"path": f"/var/lib/lab/{namespace}/{pvc.metadata.name}"}},
        })  # fmt: skip
        lines.append(f"PersistentVolume {name} bound to {namespace}/{pvc.metadata.name}")
    return lines


@contextlib.contextmanager
def local_cluster(spec, out: Path, secrets_dir: Path, say=_say, pods: Path | None = None,
                  compression: float = COMPRESSION):  # fmt: skip
    """The local cluster with a researcher: moto (EC2, Auto Scaling and the results bucket), the real control plane
    following it (localcluster/aws_cluster.py) with what ``invoke up`` deploys, every node the process kubelet's
    (the pods of this repository's images run as local processes, their logs come through the API server), the real ``autoscaler run``,
    ``invoke add-user alice`` and the lab settings published. Yields (alice's AddedUser, the moto URL, the admin
    kubeconfig). ``pods``: the process kubelet's folder (one every uid may enter), else ``out/pods`` or a temporary
    folder."""
    missing = binaries.missing((*binaries.CONTROL_PLANE, "kwok"))
    if missing:
        raise DemoFailed(f"not built: {', '.join(missing)}; run `make tools` (localcluster/build-tools.sh)")
    os.environ["PATH"] = binaries.on_path()  # kubectl 1.35, not an older one on the PATH
    regions = list(spec.spill_over_order)
    out.mkdir(parents=True, exist_ok=True)
    env = _child_env()
    os.environ.update({k: v for k, v in env.items() if k in ("NO_PROXY", "no_proxy")})
    with Children() as children:
        aws = children.start(Child("aws", [sys.executable, "-m", "localcluster.aws_server"], out, env))
        url = aws.ready_line(60)["url"]
        create_groups(spec, url, regions)
        pods = pods or _pods_folder(out, say)
        with aws_cluster.running(spec, url, regions, out / "cluster", compression, pods=pods,
                                 idle_poll_s=IDLE_POLL_S) as live:  # fmt: skip
            admin = live.admin_kubeconfig
            wait_for_autoscaler(admin)
            kubeconfig = aws_cluster.service_account_kubeconfig(
                live.stack, AUTOSCALER_NAMESPACE, deploy.NAME, out / "autoscaler.kubeconfig"
            )
            with Children() as first_stopped:  # the autoscaler stops before the control plane it calls
                # the lab's scan interval (cluster.yaml, what `invoke up` deploys), not the demo's 2 s: scale-ups
                # come from pending pods at once either way, and an idle local cluster passes (lists AWS, writes
                # its state and status ConfigMaps) a fifth as often (issue 37)
                autoscaler = first_stopped.start(
                    autoscaler_child(url, spec.name, regions, kubeconfig, out, env,
                                     scan_interval=f"{spec.autoscaler.scan_interval_s}s")
                )  # fmt: skip
                _wait_for_log(autoscaler, "running", 60)
                say(f"local cluster up: moto {url}, the real control plane at {live.stack.server} (GPU nodes run "
                    f"pods as processes, folders in {pods}), autoscaler run (logs in {out})")  # fmt: skip
                added = _researcher(spec, admin, url, regions, secrets_dir, say)
                yield added, url, admin


def _researcher(spec, admin: Path, url: str, regions: list[str], secrets_dir: Path, say):
    """``invoke add-user alice``, her claims bound, the results bucket and the lab settings published."""
    added = add_user(spec, "alice", str(admin), secrets_dir, timeout_s=10)
    say(f"$ invoke add-user alice\n  namespace {added.namespace}: {', '.join(added.created)}")
    say("  kubeconfig with a client certificate from the CSR API; a Client VPN certificate from the local CA")

    import boto3
    from kubernetes import config as kconfig

    bucket = f"{spec.name}-results-123456789012"
    boto3.client("s3", endpoint_url=url, region_name=regions[0], aws_access_key_id="demo",
                 aws_secret_access_key="demo").create_bucket(
        Bucket=bucket, CreateBucketConfiguration={"LocationConstraint": regions[0]})  # fmt: skip
    admin_api = kconfig.new_client_from_config(config_file=str(admin))
    for line in bind_local_volumes(admin_api, added.namespace):
        say(f"  {line}")
    for line in lab_settings.apply(admin_api, spec, registry="123456789012.dkr.ecr.us-west-2.amazonaws.com",
                                   code_bucket=bucket, s3_endpoint=url):  # fmt: skip
        say(f"  {line}")
    admin_api.close()
    return added


def _tensorboard_answers(core, namespace: str, timeout_s: float = 90.0) -> str:
    """TensorBoard's pod runs as a process on a CPU node (the process kubelet's): its URL answers here as it does
    on the VPN; DemoFailed when it does not within ``timeout_s``."""
    import urllib.request

    from labctl.kube import TENSORBOARD_PORT, tensorboard_name

    pod = core.read_namespaced_pod(tensorboard_name(JOB), namespace)
    url = f"http://{pod.status.pod_ip}:{TENSORBOARD_PORT}/"
    deadline, last = time.monotonic() + timeout_s, ""
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(url, timeout=5) as r:
                return f"  {url} answers: HTTP {r.status}, {len(r.read()):,} bytes of TensorBoard"
        except OSError as e:
            last = str(e)
        time.sleep(1)
    raise DemoFailed(
        f"TensorBoard at {url} did not answer in {timeout_s:.0f} s ({last}); see {pod.metadata.name}"
    )


def main(spec_path: str | None = None, out_dir: str | Path | None = None, deadline_s: float = 90.0) -> dict:
    spec = load_spec(spec_path)
    regions = list(spec.spill_over_order)
    out = Path(out_dir or "build/demo-researcher")
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="lab-demo-") as secrets_dir, \
            local_cluster(spec, out, Path(secrets_dir)) as (added, url, admin):  # fmt: skip
        autoscaler_log = out / "autoscaler.log"
        os.environ.update(
            KUBECONFIG=str(added.kubeconfig), LAB_ENGINE="", XDG_CACHE_HOME=str(Path(secrets_dir) / "cache"),
        )  # fmt: skip
        proj = _project(Path(secrets_dir))
        _say(f"$ lab submit --gpus 8 --nodes 2 --name {JOB} -- python train.py")
        lab(
            [
                "submit",
                "--gpus",
                "8",
                "--nodes",
                "2",
                "--name",
                JOB,
                "--path",
                str(proj),
                "--",
                "python",
                "train.py",
            ]
        )
        submitted = time.monotonic()

        from kubernetes import client, config

        api = config.new_client_from_config(config_file=str(added.kubeconfig))
        core = client.CoreV1Api(api)
        watcher = Watcher(core, url, regions, autoscaler_log)
        running_at = None
        while time.monotonic() - submitted < deadline_s:
            for d in watcher.new_decisions():
                _say(f"  {stamp(d.t, COMPRESSION)}  {d.text}")
            pods = core.list_namespaced_pod(
                added.namespace, label_selector=f"batch.kubernetes.io/job-name={JOB}"
            ).items
            if len(pods) == 2 and all(p.status.phase in ("Running", "Succeeded") for p in pods):
                running_at = time.monotonic() - submitted
                break
            time.sleep(0.5)
        for d in watcher.flush():  # what the causal ordering still held back
            _say(f"  {stamp(d.t, COMPRESSION)}  {d.text}")
        if running_at is None:
            raise DemoFailed(
                f"job {JOB} was not running {deadline_s:.0f} s after it was submitted; see {out}"
            )
        nodes = sorted({p.spec.node_name for p in pods})
        phases = "/".join(
            sorted({p.status.phase for p in pods})
        )  # the code runs as processes: it may be done
        _say(f"both pods of {JOB} {phases} {running_at:.1f} s after submission, on {', '.join(nodes)}")
        _say(f"$ lab tensorboard {JOB}")
        lab(["tensorboard", JOB, "--timeout", "30"])
        _say(_tensorboard_answers(core, added.namespace))
        _say("$ lab status")
        lab(["status"])
        _say(f"$ lab cancel {JOB}")
        lab(["cancel", JOB])
        api.close()
    summary = {"job": JOB, "running_after_s": round(running_at, 1), "nodes": nodes,
               "total_s": round(time.monotonic() - started, 1)}  # fmt: skip
    _say(f"researcher demo done in {summary['total_s']} s")
    return summary
