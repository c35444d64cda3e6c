"""The lab settings published in the cluster, on the shared real control plane (the `kube` fixture): a researcher
reads that one ConfigMap with their own certificate (from `invoke add-user`, through the CSR API) and nothing else
in kube-public; add-user keeps what only Terraform knew. The settings are the cluster's one fixed ConfigMap: the test
holds it (``kube.singleton``)."""

from __future__ import annotations

import json

import pytest
import yaml
from kubernetes import client, config
from kubernetes.client.exceptions import ApiException

from clusterspec.loader import load_spec
from provision import lab_settings, users

pytestmark = pytest.mark.tool


def test_researchers_read_the_settings_and_nothing_else(kube, tmp_path) -> None:
    base = load_spec()
    spec = base.model_copy(update={"researchers": base.researchers.model_copy(
        update={"namespace_prefix": kube.unique("u") + "-"})})  # fmt: skip
    other = kube.unique("other")
    admin = config.new_client_from_config(config_file=str(kube.admin_kubeconfig))
    with kube.singleton("lab-settings"):
        added = users.add_user(spec, "alice", str(kube.admin_kubeconfig), tmp_path / "home", timeout_s=60)
        lines = lab_settings.apply(admin, spec, code_bucket="dlr-results-1", s3_endpoint="http://127.0.0.1:1")
        assert lines[0] == "applied ConfigMap kube-public/research-lab-settings"
        client.CoreV1Api(admin).create_namespaced_config_map("kube-public", {"metadata": {"name": other}})
        alice = config.new_client_from_config(config_file=str(added.kubeconfig))
        core = client.CoreV1Api(alice)
        try:
            cm = core.read_namespaced_config_map("research-lab-settings", "kube-public")
            assert yaml.safe_load(cm.data["settings.yaml"])["code_bucket"] == "dlr-results-1"
            with pytest.raises(ApiException) as e:
                core.read_namespaced_config_map(other, "kube-public")
            assert e.value.status == 403
            message = json.loads(e.value.body)["message"]
            assert message.startswith(
                f'configmaps "{other}" is forbidden: User "alice" cannot get resource "configmaps"'
            )
            # add-user knows no bucket: what the cluster had stays
            again = lab_settings.apply(admin, spec)
            assert again[0] == "applied ConfigMap kube-public/research-lab-settings"
            cm = core.read_namespaced_config_map("research-lab-settings", "kube-public")
            data = yaml.safe_load(cm.data["settings.yaml"])
            assert (data["code_bucket"], data["s3_endpoint"]) == ("dlr-results-1", "http://127.0.0.1:1")
        finally:
            client.CoreV1Api(admin).delete_namespaced_config_map(other, "kube-public")
            kube.kubectl("delete", "namespace", added.namespace, "--wait=false")
            alice.close()
            admin.close()
