"""The seam of the two DaemonSets the emulator accepted and the real kube-apiserver refuses (issue 33). Everything
`invoke up` deploys, applied with an apply's outputs with no refusal and no warning: tests/localcluster/
test_rehearsal.py (one test applies them to the shared control plane, so no other overwrites its objects)."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.tool


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
    assert "must be only one value when `operator` is 'In' or 'NotIn' for node field selector" in done.stderr
