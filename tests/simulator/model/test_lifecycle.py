"""A node's life in the model, stage by stage, against the Kubernetes rules that model/boot.py cites.

Timings here: a p3 node registers 100 s after launch (boot_delays), the cloud controller initialises it 2 s
later, the kubelet posts Ready at 120 s and the device plugin advertises the GPUs 30 s after it starts (150 s).
"""

from __future__ import annotations

import pytest

from simulator.model import ClusterModel, VirtualClock
from simulator.model.boot import NodeLifecycle
from simulator.model.taints import NOT_READY, UNINITIALIZED, UNREACHABLE
from tests.simulator.model.builders import group, model, phases, pod

BOOT = {"p3": 100, "p4d": 100, "default": 100}
GPU = "nvidia.com/gpu"
EFA = "vpc.amazonaws.com/efa"


def _launch(m: ClusterModel, n: int = 1, name: str = "g8") -> None:
    m.cloud.set_desired(name, n)


def _node(m: ClusterModel) -> dict:
    (node,) = m.nodes()
    return node


def _condition(node: dict, kind: str = "Ready") -> dict:
    return next(c for c in node["status"]["conditions"] if c["type"] == kind)


def _taints(node: dict) -> set[tuple[str, str]]:
    return {(t["key"], t["effect"]) for t in node["spec"].get("taints") or ()}


def _pods_on(m: ClusterModel, node: dict) -> dict[str, str]:
    name = node["metadata"]["name"]
    return {
        p["metadata"]["name"]: p["status"]["phase"] for p in m.pods() if p["spec"].get("nodeName") == name
    }


def test_a_new_node_registers_not_ready_tainted_and_without_its_gpus():
    m = model(group(), boot_delays=BOOT)
    _launch(m)
    m.advance(99.9)
    assert m.nodes() == []
    m.advance(100)
    node = _node(m)
    ready = _condition(node)
    assert (ready["status"], ready["reason"]) == ("False", "KubeletNotReady")
    assert "NetworkPluginNotReady" in ready["message"]
    assert {c["type"]: c["status"] for c in node["status"]["conditions"]} == {
        "MemoryPressure": "False",
        "DiskPressure": "False",
        "PIDPressure": "False",
        "Ready": "False",
    }
    assert _taints(node) == {(GPU, "NoSchedule"), (UNINITIALIZED, "NoSchedule"), (NOT_READY, "NoSchedule")}
    assert next(t for t in node["spec"]["taints"] if t["key"] == UNINITIALIZED)["value"] == "true"
    assert GPU not in node["status"]["allocatable"] and GPU not in node["status"]["capacity"]


def test_the_stages_follow_in_order_at_their_times():
    m = model(group(), boot_delays=BOOT)
    _launch(m)
    m.advance(101.9)
    assert (UNINITIALIZED, "NoSchedule") in _taints(_node(m))
    m.advance(102)
    assert _taints(_node(m)) == {(GPU, "NoSchedule"), (NOT_READY, "NoSchedule")}, (
        "the cloud controller's turn"
    )
    m.advance(119.9)
    assert _condition(_node(m))["status"] == "False"
    m.advance(120)
    node = _node(m)
    ready = _condition(node)
    assert (ready["status"], ready["reason"], ready["lastTransitionTime"]) == (
        "True",
        "KubeletReady",
        "1970-01-01T00:02:00Z",
    )
    assert _taints(node) == {(GPU, "NoSchedule")}, "the node lifecycle controller removed not-ready"
    m.advance(149.9)
    assert GPU not in _node(m)["status"]["allocatable"], "Ready, but the device plugin has not registered"
    m.advance(150)
    node = _node(m)
    assert node["status"]["allocatable"][GPU] == "8" and node["status"]["capacity"][GPU] == "8"


def test_the_device_plugin_pod_lands_at_registration_and_starts_when_the_network_is_ready():
    m = model(group(), boot_delays=BOOT)
    _launch(m)
    m.advance(100)
    node = _node(m)
    (plugin,) = [p for p in m.pods() if p["spec"].get("nodeName") == node["metadata"]["name"]
                 and p["metadata"]["name"].startswith("nvidia-device-plugin-daemonset-")]  # fmt: skip
    assert plugin["spec"]["nodeName"] == node["metadata"]["name"]
    assert plugin["status"]["phase"] == "Pending"
    assert plugin["status"]["containerStatuses"][0]["state"] == {"waiting": {"reason": "ContainerCreating"}}
    assert plugin["spec"]["priorityClassName"] == "system-node-critical"
    m.advance(120)
    assert m.pod("kube-system", plugin["metadata"]["name"])["status"]["phase"] == "Running"
    assert not any(p["metadata"]["name"].startswith("aws-efa") for p in m.pods()), "p3.16xlarge has no EFA"


def test_a_gpu_pod_waits_for_the_advertised_gpus_not_just_for_ready():
    m = model(group(), boot_delays=BOOT)
    m.submit_pod(pod("train", gpus=8, duration=None))
    _launch(m)
    m.advance(149.9)
    assert phases(m) == {"train": "Pending"}
    m.advance(150)
    assert phases(m) == {"train": "Running"}
    assert m.records[m.pod("research", "train")["metadata"]["uid"]].started == 150


def test_the_scheduler_keeps_pods_off_a_ready_node_until_the_cloud_controller_initialises_it():
    lifecycle = NodeLifecycle(cloud_init_s=60.0)  # a slow cloud controller: Ready at 120, initialised at 160
    m = model(group(), boot_delays=BOOT, lifecycle=lifecycle)
    m.submit_pod(pod("cpu-only", gpus=0, duration=None))  # tolerates the GPU taint only
    _launch(m)
    m.advance(150)
    assert _condition(_node(m))["status"] == "True"
    assert phases(m) == {"cpu-only": "Pending"}
    cond = m.pod("research", "cpu-only")["status"]["conditions"][0]
    assert cond["reason"] == "Unschedulable"
    m.advance(160)
    assert phases(m) == {"cpu-only": "Running"}


def test_without_a_cloud_controller_there_is_no_uninitialized_taint():
    m = model(group(), boot_delays=BOOT, lifecycle=NodeLifecycle(cloud_controller=False))
    _launch(m)
    m.advance(100)
    assert _taints(_node(m)) == {(GPU, "NoSchedule"), (NOT_READY, "NoSchedule")}


def test_nodes_of_the_initial_cluster_are_ready_with_their_gpus():
    m = model(group(desired=1))
    node = _node(m)
    assert _condition(node)["status"] == "True" and _taints(node) == {(GPU, "NoSchedule")}
    assert node["status"]["allocatable"][GPU] == "8"
    assert set(_pods_on(m, node).values()) == {"Running"}


def test_the_instant_lifecycle_is_the_old_model():
    m = model(group(), boot_delays=BOOT, lifecycle=NodeLifecycle.instant())
    m.submit_pod(pod("train", gpus=8, duration=None))
    _launch(m)
    m.advance(100)
    node = _node(m)
    assert _condition(node)["status"] == "True" and _taints(node) == {(GPU, "NoSchedule")}
    assert node["status"]["allocatable"][GPU] == "8"
    assert phases(m) == {"train": "Running"}
    assert m.store.list("daemonsets") == []


def test_efa_is_advertised_by_its_own_plugin_on_efa_instance_types():
    p4d = group("a100", instance_type="p4d.24xlarge")
    p4d["allocatable"] = {"cpu": "94", "memory": "1000Gi", "pods": "110", GPU: "8", EFA: "4"}
    m = model(p4d, boot_delays=BOOT)
    _launch(m, name="a100")
    m.advance(100)
    node = _node(m)
    assert EFA not in node["status"]["allocatable"] and GPU not in node["status"]["allocatable"]
    assert sorted(n.rsplit("-", 1)[0] for n in _pods_on(m, node)) == [
        "aws-efa-k8s-device-plugin-daemonset",
        "nvidia-device-plugin-daemonset",
    ]
    m.advance(150)
    alloc = _node(m)["status"]["allocatable"]
    assert (alloc[GPU], alloc[EFA]) == ("8", "4")


def _daemonset(name: str, spec: dict) -> dict:
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": name, "namespace": "monitoring"},
        "spec": {"template": {"metadata": {"labels": {"app": name}}, "spec": spec}},
    }


EXPORTER = _daemonset(
    "node-exporter",
    {
        "tolerations": [{"operator": "Exists", "effect": "NoSchedule", "key": GPU}],
        "containers": [
            {
                "name": "exporter",
                "ports": [{"containerPort": 9100, "hostPort": 9100}],
                "resources": {"requests": {"cpu": "60"}},
            }
        ],
    },
)


def test_a_daemonset_without_a_not_ready_toleration_lands_when_the_node_is_ready():
    """The DaemonSet controller adds not-ready/unreachable NoExecute tolerations, not NoSchedule ones."""
    m = model(group(), boot_delays=BOOT, daemonsets=[EXPORTER])
    _launch(m)
    m.advance(119)
    assert not any(n.startswith("node-exporter") for n in _pods_on(m, _node(m)))
    m.advance(120)
    exporter = next(p for p in m.pods() if p["metadata"]["name"].startswith("node-exporter"))
    assert exporter["status"]["phase"] == "Running"
    tolerations = {(t.get("key"), t.get("effect")) for t in exporter["spec"]["tolerations"]}
    assert {(NOT_READY, "NoExecute"), (UNREACHABLE, "NoExecute")} <= tolerations
    assert (NOT_READY, "NoSchedule") not in tolerations
    assert not any(t.get("tolerationSeconds") for t in exporter["spec"]["tolerations"])


def test_daemonset_pods_take_their_host_ports_and_requests_on_new_nodes():
    m = model(group(), boot_delays=BOOT, daemonsets=[EXPORTER])
    port_pod = pod("wants-9100", gpus=1, cpu="1", duration=None)
    port_pod["spec"]["containers"][0]["ports"] = [{"containerPort": 9100, "hostPort": 9100}]
    m.submit_pod(port_pod)
    m.submit_pod(pod("big-cpu", gpus=1, cpu="4", duration=None))  # 60 of 63.26 CPUs go to the exporter
    _launch(m)
    m.advance(200)
    assert phases(m) == {"wants-9100": "Pending", "big-cpu": "Pending"}
    m.submit_pod(pod("small-cpu", gpus=1, cpu="2", duration=None))
    assert phases(m)["small-cpu"] == "Running"


def test_a_daemonset_with_a_node_selector_skips_other_nodes():
    only_cpu = _daemonset(
        "cpu-agent",
        {"nodeSelector": {"research.cluster/pool": "cpu"}, "containers": [{"name": "a"}]},
    )
    m = model(group(desired=1), daemonsets=[only_cpu])
    assert not any(n.startswith("cpu-agent") for n in _pods_on(m, _node(m)))


def test_default_toleration_seconds_are_added_unless_the_pod_has_its_own():
    m = model(group(desired=1))
    m.submit_pod(pod("plain", gpus=1, duration=None))
    own = pod("own", gpus=1, duration=None)
    own["spec"]["tolerations"].append({"key": UNREACHABLE, "operator": "Exists", "tolerationSeconds": 60})
    m.submit_pod(own)
    plain = {t["key"]: t.get("tolerationSeconds") for t in m.pod("research", "plain")["spec"]["tolerations"]}
    assert plain == {GPU: None, NOT_READY: 300, UNREACHABLE: 300}
    mine = {t["key"]: t.get("tolerationSeconds") for t in m.pod("research", "own")["spec"]["tolerations"]}
    assert mine == {GPU: None, NOT_READY: 300, UNREACHABLE: 60}


@pytest.mark.parametrize("lifecycle", [NodeLifecycle(), NodeLifecycle.instant()])
def test_a_wall_clock_free_run_finishes_every_pod_either_way(lifecycle):
    m = ClusterModel(VirtualClock(0.0), [group()], boot_delays=BOOT, lifecycle=lifecycle)
    for i in range(3):
        m.submit_pod(pod(f"p{i}", gpus=8, duration=60))
    _launch(m, 3)
    while (t := m.next_event_time()) is not None and t < 10_000:
        m.advance(t)
    assert set(phases(m).values()) == {"Succeeded"}


def test_the_kubelet_holds_a_node_lease_that_goes_with_its_node():
    m = model(group(), boot_delays=BOOT)
    _launch(m)
    m.advance(100)
    name = _node(m)["metadata"]["name"]
    lease = m.store.get("leases", "kube-node-lease", name)
    assert lease["spec"]["holderIdentity"] == name and lease["spec"]["leaseDurationSeconds"] == 40
    assert lease["spec"]["renewTime"] == "1970-01-01T00:01:40.000000Z"
    assert lease["metadata"]["ownerReferences"][0]["kind"] == "Node"
    m.advance(120)
    assert (
        m.store.get("leases", "kube-node-lease", name)["spec"]["renewTime"] == "1970-01-01T00:02:00.000000Z"
    )
    (inst,) = m.cloud.groups["g8"].live()
    m.cloud.terminate(inst, "terminated")
    m.advance(150)
    assert m.nodes() == [] and m.store.find("leases", "kube-node-lease", name) is None


def test_a_daemonset_pinned_by_match_fields_lands_on_that_node_only():
    m = model(group(desired=2))
    first, second = sorted(n["metadata"]["name"] for n in m.nodes())
    pinned = _daemonset(
        "pinned",
        {
            "tolerations": [{"operator": "Exists"}],
            "affinity": {
                "nodeAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {
                        "nodeSelectorTerms": [
                            {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [second]}]}
                        ]
                    }
                }
            },
            "containers": [{"name": "p"}],
        },
    )
    m.store.create("daemonsets", pinned)
    for name in (first, second):
        m.annotate_node(name, {"touched": "1"})  # a changed node has its DaemonSets' pods placed
    assert [p["spec"]["nodeName"] for p in m.pods() if p["metadata"]["name"].startswith("pinned")] == [second]
