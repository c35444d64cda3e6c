"""A rendering of every root of cluster.yaml, shared by the structural tests of one worker."""

from __future__ import annotations

from pathlib import Path

import pytest

from provision.loader import load_spec
from provision.spec import Cluster
from provision.terraform.render import render


@pytest.fixture(scope="session")
def cluster() -> Cluster:
    return load_spec()


@pytest.fixture(scope="session")
def rendered(cluster, tmp_path_factory) -> Path:
    """``<tmp>/terraform`` with global/ and a directory per region; no AMI files (the SSM fallback)."""
    out = tmp_path_factory.mktemp("render") / "terraform"
    render(cluster, out_dir=out, ami_dir=out / "no-ami")
    return out
