"""`--help` works on every task and `-h` means help (provision/cli_support.py): the real `invoke` on tasks.py. A task
whose options would have taken `-h` (--home, --ssh-from) keeps it for help; a positional argument never swallows
`--help` (`invoke remove-user --help` once planned removing a user named "--help")."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.support import ROOT

INVOKE = str(Path(sys.executable).parent / "invoke")


def _invoke(*argv: str) -> subprocess.CompletedProcess:
    return subprocess.run([INVOKE, *argv], cwd=ROOT, capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize(
    "argv",
    [("add-user", "-h"), ("remove-user", "-h"), ("bake-ami", "-h"), ("certificates", "-h"),
     ("remove-user", "--help"), ("add-user", "--help"), ("rotate-certificates", "-h")],
)  # fmt: skip
def test_h_and_help_show_the_tasks_help(argv: tuple[str, ...]) -> None:
    done = _invoke(*argv)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"Usage: inv[oke] [--core-opts] {argv[0]} [--options]")
    assert "research-view" not in done.stdout  # nothing planned, nothing removed


def test_help_shows_each_options_text() -> None:
    """Every option a task documents in its help= keeps that text in `--help` (checking for a `-h` short flag once
    consumed invoke's help texts, and every task's options were listed bare)."""
    sys.path.insert(0, str(ROOT))
    from invoke import Task

    import tasks

    documented = {t.name: dict(t.help) for t in vars(tasks).values() if isinstance(t, Task)}
    assert documented["validate"] and documented["bench-peers"], (
        "the tasks' help texts are gone before --help"
    )
    for name in ("validate", "bench-peers", "up"):
        done = _invoke(name, "--help")
        assert done.returncode == 0, done.stderr
        for text in documented[name].values():
            assert " ".join(text.split()[:4]) in " ".join(done.stdout.split()), (name, text)


def test_every_short_flag_is_a_letter() -> None:
    """invoke gives an option the first character of its name not yet taken, a dash included: bench-live's
    --lone-pod-idle once showed as ``--=STRING``."""
    sys.path.insert(0, str(ROOT))
    from invoke import Task

    import tasks

    for task in (t for t in vars(tasks).values() if isinstance(t, Task)):
        kept = dict(task.help)
        try:
            shorts = [n for a in task.get_arguments() for n in a.names if len(n) == 1]
        finally:
            task.help = kept
        assert all(n.isalnum() for n in shorts), (task.name, shorts)
    assert "-d STRING, --lone-pod-idle=STRING" in _invoke("bench-live", "--help").stdout


def test_home_keeps_its_long_flag() -> None:
    done = _invoke("add-user", "--home")
    assert done.returncode != 0 and "home" in done.stderr and "Traceback" not in done.stderr


@pytest.mark.parametrize(
    ("argv", "line"),
    [(("simulate", "--window", "abc"), "--window 'abc': give a number of hours, e.g. 24\n"),
     (("simulate", "--window", "-3"), "--window '-3': give a number of hours, e.g. 24 (more than 0)\n"),
     (("simulate", "--workers", "x"), "--workers 'x': give a number of processes, e.g. 2\n")],
)  # fmt: skip
def test_a_bad_number_is_one_line(argv: tuple[str, ...], line: str) -> None:
    done = _invoke(*argv)
    assert (done.returncode, done.stderr) == (2, line)


@pytest.mark.parametrize("task", [("lab-settings",), ("add-user", "alice")])
def test_an_unreachable_api_is_one_line(task: tuple[str, ...], tmp_path) -> None:
    import socket

    import yaml

    with socket.socket() as s:  # a loopback port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    kc = tmp_path / "kubeconfig"
    kc.write_text(yaml.safe_dump({
        "apiVersion": "v1", "current-context": "x", "users": [{"name": "u", "user": {"token": "t"}}],
        "clusters": [{"name": "x", "cluster": {"server": f"https://127.0.0.1:{port}"}}],
        "contexts": [{"name": "x", "context": {"cluster": "x", "user": "u"}}]}))  # fmt: skip
    extra = ("--home", str(tmp_path / "home")) if task[0] == "add-user" else ()
    done = _invoke(*task, "--kubeconfig", str(kc), *extra)
    assert done.returncode == 1 and done.stderr.count("\n") == 1, done.stderr
    assert done.stderr.startswith("the Kubernetes API does not answer (NewConnectionError:")


def test_validate_json_is_one_object_with_the_specs_figures(tmp_path) -> None:
    import json

    done = _invoke("validate", "--json")
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["ok"] is True and data["cluster"] == "dlr" and data["node_groups"] > 0
    assert data["spill_over_order"][0] in data["regions"]
    bad = tmp_path / "cluster.yaml"
    bad.write_text("name: dlr\n")
    done = _invoke("validate", "--json", "--spec", str(bad))
    assert done.returncode == 2 and done.stderr == ""
    data = json.loads(done.stdout)
    assert data["ok"] is False and data["problems"] and all(isinstance(p, str) for p in data["problems"])


def test_preflight_json_names_the_roots_and_the_problems() -> None:
    """Against an embedded AWS endpoint nobody listens on: the problem is the network, in the object, exit 2."""
    import json
    import os
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    done = subprocess.run([INVOKE, "preflight", "--json", "--region", "global", "--endpoint", f"http://127.0.0.1:{port}"],
                          cwd=ROOT, capture_output=True, text=True, timeout=120,
                          env={**os.environ, "AWS_MAX_ATTEMPTS": "1"})  # fmt: skip
    assert done.returncode == 2, done.stderr
    data = json.loads(done.stdout)
    assert data["ok"] is False and data["roots"] == ["global"]
    (line,) = data["problems"]
    assert line.startswith("preflight: AWS does not answer"), line
