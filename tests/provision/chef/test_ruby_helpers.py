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


@pytest.mark.tool
@pytest.mark.parametrize("vcpus", [1, 2, 4, 8, 12, 32, 48, 96])
def test_lab_servers_reserve_what_cloud_nodes_of_their_size_do(vcpus):
    """libraries/kubelet_reserved.rb (Chef, from the server's cores) and clusterspec/kubelet_reserved.py (the cloud
    joins, per instance type) give the same KubeletConfiguration."""
    import json

    from clusterspec import kubelet_reserved

    ruby = require_tool("ruby")
    lib = COOKBOOK / "libraries" / "kubelet_reserved.rb"
    run = subprocess.run([ruby, "-rjson", "-r", str(lib), "-e", f"puts ClusterNode::KubeletReserved.config({vcpus}).to_json"],
                         capture_output=True, text=True, timeout=60)  # fmt: skip
    assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout) == kubelet_reserved.kubelet_config(vcpus)
