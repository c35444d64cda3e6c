"""`lab` is a package of its own (labctl/pyproject.toml): its wheel holds labctl and clusterspec only, installs into
an environment that has neither this repository nor its other packages, and works there from the cluster's settings
alone (no cluster.yaml)."""

from __future__ import annotations

import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

from tests.labctl.settings import SETTINGS_TEXT
from tests.support import ROOT

pytest.importorskip(
    "hatchling", reason="hatchling (the lab package's build backend, in the dev extras) is absent"
)


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(out),
                    str(ROOT / "labctl")], check=True, capture_output=True, timeout=120)  # fmt: skip
    (whl,) = out.glob("research_lab-*.whl")
    return whl


def test_the_wheel_holds_lab_and_the_names_it_reads_nothing_else(wheel: Path) -> None:
    names = zipfile.ZipFile(wheel).namelist()
    tops = {n.split("/", 1)[0] for n in names}
    assert tops == {"labctl", "clusterspec", next(t for t in tops if t.endswith(".dist-info"))}
    meta = zipfile.ZipFile(wheel).read(next(n for n in names if n.endswith("/METADATA"))).decode()
    assert "Requires-Dist: kubernetes" in meta and "pydantic" not in meta and "jinja2" not in meta.lower()
    entry = zipfile.ZipFile(wheel).read(next(n for n in names if n.endswith("entry_points.txt"))).decode()
    assert "lab = labctl.cli:main" in entry


def test_installed_alone_it_works_without_the_repository(wheel: Path, tmp_path: Path) -> None:
    env_dir = tmp_path / "laptop"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(env_dir)], check=True, timeout=60)
    py = env_dir / "bin" / "python"
    site = subprocess.run([str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          check=True, capture_output=True, text=True).stdout.strip()  # fmt: skip
    # the third-party dependencies from this environment, as a path (its .pth files, the project's editable
    # install among them, are not read from there)
    Path(site, "deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    subprocess.run([sys.executable, "-m", "pip", "--python", str(py), "install", "--no-deps", "--no-index", "-q",
                    str(wheel)], check=True, capture_output=True, timeout=120)  # fmt: skip
    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / "train.py").write_text("print(1)\n")
    (proj / "requirements.txt").write_text("torch\n")
    settings = tmp_path / "settings.yaml"
    settings.write_text(SETTINGS_TEXT)
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "LAB_ENGINE": ""}
    done = subprocess.run([str(env_dir / "bin" / "lab"), "--settings", str(settings), "image", "build", str(proj)],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "the standard image has all 1 requirements" in done.stdout
    probe = subprocess.run([str(py), "-c", "import labctl, clusterspec; print(labctl.__file__)\nimport autoscaler"],
                           cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60)  # fmt: skip
    assert probe.stdout.startswith(site) and "No module named 'autoscaler'" in probe.stderr
