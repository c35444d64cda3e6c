"""``autoscaler run`` and ``autoscaler snapshot`` end to end: the run's shared real control plane (Kubernetes; the
autoscaler's caches pointed at the test's own namespace and nodes) and a moto server (AWS)."""

from __future__ import annotations

import json
import logging
import os

import pytest

from autoscaler.cli import main
from clusterspec.loader import load_spec
from tests.autoscaler import real_kube
from tests.autoscaler.aws_setup import SESSION, create_groups
from tests.autoscaler.moto_fixtures import _moto_server, moto_url  # noqa: F401 - fixtures

REGIONS = "us-west-2,us-east-1,us-east-2"
V100 = {"research.cluster/gpu-model": "v100"}


@pytest.fixture(autouse=True)
def _keep_logging():
    root = logging.getLogger()
    saved = root.handlers[:], root.level
    yield
    root.handlers[:] = saved[0]
    root.setLevel(saved[1])


@pytest.fixture
def live(moto_url, tmp_path, kube, monkeypatch):  # noqa: F811
    """Two pending 8-GPU pods for V100 nodes in a namespace of the test's own, the autoscaler's caches scoped to it,
    and its Kubernetes traffic through a recording proxy: (faults, kubeconfig, moto's URL, namespace)."""
    create_groups(load_spec(), moto_url)
    ns = kube.namespace("run")
    real_kube.create(kube, *(real_kube.pod(f"train-{i}", ns, gpus=8, selector=V100) for i in range(2)))
    monkeypatch.setattr("autoscaler.service.KubeCluster", real_kube.scoped_class(ns))
    with real_kube.proxied(kube, tmp_path, ns) as (kubeconfig, faults):
        yield faults, str(kubeconfig), moto_url, ns


def desired(url: str) -> dict[str, int]:
    out = {}
    for region in REGIONS.split(","):
        asg = SESSION.client("autoscaling", region_name=region, endpoint_url=url)
        for g in asg.describe_auto_scaling_groups()["AutoScalingGroups"]:
            out[g["AutoScalingGroupName"]] = g["DesiredCapacity"]
    return out


def test_once_dry_run_prints_the_plan_and_changes_nothing(live, capsys):
    faults, kubeconfig, url, ns = live
    before = desired(url)
    code = main(["run", "--cluster-name", "dlr", "--regions", REGIONS, "--kubeconfig", kubeconfig, "--namespace", ns,
                 "--aws-endpoint-url", url, "--once", "--dry-run", "--metrics-port", "0"])  # fmt: skip
    out = json.loads(capsys.readouterr().out)
    assert code == 0 and out["dry_run"] is True and out["errors"] == []
    assert out["plan"]["scale_up"] == {"dlr-us-west-2-gpu-v100x8": 2}
    assert {"action": "set_desired", "group": "dlr-us-west-2-gpu-v100x8", "from": 0, "desired": 2,
            "dry_run": True} in out["actions"]  # fmt: skip
    assert desired(url) == before
    methods = {r.method for r in faults.requests}
    assert methods == {"GET"}, "the dry run only read from Kubernetes"


def test_once_acts_and_snapshot_replays(live, capsys, tmp_path, kube):
    _, kubeconfig, url, ns = live
    common = [
        "--cluster-name",
        "dlr",
        "--regions",
        REGIONS,
        "--kubeconfig",
        kubeconfig,
        "--aws-endpoint-url",
        url,
        "--namespace",  # its state and status ConfigMaps in the test's own namespace
        ns,
    ]
    assert main(["run", *common, "--once", "--metrics-port", "0"]) == 0
    capsys.readouterr()
    assert desired(url)["dlr-us-west-2-gpu-v100x8"] == 2
    # the Event writer flushed before the command returned
    assert "TriggeredScaleUp" in {e["reason"] for e in real_kube.events_for(kube, ns, "train-1")}
    assert main(["snapshot", *common]) == 0
    snap = json.loads(capsys.readouterr().out)
    assert {"pods", "nodes", "groups", "regions", "now", "scaling_failures", "group_state"} <= set(snap)
    assert len(snap["groups"]) == 15 and snap["regions"] == REGIONS.split(",")
    path = tmp_path / "snapshot.json"
    path.write_text(json.dumps(snap))
    assert main(["plan", str(path), "--json"]) == 0
    replay = json.loads(capsys.readouterr().out)
    assert replay["scale_up"] == {}, "the replayed pass sees the 2 nodes already requested"


@pytest.mark.parametrize(
    ("argv", "env", "line"),
    [
        (["run", "--regions", "us-west-2"], {}, "--cluster-name (or AUTOSCALER_CLUSTER_NAME) is required"),
        (["run", "--cluster-name", "dlr", "--regions", "us-west-2", "--scan-interval", "10x"], {},
         "--scan-interval: '10x' is not a duration; use e.g. 10s, 10m, 1h30m"),
        (["run", "--cluster-name", "dlr"], {"AUTOSCALER_REGIONS": "mars-1"},
         "AUTOSCALER_REGIONS: 'mars-1' is not a comma-separated list of AWS regions such as us-west-2,us-east-1"),
        (["run", "--cluster-name", "dlr", "--regions", "us-west-2", "--warm-pool", "gpu"], {},
         "--warm-pool: 'gpu' is not GROUP=N (e.g. dlr-us-west-2-gpu-t4=1)"),
        (["run", "--cluster-name", "dlr", "--regions", "us-west-2", "--kubeconfig", "/nonexistent"], {},
         "cannot load the kubeconfig /nonexistent: Invalid kube-config file. No configuration found."),
        (["snapshot", "--cluster-name", "Bad_Name", "--regions", "us-west-2"], {},
         "--cluster-name: 'Bad_Name' is not a cluster name (lowercase letters, digits and '-')"),
        (["run", "--cluster-name", "dlr", "--regions", "us-west-2", "--boot-timeout", "0"], {},
         "--boot-timeout: '0' is not at least 60s (a GPU instance takes minutes to boot and join; less terminates "
         "every new one)"),
        (["run", "--cluster-name", "dlr", "--regions", "us-west-2", "--scan-interval", "0"], {},
         "--scan-interval: '0' is not at least 1s (each pass reads every region's groups; less floods the AWS API)"),
        (["run", "--cluster-name", "dlr", "--regions", "us-west-2,us-mars-1"], {},
         "--regions: us-mars-1 is not a known AWS region (e.g. us-west-2, us-east-1, eu-west-1)"),
        (["run", "--cluster-name", "dlr", "--regions", "us-west-2", "--namespace", "Research_Autoscaler"], {},
         "--namespace: 'Research_Autoscaler' is not a namespace name (lowercase letters, digits and '-', at most 63)"),
    ],
)  # fmt: skip
def test_bad_options_are_one_line_and_exit_2(argv, env, line, capsys, monkeypatch):
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    assert main(argv) == 2
    assert capsys.readouterr().err.splitlines() == [line]


def test_a_kubeconfig_that_is_a_yaml_list_is_one_line(tmp_path, capsys):
    path = tmp_path / "kc"
    path.write_text("- clusters: []\n- users: []\n")
    assert (
        main(["run", "--cluster-name", "dlr", "--regions", "us-west-2", "--kubeconfig", str(path), "--once"])
        == 2
    )
    [line] = capsys.readouterr().err.splitlines()
    assert line.startswith(f"cannot load the kubeconfig {path}: ")


def test_once_exits_1_when_aws_cannot_be_read(live, capsys, monkeypatch):
    from autoscaler.adapters.aws import AwsCloud

    # two attempts, not the eight a live pass makes against a refused connection (about 11 s of back-off)
    monkeypatch.setitem(AwsCloud.__init__.__kwdefaults__, "max_attempts", 2)
    _, kubeconfig, _, _ = live
    code = main(["run", "--cluster-name", "dlr", "--regions", REGIONS, "--kubeconfig", kubeconfig, "--once",
                 "--dry-run", "--metrics-port", "0", "--aws-endpoint-url", "http://127.0.0.1:9"])  # fmt: skip
    out = json.loads(capsys.readouterr().out)
    assert code == 1
    assert "AWS us-west-2: groups or scaling activities could not be read" in out["errors"]


def test_an_unreachable_api_is_one_line_and_exit_1(tmp_path, capsys):
    import yaml

    kubeconfig = tmp_path / "kc"
    kubeconfig.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "c",
        "clusters": [{"name": "c", "cluster": {"server": "http://127.0.0.1:9"}}],
        "users": [{"name": "u", "user": {}}], "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
    }))  # fmt: skip
    code = main(["run", "--cluster-name", "dlr", "--regions", "us-west-2", "--kubeconfig", str(kubeconfig),
                 "--once", "--metrics-port", "0"])  # fmt: skip
    assert code == 1
    [line] = capsys.readouterr().err.splitlines()
    assert line.startswith("cannot list from the Kubernetes API at http://127.0.0.1:9: ")


def test_a_cluster_name_that_tags_no_group_is_one_line_and_exit_2(live, capsys):
    """A typo in --cluster-name found no group and exited 0 silently (issue 37)."""
    _, kubeconfig, url, _ = live
    code = main(["run", "--cluster-name", "dlrx", "--regions", REGIONS, "--kubeconfig", kubeconfig,
                 "--aws-endpoint-url", url, "--once", "--dry-run", "--metrics-port", "0"])  # fmt: skip
    out, err = capsys.readouterr()
    assert code == 2 and out == ""
    assert err == ("--cluster-name dlrx: no Auto Scaling group in us-west-2, us-east-1, us-east-2 is tagged "
                   "k8s.io/cluster-autoscaler/dlrx and k8s.io/cluster-autoscaler/enabled=true; give the spec's name "
                   "(cluster.yaml: name) and the regions its groups are in\n")  # fmt: skip


def test_the_live_process_with_a_cluster_name_that_tags_no_group_exits_2(live):
    """`autoscaler run` without --once ran on with no group to scale, silently (issue 37): the same one line."""
    import subprocess
    import sys

    _, kubeconfig, url, _ = live
    done = subprocess.run([sys.executable, "-m", "autoscaler", "run", "--cluster-name", "dlrx", "--regions", REGIONS,
                           "--kubeconfig", kubeconfig, "--aws-endpoint-url", url, "--metrics-port", "0"],
                          capture_output=True, text=True, timeout=120,
                          env={**os.environ, "AWS_ACCESS_KEY_ID": "x", "AWS_SECRET_ACCESS_KEY": "x"})  # fmt: skip
    assert done.returncode == 2, done.stderr[-2000:]
    assert done.stderr.splitlines() == [
        "--cluster-name dlrx: no Auto Scaling group in us-west-2, us-east-1, us-east-2 is tagged "
        "k8s.io/cluster-autoscaler/dlrx and k8s.io/cluster-autoscaler/enabled=true; give the spec's name "
        "(cluster.yaml: name) and the regions its groups are in"
    ]
