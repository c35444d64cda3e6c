"""`invoke bake-ami` as a user runs it: a problem is one line on stderr and exit status 2."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.support import ROOT

INVOKE = str(Path(sys.executable).parent / "invoke")


def test_unknown_region_is_one_line_before_anything_runs():
    run = subprocess.run(
        [INVOKE, "bake-ami", "--region", "eu-west-9", "--local"], capture_output=True, text=True, cwd=ROOT
    )
    assert run.returncode == 2
    assert run.stderr.splitlines() == [
        "--region: region 'eu-west-9' is not in the spec (regions: us-west-2, us-east-1, us-east-2)"
    ]
