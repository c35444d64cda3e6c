"""Everything `invoke up` deploys is applied to the real kube-apiserver with no refusal and no warning (issue 33:
the emulator accepted two DaemonSets the API server refuses)."""

from __future__ import annotations

import pytest
import yaml

from clusterspec.loader import load_spec
from localcluster import binaries, day_one

pytestmark = pytest.mark.tool


def test_everything_invoke_up_deploys_is_accepted_without_a_warning(kube, tmp_path) -> None:
    manifests = day_one.render(load_spec(), tmp_path)
    assert day_one.count(manifests) > 50
    applied = day_one.apply(str(binaries.path("kubectl")), kube.admin_kubeconfig, manifests)
    problems = [f"{a.manifest.label}: {line}" for a in applied for line in (*a.refusals, *a.warnings)]
    assert not problems, "\n".join(problems)
    assert all(a.returncode == 0 for a in applied)
    # the two DaemonSets that were refused: on the real API server, with their per-server node terms
    for name in ("nvidia-device-plugin", "dcgm-exporter"):
        done = kube.kubectl("-n", "kube-system", "get", "daemonset", name, "-o", "yaml", check=True)
        terms = yaml.safe_load(done.stdout)["spec"]["template"]["spec"]["affinity"]["nodeAffinity"][
            "requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]  # fmt: skip
        assert all(len(f["values"]) == 1 for t in terms for f in t.get("matchFields", ()))


def test_the_old_field_selector_is_refused_by_the_real_api_server(kube) -> None:
    """The seam: one matchFields term naming several nodes, as provision/addons.py rendered it before."""
    ns = kube.namespace("ds")
    ds = {
        "apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "x", "namespace": ns},
        "spec": {"selector": {"matchLabels": {"a": "b"}}, "template": {
            "metadata": {"labels": {"a": "b"}},
            "spec": {"containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10"}], "affinity": {
                "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                    {"matchFields": [{"key": "metadata.name", "operator": "In",
                                      "values": ["titan-01", "titan-02"]}]}]}}}}}},
    }  # fmt: skip
    import json

    done = kube.kubectl("apply", "-f", "-", input=json.dumps(ds))
    assert done.returncode != 0
    assert "must be only one value when operator is 'In' or 'NotIn' for node field selector" in done.stderr
