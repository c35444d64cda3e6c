"""Outputs of applied roots, as `invoke up` writes them (``build/terraform/<root>/outputs.json``, the JSON of
``terraform output -json``; no secrets)."""

from __future__ import annotations

import json
from pathlib import Path

from clusterspec.errors import UserError
from provision.terraform.settings import DEFAULT_OUT, GLOBAL


def output(root: str, name: str, out: Path = DEFAULT_OUT):
    path = out / root / "outputs.json"
    if not path.exists():
        raise UserError(f"{path}: not found: run `invoke up --region {root}` (or `invoke up --all`) first")
    try:
        return json.loads(path.read_text())[name]["value"]
    except (ValueError, KeyError, TypeError):
        raise UserError(f"{path}: no output {name}; re-run `invoke up --region {root}`") from None


def global_output(name: str, out: Path = DEFAULT_OUT):
    return output(GLOBAL, name, out)
