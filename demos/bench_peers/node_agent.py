"""One kwok Node per moto instance: what the kubelet of each EC2 instance does for our autoscaler on the real stack.

Every ``interval_s`` the agent lists the Auto Scaling groups of every region in the moto server (its own access
key, so its calls are not counted as the autoscaler's) and makes the Nodes follow: an InService or Pending
instance gets a Node named for it (providerID ``aws:///<zone>/<id>``, the group's labels and taints, the instance
type's allocatable from the catalog) annotated for kwok, which makes it Ready and runs its pods; an instance gone
from its group (or Terminating) loses its Node. Registration is immediate, as the kwok provider's is for Karpenter.

The minimum the benchmark needs; the lead's ``localcluster`` node agent takes its place once it lands.
"""

from __future__ import annotations

import logging
import threading

import boto3
from kubernetes import client as k8s

from clusterspec import catalog
from clusterspec.names import NODE_GROUP_LABEL
from clusterspec.spec import Cluster as Spec
from demos.bench_peers.stack import KWOK_ANNOTATION

log = logging.getLogger(__name__)
LIVE = ("Pending", "Pending:Wait", "Pending:Proceed", "InService")
AGENT_LABEL = "bench.research.cluster/agent"


def node_name(instance_id: str) -> str:
    return f"aws-{instance_id}"


def node_for(spec: Spec, region: str, group_name: str, instance: dict) -> dict:
    group = next(g for g in spec.region(region).node_groups if spec.asg_name(region, g) == group_name)
    itype = catalog.instance_type(instance["InstanceType"])
    name = node_name(instance["InstanceId"])
    allocatable = itype.allocatable()
    capacity = {**allocatable, "cpu": str(itype.vcpu), "memory": f"{int(itype.memory_gib * 1024)}Mi"}
    node = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "annotations": {KWOK_ANNOTATION[0]: KWOK_ANNOTATION[1]},
            "labels": {
                **group.labels,
                NODE_GROUP_LABEL: group_name,
                AGENT_LABEL: "moto",
                "kubernetes.io/hostname": name,
                "kubernetes.io/os": "linux",
                "kubernetes.io/arch": "amd64",
                "topology.kubernetes.io/region": region,
                "topology.kubernetes.io/zone": instance["AvailabilityZone"],
                "node.kubernetes.io/instance-type": itype.name,
            },
        },
        "spec": {"providerID": f"aws:///{instance['AvailabilityZone']}/{instance['InstanceId']}"},
        "status": {"capacity": capacity, "allocatable": allocatable},
    }
    if group.taints:
        node["spec"]["taints"] = [t.model_dump(exclude_defaults=True) for t in group.taints]
    return node


class NodeAgent:
    def __init__(self, spec: Spec, aws_url: str, core: k8s.CoreV1Api, interval_s: float = 0.5) -> None:
        self.spec = spec
        self.core = core
        self.interval_s = interval_s
        session = boto3.Session(aws_access_key_id="bench-agent", aws_secret_access_key="bench-agent")
        self.asg = {
            r: session.client("autoscaling", region_name=r, endpoint_url=aws_url)
            for r in spec.spill_over_order
        }
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def sync_once(self) -> None:
        want: dict[str, dict] = {}
        for region, asg in self.asg.items():
            for page in asg.get_paginator("describe_auto_scaling_groups").paginate():
                for g in page["AutoScalingGroups"]:
                    for i in g.get("Instances", []):
                        if i.get("LifecycleState") in LIVE:
                            want[node_name(i["InstanceId"])] = node_for(
                                self.spec, region, g["AutoScalingGroupName"], i
                            )
        have = {n.metadata.name for n in self.core.list_node(label_selector=AGENT_LABEL).items}
        for name in sorted(set(want) - have):
            self.core.create_node(want[name])
        for name in sorted(have - set(want)):
            self.core.delete_node(name)

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self.sync_once()
            except Exception as e:  # retried on the next tick
                log.warning("node agent: %s: %s", type(e).__name__, e)
            self._stop.wait(self.interval_s)

    def start(self) -> NodeAgent:
        self._thread = threading.Thread(target=self._run, daemon=True, name="node-agent")
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)
