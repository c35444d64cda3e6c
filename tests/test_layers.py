"""The imports flow one way (docs/architecture.md, "Layers"): the import-linter contracts in pyproject.toml hold,
and each kind of contract fails on an import that runs back up."""

from __future__ import annotations

import shutil
import subprocess
import sys

import pytest
from importlinter.cli import lint_imports

from tests.support import ROOT

PACKAGES = ("clusterspec", "provision", "autoscaler", "simulator", "labctl", "localcluster", "demos")


def test_every_import_runs_down_the_layers(capsys) -> None:
    code = lint_imports(config_filename=str(ROOT / "pyproject.toml"), no_cache=True, no_logo=True)
    out = capsys.readouterr().out
    assert code == 0, out
    assert "0 broken" in out


# (file, the line planted at its end, the contract's report of it)
PLANTED = [
    ("clusterspec/names.py", "import provision.deploy", "clusterspec is not allowed to import provision"),
    ("labctl/jobs.py", "import autoscaler.core", "labctl is not allowed to import autoscaler"),
    ("simulator/model/pods.py", "import simulator.runner", "simulator.model is not allowed to import simulator.runner"),
    ("autoscaler/controller.py", "import simulator.model", "autoscaler is not allowed to import simulator"),
    ("autoscaler/service.py", "import autoscaler.commands.run", "autoscaler.service is not allowed to import autoscaler.commands"),
    ("autoscaler/core/bins.py", "import autoscaler.core.packing", "autoscaler.core.bins is not allowed to import autoscaler.core.packing"),
    ("autoscaler/core/fit.py", "import kubernetes", "autoscaler.core is not allowed to import kubernetes"),
]  # fmt: skip


@pytest.fixture(scope="module")
def tree(tmp_path_factory):
    """The packages' sources and the contracts, copied once (each case plants one line and takes it out again)."""
    out = tmp_path_factory.mktemp("layers")
    for name in PACKAGES:
        shutil.copytree(
            ROOT / name, out / name, ignore=shutil.ignore_patterns("__pycache__", "*.yaml", "*.csv")
        )
    shutil.copy(ROOT / "pyproject.toml", out / "pyproject.toml")
    return out


@pytest.mark.parametrize(("path", "line", "report"), PLANTED, ids=[p[0] for p in PLANTED])
def test_an_import_back_up_breaks_a_contract(tree, path: str, line: str, report: str) -> None:
    target = tree / path
    original = target.read_text()
    target.write_text(original + f"\n{line}  # noqa\n")
    try:
        done = subprocess.run(
            [sys.executable, "-c", "from importlinter.cli import lint_imports_command as c; c()",
             "--no-cache", "pyproject.toml"],
            cwd=tree, env={"PYTHONPATH": str(tree), "PATH": "/usr/bin:/bin"},
            capture_output=True, text=True, timeout=120, check=False,
        )  # fmt: skip
    finally:
        target.write_text(original)
    assert done.returncode == 1, done.stdout + done.stderr
    assert report in done.stdout, done.stdout
