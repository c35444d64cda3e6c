"""The code snapshot: same tree -> same bytes; a tracked change changes it; what is left out is said in one line."""

from __future__ import annotations

import io
import os
import subprocess
import tarfile
from pathlib import Path

import pytest

from labctl.context import build_snapshot
from tests.labctl.settings import SETTINGS, SETTINGS_TEXT


def build_context(root, *_):
    return build_snapshot(root)


BASE = PY = None


def _git(root: Path, *args: str) -> None:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@x", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@x"}  # fmt: skip
    subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True, env=env)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "resnet"
    (root / "src").mkdir(parents=True)
    (root / "src" / "train.py").write_text("print('train')\n")
    (root / "run.sh").write_text("#!/bin/sh\npython src/train.py\n")
    (root / "run.sh").chmod(0o755)
    (root / "requirements.txt").write_text("torch==2.5.1\n")
    (root / ".gitignore").write_text("*.ckpt\nlogs/\n")
    (root / ".dockerignore").write_text("# not for the image\nnotes/\n*.md\n!KEEP.md\n")
    _git(root, "init", "-q")
    _git(root, "add", ".")
    _git(root, "commit", "-q", "-m", "init")
    return root


def _names(data: bytes) -> list[str]:
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        return tar.getnames()


def test_same_tree_same_bytes_even_after_touching_and_copying(project: Path, tmp_path: Path) -> None:
    first = build_context(project, BASE, PY)
    os.utime(project / "src" / "train.py", (1, 1))  # mtimes never enter
    second = build_context(project, BASE, PY)
    assert first.data == second.data and first.digest == second.digest
    copy = tmp_path / "elsewhere" / "resnet"
    copy.parent.mkdir()
    subprocess.run(["git", "clone", "-q", str(project), str(copy)], check=True)
    assert build_context(copy, BASE, PY).digest == first.digest  # another checkout of the same tree


def test_uncommitted_change_to_a_tracked_file_changes_the_hash(project: Path) -> None:
    before = build_context(project, BASE, PY)
    (project / "src" / "train.py").write_text("print('train, lr 3e-4')\n")
    after = build_context(project, BASE, PY)
    assert after.digest != before.digest
    with tarfile.open(fileobj=io.BytesIO(after.data)) as tar:
        assert tar.extractfile("src/train.py").read() == b"print('train, lr 3e-4')\n"


def test_untracked_files_enter_unless_git_ignores_them(project: Path) -> None:
    (project / "src" / "model.py").write_text("class Net: ...\n")  # new, not yet added
    (project / "best.ckpt").write_bytes(b"\0" * 100)
    (project / "logs").mkdir()
    (project / "logs" / "run1.txt").write_text("loss 0.1\n")
    names = _names(build_context(project, BASE, PY).data)
    assert "src/model.py" in names
    assert "best.ckpt" not in names and "logs/run1.txt" not in names


def test_never_git_venvs_data_or_dockerignored(project: Path) -> None:
    venv = project / "env311"  # a virtual environment under any name, even when git does not ignore it
    (venv / "lib").mkdir(parents=True)
    (venv / "pyvenv.cfg").write_text("home = /usr/bin\n")
    (venv / "lib" / "site.py").write_text("x = 1\n")
    (project / "data").mkdir()
    (project / "data" / "imagenet.tar").write_bytes(b"x" * 10)
    (project / "notes").mkdir()
    (project / "notes" / "ideas.txt").write_text("idea\n")
    (project / "README.md").write_text("readme\n")
    (project / "KEEP.md").write_text("kept by the ! exception\n")
    (project / "src" / "__pycache__").mkdir()
    (project / "src" / "__pycache__" / "train.cpython-311.pyc").write_bytes(b"\0")
    (project / "data" / "prepare.py").write_text("print('prepare')\n")
    _git(project, "add", "data/prepare.py")  # tracked code in a data folder travels (nanoGPT's prepare.py)
    snap = build_context(project, BASE, PY)
    names = _names(snap.data)
    assert not [n for n in names if n.startswith((".git/", "env311/", "notes/")) or n.endswith(".pyc")]
    assert "data/prepare.py" in names and "data/imagenet.tar" not in names
    assert "README.md" not in names and "KEEP.md" in names
    assert {"src/train.py", "run.sh", "requirements.txt", ".dockerignore"} <= set(names)
    assert (
        "left out 1 untracked file in data/ (data travels on /datasets or in git, not with the code)"
        in snap.notes
    )


def test_a_deleted_tracked_file_leaves_the_context(project: Path) -> None:
    (project / "run.sh").unlink()
    assert "run.sh" not in _names(build_context(project, BASE, PY).data)


def test_entries_are_normalised(project: Path) -> None:
    ctx = build_context(project, BASE, PY)
    with tarfile.open(fileobj=io.BytesIO(ctx.data)) as tar:
        members = tar.getmembers()
    assert [m.name for m in members] == sorted(m.name for m in members)
    assert {(m.mtime, m.uid, m.gid, m.uname, m.gname) for m in members} == {(0, 0, 0, "", "")}
    modes = {m.name: m.mode for m in members}
    assert modes["run.sh"] == 0o755 and modes["src/train.py"] == 0o644


def test_outside_git_every_file_but_the_excluded(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("a\n")
    (tmp_path / ".venv" / "bin").mkdir(parents=True)
    (tmp_path / ".venv" / "bin" / "python").write_text("")
    names = _names(build_context(tmp_path, BASE, PY).data)
    assert names == ["a.py"]


def test_push_skips_a_tag_the_registry_already_holds(monkeypatch) -> None:
    import boto3
    from moto import mock_aws

    from labctl import engine

    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    with mock_aws():
        ecr = boto3.client("ecr", region_name="us-west-2")
        ecr.create_repository(repositoryName="dlr/research", imageTagMutability="IMMUTABLE")
        manifest = '{"schemaVersion": 2, "mediaType": "application/vnd.docker.distribution.manifest.v2+json"}'
        ecr.put_image(repositoryName="dlr/research", imageManifest=manifest, imageTag="0123456789abcdef")
        host = "123456789012.dkr.ecr.us-west-2.amazonaws.com"
        assert engine.in_ecr(f"{host}/dlr/research:0123456789abcdef")
        assert not engine.in_ecr(f"{host}/dlr/research:fedcba9876543210")
        calls = []
        monkeypatch.setattr(engine.subprocess, "run", lambda *a, **k: calls.append(a))
        engine.push("docker", f"{host}/dlr/research:0123456789abcdef")
        assert calls == []  # neither login nor push


def test_build_and_push_with_a_docker_engine(project: Path, tmp_path: Path, monkeypatch, capsys) -> None:
    """A stand-in docker on the PATH records what lab asks of it: the requirements' context on stdin, the tag, the
    push; requirements the standard image lacks are the only reason to build."""
    import boto3
    from moto import mock_aws

    from labctl import deps
    from labctl.cli import main

    (project / "requirements.txt").write_text("torch\ntransformers==4.57.0\n")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    log = tmp_path / "docker.log"
    (bin_dir / "docker").write_text(
        "#!/bin/sh\n"
        f'echo "$@" >> {log}\n'
        'case "$1" in\n'
        f"  build) cat > {tmp_path}/stdin.tar ;;\n"
        "  image) exit 1 ;;\n"  # image inspect: not built yet
        "esac\n"
        "exit 0\n"
    )
    (bin_dir / "docker").chmod(0o755)
    settings_file = tmp_path / "settings.yaml"
    settings_file.write_text(SETTINGS_TEXT)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    monkeypatch.delenv("LAB_ENGINE", raising=False)
    monkeypatch.setenv("LAB_REGISTRY", "123456789012.dkr.ecr.us-west-2.amazonaws.com")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    with mock_aws():
        boto3.client("ecr", region_name="us-west-2").create_repository(repositoryName="dlr/research")
        with pytest.raises(SystemExit) as e:
            main(["--settings", str(settings_file), "image", "build", str(project), "--push"])
    out, err = capsys.readouterr()
    assert e.value.code == 0, err
    d = deps.resolve(build_snapshot(project), SETTINGS.data.standard_packages)
    assert d.missing == ("transformers==4.57.0",)
    ref = f"123456789012.dkr.ecr.us-west-2.amazonaws.com/dlr/research:{d.tag(SETTINGS.standard_image)}"
    calls = log.read_text().splitlines()
    assert calls[0] == "info"
    assert f"build -f Dockerfile -t {ref} -" in calls
    assert calls[-1] == f"push {ref}"
    assert any(c.startswith("login --username AWS --password-stdin 123456789012.dkr.ecr") for c in calls)
    with tarfile.open(tmp_path / "stdin.tar") as tar:
        assert tar.getnames() == ["Dockerfile", "requirements.txt"]  # no code in the image
        assert f"FROM {SETTINGS.standard_image}" in tar.extractfile("Dockerfile").read().decode()


def test_the_standard_image_needs_no_build(project: Path, tmp_path: Path, monkeypatch, capsys) -> None:
    from labctl.cli import main

    settings_file = tmp_path / "settings.yaml"
    settings_file.write_text(SETTINGS_TEXT)
    monkeypatch.setenv("LAB_ENGINE", "")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    (project / "requirements.txt").write_text("torch>=2.3  # the GPU build\nnumpy\n")
    with pytest.raises(SystemExit) as e:
        main(["--settings", str(settings_file), "image", "build", str(project)])
    assert e.value.code == 0
    assert (
        "requirements.txt: the standard image has all 2 requirements; no image to build"
        in capsys.readouterr().out
    )
    (project / "requirements.txt").write_text("torch==2.5.1\n")  # an older pin: only an image has it
    with pytest.raises(SystemExit) as e:
        main(["--settings", str(settings_file), "image", "build", str(project)])
    err = capsys.readouterr().err
    assert e.value.code == 2 and err.startswith("lab: no working docker or buildah here to build ")
    assert err.count("\n") == 1


def test_each_thing_left_out_is_one_line(project: Path) -> None:
    (project / "big.bin").write_bytes(b"\0" * 3_000_000)
    (project / "notes.md").write_text("x\n")
    _git(project, "add", "notes.md")
    (project / "src" / "train.py").write_text("print('changed')\n")
    snap = build_snapshot(project, max_file_mb=2)
    assert "big.bin" not in snap.files
    assert any(n.startswith("left out 1 file over 2 MB: big.bin (3 MB)") for n in snap.notes)
    assert "left out 1 tracked file that .dockerignore excludes: notes.md" in snap.notes
    dirty = [n for n in snap.notes if n.startswith("uncommitted changes in 2 files (notes.md, src/train.py)")]
    assert dirty and snap.git.endswith("+dirty")
    assert "big.bin" in build_snapshot(project, max_file_mb=0).files  # 0: no limit
    (project / "requirements.txt").unlink()
    assert (
        "no requirements.txt, pyproject.toml or setup.py: the job gets the standard image's packages only"
        in (build_snapshot(project).notes)
    )


def test_a_large_file_is_never_read(project: Path, monkeypatch) -> None:
    """The size is checked before a file is opened: a 2 GB checkpoint costs a stat, not 2 GB of memory."""
    big = project / "model.ckpt.bin"
    with big.open("wb") as f:
        f.truncate(2_000_000_000)  # sparse
    opened = []
    real = Path.open

    def spy(self, *a, **k):
        opened.append(self.name)
        return real(self, *a, **k)

    monkeypatch.setattr(Path, "open", spy)
    snap = build_snapshot(project)
    assert "model.ckpt.bin" not in opened and "model.ckpt.bin" not in snap.files


def test_deterministic_gzip(project: Path) -> None:
    assert build_snapshot(project).gzipped() == build_snapshot(project).gzipped()


@pytest.mark.parametrize(
    ("files", "at_start", "steps", "offline"),
    [
        # minGPT: setup.py and no requirements file; its README says `pip install -e .`
        ({"setup.py": "from setuptools import setup\nsetup(name='m')\n"}, True, [["-e", "."]], True),
        # `-e .` in requirements.txt: installed at start, once, never into an image
        ({"setup.py": "", "requirements.txt": "torch\n-e .\n"}, True, [["-r", "requirements.txt"]], True),
        ({"requirements.txt": ".\nnumpy\n"}, False, [["-r", "requirements.txt"]], True),
        # a requirement the image lacks, with an engine to build its image: only the package at start
        ({"setup.py": "", "requirements.txt": "transformers==4.57.0\n"}, False, [["-e", "."]], True),
        ({"requirements.txt": "transformers==4.57.0\n"}, True, [["-r", "requirements.txt"]], True),
        # a pyproject.toml that only configures tools is no package; one with another backend needs isolation
        ({"pyproject.toml": "[tool.ruff]\nline-length = 100\n"}, True, [], False),
        ({"pyproject.toml": "[project]\nname = 'p'\nversion = '1'\ndependencies = ['numpy']\n"}, True,
         [["-e", "."]], True),
        ({"pyproject.toml": "[build-system]\nrequires = ['hatchling']\nbuild-backend = 'hatchling.build'\n"
                            "[project]\nname = 'p'\nversion = '1'\n"}, True, [["-e", "."]], False),
    ],
)  # fmt: skip
def test_the_project_installs_itself_as_its_readme_says(
    tmp_path: Path, files, at_start, steps, offline
) -> None:
    from labctl import deps

    for name, text in files.items():
        (tmp_path / name).write_text(text)
    snap = build_snapshot(tmp_path)
    packages = SETTINGS.data.standard_packages
    plan = deps.plan(snap, deps.resolve(snap, packages), packages, at_start=at_start)
    assert [list(s) for s in plan.steps] == steps
    assert plan.no_build_isolation == offline
    assert deps.for_image(deps.resolve(snap, packages)).lines == tuple(
        x for x in deps.resolve(snap, packages).lines if x not in (".", "-e .")
    )  # the project's own files never go into an image
