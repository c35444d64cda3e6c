"""The first `make demo` or `make test` installs for minutes; it must say so and show pip's progress, not sit silent
(issue 16: `pip install -q` printed nothing for about three minutes). Checked with `make -n` (nothing runs)."""

from __future__ import annotations

import shutil
import subprocess

from tests.support import ROOT


def test_the_first_install_announces_itself_and_shows_pips_lines():
    make = shutil.which("make")
    assert make, "make is what the README's commands run"
    done = subprocess.run([make, "--no-print-directory", "-n", "-W", "pyproject.toml", "venv"], cwd=ROOT, capture_output=True, text=True,
                          timeout=60, check=True)  # fmt: skip
    lines = done.stdout.splitlines()
    assert lines[0].startswith('echo "make: installing the Python dependencies')
    install = next(line for line in lines if "-e '.[dev]'" in line)
    assert (
        " -q " not in install and "Collecting" in done.stdout
    )  # pip's own lines, filtered to one per package
    assert "set -o pipefail" in install  # a failed install still fails the make
