"""Fixtures: a moto server (AWS) on loopback. The Kubernetes side is the run's shared real control plane (the
``kube`` fixture of tests/conftest.py; tests/autoscaler/real_kube.py)."""

from __future__ import annotations

from tests.autoscaler.moto_fixtures import _moto_server, moto_url  # noqa: F401 - fixtures
