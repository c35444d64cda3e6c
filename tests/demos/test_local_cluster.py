"""`invoke local-cluster` comes up as a cluster `lab` can use with the kubeconfig it prints (alice's, from the CSR
API): the settings are readable and a submitted job is created; then it stops with everything it started."""

from __future__ import annotations

import pytest

from clusterspec.loader import load_spec
from demos.researcher.run import local_cluster
from labctl.cli import main as lab


def test_lab_works_against_the_local_cluster(tmp_path, monkeypatch, capsys) -> None:
    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / "train.py").write_text("print('hi')\n")
    with local_cluster(load_spec(), tmp_path / "out", tmp_path / "secrets", say=lambda s: None) as (
        added,
        _,
        _,
    ):
        monkeypatch.setenv("KUBECONFIG", str(added.kubeconfig))
        monkeypatch.setenv("LAB_ENGINE", "")
        monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
        with pytest.raises(SystemExit) as e:
            lab(["submit", "--gpus", "1", "--name", "mine", "--path", str(proj), "--", "python", "train.py"])
        out, err = capsys.readouterr()
        assert e.value.code == 0, err
        assert "submitted job mine in u-alice: 1 node x 1 GPUs" in out
