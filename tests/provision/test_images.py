"""Images by digest (issue 26, provision/images.py): every image a rendered manifest names is recorded in
provision/data/images.yaml beside its digest; a recorded digest is written into the manifest; a deploy refuses a
manifest whose images are not all by digest, in one line, before anything is applied."""

from __future__ import annotations

import pytest
import yaml

from clusterspec.errors import UserError
from clusterspec.loader import load_spec
from provision import addons, deploy, flannel, images, irsa, monitoring, scheduler, storage, tenancy

SPEC = load_spec()


def _images(docs) -> set[str]:
    out = set()

    def walk(o):
        if isinstance(o, dict):
            for k, v in o.items():
                if k == "image" and isinstance(v, str):
                    out.add(v)
                else:
                    walk(v)
        elif isinstance(o, list):
            for x in o:
                walk(x)

    walk(docs)
    return out


def _rendered() -> set[str]:
    efs = storage.EfsVolumes("fs-0123456789abcdef0", {u.name: {"home": "fsap-0123456789abcdef1", "results": "fsap-0123456789abcdef2"}
                                                      for u in SPEC.users}, "fsap-0123456789abcdef3")  # fmt: skip
    docs = [addons.render(SPEC), scheduler.render_manifests(SPEC), deploy.render(SPEC, "arn:aws:iam::1:role/a"),
            monitoring.render(SPEC, "arn:aws:sns:us-west-2:1:t", None), tenancy.cluster_objects(SPEC),
            storage.render_storage(SPEC, efs, "arn:aws:iam::123456789012:role/dlr-efs-csi-node")["efs-csi-node.yaml"], irsa.webhook_manifests(SPEC, b"ca"), flannel.render(SPEC)]  # fmt: skip
    return _images(docs)


def test_every_rendered_image_is_recorded_in_the_table():
    """All but the lab's own autoscaler image, whose line `invoke push-autoscaler` adds with the digest it pushed
    (the preflight says so until then: tests/provision/test_lab_images.py)."""
    from provision import lab_images

    recorded = set(images.table())
    named = {images.upstream(i) for i in _rendered()} - {lab_images.autoscaler_image(SPEC)}
    assert named <= recorded, sorted(named - recorded)


HOST = "123456789012.dkr.ecr.us-west-2.amazonaws.com"


def test_every_rendered_image_is_the_labs_own_or_its_ecr_mirror():
    """Issue 36: no rendered manifest names flannel's, kube-router's, the exporters' or the device plugins' upstream
    registries; each names the repository `invoke mirror-images` pushes it to (one and the same name)."""
    from provision import lab_images

    rendered = _rendered()
    assert rendered and all(i.startswith(f"{HOST}/") for i in rendered), sorted(
        i for i in rendered if not i.startswith(f"{HOST}/")
    )
    pushed = {c.target for c in lab_images.mirror_plan(SPEC, HOST, _all_pinned())}
    mirrored = {i.split("@", 1)[0] for i in rendered} - {lab_images.autoscaler_image(SPEC)}
    assert mirrored <= pushed, sorted(mirrored - pushed)
    assert {i.split("@", 1)[0] for i in rendered if "/mirror/docker.io/flannel/" in i} == {
        f"{HOST}/dlr/mirror/docker.io/flannel/flannel:v0.26.1",
        f"{HOST}/dlr/mirror/docker.io/flannel/flannel-cni-plugin:v1.5.1-flannel2",
    }


def _all_pinned() -> dict[str, dict]:
    return {k: {**v, "digest": v.get("digest") or "sha256:" + "0" * 64} for k, v in images.table().items()}


def test_a_mirrored_image_keeps_the_digest_the_table_pins(monkeypatch):
    table = _all_pinned()
    monkeypatch.setattr(images, "table", lambda: table)
    pod = {"spec": {"containers": [{"image": "docker.io/cloudnativelabs/kube-router:v2.11.1"}]}}
    images.pin_docs(pod, SPEC)
    assert pod["spec"]["containers"][0]["image"] == (
        f"{HOST}/dlr/mirror/docker.io/cloudnativelabs/kube-router:v2.11.1@sha256:" + "0" * 64
    )
    assert (
        images.upstream(pod["spec"]["containers"][0]["image"])
        == "docker.io/cloudnativelabs/kube-router:v2.11.1"
    )


def test_a_deploy_refuses_an_image_outside_the_labs_registry(tmp_path, monkeypatch):
    """The rendered manifests of today's main named docker.io, quay.io, nvcr.io, registry.k8s.io: refused."""
    digest = "@sha256:" + "0" * 64
    path = tmp_path / "m.yaml"
    path.write_text(f"spec:\n  containers:\n    - image: quay.io/prometheus/alertmanager:v0.28.1{digest}\n")
    with pytest.raises(UserError) as e:
        images.check_pinned(path, cluster=SPEC)
    assert str(e.value) == (
        f"{path}: image quay.io/prometheus/alertmanager:v0.28.1{digest} is not in the lab's registry {HOST}: "
        "nothing was deployed; deploys pull only the lab's own images and its ECR mirror (`invoke mirror-images`)"
    )
    path.write_text(
        f"spec:\n  containers:\n    - image: {HOST}/dlr/mirror/quay.io/prometheus/alertmanager:v0.28.1{digest}\n"
    )
    images.check_pinned(path, cluster=SPEC)


def test_a_recorded_digest_is_written_into_the_manifest(monkeypatch):
    entry = "registry.k8s.io/pause:3.10"
    digest = "sha256:" + "ab" * 32
    table = dict(images.table())
    table[entry] = {**table[entry], "digest": digest}
    monkeypatch.setattr(images, "table", lambda: table)
    pod = {"spec": {"containers": [{"image": entry}], "initContainers": [{"image": "unknown.example/x:1"}]}}
    images.pin_docs(pod)
    assert pod["spec"]["containers"][0]["image"] == f"{entry}@{digest}"
    assert (
        pod["spec"]["initContainers"][0]["image"] == "unknown.example/x:1"
    )  # not recorded: by tag, refused later


def test_a_deploy_refuses_images_by_tag_in_one_line(tmp_path, monkeypatch):
    monkeypatch.delenv(images.BY_TAG_ENV, raising=False)
    path = tmp_path / "m.yaml"
    path.write_text(yaml.safe_dump_all(tenancy.cluster_objects(SPEC)))
    with pytest.raises(UserError) as e:
        images.check_pinned(path)
    assert "has no digest: nothing was deployed; run `invoke pin-images`" in str(e.value)
    assert "\n" not in str(e.value)
    pinned = tmp_path / "p.yaml"
    pinned.write_text("spec:\n  containers:\n    - image: x.example/y:1@sha256:" + "0" * 64 + "\n")
    images.check_pinned(pinned)


def test_the_table_refuses_a_malformed_digest(tmp_path):
    bad = tmp_path / "images.yaml"
    bad.write_text('- {image: "a:1", digest: "sha256:xyz"}\n')
    with pytest.raises(UserError, match="is not sha256:<64 hex>"):
        images.table.__wrapped__(bad)
