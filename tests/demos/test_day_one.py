"""The demos' day one on the real control plane (localcluster/aws_cluster.py ``running``: moto, the real API server,
what `invoke up` deploys applied with kubectl): every manifest applied with no refusal and no warning, the
autoscaler's Deployment (issue 23's, restricted) available, its ServiceAccount's token authorized by the applied
RBAC only (least privilege: evictions, not deletes; no secrets); the Deployment before issue 23 (pinned, hostNetwork)
refused by Pod Security, which fails the demo with the API server's own message (demos/day_one.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from clusterspec.loader import load_spec
from clusterspec.names import AUTOSCALER_NAMESPACE
from demos import day_one
from demos.autoscaler_demo.run import DemoFailed
from localcluster import aws_cluster, binaries
from localcluster.aws_bootstrap import create_groups
from provision import deploy
from tests.autoscaler.moto_fixtures import _moto_server, moto_url  # noqa: F401 - fixtures
from tests.support import require_tool

pytestmark = pytest.mark.e2e  # a whole local cluster

PINNED = Path(__file__).parent / "fixtures" / "autoscaler-manifests-acb6d0c.yaml"


@pytest.fixture
def live(moto_url, tmp_path, monkeypatch):  # noqa: F811
    for name in (*binaries.CONTROL_PLANE, "kwok"):
        require_tool(name, str(binaries.BIN / name))
    monkeypatch.setenv("PATH", binaries.on_path())
    spec = load_spec()
    regions = [spec.primary_region]
    create_groups(spec, moto_url, regions)
    with aws_cluster.running(spec, moto_url, regions, tmp_path / "cluster", 60.0) as running:
        yield running, tmp_path


def test_day_one_applies_cleanly_and_the_autoscaler_runs_least_privileged(live) -> None:
    running, tmp = live
    for a in running.applied:
        assert a.returncode == 0 and not a.refusals and not a.warnings, (
            a.manifest.label,
            a.refusals,
            a.warnings,
        )
    deployment = day_one.wait_for_autoscaler(running.admin_kubeconfig, timeout_s=60)
    assert deployment["status"]["availableReplicas"] >= 1
    kc = aws_cluster.service_account_kubeconfig(running.stack, AUTOSCALER_NAMESPACE, deploy.NAME, tmp / "sa")

    def as_sa(*args: str) -> str:
        return running.stack.kubectl(*args, kubeconfig=kc, check=False).stdout.strip()

    assert as_sa("auth", "can-i", "patch", "nodes") == "yes"
    assert as_sa("auth", "can-i", "create", "pods", "--subresource=eviction") == "yes"
    assert as_sa("auth", "can-i", "delete", "pods") == "no"  # least privilege: evictions, not deletes
    assert as_sa("auth", "can-i", "list", "secrets", "-n", "kube-system") == "no"

    # the Deployment before issue 23, as it was applied then
    running.stack.kubectl("-n", AUTOSCALER_NAMESPACE, "delete", "deployment", deploy.NAME, "--wait=true")
    done = running.stack.kubectl("apply", "-f", str(PINNED), check=False)
    assert done.returncode == 0, done.stderr
    with pytest.raises(DemoFailed) as e:
        day_one.wait_for_autoscaler(running.admin_kubeconfig, timeout_s=30)
    message = str(e.value)
    assert message.startswith(
        "the cluster refused the autoscaler's Deployment: pods \"research-autoscaler-"
    ), message
    assert (
        'is forbidden: violates PodSecurity "restricted:latest": host namespaces (hostNetwork=true)'
        in message
    )
    rs = json.loads(running.stack.kubectl("get", "rs", "-n", AUTOSCALER_NAMESPACE, "-o", "json").stdout)[
        "items"
    ]
    assert rs and all(r["status"].get("replicas", 0) == 0 for r in rs)
