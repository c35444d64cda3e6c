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


def applied(roots: list[str], out: Path = DEFAULT_OUT) -> dict[str, object]:
    """What the deploys after an apply take, from the outputs the apply produced (the hook for feeding them to a
    real control plane, e.g. after the day-one rehearsal): the IAM role ARNs and the buckets' names (global), each
    region's EFS file system id and the alert topic ARN, by name; roots without outputs.json are skipped."""
    found: dict[str, object] = {}
    for root in roots:
        path = out / root / "outputs.json"
        if not path.is_file():
            continue
        values = {k: v.get("value") for k, v in json.loads(path.read_text()).items()}
        for name, value in values.items():
            if name.endswith("_role_arn") or name.endswith("_role_arns"):
                found[name] = value
            elif name == "efs_file_system_id":
                found.setdefault("efs_file_system_ids", {})[root] = value
            elif name.endswith("topic_arn") or name == "bucket_names":
                found[name] = value
    return found
