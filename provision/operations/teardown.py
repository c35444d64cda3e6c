"""What `invoke down` does around Terraform's destroy (docs/operations.md, "Teardown"), so that it never kills a job
unasked, never deletes data unasked, and leaves nothing behind:

1. the inventory, read-only: the nodes of the regions going (every node when the primary region goes: the control
   plane goes with it), the jobs running on them, what data would be deleted (objects and versions in the
   buckets, images in the repositories, recovery points in the backup vaults), the SSM parameters the scripts
   wrote;
2. (after the destroy plan is confirmed) when data would go: a second confirmation, or nothing happens at all;
3. the nodes are cordoned and their Auto Scaling groups let go by the autoscaler (its discovery tag off, new
   launches suspended), so nothing new starts there;
4. running jobs: waited for (``--wait``), or shown and a confirmation asked for; declined, step 3 is undone and
   nothing was destroyed;
5. only then is scale-in protection removed (the groups' instances can be terminated by the destroy), and the
   buckets, repositories and vaults emptied;
6. after the destroy: the SSM parameters the scripts created are removed (Terraform never knew them).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

import boto3
from botocore.exceptions import BotoCoreError, ClientError

from clusterspec.errors import UserError
from clusterspec.names import (
    AUTOSCALER_NAMESPACE,
    CA_CLUSTER_TAG_PREFIX,
    CA_ENABLED_TAG,
    MONITORING_NAMESPACE,
    NODE_GROUP_LABEL,
    REGION_KEY,
)
from clusterspec.spec import Cluster
from provision.terraform.settings import GLOBAL

SYSTEM_NAMESPACES = {"kube-system", "kube-public", "kube-node-lease", "kube-flannel", AUTOSCALER_NAMESPACE,
                     MONITORING_NAMESPACE, "scheduler-plugins"}  # fmt: skip
Say = Callable[[str], None]
Ask = Callable[[str], str]


# --- Kubernetes ---------------------------------------------------------------------------------------------
class Kube:
    """The few calls the teardown needs, through the official client (the admin's kubeconfig)."""

    def __init__(self, api_client):
        from kubernetes import client

        self.core = client.CoreV1Api(api_client)

    def nodes(self) -> list[dict]:
        return [self.core.api_client.sanitize_for_serialization(n) for n in self.core.list_node().items]

    def pods(self) -> list[dict]:
        return [
            self.core.api_client.sanitize_for_serialization(p)
            for p in self.core.list_pod_for_all_namespaces().items
        ]

    def cordon(self, name: str, on: bool = True) -> None:
        self.core.patch_node(name, {"spec": {"unschedulable": on}})


def connect(kubeconfig: str | None = None) -> Kube | None:
    """The admin's cluster (``--kubeconfig``, $KUBECONFIG, ~/.kube/config), or None when none is configured or it
    does not answer (the inventory then says that running jobs cannot be checked)."""
    from kubernetes import config

    try:
        kube = Kube(config.new_client_from_config(config_file=kubeconfig))
        kube.core.get_api_resources(_request_timeout=10)
        return kube
    except Exception:  # noqa: BLE001 - no kubeconfig, no context, no answer: all "not reachable"
        return None


def _work(pod: dict) -> bool:
    """A job's pod that still runs (or is bound and about to): what a teardown must not kill unasked."""
    meta, spec = pod.get("metadata") or {}, pod.get("spec") or {}
    if (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed") or not spec.get("nodeName"):
        return False
    if meta.get("namespace") in SYSTEM_NAMESPACES:
        return False
    owners = {r.get("kind") for r in meta.get("ownerReferences") or []}
    return "DaemonSet" not in owners and "kubernetes.io/config.mirror" not in (meta.get("annotations") or {})


def nodes_going(cluster: Cluster, nodes: list[dict], regions: set[str]) -> list[str]:
    """Every node when the primary region goes; else the cloud nodes of the regions going."""
    if cluster.primary_region in regions:
        return sorted(n["metadata"]["name"] for n in nodes)
    out = []
    for n in nodes:
        labels = n["metadata"].get("labels") or {}
        group = labels.get(NODE_GROUP_LABEL, "")
        if labels.get(REGION_KEY) in regions or any(
            group.startswith(f"{cluster.name}-{r}-") for r in regions
        ):
            out.append(n["metadata"]["name"])
    return sorted(out)


def jobs_on(pods: list[dict], nodes: list[str]) -> list[str]:
    names = set(nodes)
    return sorted(f"{p['metadata']['namespace']}/{p['metadata']['name']} on {p['spec']['nodeName']}"
                  for p in pods if _work(p) and p["spec"].get("nodeName") in names)  # fmt: skip


# --- AWS ------------------------------------------------------------------------------------------------------
@dataclass
class Data:
    """What the destroy would delete that is data, per kind, and where."""

    buckets: dict[str, tuple[int, int]] = field(default_factory=dict)  # "region/bucket" -> (versions, bytes)
    images: dict[str, int] = field(default_factory=dict)  # "region/repository" -> images
    recovery_points: dict[str, int] = field(default_factory=dict)  # "region/vault" -> recovery points
    existing: list[str] = field(default_factory=list)  # "region/bucket": every bucket going, empty or not

    def __bool__(self) -> bool:
        return bool(self.buckets or self.images or self.recovery_points)

    def lines(self) -> list[str]:
        out = [
            f"bucket {k}: {n} object versions, {size / 1e9:.2f} GB"
            for k, (n, size) in sorted(self.buckets.items())
        ]
        out += [f"image repository {k}: {n} images" for k, n in sorted(self.images.items())]
        out += [f"backup vault {k}: {n} recovery points" for k, n in sorted(self.recovery_points.items())]
        return out


def _regions_going(cluster: Cluster, roots: list[str]) -> set[str]:
    return {r for r in roots if r != GLOBAL}


def _bucket_names(cluster: Cluster, roots: list[str], account: str) -> list[tuple[str, str]]:
    """(region, bucket) of the buckets the roots going own (terraform/modules: buckets, service_account_issuer,
    etcd_backup)."""
    out = []
    if GLOBAL in roots:
        for purpose in [*cluster.storage.s3.buckets, "access-logs", "oidc"]:
            out.append((cluster.primary_region, f"{cluster.name}-{purpose}-{account}"))
    if cluster.primary_region in roots:
        out.append((cluster.primary_region, f"{cluster.name}-etcd-backups-{account}"))
    return out


def _vaults(cluster: Cluster, roots: list[str]) -> list[tuple[str, str]]:
    if cluster.primary_region not in roots or not cluster.backup_copy_region:
        return []
    return [
        (cluster.primary_region, f"{cluster.name}-backups"),
        (cluster.backup_copy_region, f"{cluster.name}-backups-copy"),
    ]


def _missing(e: ClientError) -> bool:
    return e.response.get("Error", {}).get("Code") in (
        "NoSuchBucket", "RepositoryNotFoundException", "ResourceNotFoundException", "AccessDeniedException",
    )  # fmt: skip


def data_inventory(cluster: Cluster, roots: list[str], session: boto3.Session) -> Data:
    account = session.client("sts", region_name=cluster.primary_region).get_caller_identity()["Account"]
    data = Data()
    for region, bucket in _bucket_names(cluster, roots, account):
        s3 = session.client("s3", region_name=region)
        n = size = 0
        try:
            for page in s3.get_paginator("list_object_versions").paginate(Bucket=bucket):
                for v in page.get("Versions", []):
                    n, size = n + 1, size + v.get("Size", 0)
                n += len(page.get("DeleteMarkers", []))
        except ClientError as e:
            if _missing(e):
                continue
            raise
        data.existing.append(f"{region}/{bucket}")
        if n:
            data.buckets[f"{region}/{bucket}"] = (n, size)
    repo = f"{cluster.name}/{cluster.researchers.ecr_repository}"
    for region in sorted(_regions_going(cluster, roots)):
        ecr = session.client("ecr", region_name=region)
        try:
            images = [
                i
                for p in ecr.get_paginator("list_images").paginate(repositoryName=repo)
                for i in p["imageIds"]
            ]
        except ClientError as e:
            if _missing(e):
                continue
            raise
        if images:
            data.images[f"{region}/{repo}"] = len(images)
    for region, vault in _vaults(cluster, roots):
        backup = session.client("backup", region_name=region)
        try:
            points = [p for page in backup.get_paginator("list_recovery_points_by_backup_vault").paginate(
                BackupVaultName=vault) for p in page["RecoveryPoints"]]  # fmt: skip
        except ClientError as e:
            if _missing(e):
                continue
            raise
        if points:
            data.recovery_points[f"{region}/{vault}"] = len(points)
    return data


def _empty_bucket(s3, bucket: str) -> None:
    for page in s3.get_paginator("list_object_versions").paginate(Bucket=bucket):
        doomed = [{"Key": v["Key"], "VersionId": v["VersionId"]}
                  for v in page.get("Versions", []) + page.get("DeleteMarkers", [])]  # fmt: skip
        for i in range(0, len(doomed), 1000):
            s3.delete_objects(Bucket=bucket, Delete={"Objects": doomed[i : i + 1000], "Quiet": True})


def stop_access_logs(cluster: Cluster, data: Data, session: boto3.Session) -> list[tuple[str, str]]:
    """Server access logging off on every bucket going; the cluster's own log buckets they logged to. S3 logs
    every request to a logged bucket, Terraform's own reads and deletes included: a log bucket emptied while they
    go on is full again when Terraform deletes it (BucketNotEmpty, found by `make day-one`)."""
    logs: dict[tuple[str, str], None] = {}
    for where in data.existing:
        region, bucket = where.split("/", 1)
        s3 = session.client("s3", region_name=region)
        target = (s3.get_bucket_logging(Bucket=bucket).get("LoggingEnabled") or {}).get("TargetBucket")
        if target:
            s3.put_bucket_logging(Bucket=bucket, BucketLoggingStatus={})
            if target.startswith(f"{cluster.name}-access-logs-"):  # only the cluster's own log bucket goes
                logs[(region, target)] = None
    return list(logs)


def empty_data(cluster: Cluster, data: Data, session: boto3.Session, say: Say,
               logs: list[tuple[str, str]] = ()) -> None:  # fmt: skip
    """Every bucket, repository and vault of ``data`` emptied; the log buckets ``logs`` (logging stopped first:
    :func:`stop_access_logs`) after the buckets that logged to them."""
    for where in sorted(data.buckets):
        region, bucket = where.split("/", 1)
        if (region, bucket) in logs:
            continue
        _empty_bucket(session.client("s3", region_name=region), bucket)
        say(f"emptied bucket {bucket}")
    for region, bucket in logs:
        _empty_bucket(session.client("s3", region_name=region), bucket)
        say(f"emptied bucket {bucket} (access logs, after the buckets that log to it)")
    for where in sorted(data.images):
        region, repo = where.split("/", 1)
        ecr = session.client("ecr", region_name=region)
        ids = [
            i for p in ecr.get_paginator("list_images").paginate(repositoryName=repo) for i in p["imageIds"]
        ]
        for i in range(0, len(ids), 100):
            ecr.batch_delete_image(repositoryName=repo, imageIds=ids[i : i + 100])
        say(f"deleted {len(ids)} images of {repo} in {region}")
    for where in sorted(data.recovery_points):
        region, vault = where.split("/", 1)
        backup = session.client("backup", region_name=region)
        for page in backup.get_paginator("list_recovery_points_by_backup_vault").paginate(
            BackupVaultName=vault
        ):
            for p in page["RecoveryPoints"]:
                backup.delete_recovery_point(BackupVaultName=vault, RecoveryPointArn=p["RecoveryPointArn"])
        say(f"deleted the recovery points of {vault} in {region}")


def groups(cluster: Cluster, region: str, session: boto3.Session) -> list[dict]:
    asg = session.client("autoscaling", region_name=region)
    tag = CA_CLUSTER_TAG_PREFIX + cluster.name
    pages = asg.get_paginator("describe_auto_scaling_groups").paginate(
        Filters=[{"Name": "tag-key", "Values": [tag]}]
    )
    return [g for p in pages for g in p["AutoScalingGroups"]]


def _enabled_tag(name: str, value: str) -> dict:
    return {"ResourceId": name, "ResourceType": "auto-scaling-group", "Key": CA_ENABLED_TAG, "Value": value,
            "PropagateAtLaunch": False}  # fmt: skip


def freeze(cluster: Cluster, regions: set[str], session: boto3.Session, on: bool = True) -> list[str]:
    """The autoscaler lets go of the regions' groups (its discovery tag false) and they launch nothing new; with
    ``on=False`` both are undone."""
    done = []
    for region in sorted(regions):
        asg = session.client("autoscaling", region_name=region)
        for g in groups(cluster, region, session):
            name = g["AutoScalingGroupName"]
            asg.create_or_update_tags(Tags=[_enabled_tag(name, "false" if on else "true")])
            (asg.suspend_processes if on else asg.resume_processes)(
                AutoScalingGroupName=name, ScalingProcesses=["Launch"]
            )
            done.append(name)
    return done


def unprotect(cluster: Cluster, regions: set[str], session: boto3.Session) -> int:
    """Scale-in protection off on the regions' groups and their instances, so the destroy can terminate them."""
    n = 0
    for region in sorted(regions):
        asg = session.client("autoscaling", region_name=region)
        for g in groups(cluster, region, session):
            name = g["AutoScalingGroupName"]
            asg.update_auto_scaling_group(AutoScalingGroupName=name, NewInstancesProtectedFromScaleIn=False)
            ids = [i["InstanceId"] for i in g.get("Instances", []) if i.get("ProtectedFromScaleIn")]
            for i in range(0, len(ids), 50):  # SetInstanceProtection takes 50 instances a call
                asg.set_instance_protection(AutoScalingGroupName=name, InstanceIds=ids[i : i + 50],
                                            ProtectedFromScaleIn=False)  # fmt: skip
            n += len(ids)
    return n


def script_parameters(cluster: Cluster, roots: list[str], session: boto3.Session) -> dict[str, list[str]]:
    """Region -> the SSM parameters the scripts wrote (Terraform never knew them): the baked image's id
    (invoke bake-ami, every region), the kubeadm join parameters, the members' status and the last etcd snapshot
    (the control plane, primary region)."""
    out: dict[str, list[str]] = {}
    for region in sorted(_regions_going(cluster, roots)):
        ssm = session.client("ssm", region_name=region)
        names = [f"/{cluster.name}/ami/gpu-worker"]
        if region == cluster.primary_region:
            names += [
                f"/{cluster.name}/kubeadm/{n}" for n in ("join-token", "ca-cert-hash", "certificate-key")
            ]
            names.append(f"/{cluster.name}/etcd/last-backup")
            try:
                pages = ssm.get_paginator("get_parameters_by_path").paginate(
                    Path=f"/{cluster.name}/control-plane/status"
                )
                names += [p["Name"] for page in pages for p in page["Parameters"]]
            except ClientError:
                pass
        found = []
        for i in range(0, len(names), 10):  # GetParameters takes 10 names
            found += [p["Name"] for p in ssm.get_parameters(Names=names[i : i + 10])["Parameters"]]
        if found:
            out[region] = sorted(found)
    return out


def remove_parameters(params: dict[str, list[str]], session: boto3.Session) -> int:
    n = 0
    for region, names in params.items():
        ssm = session.client("ssm", region_name=region)
        for i in range(0, len(names), 10):  # DeleteParameters takes 10 names
            ssm.delete_parameters(Names=names[i : i + 10])
            n += len(names[i : i + 10])
    return n


# --- the whole prelude ------------------------------------------------------------------------------------------
@dataclass
class Plan:
    regions: set[str]
    nodes: list[str]
    jobs: list[str]
    data: Data
    parameters: dict[str, list[str]]
    kube_reachable: bool
    whole: bool = False  # the primary region goes: the whole cluster

    def lines(self) -> list[str]:
        out = []
        if self.regions:
            scope = "every node: the control plane goes" if self.whole else ", ".join(sorted(self.regions))
            out.append(f"{len(self.nodes)} nodes to cordon ({scope}); their groups' scale-in protection comes off "
                       "only once no job runs there")  # fmt: skip
        if not self.kube_reachable:
            out.append("the Kubernetes API does not answer: running jobs cannot be checked")
        out += [f"running: {j}" for j in self.jobs[:50]]
        if len(self.jobs) > 50:
            out.append(f"... and {len(self.jobs) - 50} more running pods")
        out += [f"data: {line}" for line in self.data.lines()]
        out += [f"SSM parameters the scripts wrote, removed after the destroy: {region}: {', '.join(names)}"
                for region, names in self.parameters.items()]  # fmt: skip
        return out


def inventory(cluster: Cluster, roots: list[str], kube: Kube | None, session: boto3.Session) -> Plan:
    regions = _regions_going(cluster, roots)
    nodes, jobs, reachable = [], [], kube is not None
    if kube is not None and regions:
        try:
            all_nodes = kube.nodes()
            nodes = nodes_going(cluster, all_nodes, regions)
            jobs = jobs_on(kube.pods(), nodes)
        except Exception:  # noqa: BLE001 - any failure to reach the API: said, and asked about
            reachable = False
    try:
        data = data_inventory(cluster, roots, session)
        params = script_parameters(cluster, roots, session)
    except (BotoCoreError, ClientError) as e:
        raise UserError(f"cannot take the teardown's inventory: {e}".splitlines()[0]) from None
    return Plan(regions, nodes, jobs, data, params, reachable, cluster.primary_region in regions)


def confirm_data(plan: Plan, yes: bool, delete_data: bool, ask: Ask) -> None:
    """The second confirmation: data goes only when asked for twice (or --delete-data with --yes)."""
    if not plan.data:
        return
    if yes:
        if not delete_data:
            raise UserError(["the destroy would delete data (above); nothing was changed",
                             "pass --delete-data with --yes to delete it unattended, or run without --yes"])  # fmt: skip
        return
    if ask("this deletes the data above for good; type 'delete data' to go on: ").strip() != "delete data":
        raise UserError("data not confirmed; nothing was changed")


def drain(cluster: Cluster, plan: Plan, kube: Kube | None, session: boto3.Session, *, yes: bool, wait_s: float,
          kill_jobs: bool, ask: Ask, say: Say, poll_s: float = 30, clock=time.monotonic, sleep=time.sleep) -> None:  # fmt: skip
    """Steps 3 to 5 before the destroy: cordon and freeze, the jobs, scale-in protection off, data emptied."""
    if plan.regions:
        if kube is not None and plan.kube_reachable:
            for n in plan.nodes:
                kube.cordon(n)
            say(f"cordoned {len(plan.nodes)} nodes")
        frozen = freeze(cluster, plan.regions, session)
        say(f"the autoscaler let go of {len(frozen)} groups; they launch nothing new")
        jobs = plan.jobs
        if kube is not None and plan.kube_reachable and jobs and wait_s > 0:
            deadline = clock() + wait_s
            while jobs and clock() < deadline:
                say(f"waiting for {len(jobs)} running pods to finish ({deadline - clock():.0f} s left)")
                sleep(poll_s)
                jobs = jobs_on(kube.pods(), plan.nodes)
        problem = (f"{len(jobs)} pods still run" if jobs
                   else "the API does not answer: running jobs were not checked" if not plan.kube_reachable else "")  # fmt: skip
        if problem:
            for j in jobs[:50]:
                say(f"still running: {j}")
            go = (
                kill_jobs
                if yes
                else ask(f"{problem}; the destroy kills them: type 'kill' to go on: ").strip() == "kill"
            )
            if not go:
                freeze(cluster, plan.regions, session, on=False)
                if kube is not None and plan.kube_reachable:
                    for n in plan.nodes:
                        kube.cordon(n, on=False)
                raise UserError([f"{problem}; nothing was destroyed (nodes uncordoned, groups handed back)",
                                 "wait for them (--wait 2h), or pass --kill-jobs with --yes"])  # fmt: skip
        say(f"scale-in protection removed from {unprotect(cluster, plan.regions, session)} instances")
    logs = stop_access_logs(cluster, plan.data, session)
    if plan.data:
        empty_data(cluster, plan.data, session, say, logs)


class Teardown:
    """The hooks `invoke down` gives provision.terraform.commands.down: ``show`` before the question, ``before``
    between it and the destroy, ``after`` once everything is destroyed."""

    def __init__(self, cluster: Cluster, roots: list[str], kube: Kube | None, session: boto3.Session, *,
                 yes: bool = False, wait_s: float = 0, kill_jobs: bool = False, delete_data: bool = False,
                 ask: Ask = input, say: Say = print):  # fmt: skip
        self.cluster, self.roots, self.kube, self.session = cluster, roots, kube, session
        self.yes, self.wait_s, self.kill_jobs, self.delete_data = yes, wait_s, kill_jobs, delete_data
        self.ask, self.say = ask, say
        self.plan: Plan | None = None

    def show(self) -> list[str]:
        self.plan = inventory(self.cluster, self.roots, self.kube, self.session)
        return self.plan.lines()

    def before(self) -> None:
        plan = self.plan or inventory(self.cluster, self.roots, self.kube, self.session)
        confirm_data(plan, self.yes, self.delete_data, self.ask)
        drain(self.cluster, plan, self.kube, self.session, yes=self.yes, wait_s=self.wait_s, kill_jobs=self.kill_jobs,
              ask=self.ask, say=self.say)  # fmt: skip

    def after(self) -> None:
        if self.plan and self.plan.parameters:
            self.say(
                f"removed {remove_parameters(self.plan.parameters, self.session)} SSM parameters the scripts wrote"
            )
