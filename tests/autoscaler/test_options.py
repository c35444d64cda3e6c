from argparse import Namespace
from pathlib import Path

import pytest

from autoscaler.options import COMMON, RUN, UsageError, namespace, parse_duration, resolve
from tests.support import load_yaml

DURATIONS = load_yaml(Path(__file__).parent / "durations.yaml")


@pytest.mark.parametrize(("text", "seconds"), DURATIONS, ids=[str(d[0]) or "empty" for d in DURATIONS])
def test_parse_duration(text, seconds):
    if seconds is None:
        with pytest.raises(ValueError, match="is not a duration"):
            parse_duration(str(text))
    else:
        assert parse_duration(str(text)) == pytest.approx(seconds)


def args(**given) -> Namespace:
    return Namespace(**{o.dest: given.get(o.dest) for o in COMMON + RUN})


def test_a_flag_wins_over_its_variable_and_the_variable_over_the_default():
    env = {"AUTOSCALER_CLUSTER_NAME": "dlr", "AUTOSCALER_REGIONS": "us-west-2,us-east-1",
           "AUTOSCALER_SCAN_INTERVAL": "30s", "AUTOSCALER_DRY_RUN": "true",
           "AUTOSCALER_WARM_POOL": "a=1,b=2"}  # fmt: skip
    opts = resolve(args(scan_interval="5s"), COMMON + RUN, environ=env)
    assert opts["scan_interval"] == 5 and opts["regions"] == ["us-west-2", "us-east-1"]
    assert opts["dry_run"] is True and opts["warm_pool"] == {"a": 1, "b": 2}
    assert opts["idle_threshold"] == 600 and opts["metrics_port"] == 8085 and opts["leader_elect"] is False
    assert opts["batch_idle"] == 1.0


def test_the_batching_window_is_a_setting_with_a_floor():
    env = {"AUTOSCALER_CLUSTER_NAME": "dlr", "AUTOSCALER_REGIONS": "us-west-2"}
    assert resolve(args(batch_idle="250ms"), COMMON + RUN, environ=env)["batch_idle"] == 0.25
    with pytest.raises(UsageError) as e:
        resolve(args(batch_idle="10ms"), COMMON + RUN, environ=env)
    assert e.value.lines == [
        "--batch-idle: '10ms' is not at least 0.05s (a burst's pods come a round trip apart)"
    ]


def test_every_problem_is_one_line():
    with pytest.raises(UsageError) as e:
        resolve(args(metrics_port="70000", max_scale_in_fraction="2"), COMMON + RUN,
                environ={"AUTOSCALER_DRY_RUN": "perhaps"})  # fmt: skip
    assert e.value.lines == [
        "--cluster-name (or AUTOSCALER_CLUSTER_NAME) is required",
        "--regions (or AUTOSCALER_REGIONS) is required",
        "--max-scale-in-fraction: 2 is not a fraction in (0, 1]",
        "AUTOSCALER_DRY_RUN: 'perhaps' is not true or false",
        "--metrics-port: 70000 is not a port (1-65535, or 0 for none)",
    ]
    assert e.value.exit_code == 2


def test_namespace():
    assert namespace("x", {"POD_NAMESPACE": "y"}) == "x"
    assert namespace(None, {"POD_NAMESPACE": "y"}) == "y"
    assert namespace(None, {}) == "research-autoscaler"


def test_the_options_of_issue_28():
    base = {"AUTOSCALER_CLUSTER_NAME": "dlr", "AUTOSCALER_REGIONS": "us-west-2"}
    opts = resolve(args(), COMMON + RUN, environ=base)
    assert opts["node_delete_delay_after_taint"] is None  # the service takes the scan interval, at least 5 s
    assert opts["unremovable_node_recheck_timeout"] == 300 and opts["new_pod_scale_up_delay"] == 0
    assert opts["confirm_scale_up_above"] == 10 and opts["aws_consistency_window"] == 30
    assert opts["takeover_write_delay"] == 15
    opts = resolve(args(confirm_scale_up_above="$25/h"), COMMON + RUN,
                   environ={**base, "AUTOSCALER_NEW_POD_SCALE_UP_DELAY": "5s"})  # fmt: skip
    assert opts["confirm_scale_up_above"] == 25 and opts["new_pod_scale_up_delay"] == 5
    assert (
        resolve(args(confirm_scale_up_above="off"), COMMON + RUN, environ=base)["confirm_scale_up_above"]
        is None
    )
    with pytest.raises(UsageError) as e:
        resolve(args(confirm_scale_up_above="-1", takeover_write_delay="soon"), COMMON + RUN, environ=base)
    assert e.value.lines == [
        "--takeover-write-delay: 'soon' is not a duration; use e.g. 10s, 10m, 1h30m",
        "--confirm-scale-up-above: '-1' is not a non-negative amount of dollars an hour (e.g. 10, or off)",
    ]
