"""The cookbook's plain-Ruby libraries (join/retry/token, upgrade gate, SSH access) under Ruby's minitest."""

from __future__ import annotations

import subprocess

import pytest

from tests.provision.chef.support import COOKBOOK, HERE
from tests.support import require_tool


@pytest.mark.tool
def test_cookbook_libraries_pass_their_minitests():
    ruby = require_tool("ruby")
    run = subprocess.run(
        [ruby, str(HERE / "ruby" / "test_libraries.rb"), str(COOKBOOK)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert " 0 failures, 0 errors, 0 skips" in run.stdout
