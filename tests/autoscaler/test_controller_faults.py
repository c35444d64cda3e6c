"""Fault tests of the whole pass: the real planner, the AWS adapter on a moto server (three regions), a fake
Kubernetes side (the real adapter on the real control plane in the last test). moto fakes no scaling failures: they are injected with botocore event hooks."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest

from autoscaler.adapters.aws import AwsCloud
from autoscaler.controller import Controller, ControllerConfig
from autoscaler.core.config import PlannerConfig
from clusterspec.loader import load_spec
from tests.autoscaler import aws_faults
from tests.autoscaler.aws_setup import SESSION, create_groups
from tests.autoscaler.fakes import FakeCluster, pod
from tests.autoscaler.moto_fixtures import _moto_server, moto_url  # noqa: F401 - fixtures

REGIONS = ["us-west-2", "us-east-1", "us-east-2"]
V100 = {"research.cluster/gpu-model": "v100"}
SCAN_S = 10


class Clock:
    def __init__(self):
        # moto stamps instances with the real time, so the virtual clock starts there (the controller itself
        # never reads the system clock)
        self.t = datetime.now(UTC).replace(microsecond=0)

    def now(self):
        return self.t


@pytest.fixture
def setup(moto_url):  # noqa: F811
    spec = load_spec()
    create_groups(spec, moto_url)
    cloud = AwsCloud(spec.name, REGIONS, endpoint_url=moto_url, max_attempts=1, session=SESSION)
    pods = [pod(f"train-{i}", cpu="8", memory="64Gi", gpus=8, selector=V100, owner="Job") for i in range(3)]
    cluster = FakeCluster(pods=pods)
    clock = Clock()
    ctl = Controller(cluster, cloud, ControllerConfig(planner=PlannerConfig(), regions=REGIONS), clock)
    return ctl, cloud, clock


def desired(cloud: AwsCloud) -> dict[str, int]:
    return {g["name"]: g["desired"] for g in cloud.list_groups() if "v100" in g["name"]}


def test_insufficient_capacity_in_us_west_2_moves_the_gpus_to_us_east_1_in_the_next_pass(setup):
    ctl, cloud, clock = setup
    first = ctl.run_once()
    assert first.plan["scale_up"] == {"dlr-us-west-2-gpu-v100x8": 3}
    west = cloud.client("autoscaling", "us-west-2")
    aws_faults.hide_instances(west, "dlr-us-west-2-gpu-v100x8")  # they never launched...
    aws_faults.failed_activities(west, [{  # ...because AWS had no capacity
        "group": "dlr-us-west-2-gpu-v100x8", "at": clock.t + timedelta(seconds=3),
        "message": "We currently do not have sufficient p3.16xlarge capacity in the Availability Zone you "
                   "requested (us-west-2a).",
        "description": "Launching 3 new EC2 instances.  Status Reason: insufficient capacity"}])  # fmt: skip
    clock.t += timedelta(seconds=SCAN_S)
    second = ctl.run_once()
    assert second.plan["scale_up"] == {"dlr-us-east-1-gpu-v100x8": 3}
    assert desired(cloud) == {
        "dlr-us-west-2-gpu-v100x8": 0,
        "dlr-us-east-1-gpu-v100x8": 3,
        "dlr-us-east-2-gpu-v100x8": 0,
    }
    assert second.plan["group_state"]["dlr-us-west-2-gpu-v100x8"]["last_failure"]["reason"] == (
        "insufficient-capacity"
    )


@pytest.mark.parametrize(("status", "code"), [(500, "InternalFailure"), (400, "Throttling")])
def test_a_failing_region_does_not_stop_the_pass(setup, status, code):
    ctl, cloud, _ = setup
    aws_faults.http_error(cloud.client("autoscaling", "us-west-2"), "DescribeAutoScalingGroups", status, code)
    result = ctl.run_once()
    assert result.plan["scale_up"] == {"dlr-us-east-1-gpu-v100x8": 3}
    assert desired(cloud)["dlr-us-east-1-gpu-v100x8"] == 3
    assert any(a["action"] == "set_desired" and a["ok"] for a in result.actions)


@pytest.mark.parametrize(("status", "code"), [(500, "InternalFailure"), (400, "Throttling")])
def test_a_failed_scale_up_call_is_retried_by_the_next_pass(setup, status, code):
    ctl, cloud, clock = setup
    aws_faults.http_error(cloud.write_client("us-west-2"), "SetDesiredCapacity", status, code, times=1)
    first = ctl.run_once()
    assert [a["ok"] for a in first.actions if a["action"] == "set_desired"] == [False]
    assert desired(cloud)["dlr-us-west-2-gpu-v100x8"] == 0
    clock.t += timedelta(seconds=SCAN_S)
    second = ctl.run_once()
    assert [a["ok"] for a in second.actions if a["action"] == "set_desired"] == [True]
    assert desired(cloud)["dlr-us-west-2-gpu-v100x8"] == 3


def test_kubernetes_errors_do_not_stop_the_pass(tmp_path, kube):
    """The real Kubernetes adapter on the run's shared real control plane, through the fault proxy: Events answer
    500 every time, the state ConfigMap answers 429 once (retried): the pass still scales up and persists its
    state; the Events are the Event writer's business (off the pass): each is tried ``max_tries`` times, then
    dropped and counted."""
    from autoscaler.adapters.kubernetes import STATE_CONFIGMAP, KubeCluster, api_client
    from tests.autoscaler import real_kube
    from tests.autoscaler.fakes import V100 as V100_ALLOCATABLE
    from tests.autoscaler.fakes import FakeCloud, group

    ns = kube.namespace("faults")
    real_kube.create(kube, real_kube.pod("train-0", ns, gpus=8, selector=V100))
    failed = {"events": 0, "configmaps": 0}

    def intercept(method, path, query, body):
        if method == "POST" and "events" in path.split("/"):
            failed["events"] += 1
            return 500, "InternalError"
        if method in ("PUT", "POST") and "configmaps" in path.split("/") and not failed["configmaps"]:
            failed["configmaps"] += 1
            return 429, "TooManyRequests"
        return None

    with real_kube.proxied(kube, tmp_path, ns) as (kubeconfig, faults):
        faults.intercept.append(intercept)
        api = api_client(str(kubeconfig))
        kube_cluster = real_kube.scope(KubeCluster(api, namespace=ns), ns)
        kube_cluster.events.retry_s = 0.0
        kube_cluster.sync()
        cloud = FakeCloud([group("dlr-us-west-2-gpu-v100x8", "us-west-2", "p3.16xlarge", max=4, labels=V100,
                                 taints=[{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}],
                                 allocatable=V100_ALLOCATABLE)], clock=Clock())  # fmt: skip
        ctl = Controller(kube_cluster, cloud, ControllerConfig(regions=["us-west-2"]), cloud.clock)
        result = ctl.run_once()
        state = kube_cluster.read_state()
        assert kube_cluster.close_events(10) == 0, "nothing left queued: each Event was tried, then given up"
        api.close()
    assert cloud.groups["dlr-us-west-2-gpu-v100x8"]["desired"] == 1
    writer = kube_cluster.events
    assert writer.dropped == {"api_error": 2}, "the pod's TriggeredScaleUp and the group's ScaledUpGroup"
    assert failed["events"] == 2 * writer.max_tries
    assert not any("event" in e for e in result.errors), "an Event write is not part of the pass"
    assert failed["configmaps"] == 1 and set(state) == {"group_state", "failures_read_until"}
    stored = json.loads(
        kube.kubectl("-n", ns, "get", "configmap", STATE_CONFIGMAP, "-o", "json", check=True).stdout
    )
    assert stored["data"] == state, "the retried write reached kube-apiserver"
