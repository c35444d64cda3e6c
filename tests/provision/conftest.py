"""Fixtures of the provisioning tests."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _lab_settings_one_at_a_time(request, monkeypatch):
    """On the run's shared control plane, every write of the lab settings (kube-public/research-lab-settings and
    its readers' RoleBinding: fixed names, rewritten from each test's own spec by ``add_user``) holds the cluster's
    ``lab-settings`` singleton, so that a test which asserts who reads them (holding it too) sees its own."""
    if "kube" not in request.fixturenames:
        yield
        return
    from provision import lab_settings

    kube = request.getfixturevalue("kube")
    apply = lab_settings.apply

    def locked(*args, **kwargs):
        with kube.singleton("lab-settings"):
            return apply(*args, **kwargs)

    monkeypatch.setattr(lab_settings, "apply", locked)
    yield
