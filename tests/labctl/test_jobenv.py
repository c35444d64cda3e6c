"""The job's deps step (labctl/jobenv.py) and entry (labctl/entry.py), run as the pod runs them: ``python3 -c`` with
the image's interpreter, in a venv shaped as deploy/standard-image/Dockerfile builds /opt/venv (``uv venv``: no pip
of its own; pip and setuptools only as the image's pinned packages), and as root owns it: the job never writes there.
A project installs itself as its README says (``pip install -e .``, ``-r requirements.txt`` with ``-e .``), the
image's packages count as installed, the image's console scripts run the job's interpreter, a failed requirement
stops the pod with its reason, and the command's output reaches both the pod's log and ``$LOG_DIR``. Nothing is
fetched: ``PIP_NO_INDEX``."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from importlib import resources
from pathlib import Path

import pytest

from clusterspec import standard_image
from tests.labctl.conftest import make_wheel
from tests.support import ROOT

BASE_PYTHON = shutil.which("python3.11") or sys.executable


def _script(name: str) -> str:
    return resources.files("labctl").joinpath(name).read_text()


WHEELS = ROOT / ".cache" / "standard-image-wheels"


def _pins() -> list[str]:
    return [f"{n}=={v}" for n, v in standard_image.packages().items() if n in ("pip", "setuptools")]


def _image_venv(root: Path, with_pip: bool) -> Path:
    """/opt/venv as the Dockerfile makes it: a venv without pip (``uv venv``), then the image's pinned pip and
    setuptools (their wheels fetched once into .cache, as any package; the jobs themselves fetch nothing)."""
    subprocess.run([BASE_PYTHON, "-m", "venv", "--without-pip", str(root)], check=True)
    python = root / "bin" / "python"
    if with_pip:
        pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "-q"]
        if not all(any(WHEELS.glob(f"{p.replace('==', '-')}-*.whl")) for p in _pins()):
            subprocess.run([*pip, "download", "--no-deps", "-d", str(WHEELS), *_pins()], check=True)
        subprocess.run([*pip, "--python", str(python), "install", "--no-index", "--find-links", str(WHEELS),
                        *_pins()], check=True)  # fmt: skip
    return python


@pytest.fixture(scope="module")
def image(tmp_path_factory) -> Path:
    return _image_venv(tmp_path_factory.mktemp("img") / "venv", with_pip=True)


def _project(root: Path, requirements: str | None = None) -> Path:
    (root / "tinypkg").mkdir(parents=True)
    (root / "tinypkg" / "__init__.py").write_text("VALUE = 42\n")
    (root / "setup.py").write_text("from setuptools import setup\nsetup(name='tinypkg', version='0.1', "
                                   "packages=['tinypkg'])\n")  # fmt: skip
    if requirements is not None:
        (root / "requirements.txt").write_text(requirements)
    return root


def _env(proj: Path, installs: list[list[str]], **extra: str) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV", "PIP_"))}
    return env | {"LAB_VENV": str(proj / ".lab" / "venv"), "LAB_CODE_DIR": str(proj),
                  "LAB_INSTALL": json.dumps(installs), "PIP_NO_INDEX": "1", "PIP_CACHE_DIR": str(proj / ".pipcache"),
                  "LAB_NO_BUILD_ISOLATION": "1", **extra}  # fmt: skip


def _deps(python: Path, proj: Path, installs: list[list[str]]) -> subprocess.CompletedProcess:
    return subprocess.run([python, "-c", _script("jobenv.py")], cwd=proj, env=_env(proj, installs),
                          capture_output=True, text=True)  # fmt: skip


def _run(python: Path, proj: Path, *command: str, **extra: str) -> subprocess.CompletedProcess:
    return subprocess.run([python, "-c", _script("entry.py"), *command], cwd=proj, env=_env(proj, [], **extra),
                          capture_output=True, text=True)  # fmt: skip


def _site(python: Path) -> str:
    return subprocess.run([python, "-c", "import site; print(site.getsitepackages()[0])"], check=True,
                          capture_output=True, text=True).stdout.strip()  # fmt: skip


def test_the_standard_image_has_pip_and_setuptools_for_the_deps_step() -> None:
    """The Dockerfile's `uv venv` has no pip: the image pins pip and setuptools, which the deps step and a
    project's `pip install -e .` (no build isolation, nothing fetched) use."""
    packages = standard_image.packages()
    assert {"pip", "setuptools"} <= set(packages)
    text = (ROOT / "deploy" / "standard-image" / "Dockerfile").read_text()
    assert "uv venv" in text and "--seed" not in text  # pip comes from the pins, at their versions


def test_pip_install_e_dot_as_the_readme_says(image: Path, tmp_path: Path) -> None:
    proj = _project(tmp_path / "proj")
    done = _deps(image, proj, [["-e", "."]])
    assert done.returncode == 0, done.stderr
    assert "lab: deps: pip install -e ." in done.stdout
    ran = _run(image, proj, "python", "-c", "import tinypkg, sys; print('value', tinypkg.VALUE, sys.prefix)",
               LOG_DIR=str(tmp_path / "results" / "job"), JOB_COMPLETION_INDEX="0")  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    assert f"value 42 {proj / '.lab' / 'venv'}" in ran.stdout
    log = (tmp_path / "results" / "job" / "logs" / "node-0.log").read_text()
    assert "value 42" in log and log.rstrip().endswith("--- lab: exit 0")
    assert "tinypkg" not in " ".join(os.listdir(_site(image)))  # the image's environment is untouched


def test_the_image_packages_and_scripts_are_the_jobs(image: Path, tmp_path: Path) -> None:
    proj = _project(tmp_path / "proj")
    assert _deps(image, proj, []).returncode == 0
    venv_bin = proj / ".lab" / "venv" / "bin"
    pip = (venv_bin / "pip").read_text().splitlines()[0]
    assert pip == f"#!{venv_bin / 'python'}"  # the image's console script, run by the job's interpreter
    # a script whose #! names the versioned interpreter, as pip writes them (torchrun in a pip-built venv)
    tool = tmp_path / "img" / "venv"
    subprocess.run([BASE_PYTHON, "-m", "venv", "--without-pip", str(tool)], check=True)
    (tool / "bin" / "tool").write_text(f"#!{tool}/bin/python3.11\nimport sys\nprint(sys.prefix)\n")
    (tool / "bin" / "tool").chmod(0o755)
    other = _project(tmp_path / "other")
    assert _deps(tool / "bin" / "python", other, []).returncode == 0
    assert _run(tool / "bin" / "python", other, "tool").stdout.strip() == str(other / ".lab" / "venv")
    ran = _run(image, proj, "python", "-c", "import pip, sys; print(pip.__file__); print(sys.prefix)")
    where, prefix = ran.stdout.split()
    assert where.startswith(_site(image)) and prefix == str(proj / ".lab" / "venv")  # seen, not copied
    # `pip install -e .` in the job's own command: into the job's venv, as on a laptop (no Permission denied)
    ran = _run(image, proj, "sh", "-c", "pip install -q -e . && python -c "
               "'import tinypkg; print(tinypkg.__file__)'")  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.strip() == str(proj / "tinypkg" / "__init__.py")


def test_requirements_with_e_dot_install_the_project(image: Path, tmp_path: Path) -> None:
    proj = _project(tmp_path / "proj", requirements="pip\n-e .\n")  # pip: the image's, counted as installed
    done = _deps(image, proj, [["-r", "requirements.txt"]])
    assert done.returncode == 0, done.stderr
    assert _run(image, proj, "python", "-c", "import tinypkg").returncode == 0  # the editable .pth is read


def test_an_image_without_pip_gets_the_interpreters_own(tmp_path: Path) -> None:
    bare = _image_venv(tmp_path / "bare", with_pip=False)  # exactly `uv venv`: no pip at all
    assert subprocess.run([bare, "-c", "import pip"], capture_output=True).returncode != 0
    proj = tmp_path / "proj"
    proj.mkdir()
    make_wheel(proj / "tinydep-0.1-py3-none-any.whl")
    (proj / "requirements.txt").write_text("./tinydep-0.1-py3-none-any.whl\n")
    done = _deps(bare, proj, [["-r", "requirements.txt"]])
    assert done.returncode == 0, done.stderr
    assert _run(bare, proj, "python", "-c", "import tinydep").returncode == 0


def test_a_failed_requirement_stops_the_pod_with_its_reason(image: Path, tmp_path: Path) -> None:
    proj = _project(tmp_path / "proj", requirements="tinypkg-typo==9.9\n")
    done = _deps(image, proj, [["-r", "requirements.txt"]])
    assert done.returncode != 0
    assert (
        "lab: deps: pip install -r requirements.txt failed (exit 1); the job's command did not run"
        in done.stderr
    )
    assert "tinypkg-typo" in done.stdout + done.stderr  # pip's own reason, in the container's log


def test_the_entry_keeps_the_commands_exit_status_and_both_streams(image: Path, tmp_path: Path) -> None:
    proj = _project(tmp_path / "proj")
    logs = tmp_path / "results" / "job"
    ran = _run(image, proj, "python", "-c", "import sys; print('out'); print('err', file=sys.stderr); sys.exit(3)",
               LOG_DIR=str(logs), JOB_COMPLETION_INDEX="1")  # fmt: skip
    assert (ran.returncode, ran.stdout, ran.stderr) == (3, "out\n", "err\n")
    text = (logs / "logs" / "node-1.log").read_text()
    assert "out\n" in text and "err\n" in text and "--- lab: exit 3" in text
    missing = _run(image, proj, "no-such-command-xyz")
    assert missing.returncode == 127 and "lab: no-such-command-xyz:" in missing.stderr


def test_keep_copies_what_the_command_wrote_next_to_the_code(image: Path, tmp_path: Path) -> None:
    proj = _project(tmp_path / "proj")
    logs = tmp_path / "results" / "job"
    ran = _run(image, proj, "sh", "-c", "mkdir -p out/adder && echo w > out/adder/model.pt && exit 2",
               LOG_DIR=str(logs), LAB_KEEP="out:runs")  # fmt: skip
    assert ran.returncode == 2  # a failed command's output is kept too
    assert (logs / "out" / "adder" / "model.pt").read_text() == "w\n"
    assert (
        f"lab: kept out in {logs / 'out'}" in ran.stderr
        and "lab: --keep runs: the command wrote no runs" in ran.stderr
    )
