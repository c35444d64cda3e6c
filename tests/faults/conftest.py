"""The fault scenarios' world: moto (behind doors) with three tagged groups, the real control plane (localcluster/:
etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kwok) with kwok nodes that the node agent registers
for moto's instances, and replicas of the real ``autoscaler run``, each behind its own fault proxy
(tests/faults/kube_proxy.py) and running as the autoscaler's ServiceAccount with the RBAC `invoke up` deploys.

One control plane per pytest process (per xdist worker), not the run's shared one (tests/conftest.py ``kube``):
the autoscaler watches every node and every pod of its cluster, so two scenarios at once on one API server would
each buy for the other's pods and remove the other's nodes. Between scenarios the world takes back what it made
(its nodes, its namespace, the autoscaler's Lease and ConfigMaps).

These tests take minutes: ``make faults`` runs them (and CI); ``make test`` leaves them out (FAULTS unset)."""

from __future__ import annotations

import os
import threading
import time
import urllib.request
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

import boto3
import pytest
import yaml
from kubernetes import client as k8s

from clusterspec.names import NODE_GROUP_LABEL

collect_ignore_glob = [] if os.environ.get("FAULTS") else ["test_*.py"]

V100 = {"research.cluster/gpu-model": "v100"}
GPU_TAINT = {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}
GPU_TOLERATION = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
# The spec's names for these groups (cluster.yaml): the GPU add-ons `invoke up` deploys select their nodes by them,
# so the device plugin runs there and the node agent advertises the GPUs.
GROUPS = [  # name, region, instance type, max, labels, taints, priority
    ("dlr-us-west-2-cpu", "us-west-2", "m6i.2xlarge", 5, {"research.cluster/pool": "cpu"}, [], 0),
    ("dlr-us-west-2-gpu-v100x8", "us-west-2", "p3.16xlarge", 4, V100, [GPU_TAINT], 10),
    ("dlr-us-east-1-gpu-v100x8", "us-east-1", "p3.16xlarge", 4, V100, [GPU_TAINT], 10),
]
COMPRESSION = (
    60.0  # the node agent's boot delays (localcluster/nodes.py) over this, as the emulator's clock was
)
RBAC = {"Namespace", "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding"}
# kwok completes a Job's running pod after a delay (its pod-complete stage): these jobs run until deleted
FOREVER = {"pod-complete.stage.kwok.x-k8s.io/delay": "86400s",
           "pod-complete.stage.kwok.x-k8s.io/jitter-delay": "86400s"}  # fmt: skip


@dataclass
class Plane:
    stack: object
    api: object  # kubernetes.client.ApiClient, as the cluster's admin
    token: str  # the autoscaler's ServiceAccount's
    ca: Path
    cert: Path
    key: Path

    @property
    def admin_kubeconfig(self) -> Path:
        return self.stack.admin_kubeconfig


@pytest.fixture(scope="session")
def plane(tmp_path_factory):
    """This process's control plane with what `invoke up` deploys that the scenarios need: the GPU add-ons (the
    device plugin DaemonSet advertises a node's GPUs) and the autoscaler's namespace, ServiceAccount and RBAC (not
    its Deployment: the replicas are the scenarios' own processes)."""
    from kubernetes import config as k8s_config

    from clusterspec.loader import load_spec
    from localcluster import binaries, day_one
    from localcluster.stack import Stack
    from tests.faults.kube_proxy import write_pki
    from tests.support import require_tool

    for name in (*binaries.CONTROL_PLANE, "kwok"):
        require_tool(name, str(binaries.BIN / name))
    folder = tmp_path_factory.mktemp("plane")
    stack = Stack(folder / "control-plane").start()
    try:
        manifests = {m.label: m for m in day_one.render(load_spec(), folder / "deploy")}
        rbac = folder / "deploy" / "autoscaler-rbac.yaml"
        docs = [
            d for d in yaml.safe_load_all(manifests["autoscaler"].path.read_text()) if d and d["kind"] in RBAC
        ]
        rbac.write_text(yaml.safe_dump_all(docs, sort_keys=False))
        auto = day_one.Manifest("autoscaler RBAC", rbac, manifests["autoscaler"].field_manager)
        applied = day_one.apply(str(binaries.path("kubectl")), stack.admin_kubeconfig,
                                [manifests["GPU add-ons"], auto])  # fmt: skip
        refused = [r for a in applied for r in a.refusals]
        assert not refused, refused
        from clusterspec.names import AUTOSCALER_NAMESPACE, AUTOSCALER_SERVICE_ACCOUNT

        token = stack.kubectl("create", "token", AUTOSCALER_SERVICE_ACCOUNT, "-n", AUTOSCALER_NAMESPACE,
                              "--duration=24h").stdout.strip()  # fmt: skip
        ca, cert, key = write_pki(folder / "proxy-pki")
        api = k8s_config.new_client_from_config(config_file=str(stack.admin_kubeconfig))
        yield Plane(stack, api, token, ca, cert, key)
    finally:
        stack.stop()


class World:
    def __init__(self, tmp: Path, plane: Plane):
        from autoscaler.adapters.aws import AwsCloud
        from localcluster.nodes import NodeAgent
        from tests.faults.harness import Aws
        from tests.faults.kube_proxy import KubeFaults

        self.tmp, self.plane = tmp, plane
        self.kubeconfig = plane.admin_kubeconfig
        self.core, self.batch = k8s.CoreV1Api(plane.api), k8s.BatchV1Api(plane.api)
        self.ns = f"faults-{os.urandom(4).hex()}"
        self.core.create_namespace({"metadata": {"name": self.ns}})
        self.aws = Aws()
        self.obs = self.aws.door("observer")  # boto3 checks and the node agent: never faulty
        urllib.request.urlopen(urllib.request.Request(f"{self.obs.url}/moto-api/reset", method="POST")).read()
        self.session = boto3.Session(aws_access_key_id="testing", aws_secret_access_key="testing")
        self._create_groups()
        cloud = AwsCloud("dlr", ["us-west-2", "us-east-1"], endpoint_url=self.obs.url, session=self.session)
        self.agent = NodeAgent(cloud, plane.api, compression=COMPRESSION, interval_s=0.25).start()
        self.faults = KubeFaults()
        self.replicas: list = []
        self.pods: dict[str, str] = {}  # job -> its pod's name
        self.violations: list[str] = []
        self._stop = threading.Event()
        threading.Thread(target=self._sample, daemon=True).start()
        self._wait_default_service_account()

    def _wait_default_service_account(self):
        from tests.faults.harness import wait_until

        def there():
            return any(True for _ in self.core.list_namespaced_service_account(self.ns).items)

        wait_until(there, 30, f"namespace {self.ns}'s default ServiceAccount")

    def asg(self, region: str):
        return self.session.client("autoscaling", region_name=region, endpoint_url=self.obs.url)

    def _create_groups(self):
        from tests.autoscaler.aws_setup import group_tags

        for name, region, itype, mx, labels, taints, prio in GROUPS:
            ec2 = self.session.client("ec2", region_name=region, endpoint_url=self.obs.url)
            lt = ec2.create_launch_template(
                LaunchTemplateName=name, LaunchTemplateData={"ImageId": "ami-12c6146b", "InstanceType": itype}
            )["LaunchTemplate"]
            self.asg(region).create_auto_scaling_group(
                AutoScalingGroupName=name, MinSize=0, MaxSize=mx, DesiredCapacity=0,
                AvailabilityZones=[f"{region}a"], NewInstancesProtectedFromScaleIn=True,
                LaunchTemplate={"LaunchTemplateId": lt["LaunchTemplateId"], "Version": "$Latest"},
                Tags=group_tags("dlr", name, labels, taints, prio),
            )  # fmt: skip

    def group(self, name: str) -> dict:
        region = next(g[1] for g in GROUPS if g[0] == name)
        return self.asg(region).describe_auto_scaling_groups(AutoScalingGroupNames=[name])[
            "AutoScalingGroups"
        ][0]

    def _sample(self):
        """Desired capacity never above max nor below the instances that exist, checked every 0.5 s."""
        while not self._stop.wait(0.5):
            for region in ("us-west-2", "us-east-1"):
                try:
                    groups = self.asg(region).describe_auto_scaling_groups()["AutoScalingGroups"]
                except Exception:  # noqa: BLE001 - the observer retries next time
                    continue
                for g in groups:
                    live = [i for i in g["Instances"] if not i["LifecycleState"].startswith("Terminat")]
                    if g["DesiredCapacity"] > g["MaxSize"] or g["DesiredCapacity"] < len(live):
                        self.violations.append(
                            f"{g['AutoScalingGroupName']}: desired {g['DesiredCapacity']}, max {g['MaxSize']}, "
                            f"{len(live)} instances"
                        )

    def replica(self, name: str, **kw):
        from tests.faults.harness import Replica, wait_until
        from tests.faults.kube_proxy import ApiProxy

        p = self.plane
        proxy = ApiProxy(name, self.faults, p.stack.server, p.stack.workdir / "pki" / "ca.crt", p.cert, p.key)
        kc = self.tmp / f"{name}.kubeconfig"
        kc.write_text(yaml.safe_dump({
            "apiVersion": "v1", "kind": "Config", "current-context": "faults",
            "clusters": [{"name": "faults", "cluster": {"server": proxy.url, "certificate-authority": str(p.ca)}}],
            "users": [{"name": "research-autoscaler", "user": {"token": p.token}}],
            "contexts": [{"name": "faults", "context": {"cluster": "faults", "user": "research-autoscaler"}}],
        }))  # fmt: skip
        kc.chmod(0o600)
        r = Replica(name, kc, self.aws.door(name), self.tmp, **kw)
        r.proxy = proxy
        self.replicas.append(r)
        wait_until(
            lambda: r.get("/readyz")[0] == 200 or not r.alive(), 120, f"{name} ready"
        )  # a loaded machine
        assert r.alive(), r.tail()
        return r

    # -- nodes
    def node(self, name: str) -> dict:
        from kubernetes.client.exceptions import ApiException

        from tests.faults.harness import NodeGone

        try:
            return self.plane.api.sanitize_for_serialization(self.core.read_node(name))
        except ApiException as e:
            if e.status == 404:
                raise NodeGone(name) from None
            raise

    def node_for(self, group: str, *, launched_ago_s: float = 0) -> tuple[str, str]:
        """Raise ``group`` by one (as an earlier scale-up did); its instance's Node, registered and Ready (kwok
        runs the pods bound to it). (name, instance)"""
        from tests.faults.harness import wait_until

        g = self.group(group)
        before = {i["InstanceId"] for i in g["Instances"]}
        region = next(x[1] for x in GROUPS if x[0] == group)
        self.asg(region).set_desired_capacity(
            AutoScalingGroupName=group, DesiredCapacity=g["DesiredCapacity"] + 1
        )
        new = wait_until(
            lambda: {i["InstanceId"] for i in self.group(group)["Instances"]} - before, 10, "instance"
        )
        iid = next(iter(new))
        if launched_ago_s:
            self._backdate(iid, launched_ago_s)

        def ready():
            for n in self.core.list_node().items:
                if (n.spec.provider_id or "").endswith("/" + iid):
                    conds = {c.type: c.status for c in n.status.conditions or ()}
                    taints = {t.key for t in n.spec.taints or ()}
                    if conds.get("Ready") == "True" and not taints & {"node.kubernetes.io/not-ready",
                                                                      "node.cloudprovider.kubernetes.io/uninitialized"}:  # fmt: skip
                        return n.metadata.name
            return None

        return wait_until(ready, 30, f"a Ready Node for {iid}"), iid

    @staticmethod
    def _backdate(iid: str, seconds: float) -> None:
        from moto.core.utils import utcnow
        from moto.ec2.models import ec2_backends

        for region in ("us-west-2", "us-east-1"):
            for inst in ec2_backends["123456789012"][region].all_instances():
                if inst.id == iid:
                    inst.launch_time = utcnow() - timedelta(seconds=seconds)

    def has_taint(self, node: str, key: str = "ToBeDeletedByClusterAutoscaler") -> bool:
        n = self.node(node)
        return any(t.get("key") == key for t in (n.get("spec") or {}).get("taints") or [])

    def in_service(self, group: str, iid: str) -> bool:
        return any(
            i["InstanceId"] == iid and i["LifecycleState"] == "InService"
            for i in self.group(group)["Instances"]
        )

    # -- jobs
    def submit(self, name: str, *, node: str | None = None, gpus: int = 0, cpu: str = "1",
               requests: dict | None = None, wait: bool = True) -> str | None:  # fmt: skip
        """A batch/v1 Job of one pod in the world's namespace, made into its pod by the real Job controller (bound
        to ``node`` when given, as a scheduler that ignores taints and cordons binds it); its pod's name once it
        exists (``wait``)."""
        res = {"cpu": cpu, "memory": "8Gi", **(requests or {})}
        limits = {k: v for k, v in res.items() if "/" in k}  # extended resources: limits equal to requests
        if gpus:
            res["nvidia.com/gpu"] = limits["nvidia.com/gpu"] = str(gpus)
        spec = {
            "restartPolicy": "Never",
            "containers": [{"name": "main", "image": "registry.k8s.io/pause:3.10",
                            "resources": {"requests": res, **({"limits": limits} if limits else {})}}],
            "tolerations": [dict(GPU_TOLERATION)],
            "terminationGracePeriodSeconds": 0,
        }  # fmt: skip
        if node:
            spec["nodeName"] = node
        if gpus:
            spec["nodeSelector"] = dict(V100)
        job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name, "namespace": self.ns},
               "spec": {"backoffLimit": 0, "template": {"metadata": {"annotations": dict(FOREVER)}, "spec": spec}}}  # fmt: skip
        self.batch.create_namespaced_job(self.ns, job)
        return self.pod_of(name) if wait else None

    def pod_of(self, job: str, timeout_s: float = 20) -> str:
        from tests.faults.harness import wait_until

        def made():
            items = self.core.list_namespaced_pod(
                self.ns, label_selector=f"batch.kubernetes.io/job-name={job}"
            ).items
            return items[0].metadata.name if items else None

        self.pods[job] = wait_until(made, timeout_s, f"the Job controller makes {job}'s pod", step=0.02)
        return self.pods[job]

    def pod_key(self, job: str) -> str:
        return f"{self.ns}/{self.pods[job]}"

    def job_on(self, node: str, name: str, **kw) -> str:
        return self.submit(name, node=node, **kw)

    def gpu_pod(self, name: str, wait: bool = True) -> str | None:
        return self.submit(name, gpus=8, cpu="8", wait=wait)

    def delete_job(self, name: str) -> None:
        """The Job and its pod, at once (the pod's grace period is 0)."""
        self.batch.delete_namespaced_job(name, self.ns, propagation_policy="Background")
        self.core.delete_collection_namespaced_pod(self.ns, label_selector=f"batch.kubernetes.io/job-name={name}",
                                                   grace_period_seconds=0)  # fmt: skip

    def job_running(self, name: str, node: str) -> bool:
        """By the API: the Job's pod runs on ``node``, and the Node is there."""
        from tests.faults.harness import NodeGone

        pod = self.core.read_namespaced_pod(self.pods[name], self.ns)
        try:
            self.node(node)
        except NodeGone:
            return False
        return pod.status.phase == "Running" and pod.spec.node_name == node

    # -- the end
    def close(self):
        from kubernetes.client.exceptions import ApiException

        from clusterspec.names import AUTOSCALER_NAMESPACE, LEASE_NAME, STATE_CONFIGMAP, STATUS_CONFIGMAP

        self._stop.set()
        for r in self.replicas:
            r.proxy.cut_off.clear()
            if r.alive():
                r.proc.terminate()
        for r in self.replicas:
            r.stop()
        self.faults.stopping.set()
        for r in self.replicas:
            r.proxy.stop()
        self.agent.stop()
        coordination = k8s.CoordinationV1Api(self.plane.api)
        for call in (
            lambda: self.batch.delete_collection_namespaced_job(self.ns, propagation_policy="Background"),
            lambda: self.core.delete_collection_namespaced_pod(self.ns, grace_period_seconds=0),
            lambda: self.core.delete_namespace(self.ns),
            lambda: self.core.delete_collection_node(label_selector=NODE_GROUP_LABEL),
            lambda: coordination.delete_namespaced_lease(LEASE_NAME, AUTOSCALER_NAMESPACE),
            lambda: self.core.delete_namespaced_config_map(STATE_CONFIGMAP, AUTOSCALER_NAMESPACE),
            lambda: self.core.delete_namespaced_config_map(STATUS_CONFIGMAP, AUTOSCALER_NAMESPACE),
        ):
            try:
                call()
            except ApiException as e:
                if e.status != 404:
                    raise
        # the DaemonSets' pods of the nodes gone (the pod garbage collector would take them only later)
        live = {n.metadata.name for n in self.core.list_node().items}
        for p in self.core.list_namespaced_pod("kube-system").items:
            if p.spec.node_name and p.spec.node_name not in live:
                self.core.delete_namespaced_pod(p.metadata.name, "kube-system", grace_period_seconds=0)
        self.aws.stop()


@pytest.fixture
def world(tmp_path, monkeypatch, plane):
    from localcluster import aws_server
    from tests.faults.harness import AWS_ENV

    for k, v in AWS_ENV.items():
        monkeypatch.setenv(k, v)
    aws_server.install({})  # moto answers DescribeScalingActivities with the failures capacity limits cause
    w = World(tmp_path, plane)
    try:
        yield w
    finally:
        w.close()
        aws_server.uninstall()
        time.sleep(0.2)
