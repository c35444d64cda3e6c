"""Shared fixtures. Tests touch no network but loopback."""

from __future__ import annotations

import os
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
    # the emulator pulls no image: deploy tasks may apply images by tag here (provision/images.py); the refusal
    # itself is tested with it unset (tests/provision/test_images.py)
    "RESEARCH_CLUSTER_LOCAL_IMAGES_BY_TAG": "1",
}.items():
    os.environ[key] = value


@pytest.fixture
def root() -> Path:
    return ROOT
