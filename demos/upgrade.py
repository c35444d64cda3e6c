"""``invoke demo-upgrade``: a node-group upgrade on the local stack that kills no job (docs/operations.md,
"Upgrades").

The same stack as ``make demo`` (a moto server on loopback, the spec's groups bootstrapped in it, the real control
plane with what `invoke up` deploys and kwok nodes following moto's instances, the real ``autoscaler run`` process
as its ServiceAccount), in the primary region only:

1. jobs fill every GPU of six V100 nodes and one T4 node (the T4 group keeps a warm node, the CPU group its
   minimum of one);
2. the upgrade, as ``invoke bake-ami`` and ``invoke up`` make it: every group of the region gets a new launch
   template version with a new image, which becomes the default, and its Auto Scaling group names it;
3. a second wave of jobs arrives on the new version;
4. the autoscaler replaces each old node once it is empty (docs/planner.md, "Drift"); busy ones keep their jobs
   (soft taint only), and past the drift deadline their pods get the ``NodeDriftOverdue`` Event;
5. the operator's part (docs/operations.md, "The nodes: drift"): an overdue node that holds no job, only the
   cluster's own services (the CPU node: the autoscaler's and the gang scheduler's Deployments, monitoring), is
   drained with ``kubectl drain`` (evictions, PodDisruptionBudgets honoured) and then replaced as empty. On the
   real control plane it never empties by itself.

It ends when no instance of the region runs the old image and every job has finished, and fails (exit status 1)
when a pod was killed (a Failed pod: kube-controller-manager's pod garbage collector fails a pod whose Node went
with its instance) or the upgrade does not finish in time.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import boto3
from kubernetes import client as k8s
from kubernetes import config as k8s_config
from rich.console import Console

from clusterspec.loader import load_spec
from clusterspec.names import JOB_NAME_LABEL as JOB_NAME
from demos.autoscaler_demo.processes import Child, ChildError, Children
from demos.autoscaler_demo.run import COMPRESSION, DemoFailed, _child_env
from demos.cluster import real_cluster
from localcluster import workload
from localcluster.aws_bootstrap import DEMO_AMI, create_groups
from localcluster.stack import StackFailed
from simulator.traces import Job
from simulator.workload import NAMESPACE

NEW_AMI = "ami-0a1b2c3d4e5f60718"  # the "new bake"
DRIFT_DEADLINE = "25s"  # wall clock: long jobs outlive it, so their pods get the NodeDriftOverdue Event
SHOWN_ACTIONS = ("set_desired", "taint", "terminate", "mark-drifted")


def _jobs(prefix: str, shapes: list[tuple[int, float]]) -> list[Job]:
    return [Job(f"{prefix}-{i:02d}", 0, g, d) for i, (g, d) in enumerate(shapes)]


def before_jobs() -> list[Job]:
    """Six 8-GPU jobs of 10 to 35 model minutes (one V100 node each) and a 1-GPU job on the T4 group."""
    return _jobs("before", [(8, 600 + 300 * i) for i in range(6)] + [(1, 900)])


def after_jobs() -> list[Job]:
    """Submitted after the upgrade: they need new nodes, which come up on the new version."""
    return _jobs("after", [(8, 600), (8, 900)])


def upgrade_groups(url: str, region: str, groups: list[str], image: str = NEW_AMI) -> dict[str, str]:
    """What ``invoke up`` does after a new bake: a new launch template version with the new image (the
    template's default, terraform/modules/node_group ``update_default_version``), named by the group."""
    session = boto3.Session(aws_access_key_id="demo", aws_secret_access_key="demo")
    ec2 = session.client("ec2", region_name=region, endpoint_url=url)
    asg = session.client("autoscaling", region_name=region, endpoint_url=url)
    done = {}
    for name in groups:
        g = asg.describe_auto_scaling_groups(AutoScalingGroupNames=[name])["AutoScalingGroups"][0]
        lt = g["LaunchTemplate"]["LaunchTemplateId"]
        # the whole template, as Terraform writes it (moto does not copy SourceVersion's data)
        data = ec2.describe_launch_template_versions(LaunchTemplateId=lt, Versions=["$Latest"])
        data = {**data["LaunchTemplateVersions"][0]["LaunchTemplateData"], "ImageId": image}
        version = ec2.create_launch_template_version(LaunchTemplateId=lt, LaunchTemplateData=data)[
            "LaunchTemplateVersion"
        ]["VersionNumber"]
        ec2.modify_launch_template(LaunchTemplateId=lt, DefaultVersion=str(version))
        asg.update_auto_scaling_group(
            AutoScalingGroupName=name, LaunchTemplate={"LaunchTemplateId": lt, "Version": str(version)}
        )
        done[name] = str(version)
    return done


def images(url: str, region: str, groups: list[str]) -> dict[str, dict[str, str]]:
    """group -> {instance id: image} of its live instances."""
    session = boto3.Session(aws_access_key_id="demo", aws_secret_access_key="demo")
    ec2 = session.client("ec2", region_name=region, endpoint_url=url)
    asg = session.client("autoscaling", region_name=region, endpoint_url=url)
    out: dict[str, dict[str, str]] = {}
    found = asg.describe_auto_scaling_groups(AutoScalingGroupNames=groups)["AutoScalingGroups"]
    ids = {
        i["InstanceId"]: g["AutoScalingGroupName"]
        for g in found
        for i in g["Instances"]
        if not i["LifecycleState"].startswith(("Terminat", "Detach"))
    }
    for g in groups:
        out[g] = {}
    if ids:
        for res in ec2.describe_instances(InstanceIds=list(ids))["Reservations"]:
            for inst in res["Instances"]:
                if inst["State"]["Name"] in ("pending", "running"):
                    out[ids[inst["InstanceId"]]][inst["InstanceId"]] = inst["ImageId"]
    return out


def _autoscaler(url: str, cluster: str, region: str, kubeconfig: Path, out: Path, env: dict) -> Child:
    argv = [sys.executable, "-m", "autoscaler", "run", "--cluster-name", cluster, "--regions", region,
            "--kubeconfig", str(kubeconfig), "--aws-endpoint-url", url, "--scan-interval", "2s",
            "--metrics-port", "0", "--drift-deadline", DRIFT_DEADLINE, "--log-level", "info"]  # fmt: skip
    return Child("autoscaler", argv, out, env)


class _Log:
    """The autoscaler's actions from its JSON log, as lines."""

    def __init__(self, path: Path) -> None:
        self.path, self.pos = path, 0

    def new(self) -> list[dict]:
        if not self.path.exists():
            return []
        with self.path.open() as f:
            f.seek(self.pos)
            text = f.read()
        cut = text.rfind("\n") + 1
        self.pos += len(text[:cut].encode())
        out = []
        for line in text[:cut].splitlines():
            try:
                rec = json.loads(line)
            except ValueError:
                continue
            if rec.get("message") == "action" and rec.get("action") in SHOWN_ACTIONS:
                out.append(rec)
        return out


def _seconds(duration: str) -> float:
    return float(duration.rstrip("s"))


def _action_line(rec: dict) -> str:
    if rec["action"] == "set_desired":
        return f"set desired {rec['group']}: {rec.get('from')} -> {rec['desired']}"
    return f"{rec['action']} {rec.get('node')}: {rec.get('reason', '')}"


def run_upgrade(spec_path: str | None = None, out_dir: str | Path = "build/demo-upgrade", deadline_s=150.0):
    spec = load_spec(spec_path)
    region = spec.primary_region
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    console = Console(width=None if sys.stdout.isatty() else 140, highlight=False)
    env = _child_env()
    os.environ.update({k: v for k, v in env.items() if k in ("NO_PROXY", "no_proxy")})
    t0 = time.monotonic()

    def say(text: str, style: str | None = None) -> None:
        console.print(f"[{time.monotonic() - t0:6.1f} s] {text}", style=style, markup=False)

    with Children() as children:
        console.rule(
            "demo-upgrade: a node-group upgrade that kills no job (moto + the real control plane + autoscaler run)"
        )
        aws = children.start(Child("aws", [sys.executable, "-m", "localcluster.aws_server"], out, env))
        url = aws.ready_line(60)["url"]
        groups = create_groups(spec, url, [region])
        say(f"embedded AWS at {url}; {len(groups)} groups in {region}, image {DEMO_AMI}")
        # the autoscaler (first_stopped) stops before the control plane it calls
        with real_cluster(spec, url, [region], out, COMPRESSION, say) as (admin, kubeconfig, submit), \
                Children() as first_stopped:  # fmt: skip
            autoscaler = first_stopped.start(_autoscaler(url, spec.name, region, kubeconfig, out, env))
            say(f"autoscaler run (drift deadline {DRIFT_DEADLINE}): log {autoscaler.log_path}")
            api = k8s_config.new_client_from_config(config_file=str(admin))
            log = _Log(autoscaler.log_path)
            summary = _drive(
                console, say, api, submit, url, region, groups, log, autoscaler, deadline_s, admin
            )
            api.close()
    return summary


def _pods(core) -> dict[str, dict]:
    """The jobs' pods by name (the real Job controller names them)."""
    raw = json.loads(core.list_namespaced_pod(NAMESPACE, _preload_content=False).data)["items"]
    return {p["metadata"]["name"]: p for p in raw if JOB_NAME in (p["metadata"].get("labels") or {})}


def _finished(batch, jobs: list[str]) -> bool:
    raw = json.loads(batch.list_namespaced_job(NAMESPACE, _preload_content=False).data)["items"]
    done = {j["metadata"]["name"] for j in raw
            if any(c["type"] in ("Complete", "Failed") and c["status"] == "True"
                   for c in (j.get("status") or {}).get("conditions") or ())}  # fmt: skip
    return set(jobs) <= done


def _running(pods: dict[str, dict], jobs: list[Job]) -> bool:
    """Every pod of every job is there and Running."""
    want = sum(workload.pods_of(j) for j in jobs)
    running = [p for p in pods.values() if p["status"].get("phase") == "Running"
               and p["metadata"]["labels"].get(JOB_NAME) in {j.id for j in jobs}]  # fmt: skip
    return len(running) == want


def _overdue_events(core, seen: set) -> list[str]:
    raw = json.loads(core.list_namespaced_event(NAMESPACE, _preload_content=False).data)["items"]
    out = []
    for e in raw:
        key = (e.get("involvedObject", {}).get("name"), e.get("reason"))
        if e.get("reason") == "NodeDriftOverdue" and key not in seen:
            seen.add(key)
            out.append(f"Event on pod {key[0]}: {e.get('message')}")
    return out


def _services_only(core, instance: str) -> str | None:
    """The Node of ``instance`` when no job's pod runs there, only the cluster's own services (the autoscaler, the
    gang scheduler, monitoring: Deployments, and DaemonSets); else None."""
    nodes = [n for n in core.list_node().items if (n.spec.provider_id or "").endswith("/" + instance)]
    if not nodes:
        return None
    name = nodes[0].metadata.name
    pods = core.list_pod_for_all_namespaces(field_selector=f"spec.nodeName={name}").items
    running = [p for p in pods if p.status.phase in ("Pending", "Running")]
    return None if any(JOB_NAME in (p.metadata.labels or {}) for p in running) else name


def _drain(admin: Path, node: str, say) -> None:
    """The operator's step for an overdue node that holds no job (docs/operations.md, "The nodes: drift"):
    `kubectl drain`, which evicts through the Eviction API (PodDisruptionBudgets honoured) and cordons it; the
    autoscaler then replaces it as an empty drifted node."""
    import subprocess

    argv = ["kubectl", "--kubeconfig", str(admin), "drain", node, "--ignore-daemonsets",
            "--delete-emptydir-data", "--timeout=60s"]  # fmt: skip
    say(
        f"operator: $ {' '.join(argv[:1] + argv[3:])}  (no job on it: only the cluster's own services)",
        "bold",
    )
    done = subprocess.run(argv, capture_output=True, text=True, timeout=90)
    if done.returncode:
        raise DemoFailed(f"kubectl drain {node}: {done.stderr.strip()[-400:]}")


def _drive(console, say, api, submit, url, region, groups, log, autoscaler, deadline_s, admin) -> dict:
    core, batch = k8s.CoreV1Api(api), k8s.BatchV1Api(api)
    first = before_jobs()
    for job in first:
        submit(job, NAMESPACE)
    submitted = [j.id for j in first]
    say(f"submitted {len(submitted)} Jobs: six 8-GPU jobs (10-35 model min) and one 1-GPU job")
    seen_events: set = set()
    upgraded: dict[str, str] = {}
    old: dict[str, str] = {}  # instance -> group, on the old image when the upgrade came
    replaced: set[str] = set()
    failed: dict[str, str] = {}
    drained: set[str] = set()
    upgraded_at = 0.0
    started = time.monotonic()
    while True:
        if not autoscaler.running():
            raise DemoFailed(f"the autoscaler exited; see {autoscaler.log_path}")
        pods = _pods(core)
        for name, p in pods.items():
            if p["status"].get("phase") == "Failed" and name not in failed:
                failed[name] = p["status"].get("reason") or p["status"].get("message") or "Failed"
                say(f"KILLED: pod {name}: {failed[name]}", "bold red")
        for rec in log.new():
            say(f"autoscaler: {_action_line(rec)}", "green" if rec["action"] != "mark-drifted" else "yellow")
        for line in _overdue_events(core, seen_events):
            say(line, "magenta")
        now = images(url, region, groups)
        if not upgraded:
            if _running(pods, first):
                old = {i: g for g, inst in now.items() for i, img in inst.items() if img == DEMO_AMI}
                say(f"every job is running; {len(old)} instances on {DEMO_AMI}")
                upgraded = upgrade_groups(url, region, groups)
                upgraded_at = time.monotonic()
                say(
                    f"UPGRADE: {len(upgraded)} launch templates get a new version with image {NEW_AMI} "
                    "(what `invoke bake-ami` + `invoke up` make); running nodes stay where they are",
                    "bold",
                )
                for job in after_jobs():
                    submit(job, NAMESPACE)
                    submitted.append(job.id)
                say(
                    "submitted two more 8-GPU jobs: every old node is full, so they get new nodes, on the new image"
                )
        else:
            live_old = {i for inst in now.values() for i, img in inst.items() if img == DEMO_AMI}
            for i in sorted(set(old) - live_old - replaced):
                replaced.add(i)
                say(f"replaced {i} ({old[i]}): {len(old) - len(replaced)} old instances left", "bold green")
            overdue = time.monotonic() - upgraded_at > _seconds(DRIFT_DEADLINE)
            for i in sorted(live_old - drained) if overdue else ():
                node = _services_only(core, i)
                if node is not None:
                    drained.add(i)
                    _drain(admin, node, say)
            if not live_old and _finished(batch, submitted):
                break
        if time.monotonic() - started > deadline_s:
            left = sum(1 for inst in now.values() for img in inst.values() if img == DEMO_AMI)
            raise DemoFailed(
                f"the upgrade did not finish in {deadline_s:.0f} s: {left} instances on the old image"
            )
        time.sleep(0.5)
    new_nodes = sum(1 for inst in now.values() for img in inst.values() if img == NEW_AMI)
    summary = {
        "seconds": round(time.monotonic() - started, 1),
        "old_instances": len(old),
        "replaced": len(replaced),
        "instances_on_new_image": new_nodes,
        "jobs": len(submitted),
        "pods": len(pods),
        "pods_succeeded": sum(1 for p in pods.values() if p["status"].get("phase") == "Succeeded"),
        "pods_killed": len(failed),
        "drift_overdue_events": len(seen_events),
        "drained_by_the_operator": len(drained),
    }
    console.rule("summary")
    console.print(
        f"{summary['replaced']} of {summary['old_instances']} old instances replaced in {summary['seconds']:.0f} s; "
        f"{new_nodes} instances run {NEW_AMI}; {summary['pods_succeeded']} of {summary['pods']} pods succeeded, "
        f"{summary['pods_killed']} killed; {summary['drift_overdue_events']} NodeDriftOverdue Events; "
        f"{summary['drained_by_the_operator']} node(s) holding no job drained by the operator",
        markup=False,
    )
    if failed:
        raise DemoFailed(f"{len(failed)} pods were killed during the upgrade: {', '.join(sorted(failed))}")
    return summary


def main(spec: str | None = None, out: str | None = None) -> None:
    try:
        run_upgrade(spec, out or "build/demo-upgrade")
    except (ChildError, StackFailed) as e:
        raise DemoFailed(str(e)) from None
