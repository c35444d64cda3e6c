"""`invoke local-cluster` comes up as a cluster `lab` can use with the kubeconfig it prints (alice's, from the CSR
API): the settings are readable, a submitted job runs its code as a process on a GPU node of the process kubelet
(the real control plane: localcluster/) and `lab logs` shows its output; then it stops with everything it
started."""

from __future__ import annotations

import time

import pytest

from clusterspec.loader import load_spec
from demos.researcher.run import local_cluster
from labctl.cli import main as lab

pytestmark = (
    pytest.mark.e2e
)  # moto, the real control plane, kubectl's day one and `autoscaler run`: `make e2e`


def test_lab_works_against_the_local_cluster(tmp_path, monkeypatch, capsys) -> None:
    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / "train.py").write_text("print('hi')\n")
    cluster = local_cluster(load_spec(), tmp_path / "out", tmp_path / "secrets", say=lambda s: None)
    with cluster as (added, _, admin):
        monkeypatch.setenv("KUBECONFIG", str(added.kubeconfig))
        monkeypatch.setenv("LAB_ENGINE", "")
        monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
        with pytest.raises(SystemExit) as e:
            lab(["submit", "--gpus", "1", "--name", "mine", "--path", str(proj), "--", "python", "train.py"])
        out, err = capsys.readouterr()
        assert e.value.code == 0, err
        assert "submitted job mine in u-alice: 1 node x 1 GPUs" in out
        deadline = time.monotonic() + 90  # a T4 node boots (compressed), the code runs as a process
        text = ""
        while time.monotonic() < deadline and "hi" not in text:
            time.sleep(1)
            with pytest.raises(SystemExit):
                lab(["logs", "mine"])
            text = capsys.readouterr().out
        assert "hi\n" in text
        from kubernetes import client, config

        from localcluster.kubelet.agent import LABEL, VALUE

        core = client.CoreV1Api(config.new_client_from_config(config_file=str(admin)))
        (pod,) = core.list_namespaced_pod(
            added.namespace, label_selector="batch.kubernetes.io/job-name=mine"
        ).items
        assert core.read_node(pod.spec.node_name).metadata.labels.get(LABEL) == VALUE
