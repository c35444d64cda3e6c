"""Reading Terraform for the structural tests: python-hcl2 for declarations, regexes for references."""

from __future__ import annotations

import re
from collections.abc import Iterator
from functools import cache
from pathlib import Path

import hcl2
from hcl2.utils import SerializationOptions

from tests.support import ROOT

MODULES = ROOT / "terraform" / "modules"
_OPTIONS = SerializationOptions(with_comments=False, explicit_blocks=False, strip_string_quotes=True)

VAR_REF = re.compile(r"\bvar\.([A-Za-z_][\w-]*)")
MODULE_REF = re.compile(r"\bmodule\.([A-Za-z_][\w-]*)\.([A-Za-z_][\w-]*)")
GLOBAL_REF = re.compile(r"\bdata\.terraform_remote_state\.global\.outputs\.([A-Za-z_][\w-]*)")


@cache
def parse(path: Path) -> dict:
    with open(path) as f:
        return hcl2.load(f, serialization_options=_OPTIONS)


def code(path: Path) -> str:
    """The file without comment lines (references in comments do not count)."""
    return "\n".join(ln for ln in path.read_text().splitlines() if not ln.lstrip().startswith(("#", "//")))


def tf_files(directory: Path) -> list[Path]:
    return sorted(directory.glob("*.tf"))


def blocks(directory: Path, kind: str) -> Iterator[tuple[str, dict]]:
    """``(name, body)`` of every ``kind`` block (variable, output, module, locals...) in a directory."""
    for path in tf_files(directory):
        for entry in parse(path).get(kind, []):
            yield from entry.items()


def resources(directory: Path, rtype: str) -> Iterator[tuple[str, dict]]:
    for path in tf_files(directory):
        for entry in parse(path).get("resource", []):
            for t, named in entry.items():
                if t == rtype:
                    yield from named.items()


def all_resources(directory: Path) -> Iterator[tuple[str, str, dict]]:
    for path in tf_files(directory):
        for entry in parse(path).get("resource", []):
            for t, named in entry.items():
                for name, body in named.items():
                    yield t, name, body


def variables(directory: Path) -> dict[str, dict]:
    return dict(blocks(directory, "variable"))


def outputs(directory: Path) -> dict[str, dict]:
    return dict(blocks(directory, "output"))


def module_calls(directory: Path) -> dict[str, dict]:
    return dict(blocks(directory, "module"))


def module_dir(caller: Path, body: dict) -> Path:
    return (caller / body["source"]).resolve()


def module_dirs() -> list[Path]:
    return sorted(p for p in MODULES.iterdir() if p.is_dir())
