"""The installed package carries the spec model but not the repository's Terraform, Packer, Chef and manifest files;
every renderer that needs them says so in one line instead of rendering nothing or raising a traceback (issue 16:
the built wheel carried `provision`, which worked only from a source checkout). Each case points one renderer's
folder at a place that does not exist, as in an installed package."""

from __future__ import annotations

import pytest

from clusterspec.errors import UserError
from clusterspec.loader import load_spec
from provision import addons, deploy, scheduler, storage
from provision.chef import image_scripts
from provision.packer import template
from provision.terraform import render, settings

ARN = "arn:aws:iam::123456789012:role/dlr-autoscaler"


@pytest.fixture
def spec():
    return load_spec()


@pytest.mark.parametrize(
    ("module", "attribute", "call"),
    [
        (deploy, "TEMPLATES", lambda s, tmp: deploy.render(s, ARN)),
        (addons, "TEMPLATES", lambda s, tmp: addons.render(s)),
        (scheduler, "TEMPLATES", lambda s, tmp: scheduler.render_manifests(s)),
        (
            storage,
            "TEMPLATES",
            lambda s, tmp: storage.render_storage(
                s, _efs(s), "arn:aws:iam::123456789012:role/dlr-efs-csi-node"
            ),
        ),
        (render, "TEMPLATES", lambda s, tmp: render.render(s, None, tmp / "out")),
        (template, "TEMPLATE_DIR", lambda s, tmp: template.stage(tmp / "packer", with_plugins=False)),
        (template, "TEMPLATE_DIR", lambda s, tmp: image_scripts.copy_scripts(tmp / "files")),
    ],
    ids=["deploy", "addons", "scheduler", "storage", "terraform", "packer", "chef scripts"],
)
def test_a_renderer_outside_a_checkout_says_so_in_one_line(
    spec, tmp_path, monkeypatch, module, attribute, call
):
    monkeypatch.setattr(module, attribute, tmp_path / "site-packages" / "missing")
    with pytest.raises(UserError) as err:
        call(spec, tmp_path)
    (line,) = err.value.lines
    assert "needs a checkout of the repository" in line and str(tmp_path / "site-packages") in line


def test_inside_the_checkout_nothing_changes(spec, tmp_path):
    assert settings.TEMPLATES.is_dir() and any(settings.TEMPLATES.glob("region/*.tf.j2"))
    assert deploy.render(spec, ARN) and scheduler.render_manifests(spec)


def _efs(spec):
    aps = {u.name: {"home": "fsap-0123456789", "results": "fsap-0123456789"} for u in spec.users}
    return storage.EfsVolumes("fs-0123456789abcdef0", aps, "fsap-0123456789")
