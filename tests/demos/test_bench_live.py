"""``invoke bench-live`` on the real control plane (demos/bench_live.py): the objects it writes are ones the real API
server accepts and kwok takes (the run itself: `make bench-live-small`, in CI), its figures are computed right."""

from __future__ import annotations

import random

import pytest

from demos import bench_live
from localcluster.stack import KWOK_LABEL, _override


def test_a_node_is_one_kwok_takes_and_no_group_manages() -> None:
    node = bench_live.node_body(7)
    assert node["metadata"]["name"] == "static-00007"
    assert node["metadata"]["labels"][KWOK_LABEL] == "fake"  # the stack's kwok manages nodes by this label
    assert "research.cluster/node-group" not in node["metadata"]["labels"]
    assert node["status"]["allocatable"]["pods"] and node["status"]["capacity"]["cpu"] == "32"


def test_a_pod_carries_nothing_the_server_sets_and_no_owner_the_garbage_collector_would_miss() -> None:
    pod = bench_live.pod_body("run-1", {"cpu": "1"}, 1, random.Random(1), node_name="static-00001")
    meta = pod["metadata"]
    for key in bench_live.SERVER_SET:
        assert key not in meta, key
    assert "status" not in pod
    assert pod["spec"]["nodeName"] == "static-00001"
    pending = bench_live.pod_body("decide-0", {"nvidia.com/gpu": "8"}, 0, random.Random(1), gpu=True)
    assert "nodeName" not in pending["spec"]
    claims = [
        v["persistentVolumeClaim"]["claimName"]
        for v in pod["spec"]["volumes"]
        if "persistentVolumeClaim" in v
    ]
    claim, volume = bench_live.claim_and_volume()
    assert claims == [claim["metadata"]["name"]]
    assert volume["spec"]["claimRef"]["name"] == claim["metadata"]["name"] == "research-data"
    assert (
        "uid" not in volume["spec"]["claimRef"]
    )  # the PV controller binds it (a made-up uid would not match)


@pytest.mark.parametrize(
    ("values", "q", "expected"), [([1.0], 0.95, 1.0), ([1, 2, 3, 4, 5], 0.5, 3), ([1, 2, 3, 4, 5], 0.95, 5)]
)
def test_quantiles_are_nearest_rank(values, q, expected) -> None:
    assert bench_live._quantile(sorted(values), q) == expected


def test_a_flag_override_replaces_kubeadms_value_or_is_added() -> None:
    argv = ["kube-controller-manager", "--node-monitor-grace-period=40s", "--v=2"]
    out = _override(argv, {"node-monitor-grace-period": "15m", "kube-api-qps": "100"})
    assert out == [
        "kube-controller-manager",
        "--v=2",
        "--node-monitor-grace-period=15m",
        "--kube-api-qps=100",
    ]


def test_each_batch_idle_setting_is_a_row_of_one_report() -> None:
    """Both ends of --batch-idle from one loaded cluster: one row and one target line per setting."""
    from dataclasses import asdict

    runs = []
    for idle, lat in (("1s (default)", [1.1, 1.0, 1.2]), ("250ms", [0.3, 0.4, 0.35])):
        r = bench_live.Result(load_s={"nodes": 1.0, "pods": 2.0, "ready": 3.0, "running_pods": 500},
                              latencies_s=lat, rss_mib=[(1, 100.0), (5, 120.0)],
                              control_plane_mib={"loaded": {"etcd": 60}, "end": {"etcd": 70}})  # fmt: skip
        runs.append({"batch_idle": idle, **r.summary()})
    opts = bench_live.Options(batch_idle=(None, "250ms"))
    text = bench_live.report({"options": asdict(opts), "run": runs[0], "runs": runs})
    rows = [line for line in text.splitlines() if line.startswith("| 1s") or line.startswith("| 250ms")]
    assert [row.split(" | ")[1] for row in rows] == ["1.1", "0.35"]
    assert "settings (batch idle, and what else was given): 1s (default), 250ms" in text
    assert "(1.1 s: MISSES)" in text and "(0.35 s: meets)" in text


@pytest.mark.parametrize("value", ["1s,10ms", "1s,,250ms", "abc"])
def test_a_bad_batch_idle_is_refused_before_the_loading(value, capsys) -> None:
    with pytest.raises(SystemExit) as e:
        bench_live.main(["--batch-idle", value])
    assert e.value.code == 2 and "--batch-idle" in capsys.readouterr().err


def test_the_pass_and_its_phases_are_averaged_from_metrics_text() -> None:
    from demos.bench_live import pass_means

    text = "\n".join([
        "# HELP autoscaler_loop_duration_seconds x",
        "autoscaler_loop_duration_seconds_sum 3.0",
        "autoscaler_loop_duration_seconds_count 4.0",
        'autoscaler_pass_phase_seconds_sum{phase="aws"} 1.0',
        'autoscaler_pass_phase_seconds_count{phase="aws"} 4.0',
        'autoscaler_pass_phase_seconds_sum{phase="confirm"} 0.0',
        'autoscaler_pass_phase_seconds_count{phase="confirm"} 0.0',
        "autoscaler_pass_cpu_seconds_sum 1.0",
        "autoscaler_pass_cpu_seconds_count 4.0",
    ])  # fmt: skip
    assert pass_means(text) == (0.75, {"aws": 0.25}, 0.25)
    assert pass_means("") == (None, {}, None)


def test_a_sample_waits_for_its_own_bursts_events_not_an_earlier_ones() -> None:
    """The Events of an earlier burst may still be coming when the next burst is made: each is told apart by its
    pod's name, so the sample's pod comes once the controller planned its own burst."""
    from types import SimpleNamespace

    from demos.bench_live import _burst_of

    assert _burst_of(SimpleNamespace(involved_object=SimpleNamespace(name="burst-1-3-499"))) == "burst-1-3"
    assert _burst_of(SimpleNamespace(involved_object=SimpleNamespace(name="burst-4-0"))) == "burst-4"
    assert _burst_of(SimpleNamespace(involved_object=None)) == ""


def test_each_lone_pod_idle_is_a_controller_of_its_own_and_a_named_row() -> None:
    opts = bench_live.Options(lone_pod_idle=(None, "1s"))
    assert bench_live.settings(opts) == [(None, None, None), (None, "1s", None)]
    assert bench_live.setting_label(opts, None, "1s") == "1s (default), lone pod 1s"
    assert bench_live.setting_label(bench_live.Options(), "250ms", None) == "250ms"


def test_each_scan_interval_is_a_controller_of_its_own_and_a_named_row() -> None:
    opts = bench_live.Options(scan_interval=(None, "1s"), lone_pod_idle=("100ms", "1s"))
    assert bench_live.settings(opts) == [
        (None, "100ms", None), (None, "1s", None), (None, "100ms", "1s"), (None, "1s", "1s")
    ]  # fmt: skip
    assert bench_live.setting_label(opts, None, "100ms", "1s") == "1s (default), lone pod 100ms, scan 1s"
    assert (
        bench_live.setting_label(opts, None, "100ms", None)
        == "1s (default), lone pod 100ms, scan 10s (default)"
    )


def test_a_scan_interval_below_the_autoscalers_floor_is_refused_before_the_loading(capsys) -> None:
    with pytest.raises(SystemExit) as e:
        bench_live.main(["--scan-interval", "10s,500ms"])
    assert e.value.code == 2 and "--scan-interval" in capsys.readouterr().err


def test_a_bad_lone_pod_idle_is_refused_before_the_loading(capsys) -> None:
    with pytest.raises(SystemExit) as e:
        bench_live.main(["--lone-pod-idle", "100ms,soon"])
    assert e.value.code == 2 and "--lone-pod-idle" in capsys.readouterr().err


def test_without_the_setting_flags_each_is_the_autoscalers_default(monkeypatch, tmp_path) -> None:
    seen = []

    def run(opts, out, progress):
        seen.append(opts)
        raise ValueError("stopped here")

    monkeypatch.setattr(bench_live, "run", run)
    assert bench_live.main(["--nodes", "1", "--pods", "1", "--out", str(tmp_path)]) == 2
    assert (
        seen[0].batch_idle == (None,)
        and seen[0].lone_pod_idle == (None,)
        and seen[0].scan_interval == (None,)
    )
    assert bench_live.settings(seen[0]) == [(None, None, None)]
