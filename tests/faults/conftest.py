"""The fault scenarios' world: moto (behind doors) with three tagged groups, the emulator following it, replicas.

These tests take minutes: ``make faults`` runs them (and CI); ``make test`` leaves them out (FAULTS unset)."""

from __future__ import annotations

import os
import threading
import time
import urllib.request
from datetime import timedelta

import boto3
import pytest

from autoscaler.adapters.aws import AwsCloud
from autoscaler.demo import aws_server
from autoscaler.emulator import Emulator
from autoscaler.emulator.aws_follow import AwsFollower
from autoscaler.emulator.kubeconfig import write_kubeconfig
from autoscaler.model import ClusterModel, WallClock
from tests.autoscaler.aws_setup import group_tags
from tests.autoscaler.model.builders import pod
from tests.faults.harness import AWS_ENV, Aws, KubeFaults, Proxy, Replica, kubectl, wait_until

collect_ignore_glob = [] if os.environ.get("FAULTS") else ["test_*.py"]

V100 = {"research.cluster/gpu-model": "v100"}
GPU_TAINT = {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}
GROUPS = [  # name, region, instance type, max, labels, taints, priority
    ("dlr-us-west-2-cpu", "us-west-2", "m6i.2xlarge", 5, {"research.cluster/pool": "cpu"}, [], 0),
    ("dlr-us-west-2-gpu-v100", "us-west-2", "p3.16xlarge", 4, V100, [GPU_TAINT], 10),
    ("dlr-us-east-1-gpu-v100", "us-east-1", "p3.16xlarge", 4, V100, [GPU_TAINT], 10),
]


class World:
    def __init__(self, tmp):
        self.tmp = tmp
        self.aws = Aws()
        self.obs = self.aws.door("observer")  # boto3 checks and the emulator's follower: never faulty
        urllib.request.urlopen(urllib.request.Request(f"{self.obs.url}/moto-api/reset", method="POST")).read()
        self.session = boto3.Session(aws_access_key_id="testing", aws_secret_access_key="testing")
        self._create_groups()
        self.model = ClusterModel(WallClock(compression=60))
        self.emu = Emulator(self.model).start()
        self.faults = KubeFaults(self.emu.api)
        self.kubeconfig = write_kubeconfig(tmp / "kubeconfig", self.emu.url)
        cloud = AwsCloud("dlr", ["us-west-2", "us-east-1"], endpoint_url=self.obs.url, session=self.session)
        self.follower = AwsFollower(self.model, cloud, interval_s=0.5).start()
        self.replicas: list[Replica] = []
        self.violations: list[str] = []
        self._stop = threading.Event()
        threading.Thread(target=self._sample, daemon=True).start()

    def asg(self, region: str):
        return self.session.client("autoscaling", region_name=region, endpoint_url=self.obs.url)

    def _create_groups(self):
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

    def replica(self, name: str, **kw) -> Replica:
        proxy = Proxy(self.emu.port)
        kc = write_kubeconfig(self.tmp / f"{name}.kubeconfig", proxy.url)
        r = Replica(name, kc, self.aws.door(name), self.tmp, **kw)
        r.proxy = proxy
        self.replicas.append(r)
        wait_until(lambda: r.get("/readyz")[0] == 200 or not r.alive(), 60, f"{name} ready")
        assert r.alive(), r.tail()
        return r

    def node_for(self, group: str, *, launched_ago_s: float = 0) -> tuple[str, str]:
        """Raise ``group`` by one (as an earlier scale-up did); its instance's Node, registered. (name, instance)"""
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

        def node():
            for n in kubectl(self.kubeconfig, "get", "nodes")["items"]:
                if n["spec"].get("providerID", "").endswith("/" + iid):
                    return n["metadata"]["name"]
            return None

        return wait_until(node, 30, f"a Node for {iid}"), iid

    @staticmethod
    def _backdate(iid: str, seconds: float) -> None:
        from moto.core.utils import utcnow
        from moto.ec2.models import ec2_backends

        for region in ("us-west-2", "us-east-1"):
            for inst in ec2_backends["123456789012"][region].all_instances():
                if inst.id == iid:
                    inst.launch_time = utcnow() - timedelta(seconds=seconds)

    def job_on(self, node: str, name: str) -> None:
        """A Job's pod bound to ``node`` (the scheduler placed it there a moment ago)."""
        p = pod(name, gpus=0, cpu="1", duration=None, job=name)
        p["spec"]["nodeName"] = node
        with self.model.lock:
            self.model.submit_pod(p)

    def job_running(self, name: str, node: str) -> bool:
        """By kubectl: the pod runs on ``node``, and the Node is there."""
        p = kubectl(self.kubeconfig, "get", "pod", "-n", "research", name)
        nodes = {n["metadata"]["name"] for n in kubectl(self.kubeconfig, "get", "nodes")["items"]}
        return p["status"].get("phase") == "Running" and p["spec"].get("nodeName") == node and node in nodes

    def in_service(self, group: str, iid: str) -> bool:
        return any(
            i["InstanceId"] == iid and i["LifecycleState"] == "InService"
            for i in self.group(group)["Instances"]
        )

    def has_taint(self, node: str, key: str = "ToBeDeletedByClusterAutoscaler") -> bool:
        with self.model.lock:
            n = self.model.node(node)
        return any(t.get("key") == key for t in (n.get("spec") or {}).get("taints") or [])

    def close(self):
        self._stop.set()
        for r in self.replicas:
            r.proxy.cut_off.clear()
            r.stop()
            r.proxy.stop()
        self.follower.stop()
        self.emu.stop()
        self.aws.stop()


@pytest.fixture
def world(tmp_path, monkeypatch):
    for k, v in AWS_ENV.items():
        monkeypatch.setenv(k, v)
    aws_server.install({})  # moto answers DescribeScalingActivities with the failures capacity limits cause
    w = World(tmp_path)
    try:
        yield w
    finally:
        w.close()
        aws_server.uninstall()
        time.sleep(0.2)
