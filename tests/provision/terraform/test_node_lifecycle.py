"""What removes the Node of an instance terminated outside the autoscaler (a spot interruption, a person, an
instance refresh): the control plane's `gc-nodes`, run as bootstrap.sh defines it against fakes
(data/node_lifecycle_cases.yaml, each case the cloud node lifecycle controller's rule)."""

from __future__ import annotations

import subprocess

import pytest

from tests.provision.terraform.tf_files import MODULES
from tests.support import ROOT, load_yaml

HERE = ROOT / "tests/provision/terraform"
CASES = load_yaml(HERE / "data/node_lifecycle_cases.yaml")
BOOTSTRAP = MODULES / "control_plane/scripts/bootstrap.sh"


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_gc_nodes(case, tmp_path):
    fakes, state = tmp_path / "bin", tmp_path / "state"
    fakes.mkdir()
    state.mkdir()
    for name in ("kubectl", "aws"):
        (fakes / name).symlink_to(HERE / "fakes/node_lifecycle_fake.sh")
    (state / "nodes").write_text("".join(line + "\n" for line in case["nodes"]))
    for region, ids in case["live"].items():
        (state / f"live-{region}").write_text(ids + "\n")
    (state / "calls").touch()
    script = f"set -euo pipefail\nMEMBER=0\nsource {BOOTSTRAP}\ngc_nodes\n"
    done = subprocess.run(["bash", "-c", script], env={"PATH": f"{fakes}:/usr/bin:/bin", "FAKE_STATE": str(state)},
                          capture_output=True, text=True, timeout=30)  # fmt: skip
    assert done.returncode == 0, done.stderr
    calls = (state / "calls").read_text().splitlines()
    deleted = [c.split()[-2] for c in calls if c.startswith("kubectl") and " delete node " in c]
    assert deleted == case["deleted"], done.stderr
    described = {}
    for c in calls:
        if c.startswith("aws ec2 describe-instances"):
            words = c.split()
            region = words[words.index("--region") + 1]
            described[region] = next(w for w in words if w.startswith("Name=instance-id,Values=")).split(
                "=", 2
            )[2]
    assert described == case["described"]


def test_every_member_runs_it_every_minute():
    text = BOOTSTRAP.read_text()
    assert "ExecStart=/usr/local/sbin/cluster-control-plane gc-nodes" in text
    assert "OnUnitActiveSec=1min" in text and "systemctl enable --now cluster-node-lifecycle.timer" in text
