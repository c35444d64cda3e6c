"""The README's and the docs' commands work as written (issue 16). tests/doc_commands.py finds them; every
literal one is listed in tests/doc_commands.yaml and run (fast ones here, slow ones under DOC_COMMANDS=all, which
`make docs-check` and CI set) or skipped with its reason; every synopsis names only flags its command has."""

from __future__ import annotations

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


def _help(tool: str, *names: str) -> str:
    argv = ["invoke", "--help", *names] if tool == "invoke" else [tool, *names, "--help"]
    argv[0] = str(ROOT / ".venv" / "bin" / argv[0])
    done = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, f"{' '.join(argv)}: {done.stderr}"
    return done.stdout


def test_every_synopsis_names_only_flags_its_command_has():
    helps: dict[tuple[str, ...], str] = {}
    problems = []
    for command in COMMANDS:
        found = subcommand(command.text)
        if found is None:
            continue
        if found not in helps:
            helps[found] = _help(*found)
        known = set(re.findall(r"--[a-z][a-z0-9-]*", helps[found]))
        problems += [f"{command.where}: `{command.text}`: {f} is not an option of `{' '.join(found)}`"
                     for f in flags(command.text) if f not in known]  # fmt: skip
    assert not problems, "\n".join(problems)
