"""The day-one rehearsal's second plan, classified (docs/terraform.md "Rehearsal"): after `invoke up --all` against
the embedded AWS, a plan of every root must show no change the project causes. Each change is broken into the
attributes it changes (``changed_paths``); a change is accepted only when every one of them is a known moto gap of
``data/rehearsal_drift.yaml`` (a config-address pattern, an attribute pattern and the gap, each with its reason),
or when it is the creation of a left-out resource (``data/rehearsal_left_out.yaml``). Anything else is drift: ours
(a perpetual diff users would see on AWS too) or a read-back of moto not yet made as AWS's; either fails the
rehearsal. So does an entry that accepted nothing in a run, so the list cannot rot."""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from clusterspec.errors import UserError
from provision.terraform import rehearsal

DRIFT = Path(__file__).parent / "data" / "rehearsal_drift.yaml"
CREATE = "(create)"  # the path of a resource the plan creates although it was applied (moto lost or hides it)
_FIELDS = {"address", "attribute", "gap"}


@dataclass(frozen=True)
class Entry:
    address: str  # fnmatch pattern of a config address (instance keys dropped: rehearsal.config_address)
    attribute: str  # fnmatch pattern of a changed path (``changed_paths``)
    gap: str

    def accepts(self, config_address: str, path: str) -> bool:
        return fnmatch.fnmatchcase(config_address, self.address) and fnmatch.fnmatchcase(path, self.attribute)


@dataclass
class Verdict:
    """One run's second plan: the drift (changes no entry explains, as lines), what each entry accepted, and the
    entries that accepted nothing (stale)."""

    drift: list[str] = field(default_factory=list)
    accepted: dict[Entry, list[str]] = field(default_factory=dict)
    left_out: list[str] = field(default_factory=list)
    stale: list[Entry] = field(default_factory=list)

    @property
    def converged(self) -> bool:
        return not self.drift and not self.stale

    def problems(self) -> list[str]:
        return self.drift + [
            f"{e.address} {e.attribute}: listed in {DRIFT.name} but no longer changes: take the entry out"
            for e in self.stale
        ]


def load(path: Path = DRIFT) -> list[Entry]:
    data = yaml.safe_load(path.read_text()) or []
    if not isinstance(data, list):
        raise UserError(f"{path}: expected a list of {{address, attribute, gap}}")
    out = []
    for i, item in enumerate(data):
        if (
            not isinstance(item, dict)
            or set(item) != _FIELDS
            or not all(isinstance(item[k], str) and item[k].strip() for k in _FIELDS)
        ):
            raise UserError(
                f"{path}: entry {i + 1}: expected {{address: ..., attribute: ..., gap: ...}} (all non-empty text)"
            )
        out.append(Entry(item["address"], item["attribute"], " ".join(item["gap"].split())))
    return out


def _diff(before, after, unknown, path: str, out: list[str]) -> None:
    if unknown is True:
        out.append(path or "(all)")
        return
    if isinstance(before, dict) and isinstance(after, dict):
        unknown = unknown if isinstance(unknown, dict) else {}
        for key in sorted(set(before) | set(after) | set(unknown)):
            _diff(before.get(key), after.get(key), unknown.get(key), f"{path}.{key}" if path else key, out)
        return
    if isinstance(before, list) and isinstance(after, list) and len(before) == len(after):
        unknown = unknown if isinstance(unknown, list) else []
        for i, (b, a) in enumerate(zip(before, after, strict=True)):
            _diff(b, a, unknown[i] if i < len(unknown) else None, path, out)
        return
    if isinstance(unknown, list | dict) and unknown and before is None:
        _diff({} if isinstance(unknown, dict) else [None] * len(unknown), after, unknown, path, out)
        return
    if before != after:
        out.append(path or "(all)")


def changed_paths(resource_change: dict) -> list[str]:
    """The attributes a planned change changes, as dotted paths without list indexes (``ingress.description``),
    in order, each once; ``(create)`` for a plain create. A replacement's ``replace_paths`` are among them."""
    change = resource_change.get("change", {})
    actions = change.get("actions", [])
    if actions == ["create"]:
        return [CREATE]
    out: list[str] = []
    _diff(change.get("before"), change.get("after"), change.get("after_unknown"), "", out)
    for replace in change.get("replace_paths") or []:
        out.append(".".join(str(p) for p in replace if not isinstance(p, int)))
    return list(dict.fromkeys(out))


def changes(plan: dict) -> list[tuple[str, list[str]]]:
    """(address, changed paths) of each managed resource the plan changes (no-ops and reads left aside)."""
    out = []
    for rc in plan.get("resource_changes", []):
        actions = rc.get("change", {}).get("actions", [])
        if rc.get("mode", "managed") != "managed" or actions in (["no-op"], ["read"]):
            continue
        out.append((rc["address"], changed_paths(rc)))
    return out


def classify(
    plans: dict[str, dict], entries: list[Entry], left_out: list[rehearsal.Entry] | None = None
) -> Verdict:
    """The second plan of each root (its ``terraform show -json``, by root name), against ENTRIES and the left-out
    resources."""
    verdict = Verdict(accepted={e: [] for e in entries})
    left = {e.address for e in (rehearsal.load() if left_out is None else left_out)}
    for root, plan in plans.items():
        for address, paths in changes(plan):
            config = rehearsal.config_address(address)
            if config in left and paths == [CREATE]:
                verdict.left_out.append(f"[{root}] {address}")
                continue
            unexplained = []
            for path in paths:
                hits = [e for e in entries if e.accepts(config, path)]
                for e in hits:
                    verdict.accepted[e].append(f"[{root}] {address} {path}")
                if not hits:
                    unexplained.append(path)
            if unexplained:
                verdict.drift.append(f"[{root}] {address}: {', '.join(unexplained)}")
    verdict.stale = [e for e, hits in verdict.accepted.items() if not hits]
    return verdict
