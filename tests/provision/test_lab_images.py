"""The images the lab owns (issue 36, provision/lab_images.py): the autoscaler's image defaults to the lab's own ECR
repository (no namespace the project does not control), `invoke pin-images` reads ECR with credentials (a loopback
registry that refuses anonymous requests, as ECR does, and a token from moto's ECR), push-autoscaler and
mirror-images say in one line what they lack, the mirrors copy exactly the pinned digests, and Terraform makes every
repository immutable, scanned on push and encrypted."""

from __future__ import annotations

import base64
import hashlib
import http.server
import json
import threading

import boto3
import pytest
from moto import mock_aws

from clusterspec.errors import UserError
from clusterspec.loader import load_spec
from provision import images, lab_images, registry
from tests.support import ROOT

HOST = "123456789012.dkr.ecr.us-west-2.amazonaws.com"
BODY = json.dumps(
    {"schemaVersion": 2, "mediaType": "application/vnd.oci.image.index.v1+json", "manifests": []}
)


@pytest.fixture(scope="module")
def spec():
    return load_spec()


def test_the_autoscaler_image_is_the_labs_own_repository(spec):
    assert spec.autoscaler.image is None  # cluster.yaml names no image under a namespace we do not control
    assert "ghcr.io/research-cluster" not in (ROOT / "cluster.yaml").read_text()
    assert lab_images.autoscaler_image(spec, {"LAB_REGISTRY": HOST}) == f"{HOST}/dlr/autoscaler:0.1.0"
    with pytest.raises(UserError) as e:
        lab_images.autoscaler_image(spec, {})
    assert str(e.value).startswith("the lab's registry is not known: set researchers.registry")


class Ecr(http.server.ThreadingHTTPServer):
    """Answers only Basic AWS:<password> (the token of GetAuthorizationToken), 401 Basic otherwise, as ECR does."""

    def __init__(self, password: str):
        super().__init__(("127.0.0.1", 0), _Handler)
        self.expected = "Basic " + base64.b64encode(f"AWS:{password}".encode()).decode()
        self.seen: list[str | None] = []


class _Handler(http.server.BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def do_GET(self):  # noqa: N802
        self.server.seen.append(self.headers.get("Authorization"))
        if self.headers.get("Authorization") != self.server.expected:
            body, code, headers = (
                b"{}",
                401,
                {"WWW-Authenticate": f'Basic realm="https://{HOST}/",service="ecr.amazonaws.com"'},
            )
        else:
            body, code, headers = BODY.encode(), 200, {}
        self.send_response(code)
        for k, v in headers.items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def test_pin_images_reads_the_labs_ecr_with_credentials_never_anonymously():
    with mock_aws():
        token = boto3.client("ecr", region_name="us-west-2").get_authorization_token()["authorizationData"][0]
        password = base64.b64decode(token["authorizationToken"]).decode().split(":", 1)[1]
        srv = Ecr(password)
        threading.Thread(target=srv.serve_forever, daemon=True).start()
        try:
            base = {"base_url": lambda ref: f"http://127.0.0.1:{srv.server_address[1]}"}
            image = f"{HOST}/dlr/autoscaler:0.1.0"
            with pytest.raises(registry.RegistryError, match="asks for Basic credentials"):
                registry.digest(
                    image, **base
                )  # anonymously: refused (and no token dance with a Basic challenge)
            assert lab_images.resolve(image, **base) == "sha256:" + hashlib.sha256(BODY.encode()).hexdigest()
            assert srv.seen[-1] == srv.expected
        finally:
            srv.shutdown()
            srv.server_close()
    assert lab_images.authorization("registry.k8s.io") is None  # third-party registries: anonymous pulls


def test_push_autoscaler_without_a_docker_engine_is_one_line(spec, monkeypatch):
    monkeypatch.setattr(lab_images.shutil, "which", lambda name: None)
    with pytest.raises(UserError) as e:
        lab_images.push_autoscaler(spec)
    assert str(e.value).startswith("no Docker engine here (`docker info` fails): push-autoscaler builds")
    assert "\n" not in str(e.value)


def test_mirror_images_without_crane_or_skopeo_is_one_line(spec, monkeypatch):
    monkeypatch.setattr(lab_images.shutil, "which", lambda name: None)
    with pytest.raises(UserError) as e:
        lab_images.mirror_images(spec)
    assert str(e.value).startswith("no crane or skopeo on PATH: mirror-images")


def test_mirrors_copy_the_pinned_digests_only(spec, tmp_path):
    table = {i: dict(e) for i, e in images.table().items()}
    with pytest.raises(UserError, match="run `invoke pin-images` first"):
        lab_images.mirror_plan(spec, HOST, table)
    for i, e in table.items():
        e["digest"] = "sha256:" + hashlib.sha256(i.encode()).hexdigest()
    plan = {c.source.split("@")[0]: c for c in lab_images.mirror_plan(spec, HOST, table)}
    flannel = plan["docker.io/flannel/flannel:v0.26.1"]
    assert (
        flannel.source
        == f"docker.io/flannel/flannel:v0.26.1@{table['docker.io/flannel/flannel:v0.26.1']['digest']}"
    )
    assert flannel.target == f"{HOST}/dlr/mirror/docker.io/flannel/flannel:v0.26.1"
    assert {"docker.io/cloudnativelabs/kube-router:v2.11.1", "quay.io/prometheus/prometheus:v3.5.0"} <= set(
        plan
    )


def test_a_mirror_serving_other_content_is_refused(spec, monkeypatch):
    calls = []
    monkeypatch.setattr(
        lab_images.shutil, "which", lambda name: "/usr/bin/crane" if name == "crane" else None
    )
    monkeypatch.setattr(lab_images, "_login_password", lambda host, session=None: "pw")
    table = {"docker.io/flannel/flannel:v0.26.1": {"image": "docker.io/flannel/flannel:v0.26.1",
                                                    "digest": "sha256:" + "a" * 64, "source": "provision/flannel.py"}}  # fmt: skip
    monkeypatch.setattr(images, "table", lambda path=None: table)

    def run(argv, **kw):
        calls.append(argv)
        return type("Done", (), {"returncode": 0, "stdout": "", "stderr": ""})()

    with pytest.raises(UserError, match="the mirror serves sha256:bbbb"):
        lab_images.mirror_images(spec, run=run, environ={"LAB_REGISTRY": HOST},
                                 resolve_digest=lambda image: "sha256:" + "b" * 64)  # fmt: skip
    assert calls[1] == ["crane", "copy", "docker.io/flannel/flannel:v0.26.1@sha256:" + "a" * 64,
                        f"{HOST}/dlr/mirror/docker.io/flannel/flannel:v0.26.1"]  # fmt: skip


def test_push_autoscaler_records_the_digest_read_back_from_ecr(spec, tmp_path, monkeypatch):
    path = tmp_path / "images.yaml"
    path.write_text(images.TABLE.read_text())
    monkeypatch.setattr(images, "TABLE", path)
    monkeypatch.setattr(lab_images.shutil, "which", lambda name: "/usr/bin/docker")
    monkeypatch.setattr(lab_images, "_login_password", lambda host, session=None: "pw")
    calls = []

    def run(argv, **kw):
        calls.append(argv)
        return type("Done", (), {"returncode": 0, "stdout": "", "stderr": ""})()

    pushed = lab_images.push_autoscaler(spec, run=run, environ={"LAB_REGISTRY": HOST},
                                        resolve_digest=lambda image: "sha256:" + "c" * 64)  # fmt: skip
    assert [c[:2] for c in calls] == [
        ["docker", "info"],
        ["docker", "login"],
        ["docker", "build"],
        ["docker", "push"],
    ]
    assert pushed.image == f"{HOST}/dlr/autoscaler:0.1.0"
    images.table.cache_clear()
    assert images.table(path)[pushed.image]["digest"] == "sha256:" + "c" * 64
    images.table.cache_clear()


def test_push_standard_builds_the_standard_image_for_the_spec_into_its_repository(spec, monkeypatch):
    monkeypatch.setattr(lab_images.shutil, "which", lambda name: "/usr/bin/docker")
    monkeypatch.setattr(lab_images, "_login_password", lambda host, session=None: "pw")
    calls = []

    def run(argv, **kw):
        calls.append(argv)
        return type("Done", (), {"returncode": 0, "stdout": "", "stderr": ""})()

    pushed = lab_images.push_standard(spec, run=run, environ={"LAB_REGISTRY": HOST},
                                      resolve_digest=lambda image: "sha256:" + "d" * 64)  # fmt: skip
    sw = spec.software
    assert pushed.image == f"{HOST}/dlr/standard:1-cuda{sw.cuda}-py{spec.researchers.python}"
    (build,) = [c for c in calls if c[:2] == ["docker", "build"]]
    assert build == ["docker", "build", "-t", pushed.image,
                     "--build-arg", f"BASE=nvidia/cuda:{sw.cuda}.0-cudnn-runtime-ubuntu{sw.ubuntu}",
                     "--build-arg", f"PYTHON={spec.researchers.python}", "deploy/standard-image"]  # fmt: skip
    assert ["docker", "push", pushed.image] in calls
    # the Dockerfile's default base is the one the spec names (the tag says which CUDA it carries)
    assert (
        f"ARG BASE=nvidia/cuda:{sw.cuda}.0-cudnn-runtime-ubuntu{sw.ubuntu}"
        in (ROOT / "deploy/standard-image/Dockerfile").read_text()
    )


def test_terraform_makes_every_lab_repository_immutable_scanned_and_encrypted(rendered_primary):
    text = (rendered_primary / "lab_images.tf").read_text()
    assert 'source      = "' in text and "/ecr" in text
    module = (ROOT / "terraform/modules/ecr/main.tf").read_text()
    assert 'image_tag_mutability = "IMMUTABLE"' in module and "scan_on_push = true" in module
    assert 'encryption_type = "KMS"' in module
    assert '"dlr/autoscaler"' in text and '"dlr/mirror/docker.io/flannel/flannel"' in text
    assert '"dlr/standard"' in text  # pre-pulled at bake time (issue 36)


@pytest.fixture(scope="module")
def rendered_primary(tmp_path_factory, spec):
    from provision.terraform.render import render

    out = tmp_path_factory.mktemp("tf")
    render(spec, regions=["us-west-2"], out_dir=out)
    return out / "us-west-2"


def _manifest(image: str) -> tuple[str, str]:
    """An image index for ``image`` and its digest (the SHA-256 of the manifest, as ECR and containerd compute it)."""
    body = json.dumps({"schemaVersion": 2, "mediaType": "application/vnd.oci.image.index.v1+json",
                       "manifests": [], "annotations": {"org.opencontainers.image.ref.name": image}})  # fmt: skip
    return body, "sha256:" + hashlib.sha256(body.encode()).hexdigest()


def put(ecr, ref: str, body: str, digest: str) -> None:
    """What `crane copy` leaves in ECR: the manifest under its tag, at its digest."""
    name = registry.parse(ref.split("@")[0])
    ecr.put_image(repositoryName=name.repository, imageManifest=body, imageTag=name.tag, imageDigest=digest)


def test_a_deploy_refuses_an_image_not_yet_in_the_labs_ecr(spec, tmp_path, monkeypatch):
    """The order of day one (issue 36): the mirrors and the lab's own image in ECR, at their pinned digests, before
    a deploy names them; refused in one line with the task that puts them there, asked of ECR with credentials."""
    monkeypatch.delenv(images.BY_TAG_ENV, raising=False)
    body, digest = _manifest("quay.io/prometheus/alertmanager:v0.28.1")
    mirror = f"{HOST}/dlr/mirror/quay.io/prometheus/alertmanager:v0.28.1@{digest}"
    own_body, own_digest = _manifest("autoscaler")
    own = f"{HOST}/dlr/autoscaler:0.1.0@{own_digest}"
    path = tmp_path / "m.yaml"
    path.write_text(f"spec:\n  containers:\n    - image: {mirror}\n    - image: {own}\n")
    with mock_aws():
        ecr = boto3.client("ecr", region_name="us-west-2")
        with pytest.raises(UserError) as e:  # before the primary region's apply: no repository
            images.check_pinned(path, cluster=spec)
        assert str(e.value) == (
            f"{path}: image {own} (and 1 more) is not in the lab's ECR yet: nothing was deployed; run "
            "`invoke push-autoscaler`, then deploy again"
        )
        for repository in (
            "dlr/autoscaler",
            "dlr/mirror/quay.io/prometheus/alertmanager",
        ):  # as Terraform makes them
            ecr.create_repository(repositoryName=repository, imageTagMutability="IMMUTABLE")
        put(ecr, own, own_body, own_digest)
        with pytest.raises(UserError, match=r"alertmanager:v0.28.1@sha256:\w+ is not in the lab's ECR yet: nothing "
                           r"was deployed; run `invoke mirror-images`, then deploy again$"):  # fmt: skip
            images.check_pinned(path, cluster=spec)
        other_body, other = _manifest(
            "alertmanager, other content"
        )  # the tag holds content other than pinned
        put(ecr, mirror.replace(digest, other), other_body, other)
        with pytest.raises(UserError, match="run `invoke mirror-images`"):
            images.check_pinned(path, cluster=spec)
        ecr.batch_delete_image(repositoryName="dlr/mirror/quay.io/prometheus/alertmanager",
                               imageIds=[{"imageDigest": other}])  # fmt: skip
        put(ecr, mirror, body, digest)
        images.check_pinned(path, cluster=spec)  # both there at their digests: the deploy goes ahead
        assert lab_images.not_in_registry([mirror, own, "quay.io/x/y:1@" + digest], spec) == []
    # the control plane's own flannel, checked before the apply that makes its repository: not asked of ECR
    images.check_pinned(path, cluster=spec, in_registry=False)
