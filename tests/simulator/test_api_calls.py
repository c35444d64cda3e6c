"""AWS calls per region: the simulator's count for our controller against what autoscaler/adapters/aws.py really
sends (counted by botocore's before-call hook on moto), and the periodic reads the simulator adds at the end."""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime

import boto3
from moto import mock_aws

from autoscaler.adapters.aws import AwsCloud
from clusterspec.loader import load_spec
from simulator.api_calls import CountingCloud
from simulator.model.adapters import ModelCloud
from simulator.model.clock import VirtualClock
from simulator.model.cluster_model import ClusterModel
from simulator.model.spec_groups import groups_from_spec
from tests.autoscaler.aws_setup import create_groups


def _counting(spec, mode: str = "live") -> tuple[CountingCloud, VirtualClock]:
    clock = VirtualClock(start=0.0)
    model = ClusterModel(clock, groups_from_spec(spec.model_dump(mode="json")))
    mixed = frozenset(
        spec.asg_name(r.name, g) for r in spec.regions for g in r.node_groups if len(g.instance_types) > 1
    )
    return CountingCloud(ModelCloud(model), clock.now, mode, mixed), clock


def _real_loop_calls(spec, loops: int) -> dict[str, Counter]:
    calls: dict[str, Counter] = {}

    with mock_aws():
        create_groups(spec)
        session = boto3.Session(region_name="us-west-2")
        cloud = AwsCloud(spec.name, list(spec.spill_over_order), session=session)
        for region in spec.spill_over_order:  # count every request each client sends, per region
            for service in ("autoscaling", "ec2"):
                client = cloud.client(service, region)
                client.meta.events.register(
                    "before-call",
                    lambda model, params, _r=region, **kw: calls.setdefault(_r, Counter()).update(
                        [model.name]
                    ),
                )
        for _ in range(loops):
            cloud.list_groups()
            cloud.scaling_failures(datetime.now(UTC))
    return calls


def test_one_and_two_loops_count_the_calls_the_live_adapter_makes():
    spec = load_spec()
    for loops in (1, 2):
        real = _real_loop_calls(spec, loops)
        sim, _ = _counting(spec)
        for _ in range(loops):
            sim.list_groups()
            sim.scaling_failures(datetime.now(UTC))
        assert {r: dict(c) for r, c in sorted(sim.calls.items())} == {
            r: dict(c) for r, c in sorted(real.items())
        }


def test_skipped_loops_add_their_reads_and_templates_are_reread_every_five_minutes():
    spec = load_spec()
    sim, clock = _counting(spec)
    sim.list_groups()
    sim.scaling_failures(datetime.now(UTC))
    before = {r: Counter(c) for r, c in sim.calls.items()}
    sim.finish(clock.now() + 600, 10.0)  # 61 loop slots in 600 s, one of them ran
    for region in spec.spill_over_order:
        added = sim.calls[region] - before[region]
        assert added["DescribeAutoScalingGroups"] == added["DescribeScalingActivities"] == 60
        single = sum(1 for g in spec.region(region).node_groups if len(g.instance_types) == 1)
        assert added["DescribeLaunchTemplateVersions"] == 2 * single  # re-read at 300 s and 600 s


def test_cluster_autoscaler_reads_once_a_minute_and_target_tracking_publishes_once_a_minute():
    spec = load_spec()
    ca, clock = _counting(spec, "cluster-autoscaler")
    for t in range(0, 120, 10):
        clock.set(float(t))
        ca.list_groups()
    assert ca.by_operation() == {"DescribeAutoScalingGroups": 2 * 2 * 3}  # refreshes at 0 and 60 s, 3 regions
    ca.finish(clock.now() + 600 - 110, 10.0)  # 600 s in all: 11 refreshes, 2 of them made
    assert ca.by_operation() == {"DescribeAutoScalingGroups": 11 * 2 * 3}
    tt, clock = _counting(spec, "aws")
    tt.list_groups()
    tt.set_desired(
        spec.asg_name("us-west-2", spec.region("us-west-2").node_groups[1]), 2
    )  # the service's own
    tt.finish(clock.now() + 3600, 10.0, ("us-west-2",))
    assert tt.by_region() == {"us-west-2": 61}  # PutMetricData each minute; scaling itself is inside AWS


def test_each_cluster_autoscaler_process_reads_only_the_regions_it_manages():
    from simulator.policies.view import RegionCloud

    spec = load_spec()
    ca, clock = _counting(spec, "cluster-autoscaler")
    primary = RegionCloud(ca, ["us-west-2"])
    for t in range(0, 120, 10):
        clock.set(float(t))
        assert {g["region"] for g in primary.list_groups()} == {"us-west-2"}
    assert ca.by_region() == {"us-west-2": 2 * 2}  # refreshes at 0 and 60 s, in its region only
    ca.finish(clock.now() + 600 - 110, 10.0)
    assert ca.by_region() == {"us-west-2": 11 * 2}, "no process reads us-east-1 or us-east-2"
    regional, clock = _counting(spec, "cluster-autoscaler")
    processes = [RegionCloud(regional, [r]) for r in spec.spill_over_order]
    for t in (0, 30, 60):
        clock.set(float(t))
        for p in processes:
            p.list_groups()
    assert regional.by_region() == {r: 2 * 2 for r in spec.spill_over_order}
