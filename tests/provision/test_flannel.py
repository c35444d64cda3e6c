"""flannel kept in the repository (issue 26, provision/flannel.py): the control plane applied a release manifest
downloaded at boot (a URL's content can change under it) with its images by tag. Its objects now come from
deploy/flannel/, with the spec's pod network and MTU and the images by digest; `invoke up` refuses the primary root
while an image of it has no digest."""

from __future__ import annotations

import json

import kubernetes_validate

from clusterspec.loader import load_spec
from provision import flannel, images, mtu
from tests.support import ROOT

SPEC = load_spec()


def test_the_objects_pass_strict_validation_with_the_spec_network():
    docs = flannel.render(SPEC)
    for doc in docs:
        kubernetes_validate.validate(doc, SPEC.kubernetes.minor + ".0", strict=True)
    kinds = {d["kind"]: d for d in docs}
    assert list(kinds) == [
        "Namespace",
        "ServiceAccount",
        "ClusterRole",
        "ClusterRoleBinding",
        "ConfigMap",
        "DaemonSet",
    ]
    data = kinds["ConfigMap"]["data"]
    assert json.loads(data["net-conf.json"])["Network"] == SPEC.kubernetes.pod_cidr
    delegate = json.loads(data["cni-conf.json"])["plugins"][0]["delegate"]
    assert delegate["mtu"] == mtu.pod_mtu(SPEC.vpn.tunnel)
    pod = kinds["DaemonSet"]["spec"]["template"]["spec"]
    assert {images.upstream(c["image"]) for c in pod["initContainers"] + pod["containers"]} == set(
        flannel.IMAGES.values()
    )
    assert pod["containers"][0]["securityContext"] == {
        "privileged": False,
        "capabilities": {"add": ["NET_ADMIN", "NET_RAW"]},
    }


def test_its_images_are_written_by_digest_once_recorded(monkeypatch):
    table = dict(images.table())
    for i, image in enumerate(flannel.IMAGES.values()):
        assert image in table, image
        table[image] = {**table[image], "digest": f"sha256:{i:064x}"}
    monkeypatch.setattr(images, "table", lambda: table)
    assert images.unpinned(flannel.manifest(SPEC)) == []


def test_nothing_of_flannel_is_downloaded_at_boot():
    bootstrap = (ROOT / "terraform/modules/control_plane/scripts/bootstrap.sh").read_text()
    body = bootstrap[bootstrap.index("apply_flannel() {") :].split("\n}\n", 1)[0]
    assert "curl" not in body and 'apply -f - <<<"$FLANNEL_MANIFEST"' in body
    assert "github.com/flannel-io" not in (ROOT / "terraform/modules/control_plane/variables.tf").read_text()
    assert (
        "flannel_manifest = {{ flannel_manifest | hcl }}"
        in (ROOT / "terraform/roots/region/control_plane.tf.j2").read_text()
    )
