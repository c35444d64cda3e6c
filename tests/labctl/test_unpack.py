"""The init container's script (labctl/unpack.py) run as the pod runs it, ``python3 -c <its text>``, by this
interpreter and by the system's Python 3.11 where it has one (Debian 12's 3.11.2 predates tarfile's data filter,
PEP 706): the snapshot unpacks, a wrong hash stops the pod, and a member outside the working directory is refused."""

from __future__ import annotations

import gzip
import hashlib
import io
import subprocess
import sys
import tarfile
from importlib import resources
from pathlib import Path

import pytest

SCRIPT = resources.files("labctl").joinpath("unpack.py").read_text()
PYTHONS = [sys.executable] + [p for p in ("/usr/bin/python3.11",) if Path(p).exists()]


def _snapshot(tmp_path: Path, members: dict[str, bytes]) -> tuple[str, str]:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size, info.mode = len(data), 0o644
            tar.addfile(info, io.BytesIO(data))
    blob = buf.getvalue()
    path = tmp_path / "code.tar.gz"
    path.write_bytes(gzip.compress(blob))
    return f"file://{path}", hashlib.sha256(blob).hexdigest()


def _unpack(python: str, url: str, sha: str, dest: Path) -> subprocess.CompletedProcess:
    env = {"LAB_CODE_URL": url, "LAB_CODE_SHA256": sha, "LAB_CODE_DIR": str(dest), "PATH": "/usr/bin:/bin"}
    return subprocess.run([python, "-c", SCRIPT], env=env, capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize("python", PYTHONS)
def test_the_snapshot_unpacks_into_the_working_directory(tmp_path, python) -> None:
    url, sha = _snapshot(tmp_path, {"train.py": b"print(1)\n", "data/x/prepare.py": b"", ".lab/meta": b"{}"})
    done = _unpack(python, url, sha, tmp_path / "ws")
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "ws" / "train.py").read_bytes() == b"print(1)\n"
    assert (tmp_path / "ws" / "data" / "x" / "prepare.py").exists() and not (
        tmp_path / "ws" / ".lab"
    ).exists()
    assert "(2 files," in done.stdout


@pytest.mark.parametrize("python", PYTHONS)
def test_a_member_outside_the_working_directory_is_refused(tmp_path, python) -> None:
    url, sha = _snapshot(tmp_path, {"train.py": b"", "../escaped.py": b"x"})
    done = _unpack(python, url, sha, tmp_path / "ws")
    assert done.returncode == 1 and not (tmp_path / "escaped.py").exists()
    assert done.stderr.startswith("lab: ") and done.stderr.count("\n") == 1, done.stderr  # one line


@pytest.mark.parametrize("python", PYTHONS)
def test_a_snapshot_that_is_not_the_submitted_one_stops_the_pod(tmp_path, python) -> None:
    url, _ = _snapshot(tmp_path, {"train.py": b""})
    done = _unpack(python, url, "0" * 64, tmp_path / "ws")
    assert done.returncode == 1 and "is not the snapshot's 0000000000000000; resubmit the job" in done.stderr
    assert not (tmp_path / "ws").exists()
