"""The day-one rehearsal's left-out resources (data/rehearsal_left_out.yaml): what the embedded AWS (moto) cannot
serve, each with its gap. With ``--endpoint``, `up` applies the plan's other resources (``-target`` each) and
`plan` reports the left-out ones apart; nothing else is skipped."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import yaml

from clusterspec.errors import UserError

LEFT_OUT = Path(__file__).parent / "data" / "rehearsal_left_out.yaml"
_KEY = re.compile(r"\[[^\]]*\]")


@dataclass(frozen=True)
class Entry:
    address: str
    gap: str


def load(path: Path = LEFT_OUT) -> list[Entry]:
    data = yaml.safe_load(path.read_text()) or []
    out = []
    for i, item in enumerate(data):
        if (
            not isinstance(item, dict)
            or set(item) != {"address", "gap"}
            or not all(isinstance(item[k], str) and item[k].strip() for k in ("address", "gap"))
        ):
            raise UserError(
                f"{path}: entry {i + 1}: expected {{address: ..., gap: ...}} (both non-empty text)"
            )
        out.append(Entry(item["address"], " ".join(item["gap"].split())))
    return out


def config_address(address: str) -> str:
    """``module.a["x"].aws_b.c[0]`` -> ``module.a.aws_b.c``."""
    return _KEY.sub("", address)


def split(addresses: list[str], entries: list[Entry]) -> tuple[list[str], dict[str, Entry]]:
    """(the addresses to apply, {left-out address: its entry})."""
    by_config = {e.address: e for e in entries}
    keep, left = [], {}
    for a in addresses:
        entry = by_config.get(config_address(a))
        if entry:
            left[a] = entry
        else:
            keep.append(a)
    return keep, left
