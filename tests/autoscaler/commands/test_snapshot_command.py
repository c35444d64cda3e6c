"""`autoscaler snapshot` as the README writes it (issue 16): it used to need --cluster-name and --regions, and a
failed `> snapshot.json` left an empty file behind. Now the name and regions come from the spec or the pod's
environment, `--out` writes atomically, and a failure leaves no file."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from clusterspec.loader import load_spec
from tests.autoscaler.aws_setup import create_groups
from tests.autoscaler.moto_fixtures import _moto_server, moto_url  # noqa: F401 - fixtures
from tests.support import ROOT

AUTOSCALER = str(Path(sys.executable).parent / "autoscaler")


def clean_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AUTOSCALER_")}
    return {**env, "AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing", **extra}


def test_name_and_regions_come_from_the_spec_in_the_current_directory(moto_url, tmp_path, kube):  # noqa: F811
    """Against the real API server (the run's shared control plane), with a pending pod of this test's own in the
    snapshot."""
    create_groups(load_spec(), moto_url, regions=["us-west-2"])
    ns = kube.namespace("snapshot")
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "waits", "namespace": ns},
           "spec": {"nodeSelector": {"snapshot-test": ns},  # no node has it: pending
                    "containers": [{"name": "main", "image": "busybox"}]}}  # fmt: skip
    kube.kubectl("create", "-f", "-", input=json.dumps(pod), check=True)
    out = tmp_path / "snapshot.json"
    done = subprocess.run(
        [AUTOSCALER, "snapshot", "--kubeconfig", str(kube.admin_kubeconfig), "--aws-endpoint-url", moto_url,
         "--out", str(out)],
        cwd=ROOT, env=clean_env(), capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    snapshot = json.loads(out.read_text())
    regions = {g["region"] for g in snapshot["groups"]}
    assert regions == {"us-west-2"} and all(g["name"].startswith("dlr-") for g in snapshot["groups"])
    [mine] = [p for p in snapshot["pods"] if p["metadata"].get("namespace") == ns]
    assert mine["metadata"]["name"] == "waits" and not mine["spec"].get("nodeName")
    assert done.stdout.startswith(f"wrote {out}:")
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".snapshot.json.")] == []  # no temp left


def test_without_spec_flags_or_environment_it_says_what_to_give(tmp_path):
    done = subprocess.run(
        [AUTOSCALER, "snapshot", "--out", str(tmp_path / "s.json")],
        cwd=tmp_path, env=clean_env(), capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 2
    assert done.stderr.splitlines() == [
        "--cluster-name (or AUTOSCALER_CLUSTER_NAME) is required",
        "--regions (or AUTOSCALER_REGIONS) is required",
        "  (or run it where cluster.yaml is, or name the spec with --spec PATH)",
    ]
    assert not (tmp_path / "s.json").exists()


def test_a_failed_snapshot_redirected_by_the_shell_leaves_no_empty_file(tmp_path):
    target = tmp_path / "snapshot.json"
    done = subprocess.run(
        f"{AUTOSCALER} snapshot > {target}", shell=True,
        cwd=tmp_path, env=clean_env(), capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 2 and not target.exists()


def test_a_bad_spec_is_one_line_per_problem(tmp_path):
    (tmp_path / "cluster.yaml").write_text("name: Bad Name\n")
    done = subprocess.run(
        [AUTOSCALER, "snapshot", "--out", str(tmp_path / "s.json")],
        cwd=tmp_path, env=clean_env(), capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.startswith("cluster.yaml") and not (tmp_path / "s.json").exists()


def test_flags_and_environment_win_over_the_spec(tmp_path):
    from autoscaler.cli import build_parser
    from autoscaler.commands.snapshot import resolve_snapshot_options

    args = build_parser().parse_args(
        ["snapshot", "--spec", str(ROOT / "cluster.yaml"), "--regions", "us-east-1"]
    )
    opts = resolve_snapshot_options(args, environ={"AUTOSCALER_CLUSTER_NAME": "other"})
    assert opts["cluster_name"] == "other" and opts["regions"] == ["us-east-1"]
    opts = resolve_snapshot_options(
        build_parser().parse_args(["snapshot", "--spec", str(ROOT / "cluster.yaml")]), {}
    )
    assert opts["cluster_name"] == "dlr" and opts["regions"] == load_spec().spill_over_order
