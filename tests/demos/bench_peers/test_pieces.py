"""The benchmark's pieces that need no stack: the bursts' pods, ours' command line, the moto request counter and
the figures of a run."""

from __future__ import annotations

import json
import subprocess
import sys
import urllib.request

import boto3
import pytest

from autoscaler.cli import build_parser
from clusterspec.loader import load_spec
from demos.bench_peers.measure import NodeSeen, Watcher, figures
from demos.bench_peers.run import autoscaler_argv, bench_spec, peers, peers_for, verdict
from demos.bench_peers.scenarios import bursts
from tests.support import ROOT


@pytest.fixture(scope="module")
def spec():
    return load_spec(str(ROOT / "cluster.yaml"))


def test_the_bursts_pods_have_no_owner_the_garbage_collector_would_miss(spec) -> None:
    by_name = {b.name: b for b in bursts()}
    sweep = by_name["demo-320"].pods()
    assert (
        len(sweep) == 24 + 8 * 2
        and sum(int(p["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"]) for p in sweep)
        == 320
    )
    assert all("ownerReferences" not in p["metadata"] and "status" not in p for p in sweep)
    assert len(by_name["burst-2000"].pods()) == 2000
    gang = by_name["gang-16x8"].pods()
    assert len(gang) == 16 and {p["metadata"]["labels"]["batch.kubernetes.io/job-name"] for p in gang} == {
        "gang"
    }
    assert by_name["demo-60"].limits(spec) == {
        ("us-west-2", "p3.16xlarge"): 2,
        ("us-west-2", "p4d.24xlarge"): 0,
    }
    assert by_name["burst-2000"].limits(spec) == {}
    with pytest.raises(ValueError, match="unknown"):
        bursts(small=True, only=["demo-320"])


def test_the_other_regions_karpenters_run_only_where_the_first_region_runs_short(spec) -> None:
    who = peers(spec, small=False)
    assert who == [
        "ours",
        "karpenter-us-west-2",
        "karpenter-us-east-1",
        "karpenter-us-east-2",
        "karpenter-ideal",
    ]
    by_name = {b.name: b for b in bursts()}
    assert peers_for(by_name["demo-320"], who, spec) == who
    for name in ("burst-2000", "gang-16x8", "delete-2s"):
        assert peers_for(by_name[name], who, spec) == ["ours", "karpenter-us-west-2", "karpenter-ideal"]


def test_ours_runs_as_deployed_with_the_simulators_configuration(spec, tmp_path) -> None:
    """The real ``autoscaler run`` gets the arguments ``invoke up`` deploys (spare GPUs, warm pools) from the spec
    the simulator's ``batch`` replays: one configuration on both sides of the check."""
    bench = bench_spec(spec, idle_s=30)
    assert (bench.autoscaler.scan_interval_s, bench.autoscaler.idle_threshold_s) == (2, 30)
    assert bench.autoscaler.spare_gpus == spec.autoscaler.spare_gpus == 8
    argv = autoscaler_argv(bench, tmp_path / "kubeconfig", "http://127.0.0.1:1")
    assert argv[1:4] == ["-m", "autoscaler", "run"]
    assert "--spare-gpus=8" in argv and "--scan-interval=2s" in argv and "--idle-threshold=30s" in argv
    warm = [a for a in argv if a.startswith("--warm-pool=")]
    assert warm and all(a.endswith("=1") for a in warm)
    assert "--leader-elect" not in argv and argv.count("--metrics-port") == 1
    assert "--metrics-port=8085" not in argv
    args = build_parser().parse_args(argv[3:])  # the real command line takes every argument
    assert (args.spare_gpus, args.metrics_port) == ("8", "0")  # strings, as run converts them


def test_the_moto_server_counts_requests_by_access_key() -> None:
    proc = subprocess.Popen([sys.executable, "-m", "demos.bench_peers.aws", "--limit=us-west-2/p3.16xlarge=1"],
                            cwd=ROOT, stdout=subprocess.PIPE, text=True)  # fmt: skip
    try:
        url = json.loads(proc.stdout.readline())["url"]
        for key, n in (("demo", 2), ("bench-agent", 1)):
            asg = boto3.Session(aws_access_key_id=key, aws_secret_access_key=key).client(
                "autoscaling", region_name="us-west-2", endpoint_url=url
            )
            for _ in range(n):
                asg.describe_auto_scaling_groups()
        with urllib.request.urlopen(f"{url}/_bench/calls", timeout=5) as r:
            calls = json.loads(r.read())
        assert calls == {"demo autoscaling DescribeAutoScalingGroups": 2,
                         "bench-agent autoscaling DescribeAutoScalingGroups": 1}  # fmt: skip
    finally:
        proc.terminate()
        proc.wait(10)


def test_figures_count_bought_nodes_never_run_pods_and_partial_gangs() -> None:
    w = Watcher(core=None)
    w.baseline = {"cpu-0"}
    w.nodes = {"cpu-0": NodeSeen(0, 9, "m6i.2xlarge", "us-west-2a"),
               "n1": NodeSeen(1, 9, "p3.16xlarge", "us-east-1a"),
               "n2": NodeSeen(1, 5, "p3.16xlarge", "us-east-1b", gone=True)}  # fmt: skip
    w.samples = [(1.0, 3, 0, 2, 48.96), (2.0, 1, 2, 1, 24.48)]
    w.jobs = {"g-0": "g", "g-1": "g", "solo": "solo"}
    w.running_at = {"g-0": 2.0, "solo": 2.0}
    row = figures(w, ["g-0", "g-1", "solo"], None, 1, {"g-0", "solo"})
    assert row["nodes_bought"] == 2 and row["peak_cost_per_h"] == 48.96
    assert row["pods_never_run"] == 1 and row["partial_gangs"] == 1 and row["all_running_s"] is None
    assert row["bought_by_type"] == {"p3.16xlarge@us-east-1": 2}
    # g-1 started only on the GPUs the benchmark's deletion freed: it never ran by the autoscaler's doing
    w.running_at["g-1"] = 9.0
    assert (
        figures(w, ["g-0", "g-1", "solo"], None, 1, {"g-0", "solo"}, ran={"g-0", "solo"})["pods_never_run"]
        == 1
    )


def test_a_pod_bound_to_a_node_that_never_ran_it_is_the_node_agents_not_the_autoscalers() -> None:
    """CI once saw kwok never run a pod kube-scheduler had bound to a Ready node ours bought: a warning that names
    it; a pod never bound (no capacity brought) fails the small run."""
    w = Watcher(core=None)
    w.nodes = {"n1": NodeSeen(1, 9, "g4dn.xlarge", "us-west-2a")}
    w.samples = [(1.0, 2, 0, 1, 0.5)]
    w.running_at = {"a": 2.0}
    row = figures(w, ["a", "b", "c"], None, 1, {"a"}, bound_at_end={"a": "n1", "b": "n1"})
    assert (row["pods_never_run"], row["pods_bound_never_ran"]) == (2, {"b": "n1"})
    warnings, failures = verdict([{"peer": "ours", "scenario": "demo-60", **row}], set())
    assert warnings == ["demo-60: 1 pod(s) bound to a node that never ran them (the node agent's, kwok's, not the "
                        "autoscaler's): b on n1"]  # fmt: skip
    assert failures == ["demo-60: ours left 1 pods never Running"]  # c: never bound
    w.running_at["c"] = 3.0
    row = figures(w, ["a", "b", "c"], None, 1, {"a", "c"}, bound_at_end={"a": "n1", "b": "n1", "c": "n1"})
    assert verdict([{"peer": "ours", "scenario": "demo-60", **row}], set())[1] == []
    # a peer's rows, and a scenario whose pods are deleted early, are never ours to fail
    assert verdict([{"peer": "karpenter", "scenario": "demo-60", "pods_never_run": 5}], set()) == ([], [])
    assert verdict([{"peer": "ours", "scenario": "delete-2s", "pods_never_run": 5}], {"delete-2s"}) == (
        [],
        [],
    )


def test_one_table_from_several_runs_in_the_benchmarks_order(tmp_path) -> None:
    import os

    from demos.bench_peers.table import main, rows_under

    def write(folder: str, scenario: str, peer: str, nodes: int, mtime: float) -> None:
        path = tmp_path / folder / scenario / peer / "row.json"
        path.parent.mkdir(parents=True)
        path.write_text(json.dumps({"scenario": scenario, "peer": peer, "nodes_bought": nodes}))
        os.utime(path, (mtime, mtime))

    write("a", "gang-16x8", "ours", 16, 1)
    write("a", "demo-60", "karpenter-ideal", 21, 1)
    write("b", "demo-60", "ours", 19, 2)
    write("b", "demo-60", "karpenter-ideal", 22, 2)  # a later run of the same pair
    order = ["ours", "karpenter-us-west-2", "karpenter-ideal"]
    rows = rows_under([tmp_path / "a", tmp_path / "b"], order)
    assert [(r["scenario"], r["peer"], r["nodes_bought"]) for r in rows] == [
        ("demo-60", "ours", 19), ("demo-60", "karpenter-ideal", 22), ("gang-16x8", "ours", 16)
    ]  # fmt: skip
    assert main([str(tmp_path / "nowhere")]) == 2


def test_the_simulators_counts_are_kept_per_burst_and_policy(spec, tmp_path) -> None:
    from demos.bench_peers import sim_check

    demo_1 = next(b for b in bursts() if b.name == "demo-1")
    assert sim_check.simulated(demo_1, spec, "karpenter-primary", tmp_path, compute=False) is None
    kept = sim_check.simulated(demo_1, spec, "karpenter-primary", tmp_path)
    assert (kept["nodes_bought"], kept["pods_never_run"]) == (1, 0)
    assert sim_check.simulated(demo_1, spec, "karpenter-primary", tmp_path, compute=False) == kept
    other = spec.model_copy(
        update={"autoscaler": spec.autoscaler.model_copy(update={"idle_threshold_s": 31})}
    )
    assert sim_check.simulated(demo_1, other, "karpenter-primary", tmp_path, compute=False) is None
