"""The README's and the docs' commands work as written (issue 16). tests/doc_commands.py finds them; every
literal one is listed in tests/doc_commands.yaml and run (fast ones here, slow ones under DOC_COMMANDS=all, which
`make docs-check` and CI set) or skipped with its reason; every synopsis names only flags its command has."""

from __future__ import annotations

import json
import os
import re
import subprocess

import pytest

from tests.doc_commands import ROOT, extract, flags, subcommand
from tests.support import load_yaml

REGISTRY = load_yaml(ROOT / "tests" / "doc_commands.yaml")
BY_COMMAND = {entry["command"]: entry for entry in REGISTRY}
COMMANDS = extract()
SLOW = os.environ.get("DOC_COMMANDS") == "all"


def test_every_literal_command_is_accounted_for_and_every_entry_is_still_shown():
    literal = {c.text: c.where for c in COMMANDS if not c.synopsis}
    missing = [f"{where}: `{text}` is not in tests/doc_commands.yaml" for text, where in literal.items()
               if text not in BY_COMMAND]  # fmt: skip
    stale = [
        f"tests/doc_commands.yaml: `{text}` is in no doc any more"
        for text in BY_COMMAND
        if text not in literal
    ]
    assert not missing + stale, "\n".join(missing + stale)
    for entry in REGISTRY:
        assert ("run" in entry) != ("skip" in entry), entry
        assert entry.get("run") in (None, "fast", "slow") and (
            entry.get("skip") is None or len(entry["skip"]) > 10
        )


def _env() -> dict[str, str]:
    return {**os.environ, "PATH": f"{ROOT / '.venv' / 'bin'}:{os.environ['PATH']}"}


@pytest.mark.parametrize(
    "entry", [e for e in REGISTRY if "run" in e], ids=[e["command"][:60] for e in REGISTRY if "run" in e]
)
def test_the_command_runs_as_written(entry):
    if entry["run"] == "slow" and not SLOW:
        pytest.skip("slow: `make docs-check` runs it")
    done = subprocess.run(entry["command"], shell=True, cwd=ROOT, env=_env(), capture_output=True, text=True,
                          timeout=900, check=False, stdin=subprocess.DEVNULL)  # fmt: skip
    expected = entry.get("exit", 0)
    assert done.returncode == expected, (
        f"`{entry['command']}` exited {done.returncode}:\n{done.stderr[-3000:]}"
    )
    if expected:
        assert "Traceback" not in done.stderr and done.stderr.strip(), done.stderr


# Each command's --help, read in one process for all of them: the console scripts' own entry points, each with
# its output captured (48 commands; a process each spent 11 s of CPU on starting Python and loading tasks.py).
_HELPS = r"""
import contextlib, io, json, sys
out = {}
for tool, *names in json.loads(sys.argv[1]):
    buf, code = io.StringIO(), 0
    with contextlib.redirect_stdout(buf):
        try:
            if tool == "invoke":
                from invoke.main import program
                program.run(["invoke", "--help", *names], exit=True)
            elif tool == "lab":
                from labctl.cli import main
                main([*names, "--help"])
            else:
                from autoscaler.cli import main
                main([*names, "--help"])
        except SystemExit as e:
            code = e.code or 0
    out[" ".join([tool, *names])] = [code, buf.getvalue()]
print(json.dumps(out))
"""


def _helps(commands: set[tuple[str, ...]]) -> dict[tuple[str, ...], str]:
    done = subprocess.run([str(ROOT / ".venv" / "bin" / "python"), "-c", _HELPS, json.dumps(sorted(commands))],
                          cwd=ROOT, capture_output=True, text=True, timeout=120, check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    out = {}
    for command, (code, text) in json.loads(done.stdout).items():
        assert code == 0, f"{command} --help exited {code}"
        out[tuple(command.split())] = text
    return out


def test_every_synopsis_names_only_flags_its_command_has():
    helps = _helps({found for command in COMMANDS if (found := subcommand(command.text)) is not None})
    problems = []
    for command in COMMANDS:
        found = subcommand(command.text)
        if found is None:
            continue
        known = set(re.findall(r"--[a-z][a-z0-9-]*", helps[found]))
        problems += [f"{command.where}: `{command.text}`: {f} is not an option of `{' '.join(found)}`"
                     for f in flags(command.text) if f not in known]  # fmt: skip
    assert not problems, "\n".join(problems)
