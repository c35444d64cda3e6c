"""Shared fixtures. Tests touch no network but loopback."""

from __future__ import annotations

import ipaddress
import os
import socket
import sys
from pathlib import Path

import pytest

from tests.support import ROOT

# Terraform must not read a user's CLI config (and the machine's points at a missing file).
_rc = ROOT / "build" / "test-terraformrc"
_rc.parent.mkdir(exist_ok=True)
_rc.touch()
os.environ["TF_CLI_CONFIG_FILE"] = str(_rc)
os.environ.setdefault("TF_IN_AUTOMATION", "1")
# No test may reach AWS: fake credentials and no instance-metadata lookups.
for key, value in {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_SESSION_TOKEN": "testing",
    "AWS_DEFAULT_REGION": "us-west-2",
    "AWS_EC2_METADATA_DISABLED": "true",
    # the local cluster pulls no image: deploy tasks may apply images by tag here (provision/images.py); the
    # refusal itself is tested with it unset (tests/provision/test_images.py)
    "RESEARCH_CLUSTER_LOCAL_IMAGES_BY_TAG": "1",
    # the lab's registry, where its own autoscaler image lives (provision/lab_images.py); the refusal without one
    # is tested with an empty environment (tests/provision/test_lab_images.py)
    "LAB_REGISTRY": "123456789012.dkr.ecr.us-west-2.amazonaws.com",
}.items():
    os.environ[key] = value

# ...and no test may even look a public name up: a client that misses its endpoint (moto's, the local stack's) would
# send its first packet, a DNS query, off the machine. A name that is not loopback's (nor the machine's own) fails
# here at once, as a resolver error naming it. IP literals pass: the network-namespace tests use their own ranges.
_getaddrinfo = socket.getaddrinfo
_OWN_NAMES = {"localhost", socket.gethostname()}


def _loopback_names_only(host, *args, **kwargs):
    name = host.decode() if isinstance(host, bytes) else host
    if name and name not in _OWN_NAMES and not name.endswith(".localhost"):
        try:
            ipaddress.ip_address(name.split("%")[0])
        except ValueError:
            raise socket.gaierror(
                socket.EAI_NONAME, f"{name}: tests resolve loopback names only (tests/conftest.py)"
            ) from None
    return _getaddrinfo(host, *args, **kwargs)


socket.getaddrinfo = _loopback_names_only


@pytest.fixture(autouse=True)
def _fresh_default_boto3_session():
    """boto3's default session keeps the credentials it first found: a test that removes them from the environment
    must not be served another test's (in one xdist worker, the order decides)."""
    boto3 = sys.modules.get("boto3")
    if boto3 is not None:
        boto3.DEFAULT_SESSION = None
    yield


@pytest.fixture
def root() -> Path:
    return ROOT


def _run_folder(config) -> Path:
    """The folder every process of this run shares (the controller's base temporary folder under xdist)."""
    base = config._tmp_path_factory.getbasetemp()
    return base.parent if hasattr(config, "workerinput") else base


@pytest.fixture(scope="session")
def kube(request):
    """The real local control plane (localcluster/: etcd, kube-apiserver, kube-controller-manager,
    kube-scheduler and kwok built by `make tools`), one per test run and shared by its workers; each test works
    in namespaces of its own (``kube.namespace()``) and names cluster-scoped objects with ``kube.unique()``."""
    from localcluster import binaries, shared
    from tests.support import require_tool

    for name in (*binaries.CONTROL_PLANE, "kwok"):
        require_tool(name, str(binaries.BIN / name))
    return shared.attach_or_start(_run_folder(request.config))


def pytest_sessionfinish(session):
    """The run's owner (the controller under xdist) stops the shared control plane."""
    if hasattr(session.config, "workerinput"):
        return
    from localcluster import shared

    shared.stop_at(_run_folder(session.config))
