"""`invoke chef-attributes` as a user runs it: a problem is one line on stderr and exit status 2."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.support import ROOT

INVOKE = str(Path(sys.executable).parent / "invoke")


def test_missing_terraform_outputs_name_invoke_up(tmp_path):
    run = subprocess.run(
        [INVOKE, "chef-attributes", "--site", "lab", "--outputs", str(tmp_path)],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert run.returncode == 2
    assert run.stderr.splitlines() == [
        f"{tmp_path}/us-west-2/outputs.json: no Terraform outputs; run `invoke up` first "
        "(or pass --placeholders for a dry run)"
    ]
    assert "Traceback" not in run.stdout + run.stderr
