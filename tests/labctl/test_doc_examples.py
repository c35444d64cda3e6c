"""Every `lab submit` example of docs/researchers.md runs on `invoke local-cluster` as written (issue 37): the
A100 multi-node one included, which asks for EFA (the local groups are tagged with it as Terraform tags them,
localcluster/aws_bootstrap.py) and stayed Pending with no word. The local cluster of `invoke local-cluster`
(demos/researcher/run.py); the command is the docs' with the project's path, and a rendezvous port of its own since
every pod is a process of this one host. train.py imports nothing heavy: 16 workers of the A100 example are cheap."""

from __future__ import annotations

import json
import shlex
import time

import pytest

from clusterspec.loader import load_spec
from demos.researcher.run import local_cluster
from labctl.cli import main as lab
from localcluster.processes import free_port
from tests.doc_commands import extract

pytestmark = pytest.mark.e2e

TRAIN = "import os\nprint('rank', os.environ.get('RANK', os.environ.get('NODE_RANK')), 'ran', flush=True)\n"


def _examples() -> list[str]:
    return [c.text for c in extract() if c.file == "docs/researchers.md" and c.text.startswith("lab submit --gpus")
            and "[" not in c.text and "COMMAND" not in c.text]  # fmt: skip


def _lab(capsys, *argv: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as e:
        lab(list(argv))
    out, err = capsys.readouterr()
    return e.value.code, out, err


def test_the_examples_are_found() -> None:
    assert any("--gpu-type A100" in t and "--nodes 2" in t for t in _examples()), _examples()


def test_every_submit_example_of_the_docs_runs_locally(tmp_path, monkeypatch, capsys) -> None:
    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / "train.py").write_text(TRAIN)
    cluster = local_cluster(load_spec(), tmp_path / "out", tmp_path / "secrets", say=lambda s: None)
    with cluster as (added, _, _):
        monkeypatch.setenv("KUBECONFIG", str(added.kubeconfig))
        monkeypatch.setenv("LAB_ENGINE", "")
        monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
        for i, text in enumerate(_examples()):
            argv = shlex.split(text)[1:]
            at = argv.index("--")
            name = f"doc-{i}"
            if "--name" in argv:
                argv[argv.index("--name") + 1] = name
            else:
                argv[at:at] = ["--name", name]
                at += 2
            port = str(free_port())
            argv[at:at] = [
                "--path",
                str(proj),
                "--env",
                f"PET_MASTER_PORT={port}",
                "--env",
                f"MASTER_PORT={port}",
            ]
            code, out, err = _lab(capsys, *argv)
            assert code == 0, f"{text}: {err}"
            deadline, state = time.monotonic() + 180, ""
            while time.monotonic() < deadline:
                code, out, err = _lab(capsys, "status", "-o", "json")
                row = next(r for r in json.loads(out)["jobs"] if r["job"] == name)
                state = f"{row['state']} {row['reason']}"
                if row["state"] in ("Succeeded", "Failed"):
                    break
                time.sleep(2)
            assert row["state"] == "Succeeded", f"{text}: {state}"
            code, out, err = _lab(capsys, "logs", name, "--all")
            assert code == 0 and " ran" in out, f"{text}: {err}{out[-2000:]}"
