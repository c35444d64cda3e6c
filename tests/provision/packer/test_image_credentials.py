"""The lab's images on AWS nodes (issue 36): the standard image pre-pulled at bake time from the lab's registry with
the build instance's own role, and the kubelet pulling the lab's ECR images (its mirror, the autoscaler's) with an
image credential provider that asks ECR for a token with the machine's AWS identity. The scripts run here against
fakes of aws, ctr and systemctl; the Packer variables, the Terraform role and the Chef environment are read as
rendered."""

from __future__ import annotations

import base64
import json
import os
import re
import subprocess
from pathlib import Path

import pytest
import yaml

from clusterspec.errors import UserError
from clusterspec.loader import load_spec
from provision import lab_images
from provision.packer.variables import packer_variables
from provision.terraform import context
from tests.provision.terraform.tf_files import MODULES, parse
from tests.support import ROOT

SPEC = load_spec()
HOST = "123456789012.dkr.ecr.us-west-2.amazonaws.com"
SCRIPTS = ROOT / "packer/scripts"


def _statements(module_file: str, name: str) -> dict[str, dict]:
    for entry in parse(MODULES / module_file).get("data", []):
        if name in entry.get("aws_iam_policy_document", {}):
            return {s["sid"]: s for s in entry["aws_iam_policy_document"][name]["statement"]}
    raise AssertionError(f"no policy document {name} in {module_file}")


def test_the_bake_pre_pulls_the_standard_image_from_the_labs_registry_with_its_own_profile():
    """On today's main the image came out empty unless researchers.registry was set, and the build instance had no
    profile: prepull-images.sh printed "no ECR credentials" and baked without the image."""
    values = packer_variables(SPEC, "us-west-2")
    sw = SPEC.software
    assert values["standard_image"] == f"{HOST}/dlr/standard:1-cuda{sw.cuda}-py{SPEC.researchers.python}"
    assert values["bake_instance_profile"] == "dlr-image-bake"
    # the name Terraform gives the profile, for this cluster
    profiles = [
        b for b in parse(MODULES / "iam/image_bake.tf")["resource"] if "aws_iam_instance_profile" in b
    ]
    (profile,) = [p["aws_iam_instance_profile"]["image_bake"] for p in profiles]
    assert profile["name"].replace("${var.cluster}", SPEC.name) == values["bake_instance_profile"]
    # the AWS build launches with it (the local build, which runs no script, without)
    template = (ROOT / "packer/gpu-worker.pkr.hcl").read_text()
    block = template.split('name = "gpu-worker"', 1)[1].split("}", 1)[0]
    assert "iam_instance_profile = var.bake_instance_profile" in block
    assert "bake_instance_profile" in (ROOT / "packer/variables.pkr.hcl").read_text()
    # its repository exists: Terraform makes it with the lab's others
    assert lab_images.standard_repository(SPEC) in context._lab_repositories(SPEC)


def test_a_bake_without_the_labs_registry_is_one_line(monkeypatch):
    monkeypatch.delenv("LAB_REGISTRY")
    with pytest.raises(UserError, match="the lab's registry is not known: set researchers.registry"):
        packer_variables(SPEC, "us-west-2")


def test_the_bake_role_reads_the_standard_image_only_and_only_ec2_gets_it():
    bake = _statements("iam/image_bake.tf", "image_bake")
    assert bake["PullTheStandardImage"]["resources"] == [
        "arn:${local.p}:ecr:*:${local.account}:repository/${var.cluster}/standard"
    ]
    assert not any(a.endswith(("Put*", "PutImage", "*")) for s in bake.values() for a in s["actions"])
    assert {a for s in bake.values() for a in s["actions"]} == {
        "ecr:BatchCheckLayerAvailability", "ecr:BatchGetImage", "ecr:GetDownloadUrlForLayer", "ecr:GetAuthorizationToken",
    }  # fmt: skip
    builder = _statements("iam/image_builder.tf", "image_builder")
    passing = builder["PassTheBakeRoleToEc2"]
    assert passing["actions"] == ["iam:PassRole"] and passing["resources"] == [
        "arn:${local.p}:iam::${local.account}:role/${var.cluster}-image-bake"
    ]
    (condition,) = passing["condition"]
    assert (condition["variable"], condition["values"]) == ("iam:PassedToService", ["ec2.amazonaws.com"])


def test_lab_servers_pull_the_labs_images_with_the_site_role():
    site = _statements("site_access/main.tf", "site")
    assert site["PullClusterImages"]["resources"] == [
        "arn:${local.p}:ecr:*:${local.account}:repository/${var.cluster}/*"
    ]
    assert site["EcrLogin"]["actions"] == ["ecr:GetAuthorizationToken"]
    recipe = (ROOT / "chef/cookbooks/cluster_node/recipes/image_scripts.rb").read_text()
    assert "'AWS_CONFIG_FILE' => node['cluster_node']['aws_config']" in recipe
    assert "'AWS_PROFILE' => node['cluster_node']['aws_profile']" in recipe


def _fakes(tmp_path: Path, scripts: dict[str, str]) -> dict[str, str]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name, body in scripts.items():
        (bin_dir / name).write_text(f'#!/bin/bash\necho "{name} $*" >> {tmp_path}/calls\n{body}\n')
        (bin_dir / name).chmod(0o755)
    return {"PATH": f"{bin_dir}:/usr/bin:/bin", "HOME": str(tmp_path)}


def _prepull(tmp_path, aws: str, ctr: str):
    env = _fakes(tmp_path, {"aws": aws, "ctr": ctr, "systemctl": "exit 0"})
    env["STANDARD_IMAGE"] = f"{HOST}/dlr/standard:1-cuda12.9-py3.11"
    done = subprocess.run(["bash", str(SCRIPTS / "prepull-images.sh")], env=env, capture_output=True, text=True,
                          timeout=60)  # fmt: skip
    calls = (tmp_path / "calls").read_text().splitlines() if (tmp_path / "calls").exists() else []
    return done, calls


def test_the_pre_pull_stops_the_bake_without_ecr_credentials(tmp_path):
    done, calls = _prepull(tmp_path, "echo 'Unable to locate credentials' >&2; exit 253", "exit 0")
    assert done.returncode == 1
    assert "prepull: no ECR credentials for 123456789012.dkr.ecr.us-west-2.amazonaws.com here" in done.stderr
    assert calls == ["aws ecr get-login-password --region us-west-2"]


def test_the_pre_pull_pulls_with_the_ecr_token_and_says_when_the_image_is_missing(tmp_path):
    done, calls = _prepull(tmp_path, "echo s3cr3t", 'echo "ctr: not found" >&2; exit 1')
    assert done.returncode == 1
    assert "could not be pulled: run `invoke push-standard-image` before baking" in done.stderr
    (pull,) = [c for c in calls if c.startswith("ctr ")]
    assert (
        pull
        == f"ctr -n k8s.io images pull --platform linux/amd64 --user AWS:s3cr3t {HOST}/dlr/standard:1-cuda12.9-py3.11"
    )


KUBEADM_EXEC = "ExecStart=/usr/bin/kubelet $KUBELET_KUBECONFIG_ARGS $KUBELET_CONFIG_ARGS $KUBELET_KUBEADM_ARGS $KUBELET_EXTRA_ARGS"


def _credential_section(tmp_path: Path, **env) -> Path:
    """The image credential provider's part of kubernetes.sh, installed under a folder (IMAGE_ROOT) beside the
    10-kubeadm.conf the kubeadm package installs."""
    text = (SCRIPTS / "kubernetes.sh").read_text()
    section = text[text.index("root=${IMAGE_ROOT:-}") :]
    root = tmp_path / "root"
    dropins = root / "usr/lib/systemd/system/kubelet.service.d"
    dropins.mkdir(parents=True)
    (dropins / "10-kubeadm.conf").write_text(f"[Service]\nExecStart=\n{KUBEADM_EXEC}\n")
    script = tmp_path / "section.sh"
    script.write_text("set -euo pipefail\n" + section)
    fakes = _fakes(tmp_path, {"systemctl": "exit 0"})
    done = subprocess.run(["bash", str(script)], env={**fakes, "IMAGE_ROOT": str(root), **env}, capture_output=True,
                          text=True, timeout=60)  # fmt: skip
    assert done.returncode == 0, done.stderr
    return root


def test_the_kubelet_is_started_with_the_ecr_credential_provider(tmp_path):
    root = _credential_section(tmp_path)
    dropin = (root / "etc/systemd/system/kubelet.service.d/20-image-credentials.conf").read_text()
    assert dropin.splitlines() == [
        "[Service]", "ExecStart=",
        f"{KUBEADM_EXEC} --image-credential-provider-config=/etc/kubernetes/image-credential-providers.yaml "
        "--image-credential-provider-bin-dir=/usr/local/lib/kubelet/credential-providers",
    ]  # fmt: skip
    config = yaml.safe_load((root / "etc/kubernetes/image-credential-providers.yaml").read_text())
    (provider,) = config["providers"]
    assert (config["apiVersion"], config["kind"]) == ("kubelet.config.k8s.io/v1", "CredentialProviderConfig")
    # the kubelet runs <bin dir>/<name>; each glob part matches one DNS label of the lab's registry
    assert (root / "usr/local/lib/kubelet/credential-providers" / provider["name"]).stat().st_mode & 0o111
    (pattern,) = provider["matchImages"]
    assert len(pattern.split(".")) == len(HOST.split("."))
    assert all(p == "*" or p == h for p, h in zip(pattern.split("."), HOST.split("."), strict=True))
    assert "env" not in provider


def test_a_lab_server_s_provider_uses_the_site_profile(tmp_path):
    root = _credential_section(
        tmp_path, AWS_CONFIG_FILE="/etc/cluster-node/aws-config", AWS_PROFILE="cluster-site"
    )
    (provider,) = yaml.safe_load((root / "etc/kubernetes/image-credential-providers.yaml").read_text())[
        "providers"
    ]
    assert provider["env"] == [{"name": "AWS_CONFIG_FILE", "value": "/etc/cluster-node/aws-config"},
                               {"name": "AWS_PROFILE", "value": "cluster-site"}]  # fmt: skip


def _provider(tmp_path: Path, image: str, aws: str):
    root = _credential_section(tmp_path)
    plugin = root / "usr/local/lib/kubelet/credential-providers/ecr-login"
    env = {**os.environ, "PATH": f"{tmp_path}/bin:/usr/bin:/bin"}
    (tmp_path / "bin/aws").write_text(f'#!/bin/bash\necho "aws $*" >> {tmp_path}/calls\n{aws}\n')
    (tmp_path / "bin/aws").chmod(0o755)
    request = {
        "apiVersion": "credentialprovider.kubelet.k8s.io/v1",
        "kind": "CredentialProviderRequest",
        "image": image,
    }
    return subprocess.run([str(plugin)], input=json.dumps(request), env=env, capture_output=True, text=True,
                          timeout=60)  # fmt: skip


def test_the_provider_answers_the_kubelet_with_an_ecr_token(tmp_path):
    token = base64.b64encode(b"AWS:the-password").decode()
    done = _provider(
        tmp_path, f"{HOST}/dlr/mirror/docker.io/flannel/flannel:v0.26.1@sha256:" + "0" * 64, f"echo {token}"
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {
        "apiVersion": "credentialprovider.kubelet.k8s.io/v1", "kind": "CredentialProviderResponse",
        "cacheKeyType": "Registry", "cacheDuration": "6h",
        "auth": {HOST: {"username": "AWS", "password": "the-password"}},
    }  # fmt: skip
    calls = (tmp_path / "calls").read_text()
    assert re.search(
        r"^aws ecr get-authorization-token --region us-west-2 --registry-ids 123456789012 ", calls, re.M
    )


def test_the_provider_refuses_without_credentials_in_one_line(tmp_path):
    done = _provider(
        tmp_path, f"{HOST}/dlr/autoscaler:0.1.0", "echo 'Unable to locate credentials' >&2; exit 253"
    )
    assert done.returncode != 0 and done.stdout == ""
    assert done.stderr.strip() == f"ecr-login: no ECR token for {HOST}: Unable to locate credentials"


def test_a_real_bake_pre_pulls_once_the_profile_and_the_image_exist(monkeypatch):
    """Against the embedded AWS (moto): on a fresh account the bake comes before the roots that make the profile and
    the repository, so the first image goes without the pre-pull (a warning line); once both exist it is required."""
    import boto3
    from moto import mock_aws

    for k, v in {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": "us-west-2",
    }.items():
        monkeypatch.setenv(k, v)
    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    with mock_aws():
        session = boto3.Session(region_name="us-west-2")
        image = lab_images.standard_image(SPEC)
        assert lab_images.prepull_blocker(SPEC, session) == (
            "the build instance's profile dlr-image-bake does not exist yet (`invoke up --region global` makes it)"
        )
        session.client("iam").create_instance_profile(InstanceProfileName="dlr-image-bake")
        assert lab_images.prepull_blocker(SPEC, session) == (
            f"{image} is not in the lab's ECR yet (`invoke push-standard-image`)"
        )
        ecr = session.client("ecr")
        ecr.create_repository(repositoryName="dlr/standard")
        assert lab_images.prepull_blocker(SPEC, session) == (
            f"{image} is not in the lab's ECR yet (`invoke push-standard-image`)"
        )
        manifest = {"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
                    "config": {"mediaType": "application/vnd.oci.image.config.v1+json", "size": 2,
                               "digest": "sha256:" + "4" * 64}, "layers": []}  # fmt: skip
        ecr.put_image(
            repositoryName="dlr/standard",
            imageManifest=json.dumps(manifest),
            imageTag=image.rsplit(":", 1)[1],
        )
        assert lab_images.prepull_blocker(SPEC, session) is None
    values = packer_variables(SPEC, "us-west-2", prepull=False)
    assert values["standard_image"] == "" and values["bake_instance_profile"] == ""
