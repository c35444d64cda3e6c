"""The node agent (localcluster/nodes.py): its kwok registration (``boot=False``, ``NodeLifecycle.instant()``), the
one ``invoke bench-peers`` gives our autoscaler beside Karpenter's kwok provider (an instance of the embedded AWS
becomes a Node of the real API server at once, kwok's (Ready), with its group's labels and taints, its GPUs, no
cloud-controller taint; the instance gone, the Node goes), and who takes a Ready node: kwok, or with
``process_nodes`` the process kubelet for the nodes of GPU groups ("gpu") or for every node ("all") (whose pods then run as processes, as
`invoke local-cluster` wants)."""

from __future__ import annotations

import json
import threading
import time
from datetime import datetime

import boto3
import pytest
from kubernetes import client as k8s
from kubernetes import config as k8s_config

from autoscaler.adapters.aws import AwsCloud
from clusterspec.loader import load_spec
from localcluster import aws_server
from localcluster.aws_bootstrap import create_groups
from localcluster.kubelet.agent import LABEL, VALUE
from localcluster.nodes import EFA, PLUGINS, UNINITIALIZED, NodeAgent
from localcluster.stack import KWOK_LABEL
from simulator.model.boot import NodeLifecycle
from tests.autoscaler.moto_fixtures import reset


@pytest.fixture
def moto_url():
    aws_server.install({})
    server = aws_server.serve(0)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield reset(f"http://127.0.0.1:{server.server_port}")
    finally:
        server.shutdown()
        thread.join(5)
        aws_server.uninstall()


@pytest.mark.tool  # the shared control plane (make tools) and the embedded AWS
def test_an_instance_is_a_ready_gpu_node_at_once_and_goes_with_its_instance(kube, moto_url) -> None:
    spec = load_spec()
    session = boto3.Session(aws_access_key_id="demo", aws_secret_access_key="demo")
    create_groups(spec, moto_url, ["us-east-1"])
    cloud = AwsCloud(spec.name, ["us-east-1"], endpoint_url=moto_url, session=session)
    group = spec.asg_name(
        "us-east-1", next(g for g in spec.region("us-east-1").node_groups if g.name == "gpu-v100x8")
    )
    cloud.list_groups()  # the adapter acts on the groups it discovered
    cloud.set_desired(group, 1)
    api = k8s_config.new_client_from_config(config_file=str(kube.admin_kubeconfig))
    agent = NodeAgent(cloud, api, lifecycle=NodeLifecycle.instant(), boot=False)
    agent.sync_once()
    (tracked,) = [n for n in agent.nodes.values() if n.group["name"] == group]  # besides the groups' minimum
    core = agent.core
    node = core.read_node(tracked.name)
    assert node.metadata.labels[KWOK_LABEL] == "fake"
    assert node.metadata.labels["research.cluster/gpu-model"] == "v100"
    assert node.status.allocatable["nvidia.com/gpu"] == "8"
    keys = {t.key for t in node.spec.taints or ()}
    assert "nvidia.com/gpu" in keys and UNINITIALIZED not in keys
    deadline = time.monotonic() + 30  # kwok posts Ready; the node lifecycle controller lifts not-ready
    while time.monotonic() < deadline:
        node = core.read_node(tracked.name)
        ready = [c.status for c in node.status.conditions or () if c.type == "Ready"]
        if ready == ["True"] and "node.kubernetes.io/not-ready" not in {
            t.key for t in node.spec.taints or ()
        }:
            break
        time.sleep(0.5)
    else:
        raise AssertionError(
            f"{tracked.name}: not Ready and schedulable after 30 s: {node.status.conditions}"
        )
    asg = session.client("autoscaling", region_name="us-east-1", endpoint_url=moto_url)
    asg.terminate_instance_in_auto_scaling_group(
        InstanceId=tracked.instance["id"], ShouldDecrementDesiredCapacity=True
    )
    agent.sync_once()
    assert tracked.instance["id"] not in agent.nodes
    assert not [n for n in core.list_node().items if n.metadata.name == tracked.name]


def test_the_device_plugins_waited_for_are_the_daemonsets_invoke_up_deploys() -> None:
    """The agent advertises a node's GPUs (EFA adapters) once the DaemonSet of that name runs there: a name
    `invoke deploy-addons` does not render (efa-device-plugin, where the DaemonSet is aws-efa-k8s-device-plugin)
    left every A100 node without vpc.amazonaws.com/efa, and the docs' 2-node A100 example Pending for ever."""
    from provision import addons

    rendered = {
        d["metadata"]["name"]: d for d in addons.render(load_spec()) if d["kind"] == "DaemonSet"
    }  # fmt: skip
    for resource, name in PLUGINS.items():
        assert name in rendered, (resource, name, sorted(rendered))
        spec = rendered[name]["spec"]["template"]["spec"]
        paths = {v.get("hostPath", {}).get("path") for v in spec.get("volumes") or ()}
        assert "/var/lib/kubelet/device-plugins" in paths, (name, paths)  # it registers with the kubelet
    assert "efa" in rendered[PLUGINS[EFA]]["spec"]["template"]["spec"]["containers"][0]["image"]


GPU_GROUP = {"name": "gpu", "allocatable": {"cpu": "8", "nvidia.com/gpu": "1"}}
CPU_GROUP = {"name": "cpu", "allocatable": {"cpu": "8"}}


@pytest.mark.parametrize(
    ("process", "group", "label"),
    [("", GPU_GROUP, (KWOK_LABEL, "fake")), ("", CPU_GROUP, (KWOK_LABEL, "fake")),
     ("gpu", GPU_GROUP, (LABEL, VALUE)), ("gpu", CPU_GROUP, (KWOK_LABEL, "fake")),
     ("all", GPU_GROUP, (LABEL, VALUE)), ("all", CPU_GROUP, (LABEL, VALUE))],
)  # fmt: skip
def test_gpu_nodes_go_to_the_process_kubelet_only_when_asked(process, group, label) -> None:
    agent = NodeAgent(cloud=None, api=k8s.ApiClient(), process_nodes=process)
    assert agent.taker(group) == label


class _Groups:
    def __init__(self, groups: list[dict]) -> None:
        self.groups = groups

    def list_groups(self) -> list[dict]:
        return self.groups


def test_an_idle_agent_polls_less_but_never_later_than_the_shortest_boot_delay() -> None:
    """Nothing on its way: the agent waits up to ``idle_s``, capped by the shortest boot delay of its groups (a CPU
    type's 90 s at compression 60: 1.5 s), so an instance launched meanwhile is seen before it is due to register;
    an instance booting: the short interval again. Without boot delays (registration at once) it never idles."""
    cpu = {"name": "cpu", "region": "us-east-1", "instance_type": "m6i.4xlarge", "instances": []}
    gpu = {"name": "gpu", "region": "us-east-1", "instance_type": "p4d.24xlarge", "instances": []}
    cloud = _Groups([cpu, gpu])
    agent = NodeAgent(cloud, k8s.ApiClient(), compression=60.0, interval_s=0.5, idle_s=5.0)
    assert agent.next_wait() == 0.5  # nothing synced yet
    agent.sync_once(now=1000.0)
    assert agent.next_wait() == 1.5  # 90 s / 60, under idle_s
    assert NodeAgent(_Groups([gpu]), k8s.ApiClient(), compression=60.0, idle_s=2.0).next_wait() == 0.5
    only_gpu = NodeAgent(_Groups([gpu]), k8s.ApiClient(), compression=60.0, idle_s=2.0)
    only_gpu.sync_once(now=1000.0)
    assert only_gpu.next_wait() == 2.0  # 330 s / 60 = 5.5 s, over idle_s
    gpu["instances"] = [{"id": "i-0123456789abcdef0", "state": "InService", "zone": "us-east-1a",
                         "launched_at": "2026-12-07T00:00:00Z"}]  # fmt: skip
    booting = 1.0 + datetime.fromisoformat("2026-12-07T00:00:00+00:00").timestamp()
    agent.sync_once(now=booting)  # launched a second ago: not due to register before 5.5 s
    assert agent.nodes == {} and agent.next_wait() == 0.5
    instant = NodeAgent(_Groups([cpu]), k8s.ApiClient(), boot=False, idle_s=5.0)
    instant.sync_once(now=1000.0)
    assert instant.next_wait() == instant.interval_s


class _Seen:
    def __init__(self, items: list[dict]) -> None:
        self.items, self.synced = items, True

    def snapshot(self) -> list[dict]:
        return self.items


def test_a_watching_agent_idles_long_but_polls_closely_while_a_pod_waits_or_a_node_is_to_go() -> None:
    """With the watches, the shortest boot delay no longer caps the idle wait (a scale-up answers a pending pod,
    which the watch hears at once); a pod pending on no node, a recent such event, or a Node the autoscaler
    tainted to delete bring the short interval back."""
    cpu = {"name": "cpu", "region": "us-east-1", "instance_type": "m6i.4xlarge", "instances": []}
    agent = NodeAgent(
        _Groups([cpu]), k8s.ApiClient(), compression=60.0, interval_s=0.5, idle_s=10.0, watch=True
    )
    agent.sync_once(now=1000.0)
    pending, nodes = _Seen([]), _Seen([{"metadata": {"name": "n"}, "spec": {}}])
    agent._pending, agent._nodes = pending, nodes
    assert agent.next_wait() == 10.0
    pending.items = [{"metadata": {"name": "job-0"}}]
    assert agent.next_wait() == 0.5
    pending.items = []
    nodes.items[0]["spec"]["taints"] = [{"key": "ToBeDeletedByClusterAutoscaler", "effect": "NoSchedule"}]
    assert agent.next_wait() == 0.5
    nodes.items[0]["spec"]["taints"] = []
    agent._pod_event()  # a pending pod was just bound: a scale-up may still follow
    assert agent.next_wait() == 0.5
    agent._busy_until = time.monotonic() - 1
    assert agent.next_wait() == 10.0
    pending.synced = False
    assert agent.next_wait() == 0.5


@pytest.mark.tool  # the shared control plane (make tools)
def test_the_agents_watch_hears_a_pod_pending_on_no_node(kube) -> None:
    api = k8s_config.new_client_from_config(config_file=str(kube.admin_kubeconfig))
    agent = NodeAgent(_Groups([]), api, idle_s=10.0, watch=True).start()
    try:
        deadline = time.monotonic() + 30
        while not (agent._pending.synced and agent._nodes.synced):
            assert time.monotonic() < deadline, "the agent's watches did not sync in 30 s"
            time.sleep(0.1)
        agent._busy_until = 0.0
        ns = kube.namespace("agent-wake")
        pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "waits"},
               "spec": {"nodeSelector": {"no-such": "node"},
                        "containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10"}]}}  # fmt: skip
        kube.kubectl("-n", ns, "create", "-f", "-", input=json.dumps(pod), check=True)
        while agent._busy_until == 0.0:
            assert time.monotonic() < deadline, "the agent did not hear the pending pod"
            time.sleep(0.1)
        assert agent.next_wait() == agent.interval_s
    finally:
        agent.stop()
