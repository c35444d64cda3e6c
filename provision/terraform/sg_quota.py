"""Security-group rules per group and direction in a rendered root, counted as AWS counts them against the
"inbound or outbound rules per security group" quota (60 by default, Amazon VPC User Guide, "Amazon VPC quotas"):
one per rule, except that a rule referencing a managed prefix list counts as the list's ``max_entries``
("Prefix list concepts and rules": a prefix list with 20 maximum entries referenced in a rule counts as 20 rules).

The counter evaluates the few expression forms our modules use for ``for_each`` and ``max_entries`` (literal
maps, ``local.*``, ``var.*`` bound by the root's module call, ``toset``, ``merge``, ``length``); any other form
raises ``Uncountable`` so that a new module is never silently counted as zero.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from pathlib import Path

import hcl2
from hcl2.utils import SerializationOptions

QUOTA = 60
_OPTIONS = SerializationOptions(with_comments=False, explicit_blocks=False, strip_string_quotes=True)
_RULES = {"aws_vpc_security_group_ingress_rule": "ingress", "aws_vpc_security_group_egress_rule": "egress"}


@functools.lru_cache(maxsize=256)
def _parse(path: Path, mtime_ns: int) -> dict:
    with open(path) as f:
        return hcl2.load(f, serialization_options=_OPTIONS)


class Uncountable(Exception):
    """An expression the counter does not evaluate."""


@dataclass(frozen=True)
class Module:
    path: Path
    bindings: dict
    name: str

    def parsed(self) -> list[dict]:
        return [_parse(tf, tf.stat().st_mtime_ns) for tf in sorted(self.path.glob("*.tf"))]

    def locals(self) -> dict:
        return {k: v for p in self.parsed() for block in p.get("locals", []) for k, v in block.items()}

    def resources(self, rtype: str) -> dict[str, dict]:
        return {
            name: body
            for p in self.parsed()
            for entry in p.get("resource", [])
            for t, named in entry.items()
            if t == rtype
            for name, body in named.items()
        }

    def outputs(self) -> dict:
        return {
            k: v["value"] for p in self.parsed() for block in p.get("output", []) for k, v in block.items()
        }


def _strip(expr: str) -> str:
    expr = expr.strip()
    return expr[2:-1].strip() if expr.startswith("${") and expr.endswith("}") else expr


def _split_args(text: str) -> list[str]:
    depth, start, out = 0, 0, []
    for i, ch in enumerate(text):
        depth += ch in "([{"
        depth -= ch in ")]}"
        if ch == "," and depth == 0:
            out.append(text[start:i])
            start = i + 1
    out.append(text[start:])
    return [a.strip() for a in out if a.strip()]


def size(value: object, module: Module) -> int:
    """How many elements ``value`` (a parsed literal or an expression) has."""
    if isinstance(value, (list, dict)):
        return len(value)
    if not isinstance(value, str):
        raise Uncountable(repr(value))
    expr = _strip(value)
    call = re.fullmatch(r"(toset|tolist|tomap|merge)\((.*)\)", expr, re.S)
    if call:
        return sum(size(a, module) for a in _split_args(call[2]))
    call = re.fullmatch(r"keys\((.*)\)", expr, re.S)
    if call:
        return size(call[1], module)
    product = re.match(r"\{\s*for\s+\w+\s+in\s+setproduct\((.*?)\)\s*:", expr, re.S)  # one entry per pair
    if product:
        total = 1
        for a in _split_args(product[1]):
            total *= size(a, module)
        return total
    ref = re.fullmatch(r"(var|local)\.([\w-]+)", expr)
    if ref and ref[1] == "var" and ref[2] in module.bindings:
        return size(module.bindings[ref[2]], module)
    if ref and ref[1] == "local" and ref[2] in module.locals():
        return size(module.locals()[ref[2]], module)
    if expr.startswith("{") and expr.endswith("}") and not re.match(r"\{\s*for\s", expr):
        return len([a for a in _split_args(expr[1:-1].replace("\n", ",")) if "=" in a])
    raise Uncountable(f"{module.name}: cannot count {value!r}")


def number(value: object, module: Module) -> int:
    if isinstance(value, int):
        return value
    expr = _strip(str(value))
    call = re.fullmatch(r"length\((.*)\)", expr, re.S)
    if call:
        return size(call[1], module)
    if expr.isdigit():
        return int(expr)
    raise Uncountable(f"{module.name}: cannot evaluate {value!r}")


@dataclass
class Root:
    """A rendered root and the module calls it makes (one level: our roots call leaf modules)."""

    path: Path

    def modules(self) -> dict[str, Module]:
        calls = {}
        for tf in sorted(self.path.glob("*.tf")):
            for block in _parse(tf, tf.stat().st_mtime_ns).get("module", []):
                for name, body in block.items():
                    calls[name] = Module((self.path / body["source"]).resolve(), body, name)
        return calls

    def prefix_list_entries(self, value: str, module: Module) -> int:
        """``max_entries`` of the prefix list a rule references, followed through module variables and outputs."""
        expr = _strip(value)
        own = re.fullmatch(r"aws_ec2_managed_prefix_list\.([\w-]+)\.id", expr)
        if own:
            return number(module.resources("aws_ec2_managed_prefix_list")[own[1]]["max_entries"], module)
        var = re.fullmatch(r"var\.([\w-]+)", expr)
        if var and var[1] in module.bindings:
            out = re.fullmatch(r"module\.([\w-]+)\.([\w-]+)", _strip(module.bindings[var[1]]))
            if out:
                other = self.modules()[out[1]]
                return self.prefix_list_entries(other.outputs()[out[2]], other)
        raise Uncountable(f"{module.name}: cannot follow the prefix list {value!r}")

    def counts(self) -> dict[tuple[str, str, str], int]:
        """``{(module, security group, direction): rules as the quota counts them}``."""
        out: dict[tuple[str, str, str], int] = {}
        for call, module in self.modules().items():
            for name in module.resources("aws_security_group_rule"):
                raise Uncountable(
                    f"{call}: aws_security_group_rule.{name}; use aws_vpc_security_group_*_rule"
                )
            for name, body in module.resources("aws_security_group").items():
                for direction in ("ingress", "egress"):
                    out[(call, name, direction)] = len(body.get(direction, []))
            for rtype, direction in _RULES.items():
                for rule_name, body in module.resources(rtype).items():
                    group = re.fullmatch(  # a counted group (count = 0 or 1) as <name>[0]
                        r"aws_security_group\.([\w-]+)(?:\[0\])?\.id", _strip(body["security_group_id"])
                    )
                    if not group:
                        raise Uncountable(
                            f"{call}: {rtype}.{rule_name} attaches to {body['security_group_id']}"
                        )
                    times = size(body["for_each"], module) if "for_each" in body else 1  # count: 0 or 1
                    weight = (
                        self.prefix_list_entries(body["prefix_list_id"], module)
                        if "prefix_list_id" in body
                        else 1
                    )
                    key = (call, group[1], direction)
                    out[key] = out.get(key, 0) + times * weight
        return out
