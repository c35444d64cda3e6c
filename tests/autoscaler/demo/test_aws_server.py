"""The demo's capacity failure is on the AWS side of the wire: the unmodified AWS adapter sees it as AWS shows it."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta

import pytest

from autoscaler.adapters.aws import AwsCloud
from autoscaler.demo import aws_server
from autoscaler.demo.bootstrap import create_groups
from autoscaler.demo.run import capacity_limits
from clusterspec.loader import load_spec
from tests.autoscaler.moto_fixtures import reset


@pytest.fixture
def limited_moto():
    spec = load_spec()
    aws_server.install(capacity_limits(spec))
    server = aws_server.serve(0)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:  # moto's backends are per process: start empty whatever other tests left in them
        yield spec, reset(f"http://127.0.0.1:{server.server_port}")
    finally:
        server.shutdown()
        thread.join(5)
        aws_server.uninstall()


def test_first_region_runs_out_of_its_8_gpu_types():
    limits = capacity_limits(load_spec())
    assert limits == {("us-west-2", "p3.16xlarge"): 2, ("us-west-2", "p4d.24xlarge"): 0}


def test_a_launch_beyond_capacity_is_a_failed_activity_the_adapter_classifies(limited_moto):
    spec, url = limited_moto
    names = create_groups(spec, url, ["us-west-2"])
    assert "dlr-us-west-2-gpu-v100x8" in names
    cloud = AwsCloud("dlr", ["us-west-2"], endpoint_url=url)
    before = datetime.now(UTC) - timedelta(seconds=1)
    groups = {g["name"]: g for g in cloud.list_groups()}
    assert groups["dlr-us-west-2-gpu-v100x8"]["priority"] == 10
    cloud.set_desired("dlr-us-west-2-gpu-v100x8", 5)
    cloud.set_desired("dlr-us-west-2-gpu-t4", 3)  # no limit on this type
    groups = {g["name"]: g for g in cloud.list_groups()}
    assert groups["dlr-us-west-2-gpu-v100x8"]["desired"] == 5  # AWS keeps the desired capacity
    assert len(groups["dlr-us-west-2-gpu-v100x8"]["instances"]) == 2
    assert len(groups["dlr-us-west-2-gpu-t4"]["instances"]) == 3
    (failure,) = cloud.scaling_failures(before)
    assert failure["group"] == "dlr-us-west-2-gpu-v100x8"
    assert failure["reason"] == "insufficient-capacity"
    assert failure["missing"] == 3


def test_bad_limit_is_one_line():
    with pytest.raises(ValueError, match=r"expected REGION/INSTANCE-TYPE=N"):
        aws_server.parse_limit("us-west-2=3")
