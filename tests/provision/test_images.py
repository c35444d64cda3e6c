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
    named = {i.split("@", 1)[0] for i in _rendered()} - {lab_images.autoscaler_image(SPEC)}
    assert named <= recorded, sorted(named - recorded)


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
