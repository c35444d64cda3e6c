"""The lab settings published in the cluster: a researcher (group research:users) reads that one ConfigMap with
their own certificate and nothing else in kube-public; add-user keeps what only Terraform knew."""

from __future__ import annotations

import pytest
import yaml
from kubernetes import client, config
from kubernetes.client.exceptions import ApiException

from autoscaler.emulator import Emulator
from autoscaler.model import ClusterModel, VirtualClock
from clusterspec.loader import load_spec
from provision import lab_settings


@pytest.fixture
def emu():
    with Emulator(ClusterModel(VirtualClock(start=1_767_225_600.0), [])) as e:
        yield e


def test_researchers_read_the_settings_and_nothing_else(emu, tmp_path) -> None:
    admin = config.new_client_from_config(config_file=str(emu.write_kubeconfig(tmp_path / "admin")))
    lines = lab_settings.apply(
        admin, load_spec(), code_bucket="dlr-results-1", s3_endpoint="http://127.0.0.1:1"
    )
    assert lines[0] == "applied ConfigMap kube-public/research-lab-settings"
    client.CoreV1Api(admin).create_namespaced_config_map("kube-public", {"metadata": {"name": "other"}})
    alice = config.new_client_from_config(
        config_file=str(emu.write_kubeconfig(tmp_path / "alice", user="alice", groups=("research:users",)))
    )
    core = client.CoreV1Api(alice)
    cm = core.read_namespaced_config_map("research-lab-settings", "kube-public")
    assert yaml.safe_load(cm.data["settings.yaml"])["code_bucket"] == "dlr-results-1"
    with pytest.raises(ApiException) as e:
        core.read_namespaced_config_map("other", "kube-public")
    assert e.value.status == 403
    # add-user knows no bucket: what the cluster had stays
    again = lab_settings.apply(admin, load_spec())
    assert again[0] == "applied ConfigMap kube-public/research-lab-settings"
    cm = core.read_namespaced_config_map("research-lab-settings", "kube-public")
    data = yaml.safe_load(cm.data["settings.yaml"])
    assert (data["code_bucket"], data["s3_endpoint"]) == ("dlr-results-1", "http://127.0.0.1:1")
